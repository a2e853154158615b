//! The interpreter on hand-built programs (no plugin needed: no VulkanBackend delegates).

use std::sync::Arc;

use etvk_format::program_ir::{
    BackendDelegate, Chain, DelegateData, EValue, ExecutionPlan, Instruction, Operator, PlanTensor,
    Program, TensorData,
};
use etvk_host::dtype::DType;
use etvk_host::{HostError, HostOptions, LoadedMethod, MethodValue, Tensor, ValueInfo};

fn tensor(scalar_type: i8, sizes: &[i64], dynamism: i8, data: TensorData) -> EValue {
    EValue::Tensor(PlanTensor {
        scalar_type,
        sizes: sizes.to_vec(),
        dim_order: (0..sizes.len() as u8).collect(),
        shape_dynamism: dynamism,
        data,
    })
}

const F32: i8 = 6;
const U8: i8 = 0;
const BOOL: i8 = 11;

fn op(name: &str, overload: &str) -> Operator {
    Operator {
        name: name.into(),
        overload: overload.into(),
    }
}

fn program(bytes: Vec<u8>, plan: ExecutionPlan) -> Arc<Program> {
    Arc::new(Program {
        bytes,
        extended_header: None,
        plans: vec![plan],
        inline_delegate_data: vec![],
        segments: vec![],
        named_data: vec![],
        external: vec![],
    })
}

fn plan(
    values: Vec<EValue>,
    inputs: Vec<usize>,
    outputs: Vec<usize>,
    operators: Vec<Operator>,
    instructions: Vec<Instruction>,
) -> ExecutionPlan {
    ExecutionPlan {
        name: "forward".into(),
        values,
        inputs: inputs.clone(),
        outputs: outputs.clone(),
        chains: vec![Chain {
            inputs,
            outputs,
            instructions,
        }],
        operators,
        delegates: vec![],
        non_const_buffer_sizes: vec![0],
    }
}

fn options() -> HostOptions {
    HostOptions {
        plugin_path: Some("/nonexistent/libetvk.so".into()),
        max_instructions: 1000,
        data_files: vec![],
    }
}

/// x [dyn <= 4, 2] -> mul.Scalar_out(x, 2.0) -> t -> expand_copy(t, [3, n, 2]) -> out, with n
/// coming from an Int value (boxed list item), the way SymInts flow in exported programs.
fn kernel_chain() -> Arc<Program> {
    let values = vec![
        tensor(F32, &[4, 2], 1, TensorData::None), // 0 x
        EValue::Double(2.0),                       // 1
        tensor(
            F32,
            &[4, 2],
            1,
            TensorData::Planned {
                memory_id: 1,
                offset: 0,
            },
        ), // 2 t
        EValue::Int(3),                            // 3
        EValue::Int(-1),                           // 4
        EValue::Int(-1),                           // 5
        EValue::IntList(vec![3, 4, 5]),            // 6 [3, -1, -1]
        EValue::Bool(false),                       // 7 implicit
        tensor(
            F32,
            &[3, 4, 2],
            1,
            TensorData::Planned {
                memory_id: 1,
                offset: 64,
            },
        ), // 8 out
    ];
    let instructions = vec![
        Instruction::KernelCall {
            op_index: 0,
            args: vec![0, 1, 2, 2],
        },
        Instruction::KernelCall {
            op_index: 1,
            args: vec![2, 6, 7, 8, 8],
        },
    ];
    program(
        vec![],
        plan(
            values,
            vec![0],
            vec![8],
            vec![
                op("aten::mul", "Scalar_out"),
                op("aten::expand_copy", "out"),
            ],
            instructions,
        ),
    )
}

#[test]
fn kernel_chain_runs_with_dynamic_sizes() {
    let mut m = LoadedMethod::load(kernel_chain(), "forward", &options()).unwrap();
    assert_eq!(
        m.inputs(),
        vec![ValueInfo::Tensor {
            dtype: DType::F32,
            max_sizes: vec![4, 2],
            dynamic: true
        }]
    );
    let out = m
        .execute(&[Tensor::from_f32(vec![2, 2], &[1.0, -1.0, 0.5, 3.0]).unwrap()])
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].sizes, vec![3, 2, 2]);
    assert_eq!(
        out[0].to_f32_vec().unwrap(),
        [2.0, -2.0, 1.0, 6.0].repeat(3)
    );
    // A second call with a larger (still in-bound) input on the same loaded method.
    let out = m
        .execute(&[Tensor::from_f32(vec![3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap()])
        .unwrap();
    assert_eq!(out[0].sizes, vec![3, 3, 2]);
    assert_eq!(
        out[0].to_f32_vec().unwrap(),
        [2.0, 4.0, 6.0, 8.0, 10.0, 12.0].repeat(3)
    );
}

#[test]
fn inputs_are_checked_against_the_method() {
    let mut m = LoadedMethod::load(kernel_chain(), "forward", &options()).unwrap();
    let too_big = Tensor::from_f32(vec![5, 2], &[0.0; 10]).unwrap();
    let err = m.execute(&[too_big]).unwrap_err().to_string();
    assert!(
        err.contains(
            "input 0 (value 0): sizes [5, 2], the method expects the rank and at most the elements of [4, 2]"
        ),
        "{err}"
    );
    // As ExecuTorch resizes a bound-dynamic input: one dim may pass its bound while the
    // elements fit (8 of 8), and every later tensor is checked against its own buffer.
    let wide: Vec<f32> = (0..8).map(|i| i as f32 - 3.0).collect();
    let out = m
        .execute(&[Tensor::from_f32(vec![1, 8], &wide).unwrap()])
        .unwrap();
    assert_eq!(out[0].sizes, vec![3, 1, 8]);
    let doubled: Vec<f32> = wide.iter().map(|v| 2.0 * v).collect();
    assert_eq!(out[0].to_f32_vec().unwrap(), doubled.repeat(3));
    let wrong_rank = Tensor::from_f32(vec![8], &[0.0; 8]).unwrap();
    assert!(matches!(
        m.execute(&[wrong_rank]),
        Err(HostError::InvalidInput(_))
    ));
    let wrong_dtype = Tensor::from_i64(vec![1, 2], &[1, 2]).unwrap();
    let err = m.execute(&[wrong_dtype]).unwrap_err().to_string();
    assert!(
        err.contains("dtype int64, the method expects float32"),
        "{err}"
    );
    let err = m.execute(&[]).unwrap_err().to_string();
    assert!(err.contains("takes 1 inputs, got 0"), "{err}");
    let err = m
        .execute_values(&[MethodValue::Int(3)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("expects a Tensor, got Int"), "{err}");
    let err = LoadedMethod::load(kernel_chain(), "backward", &options())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no method \"backward\"") && err.contains("\"forward\""),
        "{err}"
    );
}

/// x *= 2 until a u8 counter (k *= 2 from a mutable initial 1) wraps to 0: a loop of
/// JumpFalseCalls whose trip count depends on state that persists across executes.
fn doubling_loop() -> Arc<Program> {
    let bytes = vec![0xAA, 1, 0xBB]; // k's initial value lives at byte 1
    let values = vec![
        tensor(F32, &[1], 0, TensorData::None), // 0 x (input)
        EValue::Double(2.0),                    // 1
        tensor(U8, &[1], 0, TensorData::MutableInit(1..2)), // 2 k
        EValue::Int(2),                         // 3
        tensor(BOOL, &[], 0, TensorData::None), // 4 c = any(k)
        EValue::Bool(false),                    // 5 for an unconditional jump
        tensor(F32, &[1], 0, TensorData::None), // 6 result
    ];
    let instructions = vec![
        Instruction::KernelCall {
            op_index: 0,
            args: vec![0, 1, 0, 0],
        },
        Instruction::KernelCall {
            op_index: 0,
            args: vec![2, 3, 2, 2],
        },
        Instruction::KernelCall {
            op_index: 1,
            args: vec![2, 4, 4],
        },
        Instruction::JumpFalseCall {
            cond: 4,
            destination: 5,
        },
        Instruction::JumpFalseCall {
            cond: 5,
            destination: 0,
        },
        Instruction::MoveCall { from: 0, to: 6 },
        Instruction::FreeCall { value: 0 },
    ];
    program(
        bytes,
        plan(
            values,
            vec![0],
            vec![6],
            vec![op("aten::mul", "Scalar_out"), op("aten::any", "all_out")],
            instructions,
        ),
    )
}

#[test]
fn jump_false_loops_and_state_persists() {
    let mut m = LoadedMethod::load(doubling_loop(), "forward", &options()).unwrap();
    // k: 1 -> 2 -> ... -> 128 -> 0 (u8 wrap): 8 iterations, x * 2^8.
    let out = m
        .execute(&[Tensor::from_f32(vec![1], &[1.5]).unwrap()])
        .unwrap();
    assert_eq!(out[0].to_f32_vec().unwrap(), vec![384.0]);
    // k stays 0 in the loaded method: one iteration only.
    let out = m
        .execute(&[Tensor::from_f32(vec![1], &[1.5]).unwrap()])
        .unwrap();
    assert_eq!(out[0].to_f32_vec().unwrap(), vec![3.0]);
    // A fresh load starts from the initial data again.
    let mut fresh = LoadedMethod::load(doubling_loop(), "forward", &options()).unwrap();
    let out = fresh
        .execute(&[Tensor::from_f32(vec![1], &[-1.0]).unwrap()])
        .unwrap();
    assert_eq!(out[0].to_f32_vec().unwrap(), vec![-256.0]);
}

#[test]
fn an_endless_loop_is_an_error() {
    let values = vec![tensor(F32, &[1], 0, TensorData::None), EValue::Bool(false)];
    let instructions = vec![
        Instruction::MoveCall { from: 0, to: 0 },
        Instruction::JumpFalseCall {
            cond: 1,
            destination: 0,
        },
    ];
    let p = program(vec![], plan(values, vec![0], vec![0], vec![], instructions));
    let mut m = LoadedMethod::load(p, "forward", &options()).unwrap();
    let err = m
        .execute(&[Tensor::from_f32(vec![1], &[0.0]).unwrap()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("more than 1000 instructions"), "{err}");
}

#[test]
fn move_call_and_scalar_outputs() {
    let values = vec![
        EValue::Int(0),
        EValue::Int(0),
        tensor(F32, &[2], 0, TensorData::Constant(4..12)),
    ];
    let mut bytes = vec![0u8; 4];
    bytes.extend_from_slice(&0.5f32.to_le_bytes());
    bytes.extend_from_slice(&(-4.0f32).to_le_bytes());
    let instructions = vec![Instruction::MoveCall { from: 0, to: 1 }];
    let p = program(
        bytes,
        plan(values, vec![0], vec![1, 2], vec![], instructions),
    );
    let mut m = LoadedMethod::load(p, "forward", &options()).unwrap();
    let out = m.execute_values(&[MethodValue::Int(42)]).unwrap();
    assert_eq!(out[0], MethodValue::Int(42));
    assert_eq!(
        out[1],
        MethodValue::Tensor(Tensor::from_f32(vec![2], &[0.5, -4.0]).unwrap())
    );
    let err = m.execute(&[]).unwrap_err().to_string();
    assert!(err.contains("takes 1 inputs"), "{err}");
}

#[test]
fn unsupported_operators_and_backends_fail_at_load() {
    let values = vec![
        tensor(F32, &[1], 0, TensorData::None),
        tensor(F32, &[1], 0, TensorData::None),
    ];
    let instructions = vec![Instruction::KernelCall {
        op_index: 0,
        args: vec![0, 0, 1],
    }];
    let p = program(
        vec![],
        plan(
            values.clone(),
            vec![0],
            vec![1],
            vec![op("aten::upsample_bicubic2d", "vec_out")],
            instructions,
        ),
    );
    let err = LoadedMethod::load(p, "forward", &options()).unwrap_err();
    assert!(
        matches!(&err, HostError::Unsupported(m) if m.contains("aten::upsample_bicubic2d.vec_out")),
        "{err}"
    );

    let mut pl = plan(
        values,
        vec![0],
        vec![1],
        vec![],
        vec![Instruction::DelegateCall {
            delegate_index: 0,
            args: vec![0, 1],
        }],
    );
    pl.delegates.push(BackendDelegate {
        id: "XnnpackBackend".into(),
        processed: DelegateData::Inline(0),
        compile_specs: vec![],
    });
    let err = LoadedMethod::load(program(vec![], pl), "forward", &options())
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"XnnpackBackend\""), "{err}");
}

#[test]
fn a_vulkan_delegate_without_a_plugin_names_the_paths_tried() {
    let values = vec![
        tensor(F32, &[1], 0, TensorData::None),
        tensor(F32, &[1], 0, TensorData::None),
    ];
    let mut pl = plan(
        values,
        vec![0],
        vec![1],
        vec![],
        vec![Instruction::DelegateCall {
            delegate_index: 0,
            args: vec![0, 1],
        }],
    );
    pl.delegates.push(BackendDelegate {
        id: "VulkanBackend".into(),
        processed: DelegateData::Inline(0),
        compile_specs: vec![],
    });
    let err = LoadedMethod::load(program(vec![], pl), "forward", &options())
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nonexistent/libetvk.so"), "{err}");
}

#[test]
fn bad_programs_are_errors_not_panics() {
    // Constant range outside the file.
    let values = vec![tensor(F32, &[4], 0, TensorData::Constant(0..16))];
    let p = program(vec![0; 8], plan(values, vec![], vec![0], vec![], vec![]));
    let err = LoadedMethod::load(p, "forward", &options())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("value 0") && err.contains("outside the file"),
        "{err}"
    );
    // Unsupported scalar type (bfloat16 = 15).
    let values = vec![tensor(15, &[4], 0, TensorData::None)];
    let p = program(vec![], plan(values, vec![], vec![0], vec![], vec![]));
    let err = LoadedMethod::load(p, "forward", &options())
        .unwrap_err()
        .to_string();
    assert!(err.contains("scalar type 15"), "{err}");
    // A MoveCall to a value out of range fails at execute with the instruction named.
    let values = vec![EValue::Int(1)];
    let p = program(
        vec![],
        plan(
            values,
            vec![],
            vec![0],
            vec![],
            vec![Instruction::MoveCall { from: 0, to: 7 }],
        ),
    );
    let mut m = LoadedMethod::load(p, "forward", &options()).unwrap();
    let err = m.execute_values(&[]).unwrap_err().to_string();
    assert!(
        err.contains("instruction 0") && err.contains("value 7 out of range"),
        "{err}"
    );
}

#[test]
fn profiling_records_every_executed_instruction() {
    let mut m = LoadedMethod::load(doubling_loop(), "forward", &options()).unwrap();
    m.execute(&[Tensor::from_f32(vec![1], &[1.0]).unwrap()])
        .unwrap();
    assert!(m.last_profile().is_empty());
    m.set_profiling(true).expect("profiling on");
    let mut fresh = LoadedMethod::load(doubling_loop(), "forward", &options()).unwrap();
    fresh.set_profiling(true).expect("profiling on");
    fresh
        .execute(&[Tensor::from_f32(vec![1], &[1.0]).unwrap()])
        .unwrap();
    // 7 full iterations (pcs 0-4), the last one exits at pc 3, then pcs 5 and 6.
    let p = fresh.last_profile();
    assert_eq!(p.len(), 7 * 5 + 4 + 2);
    assert_eq!(
        (p[0].index, p[0].what.as_str()),
        (0, "kernel aten::mul.Scalar_out")
    );
    assert_eq!(
        (p[2].index, p[2].what.as_str()),
        (2, "kernel aten::any.all_out")
    );
    assert_eq!((p[4].index, p[4].what.as_str()), (4, "jump_false"));
    assert_eq!((p[40].index, p[40].what.as_str()), (6, "free"));
    // The loaded method whose counter already wrapped runs one iteration: 4 + 2.
    m.execute(&[Tensor::from_f32(vec![1], &[1.0]).unwrap()])
        .unwrap();
    assert_eq!(m.last_profile().len(), 6);
}
