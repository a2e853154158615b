#version 450
// 4-bit weight-only linear for M = 1 and long rows (>= 128 chunks), fp32:
//   out[n] = sum_k x[k] * (code(n,k) - 8) * s[n][k / gs]  (+ bias[n])
// over etvk's packed Q4 layout (rows n contiguous along k, 8 codes per u32 word, a row is KC
// uvec4 chunks of 32 codes; see q4_pack_weights.comp) and fp32 scales s[n][g].
//
// The whole workgroup (NT invocations) splits K: invocation t takes chunks t, t + NT, ... of
// every one of the workgroup's RW rows. For each chunk it loads the chunk's 32 activations
// once and reuses them for all RW rows, and each weight load is one uvec4 per lane (a
// subgroup's load is a contiguous run of one row). UR rows' chunks are loaded before any is
// used. Partial sums meet in shared memory at the end (a two-stage sum, fixed order).
//
// On an H200 the kernel is bound by instruction issue, not by memory (without the activation
// and scale loads it still reaches only ~1.6 TB/s), so the decode is cut to three operations
// per nibble (see below): ~10% faster than decoding each nibble to a float first
// (docs/performance.md, GEMV history v10-v13).
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

#ifndef MT
#define MT 1
#endif
#ifndef RW
#define RW 16
#endif
#define UR 4
#define NT 256  // local size (the runtime launches this kernel with NT x 1 x 1)
#define ROWS_OUT (MT * RW)
#define SEGS (NT / ROWS_OUT)

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };
layout(set = 0, binding = 2) readonly buffer W4 { uvec4 w4[]; };
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

shared float red[ROWS_OUT * NT];
shared float red2[ROWS_OUT * SEGS];

const float MAGIC = 8388608.0;  // 2^23
const uint MAGIC_BITS = 0x4B000000u;

// Codes of nibbles 0..3 of `h` (a 16-bit half of a word) minus 8, exactly, without an
// int-to-float conversion: the nibble ORed into 2^23's mantissa is 2^23 + code.
vec4 codes4(uint h) {
  return uintBitsToFloat(uvec4(h & 15u, (h >> 4) & 15u, (h >> 8) & 15u, (h >> 12) & 15u) | MAGIC_BITS)
      - (MAGIC + 8.0);
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint n0 = wg * RW;
  const bool vec_x = (p.K & 3u) == 0u;
  const uint nfull = p.K / 32u;  // chunks whose 32 columns are all inside K
  // A chunk lies in one group when gs is a multiple of 32; with gs / 32 a power of two its
  // group is a shift of the chunk index.
  // (qcs4w: one group spans the row.)
  const bool chunk_shift = p.G == 1u || (p.gshift != 0xFFFFFFFFu && p.gshift >= 2u);
  const uint cshift = p.G == 1u ? 31u : p.gshift - 2u;

  float acc[MT][RW];
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    [[unroll]] for (uint r = 0u; r < RW; ++r) acc[m][r] = 0.0;
  }

  for (uint c = t; c < p.KC; c += NT) {
    const uint k0 = c * 32u;
    vec4 xv[MT][8];
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      const uint row = min(m, p.M - 1u) * p.K;
      if (vec_x && c < nfull) {
        const uint b4 = (row + k0) >> 2;
        [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[m][i] = x4[b4 + i];
      } else {
        [[unroll]] for (uint i = 0u; i < 8u; ++i) {
          const uint k = k0 + 4u * i;
          xv[m][i] = vec4(k < p.K ? x[row + k] : 0.0, k + 1u < p.K ? x[row + k + 1u] : 0.0,
                          k + 2u < p.K ? x[row + k + 2u] : 0.0, k + 3u < p.K ? x[row + k + 3u] : 0.0);
        }
      }
    }
    // In-place decode (groups aligned to chunks): nibble i of a 16-bit half sits at bits 4i,
    // so the masked half ORed into 2^23's mantissa is 2^23 + code * 16^i exactly; minus 2^23
    // and times x pre-scaled by 16^-i (exact: a power of two) that is x * code: an AND-OR, a
    // subtract and an FMA per nibble, no shifts. The -8 comes once per chunk from the x sum.
    vec4 xs[MT][8];
    float xsum[MT];
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      vec4 t4 = vec4(0.0);
      [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        xs[m][i] = xv[m][i] * vec4(1.0, 0.0625, 0.00390625, 0.000244140625);
        t4 += xv[m][i];
      }
      xsum[m] = (t4.x + t4.y) + (t4.z + t4.w);
    }
    [[unroll]] for (uint r0 = 0u; r0 < RW; r0 += UR) {
      uvec4 wv[UR];
      // Every lane loads (a clamped row) and rows past N are masked afterwards, so no
      // branch sits between the loads.
      [[unroll]] for (uint u = 0u; u < UR; ++u) {
        const uint n = n0 + r0 + u;
        const uvec4 v = w4[min(n, p.N - 1u) * p.KC + c];
        wv[u] = n < p.N ? v : uvec4(0x88888888u);
      }
      [[unroll]] for (uint u = 0u; u < UR; ++u) {
        const uint sbase = min(n0 + r0 + u, p.N - 1u) * p.G;
        if (chunk_shift) {
          const uint g = p.G == 1u ? 0u : c >> cshift;
          const float sv = s[sbase + min(g, p.G - 1u)];
          const float sc = g < p.G ? sv : 0.0;
          vec4 f[8];
          [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            const uint lo = wv[u][j], hi = wv[u][j] >> 16;
            f[2u * j] = uintBitsToFloat((uvec4(lo) & uvec4(0xFu, 0xF0u, 0xF00u, 0xF000u)) | MAGIC_BITS) - MAGIC;
            f[2u * j + 1u] = uintBitsToFloat((uvec4(hi) & uvec4(0xFu, 0xF0u, 0xF00u, 0xF000u)) | MAGIC_BITS) - MAGIC;
          }
          [[unroll]] for (uint m = 0u; m < MT; ++m) {
            float d = -8.0 * xsum[m];
            [[unroll]] for (uint i = 0u; i < 8u; ++i) d += dot(xs[m][i], f[i]);
            acc[m][r0 + u] = fma(d, sc, acc[m][r0 + u]);
          }
        } else {
          // gs % 4 == 0: each half-word (4 codes) lies in one group.
          [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            const uint k = k0 + 8u * j;
            const uint g0 = k / p.gs, g1 = (k + 4u) / p.gs;
            const vec4 qlo = codes4(wv[u][j] & 0xFFFFu) * (g0 < p.G ? s[sbase + g0] : 0.0);
            const vec4 qhi = codes4(wv[u][j] >> 16) * (g1 < p.G ? s[sbase + g1] : 0.0);
            [[unroll]] for (uint m = 0u; m < MT; ++m) {
              acc[m][r0 + u] += dot(xv[m][2u * j], qlo) + dot(xv[m][2u * j + 1u], qhi);
            }
          }
        }
      }
    }
  }

  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    [[unroll]] for (uint r = 0u; r < RW; ++r) red[(m * RW + r) * NT + t] = acc[m][r];
  }
  barrier();
  // Stage 1: invocation t sums ROWS_OUT consecutive partials of output (t / SEGS).
  {
    const uint o = t / SEGS, seg = t % SEGS;
    const uint base = o * NT + seg * ROWS_OUT;
    float v = 0.0;
    for (uint i = 0u; i < ROWS_OUT; ++i) v += red[base + i];
    red2[o * SEGS + seg] = v;
  }
  barrier();
  if (t < ROWS_OUT) {
    const uint m = t / RW, n = n0 + t % RW;
    if (m < p.M && n < p.N) {
      float v = 0.0;
      for (uint i = 0u; i < SEGS; ++i) v += red2[t * SEGS + i];
      if (p.has_bias != 0u) v += bias[n];
      outp[m * p.N + n] = v;
    }
  }
}
