#version 450
// Pre-pass of the tensor-core backward (q4_linear_bwd_mma): one 256-invocation workgroup per
// row m of d_out [M][N] and slice s of the main kernel's split of N (S = ceil(N / slice)
// slices; one when it does not split; the grid may spill into y):
// - rowscale[m][s]: the power of two that puts the largest |value| of the row's slice in
//   [2^13, 2^14) (the main kernel's workgroup of slice s divides it out of its partial sums,
//   so a scale per slice is as exact as one per row, and finer);
// - the slice scaled by it, as fp16 hi / lo pairs (split16), for the main kernel's dy tiles:
//   row m of `ahl` is RW words of hi pairs (n, n + 1), then RW words of lo pairs, with RW =
//   N rounded up to 8, halved (the padding zero). Every column tile's workgroup would
//   otherwise load, scale and split the same rows again.
// A workgroup per row (session 13) left M = 32 with 32 workgroups: 9 us of the 126 us op at
// 8192^2 on an H200 (session 14). Slices of up to 2048 values are read once, into registers;
// longer ones (the unsplit kernel) are read again for the pairs (from L2).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
#include "q4_bwd_scale.glsl"

#define NT 256u
#define UNROLL 4u  // pair words per invocation per pass: UNROLL * NT * 2 values

layout(set = 0, binding = 0) writeonly buffer Out { float rowscale[]; };  // [M][S]
layout(set = 0, binding = 1) readonly buffer A { float a[]; };            // [M][N]
layout(set = 0, binding = 2) writeonly buffer AHL { uint ahl[]; };        // [M][2][RW]

layout(push_constant) uniform Params {
  uint M;
  uint N;
  uint slice;  // values of N per slice: a multiple of 32, or >= N (one slice)
} p;

shared uint peak[NT];

// Values 2w, 2w + 1 of the row at `base` (zero past N or the slice's last word).
vec2 pair_at(uint base, uint w, uint w_end) {
  const uint n = 2u * w;
  if (w >= w_end) return vec2(0.0);
  return vec2(n < p.N ? a[base + n] : 0.0, n + 1u < p.N ? a[base + n + 1u] : 0.0);
}

uint abs_bits(vec2 v) {
  return max(floatBitsToUint(v.x) & 0x7FFFFFFFu, floatBitsToUint(v.y) & 0x7FFFFFFFu);
}

void write_pair(uint out0, uint rw, uint w, vec2 v, float sc) {
  const vec2 s0 = split16(v.x * sc), s1 = split16(v.y * sc);
  ahl[out0 + w] = packFloat2x16(f16vec2(float16_t(s0.x), float16_t(s1.x)));
  ahl[out0 + rw + w] = packFloat2x16(f16vec2(float16_t(s0.y), float16_t(s1.y)));
}

void main() {
  const uint slices = (p.N + p.slice - 1u) / p.slice;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint m = wg / slices, js = wg % slices;
  const uint t = gl_LocalInvocationID.x;
  if (m >= p.M) return;  // uniform per workgroup
  const uint base = m * p.N;
  const uint rw = (p.N + 7u) / 8u * 4u;
  // Slices start at multiples of 32 values; the last one also writes the row's padding.
  const uint w_begin = js * (p.slice / 2u);
  const uint w_end = js + 1u == slices ? rw : w_begin + p.slice / 2u;

  vec2 first[UNROLL];
  uint mb = 0u;
  [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
    first[u] = pair_at(base, w_begin + t + u * NT, w_end);
    mb = max(mb, abs_bits(first[u]));
  }
  for (uint w0 = w_begin + t + UNROLL * NT; w0 < w_end; w0 += UNROLL * NT) {
    vec2 v[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) v[u] = pair_at(base, w0 + u * NT, w_end);
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) mb = max(mb, abs_bits(v[u]));
  }
  // A tree over the workgroup.
  peak[t] = mb;
  barrier();
  for (uint w = NT / 2u; w > 0u; w >>= 1) {
    if (t < w) peak[t] = max(peak[t], peak[t + w]);
    barrier();
  }
  const float sc = peak_scale(peak[0]);
  if (t == 0u) rowscale[wg] = sc;
  const uint out0 = 2u * m * rw;
  [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
    const uint w = w_begin + t + u * NT;
    if (w < w_end) write_pair(out0, rw, w, first[u], sc);
  }
  for (uint w0 = w_begin + t + UNROLL * NT; w0 < w_end; w0 += UNROLL * NT) {
    vec2 v[UNROLL];
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) v[u] = pair_at(base, w0 + u * NT, w_end);
    [[unroll]] for (uint u = 0u; u < UNROLL; ++u) {
      if (w0 + u * NT < w_end) write_pair(out0, rw, w0 + u * NT, v[u], sc);
    }
  }
}
