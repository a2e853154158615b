#version 450
// 4-bit group-wise embedding lookup (et_vk.embedding_q4gsw, and
// quantized_decomposed.embedding_4bit with flags):
//   out[t, d] = (code(idx[t], d) - 8 - zp[idx[t], g]) * scales[idx[t], g], g = d / group_size
// flags bit 0: zero points (SCALE_T, the scales' layout) present, else 0; bit 1: the
// subtraction and the product rounded to SCALE_T, as PyTorch's dequantize_per_channel_group
// computes them in the scales' dtype (embedding_4bit).
// weight: the serialized uint8 [V, D/2] bytes, read as little-endian words; byte j of row v
// holds dims 2j and 2j+1. LINEAR (push) = 1: even d in the LOW nibble (q4gsw linear
// convention); 0: even d in the HIGH nibble. scales [V, D / group_size] (SCALE_T).
// An index outside [0, V) gives a zero row and is recorded in the fault record
// (fault.glsl), so the execute fails as PyTorch raises; as the `gather` shader does. One invocation per output element; the
// dequantization is computed in float, then stored as DTYPE.
#include "common.glsl"
#include "f16_round.glsl"

#ifndef SCALE_T
#define SCALE_T float
#endif

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer Weight { uint w_[]; };
layout(set = 0, binding = 2) readonly buffer Scales { SCALE_T scales_[]; };
layout(set = 0, binding = 3) readonly buffer Idx { int idx_[]; };
layout(set = 0, binding = 4) readonly buffer Zp { SCALE_T zp_[]; };
#define FAULT_BINDING 5
#include "fault.glsl"

layout(push_constant) uniform Params {
  uint numel;      // indices * D
  uint D;
  uint V;
  uint group_size;
  uint groups;     // D / group_size
  uint linear;     // nibble order, see above
  uint flags;      // see above
  uint tag;        // node_id + 1, for the fault record
} p;

void main() {
  uint e = linear_id();
  if (e >= p.numel) {
    return;
  }
  uint t = e / p.D;
  uint d = e - t * p.D;
  int v = idx_[t];
  if (v < 0 || uint(v) >= p.V) {
    if (d == 0u) {
      record_fault(p.tag, v, p.V);
    }
    out_[e] = DTYPE(0);
    return;
  }
  uint byte_i = uint(v) * (p.D / 2u) + d / 2u;
  uint b = (w_[byte_i / 4u] >> (8u * (byte_i % 4u))) & 0xFFu;
  bool low = ((d & 1u) == 0u) == (p.linear != 0u);
  uint code = low ? (b & 0xFu) : (b >> 4u);
  const uint gi = uint(v) * p.groups + d / p.group_size;
  const float s = float(scales_[gi]);
  float q = float(int(code) - 8);
  if ((p.flags & 1u) != 0u) {
    q -= float(zp_[gi]);
  }
  if ((p.flags & 2u) != 0u) {
    out_[e] = DTYPE(ROUND_AS(SCALE_T, ROUND_AS(SCALE_T, q) * s));
  } else {
    out_[e] = DTYPE(q * s);
  }
}
