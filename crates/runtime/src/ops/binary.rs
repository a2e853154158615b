//! Elementwise binary ops with PyTorch broadcasting on the `binary_{op}` shaders:
//! `aten.add.Tensor`, `aten.sub.Tensor` (`[a, b, alpha, out]`), `aten.mul.Tensor`,
//! `aten.div.Tensor`, `aten.minimum.default`, `aten.maximum.default`,
//! `aten.pow.Tensor_Tensor` (`[a, b, out]`), and `aten.pow.Tensor_Scalar`
//! (`[a, exponent, out]`, the exponent in the push constants).

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, GValue};
use crate::builder::{Dispatch, GraphBuilder, OpCall};
use crate::error::{invalid_program, unsupported};
use crate::graph::{broadcast_shapes, broadcast_strides, to_u32, Global, Launch, Push, TensorId};
use crate::ops::{float_shader, same_dtype};
use crate::registry::Registry;

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
/// Rank limit of the shader's push constants.
const MAX_RANK: usize = 8;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let entries = [
        (
            "aten.add.Tensor",
            build_add as crate::registry::OpBuildFn,
            "a + alpha * b, broadcasting",
        ),
        ("aten.sub.Tensor", build_sub, "a - alpha * b, broadcasting"),
        ("aten.mul.Tensor", build_mul, "a * b, broadcasting"),
        (
            "aten.div.Tensor",
            build_div,
            "a / b (true division), broadcasting",
        ),
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
    Ok(())
}

fn build_add(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_binary(g, call, "add", true)
}
fn build_sub(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_binary(g, call, "sub", true)
}
fn build_mul(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
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
    let shader = float_shader(&format!("binary_{op}"), dt, call)?;
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
            global: Global::Linear(numel as u64),
        })
    })
}
