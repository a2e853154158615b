#version 450
// et_vk.grid_priors: out[h * W + w] = ((w + offset) * stride, (h + offset) * stride) for an
// input [.., H, W], each step rounded to fp32 as PyTorch's arange + offset, * stride. One
// invocation per output element.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };

layout(push_constant) uniform Params {
  uint W;
  uint total;   // H * W * 2
  float offset;
  float stride;
} p;

void main() {
  const uint i = linear_id();
  if (i >= p.total) return;
  const uint cell = i / 2u;
  const uint c = (i % 2u) == 0u ? cell % p.W : cell / p.W;
  precise float shifted = float(c) + p.offset;
  precise float v = shifted * p.stride;
  out_[i] = DTYPE(v);
}
