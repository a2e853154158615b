//! `b_mlp_fp32` and `g1_mlp_dynamic_batch` (real exporter output): Linear -> ReLU -> Linear
//! -> + x, loaded from the fixture's delegate blob with the weights from model.pte's
//! named-data segments. g1's cases (batch 8, 1, 5, 32) run in order on one delegate, so
//! they cover resizing down and back up to the exported maximum.

mod common;
use common::*;

use etvk_runtime::*;

/// (input shape, input, output shape, output) of one case.
struct Case {
    in_shape: Vec<usize>,
    x: Vec<f32>,
    out_shape: Vec<usize>,
    y: Vec<f32>,
}

fn shape_of(v: &serde_json::Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

fn io_cases(name: &str) -> (Vec<Case>, f64, f64) {
    let dir = fixture_dir(name);
    let io: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("io.json")).unwrap()).unwrap();
    let read = |f: &serde_json::Value| f32s(&std::fs::read(dir.join(f.as_str().unwrap())).unwrap());
    let cases = io["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let (inp, out) = (&c["inputs"][0], &c["outputs"][0]);
            Case {
                in_shape: shape_of(&inp["shape"]),
                x: read(&inp["file"]),
                out_shape: shape_of(&out["shape"]),
                y: read(&out["file"]),
            }
        })
        .collect();
    (
        cases,
        io["atol"].as_f64().unwrap(),
        io["rtol"].as_f64().unwrap(),
    )
}

fn run_fixture(name: &str, specs: &[(String, Vec<u8>)]) -> usize {
    let blob = std::fs::read(fixture_dir(name).join("delegate.bin")).unwrap();
    let be = backend();
    let named = load_named_data(name);
    let mut d = Delegate::init(&be, &blob, specs, &named).unwrap();
    assert_eq!((d.num_inputs(), d.num_outputs()), (1, 1));
    let (cases, atol, rtol) = io_cases(name);
    for (i, c) in cases.iter().enumerate() {
        let mut args = vec![host_f32(&c.in_shape, &c.x), empty_out()];
        d.execute(&mut args).unwrap();
        let (sizes, got) = out_f32(&args[1]);
        assert_eq!(sizes, c.out_shape, "{name} case {i}: output sizes");
        let want: Vec<f64> = c.y.iter().map(|v| *v as f64).collect();
        assert_close(&got, &want, atol, rtol, &format!("{name} case {i}"));
    }
    // Op names without the kernel a node with alternatives adds (`op/kernel`).
    let ops: Vec<String> = d
        .profile()
        .into_iter()
        .map(|(op, _)| op.split('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        ops,
        [
            "aten.linear.default",
            "aten.relu.default",
            "aten.linear.default",
            "aten.add.Tensor"
        ]
    );
    assert_eq!(be.validation_error_count(), 0);
    cases.len()
}

#[test]
fn b_mlp_fp32_matches_eager_pytorch() {
    assert!(run_fixture("b_mlp_fp32", &[]) >= 1);
}

#[test]
fn g1_mlp_dynamic_batch_runs_batches_8_1_5_32_on_one_delegate() {
    let specs = vec![("require_dynamic_shapes".to_string(), vec![1])];
    let (cases, _, _) = io_cases("g1_mlp_dynamic_batch");
    let batches: Vec<usize> = cases.iter().map(|c| c.in_shape[0]).collect();
    assert_eq!(batches, [8, 1, 5, 32]);
    assert_eq!(run_fixture("g1_mlp_dynamic_batch", &specs), 4);
}
