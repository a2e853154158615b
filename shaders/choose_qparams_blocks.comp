#version 450
// torchao.choose_qparams_affine for any block_size (choose_qparams_rows.comp is the per-row
// case): one workgroup per block of the grid of `blocks` over x (rank <= 4, sizes
// right-aligned, every size a multiple of its block), in the grid's row-major order. The
// lanes stride over the block's elements for its min and max (a shared-memory tree, no
// subgroup size assumed), then invocation 0 writes the scale and zero point
// (act_qparams.glsl) as raw words in the outputs' dtypes.
#include "common.glsl"
#include "act_qparams.glsl"

#define LANES 64

layout(set = 0, binding = 0) buffer Scale { uint scale_w[]; };
layout(set = 0, binding = 1) buffer Zp { uint zp_w[]; };
layout(set = 0, binding = 2) readonly buffer In { DTYPE x_[]; };

layout(push_constant) uniform Params {
  uvec4 sizes;   // element sizes, right-aligned
  uvec4 blocks;  // block sizes, right-aligned
  uint nblocks;
  uint mapping;  // act_qparams.glsl
  int qmin;
  int qmax;
  float eps;
  uint kinds;    // scale: 0 fp32, 1 fp16 (bits 0-7); zero point: 0 int32, 1 fp32, 2 int8 (8-15)
  uint pad0_;
  uint pad1_;
} p;

shared float s_lo[LANES];
shared float s_hi[LANES];

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
  const uint blk = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (blk >= p.nblocks) return;  // whole workgroup
  const uint lane = gl_LocalInvocationID.x;
  // The block's origin (element coordinates) from its grid index.
  uvec4 origin;
  uint rest = blk;
  for (int d = 3; d >= 0; --d) {
    const uint nb = p.sizes[d] / p.blocks[d];
    origin[d] = (rest % nb) * p.blocks[d];
    rest /= nb;
  }
  const uint count = p.blocks.x * p.blocks.y * p.blocks.z * p.blocks.w;
  float lo = uintBitsToFloat(0x7F800000u), hi = -lo;
  for (uint e = lane; e < count; e += LANES) {
    uint r = e, idx = 0u, stride = 1u;
    for (int d = 3; d >= 0; --d) {
      idx += (origin[d] + r % p.blocks[d]) * stride;
      r /= p.blocks[d];
      stride *= p.sizes[d];
    }
    const float v = float(x_[idx]);
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
  if (lane != 0u) return;
  const vec4 qp = act_qparams(s_lo[0], s_hi[0], p.mapping, p.qmin, p.qmax, p.eps, p.kinds);
  if ((p.kinds & 0xFFu) == 0u) {
    scale_w[blk] = floatBitsToUint(qp.x);
  } else {
    store_sub(blk, 16u, packHalf2x16(vec2(qp.x, 0.0)) & 0xFFFFu, true);
  }
  const uint zk = (p.kinds >> 8) & 0xFFu;
  if (zk == 0u) {
    zp_w[blk] = uint(int(qp.y));
  } else if (zk == 1u) {
    zp_w[blk] = floatBitsToUint(qp.y);
  } else {
    store_sub(blk, 8u, uint(int(qp.y)) & 0xFFu, false);
  }
}
