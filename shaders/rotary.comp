#version 450
// Pair-interleaved RoPE on x [B, S, H, D]: for each (even, odd) pair (r, i) at position s,
// pair index k within D,
//   out_r = r * cos(s, k) - i * sin(s, k),  out_i = r * sin(s, k) + i * cos(s, k).
// The tables are addressed by strides so one kernel serves both layouts:
//   et_vk.apply_rotary_emb:             cos / sin separate [S, D/2]  (row D/2, step 1, sin_off 0)
//   et_vk.apply_rotary_emb_interleaved: one table [N, C] of (cos, sin) pairs, bound as both
//                                       Cos and Sin (row C, step 2, sin_off 1), x as [B, N, 1, C].
// One invocation per pair. Math in float for every storage type.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Cos { DTYPE cos_[]; };
layout(set = 0, binding = 3) readonly buffer Sin { DTYPE sin_[]; };

layout(push_constant) uniform Params {
  uint pairs;   // numel / 2
  uint half_d;  // D / 2
  uint heads;   // H
  uint seq;     // S
  uint f_row;   // table elements per position
  uint f_step;  // table elements per pair
  uint sin_off; // offset of the sin entry from the cos entry
  uint pad_;
} p;

void main() {
  uint q = linear_id();
  if (q >= p.pairs) {
    return;
  }
  uint k = q % p.half_d;
  uint s = (q / p.half_d / p.heads) % p.seq;
  uint f = s * p.f_row + k * p.f_step;
  float c = float(cos_[f]);
  float sn = float(sin_[f + p.sin_off]);
  float r = float(x_[2 * q]);
  float im = float(x_[2 * q + 1]);
  out_[2 * q] = DTYPE(r * c - im * sn);
  out_[2 * q + 1] = DTYPE(r * sn + im * c);
}
