//! 4-bit weight-only linear family over one packed layout (`prepack::q4`):
//!
//! - `et_vk.linear_q4gsw.default` (alias `et_vk.q4gsw_linear.default`),
//!   `[x, weights, weight_scales, group_size, bias|Null, out]`:
//!   `out = x @ W^T + bias`, `W[n][k] = (code(n,k) - 8) * scales[k / group_size][n]`.
//! - `et_vk.linear_q4gsw_backward.default`, `[d_out, weights, weight_scales, group_size, d_x]`:
//!   `d_x = d_out @ W` over the same packed weight (one GPU copy when both are in a graph).
//! - `et_vk.linear_qcs4w.default`, `[x, weight, scales, out]`:
//!   `out[m][n] = scales[n] * sum_k (code(n,k) - 8) * x[m][k]` (one scale group per row).
//!
//! Kernels (fp32 arithmetic) and their selection, re-made by the resize fn whenever M (the
//! product of the leading dims) changes:
//! - forward, M <= 8: `q4_linear_gemv_m{1,2,4,8}` (smallest MT >= M): LANES invocations per
//!   output row stream the packed row once and serve all M activation rows.
//! - forward, M > 8: `q4_linear_tiled_fwd_t64` (64 x 64 tiles), or `_t128` (128 x 128) when
//!   M >= 128, N >= 128 and the device has the ~33 KiB of shared memory it needs.
//! - backward, M <= 8: split N, two dispatches. `q4_linear_bwd_split_m{1,2,4,8}` (smallest
//!   MT >= M): invocation (word column, row slice) sums its slice's rows into a scratch tensor
//!   `partial[S][M][8 * KWO]`; then `q4_linear_bwd_reduce` sums the S slices in a fixed order.
//!   A tiled kernel would give each invocation a whole column of N and leave most of a large
//!   GPU idle (529 us against the forward GEMV's 38 us at N = K = 8192, M = 1, H200).
//! - backward, M > 8: `q4_linear_tiled_bwd_t64` / `_t128` by the forward's rule on (M, K);
//!   the reduce node stays in the graph (dynamic M may return to <= 8) but launches nothing.
//!
//! All grids are 1-D workgroup counts folded over (x, y) by `Global::Linear`, so N, K and M
//! up to 2^20 stay within 65535 workgroups per dimension.
//!
//! Fewer restrictions than ExecuTorch: N and K need no multiple of 4, leading dims are free,
//! x's last dim may be the unpadded K, bias may be padded, qcs4w works at every M.

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::builder::{ConstantInfo, Dispatch, GValue, GraphBuilder, OpCall};
use crate::error::{internal, invalid_program, unsupported};
use crate::graph::{to_u32, Global, Launch, Push, Shapes, TensorId};
use crate::prepack::q4::{self, NibbleOrder};
use crate::registry::{OpEntry, Registry};

const FP32: &[DataType] = &[DataType::Float32];

/// Shared memory of the 128 x 128 tile: `As4[32][33] + Ws4[32][33]` vec4s.
const T128_SHARED_BYTES: u32 = 2 * 32 * (128 / 4 + 1) * 16;

/// Invocations per workgroup of every q4 kernel but the reduce (the manifest's local size).
const LOCAL: u32 = 256;

/// Invocations per workgroup of `q4_linear_bwd_reduce` (the manifest's local size): small, so
/// that its few (M * K) invocations still spread over many compute units.
const REDUCE_LOCAL: u32 = 64;

/// Invocations the split backward aims for: enough loads in flight to stream the weight at
/// memory speed on a large GPU (~1k per compute unit on an H200).
const SPLIT_INVOCATIONS: usize = 131_072;

/// Fewest weight rows per slice of the split backward: fewer would make the partial sums
/// (written and re-read by the reduce) a large share of the traffic.
const SPLIT_MIN_ROWS: usize = 16;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    for name in ["et_vk.linear_q4gsw.default", "et_vk.q4gsw_linear.default"] {
        r.register(OpEntry {
            name,
            build: build_linear_q4gsw,
            dtypes: FP32,
            dynamic_shapes: true,
            note: "x[..., K] @ dequant(W4[N, Kp])^T + bias; per-group scales [G, N'] (gs % 4 == 0); GEMV for M <= 8, tiled GEMM above",
        })?;
    }
    r.register(OpEntry {
        name: "et_vk.linear_q4gsw_backward.default",
        build: build_linear_q4gsw_backward,
        dtypes: FP32,
        dynamic_shapes: true,
        note: "d_x[..., Kp] = d_out[..., N] @ dequant(W4); shares the forward's packed weight",
    })?;
    r.register(OpEntry {
        name: "et_vk.linear_qcs4w.default",
        build: build_linear_qcs4w,
        dtypes: FP32,
        dynamic_shapes: true,
        note: "x[..., K] @ dequant(W4[N, ceil(K/2)], even k high nibble)^T with per-channel scales [N]; every M",
    })
}

/// Packed weight and scales of one op with the geometry the kernels need.
#[derive(Debug, Clone, Copy)]
struct Q4 {
    w: TensorId,
    s: TensorId,
    /// Output features.
    n: usize,
    /// Serialized k per row (`2 * row_bytes`).
    kp: usize,
    /// Packed k per row (`kp` rounded up to 32).
    kpad: usize,
    /// Scale groups per row.
    groups: usize,
    /// Group size in k (multiple of 4).
    gs: usize,
}

/// One kernel of the family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    /// GEMV for M <= MT.
    Gemv(u32),
    /// Tiled GEMM / backward: 64 x 64.
    T64,
    /// 128 x 128 (needs [`T128_SHARED_BYTES`] of shared memory).
    T128,
    /// Backward split over N for M <= MT, plus the reduce dispatch.
    Split(u32),
}

impl Kernel {
    /// (rows of M, output columns) per workgroup tile.
    fn tile(self) -> (usize, usize) {
        match self {
            Kernel::Gemv(mt) | Kernel::Split(mt) => (mt as usize, 0),
            Kernel::T64 => (64, 64),
            Kernel::T128 => (128, 128),
        }
    }
}

/// The smallest MT in {1, 2, 4, 8} with M <= MT (M <= 8).
fn small_mt(m: usize) -> u32 {
    match m {
        0..=1 => 1,
        2 => 2,
        3..=4 => 4,
        _ => 8,
    }
}

/// Forward kernel for M rows and N outputs.
fn forward_kernel(m: usize, n: usize, big_tiles: bool) -> Kernel {
    match m {
        0..=8 => Kernel::Gemv(small_mt(m)),
        _ if big_tiles && m >= 128 && n >= 128 => Kernel::T128,
        _ => Kernel::T64,
    }
}

/// Backward kernel for M rows and `kout` output columns.
fn backward_kernel(m: usize, kout: usize, big_tiles: bool) -> Kernel {
    match m {
        0..=8 => Kernel::Split(small_mt(m)),
        _ if big_tiles && m >= 128 && kout >= 128 => Kernel::T128,
        _ => Kernel::T64,
    }
}

/// Geometry of the split backward for N weight rows and `kout` output columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SplitGeometry {
    /// Packed words per row that hold output columns (`ceil(kout / 8)`); the partial rows
    /// are `8 * kwo` floats long.
    kwo: usize,
    /// Weight rows per slice (a multiple of 4, so the shader's vec4 loads of `d_out` stay
    /// aligned).
    rows: usize,
    /// Slices: `ceil(n / rows)`, all non-empty.
    slices: usize,
}

/// Slices of the split backward: about [`SPLIT_INVOCATIONS`] invocations (one per word
/// column and slice) with at least [`SPLIT_MIN_ROWS`] rows per slice (unless N itself is
/// smaller: then one slice). Independent of M, so the scratch tensor sized at build time
/// fits every M.
fn split_geometry(n: usize, kout: usize) -> SplitGeometry {
    let kwo = kout.div_ceil(8).max(1);
    let n = n.max(1);
    // floor(N / 16) slices at most, so that ceil(N / slices) >= 16.
    let want = SPLIT_INVOCATIONS
        .div_ceil(kwo)
        .clamp(1, (n / SPLIT_MIN_ROWS).max(1));
    let rows = n.div_ceil(want).next_multiple_of(4);
    SplitGeometry {
        kwo,
        rows,
        slices: n.div_ceil(rows),
    }
}

/// The kernels `choose` can pick for M in `0..=max_m` (every M when the graph is dynamic,
/// only `max_m` otherwise), so only those pipelines are built.
fn reachable(max_m: usize, dynamic: bool, choose: impl Fn(usize) -> Kernel) -> Vec<Kernel> {
    let mut ms = vec![max_m];
    if dynamic {
        // `choose` is constant between these breakpoints.
        ms.extend(
            [0, 1, 2, 3, 4, 5, 8, 9, 127, 128]
                .iter()
                .filter(|&&m| m <= max_m),
        );
    }
    let mut out: Vec<Kernel> = Vec::new();
    for m in ms {
        let k = choose(m);
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

fn shader_of(k: Kernel, backward: bool) -> ShaderId {
    match (k, backward) {
        (Kernel::Gemv(1), _) => ShaderId::Q4LinearGemvM1,
        (Kernel::Gemv(2), _) => ShaderId::Q4LinearGemvM2,
        (Kernel::Gemv(4), _) => ShaderId::Q4LinearGemvM4,
        (Kernel::Gemv(_), _) => ShaderId::Q4LinearGemvM8,
        (Kernel::Split(1), _) => ShaderId::Q4LinearBwdSplitM1,
        (Kernel::Split(2), _) => ShaderId::Q4LinearBwdSplitM2,
        (Kernel::Split(4), _) => ShaderId::Q4LinearBwdSplitM4,
        (Kernel::Split(_), _) => ShaderId::Q4LinearBwdSplitM8,
        (Kernel::T64, false) => ShaderId::Q4LinearTiledFwdT64,
        (Kernel::T128, false) => ShaderId::Q4LinearTiledFwdT128,
        (Kernel::T64, true) => ShaderId::Q4LinearTiledBwdT64,
        (Kernel::T128, true) => ShaderId::Q4LinearTiledBwdT128,
    }
}

/// GEMV lanes per row group: about 16 packed words of a row per lane, 8..=64 (>= MT * R,
/// the lanes that finish the sums); the rest of the 256 invocations are row groups. Long rows
/// get 64 lanes so that even N = 8192 keeps ~130k invocations in flight on a large GPU.
fn gemv_lanes(kpad: usize, _mt: u32) -> u32 {
    (kpad / 8 / 16).next_power_of_two().clamp(8, 64) as u32
}

/// Output rows per GEMV workgroup: each lane group owns `8 / MT` rows (q4_linear_gemv.comp).
fn gemv_rows_per_group(kernel: Kernel, kpad: usize) -> usize {
    match kernel {
        Kernel::Gemv(mt) => gemv_shape(kernel, kpad).1 * (4 / mt as usize).max(1),
        _ => 1,
    }
}

/// (lanes per row group, row groups per workgroup) of a GEMV kernel; `(1, 1)` for tiled
/// kernels.
fn gemv_shape(kernel: Kernel, kpad: usize) -> (u32, usize) {
    match kernel {
        Kernel::Gemv(mt) => {
            let lanes = gemv_lanes(kpad, mt);
            (lanes, (LOCAL / lanes) as usize)
        }
        _ => (1, 1),
    }
}

fn big_tiles_ok(g: &GraphBuilder<'_>) -> bool {
    g.caps().max_shared_memory_size >= T128_SHARED_BYTES
}

/// The constant behind arg `i`, or an error naming the op (4-bit weights and their scales
/// are packed at load, so they must be constants).
fn constant_arg(g: &GraphBuilder<'_>, call: &OpCall, i: usize, what: &str) -> Result<ConstantInfo> {
    let v = call.arg(i)?;
    match g.value(v)? {
        GValue::TensorRef(c) => Ok(c.clone()),
        GValue::Tensor(_) => Err(unsupported(format!(
            "{}: {what} (arg {i}, value {v}) is a runtime tensor; 4-bit {what} must be a constant (packed at load)",
            call.what()
        ))),
        other => Err(invalid_program(format!(
            "{}: {what} (arg {i}, value {v}) must be a constant tensor, got {}",
            call.what(),
            crate::builder::gvalue_kind(other)
        ))),
    }
}

/// Check and prepack the 4-bit weight of arg `i`: uint8 `[N, row_bytes]`.
fn prepack_weight(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    i: usize,
    order: NibbleOrder,
) -> Result<(TensorId, usize, usize)> {
    let c = constant_arg(g, call, i, "weights")?;
    if c.dtype != DataType::Uint8 {
        return Err(invalid_program(format!(
            "{}: weights must be uint8 (two 4-bit codes per byte), got {} {:?}",
            call.what(),
            c.dtype.name(),
            c.dims
        )));
    }
    let (n, rb) = match c.dims.as_slice() {
        &[n, rb] if n > 0 && rb > 0 => (n, rb),
        d => {
            return Err(invalid_program(format!(
                "{}: weights must be 2-D [N, K/2] with N, K > 0, got {d:?}",
                call.what()
            )))
        }
    };
    let w = g.prepack_with_gpu(c.value, &q4::weight_layout(order), &q4::weight_gpu(order))?;
    Ok((w, n, rb))
}

fn float_scales_dtype(call: &OpCall, c: &ConstantInfo) -> Result<()> {
    match c.dtype {
        DataType::Float32 | DataType::Float16 => Ok(()),
        d => Err(invalid_program(format!(
            "{}: scales must be float32 or float16, got {} {:?}",
            call.what(),
            d.name(),
            c.dims
        ))),
    }
}

/// Check and prepack q4gsw's weights (arg 1), scales (arg 2) and group size (arg 3).
fn prepack_q4gsw(g: &mut GraphBuilder<'_>, call: &OpCall) -> Result<Q4> {
    let gs = g.int_arg(call, 3)?;
    if gs <= 0 || gs % 4 != 0 {
        return Err(invalid_program(format!(
            "{}: group_size = {gs}; it must be positive and a multiple of 4 (one scale per 4 k in the kernels)",
            call.what()
        )));
    }
    let gs = gs as usize;
    let sc = constant_arg(g, call, 2, "weight_scales")?;
    float_scales_dtype(call, &sc)?;
    let (w, n, rb) = prepack_weight(g, call, 1, NibbleOrder::EvenLow)?;
    let kp = 2 * rb;
    let (groups, n_pad) = match sc.dims.as_slice() {
        &[gr, np] if gr > 0 => (gr, np),
        d => {
            return Err(invalid_program(format!(
                "{}: weight_scales must be 2-D [G, N'] (per-group scales, transposed), got {d:?}",
                call.what()
            )))
        }
    };
    if n_pad < n {
        return Err(invalid_program(format!(
            "{}: weight_scales {:?} cover N' = {n_pad} outputs, fewer than the weights' N = {n}",
            call.what(),
            sc.dims
        )));
    }
    if (groups - 1) * gs >= kp {
        return Err(invalid_program(format!(
            "{}: weight_scales have G = {groups} groups of group_size {gs}, but the weights [N = {n}, {rb}] hold only Kp = {kp} columns (need (G - 1) * group_size < Kp)",
            call.what()
        )));
    }
    let s = g.prepack(sc.value, &q4::group_scales_layout(n, groups))?;
    Ok(Q4 {
        w,
        s,
        n,
        kp,
        kpad: q4::padded_k(rb),
        groups,
        gs,
    })
}

/// x (arg `i`): fp32 with last dim in `1..=kmax`; returns (tensor, last dim).
fn activation(
    g: &GraphBuilder<'_>,
    call: &OpCall,
    i: usize,
    name: &str,
    kmax: usize,
    rule: &str,
) -> Result<(TensorId, usize)> {
    let x = g.tensor_arg(call, i)?;
    let s = g.shapes();
    match s.dtype(x) {
        DataType::Float32 => {}
        DataType::Float16 => {
            return Err(unsupported(format!(
                "{}: {name} is float16; the 4-bit kernels compute in float32 (export without force_fp16)",
                call.what()
            )))
        }
        d => {
            return Err(invalid_program(format!(
                "{}: {name} must be float32, got {}",
                call.what(),
                d.name()
            )))
        }
    }
    let dims = s.max_dims(x);
    match dims.last() {
        Some(&k) if k >= 1 && k <= kmax => Ok((x, k)),
        _ => Err(invalid_program(format!(
            "{}: {name} has sizes {dims:?}; its last dim must be in 1..={kmax} ({rule})",
            call.what()
        ))),
    }
}

/// The output (arg `i`): fp32 with max sizes `lead ++ [cols]`.
fn output(
    g: &GraphBuilder<'_>,
    call: &OpCall,
    i: usize,
    lead: &[usize],
    cols: Option<usize>,
) -> Result<(TensorId, usize)> {
    let out = g.tensor_arg(call, i)?;
    let s = g.shapes();
    if s.dtype(out) != DataType::Float32 {
        return Err(invalid_program(format!(
            "{}: output must be float32, got {}",
            call.what(),
            s.dtype(out).name()
        )));
    }
    let od = s.max_dims(out);
    let ok_lead = od.len() == lead.len() + 1 && &od[..lead.len()] == lead;
    let last = od.last().copied().unwrap_or(0);
    match cols {
        Some(c) if ok_lead && last == c => Ok((out, c)),
        None if ok_lead && last >= 1 => Ok((out, last)),
        _ => Err(invalid_program(format!(
            "{}: output sizes {od:?} are inconsistent with the input's leading dims {lead:?} and {}",
            call.what(),
            match cols {
                Some(c) => format!("N = {c}"),
                None => "a positive last dim".into(),
            }
        ))),
    }
}

/// Optional bias (arg `i`): Null, a constant (any float dtype, >= N values; packed to fp32
/// `[N]`), or an fp32 tensor with >= N elements (the first N are read).
fn bias_arg(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    i: usize,
    n: usize,
) -> Result<Option<TensorId>> {
    let v = call.arg(i)?;
    match g.value(v)?.clone() {
        GValue::Null => Ok(None),
        GValue::TensorRef(c) => {
            let numel: usize = c.dims.iter().product();
            if !matches!(c.dtype, DataType::Float32 | DataType::Float16) || numel < n {
                return Err(invalid_program(format!(
                    "{}: bias must be float with at least N = {n} values ([N] or padded), got {} {:?}",
                    call.what(),
                    c.dtype.name(),
                    c.dims
                )));
            }
            g.prepack(v, &q4::bias_layout(n)).map(Some)
        }
        GValue::Tensor(t) => {
            let s = g.shapes();
            if s.dtype(t) != DataType::Float32 || s.max_dims(t).iter().product::<usize>() < n {
                return Err(invalid_program(format!(
                    "{}: bias must be float32 with at least N = {n} values, got {} {:?}",
                    call.what(),
                    s.dtype(t).name(),
                    s.max_dims(t)
                )));
            }
            Ok(Some(t))
        }
        other => Err(invalid_program(format!(
            "{}: bias (arg {i}) must be a tensor or None, got {}",
            call.what(),
            crate::builder::gvalue_kind(&other)
        ))),
    }
}

/// Leading sizes and M of `x`'s current dims, checking the last dim kept its value.
fn current_rows(s: &Shapes, x: TensorId, k: usize, name: &str) -> Result<(Vec<usize>, usize)> {
    let xd = s.dims(x);
    match xd.split_last() {
        Some((&last, lead)) if last == k => Ok((lead.to_vec(), lead.iter().product())),
        _ => Err(invalid_program(format!(
            "{name} sizes {xd:?} must end in {k} (the last dim is fixed by the weights)"
        ))),
    }
}

/// Push constants shared by every kernel (8 u32s).
fn push(m: usize, q: &Q4, k: usize, has_bias: bool, kernel: Kernel) -> Result<Vec<u8>> {
    // The GEMV counts uvec4 chunks per row, the tiled kernels u32 words.
    let row_units = match kernel {
        Kernel::Gemv(_) => q.kpad / 32,
        _ => q.kpad / 8,
    };
    Ok(Push::new()
        .u32(to_u32(m, "M")?)
        .u32(to_u32(q.n, "N")?)
        .u32(to_u32(k, "K")?)
        .u32(to_u32(row_units, "packed row length")?)
        .u32(to_u32(q.groups, "scale groups")?)
        .u32(to_u32(q.gs, "group_size")?)
        .u32(has_bias as u32)
        .u32(group_word_shift(q.gs))
        .finish())
}

/// `log2(group_size / 8)` when a group is a power-of-two number of 8-code words (the group
/// of word w is then `w >> shift`, no division in the GEMV's inner loop), else `u32::MAX`.
fn group_word_shift(gs: usize) -> u32 {
    if gs.is_multiple_of(8) && (gs / 8).is_power_of_two() {
        (gs / 8).trailing_zeros()
    } else {
        u32::MAX
    }
}

/// Workgroups of `kernel` for M rows and `cols` output columns (folded by the runtime).
fn global(kernel: Kernel, m: usize, cols: usize, rows_per_gemv_group: usize) -> Result<Global> {
    if m == 0 || cols == 0 {
        return Ok(Global::Linear(0));
    }
    let groups = match kernel {
        Kernel::Gemv(_) => cols.div_ceil(rows_per_gemv_group),
        Kernel::Split(_) => return Err(internal("the split backward is launched by split_launch")),
        k => {
            let (bm, bc) = k.tile();
            m.div_ceil(bm)
                .checked_mul(cols.div_ceil(bc))
                .ok_or_else(|| unsupported(format!("M = {m} x {cols} columns: too many tiles")))?
        }
    };
    Ok(Global::Linear(groups as u64 * LOCAL as u64))
}

/// Launch of `q4_linear_bwd_split_m*` for M rows: one invocation per (word column, slice).
/// Push constants as [`push`]'s, with the rows per slice in place of `has_bias`.
fn split_launch(m: usize, q: &Q4, kout: usize, geo: SplitGeometry) -> Result<Launch> {
    let push = Push::new()
        .u32(to_u32(m, "M")?)
        .u32(to_u32(q.n, "N")?)
        .u32(to_u32(kout, "K")?)
        .u32(to_u32(q.kpad / 8, "packed row length")?)
        .u32(to_u32(q.groups, "scale groups")?)
        .u32(to_u32(q.gs, "group_size")?)
        .u32(to_u32(geo.rows, "rows per slice")?)
        .u32(group_word_shift(q.gs))
        .finish();
    let invocations = if m == 0 || kout == 0 {
        0
    } else {
        geo.kwo as u64 * geo.slices as u64
    };
    Ok(Launch {
        push,
        global: Global::Linear(invocations),
    })
}

/// Launch of `q4_linear_bwd_reduce`: M * kout outputs, each the sum of `geo.slices` partials.
fn reduce_launch(m: usize, kout: usize, geo: SplitGeometry) -> Result<Launch> {
    let stride = 8 * geo.kwo;
    let total = m
        .checked_mul(kout)
        .ok_or_else(|| unsupported(format!("M = {m} x K = {kout} outputs overflow")))?;
    Ok(Launch {
        push: Push::new()
            .u32(to_u32(total, "M * K")?)
            .u32(to_u32(kout.max(1), "K")?)
            .u32(to_u32(stride, "partial row stride")?)
            .u32(to_u32(geo.slices, "slices")?)
            .u32(to_u32(m * stride, "partial slice size")?)
            .finish(),
        global: Global::Linear(total as u64),
    })
}

/// Shared part of the forward ops: dispatch x [.., k] -> out [.., N].
fn forward(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    x: TensorId,
    k: usize,
    out: TensorId,
    bias: Option<TensorId>,
    q: Q4,
) -> Result<()> {
    let big = big_tiles_ok(g);
    let max_m: usize = {
        let d = g.shapes().max_dims(x);
        d[..d.len() - 1].iter().product()
    };
    let n = q.n;
    let kernels = reachable(max_m, g.dynamic, |m| forward_kernel(m, n, big));
    let bias_t = match bias {
        Some(b) => b,
        None => g.dummy()?,
    };
    let variants = kernels
        .iter()
        .map(|&kn| {
            let mut d = Dispatch::new(shader_of(kn, false), [out, x, q.w, q.s, bias_t]);
            d.local = Some([LOCAL, 1, 1]);
            if let Kernel::Gemv(_) = kn {
                let (lanes, rows) = gemv_shape(kn, q.kpad);
                d.spec = vec![lanes, rows as u32];
            }
            d
        })
        .collect();
    g.dispatch_select(call, variants, move |s| {
        let (mut od, m) = current_rows(s, x, k, "x")?;
        if let Some(b) = bias {
            if s.numel(b) < n {
                return Err(invalid_program(format!(
                    "bias sizes {:?} hold fewer than N = {n} values",
                    s.dims(b)
                )));
            }
        }
        od.push(n);
        s.set_dims(out, od)?;
        let kn = forward_kernel(m, n, big);
        let idx = kernels
            .iter()
            .position(|&c| c == kn)
            .ok_or_else(|| internal(format!("no prepared kernel {kn:?} for M = {m}")))?;
        Ok((
            idx,
            Launch {
                push: push(m, &q, k, bias.is_some(), kn)?,
                global: global(kn, m, n, gemv_rows_per_group(kn, q.kpad))?,
            },
        ))
    })
}

fn build_linear_q4gsw(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(6)?;
    let q = prepack_q4gsw(g, call)?;
    let kmax = q.kp.min(q.groups * q.gs);
    let (x, k) = activation(
        g,
        call,
        0,
        "x",
        kmax,
        &format!(
            "K may not exceed the weights' Kp = {} nor G * group_size = {}",
            q.kp,
            q.groups * q.gs
        ),
    )?;
    let lead = {
        let d = g.shapes().max_dims(x);
        d[..d.len() - 1].to_vec()
    };
    let (out, _) = output(g, call, 5, &lead, Some(q.n))?;
    let bias = bias_arg(g, call, 4, q.n)?;
    forward(g, call, x, k, out, bias, q)
}

fn build_linear_qcs4w(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(4)?;
    let sc = constant_arg(g, call, 2, "scales")?;
    float_scales_dtype(call, &sc)?;
    let (w, n, rb) = prepack_weight(g, call, 1, NibbleOrder::EvenHigh)?;
    if sc.dims.iter().product::<usize>() != n || sc.dims.len() > 2 {
        return Err(invalid_program(format!(
            "{}: scales must be per-channel [N = {n}], got {:?}",
            call.what(),
            sc.dims
        )));
    }
    let s = g.prepack(sc.value, &q4::channel_scales_layout(n))?;
    let kpad = q4::padded_k(rb);
    // One group spanning the packed row: the kernels apply scales[n] to every k.
    let q = Q4 {
        w,
        s,
        n,
        kp: 2 * rb,
        kpad,
        groups: 1,
        gs: kpad,
    };
    let (x, k) = activation(
        g,
        call,
        0,
        "x",
        q.kp,
        &format!("K may not exceed 2 * weight.shape[1] = {}", q.kp),
    )?;
    let lead = {
        let d = g.shapes().max_dims(x);
        d[..d.len() - 1].to_vec()
    };
    let (out, _) = output(g, call, 3, &lead, Some(n))?;
    forward(g, call, x, k, out, None, q)
}

fn build_linear_q4gsw_backward(g: &mut GraphBuilder<'_>, call: &OpCall<'_>) -> Result<()> {
    call.expect_args(5)?;
    let q = prepack_q4gsw(g, call)?;
    let (dy, _) = activation(g, call, 0, "d_out", q.n, "it must equal the weights' N")?;
    let lead = {
        let d = g.shapes().max_dims(dy);
        if d.last() != Some(&q.n) {
            return Err(invalid_program(format!(
                "{}: d_out has sizes {d:?}; its last dim must be the weights' N = {}",
                call.what(),
                q.n
            )));
        }
        d[..d.len() - 1].to_vec()
    };
    let (dx, kout) = output(g, call, 4, &lead, None)?;
    if kout > q.kp {
        return Err(invalid_program(format!(
            "{}: d_x's last dim {kout} exceeds the weights' Kp = {}",
            call.what(),
            q.kp
        )));
    }
    let big = big_tiles_ok(g);
    let max_m: usize = lead.iter().product();
    let kernels = reachable(max_m, g.dynamic, |m| backward_kernel(m, kout, big));
    let n = q.n;
    let geo = split_geometry(n, kout);
    // Scratch for the split path, sized for the largest M that takes it (the partials of
    // M rows are packed densely, so smaller M use a prefix).
    let split_m = max_m.clamp(1, 8);
    let partial = if kernels.iter().any(|k| matches!(k, Kernel::Split(_))) {
        let floats = geo.slices * split_m * 8 * geo.kwo;
        Some(g.new_tensor(
            DataType::Float32,
            vec![floats],
            None,
            format!("{}: split-N partial sums", call.what()),
        )?)
    } else {
        None
    };
    let variants = kernels
        .iter()
        .map(|&kn| {
            let out = match (kn, partial) {
                (Kernel::Split(_), Some(p)) => p,
                _ => dx,
            };
            let mut d = Dispatch::new(shader_of(kn, true), [out, dy, q.w, q.s]);
            d.local = Some([LOCAL, 1, 1]);
            d
        })
        .collect();
    g.dispatch_select(call, variants, move |s| {
        let (mut od, m) = current_rows(s, dy, n, "d_out")?;
        od.push(kout);
        s.set_dims(dx, od)?;
        let kn = backward_kernel(m, kout, big);
        let idx = kernels
            .iter()
            .position(|&c| c == kn)
            .ok_or_else(|| internal(format!("no prepared kernel {kn:?} for M = {m}")))?;
        let launch = match kn {
            Kernel::Split(_) => split_launch(m, &q, kout, geo)?,
            _ => Launch {
                push: push(m, &q, kout, false, kn)?,
                global: global(kn, m, kout, 1)?,
            },
        };
        Ok((idx, launch))
    })?;
    let Some(partial) = partial else {
        // M > 8 whatever the inputs: only the tiled kernels run.
        return Ok(());
    };
    // The reduce is a one-variant dispatch_select so that profiles name it `op/kernel` like
    // the first node; with a tiled kernel selected it launches no workgroups.
    let mut reduce = Dispatch::new(ShaderId::Q4LinearBwdReduce, [dx, partial]);
    reduce.local = Some([REDUCE_LOCAL, 1, 1]);
    g.dispatch_select(call, vec![reduce], move |s| {
        let (_, m) = current_rows(s, dy, n, "d_out")?;
        let launch = match backward_kernel(m, kout, big) {
            Kernel::Split(_) => reduce_launch(m, kout, geo)?,
            _ => Launch {
                push: reduce_launch(0, kout, geo)?.push,
                global: Global::Linear(0),
            },
        };
        Ok((0, launch))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_selection_and_reachability() {
        assert_eq!(forward_kernel(1, 64, true), Kernel::Gemv(1));
        assert_eq!(forward_kernel(3, 64, true), Kernel::Gemv(4));
        assert_eq!(forward_kernel(8, 64, true), Kernel::Gemv(8));
        assert_eq!(forward_kernel(9, 4096, true), Kernel::T64);
        assert_eq!(forward_kernel(512, 4096, true), Kernel::T128);
        assert_eq!(forward_kernel(512, 4096, false), Kernel::T64);
        assert_eq!(backward_kernel(1, 4096, true), Kernel::Split(1));
        assert_eq!(backward_kernel(3, 4096, true), Kernel::Split(4));
        assert_eq!(backward_kernel(8, 4096, true), Kernel::Split(8));
        assert_eq!(backward_kernel(9, 4096, true), Kernel::T64);
        let r = reachable(64, true, |m| forward_kernel(m, 64, true));
        assert_eq!(
            r,
            vec![
                Kernel::T64,
                Kernel::Gemv(1),
                Kernel::Gemv(2),
                Kernel::Gemv(4),
                Kernel::Gemv(8)
            ]
        );
        assert_eq!(
            reachable(5, false, |m| forward_kernel(m, 64, true)),
            vec![Kernel::Gemv(8)]
        );
        // Every M up to the bound maps to a reachable kernel.
        for max_m in [0usize, 1, 7, 9, 130, 300] {
            let r = reachable(max_m, true, |m| backward_kernel(m, 256, true));
            for m in 0..=max_m {
                assert!(r.contains(&backward_kernel(m, 256, true)), "{max_m} {m}");
            }
            let r = reachable(max_m, true, |m| forward_kernel(m, 256, true));
            for m in 0..=max_m {
                assert!(r.contains(&forward_kernel(m, 256, true)), "{max_m} {m}");
            }
        }
        assert_eq!(gemv_lanes(32, 1), 8);
        assert_eq!(gemv_lanes(4096, 1), 32);
        assert_eq!(gemv_lanes(8192, 8), 64);
    }

    #[test]
    fn grids_fold_under_the_workgroup_limit() {
        // N = K = M = 2^20: the linear counts fold into x * y with x <= 65535.
        let q = 1usize << 20;
        for (kn, cols) in [(Kernel::Gemv(1), q), (Kernel::T64, q)] {
            let g = global(kn, q, cols, 8).unwrap();
            let Global::Linear(count) = g else { panic!() };
            let groups = count / LOCAL as u64;
            assert!(groups.div_ceil(65535) <= 65535, "{kn:?}: {groups}");
        }
        // The split backward and its reduce at M = 8 (their largest M) and N = K = 2^20.
        let qq = Q4 {
            w: TensorId(0),
            s: TensorId(0),
            n: q,
            kp: q,
            kpad: q,
            groups: 1,
            gs: q,
        };
        let geo = split_geometry(q, q);
        for (launch, local) in [
            (split_launch(8, &qq, q, geo).unwrap(), LOCAL),
            (reduce_launch(8, q, geo).unwrap(), REDUCE_LOCAL),
        ] {
            let Global::Linear(count) = launch.global else {
                panic!()
            };
            let groups = count.div_ceil(local as u64);
            assert!(groups.div_ceil(65535) <= 65535, "{groups}");
        }
    }

    #[test]
    fn split_geometry_covers_n_in_aligned_slices() {
        // The H200 case: 1024 words per row, 128 slices of 64 rows = 131072 invocations.
        assert_eq!(
            split_geometry(8192, 8192),
            SplitGeometry {
                kwo: 1024,
                rows: 64,
                slices: 128
            }
        );
        // The test case N = 1000, K = 200: many short slices.
        assert_eq!(
            split_geometry(1000, 200),
            SplitGeometry {
                kwo: 25,
                rows: 20,
                slices: 50
            }
        );
        for n in [
            1usize,
            3,
            5,
            16,
            17,
            37,
            100,
            1000,
            4097,
            8192,
            28672,
            1 << 20,
        ] {
            for kout in [1usize, 7, 8, 200, 4096, 8192, 28672, 1 << 20] {
                let g = split_geometry(n, kout);
                assert_eq!(g.kwo, kout.div_ceil(8));
                assert_eq!(g.rows % 4, 0, "{n} {kout}");
                assert!(g.rows >= SPLIT_MIN_ROWS || g.slices == 1, "{n} {kout}");
                // Every row in exactly one non-empty slice.
                assert!(
                    g.slices * g.rows >= n && (g.slices - 1) * g.rows < n,
                    "{n} {kout}"
                );
                // Enough invocations unless N runs out of 16-row slices.
                assert!(
                    g.kwo * g.slices >= SPLIT_INVOCATIONS / 2 || g.rows <= 2 * SPLIT_MIN_ROWS,
                    "{n} {kout}: {g:?}"
                );
            }
        }
    }
}
