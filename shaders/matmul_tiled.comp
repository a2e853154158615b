#version 450
// Strided batched matmul with optional broadcast bias, `matmul.comp`'s contract (same push
// constants) on 64 x 64 output tiles:
//   out[b][m][n] = alpha * sum_k A[b][m][k] * B[b][k][n] + beta * bias[b][m][n]
// A workgroup of 256 computes one tile of one batch (z), each invocation 4 x 4 outputs (rows
// ty + 16 i, columns tx + 16 j), from 16-k slices of A and B staged in shared memory, loaded
// with consecutive invocations along A's k and B's n (the unit strides of the row-major
// operands the ops pass; other strides are right, only slower); rows padded to 65 words
// spread the transposing stores over the banks.
// Outside M, N or K the tiles hold zeros. fp32 accumulation.
//
// CLAMP = 1 (`matmul_tiled_clamp_*`): the result is then clamped to [out_min, out_max]
// (pointwise convolutions run here as W [C_out, C_in] @ x [C_in, H * W] per batch; conv.rs).
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

#ifndef CLAMP
#define CLAMP 0
#endif
#define TM 64u
#define TN 64u
#define TK 16u

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer MatA { DTYPE a_[]; };
layout(set = 0, binding = 2) readonly buffer MatB { DTYPE b_[]; };
layout(set = 0, binding = 3) readonly buffer Bias { DTYPE bias_[]; };

layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint K;
  uint has_bias;
  uint a_sb, a_sm, a_sk;
  uint b_sb, b_sk, b_sn;
  uint c_sb, c_sm, c_sn;
  float alpha;
  float beta;
#if CLAMP
  float out_min;
  float out_max;
#else
  uint pad_;
#endif
} p;

shared float as_[TK][TM + 1u];
shared float bs_[TK][TN + 1u];

void main() {
  const uint t = gl_LocalInvocationID.x;  // local size 256
  const uint tx = t % 16u, ty = t / 16u;
  const uint n0 = gl_WorkGroupID.x * TN, m0 = gl_WorkGroupID.y * TM, bt = gl_WorkGroupID.z;
  const uint abase = bt * p.a_sb, bbase = bt * p.b_sb;
  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;
  }
  for (uint k0 = 0u; k0 < p.K; k0 += TK) {
    [[unroll]] for (uint u = 0u; u < 4u; ++u) {
      const uint e = t + 256u * u;
      // A: 64 m x 16 k.
      {
        const uint row = e / TK, kk = e % TK;
        const uint m = m0 + row, k = k0 + kk;
        as_[kk][row] = (m < p.M && k < p.K) ? float(a_[abase + m * p.a_sm + k * p.a_sk]) : 0.0;
      }
      // B: 16 k x 64 n.
      {
        const uint col = e % TN, kk = e / TN;
        const uint n = n0 + col, k = k0 + kk;
        bs_[kk][col] = (n < p.N && k < p.K) ? float(b_[bbase + k * p.b_sk + n * p.b_sn]) : 0.0;
      }
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < TK; ++kk) {
      float a[4], b[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) a[i] = as_[kk][ty + 16u * i];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) b[j] = bs_[kk][tx + 16u * j];
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
      float r = p.alpha * acc[i][j];
      if (p.has_bias != 0u) r += p.beta * float(bias_[bt * p.c_sb + m * p.c_sm + n * p.c_sn]);
#if CLAMP
      r = min(max(r, p.out_min), p.out_max);
#endif
      out_[(bt * p.M + m) * p.N + n] = DTYPE(r);
    }
  }
}
