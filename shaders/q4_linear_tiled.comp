#version 450
// Tiled 4-bit weight-only linear, fp32 arithmetic, over etvk's packed Q4 layout (rows n
// contiguous along k, 8 codes per u32 word, KW words per row; see q4_pack_weights.comp) and
// fp32 scales s[n][g] (g >= G has scale 0). Two directions over the same packed weight:
//   forward  (BWD = 0):  out[m][n] = sum_k x[m][k]  * Wd[n][k] (+ bias[n])    A = x  [M][K]
//   backward (BWD = 1):  dx[m][k]  = sum_n dy[m][n] * Wd[n][k]                A = dy [M][N]
// with Wd[n][k] = (code(n,k) - 8) * s[n][k / gs]. Each workgroup computes a BM x BC tile of
// the output (C = n forward, k backward), stepping the reduction BR at a time through shared
// memory; each invocation owns TM x TC accumulators as (TM/4) x (TC/4) blocks of 4 x 4,
// strided across the thread grid. The tiles live in shared memory as vec4 rows so the inner
// loop reads 4 values per load (LDS.128): with scalar reads, one shared load per FMA pair
// bounded the 128 x 128 variant at ~30 TFLOP/s on an H200. Workgroup ids are folded over (x, y).
//
// TILE variants (local size = NT = (BM/TM) * (BC/TC) = 256 for all):
//   32:  32 x 128, 4 x 4 per thread, 21 KiB shared (portable; for 8 < M <= 32, where a
//        64-row tile would spend half its FMAs on rows past M)
//   64:  64 x 64,  4 x 4 per thread, 17 KiB shared (portable)
//   128: 128 x 128, 8 x 8 per thread, 33 KiB shared (only where maxComputeSharedMemorySize allows)
//
// SPLIT = 1: split-K. With few tiles (small M and C) a large GPU would run one workgroup per
// compute unit, each walking the whole reduction. The split variant cuts the reduction into
// S = ceil(R / p.slice) slices of p.slice columns (a multiple of BR, so slices never share a
// step of BR and never split a packed word); workgroup id = slice * tiles + tile, and each
// workgroup writes its slice's BM x BC partial tile, without bias, to partial[S][M][C] (the
// binding `outp`). q4_linear_reduce.comp then sums the slices in a fixed order and adds the
// bias. The unsplit variants (SPLIT = 0) ignore p.slice and write `out` with the bias.
// (The backward at M <= 8 uses q4_linear_bwd_split.comp: tiles over k alone leave the GPU idle.)
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "q4_scales.glsl"

#ifndef BWD
#define BWD 0
#endif
#ifndef TILE
#define TILE 64
#endif
#ifndef SPLIT
#define SPLIT 0
#endif

#if TILE == 128
#define BM 128
#define BC 128
#define TM 8
#define TC 8
#elif TILE == 32
#define BM 32
#define BC 128
#define TM 4
#define TC 4
#else
#define BM 64
#define BC 64
#define TM 4
#define TC 4
#endif
#define BR 32
#define NT ((BM / TM) * (BC / TC))
// DBUF = 1: two shared buffers of BS = 16 reduction rows; the next step's A values and
// weight words are loaded into registers before the current step's FMAs and stored (the
// weights decoded) into the other buffer after them: one barrier per step, and the global
// loads' latency hidden behind the step's FMAs. The same shared memory as DBUF = 0. The
// manifest builds t64, t128 and the t32x128 backward so (the t32x128 forward was 1% slower:
// 20.7 / 19.1 / 21.8 TFLOP/s at M = 32 against 20.9 / 19.2 / 22.1; backward 24.3 / 26.0 /
// 22.7 against 22.2 / 23.6 / 20.6). H200, tensor cores off (docs/performance.md, session
// 18): M = 512 (128 x 128 tiles) 34.0-35.0 TFLOP/s over both directions and the three
// shapes against 29.8-35.6 (at 8192^2 2% slower, at 8192 x 28672 backward 17% faster), at
// 163-169 registers (one workgroup per SM; DBUF = 0 runs two at 113); M = 64 (64 x 64)
// backward 13-15% faster, forward 0.6-2.3%. Without -O another 2-6% faster, but the driver
// then took 34-40 s to compile the 128 x 128 kernels; the 16-row step as a loop of 2 or 4
// unrolled rows (144-175 registers): 10-25% slower.
#ifndef DBUF
#define DBUF 0
#endif
#if DBUF
#ifndef BS_DB
#define BS_DB 16  // reduction rows per step (a multiple of 8 that divides BR)
#endif
#define BS BS_DB
#else
#define BS BR
#endif

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) readonly buffer A { float a[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
#if !BWD && !SPLIT
// (Declared only where used: the variants built without -O would keep an unused binding.)
layout(set = 0, binding = 4) readonly buffer B { float bias[]; };
#endif

layout(push_constant) uniform Params {
  uint M;
  uint N;         // weight rows
  uint K;         // forward: activation row length; backward: output row length
  uint KW;        // words per weight row (Kpad / 8)
  uint G;         // scale groups per row
  uint gs;        // group size (multiple of 4)
  uint has_bias;  // forward, SPLIT = 0 only (the reduce adds the bias after a split)
  uint slice;     // SPLIT = 1: reduction columns per slice (a multiple of BR)
} p;

#define QM (TM / 4)
#define QC (TC / 4)
// One vec4 of padding per row spreads the transposed stores over the banks.
#if DBUF
shared vec4 As4[2][BS][BM / 4 + 1];
shared vec4 Ws4[2][BS][BC / 4 + 1];
#else
shared vec4 As4[BR][BM / 4 + 1];
shared vec4 Ws4[BR][BC / 4 + 1];
#endif

// Scale of weight row n for the 4 columns starting at kb (a multiple of 4).
float scale_at(uint n, uint kb) {
  const uint g = kb / p.gs;
  return (n < p.N && g < p.G) ? s[Q4S(n, g, p.G)] : 0.0;
}

// Code q (bits 4q..4q+3) of w, minus 8, as a float: the nibble ORed into 2^23's mantissa
// and 2^23 + 8 subtracted (exact, no integer-to-float conversion). In the double-buffered
// step: H100 0.05-0.5% faster than float(code) - 8 (docs/performance.md, session 40; the
// single-buffered loop keeps the conversion, not timed).
float code_at(uint w, uint q) {
  return uintBitsToFloat(((w >> (4u * q)) & 15u) | 0x4B000000u) - 8388616.0;
}

#if DBUF
// Per invocation and step: A_PER values of the BM x BS A tile, W_PER packed words of the
// weight tile (forward: BC rows x BS / 8 words; backward: BS rows x BC / 8 words).
#define A_PER ((BM * BS + NT - 1) / NT)
#if BWD
#define W_WORDS (BS * (BC / 8))
#else
#define W_WORDS (BC * (BS / 8))
#endif
#define W_PER ((W_WORDS + NT - 1) / NT)

// Weight word e of the step at r0: its row n and word index kw (0x88888888, all codes 8,
// past the matrix).
void word_at(uint e, uint r0, uint c0, out uint n, out uint kw) {
#if BWD
  n = r0 + e / (BC / 8);
  kw = c0 / 8u + e % (BC / 8);
#else
  n = c0 + e / (BS / 8);
  kw = r0 / 8u + e % (BS / 8);
#endif
}

void load_step(uint t, uint r0, uint m0, uint c0, uint R, uint arow, out float av[A_PER],
               out uint wv[W_PER], out float sv[W_PER][2]) {
  [[unroll]] for (uint i = 0u; i < A_PER; ++i) {
    const uint e = t + i * NT;
    const uint m = m0 + e / BS;
    const uint r = r0 + e % BS;
    av[i] = (e < BM * BS && m < p.M && r < R) ? a[m * arow + r] : 0.0;
  }
  [[unroll]] for (uint i = 0u; i < W_PER; ++i) {
    const uint e = t + i * NT;
    uint n, kw;
    word_at(e, r0, c0, n, kw);
    const bool live = e < W_WORDS && n < p.N && kw < p.KW;
    wv[i] = live ? w[n * p.KW + kw] : 0x88888888u;
    sv[i][0] = live ? scale_at(n, kw * 8u) : 0.0;
    sv[i][1] = live ? scale_at(n, kw * 8u + 4u) : 0.0;
  }
}

void store_step(uint t, uint b, uint r0, uint c0, float av[A_PER], uint wv[W_PER],
                float sv[W_PER][2]) {
  [[unroll]] for (uint i = 0u; i < A_PER; ++i) {
    const uint e = t + i * NT;
    if (e < BM * BS) {
      const uint mm = e / BS;
      As4[b][e % BS][mm >> 2][mm & 3u] = av[i];
    }
  }
  [[unroll]] for (uint i = 0u; i < W_PER; ++i) {
    const uint e = t + i * NT;
    if (e < W_WORDS) {
#if BWD
      const uint rr = e / (BC / 8), wi = e % (BC / 8);
      [[unroll]] for (uint h = 0u; h < 2u; ++h) {
        const uint hw = wv[i] >> (16u * h);
        Ws4[b][rr][wi * 2u + h] =
            vec4(code_at(hw, 0u), code_at(hw, 1u), code_at(hw, 2u), code_at(hw, 3u)) * sv[i][h];
      }
#else
      const uint cc = e / (BS / 8), wi = e % (BS / 8);
      [[unroll]] for (uint h = 0u; h < 2u; ++h) {
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          Ws4[b][wi * 8u + 4u * h + j][cc >> 2][cc & 3u] = code_at(wv[i], 4u * h + j) * sv[i][h];
        }
      }
#endif
    }
  }
}
#endif

void main() {
  const uint t = gl_LocalInvocationID.x;
#if BWD
  const uint C = p.K;   // output columns = k
  const uint R = p.N;   // reduction over n
  const uint arow = p.N;
#else
  const uint C = p.N;
  const uint R = p.K;
  const uint arow = p.K;
#endif
  const uint tiles_c = (C + BC - 1u) / BC;
  const uint tiles_m = (p.M + BM - 1u) / BM;
  const uint tiles = tiles_c * tiles_m;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
#if SPLIT
  const uint tile = wg % tiles;
  const uint js = wg / tiles;  // slice index
  // Slice js covers reduction columns [r_begin, min(r_begin + slice, R)); every step of BR
  // starting in it lies wholly in it (or ends at R), so the bounds checks below against R
  // stay exact. Slices past the last: folding leftovers (uniform per workgroup).
  if (js >= (R + p.slice - 1u) / p.slice) {
    return;
  }
  const uint r_begin = js * p.slice;
  const uint r_end = min(R, r_begin + p.slice);
#else
  const uint tile = wg;
  if (tile >= tiles) {
    return;  // uniform per workgroup (folding leftovers)
  }
  const uint r_begin = 0u;
  const uint r_end = R;
#endif
  const uint m0 = (tile / tiles_c) * BM;
  const uint c0 = (tile % tiles_c) * BC;
  const uint tx = t % (BC / TC);
  const uint ty = t / (BC / TC);

  float acc[TM][TC];
  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    [[unroll]] for (uint j = 0u; j < TC; ++j) {
      acc[i][j] = 0.0;
    }
  }

#if DBUF
  {
    float av[A_PER];
    uint wv[W_PER];
    float sv[W_PER][2];
    load_step(t, r_begin, m0, c0, R, arow, av, wv, sv);
    store_step(t, 0u, r_begin, c0, av, wv, sv);
    barrier();
    uint cur = 0u;
    for (uint r0 = r_begin; r0 < r_end; r0 += BS) {
      const bool more = r0 + BS < r_end;
      if (more) load_step(t, r0 + BS, m0, c0, R, arow, av, wv, sv);
      [[unroll]] for (uint rr = 0u; rr < BS; ++rr) {
        vec4 a4[QM];
        vec4 w4[QC];
        [[unroll]] for (uint i4 = 0u; i4 < QM; ++i4) a4[i4] = As4[cur][rr][ty + i4 * (BM / TM)];
        [[unroll]] for (uint j4 = 0u; j4 < QC; ++j4) w4[j4] = Ws4[cur][rr][tx + j4 * (BC / TC)];
        [[unroll]] for (uint i = 0u; i < TM; ++i) {
          [[unroll]] for (uint j = 0u; j < TC; ++j) {
            acc[i][j] = fma(a4[i / 4u][i % 4u], w4[j / 4u][j % 4u], acc[i][j]);
          }
        }
      }
      if (more) store_step(t, cur ^ 1u, r0 + BS, c0, av, wv, sv);
      barrier();
      cur ^= 1u;
    }
  }
#else
  for (uint r0 = r_begin; r0 < r_end; r0 += BR) {
    // A tile: BM x BR, read along the reduction (contiguous), stored transposed.
    for (uint e = t; e < BM * BR; e += NT) {
      const uint mm = e / BR;
      const uint rr = e % BR;
      const uint m = m0 + mm;
      const uint r = r0 + rr;
      As4[rr][mm >> 2][mm & 3u] = (m < p.M && r < R) ? a[m * arow + r] : 0.0;
    }
#if BWD
    // Weight tile: rows n = r0 .. r0+BR, columns k = c0 .. c0+BC (BC/8 words per row).
    for (uint e = t; e < BR * (BC / 8); e += NT) {
      const uint rr = e / (BC / 8);
      const uint wi = e % (BC / 8);
      const uint n = r0 + rr;
      const uint kw = c0 / 8u + wi;
      uint word = 0x88888888u;
      if (n < p.N && kw < p.KW) {
        word = w[n * p.KW + kw];
      }
      [[unroll]] for (uint h = 0u; h < 2u; ++h) {
        const float sc = scale_at(n, kw * 8u + 4u * h);
        const uint hw = word >> (16u * h);
        Ws4[rr][wi * 2u + h] =
            (vec4(float(hw & 15u), float((hw >> 4) & 15u), float((hw >> 8) & 15u),
                  float((hw >> 12) & 15u)) - 8.0) * sc;
      }
    }
#else
    // Weight tile: rows n = c0 .. c0+BC, columns k = r0 .. r0+BR (BR/8 words per row).
    for (uint e = t; e < BC * (BR / 8); e += NT) {
      const uint cc = e / (BR / 8);
      const uint wi = e % (BR / 8);
      const uint n = c0 + cc;
      const uint kw = r0 / 8u + wi;
      uint word = 0x88888888u;
      if (n < p.N && kw < p.KW) {
        word = w[n * p.KW + kw];
      }
      [[unroll]] for (uint h = 0u; h < 2u; ++h) {
        const float sc = scale_at(n, kw * 8u + 4u * h);
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          Ws4[wi * 8u + 4u * h + j][cc >> 2][cc & 3u] =
              (float((word >> (16u * h + 4u * j)) & 15u) - 8.0) * sc;
        }
      }
    }
#endif
    barrier();
    [[unroll]] for (uint rr = 0u; rr < BR; ++rr) {
      vec4 av[QM];
      vec4 wv[QC];
      [[unroll]] for (uint i4 = 0u; i4 < QM; ++i4) {
        av[i4] = As4[rr][ty + i4 * (BM / TM)];
      }
      [[unroll]] for (uint j4 = 0u; j4 < QC; ++j4) {
        wv[j4] = Ws4[rr][tx + j4 * (BC / TC)];
      }
      [[unroll]] for (uint i = 0u; i < TM; ++i) {
        [[unroll]] for (uint j = 0u; j < TC; ++j) {
          acc[i][j] = fma(av[i / 4u][i % 4u], wv[j / 4u][j % 4u], acc[i][j]);
        }
      }
    }
    barrier();
  }
#endif

  [[unroll]] for (uint i = 0u; i < TM; ++i) {
    const uint m = m0 + 4u * (ty + (i / 4u) * (BM / TM)) + i % 4u;
    if (m < p.M) {
      [[unroll]] for (uint j = 0u; j < TC; ++j) {
        const uint c = c0 + 4u * (tx + (j / 4u) * (BC / TC)) + j % 4u;
        if (c < C) {
#if SPLIT
          outp[(js * p.M + m) * C + c] = acc[i][j];
#else
          float v = acc[i][j];
#if !BWD
          if (p.has_bias != 0u) {
            v += bias[c];
          }
#endif
          outp[m * C + c] = v;
#endif
        }
      }
    }
  }
}
