#version 450
// Elementwise bitwise ops with PyTorch broadcasting (ops/binary.rs): AND: a & b, OR: a | b,
// NOT: ~a (no b binding). IS_BOOL = 0: int32 elements, one per invocation. IS_BOOL = 1:
// bool elements, one byte each, read and written as uint words; each invocation writes one
// whole output word (4 elements), so no two invocations write the same word. A bool byte
// counts as true when nonzero, and results are 0 / 1 (bitwise ops on bool are the logical
// ones). Dims are given innermost first; a broadcast input has stride 0 on that dim (the
// push block of binary.comp).
#include "common.glsl"

#define AND 1
#define OR 2
#define NOT 3

#if IS_BOOL
#define ELEM uint
#else
#define ELEM int
#endif

layout(set = 0, binding = 0) writeonly buffer Out { ELEM out_[]; };
layout(set = 0, binding = 1) readonly buffer InA { ELEM a_[]; };
#if OP != NOT
layout(set = 0, binding = 2) readonly buffer InB { ELEM b_[]; };
#endif

layout(push_constant) uniform Params {
  uint numel;
  uint rank;          // <= 8
  uint pad0_;
  uint pad1_;
  uvec4 sizes[2];     // output sizes, innermost first
  uvec4 a_strides[2]; // element strides of a per output dim (0 = broadcast)
  uvec4 b_strides[2];
} p;

// Offsets into a and b of output element i.
uvec2 offsets(uint i) {
  uint rem = i;
  uvec2 o = uvec2(0u);
  for (uint d = 0u; d < p.rank; ++d) {
    uint size = p.sizes[d >> 2][d & 3u];
    uint c = rem % size;
    rem /= size;
    o += c * uvec2(p.a_strides[d >> 2][d & 3u], p.b_strides[d >> 2][d & 3u]);
  }
  return o;
}

#if IS_BOOL
bool load_a(uint i) {
  return ((a_[i >> 2] >> ((i & 3u) * 8u)) & 0xffu) != 0u;
}
#if OP != NOT
bool load_b(uint i) {
  return ((b_[i >> 2] >> ((i & 3u) * 8u)) & 0xffu) != 0u;
}
#endif

bool element(uint i) {
  uvec2 o = offsets(i);
#if OP == AND
  return load_a(o.x) && load_b(o.y);
#elif OP == OR
  return load_a(o.x) || load_b(o.y);
#elif OP == NOT
  return !load_a(o.x);
#else
#error "bitwise.comp: unknown OP"
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
#else
void main() {
  uint i = linear_id();
  if (i >= p.numel) {
    return;
  }
  uvec2 o = offsets(i);
#if OP == AND
  out_[i] = a_[o.x] & b_[o.y];
#elif OP == OR
  out_[i] = a_[o.x] | b_[o.y];
#elif OP == NOT
  out_[i] = ~a_[o.x];
#else
#error "bitwise.comp: unknown OP"
#endif
}
#endif
