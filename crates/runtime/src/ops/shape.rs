//! Shape ops: `aten.view_copy.default` (`[x, sizes, out]`), `aten.permute_copy.default`
//! (`[x, dims, out]`), `aten.clone.default` (`[x, memory_format, out]`),
//! `aten.squeeze_copy.dims` (`[x, dims, out]`), `aten.unsqueeze_copy.default`
//! (`[x, dim, out]`), `aten.slice_copy.Tensor` (`[x, dim, start, end, step, out]`),
//! `aten.split_with_sizes_copy.default` (`[x, split_sizes, dim, out ValueList]`, one slice
//! per output) and `sym_size.int` (`[x, dim, out SymInt]`).
//! `aten.expand_copy.default` (`[x, size, implicit, out]`) broadcasts through the `permute`
//! shader with stride 0 on new and size-1 dims.
//!
//! Outputs are real copies, never aliases of the input: the exporter's memory planner gives
//! input and output their own memory objects and may reuse the input's object for another
//! tensor while the output is still live.

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{contiguous_strides, to_u32, Global, Launch, Push, Shapes, TensorId};
use crate::ops::{data_shader, norm_dim, same_dtype};
use crate::registry::{OpBuildFn, Registry};

/// Dtypes the `copy` / `permute` shaders have variants for.
const COPY_DTYPES: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];
/// `slice_copy` also moves one-byte elements (export_llm's causal mask is a bool tensor).
const SLICE_DTYPES: &[DataType] = &[
    DataType::Float32,
    DataType::Float16,
    DataType::Int32,
    DataType::Bool,
    DataType::Int8,
    DataType::Uint8,
];
/// Rank limit of the `permute` shader's push constants.
const MAX_RANK: usize = 8;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let entries: [(&'static str, OpBuildFn, &'static [DataType], &'static str); 7] = [
        (
            "aten.view_copy.default",
            build_view_copy,
            COPY_DTYPES,
            "reshape copy; sizes may hold one -1 and SymInts (ValueList)",
        ),
        (
            "aten.permute_copy.default",
            build_permute_copy,
            COPY_DTYPES,
            "transposed copy, rank <= 8, negative dims allowed",
        ),
        (
            "aten.clone.default",
            build_clone,
            COPY_DTYPES,
            "contiguous copy; memory_format must be None",
        ),
        (
            "aten.squeeze_copy.dims",
            build_squeeze_copy,
            COPY_DTYPES,
            "copy dropping the listed dims whose serialized size is 1 (others kept, as PyTorch)",
        ),
        (
            "aten.unsqueeze_copy.default",
            build_unsqueeze_copy,
            COPY_DTYPES,
            "copy with a size-1 dim inserted at dim (negative allowed, -1 appends)",
        ),
        (
            "aten.slice_copy.Tensor",
            build_slice_copy,
            SLICE_DTYPES,
            "strided slice copy along one dim; start/end Int, SymInt or None, clamped as PyTorch; step >= 1; one-byte elements (bool masks) four to a word",
        ),
        (
            "sym_size.int",
            build_sym_size,
            &[],
            "SymInt = x.size(dim), updated on every resize (host only)",
        ),
    ];
    for (name, build, dtypes, note) in entries {
        r.register_dynamic(dtypes, &[(name, build, note)])?;
    }
    r.register_dynamic(
        SLICE_DTYPES,
        &[(
            "aten.split_with_sizes_copy.default",
            build_split_with_sizes_copy,
            "copies of consecutive runs of dim (negative ok) of the given sizes (Int or SymInt; they must sum to the dim's size) into the ValueList's tensors; torch.split with an int is exported as this op too",
        )],
    )?;
    r.register_dynamic(
        COPY_DTYPES,
        &[(
            "aten.expand_copy.default",
            build_expand_copy,
            "broadcast copy (PyTorch expand): new leading dims, size-1 dims broadcast, -1 keeps a dim; sizes may hold SymInts; rank <= 8",
        )],
    )?;
    Ok(())
}

/// A contiguous copy of `x` into `out`, whose sizes `out_dims` computes from the shapes at
/// every resize (it must keep the element count).
fn copy_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    out: TensorId,
    out_dims: impl Fn(&Shapes) -> Result<Vec<usize>> + Send + Sync + 'static,
) -> Result<()> {
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let shader = data_shader("copy", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let od = out_dims(s)?;
        let numel = s.numel(x);
        if crate::graph::checked_numel(&od) != Some(numel) {
            return Err(invalid_arg(format!(
                "output sizes {od:?} do not hold the input's {numel} elements (input sizes {:?})",
                s.dims(x)
            )));
        }
        s.set_dims(out, od)?;
        Ok(Launch {
            push: Push::new().u32(to_u32(numel, "numel")?).finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

/// One requested size of `view_copy`: a literal, or a SymInt read at every resize.
#[derive(Debug, Clone, Copy)]
pub(crate) enum SizeItem {
    Lit(i64),
    Sym(usize),
}

/// The `sizes` arg: an `IntList` of literal ints, or a `ValueList` of Int / SymInt value ids.
pub(crate) fn size_items(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
) -> Result<Vec<SizeItem>> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::IntList(l) => Ok(l.iter().map(|&x| SizeItem::Lit(x)).collect()),
        GValue::ValueList(ids) => ids
            .iter()
            .map(|&id| match g.value(id)? {
                GValue::Int(x) => Ok(SizeItem::Lit(*x)),
                GValue::SymInt => Ok(SizeItem::Sym(id)),
                other => Err(invalid_program(format!(
                    "{} arg {i}: size item value {id} is {}, expected Int or SymInt",
                    call.what(),
                    gvalue_kind(other)
                ))),
            })
            .collect(),
        other => Err(invalid_program(format!(
            "{} arg {i} (value {v}): expected an IntList or ValueList of sizes, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// Resolve `items` against the current SymInt values, inferring one -1 from `numel`.
fn resolve_sizes(items: &[SizeItem], numel: usize, s: &Shapes) -> Result<Vec<usize>> {
    let mut raw = Vec::with_capacity(items.len());
    for it in items {
        raw.push(match *it {
            SizeItem::Lit(x) => x,
            SizeItem::Sym(id) => s.scalar(id)? as i64,
        });
    }
    let mut infer = None;
    let mut known = 1usize;
    for (d, &x) in raw.iter().enumerate() {
        if x == -1 {
            if infer.replace(d).is_some() {
                return Err(invalid_arg(format!("sizes {raw:?} hold more than one -1")));
            }
        } else if x < 0 {
            return Err(invalid_arg(format!("sizes {raw:?}: size {x} at dim {d}")));
        } else {
            known = known.saturating_mul(x as usize);
        }
    }
    let mut out: Vec<usize> = raw.iter().map(|&x| x.max(0) as usize).collect();
    if let Some(d) = infer {
        if known == 0 || !numel.is_multiple_of(known) {
            return Err(invalid_arg(format!(
                "sizes {raw:?}: -1 cannot be inferred for {numel} elements"
            )));
        }
        out[d] = numel / known;
    }
    Ok(out)
}

fn build_view_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let x = g.tensor_or_prepack(call, 0)?;
    let items = size_items(g, call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    copy_dispatch(g, call, x, out, move |s| {
        resolve_sizes(&items, s.numel(x), s)
    })
}

fn build_clone(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    // `[x, out]` or `[x, memory_format, out]`; the runtime's tensors are always
    // contiguous, so only the default (None) / contiguous format is meaningful.
    if call.args.len() != 2 {
        call.expect_args(3)?;
        let v = call.arg(1)?;
        if !matches!(g.value(v)?, GValue::Null | GValue::Int(0) | GValue::Int(1)) {
            return Err(unsupported(format!(
                "{} arg 1 (value {v}): memory_format {} is not supported (None only)",
                call.what(),
                gvalue_kind(g.value(v)?)
            )));
        }
    }
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    copy_dispatch(g, call, x, out, move |s| Ok(s.dims(x).to_vec()))
}

fn build_permute_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let x = g.tensor_or_prepack(call, 0)?;
    let dims = g.int_list_arg(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = s.max_dims(x).len();
    let what = call.what();
    if dims.len() != rank {
        return Err(invalid_program(format!(
            "{what}: dims {dims:?} do not match the input rank {rank}"
        )));
    }
    if rank > MAX_RANK {
        return Err(unsupported(format!(
            "{what}: rank {rank} exceeds {MAX_RANK}"
        )));
    }
    let mut perm = Vec::with_capacity(rank);
    for &d in &dims {
        let n = norm_dim(d, rank, &what)?;
        if perm.contains(&n) {
            return Err(invalid_program(format!(
                "{what}: dims {dims:?} repeat dim {n}"
            )));
        }
        perm.push(n);
    }
    let shader = data_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let xs = contiguous_strides(&xd);
        let od: Vec<usize> = perm.iter().map(|&p| xd[p]).collect();
        let os: Vec<usize> = perm.iter().map(|&p| xs[p]).collect();
        let numel: usize = od.iter().product();
        let launch = strided_copy_launch(numel, rank, &od, &os)?;
        s.set_dims(out, od)?;
        Ok(launch)
    })
}

fn build_squeeze_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dims = g.int_list_arg(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    let max = g.shapes().max_dims(x).to_vec();
    let rank = max.len();
    // The output rank is fixed by the program, so which dims go is decided once, from the
    // serialized (upper-bound) sizes: a listed dim of size 1 is dropped, others stay.
    let mut drop = vec![false; rank];
    for &d in &dims {
        // A rank-0 tensor accepts dim 0 / -1 and stays as it is.
        if rank == 0 {
            norm_dim(d, 1, &what)?;
            continue;
        }
        let n = norm_dim(d, rank, &what)?;
        drop[n] = max[n] == 1;
    }
    let out_rank = g.shapes().max_dims(out).len();
    let kept = drop.iter().filter(|d| !**d).count();
    if kept != out_rank {
        return Err(invalid_program(format!(
            "{what}: squeezing dims {dims:?} of sizes {max:?} leaves rank {kept}, but the output has rank {out_rank}"
        )));
    }
    copy_dispatch(g, call, x, out, move |s| {
        let xd = s.dims(x);
        Ok(xd
            .iter()
            .zip(&drop)
            .filter(|(_, d)| !**d)
            .map(|(&n, _)| n)
            .collect())
    })
}

fn build_unsqueeze_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = g.int_arg(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    // The new dim indexes the output, which has one more dim than x.
    let d = norm_dim(dim, g.shapes().max_dims(x).len() + 1, &what)?;
    copy_dispatch(g, call, x, out, move |s| {
        let mut od = s.dims(x).to_vec();
        od.insert(d, 1);
        Ok(od)
    })
}

/// A `slice_copy` bound: a literal, None (the default), or a SymInt read at every resize.
#[derive(Debug, Clone, Copy)]
enum Bound {
    Lit(i64),
    Default,
    Sym(usize),
}

fn bound_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<Bound> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Int(x) => Ok(Bound::Lit(*x)),
        GValue::Null => Ok(Bound::Default),
        GValue::SymInt => Ok(Bound::Sym(v)),
        other => Err(invalid_program(format!(
            "{} arg {i} (value {v}): expected an Int, SymInt or None bound, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// PyTorch's slice clamping: negative bounds count from the end, then start is clamped to
/// `[0, size]` and end to `[start, size]`. Returns `(start, output length)`.
fn slice_range(start: Option<i64>, end: Option<i64>, step: i64, size: usize) -> (usize, usize) {
    let n = size as i64;
    let wrap = |b: i64| if b < 0 { b + n } else { b };
    let start = wrap(start.unwrap_or(0)).clamp(0, n);
    let end = wrap(end.unwrap_or(n)).clamp(start, n);
    let len = (end - start + step - 1) / step;
    (start as usize, len as usize)
}

fn build_slice_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = g.int_arg(call, 1)?;
    let start = bound_arg(g, call, 2)?;
    let end = bound_arg(g, call, 3)?;
    let step = match g.value(call.arg(4)?)? {
        GValue::Null => 1,
        _ => g.int_arg(call, 4)?,
    };
    let out = g.tensor_arg(call, 5)?;
    if step < 1 {
        return Err(unsupported(format!(
            "{what}: step {step} is not supported (step must be >= 1)"
        )));
    }
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = s.max_dims(x).len();
    let d = norm_dim(dim, rank, &what)?;
    // One-byte elements (bool masks, int8) go four to a word.
    let bytes = dt.size_bytes() == 1;
    let shader = if bytes {
        ShaderId::SliceU8
    } else {
        data_shader("slice", dt, call)?
    };
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let resolve = |b: Bound| -> Result<Option<i64>> {
            Ok(match b {
                Bound::Lit(v) => Some(v),
                Bound::Default => None,
                Bound::Sym(id) => Some(s.scalar(id)? as i64),
            })
        };
        let (st, en) = (resolve(start)?, resolve(end)?);
        let xd = s.dims(x).to_vec();
        let (first, len) = slice_range(st, en, step, xd[d]);
        let mut od = xd.clone();
        od[d] = len;
        s.set_dims(out, od)?;
        slice_launch(&xd, d, first, len, step as usize, bytes)
    })
}

/// Launch of the `slice` shaders: `len` entries of dim `d` of an input of sizes `xd`, from
/// `first` in steps of `step` (`bytes`: one-byte elements, four per invocation).
fn slice_launch(
    xd: &[usize],
    d: usize,
    first: usize,
    len: usize,
    step: usize,
    bytes: bool,
) -> Result<Launch> {
    let inner: usize = xd[d + 1..].iter().product();
    let outer: usize = xd[..d].iter().product();
    let numel = outer * len * inner;
    Ok(Launch {
        push: Push::new()
            .u32(to_u32(numel, "numel")?)
            .u32(to_u32(inner.max(1), "inner")?)
            .u32(to_u32(len.max(1), "slice length")?)
            .u32(to_u32(xd[d], "dim size")?)
            .u32(to_u32(first, "start")?)
            .u32(to_u32(step, "step")?)
            .finish(),
        global: Global::Linear(if bytes {
            numel.div_ceil(4) as u64
        } else {
            numel as u64
        }),
    })
}

/// `[x, split_sizes, dim, out ValueList]`: one `slice` dispatch per output, each a
/// contiguous run of `split_sizes[k]` entries of `dim`. The sizes (literals or SymInts) must
/// sum to x's size along `dim` at every resize.
fn build_split_with_sizes_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let items = size_items(g, call, 1)?;
    let dim = g.int_arg(call, 2)?;
    let ov = call.arg(3)?;
    let ids = match g.value(ov)? {
        GValue::ValueList(ids) => ids.clone(),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 3 (value {ov}): expected a ValueList of output tensors, got {}",
                gvalue_kind(other)
            )))
        }
    };
    if ids.len() != items.len() {
        return Err(invalid_program(format!(
            "{what}: {} split sizes but {} output tensors",
            items.len(),
            ids.len()
        )));
    }
    for it in &items {
        if let SizeItem::Lit(n) = *it {
            if n < 0 {
                return Err(invalid_program(format!(
                    "{what} arg 1: split size {n} is negative"
                )));
            }
        }
    }
    let mut outs = Vec::with_capacity(ids.len());
    for (k, &id) in ids.iter().enumerate() {
        outs.push(match g.value(id)? {
            GValue::Tensor(t) => *t,
            other => {
                return Err(invalid_program(format!(
                    "{what} arg 3: output item {k} (value {id}) is {}, expected a tensor",
                    gvalue_kind(other)
                )))
            }
        });
    }
    let s = g.shapes();
    let mut dts = vec![s.dtype(x)];
    dts.extend(outs.iter().map(|&t| s.dtype(t)));
    let dt = same_dtype(call, &dts)?;
    let rank = s.max_dims(x).len();
    let d = norm_dim(dim, rank, &what)?;
    for (&o, &id) in outs.iter().zip(&ids) {
        if s.max_dims(o).len() != rank {
            return Err(invalid_program(format!(
                "{what}: output value {id} has rank {}, the input rank {rank}",
                s.max_dims(o).len()
            )));
        }
    }
    let bytes = dt.size_bytes() == 1;
    let shader = if bytes {
        ShaderId::SliceU8
    } else {
        data_shader("slice", dt, call)?
    };
    let items = std::sync::Arc::new(items);
    for (k, &out) in outs.iter().enumerate() {
        let items = items.clone();
        g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
            let xd = s.dims(x).to_vec();
            let mut sizes = Vec::with_capacity(items.len());
            for it in items.iter() {
                let n = match *it {
                    SizeItem::Lit(v) => v,
                    SizeItem::Sym(id) => s.scalar(id)? as i64,
                };
                sizes.push(usize::try_from(n).map_err(|_| {
                    invalid_arg(format!("split size {n} is negative"))
                })?);
            }
            let total = sizes
                .iter()
                .try_fold(0usize, |a, &n| a.checked_add(n))
                .ok_or_else(|| invalid_arg(format!("split sizes {sizes:?} overflow")))?;
            if total != xd[d] {
                return Err(invalid_arg(format!(
                    "split sizes {sizes:?} sum to {total}, but the input sizes {xd:?} have {} along dim {d}",
                    xd[d]
                )));
            }
            let first: usize = sizes[..k].iter().sum();
            let mut od = xd.clone();
            od[d] = sizes[k];
            s.set_dims(out, od)?;
            slice_launch(&xd, d, first, sizes[k], 1, bytes)
        })?;
    }
    Ok(())
}

/// Launch of the `permute` shader: `numel` outputs of sizes `od`, read from the input at
/// strides `os` (per output dim; 0 broadcasts), rank <= MAX_RANK. The shader takes dims
/// innermost first.
fn strided_copy_launch(numel: usize, rank: usize, od: &[usize], os: &[usize]) -> Result<Launch> {
    let rev =
        |v: &[usize]| -> Result<Vec<u32>> { v.iter().rev().map(|&x| to_u32(x, "size")).collect() };
    Ok(Launch {
        push: Push::new()
            .u32(to_u32(numel, "numel")?)
            .u32(rank as u32)
            .u32(0)
            .u32(0)
            .u32_array(&rev(od)?, MAX_RANK, 1)
            .u32_array(&rev(os)?, MAX_RANK, 0)
            .finish(),
        global: Global::Linear(numel as u64),
    })
}

fn build_sym_size(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let dim = g.int_arg(call, 1)?;
    let out_v = call.arg(2)?;
    if !matches!(g.value(out_v)?, GValue::SymInt) {
        return Err(invalid_program(format!(
            "{what} arg 2 (value {out_v}): expected a SymInt, got {}",
            gvalue_kind(g.value(out_v)?)
        )));
    }
    let xv = call.arg(0)?;
    match g.value(xv)?.clone() {
        GValue::Tensor(x) => {
            let d = norm_dim(dim, g.shapes().max_dims(x).len(), &what)?;
            // The serialized SymInt value is a placeholder (0); this step sets the real one
            // at build and after every resize, before later ops' resize functions read it.
            g.host_step(call, move |s| {
                let size = s.dims(x)[d];
                s.set_scalar(out_v, size as f64)
            })
        }
        // A constant never resizes: its size is fixed once.
        GValue::TensorRef(c) => {
            let d = norm_dim(dim, c.dims.len(), &what)?;
            let size = c.dims[d] as f64;
            g.host_step(call, move |s| s.set_scalar(out_v, size))
        }
        other => Err(invalid_program(format!(
            "{what} arg 0 (value {xv}): expected a tensor, got {}",
            gvalue_kind(&other)
        ))),
    }
}

/// PyTorch `expand` of sizes `xd` to `want` (`-1` keeps an existing dim): the output sizes
/// and, per output dim, x's element stride (0 where the dim is new or broadcast).
fn expand_plan(xd: &[usize], want: &[i64]) -> Result<(Vec<usize>, Vec<usize>)> {
    if want.len() < xd.len() {
        return Err(invalid_arg(format!(
            "the number of sizes {want:?} must be at least the input rank {} (sizes {xd:?})",
            xd.len()
        )));
    }
    let off = want.len() - xd.len();
    let xs = contiguous_strides(xd);
    let mut od = Vec::with_capacity(want.len());
    let mut os = Vec::with_capacity(want.len());
    for (i, &w) in want.iter().enumerate() {
        if i < off {
            if w < 0 {
                return Err(invalid_arg(format!(
                    "size {w} for the new leading dim {i} of {want:?}: new dims need a size >= 0"
                )));
            }
            od.push(w as usize);
            os.push(0);
            continue;
        }
        let n = xd[i - off];
        let size = match w {
            -1 => n,
            w if w >= 0 && (w as usize == n || n == 1) => w as usize,
            _ => {
                return Err(invalid_arg(format!(
                    "input sizes {xd:?} cannot be expanded to {want:?}: dim {i} has size {n} \
                     (only size-1 dims broadcast)"
                )))
            }
        };
        od.push(size);
        os.push(if n == size { xs[i - off] } else { 0 });
    }
    Ok((od, os))
}

/// `[x, size, implicit, out]`: a gather through the `permute` shader with stride 0 on the
/// broadcast dims.
fn build_expand_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let items = size_items(g, call, 1)?;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = items.len();
    if s.max_dims(out).len() != rank {
        return Err(invalid_program(format!(
            "{what}: size has {rank} entries but the output has rank {}",
            s.max_dims(out).len()
        )));
    }
    if rank > MAX_RANK {
        return Err(unsupported(format!(
            "{what}: rank {rank} exceeds {MAX_RANK}"
        )));
    }
    let shader = data_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let mut want = Vec::with_capacity(items.len());
        for it in &items {
            want.push(match *it {
                SizeItem::Lit(v) => v,
                SizeItem::Sym(id) => s.scalar(id)? as i64,
            });
        }
        let (od, os) = expand_plan(s.dims(x), &want)?;
        let numel = crate::graph::checked_numel(&od)
            .ok_or_else(|| invalid_arg(format!("{what}: output sizes {od:?} overflow")))?;
        let launch = strided_copy_launch(numel, rank, &od, &os)?;
        s.set_dims(out, od)?;
        Ok(launch)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expand_follows_pytorch() {
        let (od, os) = expand_plan(&[3, 1], &[2, -1, 4]).unwrap();
        assert_eq!(od, vec![2, 3, 4]);
        assert_eq!(os, vec![0, 1, 0]);
        let (od, os) = expand_plan(&[1], &[0]).unwrap();
        assert_eq!((od, os), (vec![0], vec![0]));
        assert!(expand_plan(&[3], &[4]).is_err());
        assert!(expand_plan(&[3], &[-1, 3]).is_err());
        assert!(expand_plan(&[2, 3], &[3]).is_err());
    }

    #[test]
    fn sizes_infer_minus_one() {
        let s = Shapes::default();
        let items = [SizeItem::Lit(2), SizeItem::Lit(-1), SizeItem::Lit(4)];
        assert_eq!(resolve_sizes(&items, 48, &s).unwrap(), vec![2, 6, 4]);
        assert!(resolve_sizes(&items, 50, &s).is_err());
        let two = [SizeItem::Lit(-1), SizeItem::Lit(-1)];
        assert!(resolve_sizes(&two, 4, &s).is_err());
        assert_eq!(norm_dim(-1, 4, "t").unwrap(), 3);
        assert!(norm_dim(4, 4, "t").is_err());
        assert!(norm_dim(-5, 4, "t").is_err());
    }

    #[test]
    fn slice_clamps_like_pytorch() {
        assert_eq!(slice_range(None, None, 1, 7), (0, 7));
        assert_eq!(slice_range(Some(-3), None, 1, 7), (4, 3));
        assert_eq!(slice_range(Some(2), Some(100), 2, 7), (2, 3));
        assert_eq!(slice_range(Some(5), Some(2), 1, 7), (5, 0));
        assert_eq!(slice_range(Some(-100), Some(-1), 3, 7), (0, 2));
        assert_eq!(slice_range(Some(9), None, 1, 7), (7, 0));
    }
}
