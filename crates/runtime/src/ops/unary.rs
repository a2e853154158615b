//! Elementwise unary ops on the `unary_{op}` shaders (computed in float for every storage
//! type): `aten.relu.default`, `aten.sigmoid.default`, `abs`, `neg`, `exp`, `sqrt`, `rsqrt`,
//! `sin`, `cos`, `tanh` (`[x, out]`), `aten.gelu.default` (`[x, approximate, out]`),
//! `aten.hardtanh.default` (`[x, min_val, max_val, out]`), `aten.clamp.default`
//! (`[x, min, max, out]`), `aten.leaky_relu.default` (`[x, negative_slope, out]`),
//! `aten.hardswish.default` (`[x, out]`; the exporter decomposes hardsigmoid), and the
//! ReLU gradient `aten.threshold_backward.default` (`[grad_output, self, threshold, out]`).
//! `aten.silu.default` (`[x, out]`) has its own `silu` shader.
//! `aten.log10.default`, `aten.round.default` (`[x, out]`; round half to even) and
//! `aten.hardshrink.default` (`[x, lambd, out]`, `lambd` a Double; the exporter
//! decomposes hardshrink into abs / le / where, so only a hand-written graph carries it).

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push};
use crate::ops::{float_shader, same_dtype};
use crate::registry::{OpBuildFn, OpEntry, Registry};

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let entries: [(&'static str, OpBuildFn, &'static str); 17] = [
        ("aten.relu.default", build_relu, "max(x, 0)"),
        ("aten.sigmoid.default", build_sigmoid, "1 / (1 + exp(-x))"),
        ("aten.abs.default", build_abs, "|x|"),
        ("aten.neg.default", build_neg, "-x"),
        ("aten.exp.default", build_exp, "e^x"),
        ("aten.sqrt.default", build_sqrt, "sqrt(x) (NaN for x < 0)"),
        ("aten.rsqrt.default", build_rsqrt, "1 / sqrt(x)"),
        ("aten.sin.default", build_sin, "sin(x)"),
        ("aten.cos.default", build_cos, "cos(x)"),
        ("aten.tanh.default", build_tanh, "tanh(x)"),
        (
            "aten.gelu.default",
            build_gelu,
            "approximate \"none\": x * Phi(x) (erf, max error 1.5e-7); \"tanh\": tanh form",
        ),
        (
            "aten.hardtanh.default",
            build_hardtanh,
            "min(max(x, min_val), max_val)",
        ),
        (
            "aten.leaky_relu.default",
            build_leaky_relu,
            "x >= 0 ? x : negative_slope * x",
        ),
        (
            "aten.hardswish.default",
            build_hardswish,
            "x * min(max(x + 3, 0), 6) / 6 (-inf gives NaN, as PyTorch)",
        ),
        (
            "aten.log10.default",
            build_log10,
            "log10(x) as log2(x) * log10(2) (0 -> -inf, x < 0 -> NaN)",
        ),
        (
            "aten.round.default",
            build_round,
            "round half to even, as torch.round (2.5 -> 2, -0.5 -> -0)",
        ),
        (
            "aten.hardshrink.default",
            build_hardshrink,
            "-lambd <= x <= lambd ? 0 : x (lambd Double or Int, default 0.5; NaN stays NaN)",
        ),
    ];
    r.register_dynamic(FLOATS, &entries)?;
    r.register_dynamic(
        &[DataType::Float32, DataType::Float16, DataType::Int32],
        &[(
            "aten.clamp.default",
            build_clamp as OpBuildFn,
            "min(max(x, min), max); min / max Double, Int, SymInt or None (not both None); int32 x takes Int / SymInt bounds, compared as integers",
        )],
    )?;
    r.register(OpEntry {
        name: "aten.threshold_backward.default",
        build: build_threshold_backward,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "self <= threshold ? 0 : grad_output (ReLU gradient); same shapes",
    })?;
    r.register_dynamic(
        FLOATS,
        &[(
            "aten.silu.default",
            build_silu,
            "x * sigmoid(x), as x / (1 + exp(-x))",
        )],
    )?;
    Ok(())
}

/// `[x, out]` on the `silu` shader.
fn build_silu(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(2)?;
    if crate::ops::fusion::plan_from(g, call)? {
        return Ok(());
    }
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, 1)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let shader = float_shader("silu", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let dims = s.dims(x).to_vec();
        let numel: usize = dims.iter().product();
        s.set_dims(out, dims)?;
        Ok(Launch {
            push: Push::new().u32(to_u32(numel, "numel")?).finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

/// `[grad_output, self, threshold, out]`: the gradient of `threshold(self, threshold, 0)`
/// (ReLU when `threshold == 0`), as autograd emits it.
fn build_threshold_backward(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let grad = g.tensor_or_prepack(call, 0)?;
    let x = g.tensor_or_prepack(call, 1)?;
    let threshold = g.double_arg_or(call, 2, 0.0)? as f32;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(grad), s.dtype(x), s.dtype(out)])?;
    let shader = float_shader("threshold_backward", dt, call)?;
    let what = call.what();
    g.dispatch(call, Dispatch::new(shader, [out, grad, x]), move |s| {
        let dims = s.dims(grad).to_vec();
        if s.dims(x) != dims.as_slice() {
            return Err(crate::error::invalid_arg(format!(
                "{what}: grad_output sizes {dims:?} differ from self sizes {:?}",
                s.dims(x)
            )));
        }
        let numel: usize = dims.iter().product();
        s.set_dims(out, dims)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .f32(threshold)
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

fn build_relu(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "relu")
}
fn build_sigmoid(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    if crate::ops::fusion::plan_from(g, call)? {
        return Ok(());
    }
    build_simple(g, call, "sigmoid")
}
fn build_abs(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "abs")
}
fn build_neg(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "neg")
}
fn build_exp(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "exp")
}
fn build_sqrt(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "sqrt")
}
fn build_rsqrt(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "rsqrt")
}
fn build_sin(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "sin")
}
fn build_cos(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "cos")
}
fn build_tanh(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "tanh")
}
fn build_hardswish(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "hardswish")
}
fn build_log10(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "log10")
}
fn build_round(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_simple(g, call, "round")
}

/// `[x, lambd, out]`: the exporter writes `lambd` as a Double (0.5 when left at its
/// default); `Null` reads as that default.
fn build_hardshrink(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let lambd = g.double_arg_or(call, 1, 0.5)? as f32;
    build_unary(g, call, "hardshrink", [lambd, 0.0])
}

/// `[x, out]`: no parameters.
fn build_simple(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, op: &str) -> Result<()> {
    call.expect_args(2)?;
    build_unary(g, call, op, [0.0, 0.0])
}

/// `[x, approximate, out]`: `approximate` is the String `"none"` (erf form) or `"tanh"`;
/// `Null` is read as the schema default `"none"`.
fn build_gelu(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let v = call.arg(1)?;
    let op = match g.value(v)? {
        GValue::Null => "gelu",
        GValue::String(s) if s == "none" => "gelu",
        GValue::String(s) if s == "tanh" => "gelu_tanh",
        GValue::String(s) => {
            return Err(unsupported(format!(
                "{}: approximate {s:?} is not supported (\"none\" or \"tanh\")",
                call.what()
            )))
        }
        other => {
            return Err(invalid_program(format!(
                "{} arg 1 (value {v}): approximate must be a String, got {}",
                call.what(),
                gvalue_kind(other)
            )))
        }
    };
    build_unary(g, call, op, [0.0, 0.0])
}

/// `[x, min_val, max_val, out]` (the exporter writes the defaults -1, 1 as Doubles).
fn build_hardtanh(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let lo = g.double_arg_or(call, 1, -1.0)? as f32;
    let hi = g.double_arg_or(call, 2, 1.0)? as f32;
    build_unary(g, call, "clamp", [lo, hi])
}

/// `[x, min, max, out]`: each bound a Double, an Int, a SymInt (read at every resize: the
/// exporter's replicate padding clamps index tensors to `size - 1`) or `Null` (no bound on
/// that side, passed to the shader as an infinity); PyTorch rejects both `None`, and so do we.
fn build_clamp(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    if is_null(g, call, 1)? && is_null(g, call, 2)? {
        return Err(invalid_program(format!(
            "{}: at least one of min and max must not be None",
            call.what()
        )));
    }
    let x = g.tensor_or_prepack(call, 0)?;
    let int = g.shapes().dtype(x) == DataType::Int32;
    let bound = |i: usize, none: f64| -> Result<Param> {
        let v = call.arg(i)?;
        match g.value(v)? {
            GValue::SymInt => Ok(Param::Sym { value: v, int }),
            GValue::Null if int => Ok(Param::int(none)),
            GValue::Int(n) if int => Ok(Param::int(*n as f64)),
            // The exporter serializes equal scalars once: an Int bound may share a Double's
            // value.
            GValue::Double(x) if int && crate::builder::integral(*x).is_some() => {
                Ok(Param::int(*x))
            }
            // Int bounds only: a Double bound would promote the result to float in PyTorch.
            _ if int => Err(unsupported(format!(
                "{}: arg {i}: an int32 clamp takes Int or SymInt bounds (or None)",
                call.what()
            ))),
            _ => Ok(Param::Fixed(g.double_arg_or(call, i, none)? as f32)),
        }
    };
    let lo = bound(1, f64::NEG_INFINITY)?;
    let hi = bound(2, f64::INFINITY)?;
    build_unary_with(g, call, "clamp", [lo, hi])
}

/// `[x, negative_slope, out]`.
fn build_leaky_relu(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let slope = g.double_arg_or(call, 1, 0.01)? as f32;
    build_unary(g, call, "leaky_relu", [slope, 0.0])
}

fn is_null(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<bool> {
    Ok(matches!(g.value(call.arg(i)?)?, GValue::Null))
}

/// A shader parameter (`p0`, `p1`): fixed at build time, or a SymInt's current value,
/// read at every resize (as f32, or as i32 bits for the int32 shaders).
#[derive(Debug, Clone, Copy)]
enum Param {
    Fixed(f32),
    Sym { value: usize, int: bool },
}

/// `x` saturated to i32, as the bits an int32 shader reads.
fn i32_bits(x: f64) -> u32 {
    (x.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32) as u32
}

impl Param {
    /// An int32 shader's fixed parameter.
    fn int(x: f64) -> Param {
        Param::Fixed(f32::from_bits(i32_bits(x)))
    }

    fn bits(self, s: &crate::graph::Shapes) -> Result<u32> {
        Ok(match self {
            Param::Fixed(x) => x.to_bits(),
            Param::Sym { value, int: true } => i32_bits(s.scalar(value)?),
            Param::Sym { value, int: false } => (s.scalar(value)? as f32).to_bits(),
        })
    }
}

/// `out = op(x)` elementwise with `x = arg 0` (a tensor or a constant), `out` the last arg
/// and `params` the shader's `p0`, `p1`.
fn build_unary(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    op: &str,
    params: [f32; 2],
) -> Result<()> {
    build_unary_with(g, call, op, params.map(Param::Fixed))
}

fn build_unary_with(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    op: &str,
    params: [Param; 2],
) -> Result<()> {
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let shader = if dt == DataType::Int32 && op == "clamp" {
        crate::ops::data_shader(&format!("unary_{op}"), dt, call)?
    } else {
        float_shader(&format!("unary_{op}"), dt, call)?
    };
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let dims = s.dims(x).to_vec();
        let numel: usize = dims.iter().product();
        s.set_dims(out, dims)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .u32(params[0].bits(s)?)
                .u32(params[1].bits(s)?)
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}
