//! Training primitives (fp32): `et_vk.linear_dW.default [d_out, x, out]`,
//! `et_vk.fused_ce.default [logits, labels, n_valid, ValueList(loss, dlogits)]`,
//! `et_vk.adamw_step.default [param, m, v, grad, lr, beta1, beta2, eps, weight_decay, bc1,
//! bc2, ValueList(param', m', v')]` and `et_vk.q4gsw_requant.default [latent, scales,
//! group_size, packed]`. The runtime-scalar and GPU-resident-state paths (`set_scalar`,
//! `read_tensor` / `write_tensor`) are tested in `crates/runtime/tests/training.rs`.

use etvk_format::ir::DataType::{Float32 as F32, Int32 as I32, Uint8 as U8};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::Tensor;

const DW: &str = "et_vk.linear_dW.default";
const CE: &str = "et_vk.fused_ce.default";
const ADAMW: &str = "et_vk.adamw_step.default";
const REQUANT: &str = "et_vk.q4gsw_requant.default";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    v.extend(linear_dw_cases());
    v.extend(fused_ce_cases());
    v.extend(adamw_cases());
    v.extend(requant_cases());
    v
}

/// dW[N, K] = d_out[.., N]^T @ x[.., K] with leading dims flattened.
fn dw_ref(dy: &Tensor, x: &Tensor) -> Tensor {
    let n = *dy.sizes.last().unwrap();
    let k = *x.sizes.last().unwrap();
    let m = dy.numel() / n;
    let mut out = vec![0f64; n * k];
    for i in 0..m {
        for a in 0..n {
            for b in 0..k {
                out[a * k + b] += dy.data[i * n + a] * x.data[i * k + b];
            }
        }
    }
    Tensor::f32(&[n, k], out)
}

fn linear_dw_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    // Static: odd sizes, one past a 64-wide tile edge, 3-D inputs.
    for (i, (dy_sizes, x_sizes)) in [
        (vec![7usize, 13], vec![7usize, 5]),
        (vec![1, 65], vec![1, 1]),
        (vec![2, 3, 70], vec![2, 3, 67]),
    ]
    .into_iter()
    .enumerate()
    {
        let dy = Tensor::rand(&dy_sizes, 9000 + i as u64);
        let x = Tensor::rand(&x_sizes, 9010 + i as u64);
        let want = dw_ref(&dy, &x);
        let mut g = CaseGraph::new();
        let dyi = g.input_like(&dy);
        let xi = g.input_like(&x);
        let out = g.output(F32, &want.sizes);
        g.op(DW, &[dyi, xi, out]);
        let name = format!("d_out{dy_sizes:?} x{x_sizes:?}");
        v.push(
            OpCase::new(DW, name, g)
                .tol(Tol::F32_SUM)
                .run(vec![dy, x], vec![want]),
        );
    }
    // Dynamic: M (tokens) shrinks and grows; the output stays [N, K].
    let mut g = CaseGraph::new();
    let dyi = g.input(F32, &[2, 9, 33]);
    let xi = g.input(F32, &[2, 9, 20]);
    let out = g.output(F32, &[33, 20]);
    g.op(DW, &[dyi, xi, out]);
    let mut case = OpCase::new(DW, "d_out[2, <=9, 33] x[2, <=9, 20]", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, t) in [9usize, 4, 1, 9].into_iter().enumerate() {
        let dy = Tensor::rand(&[2, t, 33], 9100 + i as u64);
        let x = Tensor::rand(&[2, t, 20], 9110 + i as u64);
        let want = dw_ref(&dy, &x);
        case = case.run(vec![dy, x], vec![want]);
    }
    v.push(case);
    v
}

/// (loss [], dlogits) with rows whose label is outside [0, V) ignored.
fn ce_ref(logits: &Tensor, labels: &Tensor, n_valid: f64) -> (Tensor, Tensor) {
    let v = *logits.sizes.last().unwrap();
    let mut loss = 0f64;
    let mut dl = vec![0f64; logits.numel()];
    for (r, &lab) in labels.data.iter().enumerate() {
        if lab < 0.0 || lab as usize >= v {
            continue;
        }
        let lab = lab as usize;
        let row = &logits.data[r * v..(r + 1) * v];
        let mx = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|x| (x - mx).exp()).sum();
        loss += mx + sum.ln() - row[lab];
        for j in 0..v {
            let onehot = if j == lab { 1.0 } else { 0.0 };
            dl[r * v + j] = ((row[j] - mx).exp() / sum - onehot) / n_valid;
        }
    }
    (
        Tensor::f32(&[], vec![loss / n_valid]),
        Tensor::f32(&logits.sizes, dl),
    )
}

/// Labels for `rows` rows of a `v`-wide vocabulary: every fifth row ignored (-100), the
/// others in range; returns the labels and the count of valid rows.
fn labels(rows: usize, v: usize, seed: u64) -> (Tensor, f64) {
    let mut t = Tensor::rand_int(I32, &[rows], 0, v as i64 - 1, seed);
    for (r, x) in t.data.iter_mut().enumerate() {
        if r % 5 == 1 {
            *x = -100.0;
        }
    }
    let valid = t.data.iter().filter(|x| **x >= 0.0).count();
    (t, valid as f64)
}

fn fused_ce_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    // Static: a vocabulary wider than the 64-lane workgroup, masked rows, rows = 7 and 1.
    for (i, (rows, vocab)) in [(7usize, 1000usize), (1, 1000), (6, 5)]
        .into_iter()
        .enumerate()
    {
        let logits = Tensor::rand_range(F32, &[rows, vocab], -8.0, 8.0, 9200 + i as u64);
        let (lab, valid) = labels(rows, vocab, 9210 + i as u64);
        let n_valid = valid.max(1.0);
        let (loss, dl) = ce_ref(&logits, &lab, n_valid);
        let mut g = CaseGraph::new();
        let li = g.input_like(&logits);
        let yi = g.input_like(&lab);
        let nv = g.double(n_valid);
        let lo = g.output(F32, &[]);
        let dlo = g.output(F32, &[rows, vocab]);
        let outs = g.value_list(&[lo, dlo]);
        g.op(CE, &[li, yi, nv, outs]);
        let name = format!("logits[{rows}, {vocab}], n_valid {n_valid}");
        v.push(
            OpCase::new(CE, name, g)
                .tol(Tol::F32_SUM)
                .run(vec![logits, lab], vec![loss, dl]),
        );
    }
    // Dynamic: 3-D logits [2, <=5, 67] whose token count changes; n_valid fixed at 3.
    let mut g = CaseGraph::new();
    let li = g.input(F32, &[2, 5, 67]);
    let yi = g.input(I32, &[10]);
    let nv = g.double(3.0);
    let lo = g.output(F32, &[]);
    let dlo = g.output(F32, &[2, 5, 67]);
    let outs = g.value_list(&[lo, dlo]);
    g.op(CE, &[li, yi, nv, outs]);
    let mut case = OpCase::new(CE, "logits[2, <=5, 67], labels[<=10]", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, t) in [5usize, 2, 5].into_iter().enumerate() {
        let logits = Tensor::rand_range(F32, &[2, t, 67], -4.0, 4.0, 9300 + i as u64);
        let (lab, _) = labels(2 * t, 67, 9310 + i as u64);
        let (loss, dl) = ce_ref(&logits, &lab, 3.0);
        case = case.run(vec![logits, lab], vec![loss, dl]);
    }
    v.push(case);
    v
}

/// AdamW hyperparameters of the cases: lr, beta1, beta2, eps, weight decay, bc1, bc2.
const HP: [f64; 7] = [1e-2, 0.9, 0.999, 1e-8, 0.01, 0.1, 0.001];

/// One f64 AdamW step (§4.4 order) with the scalars rounded to f32 as the GPU holds them.
fn adamw_ref(p: &Tensor, m: &Tensor, v: &Tensor, g: &Tensor) -> (Tensor, Tensor, Tensor) {
    let h: Vec<f64> = HP.iter().map(|x| *x as f32 as f64).collect();
    let (lr, b1, b2, eps, wd, bc1, bc2) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6]);
    let (mut po, mut mo, mut vo) = (p.clone(), m.clone(), v.clone());
    for i in 0..p.numel() {
        let gi = g.data[i];
        let w = p.data[i] - lr * wd * p.data[i];
        mo.data[i] = b1 * m.data[i] + (1.0 - b1) * gi;
        vo.data[i] = b2 * v.data[i] + (1.0 - b2) * gi * gi;
        po.data[i] = w - lr * (mo.data[i] / bc1) / ((vo.data[i] / bc2).sqrt() + eps);
    }
    // Round like fp32 storage.
    let r = |t: Tensor| Tensor::f32(&t.sizes.clone(), t.data);
    (r(po), r(mo), r(vo))
}

/// The op on `param`, `m`, `v` value ids and a grad input; outputs are the updated three.
fn adamw_graph(g: &mut CaseGraph, p: usize, m: usize, v: usize, sizes: &[usize]) {
    let grad = g.input(F32, sizes);
    let scalars: Vec<usize> = HP.iter().map(|x| g.double(*x)).collect();
    let outs: Vec<usize> = (0..3).map(|_| g.output(F32, sizes)).collect();
    let out = g.value_list(&outs);
    let mut args = vec![p, m, v, grad];
    args.extend(scalars);
    args.push(out);
    g.op(ADAMW, &args);
}

fn adamw_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    // Constant state [5, 7] (35 elements: a partial vec4 at the end), three steps on one
    // delegate: the updated constants persist from one execute to the next.
    let sizes = [5usize, 7];
    let p0 = Tensor::rand(&sizes, 9400);
    let m0 = Tensor::rand_range(F32, &sizes, -0.1, 0.1, 9401);
    let v0 = Tensor::rand_range(F32, &sizes, 0.0, 0.01, 9402);
    let mut g = CaseGraph::new();
    let (pc, mc, vc) = (g.constant(&p0), g.constant(&m0), g.constant(&v0));
    adamw_graph(&mut g, pc, mc, vc, &sizes);
    let mut case = OpCase::new(ADAMW, "constant state [5, 7], 3 steps", g);
    let (mut p, mut m, mut vv) = (p0, m0, v0);
    for step in 0..3 {
        let grad = Tensor::rand(&sizes, 9410 + step);
        (p, m, vv) = adamw_ref(&p, &m, &vv, &grad);
        case = case.run(vec![grad], vec![p.clone(), m.clone(), vv.clone()]);
    }
    v.push(case);

    // Dynamic: param, m, v, grad all graph inputs [<=64], numel changing per run.
    let mut g = CaseGraph::new();
    let pi = g.input(F32, &[64]);
    let mi = g.input(F32, &[64]);
    let vi = g.input(F32, &[64]);
    adamw_graph(&mut g, pi, mi, vi, &[64]);
    let mut case = OpCase::new(ADAMW, "graph-tensor state [<=64]", g).dynamic();
    for (i, n) in [64usize, 17, 1, 64].into_iter().enumerate() {
        let seed = 9500 + 10 * i as u64;
        let p = Tensor::rand(&[n], seed);
        let m = Tensor::rand_range(F32, &[n], -0.1, 0.1, seed + 1);
        let vv = Tensor::rand_range(F32, &[n], 0.0, 0.01, seed + 2);
        let grad = Tensor::rand(&[n], seed + 3);
        let (po, mo, vo) = adamw_ref(&p, &m, &vv, &grad);
        case = case.run(vec![p, m, vv, grad], vec![po, mo, vo]);
    }
    v.push(case);
    v
}

/// The serialized q4gsw bytes of `latent` [n, k] with `scales` [groups, stride].
fn requant_ref(latent: &Tensor, scales: &Tensor, gs: usize) -> Tensor {
    let (n, k) = (latent.sizes[0], latent.sizes[1]);
    let stride = scales.sizes[1];
    let lat: Vec<f32> = latent.data.iter().map(|x| *x as f32).collect();
    let sc: Vec<f32> = scales.data.iter().map(|x| *x as f32).collect();
    let bytes = etvk_runtime::ops::training::q4gsw_requant_ref(&lat, &sc, n, k, gs, stride);
    Tensor::new(
        U8,
        &[n, k.div_ceil(2)],
        bytes.iter().map(|b| *b as f64).collect(),
    )
}

fn requant_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    // Scales [4, 8] covering N <= 8, K = 13 with group size 4; one zero scale.
    let mut scales = Tensor::rand_range(F32, &[4, 8], 0.05, 0.3, 9600);
    scales.data[9] = 0.0;
    // Static N = 7, K = 13 (odd: the last byte's high nibble is padding code 8); latents
    // away from .5 ties plus exact ties at power-of-two scales.
    let latent = Tensor::rand_range(F32, &[7, 13], -2.5, 2.5, 9601);
    let want = requant_ref(&latent, &scales, 4);
    let mut g = CaseGraph::new();
    let li = g.input_like(&latent);
    let sc = g.constant(&scales);
    let gs = g.int(4);
    let out = g.output(U8, &[7, 7]);
    g.op(REQUANT, &[li, sc, gs, out]);
    v.push(
        OpCase::new(REQUANT, "latent[7, 13], scales[4, 8], group 4", g)
            .run(vec![latent], vec![want]),
    );

    let pow2 = Tensor::f32(&[2, 4], vec![0.25, 0.5, 1.0, 2.0, 0.125, 0.5, 4.0, 1.0]);
    let ties = Tensor::f32(
        &[3, 8],
        (0..24)
            .map(|i| {
                let (r, c) = (i / 8, i % 8);
                let s = pow2.data[(c / 4) * 4 + r];
                ((i % 19) as f64 - 9.0 + 0.5) * s
            })
            .collect(),
    );
    let want = requant_ref(&ties, &pow2, 4);
    let mut g = CaseGraph::new();
    let li = g.input_like(&ties);
    let sc = g.constant(&pow2);
    let gs = g.int(4);
    let out = g.output(U8, &[3, 4]);
    g.op(REQUANT, &[li, sc, gs, out]);
    v.push(
        OpCase::new(REQUANT, "exact ties latent[3, 8], power-of-two scales", g)
            .run(vec![ties], vec![want]),
    );

    // Dynamic: N (rows) changes, K fixed.
    let mut g = CaseGraph::new();
    let li = g.input(F32, &[8, 13]);
    let sc = g.constant(&scales);
    let gs = g.int(4);
    let out = g.output(U8, &[8, 7]);
    g.op(REQUANT, &[li, sc, gs, out]);
    let mut case = OpCase::new(REQUANT, "latent[<=8, 13]", g).dynamic();
    for (i, n) in [8usize, 3, 8].into_iter().enumerate() {
        let latent = Tensor::rand_range(F32, &[n, 13], -3.0, 3.0, 9610 + i as u64);
        let want = requant_ref(&latent, &scales, 4);
        case = case.run(vec![latent], vec![want]);
    }
    v.push(case);
    v
}
