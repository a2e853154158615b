//! Grid ops of vision models:
//! - `aten.grid_sampler_2d.default` `[input [N, C, H, W], grid [N, Ho, Wo, 2],
//!   interpolation_mode Int (0 bilinear, 1 nearest, 2 bicubic), padding_mode Int (0 zeros,
//!   1 border, 2 reflection), align_corners Bool, out [N, C, Ho, Wo]]` — every mode PyTorch
//!   has (ExecuTorch's own kernel takes only bilinear / border / align_corners, the
//!   configuration of RIFE's warp);
//! - `et_vk.grid_priors.default` `[x [.., H, W], stride Int, offset Double, out [H W, 2]]`:
//!   the anchor centres of a detection head.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push};
use crate::ops::float_shader;
use crate::registry::Registry;

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register_dynamic(
        FLOATS,
        &[
            (
                "aten.grid_sampler_2d.default",
                build_grid_sampler_2d,
                "input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]) as PyTorch: bilinear / nearest (half to even) / bicubic (A = -0.75), padding zeros / border / reflection, align_corners; fp32 math",
            ),
            (
                "et_vk.grid_priors.default",
                build_grid_priors,
                "[H W, 2] of ((w + offset) * stride, (h + offset) * stride) for x [.., H, W], in fp32 as PyTorch",
            ),
        ],
    )
}

/// An Int arg within `0..=max`, named for errors.
fn mode_arg(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
    role: &str,
    names: &str,
    max: i64,
) -> Result<u32> {
    let v = g.int_arg(call, i)?;
    if !(0..=max).contains(&v) {
        return Err(unsupported(format!(
            "{}: {role} {v} is not supported ({names})",
            call.what()
        )));
    }
    Ok(v as u32)
}

fn build_grid_sampler_2d(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let grid = g.tensor_or_prepack(call, 1)?;
    let mode = mode_arg(
        g,
        call,
        2,
        "interpolation_mode",
        "0 bilinear, 1 nearest, 2 bicubic",
        2,
    )?;
    let pad = mode_arg(
        g,
        call,
        3,
        "padding_mode",
        "0 zeros, 1 border, 2 reflection",
        2,
    )?;
    let av = call.arg(4)?;
    let align = match g.value(av)? {
        GValue::Bool(b) => *b,
        GValue::Int(v) if *v == 0 || *v == 1 => *v == 1,
        other => {
            return Err(invalid_program(format!(
                "{what} arg 4 (value {av}): align_corners must be a Bool, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let out = g.tensor_arg(call, 5)?;
    let s = g.shapes();
    let (xd, gd) = (s.max_dims(x).to_vec(), s.max_dims(grid).to_vec());
    if xd.len() != 4 || gd.len() != 4 || gd[3] != 2 || s.max_dims(out).len() != 4 {
        return Err(invalid_program(format!(
            "{what}: input {xd:?} / grid {gd:?} / output {:?} must be [N, C, H, W] / [N, Ho, Wo, 2] / [N, C, Ho, Wo]",
            s.max_dims(out)
        )));
    }
    if s.dtype(grid) != s.dtype(x) || s.dtype(out) != s.dtype(x) {
        return Err(invalid_program(format!(
            "{what}: input, grid and output dtypes differ ({}, {}, {})",
            s.dtype(x).name(),
            s.dtype(grid).name(),
            s.dtype(out).name()
        )));
    }
    let shader = float_shader("grid_sampler", s.dtype(x), call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x, grid]), move |s| {
        let (xd, gd) = (s.dims(x).to_vec(), s.dims(grid).to_vec());
        if gd[0] != xd[0] || gd[3] != 2 {
            return Err(invalid_arg(format!(
                "{what}: grid {gd:?} must be [N = {}, Ho, Wo, 2] for input {xd:?}",
                xd[0]
            )));
        }
        if xd[2] == 0 || xd[3] == 0 {
            return Err(invalid_arg(format!(
                "{what}: input {xd:?} has an empty image"
            )));
        }
        let od = vec![xd[0], xd[1], gd[1], gd[2]];
        let total: usize = od.iter().product();
        s.set_dims(out, od)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(xd[1], "C")?)
                .u32(to_u32(xd[2], "H")?)
                .u32(to_u32(xd[3], "W")?)
                .u32(to_u32(gd[1], "Ho")?)
                .u32(to_u32(gd[2], "Wo")?)
                .u32(to_u32(total, "elements")?)
                .u32(mode)
                .u32(pad)
                .u32(u32::from(align))
                .finish(),
            global: Global::Linear(total as u64),
        })
    })
}

fn build_grid_priors(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let stride = g.int_arg(call, 1)?;
    let offset = g.double_arg_or(call, 2, 0.0)?;
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    if s.max_dims(x).len() < 2 || s.max_dims(out).len() != 2 {
        return Err(invalid_program(format!(
            "{what}: input {:?} needs rank >= 2 ([.., H, W]) and the output {:?} rank 2 ([H W, 2])",
            s.max_dims(x),
            s.max_dims(out)
        )));
    }
    let shader = float_shader("grid_priors", s.dtype(out), call)?;
    let (stride, offset) = (stride as f32, offset as f32);
    g.dispatch(call, Dispatch::new(shader, [out]), move |s| {
        let xd = s.dims(x);
        let (h, w) = (xd[xd.len() - 2], xd[xd.len() - 1]);
        let total = h * w * 2;
        s.set_dims(out, vec![h * w, 2])?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(w, "W")?)
                .u32(to_u32(total, "elements")?)
                .f32(offset)
                .f32(stride)
                .finish(),
            global: Global::Linear(total as u64),
        })
    })
}
