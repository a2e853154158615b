#version 450
// Constant padding (aten.constant_pad_nd): out and x contiguous, same rank (<= 8). Output
// element i decomposes into coordinates (innermost first); the input coordinate of dim d is
// c - lo[d] (lo: the `before` pad, negative when cropping); outside the input the element
// is the fill value (fval for float types, ival with IS_INT).
#include "common.glsl"

#ifndef IS_INT
#define IS_INT 0
#endif

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint rank;            // <= 8
  float fval;
  int ival;
  uvec4 out_sizes[2];   // innermost first
  uvec4 in_sizes[2];    // innermost first
  ivec4 lo[2];          // innermost first
} p;

void main() {
  const uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint rem = i;
  uint src = 0u;
  uint stride = 1u;
  bool inside = true;
  for (uint d = 0u; d < p.rank; ++d) {
    const uint size = p.out_sizes[d >> 2][d & 3u];
    const uint in_size = p.in_sizes[d >> 2][d & 3u];
    const int c = int(rem % size) - p.lo[d >> 2][d & 3u];
    rem /= size;
    if (c < 0 || c >= int(in_size)) {
      inside = false;
      break;
    }
    src += uint(c) * stride;
    stride *= in_size;
  }
  if (inside) {
    out_[i] = in_[src];
  } else {
#if IS_INT
    out_[i] = DTYPE(p.ival);
#else
    out_[i] = DTYPE(p.fval);
#endif
  }
}
