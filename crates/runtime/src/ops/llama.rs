//! Ops of the Llama transformer block that need their own kernels:
//! `et_vk.rms_norm.default` (`[x, weight, eps, out]`), `aten._softmax.default`
//! (`[x, dim, half_to_float, out]`) and the RoPE variants
//! `et_vk.apply_rotary_emb.default` (`[xq, xk, freqs_cos, freqs_sin, ValueList(xq_out,
//! xk_out)]`), `et_vk.apply_rotary_emb_hf.default` (`[xq, xk, freqs_cos, freqs_sin,
//! start_pos, ValueList(xq_out, xk_out)]`) and `et_vk.apply_rotary_emb_interleaved.default`
//! (`[x, freqs_cis, out]`).
//!
//! The reductions run one 64-lane workgroup per row with a loop over the row and a
//! shared-memory tree (no subgroup size assumed), so rows of any length work. Math is in
//! float for fp16 storage too.

use etvk_format::ir::DataType;

use crate::api::Result;
use crate::builder::{Dispatch, GraphBuilder, OpCall};
use crate::error::{invalid_arg, unsupported};
use crate::graph::{to_u32, Binding, Global, Launch, Push, Shapes, TensorId};
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
    r.register(OpEntry {
        name: "et_vk.apply_rotary_emb_hf.default",
        build: build_rotary_hf,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "HF rotate-half RoPE on xq / xk [B, S, H, D]; freqs_cos / freqs_sin [max_seq, R] (R even, R <= D; dims >= R pass through) read at rows start_pos..start_pos+S; start_pos Int or SymInt (read on the GPU); start_pos + S <= max_seq",
    })?;
    r.register(OpEntry {
        name: "et_vk.apply_rotary_emb_interleaved.default",
        build: build_rotary_interleaved,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "pair-interleaved RoPE on x [B, N, C] (C even) with freqs_cis of N * C elements (any rank), (cos, sin) pairs interleaved like x",
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
    let mut shader = float_shader("rms_norm", dt, call)?;
    let mut bindings = vec![out, x, w];
    // Computed by its 8da4w linears at M = 1 where they may; else perhaps with row ranges.
    let source = crate::ops::fusion::plain_norm_source(g, call, (x, w, out), eps)?;
    let minmax = match source {
        Some(_) => None,
        None => crate::ops::quantize::plan_row_minmax(
            g,
            call.index,
            call.arg(3)?,
            out,
            crate::ops::quantize::RangeProducer::Norm,
        )?,
    };
    if let Some(mm) = minmax {
        shader = float_shader("rms_norm_mm", dt, call)?;
        bindings.push(mm);
    }
    let what = call.what();
    let lanes = norm_lanes(g, g.shapes().max_dims(x).last().copied().unwrap_or(1));
    let mut d = Dispatch::new(shader, bindings);
    d.local = Some([lanes, 1, 1]);
    g.dispatch(call, d, move |s| {
        let launch = rms_norm_launch(s, x, w, (&[out], minmax), (eps, lanes), &what)?;
        let rows = s.numel(x) / s.dims(x).last().copied().unwrap_or(1).max(1);
        Ok(crate::ops::fusion::norm_launch_at(
            source.as_ref(),
            rows,
            false,
            launch,
        ))
    })
}

/// Values of a row each `rms_norm` invocation holds in registers (the shader's VPT).
const NORM_VALUES_PER_LANE: usize = 8;

/// The `rms_norm` shaders' local size for rows of `n`: a power of two from 64 to 512 (and
/// within the device's workgroup limits) with at most 8 values per invocation where that
/// fits (`ETVK_NORM_LANES` forces one, for comparisons).
pub(crate) fn norm_lanes(g: &GraphBuilder<'_>, n: usize) -> u32 {
    let cap = row_lanes_cap(g, 512);
    if let Some(l) = std::env::var("ETVK_NORM_LANES")
        .ok()
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|l| l.is_power_of_two() && (1..=cap).contains(l))
    {
        return l;
    }
    (n.div_ceil(NORM_VALUES_PER_LANE).next_power_of_two() as u32).clamp(64, cap)
}

/// The largest power of two up to `want` that a workgroup of one row may have on this device
/// (Vulkan guarantees 128 invocations).
pub(crate) fn row_lanes_cap(g: &GraphBuilder<'_>, want: u32) -> u32 {
    let c = g.caps();
    let limit = want
        .min(c.max_workgroup_invocations)
        .min(c.max_workgroup_size[0]);
    1u32 << (31 - limit.max(64).leading_zeros())
}

/// The `rms_norm` shaders' launch over x's rows (one workgroup of `lanes` each), after checking that
/// w is `[N]` for x's last dim N; `outs` take x's sizes, `minmax` (the MINMAX forms' rows'
/// ranges) [rows, 2].
pub(crate) fn rms_norm_launch(
    s: &mut Shapes,
    x: TensorId,
    w: TensorId,
    (outs, minmax): (&[TensorId], Option<TensorId>),
    (eps, lanes): (f32, u32),
    what: &str,
) -> Result<Launch> {
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
    for &o in outs {
        s.set_dims(o, dims.clone())?;
    }
    if let Some(mm) = minmax {
        s.set_dims(mm, vec![rows, 2])?;
    }
    Ok(Launch {
        push: Push::new()
            .u32(to_u32(rows, "rows")?)
            .u32(to_u32(n, "N")?)
            .f32(eps)
            .u32(0)
            .finish(),
        global: folded_grid(rows as u64, [lanes, 1, 1], what)?,
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

/// Sizes of a RoPE input, which must be `[B, S, H, D]`.
fn bshd(what: &str, dims: &[usize]) -> Result<[usize; 4]> {
    <[usize; 4]>::try_from(dims)
        .map_err(|_| invalid_arg(format!("{what}: input sizes {dims:?} must be [B, S, H, D]")))
}

/// Push block of the `rotary` shader: pair count, the `[.., S, H, D]` walk and the table
/// strides (elements per position, per pair, and the sin entry's offset from the cos entry).
fn rotary_push(
    pairs: usize,
    d: usize,
    heads: usize,
    seq: usize,
    table: [usize; 3],
) -> Result<Vec<u8>> {
    Ok(Push::new()
        .u32(to_u32(pairs, "pairs")?)
        .u32(to_u32((d / 2).max(1), "D/2")?)
        .u32(to_u32(heads.max(1), "H")?)
        .u32(to_u32(seq.max(1), "S")?)
        .u32(to_u32(table[0], "table row")?)
        .u32(to_u32(table[1], "table step")?)
        .u32(to_u32(table[2], "sin offset")?)
        .u32(0)
        .finish())
}

/// A RoPE op's xq, xk, cos and sin (args 0..3), its two outputs (a ValueList at arg
/// `outs_arg`) and their common dtype.
#[allow(clippy::type_complexity)]
fn rotary_operands(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    outs_arg: usize,
) -> Result<(
    TensorId,
    TensorId,
    TensorId,
    TensorId,
    [TensorId; 2],
    DataType,
)> {
    let xq = g.tensor_or_prepack(call, 0)?;
    let xk = g.tensor_or_prepack(call, 1)?;
    let cos = g.tensor_or_prepack(call, 2)?;
    let sin = g.tensor_or_prepack(call, 3)?;
    let outs = g.output_tensors(call, outs_arg, "two outputs")?;
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
    Ok((xq, xk, cos, sin, outs, dt))
}

/// The interleaved RoPE's tables against x's sizes `dims` `[B, S, H, D]`: D even, cos / sin
/// `[S, D/2]`. Also the check of the attention that applies it (ops/attention.rs).
pub(crate) fn check_rope_freqs(
    s: &Shapes,
    what: &str,
    dims: &[usize],
    cos: TensorId,
    sin: TensorId,
) -> Result<()> {
    let [_, seq, _, d] = bshd(what, dims)?;
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
    Ok(())
}

/// The HF RoPE's full tables `[rows, R]` against x's sizes `dims` `[B, S, H, D]` and the
/// start position (value `pos_v`): R even and <= D, start_pos + S <= rows. Returns
/// `(rows, R)`. Also the check of the attention that applies it (ops/attention.rs).
pub(crate) fn check_rope_hf_freqs(
    s: &Shapes,
    what: &str,
    dims: &[usize],
    cos: TensorId,
    sin: TensorId,
    pos_v: usize,
) -> Result<(usize, usize)> {
    let [_, seq, _, d] = bshd(what, dims)?;
    let cd = s.dims(cos).to_vec();
    let &[rows, r] = cd.as_slice() else {
        return Err(invalid_arg(format!(
            "{what}: freqs_cos sizes {cd:?} must be [max_seq, rotary_dim]"
        )));
    };
    if s.dims(sin) != cd.as_slice() {
        return Err(invalid_arg(format!(
            "{what}: freqs_sin sizes {:?} differ from freqs_cos sizes {cd:?}",
            s.dims(sin)
        )));
    }
    if r % 2 != 0 || r > d {
        return Err(invalid_arg(format!(
            "{what}: rotary dim {r} (freqs {cd:?}) must be even and <= the head dim {d} of {dims:?}"
        )));
    }
    let start = s.scalar(pos_v)?;
    if start < 0.0 || start + seq as f64 > rows as f64 {
        return Err(invalid_arg(format!(
            "{what}: start_pos {start} + S {seq} exceeds the {rows} rows of freqs {cd:?}"
        )));
    }
    Ok((rows, r))
}

/// `[xq, xk, freqs_cos, freqs_sin, ValueList(xq_out, xk_out)]`: one dispatch per output.
fn build_rotary(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(5)?;
    // Left to the attention that reads both outputs, where it may (ops/fusion.rs).
    if crate::ops::fusion::plan_rope_into_sdpa(g, call)? {
        return Ok(());
    }
    let what = call.what();
    let (xq, xk, cos, sin, outs, dt) = rotary_operands(g, call, 4)?;
    let shader = float_shader("rotary", dt, call)?;
    for (x, out) in [(xq, outs[0]), (xk, outs[1])] {
        let what = what.clone();
        g.dispatch(call, Dispatch::new(shader, [out, x, cos, sin]), move |s| {
            let dims = s.dims(x).to_vec();
            let [_, seq, heads, d] = bshd(&what, &dims)?;
            check_rope_freqs(s, &what, &dims, cos, sin)?;
            let pairs = s.numel(x) / 2;
            s.set_dims(out, dims)?;
            Ok(Launch {
                push: rotary_push(pairs, d, heads, seq, [d / 2, 1, 0])?,
                global: Global::Linear(pairs as u64),
            })
        })?;
    }
    Ok(())
}

/// `[xq, xk, freqs_cos, freqs_sin, start_pos, ValueList(xq_out, xk_out)]` (ExecuTorch's
/// `apply_rotary_emb_hf(Tensor xq, Tensor xk, Tensor freqs_cos, Tensor freqs_sin, SymInt
/// start_pos) -> (Tensor, Tensor)`). The exporter's pattern passes the full tables and the
/// slice start, so the kernel reads rows `start_pos + s`; one dispatch per output.
fn build_rotary_hf(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    // Left to the attention that reads both outputs, where it may (ops/fusion.rs).
    if crate::ops::fusion::plan_rope_into_sdpa(g, call)? {
        return Ok(());
    }
    let what = call.what();
    let pos_v = call.arg(4)?;
    let pos_slot = g.scalar_slot(pos_v)?;
    let (xq, xk, cos, sin, outs, dt) = rotary_operands(g, call, 5)?;
    let shader = float_shader("rotary_hf", dt, call)?;
    for (x, out) in [(xq, outs[0]), (xk, outs[1])] {
        let what = what.clone();
        let bindings = [
            Binding::Tensor(out),
            Binding::Tensor(x),
            Binding::Tensor(cos),
            Binding::Tensor(sin),
            Binding::Scalars,
        ];
        g.dispatch(call, Dispatch::new(shader, bindings), move |s| {
            let dims = s.dims(x).to_vec();
            let [_, seq, heads, d] = bshd(&what, &dims)?;
            let (rows, r) = check_rope_hf_freqs(s, &what, &dims, cos, sin, pos_v)?;
            let numel = s.numel(x);
            s.set_dims(out, dims)?;
            Ok(Launch {
                push: Push::new()
                    .u32(to_u32(numel, "numel")?)
                    .u32(to_u32(d.max(1), "D")?)
                    .u32(to_u32(heads.max(1), "H")?)
                    .u32(to_u32(seq.max(1), "S")?)
                    .u32(to_u32(r, "rotary dim")?)
                    .u32(to_u32(rows.max(1), "freqs rows")?)
                    .u32(pos_slot)
                    .u32(0)
                    .finish(),
                global: Global::Linear(numel as u64),
            })
        })?;
    }
    Ok(())
}

/// `[x, freqs_cis, out]` (ExecuTorch's `apply_rotary_emb_interleaved(Tensor x, Tensor
/// freqs_cis) -> Tensor`, EdgeTAM's complex RoPE): x `[B, N, C]` of (real, imag) pairs and
/// freqs_cis of any rank whose flattened layout is `[N, C]` with (cos, sin) pairs. The
/// `rotary` kernel reads x as `[B, N, 1, C]` and the one table as both cos and sin.
fn build_rotary_interleaved(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(3)?;
    let what = call.what();
    let x = g.tensor_or_prepack(call, 0)?;
    let f = g.tensor_or_prepack(call, 1)?;
    let out = g.tensor_arg(call, 2)?;
    let s = g.shapes();
    let dt = same_dtype(call, &[s.dtype(x), s.dtype(f), s.dtype(out)])?;
    let shader = float_shader("rotary", dt, call)?;
    g.dispatch(call, Dispatch::new(shader, [out, x, f, f]), move |s| {
        let dims = s.dims(x).to_vec();
        let &[_, n, c] = dims.as_slice() else {
            return Err(invalid_arg(format!(
                "{what}: x sizes {dims:?} must be [B, N, C]"
            )));
        };
        if c % 2 != 0 {
            return Err(invalid_arg(format!(
                "{what}: C = {c} of x {dims:?} must be even ((real, imag) pairs)"
            )));
        }
        if s.numel(f) != n * c {
            return Err(invalid_arg(format!(
                "{what}: freqs_cis sizes {:?} must hold N * C = {} elements for x {dims:?}",
                s.dims(f),
                n * c
            )));
        }
        let pairs = s.numel(x) / 2;
        s.set_dims(out, dims)?;
        Ok(Launch {
            push: rotary_push(pairs, c, 1, n, [c, 2, 1])?,
            global: Global::Linear(pairs as u64),
        })
    })
}
