#version 450
// Contiguous dtype-converting copy (aten._to_copy, _to_dim_order_copy). The input dtype
// is a push constant; the output dtype is the variant: float (through float), int
// (INT_OUT: float sources truncate toward zero) or bool (BOOL_OUT: `x != 0`, 1 byte per
// element, 4 elements = one whole word per invocation so no write races).
#include "common.glsl"
#include "logical_elem.glsl"

#ifndef INT_OUT
#define INT_OUT 0
#endif
#ifndef BOOL_OUT
#define BOOL_OUT 0
#endif

#if BOOL_OUT
layout(set = 0, binding = 0) writeonly buffer Out { uint out_[]; };
#else
layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
#endif
layout(set = 0, binding = 1) readonly buffer In { uint in_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint in_dt;
} p;

void main() {
  uint i = linear_id();
#if BOOL_OUT
  uint first = i * 4u;
  if (first >= p.numel) {
    return;
  }
  uint word = 0u;
  for (uint k = 0u; k < 4u; ++k) {
    uint e = first + k;
    if (e < p.numel && bits_truth(LOAD_BITS(in_, e, p.in_dt), p.in_dt)) {
      word |= 1u << (8u * k);
    }
  }
  out_[i] = word;
#else
  if (i >= p.numel) {
    return;
  }
  uint bits = LOAD_BITS(in_, i, p.in_dt);
#if INT_OUT
  out_[i] = DTYPE(bits_to_int(bits, p.in_dt));
#else
  out_[i] = DTYPE(bits_to_float(bits, p.in_dt));
#endif
#endif
}
