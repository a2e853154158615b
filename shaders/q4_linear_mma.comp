#version 450
// 4-bit linear forward on the tensor cores, M >= 8: out[m][n] = sum_k x[m][k] * (code(n,k) - 8)
// * s[n][k / gs] (+ bias[n]), exact integer products through NV int8 cooperative matrices.
//
// Operands: the packed weight (q4_pack_weights.comp: rows n of KC uvec4 chunks, 32 codes
// each; nibble p of word j of a chunk is column 8j + p) and the activations as three int8
// limbs per (row, chunk) from q4_mma_limbs.comp, x = unit * (a0 + a1 / 128 + a2 / 16384)
// to within amax * 2^-22 (q4_limbs.glsl). Per chunk an MMA of shape 16 x 8 x 32 multiplies
// 16 weight rows' codes (A: int8 0..15, an AND and a shift-AND per 8 codes) by 8 activation
// rows' limbs (B), once per limb, into exact int32 sums C_l; each then becomes
//   out += s[n][g] * unit[m] / 16384 * (16384 C_0 + 128 C_1 + C_2 - 8 * limb sum)
// in fp32, element by element. The order of k inside a chunk is permuted alike in A and B
// (even k of each word, then odd), which a dot product does not see.
//
// The accumulator's fragment layout is the driver's: the kernel learns the (row, column) of
// each of an invocation's elements by loading a matrix of indices once, and writes NaN
// everywhere if a fragment does not hold CL elements per invocation.
//
// Work split: a workgroup owns 128 weight rows (16 per subgroup of 32; 8 subgroups), 8 * MF
// activation rows and one slice of the chunks (split-K: `slices` workgroups share a row
// strip and write partial sums that q4_linear_reduce adds in slice order; one slice writes
// the output). It walks its slice in steps of STEP chunks: the next step's weights, limbs,
// units and scales are loaded into registers while the current step computes; each step
// the limbs, units and scales go to double-buffered shared memory (one barrier per step)
// and each subgroup decodes its own rows' codes into a private shared tile.
//
// -DLIMBS=2 (`q4_linear_mma_dq_*`): the activations are an 8da4w linear's integers q - zp in
// two limbs (q4_mma_limbs.comp's DQ form, d = 128 a0 + a1, the unit the row's scale): two
// MMAs per chunk and fragment instead of three, two thirds of the limb loads, and
//   out += s[n][g] * scale[m] * (128 C_0 + C_1 - 8 * limb sum).
//
// -DEMULATE=1 replaces the cooperative-matrix calls and subgroup built-ins by plain
// arithmetic on the same shared tiles (each invocation computing 4 elements of its virtual
// subgroup's 16 x 8 tiles, row-major), so that everything around the MMAs (tiles, limbs,
// scales, split-K, the store) runs and is tested on any device (lavapipe).
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
#endif
#include "common.glsl"
#include "q4_scales.glsl"

#ifndef MF
#define MF 1  // 8-row activation fragments per workgroup
#endif
#ifndef LIMBS
#define LIMBS 3  // activation limbs per chunk (2: the DQ forms)
#endif
#ifndef STEP
#define STEP 4  // chunks per step (2 or 4)
#endif
// H200 (docs/performance.md, session 8), M = 8 at N = 28672, K = 8192: the chunk loop
// unrolled 146 registers, 216 us; rolled 120, 182 us; rolled with one chained accumulator
// 114, 181 us (f4: 120 registers).
#ifndef CHAIN
#define CHAIN 1  // 1: one int32 accumulator through the three limb MMAs
#endif
#ifndef ROLL
#define ROLL 1   // 1: the step's chunk loop is not unrolled
#endif
#define NT 256  // invocations (the runtime launches 256 x 1 x 1)
#define SG 8    // subgroups of 32
#define ROWS (16 * SG)
#define CL 4    // accumulator elements per invocation of a 16 x 8 int32 fragment
#ifndef MB
#define MB 8    // row tiles per block of the launch order
#endif
#define WPL (STEP / 2)                       // weight uvec4 per invocation per step
#define BITEMS (STEP * LIMBS * 8 * MF * 2)   // limb uvec4 per step
#define BPL ((BITEMS + NT - 1) / NT)         // ... per invocation
#define SITEMS (STEP * 8 * MF)               // unit / limb-sum pairs per step
#define SPL (STEP / 2)                       // scales per invocation per step (ROWS * STEP / NT)

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };   // [M][N]
layout(set = 0, binding = 1) writeonly buffer Part { float part[]; };  // [slices][M][N]
layout(set = 0, binding = 2) readonly buffer Limbs { uvec4 limbs[]; }; // [LIMBS][KC][Mp] x 2
layout(set = 0, binding = 3) readonly buffer Side { uvec2 side[]; };   // [KC][Mp]
layout(set = 0, binding = 4) readonly buffer W4 { uvec4 w4[]; };       // [N][KC]
layout(set = 0, binding = 5) readonly buffer S { float s[]; };         // row quads, q4_scales.glsl
layout(set = 0, binding = 6) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint KC;       // chunks per packed row
  uint G;        // scale groups per row
  uint cpg_bias;  // chunks per scale group (group_size / 32) | has_bias << 16
  uint Mp;        // rows of the limb arrays (M rounded up to whole workgroups' fragments)
  uint mtiles;    // workgroups per (row strip, slice) along M: ceil(M / (8 * MF))
  uint split;     // split-K slices | chunks per slice (a multiple of STEP) << 16
} p;  // 8 words, as every forward kernel of the family (one node selects among them)

shared uvec4 tileA[SG * STEP * 32];           // per subgroup: [STEP][16 rows][even, odd]
shared uvec4 tileB[2 * BITEMS];               // [buffer][STEP][limb][8 * MF][2]
shared uvec2 sideS[2 * SITEMS];               // [buffer][STEP][8 * MF]
shared float scaleS[2 * STEP * ROWS];         // [buffer][STEP][ROWS]
shared int probe_idx[128];

void main() {
  const uint t = gl_LocalInvocationID.x;
#if EMULATE
  const uint sg = t / 32u, lane = t % 32u;  // virtual subgroups of 32
#else
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#endif
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint slices = p.split & 0xFFFFu, slice_len = p.split >> 16;
  const uint cpg = p.cpg_bias & 0xFFFFu;
  const bool has_bias = (p.cpg_bias >> 16) != 0u;
  // Launch order: blocks of MB row tiles; in a block every (strip, slice), the tiles of one
  // (strip, slice) next to each other. The workgroups in flight then share the weight rows
  // of their strips and the limbs of one block's tiles through L2 (at M = 2048 the limbs
  // alone are 50 MB for K = 8192).
  const uint strips = (p.N + ROWS - 1u) / ROWS;
  const uint full = MB * slices * strips;
  const uint blk = wg / full, r = wg % full;
  const uint gm = min(MB, p.mtiles - min(blk * MB, p.mtiles));
  if (gm == 0u) return;  // grid padding
  const uint mt = blk * MB + r % gm, rest = r / gm;
  const uint ks = rest % slices, strip = rest / slices;
  const uint n0 = strip * ROWS, m0 = mt * 8u * MF;
  if (n0 >= p.N) return;  // grid padding: whole workgroups
  const uint cbeg = ks * slice_len, cend = min(cbeg + slice_len, p.KC);

  // Element e of this invocation's fragment is (row erow, column ecol) of the 16 x 8 tile.
  uint erow[CL], ecol[CL];
#if EMULATE
  [[unroll]] for (uint e = 0u; e < CL; ++e) {
    erow[e] = (lane * CL + e) >> 3;
    ecol[e] = (lane * CL + e) & 7u;
  }
  const bool layout_ok = true;
#else
  for (uint i = t; i < 128u; i += NT) probe_idx[i] = int(i);
  barrier();
  icoopmatNV<32, gl_ScopeSubgroup, 16, 8> probe;
  coopMatLoadNV(probe, probe_idx, 0, 8, false);
  [[unroll]] for (uint e = 0u; e < CL; ++e) {
    const uint v = int(e) < probe.length() ? uint(probe[e]) & 127u : 0u;
    erow[e] = v >> 3;
    ecol[e] = v & 7u;
  }
  const bool layout_ok = probe.length() == int(CL);
#endif

  float acc[MF * CL];
  [[unroll]] for (uint i = 0u; i < MF * CL; ++i) acc[i] = 0.0;

  // This invocation's loads of a step: weights of row wr, chunks wj0 .. wj0 + WPL - 1; limb
  // items t, t + NT, ..; unit item t; scales of row t % ROWS, chunks sj0 .. sj0 + SPL - 1.
  const uint wr = lane >> 1, wj0 = (lane & 1u) * WPL;
  const uint wrow = min(n0 + sg * 16u + wr, p.N - 1u) * p.KC;
  const uint srow = Q4S(min(n0 + t % ROWS, p.N - 1u), 0u, p.G);  // + 4 g
  const uint sj0 = (t / ROWS) * SPL;
  uvec4 wv[WPL], bv[BPL];
  uvec2 sv;
  float scv[SPL];

  // Loads of the step at chunk c0 (clamped: chunks past the slice are masked at use).
#define LOAD_STEP(c0)                                                                   \
  {                                                                                     \
    [[unroll]] for (uint u = 0u; u < WPL; ++u) wv[u] = w4[wrow + min((c0) + wj0 + u, p.KC - 1u)]; \
    [[unroll]] for (uint u = 0u; u < BPL; ++u) {                                        \
      const uint i = t + u * NT;                                                        \
      const uint h = i & 1u, mm = (i >> 1) % (8u * MF), l = (i / (16u * MF)) % LIMBS;   \
      const uint j = i / (16u * LIMBS * MF);                                            \
      const uint cc = min((c0) + j, p.KC - 1u);                                         \
      if (i < BITEMS) bv[u] = limbs[((l * p.KC + cc) * p.Mp + m0 + mm) * 2u + h];       \
    }                                                                                   \
    if (t < SITEMS) {                                                                   \
      const uint j = t / (8u * MF), mm = t % (8u * MF);                                 \
      sv = side[min((c0) + j, p.KC - 1u) * p.Mp + m0 + mm];                             \
    }                                                                                   \
    [[unroll]] for (uint u = 0u; u < SPL; ++u) {                                        \
      const uint c = (c0) + sj0 + u;                                                    \
      const uint g = min(c, p.KC - 1u) / cpg;                                         \
      scv[u] = s[srow + 4u * min(g, p.G - 1u)];                                              \
      scv[u] = (c < cend && g < p.G) ? scv[u] : 0.0;                                    \
    }                                                                                   \
  }

  if (cbeg < cend) LOAD_STEP(cbeg);
  uint buf = 0u;
  for (uint c0 = cbeg; c0 < cend; c0 += STEP) {
    // This step's operands into shared memory.
    [[unroll]] for (uint u = 0u; u < WPL; ++u) {
      const uint a = sg * STEP * 32u + ((wj0 + u) * 16u + wr) * 2u;
      tileA[a] = wv[u] & 0x0F0F0F0Fu;
      tileA[a + 1u] = (wv[u] >> 4) & 0x0F0F0F0Fu;
    }
    [[unroll]] for (uint u = 0u; u < BPL; ++u) {
      const uint i = t + u * NT;
      if (i < BITEMS) tileB[buf * BITEMS + i] = bv[u];
    }
    if (t < SITEMS) sideS[buf * SITEMS + t] = sv;
    [[unroll]] for (uint u = 0u; u < SPL; ++u) scaleS[(buf * STEP + sj0 + u) * ROWS + t % ROWS] = scv[u];
    barrier();
    // The next step's loads fly while this one computes.
    if (c0 + STEP < cend) LOAD_STEP(c0 + STEP);
#if ROLL
    [[dont_unroll]]
#else
    [[unroll]]
#endif
    for (uint j = 0u; j < STEP; ++j) {
#if !EMULATE
      icoopmatNV<8, gl_ScopeSubgroup, 16, 32> a;
      coopMatLoadNV(a, tileA, sg * STEP * 32u + j * 32u, 2u, false);
#endif
      float sc[CL];
      [[unroll]] for (uint e = 0u; e < CL; ++e) sc[e] = scaleS[(buf * STEP + j) * ROWS + sg * 16u + erow[e]];
      [[unroll]] for (uint f = 0u; f < MF; ++f) {
        const uint bb = buf * BITEMS + (j * LIMBS * 8u * MF + 8u * f) * 2u;
#if EMULATE
        // A (16 x 32, row r: the two uvec4 at 2 r) times each limb's B (32 x 8, column c: the
        // two uvec4 at 2 c), the limbs' sums chained as the MMA form chains them.
        [[unroll]] for (uint e = 0u; e < CL; ++e) {
          const uint ra = sg * STEP * 32u + j * 32u + 2u * erow[e];
          int c3[LIMBS];
          [[unroll]] for (uint l = 0u; l < LIMBS; ++l) {
            const uint cb = bb + 16u * MF * l + 2u * ecol[e];
            int v = 0;
            [[unroll]] for (uint h = 0u; h < 2u; ++h) {
              const uvec4 aw = tileA[ra + h], bw = tileB[cb + h];
              [[unroll]] for (uint q = 0u; q < 4u; ++q) {
                [[unroll]] for (uint y = 0u; y < 4u; ++y) {
                  v += bitfieldExtract(int(aw[q]), int(8u * y), 8) * bitfieldExtract(int(bw[q]), int(8u * y), 8);
                }
              }
            }
            c3[l] = v;
          }
          const uvec2 sd = sideS[buf * SITEMS + j * 8u * MF + 8u * f + ecol[e]];
#if LIMBS == 2
          const int v = c3[0] * 128 + c3[1] + int(sd.y);
#else
          const int v = (c3[0] * 128 + c3[1]) * 128 + c3[2] + int(sd.y);
#endif
          acc[f * CL + e] = fma(float(v), sc[e] * uintBitsToFloat(sd.x), acc[f * CL + e]);
        }
#else
#if LIMBS == 2
        icoopmatNV<8, gl_ScopeSubgroup, 32, 8> b0, b1;
        coopMatLoadNV(b0, tileB, bb, 2u, true);
        coopMatLoadNV(b1, tileB, bb + 16u * MF, 2u, true);
        icoopmatNV<32, gl_ScopeSubgroup, 16, 8> zero = icoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0);
        // One accumulator: C_0 * 128 + C_1.
        icoopmatNV<32, gl_ScopeSubgroup, 16, 8> d = coopMatMulAddNV(a, b0, zero);
        [[unroll]] for (uint e = 0u; e < CL; ++e) d[e] = d[e] * 128;
        d = coopMatMulAddNV(a, b1, d);
        [[unroll]] for (uint e = 0u; e < CL; ++e) {
          const uvec2 sd = sideS[buf * SITEMS + j * 8u * MF + 8u * f + ecol[e]];
          const int v = d[e] + int(sd.y);
          acc[f * CL + e] = fma(float(v), sc[e] * uintBitsToFloat(sd.x), acc[f * CL + e]);
        }
#else
        icoopmatNV<8, gl_ScopeSubgroup, 32, 8> b0, b1, b2;
        coopMatLoadNV(b0, tileB, bb, 2u, true);
        coopMatLoadNV(b1, tileB, bb + 16u * MF, 2u, true);
        coopMatLoadNV(b2, tileB, bb + 32u * MF, 2u, true);
        icoopmatNV<32, gl_ScopeSubgroup, 16, 8> zero = icoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0);
#if CHAIN
        // One accumulator: ((C_0 * 128) + C_1) * 128 + C_2, the scaling between the MMAs.
        icoopmatNV<32, gl_ScopeSubgroup, 16, 8> d = coopMatMulAddNV(a, b0, zero);
        [[unroll]] for (uint e = 0u; e < CL; ++e) d[e] = d[e] * 128;
        d = coopMatMulAddNV(a, b1, d);
        [[unroll]] for (uint e = 0u; e < CL; ++e) d[e] = d[e] * 128;
        d = coopMatMulAddNV(a, b2, d);
        [[unroll]] for (uint e = 0u; e < CL; ++e) {
          const uvec2 sd = sideS[buf * SITEMS + j * 8u * MF + 8u * f + ecol[e]];
          const int v = d[e] + int(sd.y);
          acc[f * CL + e] = fma(float(v), sc[e] * uintBitsToFloat(sd.x), acc[f * CL + e]);
        }
#else
        icoopmatNV<32, gl_ScopeSubgroup, 16, 8> d0 = coopMatMulAddNV(a, b0, zero);
        icoopmatNV<32, gl_ScopeSubgroup, 16, 8> d1 = coopMatMulAddNV(a, b1, zero);
        icoopmatNV<32, gl_ScopeSubgroup, 16, 8> d2 = coopMatMulAddNV(a, b2, zero);
        [[unroll]] for (uint e = 0u; e < CL; ++e) {
          const uvec2 sd = sideS[buf * SITEMS + j * 8u * MF + 8u * f + ecol[e]];
          const int v = d0[e] * 16384 + d1[e] * 128 + d2[e] + int(sd.y);
          acc[f * CL + e] = fma(float(v), sc[e] * uintBitsToFloat(sd.x), acc[f * CL + e]);
        }
#endif
#endif  // LIMBS
#endif  // EMULATE
      }
    }
    buf ^= 1u;
  }

  [[unroll]] for (uint f = 0u; f < MF; ++f) {
    [[unroll]] for (uint e = 0u; e < CL; ++e) {
      const uint n = n0 + sg * 16u + erow[e], m = m0 + 8u * f + ecol[e];
      // A fragment layout other than CL elements per invocation: NaN, never a wrong number.
      const float v = layout_ok ? acc[f * CL + e] : uintBitsToFloat(0x7FC00000u);
      if (n < p.N && m < p.M) {
        if (slices == 1u) {
          outp[m * p.N + n] = v + (has_bias ? bias[n] : 0.0);
        } else {
          part[(ks * p.M + m) * p.N + n] = v;
        }
      }
    }
  }
}
