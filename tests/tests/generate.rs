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
    run_generate(&fixtures_dir().join(E5).join("model.pte"), args)
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

    // Every row: which ops make the top rows depends on the device's timing.
    let out = generate(&[
        "--prompt-tokens",
        "1,2",
        "--max-new",
        "2",
        "--profile",
        "--profile-rows",
        "0",
    ]);
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

/// The export's `get_max_context_len` (32) bounds generation: --max-new is cut so that no
/// call reaches past the KV cache (before, the 33rd position failed in sdpa_with_kv_cache
/// after 29 tokens), and a prompt longer than the context is refused before any call.
#[test]
fn generation_stops_at_the_programs_context() {
    let out = generate(&["--prompt-tokens", "1,2,3", "--max-new", "40"]);
    assert!(out.contains("--max-new 40 cut to 30"), "{out}");
    assert_eq!(generated(&out).len(), 30, "{out}");
    let bin = cli_binary().expect("etvk binary");
    let model = fixtures_dir().join(E5).join("model.pte");
    let prompt: Vec<String> = (0..33).map(|t| (t % 100).to_string()).collect();
    let out = Command::new(&bin)
        .arg("generate")
        .arg(&model)
        .args(["--prompt-tokens", &prompt.join(","), "--max-new", "2"])
        .output()
        .expect("run etvk");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("33 tokens exceed the program's context of 32"),
        "{err}"
    );
}

/// Token ids t map to logits one-hot at perm(t) = (5t + 3) mod 16: an embedding "model"
/// whose greedy continuation is known.
const PERM_V: usize = 16;

fn perm(t: i64) -> i64 {
    (5 * t + 3) % PERM_V as i64
}

/// A one-delegate program: tokens int64 `[1, <= max_l]` (dynamic), optionally an `input_pos`
/// int64 `[1]` input the graph does not read, logits `[1, L, 16]` = the permutation
/// embedding of the tokens. Written to a temp file named after `tag`.
fn perm_program(tag: &str, max_l: usize, with_pos: bool) -> std::path::PathBuf {
    use etvk_format::ir::DataType;
    use etvk_format::program_ir::{PlanTensor, TensorData};
    use etvk_format::program_writer::single_delegate_program;
    use etvk_format::writer::GraphBuilder;

    let v = PERM_V;
    let mut table = vec![0f32; v * v];
    for t in 0..v {
        table[t * v + perm(t as i64) as usize] = 1.0;
    }
    let bytes: Vec<u8> = table.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut gb = GraphBuilder::new();
    let tokens = gb.add_tensor(DataType::Int32, &[1, max_l]);
    let pos = with_pos.then(|| gb.add_tensor(DataType::Int32, &[1]));
    let weight = gb.add_constant_inline(DataType::Float32, &[v, v], &bytes);
    let pad = gb.add_int(-1);
    let no = gb.add_bool(false);
    let logits = gb.add_tensor(DataType::Float32, &[1, max_l, v]);
    gb.add_op(
        "aten.embedding.default",
        &[weight, tokens, pad, no, no, logits],
    );
    gb.mark_input(tokens);
    if let Some(p) = pos {
        gb.mark_input(p);
    }
    gb.mark_output(logits);
    let plan_tensor = |st: i8, sizes: &[i64], dynamic: bool| PlanTensor {
        scalar_type: st,
        sizes: sizes.to_vec(),
        dim_order: (0..sizes.len() as u8).collect(),
        shape_dynamism: dynamic as i8,
        data: TensorData::None,
    };
    let mut inputs = vec![plan_tensor(4, &[1, max_l as i64], true)];
    if with_pos {
        inputs.push(plan_tensor(4, &[1], false));
    }
    let program = single_delegate_program(
        "forward",
        gb.finish_delegate(),
        vec![("require_dynamic_shapes".to_string(), vec![1])],
        vec![],
        inputs,
        vec![plan_tensor(6, &[1, max_l as i64, v as i64], true)],
    )
    .expect("program");
    let path = std::env::temp_dir().join(format!("etvk-gen-{tag}-{}.pte", std::process::id()));
    std::fs::write(&path, program).expect("write program");
    path
}

fn run_generate(path: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(cli_binary().expect("etvk binary"))
        .arg("generate")
        .arg(path)
        .args(args)
        .env("ETVK_VALIDATION", "1")
        .output()
        .expect("run etvk generate");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The greedy continuation of `last` under perm, `n` tokens.
fn perm_chain(mut last: i64, n: usize) -> Vec<i64> {
    (0..n)
        .map(|_| {
            last = perm(last);
            last
        })
        .collect()
}

/// No KV cache (logits for every position): the whole sequence is fed every step, up to
/// the exported maximum.
#[test]
fn dynamic_length_program_without_kv_cache() {
    let path = perm_program("nokv", 8, false);
    let out = run_generate(&path, &["--prompt-tokens", "1,2,3", "--max-new", "4"]);
    assert!(out.contains("no KV cache"), "{out}");
    assert_eq!(generated(&out), perm_chain(3, 4), "{out}");
    // A full prompt leaves room for one token; the next call would exceed the maximum.
    let out = run_generate(
        &path,
        &["--prompt-tokens", "0,1,2,3,4,5,6,7", "--max-new", "3"],
    );
    assert_eq!(generated(&out), vec![perm(7)], "{out}");
    assert!(
        out.contains("stopping: the sequence reached the 8 tokens"),
        "{out}"
    );
    let _ = std::fs::remove_file(&path);
}

/// A KV-cache program taking up to 4 tokens per call: a 6-token prompt is prefilled in two
/// calls (4 + 2, the last row of the second call's logits picks the first new token), then
/// one call per new token.
#[test]
fn dynamic_length_program_with_input_pos_prefills_in_chunks() {
    let path = perm_program("kv", 4, true);
    let out = run_generate(&path, &["--prompt-tokens", "9,8,7,6,5,4", "--max-new", "3"]);
    assert!(out.contains("KV cache (input_pos)"), "{out}");
    assert!(out.contains("prefill: 6 token(s) in 2 call(s)"), "{out}");
    assert!(out.contains("decode: 2 call(s)"), "{out}");
    assert_eq!(generated(&out), perm_chain(4, 3), "{out}");
    let _ = std::fs::remove_file(&path);
}
