#version 450
// quantized_decomposed.dequantize_per_tensor (.default: scale and zero point in the push
// constants; .tensor: one-element buffers) and dequantize_per_channel (one scale and zero
// point per index of the channel axis): out = float(q - zero_point) * scale, one invocation
// per element. q is int8 / uint8 (raw words, four to a word) or int32.
#include "common.glsl"
#include "q8ta_common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { uint q_w[]; };
layout(set = 0, binding = 2) readonly buffer Scale { float scale_[]; };
layout(set = 0, binding = 3) readonly buffer Zp { int zp_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint inner;
  uint channels;
  uint flags;  // bit 0: scale from the buffer; bit 1: zero point from the buffer;
               // bits 8-15: q kind (0 int8, 1 uint8, 2 int32)
  float scale;
  int zp;
  uint pad0_;
  uint pad1_;
} p;

void main() {
  const uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  const uint kind = (p.flags >> 8) & 0xFFu;
  int q;
  if (kind == 2u) {
    q = int(q_w[i]);
  } else {
    q = q8_load(q_w[i >> 2], i, kind == 1u);
  }
  const uint c = (i / p.inner) % p.channels;
  const float s = (p.flags & 1u) != 0u ? scale_[c] : p.scale;
  const int zp = (p.flags & 2u) != 0u ? zp_[c] : p.zp;
  out_[i] = DTYPE(q8_dequantize(q, zp, s));
}
