#version 450
// 2-D upsampling of a contiguous [planes, H, W] tensor (NCHW) to [planes, OH, OW], one
// invocation per output element, with ATen's index rules (UpSample.h), in float:
//
// MODE == NEAREST (aten.upsample_nearest2d.vec, `nearest_idx`): out == in copies, out == 2 in
//   takes dst >> 1, else src = min(floor(dst * scale), in - 1).
// MODE == BILINEAR (aten.upsample_bilinear2d.vec, `compute_source_index_and_lambda`): out == in
//   copies; else the real source index is scale * dst (align_corners) or
//   max(scale * (dst + 0.5) - 0.5, 0), i0 = min(floor(real), in - 1), lambda = clamp(real - i0,
//   0, 1), i1 = i0 + 1 unless i0 is the last row / column; the result is
//   (1 - lh) ((1 - lw) x00 + lw x01) + lh ((1 - lw) x10 + lw x11).
// The runtime computes the scales as ATen does (1 / scale_factor, in / out, or
// (in - 1) / (out - 1) with align_corners).
#include "common.glsl"

#define NEAREST 1
#define BILINEAR 2

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };

layout(push_constant) uniform Params {
  uint numel; // planes * out_h * out_w
  uint in_h;
  uint in_w;
  uint out_h;
  uint out_w;
  float scale_h;
  float scale_w;
  uint align_corners; // BILINEAR only
} p;

#if MODE == NEAREST
uint source(uint o, uint n_in, uint n_out, float scale) {
  if (n_out == n_in) {
    return o;
  }
  if (n_out == 2u * n_in) {
    return o >> 1;
  }
  return min(uint(floor(float(o) * scale)), n_in - 1u);
}
#elif MODE == BILINEAR
// Source rows / columns i0, i1 and the weight of i1.
void source(uint o, uint n_in, uint n_out, float scale, out uint i0, out uint i1, out float l1) {
  if (n_out == n_in) {
    i0 = o;
    i1 = o;
    l1 = 0.0;
    return;
  }
  // precise: no fused multiply-add, ATen rounds the product and the difference separately.
  precise float real;
  if (p.align_corners != 0u) {
    real = scale * float(o);
  } else {
    real = scale * (float(o) + 0.5) - 0.5;
    real = real < 0.0 ? 0.0 : real;
  }
  i0 = min(uint(floor(real)), n_in - 1u);
  l1 = clamp(real - float(i0), 0.0, 1.0);
  i1 = i0 + (i0 < n_in - 1u ? 1u : 0u);
}
#else
#error "upsample2d.comp: unknown MODE"
#endif

void main() {
  const uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  const uint ow = i % p.out_w;
  const uint t = i / p.out_w;
  const uint oh = t % p.out_h;
  const uint plane = t / p.out_h;
  const uint base = plane * p.in_h * p.in_w;
#if MODE == NEAREST
  const uint h = source(oh, p.in_h, p.out_h, p.scale_h);
  const uint w = source(ow, p.in_w, p.out_w, p.scale_w);
  out_[i] = in_[base + h * p.in_w + w];
#else
  uint h0, h1, w0, w1;
  float lh, lw;
  source(oh, p.in_h, p.out_h, p.scale_h, h0, h1, lh);
  source(ow, p.in_w, p.out_w, p.scale_w, w0, w1, lw);
  const float x00 = float(in_[base + h0 * p.in_w + w0]);
  const float x01 = float(in_[base + h0 * p.in_w + w1]);
  const float x10 = float(in_[base + h1 * p.in_w + w0]);
  const float x11 = float(in_[base + h1 * p.in_w + w1]);
  const float top = (1.0 - lw) * x00 + lw * x01;
  const float bottom = (1.0 - lw) * x10 + lw * x11;
  out_[i] = DTYPE((1.0 - lh) * top + lh * bottom);
#endif
}
