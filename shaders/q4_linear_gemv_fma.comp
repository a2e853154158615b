#version 450
// 4-bit weight-only linear for M = 2..MT activation rows (MT = 2, 4 or 8), fp32 FMAs, one
// pass over the weights for all rows:
//   out[m][n] = sum_k x[m][k] * (code(n,k) - 8) * s[n][k / gs]  (+ bias[n])
// over etvk's packed Q4 layout (rows n contiguous along k, word w of a row holds k = 8w..8w+7
// at bits 4j) and fp32 scales in row quads (q4_scales.glsl), groups of whole words (gs a
// power-of-two multiple of 8, or one group per row).
//
// Why: the int8 GEMVs serve M = 2..8 by splitting their workgroups over the activation
// rows (each row's pass over the weight shared through L2) and the tensor-core forward pads
// M = 8 to its fragments; both ran 3.4-4.3x the M = 1 time on an H200 (docs/performance.md).
// Here each code is decoded once and feeds the MT rows' FMAs. Earlier fp32 forms had a lane
// own a weight row (a subgroup's load then spans 32 rows, 16 bytes each, which streams at a
// fraction of the read rate: sessions 14 and 16); here a lane owns one word column of the
// row and holds its 8 activations of every row in registers, pre-scaled by 16^-j (exact) so
// that the in-place magic decode (q4_magic.glsl: an AND and a subtract per code) needs no
// shift, and a subgroup's load is one contiguous run of 4 * subgroup bytes of a row.
//
// Each row's MT partial sums per lane are summed over the subgroup by a transposing
// butterfly: lane L holds activation row m = slot ^ perm(L) in slot `slot` (perm(L) = L /
// (subgroup / MT), by how its x was loaded), so that at each of the log2(MT) halving steps
// every lane keeps the low half of its slots and adds its partner's high half, the same code
// in every lane (no selects); then plain xor steps over the rest of the subgroup. MT - 1 +
// log2(subgroup / MT) shuffles per row and lane, and lane L ends with row perm(L)'s sum. The
// subgroups' sums meet in shared memory (double-buffered by block parity: one barrier per
// block of RW rows).
//
// A wave of workgroups walks the blocks of RW rows like q4_linear_gemv_half's sliced form:
// the row is cut into S slices of p.CW words (the workgroup's NT invocations, one word
// each); workgroup wg works on slice wg % S and walks blocks wg / S, wg / S + P, ... (P =
// workgroups / S). With S > 1 each workgroup writes per-slice sums to `part` [S][M][N]; the
// last of a block set to finish (a ticket per set) adds the S slices in slice order (the
// same result every run) into `out`, with the bias, and sets its ticket back to zero.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
#include "q4_scales.glsl"
#include "q4_magic.glsl"

#ifndef MT
#define MT 8  // activation rows held (M <= MT; rows past M are zero and not written)
#endif
// Words per lane: 1, or 2 (rows of an even number of words, groups of >= 16 codes: the
// pair is one uvec2 load in one group; the runtime's choice).
#ifndef WPL
#define WPL 1
#endif
// Local size (specialization constant; the runtime launches NT x 1 x 1): the slice's words
// in whole subgroups, at most 256. Subgroups of at least MT invocations (a power of two).
#define NT gl_WorkGroupSize.x
#define RW 8   // rows per block (= Q4_ROW_PAD: whole blocks lie in the padded rows)
#ifndef UR
#define UR 4   // rows per batch of loads: whole quads of the packed scales (4 or 8)
#endif
#define URQ (UR / 4)
#define MAX_SUBGROUPS 32  // NT / subgroup size (256 / 8)

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w1[]; };
layout(set = 0, binding = 2) readonly buffer W2 { uvec2 w2[]; };
layout(set = 0, binding = 3) readonly buffer S4 { vec4 s4[]; };  // row quads (q4_scales.glsl)
layout(set = 0, binding = 4) readonly buffer B { float bias[]; };
layout(set = 0, binding = 5) coherent buffer Part { float part[]; };   // [S][M][N]
layout(set = 0, binding = 6) coherent buffer Count { uint count[]; };  // [P], 0 between launches

// The 4-bit GEMVs' eight words (a node's variants share one size).
layout(push_constant) uniform Params {
  uint M;         // activation rows (2..MT)
  uint N;         // output features
  uint K;         // activation row length (<= Kpad)
  uint KW;        // packed words per weight row (Kpad / 8)
  uint G;         // scale groups per row
  uint CW;        // words per slice (<= NT * WPL; a multiple of WPL)
  uint SB;        // slices per row S (bits 0..30); bit 31: has_bias
  uint gshift;    // log2(gs / 8), or 0xFFFFFFFF when G == 1
} p;

// [parity][RW rows][MAX_SUBGROUPS][MT]
shared float red[2 * RW * MAX_SUBGROUPS * MT];
shared uint last_to_finish;  // 1: this workgroup adds its set's slices

// Rows nb .. nb + UR - 1 (nb a multiple of 4) of the WPL words from wd, and their scales of
// group gc as one vec4 per quad. Rows are padded to whole blocks of 8 (prepack::q4::Q4_ROW_PAD), so no row is
// clamped: rows past N are computed from padding and never written.
#if WPL == 2
#define WORDS uvec2
void load_batch(uint wd, uint nb, uint gc, out uvec2 wv[UR], out vec4 sb[URQ]) {
  const uint base = (nb * p.KW + wd) >> 1u;
  [[unroll]] for (uint u = 0u; u < UR; ++u) wv[u] = w2[base + u * (p.KW >> 1u)];
#else
#define WORDS uint
void load_batch(uint wd, uint nb, uint gc, out uint wv[UR], out vec4 sb[URQ]) {
  const uint base = nb * p.KW + wd;
  [[unroll]] for (uint u = 0u; u < UR; ++u) wv[u] = w1[base + u * p.KW];
#endif
  [[unroll]] for (uint q = 0u; q < URQ; ++q) sb[q] = s4[((nb >> 2) + q) * p.G + gc];
}

// One halving step of the transposing butterfly over slots [0, 2H).
#define HALVE(H)                                                                         \
  [[unroll]] for (uint i = 0u; i < H; ++i) v[i] += subgroupShuffleXor(v[i + H], mask); \
  mask >>= 1u;

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
  const uint nblocks = (p.N + RW - 1u) / RW;
  const uint S = p.SB & 0x7FFFFFFFu;
  const bool has_bias = (p.SB >> 31u) != 0u;
  const uint P = nwg / S;  // block sets (the launch is a multiple of S)
  const uint slice = wg % S, first = wg / S;
  // Whole workgroups leave: no barrier is skipped by part of one (and all S workgroups of
  // a set leave together).
  if (first >= nblocks) return;
  const uint sg = gl_SubgroupID, sgsize = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
  // First word column of the row this invocation holds (WPL of them); past its slice's (or
  // the row's) words it holds a copy of the row's last ones and counts zero (its activations
  // are zero). With WPL = 2, CW and KW are even.
  const uint wg_word = slice * p.CW + t * WPL;
  const bool live = t * WPL < p.CW && wg_word < p.KW;
  const uint wd = min(wg_word, p.KW - WPL);
  const uint gc = p.G == 1u ? 0u : min(wd >> p.gshift, p.G - 1u);
  WORDS wv[UR];
  vec4 sb[URQ];
  uint b = first;
  load_batch(wd, b * RW, gc, wv, sb);

  // This lane's 8 activations of each row, slot s holding row s ^ perm, pre-scaled by
  // 16^-j for the in-place decode (exact: powers of two).
  const uint perm = lane / (sgsize / MT);
  // xl / xh[WPL * s + q]: word q's.
  vec4 xl[MT * WPL], xh[MT * WPL];
  [[unroll]] for (uint q = 0u; q < WPL; ++q) {
    const uint k0 = (wd + q) * 8u;
    const bool vec_ok = (p.K & 3u) == 0u && k0 + 8u <= p.K;
    [[unroll]] for (uint s = 0u; s < MT; ++s) {
      const uint m = s ^ perm;
      vec4 lo = vec4(0.0), hi = vec4(0.0);
      if (live && m < p.M) {
        const uint r0 = m * p.K + k0;
        if (vec_ok) {
          lo = x4[r0 >> 2];
          hi = x4[(r0 >> 2) + 1u];
        } else {
          [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            lo[j] = k0 + j < p.K ? x[r0 + j] : 0.0;
            hi[j] = k0 + 4u + j < p.K ? x[r0 + 4u + j] : 0.0;
          }
        }
      }
      xl[WPL * s + q] = lo * UNPOS;
      xh[WPL * s + q] = hi * UNPOS;
    }
  }

  const uint nsg = NT / sgsize;
  const uint plain_lanes = sgsize / MT;  // lanes that end with the same row's sum
  uint parity = 0u;
  for (;;) {
    const uint n0 = b * RW;
    const uint bn = b + P;
    [[unroll]] for (uint r0 = 0u; r0 < RW; r0 += UR) {
      WORDS wn[UR];
      vec4 sn[URQ];
      if (r0 + UR < RW) {
        load_batch(wd, n0 + r0 + UR, gc, wn, sn);
      } else if (bn < nblocks) {
        load_batch(wd, bn * RW, gc, wn, sn);
      }
      [[unroll]] for (uint u = 0u; u < UR; ++u) {
        float v[MT];
#if WPL == 2
        const vec4 cl0 = codes4_lo(wv[u].x), ch0 = codes4_hi(wv[u].x);
        const vec4 cl1 = codes4_lo(wv[u].y), ch1 = codes4_hi(wv[u].y);
        [[unroll]] for (uint s = 0u; s < MT; ++s) {
          v[s] = ((dot(cl0, xl[2u * s]) + dot(ch0, xh[2u * s])) +
                  (dot(cl1, xl[2u * s + 1u]) + dot(ch1, xh[2u * s + 1u]))) * sb[u >> 2u][u & 3u];
        }
#else
        const vec4 cl = codes4_lo(wv[u]), ch = codes4_hi(wv[u]);
        [[unroll]] for (uint s = 0u; s < MT; ++s) v[s] = (dot(cl, xl[s]) + dot(ch, xh[s])) * sb[u >> 2u][u & 3u];
#endif
        // Halving steps: keep slots [0, h), add the partner's [h, 2h).
        uint mask = sgsize >> 1u;
#if MT >= 8
        HALVE(4u)
#endif
#if MT >= 4
        HALVE(2u)
#endif
        HALVE(1u)
        for (uint pm = plain_lanes >> 1u; pm >= 1u; pm >>= 1u) v[0] += subgroupShuffleXor(v[0], pm);
        if (lane % plain_lanes == 0u) {
          red[((parity * RW + r0 + u) * MAX_SUBGROUPS + sg) * MT + perm] = v[0];
        }
      }
      wv = wn;
      sb = sn;
    }
    barrier();
    // One invocation per (row, activation row) of the block (a workgroup may have fewer):
    // the subgroups' sums in order.
    for (uint o = t; o < RW * MT; o += NT) {
      const uint r = o / MT, m = o % MT, n = n0 + r;
      if (m < p.M && n < p.N) {
        float acc = 0.0;
        for (uint i = 0u; i < nsg; ++i) acc += red[((parity * RW + r) * MAX_SUBGROUPS + i) * MT + m];
        if (S == 1u) {
          outp[m * p.N + n] = has_bias ? acc + bias[n] : acc;
        } else {
          part[(slice * p.M + m) * p.N + n] = acc;
        }
      }
    }
    parity ^= 1u;
    if (bn >= nblocks) break;
    b = bn;
  }
  if (S == 1u) return;
  // This workgroup's row sums visible device-wide before it counts as done.
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) last_to_finish = atomicAdd(count[first], 1u) == S - 1u ? 1u : 0u;
  barrier();
  if (last_to_finish == 0u) return;
  memoryBarrierBuffer();
  // Rows of blocks first, first + P, ... for every activation row: consecutive
  // invocations, consecutive rows.
  const uint rows = ((nblocks - first + P - 1u) / P) * RW;
  for (uint i = t; i < rows * p.M; i += NT) {
    const uint m = i / rows, r = i % rows;
    const uint n = (first + P * (r / RW)) * RW + r % RW;
    if (n < p.N) {
      float v = 0.0;
      for (uint j = 0u; j < S; ++j) v += part[(j * p.M + m) * p.N + n];
      outp[m * p.N + n] = has_bias ? v + bias[n] : v;
    }
  }
  if (t == 0u) count[first] = 0u;
}
