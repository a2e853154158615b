#version 450
// Gather along one dim of x viewed as [outer, in_dim, inner] with an int32 index list:
//   out[o][j][i] = x[o][idx[j]][i],  out viewed as [outer, n_idx, inner].
// Serves aten.embedding (outer = 1), aten.index.Tensor (one index tensor on one dim) and
// aten.index_select. A negative index counts from the end when `wrap_negative` is set
// (index.Tensor), and an index still outside [0, in_dim) yields zeros rather than an
// out-of-bounds read and is recorded in the fault record (fault.glsl), so the execute fails
// as PyTorch raises.
//
// BYTES = 1: one-byte elements (bool, int8, uint8) as raw words, each invocation one output
// word of four elements (the last word's spare bytes are written as zeros, inside the
// tensor's buffer, which is allocated in whole 16-byte units).
#include "common.glsl"

#ifndef BYTES
#define BYTES 0
#endif

#if BYTES
layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
layout(set = 0, binding = 1) readonly buffer In { uint in_w[]; };
#else
layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };
#endif
layout(set = 0, binding = 2) readonly buffer Idx { int idx[]; };
#define FAULT_BINDING 3
#include "fault.glsl"

layout(push_constant) uniform Params {
  uint numel;
  uint inner;
  uint n_idx;
  uint in_dim;
  uint wrap_negative;
  uint tag;  // node_id + 1, for the fault record
} p;

// The source element of output i, or -1 for an out-of-range index.
int source(uint i) {
  uint t = i / p.inner;
  uint ii = i - t * p.inner;
  uint o = t / p.n_idx;
  uint j = t - o * p.n_idx;
  const int given = idx[j];
  int r = given;
  if (r < 0 && p.wrap_negative != 0u) {
    r += int(p.in_dim);
  }
  if (r < 0 || r >= int(p.in_dim)) {
    record_fault(p.tag, given, p.in_dim);
    return -1;
  }
  return int((o * p.in_dim + uint(r)) * p.inner + ii);
}

void main() {
#if BYTES
  const uint w = linear_id();
  if (w * 4u >= p.numel) {
    return;
  }
  uint word = 0u;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = w * 4u + e;
    if (i < p.numel) {
      const int src = source(i);
      if (src >= 0) {
        const uint s = uint(src);
        word |= bitfieldExtract(in_w[s >> 2], int((s & 3u) * 8u), 8) << (8u * e);
      }
    }
  }
  out_w[w] = word;
#else
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  const int src = source(i);
  out_[i] = src < 0 ? DTYPE(0) : in_[uint(src)];
#endif
}
