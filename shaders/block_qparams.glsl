// Block-wise quantization parameters, shared by dequantize_affine.comp and
// quantize_blocks.comp. Included after their declarations of `p.sizes` / `p.blocks` (element
// and block sizes, rank <= 4, right-aligned), `p.kinds` (bits 0-7: scale 0 fp32, 1 fp16) and
// the raw-word scale buffer `scale_w`.

// The block of element `i` in the row-major grid of blocks (a partial last block counts).
uint block_of(uint i) {
  uint rest = i, blk = 0u, gstride = 1u;
  for (int d = 3; d >= 0; --d) {
    const uint c = rest % p.sizes[d];
    rest /= p.sizes[d];
    blk += (c / p.blocks[d]) * gstride;
    gstride *= (p.sizes[d] + p.blocks[d] - 1u) / p.blocks[d];
  }
  return blk;
}

// Block `blk`'s scale, fp32 or fp16 by the kinds word.
float scale_at(uint blk) {
  if ((p.kinds & 0xFFu) == 0u) return uintBitsToFloat(scale_w[blk]);
  return unpackHalf2x16(scale_w[blk >> 1] >> ((blk & 1u) * 16u)).x;
}
