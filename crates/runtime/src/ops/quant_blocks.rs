//! Quantization ops beyond torchao's per-row pair (`ops/quantize.rs`), which ExecuTorch's
//! Vulkan partitioner also delegates:
//! - `torchao.quantize_affine.default` `[input, block_size, scale, zero_point | Null,
//!   output_dtype, quant_min | Null, quant_max | Null, out]`: `clamp(round(x * (1 / scale)) +
//!   zero_point)` per block;
//! - `quantized_decomposed.quantize_per_token.default` `[input, scales, zero_points,
//!   quant_min, quant_max, dtype, out]` and `dequantize_per_token.default` `[input, scales,
//!   zero_points, quant_min, quant_max, dtype, output_dtype, out]`: one (scale, zero point)
//!   per row of the last dim;
//! - `quantized_decomposed.choose_qparams_per_token_asymmetric.default` `[input, dtype,
//!   ValueList(scales, zero_points)]` and `choose_qparams.tensor` `[input, quant_min,
//!   quant_max, eps, dtype, ValueList(scale, zero_point)]`;
//! - `torchao.choose_qparams_affine` with a block_size other than per-row
//!   ([`build_choose_blocks`], called from `ops/quantize.rs`).
//!
//! The exporter writes the float64 / int64 parameters of the quantized_decomposed ops as
//! float32 / int32 tensors. Numerics follow eager PyTorch; `shaders/quantize_blocks.comp`
//! and `act_qparams.glsl` say how.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push, Shapes, TensorId};
use crate::ops::float_shader;
use crate::ops::quantize::{int_input_kind, output_pair, qparam_kinds};
use crate::ops::training::folded_grid;
use crate::registry::{OpEntry, Registry};

/// Local size of `choose_qparams_rows` and `choose_qparams_blocks`.
const ROWS_LANES: u32 = 256;
const BLOCK_LANES: u32 = 64;

/// act_qparams.glsl's mapping codes.
const ASYMMETRIC: u32 = 0;
const PER_TOKEN_ASYMMETRIC: u32 = 3;

/// quantize_blocks.comp's modes.
const MODE_TORCHAO: u32 = 0;
const MODE_EXACT: u32 = 1;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let floats = &[DataType::Float32, DataType::Float16];
    r.register(OpEntry {
        name: "torchao.quantize_affine.default",
        build: build_quantize_affine,
        dtypes: floats,
        dynamic_shapes: true,
        note: "clamp(round_half_even(x * (1 / scale)) + zero_point, quant_min, quant_max) per block of block_size (rank <= 4), in fp32 as torchao; out int8 / uint8 / int32 (range from the dtype when quant_min / quant_max are None); scale float32 / float16, zero point int8 / int32 / float32 / None",
    })?;
    r.register(OpEntry {
        name: "quantized_decomposed.quantize_per_token.default",
        build: build_quantize_per_token,
        dtypes: floats,
        dynamic_shapes: true,
        note: "clamp(round_half_even(x / scale + zero_point)) with one scale / zero point per row of the last dim, rounded as PyTorch's float64 arithmetic (the exact quotient, ties to even); out int8 / uint8 / int32",
    })?;
    r.register(OpEntry {
        name: "quantized_decomposed.dequantize_per_token.default",
        build: build_dequantize_per_token,
        dtypes: floats,
        dynamic_shapes: true,
        note: "float(q - zero_point) * scale with one scale / zero point per row of the last dim; q int8 / uint8 / int32; out float32 / float16",
    })?;
    r.register(OpEntry {
        name: "quantized_decomposed.choose_qparams_per_token_asymmetric.default",
        build: build_choose_per_token,
        dtypes: floats,
        dynamic_shapes: true,
        note: "per-row int8 [-128, 127] scale = max((max(x, 0) - min(x, 0)) / 255, eps) and the zero point from the end with the smaller error (XNNPACK's rule, as PyTorch), in fp32; outputs [.., 1] scale float32 / float16, zero point int32 / float32 / int8",
    })?;
    r.register(OpEntry {
        name: "quantized_decomposed.choose_qparams.tensor",
        build: build_choose_tensor,
        dtypes: floats,
        dynamic_shapes: true,
        note: "one asymmetric scale / zero point for the whole tensor (PyTorch's determine_qparams: scale = max((max(x, 0) - min(x, 0)) / (quant_max - quant_min), eps), zp = clamp(quant_min - round(min / scale))); outputs [1]",
    })
}

/// The rows of x `[.., K]` with K = the last dim: `(rows, K)`.
fn rows_of(dims: &[usize]) -> (usize, usize) {
    match dims.split_last() {
        Some((&k, lead)) => (lead.iter().product(), k),
        None => (1, 1),
    }
}

/// Sizes and block sizes right-aligned into four dims (leading 1s), for the block shaders.
fn aligned4(dims: &[usize], block: &[usize], what: &str) -> Result<([u32; 4], [u32; 4])> {
    if dims.len() > 4 || block.len() != dims.len() {
        return Err(unsupported(format!(
            "{what}: input {dims:?} with block_size {block:?}: need rank <= 4 and one block size per dim"
        )));
    }
    let (mut s, mut b) = ([1u32; 4], [1u32; 4]);
    let off = 4 - dims.len();
    for (d, (&n, &bs)) in dims.iter().zip(block).enumerate() {
        s[off + d] = to_u32(n, "input size")?;
        b[off + d] = to_u32(bs, "block size")?;
    }
    Ok((s, b))
}

/// Checked block sizes of arg `i`: one positive size per dim of x.
fn block_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize, rank: usize) -> Result<Vec<usize>> {
    let block = g.int_list_arg(call, i)?;
    if block.len() != rank || block.iter().any(|&b| b < 1) {
        return Err(invalid_program(format!(
            "{}: block_size {block:?} needs one positive size per dim of the rank-{rank} input",
            call.what()
        )));
    }
    Ok(block.iter().map(|&b| b as usize).collect())
}

/// An optional integer arg; `Null` gives `default`.
fn opt_int(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize, default: i64) -> Result<i64> {
    match g.value(call.arg(i)?)? {
        GValue::Null => Ok(default),
        _ => g.int_arg(call, i),
    }
}

/// The output-kind code of quantize_blocks.comp and the dtype's range.
fn quant_out(call: &OpCall<'_>, dt: DataType) -> Result<(u32, (i64, i64))> {
    match dt {
        DataType::Int8 => Ok((0, (-128, 127))),
        DataType::Uint8 => Ok((1, (0, 255))),
        DataType::Int32 => Ok((2, (i32::MIN as i64, i32::MAX as i64))),
        d => Err(unsupported(format!(
            "{}: quantized dtype {} is not supported (int8, uint8, int32 are)",
            call.what(),
            d.name()
        ))),
    }
}

fn check_quant_range(
    call: &OpCall<'_>,
    (qmin, qmax): (i64, i64),
    (lo, hi): (i64, i64),
) -> Result<()> {
    if qmin > qmax || qmin < lo || qmax > hi {
        return Err(invalid_program(format!(
            "{}: quant range [{qmin}, {qmax}] is empty or does not fit the output dtype's [{lo}, {hi}]",
            call.what()
        )));
    }
    Ok(())
}

/// The kinds word for a scale and optional zero point (none: kind 3).
fn kinds_of(call: &OpCall<'_>, s: &Shapes, scale: TensorId, zp: Option<TensorId>) -> Result<u32> {
    Ok(match zp {
        Some(z) => qparam_kinds(call, s.dtype(scale), s.dtype(z))?,
        None => qparam_kinds(call, s.dtype(scale), DataType::Int32)? | (3 << 8),
    })
}

/// How a quantize / dequantize node sees its input at each resize: the block sizes for the
/// current dims (torchao's fixed block_size, or per token: one block per row).
#[derive(Clone)]
pub(crate) enum Blocks {
    Fixed(Vec<usize>),
    PerToken,
}

impl Blocks {
    /// (sizes, blocks) right-aligned to four dims, and the number of blocks.
    fn layout(&self, dims: &[usize], what: &str) -> Result<([u32; 4], [u32; 4], usize)> {
        match self {
            Blocks::Fixed(b) => {
                let (s, bl) = aligned4(dims, b, what)?;
                let groups = dims.iter().zip(b).map(|(&n, &b)| n.div_ceil(b)).product();
                Ok((s, bl, groups))
            }
            Blocks::PerToken => {
                let (rows, k) = rows_of(dims);
                let (s, b) = aligned4(&[rows, k], &[1, k.max(1)], what)?;
                Ok((s, b, rows))
            }
        }
    }
}

/// One launch of quantize_blocks.comp over x into `out`.
fn quantize_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (x, scale, zp, out): (TensorId, TensorId, Option<TensorId>, TensorId),
    blocks: Blocks,
    mode: u32,
    (qmin, qmax): (i64, i64),
) -> Result<()> {
    let what = call.what();
    let s = g.shapes();
    let (out_kind, range) = quant_out(call, s.dtype(out))?;
    check_quant_range(call, (qmin, qmax), range)?;
    if s.max_dims(out) != s.max_dims(x) {
        return Err(invalid_program(format!(
            "{what}: output sizes {:?} differ from the input's {:?}",
            s.max_dims(out),
            s.max_dims(x)
        )));
    }
    let kinds = kinds_of(call, s, scale, zp)? | (out_kind << 16);
    let shader = float_shader("quantize_blocks", s.dtype(x), call)?;
    let zp_t = g.or_dummy(zp)?;
    g.dispatch(
        call,
        Dispatch::new(shader, [out, x, scale, zp_t]),
        move |s| {
            let dims = s.dims(x).to_vec();
            let (sizes, bl, groups) = blocks.layout(&dims, &what)?;
            check_param_counts(s, &[Some(scale), zp], groups, &dims, &what)?;
            let total = s.numel(x);
            s.set_dims(out, dims)?;
            let units = if out_kind == 2 {
                total
            } else {
                total.div_ceil(4)
            };
            Ok(Launch {
                push: Push::new()
                    .u32_array(&sizes, 4, 1)
                    .u32_array(&bl, 4, 1)
                    .u32(to_u32(total, "elements")?)
                    .u32(kinds)
                    .u32(mode)
                    .i32(qmin as i32)
                    .i32(qmax as i32)
                    .u32(0)
                    .u32(0)
                    .u32(0)
                    .finish(),
                global: Global::Linear(units as u64),
            })
        },
    )
}

fn check_param_counts(
    s: &Shapes,
    ts: &[Option<TensorId>],
    groups: usize,
    dims: &[usize],
    what: &str,
) -> Result<()> {
    for t in ts.iter().flatten() {
        if s.numel(*t) != groups {
            return Err(invalid_arg(format!(
                "{what}: a quantization parameter tensor holds {} values for the {groups} blocks of input {dims:?}",
                s.numel(*t)
            )));
        }
    }
    Ok(())
}

/// `[input, block_size, scale, zero_point | Null, output_dtype, quant_min, quant_max, out]`.
fn build_quantize_affine(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    let x = g.tensor_arg(call, 0)?;
    let rank = g.shapes().max_dims(x).len();
    let block = block_arg(g, call, 1, rank)?;
    let scale = g.tensor_or_prepack(call, 2)?;
    let zp = g.opt_tensor_or_prepack(call, 3)?;
    let out = g.tensor_arg(call, 7)?;
    let (_, range) = quant_out(call, g.shapes().dtype(out))?;
    let qmin = opt_int(g, call, 5, range.0)?;
    let qmax = opt_int(g, call, 6, range.1)?;
    quantize_node(
        g,
        call,
        (x, scale, zp, out),
        Blocks::Fixed(block),
        MODE_TORCHAO,
        (qmin, qmax),
    )
}

/// `[input, scales, zero_points, quant_min, quant_max, dtype, out]`.
fn build_quantize_per_token(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(7)?;
    let x = g.tensor_arg(call, 0)?;
    let scale = g.tensor_or_prepack(call, 1)?;
    let zp = g.tensor_or_prepack(call, 2)?;
    let (qmin, qmax) = (g.int_arg(call, 3)?, g.int_arg(call, 4)?);
    let out = g.tensor_arg(call, 6)?;
    quantize_node(
        g,
        call,
        (x, scale, Some(zp), out),
        Blocks::PerToken,
        MODE_EXACT,
        (qmin, qmax),
    )
}

/// `[input, scales, zero_points, quant_min, quant_max, dtype, output_dtype, out]`: the
/// dequantize_affine shader with one block per row.
fn build_dequantize_per_token(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    let q = g.tensor_arg(call, 0)?;
    let scale = g.tensor_or_prepack(call, 1)?;
    let zp = g.tensor_or_prepack(call, 2)?;
    let out = g.tensor_arg(call, 7)?;
    dequantize_node(g, call, (q, scale, Some(zp), out), Blocks::PerToken)
}

/// One launch of dequantize_affine.comp: `out = float(q - zero_point) * scale` with the
/// parameters of each element's block (`torchao.dequantize_affine` and
/// `dequantize_per_token`).
pub(crate) fn dequantize_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (q, scale, zp, out): (TensorId, TensorId, Option<TensorId>, TensorId),
    blocks: Blocks,
) -> Result<()> {
    let what = call.what();
    let s = g.shapes();
    let qd = s.max_dims(q).to_vec();
    let q_kind = int_input_kind(call, s.dtype(q))?;
    if s.max_dims(out) != qd.as_slice() {
        return Err(invalid_program(format!(
            "{what}: output sizes {:?} differ from the input's {qd:?}",
            s.max_dims(out)
        )));
    }
    // Rank and block sizes, checked at load on the serialized sizes.
    blocks.layout(&qd, &what)?;
    let kinds = kinds_of(call, s, scale, zp)? | (q_kind << 16);
    let shader = float_shader("dequantize_affine", s.dtype(out), call)?;
    let zp_t = g.or_dummy(zp)?;
    g.dispatch(
        call,
        Dispatch::new(shader, [out, q, scale, zp_t]),
        move |s| {
            let dims = s.dims(q).to_vec();
            let (sizes, bl, groups) = blocks.layout(&dims, &what)?;
            check_param_counts(s, &[Some(scale), zp], groups, &dims, &what)?;
            let total = s.numel(q);
            s.set_dims(out, dims)?;
            Ok(Launch {
                push: Push::new()
                    .u32_array(&sizes, 4, 1)
                    .u32_array(&bl, 4, 1)
                    .u32(to_u32(total, "elements")?)
                    .u32(kinds)
                    .u32(0)
                    .u32(0)
                    .finish(),
                global: Global::Linear(total as u64),
            })
        },
    )
}

/// Parameters of one choose_qparams_rows launch.
#[derive(Clone, Copy)]
struct RowsChoose {
    mapping: u32,
    qmin: i64,
    qmax: i64,
    eps: f32,
    kinds: u32,
}

/// `[input, dtype, ValueList(scales, zero_points)]`: per row, outputs `lead ++ [1]`.
fn build_choose_per_token(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let x = g.tensor_arg(call, 0)?;
    let ([scale, zp], _) = output_pair(g, call, 2)?;
    let kinds = {
        let sh = g.shapes();
        qparam_kinds(call, sh.dtype(scale), sh.dtype(zp))?
    };
    let params = RowsChoose {
        mapping: PER_TOKEN_ASYMMETRIC,
        qmin: -128,
        qmax: 127,
        eps: f32::EPSILON,
        kinds,
    };
    choose_rows_node(g, call, x, [scale, zp], params, true)
}

/// `[input, quant_min, quant_max, eps, dtype, ValueList(scale, zero_point)]`: the whole
/// tensor as one row; outputs `[1]`.
fn build_choose_tensor(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let what = call.what();
    let x = g.tensor_arg(call, 0)?;
    let (qmin, qmax) = (g.int_arg(call, 1)?, g.int_arg(call, 2)?);
    if qmin > qmax || i32::try_from(qmin).is_err() || i32::try_from(qmax).is_err() {
        return Err(invalid_program(format!(
            "{what}: quant_min = {qmin}, quant_max = {qmax}; need quant_min <= quant_max within int32"
        )));
    }
    let eps = g.double_arg_or(call, 3, f64::from(f32::EPSILON))? as f32;
    let ([scale, zp], _) = output_pair(g, call, 5)?;
    let kinds = {
        let sh = g.shapes();
        qparam_kinds(call, sh.dtype(scale), sh.dtype(zp))?
    };
    let params = RowsChoose {
        mapping: ASYMMETRIC,
        qmin,
        qmax,
        eps,
        kinds,
    };
    choose_rows_node(g, call, x, [scale, zp], params, false)
}

/// choose_qparams_rows.comp over x's rows (`per_row`) or over all of x as one row.
fn choose_rows_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    [scale, zp]: [TensorId; 2],
    p: RowsChoose,
    per_row: bool,
) -> Result<()> {
    let what = call.what();
    let s = g.shapes();
    if s.max_dims(x).is_empty() && per_row {
        return Err(invalid_program(format!(
            "{what}: the input is rank 0; per-token parameters need a last dim"
        )));
    }
    let shader = float_shader("choose_qparams_rows", s.dtype(x), call)?;
    g.dispatch(call, Dispatch::new(shader, [scale, zp, x]), move |s| {
        let dims = s.dims(x).to_vec();
        let (rows, k) = if per_row {
            rows_of(&dims)
        } else {
            (1, s.numel(x))
        };
        if k == 0 {
            return Err(invalid_arg(format!(
                "{what}: input {dims:?} is empty; its min / max are undefined"
            )));
        }
        let out_dims = if per_row {
            let mut d = dims[..dims.len() - 1].to_vec();
            d.push(1);
            d
        } else {
            vec![1]
        };
        s.set_dims(scale, out_dims.clone())?;
        s.set_dims(zp, out_dims)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(rows, "rows")?)
                .u32(to_u32(k, "row length")?)
                .u32(p.mapping)
                .i32(p.qmin as i32)
                .i32(p.qmax as i32)
                .f32(p.eps)
                .u32(p.kinds)
                .u32(0)
                .finish(),
            global: folded_grid(rows as u64, [ROWS_LANES, 1, 1], &what)?,
        })
    })
}

/// torchao's output sizes of choose_qparams_affine for input `dims` and `block`: with
/// keepdim, one entry per dim (size / block); without, the reduction view's dims that are not
/// reduced (a dim split into blocks keeps its block count, a whole-dim block drops out).
pub(crate) fn choose_out_dims(dims: &[usize], block: &[usize], keepdim: bool) -> Vec<usize> {
    let mut out = Vec::with_capacity(dims.len());
    for (&n, &b) in dims.iter().zip(block) {
        if keepdim || (b != n && b > 1) {
            out.push(n / b.max(1));
        } else if b == 1 {
            out.push(n);
        }
    }
    out
}

/// torchao.choose_qparams_affine for any block_size: one workgroup per block
/// (choose_qparams_blocks.comp). `p` holds the parsed mapping, range and eps.
pub(crate) fn build_choose_blocks(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    block: Vec<usize>,
    (mapping, qmin, qmax, eps): (u32, i64, i64, f32),
    keepdim: bool,
    [scale, zp]: [TensorId; 2],
) -> Result<()> {
    let what = call.what();
    let s = g.shapes();
    let kinds = qparam_kinds(call, s.dtype(scale), s.dtype(zp))?;
    let xd = s.max_dims(x).to_vec();
    aligned4(&xd, &block, &what)?;
    let want = choose_out_dims(&xd, &block, keepdim);
    for (t, name) in [(scale, "scale"), (zp, "zero_point")] {
        let got = s.max_dims(t);
        if got != want.as_slice() {
            return Err(invalid_program(format!(
                "{what}: {name} output has sizes {got:?}; block_size {block:?} on input {xd:?} gives {want:?}"
            )));
        }
    }
    let shader = float_shader("choose_qparams_blocks", s.dtype(x), call)?;
    g.dispatch(call, Dispatch::new(shader, [scale, zp, x]), move |s| {
        let dims = s.dims(x).to_vec();
        if let Some((d, (&n, &b))) = dims
            .iter()
            .zip(&block)
            .enumerate()
            .find(|(_, (&n, &b))| n % b != 0)
        {
            return Err(invalid_arg(format!(
                "{what}: input dim {d} has size {n}, not a multiple of its block size {b}"
            )));
        }
        let (sizes, bl) = aligned4(&dims, &block, &what)?;
        let nblocks: usize = dims.iter().zip(&block).map(|(&n, &b)| n / b).product();
        let out_dims = choose_out_dims(&dims, &block, keepdim);
        s.set_dims(scale, out_dims.clone())?;
        s.set_dims(zp, out_dims)?;
        Ok(Launch {
            push: Push::new()
                .u32_array(&sizes, 4, 1)
                .u32_array(&bl, 4, 1)
                .u32(to_u32(nblocks, "blocks")?)
                .u32(mapping)
                .i32(qmin as i32)
                .i32(qmax as i32)
                .f32(eps)
                .u32(kinds)
                .u32(0)
                .u32(0)
                .finish(),
            global: folded_grid(nblocks as u64, [BLOCK_LANES, 1, 1], &what)?,
        })
    })
}
