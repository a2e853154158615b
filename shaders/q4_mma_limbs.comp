#version 450
// Activation limbs for the tensor-core 4-bit linear (q4_linear_mma.comp): one invocation per
// (row m, 32-column chunk c) of x writes the chunk's three int8 limbs (q4_limbs.glsl) as the
// B operands of an int8 MMA, and the chunk's unit and limb sum:
//   limbs[l][c][m]: 2 uvec4 = 32 int8, the chunk's even k of each packed word (16 bytes),
//                   then its odd k: the order the kernel lays out the decoded codes in, so
//                   for a fixed chunk and limb the 8 rows of an MMA's B are 256 contiguous bytes;
//   side[c][m]:     (unit / 16384 as float bits, -8 * (16384 s0 + 128 s1 + s2) as int), the
//                   factor that turns the combined limb dot product into x . (code - 8).
// Rows m in [M, Mp) (padding to whole 8-row fragments) get zero limbs and zero units.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_spirv_intrinsics : require
#include "common.glsl"
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal uint fmt);
#include "q4_limbs.glsl"

layout(set = 0, binding = 0) writeonly buffer Limbs { uvec4 limbs[]; };
layout(set = 0, binding = 1) writeonly buffer Side { uvec2 side[]; };
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer X4 { vec4 x4[]; };

layout(push_constant) uniform Params {
  uint K;   // x's row length
  uint KC;  // chunks (packed row length / 32)
  uint M;   // rows of x
  uint Mp;  // rows written (M rounded up to whole fragments)
} p;

void main() {
  const uint id = linear_id();
  if (id >= p.KC * p.Mp) {
    return;
  }
  // m fastest: the stores of consecutive invocations are contiguous.
  const uint m = id % p.Mp, c = id / p.Mp;
  const uint k0 = c * 32u;
  const uint xr = m * p.K;
  vec4 xv[8];
  if (m >= p.M) {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[i] = vec4(0.0);
  } else if ((p.K & 3u) == 0u && k0 + 32u <= p.K) {
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
  [[unroll]] for (uint l = 0u; l < 3u; ++l) {
    const uint b = ((l * p.KC + c) * p.Mp + m) * 2u;
    limbs[b] = uvec4(le[l][0], le[l][1], le[l][2], le[l][3]);
    limbs[b + 1u] = uvec4(lo[l][0], lo[l][1], lo[l][2], lo[l][3]);
  }
  // |16384 s0 + 128 s1 + s2| <= 32 * 127 * 16384 + ...: well inside an int.
  const int comb = lsum[0] * 16384 + lsum[1] * 128 + lsum[2];
  side[c * p.Mp + m] = uvec2(floatBitsToUint(unit * (1.0 / 16384.0)), uint(-8 * comb));
}
