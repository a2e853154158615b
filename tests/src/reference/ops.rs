//! The op functions: PyTorch / ExecuTorch semantics in f64, written from the op schemas
//! (format spec §4, §4.9, §4.10, ATen), one function per VkGraph op name, with the
//! exporter's argument order (`[inputs..., out]`).
//!
//! Sizes always come from the current input tensors and SymInt values, never from the
//! serialized sizes (those are only the upper bound the output must fit in), so the same
//! graph evaluates at every dynamic size.

use etvk_format::ir::{DataType, OperatorCall, Value};

use crate::tensor::{numel, strides, unravel, Tensor};

use super::graph::{what, RefGraph};

type R<T> = Result<T, String>;

/// Every op name [`run`] evaluates.
pub const SUPPORTED: &[&str] = &[
    "aten._assert_scalar.default",
    "aten._native_batch_norm_legit_no_training.default",
    "aten._softmax.default",
    "aten._weight_int8pack_mm.default",
    "aten.abs.default",
    "aten.add.Tensor",
    "aten.alias_copy.default",
    "aten.argmax.default",
    "aten.argmin.default",
    "aten.avg_pool2d.default",
    "aten.bitwise_and.Tensor",
    "aten.bitwise_not.default",
    "aten.bitwise_or.Tensor",
    "aten.bmm.default",
    "aten.cat.default",
    "aten.clamp.default",
    "aten.clone.default",
    "aten.constant_pad_nd.default",
    "aten.convolution.default",
    "aten.copy.default",
    "aten.cos.default",
    "aten.div.Tensor",
    "aten.div.Tensor_mode",
    "aten.embedding.default",
    "aten.eq.Scalar",
    "aten.ne.Scalar",
    "aten.lt.Scalar",
    "aten.le.Scalar",
    "aten.gt.Scalar",
    "aten.ge.Scalar",
    "aten.arange.start_step",
    "aten.full.default",
    "aten.logical_and.default",
    "aten.logical_or.default",
    "aten.logical_xor.default",
    "aten.exp.default",
    "aten.expand_copy.default",
    "aten.flip.default",
    "aten.full_like.default",
    "aten.gather.default",
    "aten.gelu.default",
    "aten.hardshrink.default",
    "aten.hardswish.default",
    "aten.hardtanh.default",
    "aten.index.Tensor",
    "aten.index_select.default",
    "aten.linear.default",
    "aten.log10.default",
    "aten.logical_not.default",
    "aten.max_pool2d.default",
    "aten.max_pool2d_with_indices.default",
    "aten.mean.dim",
    "aten.mm.default",
    "aten.mul.Tensor",
    "aten.native_group_norm.default",
    "aten.native_layer_norm.default",
    "aten.neg.default",
    "aten.ones.default",
    "aten.ones_like.default",
    "aten.permute.default",
    "aten.permute_copy.default",
    "aten.pixel_shuffle.default",
    "aten.relu.default",
    "aten.repeat.default",
    "aten.round.default",
    "aten.rsqrt.default",
    "aten.scalar_tensor.default",
    "aten.select_copy.int",
    "aten.sigmoid.default",
    "aten.silu.default",
    "aten.sin.default",
    "aten.slice_copy.Tensor",
    "aten.split_with_sizes_copy.default",
    "aten.sqrt.default",
    "aten.squeeze_copy.dims",
    "aten.sub.Tensor",
    "aten.sym_constrain_range_for_size.default",
    "aten.t_copy.default",
    "aten.tanh.default",
    "aten.unfold_copy.default",
    "aten.unsqueeze_copy.default",
    "aten.upsample_bilinear2d.vec",
    "aten.upsample_nearest2d.vec",
    "aten.view_copy.default",
    "aten.where.self",
    "aten.zeros.default",
    "aten.zeros_like.default",
    "dim_order_ops._clone_dim_order.default",
    "dim_order_ops._to_dim_order_copy.default",
    "et_vk.apply_rotary_emb.default",
    "et_vk.apply_rotary_emb_hf.default",
    "et_vk.conv_with_clamp.default",
    "et_vk.embedding_q4gsw.default",
    "et_vk.linear_dW.default",
    "et_vk.linear_dq8ca_q4gsw.default",
    "et_vk.linear_q4gsw.default",
    "et_vk.linear_q4gsw_backward.default",
    "et_vk.linear_q8ta_q8csw.default",
    "et_vk.linear_qcs4w.default",
    "et_vk.prepack.default",
    "et_vk.q4gsw_linear.default",
    "et_vk.q8ta_add.default",
    "et_vk.q8ta_conv2d.default",
    "et_vk.q8ta_conv2d_dw.default",
    "et_vk.q8ta_conv2d_pw.default",
    "et_vk.q8ta_conv2d_transposed.default",
    "et_vk.q8ta_linear.default",
    "et_vk.q8ta_linear_gemv.default",
    "et_vk.q8ta_pixel_shuffle.default",
    "et_vk.q8ta_relu.default",
    "et_vk.rms_norm.default",
    "et_vk.sdpa.default",
    "et_vk.select_as_symint.default",
    "sdpa_with_kv_cache.default",
    "update_cache.default",
    "sym_size.int",
    "add",
    "sub",
    "mul",
    "floordiv",
    "quantized_decomposed.dequantize_per_channel.default",
    "quantized_decomposed.dequantize_per_tensor.default",
    "quantized_decomposed.dequantize_per_tensor.tensor",
    "quantized_decomposed.quantize_per_channel.default",
    "quantized_decomposed.quantize_per_tensor.default",
    "quantized_decomposed.quantize_per_tensor.tensor",
    "torchao.choose_qparams_affine.default",
    "torchao.dequantize_affine.default",
    "torchao.quantize_affine.default",
    "quantized_decomposed.embedding_4bit.dtype",
    "aten.grid_sampler_2d.default",
    "et_vk.grid_priors.default",
    "quantized_decomposed.quantize_per_token.default",
    "quantized_decomposed.dequantize_per_token.default",
    "quantized_decomposed.choose_qparams_per_token_asymmetric.default",
    "quantized_decomposed.choose_qparams.tensor",
];

/// Whether [`run`] knows op `name`.
pub fn is_supported(name: &str) -> bool {
    SUPPORTED.contains(&name)
}

/// Evaluate one operator call on the graph state.
pub fn run(g: &mut RefGraph, call: &OperatorCall) -> R<()> {
    let w = what(call);
    let a = &call.args;
    let unary = |g: &mut RefGraph, f: fn(f64) -> f64| unary_op(g, a, &w, f);
    match call.name.as_str() {
        "aten.relu.default" => unary(g, |x| if x > 0.0 { x } else { 0.0 }),
        "aten.sigmoid.default" => unary(g, |x| 1.0 / (1.0 + (-x).exp())),
        "aten.silu.default" => unary(g, |x| x / (1.0 + (-x).exp())),
        "aten.neg.default" => unary(g, |x| -x),
        "aten.abs.default" => unary(g, f64::abs),
        "aten.exp.default" => unary(g, f64::exp),
        "aten.sqrt.default" => unary(g, f64::sqrt),
        "aten.rsqrt.default" => unary(g, |x| 1.0 / x.sqrt()),
        "aten.tanh.default" => unary(g, f64::tanh),
        "aten.sin.default" => unary(g, f64::sin),
        "aten.cos.default" => unary(g, f64::cos),
        "aten.hardswish.default" => unary(g, crate::cases::unary::hardswish),
        "aten.log10.default" => unary(g, f64::log10),
        "aten.round.default" => unary(g, crate::cases::unary::round_half_even),
        "aten.hardshrink.default" => hardshrink(g, a, &w),
        "aten.bitwise_and.Tensor" | "aten.bitwise_or.Tensor" => {
            nargs(a, 3, &w)?;
            let (x, y) = (operand(g, a[0], &w)?, operand(g, a[1], &w)?);
            let op = call.name.as_str();
            let t = broadcast_apply(&x, &y, &w, |p, q| {
                crate::cases::binary::bitwise_ref(op, p, q)
            })?;
            g.put(a[2], t.sizes, t.data, &w)
        }
        "aten.bitwise_not.default" => bitwise_not(g, a, &w),
        "aten.div.Tensor_mode" => div_mode(g, a, &w),
        "aten.argmin.default" => argmin(g, a, &w, false),
        "aten.argmax.default" => argmin(g, a, &w, true),
        "aten.native_group_norm.default" => group_norm(g, a, &w),
        "aten.clamp.default" => clamp(g, a, &w),
        "aten.hardtanh.default" => hardtanh(g, a, &w),
        "aten.mean.dim" => mean_dim(g, a, &w),
        "dim_order_ops._to_dim_order_copy.default" => to_dim_order_copy(g, a, &w),
        "aten.split_with_sizes_copy.default" => split_with_sizes_copy(g, a, &w),
        "aten.max_pool2d_with_indices.default" => max_pool2d_with_indices(g, a, &w),
        "aten.avg_pool2d.default" => avg_pool2d(g, a, &w),
        "aten.upsample_nearest2d.vec" => upsample(g, a, &w, false),
        "aten.upsample_bilinear2d.vec" => upsample(g, a, &w, true),
        "aten.constant_pad_nd.default" => constant_pad_nd(g, a, &w),
        "aten.pixel_shuffle.default" => {
            nargs(a, 3, &w)?;
            let r = g.int(a[1], &w)?;
            let x = g.tensor(a[0], &w)?;
            let out = crate::cases::resize::pixel_shuffle(x, r).map_err(|e| format!("{w}: {e}"))?;
            g.put(a[2], out.sizes, out.data, &w)
        }
        "aten.add.Tensor" => binary_alpha(g, a, &w, 1.0),
        "aten.sub.Tensor" => binary_alpha(g, a, &w, -1.0),
        "aten.mul.Tensor" => binary(g, a, &w, |x, y| x * y),
        "aten.eq.Scalar" => binary(g, a, &w, |x, y| f64::from(u8::from(x == y))),
        "aten.ne.Scalar" => binary(g, a, &w, |x, y| f64::from(u8::from(x != y))),
        "aten.lt.Scalar" => binary(g, a, &w, |x, y| f64::from(u8::from(x < y))),
        "aten.le.Scalar" => binary(g, a, &w, |x, y| f64::from(u8::from(x <= y))),
        "aten.gt.Scalar" => binary(g, a, &w, |x, y| f64::from(u8::from(x > y))),
        "aten.ge.Scalar" => binary(g, a, &w, |x, y| f64::from(u8::from(x >= y))),
        "aten.full.default" => {
            nargs(a, 7, &w)?;
            let sizes: Vec<usize> = g
                .int_list(a[0], &w)?
                .iter()
                .map(|&d| d.max(0) as usize)
                .collect();
            let v = g.double(a[1], &w)?;
            g.put(a[6], sizes.clone(), vec![v; numel(&sizes)], &w)
        }
        "aten.arange.start_step" => {
            nargs(a, 8, &w)?;
            let (start, end, step) = (
                g.double(a[0], &w)?,
                g.double(a[1], &w)?,
                g.double(a[2], &w)?,
            );
            let dt = g.tensor_info(a[7], &w)?.0;
            if step == 0.0 {
                return Err(format!("{w}: step 0"));
            }
            let t = crate::cases::creation::arange_ref(dt, start, end, step);
            g.put(a[7], t.sizes, t.data, &w)
        }
        "aten.logical_not.default" => unary(g, |x| f64::from(u8::from(x == 0.0))),
        "aten.logical_and.default" => {
            binary(g, a, &w, |x, y| f64::from(u8::from(x != 0.0 && y != 0.0)))
        }
        "aten.logical_or.default" => {
            binary(g, a, &w, |x, y| f64::from(u8::from(x != 0.0 || y != 0.0)))
        }
        "aten.logical_xor.default" => binary(g, a, &w, |x, y| {
            f64::from(u8::from((x != 0.0) != (y != 0.0)))
        }),
        "aten.where.self" => where_self(g, a, &w),
        "aten.cat.default" => cat(g, a, &w),
        "aten.gelu.default" => {
            nargs(a, 3, &w)?;
            let tanh = matches!(g.value(a[1]), Value::String(m) if m == "tanh");
            let f = if tanh {
                crate::cases::unary::gelu_tanh
            } else {
                crate::cases::unary::gelu_erf
            };
            let x = g.tensor(a[0], &w)?;
            let (sizes, data) = (x.sizes.clone(), x.data.iter().map(|&v| f(v)).collect());
            g.put(a[2], sizes, data, &w)
        }
        "aten.expand_copy.default" => expand_copy(g, a, &w),
        "aten.full_like.default" => {
            // [self, fill_value, dtype, layout, device, pin_memory, memory_format, out]
            nargs(a, 8, &w)?;
            let sizes = g.tensor(a[0], &w)?.sizes.clone();
            let v = g.double(a[1], &w)?;
            let n = numel(&sizes);
            g.put(a[7], sizes, vec![v; n], &w)
        }
        "aten.native_layer_norm.default" => layer_norm(g, a, &w),
        "aten.div.Tensor" => binary(g, a, &w, |x, y| x / y),
        "aten.linear.default" => linear(g, a, &w),
        "aten.convolution.default" => convolution(g, a, &w, false),
        "et_vk.conv_with_clamp.default" => convolution(g, a, &w, true),
        "aten._native_batch_norm_legit_no_training.default" => batch_norm(g, a, &w),
        "aten.mm.default" => mm(g, a, &w),
        "aten.bmm.default" => bmm(g, a, &w),
        "aten._softmax.default" => softmax(g, a, &w),
        "aten.view_copy.default" => view_copy(g, a, &w),
        "aten.clone.default" => {
            nargs(a, 3, &w)?;
            let x = g.tensor(a[0], &w)?.clone();
            g.put(a[2], x.sizes, x.data, &w)
        }
        "aten.permute_copy.default" => permute_copy(g, a, &w),
        "aten.squeeze_copy.dims" => squeeze_copy(g, a, &w),
        "aten.unsqueeze_copy.default" => unsqueeze_copy(g, a, &w),
        "aten.slice_copy.Tensor" => slice_copy(g, a, &w),
        "aten.select_copy.int" => {
            nargs(a, 4, &w)?;
            let (sizes, data) = select(g, a, &w)?;
            g.put(a[3], sizes, data, &w)
        }
        "et_vk.select_as_symint.default" => {
            nargs(a, 4, &w)?;
            let (_, data) = select(g, a, &w)?;
            if data.len() != 1 {
                return Err(format!(
                    "{w}: the selected slice has {} elements, a SymInt needs exactly 1",
                    data.len()
                ));
            }
            g.set_sym(a[3], data[0] as i64, &w)
        }
        "sym_size.int" => {
            nargs(a, 3, &w)?;
            let x = g.tensor(a[0], &w)?;
            let d = norm_dim(g.int(a[1], &w)?, x.sizes.len(), &w)?;
            let n = x.sizes.get(d).copied().unwrap_or(1) as i64;
            g.set_sym(a[2], n, &w)
        }
        "add" | "sub" | "mul" | "floordiv" => {
            // SymInt arithmetic of the exporter's host ops: `[a, b, out]`.
            nargs(a, 3, &w)?;
            let (x, y) = (g.int(a[0], &w)?, g.int(a[1], &w)?);
            let v = match call.name.as_str() {
                "add" => x.checked_add(y),
                "sub" => x.checked_sub(y),
                "mul" => x.checked_mul(y),
                _ if y == 0 => None,
                // Python's floor division.
                _ => x
                    .checked_div(y)
                    .map(|q| q - i64::from(x % y != 0 && ((x < 0) != (y < 0)))),
            }
            .ok_or_else(|| format!("{w}: {x} {} {y} has no int64 result", call.name))?;
            g.set_sym(a[2], v, &w)
        }
        "aten.permute.default" => permute_copy(g, a, &w),
        "aten.t_copy.default" => t_copy(g, a, &w),
        "aten.alias_copy.default" => {
            nargs(a, 2, &w)?;
            let x = g.tensor(a[0], &w)?.clone();
            g.put(a[1], x.sizes, x.data, &w)
        }
        "dim_order_ops._clone_dim_order.default" => clone_dim_order(g, a, &w),
        "aten.copy.default" => copy(g, a, &w),
        "aten.flip.default" => flip(g, a, &w),
        "aten.repeat.default" => repeat(g, a, &w),
        "aten.unfold_copy.default" => unfold_copy(g, a, &w),
        "aten.index_select.default" => index_select(g, a, &w),
        "aten.gather.default" => gather_dim(g, a, &w),
        "aten.ones.default" => fill_sized(g, a, &w, 1.0),
        "aten.zeros.default" => fill_sized(g, a, &w, 0.0),
        "aten.ones_like.default" => fill_like(g, a, &w, 1.0),
        "aten.zeros_like.default" => fill_like(g, a, &w, 0.0),
        "aten.scalar_tensor.default" => {
            // [s, dtype, layout, device, pin_memory, out]
            nargs(a, 6, &w)?;
            let v = g.double(a[0], &w)?;
            g.put(a[5], Vec::new(), vec![v], &w)
        }
        "aten.max_pool2d.default" => max_pool2d(g, a, &w),
        "aten._assert_scalar.default" => assert_scalar(g, a, &w),
        "aten.sym_constrain_range_for_size.default" => sym_constrain_range_for_size(g, a, &w),
        "aten.embedding.default" => embedding(g, a, &w),
        "et_vk.embedding_q4gsw.default" => embedding_q4gsw(g, a, &w),
        "aten.index.Tensor" => index_tensor(g, a, &w),
        "et_vk.prepack.default" => {
            nargs(a, 2, &w)?;
            g.alias(a[1], a[0], &w)
        }
        "et_vk.rms_norm.default" => rms_norm(g, a, &w),
        "et_vk.apply_rotary_emb.default" => rotary(g, a, &w),
        "et_vk.apply_rotary_emb_hf.default" => rotary_hf(g, a, &w),
        "et_vk.sdpa.default" => sdpa(g, a, &w),
        "sdpa_with_kv_cache.default" => sdpa_kv_cache(g, a, &w),
        "update_cache.default" => update_cache(g, a, &w),
        "et_vk.linear_q4gsw.default" | "et_vk.q4gsw_linear.default" => q4gsw(g, a, &w),
        "et_vk.linear_q4gsw_backward.default" => q4gsw_backward(g, a, &w),
        "et_vk.linear_qcs4w.default" => qcs4w(g, a, &w),
        "et_vk.linear_dq8ca_q4gsw.default" => dq8ca_q4gsw(g, a, &w),
        "torchao.choose_qparams_affine.default" => choose_qparams_affine(g, a, &w),
        "torchao.dequantize_affine.default" => dequantize_affine(g, a, &w),
        "quantized_decomposed.embedding_4bit.dtype" => embedding_4bit(g, a, &w),
        "aten.grid_sampler_2d.default" => grid_sampler_2d(g, a, &w),
        "et_vk.grid_priors.default" => grid_priors(g, a, &w),
        "torchao.quantize_affine.default" => super::quant_ops::quantize_affine(g, a, &w),
        "quantized_decomposed.quantize_per_token.default" => {
            super::quant_ops::quantize_per_token(g, a, &w)
        }
        "quantized_decomposed.dequantize_per_token.default" => {
            super::quant_ops::dequantize_per_token(g, a, &w)
        }
        "quantized_decomposed.choose_qparams_per_token_asymmetric.default" => {
            super::quant_ops::choose_per_token(g, a, &w)
        }
        "quantized_decomposed.choose_qparams.tensor" => super::quant_ops::choose_tensor(g, a, &w),
        "et_vk.linear_dW.default" => linear_dw(g, a, &w),
        "aten._weight_int8pack_mm.default" => weight_int8pack_mm(g, a, &w),
        "quantized_decomposed.quantize_per_tensor.default"
        | "quantized_decomposed.quantize_per_tensor.tensor" => q8_quantize(g, a, &w, false),
        "quantized_decomposed.quantize_per_channel.default" => q8_quantize(g, a, &w, true),
        "quantized_decomposed.dequantize_per_tensor.default"
        | "quantized_decomposed.dequantize_per_tensor.tensor" => q8_dequantize(g, a, &w, false),
        "quantized_decomposed.dequantize_per_channel.default" => q8_dequantize(g, a, &w, true),
        "et_vk.q8ta_linear.default"
        | "et_vk.q8ta_linear_gemv.default"
        | "et_vk.linear_q8ta_q8csw.default" => q8ta_linear(g, a, &w),
        "et_vk.q8ta_conv2d.default"
        | "et_vk.q8ta_conv2d_dw.default"
        | "et_vk.q8ta_conv2d_pw.default"
        | "et_vk.q8ta_conv2d_transposed.default" => q8ta_conv2d(g, a, &w, &call.name),
        "et_vk.q8ta_add.default" => q8ta_add(g, a, &w),
        "et_vk.q8ta_relu.default" | "et_vk.q8ta_pixel_shuffle.default" => q8ta_requant(g, a, &w),
        other => Err(format!("{w}: op {other} has no CPU reference")),
    }
}

// ---------------------------------------------------------------- helpers

fn nargs(a: &[usize], n: usize, w: &str) -> R<()> {
    if a.len() != n {
        return Err(format!("{w}: {} args, expected {n}", a.len()));
    }
    Ok(())
}

/// PyTorch's dim wrapping: `d` in `[-rank, rank)` (a rank-0 tensor takes -1 and 0).
fn norm_dim(d: i64, rank: usize, w: &str) -> R<usize> {
    let r = rank.max(1) as i64;
    let x = if d < 0 { d + r } else { d };
    if !(0..r).contains(&x) {
        return Err(format!("{w}: dim {d} out of range for rank {rank}"));
    }
    Ok(x as usize)
}

/// The IntList value `v` as dims of a rank-`rank` tensor (negative ones from the end).
fn dim_list(g: &RefGraph, v: usize, rank: usize, w: &str) -> R<Vec<usize>> {
    g.int_list(v, w)?
        .into_iter()
        .map(|d| norm_dim(d, rank, w))
        .collect()
}

/// Values of a tensor of `sizes` where element `idx` is `src[f(idx)]`.
fn gather(src: &[f64], sizes: &[usize], f: impl Fn(&[usize]) -> usize) -> Vec<f64> {
    (0..numel(sizes))
        .map(|i| src[f(&unravel(i, sizes))])
        .collect()
}

/// NumPy broadcasting of two shapes.
fn broadcast_shape(a: &[usize], b: &[usize], w: &str) -> R<Vec<usize>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for (i, o) in out.iter_mut().enumerate() {
        let x = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let y = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        *o = if x == y || y == 1 {
            x
        } else if x == 1 {
            y
        } else {
            return Err(format!("{w}: sizes {a:?} and {b:?} do not broadcast"));
        };
    }
    Ok(out)
}

/// Strides of a tensor of `sizes` seen through broadcasting to `out` (0 on broadcast dims).
fn broadcast_strides(sizes: &[usize], out: &[usize]) -> Vec<usize> {
    let st = strides(sizes);
    let off = out.len() - sizes.len();
    (0..out.len())
        .map(|i| {
            if i < off || sizes[i - off] == 1 {
                0
            } else {
                st[i - off]
            }
        })
        .collect()
}

fn dot(idx: &[usize], st: &[usize]) -> usize {
    idx.iter().zip(st).map(|(i, s)| i * s).sum()
}

/// A binary operand: a tensor, or a scalar (Int / Double / Bool / SymInt value).
fn operand(g: &RefGraph, v: usize, w: &str) -> R<Tensor> {
    match g.value(v) {
        Value::Tensor(_) => Ok(g.tensor(v, w)?.clone()),
        _ => Ok(Tensor {
            dtype: DataType::Float64,
            sizes: Vec::new(),
            data: vec![g.double(v, w)?],
        }),
    }
}

fn broadcast_apply(x: &Tensor, y: &Tensor, w: &str, f: impl Fn(f64, f64) -> f64) -> R<Tensor> {
    let sizes = broadcast_shape(&x.sizes, &y.sizes, w)?;
    let (sx, sy) = (
        broadcast_strides(&x.sizes, &sizes),
        broadcast_strides(&y.sizes, &sizes),
    );
    let data = (0..numel(&sizes))
        .map(|i| {
            let idx = unravel(i, &sizes);
            f(x.data[dot(&idx, &sx)], y.data[dot(&idx, &sy)])
        })
        .collect();
    Ok(Tensor {
        dtype: x.dtype,
        sizes,
        data,
    })
}

// ---------------------------------------------------------------- elementwise

/// `[condition, self, other, out]`: `condition != 0 ? self : other`, three-way broadcast.
fn where_self(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let (c, x, y) = (
        operand(g, a[0], w)?,
        operand(g, a[1], w)?,
        operand(g, a[2], w)?,
    );
    let sizes = broadcast_shape(&c.sizes, &broadcast_shape(&x.sizes, &y.sizes, w)?, w)?;
    let (sc, sx, sy) = (
        broadcast_strides(&c.sizes, &sizes),
        broadcast_strides(&x.sizes, &sizes),
        broadcast_strides(&y.sizes, &sizes),
    );
    let data = (0..numel(&sizes))
        .map(|i| {
            let idx = unravel(i, &sizes);
            if c.data[dot(&idx, &sc)] != 0.0 {
                x.data[dot(&idx, &sx)]
            } else {
                y.data[dot(&idx, &sy)]
            }
        })
        .collect();
    g.put(a[3], sizes, data, w)
}

/// `[x, size, implicit, out]`: broadcast x to `size` (new leading dims; -1 keeps a dim).
fn expand_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?;
    let want = g.int_list(a[1], w)?;
    if want.len() < x.sizes.len() {
        return Err(format!(
            "{w}: size {want:?} has fewer dims than x {:?}",
            x.sizes
        ));
    }
    let off = want.len() - x.sizes.len();
    let mut sizes = Vec::with_capacity(want.len());
    for (i, &s) in want.iter().enumerate() {
        let own = i.checked_sub(off).map(|j| x.sizes[j]);
        sizes.push(match (s, own) {
            (-1, Some(n)) => n,
            (s, Some(n)) if s >= 0 && (n == 1 || n == s as usize) => s as usize,
            (s, None) if s >= 0 => s as usize,
            _ => return Err(format!("{w}: cannot expand {:?} to {want:?}", x.sizes)),
        });
    }
    let st = broadcast_strides(&x.sizes, &sizes);
    let data = gather(&x.data, &sizes, |idx| dot(idx, &st));
    g.put(a[3], sizes, data, w)
}

/// `[input, normalized_shape, weight?, bias?, eps, (out, mean, rstd)]`: over the trailing
/// `len(normalized_shape)` dims, biased variance; mean / rstd sized `input.shape[:axis]` +
/// ones.
fn layer_norm(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let x = g.tensor(a[0], w)?.clone();
    let shape = g.int_list(a[1], w)?;
    let (wt, b) = (
        g.opt_tensor(a[2], w)?.cloned(),
        g.opt_tensor(a[3], w)?.cloned(),
    );
    let eps = g.double(a[4], w)?;
    let outs = g.value_list(a[5], w)?;
    let k = shape.len();
    if k == 0 || k > x.sizes.len() || outs.len() != 3 {
        return Err(format!(
            "{w}: normalized_shape {shape:?} for input {:?}",
            x.sizes
        ));
    }
    let axis = x.sizes.len() - k;
    let n: usize = x.sizes[axis..].iter().product();
    let (out, means, rstds) = crate::reference::layer_norm_rows(
        &x.data,
        n,
        wt.as_ref().map(|t| t.data.as_slice()),
        b.as_ref().map(|t| t.data.as_slice()),
        eps,
    );
    let mut stat = x.sizes[..axis].to_vec();
    stat.extend(std::iter::repeat_n(1, k));
    g.put(outs[0], x.sizes.clone(), out, w)?;
    g.put(outs[1], stat.clone(), means, w)?;
    g.put(outs[2], stat, rstds, w)
}

/// `[x, weight, bias|None, stride, padding, dilation, transposed, output_padding, groups,
/// (output_min, output_max,) out]`.
fn convolution(g: &mut RefGraph, a: &[usize], w: &str, clamped: bool) -> R<()> {
    nargs(a, if clamped { 12 } else { 10 }, w)?;
    let x = g.tensor(a[0], w)?;
    let wt = g.tensor(a[1], w)?;
    let bias = g.opt_tensor(a[2], w)?;
    let sd = x.sizes.len().wrapping_sub(2);
    if !(sd == 1 || sd == 2) || wt.sizes.len() != x.sizes.len() {
        return Err(format!(
            "{w}: x {:?} / weight {:?}: 1-D or 2-D convolutions only",
            x.sizes, wt.sizes
        ));
    }
    let list = |i: usize| -> R<Vec<usize>> {
        let l = g.int_list(a[i], w)?;
        if l.is_empty() || l.len() > sd || l.iter().any(|&v| v < 0) {
            return Err(format!("{w}: arg {i} {l:?} for a {sd}-D convolution"));
        }
        Ok(l.iter().map(|&v| v as usize).collect())
    };
    let params = crate::reference::ConvParams {
        stride: list(3)?,
        padding: list(4)?,
        dilation: list(5)?,
        transposed: g.int(a[6], w)? != 0,
        output_padding: list(7)?,
        groups: g.int(a[8], w)?.max(1) as usize,
    };
    let c_in = if params.transposed {
        wt.sizes[0]
    } else {
        wt.sizes[1] * params.groups
    };
    if x.sizes[1] != c_in || wt.sizes[0] % params.groups != 0 {
        return Err(format!(
            "{w}: x {:?} does not match weight {:?} with groups {}",
            x.sizes, wt.sizes, params.groups
        ));
    }
    // The kernel must fit: PyTorch refuses an input shorter than the dilated kernel.
    let pick = |l: &[usize], d: usize| if l.len() == 1 { l[0] } else { l[d] };
    for d in 0..sd {
        let (n, k) = (x.sizes[2 + d], wt.sizes[2 + d]);
        let span = pick(&params.dilation, d) * (k.max(1) - 1) + 1;
        let pad = 2 * pick(&params.padding, d);
        let fits = if params.transposed {
            n >= 1
                && (n - 1) * pick(&params.stride, d) + span + pick(&params.output_padding, d) > pad
        } else {
            n + pad >= span
        };
        if !fits || pick(&params.stride, d) == 0 {
            return Err(format!(
                "{w}: input {:?} is too small for weight {:?} with {params:?}",
                x.sizes, wt.sizes
            ));
        }
    }
    let clamp = if clamped {
        (
            g.opt_double(a[9], w)?.unwrap_or(f64::NEG_INFINITY),
            g.opt_double(a[10], w)?.unwrap_or(f64::INFINITY),
        )
    } else {
        (f64::NEG_INFINITY, f64::INFINITY)
    };
    let out = *a.last().unwrap_or(&0);
    let y = crate::reference::conv(x, wt, bias, &params, clamp, x.dtype);
    g.put(out, y.sizes, y.data, w)
}

/// `[x, weight|None, bias|None, running_mean, running_var, momentum, eps, out ValueList(out,
/// save_mean, save_rstd)]`.
fn batch_norm(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 8, w)?;
    let x = g.tensor(a[0], w)?;
    let (wt, b) = (g.opt_tensor(a[1], w)?, g.opt_tensor(a[2], w)?);
    let (mean, var) = (g.tensor(a[3], w)?, g.tensor(a[4], w)?);
    let eps = g.double(a[6], w)?;
    let outs = g.value_list(a[7], w)?;
    let c = x.sizes.get(1).copied().unwrap_or(0);
    let params = [Some(mean), Some(var), wt, b];
    if outs.len() != 3 || params.iter().flatten().any(|t| t.numel() != c) {
        return Err(format!(
            "{w}: x {:?} with statistics of another size",
            x.sizes
        ));
    }
    let y = crate::reference::batch_norm(x, wt, b, mean, var, eps);
    g.put(outs[0], y.sizes, y.data, w)?;
    g.put(outs[1], vec![0], vec![], w)?;
    g.put(outs[2], vec![0], vec![], w)
}

/// `[ValueList(tensors), dim, out]`: concatenation along `dim` (negative allowed); 1-D
/// empty tensors are skipped, as PyTorch does.
fn cat(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let ids = g.value_list(a[0], w)?;
    let parts: Vec<Tensor> = ids
        .iter()
        .map(|&v| g.tensor(v, w).cloned())
        .collect::<R<Vec<_>>>()?
        .into_iter()
        .filter(|t| !(t.sizes.len() == 1 && t.sizes[0] == 0))
        .collect();
    let Some(first) = parts.first() else {
        return Err(format!("{w}: nothing to concatenate"));
    };
    let rank = first.sizes.len();
    let d = norm_dim(g.int(a[1], w)?, rank, w)?;
    let mut sizes = first.sizes.clone();
    sizes[d] = 0;
    for t in &parts {
        let same =
            t.sizes.len() == rank && (0..rank).all(|i| i == d || t.sizes[i] == first.sizes[i]);
        if !same {
            return Err(format!(
                "{w}: sizes {:?} and {:?} do not concatenate on dim {d}",
                first.sizes, t.sizes
            ));
        }
        sizes[d] += t.sizes[d];
    }
    let outer: usize = sizes[..d].iter().product();
    let mut data = Vec::with_capacity(numel(&sizes));
    for o in 0..outer {
        for t in &parts {
            let chunk: usize = t.sizes[d..].iter().product();
            data.extend_from_slice(&t.data[o * chunk..(o + 1) * chunk]);
        }
    }
    g.put(a[2], sizes, data, w)
}

fn unary_op(g: &mut RefGraph, a: &[usize], w: &str, f: fn(f64) -> f64) -> R<()> {
    nargs(a, 2, w)?;
    let x = g.tensor(a[0], w)?;
    let (sizes, data) = (x.sizes.clone(), x.data.iter().map(|&v| f(v)).collect());
    g.put(a[1], sizes, data, w)
}

fn binary(g: &mut RefGraph, a: &[usize], w: &str, f: fn(f64, f64) -> f64) -> R<()> {
    nargs(a, 3, w)?;
    let (x, y) = (operand(g, a[0], w)?, operand(g, a[1], w)?);
    let t = broadcast_apply(&x, &y, w, f)?;
    g.put(a[2], t.sizes, t.data, w)
}

/// `add` / `sub`: `[a, b, alpha, out]`, `out = a + sign * alpha * b`.
fn binary_alpha(g: &mut RefGraph, a: &[usize], w: &str, sign: f64) -> R<()> {
    nargs(a, 4, w)?;
    let (x, y) = (operand(g, a[0], w)?, operand(g, a[1], w)?);
    let alpha = g.opt_double(a[2], w)?.unwrap_or(1.0) * sign;
    let t = broadcast_apply(&x, &y, w, |p, q| p + alpha * q)?;
    g.put(a[3], t.sizes, t.data, w)
}

// ---------------------------------------------------------------- matmuls

/// `out[m][n] = sum_k x[m][k] * wt(n, k)` for `m < rows`.
fn rows_times(
    x: &[f64],
    rows: usize,
    k: usize,
    n: usize,
    wt: impl Fn(usize, usize) -> f64,
) -> Vec<f64> {
    let mut out = vec![0.0; rows * n];
    for m in 0..rows {
        let xr = &x[m * k..(m + 1) * k];
        for j in 0..n {
            out[m * n + j] = xr.iter().enumerate().map(|(p, &xv)| xv * wt(j, p)).sum();
        }
    }
    out
}

/// Leading sizes and the last dim of `x`, which must equal `k` when given.
fn split_last(x: &Tensor, w: &str, role: &str) -> R<(Vec<usize>, usize, usize)> {
    let k = *x
        .sizes
        .last()
        .ok_or_else(|| format!("{w}: {role} is rank 0, expected [..., K]"))?;
    let lead = x.sizes[..x.sizes.len() - 1].to_vec();
    Ok((lead.clone(), numel(&lead), k))
}

/// `[x, weight [N, K], bias?, out]`: `x @ weight^T + bias`.
fn linear(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?;
    let wt = g.tensor(a[1], w)?;
    let bias = g.opt_tensor(a[2], w)?;
    let (lead, m, k) = split_last(x, w, "x")?;
    if wt.sizes.len() != 2 || wt.sizes[1] != k {
        return Err(format!(
            "{w}: weight sizes {:?} must be [N, {k}] for x {:?}",
            wt.sizes, x.sizes
        ));
    }
    let n = wt.sizes[0];
    let mut data = rows_times(&x.data, m, k, n, |j, p| wt.data[j * k + p]);
    if let Some(b) = bias {
        if b.numel() < n {
            return Err(format!(
                "{w}: bias sizes {:?} hold fewer than N = {n}",
                b.sizes
            ));
        }
        for (i, v) in data.iter_mut().enumerate() {
            *v += b.data[i % n];
        }
    }
    let mut sizes = lead;
    sizes.push(n);
    g.put(a[3], sizes, data, w)
}

/// `[a [M, K], b [K, N], out]`.
fn mm(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let (x, y) = (g.tensor(a[0], w)?, g.tensor(a[1], w)?);
    if x.sizes.len() != 2 || y.sizes.len() != 2 || x.sizes[1] != y.sizes[0] {
        return Err(format!(
            "{w}: sizes {:?} @ {:?} do not chain",
            x.sizes, y.sizes
        ));
    }
    let (m, k, n) = (x.sizes[0], x.sizes[1], y.sizes[1]);
    let data = rows_times(&x.data, m, k, n, |j, p| y.data[p * n + j]);
    g.put(a[2], vec![m, n], data, w)
}

/// `[a [B, M, K], b [B, K, N], out]`.
fn bmm(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let (x, y) = (g.tensor(a[0], w)?, g.tensor(a[1], w)?);
    let ok = x.sizes.len() == 3
        && y.sizes.len() == 3
        && x.sizes[0] == y.sizes[0]
        && x.sizes[2] == y.sizes[1];
    if !ok {
        return Err(format!(
            "{w}: sizes {:?} and {:?} are not [B, M, K] and [B, K, N]",
            x.sizes, y.sizes
        ));
    }
    let (b, m, k, n) = (x.sizes[0], x.sizes[1], x.sizes[2], y.sizes[2]);
    let mut data = Vec::with_capacity(b * m * n);
    for bi in 0..b {
        let xb = &x.data[bi * m * k..(bi + 1) * m * k];
        let yb = &y.data[bi * k * n..(bi + 1) * k * n];
        data.extend(rows_times(xb, m, k, n, |j, p| yb[p * n + j]));
    }
    g.put(a[2], vec![b, m, n], data, w)
}

/// `[d_out [..., N], x [..., K], out [N, K]]`: `dW = d_out^T @ x` over the flattened rows.
fn linear_dw(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let (d, x) = (g.tensor(a[0], w)?, g.tensor(a[1], w)?);
    let (_, m, n) = split_last(d, w, "d_out")?;
    let (_, mx, k) = split_last(x, w, "x")?;
    if m != mx {
        return Err(format!(
            "{w}: d_out {:?} and x {:?} have different row counts",
            d.sizes, x.sizes
        ));
    }
    let mut data = vec![0.0; n * k];
    for r in 0..m {
        for j in 0..n {
            let dv = d.data[r * n + j];
            for p in 0..k {
                data[j * k + p] += dv * x.data[r * k + p];
            }
        }
    }
    g.put(a[2], vec![n, k], data, w)
}

// ---------------------------------------------------------------- 4-bit linears

/// The stored nibble (0..15) of a q4gsw weight `[N, cols]`: even k low, odd k high.
fn q4gsw_code(wt: &Tensor, n: usize, k: usize) -> f64 {
    let byte = wt.data[n * wt.sizes[1] + k / 2] as u32;
    f64::from(if k.is_multiple_of(2) {
        byte & 0xF
    } else {
        byte >> 4
    })
}

/// Checked `(weights, scales, group_size)` of the q4gsw ops whose first `cols` columns are
/// read (at most the padded K; `None`: all of them); returns (N, padded K, scale row
/// stride).
fn q4gsw_parts(
    wt: &Tensor,
    sc: &Tensor,
    gs: i64,
    cols: Option<usize>,
    w: &str,
) -> R<(usize, usize, usize)> {
    if wt.sizes.len() != 2 || sc.sizes.len() != 2 {
        return Err(format!(
            "{w}: weights {:?} / scales {:?} must be [N, K/2] / [G, N]",
            wt.sizes, sc.sizes
        ));
    }
    let (n, kp) = (wt.sizes[0], wt.sizes[1] * 2);
    if gs <= 0 {
        return Err(format!("{w}: group_size {gs} must be positive"));
    }
    let groups = cols.unwrap_or(kp).min(kp).div_ceil(gs as usize);
    if sc.sizes[1] < n || sc.sizes[0] < groups {
        return Err(format!(
            "{w}: scales {:?} do not cover {groups} groups x N = {n}",
            sc.sizes
        ));
    }
    Ok((n, kp, sc.sizes[1]))
}

/// `[x, weights, scales, group_size, bias?, out]`:
/// `W[n][k] = (code - 8) * scales[k / gs][n]`, `out = x @ W^T + bias`.
fn q4gsw(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let x = g.tensor(a[0], w)?;
    let (wt, sc) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
    let gs = g.int(a[3], w)?;
    let bias = g.opt_tensor(a[4], w)?;
    let (lead, m, k) = split_last(x, w, "x")?;
    let (n, kp, stride) = q4gsw_parts(wt, sc, gs, Some(k), w)?;
    if k > kp {
        return Err(format!("{w}: x {:?} has K > the weight's {kp}", x.sizes));
    }
    let data = q4gsw_rows(&x.data, (m, k), (wt, sc, stride, gs as usize, n), bias, w)?;
    let mut sizes = lead;
    sizes.push(n);
    g.put(a[5], sizes, data, w)
}

/// Rows `x [m, k]` times the q4gsw weight's first k columns, transposed (`(code - 8) *
/// scale`, scale row stride `stride`, groups of `gs`), plus the bias when there is one.
fn q4gsw_rows(
    x: &[f64],
    (m, k): (usize, usize),
    (wt, sc, stride, gs, n): (&Tensor, &Tensor, usize, usize, usize),
    bias: Option<&Tensor>,
    w: &str,
) -> R<Vec<f64>> {
    let deq = |j: usize, p: usize| (q4gsw_code(wt, j, p) - 8.0) * sc.data[(p / gs) * stride + j];
    let mut data = rows_times(x, m, k, n, deq);
    if let Some(b) = bias {
        if b.numel() < n {
            return Err(format!("{w}: bias {:?} holds fewer than N = {n}", b.sizes));
        }
        for (i, v) in data.iter_mut().enumerate() {
            *v += b.data[i % n];
        }
    }
    Ok(data)
}

/// `[x, input_scales, input_zp, weights, weight_sums, weight_scales, group_size, bias?,
/// out]`: x quantized per row to int8 with (input_scales, input_zp) and dequantized in fp32
/// as torchao does, then as `linear_q4gsw` (weight_sums is not needed).
fn dq8ca_q4gsw(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 9, w)?;
    let x = g.tensor(a[0], w)?;
    let (sc, zp) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
    let (wt, ws) = (g.tensor(a[3], w)?, g.tensor(a[5], w)?);
    let gs = g.int(a[6], w)?;
    let bias = g.opt_tensor(a[7], w)?;
    let (lead, m, k) = split_last(x, w, "x")?;
    let (n, kp, stride) = q4gsw_parts(wt, ws, gs, Some(k), w)?;
    if k > kp || sc.numel() != m || zp.numel() != m {
        return Err(format!(
            "{w}: x {:?} (K <= {kp}) needs one scale and zero point per row, got {:?} / {:?}",
            x.sizes, sc.sizes, zp.sizes
        ));
    }
    let xq: Vec<f64> = x
        .data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let r = i / k;
            f64::from(crate::reference::torchao_int8_fake_quant(
                v as f32,
                sc.data[r] as f32,
                zp.data[r] as f32,
            ))
        })
        .collect();
    let data = q4gsw_rows(&xq, (m, k), (wt, ws, stride, gs as usize, n), bias, w)?;
    let mut sizes = lead;
    sizes.push(n);
    g.put(a[8], sizes, data, w)
}

/// `[x, mapping_type, block_size, target_dtype, quant_min, quant_max, eps, scale_dtype,
/// zero_point_dtype, keepdim?, (scale, zero_point)]`, per row (block_size `[1, ..., 1, K]`), in fp32
/// as torchao computes it; the quant range defaults to int8's.
fn choose_qparams_affine(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    // keepdim (torchao 0.18) before the outputs, or not (earlier schemas).
    if a.len() != 11 {
        nargs(a, 10, w)?;
    }
    let x = g.tensor(a[0], w)?;
    let mapping = match g.value(a[1]) {
        Value::String(s) if s.is_empty() => "ASYMMETRIC".to_string(),
        Value::String(s) => s.clone(),
        other => return Err(format!("{w}: mapping_type is a {}", other.kind_name())),
    };
    let (lead, _, k) = split_last(x, w, "x")?;
    let block = g.int_list(a[2], w)?;
    let qmin = g.opt_int(a[4], w)?.unwrap_or(-128);
    let qmax = g.opt_int(a[5], w)?.unwrap_or(127);
    // torchao's default eps: the smallest normal number of x's dtype.
    let smallest_normal = if x.dtype == DataType::Float16 {
        6.103_515_6e-5
    } else {
        f64::from(f32::MIN_POSITIVE)
    };
    let eps = g.opt_double(a[6], w)?.unwrap_or(smallest_normal) as f32;
    if block.len() != x.sizes.len()
        || block[..block.len() - 1].iter().any(|&b| b != 1)
        || block.last() != Some(&(k as i64))
    {
        let block: Vec<usize> = block.iter().map(|&b| b.max(0) as usize).collect();
        return super::quant_ops::choose_blocks(g, a, (&mapping, (qmin, qmax), eps), &block, w);
    }
    let (mut sv, mut zv) = (Vec::new(), Vec::new());
    for row in x.data.chunks(k.max(1)) {
        let row: Vec<f32> = row.iter().map(|&v| v as f32).collect();
        let (s, z) = crate::reference::torchao_qparams(&row, &mapping, (qmin, qmax), eps);
        sv.push(f64::from(s));
        zv.push(f64::from(z));
    }
    let outs = g.value_list(a[a.len() - 1], w)?;
    if outs.len() != 2 {
        return Err(format!(
            "{w}: {} outputs, expected (scale, zero_point)",
            outs.len()
        ));
    }
    for (&o, data) in outs.iter().zip([sv, zv]) {
        let (_, max) = g.tensor_info(o, w)?;
        let mut sizes = lead.clone();
        if max.len() > lead.len() {
            sizes.push(1);
        }
        g.put(o, sizes, data, w)?;
    }
    Ok(())
}

/// `[q, block_size, scale, zero_point?, input_dtype, quant_min, quant_max,
/// (zero_point_domain,) output_dtype, out]`: `(int32(q) - int32(zero_point)) * scale` with one
/// scale and zero point per block of `block_size`, in the blocks' row-major order.
fn dequantize_affine(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    if a.len() != 10 {
        nargs(a, 9, w)?;
    }
    let q = g.tensor(a[0], w)?;
    let block = g.int_list(a[1], w)?;
    let (sc, zp) = (g.tensor(a[2], w)?, g.opt_tensor(a[3], w)?);
    let sizes = q.sizes.clone();
    if block.len() != sizes.len() || block.iter().any(|&b| b < 1) {
        return Err(format!("{w}: block_size {block:?} for input {sizes:?}"));
    }
    let grid: Vec<usize> = sizes
        .iter()
        .zip(&block)
        .map(|(&n, &b)| n.div_ceil(b as usize))
        .collect();
    let groups: usize = grid.iter().product();
    if sc.numel() != groups || zp.is_some_and(|z| z.numel() != groups) {
        return Err(format!(
            "{w}: scale / zero point do not hold one value per {groups} blocks"
        ));
    }
    let strides: Vec<usize> = (0..sizes.len())
        .map(|d| sizes[d + 1..].iter().product())
        .collect();
    let data = (0..q.numel())
        .map(|i| {
            let mut blk = 0;
            for d in 0..sizes.len() {
                blk = blk * grid[d] + (i / strides[d]) % sizes[d] / block[d] as usize;
            }
            let z = zp.map_or(0.0, |z| z.data[blk].trunc());
            (q.data[i] - z) * sc.data[blk]
        })
        .collect();
    g.put(a[a.len() - 1], sizes, data, w)
}

/// `[d_out [..., N], weights, scales, group_size, d_x [..., K]]`: `d_x = d_out @ W`.
fn q4gsw_backward(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 5, w)?;
    let d = g.tensor(a[0], w)?;
    let (wt, sc) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
    let gs = g.int(a[3], w)?;
    let (n, kp, stride) = q4gsw_parts(wt, sc, gs, None, w)?;
    let (lead, m, dn) = split_last(d, w, "d_out")?;
    if dn != n {
        return Err(format!("{w}: d_out {:?} last dim must be N = {n}", d.sizes));
    }
    // d_x's K is the serialized one (padded K unless the exporter trimmed it).
    let (_, out_max) = g.tensor_info(a[4], w)?;
    let k = out_max.last().copied().unwrap_or(kp).min(kp);
    let gs = gs as usize;
    let deq = |p: usize, j: usize| (q4gsw_code(wt, j, p) - 8.0) * sc.data[(p / gs) * stride + j];
    let data = rows_times(&d.data, m, n, k, deq);
    let mut sizes = lead;
    sizes.push(k);
    g.put(a[4], sizes, data, w)
}

/// `[x [..., K], weight int8 [N, K], scales [N], out]`: `scales[n] * sum_k w[n][k] x[k]`.
fn weight_int8pack_mm(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?;
    let (wt, sc) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
    let (lead, m, k) = split_last(x, w, "x")?;
    if wt.sizes.len() != 2 || wt.sizes[1] != k || sc.numel() != wt.sizes[0] {
        return Err(format!(
            "{w}: weight {:?} / scales {:?} do not fit x {:?}",
            wt.sizes, sc.sizes, x.sizes
        ));
    }
    let n = wt.sizes[0];
    let data = rows_times(&x.data, m, k, n, |j, p| wt.data[j * k + p] * sc.data[j]);
    let mut sizes = lead;
    sizes.push(n);
    g.put(a[3], sizes, data, w)
}

/// `[x, weight [N, ceil(K/2)], scales [N], out]`:
/// `out[m][n] = s[n] * sum_k (code(n, k) - 8) * x[m][k]`, even k in the HIGH nibble.
fn qcs4w(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?;
    let (wt, sc) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
    if wt.sizes.len() != 2 {
        return Err(format!("{w}: weight {:?} must be [N, K/2]", wt.sizes));
    }
    let (n, cols) = (wt.sizes[0], wt.sizes[1]);
    if sc.numel() < n {
        return Err(format!(
            "{w}: scales {:?} hold fewer than N = {n}",
            sc.sizes
        ));
    }
    let (lead, m, k) = split_last(x, w, "x")?;
    if k > 2 * cols {
        return Err(format!(
            "{w}: x {:?} has K > the weight's {}",
            x.sizes,
            2 * cols
        ));
    }
    let deq = |j: usize, p: usize| {
        let byte = wt.data[j * cols + p / 2] as u32;
        let code = if p.is_multiple_of(2) {
            byte >> 4
        } else {
            byte & 0xF
        };
        (f64::from(code) - 8.0) * sc.data[j]
    };
    let data = rows_times(&x.data, m, k, n, deq);
    let mut sizes = lead;
    sizes.push(n);
    g.put(a[3], sizes, data, w)
}

// ---------------------------------------------------------------- reductions / llama

/// `[x, dim, half_to_float, out]`.
fn softmax(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?;
    let d = norm_dim(g.int(a[1], w)?, x.sizes.len(), w)?;
    let len = x.sizes.get(d).copied().unwrap_or(1);
    let inner: usize = x.sizes.iter().skip(d + 1).product();
    let outer = x.numel() / (len * inner).max(1);
    let mut data = x.data.clone();
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| o * len * inner + j * inner + i;
            let mx = (0..len)
                .map(|j| x.data[at(j)])
                .fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..len).map(|j| (x.data[at(j)] - mx).exp()).sum();
            for j in 0..len {
                data[at(j)] = (x.data[at(j)] - mx).exp() / sum;
            }
        }
    }
    let sizes = x.sizes.clone();
    g.put(a[3], sizes, data, w)
}

/// `[x, weight [D], eps, out]`: `x / sqrt(mean(x^2 over the last dim) + eps) * weight`.
fn rms_norm(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?;
    let wt = g.tensor(a[1], w)?;
    let eps = g.double(a[2], w)?;
    let (_, rows, d) = split_last(x, w, "x")?;
    if wt.numel() != d {
        return Err(format!(
            "{w}: weight {:?} must have D = {d} elements",
            wt.sizes
        ));
    }
    let mut data = vec![0.0; rows * d];
    for r in 0..rows {
        let row = &x.data[r * d..(r + 1) * d];
        let ms = row.iter().map(|v| v * v).sum::<f64>() / d.max(1) as f64;
        let inv = 1.0 / (ms + eps).sqrt();
        for j in 0..d {
            data[r * d + j] = row[j] * inv * wt.data[j];
        }
    }
    let sizes = x.sizes.clone();
    g.put(a[3], sizes, data, w)
}

/// The `(xq_out, xk_out)` ValueList `v` of a RoPE op.
fn rope_outputs(g: &RefGraph, v: usize, w: &str) -> R<[usize; 2]> {
    match g.value_list(v, w)?.as_slice() {
        &[q, k] => Ok([q, k]),
        outs => Err(format!(
            "{w}: {} outputs, expected (xq_out, xk_out)",
            outs.len()
        )),
    }
}

/// `[xq, xk, freqs_cos [S, D/2], freqs_sin [S, D/2], ValueList(xq_out, xk_out)]`, x
/// `[B, S, H, D]`: Llama's interleaved-pair rotation.
fn rotary(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 5, w)?;
    let outs = rope_outputs(g, a[4], w)?;
    let (c, s) = (g.tensor(a[2], w)?.clone(), g.tensor(a[3], w)?.clone());
    for (src, dst) in [(a[0], outs[0]), (a[1], outs[1])] {
        let x = g.tensor(src, w)?;
        if x.sizes.len() != 4 || !x.sizes[3].is_multiple_of(2) {
            return Err(format!(
                "{w}: x {:?} must be [B, S, H, D] with D even",
                x.sizes
            ));
        }
        let (sq, h, d) = (x.sizes[1], x.sizes[2], x.sizes[3]);
        let want = [sq, d / 2];
        if c.sizes != want || s.sizes != want {
            return Err(format!(
                "{w}: freqs {:?} / {:?} must be [S, D/2] = {want:?} for x {:?}",
                c.sizes, s.sizes, x.sizes
            ));
        }
        let mut data = x.data.clone();
        for (row, chunk) in data.chunks_mut(d).enumerate() {
            let si = (row / h) % sq;
            for p in 0..d / 2 {
                let (re, im) = (chunk[2 * p], chunk[2 * p + 1]);
                let (co, sn) = (c.data[si * (d / 2) + p], s.data[si * (d / 2) + p]);
                chunk[2 * p] = re * co - im * sn;
                chunk[2 * p + 1] = re * sn + im * co;
            }
        }
        let sizes = x.sizes.clone();
        g.put(dst, sizes, data, w)?;
    }
    Ok(())
}

/// `[xq, xk, freqs_cos, freqs_sin, start_pos, (xq_out, xk_out)]`: HF rotate-half RoPE on
/// x [B, S, H, D] with cos / sin rows `start_pos + s` of [max_seq, R] (R even, R <= D): for
/// d < R / 2, `x[d] cos[d] - x[d + R/2] sin[d]`; for R / 2 <= d < R, `x[d] cos[d] +
/// x[d - R/2] sin[d]`; dims from R on pass through.
fn rotary_hf(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let outs = rope_outputs(g, a[5], w)?;
    let (c, s) = (g.tensor(a[2], w)?.clone(), g.tensor(a[3], w)?.clone());
    let start = usize::try_from(g.int(a[4], w)?).map_err(|_| format!("{w}: negative start_pos"))?;
    if c.sizes.len() != 2 || c.sizes != s.sizes || !c.sizes[1].is_multiple_of(2) {
        return Err(format!(
            "{w}: freqs {:?} / {:?} must be [max_seq, R], R even",
            c.sizes, s.sizes
        ));
    }
    let (max_seq, r) = (c.sizes[0], c.sizes[1]);
    for (src, dst) in [(a[0], outs[0]), (a[1], outs[1])] {
        let x = g.tensor(src, w)?;
        if x.sizes.len() != 4 || x.sizes[3] < r {
            return Err(format!("{w}: x {:?} must be [B, S, H, D >= {r}]", x.sizes));
        }
        let (sq, h, d) = (x.sizes[1], x.sizes[2], x.sizes[3]);
        if start + sq > max_seq {
            return Err(format!(
                "{w}: rows {start}..{} past the tables' {max_seq}",
                start + sq
            ));
        }
        let mut data = x.data.clone();
        for (row, chunk) in data.chunks_mut(d).enumerate() {
            let t = start + (row / h) % sq;
            let src: Vec<f64> = chunk[..r].to_vec();
            for p in 0..r {
                let (co, sn) = (c.data[t * r + p], s.data[t * r + p]);
                let rot = if p < r / 2 {
                    -src[p + r / 2]
                } else {
                    src[p - r / 2]
                };
                chunk[p] = src[p] * co + rot * sn;
            }
        }
        let sizes = x.sizes.clone();
        g.put(dst, sizes, data, w)?;
    }
    Ok(())
}

/// The key and value rows one query attends over: rows `0..n`, row j of both at offset
/// `at(j)` of `k` / `v`.
struct Keys<'a, F: Fn(usize) -> usize> {
    k: &'a [f64],
    v: &'a [f64],
    n: usize,
    at: F,
}

/// Attention of one query row: `softmax(scale * q.k + bias) @ v`, `bias(j)` the additive
/// mask (-inf drops key j).
fn attend<F: Fn(usize) -> usize>(
    q: &[f64],
    keys: &Keys<'_, F>,
    scale: f64,
    bias: impl Fn(usize) -> f64,
    out: &mut [f64],
) {
    let d = q.len();
    let at = &keys.at;
    let scores: Vec<f64> = (0..keys.n)
        .map(|j| {
            let kr = &keys.k[at(j)..at(j) + d];
            scale * q.iter().zip(kr).map(|(a, b)| a * b).sum::<f64>() + bias(j)
        })
        .collect();
    let mx = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = scores.iter().map(|s| (s - mx).exp()).collect();
    let sum: f64 = p.iter().sum();
    for (e, o) in out.iter_mut().enumerate() {
        *o = (0..keys.n).map(|j| p[j] * keys.v[at(j) + e]).sum::<f64>() / sum;
    }
}

/// Query heads per KV head, checked.
fn head_group(h: usize, h_kv: usize, w: &str) -> R<usize> {
    if h_kv == 0 || !h.is_multiple_of(h_kv) {
        return Err(format!(
            "{w}: {h} query heads are not a multiple of {h_kv} KV heads"
        ));
    }
    Ok(h / h_kv)
}

fn rank4(t: &Tensor, w: &str, role: &str, form: &str) -> R<[usize; 4]> {
    <[usize; 4]>::try_from(t.sizes.as_slice())
        .map_err(|_| format!("{w}: {role} sizes {:?} must be {form}", t.sizes))
}

/// `[q, k, v, attn_mask?, scale?, out]`, q `[B, H, S, D]`, k / v `[B, H_kv, L, D]`, mask
/// additive (float) or keep-mask (bool), broadcast to `[B, H, S, L]`.
fn sdpa(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let q = g.tensor(a[0], w)?;
    let (k, v) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
    let mask = g.opt_tensor(a[3], w)?;
    let [b, h, s, d] = rank4(q, w, "q", "[B, H, S, D]")?;
    let [kb, h_kv, l, kd] = rank4(k, w, "k", "[B, H_kv, L, D]")?;
    if kb != b || kd != d || v.sizes != k.sizes {
        return Err(format!(
            "{w}: k {:?} / v {:?} do not match q {:?}",
            k.sizes, v.sizes, q.sizes
        ));
    }
    let group = head_group(h, h_kv, w)?;
    let scale = g.opt_double(a[4], w)?.unwrap_or(1.0 / (d as f64).sqrt());
    let full = [b, h, s, l];
    let mask_st = match mask {
        Some(m) => {
            if broadcast_shape(&m.sizes, &full, w)? != full {
                return Err(format!(
                    "{w}: attn_mask {:?} does not broadcast to {full:?}",
                    m.sizes
                ));
            }
            Some(broadcast_strides(&m.sizes, &full))
        }
        None => None,
    };
    let mut data = vec![0.0; b * h * s * d];
    for bi in 0..b {
        for hi in 0..h {
            let kvh = hi / group;
            for i in 0..s {
                let row = ((bi * h + hi) * s + i) * d;
                let base = (bi * h_kv + kvh) * l * d;
                let bias = |j: usize| match (mask, &mask_st) {
                    (Some(m), Some(st)) => {
                        let mv = m.data[dot(&[bi, hi, i, j], st)];
                        if m.dtype == DataType::Bool {
                            if mv != 0.0 {
                                0.0
                            } else {
                                f64::NEG_INFINITY
                            }
                        } else {
                            mv
                        }
                    }
                    _ => 0.0,
                };
                let (qr, out) = (&q.data[row..row + d], &mut data[row..row + d]);
                let keys = Keys {
                    k: &k.data,
                    v: &v.data,
                    n: l,
                    at: |j| base + j * d,
                };
                attend(qr, &keys, scale, bias, out);
            }
        }
    }
    let sizes = q.sizes.clone();
    g.put(a[5], sizes, data, w)
}

/// `[value, cache, start_pos, out]`: value `[B, S, H, D]` written into cache `[B, max_seq, H,
/// D]` at rows `[start_pos, start_pos + S)`, in place; `out` is a placeholder nobody reads.
fn update_cache(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let v = g.tensor(a[0], w)?.clone();
    let start = g.int(a[2], w)?;
    let [b, s, h, d] = rank4(&v, w, "value", "[B, S, H, D]")?;
    let c = g.tensor_mut(a[1], w)?;
    let [cb, max_seq, ch, cd] = <[usize; 4]>::try_from(c.sizes.as_slice())
        .map_err(|_| format!("{w}: cache sizes {:?} must be [B, max_seq, H, D]", c.sizes))?;
    if cb != b || ch != h || cd != d {
        return Err(format!(
            "{w}: cache {:?} does not match value {:?}",
            c.sizes, v.sizes
        ));
    }
    let start = usize::try_from(start)
        .ok()
        .filter(|&p| p + s <= max_seq)
        .ok_or_else(|| format!("{w}: start_pos {start} + S {s} exceeds max_seq {max_seq}"))?;
    let row = h * d;
    for bi in 0..b {
        for si in 0..s {
            let from = (bi * s + si) * row;
            let to = (bi * max_seq + start + si) * row;
            c.data[to..to + row].copy_from_slice(&v.data[from..from + row]);
        }
    }
    Ok(())
}

/// `[q, k, v, k_cache, v_cache, start_pos, seq_len, attn_mask?, dropout_p, is_causal,
/// scale?, out]`, q `[B, S, H, D]`, k / v `[B, S, H_kv, D]`, caches `[B, max_seq, H_kv, D]`
/// (updated in place at rows `[start_pos, start_pos + S)`, kept across calls). Queries see
/// keys `[0, start_pos + S)`, causally (`j <= start_pos + i`) when `is_causal`.
fn sdpa_kv_cache(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 12, w)?;
    let q = g.tensor(a[0], w)?.clone();
    let (k, v) = (g.tensor(a[1], w)?.clone(), g.tensor(a[2], w)?.clone());
    let start = g.int(a[5], w)?;
    if g.opt_tensor(a[7], w)?.is_some() {
        return Err(format!(
            "{w}: attn_mask is not supported (the mask comes from start_pos)"
        ));
    }
    let dropout = g.opt_double(a[8], w)?.unwrap_or(0.0);
    if dropout != 0.0 {
        return Err(format!("{w}: dropout_p = {dropout} (inference only: 0)"));
    }
    let causal = g.int(a[9], w)? != 0;
    let [b, s, h, d] = rank4(&q, w, "q", "[B, S, H, D]")?;
    let [kb, ks, h_kv, kd] = rank4(&k, w, "k", "[B, S, H_kv, D]")?;
    if kb != b || ks != s || kd != d || v.sizes != k.sizes {
        return Err(format!(
            "{w}: k {:?} / v {:?} do not match q {:?}",
            k.sizes, v.sizes, q.sizes
        ));
    }
    let group = head_group(h, h_kv, w)?;
    let scale = g.opt_double(a[10], w)?.unwrap_or(1.0 / (d as f64).sqrt());
    let kc_sizes = g.tensor(a[3], w)?.sizes.clone();
    let [cb, max_seq, ch, cd] = <[usize; 4]>::try_from(kc_sizes.as_slice())
        .map_err(|_| format!("{w}: k_cache sizes {kc_sizes:?} must be [B, max_seq, H_kv, D]"))?;
    if cb != b || ch != h_kv || cd != d || g.tensor(a[4], w)?.sizes != kc_sizes {
        return Err(format!(
            "{w}: caches {kc_sizes:?} / {:?} do not match k {:?}",
            g.tensor(a[4], w)?.sizes,
            k.sizes
        ));
    }
    let end = usize::try_from(start)
        .ok()
        .map(|p| p + s)
        .filter(|&e| e <= max_seq)
        .ok_or_else(|| {
            format!("{w}: start_pos {start} + S {s} does not fit the cache length {max_seq}")
        })?;
    let row = h_kv * d;
    for (src, cache) in [(&k, a[3]), (&v, a[4])] {
        let c = g.tensor_mut(cache, w)?;
        for bi in 0..b {
            for si in 0..s {
                let from = (bi * s + si) * row;
                let to = (bi * max_seq + start as usize + si) * row;
                c.data[to..to + row].copy_from_slice(&src.data[from..from + row]);
            }
        }
    }
    let (kc, vc) = (g.tensor(a[3], w)?, g.tensor(a[4], w)?);
    let mut data = vec![0.0; q.numel()];
    for bi in 0..b {
        for hi in 0..h {
            let kvh = hi / group;
            for i in 0..s {
                let at = ((bi * s + i) * h + hi) * d;
                let last = start as usize + i;
                let k_at = |j: usize| (bi * max_seq + j) * row + kvh * d;
                let bias = |j: usize| {
                    if causal && j > last {
                        f64::NEG_INFINITY
                    } else {
                        0.0
                    }
                };
                let (qr, out) = (&q.data[at..at + d], &mut data[at..at + d]);
                let keys = Keys {
                    k: &kc.data,
                    v: &vc.data,
                    n: end,
                    at: k_at,
                };
                attend(qr, &keys, scale, bias, out);
            }
        }
    }
    g.put(a[11], q.sizes.clone(), data, w)
}

// ---------------------------------------------------------------- shape ops

/// `[x, sizes (IntList or ValueList of Int / SymInt, one -1 allowed), out]`.
fn view_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let x = g.tensor(a[0], w)?;
    let req = g.int_list(a[1], w)?;
    let n = x.numel();
    let known: i64 = req.iter().filter(|&&s| s != -1).product();
    let infer = req.iter().filter(|&&s| s == -1).count();
    if infer > 1 || req.iter().any(|&s| s < -1) {
        return Err(format!("{w}: sizes {req:?} are not valid view sizes"));
    }
    let sizes: Vec<usize> = req
        .iter()
        .map(|&s| {
            if s == -1 {
                if known == 0 {
                    0
                } else {
                    n / known as usize
                }
            } else {
                s as usize
            }
        })
        .collect();
    if numel(&sizes) != n {
        return Err(format!(
            "{w}: view sizes {req:?} -> {sizes:?} do not hold the {n} elements of {:?}",
            x.sizes
        ));
    }
    let data = x.data.clone();
    g.put(a[2], sizes, data, w)
}

/// `[x, dims, out]`.
fn permute_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let x = g.tensor(a[0], w)?;
    let r = x.sizes.len();
    let dims = dim_list(g, a[1], r, w)?;
    let mut seen = vec![false; r];
    if dims.len() != r || dims.iter().any(|&d| std::mem::replace(&mut seen[d], true)) {
        return Err(format!(
            "{w}: dims {dims:?} are not a permutation of rank {r}"
        ));
    }
    let sizes: Vec<usize> = dims.iter().map(|&d| x.sizes[d]).collect();
    let st = strides(&x.sizes);
    let data = gather(&x.data, &sizes, |idx| {
        idx.iter().zip(&dims).map(|(&i, &d)| i * st[d]).sum()
    });
    g.put(a[2], sizes, data, w)
}

/// `[x, dims, out]`: drop the listed dims that have size 1 (others stay, as in PyTorch).
fn squeeze_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let x = g.tensor(a[0], w)?;
    let r = x.sizes.len();
    let dims = dim_list(g, a[1], r, w)?;
    let sizes: Vec<usize> = x
        .sizes
        .iter()
        .enumerate()
        .filter(|&(i, &s)| !(s == 1 && dims.contains(&i)))
        .map(|(_, &s)| s)
        .collect();
    let data = x.data.clone();
    g.put(a[2], sizes, data, w)
}

/// `[x, dim, out]`.
fn unsqueeze_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let x = g.tensor(a[0], w)?;
    let d = norm_dim(g.int(a[1], w)?, x.sizes.len() + 1, w)?;
    let mut sizes = x.sizes.clone();
    sizes.insert(d, 1);
    let data = x.data.clone();
    g.put(a[2], sizes, data, w)
}

/// `[x, dim, start?, end?, step, out]` with PyTorch's clamping.
fn slice_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let x = g.tensor(a[0], w)?;
    let d = norm_dim(g.int(a[1], w)?, x.sizes.len(), w)?;
    let size = x.sizes[d] as i64;
    let step = g.opt_int(a[4], w)?.unwrap_or(1);
    if step <= 0 {
        return Err(format!("{w}: step {step} must be positive"));
    }
    let wrap = |v: i64| if v < 0 { v + size } else { v };
    let start = wrap(g.opt_int(a[2], w)?.unwrap_or(0)).clamp(0, size);
    let end = wrap(g.opt_int(a[3], w)?.unwrap_or(size)).clamp(start, size);
    let len = ((end - start) + step - 1) / step;
    let mut sizes = x.sizes.clone();
    sizes[d] = len as usize;
    let st = strides(&x.sizes);
    let (start, step) = (start as usize, step as usize);
    let data = gather(&x.data, &sizes, |idx| {
        idx.iter()
            .enumerate()
            .map(|(i, &v)| {
                if i == d {
                    (start + v * step) * st[i]
                } else {
                    v * st[i]
                }
            })
            .sum()
    });
    g.put(a[5], sizes, data, w)
}

/// `x.select(dim, index)` for `[x, dim, index, ...]`: (sizes, values).
fn select(g: &RefGraph, a: &[usize], w: &str) -> R<(Vec<usize>, Vec<f64>)> {
    let x = g.tensor(a[0], w)?;
    if x.sizes.is_empty() {
        return Err(format!("{w}: select on a rank-0 tensor"));
    }
    let d = norm_dim(g.int(a[1], w)?, x.sizes.len(), w)?;
    let size = x.sizes[d] as i64;
    let i = g.int(a[2], w)?;
    let i = if i < 0 { i + size } else { i };
    if !(0..size).contains(&i) {
        return Err(format!(
            "{w}: index {} out of range for dim {d} of {:?}",
            g.int(a[2], w)?,
            x.sizes
        ));
    }
    let mut sizes = x.sizes.clone();
    sizes.remove(d);
    let st = strides(&x.sizes);
    let data = gather(&x.data, &sizes, |idx| {
        let mut off = i as usize * st[d];
        for (k, &v) in idx.iter().enumerate() {
            off += v * st[if k < d { k } else { k + 1 }];
        }
        off
    });
    Ok((sizes, data))
}

/// Integer index `v` into a dim of `size`, negatives wrapped; PyTorch raises outside.
fn wrap_index(v: f64, size: usize, w: &str) -> R<usize> {
    let i = v as i64;
    let j = if i < 0 { i + size as i64 } else { i };
    if !(0..size as i64).contains(&j) {
        return Err(format!(
            "{w}: index {i} out of range for a dim of size {size}"
        ));
    }
    Ok(j as usize)
}

/// The table row of index `t`; embeddings do not wrap negative indices (unlike
/// index.Tensor).
fn table_row(t: f64, vocab: usize, w: &str) -> R<usize> {
    if t < 0.0 || t >= vocab as f64 {
        return Err(format!(
            "{w}: index {t} out of range for vocabulary {vocab}"
        ));
    }
    Ok(t as usize)
}

/// `[weight [V, D], indices, padding_idx, scale_grad_by_freq, sparse, out]`.
fn embedding(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let (wt, idx) = (g.tensor(a[0], w)?, g.tensor(a[1], w)?);
    if wt.sizes.len() != 2 {
        return Err(format!("{w}: weight {:?} must be [V, D]", wt.sizes));
    }
    let (vocab, d) = (wt.sizes[0], wt.sizes[1]);
    let mut data = Vec::with_capacity(idx.numel() * d);
    for &t in &idx.data {
        let r = table_row(t, vocab, w)?;
        data.extend_from_slice(&wt.data[r * d..(r + 1) * d]);
    }
    let mut sizes = idx.sizes.clone();
    sizes.push(d);
    g.put(a[5], sizes, data, w)
}

/// `[weight u8 [V, D/2], scales [V, D / group_size], group_size, indices, is_linear_weight,
/// out]`: row `idx` of the 4-bit table, `(code - 8) * scales[idx][d / group_size]`; the even
/// d of a byte in its low nibble when is_linear_weight, else in its high one (format spec
/// §4.6).
fn embedding_q4gsw(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let (wt, sc) = (g.tensor(a[0], w)?, g.tensor(a[1], w)?);
    let gs = g.int(a[2], w)?;
    let idx = g.tensor(a[3], w)?;
    let linear = g.int(a[4], w)? != 0;
    if wt.sizes.len() != 2 || sc.sizes.len() != 2 || gs <= 0 {
        return Err(format!(
            "{w}: weight {:?} / scales {:?} / group_size {gs} must be [V, D/2] / [V, G] / > 0",
            wt.sizes, sc.sizes
        ));
    }
    let (vocab, d, groups) = (wt.sizes[0], 2 * wt.sizes[1], sc.sizes[1]);
    let gs = gs as usize;
    if sc.sizes[0] != vocab || groups * gs < d {
        return Err(format!(
            "{w}: scales {:?} do not cover weight {:?} in groups of {gs}",
            sc.sizes, wt.sizes
        ));
    }
    let mut data = Vec::with_capacity(idx.numel() * d);
    for &t in &idx.data {
        let r = table_row(t, vocab, w)?;
        for c in 0..d {
            let byte = wt.data[r * (d / 2) + c / 2] as u32;
            let low = (c % 2 == 0) == linear;
            let code = if low { byte & 0xF } else { byte >> 4 };
            data.push((f64::from(code) - 8.0) * sc.data[r * groups + c / gs]);
        }
    }
    let mut sizes = idx.sizes.clone();
    sizes.push(d);
    g.put(a[5], sizes, data, w)
}

/// `[weight u8 [V, D/2], scales [V] | [V, G], zero_points?, qmin, qmax, indices, dtype, out]`:
/// high nibble = even dim, value nibble - 8, `(q - zp) * scale` in the scales' dtype.
fn embedding_4bit(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 8, w)?;
    let (wt, sc) = (g.tensor(a[0], w)?, g.tensor(a[1], w)?);
    let zp = g.opt_tensor(a[2], w)?;
    if (g.int(a[3], w)?, g.int(a[4], w)?) != (-8, 7) {
        return Err(format!("{w}: quant range must be [-8, 7]"));
    }
    let idx = g.tensor(a[5], w)?;
    if wt.sizes.len() != 2 || sc.sizes.first() != wt.sizes.first() || sc.sizes.len() > 2 {
        return Err(format!(
            "{w}: weight {:?} / scales {:?}",
            wt.sizes, sc.sizes
        ));
    }
    let (vocab, d) = (wt.sizes[0], 2 * wt.sizes[1]);
    let groups = sc.sizes.get(1).copied().unwrap_or(1);
    if groups == 0 || d % groups != 0 {
        return Err(format!("{w}: {groups} groups do not divide D = {d}"));
    }
    let gs = d / groups;
    let mut data = Vec::with_capacity(idx.numel() * d);
    for &t in &idx.data {
        let r = table_row(t, vocab, w)?;
        for c in 0..d {
            let byte = wt.data[r * (d / 2) + c / 2] as i64;
            let q = if c % 2 == 0 { byte >> 4 } else { byte & 0xF } - 8;
            let gi = r * groups + c / gs;
            let z = zp.map_or(0.0, |z| z.data[gi]);
            data.push(crate::cases::indexing::embedding_4bit_value(
                q,
                z,
                sc.data[gi],
                sc.dtype,
            ));
        }
    }
    let mut sizes = idx.sizes.clone();
    sizes.push(d);
    g.put(a[7], sizes, data, w)
}

/// `[x [N, C, H, W], grid [N, Ho, Wo, 2], mode, padding_mode, align_corners, out]`.
fn grid_sampler_2d(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 6, w)?;
    let (x, grid) = (g.tensor(a[0], w)?, g.tensor(a[1], w)?);
    if x.sizes.len() != 4
        || grid.sizes.len() != 4
        || grid.sizes[3] != 2
        || grid.sizes[0] != x.sizes[0]
    {
        return Err(format!("{w}: input {:?} / grid {:?}", x.sizes, grid.sizes));
    }
    let (mode, pad) = (g.int(a[2], w)?, g.int(a[3], w)?);
    let align = g.int(a[4], w)? != 0;
    if !(0..3).contains(&mode) || !(0..3).contains(&pad) {
        return Err(format!("{w}: mode {mode} / padding {pad}"));
    }
    let out = crate::cases::grid::grid_sample(x, grid, mode, pad, align);
    g.put(a[5], out.sizes, out.data, w)
}

/// `[x [.., H, W], stride, offset, out [H W, 2]]`.
fn grid_priors(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?;
    let r = x.sizes.len();
    if r < 2 {
        return Err(format!("{w}: input {:?} needs rank >= 2", x.sizes));
    }
    let (h, wd) = (x.sizes[r - 2], x.sizes[r - 1]);
    let (stride, offset) = (g.int(a[1], w)?, g.double(a[2], w)?);
    let data = crate::cases::grid::grid_priors(h, wd, stride, offset);
    g.put(a[3], vec![h * wd, 2], data, w)
}

/// `[x, ValueList(index tensors or Null), out]`: advanced indexing. The index tensors
/// broadcast together; their result dims replace the indexed dims in place when the
/// indexed dims are adjacent, and go first otherwise (NumPy / PyTorch rule).
fn index_tensor(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let x = g.tensor(a[0], w)?;
    let ids = g.value_list(a[1], w)?;
    if ids.len() > x.sizes.len() {
        return Err(format!(
            "{w}: {} indices for rank {}",
            ids.len(),
            x.sizes.len()
        ));
    }
    let idx: Vec<Option<&Tensor>> = ids.iter().map(|&v| g.opt_tensor(v, w)).collect::<R<_>>()?;
    let used: Vec<usize> = (0..idx.len()).filter(|&i| idx[i].is_some()).collect();
    let Some(&first) = used.first() else {
        return Err(format!("{w}: every index is None"));
    };
    let mut bshape: Vec<usize> = Vec::new();
    for t in idx.iter().flatten() {
        bshape = broadcast_shape(&bshape, &t.sizes, w)?;
    }
    let bst: Vec<Option<Vec<usize>>> = idx
        .iter()
        .map(|t| t.map(|t| broadcast_strides(&t.sizes, &bshape)))
        .collect();
    let adjacent = used.windows(2).all(|p| p[1] == p[0] + 1);
    let rest: Vec<usize> = (0..x.sizes.len()).filter(|d| !used.contains(d)).collect();
    // Output: the non-indexed dims before `first` (adjacent case only), the broadcast
    // block, then the remaining non-indexed dims.
    let mut sizes: Vec<usize> = Vec::new();
    let before = rest.iter().filter(|&&d| adjacent && d < first).count();
    sizes.extend(rest[..before].iter().map(|&d| x.sizes[d]));
    sizes.extend(&bshape);
    sizes.extend(rest[before..].iter().map(|&d| x.sizes[d]));
    let st = strides(&x.sizes);
    let nb = bshape.len();
    let mut data = Vec::with_capacity(numel(&sizes));
    for flat in 0..numel(&sizes) {
        let o = unravel(flat, &sizes);
        let bidx = &o[before..before + nb];
        let mut off = 0;
        for (k, &d) in rest.iter().enumerate() {
            let oi = if k < before { k } else { k + nb };
            off += o[oi] * st[d];
        }
        for (d, (t, s)) in idx.iter().zip(&bst).enumerate() {
            if let (Some(t), Some(s)) = (t, s) {
                off += wrap_index(t.data[dot(bidx, s)], x.sizes[d], w)? * st[d];
            }
        }
        data.push(x.data[off]);
    }
    g.put(a[2], sizes, data, w)
}

// ---------------------------------------------------------------- vision ops

/// `[x, min, max, out]`: each bound Double, Int or None (not both); NaN stays NaN.
fn clamp(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let (lo, hi) = (g.opt_double(a[1], w)?, g.opt_double(a[2], w)?);
    if lo.is_none() && hi.is_none() {
        return Err(format!("{w}: clamp needs min or max"));
    }
    clamp_to(
        g,
        a,
        w,
        lo.unwrap_or(f64::NEG_INFINITY),
        hi.unwrap_or(f64::INFINITY),
    )
}

/// `[x, min_val, max_val, out]`, the bounds defaulting to -1 / 1 (ReLU6 exports as 0 / 6).
fn hardtanh(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let lo = g.opt_double(a[1], w)?.unwrap_or(-1.0);
    let hi = g.opt_double(a[2], w)?.unwrap_or(1.0);
    clamp_to(g, a, w, lo, hi)
}

/// x clamped to [lo, hi] into `a[3]`; NaN stays NaN.
fn clamp_to(g: &mut RefGraph, a: &[usize], w: &str, lo: f64, hi: f64) -> R<()> {
    let x = g.tensor(a[0], w)?;
    let data = x
        .data
        .iter()
        .map(|&v| if v.is_nan() { v } else { v.max(lo).min(hi) })
        .collect();
    let sizes = x.sizes.clone();
    g.put(a[3], sizes, data, w)
}

/// `[x, dims IntList|None, keepdim, dtype, out]`: the mean over `dims` (None or `[]`: all
/// dims; negative ones from the end), kept as size-1 dims with keepdim.
fn mean_dim(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 5, w)?;
    let x = g.tensor(a[0], w)?.clone();
    let rank = x.sizes.len();
    let mut dims = match g.value(a[1]) {
        Value::Null => Vec::new(),
        _ => dim_list(g, a[1], rank, w)?,
    };
    if dims.is_empty() {
        dims = (0..rank).collect();
    }
    let keepdim = g.int(a[2], w)? != 0;
    let reduced = |d: usize| dims.contains(&d);
    let kept: Vec<usize> = x
        .sizes
        .iter()
        .enumerate()
        .map(|(d, &n)| if reduced(d) { 1 } else { n })
        .collect();
    let count: usize = (0..rank)
        .filter(|&d| reduced(d))
        .map(|d| x.sizes[d])
        .product();
    let ks = strides(&kept);
    let mut sums = vec![0.0; numel(&kept)];
    for (i, &v) in x.data.iter().enumerate() {
        let idx = unravel(i, &x.sizes);
        let at: usize = idx
            .iter()
            .enumerate()
            .map(|(d, &j)| if reduced(d) { 0 } else { j * ks[d] })
            .sum();
        sums[at] += v;
    }
    // An empty reduction is 0 / 0 = NaN, as PyTorch's mean.
    let data = sums.into_iter().map(|s| s / count as f64).collect();
    let sizes = if keepdim {
        kept
    } else {
        (0..rank)
            .filter(|&d| !reduced(d))
            .map(|d| x.sizes[d])
            .collect()
    };
    g.put(a[4], sizes, data, w)
}

/// `[self, dtype, layout, device, pin_memory, non_blocking, dim_order, out]` (executorch
/// 1.5.1) or `[self, dtype, non_blocking, dim_order, out]`: a copy converted to the out
/// tensor's dtype (the dtype arg serializes as None). dim_order must be None or the
/// contiguous `0..rank` (`[]` for a 0-dim tensor).
fn to_dim_order_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    let (order, out) = match a.len() {
        8 => (a[6], a[7]),
        5 => (a[3], a[4]),
        n => return Err(format!("{w}: {n} args, expected 8 (or 5)")),
    };
    let x = g.tensor(a[0], w)?.clone();
    if !matches!(g.value(order), Value::Null) {
        let o = g.int_list(order, w)?;
        if o.len() != x.sizes.len() || o.iter().enumerate().any(|(i, &d)| d != i as i64) {
            return Err(format!(
                "{w}: dim_order {o:?} is not the contiguous order of a rank-{} tensor",
                x.sizes.len()
            ));
        }
    }
    g.put(out, x.sizes, x.data, w)
}

/// `[x, split_sizes, dim, out ValueList]`: consecutive runs of `dim` of the given sizes,
/// which must sum to its size.
fn split_with_sizes_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?.clone();
    let sizes = g
        .int_list(a[1], w)?
        .into_iter()
        .map(|n| usize::try_from(n).map_err(|_| format!("{w}: split size {n}")))
        .collect::<R<Vec<usize>>>()?;
    let d = norm_dim(g.int(a[2], w)?, x.sizes.len(), w)?;
    let outs = g.value_list(a[3], w)?;
    if x.sizes.is_empty() || outs.len() != sizes.len() || sizes.iter().sum::<usize>() != x.sizes[d]
    {
        return Err(format!(
            "{w}: split sizes {sizes:?} of dim {d} of {:?} into {} outputs",
            x.sizes,
            outs.len()
        ));
    }
    for (t, &v) in crate::cases::shape::split_ref(&x, &sizes, d)
        .into_iter()
        .zip(&outs)
    {
        g.put(v, t.sizes, t.data, w)?;
    }
    Ok(())
}

/// kernel_size / stride / padding (/ dilation) args `a[1..]` as a `Pool`.
fn pool_params(
    g: &RefGraph,
    a: &[usize],
    dilation: Option<usize>,
    w: &str,
) -> R<crate::cases::pool::Pool> {
    use crate::cases::pool::pool_pair;
    let list = |i: usize, empty, role: &str| -> R<[usize; 2]> {
        let l = g.int_list(a[i], w)?;
        pool_pair(&l, empty).ok_or_else(|| format!("{w}: {role} {l:?}"))
    };
    let kernel = list(1, None, "kernel_size")?;
    Ok(crate::cases::pool::Pool {
        kernel,
        stride: list(2, Some(kernel), "stride")?,
        pad: list(3, None, "padding")?,
        dilation: match dilation {
            Some(i) => list(i, None, "dilation")?,
            None => [1, 1],
        },
        ceil_mode: false,
        count_include_pad: true,
        divisor: None,
    })
}

/// `[x, kernel_size, stride, padding, dilation, ceil_mode, out ValueList(values, indices)]`.
fn max_pool2d_with_indices(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 7, w)?;
    let mut p = pool_params(g, a, Some(4), w)?;
    p.ceil_mode = g.int(a[5], w)? != 0;
    let outs = g.value_list(a[6], w)?;
    if outs.len() != 2 {
        return Err(format!(
            "{w}: {} outputs, expected (values, indices)",
            outs.len()
        ));
    }
    let x = g.tensor(a[0], w)?;
    let (vals, idx) = crate::cases::pool::max_pool2d(x, &p).map_err(|e| format!("{w}: {e}"))?;
    g.put(outs[0], vals.sizes, vals.data, w)?;
    g.put(outs[1], idx.sizes, idx.data, w)
}

/// `[x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, out]`.
fn avg_pool2d(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 8, w)?;
    let mut p = pool_params(g, a, None, w)?;
    p.ceil_mode = g.int(a[4], w)? != 0;
    p.count_include_pad = g.int(a[5], w)? != 0;
    p.divisor = g.opt_int(a[6], w)?;
    let x = g.tensor(a[0], w)?;
    let out = crate::cases::pool::avg_pool2d(x, &p).map_err(|e| format!("{w}: {e}"))?;
    g.put(a[7], out.sizes, out.data, w)
}

/// `upsample_nearest2d.vec` `[x, output_size, scale_factors, out]` or
/// `upsample_bilinear2d.vec` `[x, output_size, align_corners, scale_factors, out]`.
fn upsample(g: &mut RefGraph, a: &[usize], w: &str, bilinear: bool) -> R<()> {
    use crate::cases::resize::{upsample_bilinear2d, upsample_nearest2d, Resample};
    nargs(a, if bilinear { 5 } else { 4 }, w)?;
    let (size_v, scales_v, out_v) = if bilinear {
        (a[1], a[3], a[4])
    } else {
        (a[1], a[2], a[3])
    };
    let scales = match g.value(scales_v) {
        Value::Null => None,
        Value::DoubleList(l) => Some(l.clone()),
        other => {
            return Err(format!(
                "{w}: scale_factors is a {}, expected a DoubleList or None",
                other.kind_name()
            ))
        }
    };
    let r = match (g.value(size_v), scales) {
        (Value::Null, Some(s)) => Resample::Scales(s),
        (Value::Null, None) => return Err(format!("{w}: neither output_size nor scale_factors")),
        (_, None) => Resample::Size(g.int_list(size_v, w)?),
        (_, Some(_)) => return Err(format!("{w}: both output_size and scale_factors")),
    };
    let x = g.tensor(a[0], w)?;
    let out = if bilinear {
        upsample_bilinear2d(x, &r, g.int(a[2], w)? != 0)
    } else {
        upsample_nearest2d(x, &r)
    }
    .map_err(|e| format!("{w}: {e}"))?;
    g.put(out_v, out.sizes, out.data, w)
}

/// `[x, pad, value, out]`.
fn constant_pad_nd(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let pad = g.int_list(a[1], w)?;
    let value = g.double(a[2], w)?;
    let x = g.tensor(a[0], w)?;
    let out =
        crate::cases::resize::constant_pad(x, &pad, value).map_err(|e| format!("{w}: {e}"))?;
    g.put(a[3], out.sizes, out.data, w)
}

// ---------------------------------------------------------------- the Vulkan partitioner's
// data-movement, creation and assertion ops (executorch 1.5.1); the element functions are
// the op cases' references, and out-of-range indices raise here, as in PyTorch.

/// `[x, out]`: PyTorch's `t` (rank <= 2).
fn t_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 2, w)?;
    let x = g.tensor(a[0], w)?;
    if x.sizes.len() > 2 {
        return Err(format!("{w}: t() expects <= 2 dims, got {:?}", x.sizes));
    }
    let t = crate::cases::shape::t_ref(x);
    g.put(a[1], t.sizes, t.data, w)
}

/// `[x, non_blocking, dim_order, out]`: a copy; only the contiguous dim order.
fn clone_dim_order(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?.clone();
    if !matches!(g.value(a[2]), Value::Null) {
        let order = g.int_list(a[2], w)?;
        if order != (0..x.sizes.len() as i64).collect::<Vec<_>>() {
            return Err(format!("{w}: dim_order {order:?} is not contiguous"));
        }
    }
    g.put(a[3], x.sizes, x.data, w)
}

/// `[self, src, non_blocking, out]`: src broadcast to self's sizes.
fn copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let sizes = g.tensor(a[0], w)?.sizes.clone();
    let src = g.tensor(a[1], w)?;
    if broadcast_shape(&sizes, &src.sizes, w)? != sizes {
        return Err(format!(
            "{w}: src {:?} does not broadcast to self {sizes:?}",
            src.sizes
        ));
    }
    let t = crate::cases::shape::copy_ref(&sizes, src);
    g.put(a[3], t.sizes, t.data, w)
}

/// `[x, dims, out]`.
fn flip(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let x = g.tensor(a[0], w)?;
    let r = x.sizes.len();
    let dims = dim_list(g, a[1], r, w)?;
    if (1..dims.len()).any(|i| dims[..i].contains(&dims[i])) {
        return Err(format!("{w}: dims {dims:?} repeat a dim"));
    }
    let dims = if r == 0 { Vec::new() } else { dims };
    let t = crate::cases::shape::flip_ref(x, &dims);
    g.put(a[2], t.sizes, t.data, w)
}

/// `[x, repeats, out]`.
fn repeat(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let x = g.tensor(a[0], w)?;
    let reps = g.int_list(a[1], w)?;
    if reps.len() < x.sizes.len() || reps.iter().any(|&r| r < 0) {
        return Err(format!("{w}: repeats {reps:?} for sizes {:?}", x.sizes));
    }
    let reps: Vec<usize> = reps.iter().map(|&r| r as usize).collect();
    let t = crate::cases::shape::repeat_ref(x, &reps);
    g.put(a[2], t.sizes, t.data, w)
}

/// `[x, dimension, size, step, out]`.
fn unfold_copy(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 5, w)?;
    let x = g.tensor(a[0], w)?;
    let d = norm_dim(g.int(a[1], w)?, x.sizes.len(), w)?;
    let (size, step) = (g.int(a[2], w)?, g.int(a[3], w)?);
    if size < 0 || step < 1 {
        return Err(format!("{w}: size {size} / step {step}"));
    }
    let t = crate::cases::shape::unfold_ref(x, d, size as usize, step as usize)
        .ok_or_else(|| format!("{w}: size {size} exceeds dim {d} of {:?}", x.sizes))?;
    g.put(a[4], t.sizes, t.data, w)
}

/// `[x, dim, index (1-D or 0-d), out]`.
fn index_select(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let x = g.tensor(a[0], w)?;
    let d = norm_dim(g.int(a[1], w)?, x.sizes.len(), w)?;
    let idx = g.tensor(a[2], w)?;
    let n = x.sizes.get(d).copied().unwrap_or(1);
    if idx.sizes.len() > 1 || (x.sizes.is_empty() && idx.numel() != 1) {
        return Err(format!("{w}: index sizes {:?}", idx.sizes));
    }
    for &r in &idx.data {
        table_row(r, n, w)?;
    }
    let t = crate::cases::indexing::index_select_ref(x, d, &idx.data);
    g.put(a[3], t.sizes, t.data, w)
}

/// `[x, dim, index, sparse_grad, out]`.
fn gather_dim(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 5, w)?;
    let x = g.tensor(a[0], w)?;
    let d = norm_dim(g.int(a[1], w)?, x.sizes.len(), w)?;
    let idx = g.tensor(a[2], w)?;
    let n = x.sizes.get(d).copied().unwrap_or(1);
    for &r in &idx.data {
        table_row(r, n, w)?;
    }
    let t = crate::cases::indexing::gather_dim_ref(x, d, idx).ok_or_else(|| {
        format!(
            "{w}: index sizes {:?} do not fit x {:?} apart from dim {d}",
            idx.sizes, x.sizes
        )
    })?;
    g.put(a[4], t.sizes, t.data, w)
}

/// `[size, dtype, layout, device, pin_memory, out]` filled with `v`.
fn fill_sized(g: &mut RefGraph, a: &[usize], w: &str, v: f64) -> R<()> {
    nargs(a, 6, w)?;
    let sizes = g.int_list(a[0], w)?;
    if sizes.iter().any(|&n| n < 0) {
        return Err(format!("{w}: negative size in {sizes:?}"));
    }
    let sizes: Vec<usize> = sizes.iter().map(|&n| n as usize).collect();
    let n = numel(&sizes);
    g.put(a[5], sizes, vec![v; n], w)
}

/// `[self, dtype, layout, device, pin_memory, memory_format, out]` filled with `v`.
fn fill_like(g: &mut RefGraph, a: &[usize], w: &str, v: f64) -> R<()> {
    nargs(a, 7, w)?;
    let sizes = g.tensor(a[0], w)?.sizes.clone();
    let n = numel(&sizes);
    g.put(a[6], sizes, vec![v; n], w)
}

/// `[x, kernel_size, stride, padding, dilation, ceil_mode, out]`: the values alone.
fn max_pool2d(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 7, w)?;
    let mut p = pool_params(g, a, Some(4), w)?;
    p.ceil_mode = g.int(a[5], w)? != 0;
    let x = g.tensor(a[0], w)?;
    let (vals, _) = crate::cases::pool::max_pool2d(x, &p).map_err(|e| format!("{w}: {e}"))?;
    g.put(a[6], vals.sizes, vals.data, w)
}

/// `[cond, assert_msg]` (an output value, if any, ignored): raise when cond is zero.
fn assert_scalar(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    if a.len() != 2 {
        nargs(a, 3, w)?;
    }
    if g.double(a[0], w)? == 0.0 {
        let msg = match g.value(a[1]) {
            Value::String(m) => m.clone(),
            _ => String::new(),
        };
        return Err(format!("{w}: assertion failed: {msg}"));
    }
    Ok(())
}

/// `[size, min, max]` (an output value, if any, ignored): PyTorch's
/// `sym_constrain_range_for_size` (min defaults to 0; max must exceed 2).
fn sym_constrain_range_for_size(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    if a.len() != 3 {
        nargs(a, 4, w)?;
    }
    let v = g.int(a[0], w)?;
    let lo = g.opt_int(a[1], w)?.unwrap_or(0);
    let hi = g.opt_int(a[2], w)?;
    if hi.is_some_and(|h| h <= 2) {
        return Err(format!("{w}: max {hi:?} must be greater than 2"));
    }
    let hi = hi.unwrap_or(i64::MAX);
    if v < lo || v > hi {
        return Err(format!(
            "{w}: invalid value range for {v} between [{lo}, {hi}]"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- log10 .. group norm

/// `[x, lambd, out]`: `-lambd <= x <= lambd ? 0 : x` (lambd None reads as 0.5).
fn hardshrink(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 3, w)?;
    let lambd = g.opt_double(a[1], w)?.unwrap_or(0.5);
    let x = g.tensor(a[0], w)?;
    let data = x
        .data
        .iter()
        .map(|&v| crate::cases::unary::hardshrink_ref(v, lambd))
        .collect();
    let sizes = x.sizes.clone();
    g.put(a[2], sizes, data, w)
}

/// `[x, out]`: int complement, or logical not of a bool tensor.
fn bitwise_not(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 2, w)?;
    let x = g.tensor(a[0], w)?;
    let dt = x.dtype;
    let data = x
        .data
        .iter()
        .map(|&v| crate::cases::binary::bitwise_not_ref(dt, v))
        .collect();
    let sizes = x.sizes.clone();
    g.put(a[1], sizes, data, w)
}

/// `[a, b, rounding_mode String|Null, out]`, broadcasting, in the out tensor's dtype's
/// PyTorch semantics (float opmath for floats, exact int32 with x / 0 = 0).
fn div_mode(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 4, w)?;
    let mode = match g.value(a[2]) {
        Value::Null => None,
        Value::String(m) if m == "trunc" || m == "floor" => Some(m.clone()),
        other => {
            return Err(format!(
                "{w}: rounding_mode must be \"trunc\", \"floor\" or None, got {}",
                other.kind_name()
            ))
        }
    };
    let (x, y) = (operand(g, a[0], w)?, operand(g, a[1], w)?);
    let (dt, _) = g.tensor_info(a[3], w)?;
    let t = broadcast_apply(&x, &y, w, |p, q| {
        crate::cases::binary::div_mode_ref(dt, mode.as_deref(), p, q)
    })?;
    g.put(a[3], t.sizes, t.data, w)
}

/// `[x, dim Int|None, keepdim, out]`: argmin (NaN counting as the min), or argmax (`max`) as
/// the argmin of -x; the first index of the extreme value either way.
fn argmin(g: &mut RefGraph, a: &[usize], w: &str, max: bool) -> R<()> {
    nargs(a, 4, w)?;
    let mut x = g.tensor(a[0], w)?.clone();
    if max {
        x.data.iter_mut().for_each(|v| *v = -*v);
    }
    let dim = g.opt_int(a[1], w)?;
    let keepdim = g.int(a[2], w)? != 0;
    let n = match dim {
        Some(d) => {
            let d = norm_dim(d, x.sizes.len(), w)?;
            x.sizes.get(d).copied().unwrap_or(1)
        }
        None => x.data.len(),
    };
    if n == 0 && !x.data.is_empty() {
        return Err(format!(
            "{w}: arg-reduction over an empty dim of {:?}",
            x.sizes
        ));
    }
    let t = crate::cases::reduce::argmin_ref(&x, dim, keepdim);
    g.put(a[3], t.sizes, t.data, w)
}

/// `[x, weight?, bias?, N, C, HxW, group, eps, (out, mean [N, group], rstd [N, group])]`.
fn group_norm(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 9, w)?;
    let x = g.tensor(a[0], w)?.clone();
    let (wt, b) = (
        g.opt_tensor(a[1], w)?.cloned(),
        g.opt_tensor(a[2], w)?.cloned(),
    );
    let ints: Vec<i64> = a[3..7].iter().map(|&v| g.int(v, w)).collect::<R<_>>()?;
    let eps = g.double(a[7], w)?;
    let outs = g.value_list(a[8], w)?;
    let (n, c, hxw, group) = (ints[0], ints[1], ints[2], ints[3]);
    if outs.len() != 3
        || n < 0
        || hxw < 0
        || c < 1
        || group < 1
        || c % group != 0
        || (n * c * hxw) as usize != x.data.len()
        || x.sizes.get(1) != Some(&(c as usize))
    {
        return Err(format!(
            "{w}: N {n}, C {c}, HxW {hxw}, group {group} do not fit input {:?}",
            x.sizes
        ));
    }
    let (n, c, hxw, group) = (n as usize, c as usize, hxw as usize, group as usize);
    for t in wt.iter().chain(b.iter()) {
        if t.data.len() != c {
            return Err(format!("{w}: weight / bias {:?} for {c} channels", t.sizes));
        }
    }
    let (out, means, rstds) = crate::cases::norm::group_norm_ref(
        &x.data,
        n,
        c,
        hxw,
        group,
        wt.as_ref().map(|t| t.data.as_slice()),
        b.as_ref().map(|t| t.data.as_slice()),
        eps,
    );
    g.put(outs[0], x.sizes.clone(), out, w)?;
    g.put(outs[1], vec![n, group], means, w)?;
    g.put(outs[2], vec![n, group], rstds, w)
}

// ---------------------------------------------------------------- static int8 (q8ta)

/// A per-tensor (scale, zero point): Double / Int args, or one-element tensors (the
/// `.tensor` overloads, an fp32 scale).
fn q8_pair(g: &RefGraph, s: usize, z: usize, w: &str) -> R<crate::cases::q8ta::Qp> {
    let one = |v: usize| -> R<Option<f64>> {
        if !matches!(g.value(v), Value::Tensor(_)) {
            return Ok(None);
        }
        let t = g.tensor(v, w)?;
        if t.numel() != 1 {
            return Err(format!(
                "{w}: value {v} has sizes {:?}, one element expected",
                t.sizes
            ));
        }
        Ok(Some(t.data[0]))
    };
    let scale = match one(s)? {
        Some(x) => f64::from(x as f32),
        None => g.double(s, w)?,
    };
    let zp = match one(z)? {
        Some(x) => x as i64,
        None => g.int(z, w)?,
    };
    if !(scale > 0.0 && scale.is_finite()) {
        return Err(format!("{w}: scale {scale} must be positive"));
    }
    Ok(crate::cases::q8ta::Qp::new(scale, zp))
}

/// The channel of element `i` of a tensor of `sizes` along `axis`, checked against the
/// parameter tensors' lengths.
fn q8_channels(sizes: &[usize], axis: i64, lens: &[usize], w: &str) -> R<(usize, usize)> {
    let ax = norm_dim(axis, sizes.len(), w)?;
    let c = sizes.get(ax).copied().unwrap_or(1);
    if lens.iter().any(|&l| l < c) {
        return Err(format!("{w}: parameters {lens:?} for {c} channels"));
    }
    Ok((sizes[ax + 1..].iter().product(), c.max(1)))
}

/// quantize_per_tensor `[x, scale, zp, qmin, qmax, dtype, out]` (.default / .tensor) and
/// quantize_per_channel `[x, scales, zps, axis, qmin, qmax, dtype, out]`.
fn q8_quantize(g: &mut RefGraph, a: &[usize], w: &str, per_channel: bool) -> R<()> {
    use crate::cases::q8ta::{inv_scale, quantize};
    nargs(a, if per_channel { 8 } else { 7 }, w)?;
    let x = g.tensor(a[0], w)?.clone();
    let off = usize::from(per_channel);
    let range = (g.int(a[3 + off], w)?, g.int(a[4 + off], w)?);
    let data = if per_channel {
        let (sc, zp) = (g.tensor(a[1], w)?, g.tensor(a[2], w)?);
        let (inner, c) = q8_channels(&x.sizes, g.int(a[3], w)?, &[sc.numel(), zp.numel()], w)?;
        (0..x.numel())
            .map(|i| {
                let ch = (i / inner.max(1)) % c;
                let inv = 1.0f32 / sc.data[ch] as f32;
                quantize(x.data[i], inv, zp.data[ch] as i64, range)
            })
            .collect()
    } else {
        let q = q8_pair(g, a[1], a[2], w)?;
        let inv = inv_scale(q.scale);
        x.data
            .iter()
            .map(|&v| quantize(v, inv, q.zp, range))
            .collect()
    };
    g.put(a[a.len() - 1], x.sizes, data, w)
}

/// dequantize_per_tensor `[q, scale, zp, qmin, qmax, dtype, (out_dtype,) out]` and
/// dequantize_per_channel `[q, scales, zps | None, axis, qmin, qmax, dtype, (out_dtype,)
/// out]`: `float(q - zp) * float(scale)`.
fn q8_dequantize(g: &mut RefGraph, a: &[usize], w: &str, per_channel: bool) -> R<()> {
    use crate::cases::q8ta::dequantize;
    let base = if per_channel { 8 } else { 7 };
    if a.len() != base + 1 {
        nargs(a, base, w)?;
    }
    let q = g.tensor(a[0], w)?.clone();
    let data = if per_channel {
        let sc = g.tensor(a[1], w)?;
        let zp = g.opt_tensor(a[2], w)?;
        let lens = [sc.numel(), zp.map_or(usize::MAX, |z| z.numel())];
        let (inner, c) = q8_channels(&q.sizes, g.int(a[3], w)?, &lens, w)?;
        (0..q.numel())
            .map(|i| {
                let ch = (i / inner.max(1)) % c;
                let z = zp.map_or(0, |z| z.data[ch] as i64);
                dequantize(q.data[i], z, sc.data[ch] as f32)
            })
            .collect()
    } else {
        let p = q8_pair(g, a[1], a[2], w)?;
        q.data
            .iter()
            .map(|&v| dequantize(v, p.zp, p.scale as f32))
            .collect()
    };
    g.put(a[a.len() - 1], q.sizes, data, w)
}

/// Whether string arg `v` asks for relu.
fn q8_relu(g: &RefGraph, v: usize) -> bool {
    matches!(g.value(v), Value::String(s) if s == "relu")
}

/// q8ta_linear / q8ta_linear_gemv `[x, in_scale, in_zp, weight [N, K], sums, scales, out_scale,
/// out_zp, bias?, activation, out]` and linear_q8ta_q8csw `[x, in_scale, in_zp, weight, sums,
/// scales, bias?, out]`.
fn q8ta_linear(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    use crate::cases::q8ta::{linear_sums, requantize};
    let q8 = a.len() == 11;
    if !q8 {
        nargs(a, 8, w)?;
    }
    let x = g.tensor(a[0], w)?.clone();
    let xq = q8_pair(g, a[1], a[2], w)?;
    let wt = g.tensor(a[3], w)?.clone();
    let ws = g.tensor(a[5], w)?.data.clone();
    let bias = g
        .opt_tensor(a[if q8 { 8 } else { 6 }], w)?
        .map(|b| b.data.clone());
    let n = wt.sizes.first().copied().unwrap_or(0);
    if wt.sizes.len() != 2
        || x.sizes.last() != wt.sizes.get(1)
        || ws.len() < n
        || bias.as_ref().is_some_and(|b| b.len() < n)
    {
        return Err(format!(
            "{w}: x {:?}, weight {:?}, {} scales, bias {:?} do not fit",
            x.sizes,
            wt.sizes,
            ws.len(),
            bias.as_ref().map(Vec::len)
        ));
    }
    let y = linear_sums(&x, xq, &wt, &ws, bias.as_deref());
    let data = if q8 {
        let (oq, relu) = (q8_pair(g, a[6], a[7], w)?, q8_relu(g, a[9]));
        y.data.iter().map(|&v| requantize(v, relu, oq)).collect()
    } else {
        y.data
    };
    g.put(a[a.len() - 1], y.sizes, data, w)
}

/// q8ta_conv2d{,_dw,_pw} `[x, in_scale, in_zp, weight, sums, scales, out_scale, out_zp, bias?,
/// kernel_size, stride, padding, dilation, groups, activation, out]`; the transposed one has
/// output_padding after padding. The weight is unpacked to PyTorch's layout.
fn q8ta_conv2d(g: &mut RefGraph, a: &[usize], w: &str, name: &str) -> R<()> {
    use crate::cases::q8ta::{conv_sums, requantize, unpack_conv_weight};
    let transposed = name.contains("transposed");
    let dw = name.contains("_dw");
    nargs(a, if transposed { 17 } else { 16 }, w)?;
    let t = usize::from(transposed);
    let pair = |i: usize, min: i64| -> R<[usize; 2]> {
        let l = g.int_list(a[i], w)?;
        let l = match l.len() {
            1 => vec![l[0]; 2],
            2 => l,
            _ => return Err(format!("{w}: arg {i} {l:?} for a 2-D convolution")),
        };
        if l.iter().any(|&v| v < min || v > 1 << 16) {
            return Err(format!("{w}: arg {i} {l:?} out of range"));
        }
        Ok([l[0] as usize, l[1] as usize])
    };
    let (kernel, stride, padding) = (pair(9, 1)?, pair(10, 1)?, pair(11, 0)?);
    let output_padding = if transposed { pair(12, 0)? } else { [0, 0] };
    let dilation = pair(12 + t, 1)?;
    let groups = g.int(a[13 + t], w)?;
    let relu = q8_relu(g, a[14 + t]);
    let out = a[15 + t];
    let x = g.tensor(a[0], w)?.clone();
    let xq = q8_pair(g, a[1], a[2], w)?;
    let oq = q8_pair(g, a[6], a[7], w)?;
    let wt = g.tensor(a[3], w)?.clone();
    let ws = g.tensor(a[5], w)?.data.clone();
    let bias = g.opt_tensor(a[8], w)?.map(|b| b.data.clone());
    let (_, out_max) = g.tensor_info(out, w)?;
    let c_out = out_max.get(1).copied().unwrap_or(0);
    let c_in = x.sizes.get(1).copied().unwrap_or(0);
    let gr = groups.max(1) as usize;
    let taps = kernel[0] * kernel[1] * (c_in / gr);
    let layout_ok = if dw {
        wt.sizes.len() == 3 && wt.sizes[..2] == kernel && wt.sizes[2] >= c_out && gr == c_in
    } else {
        wt.sizes.len() == 2 && wt.sizes[0] == c_out && wt.sizes[1] >= taps
    };
    let n_scales = if transposed { c_out / gr } else { c_out };
    if x.sizes.len() != 4
        || groups < 1
        || c_in % gr != 0
        || c_out % gr != 0
        || c_out == 0
        || !layout_ok
        || ws.len() < n_scales
        || bias.as_ref().is_some_and(|b| b.len() < c_out)
    {
        return Err(format!(
            "{w}: x {:?}, weight {:?}, groups {groups}, {c_out} output channels do not fit",
            x.sizes, wt.sizes
        ));
    }
    for d in 0..2 {
        let (n, span) = (x.sizes[2 + d], dilation[d] * (kernel[d] - 1) + 1);
        let fits = if transposed {
            n >= 1 && (n - 1) * stride[d] + span + output_padding[d] > 2 * padding[d]
        } else {
            n + 2 * padding[d] >= span
        };
        if !fits {
            return Err(format!(
                "{w}: input {:?} too small for kernel {kernel:?}",
                x.sizes
            ));
        }
    }
    let wt = unpack_conv_weight(&wt, (c_in, c_out, gr), kernel, transposed, dw);
    let p = crate::reference::ConvParams {
        stride: stride.to_vec(),
        padding: padding.to_vec(),
        dilation: dilation.to_vec(),
        transposed,
        output_padding: output_padding.to_vec(),
        groups: gr,
    };
    let y = conv_sums(&x, xq, &wt, &ws, bias.as_deref(), &p);
    let data = y.data.iter().map(|&v| requantize(v, relu, oq)).collect();
    g.put(out, y.sizes, data, w)
}

/// q8ta_add `[a, b, a_scale, a_zp, b_scale, b_zp, out_scale, out_zp, alpha, out]`.
fn q8ta_add(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    nargs(a, 10, w)?;
    let (x, y) = (g.tensor(a[0], w)?, g.tensor(a[1], w)?);
    let qs = (
        q8_pair(g, a[2], a[3], w)?,
        q8_pair(g, a[4], a[5], w)?,
        q8_pair(g, a[6], a[7], w)?,
    );
    let alpha = g.opt_double(a[8], w)?.unwrap_or(1.0);
    let out = crate::cases::q8ta::add(x, y, qs, alpha).map_err(|e| format!("{w}: {e}"))?;
    g.put(a[9], out.sizes, out.data, w)
}

/// q8ta_relu `[x, in_scale, in_zp, out_scale, out_zp, out]` and q8ta_pixel_shuffle `[x,
/// in_scale, in_zp, 1 / out_scale, out_zp, upscale_factor, out]`.
fn q8ta_requant(g: &mut RefGraph, a: &[usize], w: &str) -> R<()> {
    let shuffle = a.len() == 7;
    if !shuffle {
        nargs(a, 6, w)?;
    }
    let qi = q8_pair(g, a[1], a[2], w)?;
    let (inv, r) = if shuffle {
        let r = g.int(a[5], w)?;
        if !(1..=64).contains(&r) {
            return Err(format!("{w}: upscale_factor {r}"));
        }
        (g.double(a[3], w)? as f32, r as usize)
    } else {
        (crate::cases::q8ta::inv_scale(g.double(a[3], w)?), 0)
    };
    let zo = g.int(a[4], w)?;
    let x = g.tensor(a[0], w)?;
    let out = crate::cases::q8ta::requant(x, qi, inv, zo, r).map_err(|e| format!("{w}: {e}"))?;
    g.put(a[a.len() - 1], out.sizes, out.data, w)
}
