#version 450
// quantized_decomposed.quantize_per_tensor (.default: scale and zero point in the push
// constants; .tensor: in one-element buffers) and quantize_per_channel (one scale and zero
// point per index of the channel axis, element i's channel (i / inner) % channels). x is
// float (DTYPE), the output int8 / uint8 words, one invocation per output word.
// Buffer scales are raw scales (flags bit 1: the shader takes their reciprocal, rounded to
// nearest with one fma residual step, as PyTorch's 1.0 / scale) or, when the runtime could
// compute them at load, the reciprocals themselves.
#include "common.glsl"
#include "q8ta_common.glsl"

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

float recip(float s) {
  float r = 1.0 / s;
  // One Newton step on the residual; then the neighbour with the smaller residual.
  float e = fma(-s, r, 1.0);
  r = fma(r, e, r);
  float lo = uintBitsToFloat(floatBitsToUint(r) - 1u);
  float hi = uintBitsToFloat(floatBitsToUint(r) + 1u);
  float er = abs(fma(-s, r, 1.0));
  float el = abs(fma(-s, lo, 1.0));
  float eh = abs(fma(-s, hi, 1.0));
  if (el < er) { r = lo; er = el; }
  if (eh < er) { r = hi; }
  return r;
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
    float inv = p.inv_scale;
    int zp = p.zp;
    if ((p.flags & 1u) != 0u) {
      const uint c = (i / p.inner) % p.channels;
      inv = (p.flags & 2u) != 0u ? recip(scale_[c]) : scale_[c];
      zp = zp_[c];
    }
    word |= q8_pack(q8_quantize(float(x_[i]), inv, zp, p.qmin, p.qmax), e);
  }
  out_w[w] = word;
}
