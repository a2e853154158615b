// fp16 range for the tensor-core backward (q4_linear_bwd_mma, q4_bwd_rowscale).

// The power of two that puts a peak with these |x| bits in [2^13, 2^14), so that hi / lo
// fp16 pairs of the scaled values neither overflow nor fall to subnormals; 1 for zero, Inf
// and NaN (which then pass through unchanged).
float peak_scale(uint bits) {
  if (bits == 0u || bits >= 0x7F800000u) return 1.0;
  const int e = int(bits >> 23) - 127;  // floor(log2) for normal values (denormals: -127)
  return exp2(float(clamp(13 - e, -120, 120)));
}
