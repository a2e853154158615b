//! Shape ops: `aten.view_copy.default` (`[x, sizes, out]`), `aten.permute_copy.default`
//! (`[x, dims, out]`), `aten.clone.default` (`[x, memory_format, out]`),
//! `aten.squeeze_copy.dims` (`[x, dims, out]`), `aten.unsqueeze_copy.default`
//! (`[x, dim, out]`), `aten.slice_copy.Tensor` (`[x, dim, start, end, step, out]`),
//! `aten.split_with_sizes_copy.default` (`[x, split_sizes, dim, out ValueList]`, one slice
//! per output) and `sym_size.int` (`[x, dim, out SymInt]`).
//! `aten.expand_copy.default` (`[x, size, implicit, out]`) broadcasts through the `permute`
//! shader with stride 0 on new and size-1 dims.
//!
//! The `permute` shader is a general strided gather (per output dim an input stride, which
//! may be 0 or negative, plus a start offset); besides the ops above it serves
//! `aten.permute.default` (`[x, dims, out]`, as permute_copy), `aten.t_copy.default`
//! (`[x, out]`), `aten.flip.default` (`[x, dims, out]`), `aten.repeat.default` (`[x,
//! repeats, out]`: each dim d becomes a (repeat, size) pair of strides (0, stride)),
//! `aten.unfold_copy.default` (`[x, dimension, size, step, out]`) and `aten.copy.default`
//! (`[self, src, non_blocking, out]`: src broadcast to self's sizes). Contiguous copies
//! also serve `aten.alias_copy.default` (`[x, out]`) and
//! `dim_order_ops._clone_dim_order.default` (`[x, non_blocking, dim_order, out]`).
//! executorch 1.5.1 never hands these last three to the runtime (the Vulkan preprocess
//! removes them as redundant), nor `t_copy` (decomposed to permute_copy) or `permute`
//! (made permute_copy by to_edge); the argument lists are the exporter's serialization of
//! their schemas, checked with the preprocess passes disabled.
//!
//! The assertion ops `aten._assert_scalar.default` (`[cond, msg]`) and
//! `aten.sym_constrain_range_for_size.default` (`[size, min, max]`; an output value, if
//! one is serialized, is ignored) compute nothing on the GPU: a literal that fails is a
//! load error, a SymInt is checked by a host step at every resize (an execute error when
//! it fails). The exporter removes both before serializing.
//!
//! Data-movement ops take one-byte elements (bool, int8, uint8) too, four to a word
//! (`*_u8` shader variants).
//!
//! The exporter's memory planner gives input and output their own memory objects and may
//! reuse the input's object for another tensor while the output is still live, so an output
//! never takes the input's object; contiguous copies (view, squeeze, unsqueeze, clone,
//! alias) of intermediates instead move both into an object of their own and launch
//! nothing, where no other node can tell (`storage.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{internal, invalid_arg, invalid_program, unsupported};
use crate::graph::{contiguous_strides, to_u32, Binding, Global, Launch, Push, Shapes, TensorId};
use crate::ops::{data_shader, norm_dim, same_dtype};
use crate::registry::{OpBuildFn, Registry};

/// Dtypes the `copy` / `permute` shaders have variants for (one-byte elements through the
/// `_u8` variants).
const COPY_DTYPES: &[DataType] = SLICE_DTYPES;
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

/// The `{prefix}_u8` variant for one-byte dtypes (four elements a word), else the
/// `{prefix}_{f32|f16|i32}` one; `Unsupported` naming the op for other dtypes.
pub(crate) fn move_shader(prefix: &str, dt: DataType, call: &OpCall<'_>) -> Result<ShaderId> {
    if dt.size_bytes() != 1 {
        return data_shader(prefix, dt, call);
    }
    let name = format!("{prefix}_u8");
    ShaderId::from_name(&name).ok_or_else(|| {
        internal(format!(
            "{}: shader variant {name} missing from the manifest",
            call.what()
        ))
    })
}

/// The global size of a data-movement dispatch over `numel` elements of `dt` (one-byte
/// elements: one invocation per word of four).
pub(crate) fn move_global(numel: usize, dt: DataType) -> Global {
    if dt.size_bytes() == 1 {
        Global::Linear(numel.div_ceil(4) as u64)
    } else {
        Global::Linear(numel as u64)
    }
}

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
        &[
            (
                "aten.permute.default",
                build_permute_copy as OpBuildFn,
                "as permute_copy: transposed copy, rank <= 8, negative dims allowed",
            ),
            (
                "aten.t_copy.default",
                build_t_copy,
                "2-D transpose; a 0-d or 1-d tensor is copied as it is; rank > 2 is refused",
            ),
            (
                "aten.alias_copy.default",
                build_alias_copy,
                "contiguous copy",
            ),
            (
                "dim_order_ops._clone_dim_order.default",
                build_clone_dim_order,
                "contiguous copy; dim_order must be None or contiguous",
            ),
            (
                "aten.copy.default",
                build_copy,
                "out = src broadcast to self's sizes (only self's sizes are read); dtypes must match",
            ),
            (
                "aten.flip.default",
                build_flip,
                "reversed along the listed dims (negative allowed, none twice); rank <= 8",
            ),
            (
                "aten.repeat.default",
                build_repeat,
                "tiled copy (PyTorch repeat: leading dims added); repeats IntList or ValueList with SymInts",
            ),
            (
                "aten.unfold_copy.default",
                build_unfold_copy,
                "sliding windows: dim -> (n - size) / step + 1 windows, new last dim of size; size > n is an error",
            ),
        ],
    )?;
    r.register_dynamic(
        &[],
        &[
            (
                "aten._assert_scalar.default",
                build_assert_scalar as OpBuildFn,
                "no GPU work: a false literal fails the load, a SymInt condition is checked at every resize (execute error naming the message)",
            ),
            (
                "aten.sym_constrain_range_for_size.default",
                build_sym_constrain_range_for_size,
                "no GPU work: size (Int / SymInt) must lie in [min or 0, max]; checked at load or every resize",
            ),
        ],
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
    let shader = move_shader("copy", dt, call)?;
    // The output may share x's storage instead (storage.rs decides once every op is
    // built); the node then launches nothing.
    let aliased = Arc::new(AtomicBool::new(false));
    g.view_candidates.push(crate::storage::ViewCandidate {
        node: g.nodes.len(),
        x,
        out,
        aliased: aliased.clone(),
    });
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
        let global = if aliased.load(Ordering::Relaxed) {
            Global::Linear(0)
        } else {
            move_global(numel, dt)
        };
        Ok(Launch {
            push: Push::new().u32(to_u32(numel, "numel")?).finish(),
            global,
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
        let format = match g.value(v)? {
            GValue::Double(x) => {
                crate::builder::integral(*x).map_or(GValue::Double(*x), GValue::Int)
            }
            other => other.clone(),
        };
        if !matches!(format, GValue::Null | GValue::Int(0) | GValue::Int(1)) {
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
    let rank = g.shapes().max_dims(x).len();
    let what = call.what();
    if dims.len() != rank {
        return Err(invalid_program(format!(
            "{what}: dims {dims:?} do not match the input rank {rank}"
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
    permute_dispatch(g, call, x, out, perm)
}

/// `out` = x with its dims in the order `perm` (a permutation of x's dims).
fn permute_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    out: TensorId,
    perm: Vec<usize>,
) -> Result<()> {
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = perm.len();
    if rank > MAX_RANK {
        return Err(unsupported(format!(
            "{}: rank {rank} exceeds {MAX_RANK}",
            call.what()
        )));
    }
    let shader = move_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let xs = contiguous_strides(&xd);
        let od: Vec<usize> = perm.iter().map(|&p| xd[p]).collect();
        let os: Vec<i64> = perm.iter().map(|&p| xs[p] as i64).collect();
        let launch = strided_launch(&od, &os, 0, s.numel(x), dt)?;
        s.set_dims(out, od)?;
        Ok(launch)
    })
}

/// `[x, out]`: PyTorch's `t`, for rank <= 2 (a 0-d or 1-d tensor is copied as it is).
fn build_t_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(2)?;
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, 1)?;
    let rank = g.shapes().max_dims(x).len();
    if rank > 2 {
        return Err(invalid_program(format!(
            "{}: t() expects a tensor with <= 2 dims, got rank {rank}",
            call.what()
        )));
    }
    permute_dispatch(g, call, x, out, (0..rank).rev().collect())
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
    // A SymInt start (a decode's position) is read on the GPU from the scalar buffer, so
    // that the launch stays the same from call to call and the execute is not re-recorded.
    let start_slot = match (start, bytes) {
        (Bound::Sym(id), false) => Some(g.scalar_slot(id)?),
        _ => None,
    };
    let dispatch = match start_slot {
        Some(_) => Dispatch::new(
            data_shader("slice_pos", dt, call)?,
            [Binding::Tensor(out), Binding::Tensor(x), Binding::Scalars],
        ),
        None => Dispatch::new(
            if bytes {
                ShaderId::SliceU8
            } else {
                data_shader("slice", dt, call)?
            },
            [out, x],
        ),
    };
    g.dispatch(call, dispatch, move |s| {
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
        // With the start on the GPU the push holds its slot instead.
        slice_launch(
            &xd,
            d,
            start_slot.map_or(first, |v| v as usize),
            len,
            step as usize,
            bytes,
        )
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

/// Launch of the `permute` shaders: an output of sizes `od` whose element at coordinates
/// `c` is input element `offset + sum_d c[d] * os[d]` (a stride may be 0 or negative).
/// Size-1 dims are dropped and runs of dims that step the input contiguously are merged
/// (so `repeat`'s doubled dims fit), and the shader's rank limit applies to what remains.
/// Every source index must lie in `[0, in_numel)`, which the callers' plans guarantee.
fn strided_launch(
    od: &[usize],
    os: &[i64],
    offset: usize,
    in_numel: usize,
    dt: DataType,
) -> Result<Launch> {
    let numel = crate::graph::checked_numel(od)
        .ok_or_else(|| invalid_arg(format!("output sizes {od:?} overflow")))?;
    let mut dims: Vec<(usize, i64)> = Vec::with_capacity(od.len());
    if numel > 0 {
        for (&n, &st) in od.iter().zip(os) {
            if n == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.1 == st.saturating_mul(n as i64) => {
                    last.0 *= n;
                    last.1 = st;
                }
                _ => dims.push((n, st)),
            }
        }
    }
    if dims.len() > MAX_RANK {
        return Err(unsupported(format!(
            "output sizes {od:?} with input strides {os:?} leave {} dims after merging; the \
             strided copy takes at most {MAX_RANK}",
            dims.len()
        )));
    }
    to_u32(in_numel, "input elements")?;
    let sizes = dims
        .iter()
        .rev()
        .map(|&(n, _)| to_u32(n, "size"))
        .collect::<Result<Vec<u32>>>()?;
    // Two's complement: the shader sums mod 2^32, which is exact because every true source
    // index is below in_numel <= u32::MAX.
    let strides: Vec<u32> = dims.iter().rev().map(|&(_, st)| st as u32).collect();
    Ok(Launch {
        push: Push::new()
            .u32(to_u32(numel, "numel")?)
            .u32(dims.len() as u32)
            .u32(to_u32(offset, "offset")?)
            .u32(0)
            .u32_array(&sizes, MAX_RANK, 1)
            .u32_array(&strides, MAX_RANK, 0)
            .finish(),
        global: move_global(numel, dt),
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
    let shader = move_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let mut want = Vec::with_capacity(items.len());
        for it in &items {
            want.push(match *it {
                SizeItem::Lit(v) => v,
                SizeItem::Sym(id) => s.scalar(id)? as i64,
            });
        }
        let (od, os) = expand_plan(s.dims(x), &want)?;
        let os: Vec<i64> = os.iter().map(|&v| v as i64).collect();
        let launch = strided_launch(&od, &os, 0, s.numel(x), dt)?;
        s.set_dims(out, od)?;
        Ok(launch)
    })
}

/// `[x, out]`: a contiguous copy (the exporter's alias_copy of a view).
fn build_alias_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(2)?;
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, 1)?;
    copy_dispatch(g, call, x, out, move |s| Ok(s.dims(x).to_vec()))
}

/// Fail unless arg `i` is a Bool (or None / a 0-1 Int), the form of `non_blocking`.
fn expect_bool_like(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize, role: &str) -> Result<()> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Null | GValue::Bool(_) | GValue::Int(0) | GValue::Int(1) => Ok(()),
        other => Err(invalid_program(format!(
            "{} arg {i} (value {v}): {role} must be a Bool, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// `[x, non_blocking, dim_order, out]`: clone into the contiguous dim order (the only
/// layout of the runtime's tensors; others are refused, as `_to_dim_order_copy` does).
fn build_clone_dim_order(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    expect_bool_like(g, call, 1, "non_blocking")?;
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, 3)?;
    let rank = g.shapes().max_dims(x).len();
    let v = call.arg(2)?;
    match g.value(v)? {
        GValue::Null => {}
        GValue::IntList(order) => {
            let contiguous =
                order.len() == rank && order.iter().enumerate().all(|(i, &d)| d == i as i64);
            if !contiguous {
                return Err(unsupported(format!(
                    "{} arg 2 (value {v}): dim_order {order:?} is not supported (only the contiguous order 0..{rank})",
                    call.what()
                )));
            }
        }
        other => {
            return Err(invalid_program(format!(
                "{} arg 2 (value {v}): expected an IntList dim_order or None, got {}",
                call.what(),
                gvalue_kind(other)
            )))
        }
    }
    copy_dispatch(g, call, x, out, move |s| Ok(s.dims(x).to_vec()))
}

/// `[self, src, non_blocking, out]`: out has self's (current) sizes, filled with src
/// broadcast to them (PyTorch's `copy`; dtypes must match, no conversion). Only self's
/// sizes are read, so a constant self is never uploaded.
fn build_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let sv = call.arg(0)?;
    let (this, fixed, self_dt) = match g.value(sv)? {
        GValue::Tensor(t) => (Some(*t), Vec::new(), g.shapes().dtype(*t)),
        GValue::TensorRef(c) => (None, c.dims.clone(), c.dtype),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 0 (value {sv}): expected a tensor, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let src = g.tensor_or_prepack(call, 1)?;
    expect_bool_like(g, call, 2, "non_blocking")?;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[self_dt, s.dtype(src), s.dtype(out)])?;
    let rank = s.max_dims(out).len();
    let self_rank = this.map_or(fixed.len(), |t| s.max_dims(t).len());
    if self_rank != rank {
        return Err(invalid_program(format!(
            "{what}: self has rank {self_rank} but the output rank {rank}"
        )));
    }
    if s.max_dims(src).len() > rank {
        return Err(invalid_program(format!(
            "{what}: src of rank {} cannot broadcast to self of rank {rank}",
            s.max_dims(src).len()
        )));
    }
    if rank > MAX_RANK {
        return Err(unsupported(format!(
            "{what}: rank {rank} exceeds {MAX_RANK}"
        )));
    }
    let shader = move_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, src]), move |s| {
        let want: Vec<i64> = match this {
            Some(t) => s.dims(t).iter().map(|&n| n as i64).collect(),
            None => fixed.iter().map(|&n| n as i64).collect(),
        };
        let (od, os) = expand_plan(s.dims(src), &want)?;
        let os: Vec<i64> = os.iter().map(|&v| v as i64).collect();
        let launch = strided_launch(&od, &os, 0, s.numel(src), dt)?;
        s.set_dims(out, od)?;
        Ok(launch)
    })
}

/// `[x, dims, out]`: x reversed along each listed dim (negative dims allowed, none twice).
fn build_flip(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dims = g.int_list_arg(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = s.max_dims(x).len();
    if s.max_dims(out).len() != rank {
        return Err(invalid_program(format!(
            "{what}: the output has rank {}, the input rank {rank}",
            s.max_dims(out).len()
        )));
    }
    if rank > MAX_RANK {
        return Err(unsupported(format!(
            "{what}: rank {rank} exceeds {MAX_RANK}"
        )));
    }
    let mut flip = vec![false; rank];
    let mut seen = Vec::with_capacity(dims.len());
    for &d in &dims {
        // A 0-d tensor takes dim 0 / -1 (and stays as it is).
        let n = norm_dim(d, rank.max(1), &what)?;
        if seen.contains(&n) {
            return Err(invalid_program(format!(
                "{what}: dim {n} appears multiple times in the list of dims {dims:?}"
            )));
        }
        seen.push(n);
        if rank > 0 {
            flip[n] = true;
        }
    }
    let shader = move_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let xs = contiguous_strides(&xd);
        let mut offset = 0;
        let mut os = Vec::with_capacity(rank);
        for d in 0..rank {
            if flip[d] && xd[d] > 0 {
                offset += (xd[d] - 1) * xs[d];
                os.push(-(xs[d] as i64));
            } else {
                os.push(xs[d] as i64);
            }
        }
        let launch = strided_launch(&xd, &os, offset, s.numel(x), dt)?;
        s.set_dims(out, xd)?;
        Ok(launch)
    })
}

/// `[x, repeats, out]`: PyTorch's `repeat` (x padded with leading size-1 dims to the
/// number of repeats, each dim tiled). Repeats may be SymInts (re-read at every resize).
/// Each output dim d is the pair (repeat d, x's size d) read with strides (0, x's stride
/// d), which the strided launch merges back where it can.
fn build_repeat(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let items = size_items(g, call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let x_rank = s.max_dims(x).len();
    let rank = items.len();
    if rank < x_rank {
        return Err(invalid_program(format!(
            "{what}: {rank} repeats for an input of rank {x_rank}: the number of repeat dims \
             can not be smaller than the number of dims of the tensor"
        )));
    }
    if s.max_dims(out).len() != rank {
        return Err(invalid_program(format!(
            "{what}: {rank} repeats but the output has rank {}",
            s.max_dims(out).len()
        )));
    }
    for it in &items {
        if let SizeItem::Lit(n) = *it {
            if n < 0 {
                return Err(invalid_program(format!("{what}: repeat {n} is negative")));
            }
        }
    }
    let shader = move_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let xs = contiguous_strides(&xd);
        let off = rank - xd.len();
        let mut od = Vec::with_capacity(rank);
        let mut sizes = Vec::with_capacity(2 * rank);
        let mut strides = Vec::with_capacity(2 * rank);
        for (d, it) in items.iter().enumerate() {
            let r = match *it {
                SizeItem::Lit(v) => v,
                SizeItem::Sym(id) => s.scalar(id)? as i64,
            };
            let r = usize::try_from(r)
                .map_err(|_| invalid_arg(format!("repeat {r} at dim {d} is negative")))?;
            let (n, st) = if d < off {
                (1, 0)
            } else {
                (xd[d - off], xs[d - off])
            };
            od.push(r.checked_mul(n).ok_or_else(|| {
                invalid_arg(format!("repeat {r} of a dim of size {n} overflows"))
            })?);
            sizes.extend([r, n]);
            strides.extend([0, st as i64]);
        }
        let launch = strided_launch(&sizes, &strides, 0, s.numel(x), dt)?;
        s.set_dims(out, od)?;
        Ok(launch)
    })
}

/// `[x, dimension, size, step, out]`: PyTorch's `unfold`: dim `dimension` becomes the
/// number of windows `(n - size) / step + 1`, and a last dim of `size` walks each window.
/// A 0-d x is one element: the output is `[size]`, size 0 or 1.
fn build_unfold_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(5)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = g.int_arg(call, 1)?;
    let size = g.int_arg(call, 2)?;
    let step = g.int_arg(call, 3)?;
    let out = g.tensor_arg(call, 4)?;
    if step < 1 {
        return Err(invalid_program(format!(
            "{what}: step is {step} but must be > 0"
        )));
    }
    let size = usize::try_from(size)
        .map_err(|_| invalid_program(format!("{what}: size is {size} but must be >= 0")))?;
    let step = step as usize;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = s.max_dims(x).len();
    let d = norm_dim(dim, rank.max(1), &what)?;
    let out_rank = if rank == 0 { 1 } else { rank + 1 };
    if s.max_dims(out).len() != out_rank {
        return Err(invalid_program(format!(
            "{what}: the output has rank {}, expected {out_rank} (input rank {rank})",
            s.max_dims(out).len()
        )));
    }
    let shader = move_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let n = if rank == 0 { 1 } else { xd[d] };
        if size > n {
            return Err(invalid_arg(format!(
                "maximum size for tensor at dimension {d} is {n} but size is {size} (input \
                 sizes {xd:?})"
            )));
        }
        let (od, os) = if rank == 0 {
            (vec![size], vec![0i64])
        } else {
            let xs = contiguous_strides(&xd);
            let mut od = xd.clone();
            od[d] = (n - size) / step + 1;
            od.push(size);
            let mut os: Vec<i64> = xs.iter().map(|&v| v as i64).collect();
            os[d] = (xs[d] * step) as i64;
            os.push(xs[d] as i64);
            (od, os)
        };
        let launch = strided_launch(&od, &os, 0, s.numel(x), dt)?;
        s.set_dims(out, od)?;
        Ok(launch)
    })
}

// ---------------------------------------------------------------- assertions

/// An asserted scalar: a literal, or a SymInt read at every resize.
#[derive(Debug, Clone, Copy)]
enum Asserted {
    Lit(f64),
    Sym(usize),
}

impl Asserted {
    fn get(self, s: &Shapes) -> Result<f64> {
        match self {
            Asserted::Lit(x) => Ok(x),
            Asserted::Sym(id) => s.scalar(id),
        }
    }
}

/// Register assertion `check`. Over literals it is decided now (a failure is a load
/// error). Over SymInts it is a host step at every resize; its build-time verdict is not
/// final (a data-dependent SymInt is a placeholder 0 until the first execute), so a
/// build-time failure only forces a resize pass at the first execute, where it counts.
fn assertion_step(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    literal: bool,
    check: impl Fn(&Shapes) -> Result<()> + Send + Sync + 'static,
) -> Result<()> {
    use std::sync::atomic::{AtomicBool, Ordering};
    if literal {
        return check(g.shapes()).map_err(|e| {
            invalid_program(format!(
                "{}: the program asserts a false condition: {}",
                call.what(),
                e.message
            ))
        });
    }
    if check(g.shapes()).is_err() {
        g.deferred_resize = true;
    }
    let armed = std::sync::Arc::new(AtomicBool::new(false));
    let on = armed.clone();
    g.host_step(call, move |s| {
        if on.load(Ordering::Relaxed) {
            check(s)
        } else {
            Ok(())
        }
    })?;
    armed.store(true, Ordering::Relaxed);
    Ok(())
}

/// `[cond, msg]` (`[cond, msg, out]` accepted): fail with `msg` when cond (Bool, Int,
/// Double or SymInt) is zero / false.
fn build_assert_scalar(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    if call.args.len() != 2 {
        call.expect_args(3)?;
    }
    let what = call.what();
    let mv = call.arg(1)?;
    let msg = match g.value(mv)? {
        GValue::String(m) => m.clone(),
        GValue::Null => String::new(),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 1 (value {mv}): assert_msg must be a String, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let cv = call.arg(0)?;
    let cond = match g.value(cv)? {
        GValue::Bool(b) => Asserted::Lit(f64::from(u8::from(*b))),
        GValue::Int(x) => Asserted::Lit(*x as f64),
        GValue::Double(x) => Asserted::Lit(*x),
        GValue::SymInt => Asserted::Sym(cv),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 0 (value {cv}): the condition must be a Bool, Int, Double or SymInt, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let literal = matches!(cond, Asserted::Lit(_));
    assertion_step(g, call, literal, move |s| {
        if cond.get(s)? == 0.0 {
            return Err(invalid_arg(format!(
                "{what}: assertion failed (value {cv} is false): {msg}"
            )));
        }
        Ok(())
    })
}

/// `[size, min, max]` (`[size, min, max, out]` accepted): PyTorch's
/// `sym_constrain_range_for_size`: size (Int or SymInt) must lie in `[min, max]`, min
/// defaulting to 0 and max to unbounded; a max <= 2 is an error.
fn build_sym_constrain_range_for_size(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    if call.args.len() != 3 {
        call.expect_args(4)?;
    }
    let what = call.what();
    let sv = call.arg(0)?;
    let size = match g.value(sv)? {
        GValue::Int(x) => Asserted::Lit(*x as f64),
        GValue::SymInt => Asserted::Sym(sv),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 0 (value {sv}): size must be an Int or SymInt, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let bound = |i: usize| -> Result<Option<i64>> {
        match g.value(call.arg(i)?)? {
            GValue::Null => Ok(None),
            _ => g.int_arg(call, i).map(Some),
        }
    };
    let (min, max) = (bound(1)?, bound(2)?);
    if let Some(m) = max {
        if m <= 2 {
            return Err(invalid_program(format!(
                "{what}: max value to constrain_range_for_size must be greater than 2, got {m}"
            )));
        }
    }
    let lo = min.unwrap_or(0);
    let hi = max.unwrap_or(i64::MAX);
    if hi < lo {
        return Err(invalid_program(format!(
            "{what}: max {hi} must not be below min {lo}"
        )));
    }
    let literal = matches!(size, Asserted::Lit(_));
    assertion_step(g, call, literal, move |s| {
        let v = size.get(s)?;
        if v < lo as f64 || v > hi as f64 {
            return Err(invalid_arg(format!(
                "{what}: invalid value range for {v} between [{lo}, {hi}]"
            )));
        }
        Ok(())
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
    fn strided_launch_drops_and_merges_dims() {
        let words = |l: &Launch| -> Vec<u32> {
            l.push
                .chunks(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        // A contiguous [2, 3, 4] read is one dim of 24.
        let l = strided_launch(&[2, 3, 4], &[12, 4, 1], 0, 24, DataType::Float32).unwrap();
        let w = words(&l);
        assert_eq!((w[0], w[1], w[2]), (24, 1, 0));
        assert_eq!((w[4], w[12]), (24, 1));
        // repeat [2, 3] by [2, 2]: pairs (2, 0) (2, 3) (2, 0) (3, 1) stay four dims,
        // innermost first; one-byte elements launch a word per four.
        let l = strided_launch(&[2, 2, 2, 3], &[0, 3, 0, 1], 0, 6, DataType::Bool).unwrap();
        let w = words(&l);
        assert_eq!((w[0], w[1]), (24, 4));
        assert_eq!(&w[4..8], &[3, 2, 2, 2]);
        assert_eq!(&w[12..16], &[1, 0, 3, 0]);
        assert_eq!(l.global, Global::Linear(6));
        // flip of both dims of [2, 3]: one dim of stride -1 from offset 5.
        let l = strided_launch(&[2, 3], &[-3, -1], 5, 6, DataType::Float32).unwrap();
        let w = words(&l);
        assert_eq!((w[1], w[2], w[4], w[12]), (1, 5, 6, u32::MAX));
        // Size-1 dims vanish; an empty output launches nothing.
        let l = strided_launch(&[1, 5, 1], &[7, 1, 9], 0, 5, DataType::Float32).unwrap();
        assert_eq!(words(&l)[1], 1);
        let l = strided_launch(&[3, 0], &[1, 1], 0, 0, DataType::Float32).unwrap();
        assert_eq!((words(&l)[0], words(&l)[1]), (0, 0));
        // Nine dims that cannot merge are refused.
        let od = [2usize; 9];
        let os: Vec<i64> = (0..9)
            .map(|i| if i % 2 == 0 { 0 } else { 1 << i })
            .collect();
        assert!(strided_launch(&od, &os, 0, 1 << 10, DataType::Float32).is_err());
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
