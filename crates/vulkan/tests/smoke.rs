//! Device-layer smoke test: `add_one` runs on the default device (lavapipe in CI) with
//! validation on, results are read back, timestamps are read, and no validation error fires.

use std::time::Duration;

use etvk_shaders::ShaderId;
use etvk_vulkan::*;

#[test]
fn add_one_under_validation() {
    let ctx = Context::new(&ContextOptions {
        device: None,
        validation: true,
        sync_validation: false,
        fence_spin_us: 0,
    })
    .expect("context");
    assert!(ctx.validation_enabled());
    let info = ShaderId::AddOne.info();
    let n: u32 = 1000;
    let pipeline = ComputePipeline::new(
        &ctx,
        info.name,
        info.spirv,
        info.num_bindings,
        info.push_constant_bytes,
        info.local_size,
        &[],
    )
    .expect("pipeline");
    let dev = Buffer::new(&ctx, n as u64 * 4, MemoryKind::DeviceLocal).unwrap();
    let up = Buffer::new(&ctx, n as u64 * 4, MemoryKind::Upload).unwrap();
    let down = Buffer::new(&ctx, n as u64 * 4, MemoryKind::Readback).unwrap();
    let input: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
    let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    up.write(0, &bytes).unwrap();

    let mut pool = DescriptorPool::new(&ctx, 1, 1).unwrap();
    let set = pool.allocate(&pipeline, &[&dev]).unwrap();
    let qp = QueryPool::new(&ctx, 2).unwrap();
    let mut cb = CommandBuffer::new(&ctx).unwrap();
    let fence = Fence::new(&ctx).unwrap();
    for round in 1..=2u32 {
        cb.begin().unwrap();
        cb.reset_queries(&qp, 0, 2).unwrap();
        if round == 1 {
            cb.copy(&up, 0, &dev, 0, n as u64 * 4).unwrap();
            cb.barrier(Access::Transfer, Access::Compute).unwrap();
        }
        cb.timestamp(&qp, 0).unwrap();
        let groups = n.div_ceil(pipeline.local_size()[0]);
        cb.dispatch(&pipeline, set, &n.to_le_bytes(), [groups, 1, 1])
            .unwrap();
        cb.timestamp(&qp, 1).unwrap();
        cb.barrier(Access::Compute, Access::Transfer).unwrap();
        cb.copy(&dev, 0, &down, 0, n as u64 * 4).unwrap();
        cb.barrier(Access::Transfer, Access::Host).unwrap();
        cb.end().unwrap();
        cb.submit(&fence).unwrap();
        fence
            .wait_and_reset(Duration::from_secs(20), "add_one")
            .unwrap();
        let mut out = vec![0u8; bytes.len()];
        down.read(0, &mut out).unwrap();
        for (i, c) in out.chunks_exact(4).enumerate() {
            let got = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            assert_eq!(got, input[i] + round as f32, "element {i} round {round}");
        }
        let ts = qp.read(0, 2).unwrap();
        assert!(ts[1] >= ts[0]);
    }
    // Misuse is a typed error, not a crash.
    assert!(matches!(
        up.write(n as u64 * 4, &[0u8; 64]),
        Err(VkError::Invalid(_))
    ));
    assert!(cb.dispatch(&pipeline, set, &[], [1, 1, 1]).is_err());
    assert_eq!(
        ctx.validation_error_count(),
        0,
        "{:?}",
        ctx.last_validation_error()
    );
}

#[test]
fn device_listing_and_selection() {
    let devs = list_physical_devices(None).expect("list");
    assert!(!devs.is_empty());
    assert_eq!(devs.iter().filter(|d| d.selected).count(), 1);
    let first = &devs[0];
    let by_name = list_physical_devices(Some(&first.name[..3])).unwrap();
    assert!(by_name.iter().any(|d| d.selected));
    let bad = Context::new(&ContextOptions {
        device: Some("no-such-gpu-xyz".into()),
        validation: false,
        sync_validation: false,
        fence_spin_us: 0,
    });
    assert!(matches!(bad, Err(VkError::NoDevice(_))), "{bad:?}");
    let by_index = Context::new(&ContextOptions {
        device: Some(first.index.to_string()),
        validation: false,
        sync_validation: false,
        fence_spin_us: 0,
    })
    .unwrap();
    assert_eq!(by_index.info().name, first.name);
    assert!(by_index.caps().max_push_constants_size >= 128);
    assert!(by_index.caps().subgroup_size >= 1);
}

#[test]
fn validation_errors_are_counted() {
    let ctx = Context::new(&ContextOptions {
        device: None,
        validation: true,
        sync_validation: false,
        fence_spin_us: 0,
    })
    .expect("context");
    assert_eq!(ctx.validation_error_count(), 0);
    let info = vk::BufferCreateInfo::default()
        .size(0)
        .usage(vk::BufferUsageFlags::STORAGE_BUFFER);
    // SAFETY: deliberately invalid (size 0) to provoke a validation error; lavapipe tolerates
    // the call, and the buffer (if any) is destroyed right away.
    unsafe {
        if let Ok(b) = ctx.raw_device().create_buffer(&info, None) {
            ctx.raw_device().destroy_buffer(b, None);
        }
    }
    assert!(ctx.validation_error_count() >= 1);
    assert!(ctx
        .last_validation_error()
        .unwrap_or_default()
        .contains("size"));
}
