#version 450
// out[i] = value for i < numel (aten.full / full_like). The value arrives as 32 raw bits so
// one push block serves every storage type: an f32 for float outputs, an i32 for int32.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint bits; // IS_INT: the int32 value; otherwise the f32 value's bits
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
#if IS_INT
  out_[i] = DTYPE(int(p.bits));
#else
  out_[i] = DTYPE(uintBitsToFloat(p.bits));
#endif
}
