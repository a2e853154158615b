#version 450
// Activation limbs for the int8 4-bit GEMV (q4_linear_gemv_wide.comp built with PRE): eight
// invocations per 32-column chunk of each of the M rows of x (q4_limbs_lanes.glsl) write the
// chunk's limbs, limb sums and unit (q4_limbs.glsl's digits) as 7 uvec4 at [m][i][KC]
// (uvec4 i of every chunk contiguous, so the GEMV's lanes, one chunk each, load them
// coalesced). Made once per launch instead of once per GEMV workgroup. Workgroups of exactly
// 64 invocations (8 chunks).
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Lb { uint lb[]; };
layout(set = 0, binding = 0) writeonly buffer Lb4 { uvec4 lb4[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };

layout(push_constant) uniform Params {
  uint K;   // x's row length
  uint KC;  // chunks (packed row length / 32)
  uint M;   // rows of x
} p;

#include "q4_limbs_lanes.glsl"

void main() {
  const uint t = gl_LocalInvocationID.x, lane = t & 7u;
  const uint items = p.KC * p.M;
  for (uint first = limb_lane_first(); first < items; first += limb_lane_stride()) {
    const uint item = first + (t >> 3);
    const bool live = item < items;
    const uint m = live ? item / p.KC : 0u, c = live ? item % p.KC : 0u;
    const vec4 xv = limb_lane_load(m * p.K, p.K, c, t, live);
    uint word[3];
    int lsum[3];
    float unit;
    make_limbs_lane(xv, t, word, lsum, unit);
    if (!live) continue;
    // uvec4 2l + lane % 2 (limb l's even-k / odd-k words) of the chunk, word lane / 2.
    const uint base = m * 7u * p.KC + c;
    [[unroll]] for (uint l = 0u; l < 3u; ++l) {
      lb[(base + (2u * l + (lane & 1u)) * p.KC) * 4u + (lane >> 1)] = word[l];
    }
    if (lane == 0u) {
      lb4[base + 6u * p.KC] = uvec4(uint(lsum[0]), uint(lsum[1]), uint(lsum[2]), floatBitsToUint(unit));
    }
  }
}
