//! Real exporter fixtures through the plugin (`target/<profile>/libetvk.so`).
//!
//! Skips with a notice when the plugin has not been built, or when it cannot create a
//! backend (no usable Vulkan device); any failure after that is a real failure.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use etvk_host::{
    npy, HostError, LoadedMethod, Plugin, PluginBackend, Tensor, DEFAULT_MAX_INSTRUCTIONS,
};

fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// `target/<profile>/libetvk.so`: the parent of the directory holding this test binary.
fn plugin_path() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    Some(profile_dir.join(libloading::library_filename("etvk")))
}

fn backend() -> Option<Arc<PluginBackend>> {
    let Some(path) = plugin_path().filter(|p| p.is_file()) else {
        eprintln!("NOTICE: etvk plugin not built (target/<profile>/libetvk.so missing); skipping fixture test");
        return None;
    };
    let plugin = Plugin::open(&path).expect("the built plugin opens and has the right ABI version");
    match PluginBackend::create(plugin) {
        Ok(b) => Some(b),
        Err(e) => {
            eprintln!("NOTICE: the plugin cannot create a backend ({e}); skipping fixture test");
            None
        }
    }
}

fn inputs_of(dir: &Path, case: usize) -> Option<Vec<Tensor>> {
    let mut out = Vec::new();
    for k in 0.. {
        let p = dir.join(format!("case{case}_in{k}.npy"));
        if !p.is_file() {
            break;
        }
        out.push(npy::read(&p).unwrap());
    }
    (!out.is_empty()).then_some(out)
}

/// Run every case of fixture `name` in order on one loaded method and compare each output
/// with `|got - want| <= atol + rtol * |want|`.
fn check_fixture(name: &str, atol: f64, rtol: f64) {
    let Some(backend) = backend() else { return };
    let dir = fixture_dir(name);
    let program = Arc::new(etvk_host::load_program(&dir.join("model.pte")).unwrap());
    let mut method = match LoadedMethod::load_with_backend(
        program,
        "forward",
        Some(backend),
        DEFAULT_MAX_INSTRUCTIONS,
    ) {
        Ok(m) => m,
        // An op the runtime does not implement yet is reported, not failed: the
        // workspace fixture suite (tests/) is where op coverage is enforced.
        Err(HostError::PluginCall {
            status, message, ..
        }) if status == "Unsupported" => {
            eprintln!("NOTICE: {name}: {message}; skipping");
            return;
        }
        Err(e) => panic!("{name}: load failed: {e}"),
    };
    let mut cases = 0;
    while let Some(inputs) = inputs_of(&dir, cases) {
        let outputs = method
            .execute(&inputs)
            .unwrap_or_else(|e| panic!("{name} case {cases}: {e}"));
        for (j, got) in outputs.iter().enumerate() {
            let want = npy::read(&dir.join(format!("case{cases}_out{j}.npy"))).unwrap();
            assert_eq!(
                got.sizes, want.sizes,
                "{name} case {cases} output {j} sizes"
            );
            let (g, w) = (got.to_f64_vec().unwrap(), want.to_f64_vec().unwrap());
            let worst = g
                .iter()
                .zip(&w)
                .map(|(a, b)| (a - b).abs() - (atol + rtol * b.abs()))
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(
                worst <= 0.0,
                "{name} case {cases} output {j}: exceeds tolerance by {worst}"
            );
        }
        cases += 1;
    }
    assert!(cases > 0, "{name}: no cases found");
    eprintln!("{name}: {cases} case(s) match");
}

/// `atol`, `rtol` from the fixture's `io.json`.
fn tolerances(name: &str) -> (f64, f64) {
    let io: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture_dir(name).join("io.json")).unwrap()).unwrap();
    (io["atol"].as_f64().unwrap(), io["rtol"].as_f64().unwrap())
}

macro_rules! fixture_tests {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            let (atol, rtol) = tolerances($name);
            check_fixture($name, atol, rtol);
        }
    )*};
}

fixture_tests! {
    a_linear_fp32 => "a_linear_fp32",
    a3_linear_fp32_buffer_storage => "a3_linear_fp32_buffer_storage",
    b_mlp_fp32 => "b_mlp_fp32",
    c1_linear_q4gsw_gs32 => "c1_linear_q4gsw_gs32",
    d1_linear_qcs4w => "d1_linear_qcs4w",
    e1_llama_block_fp32 => "e1_llama_block_fp32",
    e2_llama_block_q4gsw => "e2_llama_block_q4gsw",
    e4_llama_block_etvk_sdpa_fp32 => "e4_llama_block_etvk_sdpa_fp32",
    // Stateful: the KV cache lives in the delegate, so cases run in order on one load.
    e5_llama3_tiny_kvcache_fp32 => "e5_llama3_tiny_kvcache_fp32",
    f1_linear_q4gsw_backward => "f1_linear_q4gsw_backward",
    f3_linear_dw => "f3_linear_dW",
    g1_mlp_dynamic_batch => "g1_mlp_dynamic_batch",
    // Three delegates with CPU expand_copy between them, dynamic seq.
    g3_llama_block_dynamic_seq => "g3_llama_block_dynamic_seq",
}
