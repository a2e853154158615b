#version 450
// 4-bit weight-only linear for M = 1 over rows of up to 256 chunks (K <= 8192; longer rows
// in slices, below), int8 dot products, fp32 in and out:
//   out[n] = sum_k x[k] * (code(n,k) - 8) * s[n][k / gs]  (+ bias[n])
// over etvk's packed Q4 layout (rows n contiguous along k, 8 codes per u32 word; see
// q4_pack_weights.comp) and fp32 scales s[n][g] in row quads (q4_scales.glsl), groups of
// whole chunks (gs a power-of-two multiple of 32, or one group per row).
//
// The persistent GEMV of q4_linear_gemv_wide.comp with half a chunk (16 codes, a uvec2 per
// row) per invocation: the activation limbs of an invocation are made from 16 activations
// instead of 32, and at 60 registers two workgroups of 512 share an SM, 32 warps against
// the 256-invocation form's 16 (94 registers). H200, 8192^2: 16.1 us against 17.5
// (docs/performance.md, session 5). At M >= 2 the wide form stays faster. The workgroup has
// one invocation per half chunk (of the row, or of a slice) in whole subgroups (NT, below):
// with a fixed 512, rows of 128 chunks or slices of 224 idled half or an eighth of it
// (H200, session 21: 4096^2 10.4 -> 8.6 us, N = 8192, K = 28672 45.6 -> 44.6).
//
// A wave of workgroups walks the blocks of RW rows (wg, wg + workgroups, ...), rows in
// batches of UR whose weights and scales are loaded together, the next batch before the
// current one is used (the first before the activations are read). Each block's NT partial
// sums per row meet in shared memory in a fixed order.
//
// Rows of 257..512 chunks (K <= 16384) take one workgroup of up to 1024 invocations per SM
// where the device allows it (select::half_gemv_max_chunks: invocations, shared memory, and
// subgroups of at least NT / 128 for the per-subgroup partials below): the same walk with no
// slices to add (a workgroup of 1024 at <= 64 registers fills an SM's register file, as two
// of 512 do). H100 (docs/performance.md, session 41): 5.4-12% faster than two slices on rows
// of 344..512 chunks (N = 4096, K = 14336 19.2 -> 17.7 us), 1.3% at 264.
//
// SLICED = 1 (rows of more than 256 chunks, or of more than 512 where workgroups of 1024
// run): the row is cut into p.S slices of p.CS chunks (<= 256, so that one invocation still
// holds one half chunk's limbs and two workgroups share an SM); workgroup wg works on
// slice wg % S and walks the blocks wg / S, wg / S + P, ... (P = workgroups / S), writing
// per-slice row sums to `part`. The S workgroups of one wg / S walk the same blocks; at its
// end each takes a ticket, and the last one adds the S slices of its blocks' rows in slice
// order (the same result every run) into `out`. Without it such rows took the
// 256-invocation form with a limbs pre-pass node: on an H200 49.4 us at N = 8192,
// K = 28672 against 44.6 sliced (the unsliced form takes 41.7 for the same bytes at
// N = 28672, K = 8192; docs/performance.md, sessions 20-21).
//
// EARLY = 1 (`q4_linear_gemv_half_early`, unsliced): the first block's second batch is
// loaded with its first, before the activations, so that its loads fly while x arrives and
// the limbs are made. Taken where every workgroup does one block and is at most 256 wide:
// H200 (docs/performance.md, session 26) 4096^2 8.6 -> 8.3 us, N = 8192, K = 2048 8.6 ->
// 8.3, N = 1024, K = 4096 6.4 -> 6.1; with workgroups of 512 it lost 0.1-0.2 us, and where
// workgroups walk several blocks the loop's extra branch cost 0.6 us at 8192^2 and 1.6 at
// N = 28672.
//
// DQ = 1 (`q4_linear_gemv_half_dq`, `_early_dq`, `_sliced_dq`): x is the raw activation row of
// an 8da4w linear (et_vk.linear_dq8ca_q4gsw), quantized per row to int8 and dequantized here
// (act_qparams.glsl, the choose_qparams node's arithmetic; its parameters as specialization
// constants 3-7) instead of by a node before: every workgroup finds the row's min and max
// (from the whole row it holds, or, sliced, by reading the row once more; subgroup
// reductions and one barrier, while the first weights are in flight) and quantizes its 16
// activations in registers, to the integers q - zp held in two int8 limbs (make_int_limbs).
// At M = 1 the choose_qparams node then launches nothing (ops/quantize.rs). The runtime takes
// these forms only with subgroup reductions and subgroups of at least 4.
//
// SILU = 1 (with DQ: `_dq_silu`, `_early_dq_silu`, `_sliced_dq_silu`): x = silu(gate) * up
// of a fused gated SiLU (a Llama MLP's w2), computed from its two inputs where x is loaded;
// the SiLU node then launches nothing at M = 1.
//
// NORM = 1 (with DQ: `_dq_norm`, `_early_dq_norm`, `_sliced_dq_norm`): x = RMSNorm(v) * w of an
// et_vk.rms_norm node whose output only this linear's kind reads (ops/fusion.rs), computed
// here where x is loaded: (v * w) * rsqrt(mean(v^2) + eps), the row's sum of squares reduced
// with its min / max (eps as specialization constant 8, w bound after the others; the
// product rounded before the scale, where rms_norm.comp scales v first, so that the min /
// max of v * w scaled are exactly those of x). NORM_ADD = 1 (`_addnorm`
// forms): v = a + b of the fused add before the norm (b bound last), whose node then only
// writes the sum. The norm node launches nothing at M = 1.
//
// TICKETS = 1 (`q4_linear_gemv_half_tickets`, and the DQ forms' `_tickets_dq*`: unsliced,
// not EARLY; taken where workgroups walk >= 8 blocks: H100, sessions 46-48, N = 28672 x
// K = 8192 55.7 -> 54.2 us, 8da4w 55.3 -> 55.1, 8192^2 19.3 -> 19.5; no H200 run yet):
// past the first two rounds (blocks wg and wg + P) a workgroup takes its next block from a
// ticket counter instead of the fixed stride, so that workgroups that stream faster (an
// SM's place on the L2, the other workgroup on its SM finishing first) could take more
// blocks and the launch's last blocks end together. Invocation 0 asks for the block after
// next at the top of a block and publishes it in the block sums' first barrier (the
// ticket's latency hidden behind the block's loads); the results do not depend on which
// workgroup sums a block. Each workgroup asks once per block after its first, so a launch
// hands out exactly T = blocks - P tickets, and the one that draws ticket T - 1 takes T off
// the counter: it is zero again for the next launch without a fill or a barrier.
//
// DQ_MM = 1 (with DQ: `_dq_mm`, `_early_dq_mm`, `_sliced_dq_mm`): the op before x (an RMSNorm,
// rms_norm.comp's MINMAX forms, or the gated SiLU, silu_mul_rows.comp) wrote the row's
// (min(0, min x), max(0, max x)) to `row_mm`: no reduction, no barrier, no subgroup
// operations before the quantization parameters (no subgroup requirement either).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_EXT_spirv_intrinsics : require
#ifndef DQ_MM
#define DQ_MM 0
#endif
#ifdef DQ
#if DQ && !DQ_MM
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#endif
#include "common.glsl"
#include "q4_scales.glsl"
#include "act_qparams.glsl"
// OpSDotKHR over two words of 4 signed 8-bit lanes (see q4_linear_gemv_wide.comp).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal uint fmt);
#define LIMB_WORDS 2
#include "q4_limbs.glsl"

// Local size (the specialization constant; the runtime launches NT x 1 x 1): twice the
// chunks of a row (or of a slice) rounded up to whole subgroups of 32, at most 512 (1024
// where the device allows), so that no more than 31 invocations of a workgroup idle.
#define NT gl_WorkGroupSize.x
#define RW 8  // rows per block (= Q4_ROW_PAD: whole blocks lie in the padded rows)
#define UR 4  // rows per batch of loads: one quad of the packed scales
#define SEGS (NT / RW)
#ifndef EARLY
#define EARLY 0
#endif
#ifndef DQ
#define DQ 0
#endif
#if DQ
#include "act_qparams_spec.glsl"
#endif
// QP_ONCE (DQ forms that reduce x's range themselves, EARLY or SLICED by default): one
// subgroup computes the row's quantization parameters after the range's barrier and shares
// them through a second one, where every invocation computing them issues the same
// instructions (~150 per warp by a count of the source). Dropping them altogether (wrong
// results) saved 0.8-1.5 us (H100, docs/performance.md, session 49). H100: `_early_dq`
// 4096^2 12.1 -> 11.3 us, `_sliced_dq` N = 8192 x K = 28672 59.6 -> 59.3; the plain `_dq`
// lost with it (8192^2 21.2-21.3 -> 21.6-21.7; why its second barrier costs more than it
// saves there is unmeasured) and `_tickets_dq` moved by 0.1-0.3 us, so those compute them
// in every invocation.
#ifndef QP_ONCE
#define QP_ONCE (DQ && !DQ_MM && (EARLY || SLICED))
#endif

#ifndef OUT_F16
#define OUT_F16 0
#endif
#ifndef TICKETS
#define TICKETS 0
#endif
#ifndef XFIRST
#define XFIRST 0
#endif
// TIMELINE = 1 (a timing diagnostic, compiled only by override; unsliced fp32 forms, with
// ETVK_SHADER_CLOCK=1): no results; invocation 0 of workgroup wg writes the device clock's
// low 32 bits (ns on NVIDIA) as float bits to out[16 wg ..]: [0] blocks done, [1] start,
// [2] limbs made, then (block, time its sums were written) pairs for up to 6 blocks, [15]
// end (workgroups whose 16 words lie past N write nothing). `ETVK_BENCH_DUMP` keeps the
// first launch's (docs/experiments/timeline.py reads it). TIMELINE = 2: also when block 0's
// two batches were used ([11], [12]; pairs for up to 4 blocks; [0] has 0x10000 added).
// The block sums stay live behind a branch no sum takes (session 46: without it the
// compiler dropped the loads and dot products, and the timeline timed an empty walk).
#ifndef TIMELINE
#define TIMELINE 0
#endif
#if TIMELINE
#extension GL_EXT_shader_realtime_clock : require
#if SLICED || DQ || OUT_F16
#error "TIMELINE: the unsliced fp32 forms only"
#endif
#define TL_AT(i, v) \
  if (16u * wg + 15u < p.N) outp[16u * wg + (i)] = uintBitsToFloat(v)
#endif
#if TICKETS && (SLICED || EARLY)
#error "TICKETS: the unsliced forms that are not EARLY only"
#endif
#if OUT_F16
// `_f16out` forms: the fp16 output of a force_fp16 program, written here (rounded once, as
// the conversion node after the fp32 forms rounds it), so that no such node runs at M = 1.
layout(set = 0, binding = 0) writeonly buffer Out { float16_t outp[]; };
#define OUT_T float16_t
#else
layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
#define OUT_T float
#endif
#ifndef X_F16
#define X_F16 0
#endif
#ifndef SILU
#define SILU 0
#endif
#ifndef NORM
#define NORM 0
#endif
#ifndef NORM_ADD
#define NORM_ADD 0
#endif
// The binding after the others (the row range of DQ_MM, or SILU's up).
#if SLICED
#define EXTRA_BINDING 7
#else
#define EXTRA_BINDING 5
#endif
#if SILU
// `_dq_silu` forms (with DQ, fp32): x is a fused gated SiLU's output that no node wrote at
// M = 1: silu(gate) * up computed here as silu.comp's GATE form computes it (binding 1 the
// gate, the last binding up), so that node launches nothing (ops/fusion.rs).
layout(set = 0, binding = 1) readonly buffer X { float xg[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 xg4[]; };
layout(set = 0, binding = EXTRA_BINDING) readonly buffer Up { float up[]; };
layout(set = 0, binding = EXTRA_BINDING) readonly buffer Up4 { vec4 up4[]; };
float silu_gate(float a, float u) {
  float r = a / (1.0 + exp(-a));
  r *= u;
  return r;
}
vec4 silu_gate4(vec4 a, vec4 u) {
  return vec4(silu_gate(a.x, u.x), silu_gate(a.y, u.y), silu_gate(a.z, u.z), silu_gate(a.w, u.w));
}
#define X_AT(i) silu_gate(xg[i], up[i])
#define X4_AT(i) silu_gate4(xg4[i], up4[i])
#elif NORM
// `_dq_norm` forms (with DQ, fp32): the norm's input v (binding 1; with NORM_ADD the add's a,
// and b bound after w) and weight w, from which x is computed after the row's sum of squares.
layout(constant_id = 8) const uint NORM_EPS_BITS = 0u;
layout(set = 0, binding = 1) readonly buffer X { float xa[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 xa4[]; };
layout(set = 0, binding = EXTRA_BINDING) readonly buffer NormW { float nw[]; };
layout(set = 0, binding = EXTRA_BINDING) readonly buffer NormW4 { vec4 nw4[]; };
#if NORM_ADD
layout(set = 0, binding = EXTRA_BINDING + 1) readonly buffer XB { float xb[]; };
layout(set = 0, binding = EXTRA_BINDING + 1) readonly buffer XB4 { vec4 xb4[]; };
#define X_AT(i) (xa[i] + xb[i])
#define X4_AT(i) (xa4[i] + xb4[i])
#else
#define X_AT(i) xa[i]
#define X4_AT(i) xa4[i]
#endif
#elif X_F16
// `_dq_x16` forms (with DQ and OUT_F16): a force_fp16 program's raw fp16 x, taken to float as
// the choose_qparams node takes it.
layout(set = 0, binding = 1) readonly buffer X { float16_t xh[]; };
layout(set = 0, binding = 1) readonly buffer X4 { f16vec4 xh4[]; };
#define X_AT(i) float(xh[i])
#define X4_AT(i) vec4(xh4[i])
#else
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };
#define X_AT(i) x[i]
#define X4_AT(i) x4[i]
#endif
layout(set = 0, binding = 2) readonly buffer W2 { uvec2 w2[]; };
layout(set = 0, binding = 3) readonly buffer S4 { vec4 s4[]; };  // row quads (q4_scales.glsl)
layout(set = 0, binding = 4) readonly buffer B { float bias[]; };
#if SLICED
layout(set = 0, binding = 5) coherent buffer Part { float part[]; };   // [S][N]
layout(set = 0, binding = 6) coherent buffer Count { uint count[]; };  // [P], 0 between launches
#endif
#if DQ_MM
// [M] (lower, upper) of x's rows; after the other bindings.
layout(set = 0, binding = EXTRA_BINDING) readonly buffer RowMinMax { vec2 row_mm[]; };
#endif

// The push constants of the wide GEMVs (a node's variants share one size); the sliced form
// takes its slice geometry in the two words this one does not read.
layout(push_constant) uniform Params {
#if SLICED
  uint S;         // slices per row (M = 1)
#else
  uint M;         // activation rows (1 here)
#endif
  uint N;         // output features
  uint K;         // activation row length (<= Kpad)
  uint KC;        // uvec4 chunks per weight row (Kpad / 32)
  uint G;         // scale groups per row
#if SLICED
  uint CS;        // chunks per slice (<= 256, 2 * CS <= NT)
#else
  uint gs;        // group size
#endif
  uint has_bias;
  uint gshift;    // log2(gs / 8) (>= 2 here), or 0xFFFFFFFF when G == 1
} p;

shared float red[RW * NT];
shared float red2[RW * SEGS];
#if DQ && !DQ_MM
// The row's min / max partials (up to 128 subgroups: the runtime keeps NT <= 128 x the
// subgroup size).
#include "act_row_range.glsl"
#if QP_ONCE
// Subgroup 0's (stored scale, stored zero point, 1 / scale, the norm's scale).
shared vec4 dq_params;
#endif
#endif
#if NORM
shared float norm_part[128];  // per-subgroup sums of squares

// The norm's 1 / rms from the per-subgroup sums of squares (after the range's barrier).
float norm_inv_rms() {
  float total = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) total += norm_part[i];
  return inversesqrt(total / float(p.K) + uintBitsToFloat(NORM_EPS_BITS));
}
#endif
#if SLICED
shared uint last_to_finish;  // 1: this workgroup adds its set's slices
#endif
#if TICKETS
// [1], zero between launches (each launch leaves it so; see TICKETS above); bound after
// every other binding (the DQ forms' row range, or the inputs x is computed from).
#if DQ_MM + SILU + NORM > 1
#error "one source of x's range or values: DQ_MM, SILU or NORM"
#endif
#if NORM && NORM_ADD
#define TICKETS_BINDING (EXTRA_BINDING + 2)
#elif DQ_MM || SILU || NORM
#define TICKETS_BINDING (EXTRA_BINDING + 1)
#else
#define TICKETS_BINDING EXTRA_BINDING
#endif
layout(set = 0, binding = TICKETS_BINDING) coherent buffer Tickets { uint tickets[]; };
shared uint next_block;  // invocation 0's ticket, as the block after next (>= blocks: none)
#endif

// Rows nb .. nb + 3 (nb a multiple of 4) of half chunk h: weights, and their scales of group
// gc as one vec4. The packed weights and scales have their rows padded to whole blocks of 8
// (prepack::q4::Q4_ROW_PAD), so no row is clamped: rows past N are computed from padding and
// never written. (Per-row clamps and addresses cost 0.3 us at 8192^2 against this form, the
// four scales as four loads as much again: H200, session 22.)
void load_batch(uint h, uint nb, uint gc, out uvec2 wv[UR], out float sb[UR]) {
  const uint stride = 2u * p.KC, base = nb * stride + h;
  [[unroll]] for (uint u = 0u; u < UR; ++u) wv[u] = w2[base + u * stride];
  const vec4 sq = s4[(nb >> 2) * p.G + gc];
  sb[0] = sq.x;
  sb[1] = sq.y;
  sb[2] = sq.z;
  sb[3] = sq.w;
}

// A row's half chunk against the half chunk's limbs: 12 packed dot products in three
// independent chains, combined in int32 (|sum| < 2^31: 16 * 127 * 15 * 2^14 + ...), with
// the codes' -8 of all three limbs in `lsumc`; one conversion.
float row_dot(uvec2 w, uint le[3][2], uint lo[3][2], int lsumc, float unit) {
  int i0 = 0, i1 = 0, i2 = 0;
  [[unroll]] for (uint j = 0u; j < 2u; ++j) {
    const uint ev = w[j] & 0x0F0F0F0Fu, od = (w[j] >> 4) & 0x0F0F0F0Fu;
    i0 += sdot4x8(le[0][j], ev, 0) + sdot4x8(lo[0][j], od, 0);
    i1 += sdot4x8(le[1][j], ev, 0) + sdot4x8(lo[1][j], od, 0);
    i2 += sdot4x8(le[2][j], ev, 0) + sdot4x8(lo[2][j], od, 0);
  }
  return float((i0 * 128 + i1) * 128 + i2 - lsumc) * unit;
}

#if DQ
// row_dot over the two limbs: 8 packed dot products instead of 12 (H100: 0.6-1.5 us faster
// over the three limbs of the fake-quantized floats, docs/performance.md, session 35).
float row_dot_int(uvec2 w, uint le[2][2], uint lo[2][2], int lsumc, float unit) {
  int i0 = 0, i1 = 0;
  [[unroll]] for (uint j = 0u; j < 2u; ++j) {
    const uint ev = w[j] & 0x0F0F0F0Fu, od = (w[j] >> 4) & 0x0F0F0F0Fu;
    i0 += sdot4x8(le[0][j], ev, 0) + sdot4x8(lo[0][j], od, 0);
    i1 += sdot4x8(le[1][j], ev, 0) + sdot4x8(lo[1][j], od, 0);
  }
  return float(i0 * 128 + i1 - lsumc) * unit;
}
#endif

// Two-stage sum of each row's NT partials (stage 1: SEGS invocations per row each sum every
// SEGS-th partial, no bank conflicts; stage 2: one invocation per row). Fixed order.
// With TICKETS, invocation 0's `publish` is returned to every invocation (read between the
// two barriers, so the next block's write cannot overtake a read).
uint sum_and_write(float acc[RW], uint n0, uint t, uint slice, uint publish) {
  [[unroll]] for (uint r = 0u; r < RW; ++r) red[r * NT + t] = acc[r];
#if TICKETS
  if (t == 0u) next_block = publish;
#endif
  barrier();
  uint published = publish;
#if TICKETS
  published = next_block;
#endif
  {
    const uint o = t / SEGS, seg = t % SEGS;
    float v = 0.0;
    [[unroll]] for (uint i = 0u; i < RW; ++i) v += red[o * NT + seg + SEGS * i];
    red2[o * SEGS + seg] = v;
  }
  barrier();
  if (t < RW) {
    const uint n = n0 + t;
    if (n < p.N) {
      float v = 0.0;
      if (SEGS > 64u) {
        // Workgroups of more than 512: four chains of SEGS / 4 (a multiple of 4 in whole
        // subgroups of 32) instead of one of up to 128 on the last block's path, added in a
        // fixed order.
        vec4 c4 = vec4(0.0);
        for (uint i = 0u; i < SEGS; i += 4u) {
          c4 += vec4(red2[t * SEGS + i], red2[t * SEGS + i + 1u], red2[t * SEGS + i + 2u],
                     red2[t * SEGS + i + 3u]);
        }
        v = (c4.x + c4.y) + (c4.z + c4.w);
      } else {
        for (uint i = 0u; i < SEGS; ++i) v += red2[t * SEGS + i];
      }
#if SLICED
      part[slice * p.N + n] = v;
#elif TIMELINE
      // Never true for a sum (no arithmetic makes this NaN payload): it keeps the loads and
      // dot products that no write would otherwise need.
      if (floatBitsToUint(v) == 0x7FC0ED5Bu) outp[n] = v;
#else
      if (p.has_bias != 0u) v += bias[n];
      outp[n] = OUT_T(v);
#endif
    }
  }
  return published;
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint nwg = gl_NumWorkGroups.x * gl_NumWorkGroups.y;
  const uint nblocks = (p.N + RW - 1u) / RW;
#if SLICED
  const uint P = nwg / p.S;  // workgroups per slice (the launch is a multiple of S)
  const uint slice = wg % p.S, first = wg / p.S;
  // Half chunk of the row this invocation holds; past its slice's (or the row's) half
  // chunks it holds a copy of the row's last one and counts zero.
  const uint hg = slice * 2u * p.CS + t;
#define LIVE (t < 2u * p.CS && hg < 2u * p.KC)
#else
  const uint P = nwg, slice = 0u, first = wg;
  const uint hg = t;
#define LIVE (t < 2u * p.KC)
#endif
  // Whole workgroups leave: no barrier is skipped by part of one (and all S workgroups of
  // a `first` leave together).
  if (first >= nblocks) return;
#if TIMELINE
  uint tl_blocks = 0u;
  if (t == 0u) TL_AT(1u, clockRealtime2x32EXT().x);
#endif
  const uint h = min(hg, 2u * p.KC - 1u);
  const uint k0 = h * 16u;
  const uint gc = p.G == 1u ? 0u : min((h >> 1) >> (p.gshift - 2u), p.G - 1u);
  uvec2 wv[UR];
  float sb[UR];
  uint b = first;
#if TICKETS
  // The second round by stride, the rest by ticket.
  uint bn = first + P;
  const uint tickets_per_launch = nblocks > P ? nblocks - P : 0u;
#endif
  vec4 xv[4];
#define LOAD_X()                                                                              \
  if ((p.K & 3u) == 0u && k0 + 16u <= p.K) {                                                  \
    [[unroll]] for (uint i = 0u; i < 4u; ++i) xv[i] = X4_AT((k0 >> 2) + i);                   \
  } else {                                                                                    \
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {                                               \
      const uint k = k0 + 4u * i;                                                             \
      xv[i] = vec4(k < p.K ? X_AT(k) : 0.0, k + 1u < p.K ? X_AT(k + 1u) : 0.0,                \
                   k + 2u < p.K ? X_AT(k + 2u) : 0.0, k + 3u < p.K ? X_AT(k + 3u) : 0.0);     \
    }                                                                                         \
  }
#if XFIRST
  // An experiment (override only; docs/performance.md, session 46): x asked for before the
  // first batch, not queued behind its loads.
  LOAD_X()
#endif
  load_batch(h, b * RW, gc, wv, sb);
#if EARLY
  // The first block's second batch too, before the activations: its loads then fly while
  // x arrives and the limbs are made.
  uvec2 we[UR];
  float se[UR];
  load_batch(h, b * RW + UR, gc, we, se);
  bool early = true;
#endif
#if !XFIRST
  LOAD_X()
#endif
#if NORM
  // x = (v * w) * rsqrt(mean(v^2) + eps): here the products p = v * w and this invocation's
  // share of the sum of squares; the sum, the scale and x come with the row's min / max
  // (one reduction, one barrier: the min / max of p scaled are those of x, as a product
  // with a positive scale rounds monotonically).
  float ss = 0.0;
  {
#if !SLICED
    // Invocations past the row hold copies of its last half chunk: they count zero (values
    // past K were loaded as zeros).
    if (LIVE) {
      [[unroll]] for (uint i = 0u; i < 4u; ++i) ss += dot(xv[i], xv[i]);
    }
#endif
    // The weights as x was loaded: four vec4 loads where the half chunk lies inside a row
    // of whole vec4s (fewer live addresses than 16 guarded scalar loads).
    if ((p.K & 3u) == 0u && k0 + 16u <= p.K) {
      [[unroll]] for (uint i = 0u; i < 4u; ++i) xv[i] *= nw4[(k0 >> 2) + i];
    } else {
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        [[unroll]] for (uint c = 0u; c < 4u; ++c) {
          const uint k = k0 + 4u * i + c;
          xv[i][c] = k < p.K ? xv[i][c] * nw[k] : 0.0;
        }
      }
    }
  }
#endif
#if DQ
  float dq_scale = 0.0;
  {
#if DQ_MM
    const vec2 mm = row_mm[0];
    const float l = mm.x, u = mm.y;
#else
#if SLICED
    // A slice holds part of the row: every workgroup reads the whole row for its min and
    // max (from L2 once the first has; K / NT loads per invocation), starting from 0, which
    // act_qparams takes in anyway (min(lo, 0), max(hi, 0)).
    float l = 0.0, u = 0.0;
    if ((p.K & 3u) == 0u) {
      for (uint i = t; i < (p.K >> 2); i += NT) {
#if NORM
        const vec4 xr = X4_AT(i);
        ss += dot(xr, xr);
        const vec4 v = xr * nw4[i];
#else
        const vec4 v = X4_AT(i);
#endif
        l = min(l, min(min(v.x, v.y), min(v.z, v.w)));
        u = max(u, max(max(v.x, v.y), max(v.z, v.w)));
      }
    } else {
      for (uint i = t; i < p.K; i += NT) {
#if NORM
        const float xr = X_AT(i);
        ss += xr * xr;
        const float v = xr * nw[i];
#else
        const float v = X_AT(i);
#endif
        l = min(l, v);
        u = max(u, v);
      }
    }
#else
    // The row's min and max: the invocations past the row hold copies of its last half
    // chunk and zeros past K, neither of which moves them (act_qparams takes min(lo, 0) and
    // max(hi, 0)).
    float l = min(min(min(xv[0].x, xv[0].y), min(xv[0].z, xv[0].w)),
                  min(min(xv[1].x, xv[1].y), min(xv[1].z, xv[1].w)));
    l = min(l, min(min(min(xv[2].x, xv[2].y), min(xv[2].z, xv[2].w)),
                   min(min(xv[3].x, xv[3].y), min(xv[3].z, xv[3].w))));
    float u = max(max(max(xv[0].x, xv[0].y), max(xv[0].z, xv[0].w)),
                  max(max(xv[1].x, xv[1].y), max(xv[1].z, xv[1].w)));
    u = max(u, max(max(max(xv[2].x, xv[2].y), max(xv[2].z, xv[2].w)),
                   max(max(xv[3].x, xv[3].y), max(xv[3].z, xv[3].w))));
#endif
    // Over the workgroup (act_row_range.glsl), the norm's sum of squares beside it.
#if NORM
    ss = subgroupAdd(ss);
    if (gl_SubgroupInvocationID == 0u) norm_part[gl_SubgroupID] = ss;
#endif
    row_range_store(l, u, t);
    barrier();
#if QP_ONCE
    // One subgroup folds the partials and computes the row's quantization parameters (and
    // the norm's scale); the others wait at a second barrier instead of each issuing the
    // same instructions (QP_ONCE, above).
    if (gl_SubgroupID == 0u) {
      vec2 lu = row_range_fold();
      float nscale = 1.0;
#if NORM
      nscale = norm_inv_rms();
      lu *= nscale;
#endif
      const vec4 qp = act_qparams_spec(lu.x, lu.y);
      if (gl_SubgroupInvocationID == 0u) dq_params = vec4(qp.z, qp.w, act_inv_scale(qp.z), nscale);
    }
    barrier();
    const vec4 dqp = dq_params;
#if NORM
    [[unroll]] for (uint i = 0u; i < 4u; ++i) xv[i] *= dqp.w;
#endif
#else
    {
      const vec2 lu = row_range_fold();
      l = lu.x;
      u = lu.y;
    }
#if NORM
    {
      const float nscale = norm_inv_rms();
      l *= nscale;
      u *= nscale;
      [[unroll]] for (uint i = 0u; i < 4u; ++i) xv[i] *= nscale;
    }
#endif
#endif  // QP_ONCE
#endif  // DQ_MM
#if DQ_MM || !QP_ONCE
    const vec4 qp = act_qparams_spec(l, u);
    const vec4 dqp = vec4(qp.z, qp.w, act_inv_scale(qp.z), 1.0);
#endif
    // The quantized row as integers d = q - z in [-255, 255] (the fake-quantized x is
    // d * scale): two int8 limbs hold d exactly, d = 128 * a0 + a1, and the scale multiplies
    // each row's integer sum once. Values past K were loaded as zeros, which quantize to 0.
    [[unroll]] for (uint i = 0u; i < 4u; ++i) {
      [[unroll]] for (uint c = 0u; c < 4u; ++c) xv[i][c] = act_quant_offset(xv[i][c], dqp.y, dqp.z);
    }
    dq_scale = dqp.x;
  }
  uint le[2][2], lo[2][2];
  int lsum[2];
  make_int_limbs(xv, le, lo, lsum);
  const int lsumc = 8 * (lsum[0] * 128 + lsum[1]);
  const float unit = LIVE ? dq_scale : 0.0;
#else
  uint le[3][2], lo[3][2];
  int lsum[3];
  float unit;
  make_limbs(xv, le, lo, lsum, unit);
  const int lsumc = 8 * (lsum[0] * 16384 + lsum[1] * 128 + lsum[2]);
  // In units of the last limb (2^-14: exact).
  unit = LIVE ? unit * 0.00006103515625 : 0.0;
#endif
#if TIMELINE
  if (t == 0u) TL_AT(2u, clockRealtime2x32EXT().x);
#endif
  for (;;) {
    const uint n0 = b * RW;
#if TICKETS
    uint ticket = 0u;
    if (t == 0u && bn < nblocks) ticket = atomicAdd(tickets[0], 1u);
#else
    const uint bn = b + P;
#endif
    float acc[RW];
    [[unroll]] for (uint r0 = 0u; r0 < RW; r0 += UR) {
      uvec2 wn[UR];
      float sn[UR];
      if (r0 + UR < RW) {
#if EARLY
        // One register set for this batch whichever way it was loaded (no copy of a load
        // in flight).
        if (!early) load_batch(h, n0 + r0 + UR, gc, we, se);
        wn = we;
        sn = se;
#else
        load_batch(h, n0 + r0 + UR, gc, wn, sn);
#endif
      } else if (bn < nblocks) {
        load_batch(h, bn * RW, gc, wn, sn);
      }
#if DQ
      [[unroll]] for (uint u = 0u; u < UR; ++u) acc[r0 + u] = row_dot_int(wv[u], le, lo, lsumc, unit) * sb[u];
#else
      [[unroll]] for (uint u = 0u; u < UR; ++u) acc[r0 + u] = row_dot(wv[u], le, lo, lsumc, unit) * sb[u];
#endif
      wv = wn;
      sb = sn;
#if TIMELINE
      // TIMELINE = 2: the time block 0's batches were used (slots 11, 12; pairs for 4 blocks
      // then): the branch on the batch's sums keeps the clock read after their loads.
      if (TIMELINE == 2 && t == 0u && tl_blocks == 0u &&
          floatBitsToUint(acc[r0] + acc[r0 + UR - 1u]) != 0x7FC0ED5Bu)
        TL_AT(11u + r0 / UR, clockRealtime2x32EXT().x);
#endif
    }
#if EARLY
    early = false;
#endif
#if TICKETS
    uint publish = nblocks;
    if (t == 0u && bn < nblocks) {
      // The launch's last ticket: every other has been drawn, none will be asked for again.
      if (ticket == tickets_per_launch - 1u) atomicAdd(tickets[0], 0u - tickets_per_launch);
      publish = min(2u * P + ticket, nblocks);
    }
    const uint after_next = sum_and_write(acc, n0, t, slice, publish);
#else
    sum_and_write(acc, n0, t, slice, 0u);
#endif
#if TIMELINE
    if (t == 0u && tl_blocks < (TIMELINE == 2 ? 4u : 6u)) {
      TL_AT(3u + 2u * tl_blocks, b);
      TL_AT(4u + 2u * tl_blocks, clockRealtime2x32EXT().x);
    }
    ++tl_blocks;
#endif
    if (bn >= nblocks) break;
    b = bn;
#if TICKETS
    bn = after_next;
#endif
  }
#if TIMELINE
  if (t == 0u) {
    TL_AT(0u, tl_blocks + (TIMELINE == 2 ? 0x10000u : 0u));
    TL_AT(15u, clockRealtime2x32EXT().x);
  }
#endif
#if SLICED
  // This workgroup's row sums visible device-wide before it counts as done.
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) last_to_finish = atomicAdd(count[first], 1u) == p.S - 1u ? 1u : 0u;
  barrier();
  if (last_to_finish == 0u) return;
  memoryBarrierBuffer();
  // Rows of blocks first, first + P, ...: consecutive invocations, consecutive rows.
  const uint rows = ((nblocks - first + P - 1u) / P) * RW;
  for (uint r = t; r < rows; r += NT) {
    const uint n = (first + P * (r / RW)) * RW + r % RW;
    if (n < p.N) {
      // Four slices' loads in flight together, added in slice order.
      float v = 0.0;
      uint j = 0u;
      for (; j + 4u <= p.S; j += 4u) {
        float a[4];
        [[unroll]] for (uint u = 0u; u < 4u; ++u) a[u] = part[(j + u) * p.N + n];
        [[unroll]] for (uint u = 0u; u < 4u; ++u) v += a[u];
      }
      for (; j < p.S; ++j) v += part[j * p.N + n];
      if (p.has_bias != 0u) v += bias[n];
      outp[n] = OUT_T(v);
    }
  }
  if (t == 0u) count[first] = 0u;
#endif
}
