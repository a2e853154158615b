#version 450
// Group norm (aten.native_group_norm): x is [N, C, HxW] contiguous with C split into G
// groups of C / G channels; each of the R = N * G rows of L = (C / G) * HxW consecutive
// elements is normalized on its own:
//   mean = sum(x) / L, var = sum((x - mean)^2) / L (biased), rstd = 1 / sqrt(var + eps),
//   out = (x - mean) * rstd * w[c] + b[c] for the element's channel c,
// and mean / rstd stored per row ([N, G] row-major). One workgroup per row; two passes over
// the row (the mean, then the squared deviations) meet in a shared-memory tree, so any L
// works and no subgroup size is assumed. Math in float for every storage type. Rows are
// numbered linearly over a folded 2-D grid.
#include "common.glsl"

#define LANES 64 // must equal the local size (64, 1, 1)

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) writeonly buffer Mean { DTYPE mean_[]; };
layout(set = 0, binding = 2) writeonly buffer Rstd { DTYPE rstd_[]; };
layout(set = 0, binding = 3) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 4) readonly buffer Weight { DTYPE w_[]; };
layout(set = 0, binding = 5) readonly buffer Bias { DTYPE b_[]; };

layout(push_constant) uniform Params {
  uint R;     // N * G
  uint L;     // (C / G) * HxW
  uint HxW;   // >= 1
  uint G;
  uint cpg;   // C / G
  float eps;
  uint flags; // bit 0: weight bound, bit 1: bias bound (else placeholders)
  uint pad_;
} p;

shared float s_sum[LANES];

// Sum of `v` over the workgroup; every lane gets the result.
float workgroup_sum(uint lane, float v) {
  s_sum[lane] = v;
  barrier();
  for (uint stride = LANES / 2; stride > 0u; stride >>= 1) {
    if (lane < stride) {
      s_sum[lane] += s_sum[lane + stride];
    }
    barrier();
  }
  float total = s_sum[0];
  // s_sum is reused by the next call: nobody may overwrite slot 0 before all have read it.
  barrier();
  return total;
}

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.R) {
    return; // whole workgroup
  }
  uint lane = gl_LocalInvocationID.x;
  uint base = row * p.L;
  float acc = 0.0;
  for (uint j = lane; j < p.L; j += LANES) {
    acc += float(x_[base + j]);
  }
  float mean = workgroup_sum(lane, acc) / float(p.L);
  float dev = 0.0;
  for (uint j = lane; j < p.L; j += LANES) {
    float d = float(x_[base + j]) - mean;
    dev += d * d;
  }
  float rstd = inversesqrt(workgroup_sum(lane, dev) / float(p.L) + p.eps);
  bool has_w = (p.flags & 1u) != 0u;
  bool has_b = (p.flags & 2u) != 0u;
  uint c0 = (row % p.G) * p.cpg;
  for (uint j = lane; j < p.L; j += LANES) {
    float y = (float(x_[base + j]) - mean) * rstd;
    uint c = c0 + j / p.HxW;
    if (has_w) {
      y *= float(w_[c]);
    }
    if (has_b) {
      y += float(b_[c]);
    }
    out_[base + j] = DTYPE(y);
  }
  if (lane == 0u) {
    mean_[row] = DTYPE(mean);
    rstd_[row] = DTYPE(rstd);
  }
}
