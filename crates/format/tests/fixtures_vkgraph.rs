//! Every fixture's delegate blob parses and matches ExecuTorch's own decoding (`vkgraph.json`).
use etvk_format::ir::{ConstantSource, Value};
use etvk_format::vkgraph::parse_delegate;
use serde_json::Value as J;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

/// (fixture dir, delegate index, blob path, vkgraph.json path) for every delegate blob.
fn delegate_blobs() -> Vec<(PathBuf, usize, PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for d in dirs {
        for i in 0.. {
            let (blob, json) = if i == 0 {
                (d.join("delegate.bin"), d.join("vkgraph.json"))
            } else {
                (
                    d.join(format!("delegate.{i}.bin")),
                    d.join(format!("vkgraph.{i}.json")),
                )
            };
            if !blob.exists() {
                break;
            }
            out.push((d.clone(), i, blob, json));
        }
    }
    out
}

#[test]
fn every_delegate_parses_and_matches_vkgraph_json() {
    let blobs = delegate_blobs();
    assert!(
        blobs.len() >= 15,
        "expected the fixture set, found {} blobs",
        blobs.len()
    );
    for (dir, i, blob, json) in blobs {
        let bytes = std::fs::read(&blob).unwrap();
        let d = parse_delegate(&bytes).unwrap_or_else(|e| panic!("{}: {e}", blob.display()));
        let j: J = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let g = &d.graph;
        let name = format!("{} #{i}", dir.file_name().unwrap().to_string_lossy());
        assert_eq!(g.version, j["version"].as_str().unwrap(), "{name}");
        let jv = j["values"].as_array().unwrap();
        assert_eq!(g.values.len(), jv.len(), "{name}: value count");
        for (k, (v, jv)) in g.values.iter().zip(jv).enumerate() {
            let ty = jv["value_type"].as_str().unwrap();
            let val = &jv["value"];
            match v {
                Value::Tensor(t) => {
                    assert_eq!(ty, "VkTensor", "{name} v{k}");
                    assert_eq!(
                        t.dtype.code() as i64,
                        val["datatype"].as_i64().unwrap(),
                        "{name} v{k}"
                    );
                    let dims: Vec<usize> = val["dims"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap() as usize)
                        .collect();
                    assert_eq!(t.dims, dims, "{name} v{k}");
                    assert_eq!(t.numel, dims.iter().product::<usize>(), "{name} v{k}");
                    let cid = val["constant_id"].as_i64().unwrap();
                    assert_eq!(
                        t.constant_id,
                        (cid >= 0).then_some(cid as usize),
                        "{name} v{k}"
                    );
                    let mid = val["mem_obj_id"].as_i64().unwrap();
                    assert_eq!(
                        t.mem_obj_id,
                        (mid >= 0).then_some(mid as usize),
                        "{name} v{k}"
                    );
                    assert_eq!(
                        t.storage_type as i64,
                        val["storage_type"].as_i64().unwrap(),
                        "{name} v{k}"
                    );
                    assert_eq!(
                        t.memory_layout as i64,
                        val["memory_layout"].as_i64().unwrap(),
                        "{name} v{k}"
                    );
                    let st = val["staging_datatype"].as_i64().unwrap();
                    let want = if st == 127 { t.dtype.code() as i64 } else { st };
                    assert_eq!(t.staging_dtype.code() as i64, want, "{name} v{k}");
                }
                Value::Int(x) => {
                    assert_eq!(ty, "Int");
                    assert_eq!(*x, val["int_val"].as_i64().unwrap(), "{name} v{k}");
                }
                Value::Bool(x) => assert_eq!(*x, val["bool_val"].as_bool().unwrap(), "{name} v{k}"),
                Value::Double(x) => {
                    let jd = &val["double_val"];
                    let want = match jd.as_str() {
                        Some("-inf") => f64::NEG_INFINITY,
                        Some("inf") => f64::INFINITY,
                        Some(_) => f64::NAN,
                        None => jd.as_f64().unwrap(),
                    };
                    // The exporter rounds some scalars through f32 (eps 1e-5 is stored as
                    // 9.99999974e-6) while vkgraph.json holds the Python value: compare
                    // with an f32-sized relative tolerance.
                    let close = x == &want || (x - want).abs() <= 1e-7 * want.abs();
                    assert!(
                        close || (x.is_nan() && want.is_nan()),
                        "{name} v{k}: {x} vs {want}"
                    );
                }
                Value::IntList(x) => {
                    let want: Vec<i64> = val["items"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_i64().unwrap())
                        .collect();
                    assert_eq!(*x, want, "{name} v{k}");
                }
                Value::ValueList(x) => {
                    assert_eq!(ty, "ValueList");
                    let want: Vec<usize> = val["items"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap() as usize)
                        .collect();
                    assert_eq!(*x, want, "{name} v{k}");
                }
                other => assert_eq!(other.kind_name(), ty, "{name} v{k}"),
            }
        }
        let chain: Vec<&str> = g.chain.iter().map(|c| c.name.as_str()).collect();
        let jchain: Vec<&str> = j["chain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(chain, jchain, "{name}");
        for (c, jc) in g.chain.iter().zip(j["chain"].as_array().unwrap()) {
            let args: Vec<usize> = jc["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect();
            assert_eq!(c.args, args, "{name} {}", c.name);
            assert_eq!(c.node_id as u64, jc["node_id"].as_u64().unwrap());
        }
        let ids = |k: &str| -> Vec<usize> {
            j[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap() as usize)
                .collect()
        };
        assert_eq!(g.input_ids, ids("input_ids"), "{name}");
        assert_eq!(g.output_ids, ids("output_ids"), "{name}");
        let jc = j["constants"].as_array().unwrap();
        assert_eq!(g.constants.len(), jc.len(), "{name}");
        for (c, jc) in g.constants.iter().zip(jc) {
            match c {
                ConstantSource::Named { key, length } => {
                    assert_eq!(jc["offset"].as_u64().unwrap(), u64::MAX);
                    assert_eq!(key, jc["named_key"].as_str().unwrap());
                    assert_eq!(*length as u64, jc["length"].as_u64().unwrap());
                }
                ConstantSource::Inline { offset, length } => {
                    assert_eq!(*offset as u64, jc["offset"].as_u64().unwrap());
                    assert_eq!(*length as u64, jc["length"].as_u64().unwrap());
                }
            }
        }
        assert_eq!(g.storage_type_override, 255);
        assert_eq!(g.memory_layout_override, 255);
    }
}
