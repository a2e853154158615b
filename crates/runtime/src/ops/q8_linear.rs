//! Linears on int8 weights with a scale and zero point per output row, read as int8 by the
//! kernels (`linear_q8_gemv_m{1,2,4,8}` up to M = 8, `linear_q8_tiled` above; the shaders'
//! `WQ8` forms, `shaders/linear_q8.glsl`):
//! - `aten._weight_int8pack_mm.default` `[x [.., K], weight int8 [N, K], scales [N], out]`
//!   (PT2E 8-bit weight-only linears), zero points 0;
//! - `torchao.dequantize_affine` of an int8 weight with per-row blocks `[1, K]` whose only
//!   readers are `aten.linear` ops (torchao's int8 weight-only linears): the dequantize node is
//!   left out and the linears read the int8 weight (`plan_dequant_linear`).
//!
//! A float weight of the same values would be 4x the bytes, rewritten every execute in the
//! second case.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{ConstantInfo, Dispatch, GValue, GraphBuilder, Layout, OpCall, Packed};
use crate::error::invalid_program;
use crate::graph::TensorId;
use crate::ops::matmul::{linear_variants, LinearKernel};
use crate::ops::{constant_arg, float_shader};

/// An int8 weight on the GPU as the WQ8 kernels read it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Q8Weight {
    /// Rows of ceil(K / 4) words (int8 codes, zero padding).
    w: TensorId,
    /// fp32 scale per row.
    s: TensorId,
    /// fp32 zero point per row.
    z: TensorId,
    n: usize,
    k: usize,
}

/// A constant's values as fp32 (f32, f16, int8 or int32 bytes), None for other dtypes.
pub(crate) fn constant_f32s(dtype: DataType, bytes: &[u8]) -> Option<Vec<f32>> {
    Some(match dtype {
        DataType::Float32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        DataType::Float16 => bytes
            .chunks_exact(2)
            .map(|b| crate::dtype::f16_to_f32(u16::from_le_bytes([b[0], b[1]])))
            .collect(),
        DataType::Int8 => bytes.iter().map(|&b| f32::from(b as i8)).collect(),
        DataType::Int32 => bytes
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32)
            .collect(),
        _ => return None,
    })
}

/// Row-wise fp32 values of a constant of `n` elements (f32, f16, int8 or int32).
fn row_values(c: &ConstantInfo, bytes: &[u8], n: usize, what: &str) -> Result<Vec<f32>> {
    let v = constant_f32s(c.dtype, bytes).ok_or_else(|| {
        invalid_program(format!(
            "{what}: dtype {} is not supported (float32, float16, int8, int32 are)",
            c.dtype.name()
        ))
    })?;
    if v.len() < n || crate::graph::checked_numel(&c.dims) != Some(n) {
        return Err(invalid_program(format!(
            "{what}: sizes {:?} must hold one value per output row (N = {n})",
            c.dims
        )));
    }
    Ok(v[..n].to_vec())
}

/// Packs int8 weight `wc` [N, K] with per-row scales `sc` and zero points `zc` (None: 0).
pub(crate) fn pack_q8(
    g: &mut GraphBuilder<'_>,
    wc: &ConstantInfo,
    sc: &ConstantInfo,
    zc: Option<&ConstantInfo>,
    what: &str,
) -> Result<Q8Weight> {
    let (n, k) = match (wc.dtype, wc.dims.as_slice()) {
        (DataType::Int8, &[n, k]) if n > 0 && k > 0 => (n, k),
        _ => {
            return Err(invalid_program(format!(
                "{what}: weight must be int8 [N, K], got {} {:?}",
                wc.dtype.name(),
                wc.dims
            )))
        }
    };
    let kw = k.div_ceil(4);
    // Rows of whole words are the constant's own bytes (shared with an et_vk.prepack copy).
    let words = if k % 4 == 0 {
        Layout::contiguous()
    } else {
        Layout {
            name: "q8_rows_in_words".to_string(),
            pack: Box::new(move |_, bytes| {
                let mut out = vec![0u8; n * kw * 4];
                for (row, src) in bytes.chunks(k).take(n).enumerate() {
                    out[row * kw * 4..row * kw * 4 + src.len()].copy_from_slice(src);
                }
                Ok(Packed {
                    dtype: DataType::Int32,
                    dims: vec![n, kw],
                    bytes: out,
                })
            }),
        }
    };
    let w = g.prepack(wc.value, &words)?;
    let floats = |name: &str, values: Vec<f32>| Layout {
        name: name.to_string(),
        pack: Box::new(move |_, _| {
            Ok(Packed {
                dtype: DataType::Float32,
                dims: vec![values.len()],
                bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            })
        }),
    };
    let scales = row_values(
        sc,
        g.constant_bytes(sc.constant_id)?,
        n,
        &format!("{what}: scales"),
    )?;
    let s = g.prepack(sc.value, &floats("q8_row_scales", scales))?;
    let z = match zc {
        Some(zc) => {
            let zps = row_values(
                zc,
                g.constant_bytes(zc.constant_id)?,
                n,
                &format!("{what}: zero points"),
            )?;
            g.prepack(zc.value, &floats("q8_row_zero_points", zps))?
        }
        // Zeros, keyed on the scales constant (one upload per weight).
        None => g.prepack(sc.value, &floats("q8_row_zero_points_none", vec![0.0; n]))?,
    };
    Ok(Q8Weight { w, s, z, n, k })
}

/// `out = x @ ((q - zp) * s)^T (+ bias)` for x [.., K] (fp32 or fp16, as out and bias).
pub(crate) fn q8_linear_node(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    q8: Q8Weight,
    bias: Option<TensorId>,
    out: TensorId,
) -> Result<()> {
    let Q8Weight { n, k, .. } = q8;
    linear_variants(g, call, (x, out, bias), (n, k, None), |kn, dt, bias_t| {
        let prefix = match kn {
            LinearKernel::Gemv(mt) => format!("linear_q8_gemv_m{mt}"),
            LinearKernel::Tiled => "linear_q8_tiled".to_string(),
        };
        Ok(Dispatch::new(
            float_shader(&prefix, dt, call)?,
            [out, x, q8.w, bias_t, q8.s, q8.z],
        ))
    })
}

/// `aten._weight_int8pack_mm.default` `[x [.., K], weight int8 [N, K], scales [N], out]`.
pub(crate) fn build_weight_int8pack_mm(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let what = call.what();
    let x = g.tensor_arg(call, 0)?;
    let out = g.tensor_arg(call, 3)?;
    let wc = constant_arg(g, call, 1, "int8 weight")?;
    let sc = constant_arg(g, call, 2, "scales")?;
    if !matches!(sc.dtype, DataType::Float32 | DataType::Float16) {
        return Err(invalid_program(format!(
            "{what}: scales must be float32 or float16, got {}",
            sc.dtype.name()
        )));
    }
    let q8 = pack_q8(g, &wc, &sc, None, &what)?;
    q8_linear_node(g, call, x, q8, None, out)
}

/// Arg `i` of `call` as a constant (`TensorRef`) when it is one, or the output of an
/// `et_vk.prepack` of one earlier in the chain (the exporter's form); other values as they
/// are; None for a bad id.
pub(crate) fn constant_source(g: &GraphBuilder<'_>, call: &OpCall<'_>, i: usize) -> Option<GValue> {
    let v = call.arg(i).ok()?;
    match g.value(v).ok()? {
        GValue::Tensor(_) => g
            .graph()
            .chain
            .iter()
            .take(call.index)
            .find(|op| op.name == "et_vk.prepack.default" && op.args.get(1) == Some(&v))
            .and_then(|op| g.value(op.args[0]).ok().cloned()),
        other => Some(other.clone()),
    }
}

/// Whether a `torchao.dequantize_affine` node (`call`) of a constant int8 weight [N, K] with
/// per-row blocks `[1, K]`, constant scales and zero points (or none) and an fp32 output can be
/// left out: every reader of its output is an `aten.linear` taking it as the weight (arg 1)
/// with fp32 x, and the output is no graph output. Then the packed weight is recorded for
/// those linears ([`GraphBuilder::q8_weights`]) and true returned.
pub(crate) fn plan_dequant_linear(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (block, out_arg, zp_arg): (&[i64], usize, Option<usize>),
) -> Result<bool> {
    let value_of = |i: usize| constant_source(g, call, i);
    let Some(GValue::TensorRef(wc)) = value_of(0) else {
        return Ok(false);
    };
    let Some(GValue::TensorRef(sc)) = value_of(2) else {
        return Ok(false);
    };
    let zc = match zp_arg.and_then(value_of) {
        None | Some(GValue::Null) => None,
        Some(GValue::TensorRef(zc)) => Some(zc),
        Some(_) => return Ok(false),
    };
    let (n, k) = match wc.dims.as_slice() {
        &[n, k] if wc.dtype == DataType::Int8 => (n, k),
        _ => return Ok(false),
    };
    if block != [1, k as i64] || !matches!(sc.dtype, DataType::Float32 | DataType::Float16) {
        return Ok(false);
    }
    let out_v = call.arg(out_arg)?;
    // (Anything else takes the node's own path, which reports what is wrong.)
    match g.value(out_v)? {
        GValue::Tensor(t)
            if g.shapes().dtype(*t) == DataType::Float32 && g.shapes().max_dims(*t) == [n, k] => {}
        _ => return Ok(false),
    }
    let graph = g.graph();
    if graph.output_ids.contains(&out_v) {
        return Ok(false);
    }
    let mut readers = 0;
    for op in graph.chain.iter().skip(call.index + 1) {
        if !crate::ops::quantize::op_refs(g, &op.args).any(|v| v == out_v) {
            continue;
        }
        let x_f32 = op.args.first().is_some_and(|&xv| {
            matches!(g.value(xv), Ok(GValue::Tensor(t)) if g.shapes().dtype(*t) == DataType::Float32)
        });
        let as_weight = op.name == "aten.linear.default"
            && op.args.len() == 4
            && op.args[1] == out_v
            && op.args.iter().filter(|&&a| a == out_v).count() == 1
            && x_f32;
        if !as_weight {
            return Ok(false);
        }
        readers += 1;
    }
    if readers == 0 {
        return Ok(false);
    }
    let what = call.what();
    let q8 = pack_q8(g, &wc, &sc, zc.as_ref(), &what)?;
    g.q8_weights.insert(out_v, q8);
    Ok(true)
}
