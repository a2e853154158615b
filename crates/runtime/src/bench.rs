//! Measurement helpers for `etvk bench`: the device's memory ceilings, measured with GPU
//! timestamps in the same process as the kernels they are compared with.
//!
//! Method (see docs/performance.md): warm-up, then `reps` timed dispatches, each bracketed by
//! timestamps, a full barrier after each (outside its interval); the median is reported.

use std::time::Duration;

use etvk_shaders::ShaderId;
use etvk_vulkan::{Access, Buffer, CommandBuffer, DescriptorPool, Fence, MemoryKind, QueryPool};

use crate::api::{Backend, Result};
use crate::error::unsupported;

/// A bandwidth measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bandwidth {
    /// Bytes counted per repetition (read, or read + written for a copy).
    pub bytes: u64,
    /// Median GPU time of one repetition, microseconds.
    pub median_us: f64,
    /// `bytes / median` in GB/s (1e9 bytes per second).
    pub gbps: f64,
}

/// Median of a non-empty slice (sorted copy).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    v[v.len() / 2]
}

/// Working set of the rotating read: above the H200's 60 MB L2 several times over.
const ROTATING_SET_BYTES: u64 = 256 << 20;

/// Benchmarks time with GPU timestamps: refused on queues without them.
fn require_timestamps(ctx: &etvk_vulkan::Context) -> Result<()> {
    if ctx.caps().timestamps {
        Ok(())
    } else {
        Err(unsupported(format!(
            "{}: the compute queue has no timestamps",
            ctx.description()
        )))
    }
}

/// Record `total` repetitions of `dispatch`, each between timestamps 2r and 2r + 1 and
/// followed by a full compute barrier (so that repetitions do not overlap). The barrier is
/// outside the timed interval, as between the nodes of a profiled graph.
fn record_timed(
    cb: &mut CommandBuffer,
    queries: &QueryPool,
    total: u32,
    mut dispatch: impl FnMut(&mut CommandBuffer, u32) -> etvk_vulkan::VkResult<()>,
) -> Result<()> {
    for r in 0..total {
        cb.timestamp(queries, 2 * r)?;
        dispatch(cb, r)?;
        cb.timestamp(queries, 2 * r + 1)?;
        cb.barrier(Access::Compute, Access::Compute)?;
    }
    Ok(())
}

/// Median microseconds of repetitions `warmup..total` recorded by [`record_timed`].
fn timed_median_us(queries: &QueryPool, warmup: u32, total: u32, period_ns: f32) -> Result<f64> {
    let ticks = queries.read(0, 2 * total)?;
    let period = f64::from(period_ns);
    let times: Vec<f64> = (warmup..total)
        .map(|r| {
            let (t0, t1) = (ticks[2 * r as usize], ticks[2 * r as usize + 1]);
            t1.wrapping_sub(t0) as f64 * period / 1e3
        })
        .collect();
    Ok(median(&times))
}

/// What a streaming benchmark's source buffers hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceData {
    /// Pseudo-random words, like weights: what every ceiling is measured on.
    Random,
    /// Zeros: only to show how much faster a driver may read data it can compress.
    Zero,
}

fn stream(
    backend: &Backend,
    shader: ShaderId,
    bytes: u64,
    reps: u32,
    copies: u32,
    data: SourceData,
    groups: Option<u32>,
) -> Result<Bandwidth> {
    let inner = backend.inner();
    let ctx = &inner.ctx;
    let caps = ctx.caps();
    require_timestamps(ctx)?;
    let bytes = bytes.min(caps.max_storage_buffer_range as u64) / 16 * 16;
    let elem = match shader {
        ShaderId::BenchReadWords => 4,
        ShaderId::BenchReadPairs => 8,
        _ => 16,
    };
    let n_vec4 = u32::try_from(bytes / elem).map_err(|_| unsupported("bench buffer too large"))?;
    let copy = shader == ShaderId::BenchCopy;
    let copies = copies.max(1);
    let srcs = (0..copies)
        .map(|_| Buffer::new(ctx, bytes, MemoryKind::DeviceLocal))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let dst = Buffer::new(ctx, if copy { bytes } else { 16 }, MemoryKind::DeviceLocal)?;
    let pipeline = inner.pipeline(shader, [256, 1, 1], &[])?;
    let fill = inner.pipeline(ShaderId::BenchFillRandom, [256, 1, 1], &[])?;
    let mut pool = DescriptorPool::new(ctx, 2 * copies, 3 * copies)?;
    let sets = srcs
        .iter()
        .map(|src| pool.allocate(&pipeline, &[&dst, src]))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let fill_sets = srcs
        .iter()
        .map(|src| pool.allocate(&fill, &[src]))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    // Enough invocations to fill any GPU, few enough to stay in range everywhere.
    let groups = groups
        .unwrap_or(u32::MAX)
        .min(caps.max_workgroup_count[0])
        .min(65535)
        .min(n_vec4.div_ceil(256))
        .max(1);
    let stride = groups * 256;
    let mut push = Vec::with_capacity(8);
    push.extend_from_slice(&n_vec4.to_le_bytes());
    push.extend_from_slice(&stride.to_le_bytes());
    let warmup = 2u32;
    let total = warmup + reps;
    let queries = QueryPool::new(ctx, 2 * total)?;
    let mut cb = CommandBuffer::new(ctx)?;
    cb.begin()?;
    cb.reset_queries(&queries, 0, 2 * total)?;
    match data {
        SourceData::Zero => {
            for src in &srcs {
                cb.zero(src)?;
            }
            cb.barrier(Access::Transfer, Access::Compute)?;
        }
        SourceData::Random => {
            let words =
                u32::try_from(bytes / 4).map_err(|_| unsupported("bench buffer too large"))?;
            for (seed, set) in fill_sets.iter().enumerate() {
                record_random_fill(&mut cb, caps, &fill, *set, words, seed as u32)?;
            }
            cb.barrier(Access::Compute, Access::Compute)?;
        }
    }
    record_timed(&mut cb, &queries, total, |cb, r| {
        cb.dispatch(
            &pipeline,
            sets[(r % copies) as usize],
            &push,
            [groups, 1, 1],
        )
    })?;
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(Duration::from_secs(120), "bandwidth benchmark")?;
    let median_us = timed_median_us(&queries, warmup, total, caps.timestamp_period_ns)?;
    let counted = if copy { 2 * bytes } else { bytes };
    Ok(Bandwidth {
        bytes: counted,
        median_us,
        gbps: counted as f64 / (median_us * 1e-6) / 1e9,
    })
}

/// Record `bench_fill_random` over `words` u32 words of the buffer bound in `set`.
fn record_random_fill(
    cb: &mut CommandBuffer,
    caps: &etvk_vulkan::DeviceCaps,
    fill: &etvk_vulkan::ComputePipeline,
    set: etvk_vulkan::DescriptorSet,
    words: u32,
    seed: u32,
) -> Result<()> {
    let groups = caps.max_workgroup_count[0]
        .min(65535)
        .min(words.div_ceil(256).max(1));
    let push: Vec<u8> = [words, groups * 256, seed]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    cb.dispatch(fill, set, &push, [groups, 1, 1])?;
    Ok(())
}

/// The words a benchmark source buffer of `n_words` holds when filled with `seed` (what
/// `bench_fill_random.comp` writes), read back: for tests of the fill.
pub fn random_words(backend: &Backend, n_words: u32, seed: u32) -> Result<Vec<u32>> {
    let inner = backend.inner();
    let ctx = &inner.ctx;
    let bytes = u64::from(n_words.max(1)) * 4;
    let dev = Buffer::new(ctx, bytes, MemoryKind::DeviceLocal)?;
    let back = Buffer::new(ctx, bytes, MemoryKind::Readback)?;
    let fill = inner.pipeline(ShaderId::BenchFillRandom, [256, 1, 1], &[])?;
    let mut pool = DescriptorPool::new(ctx, 1, 1)?;
    let set = pool.allocate(&fill, &[&dev])?;
    let mut cb = CommandBuffer::new(ctx)?;
    cb.begin()?;
    record_random_fill(&mut cb, ctx.caps(), &fill, set, n_words, seed)?;
    cb.barrier(Access::Compute, Access::Transfer)?;
    cb.copy(&dev, 0, &back, 0, bytes)?;
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(Duration::from_secs(120), "random fill")?;
    let mut raw = vec![0u8; bytes as usize];
    back.read(0, &mut raw)?;
    Ok(raw
        .chunks_exact(4)
        .take(n_words as usize)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect())
}

/// The read ceiling: a plain uvec4 read of pseudo-random data over `bytes` (capped at the
/// storage range).
pub fn read_ceiling(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    stream(
        backend,
        ShaderId::BenchRead,
        bytes,
        reps,
        1,
        SourceData::Random,
        None,
    )
}

/// [`read_ceiling`] over a buffer of `data` (zeros: how much a driver's compression of such
/// data would flatter a ceiling).
pub fn read_ceiling_of(
    backend: &Backend,
    bytes: u64,
    reps: u32,
    data: SourceData,
) -> Result<Bandwidth> {
    stream(backend, ShaderId::BenchRead, bytes, reps, 1, data, None)
}

/// A read of `bytes` from DRAM rather than L2: the dispatches rotate over enough buffers
/// (>= 256 MiB together) that no repetition finds its data cached. For a small kernel this
/// is the time a plain read of its bytes takes, launch and ramp included: the part of its
/// time no kernel of that size avoids.
pub fn read_rotating(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    read_rotating_in(backend, bytes, reps, None)
}

/// [`read_rotating`] in at most `groups` workgroups of 256 (None: one element per
/// invocation, up to 65535 workgroups): a grid-stride read by a launch the size of a
/// persistent kernel's, for comparison with that kernel.
pub fn read_rotating_in(
    backend: &Backend,
    bytes: u64,
    reps: u32,
    groups: Option<u32>,
) -> Result<Bandwidth> {
    let copies = ROTATING_SET_BYTES.div_ceil(bytes.max(16)).clamp(1, 64) as u32;
    stream(
        backend,
        ShaderId::BenchRead,
        bytes,
        reps,
        copies,
        SourceData::Random,
        groups,
    )
}

/// The read rate with one u32 per invocation and step (the q4 kernels' access width), for
/// comparison with [`read_ceiling`].
pub fn read_words(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    stream(
        backend,
        ShaderId::BenchReadWords,
        bytes,
        reps,
        1,
        SourceData::Random,
        None,
    )
}

/// The read rate with one uvec2 per invocation and step (the half-chunk GEMV's access width).
pub fn read_pairs(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    stream(
        backend,
        ShaderId::BenchReadPairs,
        bytes,
        reps,
        1,
        SourceData::Random,
        None,
    )
}

/// The copy rate: uvec4 copy of `bytes`, counting read + written bytes.
pub fn copy_ceiling(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    stream(
        backend,
        ShaderId::BenchCopy,
        bytes,
        reps,
        1,
        SourceData::Random,
        None,
    )
}

/// A tensor-core GEMM measured by [`coopmat_gemm`].
#[derive(Debug, Clone, PartialEq)]
pub struct CoopMatGemm {
    /// The cooperative-matrix shape used (`MxNxK types`).
    pub shape: String,
    /// Median GPU time of one GEMM, microseconds.
    pub median_us: f64,
    /// `2 M N K / median` in TFLOP/s.
    pub tflops: f64,
    /// Largest `|got - ref| / max(|ref|, 1)` against an f64 product of the same fp16-rounded
    /// operands, over every output when M N K <= 2^28, else over 4096 sampled outputs.
    pub worst_err: f64,
}

/// `D = A * B` (fp16 operands, fp32 accumulate) through NV cooperative matrices
/// (`coopmat_gemm_f16`): proves that the device's tensor-core path works and times its plain
/// form. M, N, K must be multiples of the device's f16*f16+f32->f32 tile.
pub fn coopmat_gemm(backend: &Backend, m: u32, n: u32, k: u32, reps: u32) -> Result<CoopMatGemm> {
    let inner = backend.inner();
    let ctx = &inner.ctx;
    let caps = ctx.caps();
    require_timestamps(ctx)?;
    let shape = caps
        .cooperative_matrix_nv_shapes
        .iter()
        .find(|s| s.types == "f16*f16+f32->f32")
        .cloned()
        .ok_or_else(|| {
            unsupported(format!(
                "{}: no NV cooperative matrix with f16 operands and f32 accumulate",
                ctx.description()
            ))
        })?;
    let fits = |v: u32, t: u32| v > 0 && t > 0 && v.is_multiple_of(t);
    if !(fits(m, shape.m) && fits(n, shape.n) && fits(k, shape.k)) {
        return Err(unsupported(format!(
            "coopmat GEMM: M = {m}, N = {n}, K = {k} must be positive multiples of the tile {shape}"
        )));
    }
    let (mu, nu, ku) = (m as usize, n as usize, k as usize);
    // Operands in [-1, 1] from a fixed LCG, rounded to fp16 once (the reference uses the
    // rounded values, so only the accumulation is compared).
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        crate::dtype::f32_to_f16(((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0)
    };
    let a: Vec<u16> = (0..mu * ku).map(|_| next()).collect();
    let b: Vec<u16> = (0..ku * nu).map(|_| next()).collect();
    let bytes = |v: &[u16]| v.iter().flat_map(|h| h.to_le_bytes()).collect::<Vec<u8>>();
    let (a_bytes, b_bytes) = (bytes(&a), bytes(&b));
    let up_a = Buffer::new(ctx, a_bytes.len() as u64, MemoryKind::Upload)?;
    let up_b = Buffer::new(ctx, b_bytes.len() as u64, MemoryKind::Upload)?;
    up_a.write(0, &a_bytes)?;
    up_b.write(0, &b_bytes)?;
    let dev_a = Buffer::new(ctx, a_bytes.len() as u64, MemoryKind::DeviceLocal)?;
    let dev_b = Buffer::new(ctx, b_bytes.len() as u64, MemoryKind::DeviceLocal)?;
    let d_bytes = (mu * nu * 4) as u64;
    let dev_d = Buffer::new(ctx, d_bytes, MemoryKind::DeviceLocal)?;
    let back = Buffer::new(ctx, d_bytes, MemoryKind::Readback)?;
    let pipeline = inner.pipeline(
        ShaderId::CoopmatGemmF16,
        [128, 1, 1],
        &[shape.m, shape.n, shape.k],
    )?;
    let mut pool = DescriptorPool::new(ctx, 1, 3)?;
    let set = pool.allocate(&pipeline, &[&dev_d, &dev_a, &dev_b])?;
    let push: Vec<u8> = [m, n, k].iter().flat_map(|v| v.to_le_bytes()).collect();
    // One subgroup per tile; 128 invocations hold 128 / subgroup-size subgroups.
    let per_group = (128 / caps.subgroup_size.max(1)).max(1);
    let tiles = (m / shape.m) * (n / shape.n);
    let groups = tiles.div_ceil(per_group);
    let grid = if groups <= 65535 {
        [groups, 1, 1]
    } else {
        [65535, groups.div_ceil(65535), 1]
    };
    let warmup = 2u32;
    let total = warmup + reps.max(1);
    let queries = QueryPool::new(ctx, 2 * total)?;
    let mut cb = CommandBuffer::new(ctx)?;
    cb.begin()?;
    cb.reset_queries(&queries, 0, 2 * total)?;
    cb.copy(&up_a, 0, &dev_a, 0, a_bytes.len() as u64)?;
    cb.copy(&up_b, 0, &dev_b, 0, b_bytes.len() as u64)?;
    cb.barrier(Access::Transfer, Access::Compute)?;
    record_timed(&mut cb, &queries, total, |cb, _| {
        cb.dispatch(&pipeline, set, &push, grid)
    })?;
    cb.barrier(Access::Compute, Access::Transfer)?;
    cb.copy(&dev_d, 0, &back, 0, d_bytes)?;
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(Duration::from_secs(120), "cooperative-matrix GEMM")?;
    let median_us = timed_median_us(&queries, warmup, total, caps.timestamp_period_ns)?;
    let mut out = vec![0u8; d_bytes as usize];
    back.read(0, &mut out)?;
    let af: Vec<f64> = a
        .iter()
        .map(|&h| f64::from(crate::dtype::f16_to_f32(h)))
        .collect();
    let bf: Vec<f64> = b
        .iter()
        .map(|&h| f64::from(crate::dtype::f16_to_f32(h)))
        .collect();
    // Every output of small products, 4096 sampled ones of large products (each costs K
    // multiply-adds here).
    let outputs = mu * nu;
    let checked: Vec<usize> = if outputs * ku <= 1 << 28 {
        (0..outputs).collect()
    } else {
        (0..4096u64)
            .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as usize % outputs)
            .collect()
    };
    let mut worst = 0.0f64;
    for idx in checked {
        let (i, j) = (idx / nu, idx % nu);
        let want: f64 = (0..ku).map(|l| af[i * ku + l] * bf[l * nu + j]).sum();
        let o = 4 * idx;
        let got = f64::from(f32::from_le_bytes([
            out[o],
            out[o + 1],
            out[o + 2],
            out[o + 3],
        ]));
        let e = (got - want).abs() / want.abs().max(1.0);
        worst = if e.is_nan() {
            f64::INFINITY
        } else {
            worst.max(e)
        };
    }
    Ok(CoopMatGemm {
        shape: shape.to_string(),
        median_us,
        tflops: 2.0 * f64::from(m) * f64::from(n) * f64::from(k) / (median_us * 1e-6) / 1e12,
        worst_err: worst,
    })
}

/// The operation [`alu_rate`] measures (shader `bench_alu_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AluOp {
    /// fp32 fused multiply-add.
    Ffma,
    /// A 3-input bitwise op (xor then and).
    Logic3,
    /// Packed 4 x int8 dot product with accumulate.
    Dot4I8,
    /// The wide backward's decode of one 4-bit code and its FMA: and, subtract, FMA.
    Decode,
    /// A 16 x 8 x 32 int8 MMA with int32 accumulate (NV cooperative matrices; counted as
    /// 2 * 16 * 8 * 32 integer operations).
    MmaI8,
    /// The tensor-core forward's work per chunk: three chained int8 MMAs with the
    /// accumulator scaled between them and the element-wise fp32 scaling (counted as the
    /// MMAs' integer operations, so the rate compares with [`AluOp::MmaI8`]).
    MmaChunk,
    /// [`AluOp::MmaI8`] with each round's A and three B operands loaded from shared memory
    /// (the tensor-core forward's operand traffic; counted as the MMAs' operations).
    MmaShared,
    /// [`AluOp::MmaI8`] with each round's A built element by element from registers.
    MmaBuilt,
    /// A 16 x 8 x 16 f16 MMA with fp32 accumulate (NV cooperative matrices; counted as
    /// 2 * 16 * 8 * 16 floating-point operations).
    MmaF16,
    /// The tensor-core backward's work per fragment pair: three chained f16 MMAs into a
    /// fresh tile, added to fp32 accumulators element by element (counted as the MMAs'
    /// operations, so the rate compares with [`AluOp::MmaF16`]).
    MmaF16Pair,
    /// [`AluOp::MmaF16Pair`] with each round's operands loaded from shared memory as the
    /// backward loads them (an A hi / lo pair and four B hi / lo pairs per four pairs).
    MmaF16Shared,
    /// [`AluOp::MmaF16`] with each round's A built element by element from registers (4-bit
    /// codes - 8 as fp16): against [`AluOp::MmaBuilt`], which fragment element width the
    /// driver fills cheaper.
    MmaF16Built,
}

impl AluOp {
    /// Every operation, in the order `etvk bench alu` prints them.
    pub const ALL: [AluOp; 4] = [AluOp::Ffma, AluOp::Logic3, AluOp::Dot4I8, AluOp::Decode];

    /// The tensor-core operations: devices with NV int8 cooperative matrices only.
    pub const TENSOR: [AluOp; 8] = [
        AluOp::MmaI8,
        AluOp::MmaChunk,
        AluOp::MmaShared,
        AluOp::MmaBuilt,
        AluOp::MmaF16,
        AluOp::MmaF16Pair,
        AluOp::MmaF16Shared,
        AluOp::MmaF16Built,
    ];

    /// The NV cooperative-matrix shape a tensor-core probe runs (as the device lists it).
    pub fn mma_shape(self) -> Option<&'static str> {
        match self {
            // The shapes the kernels these probes stand for require.
            AluOp::MmaI8 | AluOp::MmaChunk | AluOp::MmaShared | AluOp::MmaBuilt => {
                Some(crate::ops::q4_linear::MMA_SHAPE)
            }
            AluOp::MmaF16 | AluOp::MmaF16Pair | AluOp::MmaF16Shared | AluOp::MmaF16Built => {
                Some(crate::ops::q4_linear::BWD_MMA_SHAPE)
            }
            _ => None,
        }
    }

    /// A short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            AluOp::Ffma => "fp32 fma",
            AluOp::Logic3 => "3-input logic",
            AluOp::Dot4I8 => "int8x4 dot + add",
            AluOp::Decode => "4-bit decode + fma",
            AluOp::MmaI8 => "int8 mma 16x8x32 (int ops)",
            AluOp::MmaChunk => "tensor-core forward chunk (mma int ops)",
            AluOp::MmaShared => "int8 mma, operands loaded from shared memory",
            AluOp::MmaBuilt => "int8 mma, A built from registers",
            AluOp::MmaF16 => "f16 mma 16x8x16, fp32 accumulate (flops)",
            AluOp::MmaF16Pair => "tensor-core backward pair: 3 f16 mmas + fp32 adds (flops)",
            AluOp::MmaF16Shared => "the same, operands loaded from shared memory (flops)",
            AluOp::MmaF16Built => "f16 mma, A built from registers (flops)",
        }
    }

    /// Instructions per chain step (what the rate counts).
    pub fn ops_per_step(self) -> u32 {
        // The MMA probes run four MMAs (three per chunk, four chunks) per subgroup and round:
        // 4 (12) * 8192 integer operations over 32 invocations and ALU_CHAINS steps.
        match self {
            AluOp::Decode => 3,
            AluOp::MmaI8 | AluOp::MmaShared | AluOp::MmaBuilt => 4 * 8192 / 32 / ALU_CHAINS,
            AluOp::MmaChunk => 12 * 8192 / 32 / ALU_CHAINS,
            AluOp::MmaF16 | AluOp::MmaF16Built => 4 * 4096 / 32 / ALU_CHAINS,
            AluOp::MmaF16Pair | AluOp::MmaF16Shared => 12 * 4096 / 32 / ALU_CHAINS,
            _ => 1,
        }
    }

    fn shader(self) -> ShaderId {
        match self {
            AluOp::Ffma => ShaderId::BenchAluFfma,
            AluOp::Logic3 => ShaderId::BenchAluLop3,
            AluOp::Dot4I8 => ShaderId::BenchAluDp4,
            AluOp::Decode => ShaderId::BenchAluDecode,
            AluOp::MmaI8 => ShaderId::BenchMmaMma,
            AluOp::MmaChunk => ShaderId::BenchMmaChunk,
            AluOp::MmaShared => ShaderId::BenchMmaShared,
            AluOp::MmaBuilt => ShaderId::BenchMmaBuilt,
            AluOp::MmaF16 => ShaderId::BenchMmaF16Mma,
            AluOp::MmaF16Pair => ShaderId::BenchMmaF16Pair,
            AluOp::MmaF16Shared => ShaderId::BenchMmaF16Shared,
            AluOp::MmaF16Built => ShaderId::BenchMmaF16Built,
        }
    }

    /// The push-constant operands `a`, `b`, `c` of `bench_alu.comp` for this operation:
    /// for FMA the multiplier and addend (bits), for logic the mask, for the dot product the
    /// xor mask and the second operand, for the decode the magic bits, the magic as a float
    /// and the coefficient. Values keep the FMA chains finite and normal.
    pub fn operands(self) -> [u32; 3] {
        match self {
            AluOp::Ffma => [0.999_f32.to_bits(), 1e-3_f32.to_bits(), 0],
            AluOp::Logic3 => [0x7FFF_FFFF, 0, 0],
            AluOp::Dot4I8 => [0x0F0F_0F0F, 0x0102_0304, 0],
            AluOp::Decode => [0x4B00_0000, 8_388_616.0_f32.to_bits(), 1e-6_f32.to_bits()],
            AluOp::MmaI8 | AluOp::MmaChunk | AluOp::MmaShared | AluOp::MmaBuilt => {
                [0x1357_9BDF, 0x2468_ACE0, 1e-9_f32.to_bits()]
            }
            AluOp::MmaF16 | AluOp::MmaF16Pair | AluOp::MmaF16Shared | AluOp::MmaF16Built => {
                [0x1357_9BDF, 0x0101_0202, 0]
            }
        }
    }
}

/// An instruction-rate measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AluRate {
    /// Median GPU time of one dispatch, microseconds.
    pub median_us: f64,
    /// Instructions executed per second, counted per invocation (one FMA per lane counts
    /// one), in units of 1e12: an SM with 128 fp32 lanes at clock f peaks at 128 f FMAs.
    pub tera_ops: f64,
}

/// Workgroups of the probe (256 invocations each): enough to fill any GPU several times.
pub const ALU_WORKGROUPS: u32 = 2048;
/// Chains per invocation in `bench_alu.comp`.
pub const ALU_CHAINS: u32 = 16;

/// One probe submission: `reps` timed dispatches after two warm-ups; with `check`, a single
/// dispatch whose every invocation writes its folded chains, read back.
fn run_alu(
    backend: &Backend,
    op: AluOp,
    rounds: u32,
    reps: u32,
    check: bool,
) -> Result<(f64, Vec<u32>)> {
    let inner = backend.inner();
    let ctx = &inner.ctx;
    let caps = ctx.caps();
    require_timestamps(ctx)?;
    if rounds == 0 {
        return Err(unsupported(
            "bench alu: rounds per invocation must be positive",
        ));
    }
    if let Some(shape) = op.mma_shape() {
        let listed = caps.subgroup_size == 32
            && caps
                .cooperative_matrix_nv_shapes
                .iter()
                .any(|s| s.to_string() == shape);
        if !listed {
            return Err(unsupported(format!(
                "bench alu: {} needs NV cooperative matrices of shape {shape} with \
                 32-invocation subgroups, which {} lacks",
                op.name(),
                ctx.description()
            )));
        }
    }
    if !inner.shader_supported(op.shader()) {
        return Err(unsupported(format!(
            "bench alu: {} needs features {} does not have",
            op.name(),
            ctx.description()
        )));
    }
    let invocations = u64::from(ALU_WORKGROUPS) * 256;
    let sink_bytes = if check { 4 * invocations } else { 16 };
    let sink = Buffer::new(ctx, sink_bytes, MemoryKind::DeviceLocal)?;
    let back = if check {
        Some(Buffer::new(ctx, sink_bytes, MemoryKind::Readback)?)
    } else {
        None
    };
    let pipeline = inner.pipeline(op.shader(), [256, 1, 1], &[])?;
    let mut pool = DescriptorPool::new(ctx, 1, 1)?;
    let set = pool.allocate(&pipeline, &[&sink])?;
    let [a, b, c] = op.operands();
    let push: Vec<u8> = [rounds, a, b, c, u32::from(check)]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let (warmup, total) = if check { (0, 1) } else { (2, 2 + reps.max(1)) };
    let queries = QueryPool::new(ctx, 2 * total)?;
    let mut cb = CommandBuffer::new(ctx)?;
    cb.begin()?;
    cb.reset_queries(&queries, 0, 2 * total)?;
    record_timed(&mut cb, &queries, total, |cb, _| {
        cb.dispatch(&pipeline, set, &push, [ALU_WORKGROUPS, 1, 1])
    })?;
    if let Some(back) = &back {
        cb.barrier(Access::Compute, Access::Transfer)?;
        cb.copy(&sink, 0, back, 0, sink_bytes)?;
    }
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(Duration::from_secs(120), "instruction-rate benchmark")?;
    let median_us = timed_median_us(&queries, warmup, total, caps.timestamp_period_ns)?;
    let mut folds = Vec::new();
    if let Some(back) = &back {
        let mut bytes = vec![0u8; sink_bytes as usize];
        back.read(0, &mut bytes)?;
        folds = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
    }
    Ok((median_us, folds))
}

/// The issue rate of one kind of instruction with the whole GPU busy (`bench_alu.comp`):
/// what the ALU-bound 4-bit kernels are measured against.
pub fn alu_rate(backend: &Backend, op: AluOp, rounds: u32, reps: u32) -> Result<AluRate> {
    let (median_us, _) = run_alu(backend, op, rounds, reps, false)?;
    let ops = f64::from(ALU_WORKGROUPS)
        * 256.0
        * f64::from(rounds)
        * f64::from(ALU_CHAINS)
        * f64::from(op.ops_per_step());
    Ok(AluRate {
        median_us,
        tera_ops: ops / (median_us * 1e-6) / 1e12,
    })
}

/// What every invocation of the probe computed (its chains folded by xor into one word,
/// indexed by global invocation): proof that the timed instructions ran, for tests that
/// replay the chains on the CPU.
pub fn alu_outputs(backend: &Backend, op: AluOp, rounds: u32) -> Result<Vec<u32>> {
    Ok(run_alu(backend, op, rounds, 1, true)?.1)
}

/// The int8 tensor-core forward's self-check (the one the runtime runs before a graph first
/// takes `q4_linear_mma_f*`) on `backend`: the native kernels, or with `emulated` the
/// `q4_linear_mma_emu_f*` forms (any device). `Ok(None)` when all three fragment counts
/// match the f64 reference, `Ok(Some(why))` naming the first that does not.
pub fn q4_int8_mma_check(backend: &Backend, emulated: bool) -> Result<Option<String>> {
    match crate::ops::q4_mma_check::check_int8_all(backend.inner(), emulated)? {
        None if emulated => {
            crate::ops::q4_mma_check::check_int8_reg_all(backend.inner(), true, &[])
        }
        None => match crate::ops::q4_mma_check::int8_reg_layout(backend.inner())? {
            Ok(maps) => crate::ops::q4_mma_check::check_int8_reg_all(backend.inner(), false, &maps),
            Err(why) => Ok(Some(format!("register-operand form: {why}"))),
        },
        failed => Ok(failed),
    }
}

/// The f16 tensor-core kernels' self-check (the backend runs it before the first graph takes
/// them: the backward's and the forward's variants) on `backend`: the native variants, or with
/// `emulated` the emulated ones (any device with fp16 arithmetic). `Ok(None)` when every
/// variant matches the f64 reference, `Ok(Some(why))` naming the first that does not.
pub fn q4_bwd_mma_check(backend: &Backend, emulated: bool) -> Result<Option<String>> {
    let inner = backend.inner();
    let caps = inner.ctx.caps();
    let list = crate::ops::q4_mma_check::variants(emulated, caps.max_shared_memory_size);
    if let Some(v) = list.iter().find(|v| !inner.shader_supported(v.shader)) {
        return Err(unsupported(format!(
            "{}: {} needs device features it lacks",
            inner.ctx.description(),
            v.shader.info().name
        )));
    }
    crate::ops::q4_mma_check::check_all(inner, &list)
}
