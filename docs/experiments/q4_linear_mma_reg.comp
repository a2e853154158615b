#version 450
// Experiment (session 17): the int8 tensor-core forward of q4_linear_mma.comp without the
// shared-memory staging of its operands. Drop-in for q4_linear_mma_f{1,2,4} (same bindings,
// push constants, launch and work split), through ETVK_SPIRV_OVERRIDE_DIR.
//
// Each subgroup streams its 16 weight rows over the workgroup's slice of chunks with no
// workgroup barrier:
//   A (16 x 32 int8): invocation (g = lane / 4, q = lane % 4) loads word q of the chunk of rows
//     g and g + 8 (prefetched PF chunks ahead) and makes its fragment from them: with the
//     PTX m16n8k32 layout its 16 bytes are even-k bytes of row g (columns 4q..4q+3), of row
//     g + 8, odd-k bytes of row g (columns 16 + 4q..), of row g + 8: the chunk order of
//     q4_mma_limbs (even k of each word, then odd). REGA = 1 writes the elements from
//     registers; REGA = 0 stores the four words to a subgroup-private shared tile and loads
//     it (no workgroup barrier, only the subgroup's).
//   B (32 x 8 int8): the limbs straight from the limb buffer (cooperative loads, column m =
//     32 contiguous bytes).
//   side / scales: from global memory, each invocation the two activation rows 2q, 2q + 1
//     and the two weight rows g, g + 8 its accumulator elements hold.
// The fragment layouts (A, B and the accumulator) are probed once: any other layout makes
// the workgroup write NaN.
// -DEMULATE=1: the same work split and epilogue with each invocation computing its four
// accumulator elements by plain integer dot products from global memory (no cooperative
// matrices, no subgroup operations: virtual subgroups of 32 invocations), so that all but
// the fragment layouts runs and is tested on any device (lavapipe).
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
#extension GL_KHR_shader_subgroup_vote : require
#endif
#include "common.glsl"

#ifndef MF
#define MF 1  // 8-row activation fragments per workgroup
#endif
#ifndef PF
#define PF 4  // chunks of weights and scales in flight per subgroup
#endif
#ifndef REGA
#define REGA 1
#endif
#ifndef PREB
#define PREB 0  // 1: each chunk's limbs and side loaded while the previous chunk computes
#endif
#define NT 256
#define SG 8
#define ROWS (16 * SG)
#ifndef MB
#define MB 8  // row tiles per block of the launch order (as q4_linear_mma.comp)
#endif

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };   // [M][N]
layout(set = 0, binding = 1) writeonly buffer Part { float part[]; };  // [slices][M][N]
layout(set = 0, binding = 2) readonly buffer Limbs { uvec4 limbs[]; }; // [3][KC][Mp] x 2
#if EMULATE
layout(set = 0, binding = 2) readonly buffer LimbW { uint limbw[]; };
#endif
layout(set = 0, binding = 3) readonly buffer Side { uvec4 side2[]; };  // [KC][Mp] uvec2, as pairs
layout(set = 0, binding = 4) readonly buffer W1 { uint w1[]; };        // [N][KC] x 4 words
layout(set = 0, binding = 5) readonly buffer S { float s[]; };         // [N][G]
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

#if !EMULATE
#define MAT_A icoopmatNV<8, gl_ScopeSubgroup, 16, 32>
#define MAT_B icoopmatNV<8, gl_ScopeSubgroup, 32, 8>
#define MAT_C icoopmatNV<32, gl_ScopeSubgroup, 16, 8>

shared int probeC[128];
shared uint probeAr[128], probeAc[128], probeB[64];
#if !REGA
shared uint tileA[SG * 2 * 128];  // per subgroup two 16 x 32-byte tiles
#endif
#else
// Sum of the four signed byte products of two words.
int dot4(uint a, uint b) {
  const ivec4 x = ivec4(bitfieldExtract(int(a), 0, 8), bitfieldExtract(int(a), 8, 8),
                        bitfieldExtract(int(a), 16, 8), bitfieldExtract(int(a), 24, 8));
  const ivec4 y = ivec4(bitfieldExtract(int(b), 0, 8), bitfieldExtract(int(b), 8, 8),
                        bitfieldExtract(int(b), 16, 8), bitfieldExtract(int(b), 24, 8));
  return x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
}
#endif

void main() {
  const uint t = gl_LocalInvocationID.x;
#if EMULATE
  const uint sg = t / 32u, lane = t % 32u;
#else
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#endif
  const uint g = lane >> 2, q = lane & 3u;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint slices = p.split & 0xFFFFu, slice_len = p.split >> 16;
  const uint cpg = p.cpg_bias & 0xFFFFu;
  const bool has_bias = (p.cpg_bias >> 16) != 0u;
  const uint strips = (p.N + ROWS - 1u) / ROWS;
  const uint full = MB * slices * strips;
  const uint blk = wg / full, r = wg % full;
  const uint gm = min(MB, p.mtiles - min(blk * MB, p.mtiles));
  if (gm == 0u) return;
  const uint mt = blk * MB + r % gm, rest = r / gm;
  const uint ks = rest % slices, strip = rest / slices;
  const uint n0 = strip * ROWS, m0 = mt * 8u * MF;
  if (n0 >= p.N) return;
  const uint cbeg = ks * slice_len, cend = min(cbeg + slice_len, p.KC);

#if !EMULATE
  // Probes: C's element e at (row, column) = (g + 8 (e / 2), 2q + e % 2); A's at
  // (g + 8 ((e / 4) % 2), 4q + e % 4 + 16 (e / 8)); B's at (k, column) =
  // (4q + e % 4 + 16 (e / 4), g).
  for (uint i = t; i < 128u; i += NT) {
    probeC[i] = int(i);
    const uint row = i / 8u, c0 = (4u * i) % 32u;
    probeAr[i] = row * 0x01010101u;
    probeAc[i] = c0 | ((c0 + 1u) << 8) | ((c0 + 2u) << 16) | ((c0 + 3u) << 24);
  }
  for (uint i = t; i < 64u; i += NT) {
    // Column-major 32 x 8: byte b = 4 i + j is (k = b % 32, column b / 32); value 8 k + column.
    uint v = 0u;
    for (uint j = 0u; j < 4u; ++j) {
      const uint b = 4u * i + j;
      v |= (((b % 32u) * 8u + b / 32u) & 255u) << (8u * j);
    }
    probeB[i] = v;
  }
  barrier();
  bool ok;
  {
    MAT_C pc;
    MAT_A par, pac;
    MAT_B pb;
    coopMatLoadNV(pc, probeC, 0, 8, false);
    coopMatLoadNV(par, probeAr, 0, 8, false);
    coopMatLoadNV(pac, probeAc, 0, 8, false);
    coopMatLoadNV(pb, probeB, 0, 8, true);
    ok = pc.length() == 4 && par.length() == 16 && pb.length() == 8;
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      const int want = int((g + 8u * (e >> 1)) * 8u + 2u * q + (e & 1u));
      ok = ok && int(e) < pc.length() && pc[e] == want;
    }
    [[unroll]] for (uint e = 0u; e < 16u; ++e) {
      const int wr = int(g + 8u * ((e >> 2) & 1u)), wc = int(4u * q + (e & 3u) + 16u * (e >> 3));
      ok = ok && int(e) < par.length() && int(par[e]) == wr && int(pac[e]) == wc;
    }
    [[unroll]] for (uint e = 0u; e < 8u; ++e) {
      const uint k = 4u * q + (e & 3u) + 16u * (e >> 2);
      ok = ok && int(e) < pb.length() && (uint(int(pb[e])) & 255u) == ((k * 8u + g) & 255u);
    }
  }
  const bool layout_ok = subgroupAll(ok);
#else
  const bool layout_ok = true;
#endif

  float acc[MF * 4];
  [[unroll]] for (uint i = 0u; i < MF * 4u; ++i) acc[i] = 0.0;

  const uint ra = n0 + sg * 16u + g, rb = ra + 8u;
  const uint wa0 = min(ra, p.N - 1u) * p.KC, wb0 = min(rb, p.N - 1u) * p.KC;
  const uint sa0 = min(ra, p.N - 1u) * p.G, sb0 = min(rb, p.N - 1u) * p.G;
  uint wa[PF], wb[PF];
  float sa[PF], sb[PF];
#define LOAD_CHUNK(j, c)                                        \
  {                                                             \
    const uint cc = min((c), p.KC - 1u);                        \
    wa[j] = w1[(wa0 + cc) * 4u + q];                            \
    wb[j] = w1[(wb0 + cc) * 4u + q];                            \
    const uint gg = min(cc / cpg, p.G - 1u);                    \
    sa[j] = s[sa0 + gg];                                        \
    sb[j] = s[sb0 + gg];                                        \
  }
  [[unroll]] for (uint j = 0u; j < PF; ++j) LOAD_CHUNK(j, cbeg + j);
#if !EMULATE
  const MAT_C zero = MAT_C(0);
#endif
  const uint lstride = p.KC * p.Mp * 2u;
#if PREB && !EMULATE
  // Next chunk's B operands and side, per fragment (no arrays of cooperative matrices).
  MAT_B nb00, nb01, nb02, nb10, nb11, nb12, nb20, nb21, nb22, nb30, nb31, nb32;
  uvec4 nsd0, nsd1, nsd2, nsd3;
#define LOAD_B1(f, c, x0, x1, x2, sdv)                                 \
  {                                                                    \
    const uint bb = ((c) * p.Mp + m0 + 8u * (f)) * 2u;                 \
    coopMatLoadNV(x0, limbs, bb, 2u, true);                            \
    coopMatLoadNV(x1, limbs, bb + lstride, 2u, true);                  \
    coopMatLoadNV(x2, limbs, bb + 2u * lstride, 2u, true);             \
    sdv = side2[((c) * p.Mp + m0 + 8u * (f) + 2u * q) >> 1];           \
  }
#define LOAD_B(f, c)                                                   \
  if ((f) == 0u) LOAD_B1(0u, c, nb00, nb01, nb02, nsd0)                \
  else if ((f) == 1u) LOAD_B1(1u, c, nb10, nb11, nb12, nsd1)           \
  else if ((f) == 2u) LOAD_B1(2u, c, nb20, nb21, nb22, nsd2)           \
  else LOAD_B1(3u, c, nb30, nb31, nb32, nsd3)
#define SELECT_B(f, x0, x1, x2, sdv)                                   \
  if ((f) == 0u) { x0 = nb00; x1 = nb01; x2 = nb02; sdv = nsd0; }      \
  else if ((f) == 1u) { x0 = nb10; x1 = nb11; x2 = nb12; sdv = nsd1; } \
  else if ((f) == 2u) { x0 = nb20; x1 = nb21; x2 = nb22; sdv = nsd2; } \
  else { x0 = nb30; x1 = nb31; x2 = nb32; sdv = nsd3; }
  [[unroll]] for (uint f = 0u; f < MF; ++f) LOAD_B(f, min(cbeg, p.KC - 1u));
#endif
#if !REGA && !EMULATE
  uint tb = 0u;
#endif
  for (uint c0 = cbeg; c0 < cend; c0 += PF) {
    [[unroll]] for (uint j = 0u; j < PF; ++j) {
      const uint c = c0 + j;
      if (c < cend) {
        const uint ea = wa[j] & 0x0F0F0F0Fu, oa = (wa[j] >> 4) & 0x0F0F0F0Fu;
        const uint eb = wb[j] & 0x0F0F0F0Fu, ob = (wb[j] >> 4) & 0x0F0F0F0Fu;
        const float s_a = sa[j], s_b = sb[j];
        LOAD_CHUNK(j, c + PF);
#if EMULATE
        // Words of rows ra (a) and rb (b) of chunk c, even and odd bytes as in A's rows.
        uint ev[2][4], od[2][4];
        [[unroll]] for (uint w = 0u; w < 4u; ++w) {
          const uint cc = min(c, p.KC - 1u);
          const uint va = w1[(wa0 + cc) * 4u + w], vb = w1[(wb0 + cc) * 4u + w];
          ev[0][w] = va & 0x0F0F0F0Fu;
          od[0][w] = (va >> 4) & 0x0F0F0F0Fu;
          ev[1][w] = vb & 0x0F0F0F0Fu;
          od[1][w] = (vb >> 4) & 0x0F0F0F0Fu;
        }
        [[unroll]] for (uint f = 0u; f < MF; ++f) {
          const uvec4 sd = side2[(c * p.Mp + m0 + 8u * f + 2u * q) >> 1];
          int d[4];
          [[unroll]] for (uint e = 0u; e < 4u; ++e) {
            const uint rr = e >> 1, m = m0 + 8u * f + 2u * q + (e & 1u);
            int v = 0;
            [[unroll]] for (uint l = 0u; l < 3u; ++l) {
              const uint lb = (((l * p.KC + c) * p.Mp + m) * 2u) * 4u;
              int dl = 0;
              [[unroll]] for (uint w = 0u; w < 4u; ++w) {
                dl += dot4(ev[rr][w], limbw[lb + w]) + dot4(od[rr][w], limbw[lb + 4u + w]);
              }
              v = v * 128 + dl;
            }
            d[e] = v;
          }
#else
        MAT_A a;
#if REGA
        const uint regs[4] = uint[4](ea, eb, oa, ob);
        [[unroll]] for (uint e = 0u; e < 16u; ++e) a[e] = int8_t(int(regs[e >> 2] >> (8u * (e & 3u))));
#else
        // Row r of the tile: 8 words, even bytes (words 0..3) then odd (4..7).
        const uint tbase = (sg * 2u + tb) * 128u;
        tileA[tbase + g * 8u + q] = ea;
        tileA[tbase + g * 8u + 4u + q] = oa;
        tileA[tbase + (g + 8u) * 8u + q] = eb;
        tileA[tbase + (g + 8u) * 8u + 4u + q] = ob;
        subgroupMemoryBarrierShared();
        subgroupBarrier();
        coopMatLoadNV(a, tileA, tbase, 8u, false);
        tb ^= 1u;
#endif
        [[unroll]] for (uint f = 0u; f < MF; ++f) {
#if PREB
          MAT_B b0, b1, b2;
          uvec4 sd;
          SELECT_B(f, b0, b1, b2, sd);
          const uint cn = min(c + 1u, p.KC - 1u);
          LOAD_B(f, cn);
#else
          const uint bb = (c * p.Mp + m0 + 8u * f) * 2u;
          MAT_B b0, b1, b2;
          coopMatLoadNV(b0, limbs, bb, 2u, true);
          coopMatLoadNV(b1, limbs, bb + lstride, 2u, true);
          coopMatLoadNV(b2, limbs, bb + 2u * lstride, 2u, true);
          const uvec4 sd = side2[(c * p.Mp + m0 + 8u * f + 2u * q) >> 1];
#endif
          MAT_C d = coopMatMulAddNV(a, b0, zero);
          [[unroll]] for (uint e = 0u; e < 4u; ++e) d[e] = d[e] * 128;
          d = coopMatMulAddNV(a, b1, d);
          [[unroll]] for (uint e = 0u; e < 4u; ++e) d[e] = d[e] * 128;
          d = coopMatMulAddNV(a, b2, d);
#endif
          [[unroll]] for (uint e = 0u; e < 4u; ++e) {
            const uint sdx = (e & 1u) == 0u ? sd.x : sd.z, sdy = (e & 1u) == 0u ? sd.y : sd.w;
            const float sc = (e < 2u ? s_a : s_b) * uintBitsToFloat(sdx);
            acc[f * 4u + e] = fma(float(d[e] + int(sdy)), sc, acc[f * 4u + e]);
          }
        }
      }
    }
  }

  [[unroll]] for (uint f = 0u; f < MF; ++f) {
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      const uint n = e < 2u ? ra : rb, m = m0 + 8u * f + 2u * q + (e & 1u);
      const float v = layout_ok ? acc[f * 4u + e] : uintBitsToFloat(0x7FC00000u);
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
