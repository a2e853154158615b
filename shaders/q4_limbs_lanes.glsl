// make_limbs (q4_limbs.glsl) spread over 8 invocations per 32-activation chunk, for the
// limb pre-passes (q4_mma_limbs.comp, q4_act_limbs.comp): with one invocation per chunk
// those ran a few hundred dependent instructions on a few warps per SM (M = 8, K = 8192:
// 2048 invocations, 5-6 us on an H200 for 256 KB). Invocation t of a workgroup of exactly
// LIMB_LOCAL handles activations 4 (t % 8) .. + 3 of chunk t / 8 of the workgroup; the eight
// share the chunk's |x| maximum, the limb half-words and the limb sums through shared memory
// (two barriers, reached by every invocation: callers must not return before). Same unit,
// limbs and sums as make_limbs, bit for bit.
#define LIMB_LOCAL 64

shared uint limb_amax[LIMB_LOCAL];
shared uint limb_halves[3][LIMB_LOCAL];
shared int limb_sums[3][LIMB_LOCAL];

// Limb l's four digits `a` of invocation t (activations 4 (t % 8) .. + 3 of its chunk), for
// the chunk's eight invocations to read after a barrier. Activation 4i + q sits at position
// 4 (i % 2) + q of word i / 2: the even q go to the even-k word's bytes 2 (i % 2) and
// 2 (i % 2) + 1, the odd q to the odd-k word's. Low half: this invocation's even-k bytes,
// high half: its odd-k bytes.
void lane_limb_store(uint l, uint t, ivec4 a) {
  const uvec4 u = uvec4(a) & 0xFFu;
  limb_halves[l][t] = (u.x | u.z << 8) | (u.y | u.w << 8) << 16;
  limb_sums[l][t] = a.x + a.y + a.z + a.w;
}

// After lane_limb_store and a barrier: the limb-l word invocation t stores (invocation 2j of
// the chunk the even-k word j, 2j + 1 the odd-k word j) and the chunk's limb-l sum. Even
// invocation: its even-k half (bytes 0-1) and its partner's (2-3); odd: the partner's odd-k
// half (bytes 0-1) and its own (2-3).
uint lane_limb_word(uint l, uint t, out int lsum) {
  const uint first = t & ~7u;
  const uint mine = limb_halves[l][t], other = limb_halves[l][t ^ 1u];
  int s = 0;
  [[unroll]] for (uint j = 0u; j < 8u; ++j) s += limb_sums[l][first + j];
  lsum = s;
  return (t & 1u) != 0u ? (other >> 16) | (mine & 0xFFFF0000u) : (mine & 0xFFFFu) | (other << 16);
}

// xv: this invocation's four activations (zero past the row). Out: `word[l]`, the limb-l
// word this invocation stores: invocation 2j of the chunk the even-k word j (make_limbs'
// le[l][j]), invocation 2j + 1 the odd-k word j (lo[l][j]); the chunk's limb sums and unit.
void make_limbs_lane(vec4 xv, uint t, out uint word[3], out int lsum[3], out float unit) {
  const uint first = t & ~7u;
  // The bit-pattern maximum, as make_limbs: NaN / Inf sort above every finite value.
  const uvec4 mb = floatBitsToUint(xv) & 0x7FFFFFFFu;
  limb_amax[t] = max(max(mb.x, mb.y), max(mb.z, mb.w));
  barrier();
  uint amax_bits = 0u;
  [[unroll]] for (uint j = 0u; j < 8u; ++j) amax_bits = max(amax_bits, limb_amax[first + j]);
  const bool finite = amax_bits < 0x7F800000u;
  const float amax = uintBitsToFloat(finite ? amax_bits : 0u);
  const float inv = amax > 0.0 ? 2080768.0 / amax : 0.0;
  unit = finite ? amax / 127.0 : uintBitsToFloat(0x7FC00000u);
  const ivec4 iv = ivec4(round(xv * inv));
  const ivec4 a0 = (iv + 8192) >> 14;
  const ivec4 rem = iv - (a0 << 14);
  const ivec4 a1 = (rem + 64) >> 7;
  const ivec4 a2 = rem - (a1 << 7);
  const ivec4 a[3] = ivec4[3](a0, a1, a2);
  [[unroll]] for (uint l = 0u; l < 3u; ++l) lane_limb_store(l, t, a[l]);
  barrier();
  [[unroll]] for (uint l = 0u; l < 3u; ++l) word[l] = lane_limb_word(l, t, lsum[l]);
}

// The integers d (|d| <= 255, as floats; an 8da4w linear's q - zp) of this invocation's four
// activations as two int8 limbs, d = 128 a0 + a1 (a0 in [-2, 2], a1 in [-64, 63]): the
// words and sums make_limbs_lane gives for its three (two barriers, reached by every
// invocation).
void make_int_limbs_lane(vec4 dv, uint t, out uint word[2], out int lsum[2]) {
  const ivec4 iv = ivec4(dv);
  const ivec4 a0 = (iv + 64) >> 7;
  const ivec4 a[2] = ivec4[2](a0, iv - (a0 << 7));
  [[unroll]] for (uint l = 0u; l < 2u; ++l) lane_limb_store(l, t, a[l]);
  barrier();
  [[unroll]] for (uint l = 0u; l < 2u; ++l) word[l] = lane_limb_word(l, t, lsum[l]);
  // The next call writes the halves at once (make_limbs_lane has its amax barrier first):
  // every read of these must be done.
  barrier();
}

// The chunks (items) in groups of 8 per workgroup: a workgroup starts at group
// limb_lane_first() / 8 and strides by the launch's workgroups, so that a launch capped in
// size (the runtime's limbs_launch) covers any count, and the loop bound is the same for
// every invocation of a workgroup (make_limbs_lane's barriers).
uint limb_lane_first() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * (LIMB_LOCAL / 8u);
}
uint limb_lane_stride() {
  return gl_NumWorkGroups.x * gl_NumWorkGroups.y * (LIMB_LOCAL / 8u);
}

#if !(defined(DQ) && DQ)
// Invocation t's four activations of chunk c of x's row xr (offset of the row's first
// element; K its length): zero past the row. (The DQ forms read raw x themselves.)
vec4 limb_lane_load(uint xr, uint K, uint c, uint t, bool in_range) {
  const uint k = c * 32u + 4u * (t & 7u);
  if (!in_range) return vec4(0.0);
  if ((K & 3u) == 0u && k + 4u <= K) return x4[(xr + k) >> 2];
  return vec4(k < K ? x[xr + k] : 0.0, k + 1u < K ? x[xr + k + 1u] : 0.0,
              k + 2u < K ? x[xr + k + 2u] : 0.0, k + 3u < K ? x[xr + k + 3u] : 0.0);
}
#endif
