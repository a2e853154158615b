//! Statically quantized int8 programs: what the exporter writes for PT2E static quantization
//! (`XNNPACKQuantizer` with `get_symmetric_quantization_config(is_per_channel=True)`, the
//! quantizer ExecuTorch's Vulkan tests use for int8 activations) after the Vulkan
//! partitioner's fusion patterns, and the quantize / dequantize ops around them.
//!
//! Argument layouts (exporter order, output last; scales are `Double`, zero points `Int`):
//! - `quantized_decomposed.quantize_per_tensor.default` `[x, scale, zp, quant_min,
//!   quant_max, dtype (Null), out int8]`; `.tensor` the same with scale / zp tensors.
//! - `quantized_decomposed.dequantize_per_tensor.default` `[q, scale, zp, quant_min,
//!   quant_max, dtype (Null), out_dtype (Null), out float]`; `.tensor` likewise.
//! - `quantized_decomposed.quantize_per_channel.default` `[x, scales, zps, axis, quant_min,
//!   quant_max, dtype, out]`, `dequantize_per_channel.default` `[q, scales, zps | Null,
//!   axis, quant_min, quant_max, dtype, out_dtype, out]` (the weight of a linear the
//!   partitioner did not fuse, e.g. K not a multiple of 4, and of the VulkanQuantizer's
//!   dynamic config, whose activation quantize / dequantize pairs the exporter folds away).
//! - `et_vk.q8ta_linear.default` / `q8ta_linear_gemv.default` (M = 1 at export) `[x int8,
//!   in_scale, in_zp, weight int8 [N, K], weight_sums int32, weight_scales [>= N],
//!   out_scale, out_zp, bias [>= N] | Null, activation ("none" | "relu"), out int8]`.
//! - `et_vk.linear_q8ta_q8csw.default` `[x int8, in_scale, in_zp, weight, weight_sums,
//!   weight_scales, bias | Null, out float]` (the same linear with a float output: what a
//!   dynamic-shape export delegates when the quantize ops stay on the CPU).
//! - `et_vk.q8ta_conv2d{,_dw,_pw}.default` `[x int8 NCHW, in_scale, in_zp, weight,
//!   weight_sums, weight_scales, out_scale, out_zp, bias | Null, kernel_size, stride,
//!   padding, dilation, groups, activation, out int8]`; `q8ta_conv2d_transposed.default`
//!   has `output_padding` after `padding`. Weights: `[C_out, align4(kH kW C_in/groups)]`
//!   (row k = (kh kW + kw) C_in/groups + ci; the transposed weight permuted to the same
//!   form), depthwise `[kH, kW, align4(C)]`.
//! - `et_vk.q8ta_add.default` `[a, b, a_scale, a_zp, b_scale, b_zp, out_scale, out_zp,
//!   alpha, out]`, `et_vk.q8ta_relu.default` `[x, in_scale, in_zp, out_scale, out_zp, out]`,
//!   `et_vk.q8ta_pixel_shuffle.default` `[x, in_scale, in_zp, 1 / out_scale, out_zp,
//!   upscale_factor, out]`.
//!
//! Numerics follow eager PyTorch on the converted PT2E module, not ExecuTorch's integer
//! kernels: quantize is `clamp(round_half_even(x * float(1.0 / scale)) + zp, qmin, qmax)`,
//! dequantize `float(q - zp) * float(scale)`, and the fused linear / conv / add dequantize
//! their operands the same way and compute in fp32 before quantizing the result (the
//! weight sums the exporter adds for integer accumulation are shape-checked, not read).
//! int8 tensors are plain contiguous bytes, four to a word; every kernel writes whole words.

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, Layout, OpCall, Packed};
use crate::error::{internal, invalid_arg, invalid_program, unsupported};
use crate::graph::{
    broadcast_shapes, broadcast_strides, checked_numel, to_u32, Global, Launch, Push, TensorId,
};
use crate::ops::{float_shader, norm_dim};
use crate::registry::{OpBuildFn, Registry};

const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];
const INT8: &[DataType] = &[DataType::Int8];

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    let float_io: [(&'static str, OpBuildFn, &'static str); 6] = [
        (
            "quantized_decomposed.quantize_per_tensor.default",
            build_quantize_per_tensor,
            "clamp(round_half_even(x * float(1 / scale)) + zero_point, quant_min, quant_max) to int8 / uint8, scale and zero point Double / Int",
        ),
        (
            "quantized_decomposed.quantize_per_tensor.tensor",
            build_quantize_per_tensor,
            "quantize_per_tensor with one-element scale / zero-point tensors (constants or runtime fp32 / int32)",
        ),
        (
            "quantized_decomposed.dequantize_per_tensor.default",
            build_dequantize_per_tensor,
            "float(q - zero_point) * scale of an int8 / uint8 / int32 tensor, out float32 / float16",
        ),
        (
            "quantized_decomposed.dequantize_per_tensor.tensor",
            build_dequantize_per_tensor,
            "dequantize_per_tensor with one-element scale / zero-point tensors",
        ),
        (
            "quantized_decomposed.quantize_per_channel.default",
            build_quantize_per_channel,
            "quantize with one scale / zero point per index of axis (x * (1 / scales[c]), PyTorch's fp32 reciprocal)",
        ),
        (
            "quantized_decomposed.dequantize_per_channel.default",
            build_dequantize_per_channel,
            "float(q - zero_points[c]) * scales[c] along axis (zero points int32 or None); the exporter's unfused per-channel weights",
        ),
    ];
    r.register_dynamic(FLOATS, &float_io)?;
    let int8_ops: [(&'static str, OpBuildFn, &'static str); 9] = [
        (
            "et_vk.q8ta_linear.default",
            build_q8ta_linear,
            "static int8 linear: x int8 [.., K], weight int8 [N, K] per-channel scales, bias; dequantized operands summed in fp32, relu or none, quantized to int8",
        ),
        (
            "et_vk.q8ta_linear_gemv.default",
            build_q8ta_linear,
            "q8ta_linear as the exporter names it when M = 1",
        ),
        (
            "et_vk.linear_q8ta_q8csw.default",
            build_linear_q8csw,
            "q8ta_linear with a float32 / float16 output (no output quantization, no activation)",
        ),
        (
            "et_vk.q8ta_conv2d.default",
            build_q8ta_conv2d,
            "static int8 2-D convolution, weight [C_out, align4(kH kW C_in/groups)]; groups, stride, padding, dilation; relu or none",
        ),
        (
            "et_vk.q8ta_conv2d_dw.default",
            build_q8ta_conv2d,
            "depthwise q8ta convolution, weight [kH, kW, align4(C)]",
        ),
        (
            "et_vk.q8ta_conv2d_pw.default",
            build_q8ta_conv2d,
            "pointwise (1x1) q8ta convolution, weight [C_out, align4(C_in)]",
        ),
        (
            "et_vk.q8ta_conv2d_transposed.default",
            build_q8ta_conv2d,
            "transposed q8ta convolution (output_padding after padding), weight permuted to [C_out, align4(kH kW C_in/groups)], scales per channel of a group",
        ),
        (
            "et_vk.q8ta_add.default",
            build_q8ta_add,
            "quantize(dequantize(a) + alpha * dequantize(b)), rank <= 4, broadcasting",
        ),
        (
            "et_vk.q8ta_relu.default",
            build_q8ta_relu,
            "quantize(relu(dequantize(x))) with the output's own scale / zero point",
        ),
    ];
    r.register_dynamic(INT8, &int8_ops)?;
    r.register_dynamic(
        INT8,
        &[(
            "et_vk.q8ta_pixel_shuffle.default",
            build_q8ta_pixel_shuffle,
            "quantize(pixel_shuffle(dequantize(x), r)); the exporter passes 1 / out_scale",
        )],
    )
}

// ---------------------------------------------------------------- arguments

/// A number argument (Double or Int); `Null` and other kinds are errors.
fn number_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize, name: &str) -> Result<f64> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Double(x) => Ok(*x),
        GValue::Int(x) => Ok(*x as f64),
        other => Err(invalid_program(format!(
            "{} arg {i} ({name}, value {v}): expected a number, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// A scale: finite and positive.
fn check_scale(call: &OpCall<'_>, s: f64, name: &str) -> Result<f64> {
    if !(s.is_finite() && s > 0.0 && (s as f32) > 0.0 && (s as f32).is_finite()) {
        return Err(invalid_program(format!(
            "{}: {name} {s} must be a positive finite fp32 number",
            call.what()
        )));
    }
    Ok(s)
}

/// A zero point within i32 (and far from its ends: the shaders add it to floats).
fn check_zp(call: &OpCall<'_>, z: i64, name: &str) -> Result<i32> {
    if !(-(1 << 24)..=(1 << 24)).contains(&z) {
        return Err(invalid_program(format!(
            "{}: {name} {z} is out of range",
            call.what()
        )));
    }
    Ok(z as i32)
}

/// Per-tensor quantization parameters from a (scale Double, zero point Int) pair of args.
#[derive(Debug, Clone, Copy)]
struct QParams {
    /// float(scale): what dequantization multiplies by.
    scale: f32,
    /// float(1.0 / scale) (the division in f64, as PyTorch's Python float): what
    /// quantization multiplies by.
    inv: f32,
    zp: i32,
}

impl QParams {
    fn new(call: &OpCall<'_>, scale: f64, zp: i64, name: &str) -> Result<QParams> {
        let scale = check_scale(call, scale, &format!("{name} scale"))?;
        Ok(QParams {
            scale: scale as f32,
            inv: (1.0 / scale) as f32,
            zp: check_zp(call, zp, &format!("{name} zero point"))?,
        })
    }
}

fn qparams_args(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    si: usize,
    zi: usize,
    name: &str,
) -> Result<QParams> {
    let s = number_arg(g, call, si, &format!("{name} scale"))?;
    let z = g.int_arg(call, zi)?;
    QParams::new(call, s, z, name)
}

/// Tensor arg `i` (a runtime tensor or a constant, prepacked as it is) with dtype `want`.
fn tensor_of(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
    role: &str,
    want: &[DataType],
) -> Result<TensorId> {
    let t = g.tensor_or_prepack(call, i)?;
    let dt = g.shapes().dtype(t);
    if !want.contains(&dt) {
        let names: Vec<&str> = want.iter().map(|d| d.name()).collect();
        return Err(unsupported(format!(
            "{}: {role} (arg {i}) has dtype {}; {} expected",
            call.what(),
            dt.name(),
            names.join(" / ")
        )));
    }
    Ok(t)
}

/// Decode constant bytes of a float / int dtype to f64s.
fn decode(dtype: DataType, bytes: &[u8]) -> Option<Vec<f64>> {
    let v = match dtype {
        DataType::Float32 => bytes
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        DataType::Float16 => bytes
            .chunks_exact(2)
            .map(|b| f64::from(crate::dtype::f16_to_f32(u16::from_le_bytes([b[0], b[1]]))))
            .collect(),
        DataType::Float64 => bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            .collect(),
        DataType::Int32 => bytes
            .chunks_exact(4)
            .map(|b| f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        DataType::Int64 => bytes
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])) as f64)
            .collect(),
        DataType::Int8 => bytes.iter().map(|&b| f64::from(b as i8)).collect(),
        DataType::Uint8 => bytes.iter().map(|&b| f64::from(b)).collect(),
        _ => return None,
    };
    Some(v)
}

/// A layout turning a float or int constant into f32 (`map` applied to each value) or i32.
fn converted_layout(name: &str, to: DataType, map: fn(f64) -> f64) -> Layout {
    let lname = name.to_string();
    Layout {
        name: name.to_string(),
        pack: Box::new(move |c, bytes| {
            let vals = decode(c.dtype, bytes).ok_or_else(|| {
                unsupported(format!(
                    "constant {}: dtype {} cannot be converted for {lname}",
                    c.constant_id,
                    c.dtype.name()
                ))
            })?;
            let mut out = Vec::with_capacity(vals.len() * 4);
            for v in vals {
                let v = map(v);
                if to == DataType::Int32 {
                    out.extend_from_slice(&(v as i32).to_le_bytes());
                } else {
                    out.extend_from_slice(&(v as f32).to_le_bytes());
                }
            }
            Ok(Packed {
                dtype: to,
                dims: c.dims.clone(),
                bytes: out,
            })
        }),
    }
}

/// Tensor arg `i` as an fp32 GPU tensor: a constant of any float dtype converted at load
/// (through `map`, e.g. a reciprocal), or a runtime fp32 tensor.
fn f32_arg(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
    role: &str,
    layout: (&str, fn(f64) -> f64),
) -> Result<(TensorId, bool)> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::TensorRef(c) => {
            if !matches!(
                c.dtype,
                DataType::Float32 | DataType::Float16 | DataType::Float64
            ) {
                return Err(unsupported(format!(
                    "{}: {role} (arg {i}) is a {} constant; float expected",
                    call.what(),
                    c.dtype.name()
                )));
            }
            let t = g.prepack(v, &converted_layout(layout.0, DataType::Float32, layout.1))?;
            Ok((t, true))
        }
        _ => Ok((tensor_of(g, call, i, role, &[DataType::Float32])?, false)),
    }
}

/// Optional tensor arg `i` as an int32 GPU tensor (constants of int8 / int32 / int64
/// converted at load, runtime tensors int32).
fn i32_arg(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
    role: &str,
) -> Result<Option<TensorId>> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Null => Ok(None),
        GValue::TensorRef(c) => {
            if !matches!(
                c.dtype,
                DataType::Int32 | DataType::Int64 | DataType::Int8 | DataType::Uint8
            ) {
                return Err(unsupported(format!(
                    "{}: {role} (arg {i}) is a {} constant; an integer tensor expected",
                    call.what(),
                    c.dtype.name()
                )));
            }
            let t = g.prepack(v, &converted_layout("as_i32", DataType::Int32, |x| x))?;
            Ok(Some(t))
        }
        _ => Ok(Some(tensor_of(g, call, i, role, &[DataType::Int32])?)),
    }
}

/// The value of a one-element constant (scale / zero point of the `.tensor` overloads).
fn constant_scalar(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<Option<f64>> {
    let v = call.arg(i)?;
    let GValue::TensorRef(c) = g.value(v)? else {
        return Ok(None);
    };
    if checked_numel(&c.dims) != Some(1) {
        return Err(invalid_program(format!(
            "{} arg {i}: a one-element tensor expected, got sizes {:?}",
            call.what(),
            c.dims
        )));
    }
    let n = c.dtype.size_bytes();
    let bytes = g.constant_bytes(c.constant_id)?;
    let vals = decode(c.dtype, bytes.get(..n).unwrap_or(&[])).unwrap_or_default();
    match vals.first() {
        Some(&x) => Ok(Some(x)),
        None => Err(unsupported(format!(
            "{} arg {i}: a {} constant cannot be a scale / zero point",
            call.what(),
            c.dtype.name()
        ))),
    }
}

/// The quant range of an output dtype, checked against `[qmin, qmax]`.
fn check_range(call: &OpCall<'_>, dt: DataType, qmin: i64, qmax: i64) -> Result<()> {
    let (lo, hi) = match dt {
        DataType::Int8 => (-128, 127),
        DataType::Uint8 => (0, 255),
        d => {
            return Err(unsupported(format!(
                "{}: quantized dtype {} is not supported (int8, uint8 are)",
                call.what(),
                d.name()
            )))
        }
    };
    if qmin > qmax || qmin < lo || qmax > hi {
        return Err(invalid_program(format!(
            "{}: quant range [{qmin}, {qmax}] does not fit {} [{lo}, {hi}]",
            call.what(),
            dt.name()
        )));
    }
    Ok(())
}

/// `"none"` or `"relu"`.
fn activation_arg(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<bool> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::String(s) if s == "none" || s.is_empty() => Ok(false),
        GValue::String(s) if s == "relu" => Ok(true),
        GValue::String(s) => Err(unsupported(format!(
            "{}: activation {s:?} is not supported (none, relu are)",
            call.what()
        ))),
        GValue::Null => Ok(false),
        other => Err(invalid_program(format!(
            "{} arg {i}: activation must be a string, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

/// Fail unless arg `i` is a tensor (runtime or constant): the exporter's weight sums.
fn expect_tensor_value(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Result<()> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::Tensor(_) | GValue::TensorRef(_) => Ok(()),
        other => Err(invalid_program(format!(
            "{} arg {i} (weight sums): expected a tensor, got {}",
            call.what(),
            gvalue_kind(other)
        ))),
    }
}

fn words(n: usize) -> u64 {
    n.div_ceil(4) as u64
}

fn shader(name: &str, call: &OpCall<'_>) -> Result<ShaderId> {
    ShaderId::from_name(name).ok_or_else(|| {
        internal(format!(
            "{}: shader {name} missing from the manifest",
            call.what()
        ))
    })
}

// ---------------------------------------------------------------- quantize / dequantize

/// Where the quantization parameters of a quantize / dequantize node come from.
enum Source {
    /// Push constants (per tensor).
    Push(QParams),
    /// Buffers: (scale, zero point | None, buffer holds raw scales that the quantize shader
    /// inverts), indexed by channel.
    Buffers(TensorId, Option<TensorId>, bool),
}

fn per_tensor_source(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<Source> {
    if !call.name.ends_with(".tensor") {
        return Ok(Source::Push(qparams_args(g, call, 1, 2, "")?));
    }
    match (constant_scalar(g, call, 1)?, constant_scalar(g, call, 2)?) {
        (Some(s), Some(z)) => Ok(Source::Push(QParams::new(call, s, z as i64, "")?)),
        _ => {
            let (s, _) = f32_arg(g, call, 1, "scale", ("as_f32", |x| x))?;
            let z = i32_arg(g, call, 2, "zero point")?;
            for (t, role) in [(Some(s), "scale"), (z, "zero point")] {
                if let Some(t) = t {
                    if g.shapes().numel(t) != 1 {
                        return Err(invalid_program(format!(
                            "{}: {role} tensor has sizes {:?}; one element expected",
                            call.what(),
                            g.shapes().max_dims(t)
                        )));
                    }
                }
            }
            if z.is_none() {
                return Err(invalid_program(format!(
                    "{}: zero point (arg 2) must be a tensor",
                    call.what()
                )));
            }
            Ok(Source::Buffers(s, z, true))
        }
    }
}

fn build_quantize_per_tensor(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(7)?;
    let x = tensor_of(g, call, 0, "input", FLOATS)?;
    let src = per_tensor_source(g, call)?;
    quantize_node(g, call, x, src, 6, None)
}

fn build_quantize_per_channel(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    let x = tensor_of(g, call, 0, "input", FLOATS)?;
    // PyTorch: x * (1.0 / scales) with the reciprocal in the scales' fp32; for constant
    // scales it is taken here, for runtime ones in the shader.
    let (s, is_const) = f32_arg(
        g,
        call,
        1,
        "scales",
        ("recip_f32", |x| f64::from(1.0f32 / x as f32)),
    )?;
    let z = i32_arg(g, call, 2, "zero points")?.ok_or_else(|| {
        invalid_program(format!(
            "{}: zero points (arg 2) must be a tensor",
            call.what()
        ))
    })?;
    let rank = g.shapes().max_dims(x).len();
    let axis = norm_dim(g.int_arg(call, 3)?, rank, &call.what())?;
    quantize_node(
        g,
        call,
        x,
        Source::Buffers(s, Some(z), !is_const),
        7,
        Some(axis),
    )
}

/// Per-channel layout of `dims` along `axis`: (inner, channels).
fn channel_layout(dims: &[usize], axis: Option<usize>, numel: usize) -> (usize, usize) {
    match axis {
        Some(a) => (dims[a + 1..].iter().product(), dims[a]),
        None => (numel.max(1), 1),
    }
}

fn check_channel_params(
    s: &crate::graph::Shapes,
    ts: &[Option<TensorId>],
    channels: usize,
    what: &str,
) -> Result<()> {
    for t in ts.iter().flatten() {
        if s.numel(*t) < channels {
            return Err(invalid_arg(format!(
                "{what}: {} quantization parameters for {channels} channels",
                s.numel(*t)
            )));
        }
    }
    Ok(())
}

fn quantize_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    src: Source,
    out_i: usize,
    axis: Option<usize>,
) -> Result<()> {
    let what = call.what();
    let out = g.tensor_arg(call, out_i)?;
    let first = 3 + usize::from(axis.is_some());
    let (qmin, qmax) = (g.int_arg(call, first)?, g.int_arg(call, first + 1)?);
    let odt = g.shapes().dtype(out);
    check_range(call, odt, qmin, qmax)?;
    let sh = float_shader("q8ta_quantize", g.shapes().dtype(x), call)?;
    if g.shapes().max_dims(out) != g.shapes().max_dims(x) {
        return Err(invalid_program(format!(
            "{what}: output sizes {:?} differ from the input's {:?}",
            g.shapes().max_dims(out),
            g.shapes().max_dims(x)
        )));
    }
    let (bufs, push_q, flags) = match src {
        Source::Push(q) => ([g.dummy()?, g.dummy()?], Some(q), 0u32),
        Source::Buffers(s, z, raw) => {
            let z = g.or_dummy(z)?;
            ([s, z], None, 1 | (u32::from(raw) << 1))
        }
    };
    let params = if push_q.is_none() {
        vec![Some(bufs[0]), Some(bufs[1])]
    } else {
        vec![]
    };
    g.dispatch(
        call,
        Dispatch::new(sh, [out, x, bufs[0], bufs[1]]),
        move |s| {
            let dims = s.dims(x).to_vec();
            let numel = s.numel(x);
            let (inner, channels) = channel_layout(&dims, axis, numel);
            check_channel_params(s, &params, channels, &what)?;
            s.set_dims(out, dims)?;
            let q = push_q.unwrap_or(QParams {
                scale: 1.0,
                inv: 1.0,
                zp: 0,
            });
            Ok(Launch {
                push: Push::new()
                    .u32(to_u32(numel, "elements")?)
                    .u32(to_u32(inner.max(1), "inner")?)
                    .u32(to_u32(channels.max(1), "channels")?)
                    .u32(flags)
                    .f32(q.inv)
                    .i32(q.zp)
                    .i32(qmin as i32)
                    .i32(qmax as i32)
                    .finish(),
                global: Global::Linear(words(numel)),
            })
        },
    )
}

fn build_dequantize_per_tensor(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    // out_dtype (kw-only) since PyTorch 2.3: 8 args; 7 before.
    if call.args.len() != 7 {
        call.expect_args(8)?;
    }
    let q = tensor_of(g, call, 0, "input", QDTYPES)?;
    let src = per_tensor_source(g, call)?;
    let src = match src {
        Source::Buffers(s, z, _) => Source::Buffers(s, z, false),
        p => p,
    };
    dequantize_node(g, call, q, src, None)
}

const QDTYPES: &[DataType] = &[DataType::Int8, DataType::Uint8, DataType::Int32];

fn build_dequantize_per_channel(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    if call.args.len() != 8 {
        call.expect_args(9)?;
    }
    let q = tensor_of(g, call, 0, "input", QDTYPES)?;
    let (s, _) = f32_arg(g, call, 1, "scales", ("as_f32", |x| x))?;
    let z = i32_arg(g, call, 2, "zero points")?;
    let rank = g.shapes().max_dims(q).len();
    let axis = norm_dim(g.int_arg(call, 3)?, rank, &call.what())?;
    dequantize_node(g, call, q, Source::Buffers(s, z, false), Some(axis))
}

fn dequantize_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    q: TensorId,
    src: Source,
    axis: Option<usize>,
) -> Result<()> {
    let what = call.what();
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    let s = g.shapes();
    let kind = match s.dtype(q) {
        DataType::Int8 => 0u32,
        DataType::Uint8 => 1,
        _ => 2,
    };
    if s.max_dims(out) != s.max_dims(q) {
        return Err(invalid_program(format!(
            "{what}: output sizes {:?} differ from the input's {:?}",
            s.max_dims(out),
            s.max_dims(q)
        )));
    }
    let sh = float_shader("q8ta_dequantize", s.dtype(out), call)?;
    let (bufs, push_q, flags) = match src {
        Source::Push(p) => ([g.dummy()?, g.dummy()?], Some(p), 0u32),
        Source::Buffers(sc, z, _) => {
            let flags = 1 | (u32::from(z.is_some()) << 1);
            let z = g.or_dummy(z)?;
            ([sc, z], None, flags)
        }
    };
    let flags = flags | (kind << 8);
    let params = if push_q.is_none() {
        vec![Some(bufs[0]), (flags & 2 != 0).then_some(bufs[1])]
    } else {
        vec![]
    };
    g.dispatch(
        call,
        Dispatch::new(sh, [out, q, bufs[0], bufs[1]]),
        move |s| {
            let dims = s.dims(q).to_vec();
            let numel = s.numel(q);
            let (inner, channels) = channel_layout(&dims, axis, numel);
            check_channel_params(s, &params, channels, &what)?;
            s.set_dims(out, dims)?;
            let p = push_q.unwrap_or(QParams {
                scale: 1.0,
                inv: 1.0,
                zp: 0,
            });
            Ok(Launch {
                push: Push::new()
                    .u32(to_u32(numel, "elements")?)
                    .u32(to_u32(inner.max(1), "inner")?)
                    .u32(to_u32(channels.max(1), "channels")?)
                    .u32(flags)
                    .f32(p.scale)
                    .i32(p.zp)
                    .u32(0)
                    .u32(0)
                    .finish(),
                global: Global::Linear(numel as u64),
            })
        },
    )
}

// ---------------------------------------------------------------- linear

fn build_q8ta_linear(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(11)?;
    linear(g, call, true)
}

fn build_linear_q8csw(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(8)?;
    linear(g, call, false)
}

/// The weight int8 [N, K], its scales (>= N, fp32) and the optional bias (>= N, fp32).
fn weight_scales_bias(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (wi, si, bi): (usize, usize, usize),
    n: usize,
) -> Result<(TensorId, Option<TensorId>)> {
    let (ws, _) = f32_arg(g, call, si, "weight scales", ("as_f32", |x| x))?;
    let bias = match g.value(call.arg(bi)?)? {
        GValue::Null => None,
        _ => Some(f32_arg(g, call, bi, "bias", ("as_f32", |x| x))?.0),
    };
    let s = g.shapes();
    for (t, role) in [(Some(ws), "weight scales"), (bias, "bias")] {
        if let Some(t) = t {
            if s.numel(t) < n {
                return Err(invalid_program(format!(
                    "{}: {role} hold {} values for the weight's {n} output channels (arg {wi})",
                    call.what(),
                    s.numel(t)
                )));
            }
        }
    }
    Ok((ws, bias))
}

fn linear(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, q8_out: bool) -> Result<()> {
    let what = call.what();
    let x = tensor_of(g, call, 0, "input", INT8)?;
    let inp = qparams_args(g, call, 1, 2, "input")?;
    let w = tensor_of(g, call, 3, "weight", INT8)?;
    expect_tensor_value(g, call, 4)?;
    let wd = g.shapes().max_dims(w).to_vec();
    let (n, k) = match wd.as_slice() {
        &[n, k] if n > 0 && k > 0 => (n, k),
        _ => {
            return Err(invalid_program(format!(
                "{what}: weight sizes {wd:?}; int8 [N, K] expected"
            )))
        }
    };
    let (outq, bias_i, relu) = if q8_out {
        (
            Some(qparams_args(g, call, 6, 7, "output")?),
            8,
            activation_arg(g, call, 9)?,
        )
    } else {
        (None, 6, false)
    };
    let (ws, bias) = weight_scales_bias(g, call, (3, 5, bias_i), n)?;
    let out = g.tensor_arg(call, call.args.len() - 1)?;
    let s = g.shapes();
    let odt = s.dtype(out);
    let sh = if q8_out {
        if odt != DataType::Int8 {
            return Err(unsupported(format!(
                "{what}: output dtype {}; int8 expected",
                odt.name()
            )));
        }
        shader("q8ta_linear_q8", call)?
    } else {
        float_shader("q8ta_linear", odt, call)?
    };
    let xd = s.max_dims(x).to_vec();
    if xd.last() != Some(&k) {
        return Err(invalid_program(format!(
            "{what}: input sizes {xd:?} do not end in the weight's K = {k}"
        )));
    }
    let mut od = xd.clone();
    if let Some(l) = od.last_mut() {
        *l = n;
    }
    if s.max_dims(out) != od.as_slice() {
        return Err(invalid_program(format!(
            "{what}: output sizes {:?}; {od:?} expected",
            s.max_dims(out)
        )));
    }
    let b = g.or_dummy(bias)?;
    let flags = u32::from(bias.is_some()) | (u32::from(relu) << 1);
    let oq = outq.unwrap_or(QParams {
        scale: 1.0,
        inv: 1.0,
        zp: 0,
    });
    g.dispatch(call, Dispatch::new(sh, [out, x, w, ws, b]), move |s| {
        let dims = s.dims(x).to_vec();
        let (lead, kk) = match dims.split_last() {
            Some((&kk, lead)) => (lead.to_vec(), kk),
            None => return Err(invalid_arg(format!("{what}: input became rank 0"))),
        };
        if kk != k {
            return Err(invalid_arg(format!(
                "{what}: input's last dim is {kk}; the weight fixes K = {k}"
            )));
        }
        let m: usize = lead.iter().product();
        let mut od = lead;
        od.push(n);
        s.set_dims(out, od)?;
        let total = m * n;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(m, "M")?)
                .u32(to_u32(k, "K")?)
                .u32(to_u32(n, "N")?)
                .u32(flags)
                .f32(inp.scale)
                .i32(inp.zp)
                .f32(oq.inv)
                .i32(oq.zp)
                .finish(),
            global: Global::Linear(if q8_out { words(total) } else { total as u64 }),
        })
    })
}

// ---------------------------------------------------------------- convolution

fn pair_arg(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
    name: &str,
    min: i64,
) -> Result<[usize; 2]> {
    let l = g.int_list_arg(call, i)?;
    let l = match l.len() {
        1 => vec![l[0], l[0]],
        2 => l,
        n => {
            return Err(invalid_program(format!(
                "{} arg {i}: {name} has {n} entries; 2 expected",
                call.what()
            )))
        }
    };
    if l.iter().any(|&v| v < min || v > (1 << 16)) {
        return Err(invalid_program(format!(
            "{} arg {i}: {name} {l:?} must be in {min}..=65536",
            call.what()
        )));
    }
    Ok([l[0] as usize, l[1] as usize])
}

#[derive(Debug, Clone, Copy)]
struct ConvGeom {
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    output_padding: [usize; 2],
    transposed: bool,
}

impl ConvGeom {
    fn out_extent(&self, a: usize, n: usize) -> Option<usize> {
        let span = self.dilation[a] * (self.kernel[a] - 1) + 1;
        if self.transposed {
            let full = n.checked_sub(1)? * self.stride[a] + span + self.output_padding[a];
            full.checked_sub(2 * self.padding[a]).filter(|&e| e > 0)
        } else {
            (n + 2 * self.padding[a])
                .checked_sub(span)
                .map(|r| r / self.stride[a] + 1)
        }
    }
}

fn build_q8ta_conv2d(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    let what = call.what();
    let transposed = call.name == "et_vk.q8ta_conv2d_transposed.default";
    let depthwise = call.name == "et_vk.q8ta_conv2d_dw.default";
    call.expect_args(if transposed { 17 } else { 16 })?;
    let x = tensor_of(g, call, 0, "input", INT8)?;
    let inp = qparams_args(g, call, 1, 2, "input")?;
    let w = tensor_of(g, call, 3, "weight", INT8)?;
    expect_tensor_value(g, call, 4)?;
    let outq = qparams_args(g, call, 6, 7, "output")?;
    let kernel = pair_arg(g, call, 9, "kernel_size", 1)?;
    let stride = pair_arg(g, call, 10, "stride", 1)?;
    let padding = pair_arg(g, call, 11, "padding", 0)?;
    let t = usize::from(transposed);
    let output_padding = if transposed {
        pair_arg(g, call, 12, "output_padding", 0)?
    } else {
        [0, 0]
    };
    let dilation = pair_arg(g, call, 12 + t, "dilation", 1)?;
    let groups = g.int_arg(call, 13 + t)?;
    let relu = activation_arg(g, call, 14 + t)?;
    let out = g.tensor_arg(call, 15 + t)?;
    let s = g.shapes();
    if s.dtype(out) != DataType::Int8 {
        return Err(unsupported(format!(
            "{what}: output dtype {}; int8 expected",
            s.dtype(out).name()
        )));
    }
    let (xd, od) = (s.max_dims(x).to_vec(), s.max_dims(out).to_vec());
    if xd.len() != 4 || od.len() != 4 {
        return Err(unsupported(format!(
            "{what}: input {xd:?} / output {od:?}; 4-D NCHW tensors expected"
        )));
    }
    let (c_in, c_out) = (xd[1], od[1]);
    if !(1..=1 << 16).contains(&groups) {
        return Err(invalid_program(format!(
            "{what}: groups {groups} out of range"
        )));
    }
    let groups = groups as usize;
    if c_in == 0 || c_out == 0 || c_in % groups != 0 || c_out % groups != 0 {
        return Err(invalid_program(format!(
            "{what}: channels {c_in} -> {c_out} do not split into {groups} groups"
        )));
    }
    if transposed && (0..2).any(|a| output_padding[a] >= stride[a].max(dilation[a])) {
        return Err(invalid_program(format!(
            "{what}: output_padding {output_padding:?} must be smaller than stride {stride:?} or dilation {dilation:?}"
        )));
    }
    let cin_g = c_in / groups;
    let wd = s.max_dims(w).to_vec();
    let taps = kernel[0] * kernel[1];
    let w_row = if depthwise {
        match wd.as_slice() {
            &[kh, kw, cp] if [kh, kw] == kernel && cp >= c_out && groups == c_in && c_in == c_out => cp,
            _ => {
                return Err(invalid_program(format!(
                    "{what}: depthwise weight {wd:?} for kernel {kernel:?}, {c_in} -> {c_out} channels in {groups} groups; [kH, kW, >= C] with groups = C expected"
                )))
            }
        }
    } else {
        match wd.as_slice() {
            &[rows, kp] if rows == c_out && kp >= taps * cin_g => kp,
            _ => {
                return Err(invalid_program(format!(
                    "{what}: weight {wd:?}; [C_out = {c_out}, >= kH kW C_in/groups = {}] expected",
                    taps * cin_g
                )))
            }
        }
    };
    let scale_n = if transposed { c_out / groups } else { c_out };
    let (ws, bias) = weight_scales_bias(g, call, (3, 5, 8), scale_n)?;
    if let Some(b) = bias {
        if g.shapes().numel(b) < c_out {
            return Err(invalid_program(format!(
                "{what}: bias holds {} values for {c_out} output channels",
                g.shapes().numel(b)
            )));
        }
    }
    let geom = ConvGeom {
        kernel,
        stride,
        padding,
        dilation,
        output_padding,
        transposed,
    };
    let b = g.or_dummy(bias)?;
    let flags = u32::from(bias.is_some())
        | (u32::from(relu) << 1)
        | (u32::from(depthwise) << 2)
        | (u32::from(transposed) << 3);
    let sh = shader("q8ta_conv2d", call)?;
    g.dispatch(call, Dispatch::new(sh, [out, x, w, ws, b]), move |s| {
        let d = s.dims(x).to_vec();
        if d.len() != 4 || d[1] != c_in {
            return Err(invalid_arg(format!(
                "{what}: input sizes {d:?}; [N, {c_in}, H, W] expected"
            )));
        }
        let (oh, ow) = match (geom.out_extent(0, d[2]), geom.out_extent(1, d[3])) {
            (Some(oh), Some(ow)) if oh > 0 && ow > 0 => (oh, ow),
            _ => {
                return Err(invalid_arg(format!(
                    "{what}: input {d:?} is too small for kernel {kernel:?} (dilation {dilation:?}, padding {padding:?})"
                )))
            }
        };
        let od = vec![d[0], c_out, oh, ow];
        let numel = checked_numel(&od)
            .ok_or_else(|| invalid_arg(format!("{what}: output {od:?} overflows")))?;
        s.set_dims(out, od)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "elements")?)
                .u32(to_u32(c_in, "C_in")?)
                .u32(to_u32(d[2], "H")?)
                .u32(to_u32(d[3], "W")?)
                .u32(to_u32(c_out, "C_out")?)
                .u32(to_u32(oh, "OH")?)
                .u32(to_u32(ow, "OW")?)
                .u32(groups as u32)
                .u32(kernel[0] as u32)
                .u32(kernel[1] as u32)
                .u32(stride[0] as u32)
                .u32(stride[1] as u32)
                .i32(padding[0] as i32)
                .i32(padding[1] as i32)
                .u32(dilation[0] as u32)
                .u32(dilation[1] as u32)
                .u32(flags)
                .u32(to_u32(w_row, "weight row")?)
                .f32(inp.scale)
                .i32(inp.zp)
                .f32(outq.inv)
                .i32(outq.zp)
                .finish(),
            global: Global::Linear(words(numel)),
        })
    })
}

// ---------------------------------------------------------------- add, relu, pixel shuffle

fn build_q8ta_add(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(10)?;
    let what = call.what();
    let a = tensor_of(g, call, 0, "input a", INT8)?;
    let b = tensor_of(g, call, 1, "input b", INT8)?;
    let qa = qparams_args(g, call, 2, 3, "a")?;
    let qb = qparams_args(g, call, 4, 5, "b")?;
    let qo = qparams_args(g, call, 6, 7, "output")?;
    let alpha = match g.value(call.arg(8)?)? {
        GValue::Null => 1.0,
        _ => number_arg(g, call, 8, "alpha")?,
    } as f32;
    if !alpha.is_finite() {
        return Err(invalid_program(format!(
            "{what}: alpha {alpha} is not finite"
        )));
    }
    let out = tensor_of(g, call, 9, "output", INT8)?;
    let s = g.shapes();
    let want = broadcast_shapes(s.max_dims(a), s.max_dims(b), &what)?;
    if want.len() > 4 || s.max_dims(out) != want.as_slice() {
        return Err(unsupported(format!(
            "{what}: inputs {:?} and {:?} with output {:?}: rank <= 4 and the broadcast sizes {want:?} expected",
            s.max_dims(a),
            s.max_dims(b),
            s.max_dims(out)
        )));
    }
    let sh = shader("q8ta_add", call)?;
    g.dispatch(call, Dispatch::new(sh, [out, a, b]), move |s| {
        let (ad, bd) = (s.dims(a).to_vec(), s.dims(b).to_vec());
        let od = broadcast_shapes(&ad, &bd, &what)?;
        let (sa, sb) = (broadcast_strides(&ad, &od), broadcast_strides(&bd, &od));
        let numel = checked_numel(&od).unwrap_or(usize::MAX);
        s.set_dims(out, od.clone())?;
        let off = 4 - od.len();
        let (mut sizes, mut ast, mut bst) = ([1u32; 4], [0u32; 4], [0u32; 4]);
        for i in 0..od.len() {
            sizes[off + i] = to_u32(od[i], "size")?;
            ast[off + i] = to_u32(sa[i], "stride")?;
            bst[off + i] = to_u32(sb[i], "stride")?;
        }
        Ok(Launch {
            push: Push::new()
                .u32_array(&sizes, 4, 1)
                .u32_array(&ast, 4, 0)
                .u32_array(&bst, 4, 0)
                .u32(to_u32(numel, "elements")?)
                .f32(qa.scale)
                .i32(qa.zp)
                .f32(qb.scale)
                .i32(qb.zp)
                .f32(qo.inv)
                .i32(qo.zp)
                .f32(alpha)
                .finish(),
            global: Global::Linear(words(numel)),
        })
    })
}

fn build_q8ta_relu(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let x = tensor_of(g, call, 0, "input", INT8)?;
    let qi = qparams_args(g, call, 1, 2, "input")?;
    let qo = qparams_args(g, call, 3, 4, "output")?;
    requant(g, call, x, qi, qo, 0, 5)
}

fn build_q8ta_pixel_shuffle(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(7)?;
    let what = call.what();
    let x = tensor_of(g, call, 0, "input", INT8)?;
    let qi = qparams_args(g, call, 1, 2, "input")?;
    // The exporter passes the reciprocal of the output scale, 1.0 / float(out_scale) in
    // double, which rounds to PyTorch's own float(1.0 / out_scale).
    let inv = number_arg(g, call, 3, "inverse output scale")?;
    let inv = check_scale(call, inv, "inverse output scale")?;
    let zp = check_zp(call, g.int_arg(call, 4)?, "output zero point")?;
    let qo = QParams {
        scale: (1.0 / inv) as f32,
        inv: inv as f32,
        zp,
    };
    let r = g.int_arg(call, 5)?;
    if !(1..=64).contains(&r) {
        return Err(invalid_program(format!(
            "{what}: upscale_factor {r} must be in 1..=64"
        )));
    }
    requant(g, call, x, qi, qo, r as usize, 6)
}

/// q8ta_relu (`r` = 0) and q8ta_pixel_shuffle (upscale `r`).
fn requant(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    qi: QParams,
    qo: QParams,
    r: usize,
    out_i: usize,
) -> Result<()> {
    let what = call.what();
    let out = tensor_of(g, call, out_i, "output", INT8)?;
    let s = g.shapes();
    let xd = s.max_dims(x).to_vec();
    let shuffled = move |d: &[usize]| -> Option<Vec<usize>> {
        if r == 0 {
            return Some(d.to_vec());
        }
        let n = d.len();
        if n < 3 || !d[n - 3].is_multiple_of(r * r) {
            return None;
        }
        let mut o = d.to_vec();
        o[n - 3] /= r * r;
        o[n - 2] *= r;
        o[n - 1] *= r;
        Some(o)
    };
    match shuffled(&xd) {
        Some(o) if o.as_slice() == s.max_dims(out) => {}
        _ => {
            return Err(invalid_program(format!(
                "{what}: input {xd:?} and output {:?} do not match (upscale factor {r})",
                s.max_dims(out)
            )))
        }
    }
    let sh = shader("q8ta_requant", call)?;
    let relu = r == 0;
    g.dispatch(call, Dispatch::new(sh, [out, x]), move |s| {
        let d = s.dims(x).to_vec();
        let od = shuffled(&d).ok_or_else(|| {
            invalid_arg(format!(
                "{what}: input {d:?}: channels must be a multiple of {}",
                r * r
            ))
        })?;
        let numel = s.numel(x);
        let n = od.len();
        let (c, oh, ow) = if n >= 3 {
            (od[n - 3], od[n - 2], od[n - 1])
        } else {
            (1, 1, 1)
        };
        s.set_dims(out, od)?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(numel, "elements")?)
                .u32(to_u32(c, "C")?)
                .u32(to_u32(oh, "H")?)
                .u32(to_u32(ow, "W")?)
                .u32(r as u32)
                .u32(u32::from(relu))
                .f32(qi.scale)
                .i32(qi.zp)
                .f32(qo.inv)
                .i32(qo.zp)
                .u32(0)
                .u32(0)
                .finish(),
            global: Global::Linear(words(numel)),
        })
    })
}
