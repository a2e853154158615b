//! Incremental resize passes (`crates/runtime/src/exec/resize.rs`): after a decode step moves
//! the position, only the resize functions downstream of it run again. Real KV-cache exports
//! run their exporter cases (prefill, then one-token decodes, then a longer prompt) on the
//! tests' backend, whose resize mode is `Check`: every incremental pass is followed by a full
//! one and the execute fails if they disagree on any size, scalar, launch or kernel. Outputs
//! must match the exporter's.

use etvk_runtime::Delegate;
use etvk_tests::backend;
use etvk_tests::fixtures::{load_io, run_delegate_with};

#[test]
fn decode_steps_rerun_only_the_steps_the_position_reaches() {
    let be = backend();
    for name in [
        "e6_llama3_tiny_kvcache_8da4w",
        "e8_qwen_style_tiny_kvcache_8da4w",
        "e11_llama31_tiny_kvcache_4w_mqa",
    ] {
        let io = load_io(name).unwrap();
        let tokens: Vec<usize> = io
            .cases
            .iter()
            .map(|c| c.inputs[0].load().unwrap().sizes.iter().product())
            .collect();
        let mut steps = Vec::new();
        run_delegate_with(name, &be, |_, d: &Delegate| steps.push(d.resize_steps()))
            .unwrap_or_else(|e| panic!("{e}"));
        eprintln!("{name}: tokens per case {tokens:?}, resize steps run {steps:?}");
        let mut decodes = 0;
        for (i, &(ran, all)) in steps.iter().enumerate() {
            assert!(all > 0 && ran <= all, "{name} case {i}: {ran} / {all}");
            // A decode after a decode: same sizes, the position moved. The position's
            // readers (cache updates, attention, the SymInt arithmetic) re-run, the
            // linears, norms and views do not.
            if i > 0 && tokens[i] == 1 && tokens[i - 1] == 1 {
                decodes += 1;
                assert!(
                    ran > 0,
                    "{name} case {i}: the position's readers did not re-run"
                );
                assert!(
                    3 * ran < all,
                    "{name} case {i}: {ran} of {all} steps re-ran"
                );
            }
            // Another token count: every size changes.
            if i > 0 && tokens[i] != tokens[i - 1] {
                assert!(
                    2 * ran > all,
                    "{name} case {i}: only {ran} of {all} steps re-ran"
                );
            }
        }
        assert!(
            decodes >= 1,
            "{name}: no decode after a decode among {tokens:?}"
        );
    }
}
