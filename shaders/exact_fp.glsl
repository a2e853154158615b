// Exact fp32 error terms from correctly rounded multiplies and adds alone (Dekker's split),
// for shaders whose rounding must match PyTorch's bit for bit. Vulkan does not promise that
// fma() rounds once (lavapipe evaluates it as a multiply then an add), so an fma residual
// can be off where these are exact. Every step is `precise`: reassociation would undo it.

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

// 1 - s * r, exactly enough to compare neighbours' residuals (r near 1 / s).
float exact_recip_residual(float s, float r) {
  precise float p = s * r;
  precise float res = (1.0 - p) - exact_prod_err(s, r, p);
  return res;
}

// 1 / s rounded to nearest: GLSL's division (2.5 ulp), then the neighbour with the smallest
// exact residual (a few steps cover the division's error).
float exact_recip(float s) {
  float r = 1.0 / s;
  float er = abs(exact_recip_residual(s, r));
  for (int step = 0; step < 3; ++step) {
    const float lo = uintBitsToFloat(floatBitsToUint(r) - 1u);
    const float hi = uintBitsToFloat(floatBitsToUint(r) + 1u);
    const float el = abs(exact_recip_residual(s, lo));
    const float eh = abs(exact_recip_residual(s, hi));
    if (el < er) {
      r = lo;
      er = el;
    } else if (eh < er) {
      r = hi;
      er = eh;
    } else {
      break;
    }
  }
  return r;
}
