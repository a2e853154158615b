#version 450
// 4-bit linear backward for small M (M <= MT), split over N, fp32. First of two dispatches:
//   partial[j][m][k] = sum_{n in slice j} dy[m][n] * (code(n,k) - 8) * s[n][k / gs]
// over etvk's packed Q4 layout (rows n contiguous along k, 8 codes per u32 word, KW words per
// row; see q4_pack_weights.comp) and fp32 scales s[n][g] (G groups per row; g >= G has scale
// 0). q4_linear_reduce.comp then sums the slices: dx[m][k] = sum_j partial[j][m][k].
//
// Why split N: d_x has only M * K outputs, so one invocation per output column (the tiled
// kernel's shape) leaves the GPU mostly idle and walks all N rows serially. Here invocation
// (wi, j) owns packed word column wi (8 consecutive k) and rows j * RS .. j * RS + RS - 1, so
// there are KWO * S invocations (~128k): enough loads in flight to stream the weight at
// memory speed.
//
// Memory access: consecutive invocations take consecutive words of the same row (a
// subgroup reads 32 * 4 contiguous bytes per row), and dy[m][n] is the same for every
// invocation of a slice (a broadcast load, vec4 over 4 rows when aligned). U rows' words and
// scales are loaded before any is used, to keep loads in flight. The group of a word is
// fixed for the invocation, so its scale index needs no per-row arithmetic.
// Decoding is in place (codes4_pre): an AND and a subtract per code, no shifts.
//
// partial is [S][M][KWO * 8] (row stride padded to whole words, so the two vec4 stores per
// row need no bounds checks); the reduce reads only k < K.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "q4_scales.glsl"

#ifndef MT
#define MT 1
#endif
// Rows per batch of loads (a multiple of 4: dy is read as vec4 over 4 rows). Fewer for the
// larger MT, whose accumulators (8 * MT floats) and dy values (MT * U) take the registers.
#define U (MT <= 2 ? 8 : 4)

layout(set = 0, binding = 0) writeonly buffer Part { vec4 part4[]; };
layout(set = 0, binding = 1) readonly buffer Dy { float dy[]; };
layout(set = 0, binding = 1) readonly buffer Dy4 { vec4 dy4[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };

layout(push_constant) uniform Params {
  uint M;         // activation rows (<= MT)
  uint N;         // weight rows (the reduction)
  uint K;         // output row length (d_x's last dim, <= Kpad)
  uint KW;        // words per weight row (Kpad / 8)
  uint G;         // scale groups per row
  uint gs;        // group size (multiple of 4)
  uint RS;        // rows per slice (a multiple of 4)
  uint gshift;    // log2(gs / 8), or 0xFFFFFFFF when gs / 8 is not a power of two
} p;

const float MAGIC = 8388608.0;  // 2^23
const uint MAGIC_BITS = 0x4B000000u;

// In-place decode of the 4 codes of a 16-bit half: nibble q sits at bits 4q, so the half
// with 2^23's bits ORed in (once per half), masked to nibble q and those bits, is
// 2^23 + code * 16^q exactly, and subtracting 2^23 + 8 * 16^q leaves (code - 8) * 16^q, also
// exact. No shifts per nibble, one AND with one constant per code (an AND-OR with two
// constants cost the H200 two operations; see q4_linear_bwd_wide.comp); the accumulators are
// scaled back by 16^-q (exact) once at the end.
const vec4 UNMAGIC = vec4(MAGIC + 8.0, MAGIC + 128.0, MAGIC + 2048.0, MAGIC + 32768.0);
const vec4 UNPOS = vec4(1.0, 0.0625, 0.00390625, 0.000244140625);
vec4 codes4_pre(uint hm) {
  return uintBitsToFloat(uvec4(hm) & uvec4(0x4B00000Fu, 0x4B0000F0u, 0x4B000F00u, 0x4B00F000u)) - UNMAGIC;
}

void main() {
  const uint kwo = (p.K + 7u) / 8u;  // words that hold output columns
  const uint i = linear_id();
  const uint wi = i % kwo;
  const uint j = i / kwo;
  const uint n0 = j * p.RS;
  if (n0 >= p.N) {
    return;  // past the last slice (grid rounding)
  }
  const uint n1 = min(n0 + p.RS, p.N);
  // dy rows start 16-byte aligned when N % 4 == 0 (n0 and the batches are multiples of 4).
  const bool vec_dy = (p.N & 3u) == 0u;

  // Scale groups of the word's two halves (gs % 4 == 0, so a half lies in one group). Groups
  // past G have scale 0: their columns come out 0 (the index is clamped for the loads).
  const uint k = wi * 8u;
  uint g0, g1;
  if (p.gshift != 0xFFFFFFFFu) {
    g0 = wi >> p.gshift;
    g1 = g0;
  } else {
    g0 = k / p.gs;
    g1 = (k + 4u) / p.gs;
  }
  const bool live0 = g0 < p.G, live1 = g1 < p.G;
  g0 = min(g0, p.G - 1u);
  g1 = min(g1, p.G - 1u);
  const bool one_group = g0 == g1;

  vec4 acc_lo[MT], acc_hi[MT];
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    acc_lo[m] = vec4(0.0);
    acc_hi[m] = vec4(0.0);
  }

  for (uint n = n0; n < n1; n += U) {
    // Issue every load of the batch first. Rows past the slice read a valid row (clamped)
    // and use code 8 (zero) and dy = 0 instead.
    uint wv[U];
    float s0[U], s1[U];
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const uint nr = min(n + u, p.N - 1u);
      wv[u] = n + u < n1 ? w[nr * p.KW + wi] : 0x88888888u;
      s0[u] = s[Q4S(nr, g0, p.G)];
      s1[u] = one_group ? s0[u] : s[Q4S(nr, g1, p.G)];
    }
    vec4 d[MT][U / 4];
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      const uint row = min(m, p.M - 1u) * p.N;
      [[unroll]] for (uint q = 0u; q < U / 4u; ++q) {
        const uint nq = n + 4u * q;
        if (vec_dy && nq + 3u < n1) {
          d[m][q] = dy4[(row + nq) >> 2];
        } else {
          const uint last = p.N - 1u;
          d[m][q] = vec4(nq < n1 ? dy[row + min(nq, last)] : 0.0,
                         nq + 1u < n1 ? dy[row + min(nq + 1u, last)] : 0.0,
                         nq + 2u < n1 ? dy[row + min(nq + 2u, last)] : 0.0,
                         nq + 3u < n1 ? dy[row + min(nq + 3u, last)] : 0.0);
        }
      }
    }
    [[unroll]] for (uint u = 0u; u < U; ++u) {
      const vec4 qlo = codes4_pre(wv[u] | MAGIC_BITS);
      const vec4 qhi = codes4_pre((wv[u] >> 16) | MAGIC_BITS);
      [[unroll]] for (uint m = 0u; m < MT; ++m) {
        const float dm = d[m][u / 4u][u % 4u];
        acc_lo[m] = fma(vec4(dm * s0[u]), qlo, acc_lo[m]);
        acc_hi[m] = fma(vec4(dm * s1[u]), qhi, acc_hi[m]);
      }
    }
  }

  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    if (m < p.M) {
      const uint o = ((j * p.M + m) * kwo + wi) * 2u;
      part4[o] = live0 ? acc_lo[m] * UNPOS : vec4(0.0);
      part4[o + 1u] = live1 ? acc_hi[m] * UNPOS : vec4(0.0);
    }
  }
}
