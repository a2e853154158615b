#version 450
// Activation limbs for the int8 4-bit GEMV (q4_linear_gemv_wide.comp built with PRE): one
// invocation per 32-column chunk of each of the M rows of x writes the chunk's limbs, limb
// sums and unit (q4_limbs.glsl) as 7 uvec4 at [m][i][KC] (uvec4 i of every chunk contiguous,
// so the GEMV's lanes, one chunk each, load them coalesced). Made once per launch instead of
// once per GEMV workgroup.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal uint fmt);
#include "q4_limbs.glsl"

layout(set = 0, binding = 0) writeonly buffer Lb { uvec4 lb[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };

layout(push_constant) uniform Params {
  uint K;   // x's row length
  uint KC;  // chunks (packed row length / 32)
  uint M;   // rows of x
} p;

void main() {
  const uint id = linear_id();
  if (id >= p.KC * p.M) {
    return;
  }
  const uint m = id / p.KC, c = id % p.KC;
  const uint k0 = c * 32u;
  const uint xr = m * p.K;  // x row m
  vec4 xv[8];
  if ((p.K & 3u) == 0u && k0 + 32u <= p.K) {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[i] = x4[((xr + k0) >> 2) + i];
  } else {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      const uint k = k0 + 4u * i;
      xv[i] = vec4(k < p.K ? x[xr + k] : 0.0, k + 1u < p.K ? x[xr + k + 1u] : 0.0,
                   k + 2u < p.K ? x[xr + k + 2u] : 0.0, k + 3u < p.K ? x[xr + k + 3u] : 0.0);
    }
  }
  uint le[3][4], lo[3][4];
  int lsum[3];
  float unit;
  make_limbs(xv, le, lo, lsum, unit);
  const uint base = m * 7u * p.KC + c;
  [[unroll]] for (uint l = 0u; l < 3u; ++l) {
    lb[base + (2u * l) * p.KC] = uvec4(le[l][0], le[l][1], le[l][2], le[l][3]);
    lb[base + (2u * l + 1u) * p.KC] = uvec4(lo[l][0], lo[l][1], lo[l][2], lo[l][3]);
  }
  lb[base + 6u * p.KC] = uvec4(uint(lsum[0]), uint(lsum[1]), uint(lsum[2]), floatBitsToUint(unit));
}
