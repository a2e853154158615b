#version 450
// out[i] = start + i * step for i < numel (aten.arange.start_step). start and step arrive
// as 32 raw bits: i32 for int32 outputs (exact integer arithmetic), f32 otherwise
// (computed in float, rounded once to the storage type).
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint start_bits;
  uint step_bits;
  uint pad_;
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
#if IS_INT
  out_[i] = DTYPE(int(p.start_bits) + int(i) * int(p.step_bits));
#else
  // fma keeps one rounding, closer to PyTorch's double-precision start + i * step.
  out_[i] = DTYPE(fma(float(i), uintBitsToFloat(p.step_bits), uintBitsToFloat(p.start_bits)));
#endif
}
