//! Reductions and concatenation: `aten.sum.dim_IntList` (`[x, dims, keepdim, dtype, out]`),
//! `aten.mean.dim` (`[x, dims, keepdim, dtype, out]`), `aten.amax.default` /
//! `aten.amin.default` (`[x, dims, keepdim, out]`) and `aten.cat.default`
//! (`[ValueList(tensors), dim, out]`).
//!
//! A reduction over any set of dims runs one shader: the host coalesces x's sizes (size-1
//! dims dropped, neighbouring dims of the same kind merged) into at most 8 dims with a
//! bitmask of the reduced ones, so one dim of any rank folds to `[outer, D, inner]` and
//! the shader's index arithmetic stays short. Long reductions (`R >= 64`) take one
//! 64-lane workgroup per output with a fixed shared-memory tree; short ones one
//! invocation per output with a sequential loop (a workgroup would idle). Both orders are
//! fixed for a given shape, so results are deterministic; math is in float for fp16 too.
//!
//! `cat` is one copy dispatch per input into its slab of the output.
//!
//! Also `aten.argmax.default` / `aten.argmin.default` (`[x, dim|None, keepdim, out int32]`,
//! the `argmax` / `argmin` shaders: workgroup-per-output or serial like the reductions; the
//! partitioner delegates argmin with an Int dim only) and `aten._log_softmax.default`
//! (`[x, dim, half_to_float, out]`, one workgroup per line with an online max / sum).

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, Layout, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push, Shapes, TensorId};
use crate::ops::training::folded_grid;
use crate::ops::{float_shader, norm_dim, same_dtype};
use crate::registry::{OpEntry, Registry};

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
/// Local size of the workgroup-per-output `reduce` variants (the shader's `LANES`).
const LANES: u32 = 64;
/// Most dims the `reduce` shader indexes (its `uvec4 dims[2]`).
const MAX_RANK: usize = 8;
/// PyTorch `ScalarType` codes a `dtype` argument may name (it must match x).
const SCALAR_TYPE_HALF: i64 = 5;
const SCALAR_TYPE_FLOAT: i64 = 6;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register(OpEntry {
        name: "aten.sum.dim_IntList",
        build: build_sum,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "sum over dims (negative ok; None / [] = all), keepdim; fp32 accumulation, fixed order; dtype must be None or x's",
    })?;
    r.register(OpEntry {
        name: "aten.mean.dim",
        build: build_mean,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "mean over dims (negative ok; None / [] = all), keepdim; fp32 accumulation, fixed order; empty -> NaN",
    })?;
    r.register(OpEntry {
        name: "aten.amax.default",
        build: build_amax,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "max over dims (negative ok; [] = all), keepdim; NaN propagates; empty reduction is an error",
    })?;
    r.register(OpEntry {
        name: "aten.amin.default",
        build: build_amin,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "min over dims (negative ok; [] = all), keepdim; NaN propagates; empty reduction is an error",
    })?;
    r.register(OpEntry {
        name: "aten.cat.default",
        build: build_cat,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "concatenate any number of tensors along dim (negative ok); 1-D empty inputs are skipped as in PyTorch",
    })?;
    r.register(OpEntry {
        name: "aten.argmax.default",
        build: build_argmax,
        dtypes: &[DataType::Float32, DataType::Float16, DataType::Int32],
        dynamic_shapes: true,
        note: "int32 index of the max along dim (None = flattened), keepdim; first index on ties, NaN counts as the max",
    })?;
    r.register(OpEntry {
        name: "aten.argmin.default",
        build: build_argmin,
        dtypes: &[DataType::Float32, DataType::Float16, DataType::Int32],
        dynamic_shapes: true,
        note: "int32 index of the min along dim (None = flattened), keepdim; first index on ties, NaN counts as the min",
    })?;
    r.register(OpEntry {
        name: "aten._log_softmax.default",
        build: build_log_softmax,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "x - max - log(sum(exp(x - max))) along any dim, float accumulation; half_to_float: fp16 in, fp32 out",
    })?;
    Ok(())
}

/// The reduction a `reduce` shader variant computes (its manifest `OP` tag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reduce {
    Sum,
    Mean,
    Amax,
    Amin,
}

impl Reduce {
    fn tag(self) -> &'static str {
        match self {
            Reduce::Sum => "sum",
            Reduce::Mean => "mean",
            Reduce::Amax => "amax",
            Reduce::Amin => "amin",
        }
    }
}

fn build_sum(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_reduce(g, call, Reduce::Sum)
}

fn build_mean(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_reduce(g, call, Reduce::Mean)
}

fn build_amax(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_reduce(g, call, Reduce::Amax)
}

fn build_amin(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_reduce(g, call, Reduce::Amin)
}

/// `sum` / `mean`: `[x, dims, keepdim, dtype, out]`; `amax` / `amin`: `[x, dims, keepdim, out]`.
fn build_reduce(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, op: Reduce) -> Result<()> {
    let has_dtype = matches!(op, Reduce::Sum | Reduce::Mean);
    call.expect_args(if has_dtype { 5 } else { 4 })?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dims_arg = match g.value(call.arg(1)?)? {
        GValue::Null => Vec::new(),
        _ => g.int_list_arg(call, 1)?,
    };
    let keepdim = g.int_arg(call, 2)? != 0;
    let out = g.tensor_arg(call, if has_dtype { 4 } else { 3 })?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    if has_dtype {
        check_dtype_arg(g, call, 3, dt)?;
    }
    let rank = s.max_dims(x).len();
    let reduced = reduced_dims(&dims_arg, rank, &what)?;
    let wide = float_shader(&format!("reduce_{}", op.tag()), dt, call)?;
    let serial = float_shader(&format!("reduce_serial_{}", op.tag()), dt, call)?;
    let variants = vec![
        Dispatch::new(wide, [out, x]),
        Dispatch::new(serial, [out, x]),
    ];
    g.dispatch_select(call, variants, move |s| {
        let dims = s.dims(x).to_vec();
        let plan = plan_reduce(&dims, &reduced, &what)?;
        if plan.r == 0 && plan.outs > 0 && matches!(op, Reduce::Amax | Reduce::Amin) {
            return Err(invalid_arg(format!(
                "{what}: reducing an empty set of elements (x sizes {dims:?}) has no identity \
                 for {}",
                op.tag()
            )));
        }
        s.set_dims(out, out_dims(&dims, &reduced, keepdim))?;
        let push = Push::new()
            .u32(to_u32(plan.outs, "outputs")?)
            .u32(to_u32(plan.r, "reduced elements")?)
            .u32(plan.dims.len() as u32)
            .u32(plan.mask)
            .u32_array(&plan.dims, MAX_RANK, 1)
            .finish();
        if plan.r >= LANES as usize {
            Ok((
                0,
                Launch {
                    push,
                    global: folded_grid(plan.outs as u64, [LANES, 1, 1], &what)?,
                },
            ))
        } else {
            Ok((
                1,
                Launch {
                    push,
                    global: Global::Linear(plan.outs as u64),
                },
            ))
        }
    })
}

/// Accept a `dtype` argument of `None`, or one naming x's own dtype (no casting kernel).
fn check_dtype_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize, dt: DataType) -> Result<()> {
    let v = call.arg(i)?;
    let ok = match g.value(v)? {
        GValue::Null => true,
        GValue::Int(code) => {
            (*code == SCALAR_TYPE_FLOAT && dt == DataType::Float32)
                || (*code == SCALAR_TYPE_HALF && dt == DataType::Float16)
        }
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(unsupported(format!(
            "{} arg {i} (value {v}): dtype must be None or x's dtype {} (no casting reduction)",
            call.what(),
            dt.name()
        )))
    }
}

/// Which of x's `rank` dims are reduced: `dims` normalized (negative allowed); empty = all.
/// A rank-0 x reduces as one element and accepts dim 0 / -1, like PyTorch.
fn reduced_dims(dims: &[i64], rank: usize, what: &str) -> Result<Vec<bool>> {
    let mut reduced = vec![dims.is_empty(); rank];
    for &d in dims {
        let n = norm_dim(d, rank.max(1), what)?;
        if rank == 0 {
            continue;
        }
        if reduced[n] {
            return Err(invalid_program(format!(
                "{what}: dim {d} appears more than once in the reduced dims {dims:?}"
            )));
        }
        reduced[n] = true;
    }
    Ok(reduced)
}

/// Output sizes: reduced dims become 1 (`keepdim`) or disappear.
fn out_dims(dims: &[usize], reduced: &[bool], keepdim: bool) -> Vec<usize> {
    dims.iter()
        .zip(reduced)
        .filter_map(|(&n, &r)| match (r, keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// Launch parameters of the `reduce` shader for one shape.
#[derive(Debug, PartialEq, Eq)]
struct ReducePlan {
    /// Number of outputs (product of kept sizes).
    outs: usize,
    /// Elements folded into each output (product of reduced sizes).
    r: usize,
    /// Coalesced sizes, outermost first.
    dims: Vec<u32>,
    /// Bit d set: coalesced dim d is reduced.
    mask: u32,
}

/// Coalesce x's sizes for the shader: size-1 dims carry no index, and neighbours of the
/// same kind (both kept or both reduced) index like one dim of their product size.
fn plan_reduce(dims: &[usize], reduced: &[bool], what: &str) -> Result<ReducePlan> {
    let mut outs = 1usize;
    let mut r = 1usize;
    let mut merged: Vec<(usize, bool)> = Vec::new();
    for (&n, &red) in dims.iter().zip(reduced) {
        if red {
            r *= n;
        } else {
            outs *= n;
        }
        if n == 1 {
            continue;
        }
        match merged.last_mut() {
            Some((m, k)) if *k == red => *m *= n,
            _ => merged.push((n, red)),
        }
    }
    if merged.len() > MAX_RANK {
        return Err(unsupported(format!(
            "{what}: x sizes {dims:?} with reduced dims {reduced:?} need {} index dims after \
             merging neighbours; the shader handles {MAX_RANK}",
            merged.len()
        )));
    }
    let mut mask = 0u32;
    let mut sizes = Vec::with_capacity(merged.len());
    for (i, (n, red)) in merged.into_iter().enumerate() {
        if red {
            mask |= 1 << i;
        }
        sizes.push(to_u32(n, "reduce dim size")?);
    }
    // Index math is in 32 bits: offsets must fit.
    to_u32(outs.saturating_mul(r.max(1)), "x element count")?;
    Ok(ReducePlan {
        outs,
        r,
        dims: sizes,
        mask,
    })
}

/// `[ValueList(tensors), dim, out]`: one copy dispatch per input.
fn build_cat(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let lv = call.arg(0)?;
    let ids = match g.value(lv)? {
        GValue::ValueList(ids) if !ids.is_empty() => ids.clone(),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 0 (value {lv}): expected a non-empty ValueList of tensors, got {}",
                match other {
                    GValue::ValueList(_) => "an empty ValueList",
                    o => gvalue_kind(o),
                }
            )))
        }
    };
    let mut inputs = Vec::with_capacity(ids.len());
    for id in ids {
        let t = match g.value(id)? {
            GValue::Tensor(t) => *t,
            GValue::TensorRef(_) => g.prepack(id, &Layout::contiguous())?,
            other => {
                return Err(invalid_program(format!(
                    "{what} arg 0: list item value {id} is {}, expected a tensor",
                    gvalue_kind(other)
                )))
            }
        };
        inputs.push(t);
    }
    let dim = g.int_arg(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    let s = g.shapes();
    let mut dts: Vec<DataType> = inputs.iter().map(|&t| s.dtype(t)).collect();
    dts.push(s.dtype(out));
    let dt = same_dtype(call, &dts)?;
    let rank = s.max_dims(out).len();
    if rank == 0 {
        return Err(invalid_program(format!(
            "{what}: output is rank 0; cat needs tensors of rank >= 1"
        )));
    }
    let d = norm_dim(dim, rank, &what)?;
    let shader = float_shader("cat", dt, call)?;
    for (k, &x) in inputs.iter().enumerate() {
        let what = what.clone();
        let inputs = inputs.clone();
        g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
            let (out_sizes, offsets) = cat_layout(s, &inputs, d, &what)?;
            // Skipped (1-D empty) inputs have no dim d; they copy nothing.
            let len_d = s.dims(x).get(d).copied().unwrap_or(0);
            let numel = s.numel(x);
            s.set_dims(out, out_sizes.clone())?;
            if numel == 0 {
                return Ok(Launch {
                    push: Push::new().u32(0).u32(1).u32(1).u32(0).finish(),
                    global: Global::Linear(0),
                });
            }
            let inner: usize = out_sizes[d + 1..].iter().product();
            Ok(Launch {
                push: Push::new()
                    .u32(to_u32(numel, "input numel")?)
                    .u32(to_u32(len_d * inner, "input chunk")?)
                    .u32(to_u32(out_sizes[d] * inner, "output chunk")?)
                    .u32(to_u32(offsets[k] * inner, "offset")?)
                    .finish(),
                global: Global::Linear(numel as u64),
            })
        })?;
    }
    Ok(())
}

/// Output sizes of `cat(inputs, d)` and each input's start along `d`. Inputs that are 1-D
/// and empty are skipped (PyTorch's legacy rule); every other input must match the
/// output's rank and all sizes but `d`.
fn cat_layout(
    s: &Shapes,
    inputs: &[TensorId],
    d: usize,
    what: &str,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let skip = |dims: &[usize]| dims == [0];
    let first = inputs
        .iter()
        .map(|&t| s.dims(t))
        .find(|dims| !skip(dims))
        .unwrap_or(s.dims(inputs[0]));
    if first.len() <= d && !skip(first) {
        return Err(invalid_arg(format!(
            "{what}: cat dim {d} out of range for input sizes {first:?}"
        )));
    }
    let mut out_sizes = first.to_vec();
    let mut offsets = Vec::with_capacity(inputs.len());
    let mut total = 0usize;
    for &t in inputs {
        let dims = s.dims(t);
        offsets.push(total);
        if skip(dims) {
            continue;
        }
        let same_rest = dims.len() == first.len()
            && dims
                .iter()
                .zip(first)
                .enumerate()
                .all(|(i, (a, b))| i == d || a == b);
        if !same_rest {
            return Err(invalid_arg(format!(
                "{what}: input sizes {dims:?} must equal {first:?} in every dim but the cat \
                 dim {d}"
            )));
        }
        total += dims[d];
    }
    if !skip(first) {
        out_sizes[d] = total;
    }
    Ok((out_sizes, offsets))
}

/// x viewed as `[outer, D, inner]` around dim `d` (`None`: flattened, D = numel; a rank-0
/// x is one element).
fn fold_dim(dims: &[usize], d: Option<usize>) -> (usize, usize, usize) {
    match d {
        Some(d) if d < dims.len() => (
            dims[..d].iter().product(),
            dims[d],
            dims[d + 1..].iter().product(),
        ),
        _ => (1, dims.iter().product(), 1),
    }
}

fn build_argmax(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_arg_reduce(g, call, "argmax")
}

fn build_argmin(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_arg_reduce(g, call, "argmin")
}

/// `[x, dim Int|None, keepdim, out int32]`; `op` is `argmax` or `argmin` (the shader prefix).
fn build_arg_reduce(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, op: &'static str) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = match g.value(call.arg(1)?)? {
        GValue::Null => None,
        _ => Some(g.int_arg(call, 1)?),
    };
    let keepdim = g.int_arg(call, 2)? != 0;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let dt = s.dtype(x);
    if s.dtype(out) != DataType::Int32 {
        return Err(unsupported(format!(
            "{what}: output dtype {} is not supported (int32, the GPU form of int64 indices)",
            s.dtype(out).name()
        )));
    }
    let rank = s.max_dims(x).len();
    // A rank-0 x accepts dim 0 / -1 and has the one element.
    let d = match dim {
        Some(d) => Some(norm_dim(d, rank.max(1), &what)?).filter(|_| rank > 0),
        None => None,
    };
    let wide = crate::ops::data_shader(op, dt, call)?;
    let serial = crate::ops::data_shader(&format!("{op}_serial"), dt, call)?;
    let variants = vec![
        Dispatch::new(wide, [out, x]),
        Dispatch::new(serial, [out, x]),
    ];
    g.dispatch_select(call, variants, move |s| {
        let dims = s.dims(x).to_vec();
        let (outer, n, inner) = fold_dim(&dims, d);
        let lines = outer * inner;
        if n == 0 && lines > 0 {
            return Err(invalid_arg(format!(
                "{what}: {op} over an empty dim (x sizes {dims:?}) has no answer"
            )));
        }
        let od = match d {
            Some(d) => out_dims(
                &dims,
                &(0..rank).map(|i| i == d).collect::<Vec<_>>(),
                keepdim,
            ),
            None if keepdim => vec![1; rank],
            None => Vec::new(),
        };
        s.set_dims(out, od)?;
        to_u32(
            outer.saturating_mul(n).saturating_mul(inner),
            "x element count",
        )?;
        let push = Push::new()
            .u32(to_u32(lines, "outputs")?)
            .u32(to_u32(n, "dim size")?)
            .u32(to_u32(inner.max(1), "inner size")?)
            .u32(0)
            .finish();
        if n >= LANES as usize {
            Ok((
                0,
                Launch {
                    push,
                    global: folded_grid(lines as u64, [LANES, 1, 1], &what)?,
                },
            ))
        } else {
            Ok((
                1,
                Launch {
                    push,
                    global: Global::Linear(lines as u64),
                },
            ))
        }
    })
}

/// `[x, dim, half_to_float, out]`. The tensors' dtypes pick the kernel: equal float dtypes,
/// or fp16 in and fp32 out (half_to_float).
fn build_log_softmax(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = g.int_arg(call, 1)?;
    let half_to_float = g.int_arg(call, 2)? != 0;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let (dx, dout) = (s.dtype(x), s.dtype(out));
    let shader = match (dx, dout) {
        (DataType::Float16, DataType::Float32) => etvk_shaders::ShaderId::LogSoftmaxF16ToF32,
        _ if half_to_float && dx == DataType::Float32 => {
            return Err(invalid_program(format!(
                "{what}: half_to_float needs a float16 input, got float32"
            )))
        }
        _ => float_shader("log_softmax", same_dtype(call, &[dx, dout])?, call)?,
    };
    let rank = s.max_dims(x).len();
    let d = Some(norm_dim(dim, rank.max(1), &what)?).filter(|_| rank > 0);
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let dims = s.dims(x).to_vec();
        let (outer, n, inner) = fold_dim(&dims, d);
        let lines = outer * inner;
        to_u32(
            outer.saturating_mul(n).saturating_mul(inner),
            "x element count",
        )?;
        s.set_dims(out, dims)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(lines, "lines")?)
                .u32(to_u32(n, "dim size")?)
                .u32(to_u32(inner.max(1), "inner size")?)
                .u32(0)
                .finish(),
            global: folded_grid(lines as u64, [LANES, 1, 1], &what)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_merges_neighbours_and_drops_ones() {
        // [2, 3, 1, 4, 5] reducing dims 1 and 3: 1 drops, then [2 | 3 | 4 r | 5 ] ...
        let p = plan_reduce(&[2, 3, 1, 4, 5], &[false, true, true, true, false], "t").unwrap();
        assert_eq!(p.dims, vec![2, 12, 5]);
        assert_eq!(p.mask, 0b010);
        assert_eq!((p.outs, p.r), (10, 12));
        let all = plan_reduce(&[3, 4], &[true, true], "t").unwrap();
        assert_eq!(
            (all.dims.clone(), all.mask, all.outs, all.r),
            (vec![12], 1, 1, 12)
        );
        let scalar = plan_reduce(&[], &[], "t").unwrap();
        assert_eq!((scalar.outs, scalar.r, scalar.dims.len()), (1, 1, 0));
    }

    #[test]
    fn reduced_dims_rules() {
        assert_eq!(reduced_dims(&[], 3, "t").unwrap(), vec![true; 3]);
        assert_eq!(
            reduced_dims(&[-1, 0], 3, "t").unwrap(),
            vec![true, false, true]
        );
        let e = reduced_dims(&[1, -2], 3, "op x").unwrap_err();
        assert!(e.message.contains("more than once"), "{}", e.message);
        assert!(reduced_dims(&[3], 3, "t").is_err());
        assert_eq!(reduced_dims(&[0], 0, "t").unwrap(), Vec::<bool>::new());
    }

    #[test]
    fn out_dims_keepdim() {
        let r = [true, false, true];
        assert_eq!(out_dims(&[2, 3, 4], &r, true), vec![1, 3, 1]);
        assert_eq!(out_dims(&[2, 3, 4], &r, false), vec![3]);
    }
}
