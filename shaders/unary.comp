#version 450
// Elementwise unary op: out[i] = OP(in[i]), computed in float whatever the storage type.
// RELU: max(x, 0). SIGMOID: 1 / (1 + exp(-x)). ABS, NEG, EXP, SQRT, RSQRT, SIN, COS, TANH.
// GELU: x * Phi(x) (erf form). GELU_TANH: PyTorch's approximate="tanh" form.
// CLAMP: min(max(x, p0), p1) (hardtanh and clamp; a missing bound is passed as +-inf).
// LEAKY_RELU: x >= 0 ? x : p0 * x. HARDSWISH: x * min(max(x + 3, 0), 6) / 6 (PyTorch's order).
// LOG10: log10(x) (0 -> -inf, x < 0 -> NaN). ROUND: round half to even (torch.round).
// HARDSHRINK: -p0 <= x <= p0 ? 0 : x (p0 = lambd; NaN stays NaN).
#include "common.glsl"

#ifndef IS_INT
#define IS_INT 0
#endif

// Values of the OP define (the manifest passes -DOP=RELU etc.).
#define RELU 1
#define SIGMOID 2
#define ABS 3
#define NEG 4
#define EXP 5
#define SQRT 6
#define RSQRT 7
#define SIN 8
#define COS 9
#define TANH 10
#define GELU 11
#define GELU_TANH 12
#define CLAMP 13
#define LEAKY_RELU 14
#define HARDSWISH 15
#define LOG10 16
#define ROUND 17
#define HARDSHRINK 18

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };

layout(push_constant) uniform Params {
  uint numel;
  float p0; // op parameter (clamp min, leaky_relu slope, hardshrink lambd); unused otherwise
  float p1; // op parameter (clamp max); unused otherwise
} p;

// tanh without the inf/inf of the textbook (e^x - e^-x) / (e^x + e^-x): exp(-2|x|) only
// underflows to 0, giving exactly +-1 for large |x|.
float safe_tanh(float x) {
  float t = exp(-2.0 * abs(x));
  return sign(x) * (1.0 - t) / (1.0 + t);
}

// erf by Abramowitz & Stegun 7.1.26 (max absolute error 1.5e-7): GLSL has no erf.
float erf_approx(float x) {
  float ax = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * ax);
  float poly = t * (0.254829592 +
               t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return sign(x) * (1.0 - poly * exp(-ax * ax));
}

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
#if IS_INT
  // int32 (CLAMP): integer arithmetic, the bounds' int bits in p0 / p1.
#if OP == CLAMP
  out_[i] = clamp(in_[i], floatBitsToInt(p.p0), floatBitsToInt(p.p1));
#else
#error "unary.comp: OP has no int32 form"
#endif
#else
  float x = float(in_[i]);
#if OP == RELU
  float r = max(x, 0.0);
#elif OP == SIGMOID
  // exp(-x) overflows to +inf for very negative x, giving exactly 0: the right limit.
  float r = 1.0 / (1.0 + exp(-x));
#elif OP == ABS
  float r = abs(x);
#elif OP == NEG
  float r = -x;
#elif OP == EXP
  float r = exp(x);
#elif OP == SQRT
  float r = sqrt(x);
#elif OP == RSQRT
  float r = inversesqrt(x);
#elif OP == SIN
  float r = sin(x);
#elif OP == COS
  float r = cos(x);
#elif OP == TANH
  float r = safe_tanh(x);
#elif OP == GELU
  float r = 0.5 * x * (1.0 + erf_approx(x * 0.70710678118654752));
#elif OP == GELU_TANH
  // sqrt(2 / pi) = 0.7978845608...
  float r = 0.5 * x * (1.0 + safe_tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
#elif OP == CLAMP
  // GLSL min/max leave NaN handling undefined; PyTorch propagates a NaN input.
  float r = isnan(x) ? x : min(max(x, p.p0), p.p1);
#elif OP == LEAKY_RELU
  float r = x >= 0.0 ? x : p.p0 * x;
#elif OP == HARDSWISH
  // -inf gives -inf * 0 = NaN, as PyTorch; a NaN x stays NaN through the product.
  float r = x * clamp(x + 3.0, 0.0, 6.0) / 6.0;
#elif OP == LOG10
  // GLSL leaves log2 undefined for x <= 0, so the IEEE results are spelled out; NaN and
  // +inf pass through the comparisons to log2, which keeps them.
  float r;
  if (x == 0.0) {
    r = uintBitsToFloat(0xff800000u); // -inf
  } else if (x < 0.0) {
    r = uintBitsToFloat(0x7fc00000u); // NaN
  } else if (isinf(x) || isnan(x)) {
    r = x;
  } else {
    r = log2(x) * 0.30102999566398120; // log10(2)
  }
#elif OP == ROUND
  // |x| >= 2^23 (and inf, NaN) is already integral: returned as is, whatever roundEven
  // does with it on a given device.
  float r = (isnan(x) || abs(x) >= 8388608.0) ? x : roundEven(x);
#elif OP == HARDSHRINK
  // PyTorch: (x >= -lambd && x <= lambd) ? 0 : x; a NaN x fails both tests and stays.
  float r = (x >= -p.p0 && x <= p.p0) ? 0.0 : x;
#else
#error "unary.comp: unknown OP"
#endif
  out_[i] = DTYPE(r);
#endif
}
