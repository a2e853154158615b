#version 450
// Elementwise logical ops with PyTorch broadcasting, Bool output. Any input dtype counts
// as `x != 0`. AND / OR read a and b; NOT reads a only (and has no b binding).
// Bool output: each invocation writes one whole word (4 elements), so no write races.
#include "common.glsl"
#include "logical_elem.glsl"

#define AND 1
#define OR 2
#define XOR 3
#define NOT 4

layout(set = 0, binding = 0) writeonly buffer Out { uint out_[]; };
layout(set = 0, binding = 1) readonly buffer InA { uint a_[]; };
#if OP != NOT
layout(set = 0, binding = 2) readonly buffer InB { uint b_[]; };
#endif

layout(push_constant) uniform Params {
  uint numel;
  uint rank;        // <= 8
  uint a_dt;
  uint b_dt;
  uint a_bcast;
  uint b_bcast;
  uint pad0_;
  uint pad1_;
  uvec4 sizes[2];   // output sizes, innermost first
} p;

bool element(uint i) {
  bool a = bits_truth(LOAD_BITS(a_, bcast_index(i, p.rank, p.a_bcast, p.sizes), p.a_dt), p.a_dt);
#if OP == NOT
  return !a;
#else
  bool b = bits_truth(LOAD_BITS(b_, bcast_index(i, p.rank, p.b_bcast, p.sizes), p.b_dt), p.b_dt);
#if OP == AND
  return a && b;
#elif OP == OR
  return a || b;
#elif OP == XOR
  return a != b;
#else
#error "logical.comp: unknown OP"
#endif
#endif
}

void main() {
  uint w = linear_id();
  uint first = w * 4u;
  if (first >= p.numel) {
    return;
  }
  uint word = 0u;
  for (uint k = 0u; k < 4u; ++k) {
    if (first + k < p.numel && element(first + k)) {
      word |= 1u << (8u * k);
    }
  }
  out_[w] = word;
}
