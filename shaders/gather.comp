#version 450
// Gather along one dim of x viewed as [outer, in_dim, inner] with an int32 index list:
//   out[o][j][i] = x[o][idx[j]][i],  out viewed as [outer, n_idx, inner].
// Serves aten.embedding (outer = 1) and aten.index.Tensor (one index tensor on one dim).
// A negative index counts from the end when `wrap_negative` is set (index.Tensor), and an
// index still outside [0, in_dim) yields zeros rather than an out-of-bounds read: PyTorch
// raises there, a GPU kernel cannot, and zeros are easy to spot in a debugging session.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };
layout(set = 0, binding = 2) readonly buffer Idx { int idx[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint inner;
  uint n_idx;
  uint in_dim;
  uint wrap_negative;
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint t = i / p.inner;
  uint ii = i - t * p.inner;
  uint o = t / p.n_idx;
  uint j = t - o * p.n_idx;
  int r = idx[j];
  if (r < 0 && p.wrap_negative != 0u) {
    r += int(p.in_dim);
  }
  if (r < 0 || r >= int(p.in_dim)) {
    out_[i] = DTYPE(0);
    return;
  }
  out_[i] = in_[(o * p.in_dim + uint(r)) * p.inner + ii];
}
