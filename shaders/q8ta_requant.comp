#version 450
// Requantizing int8 data movement / activation: et_vk.q8ta_relu (out = quantize(relu(
// dequantize(x)))) and et_vk.q8ta_pixel_shuffle (out = quantize(pixel_shuffle(
// dequantize(x), r))), one invocation per output word. Pixel shuffle: out [.., C, H r, W r]
// element (c, h, w) = x [.., C r^2, H, W] element (c r^2 + (h % r) r + w % r, h / r, w / r);
// r = 0 means the identity map (relu).
#include "common.glsl"
#include "q8ta_common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
layout(set = 0, binding = 1) readonly buffer In { uint x_w[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint C;      // output channels
  uint OH;     // output height
  uint OW;     // output width
  uint r;      // upscale factor, 0: identity
  uint flags;  // bit 0: relu
  float in_scale;
  int in_zp;
  float out_inv_scale;
  int out_zp;
  uint pad0_;
  uint pad1_;
} p;

uint source(uint i) {
  if (p.r == 0u) {
    return i;
  }
  const uint w = i % p.OW;
  uint t = i / p.OW;
  const uint h = t % p.OH;
  t /= p.OH;
  const uint c = t % p.C;
  const uint n = t / p.C;
  const uint H = p.OH / p.r;
  const uint W = p.OW / p.r;
  const uint ci = (c * p.r + h % p.r) * p.r + w % p.r;
  return ((n * p.C * p.r * p.r + ci) * H + h / p.r) * W + w / p.r;
}

void main() {
  const uint w = linear_id();
  if (w * 4u >= p.numel) {
    return;
  }
  uint word = 0u;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = w * 4u + e;
    if (i >= p.numel) {
      break;
    }
    const uint s = source(i);
    float y = q8_dequantize(q8_s8(x_w[s >> 2], s & 3u), p.in_zp, p.in_scale);
    if ((p.flags & 1u) != 0u) {
      y = max(y, 0.0);
    }
    word |= q8_pack(q8_quantize(y, p.out_inv_scale, p.out_zp, -128, 127), e);
  }
  out_w[w] = word;
}
