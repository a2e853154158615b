#version 450
// Memory copy ceiling (read + write), uvec4 per step, grid-stride loop.
#include "common.glsl"
layout(set = 0, binding = 0) writeonly buffer Dst { uvec4 dst[]; };
layout(set = 0, binding = 1) readonly buffer Src { uvec4 src[]; };
layout(push_constant) uniform Params { uint n_vec4; uint stride; } p;
void main() {
    for (uint i = gl_GlobalInvocationID.x; i < p.n_vec4; i += p.stride) dst[i] = src[i];
}
