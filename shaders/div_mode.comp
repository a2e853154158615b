#version 450
// aten.div.Tensor_mode with PyTorch broadcasting (ops/binary.rs): MODE TRUNC rounds the
// quotient toward zero, FLOOR toward -inf. Dims are given innermost first; a broadcast input
// has stride 0 on that dim (the push block of binary.comp).
//
// Floats (math in float for fp16 too, as PyTorch's opmath): TRUNC is trunc(a / b) with the
// correctly rounded quotient, FLOOR follows PyTorch's div_floor_floating: mod = fmod(a, b),
// div = (a - mod) / b, minus 1 when mod and b differ in sign, then rounded to the nearest
// integer, and a / b itself when b == 0. Vulkan allows 2.5 ulp for '/' and leaves b == 0,
// infinities and tiny divisors undefined, so those are spelled out and the quotient is moved
// to the correctly rounded one with exact residuals (Dekker products). fmod is exact while
// |a / b| < 2^24.
//
// IS_INT: int32 in and out, exact (magnitudes divided as uint: no signed-division corner
// of SPIR-V is reached). A zero divisor gives 0 (PyTorch raises; a shader cannot), and
// INT_MIN / -1 wraps to INT_MIN.
#include "common.glsl"

#define TRUNC 1
#define FLOOR 2

#if IS_INT
#define ELEM int
#else
#define ELEM DTYPE
#endif

layout(set = 0, binding = 0) writeonly buffer Out { ELEM out_[]; };
layout(set = 0, binding = 1) readonly buffer InA { ELEM a_[]; };
layout(set = 0, binding = 2) readonly buffer InB { ELEM b_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint rank;          // <= 8
  uint pad0_;
  uint pad1_;
  uvec4 sizes[2];     // output sizes, innermost first
  uvec4 a_strides[2]; // element strides of a per output dim (0 = broadcast)
  uvec4 b_strides[2];
} p;

#if IS_INT
int div_int(int a, int b) {
  if (b == 0) {
    return 0;
  }
  // -INT_MIN wraps to INT_MIN, whose uint is the right magnitude 2^31.
  uint ua = uint(a < 0 ? -a : a);
  uint ub = uint(b < 0 ? -b : b);
  uint uq = ua / ub;
  bool neg = (a < 0) != (b < 0);
  int q = neg ? -int(uq) : int(uq);
#if MODE == FLOOR
  if (neg && uq * ub != ua) {
    q -= 1;
  }
#endif
  return q;
}
#else
#define F_NAN uintBitsToFloat(0x7fc00000u)

float signed_inf(bool neg) {
  return uintBitsToFloat(neg ? 0xff800000u : 0x7f800000u);
}

float signed_zero(bool neg) {
  return uintBitsToFloat(neg ? 0x80000000u : 0u);
}

// q * b = p + e exactly (Dekker's product: Veltkamp splits at 12 bits). GLSL's fma() need
// not be fused even when `precise` (lavapipe splits it), so the exact product is built from
// correctly rounded, uncontracted (`precise`) products and sums instead.
void two_prod(float q, float b, out float p, out float e) {
  precise float pp = q * b;
  precise float cq = 4097.0 * q;
  precise float qh = cq - (cq - q);
  precise float ql = q - qh;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float ee = ((qh * bh - pp) + qh * bl + ql * bh) + ql * bl;
  p = pp;
  e = ee;
}

// a - q * b with one rounding, for q within a factor 2 of a / b (a - p is then exact).
float residual(float a, float b, float q) {
  float p;
  float e;
  two_prod(q, b, p, e);
  precise float r = (a - p) - e;
  return r;
}

// IEEE a / b, correctly rounded: special operands spelled out, the device's quotient moved
// to the float neighbour with the smallest exact residual.
float div_rn(float a, float b) {
  if (isnan(a) || isnan(b)) {
    return F_NAN;
  }
  bool neg = ((floatBitsToUint(a) ^ floatBitsToUint(b)) >> 31) != 0u;
  if (isinf(b)) {
    return isinf(a) ? F_NAN : signed_zero(neg);
  }
  if (b == 0.0) {
    return a == 0.0 ? F_NAN : signed_inf(neg);
  }
  if (isinf(a)) {
    return signed_inf(neg);
  }
  if (a == 0.0) {
    return signed_zero(neg);
  }
  // Vulkan bounds the error of '/' for |b| <= 2^126 only: a larger b is scaled down first.
  float q = abs(b) > 8.5070592e37 ? (a * 0.25) / (b * 0.25) : a / b;
  // Past 2^100 the 12-bit splits of the exact product could overflow: q stays as divided.
  if (isinf(q) || q == 0.0 || abs(q) > 1.2676506e30 || abs(b) > 1.2676506e30) {
    return q;
  }
  float r = abs(residual(a, b, q));
  for (int k = 0; k < 4; ++k) {
    uint bits = floatBitsToUint(q);
    float away = uintBitsToFloat(bits + 1u);   // one ulp away from zero
    float toward = uintBitsToFloat(bits - 1u); // one ulp toward zero
    float ra = abs(residual(a, b, away));
    float rt = abs(residual(a, b, toward));
    if (ra < r && ra <= rt) {
      q = away;
      r = ra;
    } else if (rt < r) {
      q = toward;
      r = rt;
    } else {
      break;
    }
  }
  return q;
}

#if MODE == FLOOR
// C fmod: a - trunc(a / b) * b, exact (its value is representable and the residual rounds
// once) while the truncated quotient is below 2^24.
float fmod_exact(float a, float b) {
  if (isnan(a) || isnan(b) || isinf(a) || b == 0.0) {
    return F_NAN;
  }
  if (isinf(b)) {
    return a;
  }
  // trunc of the rounded quotient is the true truncated quotient or one past it.
  float t = trunc(div_rn(a, b));
  if (isinf(t)) {
    // The quotient overflows: (a - mod) / b is infinite whatever mod in [0, |b|) is.
    return signed_zero(a < 0.0);
  }
  float r = residual(a, b, t);
  if (r != 0.0 && ((r < 0.0) != (a < 0.0))) {
    t -= sign(t);
    r = residual(a, b, t);
  }
  return r == 0.0 ? signed_zero(a < 0.0) : r;
}

// PyTorch's div_floor_floating.
float div_floor(float a, float b) {
  if (b == 0.0) {
    return div_rn(a, b);
  }
  float m = fmod_exact(a, b);
  float d = div_rn(a - m, b);
  if (m != 0.0 && ((b < 0.0) != (m < 0.0))) {
    d -= 1.0;
  }
  if (d != 0.0) {
    float f = floor(d);
    if (d - f > 0.5) {
      f += 1.0;
    }
    return f;
  }
  // copysign(0, a / b)
  return signed_zero((floatBitsToUint(div_rn(a, b)) >> 31) != 0u);
}
#endif
#endif

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint rem = i;
  uint ia = 0u;
  uint ib = 0u;
  for (uint d = 0u; d < p.rank; ++d) {
    uint size = p.sizes[d >> 2][d & 3u];
    uint c = rem % size;
    rem /= size;
    ia += c * p.a_strides[d >> 2][d & 3u];
    ib += c * p.b_strides[d >> 2][d & 3u];
  }
#if IS_INT
  out_[i] = div_int(a_[ia], b_[ib]);
#elif MODE == TRUNC
  out_[i] = DTYPE(trunc(div_rn(float(a_[ia]), float(b_[ib]))));
#elif MODE == FLOOR
  out_[i] = DTYPE(div_floor(float(a_[ia]), float(b_[ib])));
#else
#error "div_mode.comp: unknown MODE"
#endif
}
