#version 450
// Strided slice along one dim of x viewed as [outer, in_dim, inner]:
//   out[o][j][i] = x[o][start + j * step][i],  out viewed as [outer, n_out, inner].
// start / step are already clamped and non-negative (the runtime applies PyTorch's rules).
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint inner;
  uint n_out;
  uint in_dim;
  uint start;
  uint step;
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint t = i / p.inner;
  uint ii = i - t * p.inner;
  uint o = t / p.n_out;
  uint j = t - o * p.n_out;
  out_[i] = in_[(o * p.in_dim + p.start + j * p.step) * p.inner + ii];
}
