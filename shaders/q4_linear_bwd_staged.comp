#version 450
// 4-bit linear backward for M = 3..MT activation rows over long rows, fp32, one dispatch:
//   partial[j][m][k] = sum_{n in slice j} dy[m][n] * (code(n,k) - 8) * s[n][k / gs]
//   dx[m][k] = sum_j partial[j][m][k]
// over etvk's packed Q4 layout (rows n contiguous along k, a row is KC uvec4 chunks of 32
// codes; see q4_pack_weights.comp) and fp32 scales s[n][g], for groups that are whole chunks
// (gs a power-of-two multiple of 32, or one group per row).
//
// Why staged: with MT rows an invocation keeps 8 columns x MT accumulators (64 at MT = 8),
// so it can own only one packed word per row; loading that word itself (the split-N kernel)
// leaves 4 bytes per lane and row in flight, and the loads, not the FMAs, set the pace.
// Here the workgroup loads a stage of SR rows x CB chunks with uvec4 loads (each invocation
// 4 of them, issued before the current stage is computed) into shared memory, with the stage's
// scales and dy, and its invocations read their words from there: invocation t owns word
// t % 32 of the column block (lanes of a subgroup read consecutive words) and rows
// (t / 32) * SR / RG .. of every stage. Each code is decoded once for all MT rows.
//
// The workgroup's row groups meet in shared memory; the slices' partial sums are added up
// by the last workgroup of each column block to finish, in slice order (counters in a
// zeroed tensor, restored by that workgroup), as in q4_linear_bwd_wide.comp.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "q4_scales.glsl"

#define NT 256      // local size (the runtime launches this kernel with NT x 1 x 1)
#define CB 8        // chunks per column block: 32 words, 256 columns
#define WPB (CB * 4)  // words per column block
#define RG (NT / WPB)  // row groups (8)
#define SR 128      // rows per stage
#define RPG (SR / RG)  // rows per row group and stage (16)
#ifndef MT
#define MT 8
#endif

layout(set = 0, binding = 0) coherent buffer Part { float part[]; };
layout(set = 0, binding = 1) readonly buffer Dy { float dy[]; };
layout(set = 0, binding = 2) readonly buffer W4 { uvec4 w4[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
layout(set = 0, binding = 4) coherent buffer Count { uint count[]; };  // [column blocks], 0 between launches
layout(set = 0, binding = 5) writeonly buffer Out { float outp[]; };   // dx [M][K]

layout(push_constant) uniform Params {
  uint N;       // weight rows (the reduction)
  uint KC;      // uvec4 chunks per weight row; partial rows are KC * 32 floats
  uint G;       // scale groups per row
  uint M;       // activation rows (<= MT), where the wide kernels have the group size
  uint RS;      // rows per slice (a multiple of SR)
  uint gshift;  // log2(gs / 8) (>= 2 here), or 0xFFFFFFFF when G == 1
  uint K;       // dx's row length (<= KC * 32)
  uint S;       // slices: ceil(N / RS)
} p;  // 8 words, as the other backward kernels' (they share one node)

// One stage: weights [SR][WPB] words, scales [SR][CB],
// dy [SR][MT]. The row groups' sums reuse the weight area at the end (RG * 256 floats).
shared uint sh_w[SR * CB * 4];
shared float sh_s[SR * CB];
shared float sh_d[SR * MT];
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

// The stage starting at row n0 (rows at or past `ne` count with dy = 0; their loads read
// clamped rows): invocation t's share, loaded into registers.
void load_stage(uint n0, uint cb, uint t, out uvec4 wr[4], out float sr[4], out float dr[4]) {
  [[unroll]] for (uint q = 0u; q < 4u; ++q) {
    const uint i = t + NT * q;  // [SR][CB]
    const uint r = i / CB, ch = min(cb * CB + i % CB, p.KC - 1u);
    const uint n = min(n0 + r, p.N - 1u);
    wr[q] = w4[n * p.KC + ch];
    const uint g = p.G == 1u ? 0u : min(ch >> (p.gshift - 2u), p.G - 1u);
    sr[q] = s[Q4S(n, g, p.G)];
    // dy: SR * MT values, [MT][SR] in the load order (consecutive invocations, consecutive n).
    const uint m = i / SR, rd = i % SR;
    dr[q] = m < MT ? dy[min(m, p.M - 1u) * p.N + min(n0 + rd, p.N - 1u)] : 0.0;
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint blocks = (p.KC + CB - 1u) / CB;
  const uint cb = wg % blocks, j = wg / blocks;
  const uint wl = t % WPB, rg = t / WPB;
  const uint nb = j * p.RS;
  const uint ne = min(nb + p.RS, p.N);
  const uint stages = (ne - nb + SR - 1u) / SR;

  vec4 acc[MT][2];
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    acc[m][0] = vec4(0.0);
    acc[m][1] = vec4(0.0);
  }

  uvec4 wr[4];
  float sr[4], dr[4];
  load_stage(nb, cb, t, wr, sr, dr);
  for (uint st = 0u; st < stages; ++st) {
    const uint n0 = nb + st * SR;
    barrier();  // the previous stage's readers are done
    [[unroll]] for (uint q = 0u; q < 4u; ++q) {
      const uint i = t + NT * q;
      // As words (a uvec4 element read back by component would need a dynamic index).
      [[unroll]] for (uint e = 0u; e < 4u; ++e) sh_w[4u * i + e] = wr[q][e];
      sh_s[i] = sr[q];
      const uint m = i / SR, rd = i % SR;
      // Rows past the slice and activation rows past M count as dy = 0.
      if (m < MT) sh_d[rd * MT + m] = (n0 + rd < ne && m < p.M) ? dr[q] : 0.0;
    }
    barrier();
    if (st + 1u < stages) load_stage(n0 + SR, cb, t, wr, sr, dr);
    for (uint i = 0u; i < RPG; ++i) {
      const uint r = rg * RPG + i;
      const uint word = sh_w[r * WPB + wl];
      const float sc = sh_s[r * CB + wl / 4u];
      const vec4 lo = codes4_pre(word | MAGIC_BITS), hi = codes4_pre((word >> 16) | MAGIC_BITS);
      [[unroll]] for (uint m = 0u; m < MT; ++m) {
        const vec4 coef = vec4(sh_d[r * MT + m] * sc);
        acc[m][0] = fma(coef, lo, acc[m][0]);
        acc[m][1] = fma(coef, hi, acc[m][1]);
      }
    }
  }

  // Row groups meet in shared memory (the weight area, RG x 256 floats per activation row),
  // one activation row at a time; partial rows: [S][MT][KC * 32].
  const uint chunk = cb * CB + wl / 4u;
  const bool live = chunk < p.KC && (p.G == 1u || (chunk >> (p.gshift - 2u)) < p.G);
  const uint row = p.KC * 32u;
  // Unrolled: a dynamic index into acc would put the accumulators in local memory.
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    barrier();  // the previous readers of the area are done
    const vec4 a0 = live ? acc[m][0] * UNPOS : vec4(0.0), a1 = live ? acc[m][1] * UNPOS : vec4(0.0);
    // Column c of the block = 8 * word + e; area [RG][256] as uvec4 (float bits).
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      sh_w[rg * 256u + wl * 8u + e] = floatBitsToUint(a0[e]);
      sh_w[rg * 256u + wl * 8u + 4u + e] = floatBitsToUint(a1[e]);
    }
    barrier();
    float v = 0.0;
    [[unroll]] for (uint r = 0u; r < RG; ++r) v += uintBitsToFloat(sh_w[r * 256u + t]);
    const uint col = cb * CB * 32u + t;
    if (col < row && m < p.M) part[(j * MT + m) * row + col] = v;
  }
  // Make this workgroup's partial sums visible device-wide before counting it as done.
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) last_to_finish = atomicAdd(count[cb], 1u) == p.S - 1u;
  barrier();
  if (!last_to_finish) return;
  memoryBarrierBuffer();
  const uint col = cb * CB * 32u + t;  // one column per invocation (CB * 32 == NT)
  for (uint m = 0u; m < p.M; ++m) {
    float v = 0.0;
    const uint kk = min(col, row - 1u);
    uint jj = 0u;
    for (; jj + 8u <= p.S; jj += 8u) {
      float b[8];
      [[unroll]] for (uint u = 0u; u < 8u; ++u) b[u] = part[((jj + u) * MT + m) * row + kk];
      [[unroll]] for (uint u = 0u; u < 8u; ++u) v += b[u];
    }
    for (; jj < p.S; ++jj) v += part[(jj * MT + m) * row + kk];
    if (col < p.K) outp[m * p.K + col] = v;
  }
  if (t == 0u) count[cb] = 0u;
}
