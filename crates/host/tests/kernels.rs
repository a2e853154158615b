//! Portable CPU kernels against hand-computed values.

use etvk_host::dtype::DType;
use etvk_host::kernels::{run_kernel, SUPPORTED_KERNELS};
use etvk_host::values::{TensorSlot, Value};
use etvk_host::{HostError, Tensor};

fn slot(t: Tensor, dynamism: i8) -> Value {
    Value::Tensor(TensorSlot {
        dtype: t.dtype,
        max_sizes: t.sizes.clone(),
        sizes: t.sizes,
        dynamism,
        data: t.data,
    })
}

fn out(dtype: DType, sizes: &[usize]) -> Value {
    slot(Tensor::zeros(dtype, sizes.to_vec()).unwrap(), 1)
}

fn tensor(values: &[Value], i: usize) -> Tensor {
    match &values[i] {
        Value::Tensor(t) => t.to_tensor(),
        v => panic!("value {i} is {v:?}"),
    }
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_f32_vec().unwrap()
}

#[test]
fn expand_copy_broadcasts_with_boxed_sizes_and_keep() {
    // self [3,1] = [1,2,3]; size = [2, -1, 4] boxed as value indices 1..=3.
    let mut v = vec![
        slot(Tensor::from_f32(vec![3, 1], &[1.0, 2.0, 3.0]).unwrap(), 0),
        Value::Int(2),
        Value::Int(-1),
        Value::Int(4),
        Value::IntList(vec![1, 2, 3]),
        Value::Bool(false),
        out(DType::F32, &[2, 3, 4]),
    ];
    run_kernel("aten::expand_copy.out", &mut v, &[0, 4, 5, 6, 6]).unwrap();
    let t = tensor(&v, 6);
    assert_eq!(t.sizes, vec![2, 3, 4]);
    let want: Vec<f32> = (0..2)
        .flat_map(|_| [1.0f32, 2.0, 3.0].into_iter().flat_map(|x| [x; 4]))
        .collect();
    assert_eq!(f32s(&t), want);
}

#[test]
fn expand_copy_resizes_a_dynamic_output_from_a_symint() {
    // The g3 pattern: expand [1,2,1,32]-ish input to [1, 2, seq, 32] with seq a SymInt.
    let input: Vec<f32> = (0..4).map(|x| x as f32).collect();
    let mut v = vec![
        slot(Tensor::from_f32(vec![1, 2, 1, 2], &input).unwrap(), 1),
        Value::Int(1),
        Value::Int(2),
        Value::Int(3), // seq, produced at run time
        Value::IntList(vec![1, 2, 3, 2]),
        Value::Bool(false),
        out(DType::F32, &[1, 2, 16, 2]),
    ];
    run_kernel("aten::expand_copy.out", &mut v, &[0, 4, 5, 6]).unwrap();
    let t = tensor(&v, 6);
    assert_eq!(t.sizes, vec![1, 2, 3, 2]);
    assert_eq!(
        f32s(&t),
        vec![0., 1., 0., 1., 0., 1., 2., 3., 2., 3., 2., 3.]
    );
    // A size past the output's bound is an error naming the op.
    v[3] = Value::Int(17);
    let err = run_kernel("aten::expand_copy.out", &mut v, &[0, 4, 5, 6])
        .unwrap_err()
        .to_string();
    assert!(err.contains("exceed the tensor's bound"), "{err}");
    // Expanding a non-1 dim is rejected.
    v[2] = Value::Int(3);
    v[3] = Value::Int(1);
    let err = run_kernel("aten::expand_copy.out", &mut v, &[0, 4, 5, 6]).unwrap_err();
    assert!(
        matches!(&err, HostError::Kernel { op, .. } if op == "aten::expand_copy.out"),
        "{err}"
    );
}

#[test]
fn copy_broadcasts_and_casts_into_self() {
    let mut v = vec![
        slot(Tensor::from_f32(vec![2, 3], &[9.0; 6]).unwrap(), 0),
        slot(Tensor::from_i32(vec![1, 3], &[1, -2, 7]).unwrap(), 0),
        Value::Bool(false),
    ];
    run_kernel("aten::copy_", &mut v, &[0, 1, 2, 0]).unwrap();
    assert_eq!(f32s(&tensor(&v, 0)), vec![1.0, -2.0, 7.0, 1.0, -2.0, 7.0]);
    // f32 -> i64 truncates toward zero.
    v.push(slot(Tensor::from_i64(vec![3], &[0, 0, 0]).unwrap(), 0));
    v.push(slot(
        Tensor::from_f32(vec![3], &[2.9, -2.9, 0.5]).unwrap(),
        0,
    ));
    run_kernel("aten::copy_", &mut v, &[3, 4, 2]).unwrap();
    assert_eq!(tensor(&v, 3).to_i64_vec().unwrap(), vec![2, -2, 0]);
    // Incompatible shapes are an error.
    v.push(slot(Tensor::from_f32(vec![2], &[1.0, 2.0]).unwrap(), 0));
    assert!(run_kernel("aten::copy_", &mut v, &[0, 5, 2]).is_err());
}

#[test]
fn mul_scalar_per_dtype() {
    let mut v = vec![
        slot(Tensor::from_f32(vec![3], &[1.0, -2.0, 0.25]).unwrap(), 0),
        Value::Double(2.5),
        out(DType::F32, &[3]),
        slot(Tensor::from_i64(vec![2], &[7, -3]).unwrap(), 0),
        Value::Int(3),
        out(DType::I64, &[2]),
        slot(Tensor::from_bool(vec![2], &[true, false]).unwrap(), 0),
        Value::Bool(true),
        out(DType::Bool, &[2]),
        out(DType::F64, &[2]),
        out(DType::I32, &[3]),
    ];
    run_kernel("aten::mul.Scalar_out", &mut v, &[0, 1, 2, 2]).unwrap();
    assert_eq!(f32s(&tensor(&v, 2)), vec![2.5, -5.0, 0.625]);
    run_kernel("aten::mul.Scalar_out", &mut v, &[3, 4, 5]).unwrap();
    assert_eq!(tensor(&v, 5).to_i64_vec().unwrap(), vec![21, -9]);
    run_kernel("aten::mul.Scalar_out", &mut v, &[6, 7, 8]).unwrap();
    assert_eq!(tensor(&v, 8).data, vec![1, 0]);
    // int tensor times a double into f64.
    run_kernel("aten::mul.Scalar_out", &mut v, &[3, 1, 9]).unwrap();
    assert_eq!(tensor(&v, 9).to_f64_vec().unwrap(), vec![17.5, -7.5]);
    // An output alias (the return value) distinct from `out` receives the same result.
    run_kernel("aten::mul.Scalar_out", &mut v, &[0, 4, 2, 10]).unwrap_err();
    let mut w = vec![
        slot(Tensor::from_i32(vec![3], &[1, 2, 3]).unwrap(), 0),
        Value::Int(-2),
        out(DType::I32, &[3]),
        out(DType::I32, &[3]),
    ];
    run_kernel("aten::mul.Scalar_out", &mut w, &[0, 1, 2, 3]).unwrap();
    assert_eq!(tensor(&w, 2).to_i64_vec().unwrap(), vec![-2, -4, -6]);
    assert_eq!(tensor(&w, 3).to_i64_vec().unwrap(), vec![-2, -4, -6]);
}

#[test]
fn any_variants() {
    // x [2,3]: row 0 all zero, row 1 has a non-zero in column 2.
    let mut v = vec![
        slot(
            Tensor::from_f32(vec![2, 3], &[0.0, 0.0, 0.0, 0.0, 0.0, -1.5]).unwrap(),
            0,
        ),
        Value::Int(1),
        Value::Bool(false),
        out(DType::Bool, &[2]),
        Value::Int(-2),
        Value::Bool(true),
        out(DType::Bool, &[1, 3]),
        out(DType::Bool, &[]),
        Value::IntList(vec![1]),
        out(DType::U8, &[2]),
        Value::Null,
        out(DType::Bool, &[1, 1]),
    ];
    run_kernel("aten::any.out", &mut v, &[0, 1, 2, 3]).unwrap();
    assert_eq!(tensor(&v, 3).data, vec![0, 1]);
    run_kernel("aten::any.out", &mut v, &[0, 4, 5, 6]).unwrap();
    let t = tensor(&v, 6);
    assert_eq!((t.sizes.clone(), t.data), (vec![1, 3], vec![0, 0, 1]));
    run_kernel("aten::any.all_out", &mut v, &[0, 7]).unwrap();
    assert_eq!(tensor(&v, 7).data, vec![1]);
    run_kernel("aten::any.dims_out", &mut v, &[0, 8, 2, 9]).unwrap();
    assert_eq!(tensor(&v, 9).data, vec![0, 1]);
    run_kernel("aten::any.dims_out", &mut v, &[0, 10, 5, 11]).unwrap();
    assert_eq!(tensor(&v, 11).data, vec![1]);
    // Dim out of range.
    v[1] = Value::Int(2);
    let err = run_kernel("aten::any.out", &mut v, &[0, 1, 2, 3])
        .unwrap_err()
        .to_string();
    assert!(err.contains("dim 2 out of range for rank 2"), "{err}");
    // all-false input.
    v[0] = slot(Tensor::from_i64(vec![2], &[0, 0]).unwrap(), 0);
    run_kernel("aten::any.all_out", &mut v, &[0, 7]).unwrap();
    assert_eq!(tensor(&v, 7).data, vec![0]);
}

#[test]
fn scalar_tensor_casts_to_out_dtype() {
    let mut v = vec![
        Value::Double(3.75),
        out(DType::F32, &[]),
        out(DType::I64, &[]),
        Value::Int(-4),
        out(DType::F64, &[]),
    ];
    run_kernel("aten::scalar_tensor.out", &mut v, &[0, 1]).unwrap();
    assert_eq!(f32s(&tensor(&v, 1)), vec![3.75]);
    run_kernel("aten::scalar_tensor.out", &mut v, &[0, 2]).unwrap();
    assert_eq!(tensor(&v, 2).to_i64_vec().unwrap(), vec![3]);
    run_kernel("aten::scalar_tensor.out", &mut v, &[3, 4]).unwrap();
    assert_eq!(tensor(&v, 4).to_f64_vec().unwrap(), vec![-4.0]);
}

#[test]
fn unknown_operators_and_bad_args_are_named() {
    let mut v = vec![Value::Int(1), out(DType::F32, &[])];
    let err = run_kernel("aten::add.out", &mut v, &[0, 1])
        .unwrap_err()
        .to_string();
    assert!(err.contains("aten::add.out"), "{err}");
    let err = run_kernel("aten::mul.Scalar_out", &mut v, &[0, 0, 1])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("aten::mul.Scalar_out") && err.contains("argument 0 is a Int"),
        "{err}"
    );
    let err = run_kernel("aten::any.all_out", &mut v, &[1])
        .unwrap_err()
        .to_string();
    assert!(err.contains("1 arguments, the schema needs 2"), "{err}");
    assert_eq!(SUPPORTED_KERNELS.len(), 11);
}

#[test]
fn embedding_byte_dequantizes_rows_per_group() {
    // weight int8 [3, 4], two groups of 2 columns per row, zero points per group.
    let w: Vec<i8> = vec![1, -2, 3, -4, 10, 20, -30, 40, 127, -128, 0, 5];
    let scales = [0.5f32, 0.25, 1.0, 2.0, 0.125, 4.0];
    let zps: Vec<i8> = vec![0, 1, -1, 2, 3, 0];
    let raw = |dtype: DType, sizes: &[usize], data: Vec<u8>| {
        slot(
            Tensor {
                dtype,
                sizes: sizes.to_vec(),
                data,
            },
            0,
        )
    };
    let indices = |ids: &[i64]| {
        raw(
            DType::I64,
            &[ids.len()],
            ids.iter().flat_map(|x| x.to_le_bytes()).collect(),
        )
    };
    let mut v = vec![
        raw(DType::I8, &[3, 4], w.iter().map(|&x| x as u8).collect()),
        slot(Tensor::from_f32(vec![3, 2], &scales).unwrap(), 0),
        raw(DType::I8, &[3, 2], zps.iter().map(|&x| x as u8).collect()),
        Value::Int(-128),
        Value::Int(127),
        indices(&[2, 0]),
        Value::Null,
        out(DType::F32, &[2, 4]),
    ];
    let op = "quantized_decomposed::embedding_byte.dtype_out";
    run_kernel(op, &mut v, &[0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
    // Row 2: (127 - 3) * 0.125, (-128 - 3) * 0.125, (0 - 0) * 4, (5 - 0) * 4; row 0:
    // (1 - 0) * 0.5, (-2 - 0) * 0.5, (3 - 1) * 0.25, (-4 - 1) * 0.25.
    assert_eq!(
        f32s(&tensor(&v, 7)),
        vec![15.5, -16.375, 0.0, 20.0, 0.5, -1.0, 0.5, -1.25]
    );
    // `.out` (no dtype argument), no zero points, one scale per row.
    let mut v2 = vec![
        raw(DType::I8, &[3, 4], w.iter().map(|&x| x as u8).collect()),
        slot(Tensor::from_f32(vec![3], &[0.5, 1.0, 2.0]).unwrap(), 0),
        Value::Null,
        Value::Int(-128),
        Value::Int(127),
        indices(&[1]),
        out(DType::F32, &[1, 4]),
    ];
    run_kernel(
        "quantized_decomposed::embedding_byte.out",
        &mut v2,
        &[0, 1, 2, 3, 4, 5, 6],
    )
    .unwrap();
    assert_eq!(f32s(&tensor(&v2, 6)), vec![10.0, 20.0, -30.0, 40.0]);
    // An index past the table is an error naming the op.
    v[5] = indices(&[3]);
    let e = run_kernel(op, &mut v, &[0, 1, 2, 3, 4, 5, 6, 7])
        .unwrap_err()
        .to_string();
    assert!(e.contains("embedding_byte") && e.contains("index 3"), "{e}");
}

#[test]
fn full_like_fills_self_sizes_in_the_out_dtype() {
    // self [2, dyn 3 of max 4] float; fill -inf into a float out, then 7 into an int32 out.
    let mut v = vec![
        slot(Tensor::from_f32(vec![2, 3], &[0.0; 6]).unwrap(), 0),
        Value::Double(f64::NEG_INFINITY),
        Value::Null,
        out(DType::F32, &[2, 4]),
    ];
    run_kernel("aten::full_like.out", &mut v, &[0, 1, 2, 3, 3]).unwrap();
    let t = tensor(&v, 3);
    assert_eq!(t.sizes, vec![2, 3]);
    assert!(f32s(&t).iter().all(|&x| x == f32::NEG_INFINITY), "{t:?}");
    v[1] = Value::Int(7);
    v[3] = out(DType::I32, &[2, 3]);
    run_kernel("aten::full_like.out", &mut v, &[0, 1, 2, 3]).unwrap();
    let t = tensor(&v, 3);
    let ints: Vec<i32> = t
        .data
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(ints, vec![7; 6]);
}
