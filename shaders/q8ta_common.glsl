// Shared helpers of the q8ta shaders (statically quantized int8 tensors). An int8 / uint8
// tensor is stored as raw words, four elements per word, element i in byte (i & 3) of word
// i >> 2 (little endian); a shader writes whole words (one invocation per output word), so
// no 8-bit stores are needed. Quantization follows PyTorch's quantized_decomposed ops in
// fp32: q = clamp(round_half_even(x * inv_scale) + zero_point, quant_min, quant_max), with
// inv_scale = float(1.0 / scale) computed by the runtime; dequantization is
// float(q - zero_point) * float(scale), one rounding.

// Signed byte e (0..3) of word w.
int q8_s8(uint w, uint e) {
  return bitfieldExtract(int(w), int(e * 8u), 8);
}

// Unsigned byte e (0..3) of word w.
int q8_u8(uint w, uint e) {
  return int(bitfieldExtract(w, int(e * 8u), 8));
}

// Element i of a byte tensor stored as words (signed unless is_unsigned).
int q8_load(uint w, uint i, bool is_unsigned) {
  return is_unsigned ? q8_u8(w, i & 3u) : q8_s8(w, i & 3u);
}

// PyTorch's quantize: the product rounded half to even, the zero point added, clamped (in
// float, so huge values saturate instead of overflowing the int conversion).
int q8_quantize(float x, float inv_scale, int zp, int qmin, int qmax) {
  precise float v = x * inv_scale;
  float q = roundEven(v) + float(zp);
  return int(clamp(q, float(qmin), float(qmax)));
}

// float(q - zp) * scale, the dequantized value as PyTorch computes it in fp32.
float q8_dequantize(int q, int zp, float scale) {
  precise float v = float(q - zp) * scale;
  return v;
}

// q in byte e of a word (two's complement, so int8 and uint8 pack alike).
uint q8_pack(int q, uint e) {
  return (uint(q) & 0xFFu) << (e * 8u);
}
