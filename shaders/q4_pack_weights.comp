#version 450
// GPU repack of serialized 4-bit linear weights into etvk's packed Q4 layout (the CPU
// reference is `etvk_runtime::prepack::q4::pack_q4_weights`; a test checks they agree bit
// for bit).
//
// Source: uint8 [N, row_bytes] (bound as uint words; the runtime pads the upload to 4
// bytes), two codes per byte in either nibble convention (`even_high`: 0 = q4gsw, even k in
// the LOW nibble; 1 = qcs4w, even k in the HIGH nibble).
// Destination: uint32 [R, KW], KW = Kpad / 8, Kpad = 2 * row_bytes rounded up to 32, R = N
// padded to whole blocks of rows (prepack::q4::Q4_ROW_PAD): word w of row n holds k = 8w + j
// at bits 4j..4j+3 (code = q + 8). Columns past 2 * row_bytes and rows past N get code 8
// (q = 0) so they contribute nothing. One invocation writes one word.
#include "common.glsl"

layout(set = 0, binding = 0) writeonly buffer Dst { uint dst[]; };
layout(set = 0, binding = 1) readonly buffer Src { uint src[]; };

layout(push_constant) uniform Params {
  uint N;          // rows
  uint row_bytes;  // serialized bytes per row
  uint KW;         // output words per row
  uint even_high;  // nibble convention of the source
  uint R;          // rows written (N padded)
} p;

uint src_byte(uint i) {
  return (src[i >> 2] >> (8u * (i & 3u))) & 0xFFu;
}

void main() {
  // Folded 1-D index (the runtime spills large launches into y).
  const uint idx = linear_id();
  if (idx >= p.R * p.KW) {
    return;
  }
  const uint n = idx / p.KW;
  const uint w = idx - n * p.KW;
  const uint k_src = 2u * p.row_bytes;
  uint word = 0u;
  for (uint j = 0u; j < 8u; ++j) {
    const uint k = 8u * w + j;
    uint code = 8u;
    if (k < k_src && n < p.N) {
      const uint b = src_byte(n * p.row_bytes + (k >> 1));
      const bool high = ((k & 1u) == 0u) == (p.even_high != 0u);
      code = high ? (b >> 4) : (b & 0xFu);
    }
    word |= code << (4u * j);
  }
  dst[idx] = word;
}
