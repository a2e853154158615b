//! Normalization: `aten.native_layer_norm.default` (`[input, normalized_shape, weight|None,
//! bias|None, eps, out ValueList(out, mean, rstd)]`).
//!
//! The trailing `len(normalized_shape)` dims are normalized: x is viewed as `[R, N]` and the
//! `layer_norm` shader runs one workgroup per row (two-pass mean and biased variance in
//! float). mean / rstd get PyTorch's sizes, `input.shape[:axis] + [1] * len(normalized_shape)`,
//! and are always written, even when the graph does not read them.
//!
//! `aten._native_batch_norm_legit_no_training.default` (`[input, weight|None, bias|None,
//! running_mean, running_var, momentum, eps, out ValueList(out, save_mean, save_rstd)]`):
//! inference batch norm over dim 1 of `[N, C, ...]` with the running statistics, one
//! invocation per element. save_mean / save_rstd are empty (`[0]`), as in PyTorch.
//!
//! `aten.native_group_norm.default` (`[input, weight|None, bias|None, N, C, HxW, group, eps,
//! out ValueList(out, mean, rstd)]`; N and HxW are SymInts in a dynamic export, C and group
//! Ints): x viewed as `[N, C, HxW]`, each of the `N * group` rows of `C / group * HxW`
//! elements normalized by the `group_norm` shader (one workgroup per row, two-pass mean and
//! biased variance in float), weight / bias per channel; mean / rstd sized `[N, group]`.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program};
use crate::graph::{to_u32, Global, Launch, Push, Shapes};
use crate::ops::training::folded_grid;
use crate::ops::{float_shader, same_dtype};
use crate::registry::Registry;

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
/// Local size of the `layer_norm` shader (its `LANES`).
const LANES: u32 = 64;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register_dynamic(
        FLOATS,
        &[
            (
            "aten.native_layer_norm.default",
            build_native_layer_norm,
            "normalize over the trailing len(normalized_shape) dims; weight/bias optional; biased variance, float accumulation; outputs (out, mean, rstd)",
        ),
        (
            "aten._native_batch_norm_legit_no_training.default",
            build_batch_norm_no_training,
            "(x - running_mean[c]) / sqrt(running_var[c] + eps) * weight[c] + bias[c] over dim 1 of x [N, C, ...]; weight/bias optional; save_mean / save_rstd outputs empty",
        ),
        (
            "aten.native_group_norm.default",
            build_native_group_norm,
            "x [N, C, *] normalized over each of group channel groups (biased variance, float accumulation); weight/bias [C] optional; N / HxW Int or SymInt; outputs (out, mean [N, group], rstd [N, group])",
        )],
    )
}

/// An Int or SymInt argument of group norm (N, HxW), read at every resize.
fn int_item(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize, name: &str) -> Result<Item> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Int(x) => Ok(Item::Lit(*x)),
        GValue::SymInt => Ok(Item::Sym(v)),
        other => Err(invalid_program(format!(
            "{} arg {i} (value {v}): {name} must be an Int or a SymInt, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// `[input, weight|None, bias|None, N, C, HxW, group, eps, out ValueList(out, mean, rstd)]`.
fn build_native_group_norm(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(9)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let w = g.opt_tensor_or_prepack(call, 1)?;
    let b = g.opt_tensor_or_prepack(call, 2)?;
    let n_item = int_item(g, call, 3, "N")?;
    let c = g.int_arg(call, 4)?;
    let hxw_item = int_item(g, call, 5, "HxW")?;
    let group = g.int_arg(call, 6)?;
    let eps = g.double_arg_or(call, 7, 1e-5)? as f32;
    let [out, mean, rstd] = g.output_tensors(call, 8, "out, mean, rstd")?;
    let s = g.shapes();
    let mut dts = vec![s.dtype(x), s.dtype(out), s.dtype(mean), s.dtype(rstd)];
    dts.extend(w.iter().chain(b.iter()).map(|&t| s.dtype(t)));
    let dt = same_dtype(call, &dts)?;
    if c < 1 || group < 1 || c % group != 0 {
        return Err(invalid_program(format!(
            "{what}: C = {c} channels must split into group = {group} equal groups (both >= 1, C % group == 0)"
        )));
    }
    let (c, group) = (c as usize, group as usize);
    let xmax = s.max_dims(x);
    if xmax.len() < 2 || xmax[1] != c {
        return Err(invalid_program(format!(
            "{what}: input sizes {xmax:?} need rank >= 2 with C = {c} channels in dim 1"
        )));
    }
    for (t, role) in [(w, "weight"), (b, "bias")] {
        if let Some(t) = t {
            if s.numel(t) != c {
                return Err(invalid_program(format!(
                    "{what}: {role} sizes {:?} do not match the input's {c} channels",
                    s.max_dims(t)
                )));
            }
        }
    }
    let shader = float_shader("group_norm", dt, call)?;
    let wb = g.or_dummy(w)?;
    let bb = g.or_dummy(b)?;
    let flags = u32::from(w.is_some()) | (u32::from(b.is_some()) << 1);
    let d = Dispatch::new(shader, [out, mean, rstd, x, wb, bb]);
    g.dispatch(call, d, move |s| {
        let dims = s.dims(x).to_vec();
        let nh = resolve(&[n_item, hxw_item], s)?;
        let (n, hxw) = (nh[0], nh[1]);
        let numel: usize = dims.iter().product();
        if dims.get(1) != Some(&c)
            || n.checked_mul(c).and_then(|v| v.checked_mul(hxw)) != Some(numel)
        {
            return Err(invalid_arg(format!(
                "{what}: input sizes {dims:?} are not [N = {n}, C = {c}, HxW = {hxw}] \
                 (N * C * HxW must equal its {numel} elements, C its dim 1)"
            )));
        }
        let rows = n * group;
        let cpg = c / group;
        s.set_dims(out, dims)?;
        s.set_dims(mean, vec![n, group])?;
        s.set_dims(rstd, vec![n, group])?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(rows, "rows")?)
                .u32(to_u32(cpg * hxw, "group elements")?)
                .u32(to_u32(hxw.max(1), "HxW")?)
                .u32(to_u32(group, "group")?)
                .u32(to_u32(cpg, "channels per group")?)
                .f32(eps)
                .u32(flags)
                .u32(0)
                .finish(),
            global: folded_grid(rows as u64, [LANES, 1, 1], &what)?,
        })
    })
}

fn build_batch_norm_no_training(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let w = g.opt_tensor_or_prepack(call, 1)?;
    let b = g.opt_tensor_or_prepack(call, 2)?;
    let mean = g.tensor_or_prepack(call, 3)?;
    let var = g.tensor_or_prepack(call, 4)?;
    let eps = g.double_arg_or(call, 6, 1e-5)? as f32;
    let [out, save_mean, save_rstd] = g.output_tensors(call, 7, "out, save_mean, save_rstd")?;
    let s = g.shapes();
    let mut dts = vec![s.dtype(x), s.dtype(out), s.dtype(mean), s.dtype(var)];
    dts.extend(w.iter().chain(b.iter()).map(|&t| s.dtype(t)));
    let dt = same_dtype(call, &dts)?;
    let rank = s.max_dims(x).len();
    if rank < 2 {
        return Err(invalid_program(format!(
            "{what}: input sizes {:?} need a channel dim (rank >= 2)",
            s.max_dims(x)
        )));
    }
    let c = s.max_dims(x)[1];
    let params = [Some((mean, "running_mean")), Some((var, "running_var"))]
        .into_iter()
        .chain([w.map(|t| (t, "weight")), b.map(|t| (t, "bias"))])
        .flatten();
    for (t, role) in params {
        if s.numel(t) != c {
            return Err(invalid_program(format!(
                "{what}: {role} sizes {:?} do not match the input's {c} channels",
                s.max_dims(t)
            )));
        }
    }
    let shader = float_shader("batch_norm", dt, call)?;
    let wb = g.or_dummy(w)?;
    let bb = g.or_dummy(b)?;
    let flags = u32::from(w.is_some()) | (u32::from(b.is_some()) << 1);
    let d = Dispatch::new(shader, [out, x, mean, var, wb, bb]);
    g.dispatch(call, d, move |s| {
        let dims = s.dims(x).to_vec();
        if dims[1] != c {
            return Err(invalid_arg(format!(
                "{what}: input sizes {dims:?} must keep the {c} channels of the statistics"
            )));
        }
        let numel: usize = dims.iter().product();
        let inner: usize = dims[2..].iter().product();
        s.set_dims(out, dims)?;
        s.set_dims(save_mean, vec![0])?;
        s.set_dims(save_rstd, vec![0])?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .u32(to_u32(c, "channels")?)
                .u32(to_u32(inner.max(1), "plane")?)
                .f32(eps)
                .u32(flags)
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

/// One `normalized_shape` entry: a literal, or a SymInt read at every resize.
#[derive(Debug, Clone, Copy)]
enum Item {
    Lit(i64),
    Sym(usize),
}

fn normalized_shape_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<Vec<Item>> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::IntList(l) => Ok(l.iter().map(|&x| Item::Lit(x)).collect()),
        GValue::ValueList(ids) => ids
            .iter()
            .map(|&id| match g.value(id)? {
                GValue::Int(x) => Ok(Item::Lit(*x)),
                GValue::SymInt => Ok(Item::Sym(id)),
                other => Err(invalid_program(format!(
                    "{} arg {i}: normalized_shape item value {id} is {}, expected Int or SymInt",
                    call.what(),
                    gvalue_kind(other)
                ))),
            })
            .collect(),
        other => Err(invalid_program(format!(
            "{} arg {i} (value {v}): normalized_shape must be an int list, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

fn build_native_layer_norm(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let shape = normalized_shape_arg(g, call, 1)?;
    let w = g.opt_tensor_or_prepack(call, 2)?;
    let b = g.opt_tensor_or_prepack(call, 3)?;
    let eps = g.double_arg_or(call, 4, 1e-5)? as f32;
    let [out, mean, rstd] = g.output_tensors(call, 5, "out, mean, rstd")?;
    let s = g.shapes();
    let mut dts = vec![s.dtype(x), s.dtype(out), s.dtype(mean), s.dtype(rstd)];
    dts.extend(w.iter().chain(b.iter()).map(|&t| s.dtype(t)));
    let dt = same_dtype(call, &dts)?;
    let rank = s.max_dims(x).len();
    let k = shape.len();
    if k == 0 || k > rank {
        return Err(invalid_program(format!(
            "{what}: normalized_shape has {k} dims; it needs 1..={rank} for an input of rank {rank}"
        )));
    }
    let axis = rank - k;
    let shader = float_shader("layer_norm", dt, call)?;
    let wb = g.or_dummy(w)?;
    let bb = g.or_dummy(b)?;
    let flags = u32::from(w.is_some()) | (u32::from(b.is_some()) << 1);
    let d = Dispatch::new(shader, [out, mean, rstd, x, wb, bb]);
    g.dispatch(call, d, move |s| {
        let dims = s.dims(x).to_vec();
        let want = resolve(&shape, s)?;
        if dims[axis..] != want[..] {
            return Err(invalid_arg(format!(
                "{what}: input sizes {dims:?} do not end with normalized_shape {want:?}"
            )));
        }
        let n: usize = want.iter().product();
        let rows: usize = dims[..axis].iter().product();
        for (t, role) in w
            .iter()
            .map(|&t| (t, "weight"))
            .chain(b.iter().map(|&t| (t, "bias")))
        {
            if s.numel(t) != n {
                return Err(invalid_arg(format!(
                    "{what}: {role} sizes {:?} do not match normalized_shape {want:?}",
                    s.dims(t)
                )));
            }
        }
        let mut stat = dims[..axis].to_vec();
        stat.resize(rank, 1);
        s.set_dims(out, dims)?;
        s.set_dims(mean, stat.clone())?;
        s.set_dims(rstd, stat)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(rows, "rows")?)
                .u32(to_u32(n, "normalized elements")?)
                .f32(eps)
                .u32(flags)
                .finish(),
            global: folded_grid(rows as u64, [LANES, 1, 1], &what)?,
        })
    })
}

/// `normalized_shape` with SymInts at their current values.
fn resolve(items: &[Item], s: &Shapes) -> Result<Vec<usize>> {
    items
        .iter()
        .map(|it| {
            let x = match *it {
                Item::Lit(x) => x,
                Item::Sym(id) => s.scalar(id)? as i64,
            };
            usize::try_from(x)
                .map_err(|_| invalid_arg(format!("normalized_shape entry {x} is negative")))
        })
        .collect()
}
