#version 450
// 2-D pooling over the trailing two dims of a contiguous [planes, H, W] tensor (NCHW or CHW),
// one invocation per output element of [planes, OH, OW], with PyTorch's window rules:
//
// MODE == MAX (aten.max_pool2d_with_indices): the window rows are
//   h0 = oh * s_h - p_h + j * d_h (j < k_h), those inside [0, H) taken (same for columns);
//   the max starts at -inf with index h0' * W + w0' (h0', w0': the first in-range row and
//   column), and an element replaces it when `v > max || isnan(v)` (PyTorch's CPU rule: ties
//   keep the first, NaN propagates). The index is flat into the input plane (h * W + w),
//   written as int32.
//   NO_IDX = 1 (aten.max_pool2d): the same without the indices binding.
// MODE == AVG (aten.avg_pool2d): the window [h0, min(h0 + k_h, H + p_h)) is clipped to
//   [0, H) for the sum; the divisor is divisor_override when nonzero, else the unclipped
//   window area (count_include_pad) or the clipped one. A window entirely in the padding
//   gives 0. Sums in float for every storage type.
#include "common.glsl"

#define MAX 1
#define AVG 2
#ifndef NO_IDX
#define NO_IDX 0
#endif

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
#if MODE == MAX && NO_IDX
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };
#elif MODE == MAX
layout(set = 0, binding = 1) writeonly buffer Idx { int idx_[]; };
layout(set = 0, binding = 2) readonly buffer In { DTYPE in_[]; };
#elif MODE == AVG
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };
#else
#error "pool2d.comp: unknown MODE"
#endif

layout(push_constant) uniform Params {
  uint numel; // planes * out_h * out_w
  int in_h;
  int in_w;
  uint out_h;
  uint out_w;
  int k_h;
  int k_w;
  int s_h;
  int s_w;
  int p_h;
  int p_w;
  int d_h; // dilation (MAX only)
  int d_w;
  int divisor;           // AVG: divisor_override, 0 = none
  uint count_include_pad; // AVG: 1 = divide by the padded window area
} p;

void main() {
  const uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  const uint ow = i % p.out_w;
  const uint t = i / p.out_w;
  const uint oh = t % p.out_h;
  const uint plane = t / p.out_h;
  const uint base = plane * uint(p.in_h) * uint(p.in_w);
  int h0 = int(oh) * p.s_h - p.p_h;
  int w0 = int(ow) * p.s_w - p.p_w;
#if MODE == MAX
  const int h1 = min(h0 + (p.k_h - 1) * p.d_h + 1, p.in_h);
  const int w1 = min(w0 + (p.k_w - 1) * p.d_w + 1, p.in_w);
  // The first tap at or after 0 (PyTorch steps h0 by the dilation while it is negative).
  if (h0 < 0) {
    h0 += ((-h0 + p.d_h - 1) / p.d_h) * p.d_h;
  }
  if (w0 < 0) {
    w0 += ((-w0 + p.d_w - 1) / p.d_w) * p.d_w;
  }
  float m = uintBitsToFloat(0xff800000u); // -inf
  int best = h0 * p.in_w + w0;
  for (int h = h0; h < h1; h += p.d_h) {
    for (int w = w0; w < w1; w += p.d_w) {
      const int at = h * p.in_w + w;
      const float v = float(in_[base + uint(at)]);
      if (v > m || isnan(v)) {
        m = v;
        best = at;
      }
    }
  }
  out_[i] = DTYPE(m);
#if !NO_IDX
  idx_[i] = best;
#endif
#else
  int h1 = min(h0 + p.k_h, p.in_h + p.p_h);
  int w1 = min(w0 + p.k_w, p.in_w + p.p_w);
  const int padded = (h1 - h0) * (w1 - w0);
  h0 = max(h0, 0);
  w0 = max(w0, 0);
  h1 = min(h1, p.in_h);
  w1 = min(w1, p.in_w);
  if (h0 >= h1 || w0 >= w1) {
    out_[i] = DTYPE(0.0);
    return;
  }
  float sum = 0.0;
  for (int h = h0; h < h1; ++h) {
    for (int w = w0; w < w1; ++w) {
      sum += float(in_[base + uint(h * p.in_w + w)]);
    }
  }
  int div = p.divisor != 0 ? p.divisor : (p.count_include_pad != 0u ? padded : (h1 - h0) * (w1 - w0));
  out_[i] = DTYPE(sum / float(div));
#endif
}
