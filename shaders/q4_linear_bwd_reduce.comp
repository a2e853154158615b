#version 450
// Second dispatch of the split-N 4-bit linear backward (q4_linear_bwd_split.comp):
//   dx[m][k] = sum_{j < S} partial[j][m][k]
// with partial [S][M][KS] (KS = the row stride, K rounded up to whole 8-code words). One
// invocation per output element; consecutive invocations read consecutive addresses of each
// slice. The sum runs over j in ascending order (batches of 16 loads, added one by one), so
// results are the same on every run and do not depend on the launch shape. M * K is small
// (8192 invocations at M = 1, K = 8192), so the GPU is far from full and each invocation's
// loads in flight, not bandwidth, set the time: hence the batches.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) readonly buffer Part { float part[]; };

layout(push_constant) uniform Params {
  uint total;  // M * K outputs
  uint K;      // output row length
  uint KS;     // partial row stride (>= K)
  uint S;      // slices
  uint slice;  // M * KS: floats per slice
} p;

void main() {
  const uint i = linear_id();
  if (i >= p.total) {
    return;
  }
  const uint base = (i / p.K) * p.KS + i % p.K;
  float t = 0.0;
  uint j = 0u;
  // Loads first, then the sums in order.
  for (; j + 16u <= p.S; j += 16u) {
    float v[16];
    [[unroll]] for (uint u = 0u; u < 16u; ++u) {
      v[u] = part[base + (j + u) * p.slice];
    }
    [[unroll]] for (uint u = 0u; u < 16u; ++u) {
      t += v[u];
    }
  }
  for (; j < p.S; ++j) {
    t += part[base + j * p.slice];
  }
  outp[i] = t;
}
