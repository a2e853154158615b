// Activation limbs of the int8 GEMVs (q4_linear_gemv_wide.comp, q4_linear_gemv_half.comp;
// the limb pre-passes make the same digits in eight lanes per chunk, q4_limbs_lanes.glsl):
// the 32 activations of a chunk as three int8 limbs in units of amax / 127,
//   x = unit * (a0 + a1 / 128 + a2 / 16384)   to within amax * 2^-22,
// packed four to a word in the order the codes come out of a weight word (w & 0x0F0F0F0F:
// the even k of the word, (w >> 4) & 0x0F0F0F0F: the odd k), with each limb's sum (for the
// -8 of the codes). Needs sdot4x8 (OpSDotKHR) declared by the including shader.
// LIMB_WORDS (default 4): words per limb and parity, so 4 * LIMB_WORDS activations (a whole
// chunk, or with 2 the half chunk of q4_linear_gemv_half.comp) share one unit.
#ifndef LIMB_WORDS
#define LIMB_WORDS 4
#endif
void make_limbs(vec4 xv[2 * LIMB_WORDS], out uint le[3][LIMB_WORDS], out uint lo[3][LIMB_WORDS],
                out int lsum[3], out float unit) {
  // |x| maximum on the bit patterns: for non-negative floats the unsigned order is the float
  // order, and NaN / Inf patterns sort above every finite one. A float max would not do:
  // max(finite, NaN) may return the finite one (a NaN activation then counted as 0).
  uvec4 mb = uvec4(0u);
  [[unroll]] for (uint i = 0u; i < 2u * LIMB_WORDS; ++i) mb = max(mb, floatBitsToUint(xv[i]) & 0x7FFFFFFFu);
  const uint amax_bits = max(max(mb.x, mb.y), max(mb.z, mb.w));
  // Inf / NaN activations: a NaN result, never a silently finite one. The NaN is a bit
  // pattern: Mesa folded the earlier `amax * 0.0` to 0.0 (compilers need not preserve
  // Inf / NaN without SignedZeroInfNanPreserve), and the outputs came out finite.
  const bool finite = amax_bits < 0x7F800000u;
  const float amax = uintBitsToFloat(finite ? amax_bits : 0u);
  // x in units of amax / (127 * 16384), as one int per element; the limbs are its digits:
  // a0 = round(I / 16384), a1 = round(rem / 128), a2 = the rest.
  const float inv = amax > 0.0 ? 2080768.0 / amax : 0.0;
  unit = finite ? amax / 127.0 : uintBitsToFloat(0x7FC00000u);
  [[unroll]] for (uint l = 0u; l < 3u; ++l) {
    [[unroll]] for (uint j = 0u; j < LIMB_WORDS; ++j) {
      le[l][j] = 0u;
      lo[l][j] = 0u;
    }
  }
  [[unroll]] for (uint i = 0u; i < 2u * LIMB_WORDS; ++i) {
    const ivec4 iv = ivec4(round(xv[i] * inv));  // |iv| <= 127 * 16384
    const ivec4 a0 = (iv + 8192) >> 14;          // [-127, 127]
    const ivec4 rem = iv - (a0 << 14);           // [-8192, 8191]
    const ivec4 a1 = (rem + 64) >> 7;            // [-64, 64]
    const ivec4 a2 = rem - (a1 << 7);            // [-64, 63]
    const uvec4 a[3] = uvec4[3](uvec4(a0), uvec4(a1), uvec4(a2));
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      // Element k = 4i + q: word i / 2, position 4 (i % 2) + q in the word.
      const uint pos = 4u * (i & 1u) + q;
      const int sh = int(8u * (pos >> 1));
      [[unroll]] for (uint l = 0u; l < 3u; ++l) {
        if ((pos & 1u) == 0u) {
          le[l][i >> 1] = bitfieldInsert(le[l][i >> 1], a[l][q], sh, 8);
        } else {
          lo[l][i >> 1] = bitfieldInsert(lo[l][i >> 1], a[l][q], sh, 8);
        }
      }
    }
  }
  [[unroll]] for (uint l = 0u; l < 3u; ++l) {
    int t4 = 0;
    [[unroll]] for (uint j = 0u; j < LIMB_WORDS; ++j) {
      t4 += sdot4x8(le[l][j], 0x01010101u, 0) + sdot4x8(lo[l][j], 0x01010101u, 0);
    }
    lsum[l] = t4;
  }
}

// The integers d (|d| <= 255, as floats) of an 8da4w linear's quantized activations (the
// DQ forms: d = q - zp) as two int8 limbs, d = 128 a0 + a1 (exact), packed as make_limbs
// packs its three, with each limb's sum.
void make_int_limbs(vec4 xv[2 * LIMB_WORDS], out uint le[2][LIMB_WORDS], out uint lo[2][LIMB_WORDS],
                    out int lsum[2]) {
  [[unroll]] for (uint l = 0u; l < 2u; ++l) {
    [[unroll]] for (uint j = 0u; j < LIMB_WORDS; ++j) {
      le[l][j] = 0u;
      lo[l][j] = 0u;
    }
  }
  [[unroll]] for (uint i = 0u; i < 2u * LIMB_WORDS; ++i) {
    const ivec4 iv = ivec4(xv[i]);
    const ivec4 a0 = (iv + 64) >> 7;  // [-2, 2]
    const ivec4 a1 = iv - (a0 << 7);  // [-64, 63]
    const uvec4 a[2] = uvec4[2](uvec4(a0), uvec4(a1));
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      const uint pos = 4u * (i & 1u) + q;
      const int sh = int(8u * (pos >> 1));
      [[unroll]] for (uint l = 0u; l < 2u; ++l) {
        if ((pos & 1u) == 0u) {
          le[l][i >> 1] = bitfieldInsert(le[l][i >> 1], a[l][q], sh, 8);
        } else {
          lo[l][i >> 1] = bitfieldInsert(lo[l][i >> 1], a[l][q], sh, 8);
        }
      }
    }
  }
  [[unroll]] for (uint l = 0u; l < 2u; ++l) {
    int t4 = sdot4x8(le[l][0], 0x01010101u, 0) + sdot4x8(lo[l][0], 0x01010101u, 0);
    [[unroll]] for (uint j = 1u; j < LIMB_WORDS; ++j) {
      t4 = t4 + sdot4x8(le[l][j], 0x01010101u, 0) + sdot4x8(lo[l][j], 0x01010101u, 0);
    }
    lsum[l] = t4;
  }
}
