// etvk's packed 4-bit linear scales (`etvk_runtime::prepack::q4::pack_q4_scales`): fp32 in
// row quads, [R / 4][G][4] with R = N rounded up to Q4_ROW_PAD (8) rows, the padded rows'
// scales 0. Scale (n, g) is element Q4S(n, g, G); the four rows of one quad and group are one
// vec4, so a GEMV batch of four rows loads its scales at once (H200, M = 1: 8192^2 15.7 ->
// 15.4 us, N = 8192, K = 28672 44.2 -> 42.7; docs/performance.md, session 22). Row pairs
// ([R / 2][G][2]) were slower there (15.5, 43.1) and no faster in the backward. With G == 1
// (per-channel scales) the layout is a plain [R] vector.
#define Q4S(n, g, G) ((((n) >> 2u) * (G) + (g)) * 4u + ((n) & 3u))
