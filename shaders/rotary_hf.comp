#version 450
// HuggingFace rotate-half RoPE on x [B, S, H, D] with tables freqs_cos / freqs_sin
// [max_seq, R] (R = rotary dim, even, R <= D) read at row start_pos + s:
//   d <  R:  out[d] = x[d] * cos[d] + rot[d] * sin[d],
//            rot[d] = -x[d + R/2] for d < R/2, x[d - R/2] otherwise;
//   d >= R:  out[d] = x[d] (partial rotary factor: the tail passes through).
// start_pos comes from the graph's scalar buffer (a SymInt refreshed every execute, or an
// Int), so decode steps need no re-record; the builder checks start_pos + S <= max_seq on
// the host. One invocation per element; math in float.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Cos { DTYPE cos_[]; };
layout(set = 0, binding = 3) readonly buffer Sin { DTYPE sin_[]; };
layout(set = 0, binding = 4) readonly buffer Scalars { int scalars_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint D;
  uint heads;    // H
  uint seq;      // S
  uint R;        // rotary dim (table width)
  uint rows;     // table rows (max_seq)
  uint pos_slot; // scalar slot of start_pos
  uint pad_;
} p;

void main() {
  uint e = linear_id();
  if (e >= p.numel) {
    return;
  }
  uint d = e % p.D;
  float x = float(x_[e]);
  if (d >= p.R) {
    out_[e] = DTYPE(x);
    return;
  }
  uint s = (e / p.D / p.heads) % p.seq;
  uint pos = uint(max(scalars_[p.pos_slot], 0)) + s;
  // Rows past the table cannot happen after the host check; never read out of bounds.
  pos = min(pos, p.rows - 1u);
  uint half_r = p.R / 2u;
  float rot = d < half_r ? -float(x_[e + half_r]) : float(x_[e - half_r]);
  uint f = pos * p.R + d;
  out_[e] = DTYPE(x * float(cos_[f]) + rot * float(sin_[f]));
}
