#version 450
// Contiguous element copy: out[i] = in[i]. Serves view_copy and clone, whose output has
// the input's elements in the same row-major order (only the sizes differ).
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };

layout(push_constant) uniform Params {
  uint numel;
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  out_[i] = in_[i];
}
