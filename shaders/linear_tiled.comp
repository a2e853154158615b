#version 450
// aten.linear for many activation rows: out[m][n] = sum_k x[m][k] * w[n][k] (+ bias[n]),
// x [M, K], w [N, K], fp32 accumulation. A workgroup of 256 computes a 64 x 64 output tile,
// each invocation 4 x 4 outputs (rows ty + 16 i, columns tx + 16 j: the shared-memory reads
// of a subgroup are broadcasts or consecutive words, and the stores consecutive columns),
// from 16-k slices of x and w staged in shared memory (each loaded with consecutive
// invocations on consecutive k; rows padded to 65 words so that the transposing stores
// spread over the banks). Outside M, N or K the tiles hold zeros. WQ8 = 1
// (`linear_q8_tiled_*`): int8 weights with a scale and zero point per row (linear_q8.glsl).
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

#define TM 64u
#define TN 64u
#define TK 16u

layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint K;
  uint has_bias;
} p;

#ifndef WQ8
#define WQ8 0
#endif

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer X { DTYPE x_[]; };
#if WQ8
#include "linear_q8.glsl"
#else
layout(set = 0, binding = 2) readonly buffer W { DTYPE w_[]; };
#endif
layout(set = 0, binding = 3) readonly buffer Bias { DTYPE bias_[]; };


shared float xs[TK][TM + 1u];
shared float ws[TK][TN + 1u];

void main() {
  const uint t = gl_LocalInvocationID.x;  // local size 256
  const uint tx = t % 16u, ty = t / 16u;
  const uint n0 = gl_WorkGroupID.x * TN, m0 = gl_WorkGroupID.y * TM;
  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0u; k0 < p.K; k0 += TK) {
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
      const uint e = t + 256u * u, row = e / TK, kk = e % TK, k = k0 + kk;
      const uint m = m0 + row, n = n0 + row;
      xs[kk][row] = (m < p.M && k < p.K) ? float(x_[m * p.K + k]) : 0.0;
#if WQ8
      ws[kk][row] = (n < p.N && k < p.K) ? w_one(n, k, wzp[n]) : 0.0;
#else
      ws[kk][row] = (n < p.N && k < p.K) ? float(w_[n * p.K + k]) : 0.0;
#endif
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < TK; ++kk) {
      float a[4], b[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = xs[kk][ty + 16u * i];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = ws[kk][tx + 16u * j];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    barrier();
  }
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    const uint m = m0 + ty + 16u * i;
    if (m >= p.M) continue;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      const uint n = n0 + tx + 16u * j;
      if (n >= p.N) continue;
      float v = acc[i][j];
#if WQ8
      v *= wscale[n];
#endif
      if (p.has_bias != 0u) v += float(bias_[n]);
      out_[m * p.N + n] = DTYPE(v);
    }
  }
}
