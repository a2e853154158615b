#version 450
// Fused cross entropy, pass 1 of 2: one workgroup per row of logits [R, V].
//   label < 0 or label >= V: the row is ignored (dlogits row = 0, row loss = 0);
//   otherwise lse = max + log(sum exp(x - max)) (online, max-shifted softmax),
//   row_loss[r] = lse - x[label]   (pass 2 sums the rows and divides by n_valid),
//   dlogits[r][j] = (softmax_j - (j == label)) / n_valid.
// Each of the LANES invocations walks j = lane, lane + LANES, ... keeping a running
// (max, sum of exp) pair; the pairs are merged by a tree in shared memory, so any V works.
// n_valid is read from the graph's scalar buffer (an f32 slot), so it can change per step
// without a rebuild. Rows are numbered linearly over a folded 2-D grid of workgroups.
#include "common.glsl"

#define LANES 64 // must equal the local size (64, 1, 1)

layout(set = 0, binding = 0) writeonly buffer DLogits { float dl_[]; };
layout(set = 0, binding = 1) writeonly buffer RowLoss { float row_loss_[]; };
layout(set = 0, binding = 2) readonly buffer Logits { float x_[]; };
layout(set = 0, binding = 3) readonly buffer Labels { int labels_[]; };
layout(set = 0, binding = 4) readonly buffer Scalars { float scalars_[]; };

layout(push_constant) uniform Params {
  uint R;
  uint V;
  uint n_valid_slot;
  uint pad_;
} p;

shared float s_max[LANES];
shared float s_sum[LANES];

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (row >= p.R) {
    return; // whole workgroup
  }
  uint lane = gl_LocalInvocationID.x;
  uint base = row * p.V;
  int label = labels_[row];
  // Uniform per workgroup (one row each), so the barriers below stay in uniform control flow.
  if (label < 0 || uint(label) >= p.V) {
    for (uint j = lane; j < p.V; j += LANES) {
      dl_[base + j] = 0.0;
    }
    if (lane == 0) {
      row_loss_[row] = 0.0;
    }
    return;
  }

  float m = -3.4e38;
  float l = 0.0;
  for (uint j = lane; j < p.V; j += LANES) {
    float v = x_[base + j];
    if (v > m) {
      l = l * exp(m - v) + 1.0;
      m = v;
    } else {
      l += exp(v - m);
    }
  }
  s_max[lane] = m;
  s_sum[lane] = l;
  barrier();
  for (uint stride = LANES / 2; stride > 0; stride >>= 1) {
    if (lane < stride) {
      float ma = s_max[lane];
      float mb = s_max[lane + stride];
      float mm = max(ma, mb);
      s_sum[lane] = s_sum[lane] * exp(ma - mm) + s_sum[lane + stride] * exp(mb - mm);
      s_max[lane] = mm;
    }
    barrier();
  }
  float mx = s_max[0];
  float denom = s_sum[0];
  float inv_n = 1.0 / scalars_[p.n_valid_slot];
  float inv_denom = 1.0 / denom;
  uint ulabel = uint(label);
  for (uint j = lane; j < p.V; j += LANES) {
    float sm = exp(x_[base + j] - mx) * inv_denom;
    dl_[base + j] = (sm - (j == ulabel ? 1.0 : 0.0)) * inv_n;
  }
  if (lane == 0) {
    row_loss_[row] = mx + log(denom) - x_[base + ulabel];
  }
}
