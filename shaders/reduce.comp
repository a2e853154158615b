#version 450
// sum / mean / amax / amin of x over a set of dims. The runtime coalesces x's sizes into
// at most 8 dims (size-1 dims dropped, neighbours of the same kind merged) and marks the
// reduced ones in `mask` (bit d = dim d, dim 0 outermost). Outputs are numbered over the
// kept dims, reduced elements over the reduced dims, both row-major.
//
// SERIAL = 0: one LANES-wide workgroup per output (outputs numbered over a folded 2-D
// grid); lane l folds r = l, l + LANES, ... and the partials merge by a fixed tree in
// shared memory. SERIAL = 1: one invocation per output folds r = 0..R-1 in order (for
// short reductions, where a workgroup would idle). Both orders are fixed, so results are
// deterministic. Math in float for every storage type.
#include "common.glsl"

#define LANES 64 // must equal the local size (64, 1, 1) of the SERIAL = 0 variant

layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };

layout(push_constant) uniform Params {
  uint outs;    // number of outputs
  uint R;       // elements reduced into each output
  uint rank;    // coalesced rank, <= 8
  uint mask;    // bit d set: coalesced dim d is reduced
  uvec4 dims[2]; // coalesced sizes, dims[d / 4][d % 4]
} p;

uint dim_size(uint d) {
  return p.dims[d >> 2][d & 3u];
}

// Input offset of output `o` at reduced index 0.
uint base_offset(uint o) {
  uint off = 0u;
  uint stride = 1u;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint n = dim_size(uint(d));
    if ((p.mask & (1u << uint(d))) == 0u) {
      off += (o % n) * stride;
      o /= n;
    }
    stride *= n;
  }
  return off;
}

// Input offset of reduced index `r` relative to the output's base.
uint reduced_offset(uint r) {
  uint off = 0u;
  uint stride = 1u;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint n = dim_size(uint(d));
    if ((p.mask & (1u << uint(d))) != 0u) {
      off += (r % n) * stride;
      r /= n;
    }
    stride *= n;
  }
  return off;
}

// OP: 0 sum, 1 mean, 2 amax, 3 amin (manifest).
#if OP == 2
#define IDENTITY uintBitsToFloat(0xff800000u) // -inf
// NaN propagates, as in PyTorch.
float combine(float a, float b) { return (isnan(a) || a > b) ? a : b; }
#elif OP == 3
#define IDENTITY uintBitsToFloat(0x7f800000u) // +inf
float combine(float a, float b) { return (isnan(a) || a < b) ? a : b; }
#else
#define IDENTITY 0.0
float combine(float a, float b) { return a + b; }
#endif

float finish(float acc) {
#if OP == 1
  // The mean of nothing is NaN (PyTorch); 0.0 / 0.0 is not guaranteed to give it.
  return p.R == 0u ? uintBitsToFloat(0x7fc00000u) : acc / float(p.R);
#else
  return acc;
#endif
}

#if SERIAL
void main() {
  uint o = linear_id();
  if (o >= p.outs) {
    return;
  }
  uint base = base_offset(o);
  float acc = IDENTITY;
  for (uint r = 0u; r < p.R; ++r) {
    acc = combine(acc, float(x_[base + reduced_offset(r)]));
  }
  out_[o] = DTYPE(finish(acc));
}
#else
shared float s_acc[LANES];

void main() {
  uint o = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (o >= p.outs) {
    return; // whole workgroup
  }
  uint lane = gl_LocalInvocationID.x;
  uint base = base_offset(o);
  float acc = IDENTITY;
  for (uint r = lane; r < p.R; r += LANES) {
    acc = combine(acc, float(x_[base + reduced_offset(r)]));
  }
  s_acc[lane] = acc;
  barrier();
  for (uint stride = LANES / 2; stride > 0u; stride >>= 1) {
    if (lane < stride) {
      s_acc[lane] = combine(s_acc[lane], s_acc[lane + stride]);
    }
    barrier();
  }
  if (lane == 0u) {
    out_[o] = DTYPE(finish(s_acc[0]));
  }
}
#endif
