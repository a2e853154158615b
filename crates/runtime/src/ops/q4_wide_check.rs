//! A self-check of the wide backward's fp16-decode variants (`q4_linear_bwd_wide_f16_m1_*`,
//! `q4_linear_bwd_wide_f16t_m1_*`) on the device at hand, run once per variant before the
//! first graph launches it. Their codes are fp16 subnormals (c * 2^-24) widened to fp32,
//! which Vulkan keeps exact only under `shaderDenormPreserveFloat16` and the shader's
//! DenormPreserve mode. The SPIR-V does not declare that mode (a device without the feature
//! could not load it), so any device may run them once this check passed there: an H200
//! (which advertises the feature) and lavapipe (which does not, and keeps them anyway). A
//! device that flushes them (every code read as 0) fails the check and keeps the magic
//! decode: a slower gradient, never a wrong one.

use std::time::Duration;

use etvk_shaders::ShaderId;
use etvk_vulkan::{Access, Buffer, CommandBuffer, DescriptorPool, Fence, MemoryKind};

use crate::api::Result;
use crate::backend::BackendInner;
use crate::error::internal;
use crate::ops::q4_mma_check::staged_inputs;
use crate::prepack::q4::words_to_bytes;

/// Runs `shader` (a wide backward M = 1 variant; its `CW` define gives the chunk columns per
/// workgroup) on a
/// fixed pseudo-random problem of two column blocks (the second partial) and two slices
/// (the second partial, N % 4 != 0), groups of one chunk; `Ok(None)` when d_x matches the
/// f64 reference within 1e-5 relative and the slice counters are back at zero, else
/// `Ok(Some(why))`.
pub(crate) fn check(be: &BackendInner, shader: ShaderId) -> Result<Option<String>> {
    let ctx = &be.ctx;
    let info = shader.info();
    let cw: u32 = info
        .defines
        .iter()
        .find(|(k, _)| *k == "CW")
        .and_then(|(_, v)| v.parse().ok())
        .ok_or_else(|| internal(format!("{}: no CW define to check with", info.name)))?;
    // 256 invocations compute (the touch variants launch more): RG row groups of CW lanes,
    // slices a multiple of 4 * RG rows.
    let row_groups = 256 / cw;
    let rows_per_slice = 4 * row_groups;
    let n = 2 * rows_per_slice - 5;
    let kc = cw + 3;
    let k = 32 * kc - 7;
    let (groups, gs) = (kc, 32u32);
    let blocks = kc.div_ceil(cw);
    let slices = n.div_ceil(rows_per_slice);
    let (nu, kcu, ku) = (n as usize, kc as usize, k as usize);
    let mut next = crate::ops::q4_mma_check::check_stream(0x2545_F491_4F6C_DD1Du64 ^ u64::from(cw));
    // next() is below 2^31: uniform in [0, 1) after the division.
    let unit = |x: u32| x as f32 / (1u32 << 31) as f32;
    let words: Vec<u32> = (0..nu * kcu * 4).map(|_| next()).collect();
    let scales: Vec<f32> = (0..nu * kcu).map(|_| 0.005 + 0.01 * unit(next())).collect();
    // Rows of very different sizes, as gradients have.
    let size = [1.0f32, 1e-5, 2e2, 0.03];
    let dy: Vec<f32> = (0..nu)
        .map(|r| (2.0 * unit(next()) - 1.0) * size[r % 4])
        .collect();
    let f32_bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
    let inputs = [
        words_to_bytes(&f32_bits(&dy)),
        words_to_bytes(&words),
        words_to_bytes(&f32_bits(&crate::prepack::q4::pack_q4_scales(
            &scales, nu, kcu,
        ))),
        // Finished-slice counters, zero between launches.
        words_to_bytes(&vec![0u32; blocks as usize]),
    ];
    let (ups, devs) = staged_inputs(ctx, &inputs)?;
    let part = Buffer::new(
        ctx,
        u64::from(slices * kc * 32) * 4,
        MemoryKind::DeviceLocal,
    )?;
    let dx = Buffer::new(ctx, u64::from(k) * 4, MemoryKind::DeviceLocal)?;
    let back = Buffer::new(ctx, u64::from(k + blocks) * 4, MemoryKind::Readback)?;

    let pipeline = be.pipeline(shader, info.local_size, &[])?;
    let mut pool = DescriptorPool::new(ctx, 1, 6)?;
    let set = pool.allocate(
        &pipeline,
        &[&part, &devs[0], &devs[1], &devs[2], &devs[3], &dx],
    )?;
    // log2(gs / 8) = 2: groups of one chunk.
    let push = words_to_bytes(&[n, kc, groups, gs, rows_per_slice, 2, k, slices]);
    let mut cb = CommandBuffer::new(ctx)?;
    cb.begin()?;
    for (up, dev) in ups.iter().zip(&devs) {
        cb.copy(up, 0, dev, 0, dev.size())?;
    }
    cb.barrier(Access::Transfer, Access::Compute)?;
    cb.dispatch(&pipeline, set, &push, [blocks * slices, 1, 1])?;
    cb.barrier(Access::Compute, Access::Transfer)?;
    cb.copy(&dx, 0, &back, 0, u64::from(k) * 4)?;
    cb.copy(&devs[3], 0, &back, u64::from(k) * 4, u64::from(blocks) * 4)?;
    cb.end()?;
    let fence = Fence::new(ctx)?;
    cb.submit(&fence)?;
    fence.wait_and_reset(Duration::from_secs(60), "wide backward fp16 self-check")?;
    let mut raw = vec![0u8; (ku + blocks as usize) * 4];
    back.read(0, &mut raw)?;
    let got: Vec<u32> = raw
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let (dx_bits, counters) = got.split_at(ku);
    if let Some(c) = counters.iter().find(|&&c| c != 0) {
        return Ok(Some(format!(
            "a column block's slice counter was left at {c}, not 0"
        )));
    }
    // d_x is one row.
    Ok(crate::ops::q4_mma_check::rows_off(
        dx_bits,
        1,
        dx_bits.len(),
        |_, c| {
            (0..nu)
                .map(|r| {
                    let code = (words[r * kcu * 4 + c / 8] >> (4 * (c % 8))) & 15;
                    f64::from(dy[r]) * (f64::from(code) - 8.0) * f64::from(scales[r * kcu + c / 32])
                })
                .sum()
        },
    ))
}
