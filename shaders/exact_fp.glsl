// Exact fp32 error terms from correctly rounded multiplies and adds alone (Dekker's split),
// for shaders whose rounding must match PyTorch's bit for bit. Vulkan does not promise that
// fma() rounds once (lavapipe evaluates it as a multiply then an add), so an fma residual
// can be off where these are exact. Every step is `precise`: reassociation would undo it.
#ifndef EXACT_FP_GLSL
#define EXACT_FP_GLSL

// The hi / lo halves of a (12 significant bits in hi), a = hi + lo exactly.
vec2 exact_split(float a) {
  precise float c = 4097.0 * a;
  precise float hi = c - (c - a);
  precise float lo = a - hi;
  return vec2(hi, lo);
}

// a * b - fl(a * b), exactly (no overflow / underflow assumed).
float exact_prod_err(float a, float b, float p) {
  const vec2 x = exact_split(a), y = exact_split(b);
  precise float e = ((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y;
  return e;
}

// a - b * q, exactly enough to compare neighbours' residuals (q near a / b, so that b * q
// lies within a factor 2 of a and a - fl(b * q) is exact).
float exact_div_residual(float a, float b, float q) {
  precise float p = b * q;
  precise float res = (a - p) - exact_prod_err(b, q, p);
  return res;
}

// a / b rounded to nearest, as a CPU's fp32 division rounds it, from q within a few ulp of
// it (GLSL's division is within 2.5): the neighbour with the smallest exact residual. A
// zero, infinite or NaN q is returned as it is.
float exact_div_from(float a, float b, float q) {
  if (q == 0.0 || isinf(q) || isnan(q)) return q;
  float er = abs(exact_div_residual(a, b, q));
  for (int step = 0; step < 3; ++step) {
    const float lo = uintBitsToFloat(floatBitsToUint(q) - 1u);
    const float hi = uintBitsToFloat(floatBitsToUint(q) + 1u);
    const float el = abs(exact_div_residual(a, b, lo));
    const float eh = abs(exact_div_residual(a, b, hi));
    if (el < er) {
      q = lo;
      er = el;
    } else if (eh < er) {
      q = hi;
      er = eh;
    } else {
      break;
    }
  }
  return q;
}

// 1 / s rounded to nearest, as PyTorch's fp32 1.0 / scale: GLSL's division, then
// exact_div_from.
float exact_recip(float s) { return exact_div_from(1.0, s, 1.0 / s); }

// Whether fma(x, y, -p) kept the low part of the product p = fl(x * y): true where fma()
// rounds once and x * y is not exact in fp32; false where it rounds twice (lavapipe: a
// multiply, then an add), which makes an fma residual wrong. A shader takes an fma-corrected
// quotient where this holds and the exact residuals (the slower path) where not.
bool fma_kept_low_part(float x, float y) {
  precise float p = x * y;
  precise float low = fma(x, y, -p);
  return low != 0.0;
}
#endif  // EXACT_FP_GLSL
