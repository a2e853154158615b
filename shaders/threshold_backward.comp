#version 450
// ReLU / threshold gradient (ATen threshold_backward):
// out[i] = self[i] <= threshold ? 0 : grad[i]. Same shapes, no broadcasting (autograd
// always calls it with the forward's shapes).
#include "common.glsl"
layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer Grad { DTYPE grad[]; };
layout(set = 0, binding = 2) readonly buffer Self { DTYPE self_[]; };
layout(push_constant) uniform Params {
  uint numel;
  float threshold;
} p;
void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  out_[i] = float(self_[i]) <= p.threshold ? DTYPE(0) : grad[i];
}
