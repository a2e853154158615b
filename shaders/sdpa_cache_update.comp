#version 450
// KV-cache write (sdpa_with_kv_cache, update_cache): cache[b, start_pos + s, :, :] =
// src[b, s, :, :] for src [B, S, H_kv, D] and cache [B, max_seq, H_kv, D], both
// contiguous. start_pos is read from the graph's scalar buffer (a SymInt refreshed every
// execute). The builders reject start_pos + S > max_seq on the host; positions past the
// cache end are still dropped here so a bad value can never write out of bounds.
#include "common.glsl"

layout(set = 0, binding = 0) buffer Cache { DTYPE cache_[]; };
layout(set = 0, binding = 1) readonly buffer Src { DTYPE src_[]; };
layout(set = 0, binding = 2) readonly buffer Scalars { int scalars_[]; };

layout(push_constant) uniform Params {
  uint numel;    // B * S * H_kv * D
  uint S;
  uint row;      // H_kv * D: elements per position
  uint max_seq;
  uint pos_slot;
  uint pad0_;
  uint pad1_;
  uint pad2_;
} p;

void main() {
  uint e = linear_id();
  if (e >= p.numel) {
    return;
  }
  uint r = e % p.row;
  uint s = (e / p.row) % p.S;
  uint b = e / (p.row * p.S);
  int pos = scalars_[p.pos_slot] + int(s);
  if (pos < 0 || uint(pos) >= p.max_seq) {
    return;
  }
  cache_[(b * p.max_seq + uint(pos)) * p.row + r] = src_[e];
}
