//! Every fixture's model.pte parses; its layout matches `summary.json`; its delegate blobs
//! are the `delegate*.bin` files and parse.
use etvk_format::program::parse_program;
use etvk_format::program_ir::{DelegateData, Instruction};
use etvk_format::vkgraph::parse_delegate;
use serde_json::Value as J;
use std::path::{Path, PathBuf};

fn fixture_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        // The shared set's fixtures carry summary.json (an independent decode of the program);
        // the ones this project exported (README) do not.
        .filter(|p| p.join("model.pte").exists() && p.join("summary.json").exists())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_program_parses_and_matches_summary() {
    let dirs = fixture_dirs();
    assert!(dirs.len() >= 13, "found {} fixtures", dirs.len());
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(dir.join("model.pte")).unwrap();
        let len = bytes.len();
        let p = parse_program(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let s: J =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap())
                .unwrap();
        let lay = &s["pte_layout"];
        assert_eq!(len as u64, s["pte_bytes"].as_u64().unwrap(), "{name}");

        let eh = p.extended_header.expect("fixtures have an extended header");
        let jeh = &lay["extended_header"];
        assert_eq!(
            eh.program_size,
            jeh["program_size"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            eh.segment_base_offset,
            jeh["segment_base_offset"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            eh.segment_data_size,
            jeh["segment_data_size"].as_u64().unwrap(),
            "{name}"
        );

        let segs = lay["segments"].as_array().unwrap();
        assert_eq!(p.segments.len(), segs.len(), "{name}");
        for (r, js) in p.segments.iter().zip(segs) {
            let start = eh.segment_base_offset + js["offset"].as_u64().unwrap();
            assert_eq!(r.start as u64, start, "{name}");
            assert_eq!(r.len() as u64, js["size"].as_u64().unwrap(), "{name}");
        }

        // Named data: keys in order, and the bytes hash to their key (sha256).
        let jnd = s["named_data"].as_array().unwrap();
        assert_eq!(p.named_data.len(), jnd.len(), "{name}");
        for ((k, r), jn) in p.named_data.iter().zip(jnd) {
            assert_eq!(k, jn["key"].as_str().unwrap(), "{name}");
            assert_eq!(r.len() as u64, jn["bytes"].as_u64().unwrap(), "{name}");
            let data = p.named_data(k).unwrap();
            assert_eq!(
                etvk_format::writer::named_key(data),
                jn["sha256"].as_str().unwrap(),
                "{name} {k}"
            );
        }

        let plan = p
            .plan(s["method"].as_str().unwrap())
            .unwrap_or_else(|| panic!("{name}: no method"));
        let jp = &lay["plan"];
        let ids = |v: &J| -> Vec<usize> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect()
        };
        assert_eq!(plan.inputs, ids(&jp["inputs"]), "{name}");
        assert_eq!(plan.outputs, ids(&jp["outputs"]), "{name}");
        assert_eq!(
            plan.values.len() as u64,
            jp["num_values"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            plan.chains.len() as u64,
            jp["num_chains"].as_u64().unwrap(),
            "{name}"
        );
        let kinds: Vec<&str> = plan.chains[0]
            .instructions
            .iter()
            .map(|i| match i {
                Instruction::KernelCall { .. } => "KernelCall",
                Instruction::DelegateCall { .. } => "DelegateCall",
                Instruction::MoveCall { .. } => "MoveCall",
                Instruction::JumpFalseCall { .. } => "JumpFalseCall",
                Instruction::FreeCall { .. } => "FreeCall",
            })
            .collect();
        let jk: Vec<&str> = jp["instructions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert_eq!(kinds, jk, "{name}");
        let nbs: Vec<i64> = jp["non_const_buffer_sizes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        assert_eq!(plan.non_const_buffer_sizes, nbs, "{name}");
        let ops: Vec<String> = plan
            .operators
            .iter()
            .map(|o| format!("{}.{}", o.name, o.overload))
            .collect();
        let jops: Vec<String> = s["et_operator_table"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(ops.len(), jops.len(), "{name}: {ops:?} vs {jops:?}");

        // Delegates: ids, locations, and the blob bytes equal delegate*.bin.
        let jd = lay["delegates"].as_array().unwrap();
        assert_eq!(plan.delegates.len(), jd.len(), "{name}");
        for (i, (d, jd)) in plan.delegates.iter().zip(jd).enumerate() {
            assert_eq!(d.id, jd["id"].as_str().unwrap(), "{name}");
            let want_idx = jd["processed_index"].as_u64().unwrap() as usize;
            match (&d.processed, jd["processed_location"].as_str().unwrap()) {
                (DelegateData::Segment(x), "1") | (DelegateData::Inline(x), "0") => {
                    assert_eq!(*x, want_idx, "{name}")
                }
                other => panic!("{name}: delegate location {other:?}"),
            }
            let file = if i == 0 {
                "delegate.bin".to_owned()
            } else {
                format!("delegate.{i}.bin")
            };
            let want = std::fs::read(dir.join(file)).unwrap();
            let blob = p.delegate_blob(d);
            assert_eq!(blob, &want[..], "{name}: delegate {i} bytes");
            let vd = parse_delegate(blob).unwrap();
            // Every named constant of the graph resolves in the program's named data.
            for c in &vd.graph.constants {
                if let etvk_format::ir::ConstantSource::Named { key, length } = c {
                    let data = p
                        .named_data(key)
                        .unwrap_or_else(|| panic!("{name}: key {key} missing"));
                    assert_eq!(data.len(), *length, "{name}: {key}");
                }
            }
            let specs = s["delegates"][i]["compile_specs"].as_object().unwrap();
            assert_eq!(d.compile_specs.len(), specs.len(), "{name}: compile specs");
        }
        // Every DelegateCall arity = graph inputs + outputs.
        for ins in &plan.chains[0].instructions {
            if let Instruction::DelegateCall {
                delegate_index,
                args,
            } = ins
            {
                let g = parse_delegate(p.delegate_blob(&plan.delegates[*delegate_index]))
                    .unwrap()
                    .graph;
                assert_eq!(args.len(), g.input_ids.len() + g.output_ids.len(), "{name}");
            }
        }
    }
}

/// Cross-check the whole plan against `flatc`'s decoding of the same file with our schema
/// (the reference flatbuffers implementation; skipped when flatc is missing).
#[test]
fn plans_match_flatc_decoding() {
    use etvk_format::program_ir::{EValue, TensorData};
    if std::process::Command::new("flatc")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("flatc not found: skipping");
        return;
    }
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schema/program.fbs");
    let tmp = std::env::temp_dir().join(format!("etvk-format-pte-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for dir in fixture_dirs() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let pte = dir.join("model.pte");
        let st = std::process::Command::new("flatc")
            .args([
                "--json",
                "--raw-binary",
                "--strict-json",
                "--defaults-json",
                "-o",
            ])
            .arg(&tmp)
            .arg(&schema)
            .arg("--")
            .arg(&pte)
            .status()
            .unwrap();
        assert!(st.success(), "{name}");
        let j: J = serde_json::from_str(&std::fs::read_to_string(tmp.join("model.json")).unwrap())
            .unwrap();
        let p = parse_program(std::fs::read(&pte).unwrap()).unwrap();
        let jplans = j["execution_plan"].as_array().unwrap();
        assert_eq!(p.plans.len(), jplans.len());
        for (plan, jp) in p.plans.iter().zip(jplans) {
            assert_eq!(plan.name, jp["name"].as_str().unwrap());
            let jv = jp["values"].as_array().unwrap();
            assert_eq!(plan.values.len(), jv.len(), "{name}");
            for (k, (v, jv)) in plan.values.iter().zip(jv).enumerate() {
                let ty = jv["val_type"].as_str().unwrap();
                let val = &jv["val"];
                match v {
                    EValue::Tensor(t) => {
                        assert_eq!(ty, "Tensor", "{name} v{k}");
                        let sizes: Vec<i64> = val["sizes"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_i64().unwrap())
                            .collect();
                        assert_eq!(t.sizes, sizes, "{name} v{k}");
                        let order: Vec<u8> = val["dim_order"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_u64().unwrap() as u8)
                            .collect();
                        assert_eq!(t.dim_order, order, "{name} v{k}");
                        match (&t.data, val.get("allocation_info")) {
                            (TensorData::Planned { memory_id, offset }, Some(a)) => {
                                assert_eq!(*memory_id as u64, a["memory_id"].as_u64().unwrap());
                                let off = a["memory_offset_high"].as_u64().unwrap() << 32
                                    | a["memory_offset_low"].as_u64().unwrap();
                                assert_eq!(*offset, off, "{name} v{k}");
                            }
                            (TensorData::Constant(r), None) => {
                                let idx = val["data_buffer_idx"].as_u64().unwrap() as usize;
                                let cs = &j["constant_segment"];
                                let seg =
                                    &j["segments"][cs["segment_index"].as_u64().unwrap() as usize];
                                let base = p.extended_header.unwrap().segment_base_offset;
                                let start = base
                                    + seg["offset"].as_u64().unwrap()
                                    + cs["offsets"][idx].as_u64().unwrap();
                                assert_eq!(r.start as u64, start, "{name} v{k}");
                                let numel: i64 = t.sizes.iter().product();
                                let es =
                                    etvk_format::program::scalar_type_size(t.scalar_type).unwrap();
                                assert_eq!(r.len() as i64, numel * es as i64, "{name} v{k}");
                            }
                            (TensorData::None, None) => {
                                assert_eq!(val["data_buffer_idx"].as_u64().unwrap(), 0)
                            }
                            (d, a) => panic!("{name} v{k}: {d:?} vs {a:?}"),
                        }
                    }
                    EValue::Int(x) => {
                        assert_eq!(*x, val["int_val"].as_i64().unwrap(), "{name} v{k}")
                    }
                    EValue::IntList(x) => {
                        let want: Vec<i64> = val["items"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_i64().unwrap())
                            .collect();
                        assert_eq!(*x, want, "{name} v{k}");
                    }
                    EValue::Bool(x) => {
                        assert_eq!(*x, val["bool_val"].as_bool().unwrap(), "{name} v{k}")
                    }
                    EValue::Null => assert_eq!(ty, "Null", "{name} v{k}"),
                    other => panic!("{name} v{k}: unexpected {other:?} in fixtures"),
                }
            }
            let jc = jp["chains"].as_array().unwrap();
            for (c, jc) in plan.chains.iter().zip(jc) {
                let ji = jc["instructions"].as_array().unwrap();
                assert_eq!(c.instructions.len(), ji.len());
                for (ins, ji) in c.instructions.iter().zip(ji) {
                    let a = &ji["instr_args"];
                    let args = |v: &J| -> Vec<usize> {
                        v.as_array()
                            .unwrap()
                            .iter()
                            .map(|x| x.as_u64().unwrap() as usize)
                            .collect()
                    };
                    match ins {
                        Instruction::DelegateCall {
                            delegate_index,
                            args: ar,
                        } => {
                            assert_eq!(
                                *delegate_index as u64,
                                a["delegate_index"].as_u64().unwrap()
                            );
                            assert_eq!(*ar, args(&a["args"]), "{name}");
                        }
                        Instruction::KernelCall { op_index, args: ar } => {
                            assert_eq!(*op_index as u64, a["op_index"].as_u64().unwrap());
                            assert_eq!(*ar, args(&a["args"]), "{name}");
                        }
                        other => panic!("{name}: unexpected {other:?} in fixtures"),
                    }
                }
            }
            let jops = jp["operators"].as_array().unwrap();
            for (o, jo) in plan.operators.iter().zip(jops) {
                assert_eq!(o.name, jo["name"].as_str().unwrap());
                assert_eq!(o.overload, jo["overload"].as_str().unwrap());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
