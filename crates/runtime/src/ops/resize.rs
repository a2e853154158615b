//! Spatial resampling and rearrangement, as executorch 1.5.1's Vulkan partitioner delegates
//! them (segmentation heads, UNet-style decoders, super-resolution):
//!
//! - `aten.upsample_nearest2d.vec` (`[x, output_size IntList|None, scale_factors
//!   DoubleList|None, out]`) and `aten.upsample_bilinear2d.vec` (`[x, output_size,
//!   align_corners Bool, scale_factors, out]`), on the `upsample2d_{nearest,bilinear}`
//!   shaders. Exactly one of output_size and scale_factors is given (PyTorch's
//!   `compute_output_size`): the output sizes are output_size, or `trunc(in * scale)` per
//!   dim, recomputed at every resize. The input is `[N, C, H, W]` (PyTorch takes 4-D only).
//!   Source indices follow ATen's `UpSample.h` in float arithmetic: the scale is `1 / scale`
//!   when scale_factors are given, else `in / out` (`compute_scales_value`); bilinear with
//!   align_corners uses `(in - 1) / (out - 1)` (0 when out == 1). `F.interpolate(...,
//!   mode="nearest-exact")` is not one of these: the exporter decomposes it (arange, mul,
//!   index.Tensor).
//! - `aten.constant_pad_nd.default` (`[x, pad IntList, value, out]`, `F.pad` in constant
//!   mode): pairs `(before, after)` from the last dim backwards, negative entries crop; any
//!   rank up to 8; float32, float16, int32 on the `pad` shaders.
//! - `aten.pixel_shuffle.default` (`[x, upscale_factor Int, out]`): `[*, C r^2, H, W] ->
//!   [*, C, H r, W r]`, rank >= 3, on the `pixel_shuffle` shaders.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push, Shapes, TensorId};
use crate::ops::shape::{size_items, SizeItem};
use crate::ops::{data_shader, float_shader, same_dtype};
use crate::registry::Registry;

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
const DATA: &[DataType] = &[DataType::Float32, DataType::Float16, DataType::Int32];

/// Ranks the `pad` shader takes (its push constants hold 8 sizes).
const PAD_MAX_RANK: usize = 8;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register_dynamic(
        FLOATS,
        &[
            (
                "aten.upsample_nearest2d.vec",
                build_upsample_nearest2d,
                "nearest upsampling of [N, C, H, W] to output_size or trunc(in * scale_factors) (exactly one given); source min(floor(dst * scale), in - 1) in float with scale 1 / scale_factor or in / out, PyTorch's copy (out == in) and shift (out == 2 in) cases",
            ),
            (
                "aten.upsample_bilinear2d.vec",
                build_upsample_bilinear2d,
                "bilinear upsampling of [N, C, H, W] to output_size or trunc(in * scale_factors) (exactly one given); align_corners true ((in - 1) / (out - 1)) and false (max((dst + 0.5) * scale - 0.5, 0), scale 1 / scale_factor or in / out); out == in copies; float accumulation",
            ),
            (
                "aten.pixel_shuffle.default",
                build_pixel_shuffle,
                "[*, C r^2, H, W] -> [*, C, H r, W r], rank >= 3, upscale_factor r >= 1",
            ),
        ],
    )?;
    r.register_dynamic(
        DATA,
        &[(
            "aten.constant_pad_nd.default",
            build_constant_pad_nd,
            "constant padding (F.pad): (before, after) pairs from the last dim backwards, negative entries crop, rank <= 8; the value is cast to the dtype",
        )],
    )
}

// ---- upsampling ----

/// How the output sizes are given.
#[derive(Debug, Clone, Copy)]
enum OutSpec {
    /// output_size: literals or SymInts (read at every resize).
    Sizes([SizeItem; 2]),
    /// scale_factors (finite, > 0).
    Scales([f64; 2]),
}

/// The output sizes for input sizes `xd` (rank 4), or an error when one is below 1.
fn upsampled_dims(s: &Shapes, xd: &[usize], spec: &OutSpec) -> Result<Vec<usize>> {
    if xd.contains(&0) {
        return Err(invalid_arg(format!(
            "input sizes {xd:?}: upsampling needs a non-empty input"
        )));
    }
    let mut od = xd.to_vec();
    for a in 0..2 {
        let o = match spec {
            OutSpec::Sizes(items) => match items[a] {
                SizeItem::Lit(v) => v,
                SizeItem::Sym(id) => s.scalar(id)? as i64,
            },
            // PyTorch's compute_output_size: the double product truncated to int64.
            OutSpec::Scales(sc) => (xd[2 + a] as f64 * sc[a]) as i64,
        };
        if o < 1 {
            return Err(invalid_arg(format!(
                "input sizes {xd:?} with {spec:?} give output size {o} in dim {}; output sizes must be >= 1",
                2 + a
            )));
        }
        od[2 + a] = usize::try_from(o).map_err(|_| invalid_arg(format!("output size {o}")))?;
    }
    Ok(od)
}

/// ATen's `compute_scales_value<float>`: `1 / scale` when a scale factor is given, else
/// `in / out`, in float.
fn scales_value(scale: Option<f64>, input: usize, output: usize) -> f32 {
    match scale {
        Some(s) if s > 0.0 => (1.0 / s) as f32,
        _ => input as f32 / output as f32,
    }
}

/// ATen's `area_pixel_compute_scale<float>` (bilinear).
fn area_scale(align_corners: bool, scale: Option<f64>, input: usize, output: usize) -> f32 {
    if align_corners {
        if output > 1 {
            (input - 1) as f32 / (output - 1) as f32
        } else {
            0.0
        }
    } else {
        scales_value(scale, input, output)
    }
}

/// The output_size (`i_size`) and scale_factors (`i_scales`) args: exactly one given.
fn out_spec(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    i_size: usize,
    i_scales: usize,
) -> Result<OutSpec> {
    let what = call.what();
    let (sv, fv) = (call.arg(i_size)?, call.arg(i_scales)?);
    let size_null = matches!(g.value(sv)?, GValue::Null);
    let scales = match g.value(fv)? {
        GValue::Null => None,
        GValue::DoubleList(l) => Some(l.clone()),
        GValue::IntList(l) => Some(l.iter().map(|&x| x as f64).collect()),
        other => {
            return Err(invalid_program(format!(
                "{what} arg {i_scales} (value {fv}): scale_factors must be a DoubleList or None, got {}",
                gvalue_kind(other)
            )))
        }
    };
    match (size_null, scales) {
        (false, None) => {
            let items = size_items(g, call, i_size)?;
            let [h, w] = items[..] else {
                return Err(invalid_program(format!(
                    "{what} arg {i_size} (value {sv}): output_size must have 2 entries (H, W), got {}",
                    items.len()
                )));
            };
            for it in [h, w] {
                if let SizeItem::Lit(v) = it {
                    if v < 1 {
                        return Err(invalid_program(format!(
                            "{what} arg {i_size} (value {sv}): output_size entry {v} must be >= 1"
                        )));
                    }
                }
            }
            Ok(OutSpec::Sizes([h, w]))
        }
        (true, Some(l)) => {
            let [h, w] = l[..] else {
                return Err(invalid_program(format!(
                    "{what} arg {i_scales} (value {fv}): scale_factors {l:?} must have 2 entries (H, W)"
                )));
            };
            if [h, w].iter().any(|s| !s.is_finite() || *s <= 0.0) {
                return Err(invalid_program(format!(
                    "{what} arg {i_scales} (value {fv}): scale_factors {l:?} must be finite and > 0"
                )));
            }
            Ok(OutSpec::Scales([h, w]))
        }
        (false, Some(_)) | (true, None) => Err(invalid_program(format!(
            "{what}: exactly one of output_size (arg {i_size}, value {sv}) and scale_factors (arg {i_scales}, value {fv}) must be given, got {}",
            if size_null { "neither" } else { "both" }
        ))),
    }
}

/// The input (rank 4, float) and output, checked.
fn upsample_tensors(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    out_i: usize,
) -> Result<(TensorId, TensorId, DataType)> {
    let x = g.tensor_or_prepack(call, 0)?;
    let out = g.tensor_arg(call, out_i)?;
    let s = g.shapes();
    let rank = s.max_dims(x).len();
    if rank != 4 {
        return Err(unsupported(format!(
            "{} arg 0 (value {}): input rank {rank} is not supported (4: [N, C, H, W], as PyTorch requires)",
            call.what(),
            call.arg(0)?
        )));
    }
    if s.max_dims(out).len() != 4 {
        return Err(invalid_program(format!(
            "{} arg {out_i} (value {}): the output has rank {}, the input rank 4",
            call.what(),
            call.arg(out_i)?,
            s.max_dims(out).len()
        )));
    }
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    Ok((x, out, dt))
}

/// The dispatch of either mode (`align_corners`: None for nearest).
fn upsample_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    shader_prefix: &str,
    (x, out, dt): (TensorId, TensorId, DataType),
    spec: OutSpec,
    align_corners: Option<bool>,
) -> Result<()> {
    let shader = float_shader(shader_prefix, dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let od = upsampled_dims(s, &xd, &spec)?;
        s.set_dims(out, od.clone())?;
        let numel: usize = od.iter().product();
        let given = |a: usize| match spec {
            OutSpec::Scales(sc) => Some(sc[a]),
            OutSpec::Sizes(_) => None,
        };
        let scale = |a: usize| match align_corners {
            None => scales_value(given(a), xd[2 + a], od[2 + a]),
            Some(ac) => area_scale(ac, given(a), xd[2 + a], od[2 + a]),
        };
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .u32(to_u32(xd[2], "input height")?)
                .u32(to_u32(xd[3], "input width")?)
                .u32(to_u32(od[2], "output height")?)
                .u32(to_u32(od[3], "output width")?)
                .f32(scale(0))
                .f32(scale(1))
                .u32(u32::from(align_corners == Some(true)))
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

fn build_upsample_nearest2d(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let t = upsample_tensors(g, call, 3)?;
    let spec = out_spec(g, call, 1, 2)?;
    upsample_dispatch(g, call, "upsample2d_nearest", t, spec, None)
}

fn build_upsample_bilinear2d(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(5)?;
    let t = upsample_tensors(g, call, 4)?;
    let av = call.arg(2)?;
    let align_corners = match g.value(av)? {
        GValue::Bool(b) => *b,
        GValue::Int(x) if *x == 0 || *x == 1 => *x == 1,
        other => {
            return Err(invalid_program(format!(
                "{} arg 2 (value {av}): align_corners must be a Bool, got {}",
                call.what(),
                gvalue_kind(other)
            )))
        }
    };
    let spec = out_spec(g, call, 1, 3)?;
    upsample_dispatch(g, call, "upsample2d_bilinear", t, spec, Some(align_corners))
}

// ---- constant_pad_nd ----

/// Output sizes of padding `xd` by `pad` (pairs from the last dim backwards).
fn padded_dims(xd: &[usize], pad: &[i64]) -> Result<Vec<usize>> {
    let r = xd.len();
    let mut od = xd.to_vec();
    for (k, p) in pad.chunks(2).enumerate() {
        let d = r - 1 - k;
        let n = xd[d] as i64 + p[0] + p[1];
        if n < 0 {
            return Err(invalid_arg(format!(
                "input size {} of dim {d} (sizes {xd:?}) with padding ({}, {}) gives a negative size {n}",
                xd[d], p[0], p[1]
            )));
        }
        od[d] = n as usize;
    }
    Ok(od)
}

fn build_constant_pad_nd(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let pv = call.arg(1)?;
    let pad = g.int_list_arg(call, 1)?;
    let vv = call.arg(2)?;
    let value = match g.value(vv)? {
        GValue::Double(v) => *v,
        GValue::Int(v) => *v as f64,
        GValue::Bool(b) => f64::from(u8::from(*b)),
        other => {
            return Err(invalid_program(format!(
                "{what} arg 2 (value {vv}): the pad value must be a number, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let out = g.tensor_arg(call, 3)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = s.max_dims(x).len();
    if !pad.len().is_multiple_of(2) || pad.len() / 2 > rank {
        return Err(invalid_program(format!(
            "{what} arg 1 (value {pv}): pad {pad:?} must have an even length of at most 2 * rank ({})",
            2 * rank
        )));
    }
    if pad.iter().any(|p| p.unsigned_abs() > i32::MAX as u64) {
        return Err(unsupported(format!(
            "{what} arg 1 (value {pv}): pad {pad:?} has entries beyond the int32 range"
        )));
    }
    if rank > PAD_MAX_RANK {
        return Err(unsupported(format!(
            "{what} arg 0 (value {}): input rank {rank} is not supported (at most {PAD_MAX_RANK})",
            call.arg(0)?
        )));
    }
    if s.max_dims(out).len() != rank {
        return Err(invalid_program(format!(
            "{what}: the output has rank {}, the input rank {rank}",
            s.max_dims(out).len()
        )));
    }
    let int_value = if dt == DataType::Int32 {
        if !value.is_finite() || value.trunc() < i32::MIN as f64 || value.trunc() > i32::MAX as f64
        {
            return Err(unsupported(format!(
                "{what} arg 2 (value {vv}): pad value {value} does not fit int32"
            )));
        }
        value.trunc() as i32
    } else {
        0
    };
    let shader = data_shader("pad", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let od = padded_dims(&xd, &pad)?;
        s.set_dims(out, od.clone())?;
        let numel: usize = od.iter().product();
        // Innermost first; every dim's `before` offset (0 for unpadded dims).
        let rev = |d: &[usize]| -> Result<Vec<u32>> {
            d.iter().rev().map(|&v| to_u32(v, "dim size")).collect()
        };
        let mut lo = vec![0u32; rank];
        for (k, p) in pad.chunks(2).enumerate() {
            lo[k] = p[0] as i32 as u32;
        }
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .u32(rank as u32)
                .f32(value as f32)
                .i32(int_value)
                .u32_array(&rev(&od)?, PAD_MAX_RANK, 1)
                .u32_array(&rev(&xd)?, PAD_MAX_RANK, 1)
                .u32_array(&lo, PAD_MAX_RANK, 0)
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

// ---- pixel_shuffle ----

fn build_pixel_shuffle(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let r = g.int_arg(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    if !(1..=i64::from(u16::MAX)).contains(&r) {
        return Err(invalid_program(format!(
            "{what} arg 1 (value {}): upscale_factor {r} must be >= 1 (and at most {})",
            call.arg(1)?,
            u16::MAX
        )));
    }
    let r = r as usize;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = s.max_dims(x).len();
    if rank < 3 {
        return Err(invalid_program(format!(
            "{what} arg 0 (value {}): input rank {rank}; pixel_shuffle needs rank >= 3 ([*, C, H, W])",
            call.arg(0)?
        )));
    }
    if s.max_dims(out).len() != rank {
        return Err(invalid_program(format!(
            "{what}: the output has rank {}, the input rank {rank}",
            s.max_dims(out).len()
        )));
    }
    let shader = float_shader("pixel_shuffle", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x]), move |s| {
        let xd = s.dims(x).to_vec();
        let c = xd[rank - 3];
        if !c.is_multiple_of(r * r) {
            return Err(invalid_arg(format!(
                "input sizes {xd:?}: the channel dim {c} is not divisible by upscale_factor^2 = {}",
                r * r
            )));
        }
        let mut od = xd.clone();
        od[rank - 3] = c / (r * r);
        od[rank - 2] = xd[rank - 2] * r;
        od[rank - 1] = xd[rank - 1] * r;
        s.set_dims(out, od.clone())?;
        let numel: usize = od.iter().product();
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .u32(to_u32(od[rank - 3], "output channels")?)
                .u32(to_u32(xd[rank - 2], "input height")?)
                .u32(to_u32(xd[rank - 1], "input width")?)
                .u32(r as u32)
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_follow_aten() {
        // compute_scales_value<float>: 1 / scale in double, then float.
        assert_eq!(scales_value(Some(1.7), 8, 13), (1.0f64 / 1.7) as f32);
        assert_eq!(scales_value(None, 8, 13), 8.0f32 / 13.0);
        assert_eq!(area_scale(true, Some(2.0), 8, 16), 7.0 / 15.0);
        assert_eq!(area_scale(true, None, 8, 1), 0.0);
        assert_eq!(area_scale(false, Some(2.0), 8, 16), 0.5);
        assert_eq!(
            padded_dims(&[1, 3, 8, 10], &[1, 2, -1, 3]).unwrap(),
            vec![1, 3, 10, 13]
        );
        assert!(padded_dims(&[2, 3], &[-2, -2]).is_err());
    }
}
