#version 450
// Llama interleaved-pair RoPE on x [B, S, H, D] with freqs_cos / freqs_sin [S, D/2]:
// for each (even, odd) pair (r, i) at position s, frequency k = pair index within D,
//   out_r = r * cos[s][k] - i * sin[s][k],  out_i = r * sin[s][k] + i * cos[s][k].
// One invocation per pair. Math in float for every storage type.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Cos { DTYPE cos_[]; };
layout(set = 0, binding = 3) readonly buffer Sin { DTYPE sin_[]; };

layout(push_constant) uniform Params {
  uint pairs; // numel / 2
  uint half_d; // D / 2
  uint heads; // H
  uint seq; // S
} p;

void main() {
  uint q = linear_id();
  if (q >= p.pairs) {
    return;
  }
  uint k = q % p.half_d;
  uint s = (q / p.half_d / p.heads) % p.seq;
  float c = float(cos_[s * p.half_d + k]);
  float sn = float(sin_[s * p.half_d + k]);
  float r = float(x_[2 * q]);
  float im = float(x_[2 * q + 1]);
  out_[2 * q] = DTYPE(r * c - im * sn);
  out_[2 * q + 1] = DTYPE(r * sn + im * c);
}
