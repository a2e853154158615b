#version 450
// Strided batched matmul with optional broadcast bias:
//   out[b][m][n] = alpha * sum_k A[b][m][k] * B[b][k][n] + beta * bias[b][m][n]
// Every operand is addressed through element strides, so one shader serves linear
// (B = W^T: stride_k = 1, stride_n = K), mm, addmm and bmm; a stride of 0 broadcasts.
// One invocation computes one output element; x = n, y = m, z = batch.
#include "common.glsl"

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
  uint pad_;
} p;

void main() {
  uint n = gl_GlobalInvocationID.x;
  uint m = gl_GlobalInvocationID.y;
  uint b = gl_GlobalInvocationID.z;
  if (n >= p.N || m >= p.M) {
    return;
  }
  uint ia = b * p.a_sb + m * p.a_sm;
  uint ib = b * p.b_sb + n * p.b_sn;
  float acc = 0.0;
  for (uint k = 0; k < p.K; ++k) {
    acc += float(a_[ia + k * p.a_sk]) * float(b_[ib + k * p.b_sk]);
  }
  float r = p.alpha * acc;
  if (p.has_bias != 0) {
    r += p.beta * float(bias_[b * p.c_sb + m * p.c_sm + n * p.c_sn]);
  }
  out_[(b * p.M + m) * p.N + n] = DTYPE(r);
}
