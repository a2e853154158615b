//! Ops of the Llama transformer block that need their own kernels:
//! `et_vk.rms_norm.default` (`[x, weight, eps, out]`), `aten._softmax.default`
//! (`[x, dim, half_to_float, out]`) and `et_vk.apply_rotary_emb.default`
//! (`[xq, xk, freqs_cos, freqs_sin, ValueList(xq_out, xk_out)]`).
//!
//! The reductions run one 64-lane workgroup per row with a loop over the row and a
//! shared-memory tree (no subgroup size assumed), so rows of any length work. Math is in
//! float for fp16 storage too.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push, TensorId};
use crate::ops::training::folded_grid;
use crate::ops::{float_shader, norm_dim, same_dtype};
use crate::registry::{OpEntry, Registry};

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
/// Local size of the `rms_norm` / `softmax` shaders (their `LANES`).
const LANES: u32 = 64;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register(OpEntry {
        name: "et_vk.rms_norm.default",
        build: build_rms_norm,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "x * rsqrt(mean(x^2, last dim) + eps) * weight; weight [N], any leading dims; fp32 math",
    })?;
    r.register(OpEntry {
        name: "aten._softmax.default",
        build: build_softmax,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "max-shifted softmax along any dim (negative allowed); half_to_float must be false for fp16",
    })?;
    r.register(OpEntry {
        name: "et_vk.apply_rotary_emb.default",
        build: build_rotary,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "Llama interleaved-pair RoPE on xq / xk [B, S, H, D] with freqs_cos / freqs_sin [S, D/2]",
    })?;
    Ok(())
}

/// `[x, weight, eps, out]`: RMSNorm over the last dim.
fn build_rms_norm(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let x = g.tensor_or_prepack(call, 0)?;
    let w = g.tensor_or_prepack(call, 1)?;
    let eps = g.double_arg_or(call, 2, 1e-6)? as f32;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(w), s.dtype(out)])?;
    let shader = float_shader("rms_norm", dt, call)?;
    let what = call.what();
    g.dispatch(call, Dispatch::new(shader, [out, x, w]), move |s| {
        let dims = s.dims(x).to_vec();
        let n = *dims
            .last()
            .ok_or_else(|| invalid_arg(format!("{what}: x is rank 0; RMSNorm needs a last dim")))?;
        if s.numel(w) != n || s.dims(w).len() != 1 {
            return Err(invalid_arg(format!(
                "{what}: weight sizes {:?} must be [{n}] (the last dim of x {dims:?})",
                s.dims(w)
            )));
        }
        let rows = s.numel(x).checked_div(n).unwrap_or(0);
        s.set_dims(out, dims)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(rows, "rows")?)
                .u32(to_u32(n, "N")?)
                .f32(eps)
                .u32(0)
                .finish(),
            global: folded_grid(rows as u64, [LANES, 1, 1], &what)?,
        })
    })
}

/// `[x, dim, half_to_float, out]`: softmax along `dim`.
fn build_softmax(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let x = g.tensor_or_prepack(call, 0)?;
    let dim = g.int_arg(call, 1)?;
    let half_to_float = g.int_arg(call, 2)? != 0;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let what = call.what();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    if half_to_float && dt != DataType::Float32 {
        return Err(unsupported(format!(
            "{what}: half_to_float = true is not supported (input and output dtypes must match)"
        )));
    }
    // A rank-0 tensor softmaxes as one element (PyTorch accepts dim 0 / -1 there).
    let rank = s.max_dims(x).len();
    let d = norm_dim(dim, rank.max(1), &what)?;
    let shader = float_shader("softmax", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let dims = s.dims(x).to_vec();
        let (outer, len, inner) = if dims.is_empty() {
            (1, 1, 1)
        } else {
            (
                dims[..d].iter().product::<usize>(),
                dims[d],
                dims[d + 1..].iter().product::<usize>(),
            )
        };
        let lines = if len == 0 { 0 } else { outer * inner };
        s.set_dims(out, dims)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(lines, "lines")?)
                .u32(to_u32(len, "dim size")?)
                .u32(to_u32(inner.max(1), "inner")?)
                .u32(0)
                .finish(),
            global: folded_grid(lines as u64, [LANES, 1, 1], &what)?,
        })
    })
}

/// `[xq, xk, freqs_cos, freqs_sin, ValueList(xq_out, xk_out)]`: one dispatch per output.
fn build_rotary(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(5)?;
    let what = call.what();
    let xq = g.tensor_or_prepack(call, 0)?;
    let xk = g.tensor_or_prepack(call, 1)?;
    let cos = g.tensor_or_prepack(call, 2)?;
    let sin = g.tensor_or_prepack(call, 3)?;
    let lv = call.arg(4)?;
    let outs: Vec<TensorId> = match g.value(lv)? {
        GValue::ValueList(ids) if ids.len() == 2 => ids
            .iter()
            .map(|&id| match g.value(id)? {
                GValue::Tensor(t) => Ok(*t),
                other => Err(invalid_program(format!(
                    "{what} arg 4: output value {id} is {}, expected a tensor",
                    gvalue_kind(other)
                ))),
            })
            .collect::<Result<_>>()?,
        other => {
            return Err(invalid_program(format!(
                "{what} arg 4 (value {lv}): expected a ValueList of 2 output tensors, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let s = g.shapes();
    let dt = same_dtype(
        call,
        &[
            s.dtype(xq),
            s.dtype(xk),
            s.dtype(cos),
            s.dtype(sin),
            s.dtype(outs[0]),
            s.dtype(outs[1]),
        ],
    )?;
    let shader = float_shader("rotary", dt, call)?;
    for (x, out) in [(xq, outs[0]), (xk, outs[1])] {
        let what = what.clone();
        g.dispatch(call, Dispatch::new(shader, [out, x, cos, sin]), move |s| {
            let dims = s.dims(x).to_vec();
            let &[_, seq, heads, d] = dims.as_slice() else {
                return Err(invalid_arg(format!(
                    "{what}: input sizes {dims:?} must be [B, S, H, D]"
                )));
            };
            if d % 2 != 0 {
                return Err(invalid_arg(format!(
                    "{what}: head dim {d} of {dims:?} must be even (interleaved pairs)"
                )));
            }
            let want = [seq, d / 2];
            for f in [cos, sin] {
                if s.dims(f) != want {
                    return Err(invalid_arg(format!(
                        "{what}: freqs sizes {:?} must be [S, D/2] = {want:?} for input {dims:?}",
                        s.dims(f)
                    )));
                }
            }
            let pairs = s.numel(x) / 2;
            s.set_dims(out, dims)?;
            Ok(Launch {
                push: Push::new()
                    .u32(to_u32(pairs, "pairs")?)
                    .u32(to_u32((d / 2).max(1), "D/2")?)
                    .u32(to_u32(heads.max(1), "H")?)
                    .u32(to_u32(seq.max(1), "S")?)
                    .finish(),
                global: Global::Linear(pairs as u64),
            })
        })?;
    }
    Ok(())
}
