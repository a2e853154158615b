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

/// In export_llm's 8da4w Llama the linears whose x an RMSNorm wrote (per layer q / k / v and
/// w1 / w3, and the vocabulary projection) compute that norm themselves at M = 1 by default
/// (`_dq_norm`, or `_dq_addnorm` where the residual add is fused into the norm; ops/fusion.rs)
/// and no norm node launches (the adds write their sums); with compile spec
/// `etvk_row_range` = `norm` they read the row range the norm wrote instead (`_dq_mm` forms;
/// ops/quantize.rs `plan_row_minmax`). wo, after the attention, reduces the row itself
/// (`_dq`), and w2 computes its x from the gated SiLU's inputs and reduces it (`_dq_silu`:
/// the SiLU node idles at M = 1). The outputs are checked against the exporter's by the runs
/// themselves.
#[test]
fn decode_linears_read_the_row_range_their_producer_wrote() {
    let be = backend();
    let name = "e6_llama3_tiny_kvcache_8da4w";
    // Two layers: 5 + 5 after a norm, 1 + 1 after the attention, 1 + 1 SiLU, and the
    // vocabulary projection; two norm nodes are not fused with an add (the first and the
    // last). (range, reducing, SiLU, norm inside, norm nodes launched).
    for (setting, want) in [(None, (0, 2, 2, 11, 0)), (Some("norm"), (11, 2, 2, 0, 2))] {
        let specs: Vec<(String, Vec<u8>)> = setting
            .map(|v| ("etvk_row_range".to_string(), v.as_bytes().to_vec()))
            .into_iter()
            .collect();
        for (kernels, norms) in &decode_gemvs(&be, name, &specs) {
            if !kernels.iter().any(|k| k.contains("gemv_half")) {
                continue; // a device without the half GEMV's int8 dot products
            }
            let count = |end: &str| kernels.iter().filter(|k| k.ends_with(end)).count();
            let inside = count("_dq_norm") + count("_dq_addnorm");
            assert_eq!(
                (
                    count("_dq_mm"),
                    count("_dq"),
                    count("_dq_silu"),
                    inside,
                    *norms
                ),
                want,
                "{name} ({setting:?}): decode kernels {kernels:?}"
            );
        }
    }
}

/// The 8da4w linears' kernels of each decode (one-token) case of fixture `name`, loaded
/// with compile specs `specs` added, with how many RMSNorm nodes launched there (a norm
/// fused with the add before it is the add's node, which writes the sum at M = 1 anyway).
fn decode_gemvs(
    be: &std::sync::Arc<etvk_runtime::Backend>,
    name: &str,
    specs: &[(String, Vec<u8>)],
) -> Vec<(Vec<String>, usize)> {
    let io = load_io(name).unwrap();
    let mut decode_kernels = Vec::new();
    etvk_tests::fixtures::run_delegate_profiled_with(name, be, specs, |i, d: &Delegate| {
        let tokens: usize = io.cases[i].inputs[0].load().unwrap().sizes.iter().product();
        if tokens == 1 {
            let gemvs: Vec<String> = d
                .profile_nodes()
                .iter()
                .filter(|n| n.launched && n.op.starts_with("et_vk.linear_dq8ca_q4gsw"))
                .map(|n| n.op.rsplit('/').next().unwrap_or("").to_string())
                .collect();
            let norms = d
                .profile_nodes()
                .iter()
                .filter(|n| n.launched && n.op.starts_with("et_vk.rms_norm"))
                .count();
            decode_kernels.push((gemvs, norms));
        }
    })
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(!decode_kernels.is_empty(), "{name}: no decode case");
    decode_kernels
}

/// A force_fp16 8da4w Llama's decode linears quantize their fp16 x and write their fp16
/// outputs in the half GEMV (`_dq_x16` / `_dq_mm_x16` forms): the choose_qparams nodes and the fp32-to-fp16
/// conversion nodes after the linears launch nothing at M = 1, and do at the prefill's M.
/// The outputs are checked against the exporter's by the run.
#[test]
fn fp16_decode_linears_write_their_outputs() {
    let be = backend();
    let name = "e7_llama3_tiny_kvcache_8da4w_fp16_emb4";
    let io = load_io(name).unwrap();
    let mut seen = Vec::new();
    // The norms' ranges on these short rows too (`norm`), so that `_dq_mm_x16` runs.
    let specs = [("etvk_row_range".to_string(), b"norm".to_vec())];
    etvk_tests::fixtures::run_delegate_profiled_with(name, &be, &specs, |i, d: &Delegate| {
        let tokens: usize = io.cases[i].inputs[0].load().unwrap().sizes.iter().product();
        let nodes = d.profile_nodes();
        let launched =
            |f: &dyn Fn(&str) -> bool| nodes.iter().filter(|n| n.launched && f(&n.op)).count();
        let f16out = launched(&|op| op.ends_with("_x16"));
        let ranged = launched(&|op| op.ends_with("_dq_mm_x16"));
        // The conversion nodes are the op's dispatches without a kernel name.
        let conversions = launched(&|op| op == "et_vk.linear_dq8ca_q4gsw.default");
        let chooses = launched(&|op| op.starts_with("torchao.choose_qparams_affine"));
        seen.push((tokens, f16out, conversions, chooses, ranged));
    })
    .unwrap_or_else(|e| panic!("{e}"));
    // Every one of the 15 linears either writes fp16 itself or has its output converted; in a
    // prefill only the vocabulary projection (of the last token) is at M = 1. Per layer four
    // choose_qparams nodes run (q / k / v share one, w1 / w3 one), and one for the vocabulary
    // projection.
    // At decode 11 of the 15 read the row range their fp16 norm wrote (all but wo and w2).
    for &(tokens, f16out, conversions, chooses, ranged) in &seen {
        assert_eq!(f16out + conversions, 15, "{name}: {seen:?}");
        if tokens == 1 && f16out > 0 {
            assert_eq!(
                (f16out, chooses, ranged),
                (15, 0, 11),
                "{name}: decode {seen:?}"
            );
        }
        if tokens > 1 {
            assert!(f16out <= 1, "{name}: prefill {seen:?}");
            assert_eq!(chooses + f16out, 9, "{name}: prefill {seen:?}");
        }
    }
    assert!(
        seen.iter().any(|&(t, f, _, _, _)| t == 1 && f > 0)
            || !be.device_description().contains("llvmpipe"),
        "{name}: no decode ran the _dq_x16 forms on lavapipe: {seen:?}"
    );
}
