//! Shared helpers of the runtime tests: hand-built IR, named data, fixtures, references.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use etvk_format::ir::*;
use etvk_runtime::*;

/// Named data held in a map.
#[derive(Default)]
pub struct MapData(pub HashMap<String, Vec<u8>>);

impl NamedData for MapData {
    fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.get(key).map(|v| v.as_slice())
    }
}

/// A backend with validation and profiling forced on (plus `ETVK_DEVICE` from the
/// environment).
pub fn backend() -> Arc<Backend> {
    backend_with(true)
}

/// As [`backend`] without the validation layer, for kernels on extensions the installed
/// layer predates (VK_NV_cooperative_matrix2: the context leaves it off under an older
/// layer, which would refuse the device).
#[allow(dead_code)]
pub fn backend_unvalidated() -> Arc<Backend> {
    backend_with(false)
}

fn backend_with(validation: bool) -> Arc<Backend> {
    // Profiling on: tests name the kernels that ran from the per-dispatch profile.
    let opts = RuntimeOptions {
        validation,
        profile: true,
        // Incremental resize passes checked against full ones (unless ETVK_RESIZE says).
        resize: if std::env::var_os("ETVK_RESIZE").is_some() {
            RuntimeOptions::from_env().resize
        } else {
            etvk_runtime::ResizeMode::Check
        },
        ..RuntimeOptions::from_env()
    };
    Backend::new(&opts).expect("backend")
}

pub fn fixture_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

pub fn tensor(
    dtype: DataType,
    dims: &[usize],
    constant_id: Option<usize>,
    mem_obj_id: Option<usize>,
) -> Value {
    Value::Tensor(TensorValue {
        dtype,
        dims: dims.to_vec(),
        numel: dims.iter().product(),
        constant_id,
        mem_obj_id,
        staging_dtype: dtype,
        storage_type: 255,
        memory_layout: 255,
    })
}

pub fn op(node_id: u32, name: &str, args: &[usize]) -> OperatorCall {
    OperatorCall {
        node_id,
        name: name.to_string(),
        args: args.to_vec(),
    }
}

pub fn delegate_ir(graph: VkGraph) -> VulkanDelegate {
    VulkanDelegate {
        header: DelegateHeader {
            header_size: 30,
            flatbuffer_offset: 32,
            flatbuffer_size: 0,
            bytes_offset: 0,
            bytes_size: 0,
        },
        graph,
        constant_region: Vec::new(),
    }
}

pub fn graph(
    values: Vec<Value>,
    chain: Vec<OperatorCall>,
    inputs: &[usize],
    outputs: &[usize],
    constants: Vec<ConstantSource>,
) -> VkGraph {
    VkGraph {
        version: "0".into(),
        values,
        chain,
        input_ids: inputs.to_vec(),
        output_ids: outputs.to_vec(),
        constants,
        storage_type_override: 255,
        memory_layout_override: 255,
    }
}

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn host_f32(sizes: &[usize], data: &[f32]) -> DelegateArg {
    DelegateArg::Tensor(HostTensor {
        dtype: HostDType::Float,
        sizes: sizes.to_vec(),
        data: f32_bytes(data),
    })
}

pub fn empty_out() -> DelegateArg {
    DelegateArg::Tensor(HostTensor {
        dtype: HostDType::Float,
        sizes: vec![],
        data: vec![],
    })
}

pub fn out_f32(arg: &DelegateArg) -> (Vec<usize>, Vec<f32>) {
    match arg {
        DelegateArg::Tensor(t) => {
            assert_eq!(t.dtype, HostDType::Float);
            (t.sizes.clone(), f32s(&t.data))
        }
        other => panic!("expected a tensor output, got {other:?}"),
    }
}

/// Deterministic pseudo-random values in [-1, 1).
pub fn rand_vec(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

/// f64 reference of x[M,K] @ w[N,K]^T + bias[N].
pub fn linear_ref(
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    m: usize,
    n: usize,
    k: usize,
) -> Vec<f64> {
    let mut out = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = bias.map(|b| b[j] as f64).unwrap_or(0.0);
            for kk in 0..k {
                acc += x[i * k + kk] as f64 * w[j * k + kk] as f64;
            }
            out[i * n + j] = acc;
        }
    }
    out
}

pub fn assert_close(got: &[f32], want: &[f64], atol: f64, rtol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let tol = atol + rtol * w.abs();
        assert!(
            ((*g as f64) - w).abs() <= tol,
            "{what}: element {i}: got {g}, want {w} (tol {tol})"
        );
    }
}

/// The named data of fixture `name`, read straight from model.pte's segments at the offsets
/// summary.json records (independent of the format crate's parser).
pub fn load_named_data(name: &str) -> MapData {
    let dir = fixture_dir(name);
    let pte = std::fs::read(dir.join("model.pte")).unwrap();
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let layout = &summary["pte_layout"];
    let base = layout["extended_header"]["segment_base_offset"]
        .as_u64()
        .unwrap() as usize;
    let segs = layout["segments"].as_array().unwrap();
    let mut map = MapData::default();
    for nd in layout["named_data"].as_array().unwrap() {
        let seg = &segs[nd["segment_index"].as_u64().unwrap() as usize];
        let off = base + seg["offset"].as_u64().unwrap() as usize;
        let size = seg["size"].as_u64().unwrap() as usize;
        map.0.insert(
            nd["key"].as_str().unwrap().to_string(),
            pte[off..off + size].to_vec(),
        );
    }
    map
}
