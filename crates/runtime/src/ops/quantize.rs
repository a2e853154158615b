//! Dynamic activation quantization: `torchao.choose_qparams_affine.default` (`[input,
//! mapping_type, block_size, target_dtype, quant_min, quant_max, eps, scale_dtype,
//! zero_point_dtype, keepdim, ValueList(scale, zero_point)]`, keepdim absent before torchao
//! 0.18; the dtype arguments are Null, as the exporter writes torch.dtype values), over rows
//! (block_size `[1, ..., 1, K]`: one scale and zero point per row of the last dim, what
//! torchao's per-token int8 activation quantization asks for). Its outputs feed
//! `et_vk.linear_dq8ca_q4gsw` (in `q4_linear`), which reads them with the same raw-word
//! encoding ([`scale_kind`], [`zero_point_kind`]). And `torchao.dequantize_affine.default`
//! (block-wise `(q - zero_point) * scale`), which the exporter leaves in front of
//! `aten.linear` for int8 (and per-channel int4 without a fused pattern) weight-only linears.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{gvalue_kind, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{invalid_arg, invalid_program, unsupported};
use crate::graph::{to_u32, Push, TensorId};
use crate::ops::float_shader;
use crate::ops::training::folded_grid;
use crate::registry::{OpEntry, Registry};

/// Local size of `choose_qparams_rows` (its `LANES`).
const LANES: u32 = 256;
/// Local size of its `_wide` forms, taken on rows longer than [`WIDE_ROWS_MIN_K`] where the
/// device runs workgroups of that size.
const WIDE_LANES: u32 = 1024;
/// Rows longer than one round of `choose_qparams_rows`' unrolled loads (256 lanes x 16)
/// take the `_wide` forms: a row per workgroup is latency-bound, and at small M, where this
/// node runs on long rows (8da4w linears past the persistent GEMV), it took 10-15 us at K =
/// 16384..28672 (H100, docs/performance.md, session 42).
const WIDE_ROWS_MIN_K: usize = 256 * 16;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    r.register(OpEntry {
        name: "torchao.dequantize_affine.default",
        build: build_dequantize_affine,
        dtypes: &[DataType::Float32, DataType::Float16],
        dynamic_shapes: true,
        note: "float(q - zero_point) * scale per block of block_size (rank <= 4); q int8 / uint8 / int32, scale float32 / float16, zero point int8 / int32 / float32 / None; out float32 / float16 (torchao's int weight-only linears: dequantize, then aten.linear)",
    })?;
    r.register(OpEntry {
        name: "torchao.choose_qparams_affine.default",
        build: build_choose_qparams_affine,
        dtypes: &[DataType::Float32, DataType::Float16],
        dynamic_shapes: true,
        note: "per-row (block_size [1, .., 1, K]) scale and zero point, as torchao: ASYMMETRIC, SYMMETRIC or SYMMETRIC_NO_CLIPPING_ERR; quant range from quant_min / quant_max, else target_dtype (int8 when absent); scale float32 / float16, zero point int8 / int32 / float32",
    })
}

/// `torchao.dequantize_affine.default`: `[input, block_size, scale, zero_point | Null,
/// input_dtype, quant_min, quant_max, (zero_point_domain,) output_dtype, out]` (torchao 0.18
/// has 9 args; earlier schemas a zero_point_domain String before output_dtype).
fn build_dequantize_affine(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    let what = call.what();
    let n = call.args.len();
    if n == 10 {
        match g.value(call.arg(7)?)? {
            GValue::Null => {}
            GValue::String(d) if d == "INT" || d == "NONE" => {}
            GValue::String(d) => {
                return Err(unsupported(format!(
                    "{what}: zero_point_domain {d:?} is not supported (INT, NONE are)"
                )))
            }
            other => {
                return Err(invalid_program(format!(
                    "{what}: zero_point_domain (arg 7) must be a string, got {}",
                    gvalue_kind(other)
                )))
            }
        }
    } else if n != 9 {
        return Err(invalid_program(format!(
            "{what}: expected 9 args (10 with zero_point_domain), got {n}"
        )));
    }
    let block = g.int_list_arg(call, 1)?;
    // An int8 weight that only aten.linear ops read: they take it as int8 (ops/q8_linear.rs)
    // and this node is left out.
    if crate::ops::q8_linear::plan_dequant_linear(g, call, (&block, n - 1, Some(3)))? {
        return Ok(());
    }
    // Constant operands (a group-wise or int4 weight): the result is a constant too.
    if fold_constant_dequant(g, call, &block, n - 1)? {
        return Ok(());
    }
    let q = g.tensor_or_prepack(call, 0)?;
    let scale = g.tensor_or_prepack(call, 2)?;
    let zp = g.opt_tensor_or_prepack(call, 3)?;
    let out = g.tensor_arg(call, n - 1)?;
    if block.iter().any(|&b| b < 1) {
        return Err(unsupported(format!(
            "{what}: block_size {block:?} needs positive sizes"
        )));
    }
    let block = block.iter().map(|&b| b as usize).collect();
    crate::ops::quant_blocks::dequantize_node(
        g,
        call,
        (q, scale, zp, out),
        crate::ops::quant_blocks::Blocks::Fixed(block),
    )
}

/// A `dequantize_affine` whose input, scale and zero point are constants (a weight with
/// group-wise scales, which the int8 kernels do not read, or a 4-bit one held as int8) gives
/// the same tensor at every execute: it is computed once at load, on the CPU with the
/// shader's arithmetic (`float(q - int(zero_point)) * scale` in fp32, then the output dtype),
/// and the output value becomes that constant tensor. Not for graph outputs; anything the
/// fold does not cover (shapes, dtypes, counts) takes the node's own path, which reports it.
fn fold_constant_dequant(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    block: &[i64],
    out_arg: usize,
) -> Result<bool> {
    use crate::ops::q8_linear::constant_source;
    let (Some(GValue::TensorRef(qc)), Some(GValue::TensorRef(sc))) =
        (constant_source(g, call, 0), constant_source(g, call, 2))
    else {
        return Ok(false);
    };
    let zc = match constant_source(g, call, 3) {
        None | Some(GValue::Null) => None,
        Some(GValue::TensorRef(z)) => Some(z),
        Some(_) => return Ok(false),
    };
    let out_v = call.arg(out_arg)?;
    let out = match g.value(out_v)? {
        GValue::Tensor(t) => *t,
        _ => return Ok(false),
    };
    let odt = g.shapes().dtype(out);
    let dims = qc.dims.clone();
    if !matches!(odt, DataType::Float32 | DataType::Float16)
        || g.shapes().max_dims(out) != dims.as_slice()
        || g.graph().output_ids.contains(&out_v)
        || block.len() != dims.len()
        || block.iter().any(|&b| b < 1)
    {
        return Ok(false);
    }
    let grid: Vec<usize> = dims
        .iter()
        .zip(block)
        .map(|(&n, &b)| n.div_ceil(b as usize))
        .collect();
    let groups: usize = grid.iter().product();
    if !matches!(sc.dtype, DataType::Float32 | DataType::Float16) {
        return Ok(false);
    }
    let Some(scales) =
        crate::ops::q8_linear::constant_f32s(sc.dtype, g.constant_bytes(sc.constant_id)?)
    else {
        return Ok(false);
    };
    // Zero points as the shader takes them: integers (a float one truncated).
    let zps: Option<Vec<i64>> = match &zc {
        None => None,
        Some(z) => {
            let bytes = g.constant_bytes(z.constant_id)?;
            let v: Vec<i64> = match z.dtype {
                DataType::Int8 => bytes.iter().map(|&b| i64::from(b as i8)).collect(),
                DataType::Int32 => bytes
                    .chunks_exact(4)
                    .map(|b| i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                    .collect(),
                DataType::Float32 => bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64)
                    .collect(),
                _ => return Ok(false),
            };
            Some(v)
        }
    };
    if scales.len() != groups || zps.as_ref().is_some_and(|z| z.len() != groups) {
        return Ok(false);
    }
    let q_dtype = qc.dtype;
    if !matches!(q_dtype, DataType::Int8 | DataType::Uint8 | DataType::Int32) {
        return Ok(false);
    }
    let name = format!(
        "dequantize_affine_folded_s{}_z{:?}_b{block:?}_{}",
        sc.constant_id,
        zc.as_ref().map(|z| z.constant_id),
        odt.name()
    );
    let block: Vec<usize> = block.iter().map(|&b| b as usize).collect();
    let layout = crate::builder::Layout {
        name,
        pack: Box::new(move |c, bytes| {
            let numel: usize = c.dims.iter().product();
            let q = |i: usize| -> i64 {
                match q_dtype {
                    DataType::Int8 => i64::from(bytes[i] as i8),
                    DataType::Uint8 => i64::from(bytes[i]),
                    _ => i64::from(i32::from_le_bytes([
                        bytes[4 * i],
                        bytes[4 * i + 1],
                        bytes[4 * i + 2],
                        bytes[4 * i + 3],
                    ])),
                }
            };
            let width = if q_dtype == DataType::Int32 { 4 } else { 1 };
            if bytes.len() < numel * width {
                return Err(invalid_program(format!(
                    "dequantize_affine: constant holds {} bytes for {numel} elements",
                    bytes.len()
                )));
            }
            let strides: Vec<usize> = (0..c.dims.len())
                .map(|d| c.dims[d + 1..].iter().product())
                .collect();
            let mut out = Vec::with_capacity(numel * if odt == DataType::Float16 { 2 } else { 4 });
            for i in 0..numel {
                let mut blk = 0;
                for d in 0..c.dims.len() {
                    blk = blk * grid[d] + (i / strides[d]) % c.dims[d] / block[d];
                }
                let z = zps.as_ref().map_or(0, |z| z[blk]);
                let v = ((q(i) - z) as i32 as f32) * scales[blk];
                if odt == DataType::Float16 {
                    out.extend(etvk_format::f16::f32_to_f16(v).to_le_bytes());
                } else {
                    out.extend(v.to_le_bytes());
                }
            }
            Ok(crate::builder::Packed {
                dtype: odt,
                dims: c.dims.clone(),
                bytes: out,
            })
        }),
    };
    let t = g.prepack(qc.value, &layout)?;
    g.alias_value(out_v, t)?;
    Ok(true)
}

/// dequantize_affine.comp's code of an integer input dtype: 0 int8, 1 uint8, 2 int32.
pub(crate) fn int_input_kind(call: &OpCall, dt: DataType) -> Result<u32> {
    match dt {
        DataType::Int8 => Ok(0),
        DataType::Uint8 => Ok(1),
        DataType::Int32 => Ok(2),
        d => Err(unsupported(format!(
            "{}: input dtype {} is not supported (int8, uint8, int32 are)",
            call.what(),
            d.name()
        ))),
    }
}

/// How a scale tensor of dtype `dt` is stored as raw words: 0 fp32, 1 fp16 pairs.
pub(crate) fn scale_kind(dt: DataType) -> Option<u32> {
    match dt {
        DataType::Float32 => Some(0),
        DataType::Float16 => Some(1),
        _ => None,
    }
}

/// How a zero-point tensor of dtype `dt` is stored as raw words: 0 int32, 1 fp32, 2 int8
/// quads.
pub(crate) fn zero_point_kind(dt: DataType) -> Option<u32> {
    match dt {
        DataType::Int32 => Some(0),
        DataType::Float32 => Some(1),
        DataType::Int8 => Some(2),
        _ => None,
    }
}

/// The per-row (scale, zero point) pair's dtypes as the kinds word of the shaders (scale in
/// bits 0-7, zero point in 8-15), or an error naming the op and the tensor.
pub(crate) fn qparam_kinds(call: &OpCall, scale: DataType, zero_point: DataType) -> Result<u32> {
    let s = scale_kind(scale).ok_or_else(|| {
        unsupported(format!(
            "{}: scale dtype {} is not supported (float32, float16 are)",
            call.what(),
            scale.name()
        ))
    })?;
    let z = zero_point_kind(zero_point).ok_or_else(|| {
        unsupported(format!(
            "{}: zero point dtype {} is not supported (int8, int32, float32 are)",
            call.what(),
            zero_point.name()
        ))
    })?;
    Ok(s | (z << 8))
}

/// Whether `dims` hold one value per row of an input whose leading dims are `lead`: `lead`
/// itself (torchao's keepdim = False) or `lead ++ [1]`.
pub(crate) fn per_row_dims(dims: &[usize], lead: &[usize]) -> bool {
    dims == lead
        || (dims.len() == lead.len() + 1 && dims[..lead.len()] == *lead && dims[lead.len()] == 1)
}

/// The `(scale, zero_point)` outputs in ValueList arg `i`: their tensors and value ids.
pub(crate) fn output_pair(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    i: usize,
) -> Result<([TensorId; 2], [usize; 2])> {
    let what = call.what();
    let ids = match g.value(call.arg(i)?)? {
        GValue::ValueList(ids) if ids.len() == 2 => [ids[0], ids[1]],
        other => {
            return Err(invalid_program(format!(
                "{what}: arg {i} must be a ValueList of the (scale, zero_point) outputs, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let mut ts = [TensorId(0); 2];
    for (slot, &id) in ts.iter_mut().zip(&ids) {
        *slot = match g.value(id)? {
            GValue::Tensor(t) => *t,
            other => {
                return Err(invalid_program(format!(
                    "{what}: output value {id} is {}, expected a tensor",
                    gvalue_kind(other)
                )))
            }
        };
    }
    Ok((ts, ids))
}

/// The quant range of ScalarType code `t` (schema/scalar_type.fbs).
fn dtype_range(t: i64) -> Option<(i64, i64)> {
    match t {
        0 => Some((0, 255)),
        1 => Some((-128, 127)),
        2 => Some((-32768, 32767)),
        3 => Some((i32::MIN as i64, i32::MAX as i64)),
        _ => None,
    }
}

fn build_choose_qparams_affine(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    // torchao 0.18 (executorch 1.5.1) serializes a keepdim Bool before the outputs (11
    // args); earlier schemas end at zero_point_dtype (10). keepdim shows in the outputs'
    // serialized sizes, which the resize follows.
    let what = call.what();
    let outs_arg = match call.args.len() {
        10 => 9,
        11 => 10,
        n => {
            return Err(invalid_program(format!(
                "{what}: expected 10 or 11 args (keepdim before the outputs since torchao 0.18), got {n}"
            )))
        }
    };
    let x = g.tensor_or_prepack(call, 0)?;
    let mapping = match g.value(call.arg(1)?)? {
        GValue::String(s) => match s.as_str() {
            "ASYMMETRIC" | "" => 0u32,
            "SYMMETRIC" => 1,
            "SYMMETRIC_NO_CLIPPING_ERR" => 2,
            other => {
                return Err(unsupported(format!(
                    "{what}: mapping_type {other:?} is not supported (ASYMMETRIC, SYMMETRIC, SYMMETRIC_NO_CLIPPING_ERR are)"
                )))
            }
        },
        other => {
            return Err(invalid_program(format!(
                "{what}: mapping_type (arg 1) must be a string, got {}",
                gvalue_kind(other)
            )))
        }
    };
    let block = g.int_list_arg(call, 2)?;
    let xd = g.shapes().max_dims(x).to_vec();
    let k = match xd.last() {
        Some(&k) if k >= 1 => k,
        _ => {
            return Err(invalid_program(format!(
                "{what}: input has sizes {xd:?}; it needs a last dim of at least 1"
            )))
        }
    };
    let per_row = block.len() == xd.len()
        && block[..block.len() - 1].iter().all(|&b| b == 1)
        && block.last() == Some(&(k as i64));
    // target_dtype: a ScalarType code, or Null (the exporter drops torch.dtype arguments).
    let target = match g.value(call.arg(3)?)? {
        GValue::Int(t) => Some(*t),
        _ => None,
    };
    let range = match target {
        Some(t) => dtype_range(t).ok_or_else(|| {
            unsupported(format!(
                "{what}: target_dtype (ScalarType {t}) is not an integer type this op supports (uint8, int8, int16, int32)"
            ))
        })?,
        None => (-128, 127),
    };
    let opt_int = |g: &GraphBuilder<'_>, i: usize, default: i64| -> Result<i64> {
        match g.value(call.arg(i)?)? {
            GValue::Null => Ok(default),
            _ => g.int_arg(call, i),
        }
    };
    let qmin = opt_int(g, 4, range.0)?;
    let qmax = opt_int(g, 5, range.1)?;
    if qmin >= qmax || i32::try_from(qmin).is_err() || i32::try_from(qmax).is_err() {
        return Err(invalid_program(format!(
            "{what}: quant_min = {qmin}, quant_max = {qmax}; need quant_min < quant_max within int32"
        )));
    }
    if mapping == 2 && (qmin >= 0 || qmax <= 0) {
        return Err(invalid_program(format!(
            "{what}: SYMMETRIC_NO_CLIPPING_ERR needs quant_min < 0 < quant_max, got [{qmin}, {qmax}]"
        )));
    }
    // torchao's default eps is the smallest normal number of x's dtype.
    let smallest_normal = match g.shapes().dtype(x) {
        DataType::Float16 => 6.103_515_6e-5,
        _ => f64::from(f32::MIN_POSITIVE),
    };
    let eps = g.double_arg_or(call, 6, smallest_normal)? as f32;
    let ([scale, zp], outs) = output_pair(g, call, outs_arg)?;
    if !per_row {
        if block.len() != xd.len() || block.iter().any(|&b| b < 1) {
            return Err(invalid_program(format!(
                "{what}: block_size {block:?} needs one positive size per dim of input {xd:?}"
            )));
        }
        let keepdim = outs_arg == 10 && matches!(g.value(call.arg(9)?)?, GValue::Bool(true));
        let block = block.iter().map(|&b| b as usize).collect();
        return crate::ops::quant_blocks::build_choose_blocks(
            g,
            call,
            x,
            block,
            (mapping, qmin, qmax, eps),
            keepdim,
            [scale, zp],
        );
    }
    let s = g.shapes();
    let kinds = qparam_kinds(call, s.dtype(scale), s.dtype(zp))?;
    let lead = xd[..xd.len() - 1].to_vec();
    let keep = [s.max_dims(scale).len(), s.max_dims(zp).len()];
    for (t, name) in [(scale, "scale"), (zp, "zero_point")] {
        if !per_row_dims(s.max_dims(t), &lead) {
            return Err(invalid_program(format!(
                "{what}: {name} output has sizes {:?}; one value per row of input {xd:?} is {lead:?} (or {lead:?} + [1])",
                s.max_dims(t)
            )));
        }
    }
    let params = ActQuantParams {
        mapping,
        qmin,
        qmax,
        eps_bits: eps.to_bits(),
        kinds,
    };
    let x_val = call.arg(0)?;
    let [s_val, z_val] = [outs[0], outs[1]];
    let plan = plan_act_quant(g, call, x, (x_val, s_val, z_val), params);
    // x an op's output that the linears may compute at M = 1 (a fused gated SiLU's, an
    // RMSNorm's): this node must idle there too, or that op writes it.
    if let Some(src) = g.x_sources.get(&x_val) {
        match &plan {
            ChoosePlan::Fused { .. } | ChoosePlan::Reuse { skip: true, .. } => {}
            _ => src.block(),
        }
    }
    // (xq and the rows' parameters, how many of its linears read them at M = 1) when this
    // node writes them.
    let fq = match plan {
        ChoosePlan::Plain => None,
        ChoosePlan::Fused { other_reader } => {
            let xq = g.new_tensor(
                DataType::Float32,
                xd.clone(),
                None,
                format!("{what}: x quantized and dequantized"),
            )?;
            let rows = xd[..xd.len() - 1].iter().product::<usize>().max(1);
            let row_params = g.new_tensor(
                DataType::Float32,
                vec![rows, 2],
                None,
                format!("{what}: rows' scale and zero point as stored"),
            )?;
            let used = ActQuantUse {
                xq,
                row_params,
                spec: params.spec(),
                readers_at_m1: Arc::new(AtomicUsize::new(0)),
                needs_small_m: Arc::new(AtomicU32::new(0)),
            };
            g.act_quant_sources.push(ActQuantSource {
                x: x_val,
                params,
                used: used.clone(),
                index: call.index,
            });
            g.act_quant.insert((x_val, s_val, z_val), used.clone());
            if let Some(src) = g.x_sources.get(&x_val) {
                if let Ok(mut c) = src.chooses.lock() {
                    c.push(used.readers_at_m1.clone());
                }
            }
            // Other readers of the scale and zero point need this node at every M.
            let needs_small_m = used.needs_small_m.clone();
            let readers = used.readers_at_m1;
            // Whether the node idles at M = 1 depends on the linears built after it: its
            // launch is made again at the first execute, when they have all counted.
            g.deferred_resize = true;
            if other_reader {
                readers.fetch_add(1, Ordering::Relaxed);
                needs_small_m.fetch_or(SMALL_M_BITS, Ordering::Relaxed);
            }
            Some(((xq, row_params), (readers, needs_small_m)))
        }
        ChoosePlan::Reuse { used, skip } => {
            g.act_quant.insert((x_val, s_val, z_val), used);
            if skip {
                return Ok(());
            }
            None
        }
    };
    let xq = fq.as_ref().map(|f| f.0);
    // (readers at M = 1, the M = 2..8 some reader needs the node at).
    let readers = fq.map(|f| f.1);
    let caps = g.caps();
    let lanes = if k > WIDE_ROWS_MIN_K
        && caps.max_workgroup_invocations >= WIDE_LANES
        && caps.max_workgroup_size[0] >= WIDE_LANES
        && std::env::var("ETVK_CHOOSE_WIDE").map_or(true, |v| v != "0")
    {
        WIDE_LANES
    } else {
        LANES
    };
    let wide = if lanes == WIDE_LANES { "_wide" } else { "" };
    let s = g.shapes();
    let (shader, bindings) = match xq {
        Some((xq, row_params)) => (
            float_shader(&format!("choose_qparams_fq_rows{wide}"), s.dtype(x), call)?,
            vec![scale, zp, x, xq, row_params],
        ),
        None => (
            float_shader(&format!("choose_qparams_rows{wide}"), s.dtype(x), call)?,
            vec![scale, zp, x],
        ),
    };
    let what2 = what.clone();
    // One variant, chosen above, named in profiles (`op/kernel`).
    g.dispatch_select(call, vec![Dispatch::new(shader, bindings)], move |s| {
        let dims = s.dims(x).to_vec();
        let Some((&kk, lead)) = dims.split_last() else {
            return Err(invalid_arg(format!("{what2}: input became rank 0")));
        };
        if kk != k {
            return Err(invalid_arg(format!(
                "{what2}: the input's last dim changed from {k} to {kk}; block_size fixes it"
            )));
        }
        let rows: usize = lead.iter().product();
        for (t, rank) in [(scale, keep[0]), (zp, keep[1])] {
            let mut d = lead.to_vec();
            if rank > lead.len() {
                d.push(1);
            }
            s.set_dims(t, d)?;
        }
        if let Some((xq, _)) = xq {
            s.set_dims(xq, dims.clone())?;
        }
        // At M = 1 every linear may quantize x itself (the DQ half GEMV), and at M = 2..8
        // (the persistent int8 GEMV's DQ form): nothing to launch.
        let idle = match (rows, &readers) {
            (1, Some((r, _))) => r.load(Ordering::Relaxed) == 0,
            (2..=DQ_SELF_MAX_M, Some((_, bits))) => bits.load(Ordering::Relaxed) & (1 << rows) == 0,
            _ => false,
        };
        let rows = if idle { 0 } else { rows };
        let launch = crate::graph::Launch {
            push: Push::new()
                .u32(to_u32(rows, "rows")?)
                .u32(to_u32(k, "K")?)
                .u32(mapping)
                .i32(qmin as i32)
                .i32(qmax as i32)
                .f32(eps)
                .u32(kinds)
                .u32(0)
                .finish(),
            global: folded_grid(rows as u64, [lanes, 1, 1], &what2)?,
        };
        Ok((0, launch))
    })
}

const CHOOSE: &str = "torchao.choose_qparams_affine.default";
const DQ8CA: &str = "et_vk.linear_dq8ca_q4gsw.default";

/// What decides whether two choose_qparams nodes on one x compute the same outputs.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ActQuantParams {
    mapping: u32,
    qmin: i64,
    qmax: i64,
    eps_bits: u32,
    /// The outputs' dtypes: the linears read the scale and zero point back as stored.
    kinds: u32,
}

impl ActQuantParams {
    /// As the DQ half GEMV's specialization constants 3-7 (q4_linear_gemv_half.comp).
    fn spec(&self) -> [u32; 5] {
        [
            self.mapping,
            self.qmin as i32 as u32,
            self.qmax as i32 as u32,
            self.eps_bits,
            self.kinds,
        ]
    }
}

/// x quantized and dequantized by a choose_qparams node, as an 8da4w linear finds it.
#[derive(Debug, Clone)]
pub(crate) struct ActQuantUse {
    /// The fake-quantized x (fp32, x's sizes).
    pub(crate) xq: TensorId,
    /// Each row's (scale, zero point) as stored and read back, fp32 [rows, 2] (sized for
    /// the largest M): the linears' integer forms quantize the raw x with them.
    pub(crate) row_params: TensorId,
    /// The node's parameters for a DQ half GEMV that quantizes x itself instead.
    pub(crate) spec: [u32; 5],
    /// Readers of `xq` (or of the node's outputs) at M = 1; at 0 the node launches nothing
    /// there. Counted while the graph is built, read by the node's resize.
    pub(crate) readers_at_m1: Arc<AtomicUsize>,
    /// Bit M (2..=[`DQ_SELF_MAX_M`], [`SMALL_M_BITS`]) set where some reader needs the
    /// node's outputs at M; where it is clear every linear's GEMV quantizes x itself (the
    /// persistent int8 GEMV's DQ form) and the node launches nothing.
    pub(crate) needs_small_m: Arc<AtomicU32>,
}

/// The most rows at which an 8da4w linear's GEMV may quantize x itself (the persistent int8
/// GEMV's DQ form serves M = 2..8).
pub(crate) const DQ_SELF_MAX_M: usize = 8;

/// The M (2..=[`DQ_SELF_MAX_M`]) at which an 8da4w linear's choose_qparams node may idle:
/// bit M.
pub(crate) const SMALL_M_BITS: u32 = ((1 << (DQ_SELF_MAX_M + 1)) - 1) & !0b11;

/// A choose_qparams node that also wrote x quantized and dequantized (`xq`).
#[derive(Debug, Clone)]
pub(crate) struct ActQuantSource {
    /// x's value id.
    x: usize,
    params: ActQuantParams,
    used: ActQuantUse,
    /// Chain position of the node.
    index: usize,
}

/// How a choose_qparams node is built.
enum ChoosePlan {
    /// Scale and zero point only.
    Plain,
    /// Also x quantized and dequantized, for the 8da4w linears that read its outputs (and
    /// whether anything else reads them).
    Fused { other_reader: bool },
    /// An earlier fused node on the same x with the same parameters made the linears' input
    /// already; this node is left out when nothing else reads its outputs (`skip`).
    Reuse { used: ActQuantUse, skip: bool },
}

/// Value ids an op refers to: its args and the members of ValueList args (no allocation:
/// the plans below walk the chain once per node at load).
pub(crate) fn op_refs<'g>(
    g: &'g GraphBuilder<'_>,
    args: &'g [usize],
) -> impl Iterator<Item = usize> + 'g {
    args.iter().flat_map(move |&a| {
        let listed: &[usize] = match g.value(a) {
            Ok(GValue::ValueList(l)) => l,
            _ => &[],
        };
        std::iter::once(a).chain(listed.iter().copied())
    })
}

/// The chain index of the last `linear_dq8ca_q4gsw` after index `at` that reads value `v` as
/// its x (arg 0).
pub(crate) fn last_dq_linear_reader(g: &GraphBuilder<'_>, at: usize, v: usize) -> Option<usize> {
    g.graph()
        .chain
        .iter()
        .enumerate()
        .skip(at + 1)
        .rev()
        .find(|(_, op)| op.name == DQ8CA && op.args.len() == 9 && op.args[0] == v)
        .map(|(j, _)| j)
}

/// Whether the memory of tensor x keeps its contents over the chain ops strictly between
/// `from` and `last`: every op there that refers to a value held in x's memory (x, its
/// aliases, values planned into its mem_obj) is a choose_qparams or 8da4w linear reading it
/// as arg 0 (no op may write it).
pub(crate) fn x_kept_between(g: &GraphBuilder<'_>, x: TensorId, from: usize, last: usize) -> bool {
    let mem = g.tensor_mem[x.0];
    let in_x_memory = |v: usize| match g.value(v) {
        Ok(GValue::Tensor(t)) => g.tensor_mem[t.0] == mem,
        _ => false,
    };
    g.graph().chain[from + 1..last].iter().all(|op| {
        let reader = op.name == CHOOSE || op.name == DQ8CA;
        op.args.iter().enumerate().all(|(pos, &a)| {
            let direct_ok = !in_x_memory(a) || (reader && pos == 0);
            let listed_ok = match g.value(a) {
                Ok(GValue::ValueList(l)) => !l.iter().any(|&m| in_x_memory(m)),
                _ => true,
            };
            direct_ok && listed_ok
        })
    })
}

/// The shortest rows for which an RMSNorm writes its range by default (`auto`). H100
/// (session 36): at 4096 and 8192 the linears' gain passes the norm's cost with two or
/// three readers; at 2048 each linear gains 0.1-0.2 us against the norm's 0.5-0.6; the
/// tiny 8da4w Llamas' decodes (rows of 64) took 4.1-6.7 us longer with it.
const NORM_RANGE_MIN_ROW: usize = 4096;

/// The ops that can write their rows' range for the 8da4w linears after them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeProducer {
    /// RMSNorm, alone or fused with the residual add before it: by default (`auto`) on rows
    /// of at least [`NORM_RANGE_MIN_ROW`], on every row with `norm` or `all`. H100
    /// (docs/performance.md, session 36): the norm's node +0.5-0.6 us at M = 1, each DQ GEMV
    /// that reads the range 0.2-0.9 us faster at K = 4096..8192 (q / k / v and w1 / w3 read
    /// one norm's).
    Norm,
    /// The fused gated SiLU, which then runs by rows (`silu_mul_rows_mm`): off unless compile
    /// spec `etvk_row_range` (or `ETVK_ROW_RANGE`) = `all`. H100 (session 36) at M = 1: the
    /// SiLU by rows took 6.0-13.2 us against the elementwise one's 4.5-5.1 (K = 4096..28672),
    /// w2's GEMV gained 0.2-2.3: a loss on every shape.
    GatedSilu,
}

/// Compile spec `etvk_row_range` as given, else `ETVK_ROW_RANGE`.
fn row_range_setting(g: &GraphBuilder<'_>) -> Option<String> {
    crate::builder::spec_or_env(&g.row_range, "ETVK_ROW_RANGE")
}

/// Whether compile spec `etvk_row_range` (else `ETVK_ROW_RANGE`) asks for the RMSNorms'
/// row ranges explicitly (`norm`, `all`), over the norm computed inside the linears
/// (ops/fusion.rs `norm_into_gemv`).
pub(crate) fn norm_range_forced(g: &GraphBuilder<'_>) -> bool {
    matches!(row_range_setting(g).as_deref(), Some("norm" | "all"))
}

/// Whether the RMSNorm or fused gated SiLU at chain index `at`, writing value `out_val`
/// (tensor `out`), should also write its rows' minima and maxima (rms_norm.comp's MINMAX
/// forms, silu_mul_rows.comp) for the 8da4w linears after it: `out` is fp32 or fp16, some
/// later `linear_dq8ca_q4gsw` reads it as x (arg 0), and nothing writes its memory up to the
/// last one; and `producer`'s ranges are on (compile spec `etvk_row_range`, else
/// `ETVK_ROW_RANGE`: `auto` by default, `norm`, `all`, `off` / `0`; `ETVK_FUSE=0` leaves
/// them out too). Their DQ half GEMVs then read the row's range instead of reducing it in every
/// workgroup (`RangeProducer` gives the measured trade). The new [rows, 2] tensor is
/// registered in `g.row_minmax` under `out_val`.
pub(crate) fn plan_row_minmax(
    g: &mut GraphBuilder<'_>,
    at: usize,
    out_val: usize,
    out: TensorId,
    producer: RangeProducer,
) -> Result<Option<TensorId>> {
    let setting = row_range_setting(g);
    let row_len = g.shapes().max_dims(out).last().copied().unwrap_or(0);
    let off = match (setting.as_deref(), producer) {
        (Some("0" | "off"), _) => true,
        (Some("all"), _) => false,
        (Some("norm"), RangeProducer::Norm) => false,
        (_, RangeProducer::Norm) => row_len < NORM_RANGE_MIN_ROW,
        (_, RangeProducer::GatedSilu) => true,
    };
    let float = matches!(g.shapes().dtype(out), DataType::Float32 | DataType::Float16);
    if off || crate::ops::fusion::fusion_off() || !float {
        return Ok(None);
    }
    let Some(last) = last_dq_linear_reader(g, at, out_val) else {
        return Ok(None);
    };
    if !x_kept_between(g, out, at, last) {
        return Ok(None);
    }
    let dims = g.shapes().max_dims(out).to_vec();
    let Some((&n, lead)) = dims.split_last() else {
        return Ok(None);
    };
    if n == 0 {
        return Ok(None);
    }
    let rows: usize = lead.iter().product();
    let mm = g.new_tensor(
        DataType::Float32,
        vec![rows.max(1), 2],
        None,
        format!("row min / max of value {out_val}"),
    )?;
    g.row_minmax.insert(out_val, mm);
    Ok(Some(mm))
}

/// Whether `call` (a choose_qparams node on x [.., K] writing scale `s_val` and zero point
/// `z_val`) can also write the fake-quantized x that `et_vk.linear_dq8ca_q4gsw` computes
/// from them (q4_act_fakequant.comp, term for term), or can leave that to an earlier node.
/// The rules, each checked on the serialized chain:
/// - some later 8da4w linear reads (x, scale, zero point) as its args 0-2;
/// - x keeps its contents from this node (or the earlier one) to the last such linear: every
///   op in between that refers to a value held in x's memory is a choose_qparams or 8da4w
///   linear reading it as arg 0 (no op may write it);
/// - a node is left out only when its scale and zero point have no other reader and are not
///   graph outputs.
fn plan_act_quant(
    g: &GraphBuilder<'_>,
    call: &OpCall<'_>,
    x: TensorId,
    (x_val, s_val, z_val): (usize, usize, usize),
    params: ActQuantParams,
) -> ChoosePlan {
    if !matches!(g.shapes().dtype(x), DataType::Float32 | DataType::Float16) {
        return ChoosePlan::Plain;
    }
    let chain = &g.graph().chain;
    let mut last_linear = None;
    let mut other_reader = g
        .graph()
        .output_ids
        .iter()
        .any(|&v| v == s_val || v == z_val);
    for (j, op) in chain.iter().enumerate().skip(call.index + 1) {
        if !op_refs(g, &op.args).any(|v| v == s_val || v == z_val) {
            continue;
        }
        if op.name == DQ8CA && op.args.len() == 9 && op.args[..3] == [x_val, s_val, z_val] {
            last_linear = Some(j);
        } else {
            other_reader = true;
        }
    }
    let Some(last) = last_linear else {
        return ChoosePlan::Plain;
    };
    let x_kept = |from: usize| x_kept_between(g, x, from, last);
    let earlier = g
        .act_quant_sources
        .iter()
        .rev()
        .find(|src| src.x == x_val && src.params == params && x_kept(src.index));
    match earlier {
        Some(src) => ChoosePlan::Reuse {
            used: src.used.clone(),
            skip: !other_reader,
        },
        None if x_kept(call.index) => ChoosePlan::Fused { other_reader },
        None => ChoosePlan::Plain,
    }
}
