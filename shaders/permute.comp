#version 450
// Strided gather: out is contiguous; element i of out decomposes into output coordinates
// (innermost first), and each output dim d steps the input by in_strides[d]. Serves
// permute / t (permuted strides), expand / copy / repeat (stride 0 on broadcast dims),
// flip (a negative stride and an offset) and unfold (a window dim and an element dim over
// the same input dim). Rank <= 8 after the runtime merges contiguous dims.
//
// Strides are two's-complement: a negative one is stored as uint and the sum is taken mod
// 2^32, which is exact because every true source index lies in [0, input numel).
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

layout(push_constant) uniform Params {
  uint numel;
  uint rank;          // <= 8
  uint offset;        // source index of output element 0
  uint pad1_;
  uvec4 sizes[2];      // output sizes, innermost first
  uvec4 in_strides[2]; // input element stride per output dim, innermost first
} p;

uint source(uint i) {
  uint rem = i;
  uint src = p.offset;
  for (uint d = 0; d < p.rank; ++d) {
    uint size = p.sizes[d >> 2][d & 3];
    src += (rem % size) * p.in_strides[d >> 2][d & 3];
    rem /= size;
  }
  return src;
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
