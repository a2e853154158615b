//! The execute's barrier plan (`crates/runtime/src/exec/barriers.rs`) leaves no race: real
//! exported programs run under the Khronos layer's synchronization validation, which
//! reports any two dispatches touching one buffer (one writing) with no barrier between
//! them, whether or not lavapipe happened to run them in order. A negative control
//! (`ETVK_BARRIERS=none`) shows the layer does catch a missing barrier here. The same runs
//! cover contiguous copies turned into shared storage (`storage.rs`): outputs must still
//! match.

use std::sync::{Arc, OnceLock};

use etvk_runtime::{Backend, RuntimeOptions};
use etvk_tests::fixtures::{cli_binary, fixtures_dir, run_delegate_on};

fn sync_backend() -> Arc<Backend> {
    static BACKEND: OnceLock<Arc<Backend>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            Backend::new(&RuntimeOptions {
                validation: true,
                sync_validation: true,
                profile: false,
                ..RuntimeOptions::from_env()
            })
            .expect("a Vulkan device with the Khronos validation layer")
        })
        .clone()
}

/// Programs with independent nodes (attention's projections, a CNN's branches, the q4
/// backward's pre-passes, resizes between cases): each case must match its expected
/// outputs with no validation error, and the plan must have left barriers out.
#[test]
fn planned_barriers_leave_no_race_under_sync_validation() {
    let be = sync_backend();
    let mut fewer = 0;
    for name in [
        "e5_llama3_tiny_kvcache_fp32",
        "e6_llama3_tiny_kvcache_8da4w",
        "e7_llama3_tiny_kvcache_8da4w_fp16_emb4",
        "e11_llama31_tiny_kvcache_4w_mqa",
        "f1_linear_q4gsw_backward",
        "f3_linear_dW",
        "g1_mlp_dynamic_batch",
        "h9_mobilenet_v2_q8ta",
        "v3_mobilenet_v3_small",
        "v7_segmentation_tiny",
    ] {
        let (barriers, dispatches) = run_delegate_on(name, &be).unwrap_or_else(|e| panic!("{e}"));
        eprintln!("{name}: {barriers} barriers between {dispatches} dispatches");
        assert!(
            barriers < dispatches.max(1),
            "{name}: {barriers} / {dispatches}"
        );
        if barriers + 1 < dispatches {
            fewer += 1;
        }
        if name == "e5_llama3_tiny_kvcache_fp32" {
            // 41 dispatches with a copy per view / squeeze (session 33 before storage.rs),
            // 25 with the views sharing storage, 22 with the gated SiLU and add + RMSNorm fused,
            // 20 with the KV-cache writes inside the attention dispatch (session 34).
            assert!(
                dispatches <= 30,
                "{name}: {dispatches} dispatches: views copied?"
            );
        }
    }
    // Attention's q / k / v projections alone need no barrier between them.
    assert!(
        fewer >= 4,
        "only {fewer} programs ran with fewer barriers than dispatches"
    );
}

/// With no barriers at all the layer must report a hazard (else the test above proves
/// nothing).
#[test]
fn sync_validation_reports_a_missing_barrier() {
    let bin = cli_binary().unwrap_or_else(|e| panic!("{e}"));
    let run = |barriers: &str| {
        std::process::Command::new(&bin)
            .arg("check")
            .arg(fixtures_dir().join("e5_llama3_tiny_kvcache_fp32"))
            .env("ETVK_VALIDATION", "1")
            .env("ETVK_SYNC_VALIDATION", "1")
            .env("ETVK_BARRIERS", barriers)
            .output()
            .expect("run etvk")
    };
    let planned = run("planned");
    assert!(
        planned.status.success(),
        "{}",
        String::from_utf8_lossy(&planned.stderr)
    );
    let none = run("none");
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        !none.status.success() && err.contains("SYNC-HAZARD"),
        "{err}"
    );
}

/// The LoRA training step (forward, backward, AdamW on GPU-resident state, in-place updates
/// of the adapters and moments) under synchronization validation: `etvk finetune` times
/// whole steps, so its steps run with the planned barriers.
#[test]
fn training_step_has_no_race_under_sync_validation() {
    let bin = cli_binary().unwrap_or_else(|e| panic!("{e}"));
    let out = std::process::Command::new(&bin)
        .arg("finetune")
        .arg("--reference")
        .arg(fixtures_dir().join("lora_reference"))
        .env("ETVK_VALIDATION", "1")
        .env("ETVK_SYNC_VALIDATION", "1")
        .output()
        .expect("run etvk");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
