#version 450
// EXPERIMENT (session 6, not built): right on lavapipe and the H200, but 43.7-87.8 us at
// 8192^2 against the wide kernel's 20.8 (docs/performance.md, session 6, runs 15-16). Ran
// through a runtime variant `Kernel::BwdWs` (local size 320 = NC + NP, or 384 with NP = 128;
// the wide kernel's geometry at CW = 8, two workgroups per SM as the target) that was
// removed again; to run it, restore that wiring (manifest line
// `q4_linear_bwd_ws_m1 q4_linear_bwd_ws.comp local=320`).
// 4-bit linear backward at M = 1 over long rows, fp32, one dispatch, with producer and
// consumer invocations:
//   partial[j][k] = sum_{n in slice j} dy[n] * (code(n,k) - 8) * s[n][k / gs]
//   dx[k] = sum_j partial[j][k]
// over etvk's packed Q4 layout (rows n contiguous along k, a row is KC uvec4 chunks of 32
// codes; see q4_pack_weights.comp) and fp32 scales s[n][g] for groups of whole chunks (gs a
// power-of-two multiple of 32, or one group per row).
//
// Why: the wide kernel (q4_linear_bwd_wide.comp) loads each batch of rows where it uses it,
// so every invocation waits for DRAM once per batch. On an H200 at 8192^2 its loop alone
// (no loads) takes 12.6 us, with loads 18.7, and prefetching in every invocation costs
// registers and occupancy (docs/performance.md, session 6). Here NP producer invocations do
// nothing but load: each keeps LOOK stages of the slice in flight in its registers and
// moves the oldest into a shared ring of two stages; the NC consumer invocations decode from
// shared memory only, one barrier per stage. A stage is SR = 32 rows of the column block's
// CW = 8 chunks (4 KiB of weights) with its coefficients dy[n] * s[n][g].
//
// Same bindings, push constants, geometry (column blocks of 8 chunks, slices of RS rows)
// and epilogue as the wide kernel at CW = 8: the consumers are its 32 row groups x 8 chunk
// lanes; row group rg takes row rg of every stage; their sums meet in shared memory, the
// slices' partial sums are added up by the last workgroup of each column block to finish,
// in slice order (counters in a zeroed tensor, restored by that workgroup).
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"

#define NC 256          // consumers: row groups x chunk lanes
#ifndef NP
#define NP 64           // producers
#endif
#define CW 8            // chunks per column block
#define RG (NC / CW)    // row groups (32)
#define SR RG           // rows per stage: one per row group
#define SW (SR * CW)    // uvec4 words (chunks) per stage (256)
#define PER_P (SW / NP) // chunks (and coefficients) a producer moves per stage (4)
#ifndef LOOK
#define LOOK 3          // stages each producer keeps in flight
#endif

layout(set = 0, binding = 0) coherent buffer Part { float part[]; };
layout(set = 0, binding = 1) readonly buffer Dy { float dy[]; };
layout(set = 0, binding = 2) readonly buffer W4 { uvec4 w4[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
layout(set = 0, binding = 4) coherent buffer Count { uint count[]; };  // [column blocks], 0 between launches
layout(set = 0, binding = 5) writeonly buffer Out { float outp[]; };   // dx [K]

layout(push_constant) uniform Params {
  uint N;       // weight rows (the reduction)
  uint KC;      // uvec4 chunks per weight row (Kpad / 32); partial rows are KC * 32 floats
  uint G;       // scale groups per row
  uint gs;      // group size
  uint RS;      // rows per slice (a multiple of SR)
  uint gshift;  // log2(gs / 8) (>= 2 here), or 0xFFFFFFFF when G == 1
  uint K;       // dx's length (<= KC * 32)
  uint S;       // slices: ceil(N / RS)
} p;  // 8 words, as the other backward kernels' (they share one node)

// The ring: two stages of weights [SR][CW] and coefficients [SR][CW].
shared uvec4 ring_w[2 * SW];
shared float ring_c[2 * SW];
// The row groups' sums, one pass of 16 columns per chunk: [16 k][RG][CW], padded by one.
#define RED_STRIDE (RG * CW + 1)
shared float red[16 * RED_STRIDE];
shared bool last_to_finish;

const float MAGIC = 8388608.0;  // 2^23
const uint MAGIC_BITS = 0x4B000000u;
// In-place decode (see q4_linear_bwd_wide.comp): the half with 2^23's bits ORed in, masked to
// nibble q and those bits, minus 2^23 + 8 * 16^q, is (code - 8) * 16^q exactly.
const vec4 UNMAGIC = vec4(MAGIC + 8.0, MAGIC + 128.0, MAGIC + 2048.0, MAGIC + 32768.0);
const vec4 UNPOS = vec4(1.0, 0.0625, 0.00390625, 0.000244140625);
vec4 codes4_pre(uint hm) {
  return uintBitsToFloat(uvec4(hm) & uvec4(0x4B00000Fu, 0x4B0000F0u, 0x4B000F00u, 0x4B00F000u)) - UNMAGIC;
}

// Producer `pi`'s share of the stage at row n0: chunk i = pi + NP q of the stage is row
// i / CW, chunk i % CW, loaded raw (weights, dy, scale): nothing here waits for a load.
// Rows past the tensor are read clamped to the last row; chunks past the row read its last
// chunk (their columns are never written).
void load_share(uint pi, uint n0, uint cb, out uvec4 wr[PER_P], out float dr[PER_P],
                out float sr[PER_P]) {
  [[unroll]] for (uint q = 0u; q < PER_P; ++q) {
    const uint i = pi + NP * q;
    const uint r = i / CW, ch = min(cb * CW + i % CW, p.KC - 1u);
    const uint n = min(n0 + r, p.N - 1u);
    wr[q] = w4[n * p.KC + ch];
    const uint g = p.G == 1u ? 0u : min(ch >> (p.gshift - 2u), p.G - 1u);
    dr[q] = dy[n];
    sr[q] = s[n * p.G + g];
  }
}

// The stage at row n0 into ring slot `slot`, with its coefficients dy * s (0 for rows past
// the slice's end `ne`): here the producer waits for its loads.
void store_share(uint pi, uint slot, uint n0, uint ne, uvec4 wr[PER_P], float dr[PER_P],
                 float sr[PER_P]) {
  [[unroll]] for (uint q = 0u; q < PER_P; ++q) {
    const uint i = pi + NP * q;
    ring_w[slot * SW + i] = wr[q];
    ring_c[slot * SW + i] = dr[q] * sr[q] * (n0 + i / CW < ne ? 1.0 : 0.0);
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint blocks = (p.KC + CW - 1u) / CW;
  const uint cb = wg % blocks, j = wg / blocks;
  const uint nb = j * p.RS;
  const uint ne = min(nb + p.RS, p.N);
  const uint stages = (ne - nb + SR - 1u) / SR;
  const bool producer = t >= NC;
  const uint pi = t - NC;  // producer index (producers only)
  const uint cl = t % CW, rg = t / CW;  // consumers only
  const uint c = cb * CW + cl;

  vec4 acc[8];
  [[unroll]] for (uint a = 0u; a < 8u; ++a) acc[a] = vec4(0.0);

  // Producers: stage 0 into slot 0, stages 1..LOOK in flight.
  uvec4 wq[LOOK][PER_P];
  float dq[LOOK][PER_P], sq[LOOK][PER_P];
  if (producer) {
    [[unroll]] for (uint l = 0u; l < LOOK; ++l) {
      if (1u + l < stages) load_share(pi, nb + SR * (1u + l), cb, wq[l], dq[l], sq[l]);
    }
    uvec4 w0[PER_P];
    float d0[PER_P], s0[PER_P];
    load_share(pi, nb, cb, w0, d0, s0);
    store_share(pi, 0u, nb, ne, w0, d0, s0);
  }
  barrier();
  // Step k: producers move stage k + 1 (register slot (k + 1) % LOOK... unrolled by LOOK so
  // the slots are registers) into ring slot (k + 1) & 1 and load stage k + 1 + LOOK in its
  // place; consumers decode stage k from ring slot k & 1. The ring slot written at step k
  // was last read at step k - 1, before the barrier that ends it.
  for (uint k0 = 0u; k0 < stages; k0 += LOOK) {
    [[unroll]] for (uint l = 0u; l < LOOK; ++l) {
      const uint k = k0 + l;
      if (k < stages) {
        if (producer) {
          if (k + 1u < stages) {
            store_share(pi, (k + 1u) & 1u, nb + SR * (k + 1u), ne, wq[l], dq[l], sq[l]);
            if (k + 1u + LOOK < stages) {
              load_share(pi, nb + SR * (k + 1u + LOOK), cb, wq[l], dq[l], sq[l]);
            }
          }
        } else {
          const uint slot = k & 1u;
          const uvec4 w = ring_w[slot * SW + rg * CW + cl];
          const vec4 coef = vec4(ring_c[slot * SW + rg * CW + cl]);
          [[unroll]] for (uint q = 0u; q < 4u; ++q) {
            const uint hm = w[q] | MAGIC_BITS;
            const vec4 lo = codes4_pre(hm), hi = codes4_pre((w[q] >> 16) | MAGIC_BITS);
            acc[2u * q] = fma(coef, lo, acc[2u * q]);
            acc[2u * q + 1u] = fma(coef, hi, acc[2u * q + 1u]);
          }
        }
        barrier();
      }
    }
  }

  const bool live = !producer && c < p.KC;
  [[unroll]] for (uint a = 0u; a < 8u; ++a) acc[a] = live ? acc[a] * UNPOS : vec4(0.0);

  // acc[a][q] is column 4a + q of the chunk. Two passes of 16 columns through shared
  // memory; consumer t then sums the RG row groups of one (column, chunk) pair.
  const uint slice_base = j * p.KC * 32u;
  [[unroll]] for (uint pass = 0u; pass < 2u; ++pass) {
    if (pass > 0u) barrier();  // the previous pass's readers are done
    if (!producer) {
      [[unroll]] for (uint i = 0u; i < 16u; ++i) {
        red[i * RED_STRIDE + rg * CW + cl] = acc[4u * pass + i / 4u][i % 4u];
      }
    }
    barrier();
    if (t < 16u * CW) {
      const uint i = t % 16u, ocl = t / 16u;
      float v = 0.0;
      [[unroll]] for (uint r = 0u; r < RG; ++r) v += red[i * RED_STRIDE + r * CW + ocl];
      const uint oc = cb * CW + ocl;
      if (oc < p.KC) part[slice_base + oc * 32u + 16u * pass + i] = v;
    }
  }
  // Make this workgroup's partial sums visible device-wide before counting it as done.
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) last_to_finish = atomicAdd(count[cb], 1u) == p.S - 1u;
  barrier();
  if (!last_to_finish) return;
  memoryBarrierBuffer();
  // One column per consumer, slices in order, 8 slices' loads in flight together.
  if (producer) return;
  const uint row = p.KC * 32u;  // floats per partial row
  const uint col = cb * CW * 32u + t;
  const uint kk = min(col, row - 1u);
  float v = 0.0;
  uint jj = 0u;
  for (; jj + 8u <= p.S; jj += 8u) {
    float b[8];
    [[unroll]] for (uint u = 0u; u < 8u; ++u) b[u] = part[(jj + u) * row + kk];
    [[unroll]] for (uint u = 0u; u < 8u; ++u) v += b[u];
  }
  for (; jj < p.S; ++jj) v += part[jj * row + kk];
  if (col < min((cb + 1u) * CW * 32u, p.K)) outp[col] = v;
  if (t == 0u) count[cb] = 0u;
}
