#version 450
// torchao.choose_qparams_affine over rows (block_size [1, ..., 1, K]): one workgroup per row
// of x [R, K] finds the row's min and max (a shared-memory tree over LANES strided partial
// results, so any K works and no subgroup size is assumed), then invocation 0 computes the
// scale and zero point (act_qparams.glsl). Outputs are written as raw words so that one
// shader serves each dtype: scale fp32 or fp16, zero point int32, fp32 or int8 (sub-word
// elements by atomic AND / OR on their word, leaving the neighbours' bytes).
//
// FAKEQUANT = 1 (`choose_qparams_fq_rows_*`): the workgroup then also writes its row of x
// quantized and dequantized with the scale and zero point as stored (what
// q4_act_fakequant.comp computes from them), as fp32, and those two values as floats
// (`row_params`), for the 8da4w linears that read this
// node's outputs (ops/quantize.rs: the fusion's rules). It saves that node's launch (~4-5
// us of fixed cost at M = 1 on an H200) and, for fp16 x, the conversion node: the row was
// just read, so the second pass finds it in the cache.
#include "common.glsl"
#include "act_qparams.glsl"
#ifndef FAKEQUANT
#define FAKEQUANT 0
#endif

// Must equal the local size (LANES, 1, 1). 256 lanes, not rms_norm's 64: at M = 1 this node
// is one workgroup over a whole row of x (K = 8192: 32 loads per lane) on the decode path of
// every 8da4w linear. The `_wide` forms (LANES = 1024, rows longer than 256 x UNROLL values
// where the device takes such workgroups): a row's two passes in a quarter of the rounds of
// loads, for the small M whose linears still need this node on long rows (the 8da4w GEMVs
// past the persistent form: one workgroup per row of 16384-28672 values took 10-15 us; 1024
// lanes 1-3.4 us less, H100, docs/performance.md, session 42).
#ifndef LANES
#define LANES 256
#endif
#ifndef UNROLL
#define UNROLL 16u
#endif

layout(set = 0, binding = 0) buffer Scale { uint scale_w[]; };
layout(set = 0, binding = 1) buffer Zp { uint zp_w[]; };
layout(set = 0, binding = 2) readonly buffer In { DTYPE x_[]; };
#if FAKEQUANT
layout(set = 0, binding = 3) writeonly buffer XQ { float xq[]; };
// The row's scale and zero point as stored and read back, as floats: the 8da4w linears'
// integer forms (q4_mma_limbs.comp's DQ form) quantize the raw x with them.
layout(set = 0, binding = 4) writeonly buffer RowParams { vec2 row_params[]; };
#endif

layout(push_constant) uniform Params {
  uint R;
  uint K;
  uint mapping;  // 0 ASYMMETRIC, 1 SYMMETRIC, 2 SYMMETRIC_NO_CLIPPING_ERR
  int qmin;
  int qmax;
  float eps;
  uint kinds;    // scale: 0 fp32, 1 fp16 (bits 0-7); zero point: 0 int32, 1 fp32, 2 int8 (8-15)
  uint pad_;
} p;

shared float s_lo[LANES];
shared float s_hi[LANES];
#if FAKEQUANT
shared float s_stored[2];  // the scale and zero point as the linear reads them back
#endif

// Element `i` of a buffer of 2^(5 - log2(bits)) elements per word: `v`'s low `bits` bits.
void store_sub(uint i, uint bits, uint v, bool to_scale) {
  const uint per = 32u / bits, shift = (i % per) * bits, mask = ((1u << bits) - 1u) << shift;
  if (to_scale) {
    atomicAnd(scale_w[i / per], ~mask);
    atomicOr(scale_w[i / per], (v << shift) & mask);
  } else {
    atomicAnd(zp_w[i / per], ~mask);
    atomicOr(zp_w[i / per], (v << shift) & mask);
  }
}

void main() {
  const uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.R) return;  // whole workgroup
  const uint lane = gl_LocalInvocationID.x, base = row * p.K;
  float lo = uintBitsToFloat(0x7F800000u), hi = -lo;
  // UNROLL independent loads per round: at M = 1 this one workgroup is bound by load latency
  // (node time on an H200 at K = 8192 / 28672: one load per round 7.4-9.2 / 15.6-18.7 us,
  // eight 6.5 / 12.0, sixteen 5.6 / 8.6, thirty-two 5.6 / 10.1).
  uint j = lane;
  for (; j + (UNROLL - 1u) * LANES < p.K; j += UNROLL * LANES) {
    float v[UNROLL];
    for (uint u = 0u; u < UNROLL; ++u) {
      v[u] = float(x_[base + j + u * LANES]);
    }
    for (uint u = 0u; u < UNROLL; ++u) {
      lo = min(lo, v[u]);
      hi = max(hi, v[u]);
    }
  }
  for (; j < p.K; j += LANES) {
    const float v = float(x_[base + j]);
    lo = min(lo, v);
    hi = max(hi, v);
  }
  s_lo[lane] = lo;
  s_hi[lane] = hi;
  barrier();
  for (uint stride = LANES / 2u; stride > 0u; stride >>= 1) {
    if (lane < stride) {
      s_lo[lane] = min(s_lo[lane], s_lo[lane + stride]);
      s_hi[lane] = max(s_hi[lane], s_hi[lane + stride]);
    }
    barrier();
  }
  if (lane == 0u) {
    const vec4 qp =
        act_qparams(s_lo[0], s_hi[0], p.mapping, p.qmin, p.qmax, p.eps, p.kinds);
    if ((p.kinds & 0xFFu) == 0u) {
      scale_w[row] = floatBitsToUint(qp.x);
    } else {
      store_sub(row, 16u, packHalf2x16(vec2(qp.x, 0.0)) & 0xFFFFu, true);
    }
    const uint zk = (p.kinds >> 8) & 0xFFu;
    if (zk == 0u) {
      zp_w[row] = uint(int(qp.y));
    } else if (zk == 1u) {
      zp_w[row] = floatBitsToUint(qp.y);
    } else {
      store_sub(row, 8u, uint(int(qp.y)) & 0xFFu, false);
    }
#if FAKEQUANT
    s_stored[0] = qp.z;
    s_stored[1] = qp.w;
    row_params[row] = qp.zw;
#endif
  }
#if FAKEQUANT
  barrier();
  const float s = s_stored[0], z = s_stored[1], invc = act_inv_scale(s);
  uint i = lane;
  for (; i + (UNROLL - 1u) * LANES < p.K; i += UNROLL * LANES) {
    float v[UNROLL];
    for (uint u = 0u; u < UNROLL; ++u) v[u] = float(x_[base + i + u * LANES]);
    for (uint u = 0u; u < UNROLL; ++u) xq[base + i + u * LANES] = act_fake_quant(v[u], s, z, invc);
  }
  for (; i < p.K; i += LANES) xq[base + i] = act_fake_quant(float(x_[base + i]), s, z, invc);
#endif
}
