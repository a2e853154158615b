#version 450
// out = condition ? self : other, three-way PyTorch broadcasting. The condition and the
// two data inputs may have any input dtype (condition: `!= 0`); values are converted to
// the output dtype (INT_OUT: exactly, through int; else through float).
#include "common.glsl"
#include "logical_elem.glsl"

#ifndef INT_OUT
#define INT_OUT 0
#endif

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer Cond { uint c_[]; };
layout(set = 0, binding = 2) readonly buffer InA { uint a_[]; };
layout(set = 0, binding = 3) readonly buffer InB { uint b_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint rank;        // <= 8
  uint c_dt;
  uint a_dt;
  uint b_dt;
  uint c_bcast;
  uint a_bcast;
  uint b_bcast;
  uvec4 sizes[2];   // output sizes, innermost first
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  bool c = bits_truth(LOAD_BITS(c_, bcast_index(i, p.rank, p.c_bcast, p.sizes), p.c_dt), p.c_dt);
  uint bits;
  uint dt;
  // Only the selected operand is read.
  if (c) {
    bits = LOAD_BITS(a_, bcast_index(i, p.rank, p.a_bcast, p.sizes), p.a_dt);
    dt = p.a_dt;
  } else {
    bits = LOAD_BITS(b_, bcast_index(i, p.rank, p.b_bcast, p.sizes), p.b_dt);
    dt = p.b_dt;
  }
#if INT_OUT
  out_[i] = DTYPE(bits_to_int(bits, dt));
#else
  out_[i] = DTYPE(bits_to_float(bits, dt));
#endif
}
