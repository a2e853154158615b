#version 450
// EXPERIMENT: 4-bit linear backward at M = 1 through NV cooperative matrices (f16 16x8x16,
// f32 accumulate). Same bindings, push constants and launch as q4_linear_bwd_wide.comp at
// CW = 8 (column blocks of 8 chunks = 256 columns, rows cut into slices, the last workgroup
// of each column block sums the slices).
//   d_x[k] = sum_n c[n, g(k)] * (code(n,k) - 8),  c[n, g] = dy[n] * s[n][g]
// Per step of 16 rows: the codes become fp16 (code - 8, exact) in a shared [16 n][256 k]
// tile, loaded column-major as A = W^T (16 k x 16 n); B (16 n x 8) holds c split into fp16
// hi and lo (columns 0 and 1) after a power-of-two scale per (step, chunk) that keeps the
// largest |c| of the 16 rows in [2^14, 2^15); D = A * B (16 k x 8) is scaled back and added
// in fp32.
//
// Outcome (H200, session 6, docs/performance.md): right (5e-9 at 8192^2) but slow: 44.2 us
// at 8192^2 against the CUDA-core kernel's 20.7, at its best launch (528-660 workgroups, PF
// = 4 steps of loads in flight; 1 step: 63 us at 264). Without weight loads 32.4, without
// the MMAs 30.0, without both 20.4: the per-step skeleton (decode to shared memory, the
// coefficient split, two barriers per 16 rows) alone costs what the whole CUDA-core kernel
// does. -DDIAG_NO_LOADS / -DDIAG_NO_MMA build those diagnostics (wrong results).
#extension GL_EXT_control_flow_attributes : enable
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"

#define NT 256
#define CB 8           // chunks per column block
#define KB (CB * 32)   // columns per block (256)
#define ROWH (KB + 8)   // fp16 per shared row of A, 8 of padding
#define ROWU (ROWH / 8)

layout(set = 0, binding = 0) coherent buffer Part { float part[]; };
layout(set = 0, binding = 1) readonly buffer Dy { float dy[]; };
layout(set = 0, binding = 2) readonly buffer W2 { uvec2 w2[]; };
layout(set = 0, binding = 3) readonly buffer S { float s[]; };
layout(set = 0, binding = 4) coherent buffer Count { uint count[]; };
layout(set = 0, binding = 5) writeonly buffer Out { float outp[]; };

layout(push_constant) uniform Params {
  uint N; uint KC; uint G; uint gs; uint RS; uint gshift; uint K; uint S;
} p;

// No bool in shared memory: with one, the H200's cooperative loads and stores addressed every
// shared array 4 bytes below where plain accesses put it (the flag lives in misc[CB]).
shared uvec4 At[16 * ROWU];  // [16 n][256 k] (k order permuted within 8, see below)
shared uvec4 Bt[CB * 16];  // [chunk][16 n] one row of 8: (hi, lo, 0...)
shared float red[16 * 16 * 8];   // [16 k-tiles][16 k][8 cols] final sums
shared float misc[16];           // [0, CB): inverse step scales; [CB]: last-to-finish flag

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
  const uint blocks = (p.KC + CB - 1u) / CB;
  const uint cb = wg % blocks, j = wg / blocks;
  const uint nb = j * p.RS;
  const uint ne = min(nb + p.RS, p.N);
  const uint cshift = p.G == 1u ? 31u : p.gshift - 2u;
  // Loader role: row r of the step, half chunk h of the block.
  const uint lr = t >> 4, lh = t & 15u;
  const uint lchunk = min(cb * CB + (lh >> 1), p.KC - 1u);
  const uint lhalf = 2u * lchunk + (lh & 1u);
  // Coefficient role (t < 128): row cn of the step, local chunk cg.
  const uint cn = t & 15u, cg = (t >> 4) & 7u;
  const uint cchunk = min(cb * CB + cg, p.KC - 1u);
  const uint cgroup = p.G == 1u ? 0u : min(cchunk >> cshift, p.G - 1u);

  for (uint i = t; i < CB * 16u; i += NT) Bt[i] = uvec4(0u);

  // No arrays of cooperative matrices (their dynamic indexing is left to the driver when
  // glslang cannot optimize this shader): two named accumulators, k-tiles 2 sg and 2 sg + 1.
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc0 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> acc1 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
  const uint sg = gl_SubgroupID;  // 8 subgroups of 32 (NVIDIA): two k-tiles each
  const uint tile0 = 2u * sg, tile1 = 2u * sg + 1u;

#ifndef PF
#define PF 4
#endif
  // Steps of 16 rows, PF steps' loads in flight (slot i holds step i mod PF): at one step
  // in flight a workgroup kept ~2 KiB of weights in flight and waited on DRAM every step.
  uvec2 wq[PF];
  float dq[PF], sq[PF];
  [[unroll]] for (uint i = 0u; i < PF; ++i) {
    const uint n = nb + 16u * i;
    wq[i] = w2[min(n + lr, p.N - 1u) * (2u * p.KC) + lhalf];
    dq[i] = dy[min(n + cn, p.N - 1u)];
    sq[i] = s[min(n + cn, p.N - 1u) * p.G + cgroup];
  }
  for (uint n00 = nb; n00 < ne; n00 += 16u * PF) {
    [[unroll]] for (uint i = 0u; i < PF; ++i) {
      const uint n0 = n00 + 16u * i;
      barrier();  // the previous step's readers are done
      {
#ifdef DIAG_NO_LOADS
        const uvec2 wv = uvec2(0x12345678u + n0, 0x9abcdef0u);
#else
        const uvec2 wv = wq[i];
#endif
        uint o[8];
        [[unroll]] for (uint wd = 0u; wd < 2u; ++wd) {
          [[unroll]] for (uint q = 0u; q < 4u; ++q) {
            const uint u = ((wv[wd] >> (4u * q)) & 0x000F000Fu) | 0x64006400u;
            o[4u * wd + q] = packFloat2x16(unpackFloat2x16(u) - f16vec2(1032.0hf));
          }
        }
        const uint base = lr * ROWU + lh * 2u;
        At[base] = uvec4(o[0], o[1], o[2], o[3]);
        At[base + 1u] = uvec4(o[4], o[5], o[6], o[7]);
      }
      if (t < 128u) {
        const float c = (n0 + cn < ne) ? dq[i] * sq[i] : 0.0;
        uint m = floatBitsToUint(c) & 0x7FFFFFFFu;
        m = max(m, subgroupShuffleXor(m, 8u));
        m = max(m, subgroupShuffleXor(m, 4u));
        m = max(m, subgroupShuffleXor(m, 2u));
        m = max(m, subgroupShuffleXor(m, 1u));
        const int e = int(min(m, 0x7F000000u) >> 23);  // biased exponent (Inf / NaN: kept)
        const int se = clamp(141 - e, -126, 126);
        const float sc = m >= 0x7F800000u ? 1.0 : uintBitsToFloat(uint(se + 127) << 23);
        const float cs = c * sc;
        // hi: cs truncated to fp16's 11 significant bits by a mask; float(float16_t(cs))
        // would do, but the H200's driver folds that round trip to cs (lo was then 0).
        const float hif = uintBitsToFloat(floatBitsToUint(cs) & 0xFFFFE000u);
        Bt[cg * 16u + cn].x = packFloat2x16(f16vec2(float16_t(hif), float16_t(cs - hif)));
        if (cn == 0u) misc[cg] = m >= 0x7F800000u ? 1.0 : uintBitsToFloat(uint(127 - se) << 23);
      }
      barrier();
#ifndef DIAG_NO_LOADS
      {
        const uint n = n0 + 16u * PF;
        if (n < ne) {
          wq[i] = w2[min(n + lr, p.N - 1u) * (2u * p.KC) + lhalf];
          dq[i] = dy[min(n + cn, p.N - 1u)];
          sq[i] = s[min(n + cn, p.N - 1u) * p.G + cgroup];
        }
      }
#endif
#ifndef DIAG_NO_MMA
      if (n0 < ne) {
        // Both k-tiles (half chunks) of this subgroup lie in chunk sg: one B.
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 8> b;
        coopMatLoadNV(b, Bt, sg * 16u, 1u, false);
        const float inv = misc[sg];
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a0;
        fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a1;
        coopMatLoadNV(a0, At, tile0 * 2u, ROWU, true);
        coopMatLoadNV(a1, At, tile1 * 2u, ROWU, true);
        fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> d0 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
        fcoopmatNV<32, gl_ScopeSubgroup, 16, 8> d1 = fcoopmatNV<32, gl_ScopeSubgroup, 16, 8>(0.0);
        d0 = coopMatMulAddNV(a0, b, d0);
        d1 = coopMatMulAddNV(a1, b, d1);
        acc0 = acc0 + d0 * inv;
        acc1 = acc1 + d1 * inv;
      }
#endif
    }
  }
  barrier();
  coopMatStoreNV(acc0, red, tile0 * 128u, 8u, false);
  coopMatStoreNV(acc1, red, tile1 * 128u, 8u, false);
  barrier();
  // Column t of the block: half chunk t / 16, position p = t % 16 in the stored order.
  const uint row = p.KC * 32u;
  {
    const uint tile = t >> 4, pos = t & 15u;
    const float v = red[tile * 128u + pos * 8u] + red[tile * 128u + pos * 8u + 1u];
    const uint wd = pos >> 3, q8 = pos & 7u;
    const uint kloc = tile * 16u + wd * 8u + (q8 >> 1) + 4u * (q8 & 1u);
    const uint chunk = cb * CB + (kloc >> 5);
    const bool live = chunk < p.KC && (p.G == 1u || (chunk >> cshift) < p.G);
    if (chunk < p.KC) part[j * row + cb * KB + kloc] = live ? v : 0.0;
  }
  memoryBarrierBuffer();
  barrier();
  if (t == 0u) misc[CB] = atomicAdd(count[cb], 1u) == p.S - 1u ? 1.0 : 0.0;
  barrier();
  if (misc[CB] == 0.0) return;
  memoryBarrierBuffer();
  const uint col = cb * KB + t;
  float v = 0.0;
  const uint kk = min(col, row - 1u);
  uint jj = 0u;
  for (; jj + 8u <= p.S; jj += 8u) {
    float bsum[8];
    [[unroll]] for (uint u = 0u; u < 8u; ++u) bsum[u] = part[(jj + u) * row + kk];
    [[unroll]] for (uint u = 0u; u < 8u; ++u) v += bsum[u];
  }
  for (; jj < p.S; ++jj) v += part[jj * row + kk];
  if (col < p.K) outp[col] = v;
  if (t == 0u) count[cb] = 0u;
}
