#version 450
// 4-bit weight-only linear for small M (M <= MT), fp32:
//   out[m][n] = sum_k x[m][k] * (code(n,k) - 8) * s[n][k / gs]  (+ bias[n])
// over etvk's packed Q4 layout (rows n contiguous along k, 8 codes per u32 word, Kpad = KC * 32;
// see q4_pack_weights.comp) and fp32 scales s[n][g] (G groups per row; g >= G has scale 0).
//
// A group of LANES invocations owns R = max(1, 4 / MT) consecutive output rows (ROWS groups per
// workgroup, so ROWS * R rows). Lane l takes words l, l + LANES, ... of each of its rows: a
// subgroup's loads cover LANES consecutive words, and the 8 activations a lane needs (two
// vec4) sit 32 bytes from its neighbour's, so both streams coalesce; each activation load
// serves R rows (without that, M = 1 re-reads x from L1 once per row and L1 bandwidth, not
// DRAM, bounds the kernel). U words per row and lane are loaded before any is used. No shared
// memory or barriers in the loop, few registers: the whole grid is resident at once.
// The inner loop is instruction-bound, so every nibble costs ~4 operations: a code becomes a
// float without an int-to-float conversion (quarter rate on NVIDIA) by OR-ing it into the
// mantissa of 2^23 and subtracting 2^23 + 8, which is exact; the group of a word comes from a
// shift when group_size / 8 is a power of two (`gshift`), a division otherwise.
// Measured history on an H200, 8192x8192 (docs/performance.md): lanes on 32-k chunks with
// scalar x loads: 274 us; x staged through shared memory: 44 us; one word per lane with
// int-to-float conversions: 43 us; uvec4 per lane, vec4 x loads: 77 us.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "q4_scales.glsl"

#ifndef MT
#define MT 1
#endif
#define U 2
#define R (MT >= 4 ? 1 : 4 / MT)

// Spec constants 0..2 are the local size (ROWS * LANES, 1, 1); extras start at 3.
layout(constant_id = 3) const uint LANES = 32u;  // >= MT * R, ROWS * LANES <= 256
layout(constant_id = 4) const uint ROWS = 8u;

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 2) readonly buffer W { uint w[]; };
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
  uint gshift;    // log2(gs / 8), or 0xFFFFFFFF when gs / 8 is not a power of two
} p;

shared float partial[MT * R * 256];

const float MAGIC = 8388608.0;  // 2^23
const uint MAGIC_BITS = 0x4B000000u;

// Codes of nibbles 0..3 of `h` (a 16-bit half of a word) minus 8, exactly.
vec4 codes4(uint h) {
  return uintBitsToFloat(uvec4(h & 15u, (h >> 4) & 15u, (h >> 8) & 15u, (h >> 12) & 15u) | MAGIC_BITS)
      - (MAGIC + 8.0);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint nthreads = ROWS * LANES;
  const uint lane = tid % LANES;
  const uint r = tid / LANES;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint n0 = (wg * ROWS + r) * R;
  const uint nw = (p.K + 7u) / 8u;            // words that meet x's columns
  const uint nfull = p.K / 8u;                // words whose 8 columns are all inside K
  const bool vec_x = (p.K & 3u) == 0u;        // rows 16-byte aligned: vec4 loads
  const bool pow2_groups = p.gshift != 0xFFFFFFFFu;

  float acc[MT][R];
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    [[unroll]] for (uint i = 0u; i < R; ++i) acc[m][i] = 0.0;
  }

  if (n0 < p.N) {
    for (uint w0 = lane; w0 < nw; w0 += U * LANES) {
      uint wv[U][R];
      [[unroll]] for (uint u = 0u; u < U; ++u) {
        const uint wi = w0 + u * LANES;
        [[unroll]] for (uint i = 0u; i < R; ++i) {
          wv[u][i] = (wi < nw && n0 + i < p.N) ? w[(n0 + i) * p.KC * 4u + wi] : 0x88888888u;
        }
      }
      [[unroll]] for (uint u = 0u; u < U; ++u) {
        // No early exit here: a `break` in this loop stops compilers from unrolling it and
        // sends wv[][] to local memory. Words past the row read as code 8 (q = 0) and their
        // columns, past K, load as zeros.
        const uint wi = w0 + u * LANES;
        const uint k = wi * 8u;
        vec4 xlo[MT], xhi[MT];
        [[unroll]] for (uint m = 0u; m < MT; ++m) {
          if (vec_x && wi < nfull) {
            const uint i4 = (min(m, p.M - 1u) * p.K + k) >> 2;
            xlo[m] = x4[i4];
            xhi[m] = x4[i4 + 1u];
          } else {
            const uint b = min(m, p.M - 1u) * p.K + k;
            xlo[m] = vec4(k < p.K ? x[b] : 0.0, k + 1u < p.K ? x[b + 1u] : 0.0,
                          k + 2u < p.K ? x[b + 2u] : 0.0, k + 3u < p.K ? x[b + 3u] : 0.0);
            xhi[m] = vec4(k + 4u < p.K ? x[b + 4u] : 0.0, k + 5u < p.K ? x[b + 5u] : 0.0,
                          k + 6u < p.K ? x[b + 6u] : 0.0, k + 7u < p.K ? x[b + 7u] : 0.0);
          }
        }
        [[unroll]] for (uint i = 0u; i < R; ++i) {
          const uint n = n0 + i;
          vec4 qlo = codes4(wv[u][i] & 0xFFFFu);
          vec4 qhi = codes4(wv[u][i] >> 16);
          const uint sbase = Q4S(min(n, p.N - 1u), 0u, p.G);  // + 4 g
          float sc;
          if (pow2_groups) {
            const uint g = wi >> p.gshift;
            sc = g < p.G ? s[sbase + 4u * g] : 0.0;
          } else {
            // gs % 4 == 0: each half-word lies in one group.
            const uint g0 = k / p.gs, g1 = (k + 4u) / p.gs;
            qlo *= g0 < p.G ? s[sbase + 4u * g0] : 0.0;
            qhi *= g1 < p.G ? s[sbase + 4u * g1] : 0.0;
            sc = 1.0;
          }
          [[unroll]] for (uint m = 0u; m < MT; ++m) {
            acc[m][i] = fma(dot(xlo[m], qlo) + dot(xhi[m], qhi), sc, acc[m][i]);
          }
        }
      }
    }
  }

  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    [[unroll]] for (uint i = 0u; i < R; ++i) {
      partial[(m * R + i) * nthreads + tid] = acc[m][i];
    }
  }
  barrier();
  // Lane j of each group sums (activation row m, output row i) = (j / R, j % R).
  if (lane < MT * R) {
    const uint m = lane / R, i = lane % R, n = n0 + i;
    if (m < p.M && n < p.N) {
      const uint base = (m * R + i) * nthreads + r * LANES;
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
}
