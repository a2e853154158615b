#version 450
// Elementwise binary op with PyTorch broadcasting: out = OP(a, b).
// Dims are given innermost first; a broadcast input has stride 0 on that dim.
// ADD: a + alpha * b, SUB: a - alpha * b, MUL: a * b, DIV: a / b (true division).
#include "common.glsl"

// Values of the OP define (the manifest passes -DOP=ADD etc.).
#define ADD 1
#define SUB 2
#define MUL 3
#define DIV 4

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer InA { DTYPE a_[]; };
layout(set = 0, binding = 2) readonly buffer InB { DTYPE b_[]; };

layout(push_constant) uniform Params {
  uint numel;
  uint rank;       // <= 8
  float alpha;
  uint pad_;
  uvec4 sizes[2];     // output sizes, innermost first
  uvec4 a_strides[2]; // element strides of a per output dim (0 = broadcast)
  uvec4 b_strides[2];
} p;

void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uint rem = i;
  uint ia = 0;
  uint ib = 0;
  for (uint d = 0; d < p.rank; ++d) {
    uint size = p.sizes[d >> 2][d & 3];
    uint c = rem % size;
    rem /= size;
    ia += c * p.a_strides[d >> 2][d & 3];
    ib += c * p.b_strides[d >> 2][d & 3];
  }
  float a = float(a_[ia]);
  float b = float(b_[ib]);
#if OP == ADD
  float r = a + p.alpha * b;
#elif OP == SUB
  float r = a - p.alpha * b;
#elif OP == MUL
  float r = a * b;
#elif OP == DIV
  float r = a / b;
#else
#error "binary.comp: OP must be ADD, SUB, MUL or DIV"
#endif
  out_[i] = DTYPE(r);
}
