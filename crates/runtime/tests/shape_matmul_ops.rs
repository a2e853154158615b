//! One-op (and small chain) graphs for the shape ops (view_copy, permute_copy, clone,
//! sym_size.int), the matmul family on the strided shader (mm, addmm, bmm) and the unary
//! ops (relu, sigmoid), against f64 CPU references, with dynamic resizes.

mod common;
use common::*;

use etvk_format::ir::*;
use etvk_runtime::*;

fn dynamic_spec() -> Vec<(String, Vec<u8>)> {
    vec![("require_dynamic_shapes".to_string(), vec![1])]
}

fn t32(dims: &[usize]) -> Value {
    tensor(DataType::Float32, dims, None, None)
}

fn to_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|x| *x as f64).collect()
}

/// Run a one-input one-output delegate once.
fn run1(d: &mut Delegate, in_dims: &[usize], x: &[f32]) -> (Vec<usize>, Vec<f32>) {
    let mut args = vec![host_f32(in_dims, x), empty_out()];
    d.execute(&mut args).unwrap();
    out_f32(&args[1])
}

/// Contiguous permute reference.
fn permute_ref(x: &[f32], dims: &[usize], perm: &[usize]) -> (Vec<usize>, Vec<f64>) {
    let rank = dims.len();
    let mut xs = vec![1usize; rank];
    for i in (0..rank.saturating_sub(1)).rev() {
        xs[i] = xs[i + 1] * dims[i + 1];
    }
    let od: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let numel: usize = od.iter().product();
    let mut out = Vec::with_capacity(numel);
    for i in 0..numel {
        let (mut rem, mut src) = (i, 0);
        for d in (0..rank).rev() {
            src += (rem % od[d]) * xs[perm[d]];
            rem /= od[d];
        }
        out.push(x[src] as f64);
    }
    (od, out)
}

#[test]
fn view_copy_infers_minus_one_and_rejects_bad_sizes() {
    let be = backend();
    let ir = |sizes: Vec<i64>| {
        delegate_ir(graph(
            vec![t32(&[2, 3, 4]), Value::IntList(sizes), t32(&[6, 4])],
            vec![op(0, "aten.view_copy.default", &[0, 1, 2])],
            &[0],
            &[2],
            vec![],
        ))
    };
    let mut d = Delegate::from_ir(&be, &ir(vec![-1, 4]), &[], &MapData::default()).unwrap();
    let x = rand_vec(24, 3);
    let (sizes, got) = run1(&mut d, &[2, 3, 4], &x);
    assert_eq!(sizes, [6, 4]);
    assert_close(&got, &to_f64(&x), 0.0, 0.0, "view_copy [-1, 4]");

    for bad in [vec![5, -1], vec![-1, -1], vec![6, 5], vec![-2, 12]] {
        let err = Delegate::from_ir(&be, &ir(bad.clone()), &[], &MapData::default())
            .err()
            .unwrap_or_else(|| panic!("sizes {bad:?} must fail"));
        assert!(
            err.message.contains("aten.view_copy.default"),
            "{bad:?}: {}",
            err.message
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn permute_copy_rank4_negative_dims_and_resize() {
    let be = backend();
    let dims = [2, 3, 4, 5];
    let ir = delegate_ir(graph(
        vec![
            t32(&dims),
            Value::IntList(vec![0, 2, -1, -3]),
            t32(&[2, 4, 5, 3]),
        ],
        vec![op(0, "aten.permute_copy.default", &[0, 1, 2])],
        &[0],
        &[2],
        vec![],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &MapData::default()).unwrap();
    for (i, cur) in [[2, 3, 4, 5], [1, 3, 2, 5], [2, 1, 4, 3], [2, 3, 4, 5]]
        .iter()
        .enumerate()
    {
        let x = rand_vec(cur.iter().product(), 10 + i as u64);
        let (sizes, got) = run1(&mut d, cur, &x);
        let (od, want) = permute_ref(&x, cur, &[0, 2, 3, 1]);
        assert_eq!(sizes, od, "case {i}");
        assert_close(&got, &want, 0.0, 0.0, &format!("permute case {i} {cur:?}"));
    }
    // Repeated dims are a program error naming the op.
    let bad = delegate_ir(graph(
        vec![t32(&dims), Value::IntList(vec![0, 1, 1, 3]), t32(&dims)],
        vec![op(0, "aten.permute_copy.default", &[0, 1, 2])],
        &[0],
        &[2],
        vec![],
    ));
    let err = Delegate::from_ir(&be, &bad, &[], &MapData::default())
        .err()
        .expect("repeated dims must fail");
    assert_eq!(err.kind, ErrorKind::InvalidProgram, "{}", err.message);
    assert!(err.message.contains("permute_copy"), "{}", err.message);
    assert_eq!(be.validation_error_count(), 0);
}

/// x [1, S, 8] (S dynamic, max 16) -> sym_size(x, 1) = s -> view_copy(x, [s, 8]) -> relu.
/// Outputs: the relu result and s itself (a SymInt output, returned as `DelegateArg::Int`).
/// The serialized SymInt value is the exporter's placeholder 0, as in g3's graph.
#[test]
fn sym_size_feeds_view_copy_through_value_list_under_dynamic_shapes() {
    let be = backend();
    let ir = delegate_ir(graph(
        vec![
            t32(&[1, 16, 8]),                                   // v0 x
            Value::Int(1),                                      // v1 dim
            Value::SymInt(0),                                   // v2 s
            Value::Int(8),                                      // v3
            Value::ValueList(vec![2, 3]),                       // v4 [s, 8]
            tensor(DataType::Float32, &[16, 8], None, Some(0)), // v5 view
            tensor(DataType::Float32, &[16, 8], None, Some(1)), // v6 out
        ],
        vec![
            op(0, "sym_size.int", &[0, 1, 2]),
            op(1, "aten.view_copy.default", &[0, 4, 5]),
            op(2, "aten.relu.default", &[5, 6]),
        ],
        &[0],
        &[6, 2],
        vec![],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &MapData::default()).unwrap();
    assert_eq!((d.num_inputs(), d.num_outputs()), (1, 2));
    for (i, s) in [16usize, 5, 1, 11, 16].into_iter().enumerate() {
        let x = rand_vec(s * 8, 20 + i as u64);
        let mut args = vec![host_f32(&[1, s, 8], &x), empty_out(), DelegateArg::None];
        d.execute(&mut args).unwrap();
        let (sizes, got) = out_f32(&args[1]);
        assert_eq!(sizes, [s, 8], "case {i}");
        let want: Vec<f64> = x.iter().map(|v| (*v as f64).max(0.0)).collect();
        assert_close(&got, &want, 0.0, 0.0, &format!("case {i} (S = {s})"));
        assert_eq!(
            args[2],
            DelegateArg::Int(s as i64),
            "case {i}: SymInt output"
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn clone_copies() {
    let be = backend();
    let ir = delegate_ir(graph(
        vec![t32(&[3, 7]), Value::Null, t32(&[3, 7])],
        vec![op(0, "aten.clone.default", &[0, 1, 2])],
        &[0],
        &[2],
        vec![],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &MapData::default()).unwrap();
    for (i, m) in [3usize, 1, 2].into_iter().enumerate() {
        let x = rand_vec(m * 7, 30 + i as u64);
        let (sizes, got) = run1(&mut d, &[m, 7], &x);
        assert_eq!(sizes, [m, 7]);
        assert_close(&got, &to_f64(&x), 0.0, 0.0, "clone");
    }
}

/// f64 reference of beta * bias(broadcast) + alpha * a[M,K] @ b[K,N], per batch.
#[allow(clippy::too_many_arguments)]
fn mm_ref(
    a: &[f32],
    b: &[f32],
    bias: Option<(&[f32], [usize; 2])>,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    alpha: f64,
    beta: f64,
) -> Vec<f64> {
    let mut out = vec![0f64; batch * m * n];
    for bb in 0..batch {
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0f64;
                for kk in 0..k {
                    acc += a[(bb * m + i) * k + kk] as f64 * b[(bb * k + kk) * n + j] as f64;
                }
                let mut r = alpha * acc;
                if let Some((c, [cr, cc])) = bias {
                    let ci = if cr == 1 { 0 } else { i };
                    let cj = if cc == 1 { 0 } else { j };
                    r += beta * c[ci * cc + cj] as f64;
                }
                out[(bb * m + i) * n + j] = r;
            }
        }
    }
    out
}

#[test]
fn mm_with_constant_rhs_resizes_m() {
    let be = backend();
    let (k, n) = (13, 7);
    let w = rand_vec(k * n, 40);
    let mut named = MapData::default();
    named.0.insert("w".into(), f32_bytes(&w));
    let ir = delegate_ir(graph(
        vec![
            t32(&[9, k]),
            tensor(DataType::Float32, &[k, n], Some(0), None),
            t32(&[9, n]),
        ],
        vec![op(0, "aten.mm.default", &[0, 1, 2])],
        &[0],
        &[2],
        vec![ConstantSource::Named {
            key: "w".into(),
            length: k * n * 4,
        }],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &named).unwrap();
    for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
        let x = rand_vec(m * k, 41 + i as u64);
        let (sizes, got) = run1(&mut d, &[m, k], &x);
        assert_eq!(sizes, [m, n]);
        let want = mm_ref(&x, &w, None, 1, m, k, n, 1.0, 1.0);
        assert_close(&got, &want, 1e-5, 1e-5, &format!("mm M = {m}"));
    }
    assert_eq!(be.validation_error_count(), 0);
}

/// addmm with a [N] bias (constant), a [M, 1] bias (tensor), Double and Int beta/alpha.
#[test]
fn addmm_broadcasts_bias_with_beta_alpha() {
    let be = backend();
    let (m, k, n) = (5, 11, 6);
    let w = rand_vec(k * n, 50);
    let bias_n = rand_vec(n, 51);
    let mut named = MapData::default();
    named.0.insert("w".into(), f32_bytes(&w));
    named.0.insert("b".into(), f32_bytes(&bias_n));
    let consts = vec![
        ConstantSource::Named {
            key: "w".into(),
            length: k * n * 4,
        },
        ConstantSource::Named {
            key: "b".into(),
            length: n * 4,
        },
    ];
    // Constant bias [N], beta 0.5 (Double), alpha 2 (Int).
    let ir = delegate_ir(graph(
        vec![
            tensor(DataType::Float32, &[n], Some(1), None), // v0 bias
            t32(&[m, k]),                                   // v1 x
            tensor(DataType::Float32, &[k, n], Some(0), None), // v2 w
            Value::Double(0.5),
            Value::Int(2),
            t32(&[m, n]),
        ],
        vec![op(0, "aten.addmm.default", &[0, 1, 2, 3, 4, 5])],
        &[1],
        &[5],
        consts.clone(),
    ));
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &named).unwrap();
    for (i, mm) in [m, 2].into_iter().enumerate() {
        let x = rand_vec(mm * k, 52 + i as u64);
        let (sizes, got) = run1(&mut d, &[mm, k], &x);
        assert_eq!(sizes, [mm, n]);
        let want = mm_ref(&x, &w, Some((&bias_n, [1, n])), 1, mm, k, n, 2.0, 0.5);
        assert_close(
            &got,
            &want,
            1e-5,
            1e-5,
            &format!("addmm bias [N], M = {mm}"),
        );
    }

    // Tensor bias [M, 1] (an input), both operands inputs, default beta/alpha (Null).
    let ir = delegate_ir(graph(
        vec![
            t32(&[m, 1]),
            t32(&[m, k]),
            t32(&[k, n]),
            Value::Null,
            Value::Null,
            t32(&[m, n]),
        ],
        vec![op(0, "aten.addmm.default", &[0, 1, 2, 3, 4, 5])],
        &[0, 1, 2],
        &[5],
        vec![],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &[], &MapData::default()).unwrap();
    let (c, a, b) = (rand_vec(m, 53), rand_vec(m * k, 54), rand_vec(k * n, 55));
    let mut args = vec![
        host_f32(&[m, 1], &c),
        host_f32(&[m, k], &a),
        host_f32(&[k, n], &b),
        empty_out(),
    ];
    d.execute(&mut args).unwrap();
    let (sizes, got) = out_f32(&args[3]);
    assert_eq!(sizes, [m, n]);
    let want = mm_ref(&a, &b, Some((&c, [m, 1])), 1, m, k, n, 1.0, 1.0);
    assert_close(&got, &want, 1e-5, 1e-5, "addmm bias [M, 1]");
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn bmm_batches_and_resizes() {
    let be = backend();
    let (bt, m, k, n) = (3, 7, 5, 9);
    let ir = delegate_ir(graph(
        vec![t32(&[bt, m, k]), t32(&[bt, k, n]), t32(&[bt, m, n])],
        vec![op(0, "aten.bmm.default", &[0, 1, 2])],
        &[0, 1],
        &[2],
        vec![],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &MapData::default()).unwrap();
    for (i, (bb, mm)) in [(bt, m), (1, 1), (2, 4), (bt, m)].into_iter().enumerate() {
        let a = rand_vec(bb * mm * k, 60 + i as u64);
        let b = rand_vec(bb * k * n, 70 + i as u64);
        let mut args = vec![
            host_f32(&[bb, mm, k], &a),
            host_f32(&[bb, k, n], &b),
            empty_out(),
        ];
        d.execute(&mut args).unwrap();
        let (sizes, got) = out_f32(&args[2]);
        assert_eq!(sizes, [bb, mm, n]);
        let want = mm_ref(&a, &b, None, bb, mm, k, n, 1.0, 1.0);
        assert_close(&got, &want, 1e-5, 1e-5, &format!("bmm case {i}"));
    }
    assert_eq!(be.validation_error_count(), 0);
}

fn unary_case(name: &str, dt: DataType, f: fn(f64) -> f64, atol: f64) {
    let be = backend();
    let dims = [3, 37];
    let ir = delegate_ir(graph(
        vec![tensor(dt, &dims, None, None), tensor(dt, &dims, None, None)],
        vec![op(0, name, &[0, 1])],
        &[0],
        &[1],
        vec![],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &MapData::default()).unwrap();
    for (i, rows) in [3usize, 1, 2].into_iter().enumerate() {
        let x: Vec<f32> = rand_vec(rows * 37, 80 + i as u64)
            .iter()
            .map(|v| v * 8.0)
            .collect();
        let (sizes, got) = run1(&mut d, &[rows, 37], &x);
        assert_eq!(sizes, [rows, 37]);
        let want: Vec<f64> = x.iter().map(|v| f(*v as f64)).collect();
        assert_close(
            &got,
            &want,
            atol,
            atol,
            &format!("{name} {} rows {rows}", dt.name()),
        );
    }
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn relu_and_sigmoid_fp32_and_fp16() {
    let relu = |x: f64| x.max(0.0);
    let sigmoid = |x: f64| 1.0 / (1.0 + (-x).exp());
    unary_case("aten.relu.default", DataType::Float32, relu, 0.0);
    unary_case("aten.sigmoid.default", DataType::Float32, sigmoid, 1e-6);
    // fp16 storage: the input itself is rounded to half on upload.
    unary_case("aten.relu.default", DataType::Float16, relu, 1e-2);
    unary_case("aten.sigmoid.default", DataType::Float16, sigmoid, 2e-3);
}

#[test]
fn fp16_bmm_and_permute() {
    let be = backend();
    let (bt, m, k, n) = (2, 3, 8, 5);
    let h = |d: &[usize]| tensor(DataType::Float16, d, None, None);
    let ir = delegate_ir(graph(
        vec![
            h(&[bt, m, k]),
            h(&[bt, n, k]),
            Value::IntList(vec![0, 2, 1]),
            h(&[bt, k, n]),
            h(&[bt, m, n]),
        ],
        vec![
            op(0, "aten.permute_copy.default", &[1, 2, 3]),
            op(1, "aten.bmm.default", &[0, 3, 4]),
        ],
        &[0, 1],
        &[4],
        vec![],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &[], &MapData::default()).unwrap();
    let a = rand_vec(bt * m * k, 90);
    let bt_ = rand_vec(bt * n * k, 91);
    let mut args = vec![
        host_f32(&[bt, m, k], &a),
        host_f32(&[bt, n, k], &bt_),
        empty_out(),
    ];
    d.execute(&mut args).unwrap();
    let (sizes, got) = out_f32(&args[2]);
    assert_eq!(sizes, [bt, m, n]);
    let (_, b) = permute_ref(&bt_, &[bt, n, k], &[0, 2, 1]);
    let b: Vec<f32> = b.iter().map(|v| *v as f32).collect();
    let want = mm_ref(&a, &b, None, bt, m, k, n, 1.0, 1.0);
    assert_close(&got, &want, 2e-2, 1e-2, "fp16 permute + bmm");
    assert_eq!(be.validation_error_count(), 0);
}

/// A SymInt *input* (as in g3's second and third delegates) is serialized as the exporter's
/// placeholder 0. x [S * 8] -> view_copy(x, [s, 8]) -> relu fails at build time with s = 0;
/// the build defers the resize, and the first execute, with the real s, runs it.
#[test]
fn symint_input_placeholder_defers_build_time_resize() {
    let be = backend();
    let build = || {
        delegate_ir(graph(
            vec![
                t32(&[128]),                                        // v0 x
                Value::SymInt(0),                                   // v1 s (input)
                Value::Int(8),                                      // v2
                Value::ValueList(vec![1, 2]),                       // v3 [s, 8]
                tensor(DataType::Float32, &[16, 8], None, Some(0)), // v4 view
                tensor(DataType::Float32, &[16, 8], None, Some(1)), // v5 out
            ],
            vec![
                op(0, "aten.view_copy.default", &[0, 3, 4]),
                op(1, "aten.relu.default", &[4, 5]),
            ],
            &[0, 1],
            &[5],
            vec![],
        ))
    };
    let mut d = Delegate::from_ir(&be, &build(), &dynamic_spec(), &MapData::default()).unwrap();
    for (i, s) in [5usize, 16, 1].into_iter().enumerate() {
        let x = rand_vec(s * 8, 40 + i as u64);
        let mut args = vec![
            host_f32(&[s * 8], &x),
            DelegateArg::Int(s as i64),
            empty_out(),
        ];
        d.execute(&mut args).unwrap();
        let (sizes, got) = out_f32(&args[2]);
        assert_eq!(sizes, [s, 8], "case {i}");
        let want: Vec<f64> = x.iter().map(|v| (*v as f64).max(0.0)).collect();
        assert_close(&got, &want, 0.0, 0.0, &format!("case {i} (s = {s})"));
    }
    // A SymInt that does not fit the data is still an error, at execute, naming the op.
    let mut d = Delegate::from_ir(&be, &build(), &dynamic_spec(), &MapData::default()).unwrap();
    let x = rand_vec(40, 50);
    let mut args = vec![host_f32(&[40], &x), DelegateArg::Int(3), empty_out()];
    let err = d.execute(&mut args).unwrap_err();
    assert!(err.message.contains("view_copy"), "{}", err.message);
    assert_eq!(be.validation_error_count(), 0);
}
