#version 450
// Elementwise comparison with PyTorch broadcasting, Bool output: out = OP(a, b).
// `b` is a tensor or, with b_dt == B_SCALAR, the push-constant scalar. The runtime picks
// the comparison domain from PyTorch's type promotion: float (optionally rounded to fp16
// when the promoted type is half) or exact int32.
// Bool output is 1 byte per element: each invocation writes one whole word (4 elements),
// so no two invocations touch the same word.
#include "common.glsl"
#include "logical_elem.glsl"

#define EQ 1
#define NE 2
#define LT 3
#define LE 4
#define GT 5
#define GE 6

#define B_SCALAR 255u
#define MODE_FLOAT 0u
#define MODE_HALF 1u
#define MODE_INT 2u

layout(set = 0, binding = 0) writeonly buffer Out { uint out_[]; };
layout(set = 0, binding = 1) readonly buffer InA { uint a_[]; };
layout(set = 0, binding = 2) readonly buffer InB { uint b_[]; };

layout(push_constant) uniform Params {
  uint numel;       // output elements
  uint rank;        // <= 8
  uint a_dt;
  uint b_dt;        // B_SCALAR: compare with `scalar`
  uint mode;
  uint scalar;      // f32 bits (float modes) or i32 bits (MODE_INT)
  uint a_bcast;
  uint b_bcast;
  uvec4 sizes[2];   // output sizes, innermost first
} p;

bool cmp_float(float a, float b) {
  // Spelled out for NaN: every ordered comparison is false, `ne` true.
  if (isnan(a) || isnan(b)) {
    return OP == NE;
  }
#if OP == EQ
  return a == b;
#elif OP == NE
  return a != b;
#elif OP == LT
  return a < b;
#elif OP == LE
  return a <= b;
#elif OP == GT
  return a > b;
#elif OP == GE
  return a >= b;
#else
#error "compare.comp: unknown OP"
#endif
}

bool cmp_int(int a, int b) {
#if OP == EQ
  return a == b;
#elif OP == NE
  return a != b;
#elif OP == LT
  return a < b;
#elif OP == LE
  return a <= b;
#elif OP == GT
  return a > b;
#else
  return a >= b;
#endif
}

bool element(uint i) {
  uint abits = LOAD_BITS(a_, bcast_index(i, p.rank, p.a_bcast, p.sizes), p.a_dt);
  bool scalar = p.b_dt == B_SCALAR;
  uint bbits = p.scalar;
  if (!scalar) {
    bbits = LOAD_BITS(b_, bcast_index(i, p.rank, p.b_bcast, p.sizes), p.b_dt);
  }
  if (p.mode == MODE_INT) {
    int b = scalar ? int(bbits) : bits_to_int(bbits, p.b_dt);
    return cmp_int(bits_to_int(abits, p.a_dt), b);
  }
  float a = bits_to_float(abits, p.a_dt);
  float b = scalar ? uintBitsToFloat(bbits) : bits_to_float(bbits, p.b_dt);
  if (p.mode == MODE_HALF) {
    a = round_f16(a);
    b = round_f16(b);
  }
  return cmp_float(a, b);
}

void main() {
  uint w = linear_id();
  uint first = w * 4u;
  if (first >= p.numel) {
    return;
  }
  uint word = 0u;
  for (uint k = 0u; k < 4u; ++k) {
    if (first + k < p.numel && element(first + k)) {
      word |= 1u << (8u * k);
    }
  }
  out_[w] = word;
}
