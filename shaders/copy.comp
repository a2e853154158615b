#version 450
// Contiguous element copy: out[i] = in[i]. Serves view_copy, clone, alias_copy and the
// other copies whose output has the input's elements in the same row-major order (only
// the sizes differ).
//
// BYTES = 1: one-byte elements (bool, int8, uint8) copied a word (four elements) per
// invocation; `numel` counts elements, and the last word's spare bytes are written as
// zeros (inside the buffer, which is allocated in whole 16-byte units).
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
} p;

void main() {
#if BYTES
  const uint w = linear_id();
  if (w * 4u >= p.numel) {
    return;
  }
  const uint left = p.numel - w * 4u;
  const uint mask = left >= 4u ? 0xffffffffu : (1u << (8u * left)) - 1u;
  out_w[w] = in_w[w] & mask;
#else
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  out_[i] = in_[i];
#endif
}
