#version 450
// aten.pixel_shuffle: x [B, C r^2, H, W] -> out [B, C, H r, W r] (B: the product of the
// leading dims), out[b, c, h r + i, w r + j] = x[b, c r^2 + i r + j, h, w].
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint c_out;
  uint in_h;
  uint in_w;
  uint r;
} p;

void main() {
  const uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  const uint out_w = p.in_w * p.r;
  const uint out_h = p.in_h * p.r;
  const uint ow = i % out_w;
  uint t = i / out_w;
  const uint oh = t % out_h;
  t /= out_h;
  const uint c = t % p.c_out;
  const uint b = t / p.c_out;
  const uint ic = (c * p.r + oh % p.r) * p.r + ow % p.r;
  const uint c_in = p.c_out * p.r * p.r;
  out_[i] = in_[((b * c_in + ic) * p.in_h + oh / p.r) * p.in_w + ow / p.r];
}
