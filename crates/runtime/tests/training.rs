//! Training primitives (`et_vk.linear_dW`, `et_vk.fused_ce`, `et_vk.adamw_step`,
//! `et_vk.q4gsw_requant`), GPU-resident state (`Delegate::read_tensor` / `write_tensor`)
//! and runtime scalars (`Delegate::set_scalar`), against f64 CPU references (exact for the
//! requant). Graphs are built by hand; validation layers are on.

mod common;
use common::*;

use etvk_format::ir::*;
use etvk_runtime::*;

const DW: &str = "et_vk.linear_dW.default";
const CE: &str = "et_vk.fused_ce.default";
const ADAMW: &str = "et_vk.adamw_step.default";
const REQUANT: &str = "et_vk.q4gsw_requant.default";

fn f32_tensor(dims: &[usize]) -> Value {
    tensor(DataType::Float32, dims, None, None)
}

/// A tensor with a separate host (staging) dtype, e.g. int32 labels the host passes as int64.
fn staged(dtype: DataType, staging: DataType, dims: &[usize]) -> Value {
    match tensor(dtype, dims, None, None) {
        Value::Tensor(mut t) => {
            t.staging_dtype = staging;
            Value::Tensor(t)
        }
        _ => unreachable!(),
    }
}

fn host_i64(sizes: &[usize], data: &[i64]) -> DelegateArg {
    DelegateArg::Tensor(HostTensor {
        dtype: HostDType::Long,
        sizes: sizes.to_vec(),
        data: data.iter().flat_map(|x| x.to_le_bytes()).collect(),
    })
}

fn host_u8_out() -> DelegateArg {
    DelegateArg::Tensor(HostTensor {
        dtype: HostDType::Byte,
        sizes: vec![],
        data: vec![],
    })
}

fn f32_host(sizes: &[usize], data: &[f32]) -> HostTensor {
    HostTensor {
        dtype: HostDType::Float,
        sizes: sizes.to_vec(),
        data: f32_bytes(data),
    }
}

fn load(
    ir: &VulkanDelegate,
    named: &MapData,
    dynamic: bool,
) -> (std::sync::Arc<Backend>, Delegate) {
    let be = backend();
    let specs = if dynamic {
        vec![("require_dynamic_shapes".to_string(), vec![1u8])]
    } else {
        vec![]
    };
    let d = Delegate::from_ir(&be, ir, &specs, named).unwrap_or_else(|e| panic!("init: {e}"));
    (be, d)
}

// ---------------------------------------------------------------------------------------
// linear_dW

/// f64 reference: dW[n][k] = sum_m dy[m][n] x[m][k].
fn dw_ref(dy: &[f32], x: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut out = vec![0f64; n * k];
    for i in 0..m {
        for a in 0..n {
            let d = dy[i * n + a] as f64;
            for b in 0..k {
                out[a * k + b] += d * x[i * k + b] as f64;
            }
        }
    }
    out
}

fn dw_graph(dy_dims: &[usize], x_dims: &[usize], n: usize, k: usize) -> VulkanDelegate {
    delegate_ir(graph(
        vec![f32_tensor(dy_dims), f32_tensor(x_dims), f32_tensor(&[n, k])],
        vec![op(0, DW, &[0, 1, 2])],
        &[0, 1],
        &[2],
        vec![],
    ))
}

fn check_dw(d: &mut Delegate, dy_dims: &[usize], x_dims: &[usize], seed: u64) {
    let n = *dy_dims.last().unwrap();
    let k = *x_dims.last().unwrap();
    let m: usize = dy_dims[..dy_dims.len() - 1].iter().product();
    let dy = rand_vec(m * n, seed);
    let x = rand_vec(m * k, seed + 1);
    let mut args = vec![host_f32(dy_dims, &dy), host_f32(x_dims, &x), empty_out()];
    d.execute(&mut args).unwrap();
    let (sizes, got) = out_f32(&args[2]);
    assert_eq!(sizes, vec![n, k]);
    let tol = 1e-5 * m as f64;
    assert_close(
        &got,
        &dw_ref(&dy, &x, m, n, k),
        tol,
        1e-5,
        &format!("linear_dW {dy_dims:?} x {x_dims:?}"),
    );
}

#[test]
fn linear_dw_odd_sizes_match_f64() {
    // Single element, sizes that are not multiples of the 64 x 64 block or the 16-row
    // m-step, and N, K just past a block edge.
    for (i, &(m, n, k)) in [
        (1, 1, 1),
        (7, 13, 5),
        (37, 65, 129),
        (17, 130, 3),
        (100, 1, 67),
    ]
    .iter()
    .enumerate()
    {
        let ir = dw_graph(&[m, n], &[m, k], n, k);
        let (be, mut d) = load(&ir, &MapData::default(), false);
        check_dw(&mut d, &[m, n], &[m, k], 10 + i as u64);
        assert_eq!(be.validation_error_count(), 0);
    }
}

#[test]
fn linear_dw_flattens_3d_inputs_and_resizes() {
    let ir = dw_graph(&[2, 5, 70], &[2, 5, 67], 70, 67);
    let (be, mut d) = load(&ir, &MapData::default(), true);
    check_dw(&mut d, &[2, 5, 70], &[2, 5, 67], 3);
    // Fewer tokens (M = 6), then back to the maximum.
    check_dw(&mut d, &[2, 3, 70], &[2, 3, 67], 4);
    check_dw(&mut d, &[2, 5, 70], &[2, 5, 67], 5);
    // Leading dims that differ in shape but not in product are fine; a product mismatch is not.
    let ir = dw_graph(&[3, 4, 9], &[12, 11], 9, 11);
    let (_, mut d2) = load(&ir, &MapData::default(), false);
    check_dw(&mut d2, &[3, 4, 9], &[12, 11], 6);
    let bad = dw_graph(&[3, 4, 9], &[11, 11], 9, 11);
    let err = Delegate::from_ir(&be, &bad, &[], &MapData::default())
        .err()
        .expect("M mismatch must fail");
    assert!(
        err.message.contains("linear_dW") && err.message.contains("M"),
        "{}",
        err.message
    );
    assert_eq!(be.validation_error_count(), 0);
}

/// Fixture f3_linear_dW (real exporter output) through the parsed path, io.json tolerances.
#[test]
fn f3_linear_dw_fixture_through_init() {
    let dir = fixture_dir("f3_linear_dW");
    let blob = std::fs::read(dir.join("delegate.bin")).unwrap();
    let io: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("io.json")).unwrap()).unwrap();
    let (atol, rtol) = (io["atol"].as_f64().unwrap(), io["rtol"].as_f64().unwrap());
    let be = backend();
    let mut d = Delegate::init(&be, &blob, &[], &MapData::default()).unwrap();
    assert_eq!((d.num_inputs(), d.num_outputs()), (2, 1));
    let shape = |t: &serde_json::Value| -> Vec<usize> {
        t["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect()
    };
    let read = |t: &serde_json::Value| {
        f32s(&std::fs::read(dir.join(t["file"].as_str().unwrap())).unwrap())
    };
    let cases = io["cases"].as_array().unwrap();
    assert!(!cases.is_empty());
    for (c, case) in cases.iter().enumerate() {
        let ins = case["inputs"].as_array().unwrap();
        let out = &case["outputs"][0];
        let (dy, x) = (read(&ins[0]), read(&ins[1]));
        let mut args = vec![
            host_f32(&shape(&ins[0]), &dy),
            host_f32(&shape(&ins[1]), &x),
            empty_out(),
        ];
        d.execute(&mut args).unwrap();
        let (sizes, got) = out_f32(&args[2]);
        assert_eq!(sizes, shape(out));
        let want: Vec<f64> = read(out).iter().map(|v| *v as f64).collect();
        assert_close(&got, &want, atol, rtol, &format!("f3_linear_dW case {c}"));
        // And the independent f64 reference.
        let (m, n, k) = (shape(&ins[0])[0], shape(&ins[0])[1], shape(&ins[1])[1]);
        assert_close(&got, &dw_ref(&dy, &x, m, n, k), 1e-4, 1e-4, "f64 reference");
    }
    assert_eq!(be.validation_error_count(), 0);
}

// ---------------------------------------------------------------------------------------
// fused_ce

/// f64 reference: (loss, dlogits) with rows whose label is outside [0, V) ignored.
fn ce_ref(x: &[f32], labels: &[i64], v: usize, n_valid: f64) -> (f64, Vec<f64>) {
    let rows = labels.len();
    let mut loss = 0f64;
    let mut dl = vec![0f64; rows * v];
    for r in 0..rows {
        let lab = labels[r];
        if lab < 0 || lab as usize >= v {
            continue;
        }
        let row = &x[r * v..(r + 1) * v];
        let mx = row.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(b as f64));
        let sum: f64 = row.iter().map(|&b| (b as f64 - mx).exp()).sum();
        let lse = mx + sum.ln();
        loss += lse - row[lab as usize] as f64;
        for j in 0..v {
            let sm = (row[j] as f64 - mx).exp() / sum;
            dl[r * v + j] = (sm - if j == lab as usize { 1.0 } else { 0.0 }) / n_valid;
        }
    }
    (loss / n_valid, dl)
}

/// Values: 0 logits, 1 labels (int32, staged int64), 2 n_valid, 3 loss, 4 dlogits,
/// 5 ValueList(3, 4).
fn ce_graph(logit_dims: &[usize], n_valid: Value, n_valid_is_input: bool) -> VulkanDelegate {
    let rows: usize = logit_dims[..logit_dims.len() - 1].iter().product();
    let inputs: Vec<usize> = if n_valid_is_input {
        vec![0, 1, 2]
    } else {
        vec![0, 1]
    };
    delegate_ir(graph(
        vec![
            f32_tensor(logit_dims),
            staged(DataType::Int32, DataType::Int64, &[rows]),
            n_valid,
            f32_tensor(&[]),
            f32_tensor(logit_dims),
            Value::ValueList(vec![3, 4]),
        ],
        vec![op(0, CE, &[0, 1, 2, 5])],
        &inputs,
        &[3, 4],
        vec![],
    ))
}

fn check_ce(
    d: &mut Delegate,
    dims: &[usize],
    labels: &[i64],
    n_valid: f64,
    extra_inputs: Vec<DelegateArg>,
    seed: u64,
) {
    let v = *dims.last().unwrap();
    // Logits with a wide range so that the max shift matters.
    let x: Vec<f32> = rand_vec(labels.len() * v, seed)
        .iter()
        .map(|a| a * 12.0)
        .collect();
    let mut args = vec![host_f32(dims, &x), host_i64(&[labels.len()], labels)];
    args.extend(extra_inputs);
    args.push(empty_out());
    args.push(empty_out());
    d.execute(&mut args).unwrap();
    let n = args.len();
    let (ls, loss) = out_f32(&args[n - 2]);
    let (ds, dl) = out_f32(&args[n - 1]);
    assert_eq!(ls, Vec::<usize>::new(), "loss is rank-0");
    assert_eq!(ds, dims.to_vec());
    let (want_loss, want_dl) = ce_ref(&x, labels, v, n_valid);
    assert_close(&loss, &[want_loss], 1e-5, 1e-5, &format!("loss {dims:?}"));
    assert_close(&dl, &want_dl, 1e-6, 1e-5, &format!("dlogits {dims:?}"));
    // Ignored rows are exactly zero.
    for (r, &lab) in labels.iter().enumerate() {
        if lab < 0 || lab as usize >= v {
            assert!(dl[r * v..(r + 1) * v].iter().all(|&g| g == 0.0), "row {r}");
        }
    }
}

#[test]
fn fused_ce_masked_rows_and_a_vocabulary_larger_than_a_workgroup() {
    // 7 rows, V = 1000: two ignored rows (-100) and one out-of-range label (ignored too).
    let labels = [3i64, -100, 999, 0, 1000, 517, -100];
    let n_valid = 4.0;
    let ir = ce_graph(&[7, 1000], Value::Double(n_valid), false);
    let (be, mut d) = load(&ir, &MapData::default(), false);
    check_ce(&mut d, &[7, 1000], &labels, n_valid, vec![], 21);

    // n_valid is a runtime scalar: change it without rebuilding.
    d.set_scalar(2, 2.5).unwrap();
    check_ce(&mut d, &[7, 1000], &labels, 2.5, vec![], 22);
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn fused_ce_single_row_small_vocab_and_3d_logits() {
    // rows = 1, V = 1000, n_valid an Int.
    let ir = ce_graph(&[1, 1000], Value::Int(1), false);
    let (be, mut d) = load(&ir, &MapData::default(), false);
    check_ce(&mut d, &[1, 1000], &[123], 1.0, vec![], 31);
    // A fully ignored batch: zero dlogits everywhere (the loss is 0/1 = 0).
    check_ce(&mut d, &[1, 1000], &[-1], 1.0, vec![], 32);

    // V smaller than the 64 lanes, leading dims [2, 3] flattened to 6 rows... plus an
    // odd vocabulary 67 (one lane takes two elements).
    for v in [5usize, 67] {
        let ir = ce_graph(&[2, 3, v], Value::Double(5.0), false);
        let (_, mut d) = load(&ir, &MapData::default(), false);
        let labels = [0i64, (v - 1) as i64, -100, 2, 1, 4];
        check_ce(&mut d, &[2, 3, v], &labels, 5.0, vec![], 33 + v as u64);
    }
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn fused_ce_n_valid_as_a_symint_input() {
    let ir = ce_graph(&[7, 130], Value::SymInt(7), true);
    let (be, mut d) = load(&ir, &MapData::default(), false);
    let labels = [1i64, 2, -100, 129, 0, 64, -100];
    check_ce(
        &mut d,
        &[7, 130],
        &labels,
        5.0,
        vec![DelegateArg::Int(5)],
        41,
    );
    check_ce(
        &mut d,
        &[7, 130],
        &labels,
        3.0,
        vec![DelegateArg::Int(3)],
        42,
    );
    assert_eq!(be.validation_error_count(), 0);
}

// ---------------------------------------------------------------------------------------
// adamw_step, GPU-resident state, runtime scalars

/// f64 AdamW step in the §4.4 order.
#[allow(clippy::too_many_arguments)]
fn adamw_ref(
    p: &mut [f64],
    m: &mut [f64],
    v: &mut [f64],
    g: &[f32],
    lr: f64,
    b1: f64,
    b2: f64,
    eps: f64,
    wd: f64,
    bc1: f64,
    bc2: f64,
) {
    // The GPU holds the scalars as f32: round them the same way (1 - beta2 with beta2 =
    // 0.999 differs by 5e-5 relative otherwise); the arithmetic stays f64.
    let r = |x: f64| x as f32 as f64;
    let (lr, b1, b2, eps, wd, bc1, bc2) = (r(lr), r(b1), r(b2), r(eps), r(wd), r(bc1), r(bc2));
    for i in 0..p.len() {
        let gi = g[i] as f64;
        let w = p[i] - lr * wd * p[i];
        m[i] = b1 * m[i] + (1.0 - b1) * gi;
        v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
        p[i] = w - lr * (m[i] / bc1) / ((v[i] / bc2).sqrt() + eps);
    }
}

// Value ids of the adamw graph.
const A_PARAM: usize = 0;
const A_M: usize = 1;
const A_V: usize = 2;
const A_GRAD: usize = 3;
const A_LR: usize = 4;
const A_BC1: usize = 9;
const A_BC2: usize = 10;
const A_OUT_P: usize = 12;

/// param [dims] (constant 0), m and v (constants 1, 2 or, with `graph_moments`, graph
/// tensors), grad (input), scalars, output ValueList(12, 13, 14) with 12 the graph output.
fn adamw_graph(dims: &[usize], graph_moments: bool, hp: [f64; 5]) -> VulkanDelegate {
    let numel: usize = dims.iter().product();
    let nb = numel * 4;
    let (m, v) = if graph_moments {
        (
            tensor(DataType::Float32, dims, None, Some(7)),
            tensor(DataType::Float32, dims, None, Some(8)),
        )
    } else {
        (
            tensor(DataType::Float32, dims, Some(1), None),
            tensor(DataType::Float32, dims, Some(2), None),
        )
    };
    let [lr, b1, b2, eps, wd] = hp;
    delegate_ir(graph(
        vec![
            tensor(DataType::Float32, dims, Some(0), None),
            m,
            v,
            f32_tensor(dims),
            Value::Double(lr),
            Value::Double(b1),
            Value::Double(b2),
            Value::Double(eps),
            Value::Double(wd),
            Value::Double(1.0), // bias_correction1, set per step
            Value::Double(1.0), // bias_correction2, set per step
            Value::ValueList(vec![12, 13, 14]),
            f32_tensor(dims),
            f32_tensor(dims),
            f32_tensor(dims),
        ],
        vec![op(0, ADAMW, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])],
        &[A_GRAD],
        &[A_OUT_P],
        vec![
            ConstantSource::Named {
                key: "param".into(),
                length: nb,
            },
            ConstantSource::Named {
                key: "m".into(),
                length: nb,
            },
            ConstantSource::Named {
                key: "v".into(),
                length: nb,
            },
        ],
    ))
}

fn adamw_named(p: &[f32]) -> MapData {
    let mut named = MapData::default();
    named.0.insert("param".into(), f32_bytes(p));
    named.0.insert("m".into(), f32_bytes(&vec![0.0; p.len()]));
    named.0.insert("v".into(), f32_bytes(&vec![0.0; p.len()]));
    named
}

fn read_f32(d: &mut Delegate, v: usize) -> (Vec<usize>, Vec<f32>) {
    let t = d.read_tensor(v).unwrap();
    assert_eq!(t.dtype, HostDType::Float);
    (t.sizes, f32s(&t.data))
}

fn to_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|x| *x as f64).collect()
}

/// Run `steps` AdamW steps on one loaded delegate, setting the bias corrections (and, from
/// step 3, a new learning rate) through `set_scalar` each step, and compare the graph
/// output, param, m and v with the f64 formula after every step.
fn run_adamw(d: &mut Delegate, p0: &[f32], dims: &[usize], hp: [f64; 5], steps: usize) {
    let [mut lr, b1, b2, eps, wd] = hp;
    let n = p0.len();
    let (mut p, mut m, mut v) = (to_f64(p0), vec![0f64; n], vec![0f64; n]);
    for t in 1..=steps {
        let bc1 = 1.0 - b1.powi(t as i32);
        let bc2 = 1.0 - b2.powi(t as i32);
        d.set_scalar(A_BC1, bc1).unwrap();
        d.set_scalar(A_BC2, bc2).unwrap();
        if t == 3 {
            lr *= 0.5;
            d.set_scalar(A_LR, lr).unwrap();
        }
        let g = rand_vec(n, 100 + t as u64);
        let mut args = vec![host_f32(dims, &g), empty_out()];
        d.execute(&mut args).unwrap();
        adamw_ref(&mut p, &mut m, &mut v, &g, lr, b1, b2, eps, wd, bc1, bc2);
        let (sizes, out) = out_f32(&args[1]);
        assert_eq!(sizes, dims.to_vec());
        assert_close(
            &out,
            &p,
            1e-6,
            1e-5,
            &format!("step {t}: output (aliased param)"),
        );
        let (_, gp) = read_f32(d, A_PARAM);
        assert_close(&gp, &p, 1e-6, 1e-5, &format!("step {t}: param"));
        let (_, gm) = read_f32(d, A_M);
        assert_close(&gm, &m, 1e-7, 1e-5, &format!("step {t}: m"));
        let (_, gv) = read_f32(d, A_V);
        assert_close(&gv, &v, 1e-9, 1e-5, &format!("step {t}: v"));
    }
}

#[test]
fn adamw_steps_on_constant_state_with_runtime_scalars() {
    // 1000 elements: not a multiple of the 64-wide workgroup.
    let dims = [8, 125];
    let p0 = rand_vec(1000, 51);
    // An integral learning rate (1.0) must still be read as a float on the GPU.
    for hp in [[1e-2, 0.9, 0.999, 1e-8, 0.01], [1.0, 0.8, 0.99, 1e-6, 0.0]] {
        let ir = adamw_graph(&dims, false, hp);
        let (be, mut d) = load(&ir, &adamw_named(&p0), false);
        run_adamw(&mut d, &p0, &dims, hp, 5);
        assert_eq!(be.validation_error_count(), 0);
    }
}

#[test]
fn adamw_graph_tensor_moments_persist_and_state_round_trips() {
    let dims = [3, 7, 11];
    let n = 3 * 7 * 11;
    let p0 = rand_vec(n, 61);
    let hp = [5e-3, 0.9, 0.999, 1e-8, 0.1];
    let ir = adamw_graph(&dims, true, hp);
    let (be, mut d) = load(&ir, &adamw_named(&p0), false);
    // Graph tensors start undefined: the host initializes the moments.
    let zeros = f32_host(&dims, &vec![0.0; n]);
    d.write_tensor(A_M, &zeros).unwrap();
    d.write_tensor(A_V, &zeros).unwrap();
    run_adamw(&mut d, &p0, &dims, hp, 3);

    // Save the state, take a step, restore, take the same step again: same result.
    let saved: Vec<HostTensor> = [A_PARAM, A_M, A_V]
        .iter()
        .map(|&v| d.read_tensor(v).unwrap())
        .collect();
    let g = rand_vec(n, 77);
    let step = |d: &mut Delegate| {
        let mut args = vec![host_f32(&dims, &g), empty_out()];
        d.execute(&mut args).unwrap();
        out_f32(&args[1]).1
    };
    let first = step(&mut d);
    assert_ne!(read_f32(&mut d, A_PARAM).1, f32s(&saved[0].data));
    for (&v, t) in [A_PARAM, A_M, A_V].iter().zip(&saved) {
        d.write_tensor(v, t).unwrap();
    }
    assert_eq!(read_f32(&mut d, A_PARAM).1, f32s(&saved[0].data));
    let again = step(&mut d);
    assert_eq!(
        first, again,
        "restored state must reproduce the step exactly"
    );

    // Float64 host data converts like an execute input.
    let p64 = HostTensor {
        dtype: HostDType::Double,
        sizes: dims.to_vec(),
        data: (0..n)
            .flat_map(|i| (i as f64 * 0.5).to_le_bytes())
            .collect(),
    };
    d.write_tensor(A_PARAM, &p64).unwrap();
    let (_, got) = read_f32(&mut d, A_PARAM);
    assert!(got.iter().enumerate().all(|(i, &x)| x == i as f32 * 0.5));
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn state_and_scalar_api_errors_name_the_value() {
    let dims = [4, 4];
    let hp = [1e-3, 0.9, 0.999, 1e-8, 0.0];
    let ir = adamw_graph(&dims, false, hp);
    let (be, mut d) = load(&ir, &adamw_named(&rand_vec(16, 1)), false);
    // Not a tensor.
    let e = d.read_tensor(A_LR).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(e.message.contains("value 4"), "{}", e.message);
    let e = d.read_tensor(999).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    // Wrong sizes / byte count / dtype.
    let e = d
        .write_tensor(A_PARAM, &f32_host(&[2, 8], &[0.0; 16]))
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgument);
    assert!(
        e.message.contains("value 0") && e.message.contains("[4, 4]"),
        "{}",
        e.message
    );
    let mut short = f32_host(&dims, &[0.0; 16]);
    short.data.truncate(60);
    assert_eq!(
        d.write_tensor(A_PARAM, &short).unwrap_err().kind,
        ErrorKind::InvalidArgument
    );
    let ints = HostTensor {
        dtype: HostDType::Int,
        sizes: dims.to_vec(),
        data: vec![0; 64],
    };
    assert_eq!(
        d.write_tensor(A_PARAM, &ints).unwrap_err().kind,
        ErrorKind::InvalidArgument
    );
    // A scalar that is not a runtime scalar of the graph.
    assert_eq!(
        d.set_scalar(A_PARAM, 1.0).unwrap_err().kind,
        ErrorKind::InvalidArgument
    );
    // A failed write changed nothing; the graph still runs.
    let mut args = vec![host_f32(&dims, &[0.0; 16]), empty_out()];
    d.set_scalar(A_BC1, 0.1).unwrap();
    d.set_scalar(A_BC2, 0.001).unwrap();
    d.execute(&mut args).unwrap();
    assert_eq!(be.validation_error_count(), 0);

    // A constant no op uses is not on the GPU.
    let ir = delegate_ir(graph(
        vec![
            tensor(DataType::Float32, &[2], Some(0), None),
            f32_tensor(&[2, 2]),
            f32_tensor(&[2, 2]),
            f32_tensor(&[2, 2]),
        ],
        vec![op(0, DW, &[1, 2, 3])],
        &[1, 2],
        &[3],
        vec![ConstantSource::Named {
            key: "c".into(),
            length: 8,
        }],
    ));
    let mut named = MapData::default();
    named.0.insert("c".into(), f32_bytes(&[1.0, 2.0]));
    let (_, mut d) = load(&ir, &named, false);
    let e = d.read_tensor(0).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unsupported);
    assert!(e.message.contains("not on the GPU"), "{}", e.message);
}

// ---------------------------------------------------------------------------------------
// q4gsw_requant

/// latent [n, k] (input or constant), scales [groups, stride] (constant), packed output.
fn requant_graph(n: usize, k: usize, groups: usize, stride: usize, gs: usize) -> VulkanDelegate {
    delegate_ir(graph(
        vec![
            f32_tensor(&[n, k]),
            tensor(DataType::Float32, &[groups, stride], Some(0), None),
            Value::Int(gs as i64),
            tensor(DataType::Uint8, &[n, k.div_ceil(2)], None, None),
        ],
        vec![op(0, REQUANT, &[0, 1, 2, 3])],
        &[0],
        &[3],
        vec![ConstantSource::Named {
            key: "scales".into(),
            length: groups * stride * 4,
        }],
    ))
}

fn check_requant(
    latent: &[f32],
    scales: &[f32],
    n: usize,
    k: usize,
    gs: usize,
    stride: usize,
    what: &str,
) {
    let groups = scales.len() / stride;
    let ir = requant_graph(n, k, groups, stride, gs);
    let mut named = MapData::default();
    named.0.insert("scales".into(), f32_bytes(scales));
    let (be, mut d) = load(&ir, &named, false);
    let mut args = vec![host_f32(&[n, k], latent), host_u8_out()];
    d.execute(&mut args).unwrap();
    let DelegateArg::Tensor(out) = &args[1] else {
        panic!("tensor output expected")
    };
    assert_eq!(out.dtype, HostDType::Byte);
    assert_eq!(out.sizes, vec![n, k.div_ceil(2)]);
    let want = etvk_runtime::ops::training::q4gsw_requant_ref(latent, scales, n, k, gs, stride);
    for (i, (g, w)) in out.data.iter().zip(&want).enumerate() {
        assert_eq!(
            g,
            w,
            "{what}: byte {i} (row {}, k {}..{}): got {g:#04x}, want {w:#04x}",
            i / k.div_ceil(2),
            2 * (i % k.div_ceil(2)),
            2 * (i % k.div_ceil(2)) + 1
        );
    }
    assert_eq!(out.data.len(), want.len());
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn q4gsw_requant_exact_away_from_ties_with_zero_scales_and_odd_sizes() {
    // N = 7 (scales padded to 8), K = 13 (odd: the last byte's high nibble is padding),
    // group size 4 (4 groups), one all-zero group row and a zero scale in another.
    let (n, k, gs, stride) = (7usize, 13usize, 4usize, 8usize);
    let groups = k.div_ceil(gs);
    let mut scales: Vec<f32> = rand_vec(groups * stride, 71)
        .iter()
        .map(|x| 0.05 + x.abs() * 0.2)
        .collect();
    for s in &mut scales[stride..2 * stride] {
        *s = 0.0;
    }
    scales[3 * stride + 2] = 0.0;
    // Latents at q + 0.2 .. q + 0.8 away from .5 ties, including far outside [-8, 7].
    let latent: Vec<f32> = (0..n * k)
        .map(|i| {
            let (r, c) = (i / k, i % k);
            let s = scales[(c / gs) * stride + r].max(0.05);
            let q = (i as i32 * 7 % 23) - 11; // -11..11
            let frac = [0.2f32, 0.35, 0.65, 0.8][i % 4];
            (q as f32 + frac) * s
        })
        .collect();
    check_requant(&latent, &scales, n, k, gs, stride, "away from ties");

    // Bigger and random: N = 33, K = 97, group 8.
    let (n, k, gs, stride) = (33usize, 97usize, 8usize, 36usize);
    let groups = k.div_ceil(gs);
    let scales: Vec<f32> = rand_vec(groups * stride, 72)
        .iter()
        .map(|x| 0.01 + x.abs() * 0.1)
        .collect();
    let latent: Vec<f32> = rand_vec(n * k, 73).iter().map(|x| x * 0.9).collect();
    check_requant(&latent, &scales, n, k, gs, stride, "random");
}

#[test]
fn q4gsw_requant_exact_on_ties_and_near_ties() {
    // Exact ties: latent = (q + 0.5) * s with s a power of two, so latent / s is exactly
    // q + 0.5 and round-half-even decides (2.5 -> 2, 3.5 -> 4, -0.5 -> -0, ...).
    let (n, k, gs, stride) = (5usize, 18usize, 6usize, 8usize);
    let groups = k.div_ceil(gs);
    let pow2 = [0.25f32, 0.5, 1.0, 2.0, 0.125];
    let scales: Vec<f32> = (0..groups * stride).map(|i| pow2[i % pow2.len()]).collect();
    let latent: Vec<f32> = (0..n * k)
        .map(|i| {
            let (r, c) = (i / k, i % k);
            let s = scales[(c / gs) * stride + r];
            let q = (i % 19) as f32 - 9.0; // -9..9: ties at both clamp edges too
            (q + 0.5) * s
        })
        .collect();
    check_requant(&latent, &scales, n, k, gs, stride, "exact ties");

    // Near ties with arbitrary scales: (q + 0.5) * s rounded to f32, so the correctly
    // rounded quotient lands on, just above or just below q + 0.5; an approximate GPU
    // division would disagree with the CPU here.
    let (n, k, gs, stride) = (9usize, 40usize, 8usize, 12usize);
    let groups = k.div_ceil(gs);
    let scales: Vec<f32> = rand_vec(groups * stride, 81)
        .iter()
        .map(|x| 0.003 + x.abs() * 0.7)
        .collect();
    let latent: Vec<f32> = (0..n * k)
        .map(|i| {
            let (r, c) = (i / k, i % k);
            let s = scales[(c / gs) * stride + r];
            let q = (i % 17) as f32 - 8.0;
            let t = (q + 0.5) * s;
            // Also nudge by one ulp either way for a third of the elements.
            match i % 3 {
                0 => t,
                1 => f32::from_bits(t.to_bits() + 1),
                _ => f32::from_bits(t.to_bits().wrapping_sub(1)),
            }
        })
        .collect();
    check_requant(&latent, &scales, n, k, gs, stride, "near ties");
}

#[test]
fn replay_repeats_the_last_execute_on_gpu_resident_inputs() {
    // A replay is a second AdamW step on the gradient the execute left on the GPU.
    let dims = [4, 33];
    let n = 4 * 33;
    let p0 = rand_vec(n, 81);
    let hp = [1e-2, 0.9, 0.999, 1e-8, 0.01];
    let [lr, b1, b2, eps, wd] = hp;
    let ir = adamw_graph(&dims, false, hp);
    let (be, mut d) = load(&ir, &adamw_named(&p0), false);
    let err = d.replay().unwrap_err();
    assert!(err.to_string().contains("replay"), "{err}");
    let g = rand_vec(n, 82);
    let (mut p, mut m, mut v) = (to_f64(&p0), vec![0f64; n], vec![0f64; n]);
    for t in 1..=2 {
        let bc1 = 1.0 - b1.powi(t);
        let bc2 = 1.0 - b2.powi(t);
        d.set_scalar(A_BC1, bc1).unwrap();
        d.set_scalar(A_BC2, bc2).unwrap();
        if t == 1 {
            let mut args = vec![host_f32(&dims, &g), empty_out()];
            d.execute(&mut args).unwrap();
        } else {
            d.replay().unwrap();
        }
        adamw_ref(&mut p, &mut m, &mut v, &g, lr, b1, b2, eps, wd, bc1, bc2);
        let (_, gp) = read_f32(&mut d, A_PARAM);
        assert_close(&gp, &p, 1e-6, 1e-5, &format!("step {t}: param"));
        let (_, gm) = read_f32(&mut d, A_M);
        assert_close(&gm, &m, 1e-7, 1e-5, &format!("step {t}: m"));
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// linear_dW and fused_ce on seeded random sizes (rows, N, K, vocabulary of any size, labels
/// with ignored and out-of-range ones), each against its f64 reference: the hand-picked cases
/// above cover block edges; these cover whatever the draws hit. `ETVK_TRAIN_SWEEP_CASES`
/// makes the hunt longer (8 per op by default).
#[test]
fn random_sizes_for_linear_dw_and_fused_ce() {
    let cases: u64 = std::env::var("ETVK_TRAIN_SWEEP_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let mut s = 0x5EED_2525u64;
    let mut pick = |lo: u64, hi: u64| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (lo + (s >> 33) % (hi - lo + 1)) as usize
    };
    let be = backend();
    for case in 0..cases {
        let (m, n, k) = (pick(1, 300), pick(1, 300), pick(1, 300));
        let ir = dw_graph(&[m, n], &[m, k], n, k);
        let mut d = Delegate::from_ir(&be, &ir, &[], &MapData::default()).unwrap();
        check_dw(&mut d, &[m, n], &[m, k], 7000 + case);

        let (rows, v) = (pick(1, 40), pick(2, 5000));
        let labels: Vec<i64> = (0..rows)
            .map(|_| match pick(0, 9) {
                0 => -100,
                1 => v as i64,
                _ => pick(0, v as u64 - 1) as i64,
            })
            .collect();
        let n_valid = labels
            .iter()
            .filter(|&&l| l >= 0 && (l as usize) < v)
            .count()
            .max(1) as f64;
        let ir = ce_graph(&[rows, v], Value::Double(n_valid), false);
        let mut d = Delegate::from_ir(&be, &ir, &[], &MapData::default()).unwrap();
        check_ce(&mut d, &[rows, v], &labels, n_valid, vec![], 7500 + case);
    }
    assert_eq!(be.validation_error_count(), 0);
}
