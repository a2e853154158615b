#version 450
// Memory-read ceiling: every invocation streams uvec4s through a grid-stride loop. The sum is
// written only when it equals a value random data essentially never produces, so the loads
// cannot be removed yet almost nothing is written.
#include "common.glsl"
layout(set = 0, binding = 0) buffer Out { uint sink[]; };
layout(set = 0, binding = 1) readonly buffer Src { uvec4 src[]; };
layout(push_constant) uniform Params { uint n_vec4; uint stride; } p;
void main() {
    uvec4 acc = uvec4(0u);
    for (uint i = gl_GlobalInvocationID.x; i < p.n_vec4; i += p.stride) acc ^= src[i];
    uint s = acc.x ^ acc.y ^ acc.z ^ acc.w;
    if (s == 0x9E3779B9u) sink[0] = s;
}
