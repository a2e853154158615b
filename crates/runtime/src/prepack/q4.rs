//! etvk's packed 4-bit linear layout, shared by `et_vk.linear_q4gsw` (forward and backward)
//! and `et_vk.linear_qcs4w`.
//!
//! **Weights** (layout `q4w_k32_even_low` / `q4w_k32_even_high`, named after the source
//! nibble convention): serialized uint8 `[N, row_bytes]` (two 4-bit codes per byte,
//! `code = q + 8`) become u32 `[N, KW]` with `Kpad = 2 * row_bytes` rounded up to 32 and
//! `KW = Kpad / 8`: word `w` of row `n` holds `k = 8w + j` at bits `4j..4j+3`. Columns past
//! `2 * row_bytes` get code 8 (q = 0). Rows stay contiguous along k, so the GEMV reads a row
//! as one stream of `uvec4`s (32 k each) and the GEMM's weight tiles are whole words; the
//! forward and the backward read the same buffer. For q4gsw (even k in the low nibble) the
//! packed row is the serialized row plus padding; qcs4w (even k high) swaps nibbles. The
//! rows are padded to a multiple of [`Q4_ROW_PAD`] with code-8 rows, so that the M = 1 GEMV
//! loads whole blocks of rows without clamping each row.
//!
//! **Scales** (fp32 in row quads, `[R / 4, G, 4]`, R = N padded to [`Q4_ROW_PAD`] rows with
//! scale 0; see [`pack_q4_scales`] and `shaders/q4_scales.glsl`): the four rows of a quad
//! and group are adjacent, so the GEMV loads a batch's four scales as one `vec4`. q4gsw's
//! serialized `[G, N']` (transposed, N' >= N padded; layout `q4s_quad_n{N}_g{G}`); qcs4w's
//! per-channel `[N]` are one group spanning the whole row (layout `q4s_c_quad_n{N}`, group size =
//! Kpad; with G = 1 the quads are a plain vector). fp16 scales are widened to fp32 (the
//! kernels compute in fp32).

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{ConstantInfo, GpuPackFn, GpuTransform, Layout, Packed};
use crate::dtype::f16_to_f32;
use crate::error::{internal, invalid_program};
use crate::graph::{to_u32, Global, Push};

/// Which serialized nibble convention 4-bit weight bytes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NibbleOrder {
    /// q4gsw: byte j = `code(2j) | code(2j+1) << 4` (even k in the low nibble).
    EvenLow,
    /// qcs4w: byte j = `code(2j) << 4 | code(2j+1)` (even k in the high nibble).
    EvenHigh,
}

impl NibbleOrder {
    /// Layout-name tag.
    pub fn tag(self) -> &'static str {
        match self {
            NibbleOrder::EvenLow => "even_low",
            NibbleOrder::EvenHigh => "even_high",
        }
    }
}

/// Rows of packed weights and scales are padded to a multiple of this (the M = 1 GEMV's
/// block of rows, `RW` in `shaders/q4_linear_gemv_half.comp`).
pub const Q4_ROW_PAD: usize = 8;

/// Packed rows for `n` output features (`n` rounded up to [`Q4_ROW_PAD`]).
pub fn padded_rows(n: usize) -> usize {
    n.div_ceil(Q4_ROW_PAD) * Q4_ROW_PAD
}

/// Packed k per row: `2 * row_bytes` rounded up to 32 (one `uvec4` of codes).
pub fn padded_k(row_bytes: usize) -> usize {
    (2 * row_bytes).div_ceil(32) * 32
}

/// u32 words per packed row (`padded_k / 8`).
pub fn words_per_row(row_bytes: usize) -> usize {
    padded_k(row_bytes) / 8
}

/// CPU reference: pack serialized weights `src` (`[n, row_bytes]`) into
/// `padded_rows(n) * words_per_row` words (see the module docs; the padding rows hold code 8,
/// i.e. q = 0). `src` must hold `n * row_bytes` bytes.
pub fn pack_q4_weights(src: &[u8], n: usize, row_bytes: usize, order: NibbleOrder) -> Vec<u32> {
    let k_src = 2 * row_bytes;
    let kw = words_per_row(row_bytes);
    let mut out = vec![0x8888_8888u32; padded_rows(n) * kw];
    for row in 0..n {
        let bytes = &src[row * row_bytes..(row + 1) * row_bytes];
        for (w, word_out) in out[row * kw..(row + 1) * kw].iter_mut().enumerate() {
            let mut word = 0u32;
            for j in 0..8 {
                let k = 8 * w + j;
                let code = if k < k_src {
                    let b = bytes[k / 2];
                    let high = (k % 2 == 0) == (order == NibbleOrder::EvenHigh);
                    if high {
                        b >> 4
                    } else {
                        b & 0xF
                    }
                } else {
                    8
                };
                word |= u32::from(code) << (4 * j);
            }
            *word_out = word;
        }
    }
    out
}

pub(crate) fn words_to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn floats_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A float constant's values as f32 (fp32 or fp16 storage).
fn float_values(c: &ConstantInfo, bytes: &[u8], what: &str) -> Result<Vec<f32>> {
    match c.dtype {
        DataType::Float32 => Ok(bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()),
        DataType::Float16 => Ok(bytes
            .chunks_exact(2)
            .map(|b| f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect()),
        other => Err(invalid_program(format!(
            "{what} (constant {}): dtype {} is not float32/float16",
            c.constant_id,
            other.name()
        ))),
    }
}

/// `[N, row_bytes]` of a 2-D uint8 weight constant (internal check: ops validate first).
fn weight_geometry(c: &ConstantInfo) -> Result<(usize, usize)> {
    match (c.dtype, c.dims.as_slice()) {
        (DataType::Uint8, &[n, rb]) if n > 0 && rb > 0 => Ok((n, rb)),
        _ => Err(internal(format!(
            "q4 weight layout: constant {} is {} {:?}, expected uint8 [N, row_bytes]",
            c.constant_id,
            c.dtype.name(),
            c.dims
        ))),
    }
}

/// The packed weight layout for source convention `order` (CPU reference packer).
pub fn weight_layout(order: NibbleOrder) -> Layout {
    Layout {
        name: format!("q4w_k32_{}", order.tag()),
        pack: Box::new(move |c, bytes| {
            let (n, rb) = weight_geometry(c)?;
            Ok(Packed {
                dtype: DataType::Int32,
                dims: vec![padded_rows(n), words_per_row(rb)],
                bytes: words_to_bytes(&pack_q4_weights(bytes, n, rb, order)),
            })
        }),
    }
}

/// The GPU transform of [`weight_layout`]: `q4_pack_weights`, one invocation per word.
pub fn weight_gpu(order: NibbleOrder) -> GpuPackFn {
    Box::new(move |c| {
        let (n, rb) = weight_geometry(c)?;
        let kw = words_per_row(rb);
        let rows = padded_rows(n);
        let words = rows
            .checked_mul(kw)
            .ok_or_else(|| invalid_program(format!("q4 weight [{n}, {rb}]: size overflows")))?;
        Ok(GpuTransform {
            dtype: DataType::Int32,
            dims: vec![rows, kw],
            shader: ShaderId::Q4PackWeights,
            push: Push::new()
                .u32(to_u32(n, "N")?)
                .u32(to_u32(rb, "row_bytes")?)
                .u32(to_u32(kw, "KW")?)
                .u32((order == NibbleOrder::EvenHigh) as u32)
                .u32(to_u32(rows, "padded rows")?)
                .finish(),
            global: Global::Linear(to_u32(words, "packed words")? as u64),
        })
    })
}

/// Index of scale (row `n`, group `g`) in the packed quads of [`pack_q4_scales`] (the
/// shaders' `Q4S` in `q4_scales.glsl`).
pub fn scale_index(n: usize, g: usize, groups: usize) -> usize {
    ((n / 4) * groups + g) * 4 + n % 4
}

/// CPU reference: row-major scales `[n][groups]` -> the packed row quads
/// `[padded_rows(n) / 4][groups][4]` (padding rows 0).
pub fn pack_q4_scales(rows: &[f32], n: usize, groups: usize) -> Vec<f32> {
    let mut out = vec![0f32; padded_rows(n) * groups];
    for (row, values) in rows.chunks(groups).take(n).enumerate() {
        for (g, v) in values.iter().enumerate() {
            out[scale_index(row, g, groups)] = *v;
        }
    }
    out
}

/// Transposed per-group scales `[groups, n_stride]` -> row-major `[n][groups]`.
fn transpose_scales(src: &[f32], n: usize, groups: usize, n_stride: usize) -> Vec<f32> {
    let mut out = vec![0f32; n * groups];
    for row in 0..n {
        for g in 0..groups {
            out[row * groups + g] = src[g * n_stride + row];
        }
    }
    out
}

/// q4gsw scales of constant `c`, serialized `[groups, N']` (N' >= n), row-major
/// `[n, groups]` in fp32.
fn row_major_group_scales(
    c: &ConstantInfo,
    bytes: &[u8],
    n: usize,
    groups: usize,
    layout: &str,
) -> Result<Vec<f32>> {
    let v = float_values(c, bytes, "q4 scales")?;
    match c.dims.as_slice() {
        &[g, np] if g == groups && np >= n => Ok(transpose_scales(&v, n, groups, np)),
        d => Err(internal(format!(
            "{layout} layout: constant {} has sizes {d:?}, expected [{groups}, >= {n}]",
            c.constant_id
        ))),
    }
}

/// q4gsw scales: serialized `[groups, N']` (N' >= n) -> the fp32 row quads of
/// [`pack_q4_scales`].
pub fn group_scales_layout(n: usize, groups: usize) -> Layout {
    Layout {
        name: format!("q4s_quad_n{n}_g{groups}"),
        pack: Box::new(move |c, bytes| {
            let rows = row_major_group_scales(c, bytes, n, groups, "q4 scales")?;
            Ok(Packed {
                dtype: DataType::Float32,
                dims: vec![padded_rows(n) / 4, groups, 4],
                bytes: floats_to_bytes(&pack_q4_scales(&rows, n, groups)),
            })
        }),
    }
}

/// Rows per peak of [`group_scale_peaks`]: the tensor-core backward's reduction step, on
/// whose multiples its split-K slices start and end.
pub const SCALE_PEAK_ROWS: usize = 32;

/// The largest `|scale|` of each [`SCALE_PEAK_ROWS`] rows of each group, as fp32 bits
/// (`[ceil(n / SCALE_PEAK_ROWS), groups]`): bits of non-negative floats order as unsigned
/// integers, and NaN (above Inf) wins, so the kernel's max over them needs no float compare
/// (`q4_linear_bwd_mma.comp` takes the power of two of its tile's peak for fp16's range).
/// `scales` is row-major `[n, groups]`.
pub fn group_scale_peaks(scales: &[f32], n: usize, groups: usize) -> Vec<u32> {
    let parts = n.div_ceil(SCALE_PEAK_ROWS);
    let mut out = vec![0u32; parts * groups];
    for (row, chunk) in scales.chunks(groups).take(n).enumerate() {
        let peaks = &mut out[(row / SCALE_PEAK_ROWS) * groups..][..groups];
        for (p, v) in peaks.iter_mut().zip(chunk) {
            *p = (*p).max(v.to_bits() & 0x7FFF_FFFF);
        }
    }
    out
}

/// q4gsw scales: serialized `[groups, N']` (N' >= n) -> the per-32-row peaks of
/// [`group_scale_peaks`], `u32 [ceil(n / 32), groups]`.
pub fn group_scale_peaks_layout(n: usize, groups: usize) -> Layout {
    Layout {
        name: format!("q4s_peaks_n{n}_g{groups}"),
        pack: Box::new(move |c, bytes| {
            let rows = row_major_group_scales(c, bytes, n, groups, "q4 scale peaks")?;
            let peaks = group_scale_peaks(&rows, n, groups);
            Ok(Packed {
                dtype: DataType::Int32,
                dims: vec![n.div_ceil(SCALE_PEAK_ROWS), groups],
                bytes: peaks.iter().flat_map(|w| w.to_le_bytes()).collect(),
            })
        }),
    }
}

/// qcs4w scales: per-channel `[n]` -> the per-32-row peaks of [`group_scale_peaks`] with one
/// group per row, `u32 [ceil(n / 32), 1]`.
pub fn channel_scale_peaks_layout(n: usize) -> Layout {
    Layout {
        name: format!("q4s_c_peaks_n{n}"),
        pack: Box::new(move |c, bytes| {
            let v = float_values(c, bytes, "qcs4w scale peaks")?;
            if v.len() < n {
                return Err(internal(format!(
                    "qcs4w scale peaks layout: constant {} has {} values, expected {n}",
                    c.constant_id,
                    v.len()
                )));
            }
            let peaks = group_scale_peaks(&v[..n], n, 1);
            Ok(Packed {
                dtype: DataType::Int32,
                dims: vec![n.div_ceil(SCALE_PEAK_ROWS), 1],
                bytes: peaks.iter().flat_map(|w| w.to_le_bytes()).collect(),
            })
        }),
    }
}

/// qcs4w scales: per-channel `[n]` -> fp32 row quads with one group spanning the row (a
/// plain vector of `padded_rows(n)`, padding 0).
pub fn channel_scales_layout(n: usize) -> Layout {
    Layout {
        name: format!("q4s_c_quad_n{n}"),
        pack: Box::new(move |c, bytes| {
            let v = float_values(c, bytes, "qcs4w scales")?;
            if v.len() < n {
                return Err(internal(format!(
                    "qcs4w scales layout: constant {} has {} values, expected {n}",
                    c.constant_id,
                    v.len()
                )));
            }
            Ok(Packed {
                dtype: DataType::Float32,
                dims: vec![padded_rows(n) / 4, 1, 4],
                bytes: floats_to_bytes(&pack_q4_scales(&v[..n], n, 1)),
            })
        }),
    }
}

/// A bias constant (`[N]`, or padded longer) as its first `n` values in fp32.
pub fn bias_layout(n: usize) -> Layout {
    Layout {
        name: format!("f32_first{n}"),
        pack: Box::new(move |c, bytes| {
            let v = float_values(c, bytes, "bias")?;
            if v.len() < n {
                return Err(internal(format!(
                    "bias layout: constant {} has {} values, expected >= {n}",
                    c.constant_id,
                    v.len()
                )));
            }
            Ok(Packed {
                dtype: DataType::Float32,
                dims: vec![n],
                bytes: floats_to_bytes(&v[..n]),
            })
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_peaks_cover_each_32_rows_of_each_group() {
        // 70 rows x 3 groups: parts of 32, 32 and 6 rows; a negative scale, a NaN and an Inf.
        let (n, groups) = (70, 3);
        let mut s: Vec<f32> = (0..n * groups)
            .map(|i| 0.01 + (i % 7) as f32 * 1e-3)
            .collect();
        s[5 * groups + 1] = -4.0;
        s[40 * groups] = f32::NAN;
        s[69 * groups + 2] = f32::INFINITY;
        let peaks = group_scale_peaks(&s, n, groups);
        assert_eq!(peaks.len(), 3 * groups);
        for part in 0..3 {
            for g in 0..groups {
                let rows = part * 32..(part * 32 + 32).min(n);
                let want = rows
                    .map(|r| s[r * groups + g].to_bits() & 0x7FFF_FFFF)
                    .max()
                    .unwrap();
                assert_eq!(peaks[part * groups + g], want, "part {part} group {g}");
            }
        }
        assert_eq!(f32::from_bits(peaks[1]), 4.0);
        assert!(f32::from_bits(peaks[3]).is_nan());
        assert_eq!(f32::from_bits(peaks[2 * groups + 2]), f32::INFINITY);
    }

    #[test]
    fn packs_both_nibble_orders_with_padding() {
        // Row of 3 bytes = 6 codes; Kpad = 32 -> 4 words.
        let src = [0x21u8, 0x43, 0x65];
        // One row padded to 8: rows 1..7 are code 8 (q = 0) throughout.
        let lo = pack_q4_weights(&src, 1, 3, NibbleOrder::EvenLow);
        assert_eq!(lo.len(), 8 * 4);
        assert_eq!(
            lo[..4],
            [0x8865_4321, 0x8888_8888, 0x8888_8888, 0x8888_8888]
        );
        assert!(lo[4..].iter().all(|&w| w == 0x8888_8888));
        let hi = pack_q4_weights(&src, 1, 3, NibbleOrder::EvenHigh);
        assert_eq!(
            hi[..4],
            [0x8856_3412, 0x8888_8888, 0x8888_8888, 0x8888_8888]
        );
        assert_eq!(padded_k(16), 32);
        assert_eq!(padded_k(17), 64);
        assert_eq!((padded_rows(1), padded_rows(8), padded_rows(9)), (8, 8, 16));
    }

    #[test]
    fn scales_pack_in_row_quads_padded_with_zeros() {
        // Serialized [G = 2, N' = 6] for N = 5: value 10 * row + group (+ 1), column 5 unused.
        let src: Vec<f32> = (0..2)
            .flat_map(|g| (0..6).map(move |r| (10 * r + g + 1) as f32))
            .collect();
        let rows = transpose_scales(&src, 5, 2, 6);
        assert_eq!(rows[..4], [1., 2., 11., 12.]);
        let q = pack_q4_scales(&rows, 5, 2);
        // Quad 0: rows 0..3 of group 0, then of group 1; quad 1: row 4, then zeros.
        assert_eq!(q.len(), 8 * 2);
        assert_eq!(q[..8], [1., 11., 21., 31., 2., 12., 22., 32.]);
        assert_eq!(q[8..], [41., 0., 0., 0., 42., 0., 0., 0.]);
        for r in 0..5 {
            for g in 0..2 {
                assert_eq!(q[scale_index(r, g, 2)], (10 * r + g + 1) as f32);
            }
        }
        // One group: a plain vector.
        assert_eq!(pack_q4_scales(&[5., 6., 7.], 3, 1)[..4], [5., 6., 7., 0.]);
    }
}
