#version 450
// Fills a benchmark source buffer with pseudo-random words (an integer hash of the word's
// index and a seed), so that a read measures DRAM traffic of data like real weights: a
// buffer of zeros or of one repeated value may be stored compressed and read faster than
// any weight tensor could be.
#include "common.glsl"
layout(set = 0, binding = 0) writeonly buffer Dst { uint dst[]; };
layout(push_constant) uniform Params { uint n_words; uint stride; uint seed; } p;

// A 32-bit integer mixer (xorshift-multiply rounds): every bit of the index moves every
// output bit.
uint mix32(uint v) {
    v ^= v >> 16;
    v *= 0x7FEB352Du;
    v ^= v >> 15;
    v *= 0x846CA68Bu;
    v ^= v >> 16;
    return v;
}

void main() {
    for (uint i = gl_GlobalInvocationID.x; i < p.n_words; i += p.stride) dst[i] = mix32(i ^ mix32(p.seed));
}
