//! Rejections of the indexing family (`ops/indexing.rs`): patterns outside the supported
//! subset must fail `init` with `Unsupported`, naming the op and the rule. The numeric
//! cases live in the registry-driven harness (`tests/src/cases/indexing.rs`).

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
