#version 450
// The activation side of et_vk.linear_dq8ca_q4gsw: x [R, K] quantized per row with the
// given scale and zero point, as torchao's quantize_affine / dequantize_affine pair does,
//   q = clamp(roundEven(x * (1 / scale[r])) + zp[r], -128, 127),
//   out = float(q - zp[r]) * scale[r],
// in fp32 (act_qparams.glsl; the reciprocal with one residual correction, so it is the
// correctly rounded one in all but rare cases). The 4-bit linear then runs on `out`: (q - zp) * scale is the
// integer kernel's sum_k (q - zp)(code - 8) * s_in * s_w with the product rounded once.
// Scale and zero point come as raw words (see choose_qparams_rows.comp): scale fp32 or fp16,
// zero point int32, fp32 or int8.
#include "common.glsl"
#include "act_qparams.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { float out_[]; };
layout(set = 0, binding = 1) readonly buffer In { float x_[]; };
layout(set = 0, binding = 2) readonly buffer Scale { uint scale_w[]; };
layout(set = 0, binding = 3) readonly buffer Zp { uint zp_w[]; };

layout(push_constant) uniform Params {
  uint total;  // R * K
  uint K;
  uint kinds;  // scale: 0 fp32, 1 fp16 (bits 0-7); zero point: 0 int32, 1 fp32, 2 int8 (8-15)
  uint pad_;
} p;

void main() {
  const uint i = linear_id();
  if (i >= p.total) return;
  const uint r = i / p.K;
  float s;
  if ((p.kinds & 0xFFu) == 0u) {
    s = uintBitsToFloat(scale_w[r]);
  } else {
    s = unpackHalf2x16(scale_w[r >> 1] >> ((r & 1u) * 16u)).x;
  }
  const uint zk = (p.kinds >> 8) & 0xFFu;
  float zp;
  if (zk == 0u) {
    zp = float(int(zp_w[r]));
  } else if (zk == 1u) {
    zp = uintBitsToFloat(zp_w[r]);
  } else {
    zp = float(bitfieldExtract(int(zp_w[r >> 2]), int((r & 3u) * 8u), 8));
  }
  out_[i] = act_fake_quant(x_[i], s, zp, act_inv_scale(s));
}
