#version 450
// aten.linear for few activation rows (M <= MT): out[m][n] = sum_k x[m][k] * w[n][k] (+ bias[n])
// with x [M, K], w [N, K] (k contiguous in both), accumulated in fp32.
//
// The generic `matmul` shader gives each output its own invocation walking its weight row:
// neighbouring invocations then read addresses K apart and every load is its own memory
// transaction. Here ROWS groups of 32 lanes each take one weight row, the lanes striding k
// by one, so each load instruction of a group reads 32 consecutive elements; each lane keeps
// MT partial sums (the weight element is read once for every activation row), and a group's
// 32 partials meet in shared memory in a fixed order (the same result every run). Where K is
// a multiple of 4 the lanes load four consecutive elements at a time (w and each x row as
// vec4s: one x load per four weights and row instead of four), two vec4s of w per lane in
// flight per round; otherwise scalars, four per round.
//
// WQ8 = 1 (`linear_q8_gemv_m*`): int8 weights with a scale and zero point per row
// (linear_q8.glsl): w = (q - zp[n]) * s[n], the (q - zp) in the sums (exact in fp32) and s
// applied to the row's total.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

#ifndef MT
#define MT 1
#endif
#ifndef VEC4
#define VEC4 vec4
#endif
#ifndef WQ8
#define WQ8 0
#endif
#define LANES 32u
// Weight rows per workgroup: the local size is LANES * ROWS (specialization constant 0).
#define ROWS (gl_WorkGroupSize.x / LANES)
#define MAX_ROWS 8u

layout(push_constant) uniform Params {
  uint M;  // activation rows (<= MT)
  uint N;
  uint K;
  uint has_bias;
} p;

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer X { DTYPE x_[]; };
layout(set = 0, binding = 1) readonly buffer X4 { VEC4 x4_[]; };
#if WQ8
#include "linear_q8.glsl"
#else
layout(set = 0, binding = 2) readonly buffer W { DTYPE w_[]; };
layout(set = 0, binding = 2) readonly buffer W4 { VEC4 w4_[]; };
// Weights k = 4j .. 4j + 3 of row `row` (K % 4 == 0), and weight k.
vec4 w_vec(uint row, uint j, float z) { return vec4(w4_[row * (p.K >> 2) + j]); }
float w_one(uint row, uint k, float z) { return float(w_[row * p.K + k]); }
#endif
layout(set = 0, binding = 3) readonly buffer Bias { DTYPE bias_[]; };


shared float red[MT * MAX_ROWS * LANES];

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES, r = gl_LocalInvocationID.x / LANES;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint n = wg * ROWS + r;
  // Groups past N walk row 0 and write nothing: every invocation reaches the barriers.
  const uint row = n < p.N ? n : 0u;
#if WQ8
  const float z = wzp[row];
#else
  const float z = 0.0;
#endif
  float acc[MT];
  [[unroll]] for (uint m = 0u; m < MT; ++m) acc[m] = 0.0;
  uint k = lane;
#if WQ8
  // Rows of whole uvec4s (K % 16 == 0): 16 codes per lane and load, the int8 row's 512
  // bytes per subgroup and load instruction (one word per lane read 0.49 of the ceiling).
  if ((p.K & 15u) == 0u) {
    const uint k4 = p.K >> 2, k16 = p.K >> 4;
    for (uint j = lane; j < k16; j += LANES) {
      const ivec4 v = ivec4(wq4[row * k16 + j]);
      vec4 wv[4];
      [[unroll]] for (uint c = 0u; c < 4u; ++c) {
        wv[c] = vec4(bitfieldExtract(v[c], 0, 8), bitfieldExtract(v[c], 8, 8),
                     bitfieldExtract(v[c], 16, 8), bitfieldExtract(v[c], 24, 8)) - z;
      }
      [[unroll]] for (uint m = 0u; m < MT; ++m) {
        if (m < p.M) {
          const uint xb = m * k4 + 4u * j;
          [[unroll]] for (uint c = 0u; c < 4u; ++c) acc[m] += dot(vec4(x4_[xb + c]), wv[c]);
        }
      }
    }
    k = p.K;  // nothing left for the loops below
  }
#endif
  if (k < p.K && (p.K & 3u) == 0u) {
    const uint k4 = p.K >> 2;
    uint j = lane;
    for (; j + LANES < k4; j += 2u * LANES) {
      const vec4 w0 = w_vec(row, j, z), w1 = w_vec(row, j + LANES, z);
      [[unroll]] for (uint m = 0u; m < MT; ++m) {
        if (m < p.M) {
          const uint xb = m * k4 + j;
          acc[m] += dot(vec4(x4_[xb]), w0) + dot(vec4(x4_[xb + LANES]), w1);
        }
      }
    }
    for (; j < k4; j += LANES) {
      const vec4 w0 = w_vec(row, j, z);
      [[unroll]] for (uint m = 0u; m < MT; ++m) {
        if (m < p.M) acc[m] += dot(vec4(x4_[m * k4 + j]), w0);
      }
    }
    k = p.K;  // the scalar loops below have nothing left
  }
  for (; k + 3u * LANES < p.K; k += 4u * LANES) {
    float w[4];
    [[unroll]] for (uint u = 0u; u < 4u; ++u) w[u] = w_one(row, k + u * LANES, z);
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      if (m < p.M) {
        const uint xb = m * p.K + k;
        [[unroll]] for (uint u = 0u; u < 4u; ++u) acc[m] += float(x_[xb + u * LANES]) * w[u];
      }
    }
  }
  for (; k < p.K; k += LANES) {
    const float w = w_one(row, k, z);
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      if (m < p.M) acc[m] += float(x_[m * p.K + k]) * w;
    }
  }
  [[unroll]] for (uint m = 0u; m < MT; ++m) red[(m * MAX_ROWS + r) * LANES + lane] = acc[m];
  barrier();
  for (uint s = LANES / 2u; s > 0u; s >>= 1) {
    if (lane < s) {
      [[unroll]] for (uint m = 0u; m < MT; ++m) {
        const uint i = (m * MAX_ROWS + r) * LANES + lane;
        red[i] += red[i + s];
      }
    }
    barrier();
  }
  if (lane < p.M && lane < MT && n < p.N) {
    float v = red[(lane * MAX_ROWS + r) * LANES];
#if WQ8
    v *= wscale[n];
#endif
    if (p.has_bias != 0u) v += float(bias_[n]);
    out_[lane * p.N + n] = DTYPE(v);
  }
}
