#version 450
// 4-bit weight-only linear for M <= 8 over long rows, fp32:
//   out[n] = sum_k x[k] * (code(n,k) - 8) * s[n][k / gs]  (+ bias[n])
// over etvk's packed Q4 layout (rows n contiguous along k, 8 codes per u32 word, a row is KC
// uvec4 chunks of 32 codes; see q4_pack_weights.comp) and fp32 scales s[n][g].
//
// The whole workgroup (NT invocations) splits K: invocation t takes chunks t, t + NT, ... of
// every one of the workgroup's RW rows. For each chunk it loads the chunk's 32 activations
// once and reuses them for all RW rows, and each weight load is one uvec4 per lane (a
// subgroup's load is a contiguous run of one row). Rows go in batches of UR whose weights
// and scales are loaded together. Partial sums meet in shared memory at the end (a
// two-stage sum, fixed order).
//
// Forms (docs/performance.md, GEMV history v10-v21):
// - DP4 (devices with packed int8 dot products, groups that are whole chunks): the chunk's
//   activations become three int8 limbs and a row's chunk is 24 packed dot products; the
//   next batch's weights and scales are loaded before the current batch is used. With PRE
//   the limbs come from a pre-pass (q4_act_limbs.comp) instead of from every workgroup,
//   which pays off for large matrices (H200, 8192 x 28672: 51.2 us, 0.63 of the read
//   ceiling).
// - DP4 + PERSIST (rows of at most 256 chunks; 512 in one workgroup per SM on devices with
//   workgroups of 1024, select::persist_max_chunks): one chunk per invocation, its limbs made
//   once; a wave of workgroups walks the blocks of RW (8) rows. H200: 17.5 us at 8192^2, 44.0
//   us at 28672 x 8192 (0.51 / 0.72 of the read ceiling in the session-4 table). At M = 1
//   q4_linear_gemv_half.comp (half a chunk per invocation) is faster and takes every row;
//   this form serves M = 2..8 on rows of 32..256 chunks (session 21), and of up to 512 (H100,
//   session 41: N = 8192, K = 14336 M = 2 / 4 16% / 21% faster than the unpersistent form).
// - DP4 + PERSIST + DQ (`_dp4_persist_dq`, M = 2..8 of an 8da4w linear,
//   et_vk.linear_dq8ca_q4gsw, with fp32 x): x is the raw activation row, which the
//   workgroup holds whole (one chunk per invocation): it finds the row's min and max
//   (subgroup reductions, one barrier), the choose_qparams node's scale and zero point from
//   them (act_qparams.glsl, bit for bit; its parameters as specialization constants 3-7, as
//   in q4_linear_gemv_half.comp's DQ forms), and quantizes its chunk to the integers
//   d = q - zp in [-255, 255], which two int8 limbs hold exactly (d = 128 a0 + a1): 16 packed
//   dot products per row and chunk instead of 24 over three limbs of the fake-quantized x,
//   the scale applied once per row and chunk. The choose node then launches nothing at
//   these M unless another reader needs its outputs (ops/quantize.rs). Needs subgroup
//   arithmetic and NT <= 128 subgroups.
// - float (every device, every group size): an in-place decode at three operations per
//   nibble. 28.7 us at 8192^2.
// The kernel is bound by instructions and load latency, not by bandwidth (without its
// activation and scale loads the float form still reached only ~1.6 TB/s), which is why
// both the instruction count per nibble and the overlap of the loads matter.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "q4_scales.glsl"
#ifdef DP4
#extension GL_EXT_spirv_intrinsics : require
// OpSDotKHR (4450) over two 32-bit words of 4 signed 8-bit lanes (PackedVectorFormat4x8Bit,
// 0): the sum of the 4 lane products, exact in int32. Debian's glslang predates
// GL_EXT_integer_dot_product, hence the raw instruction. Variants with DP4 are only picked
// on devices with VK_KHR_shader_integer_dot_product.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal uint fmt);
#include "q4_limbs.glsl"
#endif

#ifndef MT
#define MT 1
#endif
#ifndef RW
#define RW 16
#endif
#ifndef UR
#define UR 4
#endif
#ifdef PERSIST
// Local size (the specialization constant): one invocation per chunk of the row in whole
// subgroups of 32, at most 256 (a fixed 128 or 256 idled up to 96 invocations per row of
// 32..255 chunks).
#define NT gl_WorkGroupSize.x
#endif
#ifndef NT
#define NT 256  // local size (the runtime launches this kernel with NT x 1 x 1)
#endif
#define ROWS_OUT (MT * RW)
#define RP (ROWS_OUT < 16 ? ROWS_OUT : 16)  // outputs per pass of the final sum
#define SEGS (NT / RP)

layout(set = 0, binding = 0) writeonly buffer Out { float outp[]; };
#ifdef PRE
layout(set = 0, binding = 1) readonly buffer Lb { uvec4 lb[]; };
#else
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer X4 { vec4 x4[]; };
#endif
layout(set = 0, binding = 2) readonly buffer W4 { uvec4 w4[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
layout(set = 0, binding = 3) readonly buffer S4 { vec4 s4[]; };  // row quads (q4_scales.glsl)
layout(set = 0, binding = 4) readonly buffer B { float bias[]; };
#ifndef DQ
#define DQ 0
#endif
#if DQ
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#include "act_qparams.glsl"
#include "act_qparams_spec.glsl"
#include "act_row_range.glsl"
#endif

layout(push_constant) uniform Params {
  uint M;         // activation rows (<= MT)
  uint N;         // output features
  uint K;         // activation row length (<= Kpad)
  uint KC;        // uvec4 chunks per weight row (Kpad / 32)
  uint G;         // scale groups per row
  uint gs;        // group size (multiple of 4)
  uint has_bias;
  uint gshift;    // log2(gs / 8), or 0xFFFFFFFF when gs / 8 is not a power of two
} p;

shared float red[RP * NT];
shared float red2[RP * SEGS];

const float MAGIC = 8388608.0;  // 2^23
const uint MAGIC_BITS = 0x4B000000u;

// Codes of nibbles 0..3 of `h` (a 16-bit half of a word) minus 8, exactly, without an
// int-to-float conversion: the nibble ORed into 2^23's mantissa is 2^23 + code.
vec4 codes4(uint h) {
  return uintBitsToFloat(uvec4(h & 15u, (h >> 4) & 15u, (h >> 8) & 15u, (h >> 12) & 15u) | MAGIC_BITS)
      - (MAGIC + 8.0);
}

// Rows nb .. nb + UR - 1 of chunk c: their weights and, for chunk-aligned groups, the scale
// of group gc. Every lane loads a clamped row, so no branch sits between the loads; rows
// past N are computed from row N - 1's data and never written. Nothing may select on a
// loaded value here: a select makes the warp wait for the load where it is issued, which
// undid the next batch's early load (H200: 18.3 -> 17.7 us at 8192^2, 47.0 -> 44.5 us at
// N = 28672, docs/performance.md). The scales travel with the weights so that their
// latency overlaps. The UR = 4 rows from nb (a multiple of 4) are one quad of the packed
// scales: one vec4, its quad clamped to the padded rows (rows past N have scale 0 there).
void load_batch(uint c, uint nb, uint gc, out uvec4 wv[UR], out float sb[UR]) {
  [[unroll]] for (uint u = 0u; u < UR; ++u) wv[u] = w4[min(nb + u, p.N - 1u) * p.KC + c];
#if UR == 4
  const uint quads = ((p.N + 7u) >> 3) * 2u;
  const vec4 sq = s4[min(nb >> 2, quads - 1u) * p.G + min(gc, p.G - 1u)];
  sb[0] = sq.x;
  sb[1] = sq.y;
  sb[2] = sq.z;
  sb[3] = sq.w;
#else
  [[unroll]] for (uint u = 0u; u < UR; ++u) sb[u] = s[Q4S(min(nb + u, p.N - 1u), min(gc, p.G - 1u), p.G)];
#endif
}

// Two-stage sum of each output's NT partials, RP outputs per pass through shared memory
// (16 KiB). Stage 1: SEGS invocations per output each sum every SEGS-th partial (so that
// consecutive invocations read consecutive words: no bank conflicts); stage 2: one
// invocation per output sums its SEGS segments. Fixed order: the same result every run.
// Called in uniform control flow (barriers); `red` may be reused right after it returns.
// Output rows mrow .. mrow + MT - 1 (the persistent form: its workgroup's activation row).
void sum_and_write(float acc[MT][RW], uint n0, uint mrow, uint t) {
  [[unroll]] for (uint pass = 0u; pass < ROWS_OUT / RP; ++pass) {
    if (pass > 0u) barrier();  // the previous pass's readers are done
    [[unroll]] for (uint r = 0u; r < RP; ++r) {
      const uint o = pass * RP + r;
      red[r * NT + t] = acc[o / RW][o % RW];
    }
    barrier();
    {
      const uint o = t / SEGS, seg = t % SEGS;
      float v = 0.0;
      [[unroll]] for (uint i = 0u; i < RP; ++i) v += red[o * NT + seg + SEGS * i];
      red2[o * SEGS + seg] = v;
    }
    barrier();
    if (t < RP) {
      const uint o = pass * RP + t;
      const uint m = mrow + o / RW, n = n0 + o % RW;
      if (m < p.M && n < p.N) {
        float v = 0.0;
        for (uint i = 0u; i < SEGS; ++i) v += red2[t * SEGS + i];
        if (p.has_bias != 0u) v += bias[n];
        outp[m * p.N + n] = v;
      }
    }
  }
}

#ifdef DP4
// One row's chunk against the chunk's activation limbs: 24 packed dot products, exact in
// int32, then the three limbs combined in float (the -8 of the codes from the limb sums).
float row_dot(uvec4 w, uint le[3][4], uint lo[3][4], int lsum[3], float unit) {
  int i0 = 0, i1 = 0, i2 = 0;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint ev = w[j] & 0x0F0F0F0Fu, od = (w[j] >> 4) & 0x0F0F0F0Fu;
    i0 += sdot4x8(le[0][j], ev, 0) + sdot4x8(lo[0][j], od, 0);
    i1 += sdot4x8(le[1][j], ev, 0) + sdot4x8(lo[1][j], od, 0);
    i2 += sdot4x8(le[2][j], ev, 0) + sdot4x8(lo[2][j], od, 0);
  }
  return unit * (float(i0 - 8 * lsum[0]) + float(i1 - 8 * lsum[1]) * 0.0078125
                 + float(i2 - 8 * lsum[2]) * 0.00006103515625);
}
#endif

#if DQ
// row_dot over the two limbs of the integers d: 16 packed dot products, combined in int32
// (|i0| <= 32 * 2 * 15), the codes' -8 in `lsumc`; one conversion.
float row_dot_int(uvec4 w, uint le[2][4], uint lo[2][4], int lsumc, float unit) {
  int i0 = 0, i1 = 0;
  [[unroll]] for (uint j = 0u; j < 4u; ++j) {
    const uint ev = w[j] & 0x0F0F0F0Fu, od = (w[j] >> 4) & 0x0F0F0F0Fu;
    i0 += sdot4x8(le[0][j], ev, 0) + sdot4x8(lo[0][j], od, 0);
    i1 += sdot4x8(le[1][j], ev, 0) + sdot4x8(lo[1][j], od, 0);
  }
  return float(i0 * 128 + i1 - lsumc) * unit;
}
#endif

#ifdef PERSIST
// Persistent form (DP4, one chunk per invocation: KC <= NT): the invocation's limbs are made
// once, then the workgroup walks row blocks wr, wr + (workgroups per row), ... of RW rows,
// the first batch of the next block loaded before the current block's sums meet in shared
// memory. The limbs are made once per workgroup instead of once per block, with no
// pre-pass dispatch, and the blocks spread evenly over a launch sized to the GPU.
// M activation rows (M <= 8) split the launch: workgroup wg serves row wg / (workgroups per
// row), and the M workgroups walking the same blocks at about the same time share the
// weight through L2.
void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint per_row = max((gl_NumWorkGroups.x * gl_NumWorkGroups.y) / p.M, 1u);
  const uint m = wg / per_row, wr = wg % per_row;
  const uint nblocks = (p.N + RW - 1u) / RW;
  // Whole workgroups leave: no barrier is skipped by part of one.
  if (m >= p.M || wr >= nblocks) return;
  const uint nwg = per_row;
  const uint xrow = m * p.K;
  const uint c = min(t, p.KC - 1u);
  const uint k0 = c * 32u;
  const bool chunk_shift = p.G == 1u || (p.gshift != 0xFFFFFFFFu && p.gshift >= 2u);
  const uint cshift = p.G == 1u ? 31u : p.gshift - 2u;
  const uint gc = (p.G == 1u || !chunk_shift) ? 0u : c >> cshift;
  vec4 xv[8];
  if ((p.K & 3u) == 0u && c < p.K / 32u) {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[i] = x4[((xrow + k0) >> 2) + i];
  } else {
    [[unroll]] for (uint i = 0u; i < 8u; ++i) {
      const uint k = k0 + 4u * i;
      xv[i] = vec4(k < p.K ? x[xrow + k] : 0.0, k + 1u < p.K ? x[xrow + k + 1u] : 0.0,
                   k + 2u < p.K ? x[xrow + k + 2u] : 0.0, k + 3u < p.K ? x[xrow + k + 3u] : 0.0);
    }
  }
#if DQ
  // The row's min and max: invocations past the row hold copies of its last chunk and zeros
  // past K, neither of which moves them (act_qparams takes min(lo, 0) and max(hi, 0)).
  vec4 l4 = xv[0], u4 = xv[0];
  [[unroll]] for (uint i = 1u; i < 8u; ++i) {
    l4 = min(l4, xv[i]);
    u4 = max(u4, xv[i]);
  }
  row_range_store(min(min(l4.x, l4.y), min(l4.z, l4.w)), max(max(u4.x, u4.y), max(u4.z, u4.w)), t);
  barrier();
  const vec2 rlu = row_range_fold();
  const float rlo = rlu.x, rhi = rlu.y;
  // The row's scale and zero point as the node stores and reads them back (a scale that
  // is not finite gives NaN outputs, as the node's fake-quantized x would); values past K
  // stay 0.
  const vec4 aq = act_qparams_spec(rlo, rhi);
  const vec2 qp = aq.zw;
  const float invc = act_inv_scale(qp.x);
  [[unroll]] for (uint i = 0u; i < 8u; ++i) {
    [[unroll]] for (uint e = 0u; e < 4u; ++e) {
      if (k0 + 4u * i + e < p.K) xv[i][e] = act_quant_offset(xv[i][e], qp.y, invc);
    }
  }
  uint le[2][4], lo[2][4];
  int lsum[2];
  make_int_limbs(xv, le, lo, lsum);
  const int lsumc = 8 * (lsum[0] * 128 + lsum[1]);
  float unit = (isinf(qp.x) || isnan(qp.x)) ? uintBitsToFloat(0x7FC00000u) : qp.x;
#else
  uint le[3][4], lo[3][4];
  int lsum[3];
  float unit;
  make_limbs(xv, le, lo, lsum, unit);
#endif
  // Invocations past the row's chunks hold a copy of the last chunk: they count zero.
  if (t >= p.KC || gc >= p.G) unit = 0.0;

  uvec4 wv[UR];
  float sb[UR];
  uint b = wr;
  load_batch(c, b * RW, gc, wv, sb);
  for (;;) {
    const uint n0 = b * RW;
    const uint bn = b + nwg;
    float acc[MT][RW];
    [[unroll]] for (uint r0 = 0u; r0 < RW; r0 += UR) {
      uvec4 wn[UR];
      float sn[UR];
      if (r0 + UR < RW) {
        load_batch(c, n0 + r0 + UR, gc, wn, sn);
      } else if (bn < nblocks) {
        load_batch(c, bn * RW, gc, wn, sn);
      }
      [[unroll]] for (uint u = 0u; u < UR; ++u) {
#if DQ
        acc[0][r0 + u] = row_dot_int(wv[u], le, lo, lsumc, unit) * sb[u];
#else
        acc[0][r0 + u] = row_dot(wv[u], le, lo, lsum, unit) * sb[u];
#endif
      }
      wv = wn;
      sb = sn;
    }
    sum_and_write(acc, n0, m, t);
    if (bn >= nblocks) break;
    b = bn;
  }
}
#else
void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  // M activation rows (the int8 forms serve M <= 8 this way): workgroup wg takes row block
  // wg / M for activation row wg % M, so the M workgroups of a block run next to each other
  // and share its weight through L2.
  const uint mrow = wg % p.M;
  const uint n0 = (wg / p.M) * RW;
  const bool vec_x = (p.K & 3u) == 0u;
  const uint nfull = p.K / 32u;  // chunks whose 32 columns are all inside K
  // A chunk lies in one group when gs is a multiple of 32; with gs / 32 a power of two its
  // group is a shift of the chunk index.
  // (qcs4w: one group spans the row.)
  const bool chunk_shift = p.G == 1u || (p.gshift != 0xFFFFFFFFu && p.gshift >= 2u);
  const uint cshift = p.G == 1u ? 31u : p.gshift - 2u;

  float acc[MT][RW];
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    [[unroll]] for (uint r = 0u; r < RW; ++r) acc[m][r] = 0.0;
  }

  for (uint c = t; c < p.KC; c += NT) {
    const uint k0 = c * 32u;
#ifndef PRE
    vec4 xv[MT][8];
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      const uint row = min(mrow + m, p.M - 1u) * p.K;
      if (vec_x && c < nfull) {
        const uint b4 = (row + k0) >> 2;
        [[unroll]] for (uint i = 0u; i < 8u; ++i) xv[m][i] = x4[b4 + i];
      } else {
        [[unroll]] for (uint i = 0u; i < 8u; ++i) {
          const uint k = k0 + 4u * i;
          xv[m][i] = vec4(k < p.K ? x[row + k] : 0.0, k + 1u < p.K ? x[row + k + 1u] : 0.0,
                          k + 2u < p.K ? x[row + k + 2u] : 0.0, k + 3u < p.K ? x[row + k + 3u] : 0.0);
        }
      }
    }
#endif
    // In-place decode (groups aligned to chunks): nibble i of a 16-bit half sits at bits 4i,
    // so the masked half ORed into 2^23's mantissa is 2^23 + code * 16^i exactly; minus 2^23
    // and times x pre-scaled by 16^-i (exact: a power of two) that is x * code: an AND-OR, a
    // subtract and an FMA per nibble, no shifts. The -8 comes once per chunk from the x sum.
#ifndef DP4
    vec4 xs[MT][8];
    float xsum[MT];
    [[unroll]] for (uint m = 0u; m < MT; ++m) {
      vec4 t4 = vec4(0.0);
      [[unroll]] for (uint i = 0u; i < 8u; ++i) {
        xs[m][i] = xv[m][i] * vec4(1.0, 0.0625, 0.00390625, 0.000244140625);
        t4 += xv[m][i];
      }
      xsum[m] = (t4.x + t4.y) + (t4.z + t4.w);
    }
#endif
#ifdef DP4
    // Integer path (M = 1, groups aligned to chunks): the chunk's activations become three
    // int8 limbs in units of amax / 127, x = unit * (a0 + a1 / 128 + a2 / 16384) to within
    // amax * 2^-22, packed four to a word in the order the codes come out of a weight word
    // (w & 0x0F0F0F0F: the even k of the word, (w >> 4) & 0x0F0F0F0F: the odd k). Then a row's
    // chunk is 24 packed dot products (~1 operation per nibble, exact in int32) instead of
    // 32 FMAs plus decode; the -8 comes from the limbs' sums.
    uint le[3][4], lo[3][4];
    int lsum[3];
    float unit;
#ifdef PRE
    // Limbs made once per launch by q4_act_limbs.comp: 7 uvec4 per chunk, [M][7][KC].
    {
      uvec4 q[7];
      [[unroll]] for (uint i = 0u; i < 7u; ++i) q[i] = lb[(mrow * 7u + i) * p.KC + c];
      [[unroll]] for (uint l = 0u; l < 3u; ++l) {
        [[unroll]] for (uint j = 0u; j < 4u; ++j) {
          le[l][j] = q[2u * l][j];
          lo[l][j] = q[2u * l + 1u][j];
        }
        lsum[l] = int(q[6][l]);
      }
      unit = uintBitsToFloat(q[6].w);
    }
#else
    make_limbs(xv[0], le, lo, lsum, unit);
#endif
#endif
    const uint gc = (p.G == 1u || !chunk_shift) ? 0u : c >> cshift;
#ifdef DP4
    // DP4 variants serve chunk-aligned groups only (the host picks them only then). The
    // next batch of rows is loaded before the current one is used.
    uvec4 wv[UR];
    float sb[UR];
    load_batch(c, n0, gc, wv, sb);
    [[unroll]] for (uint r0 = 0u; r0 < RW; r0 += UR) {
      uvec4 wn[UR];
      float sn[UR];
      if (r0 + UR < RW) load_batch(c, n0 + r0 + UR, gc, wn, sn);
      [[unroll]] for (uint u = 0u; u < UR; ++u) {
        const float sc = gc < p.G ? sb[u] : 0.0;
        acc[0][r0 + u] = fma(row_dot(wv[u], le, lo, lsum, unit), sc, acc[0][r0 + u]);
      }
      if (r0 + UR < RW) {
        wv = wn;
        sb = sn;
      }
    }
#else
    [[unroll]] for (uint r0 = 0u; r0 < RW; r0 += UR) {
      uvec4 wv[UR];
      float sb[UR];
      load_batch(c, n0 + r0, gc, wv, sb);
      [[unroll]] for (uint u = 0u; u < UR; ++u) {
        const uint sbase = Q4S(min(n0 + r0 + u, p.N - 1u), 0u, p.G);  // + 4 g
        if (chunk_shift) {
          const float sc = gc < p.G ? sb[u] : 0.0;
          vec4 f[8];
          [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            // 2^23's bits ORed in once per half, then one AND with one constant per code.
            const uint lo = wv[u][j] | MAGIC_BITS, hi = (wv[u][j] >> 16) | MAGIC_BITS;
            const uvec4 masks = uvec4(0x4B00000Fu, 0x4B0000F0u, 0x4B000F00u, 0x4B00F000u);
            f[2u * j] = uintBitsToFloat(uvec4(lo) & masks) - MAGIC;
            f[2u * j + 1u] = uintBitsToFloat(uvec4(hi) & masks) - MAGIC;
          }
          [[unroll]] for (uint m = 0u; m < MT; ++m) {
            float d = -8.0 * xsum[m];
            [[unroll]] for (uint i = 0u; i < 8u; ++i) d += dot(xs[m][i], f[i]);
            acc[m][r0 + u] = fma(d, sc, acc[m][r0 + u]);
          }
        } else {
          // gs % 4 == 0: each half-word (4 codes) lies in one group.
          [[unroll]] for (uint j = 0u; j < 4u; ++j) {
            const uint k = k0 + 8u * j;
            const uint g0 = k / p.gs, g1 = (k + 4u) / p.gs;
            const vec4 qlo = codes4(wv[u][j] & 0xFFFFu) * (g0 < p.G ? s[sbase + 4u * g0] : 0.0);
            const vec4 qhi = codes4(wv[u][j] >> 16) * (g1 < p.G ? s[sbase + 4u * g1] : 0.0);
            [[unroll]] for (uint m = 0u; m < MT; ++m) {
              acc[m][r0 + u] += dot(xv[m][2u * j], qlo) + dot(xv[m][2u * j + 1u], qhi);
            }
          }
        }
      }
    }
#endif
  }

  sum_and_write(acc, n0, mrow, t);
}
#endif  // PERSIST
