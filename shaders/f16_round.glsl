// fp16 rounding of fp32 values in integer arithmetic, for shaders whose results must follow
// PyTorch's half-precision steps. A round trip through the half type, float(float16_t(x))
// or unpackHalf2x16(packHalf2x16(x)), is folded to x by NVIDIA's driver (H100, session 34:
// embedding_4bit and the 8da4w fp16 cases off by the skipped roundings), so the rounding is
// written out on the bits.

#ifndef F16_ROUND_GLSL
#define F16_ROUND_GLSL

// x rounded to the nearest fp16 value (ties to even), as fp32: magnitudes from 65520 become
// Inf, under 2^-14 multiples of 2^-24 (fp16 subnormals); Inf and NaN pass unchanged.
float f16_round(float x) {
  const uint b = floatBitsToUint(x);
  const uint sign = b & 0x80000000u;
  uint a = b & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return x;
  if (a >= 0x477FF000u) return uintBitsToFloat(sign | 0x7F800000u);
  if (a < 0x38800000u) {
    // Scaling by powers of two is exact; roundEven picks the subnormal step.
    precise float q = roundEven(uintBitsToFloat(a) * 16777216.0) * 5.9604644775390625e-8;
    return uintBitsToFloat(sign | floatBitsToUint(q));
  }
  // Drop 13 of the 23 mantissa bits, to nearest, ties to even (a carry moves the exponent).
  a += 0xFFFu + ((a >> 13) & 1u);
  return uintBitsToFloat(sign | (a & 0xFFFFE000u));
}

// ROUND_AS(T, x): x rounded to T (`float`: unchanged; `float16_t`: f16_round), for shaders
// whose arithmetic type is a macro.
#define F16R_float(x) (x)
#define F16R_float16_t(x) f16_round(x)
#define F16R_PASTE(T, x) F16R_##T(x)
#define ROUND_AS(T, x) F16R_PASTE(T, x)

#endif
