//! The fixture programs of `tests/fixtures/`, through the backend API (the program's
//! `VulkanBackend` delegate, every `io.json` case in order on one loaded delegate) and
//! through the `etvk run` CLI (one invocation, every case as a `--call`).
//!
//! Add a fixture with one line in `fixtures!`: `name => [delegate, cli]`, or `[cli]` for
//! programs that need the host (several delegates, CPU ops between them).

use std::path::Path;

/// `name => [ways]`: one module per fixture, one test per way.
macro_rules! fixtures {
    ($($name:ident => [$($way:ident),*]),* $(,)?) => {
        $(
            // Fixture names keep their spelling (`f3_linear_dW`).
            #[allow(non_snake_case)]
            mod $name {
                $(
                    #[test]
                    fn $way() {
                        super::$way(stringify!($name));
                    }
                )*
            }
        )*
    };
}

fixtures! {
    a_linear_fp32 => [delegate, cli],
    a3_linear_fp32_buffer_storage => [delegate, cli],
    b_mlp_fp32 => [delegate, cli],
    g1_mlp_dynamic_batch => [delegate, cli],
    c1_linear_q4gsw_gs32 => [delegate, cli],
    d1_linear_qcs4w => [delegate, cli],
    f1_linear_q4gsw_backward => [delegate, cli],
    f3_linear_dW => [delegate, cli],
    e1_llama_block_fp32 => [delegate, cli],
    e2_llama_block_q4gsw => [delegate, cli],
    g3_llama_block_dynamic_seq => [cli],
    e4_llama_block_etvk_sdpa_fp32 => [delegate, cli],
    e5_llama3_tiny_kvcache_fp32 => [delegate, cli],
    e6_llama3_tiny_kvcache_8da4w => [delegate, cli],
    e7_llama3_tiny_kvcache_8da4w_fp16_emb4 => [delegate, cli],
    e8_qwen_style_tiny_kvcache_8da4w => [delegate, cli],
    e9_llama3_tiny_kvcache_8da4w_emb8 => [cli],
    e10_llama3_tiny_nokv_8da4w => [cli],
    e11_llama31_tiny_kvcache_4w_mqa => [delegate, cli],
    h1_mlp_8da4w => [delegate, cli],
    h2_mlp_8da4w_dynamic_batch => [delegate, cli],
    h3_mlp_int8_weight_only => [delegate, cli],
    h4_mlp_pt2e_int8_weights => [delegate, cli],
    h5_encoder_layer_8da4w => [cli],
    h6_mlp_int4_per_channel => [delegate, cli],
    h7_mlp_pt2e_q8ta => [delegate, cli],
    h8_cnn_pt2e_q8ta => [delegate, cli],
    h9_mobilenet_v2_q8ta => [delegate, cli],
    v1_conv_zoo => [cli],
    v2_conv1d_dynamic_length => [delegate, cli],
    v3_mobilenet_v3_small => [delegate, cli],
    v4_resnet_tiny => [delegate, cli],
    v5_shufflenet_tiny => [cli],
    v6_conv_zoo_batch2 => [cli],
    v7_segmentation_tiny => [delegate, cli],
    v8_warp_grid_priors => [delegate, cli],
    v9_swin_tiny => [cli],
    v10_dynamic_edges => [delegate, cli],
    v11_int64_graph => [delegate, cli],
    v12_external_constants => [delegate, cli],
    i1_host_only_no_constants => [cli],
    i2_cpu_ops_mix => [cli],
    i3_mask_index_mix => [cli],
    i4_external_cpu_tensors => [cli],
    i5_video_pool_cpu => [cli],
}

fn delegate(name: &str) {
    if let Err(e) = etvk_tests::fixtures::run_delegate(name) {
        panic!("{e}");
    }
}

fn cli(name: &str) {
    let out_root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("etvk-fixtures");
    if let Err(e) = etvk_tests::fixtures::run_cli(name, &out_root) {
        panic!("{e}");
    }
}

#[test]
fn g1_cases_resize_down_and_up() {
    // The dynamic fixture is only meaningful if its cases really change the batch.
    let io = etvk_tests::fixtures::load_io("g1_mlp_dynamic_batch").unwrap();
    let batches: Vec<usize> = io.cases.iter().map(|c| c.inputs[0].shape[0]).collect();
    assert_eq!(batches, vec![8, 1, 5, 32]);
}
