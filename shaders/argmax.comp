#version 450
// argmax along one dim of x viewed as [outer, D, inner] (any dim of any rank folds to this;
// the flattened argmax is outer = inner = 1). Output o (numbered over outer * inner) gets the
// int32 index of the largest element of its line; ties go to the first index, and a NaN
// counts as larger than every number (the first NaN wins), like PyTorch.
//
// SERIAL = 0: one LANES-wide workgroup per output (outputs numbered over a folded 2-D grid);
// lane l scans j = l, l + LANES, ... and the (value, index) pairs merge by a tree in shared
// memory. SERIAL = 1: one invocation per output scans j = 0..D-1 (short lines). The host
// guarantees D >= 1. int32 inputs compare as ints (exact beyond 2^24).
//
// IS_MIN = 1: argmin, the same with the smallest element winning (a NaN still wins over
// every number, as in PyTorch's argmin).
#include "common.glsl"

#ifndef IS_MIN
#define IS_MIN 0
#endif

#define LANES 64 // must equal the local size (64, 1, 1) of the SERIAL = 0 variant
#define NONE 0xffffffffu

layout(set = 0, binding = 0) writeonly buffer Out { int out_[]; };
layout(set = 0, binding = 1) readonly buffer In { DTYPE x_[]; };

layout(push_constant) uniform Params {
  uint lines; // outer * inner
  uint D;
  uint inner;
  uint pad_;
} p;

#if IS_INT
#define VTYPE int
#else
#define VTYPE float
#endif

// Whether (av, ai) wins over (bv, bi); an index of NONE marks an empty slot.
bool better(VTYPE av, uint ai, VTYPE bv, uint bi) {
  if (ai == NONE) {
    return false;
  }
  if (bi == NONE) {
    return true;
  }
#if !IS_INT
  bool an = isnan(av);
  bool bn = isnan(bv);
  if (an || bn) {
    return an && bn ? ai < bi : an;
  }
#endif
#if IS_MIN
  return av < bv || (av == bv && ai < bi);
#else
  return av > bv || (av == bv && ai < bi);
#endif
}

uint line_base(uint o) {
  uint outer = o / p.inner;
  return outer * p.D * p.inner + (o - outer * p.inner);
}

#if SERIAL
void main() {
  uint o = linear_id();
  if (o >= p.lines) {
    return;
  }
  uint base = line_base(o);
  VTYPE bv = VTYPE(x_[base]);
  uint bi = 0u;
  for (uint j = 1u; j < p.D; ++j) {
    VTYPE v = VTYPE(x_[base + j * p.inner]);
    // Scanning upward, a strict win keeps the first index on ties.
    if (better(v, j, bv, bi)) {
      bv = v;
      bi = j;
    }
  }
  out_[o] = int(bi);
}
#else
shared VTYPE s_v[LANES];
shared uint s_i[LANES];

void main() {
  uint o = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  if (o >= p.lines) {
    return; // whole workgroup
  }
  uint lane = gl_LocalInvocationID.x;
  uint base = line_base(o);
  VTYPE bv = VTYPE(0);
  uint bi = NONE;
  for (uint j = lane; j < p.D; j += LANES) {
    VTYPE v = VTYPE(x_[base + j * p.inner]);
    if (better(v, j, bv, bi)) {
      bv = v;
      bi = j;
    }
  }
  s_v[lane] = bv;
  s_i[lane] = bi;
  barrier();
  for (uint stride = LANES / 2; stride > 0u; stride >>= 1) {
    if (lane < stride && better(s_v[lane + stride], s_i[lane + stride], s_v[lane], s_i[lane])) {
      s_v[lane] = s_v[lane + stride];
      s_i[lane] = s_i[lane + stride];
    }
    barrier();
  }
  if (lane == 0u) {
    out_[o] = int(s_i[0]);
  }
}
#endif
