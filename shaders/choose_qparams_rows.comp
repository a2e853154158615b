#version 450
// torchao.choose_qparams_affine over rows (block_size [1, ..., 1, K]): one workgroup per row
// of x [R, K] finds the row's min and max (a shared-memory tree over LANES strided partial
// results, so any K works and no subgroup size is assumed), then invocation 0 computes in
// fp32, as torchao does for fp32 input:
//   lo = min(min_k x, 0), hi = max(max_k x, 0)
//   ASYMMETRIC (mapping 0): scale = max((hi - lo) / (qmax - qmin), eps),
//                           zp = clamp(qmin - roundEven(lo / scale), qmin, qmax)
//   SYMMETRIC (1):          scale = max(max(-lo, hi) / ((qmax - qmin) / 2), eps)
//   SYMMETRIC_NO_CLIPPING_ERR (2): scale = max(lo / qmin > hi / qmax ? lo / qmin : hi / qmax, eps)
//   symmetric zero point:   trunc((qmax + qmin + 1) / 2)
// Divisions get one residual correction (GLSL's `/` may be 2.5 ulp off; the zero point and
// every later rounding of x / scale follow the quotient). Outputs are written as raw words so
// that one shader serves each dtype: scale fp32 or fp16, zero point int32, fp32 or int8
// (sub-word elements by atomic AND / OR on their word, leaving the neighbours' bytes).
//
// FAKEQUANT = 1 (`choose_qparams_fq_rows_*`): the workgroup then also writes its row of x
// quantized and dequantized with the scale and zero point as stored (what
// q4_act_fakequant.comp computes from them), as fp32, for the 8da4w linears that read this
// node's outputs (ops/quantize.rs: the fusion's rules). It saves that node's launch (~4-5
// us of fixed cost at M = 1 on an H200) and, for fp16 x, the conversion node: the row was
// just read, so the second pass finds it in the cache.
#include "common.glsl"
#ifndef FAKEQUANT
#define FAKEQUANT 0
#endif

// Must equal the local size (256, 1, 1). 256 lanes, not rms_norm's 64: at M = 1 this node is
// one workgroup over a whole row of x (K = 8192: 32 loads per lane) on the decode path of
// every 8da4w linear.
#define LANES 256
#ifndef UNROLL
#define UNROLL 16u
#endif

layout(set = 0, binding = 0) buffer Scale { uint scale_w[]; };
layout(set = 0, binding = 1) buffer Zp { uint zp_w[]; };
layout(set = 0, binding = 2) readonly buffer In { DTYPE x_[]; };
#if FAKEQUANT
layout(set = 0, binding = 3) writeonly buffer XQ { float xq[]; };
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

float div_fixed(float a, float b) {
  precise float q = a / b;
  precise float r = fma(-q, b, a);
  precise float qc = q + r / b;
  return qc;
}

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

#if FAKEQUANT
// q4_act_fakequant.comp's arithmetic, term for term (invc: 1 / s corrected once).
float fake_quant(float x, float s, float z, float invc) {
  precise float t = x * invc;
  const float q = clamp(roundEven(t) + z, -128.0, 127.0);
  precise float o = (q - z) * s;
  return o;
}
#endif

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
    lo = min(s_lo[0], 0.0);
    hi = max(s_hi[0], 0.0);
    const float qmin = float(p.qmin), qmax = float(p.qmax);
    float scale;
    float zp;
    if (p.mapping == 0u) {
      precise float range = hi - lo;
      scale = max(div_fixed(range, qmax - qmin), p.eps);
      zp = clamp(qmin - roundEven(div_fixed(lo, scale)), qmin, qmax);
    } else {
      if (p.mapping == 1u) {
        scale = div_fixed(max(-lo, hi), (qmax - qmin) / 2.0);
      } else {
        const float smin = div_fixed(lo, qmin), smax = div_fixed(hi, qmax);
        scale = smin > smax ? smin : smax;
      }
      scale = max(scale, p.eps);
      zp = float((p.qmax + p.qmin + 1) / 2);
    }
    float scale_stored = scale, zp_stored = zp;
    if ((p.kinds & 0xFFu) == 0u) {
      scale_w[row] = floatBitsToUint(scale);
    } else {
      const uint h = packHalf2x16(vec2(scale, 0.0)) & 0xFFFFu;
      store_sub(row, 16u, h, true);
      scale_stored = unpackHalf2x16(h).x;
    }
    const uint zk = (p.kinds >> 8) & 0xFFu;
    if (zk == 0u) {
      zp_w[row] = uint(int(zp));
      zp_stored = float(int(zp));
    } else if (zk == 1u) {
      zp_w[row] = floatBitsToUint(zp);
    } else {
      store_sub(row, 8u, uint(int(zp)) & 0xFFu, false);
      zp_stored = float(bitfieldExtract(int(zp), 0, 8));
    }
#if FAKEQUANT
    s_stored[0] = scale_stored;
    s_stored[1] = zp_stored;
#endif
  }
#if FAKEQUANT
  barrier();
  const float s = s_stored[0], z = s_stored[1];
  precise float inv = 1.0 / s;
  precise float e = fma(-inv, s, 1.0);
  precise float invc = fma(inv, e, inv);
  uint i = lane;
  for (; i + (UNROLL - 1u) * LANES < p.K; i += UNROLL * LANES) {
    float v[UNROLL];
    for (uint u = 0u; u < UNROLL; ++u) v[u] = float(x_[base + i + u * LANES]);
    for (uint u = 0u; u < UNROLL; ++u) xq[base + i + u * LANES] = fake_quant(v[u], s, z, invc);
  }
  for (; i < p.K; i += LANES) xq[base + i] = fake_quant(float(x_[base + i]), s, z, invc);
#endif
}
