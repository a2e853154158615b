#version 450
// Statically quantized 2-D convolution (et_vk.q8ta_conv2d, q8ta_conv2d_dw, q8ta_conv2d_pw,
// q8ta_conv2d_transposed): x int8 [N, C_in, H, W], out int8 [N, C_out, OH, OW], one
// invocation per output word (four consecutive NCHW elements). As eager PyTorch runs the
// PT2E graph: every tap's input and weight dequantized to fp32 (float(q - zp) * scale), the
// products summed in fp32 over the group's input channels and the kernel window (padding
// taps contribute nothing), the bias added, relu if asked, then quantized.
// Weight layouts, as the exporter writes them:
//   flags bit 2 clear: [C_out, Kp], k = (kh * kW + kw) * C_in_g + ci (Kp >= kH kW C_in_g,
//     the width padded to 4); the transposed weight is permuted to the same form.
//   flags bit 2 set (depthwise): [kH, kW, Cp], element (kh * kW + kw) * Cp + co.
// Weight scales: one per output channel; the transposed one per channel of its group
// (index co % C_out_g, the exporter quantizes its weight along axis 1).
#include "common.glsl"
#include "q8ta_common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
layout(set = 0, binding = 1) readonly buffer In { uint x_w[]; };
layout(set = 0, binding = 2) readonly buffer Weight { uint w_w[]; };
layout(set = 0, binding = 3) readonly buffer WScale { float ws_[]; };
layout(set = 0, binding = 4) readonly buffer Bias { float b_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint C_in;
  uint H;
  uint W;
  uint C_out;
  uint OH;
  uint OW;
  uint groups;
  uint kH;
  uint kW;
  uint sH;
  uint sW;
  int pH;
  int pW;
  uint dH;
  uint dW;
  uint flags;  // bit 0: bias bound; bit 1: relu; bit 2: depthwise layout; bit 3: transposed
  uint w_row;  // Kp (general layout) or Cp (depthwise)
  float in_scale;
  int in_zp;
  float out_inv_scale;
  int out_zp;
} p;

float weight(uint co, uint ci, uint kh, uint kw, uint cin_g) {
  uint idx;
  if ((p.flags & 4u) != 0u) {
    idx = (kh * p.kW + kw) * p.w_row + co;
  } else {
    idx = co * p.w_row + (kh * p.kW + kw) * cin_g + ci;
  }
  return float(q8_s8(w_w[idx >> 2], idx & 3u));
}

float input_at(uint n, uint c, uint ih, uint iw) {
  const uint idx = ((n * p.C_in + c) * p.H + ih) * p.W + iw;
  return q8_dequantize(q8_s8(x_w[idx >> 2], idx & 3u), p.in_zp, p.in_scale);
}

float conv_at(uint idx) {
  const uint ow = idx % p.OW;
  uint t = idx / p.OW;
  const uint oh = t % p.OH;
  t /= p.OH;
  const uint co = t % p.C_out;
  const uint n = t / p.C_out;
  const uint cin_g = p.C_in / p.groups;
  const uint cout_g = p.C_out / p.groups;
  const uint c0 = (co / cout_g) * cin_g;
  const bool transposed = (p.flags & 8u) != 0u;
  const float ws = ws_[transposed ? co % cout_g : co];
  float acc = 0.0;
  for (uint ci = 0u; ci < cin_g; ++ci) {
    for (uint kh = 0u; kh < p.kH; ++kh) {
      int ih;
      if (transposed) {
        // oh = ih * sH - pH + kh * dH
        const int num = int(oh) + p.pH - int(kh * p.dH);
        if (num < 0 || num % int(p.sH) != 0) {
          continue;
        }
        ih = num / int(p.sH);
      } else {
        ih = int(oh * p.sH) - p.pH + int(kh * p.dH);
      }
      if (ih < 0 || ih >= int(p.H)) {
        continue;
      }
      for (uint kw = 0u; kw < p.kW; ++kw) {
        int iw;
        if (transposed) {
          const int num = int(ow) + p.pW - int(kw * p.dW);
          if (num < 0 || num % int(p.sW) != 0) {
            continue;
          }
          iw = num / int(p.sW);
        } else {
          iw = int(ow * p.sW) - p.pW + int(kw * p.dW);
        }
        if (iw < 0 || iw >= int(p.W)) {
          continue;
        }
        const float xd = input_at(n, c0 + ci, uint(ih), uint(iw));
        const float wd = weight(co, ci, kh, kw, cin_g) * ws;
        acc += xd * wd;
      }
    }
  }
  if ((p.flags & 1u) != 0u) {
    acc += b_[co];
  }
  if ((p.flags & 2u) != 0u) {
    acc = max(acc, 0.0);
  }
  return acc;
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
    word |= q8_pack(q8_quantize(conv_at(i), p.out_inv_scale, p.out_zp, -128, 127), e);
  }
  out_w[w] = word;
}
