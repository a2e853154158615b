#version 450
// aten.grid_sampler_2d: out[n, c, h, w] samples input[n, c] at the grid point grid[n, h, w] =
// (x, y) in [-1, 1] (x along the width), as PyTorch: the coordinate unnormalized (align_corners:
// -1 and 1 are the corner pixels' centres, else their outer edges), then by padding mode
// zeros (out-of-range taps read 0), border (clamped into the image) or reflection (mirrored
// at the borders, then clamped); bilinear (4 taps), nearest (round half to even) or bicubic
// (16 taps, A = -0.75, each tap's integer coordinate padded). fp32 math; one invocation per
// output element.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE in_[]; };
layout(set = 0, binding = 2) readonly buffer Grid { DTYPE grid_[]; };

layout(push_constant) uniform Params {
  uint C;
  uint H;       // input height, width
  uint W;
  uint Ho;      // output height, width
  uint Wo;
  uint total;
  uint mode;    // 0 bilinear, 1 nearest, 2 bicubic
  uint pad_mode;// 0 zeros, 1 border, 2 reflection
  uint align;   // align_corners
} p;

float unnormalize(float v, uint size) {
  const float s = float(size);
  precise float r;
  if (p.align != 0u) {
    r = ((v + 1.0) / 2.0) * (s - 1.0);
  } else {
    r = ((v + 1.0) * s - 1.0) / 2.0;
  }
  return r;
}

float clip_coord(float v, uint size) {
  return min(float(size) - 1.0, max(v, 0.0));
}

// Mirror v into [twice_low / 2, twice_high / 2].
float reflect_coord(float v, float twice_low, float twice_high) {
  if (twice_low == twice_high) return 0.0;
  const float lo = twice_low / 2.0;
  const float span = (twice_high - twice_low) / 2.0;
  const float a = abs(v - lo);
  const float extra = a - span * floor(a / span);  // fmod for a >= 0
  const float flips = floor(a / span);
  return mod(flips, 2.0) == 0.0 ? extra + lo : span - extra + lo;
}

float pad_coord(float v, uint size) {
  if (p.pad_mode == 1u) return clip_coord(v, size);
  if (p.pad_mode == 2u) {
    const float s = float(size);
    v = p.align != 0u ? reflect_coord(v, 0.0, 2.0 * (s - 1.0)) : reflect_coord(v, -1.0, 2.0 * s - 1.0);
    return clip_coord(v, size);
  }
  return v;
}

float tap(uint base, int x, int y) {
  if (x < 0 || y < 0 || x >= int(p.W) || y >= int(p.H)) return 0.0;
  return float(in_[base + uint(y) * p.W + uint(x)]);
}

// A bicubic tap: its integer coordinate padded as PyTorch's get_value_bounded.
float tap_padded(uint base, float x, float y) {
  const float px = pad_coord(x, p.W), py = pad_coord(y, p.H);
  return tap(base, int(floor(px)), int(floor(py)));
}

float cubic1(float x, float A) { return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0; }
float cubic2(float x, float A) { return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A; }

vec4 cubic_coeffs(float t) {
  const float A = -0.75;
  return vec4(cubic2(t + 1.0, A), cubic1(t, A), cubic1(1.0 - t, A), cubic2(2.0 - t, A));
}

void main() {
  const uint i = linear_id();
  if (i >= p.total) return;
  const uint w = i % p.Wo;
  const uint h = (i / p.Wo) % p.Ho;
  const uint nc = i / (p.Wo * p.Ho);
  const uint n = nc / p.C;
  const uint g = ((n * p.Ho + h) * p.Wo + w) * 2u;
  const float gx = float(grid_[g]), gy = float(grid_[g + 1u]);
  const uint base = nc * p.H * p.W;
  float v;
  if (p.mode == 2u) {
    const float ix = unnormalize(gx, p.W), iy = unnormalize(gy, p.H);
    const float x0 = floor(ix), y0 = floor(iy);
    const vec4 cx = cubic_coeffs(ix - x0), cy = cubic_coeffs(iy - y0);
    v = 0.0;
    for (int j = 0; j < 4; ++j) {
      float row = 0.0;
      for (int k = 0; k < 4; ++k) {
        row += cx[k] * tap_padded(base, x0 - 1.0 + float(k), y0 - 1.0 + float(j));
      }
      v += cy[j] * row;
    }
  } else {
    const float ix = pad_coord(unnormalize(gx, p.W), p.W);
    const float iy = pad_coord(unnormalize(gy, p.H), p.H);
    if (p.mode == 1u) {
      v = tap(base, int(roundEven(ix)), int(roundEven(iy)));
    } else {
      const float x0 = floor(ix), y0 = floor(iy);
      const float tx = ix - x0, ty = iy - y0;
      const int xi = int(x0), yi = int(y0);
      v = tap(base, xi, yi) * (1.0 - tx) * (1.0 - ty) + tap(base, xi + 1, yi) * tx * (1.0 - ty) +
          tap(base, xi, yi + 1) * (1.0 - tx) * ty + tap(base, xi + 1, yi + 1) * tx * ty;
    }
  }
  out_[i] = DTYPE(v);
}
