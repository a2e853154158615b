#version 450
// 4-bit linear backward at M = 1 over long rows, fp32, one dispatch:
//   partial[j][k] = sum_{n in slice j} dy[n] * (code(n,k) - 8) * s[n][k / gs]
//   dx[k] = sum_j partial[j][k]
// over etvk's packed Q4 layout (rows n contiguous along k, a row is KC uvec4 chunks of 32
// codes; see q4_pack_weights.comp) and fp32 scales s[n][g] (G groups per row; g >= G has
// scale 0).
//
// Why not the split-N kernel (q4_linear_bwd_split.comp) at M = 1: it reads one u32 per lane
// and row, and u32 loads alone cap an H200 at 0.58 of its read ceiling (docs/performance.md).
// Here a lane owns one chunk column c (32 consecutive k, 32 accumulators) and reads one
// uvec4 per row, so a subgroup's load is a contiguous 512-byte run of one row. The
// workgroup is CW chunk columns x RG row groups; row group r walks RR = RS / RG consecutive
// rows of the workgroup's slice in batches of UR. With chunk-aligned groups one scale serves the
// lane's whole chunk per row (one load per 32 codes). The RG row groups' sums meet in
// shared memory (two passes of 16 k per chunk, 16 KiB), so the partial sums are
// S = N / RS rows of K: few, next to the weight. Narrow column blocks (CW = 8 or 16: a
// subgroup reads 128 or 256 contiguous bytes of each of 4 or 2 rows) give more column
// blocks and so fewer slices for the same number of workgroups.
//
// The slices are summed by the last workgroup of each column block to finish (a counter per
// block, incremented after the workgroup's partial sums are written and made visible), in
// slice order, so the result does not depend on which workgroup finishes last. That saves
// a second dispatch, which costs ~5 us on an H200 (docs/performance.md). The last workgroup
// sets its counter back to zero, ready for the next launch (the runtime zeroes the
// counters once, when the graph is built).
//
// H200 (docs/performance.md, session 4): 20.6 / 51.8 / 51.7 us at 8192^2 / N = 28672, K = 8192
// / N = 8192, K = 28672, against 32.2 / 82.9 / 80.8 for the split-N kernel. 78 registers:
// three workgroups fit an SM, which the runtime uses when each row group walks enough rows
// (wide_bwd_target in ops/q4_linear/select.rs); a change that needs more than 80 registers loses
// that third workgroup (at 95: 68 us at N = 28672). The kernel is bound by its decode: with
// synthetic codes and no loads at all the session-3 form took 17.7 / 47.8 / 50.1 us. Decoding
// with fp32 denormals (an AND and an FMA per code, no subtract) would cut that to 12.8 /
// 30.4 / 31.9 us, but the H200's driver cannot keep fp32 denormals
// (shaderDenormPreserveFloat32 = false). 8 rows per batch and fp16 pair decoding
// (unpackHalf2x16; an earlier form than DEC below) ran slower.
//
// The M = 1 variants (manifest) prefetch: batches of UR = 2 rows, the next batch loaded
// before the current one is decoded. Compiled without glslc -O that is 78 registers (81
// with -O, which lost the third workgroup at N = 28672: 66 us); H200, session 7: 20.5 /
// 49.6 / 50.1 us against 20.9 / 51.6 / 51.9 for UR = 4 without prefetch. The M = 2
// variants keep UR = 4 (their 16 more accumulators leave no room for a second batch).
// PREFETCH = 2 walks a row quad per iteration, the quad's scales and dy as one vec4 each,
// the second pair of rows loaded while the first decodes: H200 (session 23) 95 registers
// against 88, so only the touch variant takes it (two workgroups of 320 per SM leave room
// for 96): 8192^2 19.5 -> 18.9-19.0 us, N = 14336, K = 4096 18.4 -> 17.9; the plain fp16
// variant with it lost its third workgroup per SM (N = 28672, K = 8192: 46.9 -> 64.2).
//
// Decoding is in place: an AND and a subtract per code, no shifts (see codes4_pre).
//
// Two switches for the M = 1 variants (session 19, docs/performance.md). DEC = 1 decodes
// whole-chunk groups as fp16 subnormals (codes8), right only where the widening keeps them,
// which Vulkan promises only with shaderDenormPreserveFloat16 and the DenormPreserve mode;
// lavapipe keeps them without advertising it, so the runtime runs these variants after a
// self-check on the device (crates/runtime/src/ops/q4_wide_check.rs). NPF > 0 adds NPF
// invocations past the NT that compute (local size NT + NPF), which only touch one word of
// every 32-byte sector of the workgroup's weights and scales, in the order the row groups
// read them, so that the row groups' loads find L2 warm. At 8192^2 on an H200 the fp16
// decode alone gains nothing, the touch invocations alone ~0.5 us; together 20.5 -> 19.2 us. The touch invocations cost the third workgroup per SM
// (49 -> 56 us at N = 28672, K = 8192), so the runtime takes them only at launches of two
// workgroups per SM.
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "q4_scales.glsl"

#ifndef NT
#define NT 256  // local size (the runtime launches this kernel with NT x 1 x 1)
#endif
#ifndef CW
#define CW 32  // chunk columns per workgroup
#endif
#ifndef MT
#define MT 1  // activation rows (the runtime uses the MT variant at M == MT exactly)
#endif
#define RG (NT / CW)  // row groups
#define PER ((CW * 32 + NT - 1) / NT)  // columns per invocation in the final sum
#ifndef UR
#define UR 4  // rows per batch of loads
#endif
#ifndef PREFETCH
#define PREFETCH 0  // 1: the next batch is loaded before the current one is decoded; 2: see above
#endif
#ifndef NPF
#define NPF 0  // touch invocations past the NT (the runtime launches NT + NPF)
#endif
#ifndef PFD
#define PFD 16  // a touch invocation's loads in flight
#endif
// Decode of whole-chunk groups: 0: the 2^23 magic (an AND and a subtract per code); 1: codes
// as fp16 subnormals c * 2^-24 widened to fp32 (one logic op per two codes, one conversion
// per code, the -8 of all codes summed apart).
#ifndef DEC
#define DEC 0
#endif

layout(set = 0, binding = 0) coherent buffer Part { float part[]; };
layout(set = 0, binding = 1) readonly buffer Dy { float dy[]; };
layout(set = 0, binding = 1) readonly buffer Dy4 { vec4 dy4[]; };
layout(set = 0, binding = 2) readonly buffer W4 { uvec4 w4[]; };
#if NPF > 0
layout(set = 0, binding = 2) readonly buffer W1 { uint w1[]; };
#endif
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
layout(set = 0, binding = 3) readonly buffer S2 { vec2 s2[]; };  // row quads (q4_scales.glsl)
layout(set = 0, binding = 3) readonly buffer S4 { vec4 s4[]; };
layout(set = 0, binding = 4) coherent buffer Count { uint count[]; };  // [column blocks], 0 between launches
layout(set = 0, binding = 5) writeonly buffer Out { float outp[]; };   // dx [K]

layout(push_constant) uniform Params {
  uint N;       // weight rows (the reduction)
  uint KC;      // uvec4 chunks per weight row (Kpad / 32); partial rows are KC * 32 floats
  uint G;       // scale groups per row
  uint gs;      // group size (multiple of 4)
  uint RS;      // rows per slice (a multiple of 4 * RG)
  uint gshift;  // log2(gs / 8), or 0xFFFFFFFF when gs / 8 is not a power of two
  uint K;       // dx's length (<= KC * 32)
  uint S;       // slices: ceil(N / RS)
} p;  // 8 words, as the split-N kernel's (the runtime selects between them on one node)

// Shared sums of one pass: [16 k][RG][CW], the k stride padded by one float so that the
// readers (consecutive invocations on consecutive k of one chunk) hit distinct banks.
#define RED_STRIDE (RG * CW + 1)
shared float red[16 * RED_STRIDE];
shared bool last_to_finish;

// The in-place magic decode (codes4_lo / codes4_hi, q4_magic.glsl): an AND and a subtract
// per code, the accumulators scaled back by 16^-q once at the end.
#include "q4_magic.glsl"

#if DEC
// The 8 codes of word w in the accumulators' order (lo: nibbles 0..3, hi: nibbles 4..7): pair
// i (nibbles i and i + 4) from one masked word read as two fp16 subnormals c * 2^-24 and
// widened (exactly where subnormals are kept: see the header). The coefficients carry the
// 2^24 (DEC_COEF) and the -8 of every code comes off once at the end (8 times the
// coefficients' sum), so a code costs half a logic operation, a conversion and an FMA
// instead of an AND, a subtract and an FMA. (That subtraction cancels: the sums carry 8 x sum |coef| more magnitude than the
// magic decode's; f64-checked like every other form.)
void codes8(uint w, out vec4 lo, out vec4 hi) {
  vec2 h[4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i) h[i] = unpackHalf2x16((w >> (4u * i)) & 0x000F000Fu);
  lo = vec4(h[0].x, h[1].x, h[2].x, h[3].x);
  hi = vec4(h[0].y, h[1].y, h[2].y, h[3].y);
}
const float DEC_COEF = 16777216.0;  // 2^24: acc = sum coef * c
const float DEC_OFF = 8.0;          // result = acc - 8 * sum coef
#endif

// Rows n .. n + UR - 1 of chunk cc: weights, the scale of group g and dy, from clamped
// rows, so no branch sits between the loads; rows at or past the row group's end count
// with coefficient 0 (the caller's mask). No select on a loaded value: it would make the
// warp wait for the load where it is issued (H200: 65.2 -> 63.4 us at N = 28672, K = 8192).
// (A non-finite dy or scale in such a row turns its column sums into NaN; the true result
// holds that row too, so it is non-finite anyway.) vec_dy: n is a multiple of 4 and
// N % 4 == 0. n is a multiple of UR (row groups start on multiples of 4), so with UR = 2 or 4
// the batch's scales are adjacent in their row quad: one load, from rows clamped to the
// padded ones (R = N rounded up to 8; rows past N have scale 0 there).
void load_batch(uint n, uint cc, uint g, bool vec_dy, out uvec4 wv[UR], out float sv[UR],
                out float dv[MT * UR]) {
  [[unroll]] for (uint u = 0u; u < UR; ++u) wv[u] = w4[min(n + u, p.N - 1u) * p.KC + cc];
#if UR == 4
  const vec4 sq = s4[Q4S(min(n, ((p.N + 7u) & ~7u) - 4u), g, p.G) >> 2];
  sv[0] = sq.x;
  sv[1] = sq.y;
  sv[2] = sq.z;
  sv[3] = sq.w;
#elif UR == 2
  const vec2 sq = s2[Q4S(min(n, ((p.N + 7u) & ~7u) - 2u), g, p.G) >> 1];
  sv[0] = sq.x;
  sv[1] = sq.y;
#else
  [[unroll]] for (uint u = 0u; u < UR; ++u) sv[u] = s[Q4S(min(n + u, p.N - 1u), g, p.G)];
#endif
  const uint last = p.N - 1u;
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    const uint row = m * p.N;  // dy is [MT][N]
    [[unroll]] for (uint q = 0u; q < UR; q += 4u) {
      const uint n4 = n + q;
      vec4 d4;
      if (vec_dy) {
        d4 = dy4[(row + min(n4, p.N - 4u)) >> 2];
      } else {
        d4 = vec4(dy[row + min(n4, last)], dy[row + min(n4 + 1u, last)],
                  dy[row + min(n4 + 2u, last)], dy[row + min(n4 + 3u, last)]);
      }
      [[unroll]] for (uint i = 0u; i < 4u && q + i < UR; ++i) dv[m * UR + q + i] = d4[i];
    }
  }
}

#if PREFETCH == 2
// dy of rows n .. n + 3 (clamped rows: their coefficients are masked by the caller).
vec4 quad_dy(uint n, bool vec_dy) {
  if (vec_dy) return dy4[min(n, p.N - 4u) >> 2];
  const uint last = p.N - 1u;
  return vec4(dy[min(n, last)], dy[min(n + 1u, last)], dy[min(n + 2u, last)], dy[min(n + 3u, last)]);
}
#endif

// The eight codes of word `word` as two vec4 in the accumulators' order (lo: nibbles 0..3,
// hi: nibbles 4..7), by the decode DEC selects.
#if DEC
#define DECODE8(word, lo, hi) vec4 lo, hi; codes8(word, lo, hi);
#else
#define DECODE8(word, lo, hi) const vec4 lo = codes4_lo(word), hi = codes4_hi(word);
#endif
// One row's chunk `w` times COEF(m), the coefficient of activation row m (dy * scale, 0 for
// masked rows; with DEC already times DEC_COEF), into the accumulators: the one row body of
// every form. (A macro, not a function: as a function with an array of coefficients the
// driver made the PREFETCH = 1 variants 35-40% slower at N = 28672, H200 session 24.)
#define ADD_ROW(w, COEF)                                                               \
  [[unroll]] for (uint q = 0u; q < 4u; ++q) {                                          \
    DECODE8((w)[q], lo, hi)                                                            \
    [[unroll]] for (uint m = 0u; m < MT; ++m) {                                        \
      const vec4 coef = vec4(COEF(m));                                                 \
      acc[8u * m + 2u * q] = fma(coef, lo, acc[8u * m + 2u * q]);                      \
      acc[8u * m + 2u * q + 1u] = fma(coef, hi, acc[8u * m + 2u * q + 1u]);            \
    }                                                                                  \
  }

#if MT == 1
// Column `col` of chunk `oc` of activation row m: the result itself when there is one slice,
// else the slice's partial sum. Chunks past the row are not written.
void store_sum(float v, uint m, uint slice_base, uint oc, uint col) {
  if (oc >= p.KC) return;
  const uint k = oc * 32u + col;
  if (p.S == 1u) {
    if (k < p.K) outp[m * p.K + k] = v;
  } else {
    part[slice_base + k] = v;
  }
}
#endif

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint blocks = (p.KC + CW - 1u) / CW;
  const uint cb = wg % blocks, j = wg / blocks;
  const uint cl = t % CW, rg = t / CW;
  const uint c = cb * CW + cl;
  const uint cc = min(c, p.KC - 1u);  // dead lanes (c >= KC) load a valid chunk, write nothing
  const uint rr = p.RS / RG;
  const uint nb = j * p.RS + rg * rr;
#if NPF > 0
  const uint ne = t < NT ? min(nb + rr, p.N) : nb;
#else
  const uint ne = min(nb + rr, p.N);
#endif
  // dy starts 16-byte aligned at every batch when N % 4 == 0 (nb and UR multiples of 4).
  const bool vec_dy = (p.N & 3u) == 0u && (UR & 3u) == 0u;
  uvec4 wv[UR];
  float sv[UR], dv[MT * UR];

  // A chunk lies in one group when gs is a power-of-two multiple of 32 (or one group spans
  // the row); its group is then a shift of the chunk index. Other group sizes (multiples of
  // 4) read one scale per 4-code half-word.
  const bool chunk_group = p.G == 1u || (p.gshift != 0xFFFFFFFFu && p.gshift >= 2u);
  const uint gc = p.G == 1u ? 0u : (chunk_group ? cc >> (p.gshift - 2u) : 0u);
  const bool live_gc = gc < p.G;
  const uint gcl = min(gc, p.G - 1u);

  // acc[8 m + a]: activation row m; the MT rows share each code's decode. (Flat arrays: at
  // MT = 1 the kernel is the one measured before MT existed.)
  vec4 acc[MT * 8];
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    [[unroll]] for (uint a = 0u; a < 8u; ++a) acc[8u * m + a] = vec4(0.0);
  }
#if DEC || PREFETCH == 2
  float csum[MT];  // sum of the coefficients, for the codes' offset (DEC)
  [[unroll]] for (uint m = 0u; m < MT; ++m) csum[m] = 0.0;
#endif

#if NPF > 0
  if (t >= NT && chunk_group) {
    // Items in the row groups' order: step i of every row group, then step i + 1; per row
    // CW / 2 weight sectors (two chunks each), then one scale word per 8 chunks: row n of a
    // quad at chunk 2 (n % 4) of each 8, so that its quad's four rows touch every 32-byte
    // sector of the quad's scales (two groups of 32 k each) between them.
    const uint SPR = CW / 2u + (CW + 7u) / 8u;
    const uint items = rr * RG * SPR;
    uint touched = 0u;
    for (uint e0 = t - NT; e0 < items; e0 += NPF * PFD) {
      uint v[PFD];
      [[unroll]] for (uint u = 0u; u < PFD; ++u) {
        const uint e = min(e0 + u * NPF, items - 1u);
        const uint r = e / SPR, q = e % SPR;
        const uint n = min(j * p.RS + (r % RG) * rr + r / RG, p.N - 1u);
        if (q < CW / 2u) {
          v[u] = w1[(n * p.KC + min(cb * CW + 2u * q, p.KC - 1u)) * 4u];
        } else {
          const uint sc = min(cb * CW + 8u * (q - CW / 2u) + 2u * (n & 3u), p.KC - 1u);
          // (G = 1: the shift by ~2^32 gives some value, which min takes to 0. A select
          // here instead cost the whole gain at 8192^2: 19.2 -> 20.6 us, session 19.)
          v[u] = floatBitsToUint(s[Q4S(n, min(sc >> (p.gshift - 2u), p.G - 1u), p.G)]);
        }
      }
      [[unroll]] for (uint u = 0u; u < PFD; ++u) touched ^= v[u];
    }
    // Never true (N > 0): keeps the loads.
    if (p.N == 0u) outp[0] = uintBitsToFloat(touched);
  }
#endif
  if (chunk_group) {
#if PREFETCH == 2
    // MT = 1, UR = 2, a row quad per iteration: its four scales and dy in one vec4 each,
    // loaded with its first two rows' weights; the second pair's weights load while the first
    // pair decodes, the next quad's first pair while the second does.
    const uint rq = ((p.N + 7u) & ~7u) - 4u;  // the last quad of the padded rows
    uvec4 wa[2], wb[2];
    vec4 sq = s4[Q4S(min(nb, rq), gcl, p.G) >> 2];
    vec4 dq = quad_dy(nb, vec_dy);
    wa[0] = w4[min(nb, p.N - 1u) * p.KC + cc];
    wa[1] = w4[min(nb + 1u, p.N - 1u) * p.KC + cc];
    for (uint n = nb; n < ne; n += 4u) {
      const vec4 c4 = dq * sq * vec4(lessThan(uvec4(n) + uvec4(0u, 1u, 2u, 3u), uvec4(ne)));
#if DEC
      csum[0] = csum[0] + c4.x + c4.y + c4.z + c4.w;  // the rows in order, as one at a time
      const vec4 cq = c4 * DEC_COEF;
#else
      const vec4 cq = c4;
#endif
#define QX(m) cq.x
#define QY(m) cq.y
#define QZ(m) cq.z
#define QW(m) cq.w
      wb[0] = w4[min(n + 2u, p.N - 1u) * p.KC + cc];
      wb[1] = w4[min(n + 3u, p.N - 1u) * p.KC + cc];
      ADD_ROW(wa[0], QX)
      ADD_ROW(wa[1], QY)
      sq = s4[Q4S(min(n + 4u, rq), gcl, p.G) >> 2];
      dq = quad_dy(n + 4u, vec_dy);
      wa[0] = w4[min(n + 4u, p.N - 1u) * p.KC + cc];
      wa[1] = w4[min(n + 5u, p.N - 1u) * p.KC + cc];
      ADD_ROW(wb[0], QZ)
      ADD_ROW(wb[1], QW)
    }
#else
#if PREFETCH
    load_batch(nb, cc, gcl, vec_dy, wv, sv, dv);
    for (uint n = nb; n < ne; n += UR) {
      // Rows past the walk are clamped and masked like any batch's tail.
      uvec4 wn[UR];
      float sn[UR], dn[MT * UR];
      load_batch(n + UR, cc, gcl, vec_dy, wn, sn, dn);
#else
    for (uint n = nb; n < ne; n += UR) {
      load_batch(n, cc, gcl, vec_dy, wv, sv, dv);
#endif
      [[unroll]] for (uint u = 0u; u < UR; ++u) {
#if DEC
        float cf[MT];
        [[unroll]] for (uint m = 0u; m < MT; ++m) {
          const float c0 = dv[m * UR + u] * sv[u] * (n + u < ne ? 1.0 : 0.0);
          csum[m] += c0;
          cf[m] = c0 * DEC_COEF;
        }
#endif
#if DEC
#define CF(m) cf[m]
#else
#define CF(m) (dv[m * UR + u] * sv[u] * (n + u < ne ? 1.0 : 0.0))
#endif
        ADD_ROW(wv[u], CF)
      }
#if PREFETCH
      wv = wn;
      sv = sn;
      dv = dn;
#endif
    }
#endif  // PREFETCH == 2
  } else {
    // Groups inside a chunk (gs % 4 == 0: each 4-code half-word lies in one group).
    for (uint n = nb; n < ne; ++n) {
      const uvec4 v = w4[n * p.KC + cc];
      float d[MT];
      [[unroll]] for (uint m = 0u; m < MT; ++m) d[m] = dy[m * p.N + n];
      [[unroll]] for (uint h = 0u; h < 8u; ++h) {
        const uint g = (cc * 32u + 4u * h) / p.gs;
        const float sc = g < p.G ? s[Q4S(n, g, p.G)] : 0.0;
        const uint word = v[h >> 1];
        const vec4 q4 = (h & 1u) == 0u ? codes4_lo(word) : codes4_hi(word);
        [[unroll]] for (uint m = 0u; m < MT; ++m) {
          acc[8u * m + h] = fma(vec4(d[m] * sc), q4, acc[8u * m + h]);
        }
      }
    }
  }

  const bool live = c < p.KC && (live_gc || !chunk_group);
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
#if DEC
    // The other-groups path above decodes by the magic: its sums want UNPOS.
    [[unroll]] for (uint a = 0u; a < 8u; ++a) {
      acc[8u * m + a] = !live ? vec4(0.0)
                      : chunk_group ? acc[8u * m + a] - vec4(DEC_OFF * csum[m])
                                    : acc[8u * m + a] * UNPOS;
    }
#else
    [[unroll]] for (uint a = 0u; a < 8u; ++a) acc[8u * m + a] = live ? acc[8u * m + a] * UNPOS : vec4(0.0);
#endif
  }

  // acc[8 m + a][q] is column 4a + q of the chunk. Two passes of 16 columns per activation row
  // through shared memory; invocation t then sums the RG row groups of 2 (column, chunk)
  // pairs, column fastest. Partial rows: [S][MT][KC * 32].
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    const uint slice_base = (j * MT + m) * p.KC * 32u;
    [[unroll]] for (uint pass = 0u; pass < 2u; ++pass) {
      if (m + pass > 0u) barrier();  // the previous pass's readers are done
#if NPF > 0
      if (t < NT)
#endif
      [[unroll]] for (uint i = 0u; i < 16u; ++i) {
        red[i * RED_STRIDE + rg * CW + cl] = acc[8u * m + 4u * pass + i / 4u][i % 4u];
      }
      barrier();
#if NPF > 0
      if (t < NT)
#endif
      for (uint o = t; o < 16u * CW; o += NT) {
        const uint i = o % 16u, ocl = o / 16u;
        float v = 0.0;
        [[unroll]] for (uint r = 0u; r < RG; ++r) v += red[i * RED_STRIDE + r * CW + ocl];
#if MT == 1
        store_sum(v, m, slice_base, cb * CW + ocl, 16u * pass + i);
#else
        // Partials only: with the one-slice store the MT = 2 kernel spilled its accumulators
        // to local memory (111 registers, 256 B: 146 us instead of 25 at 8192^2 on an H200).
        const uint oc = cb * CW + ocl;
        if (oc < p.KC) part[slice_base + oc * 32u + 16u * pass + i] = v;
#endif
      }
    }
  }
  // One slice: the sums above are the result (no partials, no counter, no final pass; that
  // chain of a fence, an atomic and a reload cost ~1.4 us at the end of the 8192^2 launch on
  // an H200, docs/performance.md session 6; not measured at one slice).
#if MT == 1
  if (p.S == 1u) return;
#endif
  // Make this workgroup's partial sums visible device-wide before counting it as done.
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) last_to_finish = atomicAdd(count[cb], 1u) == p.S - 1u;
  barrier();
  if (!last_to_finish) return;
#if NPF > 0
  if (t >= NT) return;  // after the last barrier
#endif
  memoryBarrierBuffer();
  // PER columns per invocation (consecutive invocations, consecutive columns), slices in
  // order, all PER columns' loads of a batch of 8 slices in flight together.
  const uint row = p.KC * 32u;  // floats per partial row
  const uint c0 = cb * CW * 32u + t;
  const uint cend = min((cb + 1u) * CW * 32u, p.K);
  [[unroll]] for (uint m = 0u; m < MT; ++m) {
    float v[PER];
    [[unroll]] for (uint i = 0u; i < PER; ++i) v[i] = 0.0;
    uint jj = 0u;
    for (; jj + 8u <= p.S; jj += 8u) {
      float b[PER][8];
      [[unroll]] for (uint i = 0u; i < PER; ++i) {
        const uint kk = min(c0 + NT * i, row - 1u);
        [[unroll]] for (uint u = 0u; u < 8u; ++u) b[i][u] = part[((jj + u) * MT + m) * row + kk];
      }
      [[unroll]] for (uint i = 0u; i < PER; ++i) {
        [[unroll]] for (uint u = 0u; u < 8u; ++u) v[i] += b[i][u];
      }
    }
    for (; jj < p.S; ++jj) {
      [[unroll]] for (uint i = 0u; i < PER; ++i) v[i] += part[(jj * MT + m) * row + min(c0 + NT * i, row - 1u)];
    }
    [[unroll]] for (uint i = 0u; i < PER; ++i) {
      if (c0 + NT * i < cend) outp[m * p.K + c0 + NT * i] = v[i];
    }
  }
  if (t == 0u) count[cb] = 0u;
}
