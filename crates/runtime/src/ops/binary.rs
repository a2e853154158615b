//! Elementwise binary ops with PyTorch broadcasting on the `binary_{op}` shaders:
//! `aten.add.Tensor`, `aten.sub.Tensor` (`[a, b, alpha, out]`), `aten.mul.Tensor`,
//! `aten.div.Tensor`, `aten.minimum.default`, `aten.maximum.default`,
//! `aten.pow.Tensor_Tensor` (`[a, b, out]`), and `aten.pow.Tensor_Scalar`
//! (`[a, exponent, out]`, the exponent in the push constants).
//!
//! `aten.bitwise_and.Tensor`, `aten.bitwise_or.Tensor` (`[a, b, out]`, broadcasting) and
//! `aten.bitwise_not.default` (`[x, out]`) on int32 or bool tensors (the `bitwise` shaders;
//! bool outputs are written a whole word of 4 elements per invocation). The partitioner
//! delegates them for bool tensors only; int32 graphs are hand-written.
//!
//! `aten.div.Tensor_mode` (`[a, b, rounding_mode String|Null, out]`, broadcasting):
//! `"trunc"` / `"floor"` on the `div_mode` shaders (float, fp16 and int32; int32 division
//! by zero gives 0, where PyTorch raises), `None` is true division on `binary_div`.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, GValue};
use crate::builder::{Dispatch, GraphBuilder, OpCall};
use crate::error::{internal, invalid_program, unsupported};
use crate::graph::{broadcast_shapes, broadcast_strides, to_u32, Global, Launch, Push, TensorId};
use crate::ops::{data_shader, float_shader, same_dtype};
use crate::registry::{OpBuildFn, Registry};
use etvk_shaders::ShaderId;

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
/// Dtypes of the bitwise ops.
const BITWISE_DTYPES: &[DataType] = &[DataType::Int32, DataType::Bool];
/// Dtypes of add / sub / mul / minimum / maximum.
const INT_CAPABLE_DTYPES: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];
/// Dtypes of `div.Tensor_mode`.
const DIV_MODE_DTYPES: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];
/// Rank limit of the shader's push constants.
const MAX_RANK: usize = 8;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    // Int32 too: the integer arithmetic of exported index math (linspace / arange).
    let int_capable = [
        (
            "aten.add.Tensor",
            build_add as crate::registry::OpBuildFn,
            "a + alpha * b, broadcasting (int32: integer arithmetic, alpha an Int)",
        ),
        (
            "aten.sub.Tensor",
            build_sub,
            "a - alpha * b, broadcasting (int32: integer arithmetic, alpha an Int)",
        ),
        ("aten.mul.Tensor", build_mul, "a * b, broadcasting"),
        (
            "aten.minimum.default",
            build_minimum,
            "min(a, b), NaN-propagating, broadcasting",
        ),
        (
            "aten.maximum.default",
            build_maximum,
            "max(a, b), NaN-propagating, broadcasting",
        ),
    ];
    r.register_dynamic(INT_CAPABLE_DTYPES, &int_capable)?;
    let entries = [
        (
            "aten.div.Tensor",
            build_div as crate::registry::OpBuildFn,
            "a / b (true division), broadcasting",
        ),
        (
            "aten.pow.Tensor_Tensor",
            build_pow,
            "a ** b, broadcasting (a < 0 needs an integral b, else NaN)",
        ),
        (
            "aten.pow.Tensor_Scalar",
            build_pow_scalar,
            "a ** exponent, exponent Double or Int",
        ),
    ];
    r.register_dynamic(FLOATS, &entries)?;
    r.register_dynamic(
        BITWISE_DTYPES,
        &[
            (
                "aten.bitwise_and.Tensor",
                build_bitwise_and as OpBuildFn,
                "a & b, broadcasting; int32, or bool (logical and)",
            ),
            (
                "aten.bitwise_or.Tensor",
                build_bitwise_or,
                "a | b, broadcasting; int32, or bool (logical or)",
            ),
            (
                "aten.bitwise_not.default",
                build_bitwise_not,
                "~x; int32, or bool (logical not)",
            ),
        ],
    )?;
    r.register_dynamic(
        DIV_MODE_DTYPES,
        &[(
            "aten.div.Tensor_mode",
            build_div_mode as OpBuildFn,
            "a / b, broadcasting; rounding_mode \"trunc\" / \"floor\" (floats as PyTorch: floor via fmod; int32 exact, x / 0 gives 0) or None (true division, floats only)",
        )],
    )?;
    Ok(())
}

fn build_bitwise_and(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_bitwise(g, call, "and")
}
fn build_bitwise_or(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_bitwise(g, call, "or")
}
fn build_bitwise_not(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_bitwise(g, call, "not")
}

/// `and` / `or`: `[a, b, out]`; `not`: `[x, out]`. Every tensor int32, or every one bool.
fn build_bitwise(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, op: &str) -> Result<()> {
    let binary = op != "not";
    call.expect_args(if binary { 3 } else { 2 })?;
    let a = g.tensor_or_prepack(call, 0)?;
    let b = if binary {
        Some(g.tensor_or_prepack(call, 1)?)
    } else {
        None
    };
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    let s = g.shapes();
    let mut dts = vec![s.dtype(a), s.dtype(out)];
    dts.extend(b.map(|b| s.dtype(b)));
    let (tag, per_invocation) = match same_dtype(call, &dts)? {
        DataType::Int32 => ("i32", 1),
        DataType::Bool => ("bool", 4),
        other => {
            return Err(unsupported(format!(
                "{}: dtype {} is not supported (int32, bool are)",
                call.what(),
                other.name()
            )))
        }
    };
    let shader = shader_named(&format!("bitwise_{op}_{tag}"), call)?;
    broadcast_dispatch(g, call, shader, a, b, 0.0, per_invocation)
}

/// `[a, b, rounding_mode, out]`: `rounding_mode` the String `"trunc"` or `"floor"`, or
/// `Null` (true division, as `div.Tensor`).
fn build_div_mode(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let v = call.arg(2)?;
    let mode = match g.value(v)? {
        GValue::Null => None,
        GValue::String(m) if m == "trunc" || m == "floor" => Some(m.clone()),
        GValue::String(m) => {
            return Err(invalid_program(format!(
                "{what} arg 2 (value {v}): rounding_mode {m:?} is not one of \"trunc\", \"floor\" or None"
            )))
        }
        other => {
            return Err(invalid_program(format!(
                "{what} arg 2 (value {v}): rounding_mode must be a String or None, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let a = g.tensor_or_prepack(call, 0)?;
    let b = g.tensor_or_prepack(call, 1)?;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(a), s.dtype(b), s.dtype(out)])?;
    let Some(mode) = mode else {
        if dt == DataType::Int32 {
            return Err(unsupported(format!(
                "{what}: rounding_mode None on int32 is true division with a float result; \
                 mixed int32 / float tensors are not supported"
            )));
        }
        return binary_dispatch(g, call, "div", a, Some(b), 1.0);
    };
    let tag = match dt {
        DataType::Int32 => "i32",
        other => crate::ops::float_tag(other).ok_or_else(|| {
            unsupported(format!(
                "{what}: dtype {} is not supported (float32, float16, int32 are)",
                other.name()
            ))
        })?,
    };
    let shader = shader_named(&format!("div_{mode}_{tag}"), call)?;
    broadcast_dispatch(g, call, shader, a, Some(b), 0.0, 1)
}

fn shader_named(name: &str, call: &OpCall<'_>) -> Result<ShaderId> {
    ShaderId::from_name(name).ok_or_else(|| {
        internal(format!(
            "{}: shader variant {name} missing from the manifest",
            call.what()
        ))
    })
}

fn build_add(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    if crate::ops::fusion::add_rms_norm(g, call)? {
        return Ok(());
    }
    build_binary(g, call, "add", true)
}
fn build_sub(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_binary(g, call, "sub", true)
}
fn build_mul(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    if let Some(f) = g.silu_mul.remove(&call.index) {
        return crate::ops::fusion::build(g, call, f);
    }
    build_binary(g, call, "mul", false)
}
fn build_div(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_binary(g, call, "div", false)
}

fn build_minimum(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_binary(g, call, "minimum", false)
}
fn build_maximum(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_binary(g, call, "maximum", false)
}
fn build_pow(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_binary(g, call, "pow", false)
}

/// `[a, exponent, out]`: `exponent` a Double or an Int, passed as the shader's `alpha`.
fn build_pow_scalar(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let v = call.arg(1)?;
    let exponent = match g.value(v)? {
        GValue::Double(x) => *x as f32,
        GValue::Int(x) => *x as f32,
        other => {
            return Err(invalid_program(format!(
                "{} arg 1 (value {v}): exponent must be a Double or an Int, got {}",
                call.what(),
                gvalue_kind(other)
            )))
        }
    };
    let a = g.tensor_or_prepack(call, 0)?;
    binary_dispatch(g, call, "pow_scalar", a, None, exponent)
}

/// `[a, b, (alpha,) out]` with `a`/`b` tensors or constants of one float dtype.
fn build_binary(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    op: &str,
    has_alpha: bool,
) -> Result<()> {
    call.expect_args(if has_alpha { 4 } else { 3 })?;
    let a = g.tensor_or_prepack(call, 0)?;
    let b = g.tensor_or_prepack(call, 1)?;
    let alpha = if has_alpha {
        g.double_arg_or(call, 2, 1.0)? as f32
    } else {
        1.0
    };
    binary_dispatch(g, call, op, a, Some(b), alpha)
}

/// The broadcasting `binary_{op}` dispatch writing the call's last arg. With `b` `None`
/// (scalar-operand ops, whose shader variant has no `b` binding) `b`'s strides are zero.
fn binary_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    op: &str,
    a: TensorId,
    b: Option<TensorId>,
    alpha: f32,
) -> Result<()> {
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    let s = g.shapes();
    let dt = match b {
        Some(b) => same_dtype(call, &[s.dtype(a), s.dtype(b), s.dtype(out)])?,
        None => same_dtype(call, &[s.dtype(a), s.dtype(out)])?,
    };
    let int_op = matches!(op, "add" | "sub" | "mul" | "minimum" | "maximum");
    let shader = if dt == DataType::Int32 && int_op {
        if alpha.fract() != 0.0 {
            return Err(invalid_program(format!(
                "{}: alpha {alpha} must be an integer for int32 operands",
                call.what()
            )));
        }
        data_shader(&format!("binary_{op}"), dt, call)?
    } else {
        float_shader(&format!("binary_{op}"), dt, call)?
    };
    broadcast_dispatch(g, call, shader, a, b, alpha, 1)
}

/// A broadcasting dispatch of `shader` (the push block of `binary.comp`: numel, rank,
/// alpha, sizes and strides innermost first) writing the call's last arg; each invocation
/// writes `per_invocation` consecutive outputs (bool: one word of 4).
fn broadcast_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    shader: ShaderId,
    a: TensorId,
    b: Option<TensorId>,
    alpha: f32,
    per_invocation: usize,
) -> Result<()> {
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    let what = call.what();
    let dispatch = match b {
        Some(b) => Dispatch::new(shader, [out, a, b]),
        None => Dispatch::new(shader, [out, a]),
    };
    g.dispatch(call, dispatch, move |s| {
        let ad = s.dims(a).to_vec();
        let bd = match b {
            Some(b) => s.dims(b).to_vec(),
            None => Vec::new(),
        };
        let od = broadcast_shapes(&ad, &bd, &what)?;
        if od.len() > MAX_RANK {
            return Err(unsupported(format!(
                "{what}: rank {} exceeds {MAX_RANK}",
                od.len()
            )));
        }
        let numel: usize = od.iter().product();
        let sa = broadcast_strides(&ad, &od);
        let sb = broadcast_strides(&bd, &od);
        // The shader takes dims innermost first.
        let rev = |v: &[usize]| -> Result<Vec<u32>> {
            v.iter().rev().map(|&x| to_u32(x, "size")).collect()
        };
        let push = Push::new()
            .u32(to_u32(numel, "numel")?)
            .u32(od.len() as u32)
            .f32(alpha)
            .u32(0)
            .u32_array(&rev(&od)?, MAX_RANK, 1)
            .u32_array(&rev(&sa)?, MAX_RANK, 0)
            .u32_array(&rev(&sb)?, MAX_RANK, 0)
            .finish();
        s.set_dims(out, od)?;
        Ok(Launch {
            push,
            global: Global::Linear(numel.div_ceil(per_invocation) as u64),
        })
    })
}
