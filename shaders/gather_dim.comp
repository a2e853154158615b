#version 450
// aten.gather: out has the index tensor's sizes (both contiguous), and
//   out[c] = x[c with c[dim] replaced by idx[c]]
// i.e. output coordinate d steps the input by x_strides[d], except along `dim`, where the
// int32 index value (not the coordinate) picks the input row. An index outside
// [0, dim_size) yields zero, never an out-of-bounds read, and is recorded in the fault
// record (fault.glsl) so that the execute fails as PyTorch raises. Coordinates are innermost first; rank <= 8. The runtime checks that the index's
// other dims fit x's.
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
  uint rank;          // <= 8
  uint dim;           // the gathered dim, counted innermost first
  uint dim_size;      // x's size along it
  uvec4 sizes[2];     // output (= index) sizes, innermost first
  uvec4 x_strides[2]; // x's element strides, innermost first
  uint tag;           // node_id + 1, for the fault record
} p;

// The source element of output i, or -1 for an out-of-range index.
int source(uint i) {
  const int r = idx[i];
  if (r < 0 || uint(r) >= p.dim_size) {
    record_fault(p.tag, r, p.dim_size);
    return -1;
  }
  uint rem = i;
  uint src = 0u;
  for (uint d = 0u; d < p.rank; ++d) {
    const uint size = p.sizes[d >> 2][d & 3];
    const uint c = d == p.dim ? uint(r) : rem % size;
    src += c * p.x_strides[d >> 2][d & 3];
    rem /= size;
  }
  return int(src);
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
  const uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  const int src = source(i);
  out_[i] = src < 0 ? DTYPE(0) : in_[uint(src)];
#endif
}
