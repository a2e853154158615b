#version 450
// Elementwise unary op: out[i] = OP(in[i]), computed in float whatever the storage type.
// RELU: max(x, 0). SIGMOID: 1 / (1 + exp(-x)).
#include "common.glsl"

// Values of the OP define (the manifest passes -DOP=RELU etc.).
#define RELU 1
#define SIGMOID 2

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };

layout(push_constant) uniform Params {
  uint numel;
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  float x = float(in_[i]);
#if OP == RELU
  float r = max(x, 0.0);
#elif OP == SIGMOID
  // exp(-x) overflows to +inf for very negative x, giving exactly 0: the right limit.
  float r = 1.0 / (1.0 + exp(-x));
#else
#error "unary.comp: OP must be RELU or SIGMOID"
#endif
  out_[i] = DTYPE(r);
}
