#version 450
// The f16 tensor-core forward's pre-pass (q4_bwd_rowscale.comp's outputs) for an 8da4w
// linear (et_vk.linear_dq8ca_q4gsw) from its raw x: each row quantized per row as the
// choose_qparams node quantizes it (act_qparams.glsl, its parameters as specialization
// constants 3-7, the half GEMV's DQ forms' arithmetic), as the integers d = q - zp. They lie
// in [-255, 255], exact in one fp16, so the kernel's `_x16` forms multiply them with no lo
// half: one MMA per fragment pair in the codes form instead of two for the fake-quantized
// fp32 x (whose d * scale needs an fp16 hi / lo pair). The row's scale comes out at the
// kernel's store: it multiplies each row's sums by 1 / (rowscale * W's power of two), and
// rowscale here is 1 / scale (act_inv_scale, as the fake-quant divides): the sums of d times
// the codes, times scale, are the fake-quantized x's sums with the products rounded once
// less. Launch and layout are q4_bwd_rowscale's: one 256-invocation workgroup per row m and
// slice s of the kernel's split (every slice's workgroup reduces the whole row for the
// parameters; slices only split at small M), writing rowscale[m][s] and its slice of the
// row's pair words, hi then lo (zero).
//
// A row that holds Inf or NaN gives a scale that is not finite; its hi halves are then NaN,
// so the row comes out NaN, never silently finite.
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common.glsl"
#include "act_qparams.glsl"

#define NT 256u

#include "act_qparams_spec.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { float rowscale[]; };  // [M][S]
layout(set = 0, binding = 1) readonly buffer A { DTYPE a[]; };            // [M][N]
layout(set = 0, binding = 2) writeonly buffer AHL { uint ahl[]; };        // [M][2][RW]

layout(push_constant) uniform Params {
  uint M;
  uint N;      // x's row length (the kernel's reduction)
  uint slice;  // values of N per slice: a multiple of 32, or >= N (one slice)
} p;

shared float s_lo[NT];
shared float s_hi[NT];

void main() {
  const uint slices = (p.N + p.slice - 1u) / p.slice;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint m = wg / slices, js = wg % slices;
  const uint t = gl_LocalInvocationID.x;
  if (m >= p.M) return;  // uniform per workgroup
  const uint base = m * p.N;
  const uint rw = (p.N + 7u) / 8u * 4u;

  // The row's min and max, starting from 0 (act_qparams takes min(lo, 0), max(hi, 0)).
  float lo = 0.0, hi = 0.0;
  for (uint i = t; i < p.N; i += NT) {
    const float v = float(a[base + i]);
    lo = min(lo, v);
    hi = max(hi, v);
  }
  s_lo[t] = lo;
  s_hi[t] = hi;
  barrier();
  for (uint w = NT / 2u; w > 0u; w >>= 1) {
    if (t < w) {
      s_lo[t] = min(s_lo[t], s_lo[t + w]);
      s_hi[t] = max(s_hi[t], s_hi[t + w]);
    }
    barrier();
  }
  const vec4 qp = act_qparams_spec(s_lo[0], s_hi[0]);
  const float sc = qp.z, zp = qp.w;
  const float invc = act_inv_scale(sc);
  const bool finite = !isinf(sc) && !isnan(sc);
  if (t == 0u) rowscale[wg] = invc;

  // Slices start at multiples of 32 values; the last one also writes the row's padding.
  const uint w_begin = js * (p.slice / 2u);
  const uint w_end = js + 1u == slices ? rw : w_begin + p.slice / 2u;
  const uint out0 = 2u * m * rw;
  for (uint w = w_begin + t; w < w_end; w += NT) {
    vec2 d = vec2(0.0);
    [[unroll]] for (uint e = 0u; e < 2u; ++e) {
      const uint n = 2u * w + e;
      if (n < p.N) {
        d[e] = finite ? act_quant_offset(float(a[base + n]), zp, invc) : uintBitsToFloat(0x7FC00000u);
      }
    }
    ahl[out0 + w] = packFloat2x16(f16vec2(d));
    ahl[out0 + rw + w] = 0u;
  }
}
