#version 450
// Statically quantized linear (et_vk.q8ta_linear / q8ta_linear_gemv: int8 out, OUT_Q8 = 1;
// et_vk.linear_q8ta_q8csw: float out): x int8 [M, K] (zero point in_zp, scale in_scale),
// weight int8 [N, K] with one scale per output channel, optional fp32 bias [>= N].
// As eager PyTorch runs the PT2E graph: x and the weight dequantized to fp32
// (float(q - zp) * scale, one rounding each), their products summed in fp32, the bias added,
// then (OUT_Q8) relu if asked and the result quantized with the output's parameters.
// OUT_Q8: one invocation per output word (four consecutive elements of the row-major
// [M, N] output); float out: one invocation per element.
#include "common.glsl"
#include "q8ta_common.glsl"

#ifndef OUT_Q8
#define OUT_Q8 0
#endif

#if OUT_Q8
layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
#else
layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
#endif
layout(set = 0, binding = 1) readonly buffer In { uint x_w[]; };
layout(set = 0, binding = 2) readonly buffer Weight { uint w_w[]; };
layout(set = 0, binding = 3) readonly buffer WScale { float ws_[]; };
layout(set = 0, binding = 4) readonly buffer Bias { float b_[]; };

layout(push_constant) uniform Params {
  uint M;
  uint K;
  uint N;
  uint flags;   // bit 0: bias bound; bit 1: relu
  float in_scale;
  int in_zp;
  float out_inv_scale;
  int out_zp;
} p;

float dot_row(uint m, uint n) {
  float acc = 0.0;
  const float ws = ws_[n];
  const uint xb = m * p.K;
  const uint wb = n * p.K;
  if ((p.K & 3u) == 0u) {
    // Whole words: rows start on a word boundary.
    for (uint k4 = 0u; k4 < p.K / 4u; ++k4) {
      const uint xw = x_w[xb / 4u + k4];
      const uint ww = w_w[wb / 4u + k4];
      for (uint e = 0u; e < 4u; ++e) {
        const float xd = q8_dequantize(q8_s8(xw, e), p.in_zp, p.in_scale);
        const float wd = q8_dequantize(q8_s8(ww, e), 0, ws);
        acc += xd * wd;
      }
    }
  } else {
    for (uint k = 0u; k < p.K; ++k) {
      const uint xi = xb + k;
      const uint wi = wb + k;
      const float xd = q8_dequantize(q8_s8(x_w[xi >> 2], xi & 3u), p.in_zp, p.in_scale);
      const float wd = q8_dequantize(q8_s8(w_w[wi >> 2], wi & 3u), 0, ws);
      acc += xd * wd;
    }
  }
  if ((p.flags & 1u) != 0u) {
    acc += b_[n];
  }
  return acc;
}

void main() {
  const uint total = p.M * p.N;
#if OUT_Q8
  const uint w = linear_id();
  if (w * 4u >= total) {
    return;
  }
  uint word = 0u;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = w * 4u + e;
    if (i >= total) {
      break;
    }
    float y = dot_row(i / p.N, i % p.N);
    if ((p.flags & 2u) != 0u) {
      y = max(y, 0.0);
    }
    word |= q8_pack(q8_quantize(y, p.out_inv_scale, p.out_zp, -128, 127), e);
  }
  out_w[w] = word;
#else
  const uint i = linear_id();
  if (i >= total) {
    return;
  }
  out_[i] = DTYPE(dot_row(i / p.N, i % p.N));
#endif
}
