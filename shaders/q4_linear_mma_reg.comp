#version 450
// 4-bit linear forward on the tensor cores for few activation rows, with the MMA operands
// built in registers: the same result, operands, bindings and push constants as
// q4_linear_mma.comp, over strips of 128 x TT weight rows (below) (out[m][n] = sum_k x[m][k] * (code(n,k) - 8) * s[n][k / gs] + bias[n],
// x as three int8 limbs per (row, chunk) from q4_mma_limbs.comp, exact int32 sums of 16 x 8
// x 32 int8 MMAs scaled in fp32 per chunk), without its shared-memory tiles and barriers.
//
// The idea (an estimate, not a profile): at M <= 16 that kernel's time (3.4x the M = 1
// GEMV's at N = K = 8192 on an H200, for the same weight bytes) goes to its tiles (each
// 16 x 32 weight tile decoded into shared memory and loaded back, the limbs, units and
// scales staged through double-buffered shared memory with a barrier per step), not to the
// MMAs or the bytes. Measured (docs/performance.md, sessions 43-44): on this driver the
// int8 fragments themselves cost (coopMatLoadNV of B ~19 instructions, A's fill ~24 a
// chunk), and this form is 1.2-2.2x slower than the tiles at M = 8..32 (H100, session 44:
// M = 8 62.1 against 51.4 us at 8192^2, with TT tiles at 180 registers), so the runtime
// takes it only with ETVK_Q4_MMA_REG=1.
//
// Here each invocation loads its own weights and fills A element by element (B: below).
// The hardware's m16n8k32 int8 MMA gives invocation 4g + q of a subgroup of 32 A's rows g
// and g + 8 at k 4q .. 4q + 3 and 16 + 4q .. 16 + 4q + 3, B's column g at the same k, and
// the accumulator's (g, 2q), (g, 2q + 1), (g + 8, 2q), (g + 8, 2q + 1). An MMA's k may be
// permuted alike in A and B, so invocation (g, q) puts word q of a chunk there: its even-k
// codes (w & 0x0F0F0F0F) at k 4q .., its odd-k codes at 16 + 4q .., which is where the
// limbs layout already keeps the matching activations (word q: even k, word 4 + q: odd k).
// A subgroup owns 16 weight rows; invocation (g, q) loads chunk c0 + q of rows g and g + 8
// as one uvec4 each (a quad of invocations reads 64 contiguous bytes of a row) and a 4 x 4
// transpose inside the quad (four shuffles) gives it word q of chunks c0 .. c0 + 3. The
// scales of a step are loaded the same way (invocation q: chunk c0 + q's group) and
// shuffled to the quad per chunk. The limbs, units and limb sums of a chunk are read by
// every subgroup of the workgroup from L1 (the 8 subgroups walk the same chunks). The
// emulation fills B from the limbs' words q and 4 + q.
//
// Which element index of a fragment holds which of those positions is the driver's: the
// runtime learns it once per device (q4_mma_layout_probe.comp) and passes it as
// specialization constants (A_MAP0/1, C_MAP below, and B_MAP, unused since B is loaded
// whole; their defaults are PTX's
// register order, elements 4r .. 4r + 3 = bytes of register r, which NVIDIA's driver does
// not use for A: its elements 0-7 are row g, 8-15 row g + 8); a driver whose fragments put
// the rows, k or columns in other invocations gets no register form, and the kernel runs
// only after its self-check (ops/q4_mma_check.rs) passed on the device.
//
// TT row tiles per subgroup (16 rows each; the workgroup's 8 subgroups then hold 128 * TT
// rows, `select::mma_rows_per_workgroup`) share each chunk's B fragments: B is the costly
// operand (H200, session 44 run 1: ~19 instructions per coopMatLoadNV of a 32 x 8 int8
// matrix, by that count, with no SASS to confirm, int8 fragments built byte by byte; with
// B loop-invariant the M = 8 kernel ran 42.6 us against 74.4 at 8192^2). B comes by coopMatLoadNV from the limbs
// buffer (its layout is B's column-major, in the k order the A fill uses), and the next
// step's limbs and side are touched with its weights (one word per 32-byte sector), so that
// the step finds them in L1 (62.9 against 74.4 us there).
//
// -DEMULATE=1: the shuffles and the MMAs by plain arithmetic through shared memory (virtual
// subgroups of 32, the same fragment layout), for tests on any device (lavapipe).
#ifndef EMULATE
#define EMULATE 0
#endif
#extension GL_EXT_control_flow_attributes : enable
#if !EMULATE
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "common.glsl"
#include "q4_scales.glsl"

#ifndef MF
#define MF 1  // 8-row activation fragments per workgroup
#endif
#ifndef TT
#define TT 1  // 16-row weight tiles per subgroup
#endif
#ifndef LIMBS
#define LIMBS 3  // activation limbs per chunk (2: the DQ forms)
#endif
#define STEP 4   // chunks per step: one uvec4 per row and invocation of a quad
#define NT 256   // invocations (the runtime launches 256 x 1 x 1)
#define SG 8     // subgroups of 32
#define ROWS (16 * SG * TT)
#define CL 4     // accumulator elements per invocation
#ifndef MB
#define MB 8     // row tiles per block of the launch order (as q4_linear_mma.comp)
#endif

// Element maps, 4 bits an element (element i at bits 4 (i % 8)): A (A_MAP0: elements 0-7,
// A_MAP1: 8-15) bit 3 = row g + 8, bits 0-2 = nibble of this invocation's weight word
// (even nibbles: k 4q .., odd: k 16 + 4q ..); the accumulator (elements 0-3) bit 1 = row
// g + 8, bit 0 = column 2q + 1. B_MAP (B's elements; B is loaded whole here) stays in the
// interface the runtime fills.
layout(constant_id = 3) const uint A_MAP0 = 0xECA86420u;
layout(constant_id = 4) const uint A_MAP1 = 0xFDB97531u;
layout(constant_id = 5) const uint B_MAP = 0x76543210u;
layout(constant_id = 6) const uint C_MAP = 0x3210u;
#define A_MAP(i) ((((i) < 8u ? A_MAP0 : A_MAP1) >> (4u * ((i) & 7u))) & 15u)
#define C_MAP_AT(e) ((C_MAP >> (4u * (e))) & 15u)

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };   // [M][N]
layout(set = 0, binding = 1) writeonly buffer Part { float part[]; };  // [slices][M][N]
layout(set = 0, binding = 2) readonly buffer Limbs { uint limbs[]; };  // [LIMBS][KC][Mp] x 8
layout(set = 0, binding = 3) readonly buffer Side { uvec4 side2[]; };  // [KC][Mp / 2]: 2 uvec2
layout(set = 0, binding = 4) readonly buffer W4 { uvec4 w4[]; };       // [N][KC]
layout(set = 0, binding = 5) readonly buffer S { float s[]; };         // row quads, q4_scales.glsl
layout(set = 0, binding = 6) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint KC;
  uint G;
  uint cpg_bias;
  uint Mp;
  uint mtiles;
  uint split;
} p;

#if EMULATE
shared uint xch[NT];
shared uint fragA[NT * 4];
shared uint fragB[LIMBS][NT * 2];
// One word from invocation `src` of this virtual subgroup (t's 32). Every invocation of the
// workgroup calls it the same number of times (uniform loops), as the barriers need.
uint quad_get(uint v, uint t, uint src) {
  xch[t] = v;
  barrier();
  const uint r = xch[(t & ~31u) | src];
  barrier();
  return r;
}
#define XOR_GET(v, m) quad_get(v, t, lane ^ (m))
#define LANE_GET(v, src) quad_get(v, t, src)
#else
#define XOR_GET(v, m) subgroupShuffleXor(v, m)
#define LANE_GET(v, src) subgroupShuffle(v, src)
#define BMAT icoopmatNV<8, gl_ScopeSubgroup, 32, 8>
// B of fragment f's limb l at chunk cc: columns are activation rows of 8 words.
#define LOAD_B(var, f, l) coopMatLoadNV(var, limbs, (((l) * p.KC + cc) * p.Mp + m0 + 8u * (f)) * 8u, 8u, true)
#endif

void main() {
  const uint t = gl_LocalInvocationID.x;
#if EMULATE
  const uint sg = t / 32u, lane = t % 32u;
#else
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#endif
  const uint gq = lane >> 2, q = lane & 3u;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint slices = p.split & 0xFFFFu, slice_len = p.split >> 16;
  const uint cpg = p.cpg_bias & 0xFFFFu;
  const bool has_bias = (p.cpg_bias >> 16) != 0u;
  // The launch order of q4_linear_mma.comp (blocks of MB row tiles; in a block every
  // (strip, slice), the tiles of one next to each other), over strips of ROWS rows.
  const uint strips = (p.N + ROWS - 1u) / ROWS;
  const uint full = MB * slices * strips;
  const uint blk = wg / full, r = wg % full;
  const uint gm = min(MB, p.mtiles - min(blk * MB, p.mtiles));
  if (gm == 0u) return;  // grid padding: whole workgroups
  const uint mt = blk * MB + r % gm, rest = r / gm;
  const uint ks = rest % slices, strip = rest / slices;
  const uint n0 = strip * ROWS, m0 = mt * 8u * MF;
  if (n0 >= p.N) return;  // grid padding: whole workgroups
  const uint cbeg = ks * slice_len, cend = min(cbeg + slice_len, p.KC);

  // Rows g and g + 8 of each of the subgroup's tiles (clamped: rows past N are computed,
  // not stored).
  uint rowA[TT], rowB[TT], sA[TT], sB[TT];
  [[unroll]] for (uint tt = 0u; tt < TT; ++tt) {
    const uint nA = n0 + (sg * TT + tt) * 16u + gq, nB = nA + 8u;
    rowA[tt] = min(nA, p.N - 1u) * p.KC;
    rowB[tt] = min(nB, p.N - 1u) * p.KC;
    sA[tt] = Q4S(min(nA, p.N - 1u), 0u, p.G);
    sB[tt] = Q4S(min(nB, p.N - 1u), 0u, p.G);
  }

  float acc[TT * MF * CL];
  [[unroll]] for (uint i = 0u; i < TT * MF * CL; ++i) acc[i] = 0.0;

  // This invocation's weight chunk and scale group of the step at c0, per tile (clamped;
  // chunks at or past cend are masked where they are summed).
  uvec4 wa[TT], wb[TT];
  float sca[TT], scb[TT];
#define LOAD_STEP(c0)                                          \
  {                                                            \
    const uint c = min((c0) + q, p.KC - 1u);                   \
    const uint g = min(c / cpg, p.G - 1u);                     \
    [[unroll]] for (uint tt = 0u; tt < TT; ++tt) {             \
      wa[tt] = w4[rowA[tt] + c];                               \
      wb[tt] = w4[rowB[tt] + c];                               \
      sca[tt] = s[sA[tt] + 4u * g];                            \
      scb[tt] = s[sB[tt] + 4u * g];                            \
    }                                                          \
  }
#if !EMULATE
  // The next step's limbs and side, touched with its weights (one word per invocation and
  // 32-byte sector); the words are folded into `touch` a step later, when they have
  // arrived, so that no wait is placed at the loads.
  uint touch = 0u;
  uint tw[LIMBS * MF + 1];
  [[unroll]] for (uint i = 0u; i < LIMBS * MF + 1u; ++i) tw[i] = 0u;
#define TOUCH_STEP(c0)                                                                    \
  {                                                                                       \
    [[unroll]] for (uint i = 0u; i < LIMBS * MF + 1u; ++i) touch ^= tw[i];                \
    const uint cl = min((c0), p.KC - 1u), nw = min(STEP, p.KC - cl) * p.Mp * 8u;          \
    [[unroll]] for (uint l = 0u; l < LIMBS; ++l) {                                        \
      [[unroll]] for (uint i = 0u; i < MF; ++i) {                                         \
        const uint o = lane * 8u + 256u * i;                                              \
        tw[l * MF + i] = o < nw ? limbs[(l * p.KC + cl) * p.Mp * 8u + o] : 0u;            \
      }                                                                                   \
    }                                                                                     \
    tw[LIMBS * MF] =                                                                      \
        lane * 2u < min(STEP, p.KC - cl) * p.Mp ? side2[(cl * p.Mp) / 2u + lane].x : 0u;  \
  }
#else
#define TOUCH_STEP(c0)
#endif

  if (cbeg < cend) LOAD_STEP(cbeg);
  // Uniform over the workgroup (the emulation's barriers): every invocation walks the slice.
  for (uint c0 = cbeg; c0 < cend; c0 += STEP) {
    uvec4 va[TT], vb[TT];
    float ta[TT], tb[TT];
    [[unroll]] for (uint tt = 0u; tt < TT; ++tt) {
      va[tt] = wa[tt];
      vb[tt] = wb[tt];
      ta[tt] = sca[tt];
      tb[tt] = scb[tt];
    }
    // The next step's weights and scales fly while this one computes.
    if (c0 + STEP < cend) {
      LOAD_STEP(c0 + STEP);
      TOUCH_STEP(c0 + STEP);
    }
    // 4 x 4 transposes in the quad: invocation q then holds word q of chunks c0 .. c0 + 3.
    // First the 2 x 2 blocks (partner q ^ 2), then inside them (partner q ^ 1).
    {
      const bool hi = (q & 2u) != 0u, odd = (q & 1u) != 0u;
      [[unroll]] for (uint tt = 0u; tt < TT; ++tt) {
        uvec4 xa = va[tt], xb = vb[tt];
        uint r0 = XOR_GET(hi ? xa.x : xa.z, 2u), r1 = XOR_GET(hi ? xa.y : xa.w, 2u);
        uint r2 = XOR_GET(hi ? xb.x : xb.z, 2u), r3 = XOR_GET(hi ? xb.y : xb.w, 2u);
        if (hi) {
          xa.xy = uvec2(r0, r1);
          xb.xy = uvec2(r2, r3);
        } else {
          xa.zw = uvec2(r0, r1);
          xb.zw = uvec2(r2, r3);
        }
        r0 = XOR_GET(odd ? xa.x : xa.y, 1u);
        r1 = XOR_GET(odd ? xa.z : xa.w, 1u);
        r2 = XOR_GET(odd ? xb.x : xb.y, 1u);
        r3 = XOR_GET(odd ? xb.z : xb.w, 1u);
        if (odd) {
          xa.xz = uvec2(r0, r1);
          xb.xz = uvec2(r2, r3);
        } else {
          xa.yw = uvec2(r0, r1);
          xb.yw = uvec2(r2, r3);
        }
        va[tt] = xa;
        vb[tt] = xb;
      }
    }
    [[unroll]] for (uint j = 0u; j < STEP; ++j) {
      const uint c = c0 + j;
      const bool live = c < cend;
      const uint cc = min(c, p.KC - 1u);
      // Units and limb sums of activation rows m0 + 8f + 2q, + 2q + 1 (the accumulator's
      // columns), and (natively) each fragment's B, once for all TT tiles.
      uvec4 sd[MF];
      [[unroll]] for (uint f = 0u; f < MF; ++f) sd[f] = side2[(cc * p.Mp + m0 + 8u * f) / 2u + q];
#if !EMULATE
      // Cooperative matrices stay out of arrays (their indexing would stay dynamic in the
      // unoptimized SPIR-V glslc leaves for them).
      BMAT b00, b01, b02;
      LOAD_B(b00, 0u, 0u);
      LOAD_B(b01, 0u, 1u);
#if LIMBS > 2
      LOAD_B(b02, 0u, 2u);
#endif
#if MF > 1
      BMAT b10, b11, b12;
      LOAD_B(b10, 1u, 0u);
      LOAD_B(b11, 1u, 1u);
#if LIMBS > 2
      LOAD_B(b12, 1u, 2u);
#endif
#endif
#if MF > 2
      BMAT b20, b21, b22, b30, b31, b32;
      LOAD_B(b20, 2u, 0u);
      LOAD_B(b21, 2u, 1u);
      LOAD_B(b30, 3u, 0u);
      LOAD_B(b31, 3u, 1u);
#if LIMBS > 2
      LOAD_B(b22, 2u, 2u);
      LOAD_B(b32, 3u, 2u);
#endif
#endif
#endif
      [[unroll]] for (uint tt = 0u; tt < TT; ++tt) {
        // Rows g and g + 8's scales of chunk c, loaded by invocation (g, j).
        const float sg_a = uintBitsToFloat(LANE_GET(floatBitsToUint(ta[tt]), (lane & ~3u) | j));
        const float sg_b = uintBitsToFloat(LANE_GET(floatBitsToUint(tb[tt]), (lane & ~3u) | j));
        const uint wva = va[tt][j], wvb = vb[tt][j];
        const uint a0 = wva & 0x0F0F0F0Fu, a1 = wvb & 0x0F0F0F0Fu;
        const uint a2 = (wva >> 4) & 0x0F0F0F0Fu, a3 = (wvb >> 4) & 0x0F0F0F0Fu;
        int v[MF][CL];
#if !EMULATE
        // A's elements as bytes of the masked words (a0 / a2: even / odd nibbles of row g,
        // a1 / a3 of row g + 8).
        icoopmatNV<8, gl_ScopeSubgroup, 16, 32> a;
        [[unroll]] for (uint i = 0u; i < 16u; ++i) {
          const uint mp = A_MAP(i);
          const uint w = (mp & 8u) != 0u ? ((mp & 1u) != 0u ? a3 : a1) : ((mp & 1u) != 0u ? a2 : a0);
          a[i] = int8_t(int((w >> (8u * ((mp & 7u) >> 1))) & 255u));
        }
        // One accumulator per fragment: ((C_0 * 128) + C_1) * 128 + C_2, as
        // q4_linear_mma.comp chains it; element e into slot C_MAP(e) (the emulation's order).
#define MMA_FRAG(f, B0, B1, B2)                                                           \
        {                                                                                 \
          icoopmatNV<32, gl_ScopeSubgroup, 16, 8> d = icoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0); \
          d = coopMatMulAddNV(a, B0, d);                                                  \
          [[unroll]] for (uint e = 0u; e < CL; ++e) d[e] = d[e] * 128;                    \
          d = coopMatMulAddNV(a, B1, d);                                                  \
          if (LIMBS > 2) {                                                                \
            [[unroll]] for (uint e = 0u; e < CL; ++e) d[e] = d[e] * 128;                  \
            d = coopMatMulAddNV(a, B2, d);                                                \
          }                                                                               \
          [[unroll]] for (uint e = 0u; e < CL; ++e) v[f][C_MAP_AT(e)] = d[e];             \
        }
        MMA_FRAG(0, b00, b01, b02)
#if MF > 1
        MMA_FRAG(1, b10, b11, b12)
#endif
#if MF > 2
        MMA_FRAG(2, b20, b21, b22)
        MMA_FRAG(3, b30, b31, b32)
#endif
#else
        [[unroll]] for (uint f = 0u; f < MF; ++f) {
          // Limbs of activation row m0 + 8f + g (B's column g): word q (even k), 4 + q (odd k).
          fragA[t * 4u] = a0;
          fragA[t * 4u + 1u] = a1;
          fragA[t * 4u + 2u] = a2;
          fragA[t * 4u + 3u] = a3;
          [[unroll]] for (uint l = 0u; l < LIMBS; ++l) {
            const uint base = ((l * p.KC + cc) * p.Mp + m0 + 8u * f + gq) * 8u;
            fragB[l][t * 2u] = limbs[base + q];
            fragB[l][t * 2u + 1u] = limbs[base + 4u + q];
          }
          barrier();
          [[unroll]] for (uint e = 0u; e < CL; ++e) {
            // Element e: row g + 8 (e / 2) of A, column 2q + e % 2 of B.
            const uint hr = e >> 1, col = 2u * q + (e & 1u);
            int sum = 0;
            [[unroll]] for (uint l = 0u; l < LIMBS; ++l) {
              int c3 = 0;
              // Not unrolled: four fragments' worth unrolled exhausts glslc's optimizer.
              [[dont_unroll]] for (uint qq = 0u; qq < 4u; ++qq) {
                const uint ia = ((t & ~31u) + 4u * gq + qq) * 4u, ib = ((t & ~31u) + 4u * col + qq) * 2u;
                [[unroll]] for (uint h = 0u; h < 2u; ++h) {
                  const uint aw = fragA[ia + hr + 2u * h], bw = fragB[l][ib + h];
                  [[unroll]] for (uint y = 0u; y < 4u; ++y) {
                    c3 += bitfieldExtract(int(aw), int(8u * y), 8) * bitfieldExtract(int(bw), int(8u * y), 8);
                  }
                }
              }
              sum = sum * 128 + c3;
            }
            v[f][e] = sum;
          }
          barrier();
        }
#endif
        [[unroll]] for (uint f = 0u; f < MF; ++f) {
          [[unroll]] for (uint e = 0u; e < CL; ++e) {
            const uvec2 u = (e & 1u) == 0u ? sd[f].xy : sd[f].zw;
            const float sc = (e >> 1) == 0u ? sg_a : sg_b;
            const float add = float(v[f][e] + int(u.y)) * (sc * uintBitsToFloat(u.x));
            acc[(tt * MF + f) * CL + e] += live ? add : 0.0;
          }
        }
      }
    }
  }
#if !EMULATE
  [[unroll]] for (uint i = 0u; i < LIMBS * MF + 1u; ++i) touch ^= tw[i];
  // Never true for a launch (N > 0): keeps the touch loads.
  if (p.N == 0u && touch == 0x9E3779B9u) outp[0] = 0.0;
#endif

  [[unroll]] for (uint tt = 0u; tt < TT; ++tt) {
    const uint nA = n0 + (sg * TT + tt) * 16u + gq, nB = nA + 8u;
    [[unroll]] for (uint f = 0u; f < MF; ++f) {
      [[unroll]] for (uint e = 0u; e < CL; ++e) {
        const uint n = (e >> 1) == 0u ? nA : nB, m = m0 + 8u * f + 2u * q + (e & 1u);
        if (n < p.N && m < p.M) {
          const float v = acc[(tt * MF + f) * CL + e];
          if (slices == 1u) {
            outp[m * p.N + n] = v + (has_bias ? bias[n] : 0.0);
          } else {
            part[(ks * p.M + m) * p.N + n] = v;
          }
        }
      }
    }
  }
}
