#version 450
// Scaled dot-product attention, one 64-lane workgroup per (batch, head, query row):
//   out[i] = softmax_j(q[i] . k[j] * scale + mask[i, j]) @ v
// over keys j < n_keys(i). Keys are taken in chunks of LANES: each lane scores one key of
// the chunk into shared memory, then every lane folds the whole chunk into a running
// (max, sum, acc) online softmax for the output dims it owns (d = lane, lane + LANES, ...),
// so any number of keys works without a score buffer. Math in float.
//
// Layouts are given by element strides (batch, head, seq) with the head dim contiguous, so
// both [B, H, S, D] (et_vk.sdpa) and [B, S, H, D] (sdpa_with_kv_cache) fit. Query head h
// reads key / value head h / group (grouped-query attention).
//
// KV-cache mode (pos_slot != NO_SLOT): start_pos is read from the graph's scalar buffer, so
// a SymInt start position changes without a re-record; the valid keys are the cache
// positions [0, start_pos + S) (clamped to the cache length L) and, when causal, query row
// i sees keys [0, start_pos + i].
//
// FUSED_KV = 1 (`sdpa_kv_*`, sdpa_with_kv_cache): the call's own keys and values k, v
// [B, S, H_kv, D] (bindings 6, 7; batch stride kst.w, head and seq strides the caches') are
// also written into the caches at rows start_pos.., by the workgroup of each kv head's first
// query head, instead of by two copy dispatches before: the cache-update level of a decode
// step and its barrier go. Keys at or past start_pos are read from k / v themselves, so no
// workgroup reads a cache row this dispatch writes.
//
// ROPE = 1 (with FUSED_KV, `sdpa_kv_rope_*`): q and the call's k are the inputs of an
// et_vk.apply_rotary_emb whose outputs only this attention read (ops/fusion.rs), rotated here
// as rotary.comp rotates them (pair-interleaved; cos / sin [S, D/2], bindings 8, 9, at the row's
// position within the call; rounded to the storage type): q where it is loaded, the call's
// keys where they are read and written into the cache. The RoPE node launches nothing.
// ROPE = 2 (`sdpa_kv_rope_hf_*`): the same for et_vk.apply_rotary_emb_hf, as rotary_hf.comp
// rotates (rotate-half over the first R dims; tables [rows, R] at row start + s, its start
// from scalar slot `rope.z`; R = `rope.x`, rows = `rope.y`).
#extension GL_EXT_control_flow_attributes : enable
#include "common.glsl"
#include "f16_round.glsl"
#ifndef FUSED_KV
#define FUSED_KV 0
#endif
#ifndef ROPE
#define ROPE 0
#endif
#if ROPE && !FUSED_KV
#error ROPE needs FUSED_KV
#endif

#define LANES 64     // must equal the local size (64, 1, 1)
#define PER_LANE 4   // output dims per lane: D <= LANES * PER_LANE (the builder checks)
#define NO_SLOT 0xFFFFFFFFu
// Masked scores (-inf in the mask) clamp to this, so exp() underflows to 0 instead of
// producing NaN from (-inf) - (-inf).
#define NEG_BIG -3.0e38

// DTYPE: the tensors' storage (float or float16_t); the math is float either way.
layout(set = 0, binding = 0) writeonly buffer Out { DTYPE out_[]; };
layout(set = 0, binding = 1) readonly buffer Q { DTYPE q_[]; };
#if FUSED_KV
layout(set = 0, binding = 2) buffer K { DTYPE k_[]; };
layout(set = 0, binding = 3) buffer V { DTYPE v_[]; };
#else
layout(set = 0, binding = 2) readonly buffer K { DTYPE k_[]; };
layout(set = 0, binding = 3) readonly buffer V { DTYPE v_[]; };
#endif
layout(set = 0, binding = 4) readonly buffer Mask { DTYPE mask_[]; };
layout(set = 0, binding = 5) readonly buffer Scalars { int scalars_[]; };
#if FUSED_KV
layout(set = 0, binding = 6) readonly buffer KN { DTYPE kn_[]; };
layout(set = 0, binding = 7) readonly buffer VN { DTYPE vn_[]; };
#endif
#if ROPE
layout(set = 0, binding = 8) readonly buffer Cos { DTYPE cos_[]; };
layout(set = 0, binding = 9) readonly buffer Sin { DTYPE sin_[]; };
#endif
#if FUSED_KV
// Split keys (`split.x` > 1, compile spec `etvk_sdpa_split`): per (row, split) the running
// max, sum and the D accumulators, [rows x split.x][D + 2]; per row the splits finished so far
// (zero between launches: the last one to finish resets it). After the RoPE's tables.
#if ROPE
#define SPLIT_BINDING 10
#else
#define SPLIT_BINDING 8
#endif
layout(set = 0, binding = SPLIT_BINDING) coherent buffer Part { float part_[]; };
layout(set = 0, binding = SPLIT_BINDING + 1) coherent buffer Count { uint count_[]; };
shared uint s_last;
#endif

layout(push_constant) uniform Params {
  uint rows;     // B * H * S
  uint S;        // query rows per (batch, head)
  uint H;        // query heads
  uint group;    // H / H_kv
  uint D;        // head dim
  uint L;        // keys (cache length in KV-cache mode)
  uint causal;   // 1: row i sees keys [0, start_pos + i]
  uint pos_slot; // scalar slot of start_pos, or NO_SLOT (start_pos = 0, all L keys valid)
  float scale;
  uint has_mask;
  uint mask_row; // mask element stride between query rows (0 broadcasts one row)
  uint scalar_rows; // 1: key rows read as scalars even where vectors would do (ETVK_SDPA_VEC=0)
  uvec4 qst;     // q strides: batch, head, seq, -
  uvec4 kst;     // k / v strides: batch, head, seq, FUSED_KV: the call's k / v batch stride
  uvec4 ost;     // out strides: batch, head, seq, -
  uvec4 rope;    // ROPE = 2: rotary dim R, table rows, start_pos slot, -
  uvec4 split;   // FUSED_KV: workgroups per query row (1: no split; used as the keys need), -, -, -
} p;

shared float s_q[LANES * PER_LANE];
shared float s_score[LANES];

#if ROPE == 1
// Pair `pr` (elements 2 pr, 2 pr + 1) at row position `pos` of the call, rotated:
// rotary.comp's arithmetic, rounded as its stores round.
vec2 rope_pair(float r, float im, uint pos, uint pr) {
  const uint f = pos * (p.D >> 1) + pr;
  const float c = float(cos_[f]), sn = float(sin_[f]);
  return vec2(ROUND_AS(DTYPE, r * c - im * sn), ROUND_AS(DTYPE, r * sn + im * c));
}
#elif ROPE == 2
// Element d of the row at `base` of q_ (KN = false) or kn_ (true), at position `pos` of the
// tables: rotary_hf.comp's arithmetic, rounded as its stores round.
float rope_hf(bool kn, uint base, uint d, uint pos) {
  const float x = kn ? float(kn_[base + d]) : float(q_[base + d]);
  if (d >= p.rope.x) return x;
  const uint half_r = p.rope.x >> 1;
  const uint o = d < half_r ? d + half_r : d - half_r;
  const float xo = kn ? float(kn_[base + o]) : float(q_[base + o]);
  const float rot = d < half_r ? -xo : xo;
  const uint f = min(pos, p.rope.y - 1u) * p.rope.x + d;
  return ROUND_AS(DTYPE, x * float(cos_[f]) + rot * float(sin_[f]));
}
#endif

// A lane scores a whole key row: its loads are independent of each other, so a dot product
// keeps many of them in flight, with fixed-order partial sums. Where D and the strides are
// multiples of 4 (`vec_ok`) the rows are read as 4-element vectors, 16 at a time (64
// elements: a row of D = 128 in two steps), else as scalars 8 at a time. A loop of one scalar
// load and one FMA per element took 22.4 us per call at D = 128 (32 heads, <= 16 keys, a
// prefill and 11 decodes, H100); 8 scalars in flight 19.6 (docs/performance.md, session 38).
#define UNR 8u
#define UNV 16u
// Keys per step of the value loop. H100, 600-token decode of the dim-4096 export (session
// 39 run 7): 8 -> 16 keys 83.5 -> 79.8 us per whole execute (32: 79.2, but +2.5 us at 12
// tokens); key groups splitting a chunk's keys over the lanes (docs/experiments/
// sdpa-s39-keygroups.diff) 81.1-82.3. The HF RoPE form keeps 8 (manifest): e8 84.5 us per
// execute with 8, 85.9 with 16 (run 9; e5 / e6 level).
#ifndef VK
#define VK 16u
#endif
#define VEC4_float vec4
#define VEC4_float16_t f16vec4
#define VEC2_float vec2
#define VEC2_float16_t f16vec2
#define VPASTE(P, T) P##T
#define VEC4_OF(T) VPASTE(VEC4_, T)
#define VEC2_OF(T) VPASTE(VEC2_, T)
layout(set = 0, binding = 2) readonly buffer K4 { VEC4_OF(DTYPE) k4_[]; };
#if FUSED_KV
layout(set = 0, binding = 6) readonly buffer KN4 { VEC4_OF(DTYPE) kn4_[]; };
#endif
#if ROPE == 1
layout(set = 0, binding = 8) readonly buffer Cos2 { VEC2_OF(DTYPE) cos2_[]; };
layout(set = 0, binding = 9) readonly buffer Sin2 { VEC2_OF(DTYPE) sin2_[]; };
#elif ROPE == 2
layout(set = 0, binding = 8) readonly buffer Cos4 { VEC4_OF(DTYPE) cos4_[]; };
layout(set = 0, binding = 9) readonly buffer Sin4 { VEC4_OF(DTYPE) sin4_[]; };
#endif

vec4 q4_at(uint d) { return vec4(s_q[d], s_q[d + 1u], s_q[d + 2u], s_q[d + 3u]); }

float sum8(float a[UNR]) { return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])); }

float sum16(float a[UNV]) {
  float h[UNR];
  [[unroll]] for (uint u = 0u; u < UNR; ++u) h[u] = a[u] + a[u + UNR];
  return sum8(h);
}

// q . the row at element `base` of buffer BUF (scalars) / BUF4 (its 4-vector view), into
// `r`: a macro, as GLSL takes no buffer arguments (the caches' rows and the call's own).
#define ROW_DOT(BUF, BUF4, base, vec_ok, r)                                                 \
  {                                                                                       \
    if (vec_ok) {                                                                         \
      const uint b4_ = (base) >> 2, d4n_ = p.D >> 2;                                      \
      float a_[UNV];                                                                      \
      [[unroll]] for (uint u = 0u; u < UNV; ++u) a_[u] = 0.0;                             \
      for (uint d4 = 0u; d4 < d4n_; d4 += UNV) {                                          \
        [[unroll]] for (uint u = 0u; u < UNV; ++u) {                                      \
          if (d4 + u < d4n_) a_[u] += dot(q4_at(4u * (d4 + u)), vec4(BUF4[b4_ + d4 + u])); \
        }                                                                                 \
      }                                                                                   \
      r = sum16(a_);                                                                      \
    } else {                                                                              \
      float a_[UNR];                                                                      \
      [[unroll]] for (uint u = 0u; u < UNR; ++u) a_[u] = 0.0;                             \
      uint d = 0u;                                                                        \
      for (; d + UNR <= p.D; d += UNR) {                                                  \
        [[unroll]] for (uint u = 0u; u < UNR; ++u) a_[u] += s_q[d + u] * float(BUF[(base) + d + u]); \
      }                                                                                   \
      r = sum8(a_);                                                                       \
      for (; d < p.D; ++d) r += s_q[d] * float(BUF[(base) + d]);                          \
    }                                                                                     \
  }

// q . k for the cache row at element `kb`.
float dot_cache(uint kb, bool vec_ok) {
  float r;
  ROW_DOT(k_, k4_, kb, vec_ok, r)
  return r;
}

#if FUSED_KV
// q . k for row `nb` of the call's own keys, at position `pos` of the call (rotated first
// with ROPE).
float dot_new(uint nb, uint pos, bool vec_ok) {
#if ROPE == 1
  if (vec_ok) {
    // Two pairs per vector; their cos / sin as one 2-vector each (D / 2 is even).
    const uint b4 = nb >> 2, d4n = p.D >> 2, t2 = pos * (p.D >> 2);
    float a[UNV];
    [[unroll]] for (uint u = 0u; u < UNV; ++u) a[u] = 0.0;
    uint d4 = 0u;
    for (; d4 < d4n;) {
      const uint n = min(UNV, d4n - d4);
      [[unroll]] for (uint u = 0u; u < UNV; ++u) {
        if (u < n) {
          const vec4 kv = vec4(kn4_[b4 + d4 + u]);
          const vec2 c = vec2(cos2_[t2 + d4 + u]), sn = vec2(sin2_[t2 + d4 + u]);
          const vec4 kr = vec4(ROUND_AS(DTYPE, kv.x * c.x - kv.y * sn.x), ROUND_AS(DTYPE, kv.x * sn.x + kv.y * c.x),
                               ROUND_AS(DTYPE, kv.z * c.y - kv.w * sn.y), ROUND_AS(DTYPE, kv.z * sn.y + kv.w * c.y));
          a[u] += dot(q4_at(4u * (d4 + u)), kr);
        }
      }
      d4 += n;
    }
    return sum16(a);
  }
  float a[UNR];
  [[unroll]] for (uint u = 0u; u < UNR; ++u) a[u] = 0.0;
  uint d = 0u;
  // Pairs: UNR / 2 of them per step (D is even for the pair-interleaved RoPE).
  for (; d + UNR <= p.D; d += UNR) {
    [[unroll]] for (uint u = 0u; u < UNR; u += 2u) {
      const uint pr = (d + u) >> 1;
      const vec2 kr = rope_pair(float(kn_[nb + d + u]), float(kn_[nb + d + u + 1u]), pos, pr);
      a[u] += s_q[d + u] * kr.x;
      a[u + 1u] += s_q[d + u + 1u] * kr.y;
    }
  }
  float r = sum8(a);
  for (; d < p.D; d += 2u) {
    const vec2 kr = rope_pair(float(kn_[nb + d]), float(kn_[nb + d + 1u]), pos, d >> 1);
    r += s_q[d] * kr.x;
    r += s_q[d + 1u] * kr.y;
  }
  return r;
#elif ROPE == 2
  const uint rs = uint(max(scalars_[p.rope.z], 0));
  const uint R = p.rope.x, hr = R >> 1;
  if (vec_ok && (R & 7u) == 0u) {
    // Rotated vectors (each within one half of the rotary dims: half_r % 4 == 0), their
    // partners half_r away, the tables' row as vectors (R % 4 == 0); the rest plain.
    const uint b4 = nb >> 2, d4n = p.D >> 2, r4 = R >> 2, h4 = hr >> 2;
    const uint t4 = min(rs + pos, p.rope.y - 1u) * r4;
    float a[UNV];
    [[unroll]] for (uint u = 0u; u < UNV; ++u) a[u] = 0.0;
    uint d4 = 0u;
    for (; d4 < d4n;) {
      const uint n = min(UNV, d4n - d4);
      [[unroll]] for (uint u = 0u; u < UNV; ++u) {
        if (u < n) {
          const uint e = d4 + u;
          vec4 kv = vec4(kn4_[b4 + e]);
          if (e < r4) {
            const vec4 ko = vec4(kn4_[b4 + (e < h4 ? e + h4 : e - h4)]);
            const vec4 c = vec4(cos4_[t4 + e]), sn = vec4(sin4_[t4 + e]);
            const vec4 rot = e < h4 ? -ko : ko;
            const vec4 t = kv * c + rot * sn;
            kv = vec4(ROUND_AS(DTYPE, t.x), ROUND_AS(DTYPE, t.y), ROUND_AS(DTYPE, t.z), ROUND_AS(DTYPE, t.w));
          }
          a[u] += dot(q4_at(4u * e), kv);
        }
      }
      d4 += n;
    }
    return sum16(a);
  }
  float a[UNR];
  [[unroll]] for (uint u = 0u; u < UNR; ++u) a[u] = 0.0;
  uint d = 0u;
  for (; d + UNR <= p.D; d += UNR) {
    [[unroll]] for (uint u = 0u; u < UNR; ++u) a[u] += s_q[d + u] * rope_hf(true, nb, d + u, rs + pos);
  }
  float r = sum8(a);
  for (; d < p.D; ++d) r += s_q[d] * rope_hf(true, nb, d, rs + pos);
  return r;
#else
  float r;
  ROW_DOT(kn_, kn4_, nb, vec_ok, r)
  return r;
#endif
}
#endif

void main() {
  uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
#if FUSED_KV
  // Split keys: split.x workgroups per query row, of which the first `splits` take
  // consecutive runs of `per_split` keys (whole chunks), sized here from this step's key
  // count so that neither a short context pays for empty splits nor the launch's push
  // constants change as the cache fills (no re-record per step).
  const uint max_splits = max(p.split.x, 1u), sp = row % max_splits;
  row /= max_splits;
#endif
  if (row >= p.rows) {
    return; // whole workgroup
  }
  uint start = 0;
  uint valid = p.L;
  if (p.pos_slot != NO_SLOT) {
    start = uint(max(scalars_[p.pos_slot], 0));
    valid = min(start + p.S, p.L);
  }
#if FUSED_KV
  uint splits = 1u, per_split = valid;
  if (max_splits > 1u) {
    const uint chunks = (valid + LANES - 1u) / LANES;
    splits = max(min(max_splits, chunks), 1u);
    per_split = ((chunks + splits - 1u) / splits) * LANES;
    splits = max((valid + per_split - 1u) / per_split, 1u);
  }
  if (sp >= splits) {
    return; // whole workgroup: a split this step's keys leave empty
  }
#endif
  uint lane = gl_LocalInvocationID.x;
  uint i = row % p.S;
  uint h = (row / p.S) % p.H;
  uint b = row / (p.S * p.H);
  uint qbase = b * p.qst.x + h * p.qst.y + i * p.qst.z;
#if ROPE == 2
  // The tables' row of the call's first position (rotary_hf.comp reads start_pos + s).
  const uint rope_start = uint(max(scalars_[p.rope.z], 0));
  for (uint d = lane; d < p.D; d += LANES) s_q[d] = rope_hf(false, qbase, d, rope_start + i);
#elif ROPE == 1
  for (uint pr = lane; pr < (p.D >> 1); pr += LANES) {
    const vec2 o = rope_pair(float(q_[qbase + 2u * pr]), float(q_[qbase + 2u * pr + 1u]), i, pr);
    s_q[2u * pr] = o.x;
    s_q[2u * pr + 1u] = o.y;
  }
#else
  for (uint d = lane; d < p.D; d += LANES) {
    s_q[d] = float(q_[qbase + d]);
  }
#endif
  barrier();

  uint nk = p.causal != 0 ? min(start + i + 1, valid) : valid;
  // Every key row (the caches' and the call's) starts at a multiple of 4 elements.
  const bool vec_ok = p.scalar_rows == 0u && (p.D & 3u) == 0u &&
                      ((p.kst.x | p.kst.y | p.kst.z | p.kst.w) & 3u) == 0u;
  uint kbase = b * p.kst.x + (h / p.group) * p.kst.y;
#if FUSED_KV
  // Row j >= start of the call's k / v: nbase + (j - start) * kst.z.
  const uint nbase = b * p.kst.w + (h / p.group) * p.kst.y;
  if (h % p.group == 0u && start + i < p.L && sp == 0u) {
    const uint src = nbase + i * p.kst.z, dst = kbase + (start + i) * p.kst.z;
#if ROPE == 2
    for (uint d = lane; d < p.D; d += LANES) {
      k_[dst + d] = DTYPE(rope_hf(true, src, d, rope_start + i));
      v_[dst + d] = vn_[src + d];
    }
#elif ROPE == 1
    for (uint pr = lane; pr < (p.D >> 1); pr += LANES) {
      const vec2 o = rope_pair(float(kn_[src + 2u * pr]), float(kn_[src + 2u * pr + 1u]), i, pr);
      k_[dst + 2u * pr] = DTYPE(o.x);
      k_[dst + 2u * pr + 1u] = DTYPE(o.y);
    }
    for (uint d = lane; d < p.D; d += LANES) v_[dst + d] = vn_[src + d];
#else
    for (uint d = lane; d < p.D; d += LANES) {
      k_[dst + d] = kn_[src + d];
      v_[dst + d] = vn_[src + d];
    }
#endif
  }
#endif

  float m = NEG_BIG;
  float l = 0.0;
  float acc[PER_LANE];
  for (uint r = 0; r < PER_LANE; ++r) {
    acc[r] = 0.0;
  }
#if FUSED_KV
  const uint kfirst = sp * per_split, kend = splits > 1u ? min(nk, kfirst + per_split) : nk;
#else
  const uint kfirst = 0u, kend = nk;
#endif
  for (uint j0 = kfirst; j0 < kend; j0 += LANES) {
    uint j = j0 + lane;
    float s = NEG_BIG;
    if (j < kend) {
#if FUSED_KV
      const float dot_ = j >= start ? dot_new(nbase + (j - start) * p.kst.z, j - start, vec_ok)
                                    : dot_cache(kbase + j * p.kst.z, vec_ok);
#else
      const float dot_ = dot_cache(kbase + j * p.kst.z, vec_ok);
#endif
      s = dot_ * p.scale;
      if (p.has_mask != 0) {
        s += float(mask_[i * p.mask_row + j]);
      }
      s = max(s, NEG_BIG);
    }
    s_score[lane] = s;
    barrier();
    uint cnt = min(uint(LANES), kend - j0);
    float cm = m;
    for (uint t = 0; t < cnt; ++t) {
      cm = max(cm, s_score[t]);
    }
    float alpha = exp(m - cm);
    l *= alpha;
    for (uint r = 0; r < PER_LANE; ++r) {
      acc[r] *= alpha;
    }
    // VK keys' values in flight at a time (the loads of one key do not wait for the
    // previous key's), added in key order; keys past the chunk weigh 0.
    for (uint t = 0u; t < cnt; t += VK) {
      float w[VK];
      [[unroll]] for (uint u = 0u; u < VK; ++u) {
        w[u] = t + u < cnt ? exp(s_score[t + u] - cm) : 0.0;
        l += w[u];
      }
      for (uint r = 0; r < PER_LANE; ++r) {
        uint d = lane + r * LANES;
        if (d < p.D) {
          float vv[VK];
          [[unroll]] for (uint u = 0u; u < VK; ++u) {
            const uint jj = j0 + t + u;
#if FUSED_KV
            vv[u] = t + u >= cnt ? 0.0
                    : jj >= start ? float(vn_[nbase + (jj - start) * p.kst.z + d])
                                  : float(v_[kbase + jj * p.kst.z + d]);
#else
            vv[u] = t + u < cnt ? float(v_[kbase + jj * p.kst.z + d]) : 0.0;
#endif
          }
          [[unroll]] for (uint u = 0u; u < VK; ++u) acc[r] += w[u] * vv[u];
        }
      }
    }
    m = cm;
    barrier(); // every lane has read s_score before the next chunk overwrites it
  }
  uint obase = b * p.ost.x + h * p.ost.y + i * p.ost.z;
#if FUSED_KV
  if (splits > 1u) {
    // This split's (max, sum, accumulators), then a ticket: the row's last split to finish
    // joins them in split order (the same result whichever finishes last).
    const uint stride = p.D + 2u, pb = (row * max_splits + sp) * stride;
    if (lane == 0u) {
      part_[pb] = m;
      part_[pb + 1u] = l;
    }
    for (uint r = 0; r < PER_LANE; ++r) {
      uint d = lane + r * LANES;
      if (d < p.D) part_[pb + 2u + d] = acc[r];
    }
    memoryBarrierBuffer();
    barrier();
    if (lane == 0u) s_last = atomicAdd(count_[row], 1u) == splits - 1u ? 1u : 0u;
    barrier();
    if (s_last == 0u) return;
    memoryBarrierBuffer();
    const uint rb = row * max_splits * stride;
    float mx = NEG_BIG;
    for (uint t = 0u; t < splits; ++t) mx = max(mx, part_[rb + t * stride]);
    l = 0.0;
    for (uint r = 0; r < PER_LANE; ++r) acc[r] = 0.0;
    for (uint t = 0u; t < splits; ++t) {
      const float f = exp(part_[rb + t * stride] - mx);
      l += part_[rb + t * stride + 1u] * f;
      for (uint r = 0; r < PER_LANE; ++r) {
        uint d = lane + r * LANES;
        if (d < p.D) acc[r] += part_[rb + t * stride + 2u + d] * f;
      }
    }
    if (lane == 0u) count_[row] = 0u;
  }
#endif
  float inv = l > 0.0 ? 1.0 / l : 0.0;
  for (uint r = 0; r < PER_LANE; ++r) {
    uint d = lane + r * LANES;
    if (d < p.D) {
      out_[obase + d] = DTYPE(acc[r] * inv);
    }
  }
}
