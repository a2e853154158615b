#version 450
// torchao.dequantize_affine: out = float(q - zero_point[blk]) * scale[blk] for each element of
// an integer tensor q, blk the element's block in the grid of `block_size` blocks (the
// scale / zero-point tensors hold one value per block, in the grid's row-major order). Rank
// <= 4 (sizes right-aligned, leading 1s). Integer, scale and zero-point tensors are read as
// raw words so one shader serves each dtype: q int8, uint8 or int32; scale fp32 or fp16; zero
// point int32, fp32, int8 or none (see choose_qparams_rows.comp for the shared kinds).
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { uint q_w[]; };
layout(set = 0, binding = 2) readonly buffer Scale { uint scale_w[]; };
layout(set = 0, binding = 3) readonly buffer Zp { uint zp_w[]; };

layout(push_constant) uniform Params {
  uvec4 sizes;   // element sizes, right-aligned
  uvec4 blocks;  // block sizes, right-aligned
  uint total;
  uint kinds;    // q: 0 int8, 1 uint8, 2 int32 (bits 16-23); scale: bits 0-7; zero point:
                 // bits 8-15 (0 int32, 1 fp32, 2 int8, 3 none)
  uint pad0_;
  uint pad1_;
} p;

#include "block_qparams.glsl"

void main() {
  const uint i = linear_id();
  if (i >= p.total) return;
  const uint blk = block_of(i);
  const uint qk = (p.kinds >> 16) & 0xFFu;
  int q;
  if (qk == 0u) {
    q = bitfieldExtract(int(q_w[i >> 2]), int((i & 3u) * 8u), 8);
  } else if (qk == 1u) {
    q = int(bitfieldExtract(q_w[i >> 2], int((i & 3u) * 8u), 8));
  } else {
    q = int(q_w[i]);
  }
  const float s = scale_at(blk);
  // torchao: (int32(q) - int32(zero_point)) converted to float, times the scale (a float
  // zero point is truncated to int32 first, as its .to(torch.int32) does).
  const uint zk = (p.kinds >> 8) & 0xFFu;
  int zp = 0;
  if (zk == 0u) {
    zp = int(zp_w[blk]);
  } else if (zk == 1u) {
    zp = int(uintBitsToFloat(zp_w[blk]));
  } else if (zk == 2u) {
    zp = bitfieldExtract(int(zp_w[blk >> 2]), int((blk & 3u) * 8u), 8);
  }
  out_[i] = DTYPE(float(q - zp) * s);
}
