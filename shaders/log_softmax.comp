#version 450
// log_softmax along one dim of x viewed as [outer, D, inner] (any dim of any rank folds to
// this): one workgroup per (outer, inner) line, elements D apart by `inner`.
//   out = x - max - log(sum(exp(x - max))).
// Each of the LANES invocations keeps a running (max, sum of exp) pair over
// j = lane, lane + LANES, ...; the pairs merge by a tree in shared memory, so any D works
// and no subgroup size is assumed. Math in float for every storage type; OUT_DTYPE differs
// from DTYPE only for half_to_float (fp16 in, fp32 out). Lines are numbered linearly over a
// folded 2-D grid.
#include "common.glsl"

#ifndef OUT_DTYPE
#define OUT_DTYPE DTYPE
#endif

#define LANES 64 // must equal the local size (64, 1, 1)
// Start below every finite float so an empty lane merges as (lowest, 0) without the
// inf - inf of a -inf start.
#define LOWEST -3.4028235e38

layout(set = 0, binding = 0) writeonly buffer Out { OUT_DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };

layout(push_constant) uniform Params {
  uint lines; // outer * inner
  uint D;
  uint inner;
  uint pad_;
} p;

shared float s_max[LANES];
shared float s_sum[LANES];

void main() {
  uint line = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (line >= p.lines) {
    return; // whole workgroup
  }
  uint lane = gl_LocalInvocationID.x;
  uint o = line / p.inner;
  uint base = o * p.D * p.inner + (line - o * p.inner);
  float m = LOWEST;
  float l = 0.0;
  for (uint j = lane; j < p.D; j += LANES) {
    float v = float(x_[base + j * p.inner]);
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
  for (uint stride = LANES / 2; stride > 0u; stride >>= 1) {
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
  float log_sum = log(s_sum[0]);
  for (uint j = lane; j < p.D; j += LANES) {
    uint k = base + j * p.inner;
    out_[k] = OUT_DTYPE((float(x_[k]) - mx) - log_sum);
  }
}
