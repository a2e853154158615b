//! Indexing ops: `aten.embedding.default` (`[weight, indices, padding_idx, scale_grad,
//! sparse, out]`), `aten.index.Tensor` (`[x, indices ValueList, out]`),
//! `aten.select_copy.int` (`[x, dim, index, out]`), `aten.index_select.default` (`[x, dim,
//! index, out]`), `aten.gather.default` (`[x, dim, index, sparse_grad, out]`),
//! `et_vk.select_as_symint.default`
//! (`[x, dim, index, out SymInt]`) and `et_vk.embedding_q4gsw.default` (`[weight, scales,
//! group_size, indices, is_linear_weight, out]`, a 4-bit group-quantized embedding table).
//!
//! Gathers use the `gather` shader with int32 indices (ExecuTorch stages int64 host indices
//! as int32 on the GPU). PyTorch raises on an out-of-range index: the kernels write a zero
//! row instead of reading out of bounds and record the index in the graph's fault record,
//! so the execute fails with an error naming the node, the index and the dim size. That
//! covers `index.Tensor` (after wrapping negatives), `index_select`, `embedding`, the 4-bit
//! embeddings and `aten.gather` (per-element indices along one dim, on the `gather_dim`
//! shader; negative indices are out of range there, as PyTorch does not wrap them). The index tensors are
//! int32 in the VkGraph (the exporter's dtype; int64 program inputs are staged as int32).
//! `index_select` and `gather` move one-byte elements (bool) too.

use etvk_format::ir::DataType;

use crate::api::Result;
use etvk_shaders::ShaderId;

use crate::builder::{
    gvalue_kind, ConstantInfo, Dispatch, GValue, GraphBuilder, Layout, OpCall, Packed,
};
use crate::error::{internal, invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push, TensorId};
use crate::ops::shape::{move_global, move_shader};
use crate::ops::{data_shader, float_tag, norm_dim, same_dtype};
use crate::registry::{OpBuildFn, Registry};

/// Dtypes of the gathered / copied data (the `gather` / `slice` shader variants).
const DATA_DTYPES: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];
/// Data dtypes of `index_select` / `gather`, one-byte elements through the `_u8` variants.
const BYTE_DATA_DTYPES: &[DataType] = &[
    DataType::Float32,
    DataType::Float16,
    DataType::Int32,
    DataType::Bool,
    DataType::Int8,
    DataType::Uint8,
];
/// Rank limit of the `gather_dim` shader's push constants.
const MAX_RANK: usize = 8;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let entries: [(&'static str, OpBuildFn, &'static [DataType], &'static str); 4] = [
        (
            "aten.embedding.default",
            build_embedding,
            DATA_DTYPES,
            "weight rows gathered by int32 indices; an out-of-range index fails the execute",
        ),
        (
            "aten.index.Tensor",
            build_index,
            DATA_DTYPES,
            "one int32 index tensor on one dim (leading None entries allowed); negative \
             indices wrap, an out-of-range one fails the execute",
        ),
        (
            "aten.select_copy.int",
            build_select_copy,
            DATA_DTYPES,
            "copy of x[..., index, ...] dropping dim; negative dim / index allowed",
        ),
        (
            "et_vk.select_as_symint.default",
            build_select_as_symint,
            &[DataType::Int32],
            "SymInt = x[index] along dim, x an int graph input read from host data (host only)",
        ),
    ];
    for (name, build, dtypes, note) in entries {
        r.register_dynamic(dtypes, &[(name, build, note)])?;
    }
    r.register_dynamic(
        BYTE_DATA_DTYPES,
        &[
            (
                "aten.index_select.default",
                build_index_select as OpBuildFn,
                "x[..., index, ...] along dim (negative dim ok) with a 1-D or 0-d int32 index; \
                 an out-of-range (or negative) index fails the execute",
            ),
            (
                "aten.gather.default",
                build_gather,
                "out[c] = x[c with c[dim] = index[c]], out sized like the int32 index (same rank \
                 as x, other dims <= x's); an out-of-range (or negative) index fails the execute; rank <= 8",
            ),
        ],
    )?;
    r.register_dynamic(
        &[DataType::Float32, DataType::Float16],
        &[
            (
                "et_vk.embedding_q4gsw.default",
                build_embedding_q4gsw,
                "constant uint8 weight [V, D/2] (two 4-bit codes per byte, value code - 8; \
             is_linear_weight: even d in the low nibble, else the high one), scales [V, D / \
             group_size] fp32 or fp16, int32 indices; out = indices.shape + [D], fp32 or fp16; \
             an out-of-range index fails the execute",
            ),
            (
                "quantized_decomposed.embedding_4bit.dtype",
                build_embedding_4bit,
                "constant uint8 weight [V, D/2] (even d in the high nibble), value (nibble - 8 - \
             zero_point) * scale per group (scales [V] or [V, G] fp32 / fp16, zero points the \
             same or None), computed in the scales' dtype as PyTorch; quant range [-8, 7]; int32 \
             indices; out = indices.shape + [D]; an out-of-range index fails the execute",
            ),
        ],
    )?;
    Ok(())
}

/// Normalize a possibly negative index against a dim of `size` (PyTorch's select rule).
fn norm_index(i: i64, size: usize, what: &str) -> Result<usize> {
    let n = size as i64;
    let k = if i < 0 { i + n } else { i };
    if k < 0 || k >= n {
        return Err(invalid_arg(format!(
            "{what}: index {i} out of range for a dim of size {size}"
        )));
    }
    Ok(k as usize)
}

/// The tag a kernel writes into the graph's fault record (`fault.glsl`): the node id + 1,
/// so that 0 means no fault.
fn fault_tag(call: &OpCall<'_>) -> u32 {
    call.node_id.wrapping_add(1)
}

/// The `gather` shader's push constants: out[o][j][i] = x[o][idx[j]][i] over `numel` outputs.
fn gather_push(
    numel: usize,
    inner: usize,
    n_idx: usize,
    in_dim: usize,
    wrap_negative: bool,
    tag: u32,
) -> Result<Vec<u8>> {
    Ok(Push::new()
        .u32(to_u32(numel, "numel")?)
        .u32(to_u32(inner.max(1), "inner")?)
        .u32(to_u32(n_idx.max(1), "index count")?)
        .u32(to_u32(in_dim, "dim size")?)
        .u32(u32::from(wrap_negative))
        .u32(tag)
        .finish())
}

/// Fail unless `idx` is an int32 tensor (the GPU dtype of ExecuTorch's index tensors).
fn expect_int32(g: &GraphBuilder<'_>, call: &OpCall<'_>, idx: TensorId, arg: usize) -> Result<()> {
    let dt = g.shapes().dtype(idx);
    if dt != DataType::Int32 {
        return Err(unsupported(format!(
            "{} arg {arg}: index tensor dtype {} is not supported (int32 only)",
            call.what(),
            dt.name()
        )));
    }
    Ok(())
}

/// `out = x` gathered along `dim` by the values of `idx`:
/// `out.shape = x.shape[..dim] + idx.shape + x.shape[dim + 1..]`.
fn gather_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    idx: TensorId,
    out: TensorId,
    dim: usize,
    wrap_negative: bool,
) -> Result<()> {
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let out_rank = s.max_dims(x).len() - 1 + s.max_dims(idx).len();
    if s.max_dims(out).len() != out_rank {
        return Err(invalid_program(format!(
            "{}: output rank {} != {out_rank} (x sizes {:?}, index sizes {:?}, dim {dim})",
            call.what(),
            s.max_dims(out).len(),
            s.max_dims(x),
            s.max_dims(idx)
        )));
    }
    let shader = data_shader("gather", dt, call)?;
    let tag = fault_tag(call);
    g.dispatch(
        call,
        Dispatch::new(shader, [out, x, idx]).with_faults(),
        move |s| {
            let xd = s.dims(x).to_vec();
            let id = s.dims(idx).to_vec();
            let n_idx: usize = id.iter().product();
            let inner: usize = xd[dim + 1..].iter().product();
            let mut od = xd[..dim].to_vec();
            od.extend_from_slice(&id);
            od.extend_from_slice(&xd[dim + 1..]);
            let numel: usize = od.iter().product();
            s.set_dims(out, od)?;
            Ok(Launch {
                push: gather_push(numel, inner, n_idx, xd[dim], wrap_negative, tag)?,
                global: Global::Linear(numel as u64),
            })
        },
    )
}

fn build_embedding(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    // padding_idx / scale_grad_by_freq / sparse only affect the backward pass.
    let w = g.tensor_or_prepack(call, 0)?;
    let idx = g.tensor_arg(call, 1)?;
    let out = g.tensor_arg(call, 5)?;
    expect_int32(g, call, idx, 1)?;
    let rank = g.shapes().max_dims(w).len();
    if rank != 2 {
        return Err(invalid_program(format!(
            "{}: weight must be 2-D [num_embeddings, dim], got rank {rank}",
            call.what()
        )));
    }
    gather_dispatch(g, call, w, idx, out, 0, false)
}

fn build_index(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, 2)?;
    let lv = call.arg(1)?;
    let items = match g.value(lv)? {
        GValue::ValueList(ids) => ids.clone(),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 1 (value {lv}): expected a ValueList of optional index tensors, got {}",
                gvalue_kind(other)
            )))
        }
    };
    // Supported: `[None, ..., None, idx]`, i.e. one index tensor on one dim; trailing
    // dims are implicitly fully selected.
    let mut found = None;
    for (k, &id) in items.iter().enumerate() {
        match g.value(id)? {
            GValue::Null => {}
            GValue::Tensor(t) if found.is_none() => found = Some((k, *t)),
            GValue::Tensor(_) => {
                return Err(unsupported(format!(
                    "{what}: more than one index tensor (list {items:?}) is not supported"
                )))
            }
            other => {
                return Err(unsupported(format!(
                    "{what}: index list item {k} (value {id}) is a {}; only None and non-constant \
                     int32 tensors are supported",
                    gvalue_kind(other)
                )))
            }
        }
    }
    let Some((dim, idx)) = found else {
        return Err(unsupported(format!(
            "{what}: an index list without a tensor ({items:?}) is not supported"
        )));
    };
    expect_int32(g, call, idx, 1)?;
    let rank = g.shapes().max_dims(x).len();
    if dim >= rank {
        return Err(invalid_program(format!(
            "{what}: index tensor at position {dim} but x has rank {rank}"
        )));
    }
    gather_dispatch(g, call, x, idx, out, dim, true)
}

fn build_select_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = g.int_arg(call, 1)?;
    let index = g.int_arg(call, 2)?;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let d = norm_dim(dim, s.max_dims(x).len(), &what)?;
    // A one-element slice of the slice shader, the selected dim dropped from the output.
    let shader = data_shader("slice", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        // Negative indices count from the current (possibly resized) size.
        let first = norm_index(index, xd[d], &what)?;
        let inner: usize = xd[d + 1..].iter().product();
        let mut od = xd.clone();
        od.remove(d);
        let numel: usize = od.iter().product();
        s.set_dims(out, od)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .u32(to_u32(inner.max(1), "inner")?)
                .u32(1)
                .u32(to_u32(xd[d], "dim size")?)
                .u32(to_u32(first, "index")?)
                .u32(1)
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

fn build_select_as_symint(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let xv = call.arg(0)?;
    let dim = g.int_arg(call, 1)?;
    let index = g.int_arg(call, 2)?;
    let out_v = call.arg(3)?;
    if !matches!(g.value(out_v)?, GValue::SymInt) {
        return Err(invalid_program(format!(
            "{what} arg 3 (value {out_v}): expected a SymInt, got {}",
            gvalue_kind(g.value(out_v)?)
        )));
    }
    let x = match g.value(xv)? {
        GValue::Tensor(t) => *t,
        other => {
            return Err(unsupported(format!(
                "{what} arg 0 (value {xv}): expected a non-constant tensor, got {}",
                gvalue_kind(other)
            )))
        }
    };
    // The value is data-dependent. For a graph input (e5's input_pos) it is taken from the
    // host input data at execute, before the resize pass, so later resize functions and the
    // GPU scalar buffer see it with no GPU round trip. A tensor computed on the GPU would
    // need a submit + wait + readback in the middle of the graph (splitting the command
    // buffer); that path is not implemented, so such graphs are rejected here.
    let Some(t) = g.watch_input_values(xv)? else {
        return Err(unsupported(format!(
            "{what}: x (value {xv}) is not a graph input; reading a GPU-computed tensor into a \
             SymInt (a mid-graph readback) is not supported"
        )));
    };
    debug_assert_eq!(t, x);
    let rank = g.shapes().max_dims(x).len();
    let d = norm_dim(dim, rank.max(1), &what)?;
    g.host_step(call, move |s| {
        let dims = s.dims(x).to_vec();
        // Element at `index` along `d`, position 0 along every other dim (the op's inputs
        // are 1-element-per-other-dim in practice; PyTorch's select_as_symint needs a
        // single element after the select).
        let flat = if dims.is_empty() {
            if index != 0 && index != -1 {
                return Err(invalid_arg(format!(
                    "index {index} out of range for a 0-d tensor"
                )));
            }
            0
        } else {
            let k = norm_index(index, dims[d], "select_as_symint")?;
            let inner: usize = dims[d + 1..].iter().product();
            k * inner
        };
        let vals = s
            .host_values(x)
            .ok_or_else(|| internal("select_as_symint input values are not tracked"))?;
        let v = *vals.get(flat).ok_or_else(|| {
            invalid_arg(format!(
                "element {flat} of an input with {} values",
                vals.len()
            ))
        })?;
        s.set_scalar(out_v, v as f64)
    })
}

/// `[x, dim, index, out]`: PyTorch's `index_select` (the index is 1-D or 0-d; a 0-d x
/// takes dim 0 / -1 and a one-element index). Through the `gather` shader, without
/// wrapping negative indices (PyTorch rejects them): they give zeros like any index
/// outside `[0, size)`.
fn build_index_select(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = g.int_arg(call, 1)?;
    let idx = g.tensor_or_prepack(call, 2)?;
    let out = g.tensor_arg(call, 3)?;
    expect_int32(g, call, idx, 2)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = s.max_dims(x).len();
    let d = norm_dim(dim, rank.max(1), &what)?;
    if s.max_dims(idx).len() > 1 {
        return Err(invalid_program(format!(
            "{what}: the index must be a vector (rank <= 1), got sizes {:?}",
            s.max_dims(idx)
        )));
    }
    if s.max_dims(out).len() != rank {
        return Err(invalid_program(format!(
            "{what}: the output has rank {}, the input rank {rank}",
            s.max_dims(out).len()
        )));
    }
    let shader = move_shader("gather", dt, call)?;
    let tag = fault_tag(call);
    g.dispatch(
        call,
        Dispatch::new(shader, [out, x, idx]).with_faults(),
        move |s| {
            let xd = s.dims(x).to_vec();
            let n_idx = s.numel(idx);
            let (outer, in_dim, inner, od) = if rank == 0 {
                if n_idx != 1 {
                    return Err(invalid_arg(format!(
                        "index_select of a 0-d tensor needs a one-element index, got {n_idx}"
                    )));
                }
                (1, 1, 1, Vec::new())
            } else {
                let mut od = xd.clone();
                od[d] = n_idx;
                (
                    xd[..d].iter().product::<usize>(),
                    xd[d],
                    xd[d + 1..].iter().product::<usize>(),
                    od,
                )
            };
            let numel = outer * n_idx * inner;
            s.set_dims(out, od)?;
            Ok(Launch {
                push: gather_push(numel, inner, n_idx, in_dim, false, tag)?,
                global: move_global(numel, dt),
            })
        },
    )
}

/// `[x, dim, index, sparse_grad, out]`: PyTorch's `gather`. The index has x's rank (a 0-d
/// tensor counting as 1-D) and, on every dim but `dim`, at most x's size (checked at
/// every resize: a larger one would read out of bounds); out has the index's sizes.
fn build_gather(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(5)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = g.int_arg(call, 1)?;
    let idx = g.tensor_or_prepack(call, 2)?;
    // sparse_grad only affects the backward pass.
    let out = g.tensor_arg(call, 4)?;
    expect_int32(g, call, idx, 2)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let (xr, ir) = (s.max_dims(x).len(), s.max_dims(idx).len());
    if xr.max(1) != ir.max(1) {
        return Err(invalid_program(format!(
            "{what}: the index (sizes {:?}) must have as many dims as x (sizes {:?})",
            s.max_dims(idx),
            s.max_dims(x)
        )));
    }
    if s.max_dims(out).len() != ir {
        return Err(invalid_program(format!(
            "{what}: the output has rank {}, the index rank {ir}",
            s.max_dims(out).len()
        )));
    }
    if ir > MAX_RANK {
        return Err(unsupported(format!("{what}: rank {ir} exceeds {MAX_RANK}")));
    }
    let d = norm_dim(dim, xr.max(1), &what)?;
    let shader = move_shader("gather_dim", dt, call)?;
    let tag = fault_tag(call);
    g.dispatch(
        call,
        Dispatch::new(shader, [out, x, idx]).with_faults(),
        move |s| {
            // 0-d tensors as [1].
            let one = |v: Vec<usize>| if v.is_empty() { vec![1] } else { v };
            let xd = one(s.dims(x).to_vec());
            let od = s.dims(idx).to_vec();
            let id = one(od.clone());
            for k in 0..id.len() {
                if k != d && id[k] > xd[k] {
                    return Err(invalid_arg(format!(
                        "size does not match at dimension {k}: expected index {id:?} to be no \
                     larger than self {xd:?} apart from dimension {d}"
                    )));
                }
            }
            let xs = crate::graph::contiguous_strides(&xd);
            let numel: usize = id.iter().product();
            let rev = |v: &[usize]| -> Result<Vec<u32>> {
                v.iter().rev().map(|&n| to_u32(n, "size")).collect()
            };
            let rank = id.len();
            s.set_dims(out, od)?;
            Ok(Launch {
                push: Push::new()
                    .u32(to_u32(numel, "numel")?)
                    .u32(rank as u32)
                    .u32((rank - 1 - d) as u32)
                    .u32(to_u32(xd[d], "dim size")?)
                    .u32_array(&rev(&id)?, MAX_RANK, 1)
                    .u32_array(&rev(&xs)?, MAX_RANK, 0)
                    .u32(tag)
                    .finish(),
                global: move_global(numel, dt),
            })
        },
    )
}

/// The serialized uint8 bytes as little-endian 32-bit words (zero-padded to a whole word),
/// so the shader reads them through a `uint[]` binding that never runs past the buffer.
fn byte_words() -> Layout {
    Layout {
        name: "u8_as_words".to_string(),
        pack: Box::new(|_c: &ConstantInfo, bytes: &[u8]| {
            let mut b = bytes.to_vec();
            b.resize(bytes.len().div_ceil(4) * 4, 0);
            Ok(Packed {
                dtype: DataType::Int32,
                dims: vec![b.len() / 4],
                bytes: b,
            })
        }),
    }
}

/// `[weight, scales, group_size, indices, is_linear_weight, out]` (ExecuTorch
/// `embedding_q4gsw(Tensor weight, Tensor weight_scales, int group_size, Tensor indices,
/// bool is_linear_weight=False) -> Tensor`).
fn build_embedding_q4gsw(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let gs = g.int_arg(call, 2)?;
    let linear = g.int_arg(call, 4)? != 0;
    quantized_embedding(
        g,
        call,
        QuantEmbedding {
            scales: 1,
            zero_points: None,
            indices: 3,
            out: 5,
            group_size: Some(gs),
            linear,
            scale_dtype_math: false,
        },
    )
}

/// `[weight, weight_scales, weight_zero_points | Null, quant_min, quant_max, indices, dtype,
/// out]` (`quantized_decomposed.embedding_4bit.dtype`): uint8 `[V, D/2]` with the even dim
/// in the high nibble, value = nibble - 8 - zero point, times the scale of its group
/// (scales `[V]` or `[V, G]`, zero points the same sizes and dtype), computed in the scales'
/// dtype as PyTorch's dequantize_per_channel_group.
fn build_embedding_4bit(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    let (qmin, qmax) = (g.int_arg(call, 3)?, g.int_arg(call, 4)?);
    if (qmin, qmax) != (-8, 7) {
        return Err(unsupported(format!(
            "{}: weight quant range [{qmin}, {qmax}] is not supported; 4-bit embeddings are [-8, 7]",
            call.what()
        )));
    }
    let zero_points = match g.value(call.arg(2)?)? {
        GValue::Null => None,
        _ => Some(2),
    };
    quantized_embedding(
        g,
        call,
        QuantEmbedding {
            scales: 1,
            zero_points,
            indices: 5,
            out: 7,
            group_size: None,
            linear: false,
            scale_dtype_math: true,
        },
    )
}

/// Where a 4-bit embedding op's operands are (arg indices; the packed weight is arg 0).
struct QuantEmbedding {
    scales: usize,
    zero_points: Option<usize>,
    indices: usize,
    out: usize,
    /// The group size (None: D / the scales' second dim, or D for per-row scales).
    group_size: Option<i64>,
    /// Even dims in the low nibble (the q4gsw linear layout) instead of the high one.
    linear: bool,
    /// Subtract and multiply in the scales' dtype (embedding_4bit's PyTorch reference).
    scale_dtype_math: bool,
}

fn quantized_embedding(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    q: QuantEmbedding,
) -> Result<()> {
    let what = call.what();
    let wv = call.arg(0)?;
    let info = match g.value(wv)? {
        GValue::TensorRef(c) => c.clone(),
        other => {
            return Err(unsupported(format!(
                "{what} arg 0 (value {wv}): the packed weight must be a constant, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let &[vocab, half] = info.dims.as_slice() else {
        return Err(invalid_program(format!(
            "{what}: weight sizes {:?} must be [V, D/2]",
            info.dims
        )));
    };
    if info.dtype != DataType::Uint8 {
        return Err(unsupported(format!(
            "{what}: weight dtype {} is not supported (uint8 packed nibbles)",
            info.dtype.name()
        )));
    }
    let d = half * 2;
    let scales = g.tensor_or_prepack(call, q.scales)?;
    let sd = g.shapes().max_dims(scales).to_vec();
    let gs = match (q.group_size, sd.as_slice()) {
        (Some(gs), _) => gs,
        (None, [v]) if *v == vocab => d as i64,
        (None, [v, groups]) if *v == vocab && *groups > 0 => (d / groups) as i64,
        (None, _) => {
            return Err(invalid_program(format!(
                "{what}: scales sizes {sd:?} must be [V] or [V, G] with V = {vocab}"
            )))
        }
    };
    if gs <= 0 || d % gs as usize != 0 {
        return Err(invalid_program(format!(
            "{what}: group_size {gs} must be positive and divide the embedding dim {d}"
        )));
    }
    let gs = gs as usize;
    let groups = d / gs;
    if sd.iter().product::<usize>() != vocab * groups || sd.first() != Some(&vocab) {
        return Err(invalid_program(format!(
            "{what}: scales sizes {sd:?} must hold [V, D / group_size] = [{vocab}, {groups}]"
        )));
    }
    let zp = match q.zero_points {
        Some(i) => Some(g.tensor_or_prepack(call, i)?),
        None => None,
    };
    let idx = g.tensor_or_prepack(call, q.indices)?;
    let out = g.tensor_arg(call, q.out)?;
    expect_int32(g, call, idx, q.indices)?;
    let s = g.shapes();
    if let Some(z) = zp {
        if s.max_dims(z) != sd.as_slice() || s.dtype(z) != s.dtype(scales) {
            return Err(invalid_program(format!(
                "{what}: zero points ({} {:?}) must have the scales' sizes and dtype ({} {sd:?})",
                s.dtype(z).name(),
                s.max_dims(z),
                s.dtype(scales).name()
            )));
        }
    }
    if s.max_dims(out).len() != s.max_dims(idx).len() + 1 {
        return Err(invalid_program(format!(
            "{what}: output rank {} != index rank {} + 1",
            s.max_dims(out).len(),
            s.max_dims(idx).len()
        )));
    }
    let tag = |dt: DataType, role: &str| {
        float_tag(dt).ok_or_else(|| {
            unsupported(format!(
                "{what}: {role} dtype {} is not supported (float32, float16 are)",
                dt.name()
            ))
        })
    };
    let name = format!(
        "embedding_q4gsw_{}_s{}",
        tag(s.dtype(out), "output")?,
        tag(s.dtype(scales), "scales")?
    );
    let shader = ShaderId::from_name(&name).ok_or_else(|| {
        internal(format!(
            "{what}: shader variant {name} missing from the manifest"
        ))
    })?;
    let flags = u32::from(zp.is_some()) | (u32::from(q.scale_dtype_math) << 1);
    let w = g.prepack(wv, &byte_words())?;
    let zp_t = g.or_dummy(zp)?;
    let linear = q.linear;
    let tag = fault_tag(call);
    g.dispatch(
        call,
        Dispatch::new(shader, [out, w, scales, idx, zp_t]).with_faults(),
        move |s| {
            let mut od = s.dims(idx).to_vec();
            od.push(d);
            let numel: usize = od.iter().product();
            s.set_dims(out, od)?;
            Ok(Launch {
                push: Push::new()
                    .u32(to_u32(numel, "numel")?)
                    .u32(to_u32(d, "D")?)
                    .u32(to_u32(vocab, "V")?)
                    .u32(to_u32(gs, "group_size")?)
                    .u32(to_u32(groups, "groups")?)
                    .u32(linear as u32)
                    .u32(flags)
                    .u32(tag)
                    .finish(),
                global: Global::Linear(numel as u64),
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_normalize_like_pytorch() {
        assert_eq!(norm_index(-1, 5, "t").unwrap(), 4);
        assert_eq!(norm_index(0, 5, "t").unwrap(), 0);
        assert!(norm_index(5, 5, "t").is_err());
        assert!(norm_index(-6, 5, "t").is_err());
        assert_eq!(norm_dim(-2, 3, "t").unwrap(), 1);
    }
}
