//! `etvk bench`: kernel timings with GPU timestamps, reported against ceilings measured in the
//! same run (method: docs/performance.md).
//!
//! An op benchmark builds a graph holding `copies` instances of the op, each reading its own
//! weights (so the working set exceeds the GPU's L2 and nothing is served from cache), executes
//! it once, replays it `iters` times (no host copies in between, so the GPU keeps its clock)
//! and takes the median per-instance GPU time. The runtime records a barrier
//! between dispatches, so instances do not overlap. Before timing, sampled outputs of the first
//! instance are checked against an f64 CPU reference.

use std::collections::HashMap;
use std::sync::Arc;

use clap::Args;
use etvk_format::f16::{f16_to_f32, f32_to_f16};
use etvk_format::ir::DataType;
use etvk_format::writer::{named_key, GraphBuilder};
use etvk_runtime::bench::{copy_ceiling, median, read_ceiling, read_rotating, Bandwidth};
use etvk_runtime::{
    Backend, Delegate, DelegateArg, HostDType, HostTensor, NamedData, NodeTime, RuntimeOptions,
};

use crate::error::CliError;

/// Arguments of `etvk bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// `read` (memory ceilings), `linear_q4gsw`, `linear_q4gsw_backward`, `linear_qcs4w`,
    /// `linear_dq8ca_q4gsw` (8da4w: x's per-row int8 quantization by a choose_qparams node,
    /// timed with the q4gsw kernels; checked against torchao's quantization in fp32 and an
    /// f64 linear), `linear` (fp32 weights), `linear_q8` (int8 weights with a scale per row,
    /// `aten._weight_int8pack_mm`), `adamw_step`, `lora_step` (one LoRA training step
    /// vs its forward pass), `coopmat` (fp16 GEMM through NV cooperative matrices: M x K
    /// times K x N, checked against f64), `alu` (instruction rates: fp32 FMA, 3-input logic,
    /// int8 dot product, the backward's 4-bit decode; on devices with NV int8 cooperative
    /// matrices the MMA alone, the forward's chunk work, MMAs fed from shared memory and
    /// MMAs fed by A built from registers).
    pub op: String,
    /// Activation rows.
    #[arg(long, default_value_t = 1)]
    pub m: usize,
    /// Input features.
    #[arg(long, default_value_t = 4096)]
    pub k: usize,
    /// Output features.
    #[arg(long, default_value_t = 4096)]
    pub n: usize,
    /// Group size of q4gsw weights.
    #[arg(long, default_value_t = 32)]
    pub group_size: usize,
    /// Adapter rank for `lora_step` (M = batch, K = input features, N = hidden = classes).
    #[arg(long, default_value_t = 16)]
    pub rank: usize,
    /// Elements for `adamw_step`.
    #[arg(long, default_value_t = 1 << 24)]
    pub numel: usize,
    /// Rounds of 16 chained instructions per invocation for `alu`.
    #[arg(long, default_value_t = 1024)]
    pub rounds: usize,
    /// Timed executes (after one warm-up).
    #[arg(long, default_value_t = 20)]
    pub iters: usize,
    /// Weight copies; default: enough for a 256 MiB working set (1 on a CPU device).
    #[arg(long)]
    pub copies: Option<usize>,
    /// Bytes for the ceiling measurements, MiB (default 2048, capped by the device).
    #[arg(long, default_value_t = 2048)]
    pub ceiling_mib: u64,
    /// The 4-bit linears' activations as fp16 (a force_fp16 program's x; the reference
    /// computes with the fp16 values), output fp32.
    #[arg(long)]
    pub x_f16: bool,
    /// `linear_dq8ca_q4gsw`: the (untimed) op that writes each instance's x: `copy` (a
    /// clone), or as in a model `norm` (an RMSNorm) or `silu` (a fused gated SiLU, silu(x) *
    /// x), which also write the row's range for the M = 1 DQ GEMV to read (ops/quantize.rs
    /// `plan_row_minmax`). The inputs keep their result exact in fp32: rows of +-1 (mean
    /// square 1) and a random norm weight; for silu x in [17, 20] (silu(x) = x: exp(-x) is
    /// below half an ulp of 1) or [-110, -104] (exp(-x) overflows: silu(x) = -0).
    #[arg(long, default_value = "copy")]
    pub x_from: String,
}

/// Deterministic xorshift64* stream (no dependency; reproducible benchmark data).
pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn uniform(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

struct Named(HashMap<String, Vec<u8>>);
impl NamedData for Named {
    fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.get(key).map(Vec::as_slice)
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// One op instance's host-side data, kept for the reference check.
struct Instance {
    weights: Vec<u8>,
    scales: Vec<f32>,
}

/// What a benchmark graph computes, for byte/FLOP accounting and the reference check.
struct Plan {
    name: &'static str,
    /// Other ops of one instance whose dispatches count toward its time (the 8da4w
    /// linear's choose_qparams node).
    helpers: &'static [&'static str],
    bytes_per_instance: u64,
    flops_per_instance: f64,
}

/// Profile entries are named after their op, or `op/kernel` when an op picks among kernels.
fn is_node_of(node: &str, op: &str) -> bool {
    node == op
        || node
            .strip_prefix(op)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Mean GPU time of one of `copies` instances of `ops` in the last execute, in microseconds:
/// from the start of an instance's first dispatch to the end of its last (barriers between
/// its own dispatches included, the one after it not), and the same with that barrier.
fn op_times_us(nodes: &[NodeTime], ops: &[&str], copies: usize) -> Result<(f64, f64), CliError> {
    let op = ops.first().copied().unwrap_or("");
    let mine: Vec<&NodeTime> = nodes
        .iter()
        .filter(|t| ops.iter().any(|o| is_node_of(&t.op, o)))
        .collect();
    if mine.is_empty() || copies == 0 || !mine.len().is_multiple_of(copies) {
        return Err(CliError(format!(
            "bench: {} timed dispatches of {op} do not split into {copies} instances",
            mine.len()
        )));
    }
    let (mut kernel, mut with_barrier) = (0.0, 0.0);
    for instance in mine.chunks(mine.len() / copies) {
        let all: f64 = instance.iter().map(|t| t.us).sum();
        let last = instance[instance.len() - 1];
        kernel += all - last.us + last.dispatch_us;
        with_barrier += all;
    }
    Ok((kernel / copies as f64, with_barrier / copies as f64))
}

fn err(e: impl std::fmt::Display) -> CliError {
    CliError(e.to_string())
}

fn print_ceiling(label: &str, b: &Bandwidth) {
    outln!(
        "{label:<14} {:>10.1} MiB  {:>10.1} us  {:>8.1} GB/s",
        b.bytes as f64 / (1 << 20) as f64,
        b.median_us,
        b.gbps
    );
}

const LINEAR_OPS: [&str; 6] = [
    "linear_q4gsw",
    "linear_q4gsw_backward",
    "linear_qcs4w",
    "linear",
    "linear_dq8ca_q4gsw",
    "linear_q8",
];

const OTHER_OPS: [&str; 5] = ["read", "adamw_step", "lora_step", "coopmat", "alu"];

/// The op name, and a linear op's shape arguments, checked before any device work: a bad
/// argument is reported at once, not after the read ceiling (seconds on a CPU device).
fn check_bench_args(args: &BenchArgs) -> Result<(), CliError> {
    let op = args.op.as_str();
    let linear = LINEAR_OPS.contains(&op);
    if !linear && !OTHER_OPS.contains(&op) {
        let known = [LINEAR_OPS.as_slice(), OTHER_OPS.as_slice()].concat();
        return Err(CliError(format!(
            "bench: unknown op {op:?} ({})",
            known.join(", ")
        )));
    }
    if linear {
        linear_k_padded(args)?;
    }
    Ok(())
}

/// Whether a linear bench's weights are 4-bit with group scales (the q4gsw layout: the
/// forward, the backward and the 8da4w linear) rather than qcs4w, int8 or fp32.
fn group_scaled(op: &str) -> bool {
    !matches!(op, "linear_qcs4w" | "linear" | "linear_q8")
}

/// A linear bench's K as its weights store it (q4gsw: padded to 8, qcs4w and fp32: to 2,
/// int8: as it is), after checking M, K, N and the group size.
fn linear_k_padded(args: &BenchArgs) -> Result<usize, CliError> {
    let (m, k, n, gs) = (args.m, args.k, args.n, args.group_size);
    if m == 0 || k == 0 || n == 0 {
        return Err(CliError("bench: --m, --k, --n must be positive".into()));
    }
    let kp = match args.op.as_str() {
        "linear_qcs4w" | "linear" => k.div_ceil(2) * 2,
        "linear_q8" => k,
        _ => k.div_ceil(8) * 8,
    };
    if group_scaled(&args.op) && (gs == 0 || kp % gs != 0) {
        return Err(CliError(format!(
            "bench: group size {gs} must divide K padded to 8 ({kp})"
        )));
    }
    Ok(kp)
}

/// Run `etvk bench`.
pub fn bench(args: &BenchArgs) -> Result<(), CliError> {
    check_bench_args(args)?;
    if args.op == "lora_step" {
        return crate::finetune::bench_lora(
            args.m,
            args.k,
            args.n,
            args.rank,
            args.group_size,
            args.iters,
        );
    }
    // Ops are timed by their per-dispatch GPU timestamps.
    let backend = Backend::new(&RuntimeOptions {
        profile: true,
        ..RuntimeOptions::from_env()
    })?;
    outln!("device: {}", backend.device_description());
    // A compute benchmark: no memory ceiling to compare with.
    if args.op == "coopmat" {
        let (m, n, k) = (args.m, args.n, args.k);
        let to_u32 = |v: usize, what: &str| {
            u32::try_from(v)
                .map_err(|_| CliError(format!("bench coopmat: --{what} {v} is too large")))
        };
        let r = etvk_runtime::bench::coopmat_gemm(
            &backend,
            to_u32(m, "m")?,
            to_u32(n, "n")?,
            to_u32(k, "k")?,
            to_u32(args.iters, "iters")?,
        )?;
        outln!(
            "coopmat f16 GEMM M={m} N={n} K={k}, tile {}: {:.1} us, {:.1} TFLOP/s, worst error {:.2e}",
            r.shape,
            r.median_us,
            r.tflops,
            r.worst_err
        );
        // fp16 operands, fp32 accumulation (not IEEE-exact inside the tensor cores): the
        // error grows with K; H200: 7.2e-6 at K = 384, 1.3e-4 at 4096, 3.6e-4 at 8192.
        if r.worst_err > coopmat_tolerance(k) {
            return Err(CliError(format!(
                "bench coopmat: outputs differ from the f64 reference (worst error {:.2e})",
                r.worst_err
            )));
        }
        return Ok(());
    }
    // Instruction rates: no memory ceiling either.
    if args.op == "alu" {
        if args.rounds == 0 {
            return Err(CliError("bench alu: --rounds must be positive".into()));
        }
        let rounds = u32::try_from(args.rounds)
            .map_err(|_| CliError(format!("bench alu: --rounds {} is too large", args.rounds)))?;
        outln!("| instruction | us | Tops/s (invocation-instructions) |");
        outln!("|---|---|---|");
        for op in etvk_runtime::bench::AluOp::ALL {
            let r = etvk_runtime::bench::alu_rate(&backend, op, rounds, args.iters.max(1) as u32)?;
            outln!("| {} | {:.1} | {:.2} |", op.name(), r.median_us, r.tera_ops);
        }
        // The tensor-core probes where the device has them.
        for op in etvk_runtime::bench::AluOp::TENSOR {
            match etvk_runtime::bench::alu_rate(&backend, op, rounds, args.iters.max(1) as u32) {
                Ok(r) => outln!("| {} | {:.1} | {:.2} |", op.name(), r.median_us, r.tera_ops),
                Err(e) => outln!("| {} | - | {e} |", op.name()),
            }
        }
        return Ok(());
    }
    let ceiling_bytes = args.ceiling_mib << 20;
    let read = read_ceiling(&backend, ceiling_bytes, 20)?;
    print_ceiling("read ceiling", &read);
    if args.op == "read" {
        let words = etvk_runtime::bench::read_words(&backend, ceiling_bytes, 20)?;
        print_ceiling("read, u32 loads", &words);
        let pairs = etvk_runtime::bench::read_pairs(&backend, ceiling_bytes, 20)?;
        print_ceiling("read, uvec2 loads", &pairs);
        let copy = copy_ceiling(&backend, ceiling_bytes, 20)?;
        print_ceiling("copy rate", &copy);
        let zeros = etvk_runtime::bench::read_ceiling_of(
            &backend,
            ceiling_bytes,
            20,
            etvk_runtime::bench::SourceData::Zero,
        )?;
        print_ceiling("read of zeros (not a ceiling)", &zeros);
        return Ok(());
    }
    match args.op.as_str() {
        op if LINEAR_OPS.contains(&op) => bench_linear(&backend, args, &read),
        "adamw_step" => bench_adamw(&backend, args, ceiling_bytes),
        // check_bench_args lets no other op this far.
        other => Err(CliError(format!("bench: unknown op {other:?}"))),
    }
}

fn bench_linear(
    backend: &Arc<Backend>,
    args: &BenchArgs,
    read: &Bandwidth,
) -> Result<(), CliError> {
    let (m, k, n, gs) = (args.m, args.k, args.n, args.group_size);
    let kp = linear_k_padded(args)?;
    // int8 weights with a scale per row (aten._weight_int8pack_mm).
    let q8 = args.op == "linear_q8";
    let q4gsw = group_scaled(&args.op);
    let backward = args.op == "linear_q4gsw_backward";
    // 8da4w: x quantized per row to int8 by a choose_qparams node, then the q4gsw weights.
    let dq8ca = args.op == "linear_dq8ca_q4gsw";
    let fp32 = args.op == "linear";
    let groups = if q4gsw { kp / gs } else { 1 };
    let w_bytes = if fp32 {
        n * k * 4
    } else if q8 {
        n * k
    } else {
        n * kp / 2
    };
    let s_count = if fp32 {
        0
    } else if q4gsw {
        groups * n
    } else {
        n
    };
    let per_copy = (w_bytes + 4 * s_count) as u64;
    let (in_feat, out_feat) = if backward { (n, kp) } else { (k, n) };
    let act_bytes = (m * in_feat * 4) as u64;
    let out_bytes = (m * out_feat * 4) as u64;
    let copies = args.copies.unwrap_or_else(|| {
        let cpu = backend.device_description().to_lowercase().contains("cpu");
        if cpu {
            1
        } else {
            // Enough weights that the working set passes the L2.
            ((256u64 << 20) / per_copy.max(1) + 1).clamp(1, 64) as usize
        }
    });
    let plan = Plan {
        name: match args.op.as_str() {
            "linear_q4gsw" => "et_vk.linear_q4gsw.default",
            "linear_q4gsw_backward" => "et_vk.linear_q4gsw_backward.default",
            "linear_qcs4w" => "et_vk.linear_qcs4w.default",
            "linear_dq8ca_q4gsw" => "et_vk.linear_dq8ca_q4gsw.default",
            "linear_q8" => "aten._weight_int8pack_mm.default",
            _ => "aten.linear.default",
        },
        helpers: if dq8ca {
            &["torchao.choose_qparams_affine.default"]
        } else {
            &[]
        },
        bytes_per_instance: per_copy + act_bytes + out_bytes,
        flops_per_instance: 2.0 * m as f64 * n as f64 * (if backward { kp } else { k }) as f64,
    };

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut g = GraphBuilder::new();
    let mut named = HashMap::new();
    let x_f16 = args.x_f16 && !fp32;
    let x_from = args.x_from.as_str();
    if !matches!(x_from, "copy" | "norm" | "silu") {
        return Err(CliError(format!(
            "bench: --x-from {x_from:?}: copy, norm or silu"
        )));
    }
    if x_from != "copy" && (!dq8ca || x_f16) {
        return Err(CliError(format!(
            "bench: --x-from {x_from} is for linear_dq8ca_q4gsw with fp32 x"
        )));
    }
    let x_vals: Vec<f32> = (0..m * in_feat)
        .map(|_| rng.uniform(-1.0, 1.0))
        .map(|v| if x_f16 { f16_to_f32(f32_to_f16(v)) } else { v })
        .map(|v| match (x_from, v < 0.0) {
            ("norm", true) => -1.0,
            ("norm", false) => 1.0,
            ("silu", true) => -104.0 + 6.0 * v,
            ("silu", false) => 17.0 + 3.0 * v,
            _ => v,
        })
        .collect();
    // The norm's weight, and the linears' x: the normalized rows (x * w exactly: every row's
    // mean square is 1 and eps 0), or silu(x) * x (x * x, or -0).
    let norm_w: Vec<f32> = (0..in_feat).map(|_| rng.uniform(0.5, 1.5)).collect();
    let x_linear: Vec<f32> = match x_from {
        "norm" => x_vals
            .iter()
            .enumerate()
            .map(|(i, &v)| v * norm_w[i % in_feat])
            .collect(),
        "silu" => x_vals
            .iter()
            .map(|&v| if v > 0.0 { v * v } else { -0.0 })
            .collect(),
        _ => x_vals.clone(),
    };
    let x_dtype = if x_f16 {
        DataType::Float16
    } else {
        DataType::Float32
    };
    let x = g.add_tensor(x_dtype, &[m, in_feat]);
    g.mark_input(x);
    let mut instances = Vec::new();
    let mut first_out = None;
    for c in 0..copies {
        let weights: Vec<u8> = if fp32 {
            f32_bytes(
                &(0..n * k)
                    .map(|_| rng.uniform(-0.05, 0.05))
                    .collect::<Vec<_>>(),
            )
        } else {
            (0..w_bytes).map(|_| rng.next_u64() as u8).collect()
        };
        let scales: Vec<f32> = (0..s_count).map(|_| rng.uniform(0.005, 0.015)).collect();
        let wkey = named_key(&weights);
        let w = if fp32 {
            g.add_constant_named(DataType::Float32, &[n, k], &wkey)
        } else if q8 {
            g.add_constant_named(DataType::Int8, &[n, k], &wkey)
        } else {
            g.add_constant_named(DataType::Uint8, &[n, kp / 2], &wkey)
        };
        named.insert(wkey, weights.clone());
        let out = g.add_tensor(DataType::Float32, &[m, out_feat]);
        if fp32 {
            let null = g.add_null();
            g.add_op(plan.name, &[x, w, null, out]);
        } else {
            let sb = f32_bytes(&scales);
            let skey = named_key(&sb);
            named.insert(skey.clone(), sb);
            let s = if q4gsw {
                g.add_constant_named(DataType::Float32, &[groups, n], &skey)
            } else {
                g.add_constant_named(DataType::Float32, &[n], &skey)
            };
            if q4gsw {
                let gsv = g.add_int(gs as i64);
                if backward {
                    g.add_op(plan.name, &[x, w, s, gsv, out]);
                } else if dq8ca {
                    // Each instance quantizes an x of its own (a copy made by an untimed
                    // clone node, as a norm writes x before it in a model): on one shared x
                    // the runtime would leave out every choose_qparams node but the first
                    // (ops/quantize.rs), and the bench would time less than one linear.
                    let x = {
                        let xc = g.add_tensor(x_dtype, &[m, in_feat]);
                        match x_from {
                            "norm" => {
                                let wb = f32_bytes(&norm_w);
                                let wkey = named_key(&wb);
                                named.insert(wkey.clone(), wb);
                                let wn = g.add_constant_named(DataType::Float32, &[in_feat], &wkey);
                                let eps = g.add_double(0.0);
                                g.add_op("et_vk.rms_norm.default", &[x, wn, eps, xc]);
                            }
                            "silu" => {
                                let sx = g.add_tensor(x_dtype, &[m, in_feat]);
                                g.add_op("aten.silu.default", &[x, sx]);
                                g.add_op("aten.mul.Tensor", &[sx, x, xc]);
                            }
                            _ => {
                                let fmt = g.add_null();
                                g.add_op("aten.clone.default", &[x, fmt, xc]);
                            }
                        }
                        xc
                    };
                    // As the exporter writes it: choose_qparams_affine (11 args) into per-row
                    // scale / zero-point tensors, then the linear with code sums it ignores.
                    let (sc, zp) = (
                        g.add_tensor(DataType::Float32, &[m]),
                        g.add_tensor(DataType::Int8, &[m]),
                    );
                    let args = [
                        x,
                        g.add_string("ASYMMETRIC"),
                        g.add_int_list(&[1, k as i64]),
                        g.add_null(),
                        g.add_int(-128),
                        g.add_int(127),
                        g.add_double(f64::from(f32::EPSILON)),
                        g.add_null(),
                        g.add_null(),
                        g.add_bool(false),
                        g.add_value_list(&[sc, zp]),
                    ];
                    g.add_op("torchao.choose_qparams_affine.default", &args);
                    let sums = vec![0u8; groups * n * 4];
                    let sums_key = named_key(&sums);
                    named.insert(sums_key.clone(), sums);
                    let sums_v = g.add_constant_named(DataType::Int32, &[groups, n], &sums_key);
                    let null = g.add_null();
                    g.add_op(plan.name, &[x, sc, zp, w, sums_v, s, gsv, null, out]);
                } else {
                    let null = g.add_null();
                    g.add_op(plan.name, &[x, w, s, gsv, null, out]);
                }
            } else {
                g.add_op(plan.name, &[x, w, s, out]);
            }
        }
        if c == 0 {
            g.mark_output(out);
            first_out = Some(());
        }
        instances.push(Instance { weights, scales });
    }
    debug_assert!(first_out.is_some());
    let blob = g.finish_delegate();
    let t0 = std::time::Instant::now();
    let mut delegate = Delegate::init(backend, &blob, &[], &Named(named)).map_err(err)?;
    let load_ms = t0.elapsed().as_secs_f64() * 1e3;

    let input = if x_f16 {
        HostTensor {
            dtype: HostDType::Half,
            sizes: vec![m, in_feat],
            data: x_vals
                .iter()
                .flat_map(|&v| f32_to_f16(v).to_le_bytes())
                .collect(),
        }
    } else {
        HostTensor {
            dtype: HostDType::Float,
            sizes: vec![m, in_feat],
            data: f32_bytes(&x_vals),
        }
    };
    let mut args_v = vec![
        DelegateArg::Tensor(input),
        DelegateArg::Tensor(HostTensor {
            dtype: HostDType::Float,
            sizes: vec![m, out_feat],
            data: vec![0; m * out_feat * 4],
        }),
    ];
    delegate.execute(&mut args_v).map_err(err)?;
    let DelegateArg::Tensor(out) = &args_v[1] else {
        return Err(CliError("bench: output missing".into()));
    };
    let got: Vec<f32> = out
        .data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let inst = &instances[0];
    // Dequantized weight element (n, k) of instance 0.
    let wq = |row: usize, col: usize| -> f64 {
        if fp32 {
            let o = 4 * (row * k + col);
            f64::from(f32::from_le_bytes([
                inst.weights[o],
                inst.weights[o + 1],
                inst.weights[o + 2],
                inst.weights[o + 3],
            ]))
        } else if q8 {
            f64::from(inst.weights[row * k + col] as i8) * f64::from(inst.scales[row])
        } else {
            let b = inst.weights[row * (kp / 2) + col / 2];
            let code = if q4gsw == col.is_multiple_of(2) {
                b & 0xF
            } else {
                b >> 4
            };
            let s = if q4gsw {
                inst.scales[(col / gs) * n + row]
            } else {
                inst.scales[row]
            };
            (f64::from(code) - 8.0) * f64::from(s)
        }
    };
    // The 8da4w reference's x: each row quantized to int8 and back as torchao does in fp32.
    let x_ref: Vec<f32> = if dq8ca {
        x_linear
            .chunks(in_feat)
            .flat_map(|row| {
                let lo = row.iter().copied().fold(0f32, f32::min);
                let hi = row.iter().copied().fold(0f32, f32::max);
                let scale = ((hi - lo) / 255.0).max(f32::EPSILON);
                let zp = (-128.0 - (lo / scale).round_ties_even()).clamp(-128.0, 127.0);
                row.iter()
                    .map(move |&v| {
                        let q = ((v * (1.0 / scale)).round_ties_even() + zp).clamp(-128.0, 127.0);
                        (q - zp) * scale
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    } else {
        x_linear
    };
    let mut worst = 0f64;
    let samples = 48.min(m * out_feat);
    for i in 0..samples {
        let idx = (rng.next_u64() as usize) % (m * out_feat);
        let (row, col) = (idx / out_feat, idx % out_feat);
        let mut acc = 0f64;
        let mut mag = 0f64;
        for r in 0..in_feat {
            let term = f64::from(x_ref[row * in_feat + r])
                * if backward { wq(r, col) } else { wq(col, r) };
            acc += term;
            mag += term.abs();
        }
        worst = worst.max(sample_error(got[idx], acc, mag));
        let _ = i;
    }
    let check = if worst <= 1e-5 { "ok" } else { "MISMATCH" };
    // Kernel debugging: the first instance's operands and output as raw little-endian files
    // (PREFIX.x.f32, PREFIX.w.u8, PREFIX.s.f32, PREFIX.out.f32) for an offline comparison.
    if let Some(prefix) = std::env::var_os("ETVK_BENCH_DUMP") {
        let prefix = prefix.to_string_lossy().into_owned();
        let files: [(&str, Vec<u8>); 4] = [
            ("x.f32", f32_bytes(&x_vals)),
            ("w.u8", inst.weights.clone()),
            ("s.f32", f32_bytes(&inst.scales)),
            ("out.f32", out.data.clone()),
        ];
        for (ext, bytes) in files {
            let path = format!("{prefix}.{ext}");
            std::fs::write(&path, bytes)
                .map_err(|e| CliError(format!("bench: cannot write {path}: {e}")))?;
        }
    }

    let mut per_instance = Vec::with_capacity(args.iters);
    let mut per_instance_barrier = Vec::with_capacity(args.iters);
    // Replays: no host copies between repetitions, which left an H200 idle through half of
    // each M = 2048 execute and its driver lowering the SM clock to 555-1170 MHz (session
    // 12: one kernel read 17 or 37 ms by the process). GPU time of the op's instances
    // against the wall time says how busy the GPU was.
    let (mut gpu_us, mut wall_us) = (0f64, 0f64);
    warm_up(&mut delegate)?;
    for _ in 0..args.iters.max(1) {
        let t = std::time::Instant::now();
        delegate.replay().map_err(err)?;
        wall_us += t.elapsed().as_secs_f64() * 1e6;
        let ops: Vec<&str> = std::iter::once(plan.name)
            .chain(plan.helpers.iter().copied())
            .collect();
        let (kernel, with_barrier) = op_times_us(delegate.profile_nodes(), &ops, copies)?;
        gpu_us += with_barrier * copies as f64;
        per_instance.push(kernel);
        per_instance_barrier.push(with_barrier);
    }
    if std::env::var_os("ETVK_BENCH_PROFILE").is_some() {
        for (name, us) in delegate.profile() {
            outln!("  node {name}: {us:.1} us");
        }
    }
    // The kernels that ran (the op's dispatch nodes, `op/kernel`, that launched work), in
    // node order.
    let mut kernels: Vec<String> = Vec::new();
    for t in delegate.profile_nodes().iter().filter(|t| t.launched) {
        let name = &t.op;
        if is_node_of(name, plan.name) {
            let k = name.rsplit('/').next().unwrap_or(name).to_string();
            if !kernels.contains(&k) {
                kernels.push(k);
            }
        }
    }
    // The dump's output once more from a launch after the timed replays (PREFIX.warm.out.f32):
    // the first launch above met cold TLBs and caches, which a timing diagnostic written to
    // the output (the half GEMV's TIMELINE) would otherwise report as the kernel's own ramp.
    if let Some(prefix) = std::env::var_os("ETVK_BENCH_DUMP") {
        delegate.execute(&mut args_v).map_err(err)?;
        let DelegateArg::Tensor(warm) = &args_v[1] else {
            return Err(CliError("bench: output missing".into()));
        };
        let path = format!("{}.warm.out.f32", prefix.to_string_lossy());
        std::fs::write(&path, &warm.data)
            .map_err(|e| CliError(format!("bench: cannot write {path}: {e}")))?;
    }
    let us = median(&per_instance);
    let us_barrier = median(&per_instance_barrier);
    let gbps = plan.bytes_per_instance as f64 / (us * 1e-6) / 1e9;
    let tflops = plan.flops_per_instance / (us * 1e-6) / 1e12;
    outln!(
        "{} M={m} K={k} N={n} gs={gs}: {copies} copies ({:.1} MiB working set), load {load_ms:.0} ms, GPU busy {:.0}% of the timed replays, check {check} (worst sampled rel err {worst:.2e}), kernels {}",
        args.op,
        (per_copy * copies as u64) as f64 / (1 << 20) as f64,
        100.0 * gpu_us / wall_us.max(1e-9),
        kernels.join(" + ")
    );
    outln!("| op | M | K | N | median us | GB/s eff | TFLOP/s | read ceiling GB/s | fraction |");
    outln!(
        "| {} | {m} | {k} | {n} | {us:.1} | {gbps:.0} | {tflops:.2} | {:.0} | {:.2} |",
        args.op,
        read.gbps,
        gbps / read.gbps
    );
    // Until session 9 the timed interval ended after the barrier that follows the op.
    outln!(
        "with the barrier after each instance: {us_barrier:.1} us ({:.2} of the read ceiling)",
        plan.bytes_per_instance as f64 / (us_barrier * 1e-6) / 1e9 / read.gbps
    );
    // A plain read of the same bytes from DRAM, launch and ramp included: what no kernel of
    // this size gets under (the ceiling above is a 2 GiB read, which amortizes both).
    if plan.bytes_per_instance < (256 << 20) {
        let same = read_rotating(backend, plan.bytes_per_instance, 20)?;
        outln!(
            "same-size read: {:.1} MiB in {:.1} us ({:.0} GB/s, {:.2} of the ceiling); the op takes {:.2}x that",
            same.bytes as f64 / (1 << 20) as f64,
            same.median_us,
            same.gbps,
            same.gbps / read.gbps,
            us / same.median_us
        );
        // The same read by a launch of persistent size (a diagnostic: is a plain read's
        // time that of its launch shape?).
        if let Some(groups) = std::env::var("ETVK_SAME_READ_GROUPS")
            .ok()
            .and_then(|v| v.parse::<u32>().ok())
        {
            let same = etvk_runtime::bench::read_rotating_in(
                backend,
                plan.bytes_per_instance,
                20,
                Some(groups),
            )?;
            outln!(
                "same-size read in {groups} workgroups of 256: {:.1} us ({:.2} of the ceiling); the op takes {:.2}x that",
                same.median_us,
                same.gbps / read.gbps,
                us / same.median_us
            );
        }
    }
    if check != "ok" {
        return Err(CliError(format!(
            "bench {}: sampled outputs differ from the f64 reference (worst relative error {worst:.2e})",
            args.op
        )));
    }
    Ok(())
}

/// Replays for at least [`WARM_UP`] of wall time before the timed ones. The GPU idles while
/// a program loads (pipelines compiled, the tensor-core self-check), and an H200's driver
/// then starts the next work at a lowered clock: session 14's table, its first tensor-core
/// backward after a cold shader cache (2.6 s load), timed all 20 replays of M = 32 at 484.9
/// us against 123.0 in the runs before. On a slow device one replay suffices.
fn warm_up(delegate: &mut Delegate) -> Result<(), CliError> {
    let start = std::time::Instant::now();
    for _ in 0..10_000 {
        delegate.replay().map_err(err)?;
        if start.elapsed() >= WARM_UP {
            break;
        }
    }
    Ok(())
}

/// Wall time of [`warm_up`]'s replays.
const WARM_UP: std::time::Duration = std::time::Duration::from_millis(300);

fn bench_adamw(
    backend: &Arc<Backend>,
    args: &BenchArgs,
    ceiling_bytes: u64,
) -> Result<(), CliError> {
    let numel = args.numel;
    let copy = copy_ceiling(backend, ceiling_bytes, 20)?;
    print_ceiling("copy rate", &copy);
    let mut g = GraphBuilder::new();
    let mut named = HashMap::new();
    let mut rng = Rng(7);
    let mut constant = |g: &mut GraphBuilder, rng: &mut Rng, lo: f32, hi: f32| {
        let v: Vec<f32> = (0..numel).map(|_| rng.uniform(lo, hi)).collect();
        let b = f32_bytes(&v);
        let key = named_key(&b);
        named.insert(key.clone(), b);
        g.add_constant_named(DataType::Float32, &[numel], &key)
    };
    let p = constant(&mut g, &mut rng, -1.0, 1.0);
    let mo = constant(&mut g, &mut rng, -0.1, 0.1);
    let v = constant(&mut g, &mut rng, 0.0, 0.01);
    let grad = g.add_tensor(DataType::Float32, &[numel]);
    g.mark_input(grad);
    let scalars: Vec<usize> = [1e-3, 0.9, 0.999, 1e-8, 0.01, 0.1, 0.001]
        .iter()
        .map(|x| g.add_double(*x))
        .collect();
    let out = g.add_null();
    let mut op_args = vec![p, mo, v, grad];
    op_args.extend(&scalars);
    op_args.push(out);
    g.add_op("et_vk.adamw_step.default", &op_args);
    // A graph needs an output: a tiny tensor produced from grad keeps the graph valid.
    let probe = g.add_tensor(DataType::Float32, &[numel]);
    let alpha = g.add_int(1);
    g.add_op("aten.add.Tensor", &[grad, grad, alpha, probe]);
    g.mark_output(probe);
    let blob = g.finish_delegate();
    let mut delegate = Delegate::init(backend, &blob, &[], &Named(named)).map_err(err)?;
    let grad_data: Vec<f32> = (0..numel).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let mut a = vec![
        DelegateArg::Tensor(HostTensor {
            dtype: HostDType::Float,
            sizes: vec![numel],
            data: f32_bytes(&grad_data),
        }),
        DelegateArg::Tensor(HostTensor {
            dtype: HostDType::Float,
            sizes: vec![numel],
            data: vec![0; numel * 4],
        }),
    ];
    delegate.execute(&mut a).map_err(err)?;
    // Replays, as for the linear ops: executes upload grad and read the probe back between
    // steps (1 GiB at 2^27 parameters), idling the GPU, whose driver then lowers its clock.
    let mut times = Vec::new();
    warm_up(&mut delegate)?;
    for _ in 0..args.iters.max(1) {
        delegate.replay().map_err(err)?;
        times.push(op_times_us(delegate.profile_nodes(), &["et_vk.adamw_step.default"], 1)?.0);
    }
    let us = median(&times);
    let bytes = 28.0 * numel as f64;
    let gbps = bytes / (us * 1e-6) / 1e9;
    outln!("| op | numel | median us | GB/s eff (28 B/param) | copy rate GB/s | fraction |");
    outln!(
        "| adamw_step | {numel} | {us:.1} | {gbps:.0} | {:.0} | {:.2} |",
        copy.gbps,
        gbps / copy.gbps
    );
    Ok(())
}

/// Largest accepted error of the cooperative-matrix GEMM against f64 (relative to
/// max(|ref|, 1)): two 2^-24 (one f32::EPSILON) per accumulated product.
fn coopmat_tolerance(k: usize) -> f64 {
    k as f64 * f64::from(f32::EPSILON)
}

/// Relative error of one sampled output against its f64 reference `want`, whose terms' absolute
/// values sum to `mag`. A NaN or infinite output counts as an infinite error: `f64::max`
/// drops a NaN, so a kernel that wrote NaN everywhere would otherwise pass the check (it did
/// in session 17, with a fragment-layout guard that wrote NaN).
fn sample_error(got: f32, want: f64, mag: f64) -> f64 {
    if !got.is_finite() {
        return f64::INFINITY;
    }
    (f64::from(got) - want).abs() / mag.max(1e-30)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(op: &str, us: f64, dispatch_us: f64) -> NodeTime {
        NodeTime {
            op: op.to_string(),
            node_id: 0,
            us,
            dispatch_us,
            launched: true,
        }
    }

    /// An instance runs from its first dispatch's start to its last one's end: its own
    /// barriers count, the one after it does not; other ops' nodes are left out.
    #[test]
    fn op_times_split_instances_and_leave_the_last_barrier_out() {
        let op = "et_vk.linear_q4gsw.default";
        let nodes = [
            node("aten.add.Tensor", 100.0, 99.0),
            node(&format!("{op}/q4_mma_limbs"), 5.0, 4.0),
            node(&format!("{op}/q4_linear_mma_f1"), 50.0, 49.0),
            node(&format!("{op}/q4_linear_reduce"), 3.0, 2.5),
            node(&format!("{op}/q4_mma_limbs"), 6.0, 5.0),
            node(&format!("{op}/q4_linear_mma_f1"), 52.0, 51.0),
            node(&format!("{op}/q4_linear_reduce"), 4.0, 3.0),
        ];
        let (kernel, with_barrier) = op_times_us(&nodes, &[op], 2).unwrap();
        assert_eq!(kernel, (5.0 + 50.0 + 2.5 + 6.0 + 52.0 + 3.0) / 2.0);
        assert_eq!(with_barrier, (58.0 + 62.0) / 2.0);
        let e = op_times_us(&nodes, &[op], 4).unwrap_err();
        assert!(e.0.contains("6 timed dispatches"), "{}", e.0);
        assert!(op_times_us(&nodes, &["et_vk.other.default"], 1).is_err());
    }

    /// A helper op's nodes (the 8da4w linear's choose_qparams) count toward the instance
    /// they precede.
    #[test]
    fn op_times_count_helper_ops() {
        let (op, helper) = (
            "et_vk.linear_dq8ca_q4gsw.default",
            "torchao.choose_qparams_affine.default",
        );
        let nodes = [
            node(helper, 3.0, 2.0),
            node(op, 2.0, 1.5),
            node(&format!("{op}/q4_linear_gemv_half"), 20.0, 19.0),
            node(helper, 4.0, 3.0),
            node(op, 2.0, 1.0),
            node(&format!("{op}/q4_linear_gemv_half"), 22.0, 21.0),
        ];
        let (kernel, with_barrier) = op_times_us(&nodes, &[op, helper], 2).unwrap();
        assert_eq!(kernel, (3.0 + 2.0 + 19.0 + 4.0 + 2.0 + 21.0) / 2.0);
        assert_eq!(with_barrier, (25.0 + 28.0) / 2.0);
    }

    /// A non-finite output fails the check whatever the other samples say.
    #[test]
    fn non_finite_outputs_are_infinite_errors() {
        assert!((sample_error(1.5, 1.0, 2.0) - 0.25).abs() < 1e-12);
        let worst = [
            sample_error(1.0, 1.0, 1.0),
            sample_error(f32::NAN, 1.0, 1.0),
        ]
        .into_iter()
        .fold(0f64, f64::max);
        assert_eq!(worst, f64::INFINITY);
        assert_eq!(sample_error(f32::INFINITY, 1.0, 1.0), f64::INFINITY);
        assert!(sample_error(f32::NAN, 1.0, 1.0) > 1e-5);
    }
}
