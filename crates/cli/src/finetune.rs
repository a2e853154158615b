//! `etvk finetune --reference DIR [--steps N]`: LoRA fine-tuning of a classifier on a frozen
//! 4-bit base, entirely on the GPU, checked step by step against a PyTorch reference.
//!
//! The reference directory (format of `tests/fixtures/lora_reference/`, described by its
//! `meta.json`) holds a 2-layer classifier
//! `h = relu(x W1^T + s (x A1^T) B1^T); logits = h W2^T + s (h A2^T) B2^T` with frozen q4gsw
//! bases W1, W2 and trainable adapters A1, B1, A2, B2 (rank r, s = alpha / r), cross entropy
//! with ignored labels (-100), torch AdamW on the adapters only.
//!
//! One execute of the graph built here is one training step: the forward pass
//! (`linear_q4gsw` for the bases), loss and dlogits (`fused_ce`), gradients through the frozen
//! bases (`linear_q4gsw_backward`), adapter gradients (`linear_dW`, `aten.mm`), and the AdamW
//! updates (`adamw_step`, in place on GPU-resident adapters and moments). Between steps only
//! the batch is uploaded and three scalars change (n_valid and the two bias corrections,
//! through `Delegate::set_scalar`); nothing is rebuilt. The loss returned by step t is computed
//! before step t's update, as the reference records it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clap::Args;
use etvk_format::ir::DataType;
use etvk_format::writer::{named_key, GraphBuilder};
use etvk_host::dtype::DType;
use etvk_host::{npy, Tensor};
use etvk_runtime::{
    Backend, Delegate, DelegateArg, HostDType, HostTensor, NamedData, RuntimeOptions,
};

use crate::bench::Rng;
use crate::error::CliError;

/// Arguments of `etvk finetune`.
#[derive(Debug, Args)]
pub struct FinetuneArgs {
    /// Reference directory (meta.json + .npy files).
    #[arg(long)]
    pub reference: PathBuf,
    /// Steps to run (default: the reference's `dims.steps`). The final adapters are only
    /// compared when all the reference's steps are run.
    #[arg(long)]
    pub steps: Option<usize>,
    /// Relative tolerance for losses and final adapters.
    #[arg(long, default_value_t = 1e-4)]
    pub tolerance: f64,
}

struct Named(HashMap<String, Vec<u8>>);
impl NamedData for Named {
    fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.get(key).map(Vec::as_slice)
    }
}

fn cli(msg: impl Into<String>) -> CliError {
    CliError(msg.into())
}

fn load(dir: &Path, name: &str) -> Result<Tensor, CliError> {
    Ok(npy::read(&dir.join(format!("{name}.npy")))?)
}

fn f32s(t: &Tensor, what: &str) -> Result<Vec<f32>, CliError> {
    let v = t.to_f64_vec().map_err(|e| cli(format!("{what}: {e}")))?;
    Ok(v.into_iter().map(|x| x as f32).collect())
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn dim(meta: &serde_json::Value, key: &str) -> Result<f64, CliError> {
    meta["dims"][key]
        .as_f64()
        .ok_or_else(|| cli(format!("meta.json: dims.{key} missing or not a number")))
}

fn opt(meta: &serde_json::Value, key: &str) -> Result<f64, CliError> {
    meta["optimizer"][key].as_f64().ok_or_else(|| {
        cli(format!(
            "meta.json: optimizer.{key} missing or not a number"
        ))
    })
}

fn shape2(t: &Tensor, what: &str) -> Result<(usize, usize), CliError> {
    match t.sizes[..] {
        [a, b] => Ok((a, b)),
        _ => Err(cli(format!(
            "{what}: expected a 2-D array, got {:?}",
            t.sizes
        ))),
    }
}

/// Relative Frobenius distance `||got - want|| / ||want||`.
fn rel_frobenius(got: &[f64], want: &[f64]) -> f64 {
    let num: f64 = got.iter().zip(want).map(|(g, w)| (g - w) * (g - w)).sum();
    let den: f64 = want.iter().map(|w| w * w).sum();
    (num / den.max(f64::MIN_POSITIVE)).sqrt()
}

/// Value ids of the training graph that the host touches between steps.
struct TrainingGraph {
    blob: Vec<u8>,
    named: Named,
    /// Adapter name -> value id (from the builder's name map; moments are `NAME.adam_m/v`).
    adapters: Vec<(String, usize)>,
    n_valid: usize,
    bias_corrections: Vec<(usize, usize)>,
}

#[allow(clippy::too_many_arguments)]
fn build_graph(
    batch: usize,
    k: usize,
    h: usize,
    v: usize,
    rank: usize,
    scale: f32,
    group_size: usize,
    opt: [f64; 5],
    bases: [(&Tensor, &Tensor); 2],
    adapters_init: [&Tensor; 4],
) -> Result<TrainingGraph, CliError> {
    let mut g = GraphBuilder::new();
    let mut named = HashMap::new();
    let mut constant = |g: &mut GraphBuilder, dtype: DataType, dims: &[usize], bytes: Vec<u8>| {
        let key = named_key(&bytes);
        named.insert(key.clone(), bytes);
        g.add_constant_named(dtype, dims, &key)
    };
    let f32t = DataType::Float32;
    // Frozen bases, serialized q4gsw layout.
    let mut base_ids = Vec::new();
    for (w, s) in bases {
        let (wn, wb) = shape2(w, "base weights")?;
        let (sg, sn) = shape2(s, "base scales")?;
        let wid = constant(&mut g, DataType::Uint8, &[wn, wb], w.data.clone());
        let sid = constant(&mut g, f32t, &[sg, sn], f32_bytes(&f32s(s, "base scales")?));
        base_ids.push((wid, sid));
    }
    // Adapters and their AdamW moments: GPU-resident constants mutated in place.
    let names = ["lora1_A", "lora1_B", "lora2_A", "lora2_B"];
    let dims = [[rank, k], [h, rank], [rank, h], [v, rank]];
    let mut params = Vec::new();
    for ((name, d), init) in names.iter().zip(dims).zip(adapters_init) {
        if init.sizes != d {
            return Err(cli(format!(
                "{name}_init: expected shape {d:?} from meta.json dims, got {:?}",
                init.sizes
            )));
        }
        let p = constant(&mut g, f32t, &d, f32_bytes(&f32s(init, name)?));
        let zeros = vec![0u8; d[0] * d[1] * 4];
        let m = constant(&mut g, f32t, &d, zeros.clone());
        let vv = constant(&mut g, f32t, &d, zeros);
        g.set_name(p, name);
        g.set_name(m, &format!("{name}.adam_m"));
        g.set_name(vv, &format!("{name}.adam_v"));
        params.push((*name, p, m, vv, d));
    }
    let x = g.add_tensor(f32t, &[batch, k]);
    let labels = g.add_tensor(DataType::Int32, &[batch]);
    g.set_staging_dtype(labels, DataType::Int64);
    g.mark_input(x);
    g.mark_input(labels);
    let scale_t = constant(&mut g, f32t, &[1], f32_bytes(&[scale]));
    let gs = g.add_int(group_size as i64);
    let one = g.add_int(1);
    let null = g.add_null();
    let (a1, b1, a2, b2) = (params[0].1, params[1].1, params[2].1, params[3].1);
    let t = |g: &mut GraphBuilder, d: &[usize]| g.add_tensor(f32t, d);

    // Forward.
    let base1 = t(&mut g, &[batch, h]);
    g.add_op(
        "et_vk.linear_q4gsw.default",
        &[x, base_ids[0].0, base_ids[0].1, gs, null, base1],
    );
    let xa1 = t(&mut g, &[batch, rank]);
    g.add_op("aten.linear.default", &[x, a1, null, xa1]);
    let l1 = t(&mut g, &[batch, h]);
    g.add_op("aten.linear.default", &[xa1, b1, null, l1]);
    let l1s = t(&mut g, &[batch, h]);
    g.add_op("aten.mul.Tensor", &[l1, scale_t, l1s]);
    let pre1 = t(&mut g, &[batch, h]);
    g.add_op("aten.add.Tensor", &[base1, l1s, one, pre1]);
    let hid = t(&mut g, &[batch, h]);
    g.add_op("aten.relu.default", &[pre1, hid]);
    let base2 = t(&mut g, &[batch, v]);
    g.add_op(
        "et_vk.linear_q4gsw.default",
        &[hid, base_ids[1].0, base_ids[1].1, gs, null, base2],
    );
    let ha2 = t(&mut g, &[batch, rank]);
    g.add_op("aten.linear.default", &[hid, a2, null, ha2]);
    let l2 = t(&mut g, &[batch, v]);
    g.add_op("aten.linear.default", &[ha2, b2, null, l2]);
    let l2s = t(&mut g, &[batch, v]);
    g.add_op("aten.mul.Tensor", &[l2, scale_t, l2s]);
    let logits = t(&mut g, &[batch, v]);
    g.add_op("aten.add.Tensor", &[base2, l2s, one, logits]);

    // Loss and dlogits; n_valid is a runtime scalar (ignored labels vary per batch).
    let n_valid = g.add_double(1.0);
    let loss = g.add_tensor(f32t, &[]);
    let dlogits = t(&mut g, &[batch, v]);
    let pair = g.add_value_list(&[loss, dlogits]);
    g.add_op("et_vk.fused_ce.default", &[logits, labels, n_valid, pair]);

    // Backward.
    let dl2 = t(&mut g, &[batch, v]);
    g.add_op("aten.mul.Tensor", &[dlogits, scale_t, dl2]);
    let d_b2 = t(&mut g, &[v, rank]);
    g.add_op("et_vk.linear_dW.default", &[dl2, ha2, d_b2]);
    let dha2 = t(&mut g, &[batch, rank]);
    g.add_op("aten.mm.default", &[dl2, b2, dha2]);
    let d_a2 = t(&mut g, &[rank, h]);
    g.add_op("et_vk.linear_dW.default", &[dha2, hid, d_a2]);
    let dh_base = t(&mut g, &[batch, h]);
    g.add_op(
        "et_vk.linear_q4gsw_backward.default",
        &[dlogits, base_ids[1].0, base_ids[1].1, gs, dh_base],
    );
    let dh_lora = t(&mut g, &[batch, h]);
    g.add_op("aten.mm.default", &[dha2, a2, dh_lora]);
    let dh = t(&mut g, &[batch, h]);
    g.add_op("aten.add.Tensor", &[dh_base, dh_lora, one, dh]);
    let zero = g.add_double(0.0);
    let dpre1 = t(&mut g, &[batch, h]);
    g.add_op("aten.threshold_backward.default", &[dh, pre1, zero, dpre1]);
    let dl1 = t(&mut g, &[batch, h]);
    g.add_op("aten.mul.Tensor", &[dpre1, scale_t, dl1]);
    let d_b1 = t(&mut g, &[h, rank]);
    g.add_op("et_vk.linear_dW.default", &[dl1, xa1, d_b1]);
    let dxa1 = t(&mut g, &[batch, rank]);
    g.add_op("aten.mm.default", &[dl1, b1, dxa1]);
    let d_a1 = t(&mut g, &[rank, k]);
    g.add_op("et_vk.linear_dW.default", &[dxa1, x, d_a1]);

    // Updates: every gradient above is computed before any adapter changes.
    let [lr, beta1, beta2, eps, wd] = opt;
    let lr = g.add_double(lr);
    let beta1 = g.add_double(beta1);
    let beta2 = g.add_double(beta2);
    let eps = g.add_double(eps);
    let wd = g.add_double(wd);
    let mut bias_corrections = Vec::new();
    for ((_, p, m, vv, _), grad) in params.iter().zip([d_a1, d_b1, d_a2, d_b2]) {
        let bc1 = g.add_double(1.0);
        let bc2 = g.add_double(1.0);
        bias_corrections.push((bc1, bc2));
        let out = g.add_null();
        g.add_op(
            "et_vk.adamw_step.default",
            &[*p, *m, *vv, grad, lr, beta1, beta2, eps, wd, bc1, bc2, out],
        );
    }
    g.mark_output(loss);
    let (blob, names) = g.finish_delegate_named();
    Ok(TrainingGraph {
        blob,
        named: Named(named),
        adapters: names
            .iter()
            .filter(|(n, _)| !n.contains('.'))
            .map(|(n, id)| (n.clone(), *id))
            .collect(),
        n_valid,
        bias_corrections,
    })
}

/// Run `etvk finetune`.
pub fn finetune(args: &FinetuneArgs) -> Result<(), CliError> {
    let dir = &args.reference;
    let meta_text = std::fs::read_to_string(dir.join("meta.json"))
        .map_err(|e| cli(format!("{}: {e}", dir.join("meta.json").display())))?;
    let meta: serde_json::Value =
        serde_json::from_str(&meta_text).map_err(|e| cli(format!("meta.json: {e}")))?;
    let as_usize = |key: &str| -> Result<usize, CliError> {
        let x = dim(&meta, key)?;
        if x < 1.0 || x.fract() != 0.0 {
            return Err(cli(format!(
                "meta.json: dims.{key} = {x} is not a positive integer"
            )));
        }
        Ok(x as usize)
    };
    let (k, h, v, batch, rank) = (
        as_usize("K")?,
        as_usize("H")?,
        as_usize("V")?,
        as_usize("batch")?,
        as_usize("rank")?,
    );
    let (group_size, batches, ref_steps) = (
        as_usize("group_size")?,
        as_usize("batches")?,
        as_usize("steps")?,
    );
    // s = alpha / rank; `dims.scale` is optional, but must agree with alpha / rank when both
    // are given (a reference whose stated scale differs would make every step fail with a
    // loss mismatch that hides the cause).
    let scale = match (meta["dims"].get("alpha"), meta["dims"].get("scale")) {
        (Some(_), stated) => {
            let derived = dim(&meta, "alpha")? / rank as f64;
            if let Some(stated) = stated {
                let stated = stated
                    .as_f64()
                    .ok_or_else(|| cli("meta.json: dims.scale is not a number"))?;
                if (stated - derived).abs() > 1e-6 * derived.abs() {
                    return Err(cli(format!(
                        "meta.json: dims.scale = {stated} but alpha / rank = {derived}"
                    )));
                }
            }
            derived
        }
        (None, _) => dim(&meta, "scale")?,
    } as f32;
    let (lr, beta1, beta2, eps, wd) = (
        opt(&meta, "lr")?,
        opt(&meta, "beta1")?,
        opt(&meta, "beta2")?,
        opt(&meta, "eps")?,
        opt(&meta, "weight_decay")?,
    );
    let steps = args.steps.unwrap_or(ref_steps);
    if steps > ref_steps {
        return Err(cli(format!(
            "--steps {steps}: the reference has only {ref_steps} steps"
        )));
    }

    let inputs = load(dir, "inputs")?;
    let labels = load(dir, "labels")?;
    if inputs.sizes != [batches, batch, k] || labels.sizes != [batches, batch] {
        return Err(cli(format!(
            "inputs {:?} / labels {:?} do not match dims (batches {batches}, batch {batch}, K {k})",
            inputs.sizes, labels.sizes
        )));
    }
    if !matches!(
        labels.dtype,
        DType::I64 | DType::I32 | DType::I16 | DType::I8
    ) {
        return Err(cli(format!(
            "labels: expected a signed integer array, got {}",
            labels.dtype.name()
        )));
    }
    let labels_all = labels.to_i64_vec()?;
    // torch's cross_entropy(ignore_index=-100) ignores exactly -100 and rejects any other
    // label outside [0, V); fused_ce would silently ignore such a row instead, so catch it here.
    let mut n_valid_per_batch = Vec::with_capacity(batches);
    for (b, row) in labels_all.chunks_exact(batch).enumerate() {
        if let Some((i, l)) = row
            .iter()
            .enumerate()
            .find(|(_, &l)| l != -100 && !(0..v as i64).contains(&l))
        {
            return Err(cli(format!(
                "labels[{b}][{i}] = {l}: labels must be -100 (ignored) or in [0, V = {v})"
            )));
        }
        let n = row.iter().filter(|&&l| l >= 0).count();
        if n == 0 {
            // torch's mean over zero rows is NaN and poisons the adapters: not a usable reference.
            return Err(cli(format!("labels[{b}]: every label is -100 (ignored)")));
        }
        n_valid_per_batch.push(n);
    }
    let expected_losses = load(dir, "expected_losses")?.to_f64_vec()?;
    if expected_losses.len() < ref_steps {
        return Err(cli(format!(
            "expected_losses: {} values for {ref_steps} steps",
            expected_losses.len()
        )));
    }
    let (w1, s1) = (load(dir, "base1_weights")?, load(dir, "base1_scales")?);
    let (w2, s2) = (load(dir, "base2_weights")?, load(dir, "base2_scales")?);
    // Layer l maps n_in -> n_out: weights uint8 [n_out, ceil(n_in / 2)], scales
    // [ceil(n_in / group_size), n_out].
    for (w, sc, what, n_in, n_out) in [(&w1, &s1, "base1", k, h), (&w2, &s2, "base2", h, v)] {
        if w.dtype != DType::U8 {
            return Err(cli(format!(
                "{what}_weights: expected uint8, got {}",
                w.dtype.name()
            )));
        }
        let (want_w, want_s) = (
            [n_out, n_in.div_ceil(2)],
            [n_in.div_ceil(group_size), n_out],
        );
        if w.sizes != want_w || sc.sizes != want_s {
            return Err(cli(format!(
                "{what}_weights {:?} / {what}_scales {:?}: dims (in {n_in}, out {n_out}, group_size {group_size}) need {want_w:?} / {want_s:?}",
                w.sizes, sc.sizes
            )));
        }
    }
    let inits = [
        load(dir, "lora1_A_init")?,
        load(dir, "lora1_B_init")?,
        load(dir, "lora2_A_init")?,
        load(dir, "lora2_B_init")?,
    ];
    let graph = build_graph(
        batch,
        k,
        h,
        v,
        rank,
        scale,
        group_size,
        [lr, beta1, beta2, eps, wd],
        [(&w1, &s1), (&w2, &s2)],
        [&inits[0], &inits[1], &inits[2], &inits[3]],
    )?;
    let backend = Backend::new(&RuntimeOptions::from_env())?;
    outln!("device: {}", backend.device_description());
    let mut delegate = Delegate::init(&backend, &graph.blob, &[], &graph.named)?;
    // GPU time per step is part of the report: whole steps, with the barriers a step has
    // without profiling.
    delegate.set_profiling(true)?;
    delegate.set_profile_whole(true);

    let x_all = f32s(&inputs, "inputs")?;
    let mut worst_loss = 0f64;
    let mut failed = Vec::new();
    outln!("step  loss (etvk)        loss (reference)   rel diff   us/step (GPU)");
    for (step, &want) in expected_losses.iter().enumerate().take(steps) {
        let b = step % batches;
        let xb = &x_all[b * batch * k..(b + 1) * batch * k];
        let lb = &labels_all[b * batch..(b + 1) * batch];
        delegate.set_scalar(graph.n_valid, n_valid_per_batch[b] as f64)?;
        let t = (step + 1) as i32;
        for (bc1, bc2) in &graph.bias_corrections {
            delegate.set_scalar(*bc1, 1.0 - beta1.powi(t))?;
            delegate.set_scalar(*bc2, 1.0 - beta2.powi(t))?;
        }
        let mut call = vec![
            DelegateArg::Tensor(HostTensor {
                dtype: HostDType::Float,
                sizes: vec![batch, k],
                data: f32_bytes(xb),
            }),
            DelegateArg::Tensor(HostTensor {
                dtype: HostDType::Long,
                sizes: vec![batch],
                data: lb.iter().flat_map(|l| l.to_le_bytes()).collect(),
            }),
            DelegateArg::Tensor(HostTensor {
                dtype: HostDType::Float,
                sizes: vec![],
                data: vec![0; 4],
            }),
        ];
        delegate.execute(&mut call)?;
        let DelegateArg::Tensor(loss_t) = &call[2] else {
            return Err(cli("finetune: the loss output is not a tensor"));
        };
        let loss = f64::from(f32::from_le_bytes([
            loss_t.data[0],
            loss_t.data[1],
            loss_t.data[2],
            loss_t.data[3],
        ]));
        let rel = (loss - want).abs() / want.abs().max(f64::MIN_POSITIVE);
        worst_loss = worst_loss.max(rel);
        // A NaN loss fails too.
        if rel.is_nan() || rel > args.tolerance {
            failed.push(format!("step {step} loss {loss} vs {want} (rel {rel:.2e})"));
        }
        let gpu_us: f64 = delegate.profile().iter().map(|(_, us)| us).sum();
        outln!("{step:>4}  {loss:<17.9} {want:<17.9}  {rel:.2e}   {gpu_us:.0}");
    }
    if steps == ref_steps {
        for (name, id) in &graph.adapters {
            let got_t = delegate.read_tensor(*id)?;
            let got: Vec<f64> = got_t
                .data
                .chunks_exact(4)
                .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                .collect();
            let want = load(dir, &format!("expected_final_{name}"))?;
            if got_t.sizes != want.sizes {
                return Err(cli(format!(
                    "expected_final_{name}: shape {:?}, the adapter is {:?}",
                    want.sizes, got_t.sizes
                )));
            }
            let want = want.to_f64_vec()?;
            let rel = rel_frobenius(&got, &want);
            outln!("final {name}: relative Frobenius distance {rel:.2e}");
            // A NaN adapter fails too.
            if rel.is_nan() || rel > args.tolerance {
                failed.push(format!("final {name} (rel {rel:.2e})"));
            }
        }
    } else {
        outln!("(final adapters not compared: ran {steps} of {ref_steps} steps)");
    }
    outln!(
        "worst loss relative difference {worst_loss:.2e} (tolerance {:e})",
        args.tolerance
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(cli(format!(
            "finetune differs from the reference: {}",
            failed.join("; ")
        )))
    }
}

/// A random f32 tensor, uniform in [lo, hi).
fn random_tensor(rng: &mut Rng, sizes: Vec<usize>, lo: f32, hi: f32) -> Result<Tensor, CliError> {
    let n: usize = sizes.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.uniform(lo, hi)).collect();
    Ok(Tensor::from_f32(sizes, &v)?)
}

/// `etvk bench lora_step`: GPU time of one whole LoRA training step (the graph `finetune`
/// builds: forward, loss, backward through the frozen 4-bit bases, adapter gradients, four
/// AdamW updates) against the time of its forward part, on synthetic data at any size.
/// Prints the median over `iters` executes of the summed per-node GPU times.
pub fn bench_lora(
    batch: usize,
    k: usize,
    h: usize,
    rank: usize,
    group_size: usize,
    iters: usize,
) -> Result<(), CliError> {
    let v = h;
    if group_size == 0
        || !k.is_multiple_of(group_size)
        || !h.is_multiple_of(group_size)
        || !group_size.is_multiple_of(4)
    {
        return Err(cli(format!(
            "bench lora_step: K = {k} and N = {h} must be multiples of the group size {group_size} (a multiple of 4)"
        )));
    }
    let mut rng = Rng(0x5DEE_CE66_D1CE_5EED);
    let mut base = |n: usize, kk: usize| -> Result<(Tensor, Tensor), CliError> {
        let codes: Vec<u8> = (0..n * kk.div_ceil(2))
            .map(|_| rng.next_u64() as u8)
            .collect();
        let w = Tensor::new(DType::U8, vec![n, kk.div_ceil(2)], codes)?;
        let s = random_tensor(&mut rng, vec![kk / group_size, n], 0.005, 0.015)?;
        Ok((w, s))
    };
    let (w1, s1) = base(h, k)?;
    let (w2, s2) = base(v, h)?;
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let a1 = random_tensor(&mut rng, vec![rank, k], -0.05, 0.05)?;
    let b1 = random_tensor(&mut rng, vec![h, rank], -0.05, 0.05)?;
    let a2 = random_tensor(&mut rng, vec![rank, h], -0.05, 0.05)?;
    let b2 = random_tensor(&mut rng, vec![v, rank], -0.05, 0.05)?;
    let graph = build_graph(
        batch,
        k,
        h,
        v,
        rank,
        2.0,
        group_size,
        [1e-4, 0.9, 0.999, 1e-8, 0.01],
        [(&w1, &s1), (&w2, &s2)],
        [&a1, &b1, &a2, &b2],
    )?;
    let backend = Backend::new(&RuntimeOptions::from_env())?;
    let mut delegate = Delegate::init(&backend, &graph.blob, &[], &graph.named)?;
    // GPU time per step is part of the report.
    delegate.set_profiling(true)?;
    let x: Vec<f32> = (0..batch * k).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let labels: Vec<i64> = (0..batch)
        .map(|_| (rng.next_u64() % v as u64) as i64)
        .collect();
    delegate.set_scalar(graph.n_valid, batch as f64)?;
    let mut call = vec![
        DelegateArg::Tensor(HostTensor {
            dtype: HostDType::Float,
            sizes: vec![batch, k],
            data: f32_bytes(&x),
        }),
        DelegateArg::Tensor(HostTensor {
            dtype: HostDType::Long,
            sizes: vec![batch],
            data: labels.iter().flat_map(|l| l.to_le_bytes()).collect(),
        }),
        DelegateArg::Tensor(HostTensor {
            dtype: HostDType::Float,
            sizes: vec![],
            data: vec![0; 4],
        }),
    ];
    let (mut steps, mut forwards) = (Vec::new(), Vec::new());
    for it in 0..=iters.max(1) {
        let t = (it + 1) as i32;
        for (bc1, bc2) in &graph.bias_corrections {
            delegate.set_scalar(*bc1, 1.0 - 0.9f64.powi(t))?;
            delegate.set_scalar(*bc2, 1.0 - 0.999f64.powi(t))?;
        }
        delegate.execute(&mut call)?;
        if it == 0 {
            continue; // warm-up
        }
        let profile = delegate.profile();
        let total: f64 = profile.iter().map(|(_, us)| us).sum();
        let forward: f64 = profile
            .iter()
            .take_while(|(name, _)| !name.starts_with("et_vk.fused_ce"))
            .map(|(_, us)| us)
            .sum();
        steps.push(total);
        forwards.push(forward);
    }
    let (step, fwd) = (
        etvk_runtime::bench::median(&steps),
        etvk_runtime::bench::median(&forwards),
    );
    outln!("device: {}", backend.device_description());
    outln!("| graph | batch | K | H = V | rank | gs | step us | forward us | step / forward |");
    outln!(
        "| lora_step | {batch} | {k} | {h} | {rank} | {group_size} | {step:.1} | {fwd:.1} | {:.2} |",
        step / fwd
    );
    Ok(())
}
