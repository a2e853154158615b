#version 450
// SiLU: out = x * sigmoid(x) = x / (1 + exp(-x)), computed in float for every storage type.
// GATE = 1 (`silu_mul`, ops/fusion.rs): out = silu(x) * u, a gated MLP's silu(gate) * up
// in one dispatch, rounded to the storage type once (the unfused ops round after each).
#include "common.glsl"
#ifndef GATE
#define GATE 0
#endif

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };
#if GATE
layout(set = 0, binding = 2) readonly buffer Up { DTYPE up_[]; };
#endif

layout(push_constant) uniform Params {
  uint numel;
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  float x = float(in_[i]);
  // For very negative x, exp(-x) overflows to +inf and x / inf gives -0, the limit; like
  // PyTorch's x / (1 + exp(-x)), x = -inf gives NaN.
  float r = x / (1.0 + exp(-x));
#if GATE
  r *= float(up_[i]);
#endif
  out_[i] = DTYPE(r);
}
