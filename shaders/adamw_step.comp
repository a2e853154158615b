#version 450
// One AdamW step, in place on param, m, v (ExecuTorch et_vk.adamw_step order, fp32):
//   p  = p - (lr * weight_decay) * p                  (decoupled weight decay)
//   m' = beta1 * m + (1 - beta1) * g
//   v' = beta2 * v + (1 - beta2) * g * g
//   param = p - lr * (m' / bc1) / (sqrt(v' / bc2) + eps)
// The seven scalars are read from the graph's scalar buffer (f32 slots) at execute time,
// so the host changes them between steps (bias corrections, schedules) without a rebuild.
// Four consecutive elements per step (vec4 loads and stores) in a grid-stride loop over a
// grid the host caps at a few waves: on an H200 one invocation per vec4 (262144 workgroups
// for 2^26 parameters) ran at 0.37 of the copy rate, against 0.74 at 2^24. The last,
// partial group of four is done per component so that nothing past numel is written.
#include "common.glsl"

layout(set = 0, binding = 0) buffer Param { vec4 param_[]; };
layout(set = 0, binding = 1) buffer M { vec4 m_[]; };
layout(set = 0, binding = 2) buffer V { vec4 v_[]; };
layout(set = 0, binding = 3) readonly buffer Grad { vec4 grad_[]; };
layout(set = 0, binding = 4) readonly buffer Scalars { float scalars_[]; };

layout(push_constant) uniform Params {
  uint numel;
  // Scalar-buffer slots.
  uint lr;
  uint beta1;
  uint beta2;
  uint eps;
  uint weight_decay;
  uint bc1;
  uint bc2;
} p;

void step(uint i, float lr, float beta1, float beta2, float eps, float wd, float bc1, float bc2) {
  uint base = i * 4u;
  if (base + 4u <= p.numel) {
    vec4 g = grad_[i];
    vec4 w = param_[i];
    w = w - (lr * wd) * w;
    vec4 m = beta1 * m_[i] + (1.0 - beta1) * g;
    vec4 v = beta2 * v_[i] + (1.0 - beta2) * g * g;
    m_[i] = m;
    v_[i] = v;
    param_[i] = w - lr * (m / bc1) / (sqrt(v / bc2) + eps);
    return;
  }
  // Buffers are allocated in 16-byte multiples, so reading the whole last vec4 stays in
  // bounds; only the components below numel are computed and written.
  for (uint c = 0u; c < p.numel - base; ++c) {
    float g = grad_[i][c];
    float w = param_[i][c];
    w = w - (lr * wd) * w;
    float m = beta1 * m_[i][c] + (1.0 - beta1) * g;
    float v = beta2 * v_[i][c] + (1.0 - beta2) * g * g;
    m_[i][c] = m;
    v_[i][c] = v;
    param_[i][c] = w - lr * (m / bc1) / (sqrt(v / bc2) + eps);
  }
}

void main() {
  float lr = scalars_[p.lr];
  float beta1 = scalars_[p.beta1];
  float beta2 = scalars_[p.beta2];
  float eps = scalars_[p.eps];
  float wd = scalars_[p.weight_decay];
  float bc1 = scalars_[p.bc1];
  float bc2 = scalars_[p.bc2];
  const uint stride = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_WorkGroupSize.x;
  const uint nvec = (p.numel + 3u) / 4u;
  for (uint i = linear_id(); i < nvec; i += stride) {
    step(i, lr, beta1, beta2, eps, wd, bc1, bc2);
  }
}
