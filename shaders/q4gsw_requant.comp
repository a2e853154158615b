#version 450
// Re-quantize latent fp32 weights [N, K] to the serialized q4gsw layout (uint8
// [N, ceil(K/2)], row-major): with s = scales[k / group_size][n] (scales [G, N'], N' >= N),
//   q = s == 0 ? 0 : clamp(roundEven(latent[n][k] / s), -8, 7),  code = q + 8,
//   byte j of row n = code(n, 2j) | code(n, 2j + 1) << 4   (k >= K: code 8, i.e. q = 0).
// One invocation per output u32 word (4 bytes, which may span rows), so no two invocations
// write the same word and no 8-bit storage is needed.
//
// Exactness: the CPU reference rounds the correctly rounded f32 quotient, but GPU division
// may be off by a few ulps, which would flip exact ties (latent = 2.5 s) and near-ties. So
// where rounding can matter (0.25 <= |q| < 16) the quotient is corrected: among the seven
// floats within 3 ulps of the GPU quotient, the correctly rounded one has the smallest
// remainder |latent - c*s|, which a `precise` fma computes exactly (a binary quotient is
// never exactly halfway between two floats, so there is no tie to break).
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { uint words_[]; };
layout(set = 0, binding = 1) readonly buffer Latent { float latent_[]; };
layout(set = 0, binding = 2) readonly buffer Scales { float scales_[]; };

layout(push_constant) uniform Params {
  uint N;
  uint K;
  uint row_bytes;     // ceil(K / 2)
  uint total_bytes;   // N * row_bytes
  uint group_size;
  uint scales_stride; // N' (row length of scales)
  uint words;         // ceil(total_bytes / 4)
  uint pad_;
} p;

float remainder_of(float c, float s, float a) {
  precise float r = fma(-c, s, a);
  return abs(r);
}

int quantize(float a, float s) {
  if (s == 0.0) {
    return 0;
  }
  float t = a / s;
  if (isnan(t)) {
    return 0; // matches the CPU's saturating float -> int conversion of NaN
  }
  float at = abs(t);
  if (at >= 0.25 && at < 16.0) {
    int bits = floatBitsToInt(t);
    float best = t;
    float best_r = remainder_of(t, s, a);
    for (int d = -3; d <= 3; ++d) {
      if (d == 0) {
        continue;
      }
      float c = intBitsToFloat(bits + d);
      float r = remainder_of(c, s, a);
      if (r < best_r) {
        best_r = r;
        best = c;
      }
    }
    t = best;
  }
  return int(clamp(roundEven(t), -8.0, 7.0));
}

uint code(uint n, uint k) {
  if (k >= p.K) {
    return 8u;
  }
  float s = scales_[(k / p.group_size) * p.scales_stride + n];
  return uint(quantize(latent_[n * p.K + k], s) + 8);
}

void main() {
  uint w = linear_id();
  if (w >= p.words) {
    return;
  }
  uint word = 0u;
  for (uint b = 0u; b < 4u; ++b) {
    uint byte_index = w * 4u + b;
    if (byte_index >= p.total_bytes) {
      break;
    }
    uint n = byte_index / p.row_bytes;
    uint j = byte_index % p.row_bytes;
    uint byte_value = code(n, 2u * j) | (code(n, 2u * j + 1u) << 4);
    word |= byte_value << (8u * b);
  }
  words_[w] = word;
}
