#version 450
// RMSNorm over the last dim, one workgroup per row of x [R, N]:
//   out[r][j] = x[r][j] * rsqrt(mean_j(x[r][j]^2) + eps) * w[j].
// Each of the LANES invocations sums squares over j = lane, lane + LANES, ... and the
// partial sums meet in a shared-memory tree, so any N works and no subgroup size is
// assumed. Math in float for every storage type. Rows are numbered linearly over a folded
// 2-D grid of workgroups.
#include "common.glsl"

#define LANES 64 // must equal the local size (64, 1, 1)

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };
layout(set = 0, binding = 2) readonly buffer Weight { DTYPE w_[]; };

layout(push_constant) uniform Params {
  uint R;
  uint N;
  float eps;
  uint pad_;
} p;

shared float s_sum[LANES];

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.R) {
    return; // whole workgroup
  }
  uint lane = gl_LocalInvocationID.x;
  uint base = row * p.N;
  float acc = 0.0;
  for (uint j = lane; j < p.N; j += LANES) {
    float v = float(x_[base + j]);
    acc += v * v;
  }
  s_sum[lane] = acc;
  barrier();
  for (uint stride = LANES / 2; stride > 0; stride >>= 1) {
    if (lane < stride) {
      s_sum[lane] += s_sum[lane + stride];
    }
    barrier();
  }
  float scale = inversesqrt(s_sum[0] / float(p.N) + p.eps);
  for (uint j = lane; j < p.N; j += LANES) {
    out_[base + j] = DTYPE(float(x_[base + j]) * scale * float(w_[j]));
  }
}
