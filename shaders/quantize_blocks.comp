#version 450
// Block-wise quantization of a float tensor x: element i takes the scale / zero point of its
// block in the grid of `blocks` (the parameter tensors hold one value per block, in the grid's
// row-major order; rank <= 4, sizes right-aligned). One invocation per output word: four
// int8 / uint8 elements, or one int32.
//   mode 0, torchao.quantize_affine: q = clamp(roundEven(x * (1 / s)) + zp, qmin, qmax), the
//     reciprocal and the product rounded to fp32 as torchao computes them.
//   mode 1, quantized_decomposed.quantize_per_token: q = clamp(roundEven(x / s + zp), qmin,
//     qmax). PyTorch evaluates that in double (the per-token scales are float64 there), so the
//     rounding follows the exact quotient: near a half-integer the side is decided by the
//     exact sign of x - b * s (exact_fp.glsl), ties to even.
// Scale and zero-point tensors are raw words (choose_qparams_rows.comp's kinds).
#include "common.glsl"
#include "exact_fp.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { uint out_w[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Scale { uint scale_w[]; };
layout(set = 0, binding = 3) readonly buffer Zp { uint zp_w[]; };

layout(push_constant) uniform Params {
  uvec4 sizes;   // element sizes, right-aligned
  uvec4 blocks;  // block sizes, right-aligned
  uint total;
  uint kinds;    // scale: bits 0-7 (0 fp32, 1 fp16); zero point: bits 8-15 (0 int32, 1 fp32,
                 // 2 int8, 3 none); output: bits 16-23 (0 int8, 1 uint8, 2 int32)
  uint mode;
  int qmin;
  int qmax;
  uint pad0_;
  uint pad1_;
  uint pad2_;
} p;

#include "block_qparams.glsl"

float zp_at(uint blk) {
  const uint zk = (p.kinds >> 8) & 0xFFu;
  if (zk == 0u) return float(int(zp_w[blk]));
  if (zk == 1u) return uintBitsToFloat(zp_w[blk]);
  if (zk == 2u) return float(bitfieldExtract(int(zp_w[blk >> 2]), int((blk & 3u) * 8u), 8));
  return 0.0;
}

// roundEven(x / s + zp) for the exact quotient (s > 0, zp an integer).
float round_exact(float x, float s, float zp) {
  precise float t = x * exact_recip(s) + zp;
  const float f = floor(t);
  // t's error is a few ulp of |t|: far from the half-integer, t rounds like the quotient.
  if (abs(t - f - 0.5) > max(1.0 / 64.0, abs(t) * (1.0 / 1048576.0)) || abs(t) >= 4194304.0) {
    return roundEven(t);
  }
  // t is near f + 0.5: compare x with b * s, b = f + 0.5 - zp (exact in fp32 here).
  precise float b = f + 0.5 - zp;
  precise float prod = b * s;
  // b * s = prod + err exactly; x - prod is exact (Sterbenz), so diff has the exact sign.
  precise float diff = (x - prod) - exact_prod_err(b, s, prod);
  if (diff > 0.0) return f + 1.0;
  if (diff < 0.0) return f;
  return (mod(f, 2.0) == 0.0) ? f : f + 1.0;
}

int quantize_one(uint i) {
  const uint blk = block_of(i);
  const float x = float(x_[i]), s = scale_at(blk), zp = zp_at(blk);
  float q;
  if (p.mode == 0u) {
    precise float v = x * exact_recip(s);
    q = roundEven(v) + zp;
  } else {
    q = round_exact(x, s, zp);
  }
  // In float, so huge values saturate instead of overflowing the conversion (2^31 - 128 is
  // the largest fp32 below 2^31); NaN -> qmin.
  q = clamp(q, float(p.qmin), min(float(p.qmax), 2147483520.0));
  return isnan(q) ? p.qmin : int(q);
}

void main() {
  const uint w = linear_id();
  const uint ok = (p.kinds >> 16) & 0xFFu;
  if (ok == 2u) {
    if (w < p.total) out_w[w] = uint(quantize_one(w));
    return;
  }
  if (w * 4u >= p.total) return;
  uint word = 0u;
  for (uint e = 0u; e < 4u; ++e) {
    const uint i = w * 4u + e;
    if (i >= p.total) break;
    word |= (uint(quantize_one(i)) & 0xFFu) << (e * 8u);
  }
  out_w[w] = word;
}
