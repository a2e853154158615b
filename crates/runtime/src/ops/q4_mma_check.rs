//! A self-check of the f16 tensor-core kernels (`q4_linear_bwd_mma_*`, `q4_linear_fwd_mma_*`)
//! on the device at hand, run once per backend before the first graph takes one: a small
//! problem of every variant the runtime may launch (32 x 128 and 128 x 128 tiles, whole and
//! split, backward and forward), with activation rows of very different sizes, against an
//! f64 reference. A driver that runs the kernel
//! wrong (session 10 met one such trap: cooperative stores and plain loads disagreeing on
//! a shared array's offset) then costs the portable kernels' speed, never a wrong gradient.

use std::time::Duration;

use etvk_shaders::ShaderId;
use etvk_vulkan::{Access, Buffer, CommandBuffer, DescriptorPool, Fence, MemoryKind};

use crate::api::Result;
use crate::backend::BackendInner;
use crate::error::internal;
use crate::prepack::q4::words_to_bytes;
use etvk_format::f16::{f16_to_f32, f32_to_f16};

/// One variant to check: its shader, rows per tile, the split-K slice length (0: whole),
/// whether it is the forward form (`-DFORWARD=1`: x [M][K] times W^T, plus a bias), whether
/// that takes fp16 activations (`-DX16=1`: x values exact in fp16), and whether it keeps
/// the weight scales out of the MMAs (`-DCODES=1`: checked with groups of 16, the 136-k rows'
/// last group partial).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Variant {
    pub(crate) shader: ShaderId,
    pub(crate) rows: u32,
    pub(crate) slice: u32,
    pub(crate) forward: bool,
    pub(crate) x16: bool,
    pub(crate) codes: bool,
}

/// Sizes of the check: M rows (two row tiles, the last partial), N = 96 reduction rows (3
/// steps; split: slices of 64 and 32), d_x rows of 136 (two column tiles, the last
/// partial), groups of 8 (17 per row; 16 for the codes form, 9 per row).
const N: u32 = 96;
const K: u32 = 136;
const GS: u32 = 8;
const GS_CODES: u32 = 16;

/// Runs `v` on a fixed pseudo-random problem; `Ok(None)` when it matches the f64 reference
/// (each d_x row within 1e-5 relative), else `Ok(Some(why))`.
pub(crate) fn check(be: &BackendInner, v: Variant) -> Result<Option<String>> {
    let ctx = &be.ctx;
    let m = v.rows + v.rows / 2 + 1;
    let gs32 = if v.codes { GS_CODES } else { GS };
    let (n, k, gs) = (N as usize, K as usize, gs32 as usize);
    let (mu, kw, groups) = (m as usize, k / 8, k.div_ceil(gs));
    let mut next =
        check_stream(0x9E37_79B9_7F4A_7C15u64 ^ u64::from(v.rows) ^ u64::from(v.slice) << 8);
    let words: Vec<u32> = (0..n * kw).map(|_| next()).collect();
    // next() is below 2^31: uniform in [0, 1) after the division.
    let unit = |x: u32| x as f32 / (1u32 << 31) as f32;
    let scales: Vec<f32> = (0..n * groups)
        .map(|_| 0.005 + 0.01 * unit(next()))
        .collect();
    // Sizes that differ between rows and between 32-value blocks of a row, so that the
    // slices (64 and 32 values) have scales of their own.
    let size = [1.0f32, 1e-6, 3e3, 0.02];
    // The reduction's length and the output row's: the weight's rows and columns swap
    // between the backward (d_out [M][N] -> d_x [M][K]) and the forward (x [M][K] -> out
    // [M][N]).
    let (red, cols) = if v.forward { (K, N) } else { (N, K) };
    let (redu, colsu) = (red as usize, cols as usize);
    let dy: Vec<f32> = (0..mu * redu)
        .map(|i| (2.0 * unit(next()) - 1.0) * size[(i / redu + (i % redu) / 32) % 4])
        .map(|a| if v.x16 { f16_to_f32(f32_to_f16(a)) } else { a })
        .collect();
    let bias: Vec<f32> = (0..colsu).map(|_| 2.0 * unit(next()) - 1.0).collect();
    let w_at = |r: usize, c: usize| {
        let code = (words[r * kw + c / 8] >> (4 * (c % 8))) & 15;
        (f64::from(code) - 8.0) * f64::from(scales[r * groups + c / gs])
    };

    let slices = if v.slice == 0 {
        1
    } else {
        red.div_ceil(v.slice)
    };
    let tiles = m.div_ceil(v.rows) * cols.div_ceil(128);
    let out_floats = (slices * m * cols) as u64;
    let split = v.slice != 0;
    let f32_bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let inputs = [
        words_to_bytes(&f32_bits(&dy)),
        words_to_bytes(&words),
        words_to_bytes(&f32_bits(&crate::prepack::q4::pack_q4_scales(
            &scales, n, groups,
        ))),
        words_to_bytes(&crate::prepack::q4::group_scale_peaks(&scales, n, groups)),
        // The split variants' per-tile counters of finished slices, zero between launches.
        words_to_bytes(&vec![0u32; tiles as usize]),
        words_to_bytes(&f32_bits(&bias)),
    ];
    let (ups, devs) = staged_inputs(ctx, &inputs)?;
    // The pre-pass's scale per d_out row and slice.
    let rowscale = Buffer::new(ctx, u64::from(m * slices) * 4, MemoryKind::DeviceLocal)?;
    // The pre-pass's fp16 hi / lo pairs of d_out.
    let pair_words = 2 * crate::ops::q4_linear::bwd_pair_words(redu) as u64;
    let pairs = Buffer::new(ctx, u64::from(m) * pair_words * 4, MemoryKind::DeviceLocal)?;
    let out = Buffer::new(ctx, out_floats * 4, MemoryKind::DeviceLocal)?;
    // d_x itself: the split variants' last workgroup of each tile sums the slices into it.
    let dx = Buffer::new(ctx, u64::from(m * cols) * 4, MemoryKind::DeviceLocal)?;
    let dx_floats = u64::from(m * cols);
    let back = Buffer::new(
        ctx,
        dx_floats * 4 + u64::from(tiles) * 4,
        MemoryKind::Readback,
    )?;

    let pre = be.pipeline(ShaderId::Q4BwdRowscale, [256, 1, 1], &[])?;
    let main = be.pipeline(v.shader, [256, 1, 1], &[])?;
    let mut pool = DescriptorPool::new(ctx, 2, 12)?;
    let pre_set = pool.allocate(&pre, &[&rowscale, &devs[0], &pairs])?;
    let main_set = if split && v.forward {
        pool.allocate(
            &main,
            &[
                &out, &pairs, &devs[1], &devs[2], &rowscale, &devs[3], &devs[4], &dx, &devs[5],
            ],
        )?
    } else if split {
        pool.allocate(
            &main,
            &[
                &out, &pairs, &devs[1], &devs[2], &rowscale, &devs[3], &devs[4], &dx,
            ],
        )?
    } else if v.forward {
        pool.allocate(
            &main,
            &[
                &out, &pairs, &devs[1], &devs[2], &rowscale, &devs[3], &devs[5],
            ],
        )?
    } else {
        pool.allocate(
            &main,
            &[&out, &pairs, &devs[1], &devs[2], &rowscale, &devs[3]],
        )?
    };
    let slice_len = if v.slice == 0 { red } else { v.slice };
    let pre_push = words_to_bytes(&[m, red, slice_len]);
    let has_bias = u32::from(v.forward);
    let main_push = words_to_bytes(&[
        m,
        red,
        cols,
        K / 8,
        K.div_ceil(gs32),
        gs32,
        has_bias,
        slice_len,
    ]);

    let mut cb = CommandBuffer::new(ctx)?;
    cb.begin()?;
    for (up, dev) in ups.iter().zip(&devs) {
        cb.copy(up, 0, dev, 0, dev.size())?;
    }
    cb.barrier(Access::Transfer, Access::Compute)?;
    cb.dispatch(&pre, pre_set, &pre_push, [m * slices, 1, 1])?;
    cb.barrier(Access::Compute, Access::Compute)?;
    cb.dispatch(&main, main_set, &main_push, [tiles * slices, 1, 1])?;
    cb.barrier(Access::Compute, Access::Transfer)?;
    cb.copy(if split { &dx } else { &out }, 0, &back, 0, dx_floats * 4)?;
    cb.copy(&devs[4], 0, &back, dx_floats * 4, u64::from(tiles) * 4)?;
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(Duration::from_secs(60), "tensor-core backward self-check")?;
    let mut raw = vec![0u8; ((dx_floats + u64::from(tiles)) * 4) as usize];
    back.read(0, &mut raw)?;
    let words: Vec<u32> = raw
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let (got, counters) = words.split_at(dx_floats as usize);
    if let Some(c) = counters.iter().find(|&&c| c != 0) {
        return Ok(Some(format!(
            "a tile's slice counter was left at {c}, not 0"
        )));
    }

    Ok(rows_off(got, mu, colsu, |row, c| {
        if v.forward {
            (0..redu)
                .map(|r| f64::from(dy[row * redu + r]) * w_at(c, r))
                .sum::<f64>()
                + f64::from(bias[c])
        } else {
            (0..redu)
                .map(|r| f64::from(dy[row * redu + r]) * w_at(r, c))
                .sum()
        }
    }))
}

/// The variants the runtime may launch, backward and forward: the native ones (with the 128
/// x 128 tiles that fit in `shared` bytes of shared memory), or the emulated 32 x 128 ones.
pub(crate) fn variants(emulated: bool, shared: u32) -> Vec<Variant> {
    use crate::ops::q4_linear::{BWD_MMA_T128_SHARED_BYTES, FWD_MMA_T128_SHARED_BYTES};
    let v = |shader, rows, slice| Variant {
        shader,
        rows,
        slice,
        forward: false,
        x16: false,
        codes: false,
    };
    let fwd = |shader, rows| Variant {
        shader,
        rows,
        slice: 0,
        forward: true,
        x16: false,
        codes: false,
    };
    let fwd16 = |shader, rows| Variant {
        x16: true,
        ..fwd(shader, rows)
    };
    let codes = |v: Variant| Variant { codes: true, ..v };
    // The codes forward split into slices of 64 k (the 136-k rows: 64, 64, 8).
    let split = |v: Variant| Variant { slice: 64, ..v };
    if emulated {
        return vec![
            v(ShaderId::Q4LinearBwdMmaEmuT32x128, 32, 0),
            v(ShaderId::Q4LinearBwdMmaEmuT32x128Split, 32, 64),
            // The native 128 x 128 backward's two sets of 16-row step tiles, at 32 rows (its
            // own 47120 bytes pass lavapipe's 32 KiB).
            v(ShaderId::Q4LinearBwdMmaEmuT32x128Dbuf, 32, 0),
            v(ShaderId::Q4LinearBwdMmaEmuT32x128DbufSplit, 32, 64),
            fwd(ShaderId::Q4LinearFwdMmaEmuT32x128, 32),
            fwd16(ShaderId::Q4LinearFwdMmaX16EmuT32x128, 32),
            codes(fwd(ShaderId::Q4LinearFwdMmaCEmuT32x128, 32)),
            codes(fwd16(ShaderId::Q4LinearFwdMmaCX16EmuT32x128, 32)),
            split(codes(fwd(ShaderId::Q4LinearFwdMmaCEmuT32x128Split, 32))),
            split(codes(fwd16(
                ShaderId::Q4LinearFwdMmaCX16EmuT32x128Split,
                32,
            ))),
        ];
    }
    let mut all = vec![
        v(ShaderId::Q4LinearBwdMmaT32x128, 32, 0),
        v(ShaderId::Q4LinearBwdMmaT32x128Split, 32, 64),
        fwd(ShaderId::Q4LinearFwdMmaT32x128, 32),
        fwd16(ShaderId::Q4LinearFwdMmaX16T32x128, 32),
        codes(fwd(ShaderId::Q4LinearFwdMmaCT32x128, 32)),
        codes(fwd16(ShaderId::Q4LinearFwdMmaCX16T32x128, 32)),
        split(codes(fwd(ShaderId::Q4LinearFwdMmaCT32x128Split, 32))),
        split(codes(fwd16(ShaderId::Q4LinearFwdMmaCX16T32x128Split, 32))),
    ];
    if shared >= BWD_MMA_T128_SHARED_BYTES {
        all.push(v(ShaderId::Q4LinearBwdMmaT128, 128, 0));
        all.push(v(ShaderId::Q4LinearBwdMmaT128Split, 128, 64));
    }
    if shared >= FWD_MMA_T128_SHARED_BYTES {
        all.push(fwd(ShaderId::Q4LinearFwdMmaT128, 128));
        all.push(fwd16(ShaderId::Q4LinearFwdMmaX16T128, 128));
        all.push(codes(fwd(ShaderId::Q4LinearFwdMmaCT128, 128)));
        all.push(codes(fwd16(ShaderId::Q4LinearFwdMmaCX16T128, 128)));
        all.push(split(codes(fwd(ShaderId::Q4LinearFwdMmaCT128Split, 128))));
        all.push(split(codes(fwd16(
            ShaderId::Q4LinearFwdMmaCX16T128Split,
            128,
        ))));
    }
    all
}

/// Upload buffers holding `inputs` and device buffers of their sizes (a self-check copies
/// the first into the second in its command buffer).
pub(crate) fn staged_inputs(
    ctx: &std::sync::Arc<etvk_vulkan::Context>,
    inputs: &[Vec<u8>],
) -> Result<(Vec<Buffer>, Vec<Buffer>)> {
    let mut ups = Vec::new();
    let mut devs = Vec::new();
    for data in inputs {
        let up = Buffer::new(ctx, data.len() as u64, MemoryKind::Upload)?;
        up.write(0, data)?;
        devs.push(Buffer::new(
            ctx,
            data.len() as u64,
            MemoryKind::DeviceLocal,
        )?);
        ups.push(up);
    }
    Ok((ups, devs))
}

/// Checks every variant in `list`; `Ok(None)` when all match, else the first failure.
pub(crate) fn check_all(be: &BackendInner, list: &[Variant]) -> Result<Option<String>> {
    if list.is_empty() {
        return Err(internal("no tensor-core f16 variant to check"));
    }
    for v in list {
        if let Some(why) = check(be, *v)? {
            return Ok(Some(format!("{}: {why}", v.shader.info().name)));
        }
    }
    Ok(None)
}

/// The int8 tensor-core forward (`q4_linear_mma_f{1,2,4}`, after its `q4_mma_limbs` node) on
/// a fixed problem: M = 13 activation rows of very different sizes (two row tiles at one
/// fragment, the last partial; one partial tile at two and four), N = 136 weight rows (two
/// 128-row strips, the last partial; one partial strip of the register form's 256 or 512
/// rows, whose launch here then holds workgroups that leave at once), K = 280
/// (9 chunks, the last partial) in three split-K slices of 4 chunks (the last of 1), summed
/// with the bias by `q4_linear_reduce` as in a graph, groups of 64 (the last partial); each
/// output row within 1e-5 of the f64 reference. `Ok(None)` when it matches, `Ok(Some(why))`
/// otherwise.
pub(crate) fn check_int8(
    be: &BackendInner,
    shader: ShaderId,
    frags: u32,
    spec: &[u32],
) -> Result<Option<String>> {
    const M: u32 = 13;
    const N: u32 = 136;
    const K: u32 = 280;
    const KC: u32 = 9; // chunks of the packed rows (K padded to 288)
    const GS: u32 = 64;
    const SLICE: u32 = 4; // chunks per split-K slice: a whole number of steps of 2 or 4
    let ctx = &be.ctx;
    let (mu, nu, ku) = (M as usize, N as usize, K as usize);
    let kw = (KC * 4) as usize;
    let groups = (KC * 32).div_ceil(GS) as usize;
    let mut next = check_stream(0x2545_F491_4F6C_DD1Du64 ^ u64::from(frags));
    let unit = |x: u32| x as f32 / (1u32 << 31) as f32;
    let words: Vec<u32> = (0..nu * kw).map(|_| next()).collect();
    let scales: Vec<f32> = (0..nu * groups)
        .map(|_| 0.005 + 0.01 * unit(next()))
        .collect();
    let size = [1.0f32, 1e-6, 3e3, 0.02];
    let x: Vec<f32> = (0..mu * ku)
        .map(|i| (2.0 * unit(next()) - 1.0) * size[(i / ku + (i % ku) / 32) % 4])
        .collect();
    let bias: Vec<f32> = (0..nu).map(|_| 2.0 * unit(next()) - 1.0).collect();
    let rows = M.next_multiple_of(8 * frags); // limb rows: whole fragments
    let mtiles = M.div_ceil(8 * frags);
    let strips = N.div_ceil(128);
    let slices = KC.div_ceil(SLICE);
    let tiles = strips * mtiles;
    let total = M * N;
    let f32_bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let inputs = [
        words_to_bytes(&f32_bits(&x)),
        words_to_bytes(&words),
        words_to_bytes(&f32_bits(&crate::prepack::q4::pack_q4_scales(
            &scales, nu, groups,
        ))),
        words_to_bytes(&f32_bits(&bias)),
    ];
    let (ups, devs) = staged_inputs(ctx, &inputs)?;
    let limbs = Buffer::new(
        ctx,
        u64::from(3 * KC * rows * 8) * 4,
        MemoryKind::DeviceLocal,
    )?;
    let side = Buffer::new(ctx, u64::from(KC * rows * 2) * 4, MemoryKind::DeviceLocal)?;
    let out = Buffer::new(ctx, u64::from(M * N) * 4, MemoryKind::DeviceLocal)?;
    let part = Buffer::new(ctx, u64::from(slices * M * N) * 4, MemoryKind::DeviceLocal)?;
    let back = Buffer::new(ctx, u64::from(total) * 4, MemoryKind::Readback)?;

    let pre = be.pipeline(ShaderId::Q4MmaLimbs, [64, 1, 1], &[])?;
    let main = be.pipeline(shader, [256, 1, 1], spec)?;
    let reduce = be.pipeline(ShaderId::Q4LinearReduce, [64, 1, 1], &[])?;
    let mut pool = DescriptorPool::new(ctx, 3, 13)?;
    let pre_set = pool.allocate(&pre, &[&limbs, &side, &devs[0]])?;
    let main_set = pool.allocate(
        &main,
        &[&out, &part, &limbs, &side, &devs[1], &devs[2], &devs[3]],
    )?;
    let reduce_set = pool.allocate(&reduce, &[&out, &part, &devs[3]])?;
    let pre_push =
        crate::ops::q4_linear::limbs_launch(ku, kw / 4, mu, Some(rows as usize), true)?.push;
    let chunks_per_group = GS / 32;
    let main_push = words_to_bytes(&[
        M,
        N,
        KC,
        groups as u32,
        chunks_per_group | 1 << 16,
        rows,
        mtiles,
        slices | SLICE << 16,
    ]);

    let mut cb = CommandBuffer::new(ctx)?;
    cb.begin()?;
    for (up, dev) in ups.iter().zip(&devs) {
        cb.copy(up, 0, dev, 0, dev.size())?;
    }
    cb.barrier(Access::Transfer, Access::Compute)?;
    // Two workgroups for the 144 or 288 (row, chunk) items: each walks its groups of 8
    // several times, as a graph's capped launch does on large inputs.
    cb.dispatch(&pre, pre_set, &pre_push, [2, 1, 1])?;
    cb.barrier(Access::Compute, Access::Compute)?;
    cb.dispatch(&main, main_set, &main_push, [tiles * slices, 1, 1])?;
    cb.barrier(Access::Compute, Access::Compute)?;
    let reduce_push = crate::ops::q4_linear::reduce_launch(mu, nu, nu, slices as usize, true)?.push;
    cb.dispatch(
        &reduce,
        reduce_set,
        &reduce_push,
        [total.div_ceil(64), 1, 1],
    )?;
    cb.barrier(Access::Compute, Access::Transfer)?;
    cb.copy(&out, 0, &back, 0, u64::from(total) * 4)?;
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(
        Duration::from_secs(60),
        "int8 tensor-core forward self-check",
    )?;
    let mut raw = vec![0u8; (total * 4) as usize];
    back.read(0, &mut raw)?;
    let got: Vec<u32> = raw
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let w_at = |n: usize, k: usize| {
        let code = (words[n * kw + k / 8] >> (4 * (k % 8))) & 15;
        (f64::from(code) - 8.0) * f64::from(scales[n * groups + k / GS as usize])
    };
    Ok(rows_off(&got, mu, nu, |row, n| {
        (0..ku)
            .map(|k| f64::from(x[row * ku + k]) * w_at(n, k))
            .sum::<f64>()
            + f64::from(bias[n])
    }))
}

/// [`check_int8`] of the three fragment counts' kernels, native or `emulated`; the first
/// failure names its kernel.
pub(crate) fn check_int8_all(be: &BackendInner, emulated: bool) -> Result<Option<String>> {
    let kernels = if emulated {
        [
            ShaderId::Q4LinearMmaEmuF1,
            ShaderId::Q4LinearMmaEmuF2,
            ShaderId::Q4LinearMmaEmuF4,
        ]
    } else {
        [
            ShaderId::Q4LinearMmaF1,
            ShaderId::Q4LinearMmaF2,
            ShaderId::Q4LinearMmaF4,
        ]
    };
    check_int8_kernels(be, kernels, &[])
}

/// [`check_int8`] of the register-operand form's kernels (`q4_linear_mma_reg_*`, one, two
/// and four fragments), native (with its element maps `spec`) or `emulated`.
pub(crate) fn check_int8_reg_all(
    be: &BackendInner,
    emulated: bool,
    spec: &[u32],
) -> Result<Option<String>> {
    let kernels = if emulated {
        [
            ShaderId::Q4LinearMmaRegEmuF1,
            ShaderId::Q4LinearMmaRegEmuF2,
            ShaderId::Q4LinearMmaRegEmuF4,
        ]
    } else {
        [
            ShaderId::Q4LinearMmaRegF1,
            ShaderId::Q4LinearMmaRegF2,
            ShaderId::Q4LinearMmaRegF4,
        ]
    };
    check_int8_kernels(be, kernels, spec)
}

/// [`check_int8`] of one, two and four fragments' `kernels`; the first failure names its
/// kernel.
fn check_int8_kernels(
    be: &BackendInner,
    kernels: [ShaderId; 3],
    spec: &[u32],
) -> Result<Option<String>> {
    for (shader, frags) in kernels.into_iter().zip([1, 2, 4]) {
        if let Some(why) = check_int8(be, shader, frags, spec)? {
            return Ok(Some(format!("{}: {why}", shader.info().name)));
        }
    }
    Ok(None)
}

/// Words per invocation of `q4_mma_layout_probe`'s output.
const PROBE_WORDS: usize = 52;

/// The register-operand forward's element maps on this device (its specialization constants
/// 3..=6: A_MAP0, A_MAP1, B_MAP, C_MAP; `q4_linear_mma_reg.comp`) from
/// `q4_mma_layout_probe`: `Ok(Ok(maps))`, or `Ok(Err(why))` when the driver's fragments put
/// rows, k or columns in other invocations than the m16n8k32 MMA's (invocation 4g + q: A rows
/// g and g + 8 at k 4q .. 4q + 3 and 16 + 4q .., B column g at the same k, accumulator rows
/// g, g + 8 and columns 2q, 2q + 1), with the first invocation that differs.
pub(crate) fn int8_reg_layout(be: &BackendInner) -> Result<std::result::Result<[u32; 4], String>> {
    let ctx = &be.ctx;
    let bytes = (32 * PROBE_WORDS * 4) as u64;
    let out = Buffer::new(ctx, bytes, MemoryKind::DeviceLocal)?;
    let back = Buffer::new(ctx, bytes, MemoryKind::Readback)?;
    let pipe = be.pipeline(ShaderId::Q4MmaLayoutProbe, [32, 1, 1], &[])?;
    let mut pool = DescriptorPool::new(ctx, 1, 1)?;
    let set = pool.allocate(&pipe, &[&out])?;
    let mut cb = CommandBuffer::new(ctx)?;
    cb.begin()?;
    cb.dispatch(&pipe, set, &[], [1, 1, 1])?;
    cb.barrier(Access::Compute, Access::Transfer)?;
    cb.copy(&out, 0, &back, 0, bytes)?;
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(Duration::from_secs(60), "cooperative-matrix layout probe")?;
    let mut raw = vec![0u8; bytes as usize];
    back.read(0, &mut raw)?;
    let words: Vec<u32> = raw
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    Ok(reg_maps_from_probe(&words))
}

/// [`int8_reg_layout`]'s maps from the probe's words (`PROBE_WORDS` per invocation).
pub(crate) fn reg_maps_from_probe(words: &[u32]) -> std::result::Result<[u32; 4], String> {
    let mut maps: Option<[u32; 4]> = None;
    for lane in 0..32u32 {
        let w = &words[lane as usize * PROBE_WORDS..][..PROBE_WORDS];
        let (g, q) = (lane / 4, lane % 4);
        let bad = |what: &str| Err(format!("invocation {lane}: {what}: {:?}", w));
        if w[51] & 0x8000_0000 != 0 {
            return bad("fragments of other lengths than 16 / 8 / 4");
        }
        // The k of invocation q's slots: 4q .. 4q + 3 (even nibbles / the even-k limb word),
        // 16 + 4q .. (odd nibbles / the odd-k word).
        let slot = |k: u32| match k {
            k if (4 * q..4 * q + 4).contains(&k) => Some((0, k - 4 * q)),
            k if (16 + 4 * q..16 + 4 * q + 4).contains(&k) => Some((1, k - 16 - 4 * q)),
            _ => None,
        };
        let mut m = [0u32; 4];
        for i in 0..16 {
            let (row, k) = (w[i], w[16 + i]);
            let half = match row {
                r if r == g => 0,
                r if r == g + 8 => 1,
                _ => return bad("A row"),
            };
            let Some((odd, byte)) = slot(k) else {
                return bad("A k");
            };
            m[i / 8] |= ((half << 3) | (2 * byte + odd)) << (4 * (i % 8));
        }
        for i in 0..8 {
            let (k, col) = (w[32 + i], w[40 + i]);
            if col != g {
                return bad("B column");
            }
            let Some((odd, byte)) = slot(k) else {
                return bad("B k");
            };
            m[2] |= ((odd << 2) | byte) << (4 * i);
        }
        for e in 0..4 {
            let (row, col) = (w[48 + e] / 8, w[48 + e] % 8);
            let half = match row {
                r if r == g => 0,
                r if r == g + 8 => 1,
                _ => return bad("accumulator row"),
            };
            if col / 2 != q {
                return bad("accumulator column");
            }
            m[3] |= ((half << 1) | (col % 2)) << (4 * e);
        }
        match maps {
            None => maps = Some(m),
            Some(first) if first != m => return bad("element order unlike invocation 0's"),
            Some(_) => {}
        }
    }
    maps.ok_or_else(|| "no invocations".to_string())
}

/// The self-checks' pseudo-random stream from `seed` (an LCG's high bits: below 2^31).
pub(crate) fn check_stream(seed: u64) -> impl FnMut() -> u32 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as u32
    }
}

/// Rows of `cols` fp32 results (`got`, bits) against `want(row, col)`: `Some(why)` for the
/// first non-finite value or row whose relative error passes 1e-5.
pub(crate) fn rows_off(
    got: &[u32],
    rows: usize,
    cols: usize,
    want: impl Fn(usize, usize) -> f64,
) -> Option<String> {
    for row in 0..rows {
        let (mut num, mut den) = (0f64, 0f64);
        for c in 0..cols {
            let w = want(row, c);
            let g = f64::from(f32::from_bits(got[row * cols + c]));
            if !g.is_finite() {
                return Some(format!("row {row} column {c}: {g}"));
            }
            num += (g - w).powi(2);
            den += w * w;
        }
        let rel = (num / den.max(1e-300)).sqrt();
        if rel > 1e-5 {
            return Some(format!("row {row}: relative error {rel:e}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's words for fragments in PTX's m16n8k32 register order (element 4r + b =
    /// byte b of register r), with A's registers in `a_regs` order.
    fn ptx_probe(a_regs: [u32; 4]) -> Vec<u32> {
        let mut w = vec![0u32; 32 * PROBE_WORDS];
        for lane in 0..32u32 {
            let (g, q) = (lane / 4, lane % 4);
            let o = lane as usize * PROBE_WORDS;
            for i in 0..16u32 {
                let r = a_regs[(i / 4) as usize];
                w[o + i as usize] = g + 8 * (r % 2);
                w[o + 16 + i as usize] = 4 * q + i % 4 + 16 * (r / 2);
            }
            for i in 0..8u32 {
                w[o + 32 + i as usize] = 4 * q + i % 4 + 16 * (i / 4);
                w[o + 40 + i as usize] = g;
            }
            for e in 0..4u32 {
                w[o + 48 + e as usize] = (g + 8 * (e / 2)) * 8 + 2 * q + e % 2;
            }
        }
        w
    }

    /// The PTX order gives the shader's default maps; another register order gives other
    /// maps; rows in other invocations are refused, naming the invocation.
    #[test]
    fn element_maps_from_the_layout_probe() {
        assert_eq!(
            reg_maps_from_probe(&ptx_probe([0, 1, 2, 3])),
            Ok([0xECA8_6420, 0xFDB9_7531, 0x7654_3210, 0x3210])
        );
        // Registers a0, a2, a1, a3: row g's k first, then row g + 8's.
        assert_eq!(
            reg_maps_from_probe(&ptx_probe([0, 2, 1, 3])),
            Ok([0x7531_6420, 0xFDB9_ECA8, 0x7654_3210, 0x3210])
        );
        let mut w = ptx_probe([0, 1, 2, 3]);
        w[5 * PROBE_WORDS] = 7; // invocation 5 (g = 1) holding row 7
        let e = reg_maps_from_probe(&w).unwrap_err();
        assert!(e.starts_with("invocation 5: A row"), "{e}");
    }
}
