//! Dynamic shapes on one loaded delegate: linear + broadcast add with M going down and up,
//! shared memory objects, the limit checks, prepack aliasing, unknown ops.

mod common;
use common::*;

use etvk_format::ir::*;
use etvk_runtime::*;

const K: usize = 16;
const N: usize = 12;
const MAX_M: usize = 8;

/// out = linear(x, W, bias) + 2 * z, with z [N] broadcast over rows. `out` reuses x's
/// memory object (x is dead after the linear), as the exporter's planner does.
fn linear_add_ir() -> (VulkanDelegate, MapData, Vec<f32>, Vec<f32>) {
    let w = rand_vec(N * K, 1);
    let b = rand_vec(N, 2);
    let mut named = MapData::default();
    named.0.insert("w".into(), f32_bytes(&w));
    named.0.insert("b".into(), f32_bytes(&b));
    let ir = delegate_ir(graph(
        vec![
            tensor(DataType::Float32, &[N, K], Some(0), None),
            tensor(DataType::Float32, &[N], Some(1), None),
            tensor(DataType::Float32, &[MAX_M, K], None, Some(0)),
            tensor(DataType::Float32, &[MAX_M, N], None, Some(1)),
            tensor(DataType::Float32, &[N], None, None),
            Value::Int(2),
            tensor(DataType::Float32, &[MAX_M, N], None, Some(0)),
        ],
        vec![
            op(0, "aten.linear.default", &[2, 0, 1, 3]),
            op(1, "aten.add.Tensor", &[3, 4, 5, 6]),
        ],
        &[2, 4],
        &[6],
        vec![
            ConstantSource::Named {
                key: "w".into(),
                length: N * K * 4,
            },
            ConstantSource::Named {
                key: "b".into(),
                length: N * 4,
            },
        ],
    ));
    (ir, named, w, b)
}

fn dynamic_spec() -> Vec<(String, Vec<u8>)> {
    vec![("require_dynamic_shapes".to_string(), vec![1])]
}

#[test]
fn linear_add_resizes_down_and_up() {
    let be = backend();
    let (ir, named, w, b) = linear_add_ir();
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &named).unwrap();
    let z = rand_vec(N, 3);
    for (round, m) in [8usize, 3, 1, 8, 5, 5].into_iter().enumerate() {
        let x = rand_vec(m * K, 10 + round as u64);
        let mut args = vec![host_f32(&[m, K], &x), host_f32(&[N], &z), empty_out()];
        d.execute(&mut args).unwrap();
        let (sizes, got) = out_f32(&args[2]);
        assert_eq!(sizes, vec![m, N], "round {round}");
        let mut want = linear_ref(&x, &w, Some(&b), m, N, K);
        for (i, v) in want.iter_mut().enumerate() {
            *v += 2.0 * z[i % N] as f64;
        }
        assert_close(&got, &want, 1e-4, 1e-4, &format!("M = {m}"));
        assert_eq!(d.profile().len(), 2);
    }
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn resize_limits_are_checked() {
    let be = backend();
    let (ir, named, _, _) = linear_add_ir();
    let mut d = Delegate::from_ir(&be, &ir, &dynamic_spec(), &named).unwrap();
    let z = vec![0.0; N];
    let mut args = vec![
        host_f32(&[MAX_M + 1, K], &vec![0.0; (MAX_M + 1) * K]),
        host_f32(&[N], &z),
        empty_out(),
    ];
    let err = d.execute(&mut args).unwrap_err();
    assert_eq!(err.kind, ErrorKind::InvalidArgument);
    assert!(
        err.message.contains("input 0") && err.message.contains("[8, 16]"),
        "{}",
        err.message
    );
    let mut args = vec![
        host_f32(&[2, K, 1], &[0.0; 2 * K]),
        host_f32(&[N], &z),
        empty_out(),
    ];
    assert_eq!(
        d.execute(&mut args).unwrap_err().kind,
        ErrorKind::InvalidArgument
    );
    // A wrong inner size passes the bound check but fails the op's resize, naming the op.
    let mut args = vec![
        host_f32(&[2, K - 1], &[0.0; 2 * (K - 1)]),
        host_f32(&[N], &z),
        empty_out(),
    ];
    let err = d.execute(&mut args).unwrap_err();
    assert!(
        err.message.contains("aten.linear.default"),
        "{}",
        err.message
    );
    // The delegate still works afterwards.
    let mut args = vec![
        host_f32(&[2, K], &[0.0; 2 * K]),
        host_f32(&[N], &z),
        empty_out(),
    ];
    d.execute(&mut args).unwrap();
    assert_eq!(out_f32(&args[2]).0, vec![2, N]);
}

#[test]
fn prepack_output_aliases_the_constant() {
    let be = backend();
    let c = rand_vec(6, 4);
    let mut named = MapData::default();
    named.0.insert("c".into(), f32_bytes(&c));
    let ir = delegate_ir(graph(
        vec![
            tensor(DataType::Float32, &[2, 3], Some(0), None),
            tensor(DataType::Float32, &[2, 3], None, None),
            tensor(DataType::Float32, &[2, 3], None, None),
            Value::Null,
            tensor(DataType::Float32, &[2, 3], None, None),
            tensor(DataType::Float32, &[2, 3], None, None),
        ],
        vec![
            op(0, "et_vk.prepack.default", &[0, 1]),
            op(1, "aten.sub.Tensor", &[2, 1, 3, 4]),
            // The constant consumed directly shares the same packed buffer.
            op(2, "aten.mul.Tensor", &[4, 0, 5]),
        ],
        &[2],
        &[5],
        vec![ConstantSource::Named {
            key: "c".into(),
            length: 24,
        }],
    ));
    let mut d = Delegate::from_ir(&be, &ir, &[], &named).unwrap();
    let x = rand_vec(6, 5);
    let mut args = vec![host_f32(&[2, 3], &x), empty_out()];
    d.execute(&mut args).unwrap();
    let want: Vec<f64> = x
        .iter()
        .zip(&c)
        .map(|(a, b)| (*a as f64 - *b as f64) * *b as f64)
        .collect();
    assert_close(
        &out_f32(&args[1]).1,
        &want,
        1e-6,
        1e-6,
        "prepack + sub + mul",
    );
}

#[test]
fn unknown_op_fails_init_with_its_name() {
    let be = backend();
    let ir = delegate_ir(graph(
        vec![
            tensor(DataType::Float32, &[4], None, None),
            tensor(DataType::Float32, &[4], None, None),
        ],
        vec![op(0, "aten.frobnicate.default", &[0, 1])],
        &[0],
        &[1],
        vec![],
    ));
    let err = Delegate::from_ir(&be, &ir, &[], &MapData::default())
        .err()
        .expect("must fail");
    assert_eq!(err.kind, ErrorKind::Unsupported);
    assert!(
        err.message.contains("aten.frobnicate.default"),
        "{}",
        err.message
    );
}

#[test]
fn registry_lists_sorted_ops() {
    let ops = registered_ops();
    let names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    for want in [
        "aten.add.Tensor",
        "aten.linear.default",
        "et_vk.prepack.default",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
}

#[test]
fn devices_are_listed() {
    let devs = list_devices(&RuntimeOptions::default()).unwrap();
    assert_eq!(devs.iter().filter(|d| d.selected).count(), 1);
    assert!(devs[0]
        .properties
        .iter()
        .any(|(k, _)| k == "max_storage_buffer_range"));
    let be = backend();
    assert!(!be.device_description().is_empty());
}

/// force_fp16 programs: GPU tensors FLOAT16, host staging FLOAT32, fp16 weights.
#[test]
fn fp16_linear_with_fp32_staging() {
    let be = backend();
    let (m, n, k) = (3usize, 5usize, 7usize);
    let w = rand_vec(n * k, 21);
    let w16: Vec<u8> = w
        .iter()
        .flat_map(|v| etvk_runtime::dtype::f32_to_f16(*v).to_le_bytes())
        .collect();
    let mut named = MapData::default();
    named.0.insert("w".into(), w16);
    let mut x_t = tensor(DataType::Float16, &[m, k], None, None);
    let mut y_t = tensor(DataType::Float16, &[m, n], None, None);
    for t in [&mut x_t, &mut y_t] {
        if let Value::Tensor(tv) = t {
            tv.staging_dtype = DataType::Float32;
        }
    }
    let ir = delegate_ir(graph(
        vec![
            tensor(DataType::Float16, &[n, k], Some(0), None),
            Value::Null,
            x_t,
            y_t,
        ],
        vec![op(0, "aten.linear.default", &[2, 0, 1, 3])],
        &[2],
        &[3],
        vec![ConstantSource::Named {
            key: "w".into(),
            length: n * k * 2,
        }],
    ));
    let mut d = match Delegate::from_ir(&be, &ir, &[], &named) {
        Ok(d) => d,
        Err(e) if e.kind == ErrorKind::Unsupported => {
            eprintln!("skipping: device lacks fp16 ({})", e.message);
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let x = rand_vec(m * k, 22);
    let mut args = vec![host_f32(&[m, k], &x), empty_out()];
    d.execute(&mut args).unwrap();
    let (sizes, got) = out_f32(&args[1]);
    assert_eq!(sizes, vec![m, n]);
    assert_close(
        &got,
        &linear_ref(&x, &w, None, m, n, k),
        1e-2,
        1e-2,
        "fp16 linear",
    );
    assert_eq!(be.validation_error_count(), 0);
}

#[test]
fn symint_inputs_flow_to_outputs_and_types_are_send() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<Delegate>();
    send_sync::<Backend>();
    let be = backend();
    let ir = delegate_ir(graph(vec![Value::SymInt(0)], vec![], &[0], &[0], vec![]));
    let mut d = Delegate::from_ir(&be, &ir, &[], &MapData::default()).unwrap();
    let mut args = vec![DelegateArg::Int(5), DelegateArg::None];
    d.execute(&mut args).unwrap();
    assert_eq!(args[1], DelegateArg::Int(5));
    let scalar = HostTensor {
        dtype: HostDType::Long,
        sizes: vec![1],
        data: 9i64.to_le_bytes().to_vec(),
    };
    let mut args = vec![DelegateArg::Tensor(scalar), DelegateArg::None];
    d.execute(&mut args).unwrap();
    assert_eq!(args[1], DelegateArg::Int(9));
}
