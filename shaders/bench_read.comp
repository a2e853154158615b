#version 450
// Memory-read ceiling: every invocation streams elements (uvec4 by default, one u32 with
// -DWORDS, a uvec2 with -DPAIRS: the access widths the q4 kernels use) through a grid-stride
// loop. The sum is
// written only when it equals a value random data essentially never produces, so the loads
// cannot be removed yet almost nothing is written.
#include "common.glsl"
#ifdef WORDS
#define ELEM uint
#define ZERO 0u
#define FOLD(a) (a)
#elif defined(PAIRS)
#define ELEM uvec2
#define ZERO uvec2(0u)
#define FOLD(a) (a.x ^ a.y)
#else
#define ELEM uvec4
#define ZERO uvec4(0u)
#define FOLD(a) (a.x ^ a.y ^ a.z ^ a.w)
#endif
layout(set = 0, binding = 0) buffer Out { uint sink[]; };
layout(set = 0, binding = 1) readonly buffer Src { ELEM src[]; };
layout(push_constant) uniform Params { uint n_elems; uint stride; } p;
// UNROLL = U (experiments, by override): U independent loads per invocation and step, at
// i, i + stride, ..., so that a launch of few invocations has U times the bytes in flight
// (is a persistent kernel's read bound by its invocations or by its bytes in flight?).
void main() {
    ELEM acc = ZERO;
#ifdef UNROLL
    uint i = gl_GlobalInvocationID.x;
    for (; i + (UNROLL - 1u) * p.stride < p.n_elems; i += UNROLL * p.stride) {
        ELEM v[UNROLL];
        for (uint u = 0u; u < UNROLL; ++u) v[u] = src[i + u * p.stride];
        for (uint u = 0u; u < UNROLL; ++u) acc ^= v[u];
    }
    for (; i < p.n_elems; i += p.stride) acc ^= src[i];
#else
    for (uint i = gl_GlobalInvocationID.x; i < p.n_elems; i += p.stride) acc ^= src[i];
#endif
    uint s = FOLD(acc);
    if (s == 0x9E3779B9u) sink[0] = s;
}
