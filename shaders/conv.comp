#version 450
// 2-D convolution, direct (aten.convolution and et_vk.conv_with_clamp; a 1-D convolution
// arrives as H = 1). One invocation per output element of out [N, C_out, OH, OW]; the sum
// runs over the C_in / groups input channels of the output channel's group and the kernel
// window, in float whatever the storage type.
//   forward:    out[n][co][oh][ow] = b[co] + sum x[n][c][oh*sH - pH + kh*dH][ow*sW - pW + kw*dW]
//                                            * w[co][ci][kh][kw]
//   transposed: out[n][co][oh][ow] = b[co] + sum x[n][c][ih][iw] * w[c][co % cout_g][kh][kw]
//               over the (ih, iw) with ih*sH - pH + kh*dH == oh (and the same for w).
// Taps outside the input are the zero padding. The result is clamped to [out_min, out_max]
// (+-inf when the op has no clamp).
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Weight { DTYPE w_[]; };
layout(set = 0, binding = 3) readonly buffer Bias { DTYPE b_[]; };

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
  uint flags; // bit 0: bias bound, bit 1: transposed
  float out_min;
  float out_max;
} p;

#ifdef SPLIT
// SPLIT: one workgroup of LANES invocations per output element, the taps (C_in / groups x kH
// x kW) dealt round-robin to the lanes and summed in a shared-memory tree. For long sums
// over few outputs (a pointwise convolution with hundreds of input channels at 7 x 7), where
// one invocation per output leaves most of the GPU idle and walks its sum one load at a time.
// Forward (not transposed) only.
#define LANES 64 // must equal the local size (64, 1, 1)
shared float s_part[LANES];

void main() {
  uint idx = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (idx >= p.numel) {
    return; // whole workgroup
  }
  uint lane = gl_LocalInvocationID.x;
  uint ow = idx % p.OW;
  uint t = idx / p.OW;
  uint oh = t % p.OH;
  t /= p.OH;
  uint co = t % p.C_out;
  uint n = t / p.C_out;
  uint cin_g = p.C_in / p.groups;
  uint c0 = (co / (p.C_out / p.groups)) * cin_g;
  uint plane = p.H * p.W;
  uint taps = p.kH * p.kW;
  int ih0 = int(oh * p.sH) - p.pH;
  int iw0 = int(ow * p.sW) - p.pW;
  float acc = 0.0;
  for (uint tap = lane; tap < cin_g * taps; tap += LANES) {
    uint ci = tap / taps;
    uint r = tap % taps;
    uint kh = r / p.kW;
    uint kw = r % p.kW;
    int ih = ih0 + int(kh * p.dH);
    int iw = iw0 + int(kw * p.dW);
    if (ih >= 0 && ih < int(p.H) && iw >= 0 && iw < int(p.W)) {
      acc += float(x_[(n * p.C_in + c0 + ci) * plane + uint(ih) * p.W + uint(iw)]) *
             float(w_[co * cin_g * taps + tap]);
    }
  }
  s_part[lane] = acc;
  barrier();
  for (uint stride = LANES / 2u; stride > 0u; stride >>= 1) {
    if (lane < stride) {
      s_part[lane] += s_part[lane + stride];
    }
    barrier();
  }
  if (lane == 0u) {
    float y = s_part[0] + ((p.flags & 1u) != 0u ? float(b_[co]) : 0.0);
    out_[idx] = DTYPE(min(max(y, p.out_min), p.out_max));
  }
}
#else
void main() {
  uint idx = linear_id();
  if (idx >= p.numel) {
    return;
  }
  uint ow = idx % p.OW;
  uint t = idx / p.OW;
  uint oh = t % p.OH;
  t /= p.OH;
  uint co = t % p.C_out;
  uint n = t / p.C_out;
  uint cin_g = p.C_in / p.groups;
  uint cout_g = p.C_out / p.groups;
  uint c0 = (co / cout_g) * cin_g;
  uint plane = p.H * p.W;
  uint taps = p.kH * p.kW;
  float acc = (p.flags & 1u) != 0u ? float(b_[co]) : 0.0;
  if ((p.flags & 2u) == 0u) {
    int ih0 = int(oh * p.sH) - p.pH;
    int iw0 = int(ow * p.sW) - p.pW;
    for (uint ci = 0u; ci < cin_g; ++ci) {
      uint xbase = (n * p.C_in + c0 + ci) * plane;
      uint wbase = (co * cin_g + ci) * taps;
      for (uint kh = 0u; kh < p.kH; ++kh) {
        int ih = ih0 + int(kh * p.dH);
        if (ih < 0 || ih >= int(p.H)) {
          continue;
        }
        uint xrow = xbase + uint(ih) * p.W;
        uint wrow = wbase + kh * p.kW;
        for (uint kw = 0u; kw < p.kW; ++kw) {
          int iw = iw0 + int(kw * p.dW);
          if (iw < 0 || iw >= int(p.W)) {
            continue;
          }
          acc += float(x_[xrow + uint(iw)]) * float(w_[wrow + kw]);
        }
      }
    }
  } else {
    uint col = co % cout_g;
    for (uint ci = 0u; ci < cin_g; ++ci) {
      uint xbase = (n * p.C_in + c0 + ci) * plane;
      uint wbase = ((c0 + ci) * cout_g + col) * taps;
      for (uint kh = 0u; kh < p.kH; ++kh) {
        int th = int(oh) + p.pH - int(kh * p.dH);
        if (th < 0 || uint(th) % p.sH != 0u || uint(th) / p.sH >= p.H) {
          continue;
        }
        uint xrow = xbase + (uint(th) / p.sH) * p.W;
        uint wrow = wbase + kh * p.kW;
        for (uint kw = 0u; kw < p.kW; ++kw) {
          int tw = int(ow) + p.pW - int(kw * p.dW);
          if (tw < 0 || uint(tw) % p.sW != 0u || uint(tw) / p.sW >= p.W) {
            continue;
          }
          acc += float(x_[xrow + uint(tw) / p.sW]) * float(w_[wrow + kw]);
        }
      }
    }
  }
  out_[idx] = DTYPE(min(max(acc, p.out_min), p.out_max));
}
#endif
