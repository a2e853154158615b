// The 4-bit codes' in-place decode into fp32 (q4_linear_bwd_wide.comp, q4_linear_gemv_fma.comp).
// Word w of a packed row holds 8 codes (code = q + 8), nibble j at bits 4j.
const float MAGIC = 8388608.0;  // 2^23
const uint MAGIC_BITS = 0x4B000000u;

// In-place decode of the 4 codes of a 16-bit half: nibble q sits at bits 4q, so the half
// with 2^23's bits ORed in, masked to nibble q and those bits, is 2^23 + code * 16^q exactly,
// and subtracting 2^23 + 8 * 16^q leaves (code - 8) * 16^q, also exact. The accumulators are
// scaled back by 16^-q (exact) once at the end. `hm` is the half already ORed with 2^23's
// bits (once per half: bits 16..31 of a low half are overwritten, which the masks drop), so
// each code costs one AND with one constant: written as (h & mask) | MAGIC_BITS the driver
// spent two logic operations per code (H200: 23.4 -> 20.6 us at 8192^2, 63.4 -> 55.3 at
// N = 28672, K = 8192).
const vec4 UNMAGIC = vec4(MAGIC + 8.0, MAGIC + 128.0, MAGIC + 2048.0, MAGIC + 32768.0);
const vec4 UNPOS = vec4(1.0, 0.0625, 0.00390625, 0.000244140625);
vec4 codes4_pre(uint hm) {
  return uintBitsToFloat(uvec4(hm) & uvec4(0x4B00000Fu, 0x4B0000F0u, 0x4B000F00u, 0x4B00F000u)) - UNMAGIC;
}
vec4 codes4_lo(uint w) { return codes4_pre(w | MAGIC_BITS); }
vec4 codes4_hi(uint w) { return codes4_pre((w >> 16) | MAGIC_BITS); }
