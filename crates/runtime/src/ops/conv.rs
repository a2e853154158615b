//! Convolution: `aten.convolution.default` (`[x, weight, bias|None, stride, padding,
//! dilation, transposed, output_padding, groups, out]`) and `et_vk.conv_with_clamp.default`
//! (the same, then `output_min`, `output_max` (Double, Int or None), then `out`; the
//! exporter fuses a following hardtanh / clamp / relu6 into it).
//!
//! 1-D (x `[N, C, L]`) and 2-D (x `[N, C, H, W]`) convolutions, grouped (depthwise
//! included), strided, dilated, padded, and transposed ones (weight `[C_in, C_out / groups,
//! k...]`). A 1-D convolution runs as a 2-D one of height 1. The `conv` shader is direct: one
//! invocation per output element; forward convolutions of at least 256 taps per output run
//! `conv_split`, a workgroup per output element; pointwise ones (1 x 1, stride 1, no padding,
//! one group) run as a matmul per batch on `matmul_tiled_clamp`. The spatial sizes may change between executes; channels
//! come from the weight and are checked against the input at every resize.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push, TensorId};
use crate::ops::matmul::{matmul_launch, MatStrides};
use crate::ops::training::folded_grid;
use crate::ops::{float_shader, same_dtype};
use crate::registry::Registry;

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
/// Taps per output (C_in / groups x kH x kW) from which a forward convolution runs on the
/// `conv_split` kernel.
const SPLIT_MIN_TAPS: usize = 256;
/// 64 x 64 output tiles (at the largest input) from which a pointwise convolution of at
/// least [`SPLIT_MIN_TAPS`] input channels runs as a matmul rather than on `conv_split`.
const POINTWISE_MIN_TILES: usize = 8;
/// Local size of `conv_split` (its `LANES`).
const SPLIT_LANES: u32 = 64;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register_dynamic(
        FLOATS,
        &[
            (
                "aten.convolution.default",
                build_convolution,
                "1-D / 2-D convolution of x [N, C, (H,) W]: groups (depthwise), stride, padding, dilation, transposed (weight [C_in, C_out/groups, k..], output_padding); bias optional; float accumulation",
            ),
            (
                "et_vk.conv_with_clamp.default",
                build_conv_with_clamp,
                "aten.convolution then clamp(output_min, output_max), each bound a number or None",
            ),
        ],
    )
}

/// The geometry of one convolution along its two spatial axes (height first; a 1-D
/// convolution has height 1 with unit kernel, stride and dilation and no padding).
#[derive(Debug, Clone, Copy)]
struct Geometry {
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    output_padding: [usize; 2],
    transposed: bool,
    groups: usize,
    c_in: usize,
    c_out: usize,
}

impl Geometry {
    /// Output extent along axis `a` for an input extent `n`, or `None` when the (dilated)
    /// kernel does not fit in the padded input.
    fn out_extent(&self, a: usize, n: usize) -> Option<usize> {
        let span = self.dilation[a] * (self.kernel[a] - 1) + 1;
        if self.transposed {
            let full = (n.checked_sub(1)? * self.stride[a]) + span + self.output_padding[a];
            full.checked_sub(2 * self.padding[a]).filter(|&e| e > 0)
        } else {
            let padded = n + 2 * self.padding[a];
            padded.checked_sub(span).map(|r| r / self.stride[a] + 1)
        }
    }
}

/// An int-list argument with one entry per spatial dim; a single entry applies to all of
/// them (as PyTorch expands it). Returned height first, 1-D lists padded with `unit`.
fn spatial_arg(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
    name: &str,
    spatial: usize,
    unit: usize,
    min: i64,
) -> Result<[usize; 2]> {
    let list = g.int_list_arg(call, i)?;
    let what = call.what();
    let list = match list.len() {
        1 => vec![list[0]; spatial],
        n if n == spatial => list,
        n => {
            return Err(invalid_program(format!(
                "{what} arg {i}: {name} has {n} entries; a {spatial}-D convolution takes 1 or {spatial}"
            )))
        }
    };
    let mut out = [unit; 2];
    for (k, &v) in list.iter().enumerate() {
        if v < min || v > (1 << 20) {
            return Err(invalid_program(format!(
                "{what} arg {i}: {name} {list:?} must be in {min}..=1048576"
            )));
        }
        out[2 - spatial + k] = v as usize;
    }
    Ok(out)
}

fn build_convolution(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(10)?;
    build(g, call, [f32::NEG_INFINITY, f32::INFINITY])
}

fn build_conv_with_clamp(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(12)?;
    let lo = g.double_arg_or(call, 9, f64::NEG_INFINITY)? as f32;
    let hi = g.double_arg_or(call, 10, f64::INFINITY)? as f32;
    if lo > hi {
        return Err(invalid_program(format!(
            "{}: output_min {lo} exceeds output_max {hi}",
            call.what()
        )));
    }
    build(g, call, [lo, hi])
}

fn build(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, clamp: [f32; 2]) -> Result<()> {
    let what = call.what();
    let x = g.tensor_arg(call, 0)?;
    let w = g.tensor_or_prepack(call, 1)?;
    let b = g.opt_tensor_or_prepack(call, 2)?;
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    let s = g.shapes();
    let mut dts = vec![s.dtype(x), s.dtype(w), s.dtype(out)];
    dts.extend(b.iter().map(|&t| s.dtype(t)));
    let dt = same_dtype(call, &dts)?;
    let rank = s.max_dims(x).len();
    if !(rank == 3 || rank == 4) {
        return Err(unsupported(format!(
            "{what}: input of rank {rank} (sizes {:?}); 1-D ([N, C, L]) and 2-D ([N, C, H, W]) convolutions are supported",
            s.max_dims(x)
        )));
    }
    let wd = s.max_dims(w).to_vec();
    if wd.len() != rank {
        return Err(invalid_program(format!(
            "{what}: weight sizes {wd:?} must have the input's rank {rank}"
        )));
    }
    let spatial = rank - 2;
    let stride = spatial_arg(g, call, 3, "stride", spatial, 1, 1)?;
    let padding = spatial_arg(g, call, 4, "padding", spatial, 0, 0)?;
    let dilation = spatial_arg(g, call, 5, "dilation", spatial, 1, 1)?;
    let transposed = match g.value(call.arg(6)?)? {
        GValue::Bool(t) => *t,
        _ => g.int_arg(call, 6)? != 0,
    };
    let output_padding = spatial_arg(g, call, 7, "output_padding", spatial, 0, 0)?;
    let groups = g.int_arg(call, 8)?;
    if !(1..=1 << 20).contains(&groups) {
        return Err(invalid_program(format!(
            "{what} arg 8: groups {groups} must be in 1..=1048576"
        )));
    }
    let groups = groups as usize;
    let mut kernel = [1usize; 2];
    kernel[2 - spatial..].copy_from_slice(&wd[2..]);
    if kernel.contains(&0) || wd[0] == 0 || wd[1] == 0 {
        return Err(invalid_program(format!(
            "{what}: weight sizes {wd:?} have an empty dim"
        )));
    }
    let (c_in, c_out) = if transposed {
        if !wd[0].is_multiple_of(groups) {
            return Err(invalid_program(format!(
                "{what}: transposed weight sizes {wd:?}: C_in {} is not a multiple of groups {groups}",
                wd[0]
            )));
        }
        for a in 0..2 {
            if output_padding[a] >= stride[a].max(dilation[a]) {
                return Err(invalid_program(format!(
                    "{what}: output_padding {output_padding:?} must be smaller than stride {stride:?} or dilation {dilation:?}"
                )));
            }
        }
        (wd[0], wd[1] * groups)
    } else {
        if !wd[0].is_multiple_of(groups) {
            return Err(invalid_program(format!(
                "{what}: weight sizes {wd:?}: C_out {} is not a multiple of groups {groups}",
                wd[0]
            )));
        }
        if output_padding != [0, 0] {
            return Err(invalid_program(format!(
                "{what}: output_padding {output_padding:?} is only meaningful for a transposed convolution"
            )));
        }
        (wd[1] * groups, wd[0])
    };
    if let Some(b) = b {
        if s.numel(b) != c_out {
            return Err(invalid_program(format!(
                "{what}: bias sizes {:?} do not match C_out {c_out}",
                s.max_dims(b)
            )));
        }
    }
    let geo = Geometry {
        kernel,
        stride,
        padding,
        dilation,
        output_padding,
        transposed,
        groups,
        c_in,
        c_out,
    };
    // Fail at load when even the largest input cannot be convolved.
    out_dims(&geo, s.max_dims(x), &what)?;
    // Long sums go to the split kernel (a workgroup per output): at 7 x 7 a pointwise
    // convolution over 960 channels has too few outputs to fill a GPU one invocation each.
    let taps = (c_in / groups) * kernel[0] * kernel[1];
    let split = !transposed && taps >= SPLIT_MIN_TAPS;
    // Pointwise convolutions as a matmul, unless a long sum meets too few output tiles
    // (H200, mobilenet_v2, matmul against conv_split: 960 -> 160 at 7 x 7, 3 tiles, 69 against
    // 30 us; 576 -> 96 at 14 x 14, 8 tiles, 45 against 55; 320 -> 1280 at 7 x 7, 20 tiles, 27
    // against 81).
    let (n_max, hw_max) = {
        let d = s.max_dims(x);
        (d[0], d[2..].iter().product::<usize>())
    };
    let gemm_tiles = n_max * c_out.div_ceil(64) * hw_max.div_ceil(64);
    let pointwise = !transposed
        && groups == 1
        && kernel == [1, 1]
        && stride == [1, 1]
        && padding == [0, 0]
        && (!split || gemm_tiles >= POINTWISE_MIN_TILES);
    if pointwise {
        return pointwise_node(g, call, (x, w, b, out), (c_in, c_out), dt, clamp);
    }
    let shader = float_shader(if split { "conv_split" } else { "conv" }, dt, call)?;
    let bias = g.or_dummy(b)?;
    let flags = u32::from(b.is_some()) | (u32::from(transposed) << 1);
    let d = Dispatch::new(shader, [out, x, w, bias]);
    g.dispatch(call, d, move |s| {
        let dims = s.dims(x).to_vec();
        let od = out_dims(&geo, &dims, &what)?;
        let numel: usize = od.iter().product();
        let (h, w_in) = plane(&dims);
        let (oh, ow) = plane(&od);
        s.set_dims(out, od)?;
        let u = |v: usize, name: &str| to_u32(v, name);
        Ok(Launch {
            push: Push::new()
                .u32(u(numel, "output elements")?)
                .u32(u(geo.c_in, "C_in")?)
                .u32(u(h, "H")?)
                .u32(u(w_in, "W")?)
                .u32(u(geo.c_out, "C_out")?)
                .u32(u(oh, "OH")?)
                .u32(u(ow, "OW")?)
                .u32(u(geo.groups, "groups")?)
                .u32(u(geo.kernel[0], "kH")?)
                .u32(u(geo.kernel[1], "kW")?)
                .u32(u(geo.stride[0], "sH")?)
                .u32(u(geo.stride[1], "sW")?)
                .u32(u(geo.padding[0], "pH")?)
                .u32(u(geo.padding[1], "pW")?)
                .u32(u(geo.dilation[0], "dH")?)
                .u32(u(geo.dilation[1], "dW")?)
                .u32(flags)
                .f32(clamp[0])
                .f32(clamp[1])
                .finish(),
            global: if split {
                folded_grid(numel as u64, [SPLIT_LANES, 1, 1], &what)?
            } else {
                Global::Linear(numel as u64)
            },
        })
    })
}

/// A pointwise convolution (1 x 1 kernel, stride 1, no padding, one group) as a matmul per
/// batch: out[n] [C_out, H * W] = W [C_out, C_in] @ x[n] [C_in, H * W] + bias (broadcast
/// along H * W), clamped, on the tiled matmul kernel.
fn pointwise_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (x, w, b, out): (TensorId, TensorId, Option<TensorId>, TensorId),
    (c_in, c_out): (usize, usize),
    dt: DataType,
    clamp: [f32; 2],
) -> Result<()> {
    let what = call.what();
    let shader = float_shader("matmul_tiled_clamp", dt, call)?;
    let bias = g.or_dummy(b)?;
    let has_bias = b.is_some();
    let geo_check = move |dims: &[usize]| -> Result<Vec<usize>> {
        if dims[1] != c_in {
            return Err(invalid_arg(format!(
                "{what}: input sizes {dims:?} have {} channels; the weight expects C_in = {c_in}",
                dims[1]
            )));
        }
        let mut od = dims.to_vec();
        od[1] = c_out;
        Ok(od)
    };
    g.dispatch(call, Dispatch::new(shader, [out, w, x, bias]), move |s| {
        let dims = s.dims(x).to_vec();
        let od = geo_check(&dims)?;
        let hw: usize = dims[2..].iter().product();
        s.set_dims(out, od)?;
        let u = |v: usize, name: &str| to_u32(v, name);
        matmul_launch(
            c_out,
            hw,
            c_in,
            dims[0],
            MatStrides {
                b: 0,
                r: u(c_in, "C_in")?,
                c: 1,
            },
            MatStrides {
                b: u(c_in * hw, "input batch stride")?,
                r: u(hw, "H * W")?,
                c: 1,
            },
            has_bias.then_some(MatStrides { b: 0, r: 1, c: 0 }),
            1.0,
            1.0,
            Some(clamp),
        )
    })
}

/// (H, W) of an `[N, C, (H,) W]` shape (H = 1 in 1-D).
fn plane(dims: &[usize]) -> (usize, usize) {
    match dims {
        [_, _, h, w] => (*h, *w),
        [_, _, w] => (1, *w),
        _ => (0, 0),
    }
}

/// Output sizes for input sizes `dims`, or an error naming the op and the rule.
fn out_dims(geo: &Geometry, dims: &[usize], what: &str) -> Result<Vec<usize>> {
    let rank = dims.len();
    if dims[1] != geo.c_in {
        return Err(invalid_arg(format!(
            "{what}: input sizes {dims:?} have {} channels; the weight expects C_in = {}",
            dims[1], geo.c_in
        )));
    }
    let (h, w) = plane(dims);
    let extents = [(0, h), (1, w)].map(|(a, n)| geo.out_extent(a, n));
    let [Some(oh), Some(ow)] = extents else {
        return Err(invalid_arg(format!(
            "{what}: input sizes {dims:?} are too small for kernel {:?} with padding {:?}, dilation {:?}{}",
            &geo.kernel[2 - (rank - 2)..],
            &geo.padding[2 - (rank - 2)..],
            &geo.dilation[2 - (rank - 2)..],
            if geo.transposed { " (transposed)" } else { "" }
        )));
    };
    let mut od = vec![dims[0], geo.c_out];
    if rank == 4 {
        od.push(oh);
    }
    od.push(ow);
    Ok(od)
}
