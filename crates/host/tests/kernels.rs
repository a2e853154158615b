//! Portable CPU kernels against hand-computed values.

use etvk_host::dtype::{f16_to_f32, f32_to_f16, DType};
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
    let err = run_kernel("aten::upsample_bicubic2d.vec_out", &mut v, &[0, 1])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("aten::upsample_bicubic2d.vec_out") && err.contains("no portable CPU kernel"),
        "{err}"
    );
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
    assert_eq!(SUPPORTED_KERNELS.len(), 16);
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

/// Values for a boxed int list: the Ints, then the list of their indices (from `base`).
fn boxed(base: usize, items: &[i64]) -> Vec<Value> {
    let mut v: Vec<Value> = items.iter().map(|&x| Value::Int(x)).collect();
    v.push(Value::IntList(
        (base..base + items.len()).map(|i| i as i64).collect(),
    ));
    v
}

/// `as_strided_copy.out` args `[self, size, stride, storage_offset, out, out]` over `v`:
/// self at 0, then size and stride boxed, then the offset and the out tensor.
fn as_strided_values(
    src: Tensor,
    size: &[i64],
    stride: &[i64],
    offset: Value,
    out_t: Value,
) -> (Vec<Value>, Vec<usize>) {
    let mut v = vec![slot(src, 0)];
    v.extend(boxed(v.len(), size));
    let size_at = v.len() - 1;
    v.extend(boxed(v.len(), stride));
    let stride_at = v.len() - 1;
    v.push(offset);
    v.push(out_t);
    let n = v.len();
    (v, vec![0, size_at, stride_at, n - 2, n - 1, n - 1])
}

#[test]
fn as_strided_copy_reads_a_strided_window_with_an_offset() {
    // self [3, 4] = 0..12; a transposed [2, 3] window from element 1: out[i][j] = x[1 + i + 4j].
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let (mut v, args) = as_strided_values(
        Tensor::from_f32(vec![3, 4], &x).unwrap(),
        &[2, 3],
        &[1, 4],
        Value::Int(1),
        out(DType::F32, &[2, 3]),
    );
    run_kernel("aten::as_strided_copy.out", &mut v, &args).unwrap();
    let t = tensor(&v, args[4]);
    assert_eq!(t.sizes, vec![2, 3]);
    assert_eq!(f32s(&t), vec![1.0, 5.0, 9.0, 2.0, 6.0, 10.0]);

    // A rank-3 pattern with a repeated (stride-0) dim, against a loop over the definition.
    let x: Vec<f32> = (0..30).map(|i| (i as f32) * 0.5 - 3.0).collect();
    let (size, stride, offset) = ([2usize, 3, 2], [7usize, 0, 3], 4usize);
    let (mut v, args) = as_strided_values(
        Tensor::from_f32(vec![5, 6], &x).unwrap(),
        &size.map(|s| s as i64),
        &stride.map(|s| s as i64),
        Value::Int(offset as i64),
        out(DType::F32, &[2, 3, 2]),
    );
    run_kernel("aten::as_strided_copy.out", &mut v, &args).unwrap();
    let mut want = Vec::new();
    for i in 0..size[0] {
        for j in 0..size[1] {
            for k in 0..size[2] {
                want.push(x[offset + i * stride[0] + j * stride[1] + k * stride[2]]);
            }
        }
    }
    assert_eq!(f32s(&tensor(&v, args[4])), want);
}

#[test]
fn as_strided_copy_convnext_pattern_and_other_dtypes() {
    // convnext_tiny's call: [1, C, 1, 1] with stride [C, 1, C, C] and storage_offset None,
    // an identity copy of self's data.
    let (mut v, args) = as_strided_values(
        Tensor::from_f32(vec![1, 4, 1, 1], &[1.5, -2.0, 3.25, 4.0]).unwrap(),
        &[1, 4, 1, 1],
        &[4, 1, 4, 4],
        Value::Null,
        out(DType::F32, &[1, 4, 1, 1]),
    );
    run_kernel("aten::as_strided_copy.out", &mut v, &args).unwrap();
    assert_eq!(f32s(&tensor(&v, args[4])), vec![1.5, -2.0, 3.25, 4.0]);

    // int64 with a huge stride on a size-1 dim (never used, must not overflow).
    let (mut v, args) = as_strided_values(
        Tensor::from_i64(vec![6], &[10, 11, 12, 13, 14, 15]).unwrap(),
        &[1, 3],
        &[i64::MAX, 2],
        Value::Int(1),
        out(DType::I64, &[1, 3]),
    );
    run_kernel("aten::as_strided_copy.out", &mut v, &args).unwrap();
    assert_eq!(tensor(&v, args[4]).to_i64_vec().unwrap(), vec![11, 13, 15]);

    // int32, bool and float16 are copied bit for bit.
    let (mut v, args) = as_strided_values(
        Tensor::from_i32(vec![2, 2], &[1, 2, 3, 4]).unwrap(),
        &[2, 2],
        &[1, 2],
        Value::Null,
        out(DType::I32, &[2, 2]),
    );
    run_kernel("aten::as_strided_copy.out", &mut v, &args).unwrap();
    assert_eq!(tensor(&v, args[4]).to_i64_vec().unwrap(), vec![1, 3, 2, 4]);
    let (mut v, args) = as_strided_values(
        Tensor::from_bool(vec![4], &[true, false, false, true]).unwrap(),
        &[2],
        &[3],
        Value::Int(0),
        out(DType::Bool, &[2]),
    );
    run_kernel("aten::as_strided_copy.out", &mut v, &args).unwrap();
    assert_eq!(tensor(&v, args[4]).data, vec![1, 1]);
    let h: Vec<u8> = [0.5f32, -1.0, 65504.0]
        .iter()
        .flat_map(|&x| f32_to_f16(x).to_le_bytes())
        .collect();
    let (mut v, args) = as_strided_values(
        Tensor::new(DType::F16, vec![3], h).unwrap(),
        &[2],
        &[2],
        Value::Null,
        out(DType::F16, &[2]),
    );
    run_kernel("aten::as_strided_copy.out", &mut v, &args).unwrap();
    assert_eq!(f32s(&tensor(&v, args[4])), vec![0.5, 65504.0]);
}

#[test]
fn as_strided_copy_refuses_bad_views() {
    let op = "aten::as_strided_copy.out";
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let run = |size: &[i64], stride: &[i64], offset: Value, out_t: Value| {
        let (mut v, args) = as_strided_values(
            Tensor::from_f32(vec![3, 4], &x).unwrap(),
            size,
            stride,
            offset,
            out_t,
        );
        let e = run_kernel(op, &mut v, &args).unwrap_err();
        assert!(
            matches!(&e, HostError::Kernel { op: o, .. } if o == op),
            "{e}"
        );
        e.to_string()
    };
    // The furthest element is 3 + 1 + 2 * 4 = 12, one past self's 12 elements.
    let e = run(&[2, 3], &[1, 4], Value::Int(3), out(DType::F32, &[2, 3]));
    assert!(
        e.contains(op) && e.contains("element 12") && e.contains("holds 12 elements"),
        "{e}"
    );
    let e = run(&[2, 3], &[-1, 4], Value::Null, out(DType::F32, &[2, 3]));
    assert!(e.contains("negative stride -1"), "{e}");
    let e = run(&[2, -3], &[1, 4], Value::Null, out(DType::F32, &[2, 3]));
    assert!(e.contains("negative size -3"), "{e}");
    let e = run(&[2, 3], &[1, 4], Value::Int(-1), out(DType::F32, &[2, 3]));
    assert!(e.contains("storage_offset -1 is negative"), "{e}");
    let e = run(&[2, 3], &[1], Value::Null, out(DType::F32, &[2, 3]));
    assert!(e.contains("has 2 dims but stride [1] has 1"), "{e}");
    let e = run(&[6], &[1], Value::Null, out(DType::F32, &[2, 3]));
    assert!(e.contains("out tensor has rank 2"), "{e}");
    let e = run(&[2, 3], &[1, 4], Value::Null, out(DType::I32, &[2, 3]));
    assert!(e.contains("does not cast"), "{e}");
    // A stride-0 view larger than the out tensor is refused before allocating it.
    let e = run(&[1 << 40], &[0], Value::Null, out(DType::F32, &[8]));
    assert!(e.contains("out tensor"), "{e}");
    let e = run(
        &[i64::MAX, 4],
        &[1, 1],
        Value::Null,
        out(DType::F32, &[2, 3]),
    );
    assert!(e.contains("overflows"), "{e}");
    // 2 * i64::MAX + 2 is past usize: refused, not wrapped around into range.
    let e = run(&[3], &[i64::MAX], Value::Int(2), out(DType::F32, &[3]));
    assert!(e.contains("past usize::MAX"), "{e}");
}

/// Mean of `x` (sizes `sizes`) over the dims flagged in `reduce`, by a direct f64 loop over
/// output positions; the result has the kept dims in order.
fn mean_reference(x: &[f64], sizes: &[usize], reduce: &[bool]) -> Vec<f64> {
    let rank = sizes.len();
    let unravel = |mut i: usize| -> Vec<usize> {
        let mut idx = vec![0; rank];
        for d in (0..rank).rev() {
            idx[d] = i % sizes[d];
            i /= sizes[d];
        }
        idx
    };
    let kept: Vec<usize> = (0..rank).filter(|&d| !reduce[d]).collect();
    let out_n: usize = kept.iter().map(|&d| sizes[d]).product();
    let mut sums = vec![0.0; out_n];
    let mut counts = vec![0usize; out_n];
    for (i, &xi) in x.iter().enumerate() {
        let idx = unravel(i);
        let o = kept.iter().fold(0, |acc, &d| acc * sizes[d] + idx[d]);
        sums[o] += xi;
        counts[o] += 1;
    }
    sums.iter()
        .zip(&counts)
        .map(|(s, &n)| s / n as f64)
        .collect()
}

fn assert_close(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (f64::from(*g) - w).abs() <= tol * w.abs().max(1.0),
            "{got:?} vs {want:?}"
        );
    }
}

/// `mean.out` args `[self, dim, keepdim, dtype, out, out]`: self at 0, then the dim list
/// (boxed, or `dims` = None for a Null), keepdim, dtype and out.
fn mean_values(
    src: Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    dtype: Value,
    out_t: Value,
) -> (Vec<Value>, Vec<usize>) {
    let mut v = vec![slot(src, 0)];
    match dims {
        Some(d) => v.extend(boxed(1, d)),
        None => v.push(Value::Null),
    }
    let dim_at = v.len() - 1;
    v.push(Value::Bool(keepdim));
    v.push(dtype);
    v.push(out_t);
    let n = v.len();
    (v, vec![0, dim_at, n - 3, n - 2, n - 1, n - 1])
}

/// (dims, keepdim, the dims reduced, out sizes).
type MeanCase<'a> = (Option<&'a [i64]>, bool, [bool; 3], &'a [usize]);

#[test]
fn mean_over_dims_with_keepdim_negative_and_none() {
    let op = "aten::mean.out";
    let sizes = [2usize, 3, 4];
    let x: Vec<f32> = (0..24)
        .map(|i| ((i * 7) % 11) as f32 * 0.37 - 1.1)
        .collect();
    let x64: Vec<f64> = x.iter().map(|&a| f64::from(a)).collect();
    let input = || Tensor::from_f32(sizes.to_vec(), &x).unwrap();
    let cases: &[MeanCase] = &[
        (Some(&[-1]), false, [false, false, true], &[2, 3]),
        (Some(&[0, 2]), true, [true, false, true], &[1, 3, 1]),
        (Some(&[-3, 1]), false, [true, true, false], &[4]),
        (None, false, [true, true, true], &[]),
        (Some(&[]), true, [true, true, true], &[1, 1, 1]),
    ];
    for &(dims, keepdim, reduce, out_sizes) in cases {
        let (mut v, args) = mean_values(
            input(),
            dims,
            keepdim,
            Value::Null,
            out(DType::F32, out_sizes),
        );
        run_kernel(op, &mut v, &args).unwrap();
        let t = tensor(&v, args[4]);
        assert_eq!(t.sizes, out_sizes, "{dims:?} keepdim {keepdim}");
        assert_close(&f32s(&t), &mean_reference(&x64, &sizes, &reduce), 1e-6);
    }
    // Hand-worked: rows of [[1, 2], [3, 6]] average 1.5 and 4.5, columns 2 and 4.
    let (mut v, args) = mean_values(
        Tensor::from_f32(vec![2, 2], &[1.0, 2.0, 3.0, 6.0]).unwrap(),
        Some(&[1]),
        false,
        Value::Int(6), // float32, the input's dtype
        out(DType::F32, &[2]),
    );
    run_kernel(op, &mut v, &args).unwrap();
    assert_eq!(f32s(&tensor(&v, args[4])), vec![1.5, 4.5]);
    v[1] = Value::Int(0);
    run_kernel(op, &mut v, &args).unwrap();
    assert_eq!(f32s(&tensor(&v, args[4])), vec![2.0, 4.0]);
}

#[test]
fn mean_shufflenet_pattern_and_float16() {
    // shufflenet's call: [1, C, 2, 2] over dims [2, 3], keepdim false -> [1, C].
    let x: Vec<f32> = (0..32).map(|i| (i as f32).sin()).collect();
    let (mut v, args) = mean_values(
        Tensor::from_f32(vec![1, 8, 2, 2], &x).unwrap(),
        Some(&[2, 3]),
        false,
        Value::Null,
        out(DType::F32, &[1, 8]),
    );
    run_kernel("aten::mean.out", &mut v, &args).unwrap();
    let want: Vec<f64> = x
        .chunks(4)
        .map(|c| c.iter().map(|&a| f64::from(a)).sum::<f64>() / 4.0)
        .collect();
    assert_close(&f32s(&tensor(&v, args[4])), &want, 1e-6);

    // float16: 2048 then 2048 ones. Summed in float16 every one would be lost (2048 + 1
    // rounds back to 2048), giving a mean near 1 instead of near 2.
    let mut xs = vec![2048.0f32];
    xs.extend([1.0f32; 2048]);
    let h: Vec<u8> = xs
        .iter()
        .flat_map(|&a| f32_to_f16(a).to_le_bytes())
        .collect();
    let (mut v, args) = mean_values(
        Tensor::new(DType::F16, vec![2049], h).unwrap(),
        Some(&[0]),
        true,
        Value::Int(5),
        out(DType::F16, &[1]),
    );
    run_kernel("aten::mean.out", &mut v, &args).unwrap();
    let t = tensor(&v, args[4]);
    assert_eq!(t.sizes, vec![1]);
    // 4096 / 2049 = 1.99902..., which float16 holds as 1.9990234.
    let want = f16_to_f32(f32_to_f16((4096.0f64 / 2049.0) as f32));
    assert_eq!(f32s(&t), vec![want]);
    assert!((f64::from(want) - 4096.0 / 2049.0).abs() < 1e-3, "{want}");
}

#[test]
fn mean_refuses_bad_dtypes_and_dims() {
    let op = "aten::mean.out";
    let x = Tensor::from_f32(vec![2, 3], &[1.0; 6]).unwrap();
    let run = |src: Tensor, dims: Option<&[i64]>, dtype: Value, out_t: Value| {
        let (mut v, args) = mean_values(src, dims, false, dtype, out_t);
        let e = run_kernel(op, &mut v, &args).unwrap_err();
        assert!(
            matches!(&e, HostError::Kernel { op: o, .. } if o == op),
            "{e}"
        );
        e.to_string()
    };
    // dtype int32 (code 3) and float16 (5) differ from the float32 input.
    let e = run(x.clone(), Some(&[1]), Value::Int(3), out(DType::F32, &[2]));
    assert!(e.contains(op) && e.contains("dtype int32"), "{e}");
    let e = run(x.clone(), Some(&[1]), Value::Int(5), out(DType::F16, &[2]));
    assert!(
        e.contains("dtype float16 differs from self's float32"),
        "{e}"
    );
    let e = run(x.clone(), Some(&[1]), Value::Int(99), out(DType::F32, &[2]));
    assert!(e.contains("ScalarType code 99"), "{e}");
    let e = run(
        Tensor::from_i64(vec![2], &[1, 2]).unwrap(),
        None,
        Value::Null,
        out(DType::F32, &[]),
    );
    assert!(e.contains("self is int64"), "{e}");
    let e = run(x.clone(), Some(&[1]), Value::Null, out(DType::I32, &[2]));
    assert!(e.contains("out dtype int32"), "{e}");
    let e = run(x.clone(), Some(&[2]), Value::Null, out(DType::F32, &[2]));
    assert!(e.contains("dim 2 out of range for rank 2"), "{e}");
    let e = run(x, Some(&[1, -1]), Value::Null, out(DType::F32, &[2]));
    assert!(e.contains("appears more than once"), "{e}");
}

/// Parameters of one `convolution.out` call (lists as the program writes them).
#[derive(Clone)]
struct ConvParams {
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
}

impl ConvParams {
    fn new(stride: &[i64], padding: &[i64], dilation: &[i64], groups: i64) -> ConvParams {
        ConvParams {
            stride: stride.to_vec(),
            padding: padding.to_vec(),
            dilation: dilation.to_vec(),
            transposed: false,
            output_padding: vec![0],
            groups,
        }
    }

    fn transposed(mut self, output_padding: &[i64]) -> ConvParams {
        self.transposed = true;
        self.output_padding = output_padding.to_vec();
        self
    }
}

/// `convolution.out` args `[input, weight, bias, stride, padding, dilation, transposed,
/// output_padding, groups, out, out]`: the three tensors (bias None when absent), the
/// boxed lists, then the bool, groups and out.
fn conv_values(
    input: Tensor,
    weight: Tensor,
    bias: Option<Tensor>,
    p: &ConvParams,
    out_t: Value,
) -> (Vec<Value>, Vec<usize>) {
    let mut v = vec![
        slot(input, 0),
        slot(weight, 0),
        bias.map_or(Value::Null, |b| slot(b, 0)),
    ];
    let mut args = vec![0, 1, 2];
    for list in [&p.stride, &p.padding, &p.dilation] {
        v.extend(boxed(v.len(), list));
        args.push(v.len() - 1);
    }
    v.push(Value::Bool(p.transposed));
    args.push(v.len() - 1);
    v.extend(boxed(v.len(), &p.output_padding));
    args.push(v.len() - 1);
    v.push(Value::Int(p.groups));
    args.push(v.len() - 1);
    v.push(out_t);
    args.extend([v.len() - 1, v.len() - 1]);
    (v, args)
}

/// Entry `i` of a per-spatial-dim list (a single entry applies to every dim).
fn at(list: &[i64], i: usize) -> i64 {
    if list.len() == 1 {
        list[0]
    } else {
        list[i]
    }
}

/// Direct 2-D convolution in f64, by its definition: x [N, C, H, W], w [OC, C / G, KH, KW].
/// Returns the output and its sizes.
#[allow(clippy::too_many_arguments)]
fn conv2d_reference(
    x: &[f64],
    xs: [usize; 4],
    w: &[f64],
    ws: [usize; 4],
    b: Option<&[f64]>,
    s: [i64; 2],
    p: [i64; 2],
    d: [i64; 2],
    g: usize,
) -> (Vec<f64>, Vec<usize>) {
    let [n, c, h, wd] = xs;
    let [oc_n, cg, kh_n, kw_n] = ws;
    let oh_n = ((h as i64 + 2 * p[0] - d[0] * (kh_n as i64 - 1) - 1) / s[0] + 1) as usize;
    let ow_n = ((wd as i64 + 2 * p[1] - d[1] * (kw_n as i64 - 1) - 1) / s[1] + 1) as usize;
    let ocg = oc_n / g;
    let mut y = vec![0.0; n * oc_n * oh_n * ow_n];
    for ni in 0..n {
        for oc in 0..oc_n {
            for oh in 0..oh_n {
                for ow in 0..ow_n {
                    let mut acc = b.map_or(0.0, |b| b[oc]);
                    for icg in 0..cg {
                        let ic = (oc / ocg) * cg + icg;
                        for kh in 0..kh_n {
                            for kw in 0..kw_n {
                                let ih = oh as i64 * s[0] - p[0] + kh as i64 * d[0];
                                let iw = ow as i64 * s[1] - p[1] + kw as i64 * d[1];
                                if ih < 0 || iw < 0 || ih >= h as i64 || iw >= wd as i64 {
                                    continue;
                                }
                                let xi = ((ni * c + ic) * h + ih as usize) * wd + iw as usize;
                                let wi = ((oc * cg + icg) * kh_n + kh) * kw_n + kw;
                                acc += x[xi] * w[wi];
                            }
                        }
                    }
                    y[((ni * oc_n + oc) * oh_n + oh) * ow_n + ow] = acc;
                }
            }
        }
    }
    (y, vec![n, oc_n, oh_n, ow_n])
}

/// Direct transposed 2-D convolution in f64: every input element scattered through the
/// kernel. x [N, C, H, W], w [C, OC / G, KH, KW].
#[allow(clippy::too_many_arguments)]
fn conv_transpose2d_reference(
    x: &[f64],
    xs: [usize; 4],
    w: &[f64],
    ws: [usize; 4],
    b: Option<&[f64]>,
    s: [i64; 2],
    p: [i64; 2],
    d: [i64; 2],
    op: [i64; 2],
    g: usize,
) -> (Vec<f64>, Vec<usize>) {
    let [n, c, h, wd] = xs;
    let [_, ocg, kh_n, kw_n] = ws;
    let oc_n = ocg * g;
    let cg = c / g;
    let oh_n = ((h as i64 - 1) * s[0] - 2 * p[0] + d[0] * (kh_n as i64 - 1) + op[0] + 1) as usize;
    let ow_n = ((wd as i64 - 1) * s[1] - 2 * p[1] + d[1] * (kw_n as i64 - 1) + op[1] + 1) as usize;
    let mut y = vec![0.0; n * oc_n * oh_n * ow_n];
    for (i, v) in y.iter_mut().enumerate() {
        *v = b.map_or(0.0, |b| b[(i / (oh_n * ow_n)) % oc_n]);
    }
    for ni in 0..n {
        for ic in 0..c {
            for ih in 0..h {
                for iw in 0..wd {
                    for o in 0..ocg {
                        for kh in 0..kh_n {
                            for kw in 0..kw_n {
                                let oh = ih as i64 * s[0] - p[0] + kh as i64 * d[0];
                                let ow = iw as i64 * s[1] - p[1] + kw as i64 * d[1];
                                if oh < 0 || ow < 0 || oh >= oh_n as i64 || ow >= ow_n as i64 {
                                    continue;
                                }
                                let oc = (ic / cg) * ocg + o;
                                let yi =
                                    ((ni * oc_n + oc) * oh_n + oh as usize) * ow_n + ow as usize;
                                let xi = ((ni * c + ic) * h + ih) * wd + iw;
                                let wi = ((ic * ocg + o) * kh_n + kh) * kw_n + kw;
                                y[yi] += x[xi] * w[wi];
                            }
                        }
                    }
                }
            }
        }
    }
    (y, vec![n, oc_n, oh_n, ow_n])
}

/// Deterministic pseudo-random values in [-1, 1).
fn pseudo(n: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The reference for a 1-D (as 2-D with H = 1) or 2-D call.
fn conv_reference(
    x: &Tensor,
    w: &Tensor,
    b: Option<&Tensor>,
    p: &ConvParams,
) -> (Vec<f64>, Vec<usize>) {
    let as4 = |s: &[usize]| -> [usize; 4] {
        match *s {
            [a, b, l] => [a, b, 1, l],
            [a, b, h, w] => [a, b, h, w],
            _ => panic!("rank {s:?}"),
        }
    };
    let one_d = x.sizes.len() == 3;
    // 1-D parameters go to the W dim; H gets stride 1, no padding, dilation 1.
    let pair = |list: &[i64], unit: i64| {
        if one_d {
            [unit, at(list, 0)]
        } else {
            [at(list, 0), at(list, 1)]
        }
    };
    let (xv, wv) = (x.to_f64_vec().unwrap(), w.to_f64_vec().unwrap());
    let bv = b.map(|b| b.to_f64_vec().unwrap());
    let g = p.groups as usize;
    let (y, mut sizes) = if p.transposed {
        conv_transpose2d_reference(
            &xv,
            as4(&x.sizes),
            &wv,
            as4(&w.sizes),
            bv.as_deref(),
            pair(&p.stride, 1),
            pair(&p.padding, 0),
            pair(&p.dilation, 1),
            pair(&p.output_padding, 0),
            g,
        )
    } else {
        conv2d_reference(
            &xv,
            as4(&x.sizes),
            &wv,
            as4(&w.sizes),
            bv.as_deref(),
            pair(&p.stride, 1),
            pair(&p.padding, 0),
            pair(&p.dilation, 1),
            g,
        )
    };
    if one_d {
        sizes.remove(2);
    }
    (y, sizes)
}

/// Run `convolution.out` on pseudo-random f32 input / weight / bias of the given sizes and
/// compare with the reference.
fn check_conv(xs: &[usize], ws: &[usize], bias: bool, p: &ConvParams, seed: u64) {
    let x = Tensor::from_f32(xs.to_vec(), &pseudo(xs.iter().product(), seed)).unwrap();
    let w = Tensor::from_f32(ws.to_vec(), &pseudo(ws.iter().product(), seed + 1)).unwrap();
    let c_out = if p.transposed {
        ws[1] * p.groups as usize
    } else {
        ws[0]
    };
    let b = bias.then(|| Tensor::from_f32(vec![c_out], &pseudo(c_out, seed + 2)).unwrap());
    let (want, sizes) = conv_reference(&x, &w, b.as_ref(), p);
    let (mut v, args) = conv_values(x, w, b, p, out(DType::F32, &sizes));
    run_kernel("aten::convolution.out", &mut v, &args).unwrap();
    let t = tensor(&v, args[9]);
    assert_eq!(t.sizes, sizes, "input {xs:?} weight {ws:?}");
    assert!(want.iter().any(|&y| y != 0.0));
    assert_close(&f32s(&t), &want, 1e-6);
}

#[test]
fn convolution_2d_groups_depthwise_stride_padding_dilation() {
    // groups = 2, bias, padding 1.
    check_conv(
        &[2, 4, 5, 6],
        &[6, 2, 3, 3],
        true,
        &ConvParams::new(&[1], &[1], &[1], 2),
        1,
    );
    // Depthwise (groups = channels), the conv zoo's 3x3 padding-1 form.
    check_conv(
        &[2, 8, 7, 7],
        &[8, 1, 3, 3],
        true,
        &ConvParams::new(&[1, 1], &[1, 1], &[1, 1], 8),
        2,
    );
    // Stride 2, asymmetric padding, dilation 2.
    check_conv(
        &[2, 3, 11, 9],
        &[4, 3, 3, 2],
        true,
        &ConvParams::new(&[2], &[2, 1], &[2], 1),
        3,
    );
    // Per-dim stride and dilation, odd sizes.
    check_conv(
        &[3, 2, 9, 10],
        &[5, 2, 2, 3],
        true,
        &ConvParams::new(&[3, 2], &[0, 3], &[1, 3], 1),
        4,
    );
    // No bias (a pointwise conv).
    check_conv(
        &[2, 12, 5, 6],
        &[8, 12, 1, 1],
        false,
        &ConvParams::new(&[1, 1], &[0, 0], &[1, 1], 1),
        5,
    );
    // The conv zoo's grouped (3, 1) kernel, stride (1, 2), padding (1, 0), groups 3, and its
    // stem: 3x3 stride 2 padding 1 on [2, 3, 20, 24].
    check_conv(
        &[2, 12, 10, 12],
        &[12, 4, 3, 1],
        true,
        &ConvParams::new(&[1, 2], &[1, 0], &[1, 1], 3),
        6,
    );
    check_conv(
        &[2, 3, 20, 24],
        &[8, 3, 3, 3],
        true,
        &ConvParams::new(&[2, 2], &[1, 1], &[1, 1], 1),
        7,
    );
    // Padding larger than the kernel reach: border outputs are the bias alone.
    check_conv(
        &[1, 2, 3, 3],
        &[2, 2, 2, 2],
        true,
        &ConvParams::new(&[1], &[3], &[1], 1),
        8,
    );
    // Hand-worked: a 2x2 sum kernel over [[1, 2, 3], [4, 5, 6], [7, 8, 9]], bias 0.5.
    let p = ConvParams::new(&[1], &[0], &[1], 1);
    let (mut v, args) = conv_values(
        Tensor::from_f32(vec![1, 1, 3, 3], &[1., 2., 3., 4., 5., 6., 7., 8., 9.]).unwrap(),
        Tensor::from_f32(vec![1, 1, 2, 2], &[1.0; 4]).unwrap(),
        Some(Tensor::from_f32(vec![1], &[0.5]).unwrap()),
        &p,
        out(DType::F32, &[1, 1, 2, 2]),
    );
    run_kernel("aten::convolution.out", &mut v, &args).unwrap();
    assert_eq!(f32s(&tensor(&v, args[9])), vec![12.5, 16.5, 24.5, 28.5]);
}

#[test]
fn convolution_1d_and_3d() {
    check_conv(
        &[2, 3, 10],
        &[4, 3, 3],
        true,
        &ConvParams::new(&[2], &[1], &[1], 1),
        11,
    );
    check_conv(
        &[2, 4, 13],
        &[6, 2, 4],
        false,
        &ConvParams::new(&[1], &[3], &[2], 2),
        12,
    );
    check_conv(
        &[2, 4, 7],
        &[4, 3, 3],
        true,
        &ConvParams::new(&[2], &[1], &[1], 2).transposed(&[1]),
        13,
    );
    // 3-D: each output depth slice is a sum of 2-D convolutions of input depth slices.
    let (xs, ws) = ([2usize, 2, 4, 5, 5], [3usize, 2, 2, 3, 3]);
    let x = pseudo(xs.iter().product(), 14);
    let w = pseudo(ws.iter().product(), 15);
    let bias = pseudo(3, 16);
    let p = ConvParams::new(&[2, 1, 2], &[1, 1, 0], &[1, 2, 1], 1);
    let (sd, pd, dd) = (2i64, 1i64, 1i64);
    let od_n = ((4 + 2 * pd - dd - 1) / sd + 1) as usize;
    let x64: Vec<f64> = x.iter().map(|&a| f64::from(a)).collect();
    let w64: Vec<f64> = w.iter().map(|&a| f64::from(a)).collect();
    // Depth slice `i` of a [N, C, D, H, W] tensor as [N, C, H, W].
    let slice = |t: &[f64], s: [usize; 5], i: usize| -> Vec<f64> {
        let plane = s[3] * s[4];
        (0..s[0] * s[1])
            .flat_map(|nc| t[(nc * s[2] + i) * plane..][..plane].to_vec())
            .collect()
    };
    let mut per_depth = Vec::new();
    let mut hw = Vec::new();
    for od in 0..od_n {
        let mut acc: Option<Vec<f64>> = None;
        for kd in 0..ws[2] {
            let id = od as i64 * sd - pd + kd as i64 * dd;
            if id < 0 || id >= xs[2] as i64 {
                continue;
            }
            let (y, sizes) = conv2d_reference(
                &slice(&x64, xs, id as usize),
                [xs[0], xs[1], xs[3], xs[4]],
                &slice(&w64, ws, kd),
                [ws[0], ws[1], ws[3], ws[4]],
                None,
                [1, 2],
                [1, 0],
                [2, 1],
                1,
            );
            hw = sizes[2..].to_vec();
            acc = Some(match acc {
                None => y,
                Some(a) => a.iter().zip(&y).map(|(a, b)| a + b).collect(),
            });
        }
        per_depth.push(acc.unwrap());
    }
    let (oh, ow) = (hw[0], hw[1]);
    let mut want = Vec::new();
    for nc in 0..xs[0] * ws[0] {
        for slab in &per_depth {
            want.extend(
                slab[nc * oh * ow..][..oh * ow]
                    .iter()
                    .map(|v| v + f64::from(bias[nc % 3])),
            );
        }
    }
    let sizes = [xs[0], ws[0], od_n, oh, ow];
    let (mut v, args) = conv_values(
        Tensor::from_f32(xs.to_vec(), &x).unwrap(),
        Tensor::from_f32(ws.to_vec(), &w).unwrap(),
        Some(Tensor::from_f32(vec![3], &bias).unwrap()),
        &p,
        out(DType::F32, &sizes),
    );
    run_kernel("aten::convolution.out", &mut v, &args).unwrap();
    let t = tensor(&v, args[9]);
    assert_eq!(t.sizes, sizes);
    assert_close(&f32s(&t), &want, 1e-6);
}

#[test]
fn convolution_transposed_stride_output_padding_groups() {
    // The conv zoo's up-sampler: 3x3, stride 2, padding 1, output_padding 1.
    check_conv(
        &[2, 8, 10, 6],
        &[8, 6, 3, 3],
        true,
        &ConvParams::new(&[2, 2], &[1, 1], &[1, 1], 1).transposed(&[1, 1]),
        21,
    );
    // Groups 2, per-dim stride / output_padding, no bias.
    check_conv(
        &[2, 4, 5, 6],
        &[4, 3, 3, 2],
        false,
        &ConvParams::new(&[2, 3], &[1, 0], &[1], 2).transposed(&[1, 2]),
        22,
    );
    // Dilation 2 with output_padding 1 (allowed: smaller than the dilation), padding 2.
    check_conv(
        &[1, 3, 4, 4],
        &[3, 2, 3, 3],
        true,
        &ConvParams::new(&[1], &[2], &[2], 1).transposed(&[1]),
        23,
    );
    // Depthwise transposed.
    check_conv(
        &[2, 4, 3, 5],
        &[4, 1, 2, 2],
        true,
        &ConvParams::new(&[2], &[0], &[1], 4).transposed(&[0]),
        24,
    );
    // Hand-worked: stride 2 scatters each input through a 2x2 ones kernel into its own block.
    let p = ConvParams::new(&[2], &[0], &[1], 1).transposed(&[0]);
    let (mut v, args) = conv_values(
        Tensor::from_f32(vec![1, 1, 1, 2], &[1.0, 2.0]).unwrap(),
        Tensor::from_f32(vec![1, 1, 2, 2], &[1.0; 4]).unwrap(),
        None,
        &p,
        out(DType::F32, &[1, 1, 2, 4]),
    );
    run_kernel("aten::convolution.out", &mut v, &args).unwrap();
    assert_eq!(
        f32s(&tensor(&v, args[9])),
        vec![1., 1., 2., 2., 1., 1., 2., 2.]
    );
}

#[test]
fn convolution_float16() {
    let h = |sizes: &[usize], vals: &[f32]| {
        let bytes = vals
            .iter()
            .flat_map(|&a| f32_to_f16(a).to_le_bytes())
            .collect();
        Tensor::new(DType::F16, sizes.to_vec(), bytes).unwrap()
    };
    for (xs, ws, p) in [
        (
            [2usize, 4, 6, 5],
            [6usize, 2, 3, 3],
            ConvParams::new(&[2, 1], &[1], &[1, 2], 2),
        ),
        (
            [2, 4, 3, 4],
            [4, 3, 3, 3],
            ConvParams::new(&[2], &[1], &[1], 2).transposed(&[1]),
        ),
    ] {
        let x = h(&xs, &pseudo(xs.iter().product(), 31));
        let w = h(&ws, &pseudo(ws.iter().product(), 32));
        let c_out = if p.transposed { ws[1] * 2 } else { ws[0] };
        let b = h(&[c_out], &pseudo(c_out, 33));
        // The reference sees the same float16-rounded values.
        let (want, sizes) = conv_reference(&x, &w, Some(&b), &p);
        let (mut v, args) = conv_values(x, w, Some(b), &p, out(DType::F16, &sizes));
        run_kernel("aten::convolution.out", &mut v, &args).unwrap();
        let t = tensor(&v, args[9]);
        assert_eq!((t.dtype, t.sizes.clone()), (DType::F16, sizes));
        // Accumulated exactly, then rounded once to float16.
        let want16: Vec<f32> = want
            .iter()
            .map(|&y| f16_to_f32(f32_to_f16(y as f32)))
            .collect();
        let got = f32s(&t);
        for (g, w) in got.iter().zip(&want16) {
            assert!(
                (g - w).abs() <= 1e-3 * w.abs().max(1.0),
                "{got:?} vs {want16:?}"
            );
        }
    }
}

#[test]
fn convolution_refuses_bad_arguments() {
    let op = "aten::convolution.out";
    let f = |sizes: &[usize]| {
        Tensor::from_f32(sizes.to_vec(), &vec![0.5; sizes.iter().product()]).unwrap()
    };
    let run = |x: Tensor, w: Tensor, b: Option<Tensor>, p: &ConvParams, out_t: Value| {
        let (mut v, args) = conv_values(x, w, b, p, out_t);
        let e = run_kernel(op, &mut v, &args).unwrap_err();
        assert!(
            matches!(&e, HostError::Kernel { op: o, .. } if o == op),
            "{e}"
        );
        let s = e.to_string();
        assert!(s.contains(op), "{s}");
        s
    };
    let plain = ConvParams::new(&[1], &[0], &[1], 1);
    let o4 = |s: &[usize]| out(DType::F32, s);

    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 1, 3, 3]),
        None,
        &ConvParams::new(&[1], &[0], &[1], 2),
        o4(&[2, 4, 2, 2]),
    );
    assert!(
        e.contains("input channels 3") && e.contains("not divisible by groups 2"),
        "{e}"
    );
    let e = run(
        f(&[2, 4, 4, 4]),
        f(&[3, 2, 3, 3]),
        None,
        &ConvParams::new(&[1], &[0], &[1], 2),
        o4(&[2, 3, 2, 2]),
    );
    assert!(
        e.contains("output channels 3 are not divisible by groups 2"),
        "{e}"
    );
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 2, 3, 3]),
        None,
        &plain,
        o4(&[2, 4, 2, 2]),
    );
    assert!(
        e.contains("expect 2 x 1 input channels") && e.contains("has 3"),
        "{e}"
    );
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        None,
        &plain.clone().transposed(&[0]),
        o4(&[2, 9, 6, 6]),
    );
    assert!(
        e.contains("transposed weight sizes [4, 3, 3, 3]") && e.contains("has 3"),
        "{e}"
    );
    let e = run(
        f(&[2, 1, 2, 2]),
        f(&[1, 1, 5, 5]),
        None,
        &plain,
        o4(&[2, 1, 1, 1]),
    );
    assert!(
        e.contains("kernel size 5") && e.contains("larger than the padded input size 2"),
        "{e}"
    );
    // Dilation makes a 3-tap kernel span 5.
    let e = run(
        f(&[2, 1, 4, 4]),
        f(&[1, 1, 3, 3]),
        None,
        &ConvParams::new(&[1], &[0], &[2], 1),
        o4(&[2, 1, 1, 1]),
    );
    assert!(
        e.contains("extent 5") && e.contains("padded input size 4"),
        "{e}"
    );
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        Some(f(&[3])),
        &plain,
        o4(&[2, 4, 2, 2]),
    );
    assert!(e.contains("bias sizes [3], expected [4]"), "{e}");
    // 1-D: a bias per input channel instead of per output channel.
    let e = run(
        f(&[3, 4, 6]),
        f(&[5, 4, 3]),
        Some(f(&[4])),
        &plain,
        o4(&[3, 5, 4]),
    );
    assert!(e.contains("bias sizes [4], expected [5]"), "{e}");
    let e = run(f(&[12, 4]), f(&[4, 3]), None, &plain, o4(&[4, 2]));
    assert!(e.contains("rank 2"), "{e}");
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3]),
        None,
        &plain,
        o4(&[2, 4, 2, 2]),
    );
    assert!(e.contains("weight sizes [4, 3, 3] have rank 3"), "{e}");
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[3, 2, 3, 3]),
        None,
        &ConvParams::new(&[2], &[1], &[1], 1).transposed(&[2]),
        o4(&[2, 2, 8, 8]),
    );
    assert!(e.contains("output_padding 2 at spatial dim 0 must be smaller than the stride (2) or the dilation (1)"), "{e}");
    let e = run(
        f(&[2, 3, 4, 4]),
        Tensor::new(DType::F16, vec![4, 3, 3, 3], vec![0; 216]).unwrap(),
        None,
        &plain,
        o4(&[2, 4, 2, 2]),
    );
    assert!(
        e.contains("weight is float16 but the input is float32"),
        "{e}"
    );
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        None,
        &plain,
        out(DType::F16, &[2, 4, 2, 2]),
    );
    assert!(e.contains("out tensor is float16"), "{e}");
    let e = run(
        Tensor::from_i64(vec![1, 1, 2], &[1, 2]).unwrap(),
        Tensor::from_i64(vec![1, 1, 1], &[1]).unwrap(),
        None,
        &plain,
        out(DType::I64, &[1, 1, 2]),
    );
    assert!(e.contains("input is int64, expected a float tensor"), "{e}");
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        None,
        &plain,
        slot(Tensor::zeros(DType::F32, vec![2, 4, 3, 3]).unwrap(), 0),
    );
    assert!(
        e.contains("static sizes [2, 4, 3, 3] differ from the output sizes [2, 4, 2, 2]"),
        "{e}"
    );
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        None,
        &ConvParams::new(&[1, 1, 1], &[0], &[1], 1),
        o4(&[2, 4, 2, 2]),
    );
    assert!(
        e.contains("stride [1, 1, 1] has 3 entries; expected 1 or 2"),
        "{e}"
    );
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        None,
        &ConvParams::new(&[1], &[-1], &[1], 1),
        o4(&[2, 4, 2, 2]),
    );
    assert!(
        e.contains("padding [-1]: every entry must be non-negative"),
        "{e}"
    );
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        None,
        &ConvParams::new(&[0], &[0], &[1], 1),
        o4(&[2, 4, 2, 2]),
    );
    assert!(
        e.contains("stride [0]: every entry must be positive"),
        "{e}"
    );
    let e = run(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        None,
        &ConvParams::new(&[1], &[0], &[1], 0),
        o4(&[2, 4, 2, 2]),
    );
    assert!(e.contains("groups 0 must be positive"), "{e}");
    // A transposed output size that is not positive.
    let e = run(
        f(&[1, 1, 1, 1]),
        f(&[1, 1, 1, 1]),
        None,
        &ConvParams::new(&[1], &[1], &[1], 1).transposed(&[0]),
        o4(&[1, 1, 1, 1]),
    );
    assert!(e.contains("transposed output size -1"), "{e}");
    // Huge strides overflow checked arithmetic instead of wrapping.
    let e = run(
        f(&[1, 1, 3, 3]),
        f(&[1, 1, 1, 1]),
        None,
        &ConvParams::new(&[i64::MAX], &[0], &[1], 1).transposed(&[0]),
        o4(&[1, 1, 1, 1]),
    );
    assert!(e.contains("overflow"), "{e}");
    // Wrong arg kinds.
    let (mut v, mut args) = conv_values(
        f(&[2, 3, 4, 4]),
        f(&[4, 3, 3, 3]),
        None,
        &plain,
        o4(&[2, 4, 2, 2]),
    );
    args[6] = args[8];
    let e = run_kernel(op, &mut v, &args).unwrap_err().to_string();
    assert!(
        e.contains(op) && e.contains("argument 6 is a Int, expected a Bool"),
        "{e}"
    );
}

#[test]
fn convolution_resizes_a_bound_dynamic_output() {
    // A conv1d over a length-10 input into an out tensor declared [2, 4, 16] (bound).
    let p = ConvParams::new(&[1], &[1], &[1], 1);
    let x = Tensor::from_f32(vec![2, 3, 10], &pseudo(60, 41)).unwrap();
    let w = Tensor::from_f32(vec![4, 3, 3], &pseudo(36, 42)).unwrap();
    let (want, sizes) = conv_reference(&x, &w, None, &p);
    assert_eq!(sizes, vec![2, 4, 10]);
    let (mut v, args) = conv_values(x, w, None, &p, out(DType::F32, &[2, 4, 16]));
    run_kernel("aten::convolution.out", &mut v, &args).unwrap();
    let t = tensor(&v, args[9]);
    assert_eq!(t.sizes, sizes);
    assert_close(&f32s(&t), &want, 1e-6);
    // Past the bound is an error.
    let x = Tensor::from_f32(vec![2, 3, 20], &pseudo(120, 43)).unwrap();
    let w = Tensor::from_f32(vec![4, 3, 3], &pseudo(36, 42)).unwrap();
    let (mut v, args) = conv_values(x, w, None, &p, out(DType::F32, &[2, 4, 16]));
    let e = run_kernel("aten::convolution.out", &mut v, &args)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("aten::convolution.out")
            && e.contains("exceed the out tensor's bound [2, 4, 16]"),
        "{e}"
    );
}

#[test]
fn fmod_scalar_keeps_the_dividend_sign() {
    let mut v = vec![
        slot(
            Tensor::from_f32(vec![4], &[5.5, -5.5, 7.0, -0.25]).unwrap(),
            0,
        ),
        Value::Double(2.0),
        out(DType::F32, &[4]),
        slot(Tensor::from_i64(vec![3], &[7, -7, 6]).unwrap(), 0),
        Value::Int(4),
        out(DType::I64, &[3]),
        Value::Int(0),
    ];
    run_kernel("aten::fmod.Scalar_out", &mut v, &[0, 1, 2]).unwrap();
    assert_eq!(f32s(&tensor(&v, 2)), vec![1.5, -1.5, 1.0, -0.25]);
    run_kernel("aten::fmod.Scalar_out", &mut v, &[3, 4, 5]).unwrap();
    assert_eq!(tensor(&v, 5).to_i64_vec().unwrap(), vec![3, -3, 2]);
    let e = run_kernel("aten::fmod.Scalar_out", &mut v, &[3, 6, 5]).unwrap_err();
    assert!(e.to_string().contains("fmod by zero"), "{e}");
}

#[test]
fn slice_scatter_replaces_a_strided_slice() {
    // self [2, 5] = 0..10; src [2, 2] into columns 1 and 3 (start 1, end -1, step 2).
    let base: Vec<f32> = (0..10).map(|x| x as f32).collect();
    let mut v = vec![
        slot(Tensor::from_f32(vec![2, 5], &base).unwrap(), 0),
        slot(
            Tensor::from_f32(vec![2, 2], &[-1.0, -2.0, -3.0, -4.0]).unwrap(),
            0,
        ),
        Value::Int(1),
        Value::Int(1),
        Value::Int(-1),
        Value::Int(2),
        out(DType::F32, &[2, 5]),
        Value::Null,
        Value::Int(0),
    ];
    run_kernel("aten::slice_scatter.out", &mut v, &[0, 1, 2, 3, 4, 5, 6]).unwrap();
    assert_eq!(
        f32s(&tensor(&v, 6)),
        vec![0.0, -1.0, 2.0, -2.0, 4.0, 5.0, -3.0, 7.0, -4.0, 9.0]
    );
    // start / end None along dim 0: src replaces every row (a whole-tensor copy).
    let mut w = vec![
        slot(
            Tensor::from_f32(vec![2, 2], &[1.0, 2.0, 3.0, 4.0]).unwrap(),
            0,
        ),
        slot(
            Tensor::from_f32(vec![2, 2], &[5.0, 6.0, 7.0, 8.0]).unwrap(),
            0,
        ),
        Value::Int(0),
        Value::Null,
        Value::Null,
        Value::Int(1),
        out(DType::F32, &[2, 2]),
    ];
    run_kernel("aten::slice_scatter.out", &mut w, &[0, 1, 2, 3, 4, 5, 6]).unwrap();
    assert_eq!(f32s(&tensor(&w, 6)), vec![5.0, 6.0, 7.0, 8.0]);
    // A src that does not match the slice is refused, naming both.
    v[1] = slot(Tensor::from_f32(vec![2, 3], &[0.0; 6]).unwrap(), 0);
    let e = run_kernel("aten::slice_scatter.out", &mut v, &[0, 1, 2, 3, 4, 5, 6]).unwrap_err();
    assert!(e.to_string().contains("do not match the slice"), "{e}");
}

/// The selection kernels write values and int64 indices (the return value is a TensorList
/// of the two, which is skipped).
#[test]
fn topk_sort_and_max_dim_return_values_and_indices() {
    let x = [3.0f32, -1.0, 7.0, 7.5, 0.0, 2.0];
    let mut v = vec![
        slot(Tensor::from_f32(vec![2, 3], &x).unwrap(), 0),
        Value::Int(2),
        Value::Int(-1),
        Value::Bool(true),
        Value::Bool(true),
        out(DType::F32, &[2, 2]),
        out(DType::I64, &[2, 2]),
        Value::Null,
    ];
    run_kernel("aten::topk.values", &mut v, &[0, 1, 2, 3, 4, 5, 6, 7]).unwrap();
    assert_eq!(f32s(&tensor(&v, 5)), vec![7.0, 3.0, 7.5, 2.0]);
    assert_eq!(tensor(&v, 6).to_i64_vec().unwrap(), vec![2, 0, 0, 2]);
    // smallest along dim 0
    v[3] = Value::Bool(false);
    v[2] = Value::Int(0);
    v[1] = Value::Int(1);
    v[5] = out(DType::F32, &[1, 3]);
    v[6] = out(DType::I64, &[1, 3]);
    run_kernel("aten::topk.values", &mut v, &[0, 1, 2, 3, 4, 5, 6]).unwrap();
    assert_eq!(f32s(&tensor(&v, 5)), vec![3.0, -1.0, 2.0]);
    assert_eq!(tensor(&v, 6).to_i64_vec().unwrap(), vec![0, 0, 1]);
    // sort descending along the last dim, with a NaN (sorts first, as the largest)
    let mut s = vec![
        slot(
            Tensor::from_f32(vec![4], &[1.0, f32::NAN, -2.0, 1.0]).unwrap(),
            0,
        ),
        Value::Int(0),
        Value::Bool(true),
        out(DType::F32, &[4]),
        out(DType::I64, &[4]),
    ];
    run_kernel("aten::sort.values", &mut s, &[0, 1, 2, 3, 4]).unwrap();
    let sv = f32s(&tensor(&s, 3));
    assert!(sv[0].is_nan() && sv[1..] == [1.0, 1.0, -2.0], "{sv:?}");
    assert_eq!(tensor(&s, 4).to_i64_vec().unwrap(), vec![1, 0, 3, 2]);
    // max / min over dim 1 with keepdim: first index on ties
    let mut m = vec![
        slot(
            Tensor::from_f32(vec![2, 3], &[1.0, 5.0, 5.0, -4.0, -4.0, 0.0]).unwrap(),
            0,
        ),
        Value::Int(1),
        Value::Bool(true),
        out(DType::F32, &[2, 1]),
        out(DType::I64, &[2, 1]),
    ];
    run_kernel("aten::max.dim_max", &mut m, &[0, 1, 2, 3, 4]).unwrap();
    assert_eq!(f32s(&tensor(&m, 3)), vec![5.0, 0.0]);
    assert_eq!(tensor(&m, 4).to_i64_vec().unwrap(), vec![1, 2]);
    run_kernel("aten::min.dim_min", &mut m, &[0, 1, 2, 3, 4]).unwrap();
    assert_eq!(f32s(&tensor(&m, 3)), vec![1.0, -4.0]);
    assert_eq!(tensor(&m, 4).to_i64_vec().unwrap(), vec![0, 0]);
}

#[test]
fn scans_reductions_and_elementwise_math() {
    let x = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut v = vec![
        slot(Tensor::from_f32(vec![2, 3], &x).unwrap(), 0),
        Value::Int(1),
        Value::Null,
        out(DType::F32, &[2, 3]),
        Value::Bool(false),
        out(DType::F32, &[2]),
        Value::IntList(vec![1]),
        Value::Int(1),
    ];
    run_kernel("aten::cumsum.out", &mut v, &[0, 1, 2, 3]).unwrap();
    assert_eq!(f32s(&tensor(&v, 3)), vec![1.0, 3.0, 6.0, 4.0, 9.0, 15.0]);
    run_kernel("aten::prod.int_out", &mut v, &[0, 1, 4, 2, 5]).unwrap();
    assert_eq!(f32s(&tensor(&v, 5)), vec![6.0, 120.0]);
    // var over dim 1 (value 6 boxes the list [value 1 = Int 1]), correction 1
    run_kernel("aten::var.correction_out", &mut v, &[0, 6, 7, 4, 5]).unwrap();
    assert_eq!(f32s(&tensor(&v, 5)), vec![1.0, 1.0]);
    // sum over dim 1 (dtype None), and the mean of everything
    run_kernel("aten::sum.IntList_out", &mut v, &[0, 6, 4, 2, 5]).unwrap();
    assert_eq!(f32s(&tensor(&v, 5)), vec![6.0, 15.0]);
    v.push(out(DType::F32, &[]));
    run_kernel("aten::mean.dtype_out", &mut v, &[0, 2, 8]).unwrap();
    assert_eq!(f32s(&tensor(&v, 8)), vec![3.5]);
    // erf, sign, elu against known values
    let mut e = vec![
        slot(
            Tensor::from_f32(vec![4], &[0.5, -1.0, 0.0, 5.0]).unwrap(),
            0,
        ),
        out(DType::F32, &[4]),
        Value::Double(1.0),
        Value::Int(1),
        Value::Int(1),
    ];
    run_kernel("aten::erf.out", &mut e, &[0, 1]).unwrap();
    let erf = f32s(&tensor(&e, 1));
    let want = [0.520_499_9f32, -0.842_700_8, 0.0, 1.0];
    for (g, w) in erf.iter().zip(want) {
        assert!((g - w).abs() <= 1e-7, "erf {erf:?}");
    }
    run_kernel("aten::sign.out", &mut e, &[0, 1]).unwrap();
    assert_eq!(f32s(&tensor(&e, 1)), vec![1.0, -1.0, 0.0, 1.0]);
    run_kernel("aten::elu.out", &mut e, &[0, 2, 3, 4, 1]).unwrap();
    let elu = f32s(&tensor(&e, 1));
    assert_eq!(elu[0], 0.5);
    assert!((elu[1] - (-0.632_120_6)).abs() < 1e-7, "{elu:?}");
}

/// nn.InstanceNorm2d's export: per-channel statistics over the other dims, biased variance.
#[test]
fn batch_norm_without_running_stats() {
    // [1, 2, 2]: channel 0 = [1, 3], channel 1 = [2, 2]
    let mut v = vec![
        slot(
            Tensor::from_f32(vec![1, 2, 2], &[1.0, 3.0, 2.0, 2.0]).unwrap(),
            0,
        ),
        slot(Tensor::from_f32(vec![2], &[2.0, 1.0]).unwrap(), 0),
        slot(Tensor::from_f32(vec![2], &[0.5, -1.0]).unwrap(), 0),
        Value::Bool(true),
        Value::Double(0.1),
        Value::Double(0.0),
        out(DType::F32, &[1, 2, 2]),
        out(DType::F32, &[2]),
        out(DType::F32, &[2]),
    ];
    run_kernel(
        "aten::_native_batch_norm_legit.no_stats_out",
        &mut v,
        &[0, 1, 2, 3, 4, 5, 6, 7, 8],
    )
    .unwrap();
    // channel 0: mean 2, var 1 -> (x - 2) * 2 + 0.5. Channel 1 has no variance and eps is 0
    // (NaN there, as in PyTorch): only its mean is compared.
    let o = f32s(&tensor(&v, 6));
    assert_eq!(&o[..2], &[-1.5, 2.5]);
    assert_eq!(f32s(&tensor(&v, 7)), vec![2.0, 2.0]);
    assert_eq!(f32s(&tensor(&v, 8))[0], 1.0);
}

/// Broadcasting binary ops, comparisons into bool, where and clamp with tensor bounds.
#[test]
fn broadcasting_binary_compare_where_clamp() {
    let mut v = vec![
        slot(Tensor::from_f32(vec![2, 1], &[1.0, -2.0]).unwrap(), 0),
        slot(Tensor::from_f32(vec![3], &[0.5, 1.0, 4.0]).unwrap(), 0),
        Value::Int(2),
        out(DType::F32, &[2, 3]),
        out(DType::Bool, &[2, 3]),
        Value::Null,
        out(DType::F32, &[2, 3]),
    ];
    run_kernel("aten::add.out", &mut v, &[0, 1, 2, 3]).unwrap();
    assert_eq!(f32s(&tensor(&v, 3)), vec![2.0, 3.0, 9.0, -1.0, 0.0, 6.0]);
    run_kernel("aten::lt.Tensor_out", &mut v, &[0, 1, 4]).unwrap();
    assert_eq!(tensor(&v, 4).data, vec![0, 0, 1, 1, 1, 1]);
    // where(cond [2, 3], a [2, 1], b [3])
    run_kernel("aten::where.self_out", &mut v, &[4, 0, 1, 6]).unwrap();
    assert_eq!(f32s(&tensor(&v, 6)), vec![0.5, 1.0, 1.0, -2.0, -2.0, -2.0]);
    // clamp(x [2, 3] = the sum, min None, max [3])
    run_kernel("aten::clamp.Tensor_out", &mut v, &[3, 5, 1, 6]).unwrap();
    assert_eq!(f32s(&tensor(&v, 6)), vec![0.5, 1.0, 4.0, -1.0, 0.0, 4.0]);
    // a scalar operand: rsub(x, 10, alpha 2) = 10 - 2 x
    let mut w = vec![
        slot(Tensor::from_f32(vec![3], &[0.5, 1.0, 4.0]).unwrap(), 0),
        Value::Int(10),
        Value::Int(2),
        out(DType::F32, &[3]),
    ];
    run_kernel("aten::rsub.Scalar_out", &mut w, &[0, 1, 2, 3]).unwrap();
    assert_eq!(f32s(&tensor(&w, 3)), vec![9.0, 8.0, 2.0]);
    // Shapes that do not broadcast are refused, naming both.
    let mut bad = vec![
        slot(Tensor::from_f32(vec![2], &[1.0, 2.0]).unwrap(), 0),
        slot(Tensor::from_f32(vec![3], &[1.0, 2.0, 3.0]).unwrap(), 0),
        out(DType::F32, &[3]),
    ];
    let e = run_kernel("aten::mul.out", &mut bad, &[0, 1, 2]).unwrap_err();
    assert!(e.to_string().contains("do not broadcast"), "{e}");
}

/// View copies, permute, arange, scatter of a value, advanced indexing.
#[test]
fn views_arange_scatter_and_index() {
    let x: Vec<f32> = (0..6).map(|i| i as f32).collect();
    let mut v = vec![
        slot(Tensor::from_f32(vec![2, 3], &x).unwrap(), 0),
        Value::Int(3),
        Value::Int(-1),
        Value::IntList(vec![1, 2]),
        out(DType::F32, &[3, 2]),
        Value::Int(0),
        out(DType::F32, &[1, 2, 3]),
        Value::IntList(vec![8, 5]),
        Value::Int(1),
        out(DType::F32, &[3, 2]),
    ];
    run_kernel("aten::view_copy.out", &mut v, &[0, 3, 4]).unwrap();
    assert_eq!(tensor(&v, 4).sizes, vec![3, 2]);
    run_kernel("aten::unsqueeze_copy.out", &mut v, &[0, 5, 6]).unwrap();
    assert_eq!(tensor(&v, 6).sizes, vec![1, 2, 3]);
    // permute [2, 3] by (1, 0): the transpose
    run_kernel("aten::permute_copy.out", &mut v, &[0, 7, 9]).unwrap();
    assert_eq!(f32s(&tensor(&v, 9)), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    // arange(1, 7, 2) into int64
    let mut a = vec![
        Value::Int(1),
        Value::Int(7),
        Value::Int(2),
        out(DType::I64, &[3]),
    ];
    run_kernel("aten::arange.start_out", &mut a, &[0, 1, 2, 3]).unwrap();
    assert_eq!(tensor(&a, 3).to_i64_vec().unwrap(), vec![1, 3, 5]);
    // scatter(zeros [2, 3], dim 1, index [[2], [0]], 7)
    let mut s = vec![
        slot(Tensor::from_f32(vec![2, 3], &[0.0; 6]).unwrap(), 0),
        Value::Int(1),
        slot(Tensor::from_i64(vec![2, 1], &[2, 0]).unwrap(), 0),
        Value::Double(7.0),
        out(DType::F32, &[2, 3]),
    ];
    run_kernel("aten::scatter.value_out", &mut s, &[0, 1, 2, 3, 4]).unwrap();
    assert_eq!(f32s(&tensor(&s, 4)), vec![0.0, 0.0, 7.0, 7.0, 0.0, 0.0]);
    // x [2, 3][:, [2, -1, 0]] (a None first index keeps dim 0), and x[[1, 0], [0, 2]]
    let mut ix = vec![
        slot(Tensor::from_f32(vec![2, 3], &x).unwrap(), 0),
        slot(Tensor::from_i64(vec![3], &[2, -1, 0]).unwrap(), 0),
        Value::OptionalTensorList(vec![None, Some(1)]),
        out(DType::F32, &[2, 3]),
        slot(Tensor::from_i64(vec![2], &[1, 0]).unwrap(), 0),
        slot(Tensor::from_i64(vec![2], &[0, 2]).unwrap(), 0),
        Value::OptionalTensorList(vec![Some(4), Some(5)]),
        out(DType::F32, &[2]),
    ];
    run_kernel("aten::index.Tensor_out", &mut ix, &[0, 2, 3]).unwrap();
    assert_eq!(f32s(&tensor(&ix, 3)), vec![2.0, 2.0, 0.0, 5.0, 5.0, 3.0]);
    run_kernel("aten::index.Tensor_out", &mut ix, &[0, 6, 7]).unwrap();
    assert_eq!(f32s(&tensor(&ix, 7)), vec![3.0, 2.0]);
}

/// Inference batch norm (a 3-D batch norm's export): running statistics per channel; the
/// saved-statistics outputs come back empty.
#[test]
fn batch_norm_with_running_stats() {
    // [1, 2, 1, 2]: channel 0 = [1, 3], channel 1 = [2, -2]
    let mut v = vec![
        slot(
            Tensor::from_f32(vec![1, 2, 1, 2], &[1.0, 3.0, 2.0, -2.0]).unwrap(),
            0,
        ),
        slot(Tensor::from_f32(vec![2], &[2.0, 1.0]).unwrap(), 0),
        Value::Null,
        slot(Tensor::from_f32(vec![2], &[1.0, 0.5]).unwrap(), 0),
        slot(Tensor::from_f32(vec![2], &[4.0, 0.25]).unwrap(), 0),
        Value::Double(0.1),
        Value::Double(0.0),
        out(DType::F32, &[1, 2, 1, 2]),
        out(DType::F32, &[2]),
        out(DType::F32, &[2]),
    ];
    run_kernel(
        "aten::_native_batch_norm_legit_no_training.out",
        &mut v,
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    )
    .unwrap();
    // channel 0: (x - 1) / 2 * 2; channel 1: (x - 0.5) / 0.5 * 1
    assert_eq!(f32s(&tensor(&v, 7)), vec![0.0, 2.0, 3.0, -5.0]);
    assert_eq!(tensor(&v, 7).sizes, vec![1, 2, 1, 2]);
    assert_eq!(tensor(&v, 8).sizes, vec![0]);
    assert_eq!(tensor(&v, 9).sizes, vec![0]);
    // Running statistics of the wrong length are refused, naming the argument.
    v[3] = slot(Tensor::from_f32(vec![3], &[1.0, 0.5, 0.0]).unwrap(), 0);
    let e = run_kernel(
        "aten::_native_batch_norm_legit_no_training.out",
        &mut v,
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    )
    .unwrap_err();
    assert!(e.to_string().contains("running_mean"), "{e}");
}

/// Adaptive average pooling with overlapping bins (output sizes that do not divide the
/// input), on 4-D and 3-D inputs.
#[test]
fn adaptive_avg_pool2d_overlapping_bins() {
    let plane: Vec<f32> = (0..9).map(|i| i as f32).collect();
    let mut v = vec![
        slot(Tensor::from_f32(vec![1, 1, 3, 3], &plane).unwrap(), 0),
        // Items are value indices: [2, 2].
        Value::IntList(vec![3, 4]),
        out(DType::F32, &[1, 1, 2, 2]),
        Value::Int(2),
        Value::Int(2),
        slot(Tensor::from_f32(vec![1, 3, 3], &plane).unwrap(), 0),
        out(DType::F32, &[1, 2, 2]),
        Value::IntList(vec![3, 3, 3]),
    ];
    // Rows / columns {0, 1} and {1, 2} of [[0, 1, 2], [3, 4, 5], [6, 7, 8]].
    run_kernel("aten::_adaptive_avg_pool2d.out", &mut v, &[0, 1, 2]).unwrap();
    assert_eq!(f32s(&tensor(&v, 2)), vec![2.0, 3.0, 5.0, 6.0]);
    assert_eq!(tensor(&v, 2).sizes, vec![1, 1, 2, 2]);
    run_kernel("aten::_adaptive_avg_pool2d.out", &mut v, &[5, 1, 6]).unwrap();
    assert_eq!(f32s(&tensor(&v, 6)), vec![2.0, 3.0, 5.0, 6.0]);
    assert_eq!(tensor(&v, 6).sizes, vec![1, 2, 2]);
    let e = run_kernel("aten::_adaptive_avg_pool2d.out", &mut v, &[0, 7, 2]).unwrap_err();
    assert!(e.to_string().contains("two entries"), "{e}");
}

/// relu on the CPU (between the convolutions a partitioner left there): NaN stays NaN.
#[test]
fn relu_keeps_nan() {
    let mut v = vec![
        slot(
            Tensor::from_f32(vec![4], &[-1.5, 0.0, 2.0, f32::NAN]).unwrap(),
            0,
        ),
        out(DType::F32, &[4]),
    ];
    run_kernel("aten::relu.out", &mut v, &[0, 1]).unwrap();
    let o = f32s(&tensor(&v, 1));
    assert_eq!(&o[..3], &[0.0, 0.0, 2.0]);
    assert!(o[3].is_nan());
}

/// Results whose sizes come from the arguments are checked against the out tensor before
/// they are computed: sizes no out tensor holds fail at once with an error naming the op
/// and the bound, instead of first building a result of billions of elements (the fuzzer's
/// find: an `index.Tensor` whose index tensors broadcast to [65536, 65536] ran for minutes).
#[test]
fn results_larger_than_the_out_tensor_fail_before_they_are_computed() {
    let n = 1usize << 16;
    let column: Vec<i64> = vec![0; n];
    let kernel_err = |op: &str, v: &mut Vec<Value>, args: &[usize]| {
        let started = std::time::Instant::now();
        let err = run_kernel(op, v, args).unwrap_err();
        // Not a timing test: an unchecked [65536, 65536] f64 result would need 32 GiB.
        assert!(
            started.elapsed().as_secs() < 60,
            "{op} took {:?}",
            started.elapsed()
        );
        match &err {
            HostError::Kernel { op: named, message } => {
                assert_eq!(named, op);
                assert!(message.contains("exceed the tensor's bound"), "{message}");
            }
            other => panic!("{op}: {other}"),
        }
    };
    // x [4][idx0 [n, 1], idx1 [1, n]]: the indices broadcast to [n, n].
    let mut ix = vec![
        slot(
            Tensor::from_f32(vec![2, 2], &[1.0, 2.0, 3.0, 4.0]).unwrap(),
            0,
        ),
        slot(Tensor::from_i64(vec![n, 1], &column).unwrap(), 0),
        slot(Tensor::from_i64(vec![1, n], &column).unwrap(), 0),
        Value::OptionalTensorList(vec![Some(1), Some(2)]),
        out(DType::F32, &[n, 1]),
    ];
    kernel_err("aten::index.Tensor_out", &mut ix, &[0, 3, 4]);
    // [n, 1] + [1, n], and where / clamp with the same operands.
    let a: Vec<f32> = vec![1.0; n];
    let mut bin = vec![
        slot(Tensor::from_f32(vec![n, 1], &a).unwrap(), 0),
        slot(Tensor::from_f32(vec![1, n], &a).unwrap(), 0),
        Value::Double(1.0),
        out(DType::F32, &[n, 1]),
    ];
    kernel_err("aten::add.out", &mut bin, &[0, 1, 2, 3]);
    kernel_err("aten::mul.out", &mut bin, &[0, 1, 3]);
    kernel_err("aten::where.self_out", &mut bin, &[0, 1, 0, 3]);
    kernel_err("aten::clamp.Tensor_out", &mut bin, &[0, 1, 0, 3]);
    // expand_copy to [n, n] of a [1, n] input into a bound [2, n] out.
    let mut ex = vec![slot(Tensor::from_f32(vec![1, n], &a).unwrap(), 0)];
    ex.extend(boxed(1, &[n as i64, n as i64]));
    ex.extend([Value::Bool(false), out(DType::F32, &[2, n])]);
    kernel_err("aten::expand_copy.out", &mut ex, &[0, 3, 4, 5]);
    // adaptive_avg_pool2d to n x n bins over a 2 x 2 map.
    let mut pool = vec![slot(Tensor::from_f32(vec![1, 2, 2], &[1.0; 4]).unwrap(), 0)];
    pool.extend(boxed(1, &[n as i64, n as i64]));
    pool.push(out(DType::F32, &[1, 4, 4]));
    kernel_err("aten::_adaptive_avg_pool2d.out", &mut pool, &[0, 3, 4]);
    // The same calls with out tensors that hold the result still work (x[idx0, idx1] at a
    // small n; [2, 1] + [1, 2]).
    let mut small = vec![
        slot(
            Tensor::from_f32(vec![2, 2], &[1.0, 2.0, 3.0, 4.0]).unwrap(),
            0,
        ),
        slot(Tensor::from_i64(vec![2, 1], &[0, 1]).unwrap(), 0),
        slot(Tensor::from_i64(vec![1, 2], &[1, 0]).unwrap(), 0),
        Value::OptionalTensorList(vec![Some(1), Some(2)]),
        out(DType::F32, &[2, 2]),
    ];
    run_kernel("aten::index.Tensor_out", &mut small, &[0, 3, 4]).unwrap();
    assert_eq!(f32s(&tensor(&small, 4)), vec![2.0, 1.0, 4.0, 3.0]);
    // An empty result (x [0, 2, 2], a kept dim of 0) of the same [n, n] indices: [0, n, n],
    // stored without expanding the indices.
    let mut empty = vec![
        slot(Tensor::from_f32(vec![0, 2, 2], &[]).unwrap(), 0),
        slot(Tensor::from_i64(vec![n, 1], &column).unwrap(), 0),
        slot(Tensor::from_i64(vec![1, n], &column).unwrap(), 0),
        Value::OptionalTensorList(vec![None, Some(1), Some(2)]),
        out(DType::F32, &[0, n, n]),
    ];
    let started = std::time::Instant::now();
    run_kernel("aten::index.Tensor_out", &mut empty, &[0, 3, 4]).unwrap();
    assert!(started.elapsed().as_secs() < 60);
    assert_eq!(tensor(&empty, 4).sizes, vec![0, n, n]);
}
