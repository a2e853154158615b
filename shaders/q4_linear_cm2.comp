#version 450
// 4-bit linear forward on the tensor cores through VK_NV_cooperative_matrix2 (workgroup-scope
// matrices; tensor-addressed loads that decode the packed codes themselves):
//   out[m][n] = sum_k x[m][k] * (code(n,k) - 8) * s[n][k / gs] (+ bias[n]).
// Debian's glslc cannot compile GL_NV_cooperative_matrix2: scripts/build-spv.sh compiles this
// file with a newer glslang (tools/glsl2spv) into shaders/spv/, which is committed; the
// shader build only reflects it (manifest `spv=1`).
//
// Inputs as q4_linear_fwd_mma's (the same bindings and push constants, so the runtime swaps
// one for the other): x's rows scaled by a power of two each and split into fp16 hi / lo
// (q4_bwd_rowscale: row m is K8 = K rounded up to 8 hi values, then K8 lo values), the packed
// weight (q4_pack_weights.comp: row n of KW words, word w holding k = 8w..8w+7 in its
// nibbles), its scales (q4_scales.glsl) and the row scales.
//
// A workgroup computes the transposed tile out^T[n0, n0 + BM) x [m0, m0 + BN): A = the weight
// rows, read as 1 x 8 blocks of one word each; B = x^T, read through a transposing view and
// stored through it. Per step of BK columns (inside one scale group: gs % BK == 0, or one
// group per row):
// MODE 2 (exact, `q4_linear_cm2`, with BLK32 and SHSCALE): A = the codes - 8 (exact in fp16),
//   two MMAs (hi, lo) into a step sum in fp32, which is scaled by s[n][g] into the running
//   sum. Relative error ~1e-8 in the bench's checks.
// MODE 1 (fp16 weights, `q4_linear_cm2_f16`, with SHSCALE): A = fp16((code - 8) * s), one
//   MMA of hi into the running sum: the precision of llama.cpp's q4_0 path (~1e-5 relative in
//   the bench's checks, past the fp32 tolerance).
// The running sum is divided by the row scale and the bias added as it is stored.
//
// Neither is the default (compile spec etvk_q4_mma = cm2 / cm2_f16): on an H100 (sessions
// 39-40, docs/performance.md) MODE 2 ran at 46.6-46.7 TFLOP/s at M = 512 / 2048 and MODE 1 at
// 64, against 77-79 for the coopmat1 codes kernel (q4_linear_fwd_mma_c_t128). The switches below
// took the exact form apart at M = 512, 8192^2: the per-step scaling 608 of 1803 us (global
// loads per element), the decode ~250, the second MMA ~270; one MMA per 128 x 128 x 32 step
// without decode or scaling ran at 101 TFLOP/s, with 64-column steps 137, with fp16
// accumulators no faster (F16ACC, run 11), with 256-row tiles 166-170. The weight in 1 x 32
// blocks (BLK32) and MODE 2's scales staged in shared memory (SHSCALE) took the exact form
// from 38.7-39.1 to 45.8-46.3 (session 39 run 12), built so since session 40 (46.6-46.7).
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : enable
#include "q4_scales.glsl"

#ifndef MODE
#define MODE 2
#endif
#ifndef BM
#define BM 128  // weight rows (n) per workgroup
#endif
#ifndef BN
#define BN 128  // activation rows (m) per workgroup
#endif
#ifndef BK
#define BK 32   // columns per step
#endif
// Experiment switches (docs/experiments/run-s39b.sh; all 0 in the built shader): NOCLAMP
// reads without bounds (aligned shapes only), NOEPI adds both MMAs straight into the sum
// (wrong numbers: the per-step scaling's cost), NODEC loads A as raw fp16 from the weight
// buffer (wrong numbers: the decode's cost), ONEMMA takes the hi MMA only, PREFETCH loads
// step k + 1's operands before step k's MMAs.
#ifndef NOCLAMP
#define NOCLAMP 0
#endif
#ifndef NOEPI
#define NOEPI 0
#endif
#ifndef NODEC
#define NODEC 0
#endif
#ifndef ONEMMA
#define ONEMMA 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
// F16ACC (experiments, wrong numbers): one MMA per step into an fp16 accumulator.
#ifndef F16ACC
#define F16ACC 0
#endif
// SHSCALE (built in both modes): the step's weight scales staged in shared memory (one per
// row and 32 columns: group sizes that are multiples of 32) instead of a global load per
// element.
#ifndef SHSCALE
#define SHSCALE 0
#endif
#if SHSCALE
#define SPS (BK / 32)  // scales per row and step
shared float s_tile[BM * SPS];
uint step_k0;
#endif
#if NOCLAMP
#define CLAMP gl_CooperativeMatrixClampModeUndefinedNV
#else
#define CLAMP gl_CooperativeMatrixClampModeConstantNV
#endif

layout(local_size_x = 256, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) writeonly buffer Out { float out_[]; };
layout(set = 0, binding = 1) readonly buffer XHL { float16_t xhl_[]; };  // [M][2][K8]
layout(set = 0, binding = 2) readonly buffer W { uint w_[]; };
#if NODEC
layout(set = 0, binding = 2) readonly buffer W16 { float16_t w16_[]; };
#endif
layout(set = 0, binding = 3) readonly buffer S { float s_[]; };
layout(set = 0, binding = 4) readonly buffer RS { float rowscale_[]; };  // [M]
layout(set = 0, binding = 5) readonly buffer Peaks { float peaks_[]; };   // (not read)
layout(set = 0, binding = 6) readonly buffer Bias { float bias_[]; };

layout(push_constant) uniform Params {
  uint M;
  uint K;        // x's row length (may be short of the packed rows' KW * 8)
  uint N;
  uint KW;       // packed words per weight row
  uint G;        // scale groups per row
  uint gs;       // group size
  uint has_bias;
  uint slice;    // (q4_linear_fwd_mma's split; not used)
} p;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer WordRef { uint w; };
// BLK32 (built in MODE 2, scripts/build-spv.sh): the weight read as 1 x 32 blocks of one
// uvec4 (a packed chunk).
#ifndef BLK32
#define BLK32 0
#endif
layout(buffer_reference, std430, buffer_reference_align = 16) buffer ChunkRef { uvec4 q; };

// The tile's corner and the step's scale group, for the decode and per-element functions.
uint tile_n0;
uint tile_m0;
uint step_g;

#if BLK32
#define BLKW 32u
// Element (n, 32 blk[1] + c[1]) of the weight (n = blk[0]), from its chunk.
float16_t decode_w(const in ChunkRef b, const in uint32_t blk[2], const in uint32_t c[2]) {
  const float code = float((b.q[c[1] >> 3] >> (4u * (c[1] & 7u))) & 15u) - 8.0;
#else
#define BLKW 8u
// Element (n, 8 blk[1] + c[1]) of the weight (n = blk[0]), from its block's word.
float16_t decode_w(const in WordRef b, const in uint32_t blk[2], const in uint32_t c[2]) {
  const float code = float((b.w >> (4u * c[1])) & 15u) - 8.0;
#endif
#if MODE == 1 && SHSCALE
  return float16_t(code * s_tile[(blk[0] - tile_n0) * SPS + ((blk[1] * BLKW + c[1] - step_k0) >> 5)]);
#elif MODE == 1
  const uint g = p.G == 1u ? 0u : (blk[1] * BLKW + c[1]) / p.gs;
  return float16_t(code * s_[Q4S(blk[0], g, p.G)]);
#else
  return float16_t(code);
#endif
}


float scale_step(const in uint32_t r, const in uint32_t c, const in float e) {
#if SHSCALE
  return e * s_tile[r * SPS];  // the staged scales (0 past N)
#else
  const uint n = tile_n0 + r;
  return n < p.N ? e * s_[Q4S(n, step_g, p.G)] : 0.0;
#endif
}

float finish(const in uint32_t r, const in uint32_t c, const in float e) {
  const uint n = tile_n0 + r, m = tile_m0 + c;
  const float v = m < p.M ? e / rowscale_[m] : e;
  return p.has_bias != 0u && n < p.N ? v + bias_[n] : v;
}

void main() {
  const uint tiles_n = (p.N + BM - 1u) / BM;
  const uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (tile >= tiles_n * ((p.M + BN - 1u) / BN)) return;  // whole workgroup
  const uint n0 = (tile % tiles_n) * BM, m0 = (tile / tiles_n) * BN;
  tile_n0 = n0;
  tile_m0 = m0;
  const uint k8 = (p.K + 7u) & ~7u;

  tensorLayoutNV<2, CLAMP> tw =
      createTensorLayoutNV(2, CLAMP);
  tw = setTensorLayoutBlockSizeNV(tw, 1, BLKW);
  tw = setTensorLayoutDimensionNV(tw, p.N, p.KW * 8u);
  // x's hi (element offset 0) and lo (offset K8) halves: K8 columns in rows of 2 K8.
  tensorLayoutNV<2, CLAMP> tx =
      createTensorLayoutNV(2, CLAMP);
  tx = setTensorLayoutDimensionNV(tx, p.M, k8);
  tx = setTensorLayoutStrideNV(tx, 2u * k8, 1);
  tensorLayoutNV<2, CLAMP> to =
      createTensorLayoutNV(2, CLAMP);
  to = setTensorLayoutDimensionNV(to, p.M, p.N);
  tensorViewNV<2, false, 1, 0> transposed = createTensorViewNV(2, false, 1, 0);

  coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc =
      coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
#if F16ACC
  coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> acc16 =
      coopmat<float16_t, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
#endif
#if NODEC
  tensorLayoutNV<2, CLAMP> tw16 = createTensorLayoutNV(2, CLAMP);
  tw16 = setTensorLayoutDimensionNV(tw16, p.N, p.KW * 2u);
#endif
  const uint kend = p.KW * 8u;
  coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> a;
  coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> xh;
  coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> xl;
#if NODEC
#define LOAD_A(k) coopMatLoadTensorNV(a, w16_, 0, sliceTensorLayoutNV(tw16, n0, BM, (k) / 4u, BK))
#else
#define LOAD_A(k) coopMatLoadTensorNV(a, w_, 0, sliceTensorLayoutNV(tw, n0, BM, k, BK), decode_w)
#endif
#define LOAD_XH(k) coopMatLoadTensorNV(xh, xhl_, 0, sliceTensorLayoutNV(tx, m0, BN, k, BK), transposed)
#define LOAD_XL(k) coopMatLoadTensorNV(xl, xhl_, k8, sliceTensorLayoutNV(tx, m0, BN, k, BK), transposed)
#if PREFETCH
  LOAD_A(0u);
  LOAD_XH(0u);
  LOAD_XL(0u);
#endif
  for (uint k0 = 0u; k0 < kend; k0 += BK) {
#if PREFETCH
    const coopmat<float16_t, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ca = a;
    const coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> cxh = xh;
    const coopmat<float16_t, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> cxl = xl;
    if (k0 + BK < kend) {
      LOAD_A(k0 + BK);
      LOAD_XH(k0 + BK);
      LOAD_XL(k0 + BK);
    }
#else
#if SHSCALE
    step_k0 = k0;
    barrier();  // the last step's decode has read s_tile
    for (uint i = gl_LocalInvocationIndex; i < BM * SPS; i += 256u) {
      const uint n = n0 + i / SPS, kk = k0 + 32u * (i % SPS);
      s_tile[i] = n < p.N && kk < kend ? s_[Q4S(n, p.G == 1u ? 0u : kk / p.gs, p.G)] : 0.0;
    }
    barrier();
#endif
    LOAD_A(k0);
    LOAD_XH(k0);
#if MODE != 1 && !ONEMMA
    LOAD_XL(k0);
#endif
#define ca a
#define cxh xh
#define cxl xl
#endif
#if F16ACC
    acc16 = coopMatMulAdd(ca, cxh, acc16);
#elif MODE == 1 || (NOEPI && ONEMMA)
    acc = coopMatMulAdd(ca, cxh, acc);
#elif NOEPI
    acc = coopMatMulAdd(ca, cxh, acc);
    acc = coopMatMulAdd(ca, cxl, acc);
#else
    coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator> t =
        coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(0.0);
    t = coopMatMulAdd(ca, cxh, t);
#if !ONEMMA
    t = coopMatMulAdd(ca, cxl, t);
#endif
    step_g = p.G == 1u ? 0u : k0 / p.gs;
    coopMatPerElementNV(t, t, scale_step);
    acc = acc + t;
#endif
  }
#if F16ACC
  acc = coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>(acc16);
#endif
  coopMatPerElementNV(acc, acc, finish);
  coopMatStoreTensorNV(acc, out_, 0, sliceTensorLayoutNV(to, m0, BN, n0, BM), transposed);
}
