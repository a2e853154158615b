//! Rejections of the indexing family (`ops/indexing.rs`): patterns outside the supported
//! subset must fail `init` with `Unsupported`, naming the op and the rule, and indices out
//! of range fail the execute (PyTorch raises there). The numeric cases live in the
//! registry-driven harness (`tests/src/cases/indexing.rs`).

mod common;

use common::*;
use etvk_format::ir::*;
use etvk_runtime::*;

fn init_err(
    values: Vec<Value>,
    chain: Vec<OperatorCall>,
    inputs: &[usize],
    outputs: &[usize],
) -> Error {
    let ir = delegate_ir(graph(values, chain, inputs, outputs, vec![]));
    Delegate::from_ir(&backend(), &ir, &[], &MapData::default())
        .err()
        .expect("init must fail")
}

#[test]
fn index_with_two_index_tensors_is_unsupported() {
    let err = init_err(
        vec![
            tensor(DataType::Float32, &[4, 5], None, None),
            tensor(DataType::Int32, &[2], None, None),
            tensor(DataType::Int32, &[2], None, None),
            Value::ValueList(vec![1, 2]),
            tensor(DataType::Float32, &[2], None, None),
        ],
        vec![op(0, "aten.index.Tensor", &[0, 3, 4])],
        &[0, 1, 2],
        &[4],
    );
    assert_eq!(err.kind, ErrorKind::Unsupported, "{}", err.message);
    assert!(err.message.contains("aten.index.Tensor"), "{}", err.message);
    assert!(
        err.message.contains("more than one index tensor"),
        "{}",
        err.message
    );
}

#[test]
fn select_as_symint_of_a_computed_tensor_is_unsupported() {
    // x is produced on the GPU (clone of an input), so its value would need a readback.
    let err = init_err(
        vec![
            tensor(DataType::Int32, &[1], None, None),
            Value::Null,
            tensor(DataType::Int32, &[1], None, None),
            Value::Int(0),
            Value::SymInt(0),
        ],
        vec![
            op(0, "aten.clone.default", &[0, 1, 2]),
            op(1, "et_vk.select_as_symint.default", &[2, 3, 3, 4]),
        ],
        &[0],
        &[4],
    );
    assert_eq!(err.kind, ErrorKind::Unsupported, "{}", err.message);
    assert!(
        err.message.contains("et_vk.select_as_symint.default"),
        "{}",
        err.message
    );
    assert!(err.message.contains("not a graph input"), "{}", err.message);
}

fn host_i64(sizes: &[usize], data: &[i64]) -> DelegateArg {
    DelegateArg::Tensor(HostTensor {
        dtype: HostDType::Long,
        sizes: sizes.to_vec(),
        data: data.iter().flat_map(|x| x.to_le_bytes()).collect(),
    })
}

/// `op` over x [4, 3] (an input) and an int32 index input of `index_sizes`, output
/// `out_sizes`; `extra` are the op's args between x / index and out (value ids from 3).
fn index_delegate(
    name: &str,
    args: &[usize],
    extra: Vec<Value>,
    index_sizes: &[usize],
    out_sizes: &[usize],
) -> Delegate {
    let mut values = vec![
        tensor(DataType::Float32, &[4, 3], None, None),
        tensor(DataType::Int32, index_sizes, None, None),
        tensor(DataType::Float32, out_sizes, None, None),
    ];
    values.extend(extra);
    let ir = delegate_ir(graph(
        values,
        vec![op(7, name, args)],
        &[0, 1],
        &[2],
        vec![],
    ));
    Delegate::from_ir(&backend(), &ir, &[], &MapData::default()).unwrap()
}

/// An indexing op over x [4, 3] whose last index is `bad`, out of range for `limit`.
struct BadIndex {
    name: &'static str,
    args: Vec<usize>,
    extra: Vec<Value>,
    index_sizes: Vec<usize>,
    out_sizes: Vec<usize>,
    bad: i64,
    limit: usize,
}

#[test]
fn out_of_range_indices_fail_the_execute_and_the_next_one_runs() {
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let case = |name, args: &[usize], extra, isz: &[usize], osz: &[usize], bad, limit| BadIndex {
        name,
        args: args.to_vec(),
        extra,
        index_sizes: isz.to_vec(),
        out_sizes: osz.to_vec(),
        bad,
        limit,
    };
    let cases = [
        case(
            "aten.embedding.default",
            &[0, 1, 3, 4, 4, 2],
            vec![Value::Int(-1), Value::Bool(false)],
            &[2],
            &[2, 3],
            4,
            4,
        ),
        case(
            "aten.index_select.default",
            &[0, 3, 1, 2],
            vec![Value::Int(0)],
            &[2],
            &[2, 3],
            -1,
            4,
        ),
        case(
            "aten.index.Tensor",
            &[0, 3, 2],
            vec![Value::ValueList(vec![1])],
            &[2],
            &[2, 3],
            -5,
            4,
        ),
        case(
            "aten.gather.default",
            &[0, 3, 1, 4, 2],
            vec![Value::Int(1), Value::Bool(false)],
            &[4, 3],
            &[4, 3],
            3,
            3,
        ),
    ];
    for BadIndex {
        name,
        args,
        extra,
        index_sizes: isz,
        out_sizes: osz,
        bad,
        limit,
    } in cases
    {
        let mut d = index_delegate(name, &args, extra, &isz, &osz);
        let n: usize = isz.iter().product();
        // Valid indices: 2, then 0 (for gather: along dim 1 within [0, 3)).
        let good: Vec<i64> = (0..n).map(|i| if i % 2 == 0 { 2 } else { 0 }).collect();
        let mut bad_idx = good.clone();
        bad_idx[n - 1] = bad;
        let mut args = vec![host_f32(&[4, 3], &x), host_i64(&isz, &bad_idx), empty_out()];
        let err = d.execute(&mut args).unwrap_err();
        assert_eq!(
            err.kind,
            ErrorKind::InvalidArgument,
            "{name}: {}",
            err.message
        );
        let want =
            format!("op {name} (node 7): index {bad} is out of range for a dim of size {limit}");
        assert!(err.message.contains(&want), "{name}: {}", err.message);

        let mut args = vec![host_f32(&[4, 3], &x), host_i64(&isz, &good), empty_out()];
        d.execute(&mut args).unwrap();
        let (sizes, got) = out_f32(&args[2]);
        assert_eq!(sizes, osz, "{name}");
        let want: Vec<f32> = if name == "aten.gather.default" {
            // out[r][c] = x[r][index[r][c]]
            (0..n).map(|i| x[(i / 3) * 3 + good[i] as usize]).collect()
        } else {
            // Rows 2 and 0 of x.
            good.iter()
                .flat_map(|&r| x[r as usize * 3..r as usize * 3 + 3].to_vec())
                .collect()
        };
        assert_eq!(got, want, "{name}");
    }
}
