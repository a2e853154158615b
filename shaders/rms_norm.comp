#version 450
// RMSNorm over the last dim, one workgroup per row of x [R, N]:
//   out[r][j] = x[r][j] * rsqrt(mean_j(x[r][j]^2) + eps) * w[j].
// The workgroup's LANES invocations (the local size, a power of two from 64 to 512 that the
// runtime picks from N: ops/llama.rs `norm_lanes`) each take j = lane + LANES * i; the first
// VPT of an invocation's values and weights stay in registers between the sum of squares and
// the write, all loaded before the first store (a row of 4096: one round of loads at 512
// lanes, where the former 64-invocation form looped over 64 values per invocation, twice,
// its write loop loading after each store). The partial sums meet in a shared-memory tree,
// so any N works and no subgroup size is assumed. Math in float for every storage type. Rows
// are numbered linearly over a folded 2-D grid of workgroups.
// ADD = 1 (`add_rms_norm`, ops/fusion.rs): x = a + b is first written to `sum` (a residual
// add whose result the next op normalizes and later ops read), then normalized; every
// element is read and written by the same invocation, so the buffers may alias row-wise.
// With ADD, `sum_only` = 1 writes the sum alone: the 8da4w linears that read out compute the
// norm themselves at M = 1 (q4_linear_gemv_half.comp's NORM_ADD forms; ops/fusion.rs).
// MINMAX = 1 (`rms_norm_mm`, `add_rms_norm_mm`, ops/quantize.rs): also writes each row's
// (min(0, min_j out), max(0, max_j out)) as stored, for the 8da4w linears that read out and
// quantize it per row (q4_linear_gemv_half.comp's DQ_MM forms): the minimum and maximum
// then need no reduction over the row in every one of their workgroups.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "f16_round.glsl"
#ifndef ADD
#define ADD 0
#endif
#ifndef MINMAX
#define MINMAX 0
#endif

#define LANES gl_WorkGroupSize.x
#define MAX_LANES 512
#define VPT 8  // values per invocation held in registers (and loads in flight)

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Weight { DTYPE w_[]; };
#if ADD
layout(set = 0, binding = 3) readonly buffer InB { DTYPE b_[]; };
layout(set = 0, binding = 4) buffer Sum { DTYPE sum_[]; };
#endif
#if MINMAX
// [R] (lower, upper): after the op's other bindings.
#if ADD
#define MM_BINDING 5
#else
#define MM_BINDING 3
#endif
layout(set = 0, binding = MM_BINDING) writeonly buffer RowMinMax { vec2 row_mm[]; };
#include "row_range.glsl"
#endif

layout(push_constant) uniform Params {
  uint R;
  uint N;
  float eps;
  uint sum_only;  // ADD: write the sum, not the norm
} p;

shared float s_sum[MAX_LANES];

#if ADD
// The sum as the separate add would store it: rounded to the storage type (on the bits, since
// a driver folds a round trip through float16_t: f16_round.glsl), and written to `sum`.
float add_and_store(uint i, float a, float b) {
  const float v = ROUND_AS(DTYPE, a + b);
  sum_[i] = DTYPE(v);
  return v;
}
#endif

void write_out(uint base, uint j, float o) {
  out_[base + j] = DTYPE(o);
#if MINMAX
  // As stored (rounded on the bits for fp16: f16_round.glsl).
  row_range_add(ROUND_AS(DTYPE, o));
#endif
}

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.R) {
    return; // whole workgroup
  }
  uint lane = gl_LocalInvocationID.x;
  uint base = row * p.N;
#if ADD
  if (p.sum_only != 0u) {
    for (uint j = lane; j < p.N; j += LANES) add_and_store(base + j, float(x_[base + j]), float(b_[base + j]));
    return;  // whole workgroup (a push constant)
  }
#endif
  // Every load before the first store (a store may alias them as far as the compiler
  // knows, so loads after it would wait for it).
  float v[VPT], wv[VPT];
  float acc = 0.0;
  [[unroll]] for (uint i = 0u; i < VPT; ++i) {
    const uint j = lane + LANES * i;
    v[i] = j < p.N ? float(x_[base + j]) : 0.0;
    wv[i] = j < p.N ? float(w_[j]) : 0.0;
  }
#if ADD
  float bv[VPT];
  [[unroll]] for (uint i = 0u; i < VPT; ++i) {
    const uint j = lane + LANES * i;
    bv[i] = j < p.N ? float(b_[base + j]) : 0.0;
  }
  [[unroll]] for (uint i = 0u; i < VPT; ++i) {
    const uint j = lane + LANES * i;
    if (j < p.N) v[i] = add_and_store(base + j, v[i], bv[i]);
  }
#endif
  [[unroll]] for (uint i = 0u; i < VPT; ++i) acc += v[i] * v[i];
  // Rows longer than VPT * LANES: the rest in a loop, read again in the write loop below.
  for (uint j = lane + LANES * VPT; j < p.N; j += LANES) {
#if ADD
    const float t = add_and_store(base + j, float(x_[base + j]), float(b_[base + j]));
#else
    const float t = float(x_[base + j]);
#endif
    acc += t * t;
  }
  s_sum[lane] = acc;
  barrier();
  for (uint stride = LANES / 2; stride > 0; stride >>= 1) {
    if (lane < stride) {
      s_sum[lane] += s_sum[lane + stride];
    }
    barrier();
  }
  float scale = inversesqrt(s_sum[0] / float(p.N) + p.eps);
  [[unroll]] for (uint i = 0u; i < VPT; ++i) {
    const uint j = lane + LANES * i;
    if (j < p.N) write_out(base, j, v[i] * scale * wv[i]);
  }
  for (uint j = lane + LANES * VPT; j < p.N; j += LANES) {
#if ADD
    const float t = float(sum_[base + j]);
#else
    const float t = float(x_[base + j]);
#endif
    write_out(base, j, t * scale * float(w_[j]));
  }
#if MINMAX
  row_range_write(lane, row);
#endif
}
