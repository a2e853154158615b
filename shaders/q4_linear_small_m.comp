#version 450
// 4-bit linear forward for 2 <= M <= MT (MT = 2, 4 or 8) in fp32 FMAs:
//   out[m][n] = sum_k x[m][k] * (code(n,k) - 8) * s[n][k / gs]  (+ bias[n])
// over etvk's packed Q4 layout (rows n of KC uvec4 chunks of 32 codes; nibble p of word j of
// a chunk is column 8j + p) and fp32 scales s[n][g] whose groups are whole chunks (gs a
// power-of-two multiple of 32, or one group per row).
//
// Each code is decoded once and serves all MT activation rows: a lane owns two weight rows
// and walks the chunks of its workgroup's slice of K, while the slice of x (all MT rows,
// each value pre-multiplied by 16^-q, q = k % 4) sits in shared memory and is read by every
// lane of a subgroup at the same address (a broadcast). Codes are decoded in place (an AND
// and a subtract give (code - 8) * 16^q exactly: see q4_linear_bwd_wide.comp), so a code
// costs about 2.5 instructions plus MT FMAs.
//
// Workgroup: NT = 256 lanes x 2 rows = RB = 512 weight rows (lane l of subgroup w: rows
// 64 w + l and 64 w + l + 32) times one slice of KS chunks of K (push constant); the
// slices' partial sums go to `part` [S][M][N] for q4_linear_reduce (which adds the bias),
// or straight to `out` (with the bias) when S = 1.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

#ifndef MT
#define MT 8
#endif
#define NT 256u
#define RB 512u
// Chunks of the x slice in shared memory at most: 24 KiB of it at every MT.
#define KS_MAX (192u / MT)

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) writeonly buffer Part { float part[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 3) readonly buffer W4 { uvec4 w4[]; };
layout(set = 0, binding = 4) readonly buffer S { float s[]; };
layout(set = 0, binding = 5) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
  uint M;         // activation rows (<= MT)
  uint N;         // output features (weight rows)
  uint K;         // x's row length (<= KC * 32)
  uint KC;        // chunks per packed row
  uint G;         // scale groups per row
  uint cshift;    // group of chunk c: c >> cshift (31 with one group per row)
  uint has_bias;
  uint KS;        // chunks per slice (<= KS_MAX)
} p;

shared float xs[KS_MAX * 32u * MT];  // [k of the slice][m], x * 16^-(k % 4)

const uint MAGIC_BITS = 0x4B000000u;  // 2^23
const float MAGIC = 8388608.0;
const uvec4 MASKS = uvec4(0x4B00000Fu, 0x4B0000F0u, 0x4B000F00u, 0x4B00F000u);
const vec4 UNMAGIC = vec4(MAGIC + 8.0, MAGIC + 128.0, MAGIC + 2048.0, MAGIC + 32768.0);
const vec4 UNPOS = vec4(1.0, 0.0625, 0.00390625, 0.000244140625);

// (code - 8) * 16^q of the four codes of a 16-bit half ORed with 2^23's bits.
vec4 codes4(uint hm) {
  return uintBitsToFloat(uvec4(hm) & MASKS) - UNMAGIC;
}

// The MT x values of slice position kl (broadcast loads: every lane of a subgroup reads the
// same kl at the same time).
void x_at(uint kl, out float xv[MT]) {
  [[unroll]] for (uint m = 0u; m < MT; ++m) xv[m] = xs[kl * MT + m];
}

// One chunk of one row: the partial sums of the MT rows over its 32 k.
void chunk_sums(uvec4 w, uvec4 w2, uint kl0, inout float p0[MT], inout float p1[MT]) {
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    [[unroll]] for (uint h = 0u; h < 2u; ++h) {
      const vec4 a = codes4((h == 0u ? w[j] : w[j] >> 16) | MAGIC_BITS);
      const vec4 b = codes4((h == 0u ? w2[j] : w2[j] >> 16) | MAGIC_BITS);
      [[unroll]] for (uint q = 0u; q < 4u; ++q) {
        float xv[MT];
        x_at(kl0 + 8u * j + 4u * h + q, xv);
        [[unroll]] for (uint m = 0u; m < MT; ++m) {
          p0[m] = fma(xv[m], a[q], p0[m]);
          p1[m] = fma(xv[m], b[q], p1[m]);
        }
      }
    }
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint blocks = (p.N + RB - 1u) / RB;
  const uint slices = (p.KC + p.KS - 1u) / p.KS;
  const uint rb = wg % blocks, js = wg / blocks;
  if (js >= slices) return;  // uniform per workgroup
  const uint c0 = js * p.KS, c1 = min(p.KC, c0 + p.KS);

  // The slice of x, pre-scaled per nibble position (exact: powers of two).
  const uint kbase = c0 * 32u, klen = (c1 - c0) * 32u;
  for (uint e = t; e < klen * MT; e += NT) {
    const uint kl = e / MT, m = e % MT, k = kbase + kl;
    xs[e] = (m < p.M && k < p.K) ? x[m * p.K + k] * UNPOS[k & 3u] : 0.0;
  }
  barrier();

  const uint sg = t / 32u, lane = t % 32u;
  const uint n0 = rb * RB + sg * 64u + lane, n1 = n0 + 32u;
  // Rows past N compute from row N - 1 and are not written.
  const uint r0 = min(n0, p.N - 1u), r1 = min(n1, p.N - 1u);
  float acc0[MT], acc1[MT];
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    acc0[m] = 0.0;
    acc1[m] = 0.0;
  }
  uvec4 wa = w4[r0 * p.KC + c0], wb = w4[r1 * p.KC + c0];
  float sa = s[r0 * p.G + (c0 >> p.cshift)], sb = s[r1 * p.G + (c0 >> p.cshift)];
  for (uint c = c0; c < c1; ++c) {
    // The next chunk's loads before this chunk's arithmetic.
    const uint cn = min(c + 1u, c1 - 1u);
    const uvec4 wan = w4[r0 * p.KC + cn], wbn = w4[r1 * p.KC + cn];
    const float san = s[r0 * p.G + (cn >> p.cshift)], sbn = s[r1 * p.G + (cn >> p.cshift)];
    float p0[MT], p1[MT];
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      p0[m] = 0.0;
      p1[m] = 0.0;
    }
    chunk_sums(wa, wb, (c - c0) * 32u, p0, p1);
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      acc0[m] = fma(sa, p0[m], acc0[m]);
      acc1[m] = fma(sb, p1[m], acc1[m]);
    }
    wa = wan;
    wb = wbn;
    sa = san;
    sb = sbn;
  }

  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    if (m >= p.M) break;
    if (slices == 1u) {
      if (n0 < p.N) outp[m * p.N + n0] = acc0[m] + (p.has_bias != 0u ? bias[n0] : 0.0);
      if (n1 < p.N) outp[m * p.N + n1] = acc1[m] + (p.has_bias != 0u ? bias[n1] : 0.0);
    } else {
      const uint base = (js * p.M + m) * p.N;
      if (n0 < p.N) part[base + n0] = acc0[m];
      if (n1 < p.N) part[base + n1] = acc1[m];
    }
  }
}
