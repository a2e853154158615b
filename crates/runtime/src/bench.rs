//! Measurement helpers for `etvk bench`: the device's memory ceilings, measured with GPU
//! timestamps in the same process as the kernels they are compared with.
//!
//! Method (see docs/performance.md): warm-up, then `reps` timed dispatches, each bracketed by
//! timestamps with a full barrier between them; the median is reported.

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

fn stream(
    backend: &Backend,
    shader: ShaderId,
    bytes: u64,
    reps: u32,
    copies: u32,
) -> Result<Bandwidth> {
    let inner = backend.inner();
    let ctx = &inner.ctx;
    let caps = ctx.caps();
    if !caps.timestamps {
        return Err(unsupported(format!(
            "{}: the compute queue has no timestamps",
            ctx.description()
        )));
    }
    let bytes = bytes.min(caps.max_storage_buffer_range as u64) / 16 * 16;
    let elem = if shader == ShaderId::BenchReadWords {
        4
    } else {
        16
    };
    let n_vec4 = u32::try_from(bytes / elem).map_err(|_| unsupported("bench buffer too large"))?;
    let copy = shader == ShaderId::BenchCopy;
    let copies = copies.max(1);
    let srcs = (0..copies)
        .map(|_| Buffer::new(ctx, bytes, MemoryKind::DeviceLocal))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let dst = Buffer::new(ctx, if copy { bytes } else { 16 }, MemoryKind::DeviceLocal)?;
    let pipeline = inner.pipeline(shader, [256, 1, 1], &[])?;
    let mut pool = DescriptorPool::new(ctx, copies, 2 * copies)?;
    let sets = srcs
        .iter()
        .map(|src| pool.allocate(&pipeline, &[&dst, src]))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    // Enough invocations to fill any GPU, few enough to stay in range everywhere.
    let groups = (caps.max_workgroup_count[0])
        .min(65535)
        .min(n_vec4.div_ceil(256).max(1));
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
    for src in &srcs {
        cb.zero(src)?;
    }
    cb.barrier(Access::Transfer, Access::Compute)?;
    for r in 0..total {
        cb.timestamp(&queries, 2 * r)?;
        cb.dispatch(
            &pipeline,
            sets[(r % copies) as usize],
            &push,
            [groups, 1, 1],
        )?;
        cb.barrier(Access::Compute, Access::Compute)?;
        cb.timestamp(&queries, 2 * r + 1)?;
    }
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(Duration::from_secs(120), "bandwidth benchmark")?;
    let ticks = queries.read(0, 2 * total)?;
    let period = f64::from(caps.timestamp_period_ns);
    let times: Vec<f64> = (warmup..total)
        .map(|r| {
            let (a, b) = (ticks[2 * r as usize], ticks[2 * r as usize + 1]);
            b.wrapping_sub(a) as f64 * period / 1e3
        })
        .collect();
    let median_us = median(&times);
    let counted = if copy { 2 * bytes } else { bytes };
    Ok(Bandwidth {
        bytes: counted,
        median_us,
        gbps: counted as f64 / (median_us * 1e-6) / 1e9,
    })
}

/// The read ceiling: a plain uvec4 read over `bytes` (capped at the storage range).
pub fn read_ceiling(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    stream(backend, ShaderId::BenchRead, bytes, reps, 1)
}

/// A read of `bytes` from DRAM rather than L2: the dispatches rotate over enough buffers
/// (>= 256 MiB together) that no repetition finds its data cached. For a small kernel this
/// is the time a plain read of its bytes takes, launch and ramp included: the part of its
/// time no kernel of that size avoids.
pub fn read_rotating(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    let copies = ROTATING_SET_BYTES.div_ceil(bytes.max(16)).clamp(1, 64) as u32;
    stream(backend, ShaderId::BenchRead, bytes, reps, copies)
}

/// The read rate with one u32 per invocation and step (the q4 kernels' access width), for
/// comparison with [`read_ceiling`].
pub fn read_words(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    stream(backend, ShaderId::BenchReadWords, bytes, reps, 1)
}

/// The copy rate: uvec4 copy of `bytes`, counting read + written bytes.
pub fn copy_ceiling(backend: &Backend, bytes: u64, reps: u32) -> Result<Bandwidth> {
    stream(backend, ShaderId::BenchCopy, bytes, reps, 1)
}
