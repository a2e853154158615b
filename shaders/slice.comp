#version 450
// Strided slice along one dim of x viewed as [outer, in_dim, inner]:
//   out[o][j][i] = x[o][start + j * step][i],  out viewed as [outer, n_out, inner].
// start / step are already clamped and non-negative (the runtime applies PyTorch's rules).
// BYTES = 1: one-byte elements (bool, int8, uint8) as raw words, each invocation one output
// word of four elements (the last word's spare bytes are written as zeros, inside the
// tensor's buffer, which is allocated in whole 16-byte units).
#include "common.glsl"

#ifndef BYTES
#define BYTES 0
#endif
// START_SLOT = 1 (`slice_pos_*`): `start` is the scalar-buffer slot of a SymInt start, wrapped
// and clamped here as the runtime does it (PyTorch's rules; the length stays the runtime's),
// so that a start that moves every call (a decode's position) needs no new push constants.
#ifndef START_SLOT
#define START_SLOT 0
#endif

#if BYTES
layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
layout(set = 0, binding = 1) readonly buffer In { uint in_w[]; };
#else
layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };
#endif
#if START_SLOT
layout(set = 0, binding = 2) readonly buffer Scalars { int scalars_[]; };
#endif

layout(push_constant) uniform Params {
  uint numel;
  uint inner;
  uint n_out;
  uint in_dim;
  uint start;
  uint step;
} p;

uint first() {
#if START_SLOT
  const int n = int(p.in_dim);
  int s = scalars_[p.start];
  s = s < 0 ? s + n : s;
  return uint(clamp(s, 0, n));
#else
  return p.start;
#endif
}

uint source(uint i) {
  uint t = i / p.inner;
  uint ii = i - t * p.inner;
  uint o = t / p.n_out;
  uint j = t - o * p.n_out;
  return (o * p.in_dim + first() + j * p.step) * p.inner + ii;
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
      const uint src = source(i);
      word |= bitfieldExtract(in_w[src >> 2], int((src & 3u) * 8u), 8) << (8u * e);
    }
  }
  out_w[w] = word;
#else
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  out_[i] = in_[source(i)];
#endif
}
