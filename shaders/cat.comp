#version 450
// One input of a concatenation: x viewed as [outer, chunk_in] lands in out viewed as
// [outer, chunk_out] at column `offset` (chunk = size along the cat dim * inner size).
// One dispatch per input; together they cover every output element exactly once.
#include "common.glsl"

layout(set = 0, binding = 0) buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };

layout(push_constant) uniform Params {
  uint numel;     // elements of x
  uint chunk_in;  // x's size along the cat dim * inner
  uint chunk_out; // out's size along the cat dim * inner
  uint offset;    // elements before x's slab in each out row: sum of earlier chunks
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint o = i / p.chunk_in;
  out_[o * p.chunk_out + p.offset + (i - o * p.chunk_in)] = x_[i];
}
