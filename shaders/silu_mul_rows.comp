#version 450
// Gated SiLU by rows with each row's range: out = silu(x) * u = x / (1 + exp(-x)) * u (the
// arithmetic of silu.comp's GATE form, in float for fp16 storage too), one workgroup per row
// of [R, N], which also writes the row's (min(0, min_j out), max(0, max_j out)) as stored to
// `row_mm`, for the 8da4w linear after it (a Llama MLP's w2: ops/fusion.rs, ops/quantize.rs
// `plan_row_minmax`; its M = 1 DQ GEMV then reads the range instead of reducing the row in
// every workgroup).
// The local size (64-1024, a power of two: ops/fusion.rs `silu_row_lanes`) covers the row with
// VPT values per invocation whose loads go out together; longer rows loop over the rest.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "f16_round.glsl"

#define LANES gl_WorkGroupSize.x
#define MAX_LANES 1024
#define VPT 16

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };
layout(set = 0, binding = 2) readonly buffer Up { DTYPE up_[]; };
layout(set = 0, binding = 3) writeonly buffer RowMinMax { vec2 row_mm[]; };
#include "row_range.glsl"

layout(push_constant) uniform Params {
  uint R;
  uint N;
} p;

void gate(uint i, float x, float u) {
  // As silu.comp: exp(-x) may overflow to +inf for very negative x (x / inf = -0).
  const float r = x / (1.0 + exp(-x)) * u;
  out_[i] = DTYPE(r);
  // As stored (rounded on the bits for fp16: f16_round.glsl).
  row_range_add(ROUND_AS(DTYPE, r));
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.R) {
    return;  // whole workgroup
  }
  const uint lane = gl_LocalInvocationID.x, base = row * p.N;
  // Every load before the first store (a store may alias them as far as the compiler
  // knows, so loads after it would wait for it).
  float xv[VPT], uv[VPT];
  [[unroll]] for (uint i = 0u; i < VPT; ++i) {
    const uint j = lane + LANES * i;
    xv[i] = j < p.N ? float(in_[base + j]) : 0.0;
    uv[i] = j < p.N ? float(up_[base + j]) : 0.0;
  }
  [[unroll]] for (uint i = 0u; i < VPT; ++i) {
    const uint j = lane + LANES * i;
    if (j < p.N) gate(base + j, xv[i], uv[i]);
  }
  for (uint j = lane + LANES * VPT; j < p.N; j += LANES) {
    gate(base + j, float(in_[base + j]), float(up_[base + j]));
  }
  row_range_write(lane, row);
}
