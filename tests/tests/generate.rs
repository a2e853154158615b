//! `etvk generate` on the real ExecuTorch Llama export (e5): prefill through the KV cache
//! then greedy decode, checked against the exporter's PyTorch logits, and `--profile`.

use std::process::Command;

use etvk_tests::fixtures::{cli_binary, fixtures_dir, load_io};

const E5: &str = "e5_llama3_tiny_kvcache_fp32";

fn le_f32(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
        .collect()
}

fn le_i64(bytes: &[u8]) -> Vec<i64> {
    bytes
        .chunks_exact(8)
        .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

fn argmax(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best
}

fn generate(args: &[&str]) -> String {
    let bin = cli_binary().expect("etvk binary");
    let model = fixtures_dir().join(E5).join("model.pte");
    let out = Command::new(&bin)
        .arg("generate")
        .arg(&model)
        .args(args)
        .env("ETVK_VALIDATION", "1")
        .output()
        .expect("run etvk generate");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "etvk generate {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn generated(stdout: &str) -> Vec<i64> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("generated: ["))
        .unwrap_or_else(|| panic!("no `generated:` line in\n{stdout}"));
    line.trim_end_matches(']')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("token id"))
        .collect()
}

/// The fixture's six calls are tokens t0..t5 at positions 0..5, with PyTorch's logits after
/// each. Prefilling t0..t5 and decoding greedily must give argmax of the last call's logits
/// first; prefilling only t0..t4 must give argmax of call 4's.
#[test]
fn greedy_generation_follows_pytorch_logits() {
    let io = load_io(E5).expect("io.json");
    let mut tokens = Vec::new();
    let mut want_next = Vec::new();
    for (k, case) in io.cases.iter().enumerate() {
        let tok = le_i64(&case.inputs[0].load().expect("tokens").data);
        let pos = le_i64(&case.inputs[1].load().expect("input_pos").data);
        assert_eq!(pos, vec![k as i64], "e5 case {k} is not at position {k}");
        tokens.push(tok[0]);
        let logits = le_f32(&case.outputs[0].load().expect("logits").data);
        want_next.push(argmax(&logits) as i64);
    }
    for len in [5, 6] {
        let prompt: Vec<String> = tokens[..len].iter().map(i64::to_string).collect();
        let out = generate(&["--prompt-tokens", &prompt.join(","), "--max-new", "3"]);
        let got = generated(&out);
        assert_eq!(got.len(), 3, "{out}");
        assert_eq!(
            got[0],
            want_next[len - 1],
            "first generated token after {len} prompt tokens:\n{out}"
        );
        assert!(
            out.contains(&format!("prefill: {len} token(s) in {len} call(s)")),
            "{out}"
        );
        assert!(out.contains("decode: 2 call(s)"), "{out}");
        assert!(out.contains("tokens/s"), "{out}");
    }
}

#[test]
fn sampling_is_seeded_and_profile_names_the_ops() {
    let args = [
        "--prompt-tokens",
        "5,9",
        "--max-new",
        "6",
        "--temperature",
        "0.8",
        "--top-p",
        "0.9",
        "--seed",
        "11",
    ];
    let a = generated(&generate(&args));
    let b = generated(&generate(&args));
    assert_eq!(a, b, "same seed, same tokens");
    assert!(a.iter().all(|&t| (0..128).contains(&t)), "{a:?}");

    let out = generate(&["--prompt-tokens", "1,2", "--max-new", "2", "--profile"]);
    assert!(out.contains("GPU profile: 3 execute(s)"), "{out}");
    for op in [
        "sdpa_with_kv_cache.default",
        "aten.linear.default",
        "et_vk.rms_norm.default",
    ] {
        assert!(out.contains(op), "profile lacks {op}:\n{out}");
    }
}

#[test]
fn bad_arguments_are_one_line_errors() {
    let bin = cli_binary().expect("etvk binary");
    let model = fixtures_dir().join(E5).join("model.pte");
    for (args, needle) in [
        (vec!["--prompt-tokens", "1,x"], "not a token id"),
        (vec!["--prompt-tokens", "1", "--top-p", "0"], "--top-p"),
        (
            vec!["--prompt-tokens", "1", "--temperature=-1"],
            "--temperature",
        ),
    ] {
        let out = Command::new(&bin)
            .arg("generate")
            .arg(&model)
            .args(&args)
            .output()
            .expect("run etvk");
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // A program that is not a Llama export (float input) is refused, naming why.
    let mlp = fixtures_dir().join("b_mlp_fp32").join("model.pte");
    let out = Command::new(&bin)
        .arg("generate")
        .arg(&mlp)
        .args(["--prompt-tokens", "1"])
        .output()
        .expect("run etvk");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a Llama-style program"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
