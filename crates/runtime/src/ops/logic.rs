//! Comparison, logical, selection and dtype-conversion ops, and SymInt arithmetic:
//!
//! - `aten.{eq,ne,lt,le,gt,ge}.Scalar` (`[self, other Int|Double|Bool, out]`) and
//!   `aten.{eq,ne,lt,le,gt,ge}.Tensor` (`[self, other, out]`, broadcasting): Bool output,
//!   compared in PyTorch's promoted type (float, fp16-rounded float, or exact int).
//! - `aten.logical_{and,or,xor}.default` (`[self, other, out]`, broadcasting) and
//!   `aten.logical_not.default` (`[self, out]`): any input dtype means `x != 0`.
//! - `aten.where.self` (`[condition, self, other, out]`, three-way broadcasting).
//! - `aten._to_copy.default` (`[self, dtype, layout, device, pin_memory, non_blocking,
//!   memory_format, out]`) and `dim_order_ops._to_dim_order_copy.default` (`[self, dtype,
//!   non_blocking, dim_order, out]`, or executorch 1.5's `[self, dtype, layout, device,
//!   pin_memory, non_blocking, dim_order, out]`): a copy converting to the out tensor's dtype.
//! - `add`, `sub`, `mul`, `floordiv` (`[a, b, out SymInt]`, Python operators on SymInts):
//!   host steps, recomputed at every resize.
//!
//! The shaders read every input as `uint` words and decode it by a dtype code in the push
//! constants (`logical_elem.glsl`), so mixed-dtype operands need no extra variants and no
//! 8/16-bit storage. Bool outputs are written one whole word (4 elements) per invocation.

use etvk_format::f16::{f16_to_f32, f32_to_f16};
use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{internal, invalid_arg, invalid_program, unsupported};
use crate::graph::{broadcast_shapes, to_u32, Global, Launch, Push, Shapes, TensorId};
use crate::registry::{OpBuildFn, Registry};

/// Input dtypes the shaders decode (`logical_elem.glsl`'s `DT_*` codes).
const IN_DTYPES: &[DataType] = &[
    DataType::Float32,
    DataType::Float16,
    DataType::Int32,
    DataType::Bool,
];
/// Data dtypes of `where` outputs.
const WHERE_DTYPES: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];
/// Rank limit of the shaders' push constants (`uvec4 sizes[2]`, 8-bit broadcast masks).
const MAX_RANK: usize = 8;

/// `compare.comp`'s `b_dt` meaning "compare with the push-constant scalar".
const B_SCALAR: u32 = 255;
const MODE_FLOAT: u32 = 0;
const MODE_HALF: u32 = 1;
const MODE_INT: u32 = 2;

/// Op name -> shader OP tag, for the ops dispatched by name.
const COMPARE_OPS: &[(&str, &str)] = &[
    ("aten.eq.Scalar", "eq"),
    ("aten.ne.Scalar", "ne"),
    ("aten.lt.Scalar", "lt"),
    ("aten.le.Scalar", "le"),
    ("aten.gt.Scalar", "gt"),
    ("aten.ge.Scalar", "ge"),
    ("aten.eq.Tensor", "eq"),
    ("aten.ne.Tensor", "ne"),
    ("aten.lt.Tensor", "lt"),
    ("aten.le.Tensor", "le"),
    ("aten.gt.Tensor", "gt"),
    ("aten.ge.Tensor", "ge"),
];
const LOGICAL_OPS: &[(&str, &str)] = &[
    ("aten.logical_and.default", "and"),
    ("aten.logical_or.default", "or"),
    ("aten.logical_xor.default", "xor"),
];

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let mut entries: Vec<(&'static str, OpBuildFn, &'static str)> = Vec::new();
    for &(name, _) in COMPARE_OPS {
        if name.ends_with(".Scalar") {
            entries.push((
                name,
                build_compare_scalar,
                "Bool out; other Int/Double/Bool, compared in PyTorch's promoted type (int vs Double in float)",
            ));
        } else {
            entries.push((
                name,
                build_compare_tensor,
                "Bool out, broadcasting, mixed dtypes compared in PyTorch's promoted type",
            ));
        }
    }
    for &(name, _) in LOGICAL_OPS {
        entries.push((
            name,
            build_logical,
            "Bool out, broadcasting; any input dtype counts as x != 0",
        ));
    }
    entries.push((
        "aten.logical_not.default",
        build_logical_not,
        "Bool out; x == 0 for any input dtype",
    ));
    r.register_dynamic(IN_DTYPES, &entries)?;
    r.register_dynamic(
        WHERE_DTYPES,
        &[(
            "aten.where.self",
            build_where as OpBuildFn,
            "condition ? self : other, three-way broadcasting; operands converted to the out dtype",
        )],
    )?;
    r.register_dynamic(
        IN_DTYPES,
        &[
            (
                "aten._to_copy.default",
                build_to_copy as OpBuildFn,
                "copy converting to the out dtype (float -> int truncates, -> bool is != 0); kwargs Null or defaults",
            ),
            (
                "dim_order_ops._to_dim_order_copy.default",
                build_to_dim_order_copy,
                "copy converting to the out dtype; dim_order must be None or contiguous",
            ),
        ],
    )?;
    r.register_dynamic(
        &[],
        &[
            (
                "add",
                build_sym_add as OpBuildFn,
                "SymInt = a + b (Int / SymInt operands; host only)",
            ),
            (
                "sub",
                build_sym_sub,
                "SymInt = a - b (Int / SymInt operands; host only)",
            ),
            (
                "mul",
                build_sym_mul,
                "SymInt = a * b (Int / SymInt operands; host only)",
            ),
            (
                "floordiv",
                build_sym_floordiv,
                "SymInt = a // b, rounding toward -inf (Python); b = 0 is an error (host only)",
            ),
        ],
    )?;
    Ok(())
}

/// The shader's dtype code of an input, or `Unsupported` naming the op and the arg.
fn dt_code(call: &OpCall<'_>, dt: DataType, arg: usize) -> Result<u32> {
    Ok(match dt {
        DataType::Float32 => 0,
        DataType::Float16 => 1,
        DataType::Int32 => 2,
        DataType::Bool => 3,
        other => {
            return Err(unsupported(format!(
                "{} arg {arg}: dtype {} is not supported (float32, float16, int32, bool are)",
                call.what(),
                other.name()
            )))
        }
    })
}

fn shader(name: &str, call: &OpCall<'_>) -> Result<ShaderId> {
    ShaderId::from_name(name).ok_or_else(|| {
        internal(format!(
            "{}: shader variant {name} missing from the manifest",
            call.what()
        ))
    })
}

/// The shader OP tag of `call` from `table`.
fn op_tag(call: &OpCall<'_>, table: &[(&str, &'static str)]) -> Result<&'static str> {
    table
        .iter()
        .find(|(n, _)| *n == call.name)
        .map(|(_, t)| *t)
        .ok_or_else(|| internal(format!("{}: no shader OP for this name", call.what())))
}

fn expect_bool_out(g: &GraphBuilder<'_>, call: &OpCall<'_>, out: TensorId) -> Result<()> {
    let dt = g.shapes().dtype(out);
    if dt != DataType::Bool {
        return Err(unsupported(format!(
            "{}: output dtype {} is not supported (bool only)",
            call.what(),
            dt.name()
        )));
    }
    Ok(())
}

/// Bit d set when `input` (right-aligned against `out`) has size 1 on output dim d,
/// counting dims innermost first, as `bcast_index` in `logical_elem.glsl` reads it.
fn bcast_mask(input: &[usize], out: &[usize]) -> u32 {
    let mut mask = 0;
    for d in 0..out.len() {
        let size = if d < input.len() {
            input[input.len() - 1 - d]
        } else {
            1
        };
        if size == 1 {
            mask |= 1 << d;
        }
    }
    mask
}

/// A broadcasting elementwise dispatch writing `out` from `operands` (their broadcast
/// shape). `header` gives the push block's first 8 words from `(numel, rank, masks)`; the
/// output sizes follow as `uvec4 sizes[2]`, innermost first. With `per_invocation` > 1
/// each invocation writes that many consecutive outputs (Bool: one word of 4).
fn broadcast_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    d: Dispatch,
    out: TensorId,
    operands: Vec<TensorId>,
    per_invocation: usize,
    header: impl Fn(u32, u32, &[u32]) -> [u32; 8] + Send + Sync + 'static,
) -> Result<()> {
    let what = call.what();
    g.dispatch(call, d, move |s: &mut Shapes| {
        let mut od: Vec<usize> = Vec::new();
        for &t in &operands {
            od = broadcast_shapes(&od, s.dims(t), &what)?;
        }
        if od.len() > MAX_RANK {
            return Err(unsupported(format!(
                "{what}: rank {} exceeds {MAX_RANK}",
                od.len()
            )));
        }
        let masks: Vec<u32> = operands
            .iter()
            .map(|&t| bcast_mask(s.dims(t), &od))
            .collect();
        let numel: usize = od.iter().product();
        let words = header(to_u32(numel, "numel")?, od.len() as u32, &masks);
        let sizes: Vec<u32> = od
            .iter()
            .rev()
            .map(|&x| to_u32(x, "size"))
            .collect::<Result<_>>()?;
        let mut push = Push::new();
        for w in words {
            push = push.u32(w);
        }
        let push = push.u32_array(&sizes, MAX_RANK, 1).finish();
        s.set_dims(out, od)?;
        Ok(Launch {
            push,
            global: Global::Linear(numel.div_ceil(per_invocation) as u64),
        })
    })
}

/// Position of a dtype in PyTorch's promotion order restricted to what these ops see
/// (Int64 stands for an Int scalar).
fn promo_rank(dt: DataType) -> u8 {
    match dt {
        DataType::Bool => 0,
        DataType::Uint8 | DataType::Int8 => 1,
        DataType::Int32 => 2,
        DataType::Int64 => 3,
        DataType::Float16 => 4,
        DataType::Float32 => 5,
        DataType::Float64 => 6,
    }
}

fn is_float(dt: DataType) -> bool {
    matches!(
        dt,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    )
}

fn promote(a: Option<DataType>, b: Option<DataType>) -> Option<DataType> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if promo_rank(a) >= promo_rank(b) { a } else { b }),
        (a, None) => a,
        (None, b) => b,
    }
}

/// PyTorch's `combine_categories`: a higher-priority operand class (dimensioned tensors
/// over 0-dim tensors over wrapped scalars) keeps its dtype unless the lower class is of a
/// higher category (float over int over bool).
fn combine(higher: Option<DataType>, lower: Option<DataType>) -> Option<DataType> {
    match higher {
        Some(h) if is_float(h) => Some(h),
        Some(h) if h == DataType::Bool || lower.is_some_and(is_float) => promote(higher, lower),
        Some(h) => Some(h),
        None => lower,
    }
}

/// The comparison domain of a promoted dtype.
fn mode_of(dt: DataType) -> u32 {
    match dt {
        DataType::Float16 => MODE_HALF,
        DataType::Float32 | DataType::Float64 => MODE_FLOAT,
        _ => MODE_INT,
    }
}

/// `aten.<cmp>.Tensor`: `[self, other, out]`.
fn build_compare_tensor(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let op = op_tag(call, COMPARE_OPS)?;
    let a = g.tensor_or_prepack(call, 0)?;
    let b = g.tensor_or_prepack(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    expect_bool_out(g, call, out)?;
    let s = g.shapes();
    let (da, db) = (s.dtype(a), s.dtype(b));
    let (ac, bc) = (dt_code(call, da, 0)?, dt_code(call, db, 1)?);
    // 0-dim tensors rank below dimensioned ones in PyTorch's promotion.
    let (mut dim, mut zero) = (None, None);
    for (t, dt) in [(a, da), (b, db)] {
        let slot = if s.max_dims(t).is_empty() {
            &mut zero
        } else {
            &mut dim
        };
        *slot = promote(*slot, Some(dt));
    }
    let result = combine(dim, zero).ok_or_else(|| internal("no operand dtype"))?;
    let mode = mode_of(result);
    let sh = shader(&format!("compare_{op}"), call)?;
    broadcast_dispatch(
        g,
        call,
        Dispatch::new(sh, [out, a, b]),
        out,
        vec![a, b],
        4,
        move |numel, rank, m| [numel, rank, ac, bc, mode, 0, m[0], m[1]],
    )
}

/// `aten.<cmp>.Scalar`: `[self, other, out]` with `other` an Int, Double or Bool.
fn build_compare_scalar(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let op = op_tag(call, COMPARE_OPS)?;
    let a = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, 2)?;
    expect_bool_out(g, call, out)?;
    let da = g.shapes().dtype(a);
    let ac = dt_code(call, da, 0)?;
    let v = call.arg(1)?;
    // A wrapped Python scalar: float -> the default dtype (float32), int -> int64.
    let (x, wrapped) = match g.value(v)? {
        GValue::Double(x) => (*x, DataType::Float32),
        GValue::Int(x) => (*x as f64, DataType::Int64),
        GValue::Bool(x) => (f64::from(u8::from(*x)), DataType::Bool),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 1 (value {v}): expected an Int, Double or Bool scalar, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let (dim, zero) = if g.shapes().max_dims(a).is_empty() {
        (None, Some(da))
    } else {
        (Some(da), None)
    };
    let result =
        combine(dim, combine(zero, Some(wrapped))).ok_or_else(|| internal("no operand dtype"))?;
    let mode = mode_of(result);
    let bits = match mode {
        MODE_FLOAT => (x as f32).to_bits(),
        MODE_HALF => f16_to_f32(f32_to_f16(x as f32)).to_bits(),
        _ => {
            let int = match g.value(v)? {
                GValue::Int(i) => *i,
                _ => x as i64,
            };
            // A bool tensor holds 0 / 1, so clamping a wide scalar keeps every result;
            // an int32 tensor would need the int64 comparison PyTorch rejects as overflow.
            if da == DataType::Bool {
                int.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32 as u32
            } else {
                i32::try_from(int).map_err(|_| {
                    unsupported(format!(
                        "{what} arg 1 (value {v}): scalar {int} does not fit the int32 tensor's dtype"
                    ))
                })? as u32
            }
        }
    };
    let sh = shader(&format!("compare_{op}"), call)?;
    // The b binding is never read in scalar mode; `a` fills it.
    broadcast_dispatch(
        g,
        call,
        Dispatch::new(sh, [out, a, a]),
        out,
        vec![a],
        4,
        move |numel, rank, m| [numel, rank, ac, B_SCALAR, mode, bits, m[0], 0],
    )
}

/// `aten.logical_{and,or,xor}.default`: `[self, other, out]`.
fn build_logical(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let op = op_tag(call, LOGICAL_OPS)?;
    let a = g.tensor_or_prepack(call, 0)?;
    let b = g.tensor_or_prepack(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    expect_bool_out(g, call, out)?;
    let s = g.shapes();
    let (ac, bc) = (dt_code(call, s.dtype(a), 0)?, dt_code(call, s.dtype(b), 1)?);
    let sh = shader(&format!("logical_{op}"), call)?;
    broadcast_dispatch(
        g,
        call,
        Dispatch::new(sh, [out, a, b]),
        out,
        vec![a, b],
        4,
        move |numel, rank, m| [numel, rank, ac, bc, m[0], m[1], 0, 0],
    )
}

/// `aten.logical_not.default`: `[self, out]`.
fn build_logical_not(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(2)?;
    let a = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, 1)?;
    expect_bool_out(g, call, out)?;
    let ac = dt_code(call, g.shapes().dtype(a), 0)?;
    let sh = shader("logical_not", call)?;
    broadcast_dispatch(
        g,
        call,
        Dispatch::new(sh, [out, a]),
        out,
        vec![a],
        4,
        move |numel, rank, m| [numel, rank, ac, 0, m[0], 0, 0, 0],
    )
}

/// `aten.where.self`: `[condition, self, other, out]`.
fn build_where(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let c = g.tensor_or_prepack(call, 0)?;
    let a = g.tensor_or_prepack(call, 1)?;
    let b = g.tensor_or_prepack(call, 2)?;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let cc = dt_code(call, s.dtype(c), 0)?;
    let ac = dt_code(call, s.dtype(a), 1)?;
    let bc = dt_code(call, s.dtype(b), 2)?;
    let name = match s.dtype(out) {
        DataType::Float32 => "where_f32",
        DataType::Float16 => "where_f16",
        DataType::Int32 => "where_i32",
        other => {
            return Err(unsupported(format!(
                "{}: output dtype {} is not supported (float32, float16, int32 are)",
                call.what(),
                other.name()
            )))
        }
    };
    let sh = shader(name, call)?;
    broadcast_dispatch(
        g,
        call,
        Dispatch::new(sh, [out, c, a, b]),
        out,
        vec![c, a, b],
        1,
        move |numel, rank, m| [numel, rank, cc, ac, bc, m[0], m[1], m[2]],
    )
}

/// Fail unless arg `i` is `Null` or one of the accepted plain values (`ok`).
fn expect_default(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
    name: &str,
    ok: impl Fn(&GValue) -> bool,
) -> Result<()> {
    let v = call.arg(i)?;
    let gv = g.value(v)?;
    // An integral Double stands for an Int the exporter deduplicated with it (dtype code 6
    // and a 6.0 elsewhere in the graph share one value).
    let as_int = match gv {
        GValue::Double(x) => crate::builder::integral(*x).map(GValue::Int),
        _ => None,
    };
    if matches!(gv, GValue::Null) || ok(as_int.as_ref().unwrap_or(gv)) {
        return Ok(());
    }
    Err(unsupported(format!(
        "{} arg {i} (value {v}): {name} {gv:?} is not supported (None or the default only)",
        call.what()
    )))
}

/// `aten._to_copy.default`: `[self, dtype, layout, device, pin_memory, non_blocking,
/// memory_format, out]` (every kwarg materialized; dtypes, layouts, devices and memory
/// formats serialize as `Null`).
fn build_to_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    // The target dtype is the out tensor's; an explicit dtype code says nothing more.
    expect_default(g, call, 1, "dtype", |v| matches!(v, GValue::Int(_)))?;
    // Layout 0 = torch.strided.
    expect_default(g, call, 2, "layout", |v| matches!(v, GValue::Int(0)))?;
    // Where the copy lands is this delegate's business.
    expect_default(g, call, 3, "device", |v| {
        matches!(v, GValue::Int(_) | GValue::String(_))
    })?;
    expect_default(g, call, 4, "pin_memory", |v| matches!(v, GValue::Bool(_)))?;
    expect_default(g, call, 5, "non_blocking", |v| matches!(v, GValue::Bool(_)))?;
    // Contiguous (0) or preserve (1): the runtime's tensors are always contiguous.
    expect_default(g, call, 6, "memory_format", |v| {
        matches!(v, GValue::Int(0) | GValue::Int(1))
    })?;
    convert_copy(g, call, 0, 7)
}

/// `dim_order_ops._to_dim_order_copy.default`: `[self, dtype, non_blocking, dim_order, out]`.
fn build_to_dim_order_copy(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    // Two layouts: `[self, dtype, non_blocking, dim_order, out]`, and the full edge schema
    // that executorch 1.5's exporter writes, `[self, dtype, layout, device, pin_memory,
    // non_blocking, dim_order, out]` (layout / device / pin_memory do not change a copy
    // between GPU buffers).
    let (non_blocking, dim_order, out) = match call.args.len() {
        5 => (2, 3, 4),
        8 => (5, 6, 7),
        n => {
            return Err(invalid_program(format!(
                "{}: expected 5 or 8 args, got {n}",
                call.what()
            )))
        }
    };
    expect_default(g, call, 1, "dtype", |v| matches!(v, GValue::Int(_)))?;
    if non_blocking == 5 {
        for (i, name) in [(2, "layout"), (3, "device"), (4, "pin_memory")] {
            expect_default(g, call, i, name, |v| {
                matches!(v, GValue::Int(_) | GValue::Bool(_) | GValue::String(_))
            })?;
        }
    }
    expect_default(g, call, non_blocking, "non_blocking", |v| {
        matches!(v, GValue::Bool(_))
    })?;
    let v = call.arg(dim_order)?;
    match g.value(v)? {
        GValue::Null => {}
        GValue::IntList(order) => {
            let xv = call.arg(0)?;
            let rank = match g.value(xv)? {
                GValue::Tensor(t) => g.shapes().max_dims(*t).len(),
                GValue::TensorRef(c) => c.dims.len(),
                other => {
                    return Err(invalid_program(format!(
                        "{} arg 0 (value {xv}): expected a tensor, got {}",
                        call.what(),
                        gvalue_kind(other)
                    )))
                }
            };
            let contiguous =
                order.len() == rank && order.iter().enumerate().all(|(i, &d)| d == i as i64);
            if !contiguous {
                return Err(unsupported(format!(
                    "{} arg {dim_order} (value {v}): dim_order {order:?} is not supported (only the contiguous order 0..{rank})",
                    call.what()
                )));
            }
        }
        other => {
            return Err(invalid_program(format!(
                "{} arg {dim_order} (value {v}): expected an IntList dim_order or None, got {}",
                call.what(),
                gvalue_kind(other)
            )))
        }
    }
    convert_copy(g, call, 0, out)
}

/// Contiguous copy of arg `x_arg` into arg `out_arg`, converting to the out dtype.
fn convert_copy(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x_arg: usize,
    out_arg: usize,
) -> Result<()> {
    let x = g.tensor_or_prepack(call, x_arg)?;
    let out = g.tensor_arg(call, out_arg)?;
    convert_tensor(g, call, x, out, x_arg)
}

/// A dispatch copying `x` into `out` (same rank; `out` takes `x`'s current sizes at every
/// resize), converting to `out`'s dtype. `x_arg` names the source in errors. Other op
/// families use it to run float32 kernels on float16 tensors.
pub(crate) fn convert_tensor(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    out: TensorId,
    x_arg: usize,
) -> Result<()> {
    convert_tensor_unless(g, call, (x, out, x_arg), |_| Ok(false))
}

/// [`convert_tensor`] as a node that launches nothing while `skip` (asked at every resize)
/// says another dispatch wrote `out` already (`out` still takes x's sizes).
pub(crate) fn convert_tensor_unless(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (x, out, x_arg): (TensorId, TensorId, usize),
    skip: impl Fn(&mut Shapes) -> Result<bool> + Send + Sync + 'static,
) -> Result<()> {
    let s = g.shapes();
    let xc = dt_code(call, s.dtype(x), x_arg)?;
    let (name, per) = match s.dtype(out) {
        DataType::Float32 => ("to_copy_f32", 1),
        DataType::Float16 => ("to_copy_f16", 1),
        DataType::Int32 => ("to_copy_i32", 1),
        DataType::Bool => ("to_copy_bool", 4),
        other => {
            return Err(unsupported(format!(
                "{}: output dtype {} is not supported (float32, float16, int32, bool are)",
                call.what(),
                other.name()
            )))
        }
    };
    let (xr, or) = (s.max_dims(x).len(), s.max_dims(out).len());
    if xr != or {
        return Err(invalid_program(format!(
            "{}: output rank {or} differs from the input rank {xr}",
            call.what()
        )));
    }
    let sh = shader(name, call)?;
    g.dispatch(call, Dispatch::new(sh, [out, x]), move |s| {
        let dims = s.dims(x).to_vec();
        let numel: usize = dims.iter().product();
        s.set_dims(out, dims)?;
        let groups = if skip(s)? { 0 } else { numel.div_ceil(per) };
        Ok(Launch {
            push: Push::new().u32(to_u32(numel, "numel")?).u32(xc).finish(),
            global: Global::Linear(groups as u64),
        })
    })
}

/// A SymInt arithmetic operand: a literal, or a SymInt read at every resize.
#[derive(Debug, Clone, Copy)]
enum SymArg {
    Lit(i64),
    Sym(usize),
}

impl SymArg {
    fn value(self, s: &Shapes, what: &str) -> Result<i64> {
        match self {
            SymArg::Lit(x) => Ok(x),
            SymArg::Sym(id) => {
                let x = s.scalar(id)?;
                if x.fract() != 0.0 || x.abs() > 9.007_199_254_740_992e15 {
                    return Err(invalid_arg(format!(
                        "{what}: SymInt value {id} holds {x}, not an integer"
                    )));
                }
                Ok(x as i64)
            }
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum SymOp {
    Add,
    Sub,
    Mul,
    FloorDiv,
}

/// Python's `a // b` (floor division); `None` on division by zero or overflow.
fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

fn sym_apply(op: SymOp, a: i64, b: i64, what: &str) -> Result<i64> {
    let r = match op {
        SymOp::Add => a.checked_add(b),
        SymOp::Sub => a.checked_sub(b),
        SymOp::Mul => a.checked_mul(b),
        SymOp::FloorDiv => {
            if b == 0 {
                return Err(invalid_arg(format!(
                    "{what}: integer division by zero ({a} // 0)"
                )));
            }
            floor_div(a, b)
        }
    };
    // Scalars are f64 in `Shapes`; larger magnitudes would not read back exactly.
    r.filter(|x| x.unsigned_abs() <= 1 << 53).ok_or_else(|| {
        invalid_arg(format!(
            "{what}: result of {op:?}({a}, {b}) overflows the SymInt range (|x| <= 2^53)"
        ))
    })
}

fn sym_operand(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<SymArg> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Int(x) => Ok(SymArg::Lit(*x)),
        GValue::Bool(x) => Ok(SymArg::Lit(i64::from(*x))),
        GValue::SymInt => Ok(SymArg::Sym(v)),
        other => Err(invalid_program(format!(
            "{} arg {i} (value {v}): expected an Int or SymInt, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// `[a, b, out SymInt]`: `out = a op b`, set at build and at every resize, before later
/// ops' resize functions read it.
fn build_sym(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, op: SymOp) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let a = sym_operand(g, call, 0)?;
    let b = sym_operand(g, call, 1)?;
    let out = call.arg(2)?;
    if !matches!(g.value(out)?, GValue::SymInt) {
        return Err(invalid_program(format!(
            "{what} arg 2 (value {out}): expected a SymInt, got {}",
            gvalue_kind(g.value(out)?)
        )));
    }
    g.host_step(call, move |s| {
        let r = sym_apply(op, a.value(s, &what)?, b.value(s, &what)?, &what)?;
        s.set_scalar(out, r as f64)
    })
}

fn build_sym_add(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_sym(g, call, SymOp::Add)
}
fn build_sym_sub(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_sym(g, call, SymOp::Sub)
}
fn build_sym_mul(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_sym(g, call, SymOp::Mul)
}
fn build_sym_floordiv(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_sym(g, call, SymOp::FloorDiv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_div_rounds_toward_negative_infinity() {
        assert_eq!(floor_div(7, 2), Some(3));
        assert_eq!(floor_div(-7, 2), Some(-4));
        assert_eq!(floor_div(7, -2), Some(-4));
        assert_eq!(floor_div(-7, -2), Some(3));
        assert_eq!(floor_div(-8, 2), Some(-4));
        assert_eq!(floor_div(0, -3), Some(0));
        assert_eq!(floor_div(1, 0), None);
        assert_eq!(floor_div(i64::MIN, -1), None);
        assert!(sym_apply(SymOp::FloorDiv, 3, 0, "op floordiv (node 1)")
            .unwrap_err()
            .message
            .contains("floordiv"));
    }

    #[test]
    fn promotion_follows_pytorch() {
        use DataType::*;
        // int32 tensor vs Double scalar -> float32; vs Int scalar -> int32.
        assert_eq!(combine(Some(Int32), Some(Float32)), Some(Float32));
        assert_eq!(combine(Some(Int32), Some(Int64)), Some(Int32));
        // fp16 tensor vs Double scalar stays half.
        assert_eq!(combine(Some(Float16), Some(Float32)), Some(Float16));
        // bool tensor vs Int scalar -> int64.
        assert_eq!(combine(Some(Bool), Some(Int64)), Some(Int64));
        // A dimensioned fp16 tensor wins over a 0-dim fp32 one; int32 does not.
        assert_eq!(combine(Some(Float16), Some(Float32)), Some(Float16));
        assert_eq!(combine(Some(Int32), Some(Float32)), Some(Float32));
        assert_eq!(promote(Some(Int32), Some(Float16)), Some(Float16));
    }

    #[test]
    fn broadcast_masks_count_innermost_first() {
        assert_eq!(bcast_mask(&[3, 1], &[2, 3, 4]), 0b101);
        assert_eq!(bcast_mask(&[], &[2, 3]), 0b11);
        assert_eq!(bcast_mask(&[2, 3], &[2, 3]), 0);
    }
}
