#version 450
// Pre-pass of the tensor-core backward (q4_linear_bwd_mma), one 256-invocation workgroup per
// row m of d_out [M][N] (the grid may spill into y for M > 65535):
// - rowscale[m]: the power of two that puts the row's largest |value| in [2^13, 2^14);
// - the row scaled by it, as fp16 hi / lo pairs (split16), for the main kernel's dy tiles:
//   row m of `ahl` is RW words of hi pairs (n, n + 1), then RW words of lo pairs, with RW =
//   N rounded up to 8, halved (the padding zero). Every column tile's workgroup would
//   otherwise load, scale and split the same rows again.
// Eight loads in flight per invocation (the row is read twice, for its peak and for the
// pairs; the second read finds it in L2). Timed only together with the kernel's change to
// read the pairs (docs/performance.md, session 13, run 3).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
#include "q4_bwd_scale.glsl"

#define NT 256u
#define UNROLL 8u

layout(set = 0, binding = 0) writeonly buffer Out { float rowscale[]; };  // [M]
layout(set = 0, binding = 1) readonly buffer A { float a[]; };            // [M][N]
layout(set = 0, binding = 2) writeonly buffer AHL { uint ahl[]; };        // [M][2][RW]

layout(push_constant) uniform Params {
  uint M;
  uint N;
} p;

shared uint peak[NT];

void main() {
  const uint m = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint t = gl_LocalInvocationID.x;
  if (m >= p.M) return;  // uniform per workgroup
  const uint base = m * p.N;
  uint mb = 0u;
  for (uint n0 = t; n0 < p.N; n0 += UNROLL * NT) {
    uint v[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint n = n0 + u * NT;
      v[u] = n < p.N ? floatBitsToUint(a[base + n]) & 0x7FFFFFFFu : 0u;
    }
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) mb = max(mb, v[u]);
  }
  // A tree over the workgroup.
  peak[t] = mb;
  barrier();
  for (uint w = NT / 2u; w > 0u; w >>= 1) {
    if (t < w) peak[t] = max(peak[t], peak[t + w]);
    barrier();
  }
  const float sc = peak_scale(peak[0]);
  if (t == 0u) rowscale[m] = sc;
  const uint rw = (p.N + 7u) / 8u * 4u;
  const uint out0 = 2u * m * rw;
  for (uint w0 = t; w0 < rw; w0 += UNROLL * NT) {
    vec2 v[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint n = 2u * (w0 + u * NT);
      v[u] = vec2(n < p.N ? a[base + n] : 0.0, n + 1u < p.N ? a[base + n + 1u] : 0.0);
    }
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      const uint w = w0 + u * NT;
      if (w < rw) {
        const vec2 s0 = split16(v[u].x * sc), s1 = split16(v[u].y * sc);
        ahl[out0 + w] = packFloat2x16(f16vec2(float16_t(s0.x), float16_t(s1.x)));
        ahl[out0 + rw + w] = packFloat2x16(f16vec2(float16_t(s0.y), float16_t(s1.y)));
      }
    }
  }
}
