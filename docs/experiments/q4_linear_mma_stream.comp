#version 450
// 4-bit linear forward on the tensor cores for up to 8 activation rows per workgroup: the
// arithmetic of q4_linear_mma.comp (exact int8 MMAs of codes and three activation limbs
// per chunk, fp32 scaling per chunk and element), with the operands staged differently.
//
// Why: q4_linear_mma.comp stages every step's limbs, units and scales through shared
// memory for all 8 subgroups, so a barrier per step ties them together, and its loads and
// its MMAs did not overlap (H200, M = 8, N = 28672, K = 8192: 171 us; loads alone 95-106,
// MMAs and shared traffic alone 104; docs/performance.md, session 9). Here a workgroup owns
// a slice of at most SLMAX chunks: its limbs, units and scales are loaded into shared
// memory once, then each subgroup streams its 16 weight rows through a private shared tile
// (STEP chunks, the next step's weights in registers meanwhile) with no barrier but its
// own. The slices' partial sums meet in q4_linear_reduce, as in the other split kernels.
//
// Bindings and push constants are q4_linear_mma.comp's (one node selects among them);
// `split` must give chunks per slice <= SLMAX, otherwise every output is NaN.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_KHR_shader_subgroup_basic : require
#include "common.glsl"

#ifndef SLMAX
#define SLMAX 24  // chunks per slice at most (shared memory: 1.8 KiB per chunk)
#endif
#ifndef STEP
#define STEP 4  // chunks per subgroup step
#endif
#define NT 256  // invocations (the runtime launches 256 x 1 x 1)
#define SG 8    // subgroups of 32
#define ROWS (16 * SG)
#define CL 4                 // accumulator elements per invocation of a 16 x 8 int32 fragment
#define WPL (STEP / 2)       // weight uvec4 per invocation per step
#define LITEMS (3 * 8 * 2)   // limb uvec4 per chunk: [limb][8 rows][even, odd]

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };   // [M][N]
layout(set = 0, binding = 1) writeonly buffer Part { float part[]; };  // [slices][M][N]
layout(set = 0, binding = 2) readonly buffer Limbs { uvec4 limbs[]; }; // [3][KC][Mp] x 2
layout(set = 0, binding = 3) readonly buffer Side { uvec2 side[]; };   // [KC][Mp]
layout(set = 0, binding = 4) readonly buffer W4 { uvec4 w4[]; };       // [N][KC]
layout(set = 0, binding = 5) readonly buffer S { float s[]; };         // [N][G]
layout(set = 0, binding = 6) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint KC;        // chunks per packed row
  uint G;         // scale groups per row
  uint cpg_bias;  // chunks per scale group | has_bias << 16
  uint Mp;        // rows of the limb arrays (M rounded up to whole fragments)
  uint mtiles;    // workgroups per (row strip, slice) along M: ceil(M / 8)
  uint split;     // split-K slices | chunks per slice << 16
} p;

shared uvec4 limbS[SLMAX * LITEMS];  // [chunk][limb][8 rows][even, odd]
shared uvec2 sideS[SLMAX * 8];       // [chunk][8 rows]: unit bits, -8 * limb sum
shared float scaleS[SLMAX * ROWS];   // [chunk][ROWS]
shared uvec4 tileA[SG * STEP * 32];  // per subgroup: [STEP][16 rows][even, odd]
shared int probe_idx[128];

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint slices = p.split & 0xFFFFu, slice_len = p.split >> 16;
  const uint cpg = p.cpg_bias & 0xFFFFu;
  const bool has_bias = (p.cpg_bias >> 16) != 0u;
  // Launch order: the row tiles of one (strip, slice) next to each other, then the slices
  // of a strip (the workgroups in flight share weight rows through L2).
  const uint mt = wg % p.mtiles, rest = wg / p.mtiles;
  const uint ks = rest % slices, strip = rest / slices;
  const uint n0 = strip * ROWS, m0 = mt * 8u;
  if (n0 >= p.N) return;  // grid padding: whole workgroups
  const uint cbeg = ks * slice_len, cend = min(cbeg + slice_len, p.KC);
  const uint len = cend - min(cbeg, cend);

  // The slice's operands; chunks past the slice's end get unit 0 (they add nothing).
  for (uint i = t; i < SLMAX * LITEMS; i += NT) {
    const uint j = i / LITEMS, h = i & 1u, mm = (i >> 1) & 7u, l = (i >> 4) % 3u;
    limbS[i] = j < len ? limbs[((l * p.KC + cbeg + j) * p.Mp + m0 + mm) * 2u + h] : uvec4(0u);
  }
  for (uint i = t; i < SLMAX * 8u; i += NT) {
    const uint j = i >> 3, mm = i & 7u;
    sideS[i] = j < len ? side[(cbeg + j) * p.Mp + m0 + mm] : uvec2(0u);
  }
  for (uint i = t; i < SLMAX * ROWS; i += NT) {
    const uint j = i / ROWS, r = i % ROWS;
    const uint n = min(n0 + r, p.N - 1u), g = min((cbeg + j) / cpg, p.G - 1u);
    scaleS[i] = j < len ? s[n * p.G + g] : 0.0;
  }
  for (uint i = t; i < 128u; i += NT) probe_idx[i] = int(i);
  barrier();

  icoopmatNV<32, gl_ScopeSubgroup, 16, 8> probe;
  coopMatLoadNV(probe, probe_idx, 0, 8, false);
  // Element e of this invocation's fragment is (row erow, column ecol) of the 16 x 8 tile.
  uint erow[CL], ecol[CL];
  [[unroll]] for (uint e = 0u; e < CL; ++e) {
    const uint v = int(e) < probe.length() ? uint(probe[e]) & 127u : 0u;
    erow[e] = v >> 3;
    ecol[e] = v & 7u;
  }
  const bool layout_ok = probe.length() == int(CL) && len <= SLMAX;

  float acc[CL];
  [[unroll]] for (uint e = 0u; e < CL; ++e) acc[e] = 0.0;

  // This invocation's weights of a step: row wr of the subgroup's 16, chunks wj0 ..
  const uint wr = lane >> 1, wj0 = (lane & 1u) * WPL;
  const uint wrow = min(n0 + sg * 16u + wr, p.N - 1u) * p.KC;
  const uint tile = sg * STEP * 32u;
  uvec4 wv[WPL];
  const uint steps = (min(len, SLMAX) + STEP - 1u) / STEP;
  if (steps > 0u) {
    [[unroll]] for (uint u = 0u; u < WPL; ++u) wv[u] = w4[wrow + min(cbeg + wj0 + u, p.KC - 1u)];
  }
  for (uint st = 0u; st < steps; ++st) {
    [[unroll]] for (uint u = 0u; u < WPL; ++u) {
      const uint a = tile + ((wj0 + u) * 16u + wr) * 2u;
      tileA[a] = wv[u] & 0x0F0F0F0Fu;
      tileA[a + 1u] = (wv[u] >> 4) & 0x0F0F0F0Fu;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    // The next step's weights fly while this one computes.
    if (st + 1u < steps) {
      const uint c1 = cbeg + (st + 1u) * STEP + wj0;
      [[unroll]] for (uint u = 0u; u < WPL; ++u) wv[u] = w4[wrow + min(c1 + u, p.KC - 1u)];
    }
    [[dont_unroll]] for (uint j = 0u; j < STEP; ++j) {
      const uint jc = st * STEP + j;  // chunk within the slice
      icoopmatNV<8, gl_ScopeSubgroup, 16, 32> a;
      coopMatLoadNV(a, tileA, tile + j * 32u, 2u, false);
      const uint bb = jc * LITEMS;
      icoopmatNV<8, gl_ScopeSubgroup, 32, 8> b0, b1, b2;
      coopMatLoadNV(b0, limbS, bb, 2u, true);
      coopMatLoadNV(b1, limbS, bb + 16u, 2u, true);
      coopMatLoadNV(b2, limbS, bb + 32u, 2u, true);
      icoopmatNV<32, gl_ScopeSubgroup, 16, 8> d = icoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0);
      // One accumulator: ((C_0 * 128) + C_1) * 128 + C_2, the scaling between the MMAs.
      d = coopMatMulAddNV(a, b0, d);
      [[unroll]] for (uint e = 0u; e < CL; ++e) d[e] = d[e] * 128;
      d = coopMatMulAddNV(a, b1, d);
      [[unroll]] for (uint e = 0u; e < CL; ++e) d[e] = d[e] * 128;
      d = coopMatMulAddNV(a, b2, d);
      [[unroll]] for (uint e = 0u; e < CL; ++e) {
        const uvec2 sd = sideS[jc * 8u + ecol[e]];
        const float sc = scaleS[jc * ROWS + sg * 16u + erow[e]];
        acc[e] = fma(float(d[e] + int(sd.y)), sc * uintBitsToFloat(sd.x), acc[e]);
      }
    }
    // Every invocation's reads of the tile are done before the next step overwrites it.
    subgroupBarrier();
  }

  [[unroll]] for (uint e = 0u; e < CL; ++e) {
    const uint n = n0 + sg * 16u + erow[e], m = m0 + ecol[e];
    // A fragment layout other than CL elements per invocation, or a slice longer than the
    // shared arrays: NaN, never a wrong number.
    const float v = layout_ok ? acc[e] : uintBitsToFloat(0x7FC00000u);
    if (n < p.N && m < p.M) {
      if (slices == 1u) {
        outp[m * p.N + n] = v + (has_bias ? bias[n] : 0.0);
      } else {
        part[(ks * p.M + m) * p.N + n] = v;
      }
    }
  }
}
