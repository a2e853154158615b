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
//! - forward, M = 1 and rows of >= 128 uvec4 chunks (K >= 4096): `q4_linear_gemv_wide_m1`
//!   (the workgroup splits K over blocks of 16 rows, uvec4 weight loads); its int8 forms
//!   (devices with packed int8 dot products, scale groups of a power-of-two number of 32-code
//!   chunks) turn each chunk's activations into three int8 limbs and a row's chunk into 24
//!   packed dot products:
//!   - at M = 1, where its workgroup fits: `q4_linear_gemv_half`, half a chunk per
//!     invocation over rows of <= 256 chunks (K <= 8192; <= 512 chunks where the device
//!     takes workgroups of 1024 and their shared memory, `select::half_gemv_max_chunks`),
//!     one invocation per half chunk in whole subgroups of 32 (`select::half_gemv_local`),
//!     a wave of `PERSISTENT_GEMV_TARGET` (264) workgroups of 512 (as many invocations in
//!     more, smaller ones; one per SM when wider) walking the blocks of 8 rows; longer rows
//!     `q4_linear_gemv_half_sliced`, the same over slices of at most 256 chunks (one
//!     workgroup per slice and block set; the last of a set to finish adds the slices' row
//!     sums in slice order); an 8da4w
//!     linear (`linear_dq8ca_q4gsw`) whose choose_qparams node took the fake-quant over runs
//!     them as `_dq` / `_sliced_dq`, quantizing x per row itself (the sliced form reads
//!     the whole row for its min and max; `_dq_mm*` read the range the norm or SiLU before
//!     wrote; `_dq*_x16` take a force_fp16 program's fp16 x), and that node then launches
//!     nothing at M = 1 (ops/quantize.rs); with an fp16 output the M = 1 forms write it
//!     (`_f16out`, `_dq*_x16`) and the conversion node after them idles;
//!   - rows of <= 256 chunks otherwise (<= 512 where the half-chunk GEMV takes them whole,
//!     below the limbs pre-pass: `select::persist_max_chunks`): `_dp4_persist`, one chunk per invocation in whole
//!     subgroups (`select::persist_gemv_local`), its limbs made once per workgroup, one wave
//!     of 264 workgroups of 256 (as many invocations in more, smaller ones);
//!   - other longer rows: `_dp4` (limbs made per workgroup), or `_dp4_pre` with the limbs
//!     from a `q4_act_limbs` node once N * Kpad >= 2^27.
//!
//!   The int8 forms serve M <= 8 too: their workgroups split over the activation rows (the
//!   persistent form's launch is divided among the rows; the others take a workgroup per row
//!   block and row, the rows of a block next to each other), each row's pass over the weight
//!   shared through L2.
//!
//!   Compile spec `etvk_q4_gemv` = `lanes|wide|wide_dp4|wide_dp4_pre|wide_dp4_persist|half`
//!   forces a choice.
//! - forward, M = 8 (and M = 2..8 where compile spec `etvk_q4_gemv` = `fma` forces it):
//!   `q4_linear_gemv_fma_m{2,4,8}`, fp32 FMAs in one pass over the weights for every row, a
//!   lane per packed word with its activations of every row in registers, each row's sums
//!   by a subgroup butterfly (shuffles, subgroups of 8..=128), rows of more than 256 words in
//!   slices summed by the last workgroup; taken before the tensor-core forward below only on
//!   rows of K <= 4096 (H100: 1.07-2.1x its speed there, slower on longer rows; session 32),
//!   on every row length where that forward does not run. `etvk_q4_fma` = `off` turns it off;
//!   `etvk_q4_gemv` = `fma_w2` forces its two-words-per-lane form at M <= 4
//!   (`q4_linear_gemv_fma_w2_m{2,4}`, one uvec2 load per row; groups of >= 16 codes).
//! - forward, M <= 8 otherwise (short rows, or no int8 form): `q4_linear_gemv_m{1,2,4,8}`
//!   (smallest MT >= M): LANES
//!   invocations per output row stream the packed row once and serve all M activation rows.
//! - forward, M >= 8 on devices with NV int8 cooperative matrices (16x8x32, subgroups of
//!   32) and scale groups of whole chunks: `q4_linear_mma_f{1,2,4}` on the tensor cores, exact
//!   int8 products of the codes and three int8 limbs of each activation chunk
//!   (`q4_mma_limbs`, a node of its own), scaled in fp32 per chunk; 128 weight rows x 8,
//!   16 or 32 activation rows per workgroup, split-K slices summed by `q4_linear_reduce`
//!   when the strips are too few (`select::mma_split`). With `ETVK_Q4_MMA_REG=1`
//!   `q4_linear_mma_reg_f{1,2,4}` runs instead where the driver's fragments fit it and its
//!   own self-check passed (`BackendInner::int8_mma_reg_spec`): the same arithmetic with the
//!   MMA operands built in registers (weight chunks transposed within quads of invocations
//!   by shuffles, A filled in the element order a probe learned on the device, B by
//!   `coopMatLoadNV` from the limbs, shared by TT 16-row tiles per subgroup: strips of 128 x
//!   TT rows, `select::mma_rows_per_workgroup`; no shared memory, no barrier), 1.2-2.2x
//!   slower than the tiles on an H100 (sessions 43-44), hence not the default; `etvk_q4_mma` =
//!   `emulated_reg` runs its emulated form. Compile spec `etvk_q4_mma` = `off` (or
//!   `ETVK_Q4_MMA=0`) keeps the portable kernels below; `emulated` runs the same kernels with
//!   plain arithmetic for the MMAs (`q4_linear_mma_emu_f*`) on any device (lavapipe's tests).
//! - forward, M >= 128 where the f16 tensor-core backward below runs
//!   (same self-check): `q4_linear_fwd_mma_{t32x128,t128}`, that kernel with the W tile
//!   transposed (x's rows as scaled fp16 hi / lo pairs from a `q4_bwd_rowscale` node, W's
//!   range from the scales' prepacked peaks, whole tiles, the bias added at the store); H200
//!   at M = 512: 1.14-1.18x the int8 kernel's speed (docs/performance.md, session 14). An x
//!   that came in as fp16 takes its `_x16` form: the scaled rows are exact in one fp16, two
//!   MMAs per fragment pair instead of three (1.21-1.26x). So does an 8da4w linear whose
//!   choose_qparams node was fused (ops/quantize.rs): a `q4_dq_rowscale` node quantizes the
//!   raw x per row as that node does and writes the integers q - zp (|q - zp| <= 255, exact
//!   in fp16) with 1 / scale as the row scale, in place of the fake-quantized x's pairs
//!   (`ETVK_DQ_ROWS=0` keeps the pairs; comparisons). Where every 16 k lie in one
//!   scale group (group size a multiple of 16, or one group per row, as linear_qcs4w's) the
//!   `_c_` form keeps the weight scales out of the MMAs: the W tile holds the codes - 8
//!   alone (exact in fp16) and each 16-k product is scaled by its column's scale as it is
//!   accumulated, two MMAs per fragment pair (one with fp16 x) and no W lo tile; H200:
//!   1.14-1.21x the hi / lo form at M = 256..2048 (session 15). Where its tiles fall short
//!   of a wave the `_c_` form splits x's row into slices (`_split`, `select::fwd_mma_split`); the
//!   last workgroup of each tile adds their partial sums and the bias (M = 128: 1.20-1.38x
//!   the int8 kernel). `etvk_q4_gemv` = `f16` / `f16_emulated` forces the f16 forward (emulated:
//!   plain arithmetic for the MMAs) from M = 9; `ETVK_Q4_FWD_CODES=0` turns the `_c_` form
//!   off (benchmarks).
//! - forward, M > 8: `q4_linear_tiled_fwd_{tile}` over output tiles of M x N, reducing over
//!   K: `t32x128` (32 x 128) for M <= 32, where a 64-row tile would spend half its FMAs on
//!   rows past M; `t128` (128 x 128) when M >= 128, N >= 128 and the device has the ~33 KiB
//!   of shared memory it needs; `t64` (64 x 64) otherwise. `t64`, `t128` and the `t32x128`
//!   backward step the reduction 16 at a time through two shared buffers, the next step's
//!   loads in flight during the current step's FMAs (`DBUF` in the shader).
//! - backward, M = 1 or 2 and rows of >= 16 chunks (K >= 512):
//!   `q4_linear_bwd_wide_m{1,2}_c{8,16,32}`,
//!   one dispatch: a lane per uvec4 chunk column (at M = 2 both rows share each code's
//!   decode), column blocks of CW chunks, the rows cut into slices whose partial sums the
//!   last workgroup of each column block to finish adds up in order (counters in a zeroed
//!   tensor, restored by that workgroup); with one slice (short N) each workgroup writes d_x
//!   directly. CW by `widest_bwd_cw`; two or three workgroups per SM
//!   by `wide_bwd_target`. At M = 1 with groups of whole chunks the codes are decoded as
//!   fp16 subnormals (`q4_linear_bwd_wide_f16_m1_*`) where the device passes that decode's
//!   self-check (`ops/q4_wide_check.rs`), with 64 touch invocations that pull the
//!   workgroup's weights into L2 ahead of its row groups (`_f16t_m1_*`) at launches of two
//!   workgroups per SM (`WideDecode`). Compile spec `etvk_q4_bwd` =
//!   `split|wide[_c8|_c16|_c32][_magic|_f16|_f16t]` forces a choice.
//! - backward, M = 3..8 over long rows whose scale groups are whole chunks:
//!   `q4_linear_bwd_staged_m{4,8}`, stages of 128 rows x 8 chunks through shared memory, one
//!   dispatch like the wide kernel (`etvk_q4_bwd` = `split` turns it off, with the wide ones).
//! - backward, M <= 8 otherwise: split N, two dispatches. `q4_linear_bwd_split_m{1,2,4,8}` (smallest
//!   MT >= M): invocation (word column, row slice) sums its slice's rows into a scratch tensor
//!   `partial[S][M][8 * KWO]`; then `q4_linear_reduce` sums the S slices in a fixed order.
//!   A tiled kernel would give each invocation a whole column of N and leave most of a large
//!   GPU idle (529 us against the forward GEMV's 38 us at N = K = 8192, M = 1, H200).
//! - backward, M > 8: `q4_linear_tiled_bwd_{tile}` by the forward's rule on (M, K) (tiles
//!   over M x K, reducing over N); where NV f16 16x8x16 cooperative matrices exist,
//!   `q4_linear_bwd_mma_{t32x128,t128}` instead (fp16 hi / lo MMAs of d_out and the
//!   dequantized weight, three per fragment pair, f32 accumulate), 32 x 128 tiles up to
//!   M = 64 in slices of at most 2048 rows (summed by the last workgroup of each tile), 128 x
//!   128 above. A `q4_bwd_rowscale` node scales each d_out row, per slice, by a power of two
//!   and splits it into fp16 hi / lo pairs once (the kernel copies them into its tiles); W's
//!   power of two per workgroup comes from the weight scales' peaks per 32 rows and group,
//!   prepacked with the scales (`prepack::q4::group_scale_peaks_layout`).
//! - split-K, both directions, M > 8: when the tiles are too few to fill a large GPU (see
//!   `select::split_k`: M = 32 at N = 8192 gives 64 tiles of 32 x 128 for 132 SMs, each walking all
//!   8192 columns of the reduction), the `_split` variant of the tiled kernel cuts the
//!   reduction into S slices (multiples of 32 columns) and writes `partial[S][M][C]` (fp32);
//!   `q4_linear_reduce` then sums the slices in a fixed order (deterministic) and adds the
//!   forward's bias.
//!
//! Each op is at most two dispatch nodes: node 1 selects among every kernel reachable for its
//! M range, node 2 (`q4_linear_reduce`, present when some reachable M splits) launches no
//! workgroups when the kernel of the current M writes its output directly. The scratch tensor
//! is sized at build time for the largest partial array any reachable M needs.
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
use crate::ops::constant_arg;
use crate::prepack::q4::{self, NibbleOrder};
use crate::registry::{OpEntry, Registry};

mod backward;
mod forward;
mod select;
pub(crate) use backward::bwd_pair_words;
use backward::*;
pub(crate) use forward::limbs_launch;
use forward::*;
use select::*;
pub(crate) use select::{
    check_compile_specs, BWD_MMA_SHAPE, BWD_MMA_T128_SHARED_BYTES, FWD_MMA_T128_SHARED_BYTES,
    MMA_SHAPE,
};

/// The longest weight rows, in 32-code chunks, that the M = 1 half-chunk GEMV takes in one
/// workgroup on a device (longer rows go in slices of at most 256 chunks summed by the
/// kernel; tests, benchmarks).
pub use select::half_gemv_max_chunks as half_gemv_row_chunks;

/// Activation / output dtypes: fp16 ones are converted to fp32 around the fp32 kernels.
const FLOATS: &[DataType] = &[DataType::Float32, DataType::Float16];

/// Shared memory of the 128 x 128 tile: `As4[32][33] + Ws4[32][33]` vec4s.
const T128_SHARED_BYTES: u32 = 2 * 32 * (128 / 4 + 1) * 16;

/// Invocations per workgroup of every q4 kernel but the reduce (the manifest's local size).
const LOCAL: u32 = 256;

/// Invocations per workgroup of `q4_linear_reduce` (the manifest's local size): small, so
/// that its few (M * K) invocations still spread over many compute units.
const REDUCE_LOCAL: u32 = 64;

/// Invocations the split backward aims for: enough loads in flight to stream the weight at
/// memory speed on a large GPU (~1k per compute unit on an H200).
const SPLIT_INVOCATIONS: usize = 131_072;

/// Fewest weight rows per slice of the split backward: fewer would make the partial sums
/// (written and re-read by the reduce) a large share of the traffic.
const SPLIT_MIN_ROWS: usize = 16;

/// Reduction columns per step of the tiled kernels (`BR` in q4_linear_tiled.comp): split-K
/// slices are multiples of it, so no step straddles two slices and no packed word is split.
const TILE_BR: usize = 32;

/// Fewest reduction columns per split-K slice (8 steps of [`TILE_BR`]): shorter slices would
/// spend a large share of each workgroup on its prologue and partial-tile store.
const SPLIT_K_MIN_LEN: usize = 256;

/// Largest M of the 32 x 128 tile.
const T32_MAX_M: usize = 32;

/// Register the family.
pub fn register_all(r: &mut Registry) -> Result<()> {
    for name in ["et_vk.linear_q4gsw.default", "et_vk.q4gsw_linear.default"] {
        r.register(OpEntry {
            name,
            build: build_linear_q4gsw,
            dtypes: FLOATS,
            dynamic_shapes: true,
            note: "x[..., K] @ dequant(W4[N, Kp])^T + bias; per-group scales [G, N'] (gs % 4 == 0); GEMV for M <= 8, tiled GEMM above",
        })?;
    }
    r.register(OpEntry {
        name: "et_vk.linear_q4gsw_backward.default",
        build: build_linear_q4gsw_backward,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "d_x[..., Kp] = d_out[..., N] @ dequant(W4); shares the forward's packed weight",
    })?;
    r.register(OpEntry {
        name: "et_vk.linear_dq8ca_q4gsw.default",
        build: build_linear_dq8ca_q4gsw,
        dtypes: FLOATS,
        dynamic_shapes: true,
        note: "x[..., K] quantized per row to int8 with the given scales / zero points (torchao quantize_affine), dequantized, @ dequant(W4[N, Kp])^T + bias; weights and scales as linear_q4gsw, weight_sums checked, not needed",
    })?;
    r.register(OpEntry {
        name: "et_vk.linear_qcs4w.default",
        build: build_linear_qcs4w,
        dtypes: FLOATS,
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
    /// The op's argument holding the scales constant (for the layouts made from it later).
    scales_arg: usize,
}

fn big_tiles_ok(g: &GraphBuilder<'_>) -> bool {
    g.caps().max_shared_memory_size >= T128_SHARED_BYTES
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
    prepack_q4gsw_at(g, call, [1, 2, 3])
}

/// Check and prepack q4gsw-format weights, scales and group size from args `wi`, `si`, `gi`.
fn prepack_q4gsw_at(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    [wi, si, gi]: [usize; 3],
) -> Result<Q4> {
    let gs = g.int_arg(call, gi)?;
    if gs <= 0 || gs % 4 != 0 {
        return Err(invalid_program(format!(
            "{}: group_size = {gs}; it must be positive and a multiple of 4 (one scale per 4 k in the kernels)",
            call.what()
        )));
    }
    let gs = gs as usize;
    let sc = constant_arg(g, call, si, "weight_scales")?;
    float_scales_dtype(call, &sc)?;
    let (w, n, rb) = prepack_weight(g, call, wi, NibbleOrder::EvenLow)?;
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
        scales_arg: si,
    })
}

/// x (arg `i`): fp32 or fp16 with last dim in `1..=kmax`; returns (tensor, last dim). An
/// fp16 x is converted into an fp32 scratch copy first (see [`as_f32`]); the kernels compute
/// in fp32.
fn activation(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    i: usize,
    name: &str,
    kmax: usize,
    rule: &str,
) -> Result<(TensorId, usize)> {
    let (x, k) = checked_activation(g, call, i, name, kmax, rule)?;
    Ok((as_f32(g, call, x, i, name)?, k))
}

/// [`activation`]'s checks without the conversion: arg `i` itself (fp32 or fp16) and its K.
fn checked_activation(
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
        DataType::Float32 | DataType::Float16 => {}
        d => {
            return Err(invalid_program(format!(
                "{}: {name} must be float32 or float16, got {}",
                call.what(),
                d.name()
            )))
        }
    }
    let dims = s.max_dims(x).to_vec();
    match dims.last() {
        Some(&k) if k >= 1 && k <= kmax => Ok((x, k)),
        _ => Err(invalid_program(format!(
            "{}: {name} has sizes {dims:?}; its last dim must be in 1..={kmax} ({rule})",
            call.what()
        ))),
    }
}

/// Whether the op's x (arg 0) is fp16.
fn x_is_f16(g: &GraphBuilder<'_>, call: &OpCall) -> Result<bool> {
    let x = g.tensor_arg(call, 0)?;
    Ok(g.shapes().dtype(x) == DataType::Float16)
}

/// `t` itself when it is fp32, else an fp32 scratch tensor of its sizes filled from it by a
/// conversion dispatch (resized with it): fp16 (force_fp16) programs run the fp32 kernels.
fn as_f32(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    t: TensorId,
    arg: usize,
    name: &str,
) -> Result<TensorId> {
    if g.shapes().dtype(t) == DataType::Float32 {
        return Ok(t);
    }
    let dims = g.shapes().max_dims(t).to_vec();
    let f = g.new_tensor(
        DataType::Float32,
        dims,
        None,
        format!("{}: {name} as float32", call.what()),
    )?;
    crate::ops::logic::convert_tensor(g, call, t, f, arg)?;
    Ok(f)
}

/// Where the kernel writes `out`: `out` when fp32, else an fp32 scratch of its sizes that
/// [`finish_output`] converts into `out` after the kernel.
fn f32_output(g: &mut GraphBuilder<'_>, call: &OpCall, out: TensorId) -> Result<TensorId> {
    if g.shapes().dtype(out) == DataType::Float32 {
        return Ok(out);
    }
    let dims = g.shapes().max_dims(out).to_vec();
    g.new_tensor(
        DataType::Float32,
        dims,
        None,
        format!("{}: output as float32", call.what()),
    )
}

/// Convert the fp32 result `f` into `out` when they differ (fp16 outputs).
fn finish_output(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    f: TensorId,
    out: TensorId,
    arg: usize,
) -> Result<()> {
    if f == out {
        return Ok(());
    }
    crate::ops::logic::convert_tensor(g, call, f, out, arg)
}

/// The output (arg `i`): fp32 or fp16 with max sizes `lead ++ [cols]`.
fn output(
    g: &GraphBuilder<'_>,
    call: &OpCall,
    i: usize,
    lead: &[usize],
    cols: Option<usize>,
) -> Result<(TensorId, usize)> {
    let out = g.tensor_arg(call, i)?;
    let s = g.shapes();
    if !matches!(s.dtype(out), DataType::Float32 | DataType::Float16) {
        return Err(invalid_program(format!(
            "{}: output must be float32 or float16, got {}",
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
/// `[N]`), or a float tensor with >= N elements (the first N are read; fp16 is converted).
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
            let float = matches!(s.dtype(t), DataType::Float32 | DataType::Float16);
            if !float || crate::graph::checked_numel(s.max_dims(t)).is_none_or(|c| c < n) {
                return Err(invalid_program(format!(
                    "{}: bias must be float with at least N = {n} values, got {} {:?}",
                    call.what(),
                    s.dtype(t).name(),
                    s.max_dims(t)
                )));
            }
            as_f32(g, call, t, i, "bias").map(Some)
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

/// Push constants shared by every kernel but the split-N backward (8 u32s). The last one is
/// the GEMV's group shift, or the tiled kernels' split-K slice length `slice_len` (which the
/// unsplit variants ignore).
fn push(
    m: usize,
    q: &Q4,
    k: usize,
    has_bias: bool,
    kernel: Kernel,
    slice_len: usize,
) -> Result<Vec<u8>> {
    if let Kernel::GemvFma { slices, wpl, .. } = kernel {
        // M, N, K, words per row, groups, words per slice, slices | has_bias << 31, shift.
        let cw = fma_gemv_slice_words(q.kpad, slices, wpl);
        if slices >= 1 << 31 {
            return Err(unsupported(format!("{slices} slices of a weight row")));
        }
        return Ok(Push::new()
            .u32(to_u32(m, "M")?)
            .u32(to_u32(q.n, "N")?)
            .u32(to_u32(k, "K")?)
            .u32(to_u32(q.kpad / 8, "packed row length")?)
            .u32(to_u32(q.groups, "scale groups")?)
            .u32(to_u32(cw, "words per slice")?)
            .u32(slices | (has_bias as u32) << 31)
            .u32(group_word_shift(q.gs))
            .finish());
    }
    // The GEMV counts uvec4 chunks per row, the tiled kernels u32 words.
    let (row_units, last) = match kernel {
        Kernel::Gemv(_) | Kernel::GemvWide { .. } | Kernel::GemvHalf { .. } => {
            (q.kpad / 32, group_word_shift(q.gs))
        }
        _ => (q.kpad / 8, to_u32(slice_len, "split-K slice length")?),
    };
    // The sliced half-chunk GEMV (M = 1) takes its slices in M's word and its chunks per
    // slice in group_size's (it reads the group shift): a node's variants share one size.
    let (first, sixth) = match kernel {
        Kernel::GemvHalf { slices, .. } if slices > 1 => {
            let cs = half_gemv_slice_chunks(q.kpad / 32, slices as usize);
            (slices, to_u32(cs, "chunks per slice")?)
        }
        _ => (to_u32(m, "M")?, to_u32(q.gs, "group_size")?),
    };
    Ok(Push::new()
        .u32(first)
        .u32(to_u32(q.n, "N")?)
        .u32(to_u32(k, "K")?)
        .u32(to_u32(row_units, "packed row length")?)
        .u32(to_u32(q.groups, "scale groups")?)
        .u32(sixth)
        .u32(has_bias as u32)
        .u32(last)
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

/// The split-K geometry `kernel` runs with for M rows, `cols` outputs and a reduction over
/// `r`: [`split_k`]'s for a split tiled kernel, one whole slice otherwise.
fn split_of(kernel: Kernel, m: usize, cols: usize, r: usize) -> SplitK {
    match kernel {
        Kernel::Tiled { tile, split: true } => split_k(tile, m, cols, r),
        Kernel::BwdMma {
            tile, split: true, ..
        } => bwd_mma_split(tile, m, cols, r),
        Kernel::FwdMma {
            tile, split: true, ..
        } => fwd_mma_split(tile, m, cols, r),
        _ => SplitK {
            slices: 1,
            len: r.max(1).next_multiple_of(TILE_BR),
        },
    }
}

/// Floats of partial sums `kernel` writes for M rows and `cols` outputs reducing over `r`
/// (0 for the kernels that write their output directly).
fn partial_floats(kernel: Kernel, m: usize, cols: usize, r: usize) -> usize {
    match kernel {
        Kernel::Tiled { split: true, .. }
        | Kernel::BwdMma { split: true, .. }
        | Kernel::FwdMma { split: true, .. } => split_of(kernel, m, cols, r)
            .slices
            .saturating_mul(m)
            .saturating_mul(cols),
        Kernel::SplitN(_) => {
            let geo = split_geometry(r, cols);
            (geo.slices * 8 * geo.kwo).saturating_mul(m)
        }
        // The wide backward's partials need the packed row length: sized by its op.
        _ => 0,
    }
}

/// Whether `kernel` writes partial sums for `q4_linear_reduce` (and binds the scratch).
fn writes_partials(kernel: Kernel) -> bool {
    matches!(
        kernel,
        Kernel::SplitN(_)
            | Kernel::BwdWide { .. }
            | Kernel::BwdStaged(_)
            | Kernel::Tiled { split: true, .. }
            | Kernel::BwdMma { split: true, .. }
            | Kernel::FwdMma { split: true, .. }
            | Kernel::Mma { .. }
    )
}

/// The scratch tensor for `plan`'s partial sums, when one of its kernels writes them.
fn scratch(g: &mut GraphBuilder<'_>, call: &OpCall, plan: &Plan) -> Result<Option<TensorId>> {
    if !plan.kernels.iter().any(|&k| writes_partials(k)) {
        return Ok(None);
    }
    // At least one float: a reachable M of 0 needs a binding but writes nothing.
    g.new_tensor(
        DataType::Float32,
        vec![plan.scratch_floats.max(1)],
        None,
        format!("{}: split partial sums", call.what()),
    )
    .map(Some)
}

/// `len` counters of finished slices for the kernels whose last workgroup sums the slices
/// (zero when the graph is built; each launch leaves them zero), when `len` is some.
fn finished_slice_counters(
    g: &mut GraphBuilder<'_>,
    call: &OpCall,
    len: Option<usize>,
) -> Result<Option<TensorId>> {
    len.map(|len| {
        g.new_zeroed_tensor(
            DataType::Int32,
            vec![len],
            format!("{}: finished-slice counters", call.what()),
        )
    })
    .transpose()
}

/// Workgroups of `kernel` (GEMV or tiled) for M rows and `cols` output columns, times the
/// split-K `slices` (folded by the runtime).
fn global(
    kernel: Kernel,
    m: usize,
    cols: usize,
    rows_per_gemv_group: usize,
    slices: usize,
) -> Result<Global> {
    if m == 0 || cols == 0 {
        return Ok(Global::Linear(0));
    }
    let groups = match kernel {
        // Persistent: at most one wave of resident workgroups, each walking row blocks.
        // Workgroups per activation row times M; one grid row (the shader derives the
        // workgroups per row from the launch size).
        Kernel::GemvWide { persist, .. } if persist > 0 => {
            // Two 256-invocation workgroups per SM (94 registers); one when wider.
            let target = persistent_wave(persist, LOCAL);
            let per_row = cols.div_ceil(rows_per_gemv_group).min((target / m).max(1));
            per_row * m
        }
        // The half-chunk form (M = 1; at 60 registers two workgroups of 512 per SM): its
        // wave split evenly over the slices (at least one workgroup each).
        Kernel::GemvHalf { slices, local, .. } => {
            let s = slices as usize;
            half_gemv_launch_sets(cols.div_ceil(rows_per_gemv_group), half_gemv_sets(s, local))
                .checked_mul(s)
                .and_then(|g| g.checked_mul(m))
                .ok_or_else(|| unsupported(format!("M = {m} x {cols} columns: too many blocks")))?
        }
        // The FMA GEMV: its block sets times the slices, every row of M in each.
        Kernel::GemvFma { slices, local, .. } => fma_gemv_sets(cols, slices, local)
            .checked_mul(slices as usize)
            .ok_or_else(|| unsupported(format!("{cols} columns: too many blocks")))?,
        Kernel::Gemv(_) => cols.div_ceil(rows_per_gemv_group),
        // A workgroup per (row block, activation row).
        Kernel::GemvWide { .. } => cols
            .div_ceil(rows_per_gemv_group)
            .checked_mul(m)
            .ok_or_else(|| unsupported(format!("M = {m} x {cols} columns: too many blocks")))?,
        Kernel::SplitN(_)
        | Kernel::BwdWide { .. }
        | Kernel::BwdStaged(_)
        | Kernel::Mma { .. }
        | Kernel::FwdMma { .. } => {
            return Err(internal(
                "the split and wide backward and the MMA kernels have launches of their own",
            ))
        }
        Kernel::Tiled { tile, .. } | Kernel::BwdMma { tile, .. } => tile
            .count(m, cols)
            .checked_mul(slices)
            .ok_or_else(|| unsupported(format!("M = {m} x {cols} columns: too many tiles")))?,
    };
    let local = match kernel {
        Kernel::GemvWide { persist, .. } if persist > 0 => persist,
        Kernel::GemvHalf { local, .. } | Kernel::GemvFma { local, .. } => local,
        Kernel::BwdMma { .. } => shader_of(kernel, true).info().local_size[0],
        _ => LOCAL,
    };
    Ok(Global::Linear(groups as u64 * local as u64))
}

/// Launch of a tiled kernel for M rows, `cols` outputs (`k`: the push constants' K, x's row
/// length forward, `cols` backward) and a reduction over `r`.
fn tiled_launch(
    kernel: Kernel,
    m: usize,
    q: &Q4,
    k: usize,
    has_bias: bool,
    cols: usize,
    r: usize,
) -> Result<Launch> {
    let sk = split_of(kernel, m, cols, r);
    Ok(Launch {
        push: push(m, q, k, has_bias, kernel, sk.len)?,
        global: global(kernel, m, cols, 1, sk.slices)?,
    })
}

/// Launch of `q4_linear_reduce`: M * `cols` outputs, each the sum of `slices` partial rows of
/// `stride` floats (`partial[slices][M][stride]`), plus `bias[c]` when `has_bias`.
pub(crate) fn reduce_launch(
    m: usize,
    cols: usize,
    stride: usize,
    slices: usize,
    has_bias: bool,
) -> Result<Launch> {
    let total = m
        .checked_mul(cols)
        .ok_or_else(|| unsupported(format!("M = {m} x {cols} outputs overflow")))?;
    let slice = m
        .checked_mul(stride)
        .ok_or_else(|| unsupported(format!("M = {m} x {stride} partial sums overflow")))?;
    Ok(Launch {
        push: Push::new()
            .u32(to_u32(total, "M * C")?)
            .u32(to_u32(cols.max(1), "C")?)
            .u32(to_u32(stride, "partial row stride")?)
            .u32(to_u32(slices, "slices")?)
            .u32(to_u32(slice, "partial slice size")?)
            .u32(has_bias as u32)
            .finish(),
        global: Global::Linear(total as u64),
    })
}

/// The reduce node's launch when the kernel of the current M writes its output directly.
fn idle_reduce(cols: usize) -> Result<Launch> {
    reduce_launch(0, cols, cols, 1, false)
}

/// Index of `kernel` in the prepared variants.
fn variant_index(kernels: &[Kernel], kernel: Kernel, m: usize) -> Result<usize> {
    kernels
        .iter()
        .position(|&c| c == kernel)
        .ok_or_else(|| internal(format!("no prepared kernel {kernel:?} for M = {m}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The register-operand forward's launch strips come from its variant's `TT`: every form
    /// of one fragment count (emulated, DQ) must have the same, and the built ones more than
    /// one tile (the tiles have none).
    #[test]
    fn register_forms_agree_on_their_row_tiles() {
        for (three, two) in forward::DQ_MMA {
            assert_eq!(
                select::mma_reg_tiles(three),
                select::mma_reg_tiles(two),
                "{three:?} / {two:?}"
            );
        }
        for frags in [1, 2, 4] {
            let kn = |emulated| Kernel::Mma {
                frags,
                emulated,
                reg: true,
            };
            let rows = select::mma_rows_per_workgroup(kn(false));
            assert_eq!(rows, select::mma_rows_per_workgroup(kn(true)), "MF {frags}");
            assert!(rows > select::MMA_ROWS, "MF {frags}: {rows} rows");
        }
        assert_eq!(select::mma_reg_tiles(ShaderId::Q4LinearMmaF1), 1);
    }

    fn tiled(tile: Tile, split: bool) -> Kernel {
        Kernel::Tiled { tile, split }
    }

    #[test]
    fn tensor_core_backward_above_eight_rows() {
        let wide = Some(Kernel::BwdWide {
            cw: 8,
            mt: 1,
            dec: WideDecode::Magic,
        });
        let native = F16Mma::Native { t128: true };
        let pick = |m: usize, mode: F16Mma| backward_kernel(m, 8192, 8192, true, wide, true, mode);
        // M <= 8 keeps the wide / staged kernels whatever the mode.
        assert_eq!(
            pick(1, native),
            Kernel::BwdWide {
                cw: 8,
                mt: 1,
                dec: WideDecode::Magic
            }
        );
        assert_eq!(pick(8, native), Kernel::BwdStaged(8));
        // 32 x 128 tiles up to 64 rows, 128 x 128 from 65 (where the shared memory holds
        // them), split-K as the portable tiles.
        for (m, tile) in [
            (9, Tile::T32x128),
            (64, Tile::T32x128),
            (65, Tile::T128),
            (512, Tile::T128),
        ] {
            assert_eq!(
                pick(m, native),
                Kernel::BwdMma {
                    tile,
                    split: bwd_mma_split(tile, m, 8192, 8192).slices > 1,
                    emulated: false,
                },
                "M = {m}"
            );
        }
        assert_eq!(
            pick(512, F16Mma::Native { t128: false }),
            Kernel::BwdMma {
                tile: Tile::T32x128,
                split: true,
                emulated: false,
            }
        );
        assert!(matches!(
            pick(100, F16Mma::Emulated),
            Kernel::BwdMma {
                tile: Tile::T32x128,
                emulated: true,
                ..
            }
        ));
        assert!(matches!(pick(100, F16Mma::Off), Kernel::Tiled { .. }));
        // 32 x 128 slices of at most 2048 rows: M = 64 over 28672 columns splits in 4.
        assert_eq!(split_k(Tile::T32x128, 64, 28672, 8192).slices, 1);
        let sk = |m: usize, cols: usize, r: usize| bwd_mma_split(Tile::T32x128, m, cols, r);
        assert_eq!(
            sk(64, 28672, 8192),
            SplitK {
                slices: 4,
                len: 2048
            }
        );
        if std::env::var_os("ETVK_Q4_BWD_MMA_WGS").is_none() {
            // The swept shapes (M = 32): 64 tiles over 8192 and 28672 rows, 224 over 8192.
            assert_eq!(
                sk(32, 8192, 8192),
                SplitK {
                    slices: 4,
                    len: 2048
                }
            );
            assert_eq!(
                sk(32, 8192, 28672),
                SplitK {
                    slices: 14,
                    len: 2048
                }
            );
            assert_eq!(
                sk(32, 28672, 8192),
                SplitK {
                    slices: 4,
                    len: 2048
                }
            );
            // Few tiles: 8 of them aim at 33 slices, capped at 256 rows each.
            assert_eq!(
                sk(32, 1024, 8192),
                SplitK {
                    slices: 32,
                    len: 256
                }
            );
        }
        for (m, cols, r) in [
            (1, 1, 1),
            (32, 128, 300),
            (64, 5000, 100_000),
            (16, 8192, 2049),
        ] {
            let s = sk(m, cols, r);
            assert!(
                s.len <= BWD_MMA_T32_MAX_SLICE && s.len % TILE_BR == 0,
                "{s:?}"
            );
            assert!(s.slices * s.len >= r && (s.slices - 1) * s.len < r, "{s:?}");
        }
        assert_eq!(
            backward_kernel(64, 28672, 8192, true, wide, true, native),
            Kernel::BwdMma {
                tile: Tile::T32x128,
                split: true,
                emulated: false,
            }
        );
        assert_eq!(bwd_mma_split(Tile::T32x128, 64, 28672, 100).slices, 1);
        assert_eq!(bwd_mma_split(Tile::T128, 512, 28672, 8192).slices, 1);
        // M = 32 at 8192^2 splits (256 workgroups): partial sums and the reduce.
        let k32 = pick(32, native);
        assert!(writes_partials(k32));
        assert_eq!(shader_of(k32, true), ShaderId::Q4LinearBwdMmaT32x128Split);
        assert_eq!(BWD_MMA_T32_SHARED_BYTES, 26896);
        assert_eq!(BWD_MMA_T128_SHARED_BYTES, 47120);
    }

    #[test]
    fn tensor_core_forward_from_one_fragment() {
        let k = 8192;
        let half = Some(Kernel::GemvHalf {
            slices: 1,
            local: 512,
            early: false,
            tickets: false,
        });
        // Below one fragment the GEMVs keep M; from 8 rows the MMA kernel takes every M,
        // with the fewest fragments per workgroup that cover M (at most 4).
        assert_eq!(
            forward_kernel(1, 8192, k, true, half, (Int8Mma::Native, (F16Mma::Off, 0))),
            Kernel::GemvHalf {
                slices: 1,
                local: 512,
                early: false,
                tickets: false,
            }
        );
        assert_eq!(
            forward_kernel(7, 8192, k, true, half, (Int8Mma::Native, (F16Mma::Off, 0))),
            Kernel::GemvWide {
                dp4: true,
                persist: 256
            }
        );
        for (m, mf) in [(8, 1), (9, 2), (16, 2), (17, 4), (32, 4), (2048, 4)] {
            assert_eq!(
                forward_kernel(m, 8192, k, true, half, (Int8Mma::Native, (F16Mma::Off, 0))),
                Kernel::Mma {
                    frags: mf,
                    emulated: false,
                    reg: false,
                },
                "M = {m}"
            );
        }
        assert_eq!(mma_rows(8, 1), 8);
        assert_eq!(mma_rows(17, 4), 32);
        assert_eq!(mma_rows(33, 4), 64);
        let p = plan(
            40,
            true,
            |m| forward_kernel(m, 8192, k, true, half, (Int8Mma::Native, (F16Mma::Off, 0))),
            |_, _| 0,
        );
        for kn in [
            Kernel::Mma {
                frags: 1,
                emulated: false,
                reg: false,
            },
            Kernel::Mma {
                frags: 2,
                emulated: false,
                reg: false,
            },
            Kernel::Mma {
                frags: 4,
                emulated: false,
                reg: false,
            },
            Kernel::GemvHalf {
                slices: 1,
                local: 512,
                early: false,
                tickets: false,
            },
        ] {
            assert!(
                p.kernels.contains(&kn),
                "{kn:?} reachable in {:?}",
                p.kernels
            );
        }
    }

    /// The codes form where its own self-check passes (native) or no check applies
    /// (emulated), the hi / lo form where it fails.
    #[test]
    fn codes_form_needs_its_own_self_check_natively() {
        let native = F16Mma::Native { t128: true };
        let asked = std::cell::Cell::new(0);
        let check = |ok: bool| {
            let asked = &asked;
            move || {
                asked.set(asked.get() + 1);
                ok
            }
        };
        // Native: the codes form's own self-check decides.
        assert!(codes_form_runs(true, native, check(true)));
        assert!(!codes_form_runs(true, native, check(false)));
        assert_eq!(asked.get(), 2);
        // Emulated kernels read no fragment order; off or a group layout without the form:
        // never, and the check is not run for them.
        assert!(codes_form_runs(true, F16Mma::Emulated, check(false)));
        assert!(!codes_form_runs(true, F16Mma::Off, check(true)));
        assert!(!codes_form_runs(false, native, check(true)));
        assert_eq!(asked.get(), 2);
        // The backend checks the codes variants apart from the others: both sets are there,
        // native and emulated.
        for emulated in [false, true] {
            let all = crate::ops::q4_mma_check::variants(emulated, 1 << 20);
            assert!(all.iter().any(|v| v.codes) && all.iter().any(|v| !v.codes));
            assert!(all.iter().filter(|v| v.codes).all(|v| v.forward));
        }
    }

    /// The f16 tensor-core forward from its threshold on (128 x 128 tiles where they fit),
    /// the int8 one below it, neither where the f16 mode is off.
    #[test]
    fn f16_forward_takes_over_from_its_threshold() {
        let native = |t128| (Int8Mma::Native, (F16Mma::Native { t128 }, FWD_F16_MIN_M));
        let f16 = |tile| Kernel::FwdMma {
            tile,
            emulated: false,
            x16: false,
            codes: false,
            split: false,
        };
        let pick = |m, mode| forward_kernel(m, 8192, 8192, true, None, mode);
        assert_eq!(
            pick(FWD_F16_MIN_M - 1, native(true)),
            Kernel::Mma {
                frags: 4,
                emulated: false,
                reg: false,
            }
        );
        assert_eq!(pick(FWD_F16_MIN_M, native(true)), f16(Tile::T128));
        assert_eq!(pick(2048, native(false)), f16(Tile::T32x128));
        assert_eq!(
            pick(2048, (Int8Mma::Native, (F16Mma::Off, 0))),
            Kernel::Mma {
                frags: 4,
                emulated: false,
                reg: false,
            }
        );
        let emulated = (Int8Mma::Off, (F16Mma::Emulated, 9));
        assert_eq!(
            pick(9, emulated),
            Kernel::FwdMma {
                tile: Tile::T32x128,
                emulated: true,
                x16: false,
                codes: false,
                split: false,
            }
        );
        assert_eq!(pick(8, emulated), Kernel::Gemv(8));
    }

    /// The f16 forward's split-K: none once its tiles fill a wave, slices towards one
    /// otherwise (at least SPLIT_K_MIN_LEN of k each, multiples of 32); the split forms'
    /// shaders, and no reduce dispatch after them.
    #[test]
    fn f16_forward_splits_only_short_of_a_wave() {
        let split = |tile, m, n, k| fwd_mma_split(tile, m, n, k);
        // 128 rows x 28672 outputs: 224 tiles, unsplit; 8192 outputs: 64 tiles, two slices.
        assert_eq!(split(Tile::T128, 128, 28672, 8192).slices, 1);
        let sk = split(Tile::T128, 128, 8192, 8192);
        assert_eq!((sk.slices, sk.len), (2, 4096));
        assert_eq!(split(Tile::T128, 512, 8192, 8192).slices, 1);
        assert_eq!(split(Tile::T128, 128, 8192, 28672).slices, 2);
        // Short rows are not cut below the minimum slice.
        assert_eq!(split(Tile::T128, 128, 256, 100).slices, 1);
        let sk = split(Tile::T32x128, 32, 1000, 4096);
        assert!(sk.slices > 1 && sk.len % 32 == 0 && sk.len * sk.slices >= 4096);
        let kn = Kernel::FwdMma {
            tile: Tile::T128,
            emulated: false,
            x16: true,
            codes: true,
            split: true,
        };
        assert_eq!(shader_of(kn, false), ShaderId::Q4LinearFwdMmaCX16T128Split);
        assert!(writes_partials(kn));
        assert_eq!(partial_floats(kn, 128, 8192, 8192), 2 * 128 * 8192);
    }

    #[test]
    fn kernel_selection_and_reachability() {
        let k = 64; // short reduction: never split
        assert_eq!(
            forward_kernel(1, 64, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            Kernel::Gemv(1)
        );
        assert_eq!(
            forward_kernel(3, 64, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            Kernel::Gemv(4)
        );
        assert_eq!(
            forward_kernel(8, 64, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            Kernel::Gemv(8)
        );
        // The int8 wide GEMVs (persistent or not) serve M <= 8; the float one only M = 1.
        for wide in [
            Kernel::GemvWide {
                dp4: true,
                persist: 256,
            },
            Kernel::GemvWide {
                dp4: true,
                persist: 0,
            },
        ] {
            for m in [1, 2, 5, 8] {
                assert_eq!(
                    forward_kernel(m, 64, k, true, Some(wide), (Int8Mma::Off, (F16Mma::Off, 0))),
                    wide,
                    "M = {m}"
                );
            }
        }
        // The half-chunk form serves M = 1; above, its rows take the persistent form, one
        // invocation per chunk in whole subgroups.
        let half = Kernel::GemvHalf {
            slices: 1,
            local: 512,
            early: false,
            tickets: false,
        };
        assert_eq!(
            forward_kernel(
                1,
                64,
                8192,
                true,
                Some(half),
                (Int8Mma::Off, (F16Mma::Off, 0))
            ),
            half
        );
        for (kx, persist) in [(8192, 256), (4100, 160), (4096, 128), (3000, 96)] {
            for m in [2, 5, 8] {
                assert_eq!(
                    forward_kernel(
                        m,
                        64,
                        kx,
                        true,
                        Some(half),
                        (Int8Mma::Off, (F16Mma::Off, 0))
                    ),
                    Kernel::GemvWide { dp4: true, persist },
                    "M = {m}, K = {kx}"
                );
            }
        }
        // Down to 32 chunks too; shorter rows keep the lane groups above M = 1.
        assert_eq!(
            forward_kernel(
                2,
                64,
                1000,
                true,
                Some(half),
                (Int8Mma::Off, (F16Mma::Off, 0))
            ),
            Kernel::GemvWide {
                dp4: true,
                persist: 32
            }
        );
        for (m, mt) in [(2, 2), (3, 4), (8, 8)] {
            assert_eq!(
                forward_kernel(
                    m,
                    64,
                    992,
                    true,
                    Some(half),
                    (Int8Mma::Off, (F16Mma::Off, 0))
                ),
                Kernel::Gemv(mt),
                "M = {m}"
            );
        }
        let float = Kernel::GemvWide {
            dp4: false,
            persist: 0,
        };
        assert_eq!(
            forward_kernel(
                1,
                64,
                k,
                true,
                Some(float),
                (Int8Mma::Off, (F16Mma::Off, 0))
            ),
            float
        );
        assert_eq!(
            forward_kernel(
                2,
                64,
                k,
                true,
                Some(float),
                (Int8Mma::Off, (F16Mma::Off, 0))
            ),
            Kernel::Gemv(2)
        );
        assert_eq!(
            forward_kernel(9, 4096, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            tiled(Tile::T32x128, false)
        );
        assert_eq!(
            forward_kernel(32, 4096, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            tiled(Tile::T32x128, false)
        );
        assert_eq!(
            forward_kernel(33, 4096, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            tiled(Tile::T64, false)
        );
        assert_eq!(
            forward_kernel(512, 4096, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            tiled(Tile::T128, false)
        );
        assert_eq!(
            forward_kernel(512, 4096, k, false, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            tiled(Tile::T64, false)
        );
        // Long rows (a wide kernel at M = 1): M = 2 shares it, M = 3..8 take the staged
        // kernel when the scale groups are whole chunks, split-N otherwise.
        let w = Some(Kernel::BwdWide {
            cw: 16,
            mt: 1,
            dec: WideDecode::Magic,
        });
        for (m, wide, staged, want) in [
            (1, None, true, Kernel::SplitN(1)),
            (3, None, true, Kernel::SplitN(4)),
            (8, None, true, Kernel::SplitN(8)),
            (
                2,
                w,
                true,
                Kernel::BwdWide {
                    cw: 16,
                    mt: 2,
                    dec: WideDecode::Magic,
                },
            ),
            (3, w, true, Kernel::BwdStaged(4)),
            (5, w, true, Kernel::BwdStaged(8)),
            (5, w, false, Kernel::SplitN(8)),
        ] {
            assert_eq!(
                backward_kernel(m, 4096, k, true, wide, staged, F16Mma::Off),
                want,
                "M = {m}"
            );
        }
        assert_eq!(
            backward_kernel(9, 4096, k, true, None, true, F16Mma::Off),
            tiled(Tile::T32x128, false)
        );
        // The H200 shapes at M = 32: split.
        assert_eq!(
            forward_kernel(32, 8192, 8192, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            tiled(Tile::T32x128, true)
        );
        assert_eq!(
            backward_kernel(32, 8192, 8192, true, None, true, F16Mma::Off),
            tiled(Tile::T32x128, true)
        );
        let p = plan(
            64,
            true,
            |m| forward_kernel(m, 64, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            |m, kn| partial_floats(kn, m, 64, k),
        );
        assert_eq!(
            p.kernels,
            vec![
                tiled(Tile::T64, false),
                Kernel::Gemv(1),
                Kernel::Gemv(2),
                Kernel::Gemv(4),
                Kernel::Gemv(8),
                tiled(Tile::T32x128, false),
            ]
        );
        assert_eq!(p.scratch_floats, 0);
        let p = plan(
            5,
            false,
            |m| forward_kernel(m, 64, k, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            |m, kn| partial_floats(kn, m, 64, k),
        );
        assert_eq!(p.kernels, vec![Kernel::Gemv(8)]);
        assert_eq!(gemv_lanes(32, 1), 8);
        assert_eq!(gemv_lanes(4096, 1), 32);
        assert_eq!(gemv_lanes(8192, 8), 64);
    }

    /// Every M up to (and past) the bound maps to a planned kernel, and the planned scratch
    /// holds every M's partial sums (checked M by M against the plan's sampled Ms), for
    /// shapes that split at small M, at large M (one tile column: splits up to M ~ 22k) and
    /// never.
    #[test]
    fn plans_cover_every_m() {
        let shapes = [
            (8192usize, 8192usize),
            (28672, 8192),
            (8192, 28672),
            (64, 8192),
            (200, 2048),
            (40, 96),
        ];
        for (cols, r) in shapes {
            for big in [false, true] {
                let fwd =
                    |m| forward_kernel(m, cols, r, big, None, (Int8Mma::Off, (F16Mma::Off, 0)));
                let bwd = |m| backward_kernel(m, cols, r, big, None, true, F16Mma::Off);
                let floats = |m, kn| partial_floats(kn, m, cols, r);
                for max_m in [0usize, 1, 7, 9, 33, 100, 127, 129, 300, 5000, 21_999] {
                    for choose in [&fwd as &dyn Fn(usize) -> Kernel, &bwd] {
                        let p = plan(max_m, true, choose, floats);
                        // The exhaustive answer.
                        let mut kernels = Vec::new();
                        let mut most = 0;
                        for m in 0..=max_m {
                            let k = choose(m);
                            if !kernels.contains(&k) {
                                kernels.push(k);
                            }
                            most = most.max(floats(m, k));
                        }
                        assert_eq!(p.kernels.len(), kernels.len(), "{cols} {r} {max_m}");
                        assert!(kernels.iter().all(|k| p.kernels.contains(k)));
                        assert_eq!(p.scratch_floats, most, "{cols} {r} {max_m}");
                    }
                }
                // Past STABLE_M nothing changes.
                let last = forward_kernel(
                    STABLE_M,
                    cols,
                    r,
                    big,
                    None,
                    (Int8Mma::Off, (F16Mma::Off, 0)),
                );
                assert!(matches!(last, Kernel::Tiled { split: false, .. }));
                for m in [STABLE_M + 1, 2 * STABLE_M, 1 << 24] {
                    assert_eq!(
                        forward_kernel(m, cols, r, big, None, (Int8Mma::Off, (F16Mma::Off, 0))),
                        last
                    );
                }
            }
        }
        // A static graph plans max_m alone.
        let p = plan(
            32,
            false,
            |m| forward_kernel(m, 8192, 8192, true, None, (Int8Mma::Off, (F16Mma::Off, 0))),
            |m, kn| partial_floats(kn, m, 8192, 8192),
        );
        assert_eq!(p.kernels, vec![tiled(Tile::T32x128, true)]);
        assert_eq!(p.scratch_floats, 8 * 32 * 8192);
    }

    /// The heuristic's numbers at the H200 shapes (docs of `split_k`).
    #[test]
    fn split_k_at_the_h200_shapes() {
        let sk = |slices, len| SplitK { slices, len };
        // N = K = 8192 (forward and backward alike).
        assert_eq!(split_k(Tile::T32x128, 16, 8192, 8192), sk(8, 1024));
        assert_eq!(split_k(Tile::T32x128, 32, 8192, 8192), sk(8, 1024));
        assert_eq!(split_k(Tile::T64, 64, 8192, 8192), sk(4, 2048));
        assert_eq!(split_k(Tile::T128, 128, 8192, 8192), sk(4, 2048));
        assert_eq!(split_k(Tile::T64, 128, 8192, 8192), sk(2, 4096));
        // 512 x 8192 keeps its 256 tiles of 128 x 128 whole.
        assert_eq!(split_k(Tile::T128, 512, 8192, 8192).slices, 1);
        // 28672 outputs, reduction 8192: 224 tiles of 32 x 128 -> 2 slices; wider M whole.
        assert_eq!(split_k(Tile::T32x128, 32, 28672, 8192), sk(2, 4096));
        assert_eq!(split_k(Tile::T64, 64, 28672, 8192).slices, 1);
        assert_eq!(split_k(Tile::T128, 128, 28672, 8192).slices, 1);
        // 8192 outputs, reduction 28672.
        assert_eq!(split_k(Tile::T32x128, 32, 8192, 28672), sk(8, 3584));
        assert_eq!(split_k(Tile::T64, 64, 8192, 28672), sk(4, 7168));
        assert_eq!(split_k(Tile::T128, 128, 8192, 28672), sk(4, 7168));
    }

    #[test]
    fn split_k_slices_cover_the_reduction() {
        for tile in [Tile::T32x128, Tile::T64, Tile::T128] {
            let (bm, bc) = tile.shape();
            for cols in [1usize, 5, 64, 129, 200, 8192, 28672] {
                for r in [1usize, 31, 255, 256, 511, 512, 513, 2000, 8192, 28672] {
                    let mut prev = usize::MAX;
                    for m in 1..=300 {
                        let g = split_k(tile, m, cols, r);
                        assert_eq!(g.len % TILE_BR, 0, "{tile:?} {cols} {r} {m}");
                        // Every column in exactly one non-empty slice.
                        assert!(g.slices * g.len >= r && (g.slices - 1) * g.len < r);
                        if g.slices > 1 {
                            // Slices of >= 256 columns (the last may be shorter).
                            assert!(g.len >= SPLIT_K_MIN_LEN, "{tile:?} {cols} {r} {m}");
                            // The documented bound on the partial sums.
                            assert!(
                                3 * g.slices * m * cols <= 4 * tile.split_target() * bm * bc,
                                "{tile:?} {cols} {r} {m}: {g:?}"
                            );
                        }
                        // S never grows with M.
                        assert!(g.slices <= prev, "{tile:?} {cols} {r} {m}");
                        prev = g.slices;
                    }
                }
            }
        }
    }

    #[test]
    fn grids_fold_under_the_workgroup_limit() {
        // N = K = M = 2^20: the linear counts fold into x * y with x <= 65535.
        let q = 1usize << 20;
        let bwd_mma = |tile| Kernel::BwdMma {
            tile,
            split: false,
            emulated: false,
        };
        for (kn, cols) in [
            (Kernel::Gemv(1), q),
            (tiled(Tile::T64, false), q),
            (bwd_mma(Tile::T32x128), q),
            (bwd_mma(Tile::T128), q),
        ] {
            let g = global(kn, q, cols, 8, 1).unwrap();
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
            scales_arg: 2,
        };
        let geo = split_geometry(q, q);
        for (launch, local) in [
            (split_launch(8, &qq, q, geo).unwrap(), LOCAL),
            (
                reduce_launch(8, q, 8 * geo.kwo, geo.slices, false).unwrap(),
                REDUCE_LOCAL,
            ),
        ] {
            let Global::Linear(count) = launch.global else {
                panic!()
            };
            let groups = count.div_ceil(local as u64);
            assert!(groups.div_ceil(65535) <= 65535, "{groups}");
        }
        // The limb nodes launch at most one row of 65535 workgroups (their kernels walk the
        // rest), from small inputs (every invocation launched) to K = M = 2^20.
        for (chunks, m, rows, want) in [
            (256, 8, Some(8), 256 * 8 * 8),
            (256, 3, None, 256 * 3 * 8),
            (q / 32, q, Some(q), LIMBS_MAX_INVOCATIONS),
            (q / 32, 8, None, q / 32 * 8 * 8),
            (q / 32, 64, None, LIMBS_MAX_INVOCATIONS),
        ] {
            let launch = limbs_launch(chunks * 32, chunks, m, rows, true).unwrap();
            let Global::Linear(count) = launch.global else {
                panic!()
            };
            assert_eq!(count, want as u64, "{chunks} chunks, M = {m}");
            assert!(count.div_ceil(64) <= 65535);
        }
    }

    #[test]
    fn sliced_half_gemv_geometry_and_push() {
        // Slices of at most 256 chunks, as even as the chunks allow.
        for (kc, slices, chunks) in [(129, 1, 129), (256, 1, 256), (264, 2, 132), (384, 2, 192)] {
            assert_eq!(half_gemv_slices(kc, 256), slices, "kc {kc}");
            assert_eq!(half_gemv_slice_chunks(kc, slices), chunks, "kc {kc}");
        }
        assert_eq!(half_gemv_slices(896, 256), 4);
        assert_eq!(half_gemv_slice_chunks(896, 4), 224);
        assert_eq!(
            half_gemv_slice_chunks(1280, half_gemv_slices(1280, 256)),
            256
        );
        assert_eq!(half_gemv_slice_chunks(601, half_gemv_slices(601, 256)), 201);
        // Devices: an H200 (1024 invocations, subgroups of 32, 48 KiB) 512 chunks; lavapipe
        // (32 KiB, subgroups of 8) 864 invocations, 432 chunks; 16 KiB (Vulkan's least) or
        // subgroups of 4 keep 256, as does a device of 512 invocations.
        assert_eq!(half_gemv_max_chunks_for(1024, 32, 49152), 512);
        assert_eq!(half_gemv_max_chunks_for(1024, 8, 32768), 432);
        assert_eq!(half_gemv_max_chunks_for(1024, 32, 16384), 256);
        assert_eq!(half_gemv_max_chunks_for(1024, 4, 49152), 256);
        assert_eq!(half_gemv_max_chunks_for(512, 32, 49152), 256);
        assert_eq!(half_gemv_max_chunks_for(768, 64, 65536), 384);
        assert!(half_gemv_shared_bytes(1024) <= 49152);
        assert!(half_gemv_shared_bytes(864) <= 32768 && half_gemv_shared_bytes(896) > 32768);
        // Rows one wide workgroup holds whole take it; longer rows keep slices of 256.
        assert_eq!(half_gemv_slice_limit(448, 512), 512);
        assert_eq!(half_gemv_slice_limit(512, 512), 512);
        assert_eq!(half_gemv_slice_limit(513, 512), 256);
        assert_eq!(half_gemv_slice_limit(896, 512), 256);
        assert_eq!(half_gemv_slice_limit(433, 432), 256);
        assert_eq!(half_gemv_slice_limit(300, 256), 256);
        // Up to 512 chunks where workgroups of 1024 fit: rows of 264 / 448 / 512 chunks whole,
        // 896 in two slices, 1280 in three of 427.
        for (kc, slices, chunks) in [(264, 1, 264), (448, 1, 448), (512, 1, 512), (896, 2, 448)] {
            assert_eq!(half_gemv_slices(kc, 512), slices, "kc {kc}");
            assert_eq!(half_gemv_slice_chunks(kc, slices), chunks, "kc {kc}");
        }
        assert_eq!(
            half_gemv_slice_chunks(1280, half_gemv_slices(1280, 512)),
            427
        );
        // M = 2..8 over sliced rows take the unpersistent int8 wide form.
        let sliced = Some(Kernel::GemvHalf {
            slices: 4,
            local: 448,
            early: false,
            tickets: false,
        });
        assert_eq!(
            forward_kernel(
                3,
                8192,
                28672,
                true,
                sliced,
                (Int8Mma::Off, (F16Mma::Off, 0))
            ),
            Kernel::GemvWide {
                dp4: true,
                persist: 0
            }
        );
        assert_eq!(
            shader_of(
                Kernel::GemvHalf {
                    slices: 4,
                    local: 448,
                    early: false,
                    tickets: false,
                },
                false
            ),
            ShaderId::Q4LinearGemvHalfSliced
        );
        // The sliced form's push: slices in M's word, chunks per slice in group_size's.
        let q = Q4 {
            w: TensorId(0),
            s: TensorId(0),
            n: 8192,
            kp: 28672,
            kpad: 28672,
            groups: 224,
            gs: 128,
            scales_arg: 2,
        };
        let words = |b: Vec<u8>| -> Vec<u32> {
            b.chunks(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        };
        let p = words(
            push(
                1,
                &q,
                28672,
                true,
                Kernel::GemvHalf {
                    slices: 4,
                    local: 448,
                    early: false,
                    tickets: false,
                },
                0,
            )
            .unwrap(),
        );
        assert_eq!(p, vec![4, 8192, 28672, 896, 224, 224, 1, 4]);
        let p = words(
            push(
                1,
                &q,
                28672,
                false,
                Kernel::GemvHalf {
                    slices: 1,
                    local: 512,
                    early: false,
                    tickets: false,
                },
                0,
            )
            .unwrap(),
        );
        assert_eq!(p, vec![1, 8192, 28672, 896, 224, 128, 0, 4]);
        // The persistent form: one invocation per chunk in whole subgroups, at most 256.
        for (kc, local) in [
            (1, 32),
            (32, 32),
            (33, 64),
            (128, 128),
            (160, 160),
            (256, 256),
            (257, 0),
        ] {
            assert_eq!(persist_gemv_local(kc, 256), local, "kc {kc}");
        }
        // Rows of 257..512 chunks: one workgroup of up to 512 where the weight is below the
        // limbs pre-pass (N * Kpad < 2^27), else the unpersistent form.
        assert_eq!(persist_max_chunks(448, 8192), 512);
        assert_eq!(persist_gemv_local(448, persist_max_chunks(448, 8192)), 448);
        assert_eq!(persist_max_chunks(512, 8192), 256);
        assert_eq!(persist_gemv_local(512, persist_max_chunks(512, 8192)), 0);
        assert_eq!(persist_max_chunks(256, 100_000), 256);
        assert_eq!(persist_gemv_local(513, 512), 0);
        // Workgroups of one invocation per half chunk of a slice, in whole subgroups: 224
        // chunks take 448, 192 take 384, 201 take 416 (402 rounded up), 130 unsliced 288.
        for (kc, local) in [
            (896, 448),
            (384, 384),
            (601, 416),
            (130, 288),
            (256, 512),
            (1280, 512),
        ] {
            assert_eq!(half_gemv_local(kc, 256), local, "kc {kc}");
        }
        // With slices of up to 512 chunks: 264 chunks unsliced take 544, 448 take 896, 896
        // (two slices of 448) 896, 1280 (three of 427) 864; short rows as before.
        for (kc, local) in [(264, 544), (448, 896), (896, 896), (1280, 864), (130, 288)] {
            assert_eq!(half_gemv_local(kc, 512), local, "kc {kc}");
        }
        // Launch: the wave (two 512-invocation workgroups per SM's worth of invocations)
        // split evenly over the slices, as few per slice as walk its 1024 blocks in as many
        // rounds (a wave of 264: 66 per slice, 16 rounds, so 64).
        let Global::Linear(count) = global(
            Kernel::GemvHalf {
                slices: 4,
                local: 448,
                early: false,
                tickets: false,
            },
            1,
            8192,
            8,
            1,
        )
        .unwrap() else {
            panic!()
        };
        let per_slice = half_gemv_launch_sets(1024, persistent_gemv_target() / 4);
        assert_eq!(count, (per_slice * 4) as u64 * 448);
        assert!(per_slice <= persistent_gemv_target() / 4);
        assert_eq!(
            1024usize.div_ceil(per_slice),
            1024usize.div_ceil(persistent_gemv_target() / 4)
        );
        assert_eq!(persistent_wave(448, 512), persistent_gemv_target());
        assert_eq!(persistent_wave(320, 512), persistent_gemv_target() * 3 / 2);
        assert_eq!(persistent_wave(256, 512), persistent_gemv_target() * 2);
        assert_eq!(persistent_wave(160, 256), persistent_gemv_target() * 3 / 2);
        assert_eq!(persistent_wave(256, 256), persistent_gemv_target());
        // Wider than 512: one workgroup per SM.
        assert_eq!(persistent_wave(544, 512), persistent_gemv_target() / 2);
        assert_eq!(persistent_wave(1024, 512), persistent_gemv_target() / 2);
        assert_eq!(half_gemv_sets(2, 896), persistent_gemv_target() / 4);
        assert_eq!(half_gemv_sets(4, 512), persistent_gemv_target() / 4);
        assert_eq!(half_gemv_sets(2, 256), persistent_gemv_target());
        assert_eq!(half_gemv_sets(100_000, 512), 1);
        // The `_early` variant: unsliced rows of at most 128 chunks whose blocks the wave
        // covers at once (528 workgroups of 256, 1056 of 128).
        let wave = |local| persistent_wave(local, 512);
        assert!(half_gemv_early(1, 256, 8 * wave(256)));
        assert!(!half_gemv_early(1, 256, 8 * wave(256) + 1));
        assert!(half_gemv_early(1, 128, 8192)); // N = 8192, K = 2048: 1024 blocks, 1056 workgroups
        assert!(half_gemv_early(1, 32, 13));
        assert!(!half_gemv_early(1, 288, 64));
        assert!(!half_gemv_early(2, 256, 64));
        let early = Kernel::GemvHalf {
            slices: 1,
            local: 256,
            early: true,
            tickets: false,
        };
        assert_eq!(shader_of(early, false), ShaderId::Q4LinearGemvHalfEarly);
    }

    /// The half GEMV's launch: the fewest workgroups that walk its blocks in the wave's
    /// rounds where that keeps 7/8 of the wave, every workgroup then within one block of
    /// the others; tickets from 8 blocks each.
    #[test]
    fn half_gemv_launch_walks_whole_rounds() {
        // 8192^2 and N = 28672 at K = 8192 over a wave of 264: 256 workgroups of 4 / 14.
        assert_eq!(half_gemv_launch_sets(1024, 264), 256);
        assert_eq!(half_gemv_launch_sets(3584, 264), 256);
        assert_eq!(half_gemv_launch_sets(1000, 264), 250);
        // Balanced would be 199 (and 133 for 265): the whole wave.
        assert_eq!(half_gemv_launch_sets(793, 264), 264);
        assert_eq!(half_gemv_launch_sets(265, 264), 264);
        assert_eq!(half_gemv_launch_sets(100, 264), 100);
        assert_eq!(half_gemv_launch_sets(0, 264), 0);
        assert_eq!(half_gemv_launch_sets(5, 0), 1);
        for sets in [1usize, 2, 7, 132, 264, 528, 1056] {
            for blocks in (1..4 * sets + 3).chain([10_000, 131_071]) {
                let p = half_gemv_launch_sets(blocks, sets);
                assert!((1..=sets).contains(&p), "{blocks} blocks, wave {sets}: {p}");
                assert!(p <= blocks, "{blocks} / {sets}: {p}");
                // As many rounds as the whole wave (and no workgroup without a block, above).
                assert_eq!(
                    blocks.div_ceil(p),
                    blocks.div_ceil(sets),
                    "{blocks} / {sets}"
                );
                if p < sets.min(blocks) {
                    // Balanced: at least 7/8 of the wave, and the fewest workgroups that
                    // keep its rounds (one fewer would need another).
                    assert!(8 * p >= 7 * sets, "{blocks} / {sets}: {p}");
                    assert!(
                        blocks.div_ceil(p - 1) > blocks.div_ceil(p),
                        "{blocks} / {sets}: {p}"
                    );
                }
            }
        }
        let wave = persistent_wave(512, 512);
        assert!(half_gemv_tickets(1, 512, 8 * 8 * wave));
        assert!(!half_gemv_tickets(1, 512, 8 * 8 * wave - 8));
        assert!(half_gemv_tickets(1, 512, 28672)); // 3584 blocks: 13-14 a workgroup
        assert!(!half_gemv_tickets(1, 512, 8192)); // 1024: 3-4
        assert!(!half_gemv_tickets(2, 512, 1 << 20)); // sliced rows have no ticketed form
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

    /// `etvk_q4_bwd` values naming a wide backward: column width and decode, each optional;
    /// anything else is not one (the caller then keeps its default).
    #[test]
    fn forced_wide_backward_values() {
        use WideDecode::{F16Touch, Magic, F16};
        type Forced = Option<(Option<u32>, Option<WideDecode>)>;
        let cases: &[(&str, Forced)] = &[
            ("wide", Some((None, None))),
            ("wide_c8", Some((Some(8), None))),
            ("wide_c32", Some((Some(32), None))),
            ("wide_magic", Some((None, Some(Magic)))),
            ("wide_c16_f16", Some((Some(16), Some(F16)))),
            ("wide_c8_f16t", Some((Some(8), Some(F16Touch)))),
            ("wide_f16t", Some((None, Some(F16Touch)))),
            ("wide_c12", None),
            ("wide_f32", None),
            ("wide_f16_c8", None),
            ("split", None),
            ("", None),
        ];
        for (value, want) in cases {
            assert_eq!(parse_forced_wide(value), *want, "{value:?}");
        }
    }

    /// The wide backward's column-block width at the H200 shapes (journal, session 3), and
    /// its geometry's invariants: slices cover N with rows a multiple of 4 * RG, no empty
    /// slice, and no more workgroups than the target when the blocks allow it.
    #[test]
    fn wide_backward_geometry() {
        let t = WIDE_BWD_TARGET;
        // Two workgroups per SM at 8192^2 (24 rows per row group at three), three at the
        // larger H200 shapes (journal, session 4).
        assert_eq!(wide_bwd_target(8192, 256), WIDE_BWD_TARGET);
        assert_eq!(wide_bwd_target(28672, 256), WIDE_BWD_TARGET_DEEP);
        assert_eq!(wide_bwd_target(8192, 896), WIDE_BWD_TARGET_DEEP);
        // One per SM up to 2^24 codes (4096^2, 8192 x 2048, 2048 x 8192).
        assert_eq!(wide_bwd_target(4096, 128), WIDE_BWD_TARGET_SMALL);
        assert_eq!(wide_bwd_target(8192, 64), WIDE_BWD_TARGET_SMALL);
        assert_eq!(wide_bwd_target(2048, 256), WIDE_BWD_TARGET_SMALL);
        assert_eq!(wide_bwd_target(4096, 256), WIDE_BWD_TARGET);
        assert_ne!(wide_bwd_target(4100, 128), WIDE_BWD_TARGET_SMALL);
        assert_eq!(
            widest_bwd(8192, 256),
            Kernel::BwdWide {
                cw: 8,
                mt: 1,
                dec: WideDecode::Magic
            }
        );
        assert_eq!(
            widest_bwd(28672, 256),
            Kernel::BwdWide {
                cw: 8,
                mt: 1,
                dec: WideDecode::Magic
            }
        );
        assert_eq!(
            widest_bwd(8192, 896),
            Kernel::BwdWide {
                cw: 16,
                mt: 1,
                dec: WideDecode::Magic
            }
        );
        // No column block wider than the row: 16 chunks (K = 512) never take 32-chunk
        // blocks, 8 chunks (K = 256) only 8-chunk ones.
        for n in [64, 2048, 8192, 28672] {
            assert!(widest_bwd_cw(n, 16, t) <= 16, "N = {n}");
            assert_eq!(widest_bwd_cw(n, 8, t), 8, "N = {n}");
        }
        let g = wide_bwd_geometry(28672, 256, 8, WIDE_BWD_TARGET_DEEP);
        assert_eq!((g.blocks, g.rows, g.slices), (32, 2432, 12));
        let g = wide_bwd_geometry(8192, 896, 16, WIDE_BWD_TARGET_DEEP);
        assert_eq!((g.blocks, g.rows, g.slices), (56, 1216, 7));
        let g = wide_bwd_geometry(8192, 256, 8, t);
        assert_eq!((g.blocks, g.rows, g.slices), (32, 1024, 8));
        let g = wide_bwd_geometry(8192, 896, 32, t);
        assert_eq!((g.blocks, g.rows, g.slices), (28, 928, 9));
        for (n, kc, t) in [1, 3, 37, 100, 1000, 4097, 8192, 28672]
            .into_iter()
            .flat_map(|n| [1, 2, 130, 256, 896, 4096].map(|kc| (n, kc)))
            .flat_map(|(n, kc)| [(n, kc, t), (n, kc, WIDE_BWD_TARGET_DEEP)])
        {
            for cw in [8u32, 16, 32] {
                let g = wide_bwd_geometry(n, kc, cw, t);
                let unit = 4 * (LOCAL / cw) as usize;
                assert_eq!(g.rows % unit, 0, "N {n} KC {kc} CW {cw}");
                assert!(g.slices * g.rows >= n && (g.slices - 1) * g.rows < n);
                assert_eq!(g.blocks, kc.div_ceil(cw as usize));
                if g.blocks <= t {
                    assert!(g.blocks * g.slices <= t, "N {n} KC {kc} CW {cw}: {g:?}");
                }
            }
        }
    }

    /// The tensor-core forward's split-K at the H200 shapes (journal, session 9) and its
    /// invariants: slices cover the row with lengths a multiple of the step, none empty, and
    /// at least two steps per slice where the row has them.
    #[test]
    fn mma_split_by_waves() {
        let slices = |m: usize, n: usize, kc: usize, mf: u32, rows: usize| {
            mma_split(m, n, kc, mf, rows).slices
        };
        if mma_resident_wgs() == MMA_RESIDENT_WGS {
            assert_eq!(slices(8, 8192, 256, 1, MMA_ROWS), 4);
            assert_eq!(slices(8, 28672, 256, 1, MMA_ROWS), 7);
            assert_eq!(slices(8, 8192, 896, 1, MMA_ROWS), 4);
            assert_eq!(slices(512, 28672, 256, 4, MMA_ROWS), 1);
            // The register form's 512-row strips at M = 8: four times the slices.
            assert_eq!(slices(8, 8192, 256, 1, 512), 16);
        }
        for (m, n, kc, mf, rows) in [1usize, 8, 9, 32, 100, 512, 2048]
            .into_iter()
            .flat_map(|m| [1usize, 16, 300, 8192, 28672].map(|n| (m, n)))
            .flat_map(|(m, n)| [1usize, 3, 8, 37, 256, 896].map(|kc| (m, n, kc)))
            .flat_map(|(m, n, kc)| [1u32, 2, 4].map(|mf| (m, n, kc, mf)))
            .flat_map(|(m, n, kc, mf)| [MMA_ROWS, 256, 512].map(|r| (m, n, kc, mf, r)))
        {
            let sk = mma_split(m, n, kc, mf, rows);
            let step = mma_step(mf);
            assert_eq!(sk.len % step, 0, "{m} {n} {kc} {mf} {rows}: {sk:?}");
            assert!(sk.slices * sk.len >= kc && (sk.slices - 1) * sk.len < kc);
            if sk.slices > 1 {
                assert!(sk.len >= 2 * step, "{m} {n} {kc} {mf} {rows}: {sk:?}");
            }
        }
    }
}
