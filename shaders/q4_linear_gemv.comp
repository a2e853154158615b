#version 450
// 4-bit weight-only linear for small M (M <= MT), fp32:
//   out[m][n] = sum_k x[m][k] * (code(n,k) - 8) * s[n][k / gs]  (+ bias[n])
// over etvk's packed Q4 layout (rows n contiguous along k, 8 codes per u32, Kpad = KC * 32;
// see q4_pack_weights.comp) and fp32 scales s[n][g] (G groups per row; g >= G has scale 0).
//
// A group of LANES invocations owns one output row n; ROWS rows per workgroup. The
// activations are staged through shared memory a tile of XT columns at a time: every
// workgroup reads each x element from L2 once, coalesced, instead of each lane fetching its
// own 32 consecutive floats (a 128-byte lane stride that defeats coalescing and made the
// first version latency-bound at ~3% of the read ceiling on an H200). The tile is stored
// with one padding float per 32 so that lanes reading 32 consecutive floats each, 32 apart,
// hit different banks. Weights stream as uvec4 (32 k) per lane, consecutive lanes on
// consecutive 16-byte chunks of the row; all of a lane's chunks in a tile are loaded before
// any is used, to keep several loads in flight. Zero-padded columns past K need no guards.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

#ifndef MT
#define MT 1
#endif
// x columns per tile: 4096 / MT floats (16 KiB + skew), within lavapipe's 32 KiB.
#define XT (4096 / MT)
#define CT (XT / 32)
#define XS (XT + XT / 32)

// Spec constants 0..2 are the local size (ROWS * LANES, 1, 1); extras start at 3.
layout(constant_id = 3) const uint LANES = 32u;  // >= MT, <= CT, ROWS * LANES <= 256
layout(constant_id = 4) const uint ROWS = 8u;

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer W { uvec4 w[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
layout(set = 0, binding = 4) readonly buffer B { float bias[]; };

layout(push_constant) uniform Params {
  uint M;         // activation rows (<= MT)
  uint N;         // output features
  uint K;         // activation row length (<= Kpad)
  uint KC;        // uvec4 chunks per weight row (Kpad / 32)
  uint G;         // scale groups per row
  uint gs;        // group size (multiple of 4)
  uint has_bias;
  uint pad_;
} p;

shared float xs[MT * XS];
shared float partial[MT * 256];

float xs_at(uint m, uint k) { return xs[m * XS + k + (k >> 5)]; }

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint nthreads = ROWS * LANES;
  const uint lane = tid % LANES;
  const uint r = tid / LANES;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint n = wg * ROWS + r;
  const bool live = n < p.N;
  const uint wbase = n * p.KC;
  const uint sbase = n * p.G;
  const uint nc = (p.K + 31u) / 32u;  // chunks that meet x's columns
  const bool whole_groups = (p.gs & 31u) == 0u;

  float acc[MT];
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    acc[m] = 0.0;
  }

  for (uint k0 = 0u; k0 < p.K; k0 += XT) {
    // Stage x[m][k0 .. k0 + XT) (zeros past K / past M).
    for (uint e = tid; e < MT * XT; e += nthreads) {
      const uint m = e / XT, kk = e % XT, k = k0 + kk;
      xs[m * XS + kk + (kk >> 5)] = (m < p.M && k < p.K) ? x[m * p.K + k] : 0.0;
    }
    barrier();
    if (live) {
      const uint c0 = k0 / 32u;
      uvec4 wv[CT / 8];  // CT / LANES <= CT / 8 chunks per lane (LANES >= 8)
      const uint per_lane = CT / LANES;
      [[unroll]] for (uint j = 0u; j < CT / 8; ++j) {
        const uint c = c0 + lane + j * LANES;
        wv[j] = (j < per_lane && c < nc) ? w[wbase + c] : uvec4(0x88888888u);
      }
      [[unroll]] for (uint j = 0u; j < CT / 8; ++j) {
        if (j >= per_lane) break;
        const uint c = c0 + lane + j * LANES;
        if (c >= nc) break;
        const uint kl = (lane + j * LANES) * 32u;  // column within the tile
        const uint kg = c * 32u;                  // column within the row
        float part[MT];
        [[unroll]] for (uint m = 0u; m < MT; ++m) part[m] = 0.0;
        [[unroll]] for (uint i = 0u; i < 4u; ++i) {
          const uint word = wv[j][i];
          [[unroll]] for (uint h = 0u; h < 2u; ++h) {
            const uint sh = 16u * h;
            vec4 q = vec4(float((word >> sh) & 15u), float((word >> (sh + 4u)) & 15u),
                          float((word >> (sh + 8u)) & 15u), float((word >> (sh + 12u)) & 15u)) - 8.0;
            if (!whole_groups) {
              const uint g = (kg + 8u * i + 4u * h) / p.gs;
              q *= g < p.G ? s[sbase + g] : 0.0;
            }
            const uint kk = kl + 8u * i + 4u * h;
            [[unroll]] for (uint m = 0u; m < MT; ++m) {
              const vec4 xv = vec4(xs_at(m, kk), xs_at(m, kk + 1u), xs_at(m, kk + 2u), xs_at(m, kk + 3u));
              part[m] += dot(xv, q);
            }
          }
        }
        // A 32-column chunk lies inside one group when gs % 32 == 0: one scale per chunk.
        float sc = 1.0;
        if (whole_groups) {
          const uint g = kg / p.gs;
          sc = g < p.G ? s[sbase + g] : 0.0;
        }
        [[unroll]] for (uint m = 0u; m < MT; ++m) acc[m] += part[m] * sc;
      }
    }
    barrier();
  }

  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    partial[m * nthreads + tid] = acc[m];
  }
  barrier();
  // Lane m of each row sums activation row m's partials (M <= MT <= LANES).
  if (live && lane < p.M) {
    const uint m = lane;
    const uint base = m * nthreads + r * LANES;
    float t = 0.0;
    for (uint l = 0u; l < LANES; ++l) {
      t += partial[base + l];
    }
    if (p.has_bias != 0u) {
      t += bias[n];
    }
    outp[m * p.N + n] = t;
  }
}
