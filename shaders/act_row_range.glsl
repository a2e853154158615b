// A workgroup's min and max of one activation row, for the 8da4w GEMVs that quantize x
// themselves (q4_linear_gemv_half.comp's and q4_linear_gemv_wide.comp's DQ forms): each
// invocation's own min / max over the subgroup, one partial per subgroup in `row_part`,
// then (after the includer's barrier, which other per-subgroup partials may share) every
// invocation folds the partials four at a time: 0.1-0.7 us faster than a shared-memory tree
// with two barriers and 15- and 31-step serial folds (H100, docs/performance.md, session 34).
// Needs subgroup arithmetic and at most 128 subgroups per workgroup.

// Per-subgroup minima (vec4s 0..31) then maxima (32..63), zero past the last subgroup up to
// a multiple of 4 (neutral: act_qparams takes min(lo, 0) and max(hi, 0)).
shared vec4 row_part[64];

// Before the barrier: subgroup `gl_SubgroupID`'s min / max of (l, u) into row_part.
void row_range_store(float l, float u, uint t) {
  l = subgroupMin(l);
  u = subgroupMax(u);
  const uint nsg4 = (gl_NumSubgroups + 3u) >> 2;
  if (gl_SubgroupInvocationID == 0u) {
    row_part[gl_SubgroupID >> 2][gl_SubgroupID & 3u] = l;
    row_part[32u + (gl_SubgroupID >> 2)][gl_SubgroupID & 3u] = u;
  }
  if (t >= gl_NumSubgroups && t < 4u * nsg4) {
    row_part[t >> 2][t & 3u] = 0.0;
    row_part[32u + (t >> 2)][t & 3u] = 0.0;
  }
}

// After the barrier: the workgroup's min and max.
vec2 row_range_fold() {
  const uint nsg4 = (gl_NumSubgroups + 3u) >> 2;
  vec4 l4 = row_part[0], u4 = row_part[32];
  for (uint i = 1u; i < nsg4; ++i) {
    l4 = min(l4, row_part[i]);
    u4 = max(u4, row_part[32u + i]);
  }
  return vec2(min(min(l4.x, l4.y), min(l4.z, l4.w)), max(max(u4.x, u4.y), max(u4.z, u4.w)));
}
