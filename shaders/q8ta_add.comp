#version 450
// et_vk.q8ta_add: out = quantize(dequantize(a) + alpha * dequantize(b)) with per-tensor
// parameters for a, b and out; int8 tensors of rank <= 4 (sizes right-aligned), a and b
// broadcast to the output (stride 0 on broadcast dims). One invocation per output word.
// The sum is fma(alpha, b, a) in fp32: with alpha = 1 (what the exporter writes) exactly
// eager PyTorch's add of the two dequantized tensors.
#include "common.glsl"
#include "q8ta_common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
layout(set = 0, binding = 1) readonly buffer A { uint a_w[]; };
layout(set = 0, binding = 2) readonly buffer B { uint b_w[]; };

layout(push_constant) uniform Params {
  uvec4 sizes;      // output sizes, right-aligned
  uvec4 a_strides;  // element strides of a over the output's dims (0: broadcast)
  uvec4 b_strides;
  uint numel;
  float a_scale;
  int a_zp;
  float b_scale;
  int b_zp;
  float out_inv_scale;
  int out_zp;
  float alpha;
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
    uint rest = i, ai = 0u, bi = 0u;
    for (int d = 3; d >= 0; --d) {
      const uint c = rest % p.sizes[d];
      rest /= p.sizes[d];
      ai += c * p.a_strides[d];
      bi += c * p.b_strides[d];
    }
    const float a = q8_dequantize(q8_s8(a_w[ai >> 2], ai & 3u), p.a_zp, p.a_scale);
    const float b = q8_dequantize(q8_s8(b_w[bi >> 2], bi & 3u), p.b_zp, p.b_scale);
    precise float y = fma(p.alpha, b, a);
    word |= q8_pack(q8_quantize(y, p.out_inv_scale, p.out_zp, -128, 127), e);
  }
  out_w[w] = word;
}
