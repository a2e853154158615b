//! The `etvk` binary: exit codes, one-line errors, `inspect` on a real fixture.

use std::path::PathBuf;
use std::process::{Command, Output};

fn etvk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_etvk"))
        .args(args)
        .env_remove("ETVK_PLUGIN")
        .output()
        .unwrap()
}

fn fixture(name: &str, file: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
        .join(file)
        .display()
        .to_string()
}

/// Exit code 1 and exactly one stderr line `etvk: error: ...`; returns that line.
fn one_line_error(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {err}");
    assert!(lines[0].starts_with("etvk: error: "), "stderr: {err}");
    lines[0].to_string()
}

#[test]
fn usage_errors_are_one_line_with_exit_code_1() {
    let line = one_line_error(&etvk(&["run"]));
    assert!(line.contains("--call"), "{line}");
    let line = one_line_error(&etvk(&["frobnicate"]));
    assert!(line.contains("frobnicate"), "{line}");
    assert_eq!(etvk(&["--help"]).status.code(), Some(0));
}

#[test]
fn missing_files_are_named() {
    let line = one_line_error(&etvk(&["inspect", "/nonexistent/model.pte"]));
    assert!(line.contains("/nonexistent/model.pte"), "{line}");
    let model = fixture("g3_llama_block_dynamic_seq", "model.pte");
    let line = one_line_error(&etvk(&[
        "run",
        &model,
        "--plugin",
        "/nonexistent/libetvk.so",
        "--call",
        "x.npy",
    ]));
    assert!(line.contains("/nonexistent/libetvk.so"), "{line}");
    let line = one_line_error(&etvk(&[
        "run", &model, "--method", "train", "--call", "x.npy",
    ]));
    assert!(line.contains("no method \"train\""), "{line}");
}

#[test]
fn inspect_shows_plan_delegates_and_vkgraph() {
    let out = etvk(&[
        "inspect",
        &fixture("g3_llama_block_dynamic_seq", "model.pte"),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("extended header: length 32, program_size 4584, segment_base_offset 4608"),
        "{text}"
    );
    assert!(text.contains("segments (17):"));
    assert!(text.contains("named data (13):"));
    assert!(text.contains("method \"forward\": 31 values, inputs [0], outputs [30]"));
    assert!(
        text.contains("1: KernelCall aten::expand_copy.out args [3, 9, 10, 5, 5]"),
        "{text}"
    );
    assert!(
        text.contains("6: DelegateCall delegate 2 args [25, 1, 19, 0, 30]"),
        "{text}"
    );
    assert_eq!(
        text.matches("compile spec require_dynamic_shapes = 0x01")
            .count(),
        3
    );
    assert!(text.contains("VkGraph version \"0\": 41 values, 5 constants, 16 ops, inputs [7], outputs [9, 16, 36, 40]"));
    assert!(text.contains("et_vk.rms_norm.default"));
}

#[test]
fn ops_prints_a_table() {
    let out = etvk(&["ops"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("name"), "{text}");
    let n = etvk_runtime_ops_count(&text);
    assert_eq!(text.lines().count(), n + 2, "{text}");
}

/// The `N ops` footer.
fn etvk_runtime_ops_count(text: &str) -> usize {
    let last = text.lines().last().unwrap();
    last.trim_end_matches(" ops").parse().unwrap()
}

/// `etvk run` end to end through the plugin when it can create a backend; writes the
/// outputs and compares them with the fixture's expected arrays.
#[test]
fn run_writes_outputs_when_the_plugin_works() {
    let dir = std::env::temp_dir().join(format!("etvk-cli-run-{}", std::process::id()));
    let model = fixture("a_linear_fp32", "model.pte");
    let c0 = fixture("a_linear_fp32", "case0_in0.npy");
    let c1 = fixture("a_linear_fp32", "case1_in0.npy");
    let out = etvk(&[
        "run",
        &model,
        "--call",
        &c0,
        "--call",
        &c1,
        "--out-dir",
        &dir.display().to_string(),
    ]);
    if out.status.code() != Some(0) {
        eprintln!(
            "NOTICE: etvk run failed, plugin not usable yet: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("call 0: ") && text.contains("call 1: "),
        "{text}"
    );
    for i in 0..2 {
        let got = etvk_host::npy::read(&dir.join(format!("call{i}_out0.npy"))).unwrap();
        let want = etvk_host::npy::read(std::path::Path::new(&fixture(
            "a_linear_fp32",
            &format!("case{i}_out0.npy"),
        )))
        .unwrap();
        assert_eq!((got.dtype, &got.sizes), (want.dtype, &want.sizes));
        for (a, b) in got
            .to_f32_vec()
            .unwrap()
            .iter()
            .zip(want.to_f32_vec().unwrap())
        {
            assert!(
                (a - b).abs() <= 1e-3 + 1e-3 * b.abs(),
                "call {i}: {a} vs {b}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A method without delegates runs without any plugin: e5's `get_vocab_size` returns an
/// Int, saved as a 0-d int64 array; two calls on one load.
#[test]
fn run_a_scalar_method_and_save_its_output() {
    let dir = std::env::temp_dir().join(format!("etvk-cli-scalar-{}", std::process::id()));
    let model = fixture("e5_llama3_tiny_kvcache_fp32", "model.pte");
    let d = dir.display().to_string();
    let out = etvk(&[
        "run",
        &model,
        "--method",
        "get_vocab_size",
        "--call",
        "",
        "--call",
        "",
        "--out-dir",
        &d,
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("method \"get_vocab_size\"") && text.contains("call 1: "),
        "{text}"
    );
    for i in 0..2 {
        let t = etvk_host::npy::read(&dir.join(format!("call{i}_out0.npy"))).unwrap();
        assert_eq!((t.dtype, t.sizes.len()), (etvk_host::DType::I64, 0));
        assert_eq!(t.to_i64_vec().unwrap(), vec![128]);
    }
    let _ = std::fs::remove_dir_all(&dir);
    // Without --out-dir the summary is printed instead.
    let out = etvk(&["run", &model, "--method", "get_max_seq_len", "--call", ""]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("out0: int 16"), "{text}");
    // Passing an input to a method that takes none is a one-line error.
    let x = fixture("e5_llama3_tiny_kvcache_fp32", "case0_in0.npy");
    let line = one_line_error(&etvk(&[
        "run",
        &model,
        "--method",
        "get_max_seq_len",
        "--call",
        &x,
    ]));
    assert!(
        line.contains("call 0") && line.contains("takes 0 inputs, got 1"),
        "{line}"
    );
}

#[test]
fn bench_checks_the_8da4w_linear_against_its_reference() {
    // Small enough for lavapipe; the bench exits 1 when sampled outputs differ from the
    // torchao-quantized f64 reference.
    let out = etvk(&[
        "bench",
        "linear_dq8ca_q4gsw",
        "--m",
        "3",
        "--k",
        "256",
        "--n",
        "64",
        "--iters",
        "2",
        "--ceiling-mib",
        "16",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("check ok"), "{text}");
    assert!(
        text.contains("| linear_dq8ca_q4gsw | 3 | 256 | 64 |"),
        "{text}"
    );
}

#[test]
fn bench_rejects_bad_arguments_before_touching_the_device() {
    let cases: [(&[&str], &str); 4] = [
        (&["bench", "nope"], "unknown op \"nope\""),
        (
            &[
                "bench",
                "linear_q4gsw",
                "--m",
                "0",
                "--k",
                "64",
                "--n",
                "32",
            ],
            "--m, --k, --n must be positive",
        ),
        (
            &["bench", "linear_q4gsw", "--m", "1", "--k", "7", "--n", "32"],
            "group size 32 must divide K padded to 8 (8)",
        ),
        (
            &[
                "bench",
                "linear_q4gsw_backward",
                "--m",
                "1",
                "--k",
                "64",
                "--n",
                "32",
                "--group-size",
                "12",
            ],
            "group size 12 must divide K padded to 8 (64)",
        ),
    ];
    for (args, want) in cases {
        let out = etvk(args);
        let line = one_line_error(&out);
        assert!(line.contains(want), "{args:?}: {line}");
        // Nothing measured first: no device line, no ceiling.
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
