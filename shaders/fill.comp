#version 450
// out[i] = value for i < numel (aten.full / full_like / ones / zeros / scalar_tensor). The
// value arrives as 32 raw bits so one push block serves every storage type: an f32 for
// float outputs, an i32 for int32, the byte (0 or 1) for bool.
//
// BYTES = 1: one-byte elements, a word (four elements) per invocation; the last word's
// spare bytes are written as zeros (inside the buffer, allocated in whole 16-byte units).
#include "common.glsl"

#ifndef BYTES
#define BYTES 0
#endif
#ifndef IS_INT
#define IS_INT 0
#endif

#if BYTES
layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
#else
layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
#endif

layout(push_constant) uniform Params {
  uint numel;
  uint bits; // IS_INT: the int32 value; BYTES: the byte; otherwise the f32 value's bits
} p;

void main() {
#if BYTES
  const uint w = linear_id();
  if (w * 4u >= p.numel) {
    return;
  }
  const uint left = p.numel - w * 4u;
  const uint mask = left >= 4u ? 0xffffffffu : (1u << (8u * left)) - 1u;
  out_w[w] = ((p.bits & 0xffu) * 0x01010101u) & mask;
#else
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
#if IS_INT
  out_[i] = DTYPE(int(p.bits));
#else
  out_[i] = DTYPE(uintBitsToFloat(p.bits));
#endif
#endif
}
