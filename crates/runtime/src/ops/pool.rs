//! 2-D pooling over the trailing two dims of a rank-3 (`[C, H, W]`) or rank-4
//! (`[N, C, H, W]`) float tensor, on the `pool2d_{max,avg}` shaders:
//!
//! - `aten.max_pool2d_with_indices.default` (`[x, kernel_size, stride, padding, dilation,
//!   ceil_mode, out ValueList(values, indices)]`): the exporter gives the indices tensor
//!   dtype int32 in the VkGraph (int64 in the program; staging converts). They are always
//!   computed: PyTorch's flat index `h * W + w` into the input plane.
//! - `aten.max_pool2d.default` (`[x, kernel_size, stride, padding, dilation, ceil_mode,
//!   out]`): the values alone (`pool2d_max_noidx`). executorch 1.5.1 decomposes it into
//!   max_pool2d_with_indices before partitioning; the argument list is the exporter's
//!   serialization of the schema (checked with the op kept from decomposition).
//! - `aten.avg_pool2d.default` (`[x, kernel_size, stride, padding, ceil_mode,
//!   count_include_pad, divisor_override Int|None, out]`).
//!
//! `kernel_size`, `padding`, `dilation` are IntLists of 1 or 2 entries, `stride` of 0
//! (= kernel_size), 1 or 2, as PyTorch accepts them. The output sizes follow PyTorch's
//! `pooling_output_shape` (with ceil_mode, a last window that would start in the right
//! padding is dropped) and are recomputed at every resize.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push, TensorId};
use crate::ops::{float_shader, same_dtype};
use crate::registry::Registry;

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register_dynamic(
        FLOATS,
        &[
            (
                "aten.max_pool2d_with_indices.default",
                build_max_pool2d_with_indices,
                "max over each (dilated) window of the last two dims, rank 3 or 4; padding is -inf, pad <= kernel / 2; ceil_mode; NaN propagates, ties keep the first; indices (int32 in the graph) = h * W + w in the input plane",
            ),
            (
                "aten.max_pool2d.default",
                build_max_pool2d,
                "max_pool2d_with_indices without the indices: max over each (dilated) window of the last two dims, rank 3 or 4; padding is -inf, pad <= kernel / 2; ceil_mode; NaN propagates",
            ),
            (
                "aten.avg_pool2d.default",
                build_avg_pool2d,
                "mean over each window of the last two dims, rank 3 or 4; pad <= kernel / 2; ceil_mode, count_include_pad, divisor_override (nonzero Int or None); float accumulation",
            ),
        ],
    )
}

/// Window parameters, (h, w) pairs.
#[derive(Debug, Clone, Copy)]
struct Window {
    kernel: [i64; 2],
    stride: [i64; 2],
    pad: [i64; 2],
    dilation: [i64; 2],
    ceil_mode: bool,
}

/// An IntList arg of 1 or 2 entries (one entry is used for both dims); `empty` is what an
/// empty list means (the stride's default), or `None` when it is an error.
fn pair_arg(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
    role: &str,
    empty: Option<[i64; 2]>,
) -> Result<[i64; 2]> {
    let l = g.int_list_arg(call, i)?;
    match (l.as_slice(), empty) {
        ([x], _) => Ok([*x, *x]),
        ([h, w], _) => Ok([*h, *w]),
        ([], Some(d)) => Ok(d),
        _ => Err(invalid_program(format!(
            "{} arg {i} (value {}): {role} {l:?} must have {} entries",
            call.what(),
            call.arg(i)?,
            if empty.is_some() {
                "0, 1 or 2"
            } else {
                "1 or 2"
            }
        ))),
    }
}

fn bool_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize, role: &str) -> Result<bool> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Bool(b) => Ok(*b),
        GValue::Int(x) if *x == 0 || *x == 1 => Ok(*x == 1),
        other => Err(invalid_program(format!(
            "{} arg {i} (value {v}): {role} must be a Bool, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// PyTorch's checks of the window parameters (`pool2d_shape_check`), at load.
fn check_window(call: &OpCall<'_>, w: &Window) -> Result<()> {
    let what = call.what();
    for (role, v, min) in [
        ("kernel_size", w.kernel, 1),
        ("stride", w.stride, 1),
        ("padding", w.pad, 0),
        ("dilation", w.dilation, 1),
    ] {
        if v.iter().any(|&x| x < min || x > i64::from(i32::MAX)) {
            return Err(invalid_program(format!(
                "{what}: {role} {v:?} must be >= {min} in both dims"
            )));
        }
    }
    if w.pad[0] > w.kernel[0] / 2 || w.pad[1] > w.kernel[1] / 2 {
        return Err(invalid_program(format!(
            "{what}: padding {:?} must be at most half of kernel_size {:?}",
            w.pad, w.kernel
        )));
    }
    Ok(())
}

/// PyTorch's `pooling_output_shape` for one dim, or `None` when it is below 1.
fn out_size(
    input: usize,
    k: i64,
    pad: i64,
    stride: i64,
    dilation: i64,
    ceil: bool,
) -> Option<usize> {
    // i128: the load-time checks bound every parameter by i32::MAX, so nothing overflows.
    let (input, k, pad, stride, dilation) = (
        input as i128,
        i128::from(k),
        i128::from(pad),
        i128::from(stride),
        i128::from(dilation),
    );
    let n = input + 2 * pad - dilation * (k - 1) - 1 + if ceil { stride - 1 } else { 0 };
    let mut o = n.div_euclid(stride) + 1;
    // With ceil_mode the last window must start inside the input or the left padding.
    if ceil && (o - 1) * stride >= input + pad {
        o -= 1;
    }
    if o >= 1 {
        usize::try_from(o).ok()
    } else {
        None
    }
}

/// Output sizes of pooling `x` of sizes `xd` (rank 3 or 4) with `w`.
fn pooled_dims(xd: &[usize], w: &Window) -> Result<Vec<usize>> {
    let r = xd.len();
    let (h, wd) = (xd[r - 2], xd[r - 1]);
    let oh = out_size(
        h,
        w.kernel[0],
        w.pad[0],
        w.stride[0],
        w.dilation[0],
        w.ceil_mode,
    );
    let ow = out_size(
        wd,
        w.kernel[1],
        w.pad[1],
        w.stride[1],
        w.dilation[1],
        w.ceil_mode,
    );
    match (oh, ow) {
        (Some(oh), Some(ow)) => {
            let mut od = xd.to_vec();
            od[r - 2] = oh;
            od[r - 1] = ow;
            Ok(od)
        }
        _ => Err(invalid_arg(format!(
            "input sizes {xd:?} give an empty output (kernel_size {:?}, stride {:?}, padding {:?}, dilation {:?}, ceil_mode {})",
            w.kernel, w.stride, w.pad, w.dilation, w.ceil_mode
        ))),
    }
}

/// The input tensor: rank 3 or 4, float.
fn pool_input(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<TensorId> {
    let x = g.tensor_or_prepack(call, 0)?;
    let rank = g.shapes().max_dims(x).len();
    if rank != 3 && rank != 4 {
        return Err(unsupported(format!(
            "{} arg 0 (value {}): input rank {rank} is not supported (3 [C, H, W] or 4 [N, C, H, W])",
            call.what(),
            call.arg(0)?
        )));
    }
    Ok(x)
}

/// The common dtype of `x` and the values output `out`, which must have x's rank.
fn pool_output_dtype(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    out: TensorId,
) -> Result<DataType> {
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(out)])?;
    let rank = s.max_dims(x).len();
    if s.max_dims(out).len() != rank {
        return Err(invalid_program(format!(
            "{}: the output has rank {}, the input rank {rank}",
            call.what(),
            s.max_dims(out).len()
        )));
    }
    Ok(dt)
}

/// The dispatch of either mode: `bindings` in the shader's order, `extra` = (divisor
/// override or 0, count_include_pad).
fn pool_dispatch(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    d: Dispatch,
    x: TensorId,
    outs: Vec<TensorId>,
    w: Window,
    extra: (i32, bool),
) -> Result<()> {
    g.dispatch(call, d, move |s| {
        let xd = s.dims(x).to_vec();
        let od = pooled_dims(&xd, &w)?;
        let r = xd.len();
        let numel: usize = od.iter().product();
        for &o in &outs {
            s.set_dims(o, od.clone())?;
        }
        let i = |v: i64| v as i32;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "numel")?)
                .u32(to_u32(xd[r - 2], "input height")?)
                .u32(to_u32(xd[r - 1], "input width")?)
                .u32(to_u32(od[r - 2], "output height")?)
                .u32(to_u32(od[r - 1], "output width")?)
                .i32(i(w.kernel[0]))
                .i32(i(w.kernel[1]))
                .i32(i(w.stride[0]))
                .i32(i(w.stride[1]))
                .i32(i(w.pad[0]))
                .i32(i(w.pad[1]))
                .i32(i(w.dilation[0]))
                .i32(i(w.dilation[1]))
                .i32(extra.0)
                .u32(u32::from(extra.1))
                .finish(),
            global: Global::Linear(numel as u64),
        })
    })
}

fn build_max_pool2d_with_indices(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(7)?;
    let what = call.what();
    let x = pool_input(g, call)?;
    let kernel = pair_arg(g, call, 1, "kernel_size", None)?;
    let w = Window {
        kernel,
        stride: pair_arg(g, call, 2, "stride", Some(kernel))?,
        pad: pair_arg(g, call, 3, "padding", None)?,
        dilation: pair_arg(g, call, 4, "dilation", None)?,
        ceil_mode: bool_arg(g, call, 5, "ceil_mode")?,
    };
    check_window(call, &w)?;
    let [out, idx] = g.output_tensors(call, 6, "values, indices")?;
    let dt = pool_output_dtype(g, call, x, out)?;
    let s = g.shapes();
    if s.dtype(idx) != DataType::Int32 {
        return Err(unsupported(format!(
            "{what} arg 6: the indices tensor is {}; only int32 indices are supported (the exporter's dtype for them)",
            s.dtype(idx).name()
        )));
    }
    let rank = s.max_dims(x).len();
    if s.max_dims(idx).len() != rank {
        return Err(invalid_program(format!(
            "{what}: the indices tensor has rank {}, the input rank {rank}",
            s.max_dims(idx).len()
        )));
    }
    let shader = float_shader("pool2d_max", dt, call)?;
    pool_dispatch(
        g,
        call,
        Dispatch::new(shader, [out, idx, x]),
        x,
        vec![out, idx],
        w,
        (0, false),
    )
}

/// `[x, kernel_size, stride, padding, dilation, ceil_mode, out]`.
fn build_max_pool2d(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(7)?;
    let x = pool_input(g, call)?;
    let kernel = pair_arg(g, call, 1, "kernel_size", None)?;
    let w = Window {
        kernel,
        stride: pair_arg(g, call, 2, "stride", Some(kernel))?,
        pad: pair_arg(g, call, 3, "padding", None)?,
        dilation: pair_arg(g, call, 4, "dilation", None)?,
        ceil_mode: bool_arg(g, call, 5, "ceil_mode")?,
    };
    check_window(call, &w)?;
    let out = g.tensor_arg(call, 6)?;
    let dt = pool_output_dtype(g, call, x, out)?;
    let shader = float_shader("pool2d_max_noidx", dt, call)?;
    pool_dispatch(
        g,
        call,
        Dispatch::new(shader, [out, x]),
        x,
        vec![out],
        w,
        (0, false),
    )
}

fn build_avg_pool2d(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    let what = call.what();
    let x = pool_input(g, call)?;
    let kernel = pair_arg(g, call, 1, "kernel_size", None)?;
    let w = Window {
        kernel,
        stride: pair_arg(g, call, 2, "stride", Some(kernel))?,
        pad: pair_arg(g, call, 3, "padding", None)?,
        dilation: [1, 1],
        ceil_mode: bool_arg(g, call, 4, "ceil_mode")?,
    };
    check_window(call, &w)?;
    let count_include_pad = bool_arg(g, call, 5, "count_include_pad")?;
    let dv = call.arg(6)?;
    let divisor = match g.value(dv)? {
        GValue::Null => 0,
        GValue::Int(0) => {
            return Err(invalid_program(format!(
                "{what} arg 6 (value {dv}): divisor_override must not be zero"
            )))
        }
        GValue::Int(d) => i32::try_from(*d).map_err(|_| {
            unsupported(format!(
                "{what} arg 6 (value {dv}): divisor_override {d} does not fit int32"
            ))
        })?,
        other => {
            return Err(invalid_program(format!(
                "{what} arg 6 (value {dv}): divisor_override must be an Int or None, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let out = g.tensor_arg(call, 7)?;
    let dt = pool_output_dtype(g, call, x, out)?;
    let shader = float_shader("pool2d_avg", dt, call)?;
    pool_dispatch(
        g,
        call,
        Dispatch::new(shader, [out, x]),
        x,
        vec![out],
        w,
        (divisor, count_include_pad),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_sizes_follow_pytorch() {
        // floor: (9 + 2 - 2 - 1) / 2 + 1 = 5; resnet's stem pool 32 -> 16.
        assert_eq!(out_size(9, 3, 1, 2, 1, false), Some(5));
        assert_eq!(out_size(32, 3, 1, 2, 1, false), Some(16));
        // ceil: (10 + 2 - 4 - 1 + 1) / 2 + 1 = 5, and the last window starts at 8 < 11.
        assert_eq!(out_size(10, 3, 1, 2, 2, true), Some(5));
        // ceil drops a window starting in the right padding: 5, k 2, s 2, p 1 -> 4 by
        // ceil, (4 - 1) * 2 = 6 >= 5 + 1 -> 3.
        assert_eq!(out_size(5, 2, 1, 2, 1, true), Some(3));
        assert_eq!(out_size(6, 2, 0, 2, 1, true), Some(3));
        assert_eq!(out_size(7, 2, 0, 2, 1, true), Some(4));
        assert_eq!(out_size(7, 2, 0, 2, 1, false), Some(3));
        assert_eq!(out_size(1, 3, 0, 1, 1, false), None);
        assert_eq!(out_size(2, 3, 1, 1, 2, false), None);
    }
}
