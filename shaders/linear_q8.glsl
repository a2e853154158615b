// int8 weights of the linear kernels' WQ8 forms (linear_gemv.comp, linear_tiled.comp):
// q [N, K] as bytes in rows padded to whole u32 words (KW = ceil(K / 4) words; the padding
// is zero), a scale and a zero point per row (fp32):
//   w[n][k] = (q[n][k] - zp[n]) * s[n].
// The kernels add up x * (q - zp) (an exact integer in fp32) and multiply the row's total
// by s[n] (etvk_runtime's ops/q8_linear.rs packs the three).
layout(set = 0, binding = 2) readonly buffer WQ { uint wq[]; };
layout(set = 0, binding = 2) readonly buffer WQ4 { uvec4 wq4[]; };
layout(set = 0, binding = 4) readonly buffer WS { float wscale[]; };
layout(set = 0, binding = 5) readonly buffer WZ { float wzp[]; };

#define Q8_KW ((p.K + 3u) >> 2)

// (q - z) of weights k = 4j .. 4j + 3 of row `row`.
vec4 w_vec(uint row, uint j, float z) {
  const int v = int(wq[row * Q8_KW + j]);
  return vec4(bitfieldExtract(v, 0, 8), bitfieldExtract(v, 8, 8), bitfieldExtract(v, 16, 8),
              bitfieldExtract(v, 24, 8)) - z;
}

// (q - z) of weight k of row `row`.
float w_one(uint row, uint k, float z) {
  return float(bitfieldExtract(int(wq[row * Q8_KW + (k >> 2)]), int((k & 3u) * 8u), 8)) - z;
}
