//! Elementwise unary ops on the `unary_{op}` shaders (computed in float for every storage
//! type): `aten.relu.default`, `aten.sigmoid.default` (`[x, out]`), and the ReLU gradient
//! `aten.threshold_backward.default` (`[grad_output, self, threshold, out]`).

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{Dispatch, GraphBuilder, OpCall};
use crate::graph::{to_u32, Global, Launch, Push};
use crate::ops::{float_shader, same_dtype};
use crate::registry::{OpBuildFn, OpEntry, Registry};

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let entries: [(&'static str, OpBuildFn, &'static str); 2] = [
        ("aten.relu.default", build_relu, "max(x, 0)"),
        ("aten.sigmoid.default", build_sigmoid, "1 / (1 + exp(-x))"),
    ];
    for (name, build, note) in entries {
        r.register(OpEntry {
            name,
            build,
            dtypes: FLOATS,
            dynamic_shapes: true,
            note,
        })?;
    }
    r.register(OpEntry {
        name: "aten.threshold_backward.default",
        build: build_threshold_backward,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "self <= threshold ? 0 : grad_output (ReLU gradient); same shapes",
    })?;
    Ok(())
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
    build_unary(g, call, "relu")
}
fn build_sigmoid(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    build_unary(g, call, "sigmoid")
}

/// `[x, out]`: `out = op(x)` elementwise, `x` a tensor or a constant.
fn build_unary(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, op: &str) -> Result<()> {
    call.expect_args(2)?;
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, 1)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let shader = float_shader(&format!("unary_{op}"), dt, call)?;
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
