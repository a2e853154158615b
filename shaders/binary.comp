#version 450
// Elementwise binary op with PyTorch broadcasting: out = OP(a, b).
// Dims are given innermost first; a broadcast input has stride 0 on that dim.
// ADD: a + alpha * b, SUB: a - alpha * b, MUL: a * b, DIV: a / b (true division).
// MINIMUM / MAXIMUM: NaN-propagating min / max. POW: a ** b. POW_SCALAR: a ** alpha (b unused).
// IS_INT = 1 (int32; ADD, SUB, MUL, MINIMUM, MAXIMUM): two's-complement int arithmetic,
// alpha an integer.
#include "common.glsl"

#ifndef IS_INT
#define IS_INT 0
#endif

// Values of the OP define (the manifest passes -DOP=ADD etc.).
#define ADD 1
#define SUB 2
#define MUL 3
#define DIV 4
#define MINIMUM 5
#define MAXIMUM 6
#define POW 7
#define POW_SCALAR 8

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer InA { DTYPE a_[]; };
// Unused by POW_SCALAR, so absent from that variant's SPIR-V (2 bindings).
layout(set = 0, binding = 2) readonly buffer InB { DTYPE b_[]; };

// PyTorch's pow: GLSL pow() is undefined for a < 0 and for a == 0 with b <= 0, so those
// cases are spelled out (a negative base needs an integral exponent, else NaN).
float torch_pow(float a, float b) {
  // C / PyTorch: x^0 = 1 and 1^y = 1 even for NaN y; (-1)^+-inf = 1. exp2(y * log2(x))
  // would give NaN for 1^inf.
  if (b == 0.0 || a == 1.0 || (a == -1.0 && isinf(b))) {
    return 1.0;
  }
  if (a == 0.0) {
    return b > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  }
  if (a < 0.0) {
    if (floor(b) != b) {
      return uintBitsToFloat(0x7fc00000u);
    }
    float m = pow(-a, b);
    return mod(b, 2.0) == 1.0 ? -m : m;
  }
  return pow(a, b);
}

layout(push_constant) uniform Params {
  uint numel;
  uint rank;       // <= 8
  float alpha;     // add/sub alpha, pow.Tensor_Scalar exponent
  uint pad_;
  uvec4 sizes[2];     // output sizes, innermost first
  uvec4 a_strides[2]; // element strides of a per output dim (0 = broadcast)
  uvec4 b_strides[2];
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint rem = i;
  uint ia = 0;
  uint ib = 0;
  for (uint d = 0; d < p.rank; ++d) {
    uint size = p.sizes[d >> 2][d & 3];
    uint c = rem % size;
    rem /= size;
    ia += c * p.a_strides[d >> 2][d & 3];
    ib += c * p.b_strides[d >> 2][d & 3];
  }
#if IS_INT
  const int ai = a_[ia], bi = b_[ib], al = int(p.alpha);
#if OP == ADD
  out_[i] = ai + al * bi;
#elif OP == SUB
  out_[i] = ai - al * bi;
#elif OP == MUL
  out_[i] = ai * bi;
#elif OP == MINIMUM
  out_[i] = min(ai, bi);
#elif OP == MAXIMUM
  out_[i] = max(ai, bi);
#else
#error "binary.comp: OP has no int32 form"
#endif
#else
  float a = float(a_[ia]);
#if OP != POW_SCALAR
  float b = float(b_[ib]);
#endif
#if OP == ADD
  float r = a + p.alpha * b;
#elif OP == SUB
  float r = a - p.alpha * b;
#elif OP == MUL
  float r = a * b;
#elif OP == DIV
  float r = a / b;
#elif OP == MINIMUM
  // GLSL min/max leave NaN handling undefined; PyTorch propagates NaN.
  float r = (isnan(a) || isnan(b)) ? a + b : min(a, b);
#elif OP == MAXIMUM
  float r = (isnan(a) || isnan(b)) ? a + b : max(a, b);
#elif OP == POW
  float r = torch_pow(a, b);
#elif OP == POW_SCALAR
  float r = torch_pow(a, p.alpha);
#else
#error "binary.comp: unknown OP"
#endif
  out_[i] = DTYPE(r);
#endif
}
