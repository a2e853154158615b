#version 450
// Pre-pass of the tensor-core backward (q4_linear_bwd_mma): for each row m of d_out [M][N],
// the power of two that puts the row's largest |value| in [2^13, 2^14). One workgroup per
// row (the grid may spill into y for M > 65535).
#include "common.glsl"
#include "q4_bwd_scale.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { float rowscale[]; };  // [M]
layout(set = 0, binding = 1) readonly buffer A { float a[]; };            // [M][N]

layout(push_constant) uniform Params {
  uint M;
  uint N;
} p;

shared uint peak[64];

void main() {
  const uint m = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint t = gl_LocalInvocationID.x, nt = 64u;
  if (m >= p.M) return;  // uniform per workgroup
  uint mb = 0u;
  for (uint n = t; n < p.N; n += nt) mb = max(mb, floatBitsToUint(a[m * p.N + n]) & 0x7FFFFFFFu);
  // A tree over the 64 invocations of the launch.
  peak[t] = mb;
  barrier();
  for (uint w = 32u; w > 0u; w >>= 1) {
    if (t < w) peak[t] = max(peak[t], peak[t + w]);
    barrier();
  }
  if (t == 0u) rowscale[m] = peak_scale(peak[0]);
}
