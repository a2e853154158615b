#version 450
// Strided gather for permute_copy: out is contiguous; element i of out decomposes into
// output coordinates (innermost first), and each output dim d steps the input by
// in_strides[d] (the input stride of the permuted-in dim). Rank <= 8.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint rank;          // <= 8
  uint pad0_;
  uint pad1_;
  uvec4 sizes[2];      // output sizes, innermost first
  uvec4 in_strides[2]; // input element stride per output dim, innermost first
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint rem = i;
  uint src = 0;
  for (uint d = 0; d < p.rank; ++d) {
    uint size = p.sizes[d >> 2][d & 3];
    src += (rem % size) * p.in_strides[d >> 2][d & 3];
    rem /= size;
  }
  out_[i] = in_[src];
}
