//! Loading damaged delegates never panics: the real exporter's blobs with bytes flipped and
//! truncated, then (when they still parse) built, prepacked and run on the device. Every
//! outcome must be an `Ok` or a typed `Err`; a panic or a Vulkan validation error fails.

mod common;
use common::*;

use std::panic::{catch_unwind, AssertUnwindSafe};

use etvk_runtime::*;

/// Parse, build and (if that works) execute once with zero-filled inputs of the graph's
/// serialized input sizes; returns whether the blob got as far as an execute.
fn try_blob(be: &std::sync::Arc<Backend>, blob: &[u8], named: &MapData) -> bool {
    let Ok(parsed) = etvk_format::vkgraph::parse_delegate(blob) else {
        return false;
    };
    let Ok(mut d) = Delegate::from_ir(be, &parsed, &[], named) else {
        return false;
    };
    let mut args = Vec::new();
    for &id in &parsed.graph.input_ids {
        match &parsed.graph.values[id] {
            etvk_format::ir::Value::Tensor(t) => {
                let dtype = match t.staging_dtype {
                    etvk_format::ir::DataType::Float32 => HostDType::Float,
                    etvk_format::ir::DataType::Int32 => HostDType::Int,
                    etvk_format::ir::DataType::Int64 => HostDType::Long,
                    _ => return true,
                };
                args.push(DelegateArg::Tensor(HostTensor {
                    dtype,
                    sizes: t.dims.clone(),
                    data: vec![0; t.numel * dtype.size_bytes()],
                }));
            }
            _ => args.push(DelegateArg::Int(1)),
        }
    }
    for _ in &parsed.graph.output_ids {
        args.push(empty_out());
    }
    let _ = d.execute(&mut args);
    true
}

#[test]
fn flipped_and_truncated_fixture_delegates_never_panic() {
    let be = backend();
    let mut reached_execute = 0;
    let mut tried = 0;
    for name in [
        "b_mlp_fp32",
        "g1_mlp_dynamic_batch",
        "c1_linear_q4gsw_gs32",
        "d1_linear_qcs4w",
        "f1_linear_q4gsw_backward",
        "f3_linear_dW",
        "e1_llama_block_fp32",
        "e2_llama_block_q4gsw",
        "e4_llama_block_etvk_sdpa_fp32",
        "e5_llama3_tiny_kvcache_fp32",
    ] {
        let blob = std::fs::read(fixture_dir(name).join("delegate.bin")).unwrap();
        let named = load_named_data(name);
        // Flip every byte of the flatbuffer region at a stride that visits all fields of
        // the small graphs, with two patterns; then a few truncations.
        let stride = (blob.len() / 400).max(1);
        let mut mutants: Vec<Vec<u8>> = Vec::new();
        for pos in (0..blob.len()).step_by(stride) {
            for pattern in [0xFFu8, 0x01] {
                let mut b = blob.clone();
                b[pos] ^= pattern;
                mutants.push(b);
            }
        }
        for len in [blob.len() / 2, blob.len() - 1, 40] {
            mutants.push(blob[..len].to_vec());
        }
        for (i, m) in mutants.iter().enumerate() {
            tried += 1;
            match catch_unwind(AssertUnwindSafe(|| try_blob(&be, m, &named))) {
                Ok(true) => reached_execute += 1,
                Ok(false) => {}
                Err(_) => panic!("{name}: mutant {i} panicked"),
            }
        }
    }
    // The sweep must reach the build and execute paths, not only the parser.
    assert!(
        reached_execute > 200,
        "only {reached_execute} of {tried} mutants reached execute"
    );
    assert_eq!(
        be.validation_error_count(),
        0,
        "validation errors during the sweep"
    );
}
