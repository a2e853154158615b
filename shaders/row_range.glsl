// Each row's range for the 8da4w linears after a row-wise op (one workgroup per row of LANES
// invocations, at most MAX_LANES; both defined before the include): every invocation folds
// the values it stores with row_range_add, then row_range_write reduces them over the
// workgroup in a shared-memory tree and writes (min(0, min), max(0, max)) to row_mm[row].
// Zero is neutral for the readers, which take min(lo, 0) and max(hi, 0) (act_qparams.glsl).
// The includer declares `row_mm` (a writeonly vec2 buffer).
#ifndef ROW_RANGE_GLSL
#define ROW_RANGE_GLSL

shared vec2 s_row_range[MAX_LANES];
vec2 row_range = vec2(0.0);

void row_range_add(float v) {
  row_range = vec2(min(row_range.x, v), max(row_range.y, v));
}

void row_range_write(uint lane, uint row) {
  s_row_range[lane] = row_range;
  barrier();
  for (uint stride = LANES / 2; stride > 0; stride >>= 1) {
    if (lane < stride) {
      const vec2 o = s_row_range[lane + stride];
      s_row_range[lane] = vec2(min(s_row_range[lane].x, o.x), max(s_row_range[lane].y, o.y));
    }
    barrier();
  }
  if (lane == 0u) row_mm[row] = s_row_range[0];
}

#endif
