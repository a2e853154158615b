//! The half GEMV's experiment switches that only override builds compile
//! (`ETVK_SPIRV_OVERRIDE_DIR`): XFIRST against the bench's f64 reference, and the TIMELINE
//! diagnostic's record layout (what `docs/experiments/timeline.py` reads), both through
//! `etvk bench` on whatever Vulkan device the tests run on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Compiles `shaders/q4_linear_gemv_half.comp` with `defines` as the override of variant
/// `q4_linear_gemv_half` into a fresh directory named after `tag`, with the flags the shader
/// library uses.
fn override_dir(tag: &str, defines: &[&str]) -> PathBuf {
    let shaders = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shaders");
    let dir = std::env::temp_dir().join(format!("etvk-switch-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new("glslc")
        .args([
            "--target-env=vulkan1.2",
            "-fshader-stage=compute",
            "-O",
            "-I",
        ])
        .arg(&shaders)
        .args(defines)
        .arg("-o")
        .arg(dir.join("q4_linear_gemv_half.spv"))
        .arg(shaders.join("q4_linear_gemv_half.comp"))
        .output()
        .expect("glslc (the shader library's build needs it too)");
    assert!(
        out.status.success(),
        "glslc {defines:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

/// `etvk bench linear_q4gsw` at M = 1 with the half GEMV's stride walk forced and its SPIR-V
/// taken from `dir`, plus `env`.
fn bench(dir: &Path, n: usize, k: usize, env: &[(&str, &str)]) -> Output {
    let (n, k) = (n.to_string(), k.to_string());
    let args = ["bench", "linear_q4gsw", "--m", "1", "--n", &n, "--k", &k];
    Command::new(env!("CARGO_BIN_EXE_etvk"))
        .args(args)
        .args(["--iters", "1", "--ceiling-mib", "1"])
        .env_remove("ETVK_PLUGIN")
        .env("ETVK_Q4_GEMV", "half_late")
        .env("ETVK_SPIRV_OVERRIDE_DIR", dir)
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

/// stdout (the bench's lines) then stderr (the log, errors).
fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// The half GEMV compiled with `defines` (tag `tag`) at each (N, K) of `shapes`, checked by
/// the bench against its f64 reference.
fn switch_matches_f64(tag: &str, defines: &[&str], shapes: &[(usize, usize)]) {
    let dir = override_dir(tag, defines);
    for &(n, k) in shapes {
        let out = bench(&dir, n, k, &[]);
        let err = text(&out);
        assert!(out.status.success(), "{tag} N = {n}, K = {k}: {err}");
        assert!(err.contains("SPIR-V replaced"), "override not taken: {err}");
        let kernel = err
            .split("kernels ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next());
        assert_eq!(kernel, Some("q4_linear_gemv_half"), "{err}");
        let rel: f64 = err
            .split("worst sampled rel err ")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no sampled error in: {err}"));
        assert!(rel <= 1e-5, "{tag} N = {n}, K = {k}: relative error {rel}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn xfirst_gemv_matches_the_f64_reference() {
    // K = 1024: x in vec4 loads; K = 990: the guarded scalar loads past the row's end.
    switch_matches_f64("xfirst", &["-DXFIRST=1"], &[(1000, 1024), (4104, 990)]);
}

#[test]
fn timeline_records_each_workgroup_in_order() {
    let dir = override_dir("timeline", &["-DTIMELINE=2"]);
    let dump = dir.join("d");
    let (n, k) = (4096usize, 256usize);
    let out = bench(
        &dir,
        n,
        k,
        &[
            ("ETVK_SHADER_CLOCK", "1"),
            ("ETVK_BENCH_DUMP", dump.to_str().unwrap()),
        ],
    );
    let err = text(&out);
    assert!(err.contains("VK_KHR_shader_clock enabled"), "{err}");
    assert!(err.contains("SPIR-V replaced"), "override not taken: {err}");
    // The timeline replaces the results, so the bench's check fails by design.
    assert!(err.contains("differ from the f64 reference"), "{err}");
    // The first launch's records, and those of a launch after the timed replays.
    for file in ["out.f32", "warm.out.f32"] {
        check_timeline(&dump.with_extension(file), n);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The TIMELINE = 2 records of an N-row output: flagged, one per workgroup 0, 1, ... in turn,
/// block 0 the workgroup's own, the clock reads in program order.
fn check_timeline(path: &std::path::Path, n: usize) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
        .collect();
    assert_eq!(words.len(), n);
    let nblocks = n / 8;
    // A record per workgroup whose 16 words lie inside the output; workgroups past the
    // launch's wave (or past the blocks) leave garbage, so take the flagged ones.
    let recs: Vec<(usize, &[u32])> = words
        .chunks_exact(16)
        .enumerate()
        .filter(|(_, r)| r[0] >> 16 == 1)
        .collect();
    // Workgroups 0, 1, ... each wrote one (as many as the launch had, up to N / 16).
    assert!(!recs.is_empty(), "no timeline records");
    assert!(
        recs.iter().enumerate().all(|(i, (wg, _))| i == *wg),
        "records not from workgroups 0.. in turn"
    );
    let mut walked = 0usize;
    for (wg, r) in &recs {
        let blocks = (r[0] & 0xFFFF) as usize;
        assert!((1..=nblocks).contains(&blocks), "wg {wg}: {blocks} blocks");
        walked += blocks;
        // Block 0 is the workgroup's own index (the stride walk).
        assert_eq!(r[3] as usize, *wg, "wg {wg}: first block");
        // Clock reads in program order (32-bit device clock; offsets from the start):
        // limbs, block 0's two batches used, its sums written, the end.
        let at = |i: usize| r[i].wrapping_sub(r[1]);
        let order = [at(2), at(11), at(12), at(4), at(15)];
        assert!(
            order.windows(2).all(|w| w[0] <= w[1]) && at(15) < 1 << 31,
            "wg {wg}: events out of order {order:?}"
        );
    }
    assert!(
        walked <= nblocks,
        "{}: {walked} blocks walked of {nblocks}",
        path.display()
    );
}
