#version 450
// The 4-bit linear backward at M > 8 on NV cooperative matrices (f16 16x8x16, f32
// accumulate): dx[m][k] = sum_n dy[m][n] * W[n][k], W[n][k] = s[n][k / gs] * (code(n,k) - 8),
// over BM x 128 output tiles (BM = 128 or 32; 16 as an experiment), the reduction over n in
// steps of 32 rows; with
// -DSPLIT=1 one slice of the reduction per workgroup: partial sums, which the last workgroup
// of each tile adds up (see the end of main).
// Bindings and push constants are q4_linear_tiled's backward ones, plus binding 4: the
// power-of-two scale of each dy row from q4_bwd_rowscale, and binding 5: the weight scales'
// peaks per 32 rows and group, made at prepack.
//
// The scale varies along the reduction, so unlike the forward it cannot leave the MMA sum:
// dy and W go into the MMAs as fp16 hi / lo pairs (about 22 significant bits for dy, 19 for
// W: see fill_tiles), three MMAs per fragment pair (hi*hi, hi*lo, lo*hi; lo*lo is below fp32's last bit). fp16's range:
// dy rows come scaled by powers of two that put each row's peak in [2^13, 2^14) (the
// pre-pass), and W by one power of two per workgroup from the largest scale of the tile's
// groups over its rows (from binding 5); the store divides both out. Elements below 2^-27 of
// their row's peak lose precision (their hi part would be an fp16 subnormal): they contribute
// below fp32's resolution of the row's sums anyway. Inf / NaN stay so.
//
// Driver traps met on the way (docs/experiments/README.md): shared arrays that cooperative
// loads / stores touch must sit at 16-byte offsets (a 4-byte array before `stage` put the
// cooperative stores and the plain loads 4 bytes apart), and an array of cooperative
// matrices stays an array in memory: the accumulators are separate variables.
//
// -DFORWARD=1 (whole tiles only, no SPLIT) is the forward out[m][n] = sum_k x[m][k] * W[n][k]
// (+ bias[n]) with the same machinery: x rows as the pre-pass's scaled hi / lo pairs (the
// reduction runs over k), the W tile transposed ([n][k of the step], 32 k per row) and read
// as column-major B fragments; the push constants' N is then K (the reduction) and K is N
// (the output row), binding 6 the bias.
//
// With -DSPLIT=1 (codes form only) the forward's slices run along k, and the last workgroup
// of each tile adds the bias to their sum (binding 8).
//
// -DX16=1 (with FORWARD) is for activations that came in as fp16: the pre-pass's scaled
// rows are then exact in one fp16 (their lo halves zero; a row peaking above 2^14 is scaled
// down, and its values that turn fp16-subnormal lose less than 2^-37 of the peak), so the A
// tile holds only the hi halves and a fragment pair takes two MMAs (hi * W lo, hi * W hi)
// instead of three.
//
// -DCODES=1 (with FORWARD; gs a multiple of 16, or one group per row) keeps the weight
// scales out of the MMAs: the W tile holds the codes - 8 alone (exact in fp16), each
// 16-k fragment product is scaled by its output column's scale of that k's group when it
// is added to the fp32 accumulator (an FMA where the other forms add), so a fragment pair
// takes two MMAs (x hi * codes, x lo * codes) instead of three, one with X16, and no W lo
// tile is made or read. Which column an accumulator element holds is not fixed by the
// extension: each subgroup reads it at the start from a tile of column numbers loaded as
// an accumulator.
//
// -DEMULATE=1 replaces the cooperative-matrix calls and subgroup operations by plain
// arithmetic on the same shared tiles (each invocation computing 4 elements of its virtual
// subgroup's 16 x 8 tiles), so that everything around the MMAs (scales, hi / lo packing, tile
// offsets, the store) runs and is tested on any device (lavapipe).
#ifndef EMULATE
#define EMULATE 0
#endif
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#if !EMULATE
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#include "q4_scales.glsl"
#include "q4_bwd_scale.glsl"

#ifndef BM
#define BM 128
#endif
#ifndef SPLIT
#define SPLIT 0
#endif
#ifndef FORWARD
#define FORWARD 0
#endif
#if FORWARD && SPLIT && !CODES
#error "the forward splits in its codes form only"
#endif
#ifndef X16
#define X16 0
#endif
#ifndef CODES
#define CODES 0
#endif
#if CODES && !FORWARD
#error "CODES is a forward form"
#endif
#if X16 && !FORWARD
#error "X16 is a forward form"
#endif
#if BM != 128 && BM != 32 && BM != 16
#error "BM is 128, 32 or 16"
#endif
#define BC 128
#ifndef BR
#define BR 32  // reduction rows per step (16 or 32)
#endif
#if BR != 32 && BR != 16
#error "BR is 32 or 16"
#endif
// DBUF = 1 (backward only): two sets of the step's shared tiles, filled in turn, so that one
// barrier per step orders both the fills before the MMAs and the MMAs before the refill of
// their set (a subgroup fills set b only after passing the barrier that all subgroups reach
// after their MMAs on set b). Made for BR = 16 (the two sets of BR = 32 pass 48 KiB). H200
// (session 23): the 128 x 128 tiles' M = 512 at 8192^2 1058 -> 1011 us (built so); the
// 32 x 128 tiles' M = 16 / 32 / 64 3-12% slower (BR = 16 alone 7-30% slower), not built.
#ifndef DBUF
#define DBUF 0
#endif
#ifndef GQ
// GQ = 1: the backward's W items' scale groups found once, before the walk (two divisions
// by gs per item per step otherwise). H200 (session 23): the 32 x 128 tiles' M = 32 371-374
// -> 356-358 us at N = 8192, K = 28672, 380-382 -> 366 at N = 28672, K = 8192, 120.6 ->
// 115.3 at 8192^2 (built so); the 128 x 128 tiles' M = 512 1018 -> 1103 (not built).
#define GQ 0
#endif
#if DBUF && FORWARD
#error "DBUF is a backward form"
#endif
#define NBUF (DBUF + 1)
#define NT 256
#if CODES && NT != 2 * BC
#error "CODES loads a scale per invocation: NT = 2 * BC"
#endif
#define RED 16  // SPLIT = 1: output elements per invocation per pass of the slices' sum
#define SG 8
#if BM == 128
#define WM 2  // 16-row m-tiles per subgroup
#define WK 8  // 8-column k-tiles per subgroup
#elif BM == 32
#define WM 1
#define WK 4
#else
// BM = 16 (an experiment: for M <= 16 a drop-in for the 32-row variants, whose launch has
// the same single row tile): every subgroup all 16 rows x 16 columns.
#define WM 1
#define WK 2
#endif
#define SGM (BM / (16 * WM))  // subgroups along m (4 or 2)
#define AW (BR / 8)           // uvec4 (8 fp16) per row of the A tile
#define WW (BC / 8)           // uvec4 per row of the W tile
// Row strides of the shared tiles in uvec4: one uvec4 of padding shifts consecutive rows by
// four banks, so the 8 rows a fragment load reads per phase hit distinct banks (unpadded,
// the W tile's 256-byte rows all start on bank 0: an 8-way conflict).
#define AWP (AW + 1)
#define WWP (WW + 1)
// FORWARD: the transposed W tile's row stride, uvec4 per output column: the step's 32 k (4)
// plus one of padding.
#define WTP 5
// Steps of global loads in flight, 1 or 2. H200, session 11 (built without glslc -O, as the
// manifest does): DEPTH = 1 157.2 / 471.4 / 512.8 us at M = 32, DEPTH = 2 634.8 .. 897.1; with
// -O the fp32 adds of each fragment product took the M = 32 kernel from 158 to 228 us.
#ifndef DEPTH
#define DEPTH 1
#endif
// uvec4 of the A tiles per step (hi and lo, or hi only), and per invocation.
#if X16
#define A_ITEMS (BM * AW)
#else
#define A_ITEMS (2 * BM * AW)
#endif
#define A_IT ((A_ITEMS + NT - 1) / NT)
#define A_PARTIAL (A_ITEMS % NT != 0)  // the last item round leaves invocations without one
#define W_IT (BR * WW / NT)        // weight words per invocation per step

#if !EMULATE
// The accumulators and A fragments are separate variables, never arrays: an array of
// cooperative matrices stays a function-memory array in the SPIR-V even after full unrolling,
// and the driver may then keep it in local memory.
#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>
// Elements per invocation of an ACC (an H200's: 4). The fresh tiles are added to the
// accumulators element by element with constant indices (a loop to .length() left dynamic
// indexing in the SPIR-V); a device whose fragments hold another count gets NaN out.
#define CL 4
#define FRAG_A fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>
#define FRAG_B fcoopmatNV<16, gl_ScopeSubgroup, 16, 8>
#if WK == 8
#define FOR_J(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#define FOR_IJ1(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3) X(i, 4) X(i, 5) X(i, 6) X(i, 7)
#elif WK == 4
#define FOR_J(X) X(0) X(1) X(2) X(3)
#define FOR_IJ1(X, i) X(i, 0) X(i, 1) X(i, 2) X(i, 3)
#else
#define FOR_J(X) X(0) X(1)
#define FOR_IJ1(X, i) X(i, 0) X(i, 1)
#endif
#if WM == 2
#define FOR_I(X) X(0) X(1)
#define FOR_IJ(X) FOR_IJ1(X, 0) FOR_IJ1(X, 1)
#define FOR_I_AT(X, j) X(0, j) X(1, j)
#else
#define FOR_I(X) X(0)
#define FOR_IJ(X) FOR_IJ1(X, 0)
#define FOR_I_AT(X, j) X(0, j)
#endif
#define DECL_ACC(i, j) ACC acc_##i##_##j = ACC(0.0);
#if X16
#define DECL_A(i) FRAG_A ah##i;
#define LOAD_A(i)                                                    \
  {                                                                  \
    const uint off = (mg * WM * 16u + (i) * 16u) * AWP + 2u * ks;    \
    coopMatLoadNV(ah##i, Ah, off, AWP, false);                       \
  }
#else
#define DECL_A(i) FRAG_A ah##i, al##i;
#define LOAD_A(i)                                                    \
  {                                                                  \
    const uint off = abuf + (mg * WM * 16u + (i) * 16u) * AWP + 2u * ks; \
    coopMatLoadNV(ah##i, Ah, off, AWP, false);                       \
    coopMatLoadNV(al##i, Al, off, AWP, false);                       \
  }
#endif
// A fragment pair's three products (the small ones first) into a fresh tile, then added to
// the accumulator in the shader's fp32: the tensor cores' own fp32 accumulation is not
// IEEE (session 5: 3.6e-4 relative error over 8192 terms), so no accumulation chain in them
// spans more than these 48 products.
#if CODES
// The fresh tile times its columns' scales (sc, loaded per j), into the accumulator.
#if X16
#define MMA3(i, j)                                                   \
  {                                                                  \
    ACC d = coopMatMulAddNV(ah##i, bh, ACC(0.0));                    \
    [[unroll]] for (uint e = 0u; e < CL; ++e) acc_##i##_##j[e] = fma(d[e], sc[e], acc_##i##_##j[e]); \
  }
#else
#define MMA3(i, j)                                                   \
  {                                                                  \
    ACC d = coopMatMulAddNV(al##i, bh, ACC(0.0));                    \
    d = coopMatMulAddNV(ah##i, bh, d);                               \
    [[unroll]] for (uint e = 0u; e < CL; ++e) acc_##i##_##j[e] = fma(d[e], sc[e], acc_##i##_##j[e]); \
  }
#endif
#elif X16
#define MMA3(i, j)                                                   \
  {                                                                  \
    ACC d = coopMatMulAddNV(ah##i, bl, ACC(0.0));                    \
    d = coopMatMulAddNV(ah##i, bh, d);                               \
    [[unroll]] for (uint e = 0u; e < CL; ++e) acc_##i##_##j[e] += d[e]; \
  }
#else
#define MMA3(i, j)                                                   \
  {                                                                  \
    ACC d = coopMatMulAddNV(ah##i, bl, ACC(0.0));                    \
    d = coopMatMulAddNV(al##i, bh, d);                               \
    d = coopMatMulAddNV(ah##i, bh, d);                               \
    [[unroll]] for (uint e = 0u; e < CL; ++e) acc_##i##_##j[e] += d[e]; \
  }
#endif
#if CODES
// The codes' B fragment and the scales of its columns' elements at this 16 k.
#define LOAD_B(j)                                                    \
    const uint off = (kg * WK + (j)) * 8u * WTP + 2u * ks;           \
    coopMatLoadNV(bh, Wh, off, WTP, true);                           \
    float sc[CL];                                                    \
    SCALES_AT(ks * BC + (kg * WK + (j)) * 8u)
// One 8-byte load per fragment: elements (0, 1) and (2, 3) sit on columns (c, c + 1), c even
// (the H200's order; frag_ok checks the probed order, and a device with another one gets NaN
// out, so the self-check keeps the hi / lo forward there). H200, M = 512 at 8192^2: 915.4 us
// as built (session 16 run 7) against 972 for four loads from a float array; four loads from
// the column pairs measured 1101 (run 6: the same arithmetic, another schedule: the kernel
// sits at 255 registers).
#define SCALES_AT(base)                                              \
    {                                                                \
      const vec2 s2 = Wsc2[((base) + ccol[0]) >> 1];                 \
      sc[0] = s2.x; sc[1] = s2.y; sc[2] = s2.x; sc[3] = s2.y;        \
    }
#elif FORWARD
// B (16 k x 8 n) column-major from the transposed tile: column n holds the step's k.
#define LOAD_B(j)                                                    \
    const uint off = (kg * WK + (j)) * 8u * WTP + 2u * ks;           \
    coopMatLoadNV(bh, Wh, off, WTP, true);                           \
    coopMatLoadNV(bl, Wl, off, WTP, true);
#else
#define LOAD_B(j)                                                    \
    const uint off = wbuf + 16u * ks * WWP + kg * WK + (j);          \
    coopMatLoadNV(bh, Wh, off, WWP, false);                          \
    coopMatLoadNV(bl, Wl, off, WWP, false);
#endif
#define STEP_J(j)                                                    \
  {                                                                  \
    FRAG_B bh, bl;                                                   \
    LOAD_B(j)                                                        \
    FOR_I_AT(MMA3, j)                                                \
  }
#define MMA_STEP                                                     \
  [[unroll]] for (uint ks = 0u; ks < BR / 16u; ++ks) {               \
    FOR_I(DECL_A)                                                    \
    FOR_I(LOAD_A)                                                    \
    FOR_J(STEP_J)                                                    \
  }
#define STORE_ACC(i, j)                                              \
  coopMatStoreNV(acc_##i##_##j, stage, sg * 128u, 8u, false);        \
  subgroupMemoryBarrierShared();                                     \
  subgroupBarrier();                                                 \
  [[unroll]] for (uint q = 0u; q < 4u; ++q) {                        \
    const uint idx = lane * 4u + q, rr = idx >> 3, cc = idx & 7u;    \
    const uint mm = mg * WM * 16u + (i) * 16u + rr;                  \
    const uint m = m0 + mm, c = c0 + (kg * WK + (j)) * 8u + cc;      \
    if (m < p.M && c < p.K) {                                        \
      outp[(js * p.M + m) * p.K + c] = frag_ok ? stage[sg * 128u + idx] * rowinv[mm] + BIAS_AT(c) : uintBitsToFloat(0x7FC00000u); \
    }                                                                \
  }                                                                  \
  subgroupBarrier();
#endif

#if FORWARD && SPLIT
// The bias joins the slices' sum, not the partial sums.
layout(set = 0, binding = 8) readonly buffer Bias { float bias[]; };
#define BIAS_AT(c) 0.0
#define FINAL_BIAS(c) (p.has_bias != 0u ? bias[c] : 0.0)
#elif FORWARD
layout(set = 0, binding = 6) readonly buffer Bias { float bias[]; };
#define BIAS_AT(c) (p.has_bias != 0u ? bias[c] : 0.0)
#else
#define BIAS_AT(c) 0.0
#endif
#ifndef FINAL_BIAS
#define FINAL_BIAS(c) 0.0
#endif
#if SPLIT
// Partial sums [slices][M][K]; the last workgroup of each tile to finish reads them back.
layout(set = 0, binding = 0) coherent buffer Out { float outp[]; };
layout(set = 0, binding = 6) coherent buffer Count { uint count[]; };  // [tiles], 0 between launches
layout(set = 0, binding = 7) writeonly buffer Dx { float dx[]; };      // [M][K]
#else
layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
#endif
// dy's fp16 hi / lo pairs from q4_bwd_rowscale (row m: RW words of hi pairs, then RW of lo
// pairs, RW = N rounded up to 8, halved): scaled and split once per row there, not by every
// column tile's workgroup here.
layout(set = 0, binding = 1) readonly buffer A { uvec4 ahl[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
layout(set = 0, binding = 4) readonly buffer RS { float rowscale_in[]; };  // [M][slices]
// |scale| bits, the largest of each PEAK_ROWS rows of each group: [ceil(N / PEAK_ROWS)][G]
// (prepack/q4.rs, group_scale_peaks_layout).
layout(set = 0, binding = 5) readonly buffer SP { uint speak[]; };
#define PEAK_ROWS 32u

layout(push_constant) uniform Params {
  uint M;
  uint N;         // weight rows (the reduction)
  uint K;         // output row length
  uint KW;        // words per weight row (Kpad / 8)
  uint G;         // scale groups per row
  uint gs;        // group size (multiple of 4)
  uint has_bias;  // unused
  uint slice;     // SPLIT = 1: reduction rows per slice (a multiple of BR)
} p;

shared uvec4 Ah[NBUF * BM * AWP];  // dy hi, [m][n of the step], 8 fp16 per uvec4
#if !X16
shared uvec4 Al[NBUF * BM * AWP];  // dy lo
#endif
#define A_SET (BM * AWP)  // uvec4 per set of an A tile (DBUF)
#if CODES
shared uvec4 Wh[BC * WTP];  // codes - 8, [n][k of the step]
// [16-k half of the step][n]: the scale of that half's group, in pairs of columns.
shared vec2 Wsc2[BC];
#define WSC(i) Wsc2[(i) >> 1][(i) & 1u]
#define W_AT(rr, wi) ((rr) * WTP + (wi))
#define W_ROW(e) ((e) / 4u)
#define W_WORD(e) ((e) % 4u)
#elif FORWARD
shared uvec4 Wh[BC * WTP];  // W hi, [n][k of the step]
shared uvec4 Wl[BC * WTP];  // W lo
#define W_AT(rr, wi) ((rr) * WTP + (wi))
#define W_ROW(e) ((e) / 4u)   // the item's row of the tile (n)
#define W_WORD(e) ((e) % 4u)  // its word of the step (8 k)
#else
shared uvec4 Wh[NBUF * BR * WWP];  // W hi, [n of the step][k]
shared uvec4 Wl[NBUF * BR * WWP];  // W lo
#define W_SET (BR * WWP)  // uvec4 per set of a W tile (DBUF)
#define W_AT(rr, wi) ((rr) * WWP + (wi))
#define W_ROW(e) ((e) / WW)
#define W_WORD(e) ((e) % WW)
#endif
shared float rowscale[BM];  // 2^e per dy row
shared float rowinv[BM];    // 2^-(e + f)
// [0]: the tile's scale peak bits; [1]: SPLIT = 1's last-to-finish flag (a shared variable of
// its own ahead of the tiles would move them off 16-byte offsets: the cooperative loads and
// stores then go wrong on the GPU, docs/experiments/README.md); 16 bytes keep `stage` at a
// 16-byte offset.
shared uint smax_bits[4];
shared float stage[SG * 128];  // a subgroup's 16 x 8 accumulator on its way out
// The emulated steps' product loops are unrolled: as runtime loops, llvmpipe stopped
// counting them past ~117 steps of 32 k in one launch (its loop limiter; the hi / lo forward
// lost every product past k = 3744, session 25). The native steps have no such loops.
#if EMULATE && CODES
// Per 16-k half of the step: the codes' products, times the column's scale of that half.
#define MMA_STEP                                                                                 \
  [[unroll]] for (uint i = 0u; i < WM; ++i) {                                                    \
    [[unroll]] for (uint j = 0u; j < WK; ++j) {                                                  \
      [[unroll]] for (uint q = 0u; q < 4u; ++q) {                                                \
        const uint idx = lane * 4u + q;                                                          \
        const uint row = mg * WM * 16u + i * 16u + (idx >> 3);                                   \
        const uint col = (kg * WK + j) * 8u + (idx & 7u);                                        \
        [[unroll]] for (uint ks = 0u; ks < BR / 16u; ++ks) {                                     \
          float v = 0.0;                                                                         \
          [[unroll]] for (uint n = 16u * ks; n < 16u * ks + 16u; ++n) {                                   \
            v += AH(row, n) * WH(n, col) + A_LO_TERM(row, n, col);                               \
          }                                                                                      \
          acc[i][j][q] = fma(v, WSC(ks * BC + col), acc[i][j][q]);                               \
        }                                                                                        \
      }                                                                                          \
    }                                                                                            \
  }
#elif EMULATE
#define MMA_STEP                                                                                 \
  [[unroll]] for (uint i = 0u; i < WM; ++i) {                                                    \
    [[unroll]] for (uint j = 0u; j < WK; ++j) {                                                  \
      [[unroll]] for (uint q = 0u; q < 4u; ++q) {                                                \
        const uint idx = lane * 4u + q;                                                          \
        const uint row = mg * WM * 16u + i * 16u + (idx >> 3);                                   \
        const uint col = (kg * WK + j) * 8u + (idx & 7u);                                        \
        float v = 0.0;                                                                           \
        [[unroll]] for (uint n = 0u; n < BR; ++n) {                                                   \
          v += AH(row, n) * WH(n, col) + AH(row, n) * WL(n, col) + A_LO_TERM(row, n, col);     \
        }                                                                                        \
        acc[i][j][q] += v;                                                                       \
      }                                                                                          \
    }                                                                                            \
  }
#endif
#if EMULATE
// fp16 element e of a packed tile (8 per uvec4).
#define AH(row, n) unpackHalf2x16(Ah[abuf + (row) * AWP + (n) / 8u][((n) / 2u) & 3u])[(n) & 1u]
#if X16
#define A_LO_TERM(row, n, col) 0.0
#else
#define AL(row, n) unpackHalf2x16(Al[abuf + (row) * AWP + (n) / 8u][((n) / 2u) & 3u])[(n) & 1u]
#define A_LO_TERM(row, n, col) (AL(row, n) * WH(n, col))
#endif
#if FORWARD
// (reduction index n, output column k) of the transposed tile.
#define WH(n, k) unpackHalf2x16(Wh[(k) * WTP + (n) / 8u][((n) & 7u) >> 1])[(n) & 1u]
#define WL(n, k) unpackHalf2x16(Wl[(k) * WTP + (n) / 8u][((n) & 7u) >> 1])[(n) & 1u]
#else
#define WH(n, k) unpackHalf2x16(Wh[wbuf + (n) * WWP + (k) / 8u][((k) & 7u) >> 1])[(k) & 1u]
#define WL(n, k) unpackHalf2x16(Wl[wbuf + (n) * WWP + (k) / 8u][((k) & 7u) >> 1])[(k) & 1u]
#endif
#endif


// Scale of weight row n at reduction / output index kb (the weight has p.N rows in the
// backward, p.K = the output row in the forward).
float scale_at(uint n, uint kb) {
  const uint g = kb / p.gs;
#if FORWARD
  return (n < p.K && g < p.G) ? s[Q4S(n, g, p.G)] : 0.0;
#else
  return (n < p.N && g < p.G) ? s[Q4S(n, g, p.G)] : 0.0;
#endif
}

// Elements lane * 4 .. + 3 of a subgroup's staged 16 x 8 tile (i, j) to the output, with the
// row's scales divided out.
void write_tile(uint i, uint j, uint sg, uint lane, uint mg, uint kg, uint m0, uint c0, uint js) {
  [[unroll]] for (uint q = 0u; q < 4u; ++q) {
    const uint idx = lane * 4u + q, rr = idx >> 3, cc = idx & 7u;
    const uint mm = mg * WM * 16u + i * 16u + rr;
    const uint m = m0 + mm, c = c0 + (kg * WK + j) * 8u + cc;
    if (m < p.M && c < p.K) {
      const float v = stage[sg * 128u + idx] * rowinv[mm] + BIAS_AT(c);
#if SPLIT
      outp[(js * p.M + m) * p.K + c] = v;
#else
      outp[m * p.K + c] = v;
#endif
    }
  }
}

// A step's tiles into shared memory: dy (BM x BR, from the pre-pass's hi / lo pairs as they
// are) and W = s * (code - 8) (BR x BC) as fp16 hi / lo pairs, one packed weight word (8
// codes) per W item.
void fill_tiles(uint t, float wscale, uvec4 av[A_IT], uint wv[W_IT], vec2 sv[W_IT], uint abuf, uint wbuf) {
  [[unroll]] for (uint it = 0u; it < A_IT; ++it) {
    const uint e = t + it * NT, hl = e / (BM * AW), mm = (e / AW) % BM, q = e % AW;
#if X16
    if (e < A_ITEMS) Ah[mm * AWP + q] = av[it];
#else
    if (A_PARTIAL && e >= A_ITEMS) {
      // no item in this round
    } else if (hl == 0u) {
      Ah[abuf + mm * AWP + q] = av[it];
    } else {
      Al[abuf + mm * AWP + q] = av[it];
    }
#endif
  }
  [[unroll]] for (uint it = 0u; it < W_IT; ++it) {
    const uint e = t + it * NT, rr = W_ROW(e), wi = W_WORD(e);
    const uint word = wv[it];
#if CODES
    uint hw[4];
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      // Codes of k = 2j, 2j + 1 as fp16 1024 + c (exponent bits 0x6400 over the nibble).
      const uint b = word >> (8u * q);
      hw[q] = packFloat2x16(unpackFloat2x16((b & 0x0Fu) | ((b & 0xF0u) << 12) | 0x64006400u) - f16vec2(1032.0));
    }
    Wh[W_AT(rr, wi)] = uvec4(hw[0], hw[1], hw[2], hw[3]);
  }
  // The scale of column t % BC in the step's 16-k half t / BC (load_step).
  WSC(t) = sv[0].x;
#else
    uint hw[4], lw[4];
    // W = S_hi * (c - 8) + S_lo * (c - 8) in packed fp16: S_hi is the scale cut to 8
    // significant bits, so its products with c - 8 (at most 3 significant bits) are exact in
    // fp16; S_lo = the rest (16 bits, rounded to fp16's 11), its products rounded once: W to
    // ~19 bits (2^-20 relative), for 4 fp16 operations per code pair instead of ~20 fp32 ones.
    [[unroll]] for (uint h = 0u; h < 2u; ++h) {
      const float sc = sv[it][h] * wscale;
      const float shi = uintBitsToFloat(floatBitsToUint(sc) & 0xFFFF0000u);
      const f16vec2 s_hi = f16vec2(float16_t(shi)), s_lo = f16vec2(float16_t(sc - shi));
      [[unroll]] for (uint q = 0u; q < 2u; ++q) {
        // Codes of k = 2j, 2j + 1 as fp16 1024 + c (exponent bits 0x6400 over the nibble).
        const uint b = word >> (16u * h + 8u * q);
        const f16vec2 c8 = unpackFloat2x16((b & 0x0Fu) | ((b & 0xF0u) << 12) | 0x64006400u) - f16vec2(1032.0);
        hw[2u * h + q] = packFloat2x16(c8 * s_hi);
        lw[2u * h + q] = packFloat2x16(c8 * s_lo);
      }
    }
    Wh[wbuf + W_AT(rr, wi)] = uvec4(hw[0], hw[1], hw[2], hw[3]);
    Wl[wbuf + W_AT(rr, wi)] = uvec4(lw[0], lw[1], lw[2], lw[3]);
  }
#endif
}

#if !FORWARD && !CODES && GQ
// The backward's scale groups of each W item's two half-words: an item keeps its words of
// the tile's columns through the walk, so its groups (a division by gs each) are found once.
uvec2 item_groups[W_IT];
#endif

// One step's global operands (dy pairs, weight words and their two scales) into registers.
void load_step(uint r1, uint t, uint m0, uint c0, uint r_end, out uvec4 av[A_IT], out uint wv[W_IT], out vec2 sv[W_IT]) {
  // uvec4 per pre-pass row half (hi or lo): RW / 4.
  const uint rq = (p.N + 7u) / 8u;
  [[unroll]] for (uint it = 0u; it < A_IT; ++it) {
    const uint e = t + it * NT, hl = e / (BM * AW), mm = (e / AW) % BM, q = e % AW;
    const uint m = m0 + mm, c = r1 / 8u + q;
    // Steps never cross a slice's end but at N, where the pre-pass padded the row to 8.
#if X16
    av[it] = (e < A_ITEMS && m < p.M && c < rq) ? ahl[(2u * m + hl) * rq + c] : uvec4(0u);
#else
    av[it] = (m < p.M && c < rq) ? ahl[(2u * m + hl) * rq + c] : uvec4(0u);
#endif
  }
  [[unroll]] for (uint it = 0u; it < W_IT; ++it) {
    const uint e = t + it * NT, rr = W_ROW(e), wi = W_WORD(e);
#if FORWARD
    // Weight row n = output column; the step's words along the reduction k.
    const uint n = c0 + rr, kw = r1 / 8u + wi;
    wv[it] = (n < p.K && kw < p.KW) ? w[n * p.KW + kw] : 0x88888888u;
#else
    const uint n = r1 + rr, kw = c0 / 8u + wi;
    wv[it] = (n < r_end && kw < p.KW) ? w[n * p.KW + kw] : 0x88888888u;
#endif
#if CODES
    sv[it] = vec2(0.0);
#elif !FORWARD && GQ
    const uvec2 g = item_groups[it];
    const uint q = Q4S(min(n, p.N - 1u), 0u, p.G);
    sv[it] = n < p.N ? vec2(g.x < p.G ? s[q + 4u * g.x] : 0.0, g.y < p.G ? s[q + 4u * g.y] : 0.0) : vec2(0.0);
#else
    sv[it] = vec2(scale_at(n, kw * 8u), scale_at(n, kw * 8u + 4u));
#endif
  }
#if CODES
  // One scale per invocation: column t % BC of the tile, the group of 16-k half t / BC.
  sv[0].x = scale_at(c0 + t % BC, r1 + 16u * (t / BC));
#endif
}

void main() {
  const uint t = gl_LocalInvocationID.x;
#if EMULATE
  const uint sg = t / 32u, lane = t % 32u;  // virtual subgroups of 32
#else
  const uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#endif
  const uint C = p.K, R = p.N;
  const uint tiles_c = (C + BC - 1u) / BC;
  const uint tiles_m = (p.M + BM - 1u) / BM;
  const uint tiles = tiles_c * tiles_m;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
#if SPLIT
  const uint tile = wg % tiles;
  const uint js = wg / tiles;
  if (js >= (R + p.slice - 1u) / p.slice) return;
  const uint r_begin = js * p.slice;
  const uint r_end = min(R, r_begin + p.slice);
#else
  const uint tile = wg;
  if (tile >= tiles) return;
  const uint r_begin = 0u;
  const uint r_end = R;
#endif
  const uint m0 = (tile / tiles_c) * BM;
  const uint c0 = (tile % tiles_c) * BC;

  // Each dy row's power-of-two scale over this slice (the pre-pass: [M][slices]), 1 for the
  // rows past M.
#if SPLIT
  const uint row_slices = (R + p.slice - 1u) / p.slice, row_slice = js;
#else
  const uint row_slices = 1u, row_slice = 0u;
#endif
  for (uint mm = t; mm < BM; mm += NT) {
    rowscale[mm] = (m0 + mm < p.M) ? rowscale_in[(m0 + mm) * row_slices + row_slice] : 1.0;
  }
  // The largest scale of the tile's groups over the slice's rows, from the per-32-row peaks
  // made when the scales were prepacked (binding 5; slices start and end on multiples of BR =
  // 32 rows, or at N). Scanning the slice's scales here instead cost ~18 / 47 / 46 us of 153 /
  // 468 / 445 at M = 32 on an H200 (session 13): every workgroup waited on those loads before
  // its first step.
#if CODES
  // No W range to find: the codes are exact in fp16. (Binding 5 stays in the interface, read
  // by no launch: the runtime binds the same tensors to every form.)
  if (p.M == 0xFFFFFFFFu) rowscale[0] = uintBitsToFloat(speak[0]);
  barrier();
  const float wscale = 1.0;
#else
  if (t == 0u) smax_bits[0] = 0u;
  barrier();
  {
#if FORWARD
    // The tile's weight rows (output columns c0..) and the groups of the reduction.
    const uint g0 = r_begin / p.gs, g1 = min((max(r_end, 1u) - 1u) / p.gs, p.G - 1u);
    const uint part0 = c0 / PEAK_ROWS;
    const uint parts = (min(c0 + BC, p.K) + PEAK_ROWS - 1u) / PEAK_ROWS - part0;
#else
    const uint g0 = c0 / p.gs, g1 = min((c0 + BC - 1u) / p.gs, p.G - 1u);
    const uint part0 = r_begin / PEAK_ROWS;
    const uint parts = (r_end + PEAK_ROWS - 1u) / PEAK_ROWS - part0;
#endif
    const uint ng = g1 + 1u - min(g0, g1 + 1u);
    const uint total = parts * ng;
    uint mb = 0u;
    for (uint i = t; i < total; i += NT) mb = max(mb, speak[(part0 + i / ng) * p.G + g0 + i % ng]);
#if EMULATE
    atomicMax(smax_bits[0], mb);
#else
    mb = subgroupMax(mb);
    if (lane == 0u) atomicMax(smax_bits[0], mb);
#endif
  }
  barrier();
  // W = s * (code - 8) peaks at 8 * max(s): scale by the power of two for that.
  const float wscale = 0.125 * peak_scale(smax_bits[0]);
#endif
  for (uint mm = t; mm < BM; mm += NT) rowinv[mm] = 1.0 / (rowscale[mm] * wscale);
  barrier();

  const uint mg = sg % SGM, kg = sg / SGM;
#if EMULATE
  float acc[WM][WK][4];  // elements lane * 4 + q of each 16 x 8 tile (row-major)
  [[unroll]] for (uint i = 0u; i < WM; ++i) {
    [[unroll]] for (uint j = 0u; j < WK; ++j) {
      [[unroll]] for (uint q = 0u; q < 4u; ++q) acc[i][j][q] = 0.0;
    }
  }
#else
  FOR_IJ(DECL_ACC)
  bool frag_ok = acc_0_0.length() == int(CL);
#if CODES
  // The output column (0..7 in its 16 x 8 tile) of each accumulator element: a tile of
  // column numbers loaded as an accumulator says where the driver keeps which.
  uint ccol[CL];
  {
    [[unroll]] for (uint q = 0u; q < 4u; ++q) stage[sg * 128u + lane * 4u + q] = float((lane * 4u + q) & 7u);
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    ACC probe;
    coopMatLoadNV(probe, stage, sg * 128u, 8u, false);
    [[unroll]] for (uint e = 0u; e < CL; ++e) ccol[e] = min(uint(probe[e]), 7u);
    subgroupBarrier();
  }
  frag_ok = frag_ok && (ccol[0] & 1u) == 0u && ccol[1] == ccol[0] + 1u && ccol[2] == ccol[0] &&
            ccol[3] == ccol[1];
#endif
#endif

#if !FORWARD && !CODES && GQ
  [[unroll]] for (uint it = 0u; it < W_IT; ++it) {
    const uint kb = (c0 / 8u + W_WORD(t + it * NT)) * 8u;
    item_groups[it] = uvec2(kb / p.gs, (kb + 4u) / p.gs);
  }
#endif
  // Global operands in registers, loaded DEPTH steps ahead so that DEPTH steps of loads are
  // in flight while a step's tiles are converted and multiplied.
  uvec4 av0[A_IT], av1[A_IT];
  uint wv0[W_IT], wv1[W_IT];
  vec2 sv0[W_IT], sv1[W_IT];
  load_step(r_begin, t, m0, c0, r_end, av0, wv0, sv0);
#if DBUF
  // Set b of the tiles at step i = (r0 - r_begin) / BR, b = i % 2.
  uint abuf = 0u, wbuf = 0u;
  for (uint r0 = r_begin; r0 < r_end; r0 += BR) {
    fill_tiles(t, wscale, av0, wv0, sv0, abuf, wbuf);
    barrier();
    load_step(r0 + BR, t, m0, c0, r_end, av0, wv0, sv0);
    MMA_STEP
    abuf ^= A_SET;
    wbuf ^= W_SET;
  }
#else
  const uint abuf = 0u, wbuf = 0u;
#if DEPTH == 2
  load_step(r_begin + BR, t, m0, c0, r_end, av1, wv1, sv1);
#endif
  for (uint r0 = r_begin; r0 < r_end; r0 += DEPTH * BR) {
    fill_tiles(t, wscale, av0, wv0, sv0, abuf, wbuf);
    barrier();
    load_step(r0 + DEPTH * BR, t, m0, c0, r_end, av0, wv0, sv0);
    MMA_STEP
    barrier();
#if DEPTH == 2
    if (r0 + BR >= r_end) break;
    fill_tiles(t, wscale, av1, wv1, sv1, abuf, wbuf);
    barrier();
    load_step(r0 + 3u * BR, t, m0, c0, r_end, av1, wv1, sv1);
    MMA_STEP
    barrier();
#endif
  }
#endif  // DBUF


  // Out through a per-subgroup 16 x 8 staging tile: each invocation takes 4 elements, divides
  // out its row's scales and writes them.
#if SPLIT
  const uint jslice = js;
#else
  const uint jslice = 0u;
#endif
#if EMULATE
  [[unroll]] for (uint i = 0u; i < WM; ++i) {
    [[unroll]] for (uint j = 0u; j < WK; ++j) {
      [[unroll]] for (uint q = 0u; q < 4u; ++q) stage[sg * 128u + lane * 4u + q] = acc[i][j][q];
      barrier();
      write_tile(i, j, sg, lane, mg, kg, m0, c0, jslice);
      barrier();
    }
  }
#else
  #define js jslice
  FOR_IJ(STORE_ACC)
  #undef js
#endif
#if SPLIT
  // The slices are summed by the last workgroup of each tile to finish (a counter per tile,
  // incremented after the workgroup's partial sums are written and made visible), in slice
  // order from zero as q4_linear_reduce sums them, so the result does not depend on which
  // workgroup finishes last; that saves the reduce dispatch and the barrier before it. The
  // last workgroup sets its counter back to zero for the next launch (the runtime zeroes the
  // counters once, when the graph is built). q4_linear_bwd_wide.comp does the same.
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) smax_bits[1] = atomicAdd(count[tile], 1u) == (R + p.slice - 1u) / p.slice - 1u ? 1u : 0u;
  barrier();
  if (smax_bits[1] == 0u) return;
  memoryBarrierBuffer();
  const uint nsl = (R + p.slice - 1u) / p.slice, plane = p.M * p.K;
  // RED elements per invocation (consecutive invocations on consecutive columns), all their
  // loads of one slice in flight together: the last workgroup's sum is a chain of nsl load
  // latencies, not nsl * RED (14 slices at N = 28672).
  [[unroll]] for (uint e0 = 0u; e0 < BM * BC; e0 += RED * NT) {
    float v[RED];
    uint at[RED];
    [[unroll]] for (uint u = 0u; u < RED; ++u) {
      const uint e = e0 + u * NT + t, m = m0 + e / BC, c = c0 + e % BC;
      at[u] = (m < p.M && c < p.K) ? m * p.K + c : 0xFFFFFFFFu;
      v[u] = 0.0;
    }
    for (uint j = 0u; j < nsl; ++j) {
      float b[RED];
      [[unroll]] for (uint u = 0u; u < RED; ++u) b[u] = at[u] != 0xFFFFFFFFu ? outp[j * plane + at[u]] : 0.0;
      [[unroll]] for (uint u = 0u; u < RED; ++u) v[u] += b[u];
    }
    [[unroll]] for (uint u = 0u; u < RED; ++u) {
      if (at[u] != 0xFFFFFFFFu) dx[at[u]] = v[u] + FINAL_BIAS(at[u] % p.K);
    }
  }
  if (t == 0u) count[tile] = 0u;
#endif
}
