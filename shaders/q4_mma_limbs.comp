#version 450
// Activation limbs for the tensor-core 4-bit linear (q4_linear_mma.comp): eight invocations
// per (row m, 32-column chunk c) of x (q4_limbs_lanes.glsl) write the chunk's three int8
// limbs (q4_limbs.glsl's digits) as the B operands of an int8 MMA, and the chunk's unit and
// limb sum:
//   limbs[l][c][m]: 2 uvec4 = 32 int8, the chunk's even k of each packed word (16 bytes),
//                   then its odd k: the order the kernel lays out the decoded codes in, so
//                   for a fixed chunk and limb the 8 rows of an MMA's B are 256 contiguous bytes;
//   side[c][m]:     (unit / 16384 as float bits, -8 * (16384 s0 + 128 s1 + s2) as int), the
//                   factor that turns the combined limb dot product into x . (code - 8).
// Rows m in [M, Mp) (padding to whole 8-row fragments) get zero limbs and zero units.
// Workgroups of exactly 64 invocations (8 chunks).
//
// DQ = 1 (`q4_mma_limbs_dq_{f32,f16}`, for q4_linear_mma.comp's LIMBS = 2 forms): x is an
// 8da4w linear's raw activation row (DTYPE), quantized with the row's scale and zero point
// as its choose_qparams node stored them (`row_params`, written beside its fake-quantized
// x) to the integers d = q - zp in [-255, 255]: two int8 limbs hold them exactly
// (d = 128 a0 + a1), limbs[l][c][m] for l < 2, and side[c][m] = (scale as float bits,
// -8 * (128 s0 + s1)): the kernel's combined sums are those of d times the codes - 8, and
// the scale multiplies them once. A scale that is not finite gives a NaN unit.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#ifndef DQ
#define DQ 0
#endif

layout(set = 0, binding = 0) writeonly buffer Limbs { uint limbs[]; };
layout(set = 0, binding = 1) writeonly buffer Side { uvec2 side[]; };
#if DQ
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "act_qparams.glsl"
layout(set = 0, binding = 2) readonly buffer X { DTYPE xr[]; };
layout(set = 0, binding = 3) readonly buffer RowParams { vec2 row_params[]; };  // [M]
#else
layout(set = 0, binding = 2) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer X4 { vec4 x4[]; };
#endif

layout(push_constant) uniform Params {
  uint K;   // x's row length
  uint KC;  // chunks (packed row length / 32)
  uint M;   // rows of x
  uint Mp;  // rows written (M rounded up to whole fragments)
} p;

#include "q4_limbs_lanes.glsl"

void main() {
  const uint t = gl_LocalInvocationID.x, lane = t & 7u;
  const uint items = p.KC * p.Mp;
  // Workgroups walk groups of 8 chunks (limb_lane_items): m fastest, so the stores of
  // consecutive chunks are contiguous.
  for (uint first = limb_lane_first(); first < items; first += limb_lane_stride()) {
    const uint item = first + (t >> 3);
    const bool live = item < items;
    const uint m = live ? item % p.Mp : 0u, c = live ? item / p.Mp : 0u;
#if DQ
    const bool row = live && m < p.M;
    const vec2 qp = row ? row_params[m] : vec2(1.0, 0.0);
    const float invc = act_inv_scale(qp.x);
    vec4 dv = vec4(0.0);
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      const uint k = c * 32u + 4u * (t & 7u) + e;
      if (row && k < p.K) dv[e] = act_quant_offset(float(xr[m * p.K + k]), qp.y, invc);
    }
    uint word[2];
    int lsum[2];
    make_int_limbs_lane(dv, t, word, lsum);
    if (!live) continue;
    [[unroll]] for (uint l = 0u; l < 2u; ++l) {
      limbs[((l * p.KC + c) * p.Mp + m) * 8u + (lane & 1u) * 4u + (lane >> 1)] = word[l];
    }
    if (lane == 0u) {
      const bool finite = !isinf(qp.x) && !isnan(qp.x);
      const float unit = !row ? 0.0 : finite ? qp.x : uintBitsToFloat(0x7FC00000u);
      side[c * p.Mp + m] = uvec2(floatBitsToUint(unit), uint(-8 * (lsum[0] * 128 + lsum[1])));
    }
#else
    const vec4 xv = limb_lane_load(m * p.K, p.K, c, t, live && m < p.M);
    uint word[3];
    int lsum[3];
    float unit;
    make_limbs_lane(xv, t, word, lsum, unit);
    if (!live) continue;
    // Word (lane % 2) * 4 + lane / 2 of the chunk's 8: the even-k words, then the odd-k ones.
    [[unroll]] for (uint l = 0u; l < 3u; ++l) {
      limbs[((l * p.KC + c) * p.Mp + m) * 8u + (lane & 1u) * 4u + (lane >> 1)] = word[l];
    }
    if (lane == 0u) {
      // |16384 s0 + 128 s1 + s2| <= 32 * 127 * 16384 + ...: well inside an int.
      const int comb = lsum[0] * 16384 + lsum[1] * 128 + lsum[2];
      side[c * p.Mp + m] = uvec2(floatBitsToUint(unit * (1.0 / 16384.0)), uint(-8 * comb));
    }
#endif
  }
}
