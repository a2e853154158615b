//! Shape ops: `aten.view_copy.default` (`[x, sizes, out]`), `aten.permute_copy.default`
//! (`[x, dims, out]`), `aten.clone.default` (`[x, memory_format, out]`) and `sym_size.int`
//! (`[x, dim, out SymInt]`).
//!
//! Outputs are real copies, never aliases of the input: the exporter's memory planner gives
//! input and output their own memory objects and may reuse the input's object for another
//! tensor while the output is still live.

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{internal, invalid_arg, invalid_program, unsupported};
use crate::graph::{contiguous_strides, to_u32, Global, Launch, Push, Shapes, TensorId};
use crate::ops::same_dtype;
use crate::registry::{OpBuildFn, OpEntry, Registry};

/// Dtypes the `copy` / `permute` shaders have variants for.
const COPY_DTYPES: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];
/// Rank limit of the `permute` shader's push constants.
const MAX_RANK: usize = 8;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let entries: [(&'static str, OpBuildFn, &'static [DataType], &'static str); 4] = [
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
            "sym_size.int",
            build_sym_size,
            &[],
            "SymInt = x.size(dim), updated on every resize (host only)",
        ),
    ];
    for (name, build, dtypes, note) in entries {
        r.register(OpEntry {
            name,
            build,
            dtypes,
            dynamic_shapes: true,
            note,
        })?;
    }
    Ok(())
}

/// The `{prefix}_{f32|f16|i32}` variant for `dt`, or `Unsupported` naming the op.
fn copy_shader(prefix: &str, dt: DataType, call: &OpCall) -> Result<ShaderId> {
    let tag = match dt {
        DataType::Float32 => "f32",
        DataType::Float16 => "f16",
        DataType::Int32 => "i32",
        _ => {
            return Err(unsupported(format!(
                "{}: dtype {} is not supported (float32, float16, int32 are)",
                call.what(),
                dt.name()
            )))
        }
    };
    let name = format!("{prefix}_{tag}");
    ShaderId::from_name(&name).ok_or_else(|| {
        internal(format!(
            "{}: shader variant {name} missing from the manifest",
            call.what()
        ))
    })
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
    let shader = copy_shader("copy", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let od = out_dims(s)?;
        let numel = s.numel(x);
        if od.iter().product::<usize>() != numel {
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
enum SizeItem {
    Lit(i64),
    Sym(usize),
}

/// The `sizes` arg: an `IntList` of literal ints, or a `ValueList` of Int / SymInt value ids.
fn size_items(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<Vec<SizeItem>> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::IntList(l) => Ok(l.iter().map(|&x| SizeItem::Lit(x)).collect()),
        GValue::ValueList(ids) => ids
            .iter()
            .map(|&id| match g.value(id)? {
                GValue::Int(x) => Ok(SizeItem::Lit(*x)),
                GValue::SymInt => Ok(SizeItem::Sym(id)),
                other => Err(invalid_program(format!(
                    "{} arg {i}: list item value {id} is {}, expected Int or SymInt",
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

/// Normalize a possibly negative dim against `rank`.
fn norm_dim(d: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    let n = if d < 0 { d + r } else { d };
    if n < 0 || n >= r {
        return Err(invalid_program(format!(
            "{what}: dim {d} out of range for rank {rank}"
        )));
    }
    Ok(n as usize)
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
    let shader = copy_shader("permute", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let xs = contiguous_strides(&xd);
        let od: Vec<usize> = perm.iter().map(|&p| xd[p]).collect();
        let os: Vec<usize> = perm.iter().map(|&p| xs[p]).collect();
        let numel: usize = od.iter().product();
        // The shader takes dims innermost first.
        let rev = |v: &[usize]| -> Result<Vec<u32>> {
            v.iter().rev().map(|&x| to_u32(x, "size")).collect()
        };
        let push = Push::new()
            .u32(to_u32(numel, "numel")?)
            .u32(rank as u32)
            .u32(0)
            .u32(0)
            .u32_array(&rev(&od)?, MAX_RANK, 1)
            .u32_array(&rev(&os)?, MAX_RANK, 0)
            .finish();
        s.set_dims(out, od)?;
        Ok(Launch {
            push,
            global: Global::Linear(numel as u64),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
