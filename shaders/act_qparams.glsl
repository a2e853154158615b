// torchao's per-row int8 activation quantization, shared by choose_qparams_rows.comp (the
// choose_qparams node) and the half GEMV's DQ form (q4_linear_gemv_half.comp), which must
// agree bit for bit: the 8da4w linear takes either (ops/quantize.rs).
//
// From the row's min `lo` and max `hi`, in fp32 as torchao does for fp32 input:
//   lo = min(lo, 0), hi = max(hi, 0)
//   ASYMMETRIC (mapping 0): scale = max((hi - lo) / (qmax - qmin), eps),
//                           zp = clamp(qmin - roundEven(lo / scale), qmin, qmax)
//   SYMMETRIC (1):          scale = max(max(-lo, hi) / ((qmax - qmin) / 2), eps)
//   SYMMETRIC_NO_CLIPPING_ERR (2): scale = max(lo / qmin > hi / qmax ? lo / qmin : hi / qmax, eps)
//   symmetric zero point:   trunc((qmax + qmin + 1) / 2)
//   PER_TOKEN_ASYMMETRIC (3, quantized_decomposed.choose_qparams_per_token_asymmetric, after
//   XNNPACK): the ASYMMETRIC scale; zp from whichever end's rounding error is smaller:
//     zp = roundEven(clamp(qmin + lo / scale + qmax + hi / scale > 0 ? qmin - lo / scale
//                                                                 : qmax - hi / scale, qmin, qmax))
// Divisions and the reciprocal are rounded as a CPU rounds them: the zero point and every
// later rounding of x / scale follow the quotient's last bit. GLSL's division may be 2.5 ulp
// off; one fma() residual corrects it where fma() rounds once. lavapipe's rounds twice (a
// multiply, then an add), and there the correction moved its exact 1 / scale an ulp off, so
// that x * (1 / scale) fell on the other side of a tie on fp16 rows whose values sit at
// exact half steps of the scale (docs/performance.md, session 49). Where the residual's fma
// keeps no low part, the exact residuals of exact_fp.glsl decide instead (a few dozen
// instructions more by the source, on lavapipe or where q * b is exact; always on, they cost
// the GEMV prologues that every invocation runs 1.6% at N = 28672 x K = 8192, H100).

#include "f16_round.glsl"
#include "exact_fp.glsl"

float act_div(float a, float b) {
  precise float q = a / b;
  if (!fma_kept_low_part(q, b)) return exact_div_from(a, b, q);
  precise float r = fma(-q, b, a);
  precise float qc = q + r / b;
  return qc;
}

// The row's scale and zero point (`qp.x`, `qp.y`) and the same as stored in the outputs'
// dtypes and read back (`qp.z`, `qp.w`): kinds bits 0-7 scale 0 fp32 / 1 fp16, bits 8-15
// zero point 0 int32 / 1 fp32 / 2 int8.
vec4 act_qparams(float lo, float hi, uint mapping, int iqmin, int iqmax, float eps, uint kinds) {
  lo = min(lo, 0.0);
  hi = max(hi, 0.0);
  const float qmin = float(iqmin), qmax = float(iqmax);
  float scale;
  float zp;
  if (mapping == 0u) {
    precise float range = hi - lo;
    scale = max(act_div(range, qmax - qmin), eps);
    zp = clamp(qmin - roundEven(act_div(lo, scale)), qmin, qmax);
  } else if (mapping == 3u) {
    precise float range = hi - lo;
    scale = max(act_div(range, qmax - qmin), eps);
    const float dmin = act_div(lo, scale), dmax = act_div(hi, scale);
    precise float err_min = qmin + dmin;
    precise float err_max = qmax + dmax;
    precise float from_min = qmin - dmin;
    precise float from_max = qmax - dmax;
    precise float both = err_min + err_max;
    zp = roundEven(clamp(both > 0.0 ? from_min : from_max, qmin, qmax));
  } else {
    if (mapping == 1u) {
      scale = act_div(max(-lo, hi), (qmax - qmin) / 2.0);
    } else {
      const float smin = act_div(lo, qmin), smax = act_div(hi, qmax);
      scale = smin > smax ? smin : smax;
    }
    scale = max(scale, eps);
    zp = float((iqmax + iqmin + 1) / 2);
  }
  float scale_stored = scale, zp_stored = zp;
  if ((kinds & 0xFFu) == 1u) scale_stored = f16_round(scale);
  const uint zk = (kinds >> 8) & 0xFFu;
  if (zk == 0u) {
    zp_stored = float(int(zp));
  } else if (zk == 2u) {
    zp_stored = float(bitfieldExtract(int(zp), 0, 8));
  }
  return vec4(scale, zp, scale_stored, zp_stored);
}

// 1 / s rounded to nearest, as PyTorch's 1.0 / scale (q4_act_fakequant.comp's arithmetic):
// one Newton step where fma() rounds once, else the exact residuals (as act_div).
float act_inv_scale(float s) {
  precise float inv = 1.0 / s;
  if (!fma_kept_low_part(inv, s)) return exact_div_from(1.0, s, inv);
  precise float e = fma(-inv, s, 1.0);
  precise float invc = fma(inv, e, inv);
  return invc;
}

// x quantized to int8 with zero point z (invc = act_inv_scale(s)), as the integer q - z in
// [-255, 255] (exact in float): what the 8da4w linears' integer forms take.
// clamp(roundEven(t) + z, -128, 127) - z, with the clamp moved past the add (exact: z is an
// integer in [-128, 127], so both sides are the same integer or the same bound).
float act_quant_offset(float x, float z, float invc) {
  precise float t = x * invc;
  return clamp(roundEven(t), -128.0 - z, 127.0 - z);
}

// x quantized to int8 with (s, z) and dequantized: q4_act_fakequant.comp's arithmetic, term
// for term (invc = act_inv_scale(s)).
float act_fake_quant(float x, float s, float z, float invc) {
  precise float o = act_quant_offset(x, z, invc) * s;
  return o;
}
