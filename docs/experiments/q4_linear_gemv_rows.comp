#version 450
// Experiment (session 16): 4-bit linear for small M (M <= MT) with a lane per weight row,
// fp32:
//   out[m][n] = sum_k x[m][k] * (code(n,k) - 8) * s[n][k / gs]  (+ bias[n])
// Bindings and push constants of q4_linear_gemv.comp, so that it can replace
// q4_linear_gemv_m8 by ETVK_SPIRV_OVERRIDE_DIR (with ETVK_Q4_GEMV=lanes) for timing; it walks
// its own work items over whatever grid it is given (local size 256).
//
// Why: the forward at M = 2..8 spends per code ~1 decode and M FMAs; the lane-group and
// persistent GEMVs reduce across lanes per row (shared memory or shuffles, ~M values per row
// and lane), the int8 MMA kernel measured ~9x its tensor-core rate (journal, session 9).
// Here a lane owns a row: its M sums need no cross-lane reduction until the end; the x
// values are the same for every lane of a subgroup (uniform loads, L1 hits).
//
// Item: 32 rows (one per lane of a subgroup) x all K; the 8 subgroups of the workgroup take
// 8 consecutive ranges of K's chunks and meet in shared memory at the end. Scale groups of
// whole chunks only (gs a power-of-two multiple of 32, or one group per row).
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

#ifndef MT
#define MT 8
#endif
#define SG 8  // subgroups of 32 per workgroup

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 2) readonly buffer W4 { uvec4 w4[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
layout(set = 0, binding = 4) readonly buffer B { float bias[]; };

layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint K;
  uint KC;
  uint G;
  uint gs;
  uint has_bias;
  uint gshift;
} p;

shared float red[SG * MT * 32];

const float MAGIC = 8388608.0;  // 2^23
const uint MAGIC_BITS = 0x4B000000u;
const vec4 UNMAGIC = vec4(MAGIC + 8.0, MAGIC + 128.0, MAGIC + 2048.0, MAGIC + 32768.0);
const vec4 UNPOS = vec4(1.0, 0.0625, 0.00390625, 0.000244140625);

// (code - 8) * 16^q of nibbles q = 0..3 of a 16-bit half already ORed with 2^23's bits.
vec4 codes4_pre(uint hm) {
  return uintBitsToFloat(uvec4(hm) & uvec4(0x4B00000Fu, 0x4B0000F0u, 0x4B000F00u, 0x4B00F000u)) - UNMAGIC;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint lane = t & 31u, sg = t >> 5;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
  const uint items = (p.N + 31u) / 32u;
  const uint per = (p.KC + SG - 1u) / SG;
  const uint c0 = min(sg * per, p.KC), c1 = min(c0 + per, p.KC);
  const uint kq = p.K >> 2;  // x rows are K floats; vec4 loads need K % 4 == 0 (experiment)
  for (uint item = wg; item < items; item += nwg) {
    const uint n = min(item * 32u + lane, p.N - 1u);
    float tot[MT];
    [[unroll]] for (uint m = 0u; m < MT; ++m) tot[m] = 0.0;
    uvec4 wv = w4[n * p.KC + c0];
    float sv = s[n * p.G + (p.G == 1u ? 0u : c0 >> (p.gshift - 2u))];
    for (uint c = c0; c < c1; ++c) {
      const uint cn = min(c + 1u, c1 - 1u);
      const uvec4 wn = w4[n * p.KC + cn];
      const float sn = s[n * p.G + (p.G == 1u ? 0u : cn >> (p.gshift - 2u))];
      // acc[m][q]: the chunk's sum for row m over nibble position q (scaled by 16^q).
      vec4 acc[MT];
      [[unroll]] for (uint m = 0u; m < MT; ++m) acc[m] = vec4(0.0);
      [[unroll]] for (uint j = 0u; j < 4u; ++j) {
        const vec4 lo = codes4_pre(wv[j] | MAGIC_BITS), hi = codes4_pre((wv[j] >> 16) | MAGIC_BITS);
        // word j holds k = 8j .. 8j + 7: even k in nibble 0, 2, 4, 6 (low nibbles of bytes).
        // nibble i of the word is k = 8j + i (q4 layout: code k at bits 4 * (k % 8)).
        [[unroll]] for (uint m = 0u; m < MT; ++m) {
          if (m < p.M) {
            const uint xi = m * kq + c * 8u + 2u * j;
            const vec4 xa = x4[xi], xb = x4[xi + 1u];
            acc[m] = fma(lo, xa, acc[m]);
            acc[m] = fma(hi, xb, acc[m]);
          }
        }
      }
      [[unroll]] for (uint m = 0u; m < MT; ++m) tot[m] = fma(dot(acc[m], UNPOS), sv, tot[m]);
      wv = wn;
      sv = sn;
    }
    [[unroll]] for (uint m = 0u; m < MT; ++m) red[(sg * MT + m) * 32u + lane] = tot[m];
    barrier();
    if (t < MT * 32u) {
      const uint m = t >> 5, r = t & 31u, nn = item * 32u + r;
      float v = 0.0;
      [[unroll]] for (uint g = 0u; g < SG; ++g) v += red[(g * MT + m) * 32u + r];
      if (m < p.M && nn < p.N) {
        if (p.has_bias != 0u) v += bias[nn];
        outp[m * p.N + nn] = v;
      }
    }
    barrier();
  }
}
