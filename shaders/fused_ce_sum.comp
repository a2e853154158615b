#version 450
// Fused cross entropy, pass 2 of 2: loss = sum_r row_loss[r] / n_valid (rank-0 output).
// One workgroup: LANES strided partial sums, then a tree in shared memory; the order is
// fixed, so the result is deterministic.
#include "common.glsl"

#define LANES 64 // must equal the local size (64, 1, 1)

layout(set = 0, binding = 0) writeonly buffer Loss { float loss_[]; };
layout(set = 0, binding = 1) readonly buffer RowLoss { float row_loss_[]; };
layout(set = 0, binding = 2) readonly buffer Scalars { float scalars_[]; };

layout(push_constant) uniform Params {
  uint R;
  uint n_valid_slot;
} p;

shared float s_part[LANES];

void main() {
  uint lane = gl_LocalInvocationID.x;
  float acc = 0.0;
  for (uint r = lane; r < p.R; r += LANES) {
    acc += row_loss_[r];
  }
  s_part[lane] = acc;
  barrier();
  for (uint stride = LANES / 2; stride > 0; stride >>= 1) {
    if (lane < stride) {
      s_part[lane] += s_part[lane + stride];
    }
    barrier();
  }
  if (lane == 0) {
    loss_[0] = s_part[0] / scalars_[p.n_valid_slot];
  }
}
