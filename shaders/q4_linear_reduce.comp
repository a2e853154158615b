#version 450
// Second dispatch of the split 4-bit linear kernels: sums S slices of partial sums,
//   out[m][c] = sum_{j < S} partial[j][m][c] (+ bias[c] when has_bias)
// with partial [S][M][CS] (CS = the row stride >= C). Two producers:
// - the split-N backward at M <= 8 (q4_linear_bwd_split.comp): CS = C rounded up to whole
//   8-code words, no bias;
// - the split-K tiled kernels at 8 < M with few tiles (q4_linear_tiled.comp, SPLIT = 1):
//   CS = C; the forward's bias is added here, after the sum, as the unsplit kernel adds it.
// One invocation per output element; consecutive invocations read consecutive addresses of
// each slice. The sum runs over j in ascending order (batches of 16 loads, added one by one),
// so results are the same on every run and do not depend on the launch shape. M * C is small
// (8192 invocations at M = 1, C = 8192), so the GPU is far from full and each invocation's
// loads in flight, not bandwidth, set the time: hence the batches.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
layout(set = 0, binding = 1) readonly buffer Part { float part[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };

layout(push_constant) uniform Params {
  uint total;     // M * C outputs
  uint C;         // output row length
  uint CS;        // partial row stride (>= C)
  uint S;         // slices
  uint slice;     // M * CS: floats per slice
  uint has_bias;  // add bias[c] (C values) after the sum
} p;

void main() {
  const uint i = linear_id();
  if (i >= p.total) {
    return;
  }
  const uint c = i % p.C;
  const uint base = (i / p.C) * p.CS + c;
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
  if (p.has_bias != 0u) {
    t += bias[c];
  }
  outp[i] = t;
}
