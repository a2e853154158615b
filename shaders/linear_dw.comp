#version 450
// Weight gradient of a linear layer: dW[n][k] = sum_m d_out[m][n] * x[m][k]
// (d_out [M, N] and x [M, K] with leading dims flattened; dW [N, K]).
//
// Tiled: a 16x16 workgroup owns a TN x TK = 64 x 64 block of dW and each invocation a 4 x 4
// sub-block strided by 16 (so neighbouring invocations write neighbouring k). The reduction
// over m walks TM = 16 rows at a time through shared memory: every d_out / x element is
// read from global memory once per block instead of once per output. Accumulation is fp32
// with m ascending. Blocks are numbered linearly and folded into a 2-D grid of workgroups
// (x <= 65535) by the runtime, so N and K are only limited by 32-bit indexing.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { float dw_[]; };
layout(set = 0, binding = 1) readonly buffer DOut { float dy_[]; };
layout(set = 0, binding = 2) readonly buffer X { float x_[]; };

layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint K;
  uint blocks_k; // ceil(K / TK)
  uint blocks;   // ceil(N / TN) * blocks_k
} p;

#define TN 64
#define TK 64
#define TM 16
#define LX 16 // must equal the local size (16, 16, 1)

shared float s_dy[TM][TN];
shared float s_x[TM][TK];

void main() {
  uint block = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (block >= p.blocks) {
    return; // the whole workgroup leaves together: no barrier is skipped by a subset
  }
  uint n0 = (block / p.blocks_k) * TN;
  uint k0 = (block % p.blocks_k) * TK;
  uint lx = gl_LocalInvocationID.x; // k direction
  uint ly = gl_LocalInvocationID.y; // n direction
  uint lid = ly * LX + lx;

  float acc[4][4];
  for (uint i = 0; i < 4; ++i) {
    for (uint j = 0; j < 4; ++j) {
      acc[i][j] = 0.0;
    }
  }

  for (uint m0 = 0; m0 < p.M; m0 += TM) {
    // 256 invocations stage TM x 64 elements of each operand: 4 each, row-contiguous so
    // consecutive invocations read consecutive addresses.
    for (uint e = lid; e < TM * TN; e += LX * LX) {
      uint r = e / TN;
      uint c = e % TN;
      uint m = m0 + r;
      s_dy[r][c] = (m < p.M && n0 + c < p.N) ? dy_[m * p.N + n0 + c] : 0.0;
      s_x[r][c] = (m < p.M && k0 + c < p.K) ? x_[m * p.K + k0 + c] : 0.0;
    }
    barrier();
    for (uint r = 0; r < TM; ++r) {
      float a[4];
      float b[4];
      for (uint i = 0; i < 4; ++i) {
        a[i] = s_dy[r][ly + LX * i];
        b[i] = s_x[r][lx + LX * i];
      }
      for (uint i = 0; i < 4; ++i) {
        for (uint j = 0; j < 4; ++j) {
          acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
      }
    }
    barrier();
  }

  for (uint i = 0; i < 4; ++i) {
    uint n = n0 + ly + LX * i;
    if (n >= p.N) {
      continue;
    }
    for (uint j = 0; j < 4; ++j) {
      uint k = k0 + lx + LX * j;
      if (k < p.K) {
        dw_[n * p.K + k] = acc[i][j];
      }
    }
  }
}
