//! Ops fused into one dispatch where the graph allows it (each dispatch and its barrier
//! cost ~2 us in a small model's decode on an H100). `ETVK_FUSE=0` builds every op as it
//! is (comparisons).
//!
//! **Gated SiLU**: `mul(silu(x), u)` where silu(x) is `aten.silu(x)` or, as the exporter
//! decomposes it, `mul(x, sigmoid(x))` (a Llama MLP's `silu(gate) * up`). Built by the first
//! op of the pattern when its intermediates have no other reader and are
//! no graph output, and x, u and the output have one dtype and the same sizes: that op and
//! the inner `mul` launch nothing and are not built, the outer `mul` runs `silu_mul`
//! (`out = x / (1 + exp(-x)) * u`): two or three dispatches become one. When 8da4w linears
//! read its output (a Llama MLP's w2) and compile spec `etvk_row_range` = `all` asks for it,
//! it runs by rows as `silu_mul_rows_mm` and also writes each row's range for their M = 1
//! DQ GEMVs (ops/quantize.rs `plan_row_minmax`; off by default: slower on an H100).
//! Otherwise, when only choose_qparams nodes and 8da4w linears read its (fp32) output, the
//! linears' M = 1 DQ GEMVs compute `silu(gate) * up` where they load x (`_dq_silu` forms,
//! `XSource`) and the SiLU node launches nothing at M = 1 (`ETVK_SILU_GEMV=0` turns that
//! off; H100: 1.3-4.3 us less per w2 and token, docs/performance.md, session 37). The fused
//! node reads its gate later than the exporter planned (and the linears read gate and up
//! later still): those tensors are kept past their plan (storage.rs).
//!
//! **Residual add + RMSNorm**: `aten.add.Tensor(a, b)` (alpha 1, no broadcasting) right
//! before an `et_vk.rms_norm` of its sum: the add's node runs `add_rms_norm`, writing the
//! sum (later ops read it: the residual) and the normalized rows; the norm is not built.
//!
//! **RMSNorm inside the linears**: an fp32 RMSNorm (alone or fused with the add) whose output
//! only choose_qparams nodes and 8da4w linears read (a Llama's q / k / v, w1 / w3) is
//! computed by their M = 1 DQ GEMVs where they load x (`_dq_norm`, `_dq_addnorm`: the
//! row's sum of squares in every workgroup), and the norm node launches nothing at M = 1
//! (with the add, it writes the sum alone, beside the GEMVs rather than before them).
//! On rows of up to 8192 (the unsliced GEMVs') by default (compile spec `etvk_norm_gemv` =
//! auto | all | off, else `ETVK_NORM_GEMV`; longer rows keep the node, which writes the row
//! range), and not where compile spec `etvk_row_range` forces the norm's range (`norm`,
//! `all`).
//!
//! **KV-cache attention** (`ops/attention.rs`): `sdpa_with_kv_cache` writes the call's keys
//! and values into its caches from the attention dispatch itself (`sdpa_kv_*`) instead of
//! two copy dispatches before it.

use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::invalid_arg;
use crate::graph::TensorId;
use crate::graph::{to_u32, Global, Launch, Push};
use crate::ops::float_shader;
use crate::ops::llama::{norm_lanes, rms_norm_launch, row_lanes_cap};
use crate::ops::training::folded_grid;
use etvk_format::ir::DataType;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const MUL: &str = "aten.mul.Tensor";

/// A fused gated SiLU, kept by its outer `mul`'s chain index: the value ids of x and u.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SiluMul {
    pub(crate) x: usize,
    pub(crate) u: usize,
}

/// The chain ops after `after` that use value `v` in any argument, with the positions.
fn uses(g: &GraphBuilder<'_>, v: usize, after: usize) -> Vec<(usize, usize)> {
    let graph = g.graph();
    let mut found = Vec::new();
    for (i, op) in graph.chain.iter().enumerate().skip(after + 1) {
        for (p, &a) in op.args.iter().enumerate() {
            let listed = matches!(g.value(a), Ok(GValue::ValueList(l)) if l.contains(&v));
            if a == v || listed {
                found.push((i, p));
            }
        }
    }
    found
}

/// The one `mul` that reads intermediate `v` (output of op `at`), with its other operand:
/// None if `v` is a graph output or anything else uses it.
fn only_mul_reader_of(g: &GraphBuilder<'_>, v: usize, at: usize) -> Option<(usize, usize)> {
    let graph = g.graph();
    if graph.output_ids.contains(&v) {
        return None;
    }
    match uses(g, v, at).as_slice() {
        [(i, p)] if *p < 2 => {
            let op = &graph.chain[*i];
            (op.name == MUL && op.args.len() == 3).then(|| (*i, op.args[1 - *p]))
        }
        _ => None,
    }
}

/// Plan the fusion from the op at `call` (`aten.sigmoid` or `aten.silu`, `[x, out]`):
/// marks the ops it replaces and returns true when it applies (the caller builds nothing).
pub(crate) fn plan_from(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<bool> {
    if fusion_off() || call.args.len() != 2 {
        return Ok(false);
    }
    let (x, first_out) = (call.args[0], call.args[1]);
    let mut skip = vec![call.index];
    // silu(x): the outer mul reads its output; sigmoid(x): mul(x, s) first.
    let silu_out = if call.name == "aten.sigmoid.default" {
        match only_mul_reader_of(g, first_out, call.index) {
            Some((j, other)) if other == x => {
                skip.push(j);
                g.graph().chain[j].args[2]
            }
            _ => return Ok(false),
        }
    } else {
        first_out
    };
    let at = *skip.last().unwrap_or(&call.index);
    let Some((k, u)) = only_mul_reader_of(g, silu_out, at) else {
        return Ok(false);
    };
    let out = g.graph().chain[k].args[2];
    // One dtype, the same sizes, all three GPU tensors (u is built later, but its tensor
    // exists from the load).
    let tensor = |v: usize| match g.value(v) {
        Ok(GValue::Tensor(t)) => Some(*t),
        _ => None,
    };
    let (Some(tx), Some(tu), Some(to)) = (tensor(x), tensor(u), tensor(out)) else {
        return Ok(false);
    };
    let s = g.shapes();
    let same = [tu, to]
        .iter()
        .all(|&t| s.dtype(t) == s.dtype(tx) && s.max_dims(t) == s.max_dims(tx));
    if !same || float_shader("silu_mul", s.dtype(tx), call).is_err() {
        return Ok(false);
    }
    g.skip_ops.extend(skip);
    g.silu_mul.insert(k, SiluMul { x, u });
    Ok(true)
}

/// The inputs of an `et_vk.apply_rotary_emb` (or `_hf`) that the `sdpa_with_kv_cache`
/// reading its two outputs applies itself (`sdpa_kv_rope_*`, `sdpa_kv_rope_hf_*`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RopeInputs {
    pub(crate) xq: TensorId,
    pub(crate) xk: TensorId,
    pub(crate) cos: TensorId,
    pub(crate) sin: TensorId,
    /// The HF form's start_pos (value id): its tables are read from that row.
    pub(crate) hf_start: Option<usize>,
}

const ROPE: &str = "et_vk.apply_rotary_emb.default";
const ROPE_HF: &str = "et_vk.apply_rotary_emb_hf.default";
const SDPA_KV: &str = "sdpa_with_kv_cache.default";

/// The RoPE at `call` (`[xq, xk, freqs_cos, freqs_sin, ValueList(xq_out, xk_out)]`, or the HF
/// form's `[xq, xk, freqs_cos, freqs_sin, start_pos, ValueList(..)]`) left to the attention
/// when one later `sdpa_with_kv_cache` reads its outputs, as its q and k, and nothing else
/// does (no graph output either), no op between them refers to xq or xk, and only other
/// RoPEs of its kind refer to the tables there: the attention rotates q and the call's keys
/// itself (`sdpa_kv_rope_*`, `sdpa_kv_rope_hf_*`) and the RoPE builds nothing, at every M.
/// Its inputs are then read past their planned lifetime (kept:
/// `GraphBuilder::kept_past_plan`). `ETVK_ROPE_SDPA=0` turns it off (comparisons). Returns
/// whether it applies.
pub(crate) fn plan_rope_into_sdpa(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<bool> {
    let hf = call.name == ROPE_HF;
    let list_arg = if hf { 5 } else { 4 };
    if fusion_off()
        || std::env::var("ETVK_ROPE_SDPA").is_ok_and(|v| v == "0")
        || !(call.name == ROPE || hf)
        || call.args.len() != list_arg + 1
    {
        return Ok(false);
    }
    let outs = match g.value(call.args[list_arg])? {
        GValue::ValueList(l) if l.len() == 2 => [l[0], l[1]],
        _ => return Ok(false),
    };
    let graph = g.graph();
    if outs.iter().any(|o| graph.output_ids.contains(o)) {
        return Ok(false);
    }
    let (at, [xq_v, xk_v, cos_v, sin_v]) = (call.index, [0, 1, 2, 3].map(|i| call.args[i]));
    let sdpa = match (
        uses(g, outs[0], at).as_slice(),
        uses(g, outs[1], at).as_slice(),
    ) {
        ([(j, 0)], [(j2, 1)]) if j == j2 => *j,
        _ => return Ok(false),
    };
    let op = &graph.chain[sdpa];
    if op.name != SDPA_KV || op.args.len() != 12 {
        return Ok(false);
    }
    let before = |v: usize| uses(g, v, at).into_iter().filter(move |&(i, _)| i < sdpa);
    let tables_read_only = [cos_v, sin_v]
        .iter()
        .all(|&v| before(v).all(|(i, p)| graph.chain[i].name == call.name && (p == 2 || p == 3)));
    if before(xq_v).next().is_some() || before(xk_v).next().is_some() || !tables_read_only {
        return Ok(false);
    }
    // Constant tables (prepacked) as the RoPE itself would take them.
    let [xq, xk, cos, sin] = [
        g.tensor_or_prepack(call, 0)?,
        g.tensor_or_prepack(call, 1)?,
        g.tensor_or_prepack(call, 2)?,
        g.tensor_or_prepack(call, 3)?,
    ];
    let s = g.shapes();
    if [xk, cos, sin].iter().any(|&t| s.dtype(t) != s.dtype(xq)) {
        return Ok(false);
    }
    g.kept_past_plan.extend([xq, xk, cos, sin]);
    let hf_start = hf.then(|| call.args[4]);
    g.rope_sdpa.insert(
        sdpa,
        RopeInputs {
            xq,
            xk,
            cos,
            sin,
            hf_start,
        },
    );
    Ok(true)
}

/// Value `v`'s GPU tensor.
fn tensor_of(g: &GraphBuilder<'_>, call: &OpCall<'_>, v: usize) -> Result<TensorId> {
    match g.value(v)? {
        GValue::Tensor(t) => Ok(*t),
        _ => Err(crate::error::internal(format!(
            "{}: fused silu operand (value {v}) is not a GPU tensor",
            call.what()
        ))),
    }
}

/// What the M = 1 DQ half GEMVs of an op's output compute that output from, where they load
/// x, so that the op launches nothing there.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum GemvX {
    /// A fused gated SiLU: `silu(gate) * up` (`_dq_silu` forms).
    Silu { gate: TensorId, up: TensorId },
    /// An RMSNorm of v, or of `v + b` where the add before it is fused (`_dq_norm`,
    /// `_dq_addnorm` forms), with weight w and eps.
    Norm {
        v: TensorId,
        b: Option<TensorId>,
        w: TensorId,
        eps: f32,
    },
}

impl GemvX {
    /// What the GEMV binds as x (binding 1).
    pub(crate) fn x_binding(&self) -> TensorId {
        match *self {
            GemvX::Silu { gate, .. } => gate,
            GemvX::Norm { v, .. } => v,
        }
    }

    /// What the GEMV binds after its other bindings.
    pub(crate) fn extra_bindings(&self) -> Vec<TensorId> {
        match *self {
            GemvX::Silu { up, .. } => vec![up],
            GemvX::Norm { w, b, .. } => std::iter::once(w).chain(b).collect(),
        }
    }

    /// Specialization constants after the DQ ones (the norm's eps).
    pub(crate) fn spec(&self) -> Option<u32> {
        match *self {
            GemvX::Silu { .. } => None,
            GemvX::Norm { eps, .. } => Some(eps.to_bits()),
        }
    }
}

/// An fp32 op output `out` (a fused gated SiLU's, an RMSNorm's) that only choose_qparams
/// nodes and 8da4w linears read (as their x, arg 0) up to the last linear, and nothing after:
/// at M = 1 those linears' DQ half GEMVs can compute it where they load x ([`GemvX`]), and
/// the op then launches nothing (the fused add before a norm only writes its sum), unless
/// something still reads its output there.
#[derive(Debug, Clone)]
pub(crate) struct XSource {
    pub(crate) x: GemvX,
    /// Readers of the output at M = 1 that do not compute it themselves (a linear on another
    /// kernel, a choose_qparams node that runs there); counted while the graph is built.
    pub(crate) blockers: Arc<AtomicUsize>,
    /// The M = 1 reader counts of the fused choose_qparams nodes on the output: each must
    /// be idle (0) there too.
    pub(crate) chooses: Arc<Mutex<Vec<Arc<AtomicUsize>>>>,
}

impl XSource {
    fn new(x: GemvX) -> XSource {
        XSource {
            x,
            blockers: Arc::new(AtomicUsize::new(0)),
            chooses: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Whether the op must write its output at M = 1.
    fn needed_at_m1(&self) -> bool {
        self.blockers.load(Ordering::Relaxed) > 0
            || self
                .chooses
                .lock()
                .map_or(true, |c| c.iter().any(|r| r.load(Ordering::Relaxed) > 0))
    }

    /// Counts a reader that needs the SiLU's output at M = 1.
    pub(crate) fn block(&self) {
        self.blockers.fetch_add(1, Ordering::Relaxed);
    }
}

/// Whether the 8da4w linears after the op at chain index `at` (output value `out_val`,
/// tensor `out`) may compute its output themselves at M = 1 ([`XSource`]): `out` is fp32 and
/// no graph output, some later `linear_dq8ca_q4gsw` reads it as x, every op up to the last of
/// them that refers to its memory is a choose_qparams node or 8da4w linear reading it as arg
/// 0, no op after that refers to it, and no op up to that linear refers to the op's `inputs`
/// (which the linears then read, past their planned lifetime: the caller keeps them,
/// `GraphBuilder::kept_past_plan`).
fn x_into_gemv(
    g: &GraphBuilder<'_>,
    at: usize,
    (out_val, out): (usize, TensorId),
    inputs: &[usize],
) -> bool {
    if fusion_off()
        || g.shapes().dtype(out) != DataType::Float32
        || g.graph().output_ids.contains(&out_val)
    {
        return false;
    }
    let Some(last) = crate::ops::quantize::last_dq_linear_reader(g, at, out_val) else {
        return false;
    };
    crate::ops::quantize::x_kept_between(g, out, at, last)
        && uses(g, out_val, last).is_empty()
        && inputs
            .iter()
            .all(|&v| uses(g, v, at).iter().all(|&(i, _)| i > last))
}

/// Rows up to which the RMSNorm is computed inside its linears by default: the unsliced
/// GEMVs' rows (docs/performance.md, session 38). One reader at M = 1, against the node's
/// `_dq_mm`: with the norm's weights read as vec4s the GEMV takes 1.6-2.2 us more on rows of
/// 4096 and 8192 (H100 and H200 alike; not for the row's second read from L2: reading it
/// from a 1 KiB window changed nothing), where the norm node takes 6.8 / 10.8-11.1 us
/// (H100) and a barrier level: q / k / v (three readers) then gain ~3 us, w1 / w3 (two)
/// ~4.5. Longer rows take the sliced forms, not timed with the norm inside: they keep the
/// node.
const NORM_GEMV_MAX_ROW: usize = 8192;

/// The RMSNorm at chain index `at` (output value `out_val`, tensor `out`), computed as `x`
/// (a [`GemvX::Norm`] of input values `inputs`), when its 8da4w linears may compute it
/// themselves at M = 1 (`x_into_gemv`; all of it fp32) and compile spec `etvk_norm_gemv`
/// (else `ETVK_NORM_GEMV`) allows it for its rows (`auto`: up to [`NORM_GEMV_MAX_ROW`];
/// `all`; `off` / `0`): registers the source and keeps the inputs past their plan. Not where
/// the norm's row range is forced on (compile spec `etvk_row_range` = norm | all).
fn norm_into_gemv(
    g: &mut GraphBuilder<'_>,
    at: usize,
    (out_val, out): (usize, TensorId),
    x: GemvX,
    inputs: &[usize],
) -> Option<XSource> {
    let GemvX::Norm { v, b, w, .. } = x else {
        return None;
    };
    let s = g.shapes();
    let fp32 = std::iter::once(v)
        .chain(b)
        .chain([w])
        .all(|t| s.dtype(t) == DataType::Float32);
    let setting = crate::builder::spec_or_env(&g.norm_gemv, "ETVK_NORM_GEMV");
    let row_len = s.max_dims(out).last().copied().unwrap_or(0);
    let allowed = match setting.as_deref() {
        Some("0" | "off") => false,
        Some("all") => true,
        _ => row_len <= NORM_GEMV_MAX_ROW,
    };
    if !fp32
        || !allowed
        || crate::ops::quantize::norm_range_forced(g)
        || !x_into_gemv(g, at, (out_val, out), inputs)
    {
        return None;
    }
    let src = XSource::new(x);
    g.kept_past_plan.push(v);
    g.kept_past_plan.extend(b);
    g.x_sources.insert(out_val, src.clone());
    // Whether the norm idles at M = 1 depends on the linears built after it: its launch is
    // made again at the first execute, when they have all counted.
    g.deferred_resize = true;
    Some(src)
}

/// The norm's launch (`launch`, over `rows` rows) when its linears may compute its output
/// (`source`): at M = 1, where none needs it written, nothing, or with the fused add
/// (`add`) the sum alone (rms_norm.comp's `sum_only`).
pub(crate) fn norm_launch_at(
    source: Option<&XSource>,
    rows: usize,
    add: bool,
    mut launch: Launch,
) -> Launch {
    if source.is_some_and(|src| rows == 1 && !src.needed_at_m1()) {
        if add {
            // The push block's last word (R, N, eps, sum_only).
            let n = launch.push.len();
            launch.push[n - 4..].copy_from_slice(&1u32.to_le_bytes());
        } else {
            launch.global = Global::Grid([0, 1, 1]);
        }
    }
    launch
}

/// The RMSNorm at `call` (`[x, weight, eps, out]`, built by ops/llama.rs) computed by its
/// 8da4w linears at M = 1 where they may (`norm_into_gemv`).
pub(crate) fn plain_norm_source(
    g: &mut GraphBuilder<'_>,
    call: &OpCall<'_>,
    (x, w, out): (TensorId, TensorId, TensorId),
    eps: f32,
) -> Result<Option<XSource>> {
    let x_val = call.arg(0)?;
    let gx = GemvX::Norm {
        v: x,
        b: None,
        w,
        eps,
    };
    Ok(norm_into_gemv(
        g,
        call.index,
        (call.arg(3)?, out),
        gx,
        &[x_val],
    ))
}

/// The outer `mul` at `call` as `silu_mul(x, u)`; when 8da4w linears read its output and the
/// SiLU's ranges are on (`plan_row_minmax`), as `silu_mul_rows_mm`, by rows, also writing
/// each row's range.
pub(crate) fn build(g: &mut GraphBuilder<'_>, call: &OpCall<'_>, f: SiluMul) -> Result<()> {
    let x = tensor_of(g, call, f.x)?;
    let u = tensor_of(g, call, f.u)?;
    let out = g.tensor_arg(call, 2)?;
    let shader: ShaderId = float_shader("silu_mul", g.shapes().dtype(x), call)?;
    let what = call.what();
    let minmax = crate::ops::quantize::plan_row_minmax(
        g,
        call.index,
        call.args[2],
        out,
        crate::ops::quantize::RangeProducer::GatedSilu,
    )?;
    let row_len = g.shapes().max_dims(out).last().copied().unwrap_or(1);
    let lanes = silu_row_lanes(g, row_len);
    let dispatch = match minmax {
        Some(mm) => {
            let rows_shader = float_shader("silu_mul_rows_mm", g.shapes().dtype(x), call)?;
            let mut d = Dispatch::new(rows_shader, [out, x, u, mm]);
            d.local = Some([lanes, 1, 1]);
            d
        }
        None => Dispatch::new(shader, [out, x, u]),
    };
    // `ETVK_SILU_GEMV=0` keeps the node at M = 1 (comparisons).
    let into_gemv = minmax.is_none()
        && std::env::var("ETVK_SILU_GEMV").map_or(true, |v| v != "0")
        && x_into_gemv(g, call.index, (call.args[2], out), &[f.x, f.u]);
    let source = into_gemv.then(|| XSource::new(GemvX::Silu { gate: x, up: u }));
    // The fused node reads x at the outer mul, past the inner ops where the exporter planned
    // its last read; the linears that compute the SiLU read x and u up to the last of them.
    g.kept_past_plan.push(x);
    if let Some(src) = &source {
        g.kept_past_plan.push(u);
        g.x_sources.insert(call.args[2], src.clone());
        // Whether the node idles at M = 1 depends on the linears built after it: its launch
        // is made again at the first execute, when they have all counted.
        g.deferred_resize = true;
    }
    g.dispatch(call, dispatch, move |s| {
        let dims = s.dims(x).to_vec();
        if s.dims(u) != dims.as_slice() {
            return Err(invalid_arg(format!(
                "{what} (fused silu(x) * u): x is {dims:?} and u {:?}; the fusion needs equal sizes",
                s.dims(u)
            )));
        }
        let numel: usize = dims.iter().product();
        let n = dims.last().copied().unwrap_or(1);
        s.set_dims(out, dims)?;
        // At M = 1 the linears may compute the output themselves: nothing to launch.
        let numel = match &source {
            Some(src) if numel == n && !src.needed_at_m1() => 0,
            _ => numel,
        };
        let Some(mm) = minmax else {
            return Ok(Launch {
                push: Push::new().u32(to_u32(numel, "numel")?).finish(),
                global: Global::Linear(numel as u64),
            });
        };
        let rows = numel.checked_div(n).unwrap_or(0);
        s.set_dims(mm, vec![rows, 2])?;
        Ok(Launch {
            push: Push::new()
                .u32(to_u32(rows, "rows")?)
                .u32(to_u32(n, "N")?)
                .finish(),
            global: folded_grid(rows as u64, [lanes, 1, 1], &what)?,
        })
    })
}

/// `silu_mul_rows_mm`'s local size for rows of `n`: a power of two from 64 to 1024 (and
/// within the device's workgroup limits) with at most 16 values per invocation where that
/// fits (the shader's VPT).
fn silu_row_lanes(g: &GraphBuilder<'_>, n: usize) -> u32 {
    (n.div_ceil(16).next_power_of_two() as u32).clamp(64, row_lanes_cap(g, 1024))
}

/// `ETVK_FUSE=0`: every op built as it stands (comparisons).
pub(crate) fn fusion_off() -> bool {
    std::env::var("ETVK_FUSE").is_ok_and(|v| v == "0")
}

/// Build the add at `call` (`[a, b, alpha, sum]`) and the `et_vk.rms_norm` right after it as
/// one `add_rms_norm` dispatch, when the pattern holds (module doc); false otherwise (the
/// caller builds the add alone).
pub(crate) fn add_rms_norm(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<bool> {
    if fusion_off() || call.args.len() != 4 {
        return Ok(false);
    }
    let graph = g.graph();
    let Some(norm_op) = graph.chain.get(call.index + 1) else {
        return Ok(false);
    };
    let sum_v = call.args[3];
    if norm_op.name != "et_vk.rms_norm.default"
        || norm_op.args.len() != 4
        || norm_op.args[0] != sum_v
    {
        return Ok(false);
    }
    let unit_alpha = match g.value(call.args[2])? {
        GValue::Null => true,
        GValue::Int(x) => *x == 1,
        GValue::Double(x) => *x == 1.0,
        _ => false,
    };
    let tensor = |v: usize| match g.value(v) {
        Ok(GValue::Tensor(t)) => Some(*t),
        _ => None,
    };
    let (Some(a), Some(b), Some(sum), Some(out)) = (
        tensor(call.args[0]),
        tensor(call.args[1]),
        tensor(sum_v),
        tensor(norm_op.args[3]),
    ) else {
        return Ok(false);
    };
    let s = g.shapes();
    let same = [b, sum, out]
        .iter()
        .all(|&t| s.dtype(t) == s.dtype(a) && s.max_dims(t) == s.max_dims(a));
    let dt = s.dtype(a);
    let Ok(shader) = float_shader("add_rms_norm", dt, call) else {
        return Ok(false);
    };
    if !unit_alpha || !same || s.max_dims(a).is_empty() {
        return Ok(false);
    }
    let norm = OpCall {
        name: &norm_op.name,
        node_id: norm_op.node_id,
        index: call.index + 1,
        args: &norm_op.args,
    };
    let w = g.tensor_or_prepack(&norm, 1)?;
    let eps = g.double_arg_or(&norm, 2, 1e-6)? as f32;
    if g.shapes().dtype(w) != dt {
        return Ok(false);
    }
    let what = norm.what();
    g.skip_ops.insert(norm.index);
    let mut shader = shader;
    let mut bindings = vec![out, a, w, b, sum];
    let gx = GemvX::Norm {
        v: a,
        b: Some(b),
        w,
        eps,
    };
    let (a_val, b_val) = (call.args[0], call.args[1]);
    let source = norm_into_gemv(g, norm.index, (norm_op.args[3], out), gx, &[a_val, b_val]);
    let minmax = match source {
        Some(_) => None,
        None => crate::ops::quantize::plan_row_minmax(
            g,
            norm.index,
            norm_op.args[3],
            out,
            crate::ops::quantize::RangeProducer::Norm,
        )?,
    };
    if let Some(mm) = minmax {
        shader = float_shader("add_rms_norm_mm", dt, call)?;
        bindings.push(mm);
    }
    let lanes = norm_lanes(g, g.shapes().max_dims(a).last().copied().unwrap_or(1));
    let mut d = Dispatch::new(shader, bindings);
    d.local = Some([lanes, 1, 1]);
    g.dispatch(call, d, move |s| {
        if s.dims(b) != s.dims(a) {
            return Err(invalid_arg(format!(
                "{what} (fused with the add before it): a is {:?} and b {:?}; the fusion needs equal sizes",
                s.dims(a),
                s.dims(b)
            )));
        }
        let launch = rms_norm_launch(s, a, w, (&[sum, out], minmax), (eps, lanes), &what)?;
        let rows = s.numel(a) / s.dims(a).last().copied().unwrap_or(1).max(1);
        Ok(norm_launch_at(source.as_ref(), rows, true, launch))
    })?;
    Ok(true)
}
