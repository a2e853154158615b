#version 450
// Batch norm with running statistics (aten._native_batch_norm_legit_no_training): for the
// channel c of element i of x [N, C, inner...],
//   out[i] = (x[i] - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c],
// with w = 1 / b = 0 when not bound. One invocation per element, math in float.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Mean { DTYPE mean_[]; };
layout(set = 0, binding = 3) readonly buffer Var { DTYPE var_[]; };
layout(set = 0, binding = 4) readonly buffer Weight { DTYPE w_[]; };
layout(set = 0, binding = 5) readonly buffer Bias { DTYPE b_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint C;
  uint inner; // elements per (n, c) plane
  float eps;
  uint flags; // bit 0: weight bound, bit 1: bias bound
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint c = (i / p.inner) % p.C;
  float scale = 1.0 / sqrt(float(var_[c]) + p.eps);
  if ((p.flags & 1u) != 0u) {
    scale *= float(w_[c]);
  }
  float y = (float(x_[i]) - float(mean_[c])) * scale;
  if ((p.flags & 2u) != 0u) {
    y += float(b_[c]);
  }
  out_[i] = DTYPE(y);
}
