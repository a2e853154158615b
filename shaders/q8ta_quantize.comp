#version 450
// quantized_decomposed.quantize_per_tensor (.default: scale and zero point in the push
// constants; .tensor: in one-element buffers) and quantize_per_channel (one scale and zero
// point per index of the channel axis, element i's channel (i / inner) % channels). x is
// float (DTYPE), the output int8 / uint8 words, one invocation per output word.
// Buffer scales are raw scales (flags bit 1: the shader takes their reciprocal, rounded to
// nearest as PyTorch's 1.0 / scale, exact_fp.glsl) or, when the runtime could
// compute them at load, the reciprocals themselves.
#include "common.glsl"
#include "q8ta_common.glsl"
#include "exact_fp.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Scale { float scale_[]; };
layout(set = 0, binding = 3) readonly buffer Zp { int zp_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint inner;
  uint channels;
  uint flags;      // bit 0: scale / zero point from the buffers; bit 1: buffer holds scales
  float inv_scale; // bits 0 clear: the per-tensor 1 / scale
  int zp;
  int qmin;
  int qmax;
} p;

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
    float inv = p.inv_scale;
    int zp = p.zp;
    if ((p.flags & 1u) != 0u) {
      const uint c = (i / p.inner) % p.channels;
      inv = (p.flags & 2u) != 0u ? exact_recip(scale_[c]) : scale_[c];
      zp = zp_[c];
    }
    word |= q8_pack(q8_quantize(float(x_[i]), inv, zp, p.qmin, p.qmax), e);
  }
  out_w[w] = word;
}
