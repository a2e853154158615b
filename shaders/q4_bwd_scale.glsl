// fp16 range and hi / lo splits for the tensor-core backward (q4_linear_bwd_mma,
// q4_bwd_rowscale).

// The power of two that puts a peak with these |x| bits in [2^13, 2^14), so that hi / lo
// fp16 pairs of the scaled values neither overflow nor fall to subnormals; 1 for zero, Inf
// and NaN (which then pass through unchanged).
float peak_scale(uint bits) {
  if (bits == 0u || bits >= 0x7F800000u) return 1.0;
  const int e = int(bits >> 23) - 127;  // floor(log2) for normal values (denormals: -127)
  return exp2(float(clamp(13 - e, -120, 120)));
}

// fp16 hi / lo of v (|v| < 2^15 after scaling): hi = v with its fp32 mantissa cut to fp16's
// (exact in fp16 when normal), lo = the rest rounded to fp16. Values under fp16's normal
// range go to lo alone. (float(float16_t(v)) would be simpler, but a driver folded that
// round trip to v; docs/experiments/README.md.)
vec2 split16(float v) {
  const float hi = abs(v) < 0.00006103515625 ? 0.0 : uintBitsToFloat(floatBitsToUint(v) & 0xFFFFE000u);
  return vec2(hi, v - hi);
}
