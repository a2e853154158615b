//! Robustness sweeps: truncated and corrupted inputs must give `Ok` or `Err`, never a
//! panic; whatever parses `Ok` must satisfy the IR's promises (indices in range, ranges
//! inside the file). Plus targeted rejections with their messages.
use etvk_format::ir::{ConstantSource, DataType, Value, VkGraph, VulkanDelegate};
use etvk_format::program::parse_program;
use etvk_format::program_ir::{EValue, Instruction, Program, TensorData};
use etvk_format::vkgraph::parse_delegate;
use etvk_format::writer::{write_delegate, GraphBuilder};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// The promises of `ir.rs`, checked on a graph the parser accepted.
fn check_graph(g: &VkGraph) {
    let n = g.values.len();
    for v in &g.values {
        match v {
            Value::Tensor(t) => {
                assert_eq!(t.numel, t.dims.iter().product::<usize>());
                if let Some(c) = t.constant_id {
                    assert!(c < g.constants.len());
                }
            }
            Value::ValueList(ids) => assert!(ids.iter().all(|&i| i < n)),
            _ => {}
        }
    }
    assert!(g.chain.iter().all(|op| op.args.iter().all(|&a| a < n)));
    assert!(g.input_ids.iter().chain(&g.output_ids).all(|&i| i < n));
}

fn check_delegate(d: &VulkanDelegate) {
    check_graph(&d.graph);
    for c in &d.graph.constants {
        if let ConstantSource::Inline { offset, length } = c {
            assert!(offset + length <= d.constant_region.len());
        }
    }
}

fn check_program(p: &Program) {
    let len = p.bytes.len();
    assert!(p
        .segments
        .iter()
        .chain(&p.inline_delegate_data)
        .all(|r| r.start <= r.end && r.end <= len));
    for (k, _) in &p.named_data {
        let _ = p.named_data(k);
    }
    for plan in &p.plans {
        let n = plan.values.len();
        for v in &plan.values {
            match v {
                EValue::Tensor(t) => {
                    if let TensorData::Constant(r) | TensorData::MutableInit(r) = &t.data {
                        assert!(r.end <= len);
                    }
                }
                EValue::TensorList(ids) => assert!(ids.iter().all(|&i| i < n)),
                EValue::OptionalTensorList(ids) => assert!(ids.iter().flatten().all(|&i| i < n)),
                _ => {}
            }
        }
        for d in &plan.delegates {
            let _ = p.delegate_blob(d);
        }
        for c in &plan.chains {
            for ins in &c.instructions {
                match ins {
                    Instruction::KernelCall { op_index, args } => {
                        assert!(*op_index < plan.operators.len() && args.iter().all(|&a| a < n))
                    }
                    Instruction::DelegateCall {
                        delegate_index,
                        args,
                    } => {
                        assert!(
                            *delegate_index < plan.delegates.len() && args.iter().all(|&a| a < n)
                        )
                    }
                    Instruction::MoveCall { from, to } => assert!(*from < n && *to < n),
                    Instruction::JumpFalseCall { cond, destination } => {
                        assert!(*cond < n && *destination < c.instructions.len())
                    }
                    Instruction::FreeCall { value } => assert!(*value < n),
                }
            }
        }
    }
}

/// Run `f` on every mutated input; collect the labels of those that panicked.
fn sweep(
    label: &str,
    inputs: impl Iterator<Item = (String, Vec<u8>)>,
    f: impl Fn(Vec<u8>),
) -> usize {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut bad = Vec::new();
    let mut count = 0;
    for (what, bytes) in inputs {
        count += 1;
        if catch_unwind(AssertUnwindSafe(|| f(bytes))).is_err() {
            bad.push(what);
        }
    }
    std::panic::set_hook(prev);
    assert!(
        bad.is_empty(),
        "{label}: panicked on {} inputs, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(10)]
    );
    count
}

fn delegate_check(b: Vec<u8>) {
    if let Ok(d) = parse_delegate(&b) {
        check_delegate(&d);
    }
}

fn program_check(b: Vec<u8>) {
    if let Ok(p) = parse_program(b) {
        check_program(&p);
    }
}

fn all_blobs() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut dirs: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for d in dirs {
        for i in 0.. {
            let f = if i == 0 {
                "delegate.bin".to_owned()
            } else {
                format!("delegate.{i}.bin")
            };
            let Ok(b) = std::fs::read(d.join(&f)) else {
                break;
            };
            out.push((
                format!("{}/{f}", d.file_name().unwrap().to_string_lossy()),
                b,
            ));
        }
    }
    out
}

#[test]
fn truncated_delegates_never_panic() {
    let mut n = 0;
    for (name, blob) in all_blobs() {
        n += sweep(
            &name,
            (0..blob.len()).map(|l| (format!("len {l}"), blob[..l].to_vec())),
            |b| {
                delegate_check(b);
            },
        );
        // Every strict prefix that cuts the flatbuffer must fail.
        let fb_end = 32 + u32::from_le_bytes(blob[14..18].try_into().unwrap()) as usize;
        for l in 0..fb_end {
            assert!(
                parse_delegate(&blob[..l]).is_err(),
                "{name}: len {l} accepted"
            );
        }
    }
    assert!(n > 10_000);
}

const PATTERNS: [u8; 4] = [0xFF, 0x01, 0x80, 0x7F];

#[test]
fn corrupted_delegates_never_panic() {
    for name in [
        "a_linear_fp32/delegate.bin",
        "b_mlp_fp32/delegate.bin",
        "f1_linear_q4gsw_backward/delegate.bin",
    ] {
        let blob = std::fs::read(fixture(name)).unwrap();
        let inputs = (0..blob.len()).flat_map(|pos| {
            let blob = &blob;
            PATTERNS.iter().map(move |&x| {
                let mut b = blob.clone();
                b[pos] ^= x;
                (format!("pos {pos} ^ {x:#04x}"), b)
            })
        });
        sweep(name, inputs, delegate_check);
        // Overwrite 4-byte words with extreme values (offsets, lengths, counts).
        let words = (0..blob.len().saturating_sub(4))
            .step_by(2)
            .flat_map(|pos| {
                let blob = &blob;
                [0u32, 0x7FFF_FFFF, 0xFFFF_FFFF, 0x8000_0000]
                    .into_iter()
                    .map(move |w| {
                        let mut b = blob.clone();
                        b[pos..pos + 4].copy_from_slice(&w.to_le_bytes());
                        (format!("pos {pos} = {w:#x}"), b)
                    })
            });
        sweep(name, words, delegate_check);
    }
    // A bigger graph, one pattern.
    let blob = std::fs::read(fixture("e5_llama3_tiny_kvcache_fp32/delegate.bin")).unwrap();
    let inputs = (0..blob.len()).map(|pos| {
        let mut b = blob.clone();
        b[pos] ^= 0xFF;
        (format!("pos {pos}"), b)
    });
    sweep("e5 delegate", inputs, delegate_check);
}

#[test]
fn truncated_program_never_panics() {
    let pte = std::fs::read(fixture("a_linear_fp32/model.pte")).unwrap();
    sweep(
        "a_linear model.pte truncation",
        (0..pte.len()).map(|l| (format!("len {l}"), pte[..l].to_vec())),
        program_check,
    );
    // Cutting into the segment data is an error, not a silently short segment.
    for l in [pte.len() - 1, pte.len() - 512, 1300, 1216] {
        assert!(
            parse_program(pte[..l].to_vec()).is_err(),
            "len {l} accepted"
        );
    }
}

#[test]
fn corrupted_programs_never_panic() {
    let pte = std::fs::read(fixture("a_linear_fp32/model.pte")).unwrap();
    let program_size = 1216;
    // Every byte of the flatbuffer + header with every pattern, strided through segments.
    let positions: Vec<usize> = (0..program_size)
        .chain((program_size..pte.len()).step_by(97))
        .collect();
    let inputs = positions.iter().flat_map(|&pos| {
        let pte = &pte;
        PATTERNS.iter().map(move |&x| {
            let mut b = pte.clone();
            b[pos] ^= x;
            (format!("pos {pos} ^ {x:#04x}"), b)
        })
    });
    sweep("a_linear model.pte", inputs, program_check);
    for name in [
        "g3_llama_block_dynamic_seq/model.pte",
        "e5_llama3_tiny_kvcache_fp32/model.pte",
    ] {
        let pte = std::fs::read(fixture(name)).unwrap();
        let ps = u64::from_le_bytes(pte[16..24].try_into().unwrap()) as usize;
        let inputs = (0..ps).step_by(3).map(|pos| {
            let mut b = pte.clone();
            b[pos] ^= 0xFF;
            (format!("pos {pos}"), b)
        });
        sweep(name, inputs, program_check);
    }
}

// ---- targeted rejections ----

fn err_delegate(b: &[u8]) -> String {
    parse_delegate(b).unwrap_err().to_string()
}

fn simple() -> GraphBuilder {
    let mut b = GraphBuilder::new();
    let x = b.add_tensor(DataType::Float32, &[2, 2]);
    let y = b.add_tensor(DataType::Float32, &[2, 2]);
    b.add_op("aten.relu.default", &[x, y]);
    b.mark_input(x);
    b.mark_output(y);
    b
}

#[test]
fn header_errors_name_the_field() {
    let blob = simple().finish_delegate();
    assert!(parse_delegate(&blob).is_ok());
    assert!(err_delegate(&blob[..29]).contains("truncated"));
    let mut b = blob.clone();
    b[4] = b'X';
    assert!(
        err_delegate(&b).contains("bad magic"),
        "{}",
        err_delegate(&b)
    );
    let mut b = blob.clone();
    b[8..10].copy_from_slice(&29u16.to_le_bytes());
    assert!(err_delegate(&b).contains("header_size"));
    let mut b = blob.clone();
    b[14..18].copy_from_slice(&0u32.to_le_bytes());
    assert!(err_delegate(&b).contains("flatbuffer_size"));
    let mut b = blob.clone();
    b[14..18].copy_from_slice(&100_000u32.to_le_bytes());
    let e = err_delegate(&b);
    assert!(
        e.contains("flatbuffer [offset 32, size 100000] extends past end of blob"),
        "{e}"
    );
    let mut b = blob.clone();
    b[22..30].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(
        err_delegate(&b).contains("bytes_size"),
        "{}",
        err_delegate(&b)
    );
    let mut b = blob.clone();
    b[18..22].copy_from_slice(&40u32.to_le_bytes());
    assert!(err_delegate(&b).contains("bytes_offset"));
}

#[test]
fn bytes_size_zero_means_rest_of_blob() {
    let mut g = simple();
    let c = g.add_constant_inline(DataType::Int8, &[3], &[1, 2, 3]);
    g.add_op("test.use", &[c]);
    let (g, inline) = g.finish();
    let mut blob = write_delegate(&g, &inline);
    blob[22..30].copy_from_slice(&0u64.to_le_bytes());
    let d = parse_delegate(&blob).unwrap();
    assert_eq!(d.constant_region.len(), 16);
    assert_eq!(&d.constant_region[..3], &[1, 2, 3]);
}

#[test]
fn semantic_errors_name_the_value() {
    // Index out of range.
    let (mut g, inline) = simple().finish();
    g.chain[0].args[1] = 99;
    let e = err_delegate(&write_delegate(&g, &inline));
    assert!(
        e.contains("chain[0] (aten.relu.default).args[1] = 99 out of range (len 2)"),
        "{e}"
    );
    let (mut g, _) = simple().finish();
    g.output_ids[0] = 2;
    assert!(err_delegate(&write_delegate(&g, &[])).contains("output_ids[0] = 2"));
    let (mut g, _) = simple().finish();
    g.values.push(Value::ValueList(vec![0, 5]));
    assert!(err_delegate(&write_delegate(&g, &[])).contains("values[2] (ValueList).items[1] = 5"));

    // numel overflow and absurd sizes.
    let mut b = simple();
    b.add_tensor(DataType::Float32, &[4, 4294967295, 4294967295]);
    let e = err_delegate(&b.finish_delegate());
    assert!(
        e.contains("VkGraph: values[2] (Tensor) dims [4, 4294967295, 4294967295]: numel overflows"),
        "{e}"
    );
    let mut b = simple();
    b.add_tensor(DataType::Float32, &[1 << 16, 1 << 16, 1 << 16]);
    assert!(err_delegate(&b.finish_delegate()).contains("exceeds 2^40"));

    // Constant length must match the tensor using it.
    let mut b = simple();
    b.add_constant_named(DataType::Float32, &[4], "k");
    let (mut g, _) = b.finish();
    g.constants[0] = ConstantSource::Named {
        key: "k".into(),
        length: 15,
    };
    let e = err_delegate(&write_delegate(&g, &[]));
    assert!(e.contains("constant length 15 != numel 4 * 4 bytes"), "{e}");

    // Inline constants must lie inside the region.
    let mut b = simple();
    b.add_constant_inline(DataType::Uint8, &[4], &[1, 2, 3, 4]);
    let (mut g, inline) = b.finish();
    g.constants[0] = ConstantSource::Inline {
        offset: 14,
        length: 4,
    };
    let e = err_delegate(&write_delegate(&g, &inline));
    assert!(
        e.contains(
            "constants[0] [offset 14, length 4] extends past end of constant region (16 bytes)"
        ),
        "{e}"
    );

    // Bad constant id.
    let (mut g, _) = simple().finish();
    if let Value::Tensor(t) = &mut g.values[0] {
        t.constant_id = Some(3);
    }
    assert!(err_delegate(&write_delegate(&g, &[])).contains("values[0] (Tensor).constant_id = 3"));
}

#[test]
fn program_errors_name_the_segment() {
    let pte = std::fs::read(fixture("a_linear_fp32/model.pte")).unwrap();
    let e = parse_program(pte[..35000].to_vec())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "pte: segment 3 [offset 33536, size 512] extends past end of file (35000 bytes)"
    );
    let mut b = pte.clone();
    b[4..8].copy_from_slice(b"ET13");
    assert!(parse_program(b)
        .unwrap_err()
        .to_string()
        .contains("bad magic"));
    let mut b = pte.clone();
    b[16..24].copy_from_slice(&1_000_000u64.to_le_bytes());
    assert!(parse_program(b)
        .unwrap_err()
        .to_string()
        .contains("program flatbuffer"));
    assert!(parse_program(pte[..4].to_vec())
        .unwrap_err()
        .to_string()
        .contains("truncated"));
}
