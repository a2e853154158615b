//! Writer tests: parse -> write -> parse is the identity on every fixture's VkGraph; the
//! writer's bytes decode with `flatc` to ExecuTorch's own decoding; builders round trip.
use etvk_format::ir::{ConstantSource, DataType, Value};
use etvk_format::program::parse_program;
use etvk_format::program_ir::{
    BackendDelegate, Chain, DelegateData, EValue, ExecutionPlan, Instruction, Operator, PlanTensor,
    TensorData,
};
use etvk_format::program_writer::{single_delegate_program, ProgramBuilder};
use etvk_format::vkgraph::{parse_delegate, parse_vkgraph};
use etvk_format::writer::{named_key, write_delegate, write_vkgraph, GraphBuilder};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

fn all_blobs() -> Vec<(String, Vec<u8>, PathBuf)> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for d in dirs {
        for i in 0.. {
            let (b, j) = if i == 0 {
                ("delegate.bin".to_owned(), "vkgraph.flatc.json".to_owned())
            } else {
                (
                    format!("delegate.{i}.bin"),
                    format!("vkgraph.{i}.flatc.json"),
                )
            };
            let Ok(bytes) = std::fs::read(d.join(&b)) else {
                break;
            };
            out.push((
                format!("{}/{b}", d.file_name().unwrap().to_string_lossy()),
                bytes,
                d.join(j),
            ));
        }
    }
    out
}

#[test]
fn vkgraph_round_trip_on_every_fixture() {
    for (name, blob, _) in all_blobs() {
        let d = parse_delegate(&blob).unwrap();
        let fb = write_vkgraph(&d.graph);
        assert_eq!(&fb[4..8], b"VK00");
        let g2 = parse_vkgraph(&fb).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(g2, d.graph, "{name}");
        let blob2 = write_delegate(&d.graph, &d.constant_region);
        let d2 = parse_delegate(&blob2).unwrap();
        assert_eq!(d2.graph, d.graph, "{name}");
        assert_eq!(d2.constant_region, d.constant_region, "{name}");
        // Same layout as the exporter: the header fields agree except flatbuffer size.
        assert_eq!(d2.header.flatbuffer_offset, 32);
        assert_eq!(
            d2.header.bytes_offset as usize,
            32 + fb.len().div_ceil(16) * 16
        );
        // The exporter omits defaults; so do we: within 10% of its size.
        let f = d.header.flatbuffer_size as f64;
        assert!((fb.len() as f64) < f * 1.1, "{name}: {} vs {f}", fb.len());
    }
}

/// An independent decoder: flatc (the reference implementation) turns our bytes into the
/// same JSON it produces for the exporter's bytes. Skipped when flatc is not installed.
#[test]
fn writer_output_decodes_with_flatc_like_the_exporter() {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/vk_graph.fbs");
    let tmp = std::env::temp_dir().join(format!("etvk-format-flatc-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    if std::process::Command::new("flatc")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("flatc not found: skipping");
        return;
    }
    for (name, blob, json) in all_blobs().into_iter().take(6) {
        let d = parse_delegate(&blob).unwrap();
        let bin = tmp.join("g.bin");
        std::fs::write(&bin, write_vkgraph(&d.graph)).unwrap();
        let st = std::process::Command::new("flatc")
            .args([
                "--json",
                "--raw-binary",
                "--defaults-json",
                "--strict-json",
                "-o",
            ])
            .arg(&tmp)
            .arg(&schema)
            .arg("--")
            .arg(&bin)
            .status()
            .unwrap();
        assert!(st.success(), "{name}");
        let ours: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(tmp.join("g.json")).unwrap()).unwrap();
        let theirs: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(ours, theirs, "{name}");
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn graph_builder_round_trip_with_inline_and_named_constants() {
    let mut b = GraphBuilder::new();
    let x = b.add_tensor(DataType::Float32, &[2, 3]);
    let wbytes: Vec<u8> = (0..12u8).collect();
    let w = b.add_constant_inline(DataType::Float32, &[3], &wbytes);
    let w2 = b.add_constant_inline(DataType::Int8, &[5], &[1, 2, 3, 4, 5]);
    let key = named_key(b"abc");
    let n = b.add_constant_named(DataType::Float16, &[4], &key);
    let i = b.add_int(-7);
    let dbl = b.add_double(0.5);
    let bo = b.add_bool(true);
    let nul = b.add_null();
    let il = b.add_int_list(&[1, -2, 3]);
    let dl = b.add_double_list(&[1.5]);
    let bl = b.add_bool_list(&[true, false]);
    let s = b.add_string("hi");
    let si = b.add_symint(3);
    let y = b.add_tensor(DataType::Float32, &[2, 3]);
    let vl = b.add_value_list(&[x, y]);
    b.set_mem_obj(y, Some(2));
    b.set_staging_dtype(x, DataType::Float16);
    b.set_storage(x, 0, 2);
    b.add_op("aten.add.Tensor", &[x, w, i, y]);
    b.add_op(
        "test.everything",
        &[w2, n, dbl, bo, nul, il, dl, bl, s, si, vl],
    );
    b.mark_input(x);
    b.mark_input(si);
    b.mark_output(y);
    let (g, inline) = b.finish();
    assert_eq!(inline.len(), 32, "two constants, each padded to 16");
    assert_eq!(
        g.constants[1],
        ConstantSource::Inline {
            offset: 16,
            length: 5
        }
    );
    let blob = write_delegate(&g, &inline);
    assert_eq!(blob.len() % 16, 0);
    let d = parse_delegate(&blob).unwrap();
    assert_eq!(d.graph, g);
    assert_eq!(&d.constant_region[..12], &wbytes[..]);
    assert_eq!(d.header.bytes_size, 32);
    match &d.graph.values[x] {
        Value::Tensor(t) => {
            assert_eq!(
                (
                    t.staging_dtype,
                    t.storage_type,
                    t.memory_layout,
                    t.mem_obj_id
                ),
                (DataType::Float16, 0, 2, None)
            )
        }
        v => panic!("{v:?}"),
    }
    assert_eq!(
        key,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

fn tensor(st: i8, sizes: &[i64], data: TensorData) -> PlanTensor {
    PlanTensor {
        scalar_type: st,
        sizes: sizes.to_vec(),
        dim_order: (0..sizes.len() as u8).collect(),
        shape_dynamism: 0,
        data,
    }
}

#[test]
fn program_builder_round_trip_all_instruction_kinds() {
    let mut b = ProgramBuilder::new();
    let mut gb = GraphBuilder::new();
    let x = gb.add_tensor(DataType::Float32, &[4]);
    let y = gb.add_tensor(DataType::Float32, &[4]);
    gb.add_op("aten.relu.default", &[x, y]);
    gb.mark_input(x);
    gb.mark_output(y);
    let blob = gb.finish_delegate();
    let seg = b.add_segment(blob.clone());
    let inl = b.add_inline_delegate_data(blob.clone());
    let nd = b.add_named_data("weights", vec![7u8; 300]);
    let cdata: Vec<u8> = (0..24u8).collect();
    let ctok = b.add_constant_data(&cdata);
    let ctok2 = b.add_constant_data(&[9u8; 4]);
    let mtok = b.add_mutable_data(&[5u8; 8]);
    let values = vec![
        EValue::Tensor(tensor(6, &[4], TensorData::None)),
        EValue::Tensor(tensor(
            6,
            &[4],
            TensorData::Planned {
                memory_id: 1,
                offset: (3u64 << 32) | 64,
            },
        )),
        EValue::Tensor(tensor(6, &[2, 3], ctok)),
        EValue::Tensor(tensor(3, &[1], ctok2)),
        EValue::Tensor(tensor(4, &[1], mtok)),
        EValue::Tensor(tensor(6, &[1], TensorData::External("model.w".into()))),
        EValue::Int(3),
        EValue::Bool(false),
        EValue::Double(-1.25),
        EValue::String("s".into()),
        EValue::IntList(vec![1, 2]),
        EValue::DoubleList(vec![0.5]),
        EValue::BoolList(vec![true]),
        EValue::TensorList(vec![0, 1]),
        EValue::OptionalTensorList(vec![Some(0), None]),
        EValue::Null,
    ];
    let instructions = vec![
        Instruction::DelegateCall {
            delegate_index: 0,
            args: vec![0, 1],
        },
        Instruction::KernelCall {
            op_index: 0,
            args: vec![1, 6, 0],
        },
        Instruction::MoveCall { from: 1, to: 0 },
        Instruction::JumpFalseCall {
            cond: 7,
            destination: 0,
        },
        Instruction::FreeCall { value: 1 },
        Instruction::DelegateCall {
            delegate_index: 1,
            args: vec![0, 1],
        },
    ];
    let plan = ExecutionPlan {
        name: "forward".into(),
        values,
        inputs: vec![0],
        outputs: vec![1],
        chains: vec![Chain {
            inputs: vec![0],
            outputs: vec![1],
            instructions,
        }],
        operators: vec![Operator {
            name: "aten::expand_copy".into(),
            overload: "out".into(),
        }],
        delegates: vec![
            BackendDelegate {
                id: "VulkanBackend".into(),
                processed: DelegateData::Segment(seg),
                compile_specs: vec![("require_dynamic_shapes".into(), vec![1])],
            },
            BackendDelegate {
                id: "VulkanBackend".into(),
                processed: DelegateData::Inline(inl),
                compile_specs: vec![],
            },
        ],
        non_const_buffer_sizes: vec![0, 128],
    };
    b.add_plan(plan.clone());
    let mut second = plan.clone();
    second.name = "other".into();
    second.values.truncate(2);
    second.values.push(EValue::Int(1));
    second.values.push(EValue::Int(1));
    second.values.push(EValue::Int(1));
    second.values.push(EValue::Int(1));
    second.values.push(EValue::Int(1));
    second.values.push(EValue::Bool(true));
    b.add_plan(second.clone());
    let bytes = b.finish().unwrap();
    let p = parse_program(bytes).unwrap();

    let eh = p.extended_header.unwrap();
    assert_eq!(eh.segment_base_offset % 128, 0);
    assert_eq!(
        eh.segment_base_offset + eh.segment_data_size,
        p.bytes.len() as u64
    );
    for r in &p.segments {
        assert_eq!((r.start as u64 - eh.segment_base_offset) % 128, 0);
    }
    assert_eq!(p.named_data("weights").unwrap(), &[7u8; 300][..]);
    assert_eq!(p.named_data.len(), 1);
    assert_eq!(p.segments[nd].len(), 300);
    assert_eq!(p.plans.len(), 2);
    let pp = p.plan("forward").unwrap();
    assert_eq!(
        parse_delegate(p.delegate_blob(&pp.delegates[0]))
            .unwrap()
            .graph
            .chain[0]
            .name,
        "aten.relu.default"
    );
    assert_eq!(p.delegate_blob(&pp.delegates[1]), &blob[..]);
    // Constant and mutable data come back as file ranges holding the bytes.
    let data_of = |i: usize| match &pp.values[i] {
        EValue::Tensor(t) => t.data.clone(),
        v => panic!("{v:?}"),
    };
    match data_of(2) {
        TensorData::Constant(r) => assert_eq!(&p.bytes[r], &cdata[..]),
        d => panic!("{d:?}"),
    }
    match data_of(3) {
        TensorData::Constant(r) => assert_eq!(&p.bytes[r], &[9u8; 4][..]),
        d => panic!("{d:?}"),
    }
    match data_of(4) {
        TensorData::MutableInit(r) => assert_eq!(&p.bytes[r], &[5u8; 8][..]),
        d => panic!("{d:?}"),
    }
    // Everything else is equal to what was written.
    let mut want = plan.clone();
    for i in 2..5 {
        if let (EValue::Tensor(w), EValue::Tensor(g)) = (&mut want.values[i], &pp.values[i]) {
            w.data = g.data.clone();
        }
    }
    assert_eq!(*pp, want);
    assert_eq!(*p.plan("other").unwrap(), second);
}

#[test]
fn single_delegate_program_runs_through_the_parser() {
    let mut gb = GraphBuilder::new();
    let key = named_key(&[1, 2, 3, 4]);
    let w = gb.add_constant_named(DataType::Float32, &[1], &key);
    let x = gb.add_tensor(DataType::Float32, &[1]);
    let y = gb.add_tensor(DataType::Float32, &[1]);
    gb.add_op("aten.add.Tensor", &[x, w, y]);
    gb.mark_input(x);
    gb.mark_output(y);
    let blob = gb.finish_delegate();
    let t = |d| tensor(6, &[1], d);
    let bytes = single_delegate_program(
        "forward",
        blob.clone(),
        vec![],
        vec![(key.clone(), vec![1, 2, 3, 4])],
        vec![t(TensorData::None)],
        vec![t(TensorData::None)],
    )
    .unwrap();
    let p = parse_program(bytes).unwrap();
    let plan = p.plan("forward").unwrap();
    assert_eq!(p.delegate_blob(&plan.delegates[0]), &blob[..]);
    assert_eq!(p.named_data(&key).unwrap(), &[1, 2, 3, 4]);
    assert_eq!(
        plan.chains[0].instructions,
        vec![Instruction::DelegateCall {
            delegate_index: 0,
            args: vec![0, 1]
        }]
    );
}

#[test]
fn writer_rejects_bad_tokens() {
    let mut b = ProgramBuilder::new();
    b.add_plan(ExecutionPlan {
        name: "f".into(),
        values: vec![EValue::Tensor(tensor(6, &[1], TensorData::Constant(0..4)))],
        inputs: vec![],
        outputs: vec![],
        chains: vec![],
        operators: vec![],
        delegates: vec![],
        non_const_buffer_sizes: vec![],
    });
    let e = b.finish().unwrap_err().to_string();
    assert!(e.contains("values[0]") && e.contains("token"), "{e}");
}

#[test]
fn graph_builder_names_values_for_the_host() {
    let mut g = etvk_format::writer::GraphBuilder::new();
    let a = g.add_tensor(etvk_format::ir::DataType::Float32, &[2, 3]);
    let b = g.add_tensor(etvk_format::ir::DataType::Float32, &[3]);
    assert_eq!(g.set_name(a, "lora1_A"), a);
    g.set_name(b, "lora1_A.adam_m");
    assert_eq!(g.id_of("lora1_A"), Some(a));
    assert_eq!(g.id_of("lora1_A.adam_m"), Some(b));
    assert_eq!(g.id_of("missing"), None);
    g.mark_input(a);
    g.mark_output(b);
    let (blob, names) = g.finish_delegate_named();
    assert_eq!(names.len(), 2);
    assert_eq!(names["lora1_A"], a);
    // Names stay on the host side: the blob parses as a plain VkGraph.
    let parsed = etvk_format::vkgraph::parse_delegate(&blob).unwrap();
    assert_eq!(parsed.graph.values.len(), 2);
}
