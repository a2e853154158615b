//! Ops of the Llama transformer block (the `e1` / `e2` / `g3` fixtures):
//! `et_vk.rms_norm.default(x, weight, eps Double, out)`,
//! `aten._softmax.default(x, dim Int, half_to_float Bool, out)`,
//! `et_vk.apply_rotary_emb.default(xq, xk, freqs_cos, freqs_sin, ValueList(xq_out, xk_out))`,
//! `et_vk.apply_rotary_emb_hf.default(xq, xk, freqs_cos, freqs_sin, start_pos,
//! ValueList(xq_out, xk_out))` (rotate-half, tables `[max_seq, R]` read from row start_pos),
//! `et_vk.apply_rotary_emb_interleaved.default(x, freqs_cis, out)` (x `[B, N, C]`, one
//! table of interleaved (cos, sin) pairs),
//! and the shape copies `aten.squeeze_copy.dims(x, dims IntList, out)`,
//! `aten.unsqueeze_copy.default(x, dim Int, out)`,
//! `aten.slice_copy.Tensor(x, dim, start, end, step, out)` (bounds Int / SymInt / None).
//! References are computed in f64.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase, Val};
use crate::compare::Tol;
use crate::tensor::Tensor;

const RMS_NORM: &str = "et_vk.rms_norm.default";
const SOFTMAX: &str = "aten._softmax.default";
const ROTARY: &str = "et_vk.apply_rotary_emb.default";
const ROTARY_HF: &str = "et_vk.apply_rotary_emb_hf.default";
const ROTARY_IL: &str = "et_vk.apply_rotary_emb_interleaved.default";
const SQUEEZE: &str = "aten.squeeze_copy.dims";
const UNSQUEEZE: &str = "aten.unsqueeze_copy.default";
const SLICE: &str = "aten.slice_copy.Tensor";
const SYM_SIZE: &str = "sym_size.int";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = rms_norm_cases();
    v.extend(add_rms_norm_cases());
    v.extend(softmax_cases());
    v.extend(rotary_cases());
    v.extend(rotary_hf_cases());
    v.extend(rotary_il_cases());
    v.extend(squeeze_cases());
    v.extend(unsqueeze_cases());
    v.extend(slice_cases());
    v
}

fn norm(d: i64, rank: usize) -> usize {
    if d < 0 {
        (d + rank as i64) as usize
    } else {
        d as usize
    }
}

// ---------------------------------------------------------------- rms_norm

fn rms_norm_ref(x: &Tensor, w: &Tensor, eps: f64, dt: DataType) -> Tensor {
    let n = *x.sizes.last().unwrap();
    let mut out = Vec::with_capacity(x.numel());
    for row in x.data.chunks(n) {
        let ms = row.iter().map(|v| v * v).sum::<f64>() / n as f64;
        let r = 1.0 / (ms + eps).sqrt();
        out.extend(row.iter().zip(&w.data).map(|(v, w)| v * r * w));
    }
    Tensor::new(dt, &x.sizes, out)
}

fn rms_norm_case(dt: DataType, sizes: &[usize], weight_const: bool, seed: u64) -> OpCase {
    let n = *sizes.last().unwrap();
    let x = Tensor::rand_range(dt, sizes, -3.0, 3.0, seed);
    let w = Tensor::rand_range(dt, &[n], 0.5, 1.5, seed + 1);
    let eps = 1e-5;
    let want = rms_norm_ref(&x, &w, eps, dt);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let (wi, inputs) = if weight_const {
        (g.constant(&w), vec![x])
    } else {
        (g.input_like(&w), vec![x, w])
    };
    let e = g.double(eps);
    let out = g.output(dt, sizes);
    g.op(RMS_NORM, &[xi, wi, e, out]);
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32_SUM };
    let how = if weight_const { "const" } else { "input" };
    OpCase::new(RMS_NORM, format!("{} {sizes:?} weight {how}", dt.name()), g)
        .tol(tol)
        .run(inputs, vec![want])
}

/// A residual add right before the RMSNorm of its sum, which the runtime runs as one
/// `add_rms_norm` dispatch (ops/fusion.rs): the sum returned too or not, fp32 / fp16, rows
/// resizing; and alpha 2 or a broadcast b, which stay two ops. Against f64.
fn add_rms_norm_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    let mut seed = 9500;
    for (dt, sum_out, alpha, b_row, dynamic, n) in [
        (F32, true, 1.0, false, false, 70),
        (F32, false, 1.0, false, false, 70),
        (F16, true, 1.0, false, false, 70),
        (F32, true, 1.0, false, true, 70),
        (F32, true, 2.0, false, false, 70),
        (F32, true, 1.0, true, false, 70),
        // Rows past the values the 512 invocations hold in registers.
        (F32, true, 1.0, false, true, 4500),
        (F16, false, 1.0, false, false, 5000),
    ] {
        seed += 10;
        let rows = 5;
        let b_sizes = if b_row { vec![1, n] } else { vec![rows, n] };
        let mut g = CaseGraph::new();
        let ai = g.input(dt, &[rows, n]);
        let bi = g.input(dt, &b_sizes);
        let w = Tensor::rand_range(dt, &[n], 0.5, 1.5, seed);
        let wi = g.constant(&w);
        let al = g.int(alpha as i64);
        let sum = if sum_out {
            g.output(dt, &[rows, n])
        } else {
            g.tensor(dt, &[rows, n])
        };
        g.op("aten.add.Tensor", &[ai, bi, al, sum]);
        let e = g.double(1e-5);
        let out = g.output(dt, &[rows, n]);
        g.op(RMS_NORM, &[sum, wi, e, out]);
        let name = format!(
            "{} add then rms_norm{}{}{}{}",
            dt.name(),
            if sum_out { ", sum returned" } else { "" },
            if alpha != 1.0 {
                ", alpha 2: not fused"
            } else {
                ""
            },
            if b_row {
                ", b broadcast: not fused"
            } else {
                ""
            },
            if dynamic { ", rows resize" } else { "" },
        );
        let name = if n == 70 {
            name
        } else {
            format!("{name}, rows of {n}")
        };
        let tol = if dt == F16 { Tol::F16 } else { Tol::F32_SUM };
        let mut case = OpCase::new(RMS_NORM, name, g).tol(tol);
        if dynamic {
            case = case.dynamic();
        }
        let ms: &[usize] = if dynamic { &[5, 1, 3] } else { &[5] };
        for (i, &m) in ms.iter().enumerate() {
            let s = seed + 1 + i as u64;
            let a = Tensor::rand_range(dt, &[m, n], -2.0, 2.0, s);
            let bs = if b_row { vec![1, n] } else { vec![m, n] };
            let b = Tensor::rand_range(dt, &bs, -2.0, 2.0, s + 3);
            // The sum as the add stores it (rounded to the dtype), then normalized.
            let sv: Vec<f64> = (0..m * n)
                .map(|k| {
                    let bv = if b_row { b.data[k % n] } else { b.data[k] };
                    crate::tensor::round_to(dt, a.data[k] + alpha * bv)
                })
                .collect();
            let st = Tensor::new(dt, &[m, n], sv);
            let want = rms_norm_ref(&st, &w, 1e-5, dt);
            let outs = if sum_out { vec![st, want] } else { vec![want] };
            case = case.run(vec![a, b], outs);
        }
        v.push(case);
    }
    v
}

fn rms_norm_cases() -> Vec<OpCase> {
    let mut v = vec![
        rms_norm_case(F32, &[1, 8, 64], true, 9000),
        rms_norm_case(F32, &[3, 5, 7], true, 9002),
        rms_norm_case(F32, &[2, 200], false, 9004),
        rms_norm_case(F32, &[1], true, 9006),
        rms_norm_case(F32, &[4, 1000], true, 9008),
        rms_norm_case(F32, &[65], false, 9010),
        rms_norm_case(F16, &[3, 130], true, 9012),
        // 512 invocations per row: a few values past the 8 each holds in registers, many
        // (the row read again in the write loop), fp16.
        rms_norm_case(F32, &[2, 4100], true, 9014),
        rms_norm_case(F32, &[1, 9000], false, 9016),
        rms_norm_case(F16, &[2, 4500], true, 9018),
    ];
    // Dynamic: rows down then up, rows longer than a workgroup.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[1, 9, 70]);
    let w = Tensor::rand_range(F32, &[70], 0.5, 1.5, 9020);
    let wi = g.constant(&w);
    let e = g.double(1e-6);
    let out = g.output(F32, &[1, 9, 70]);
    g.op(RMS_NORM, &[xi, wi, e, out]);
    let mut case = OpCase::new(RMS_NORM, "dynamic [1, <=9, 70]", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
        let x = Tensor::rand_range(F32, &[1, m, 70], -2.0, 2.0, 9030 + i as u64);
        let want = rms_norm_ref(&x, &w, 1e-6, F32);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- softmax

fn softmax_ref(x: &Tensor, dim: i64, dt: DataType) -> Tensor {
    if x.sizes.is_empty() {
        return Tensor::new(dt, &[], vec![1.0]);
    }
    let d = norm(dim, x.sizes.len());
    let len = x.sizes[d];
    let inner: usize = x.sizes[d + 1..].iter().product();
    let outer: usize = x.sizes[..d].iter().product();
    let mut out = vec![0.0; x.numel()];
    for o in 0..outer {
        for i in 0..inner {
            let idx = |j: usize| (o * len + j) * inner + i;
            let m = (0..len)
                .map(|j| x.data[idx(j)])
                .fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..len).map(|j| (x.data[idx(j)] - m).exp()).sum();
            for j in 0..len {
                out[idx(j)] = (x.data[idx(j)] - m).exp() / sum;
            }
        }
    }
    Tensor::new(dt, &x.sizes, out)
}

fn softmax_graph(dt: DataType, sizes: &[usize], dim: i64) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, sizes);
    let di = g.int(dim);
    let h = g.bool(false);
    let out = g.output(dt, sizes);
    g.op(SOFTMAX, &[xi, di, h, out]);
    g
}

fn softmax_case(dt: DataType, x: Tensor, dim: i64, label: &str) -> OpCase {
    let want = softmax_ref(&x, dim, dt);
    let g = softmax_graph(dt, &x.sizes, dim);
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32 };
    OpCase::new(
        SOFTMAX,
        format!("{} {:?} dim {dim}{label}", dt.name(), x.sizes),
        g,
    )
    .tol(tol)
    .run(vec![x], vec![want])
}

fn softmax_cases() -> Vec<OpCase> {
    let shapes: &[(&[usize], i64)] = &[
        (&[7, 13], -1),
        (&[7, 13], 0),
        (&[2, 3, 5, 7], 1),
        (&[2, 3, 5, 7], -1),
        (&[2, 3, 5, 7], -4),
        (&[1, 2, 8, 8], -1),
        (&[3, 300], 1),
        (&[5], 0),
        (&[], -1),
    ];
    let mut v: Vec<OpCase> = shapes
        .iter()
        .enumerate()
        .map(|(i, (s, d))| {
            let x = Tensor::rand_range(F32, s, -4.0, 4.0, 9100 + i as u64);
            softmax_case(F32, x, *d, "")
        })
        .collect();
    // Large magnitudes need the max shift; -inf is the attention mask's "masked out".
    let mut x = Tensor::rand_range(F32, &[4, 9], -80.0, 80.0, 9120);
    for r in 0..4 {
        for c in (r + 5)..9 {
            x.data[r * 9 + c] = f64::NEG_INFINITY;
        }
    }
    v.push(softmax_case(F32, x, -1, " large and -inf"));
    v.push(softmax_case(
        F16,
        Tensor::rand_range(F16, &[3, 70], -4.0, 4.0, 9121),
        -1,
        "",
    ));
    // Dynamic: the resized dim is the softmax dim, then an outer dim.
    for (dim, seed) in [(0i64, 9130u64), (-1, 9140)] {
        let g = softmax_graph(F32, &[6, 11], dim);
        let mut case = OpCase::new(SOFTMAX, format!("dynamic [<=6, 11] dim {dim}"), g).dynamic();
        for (i, m) in [6usize, 1, 3, 6].into_iter().enumerate() {
            let x = Tensor::rand_range(F32, &[m, 11], -4.0, 4.0, seed + i as u64);
            let want = softmax_ref(&x, dim, F32);
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    v
}

// ---------------------------------------------------------------- rotary

pub(super) fn rotary_ref(x: &Tensor, cos: &Tensor, sin: &Tensor, dt: DataType) -> Tensor {
    let (s, h, d) = (x.sizes[1], x.sizes[2], x.sizes[3]);
    let half = d / 2;
    let mut out = x.data.clone();
    for q in 0..x.numel() / 2 {
        let k = q % half;
        let si = (q / half / h) % s;
        let (c, sn) = (cos.data[si * half + k], sin.data[si * half + k]);
        let (r, i) = (x.data[2 * q], x.data[2 * q + 1]);
        out[2 * q] = r * c - i * sn;
        out[2 * q + 1] = r * sn + i * c;
    }
    Tensor::new(dt, &x.sizes, out)
}

/// Cos / sin tables of the Llama frequencies for `seq` positions and `half` pairs.
pub(super) fn freqs(dt: DataType, seq: usize, half: usize) -> (Tensor, Tensor) {
    let theta = |p: usize, k: usize| p as f64 / 10000f64.powf(2.0 * k as f64 / (2 * half) as f64);
    let mk = |f: fn(f64) -> f64| {
        let data = (0..seq * half)
            .map(|i| f(theta(i / half, i % half)))
            .collect();
        Tensor::new(dt, &[seq, half], data)
    };
    (mk(f64::cos), mk(f64::sin))
}

/// `xq`, `xk` inputs; freqs are the `consts` tables, or two more inputs of sizes `f`.
fn rotary_graph(
    dt: DataType,
    q: &[usize],
    k: &[usize],
    f: &[usize],
    consts: Option<(&Tensor, &Tensor)>,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let qi = g.input(dt, q);
    let ki = g.input(dt, k);
    let (ci, si) = match consts {
        Some((c, s)) => (g.constant(c), g.constant(s)),
        None => (g.input(dt, f), g.input(dt, f)),
    };
    let oq = g.output(dt, q);
    let ok = g.output(dt, k);
    let outs = g.value_list(&[oq, ok]);
    g.op(ROTARY, &[qi, ki, ci, si, outs]);
    g
}

fn rotary_case(dt: DataType, q: &[usize], k: &[usize], seed: u64) -> OpCase {
    let (s, d) = (q[1], q[3]);
    let (c, sn) = freqs(dt, s, d / 2);
    let xq = Tensor::rand_range(dt, q, -2.0, 2.0, seed);
    let xk = Tensor::rand_range(dt, k, -2.0, 2.0, seed + 1);
    let want = vec![rotary_ref(&xq, &c, &sn, dt), rotary_ref(&xk, &c, &sn, dt)];
    let rg = rotary_graph(dt, q, k, &[s, d / 2], Some((&c, &sn)));
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32 };
    OpCase::new(ROTARY, format!("{} xq {q:?} xk {k:?}", dt.name()), rg)
        .tol(tol)
        .run(vec![xq, xk], want)
}

fn rotary_cases() -> Vec<OpCase> {
    let mut v = vec![
        rotary_case(F32, &[1, 8, 2, 32], &[1, 8, 2, 32], 9200),
        // Grouped-query attention: fewer key heads; odd S and D/2.
        rotary_case(F32, &[2, 5, 3, 6], &[2, 5, 1, 6], 9202),
        rotary_case(F32, &[1, 1, 1, 2], &[1, 1, 1, 2], 9204),
        rotary_case(F16, &[1, 7, 4, 10], &[1, 7, 2, 10], 9206),
    ];
    // Dynamic sequence length, freqs as inputs sized [S, D/2] like the sliced tables of g3.
    let rg = rotary_graph(F32, &[1, 8, 2, 6], &[1, 8, 1, 6], &[8, 3], None);
    let mut case = OpCase::new(ROTARY, "dynamic S <= 8", rg).dynamic();
    for (i, s) in [8usize, 1, 3, 8].into_iter().enumerate() {
        let seed = 9220 + 2 * i as u64;
        let xq = Tensor::rand_range(F32, &[1, s, 2, 6], -2.0, 2.0, seed);
        let xk = Tensor::rand_range(F32, &[1, s, 1, 6], -2.0, 2.0, seed + 1);
        let (c, sn) = freqs(F32, s, 3);
        let want = vec![rotary_ref(&xq, &c, &sn, F32), rotary_ref(&xk, &c, &sn, F32)];
        case = case.run(vec![xq, xk, c, sn], want);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- rotary_hf

/// HF rotate-half RoPE of x `[B, S, H, D]` with tables `[rows, R]` from row `start`.
pub(super) fn rotary_hf_ref(x: &Tensor, cos: &Tensor, sin: &Tensor, start: usize) -> Tensor {
    let [b, s, h, d] = <[usize; 4]>::try_from(x.sizes.as_slice()).unwrap();
    let r = cos.sizes[1];
    let half = r / 2;
    let mut out = x.data.clone();
    for bi in 0..b {
        for si in 0..s {
            for hi in 0..h {
                let base = ((bi * s + si) * h + hi) * d;
                let row = &x.data[base..base + d];
                for j in 0..r {
                    let rot = if j < half {
                        -row[j + half]
                    } else {
                        row[j - half]
                    };
                    let f = (start + si) * r + j;
                    out[base + j] = row[j] * cos.data[f] + rot * sin.data[f];
                }
            }
        }
    }
    Tensor::new(x.dtype, &x.sizes, out)
}

/// HF cos / sin tables `[rows, r]`: the angle of dim j repeats with period r / 2.
pub(super) fn hf_freqs(dt: DataType, rows: usize, r: usize) -> (Tensor, Tensor) {
    let half = r / 2;
    let theta = |p: usize, j: usize| p as f64 / 10000f64.powf(2.0 * (j % half) as f64 / r as f64);
    let mk = |f: fn(f64) -> f64| {
        let data = (0..rows * r).map(|i| f(theta(i / r, i % r))).collect();
        Tensor::new(dt, &[rows, r], data)
    };
    (mk(f64::cos), mk(f64::sin))
}

/// `xq`, `xk` inputs, constant tables, start_pos a SymInt input (`sym`) or an Int.
fn rotary_hf_graph(
    dt: DataType,
    q: &[usize],
    k: &[usize],
    tables: (&Tensor, &Tensor),
    start: Option<i64>,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let qi = g.input(dt, q);
    let ki = g.input(dt, k);
    let ci = g.constant(tables.0);
    let si = g.constant(tables.1);
    let pos = match start {
        Some(x) => g.int(x),
        None => {
            let p = g.symint();
            g.builder().mark_input(p);
            p
        }
    };
    let oq = g.output(dt, q);
    let ok = g.output(dt, k);
    let outs = g.value_list(&[oq, ok]);
    g.op(ROTARY_HF, &[qi, ki, ci, si, pos, outs]);
    g
}

fn rotary_hf_case(
    dt: DataType,
    q: &[usize],
    k: &[usize],
    table: [usize; 2],
    start: usize,
    sym: bool,
    seed: u64,
) -> OpCase {
    let (c, sn) = hf_freqs(dt, table[0], table[1]);
    let xq = Tensor::rand_range(dt, q, -2.0, 2.0, seed);
    let xk = Tensor::rand_range(dt, k, -2.0, 2.0, seed + 1);
    let want = vec![
        rotary_hf_ref(&xq, &c, &sn, start),
        rotary_hf_ref(&xk, &c, &sn, start),
    ];
    let g = rotary_hf_graph(dt, q, k, (&c, &sn), (!sym).then_some(start as i64));
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32 };
    let how = if sym { "SymInt" } else { "Int" };
    let name = format!(
        "{} xq {q:?} xk {k:?} freqs {table:?} start_pos {how} {start}",
        dt.name()
    );
    let mut inputs: Vec<Val> = vec![xq.into(), xk.into()];
    if sym {
        inputs.push(Val::Int(start as i64));
    }
    OpCase::new(ROTARY_HF, name, g)
        .tol(tol)
        .run_vals(inputs, want.into_iter().map(Val::from).collect())
}

fn rotary_hf_cases() -> Vec<OpCase> {
    let mut v = vec![
        // Full rotation, the exporter's default start_pos 0 (an Int).
        rotary_hf_case(F32, &[1, 4, 4, 32], &[1, 4, 2, 32], [4, 32], 0, false, 9800),
        // Table longer than S, start_pos > 0 as a SymInt, odd S.
        rotary_hf_case(F32, &[2, 3, 3, 8], &[2, 3, 1, 8], [11, 8], 5, true, 9802),
        // Partial rotary: R = 6 of an odd head dim 9 (the tail passes through).
        rotary_hf_case(F32, &[1, 5, 2, 9], &[1, 5, 1, 9], [7, 6], 2, true, 9804),
        rotary_hf_case(
            F16,
            &[1, 7, 2, 10],
            &[1, 7, 2, 10],
            [13, 10],
            6,
            false,
            9806,
        ),
    ];
    // Dynamic: prefill then decode steps with start_pos advancing (a SymInt input), the
    // last step ending exactly at the table's end.
    let (c, sn) = hf_freqs(F32, 12, 6);
    let g = rotary_hf_graph(F32, &[1, 5, 3, 7], &[1, 5, 1, 7], (&c, &sn), None);
    let mut case = OpCase::new(
        ROTARY_HF,
        "dynamic S <= 5, start_pos advancing, R 6 of D 7",
        g,
    )
    .dynamic();
    let mut start = 0;
    for (i, s) in [5usize, 1, 3, 1, 2].into_iter().enumerate() {
        let seed = 9820 + 2 * i as u64;
        let xq = Tensor::rand_range(F32, &[1, s, 3, 7], -2.0, 2.0, seed);
        let xk = Tensor::rand_range(F32, &[1, s, 1, 7], -2.0, 2.0, seed + 1);
        let want = vec![
            rotary_hf_ref(&xq, &c, &sn, start).into(),
            rotary_hf_ref(&xk, &c, &sn, start).into(),
        ];
        case = case.run_vals(vec![xq.into(), xk.into(), Val::Int(start as i64)], want);
        start += s;
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- rotary_interleaved

/// EdgeTAM RoPE: x `[B, N, C]` (real, imag) pairs times the complex number (cos, sin)
/// stored at `freqs[n * C + 2k ..]`.
fn rotary_il_ref(x: &Tensor, freqs: &Tensor) -> Tensor {
    let [b, n, c] = <[usize; 3]>::try_from(x.sizes.as_slice()).unwrap();
    let mut out = x.data.clone();
    for bi in 0..b {
        for ni in 0..n {
            for k in 0..c / 2 {
                let e = (bi * n + ni) * c + 2 * k;
                let (re, im) = (x.data[e], x.data[e + 1]);
                let (co, si) = (freqs.data[ni * c + 2 * k], freqs.data[ni * c + 2 * k + 1]);
                out[e] = re * co - im * si;
                out[e + 1] = re * si + im * co;
            }
        }
    }
    Tensor::new(x.dtype, &x.sizes, out)
}

/// `(cos, sin)` of random angles, interleaved, in a tensor of sizes `sizes` (N * C values).
fn cis(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    let angles = Tensor::rand_range(F32, &[sizes.iter().product::<usize>() / 2], -3.0, 3.0, seed);
    let data = angles
        .data
        .iter()
        .flat_map(|a| [a.cos(), a.sin()])
        .collect();
    Tensor::new(dt, sizes, data)
}

fn rotary_il_graph(dt: DataType, x: &[usize], f: &[usize], f_const: Option<&Tensor>) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x);
    let fi = match f_const {
        Some(t) => g.constant(t),
        None => g.input(dt, f),
    };
    let out = g.output(dt, x);
    g.op(ROTARY_IL, &[xi, fi, out]);
    g
}

fn rotary_il_case(dt: DataType, x: &[usize], f: &[usize], f_const: bool, seed: u64) -> OpCase {
    let xt = Tensor::rand_range(dt, x, -2.0, 2.0, seed);
    let ft = cis(dt, f, seed + 1);
    let want = rotary_il_ref(&xt, &ft);
    let g = rotary_il_graph(dt, x, f, f_const.then_some(&ft));
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32 };
    let how = if f_const { "const" } else { "input" };
    let inputs = if f_const { vec![xt] } else { vec![xt, ft] };
    OpCase::new(
        ROTARY_IL,
        format!("{} x {x:?} freqs_cis {f:?} {how}", dt.name()),
        g,
    )
    .tol(tol)
    .run(inputs, vec![want])
}

fn rotary_il_cases() -> Vec<OpCase> {
    let mut v = vec![
        rotary_il_case(F32, &[2, 7, 6], &[7, 6], true, 9850),
        // The view_as_real(...).unsqueeze(0) form [1, N, C/2, 2].
        rotary_il_case(F32, &[1, 5, 10], &[1, 5, 5, 2], false, 9852),
        rotary_il_case(F32, &[3, 1, 2], &[1, 2], true, 9854),
        rotary_il_case(F16, &[1, 3, 64], &[3, 64], true, 9856),
    ];
    // Dynamic token count N, with the table as an input sized to match.
    let g = rotary_il_graph(F32, &[2, 9, 6], &[9, 6], None);
    let mut case = OpCase::new(ROTARY_IL, "dynamic x [2, <=9, 6], freqs_cis [<=9, 6]", g).dynamic();
    for (i, n) in [9usize, 2, 5, 9].into_iter().enumerate() {
        let seed = 9860 + 2 * i as u64;
        let xt = Tensor::rand_range(F32, &[2, n, 6], -2.0, 2.0, seed);
        let ft = cis(F32, &[n, 6], seed + 1);
        let want = rotary_il_ref(&xt, &ft);
        case = case.run(vec![xt, ft], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- squeeze / unsqueeze

fn copy_case(op: &'static str, x: &Tensor, arg: ArgVal, out_sizes: &[usize]) -> OpCase {
    let mut g = CaseGraph::new();
    let xi = g.input_like(x);
    let a = match &arg {
        ArgVal::List(l) => g.int_list(l),
        ArgVal::Int(d) => g.int(*d),
    };
    let out = g.output(x.dtype, out_sizes);
    g.op(op, &[xi, a, out]);
    OpCase::new(op, format!("{:?} {arg:?}", x.sizes), g)
        .tol(Tol::EXACT)
        .run(vec![x.clone()], vec![x.reshaped(out_sizes)])
}

#[derive(Debug)]
enum ArgVal {
    List(Vec<i64>),
    Int(i64),
}

fn squeeze_cases() -> Vec<OpCase> {
    let cases: &[(&[usize], &[i64], &[usize])] = &[
        (&[1, 8, 64], &[0], &[8, 64]),
        (&[3, 1, 5], &[1], &[3, 5]),
        // A listed dim whose size is not 1 stays (PyTorch semantics).
        (&[3, 1, 5], &[0], &[3, 1, 5]),
        (&[1, 1, 4], &[0, -2], &[4]),
        (&[2, 3, 1], &[-1], &[2, 3]),
        (&[1], &[0], &[]),
    ];
    let mut v: Vec<OpCase> = cases
        .iter()
        .enumerate()
        .map(|(i, (x, d, o))| {
            copy_case(
                SQUEEZE,
                &Tensor::rand(x, 9300 + i as u64),
                ArgVal::List(d.to_vec()),
                o,
            )
        })
        .collect();
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[1, 9, 5]);
    let di = g.int_list(&[0]);
    let out = g.output(F32, &[9, 5]);
    g.op(SQUEEZE, &[xi, di, out]);
    let mut case = OpCase::new(SQUEEZE, "dynamic [1, <=9, 5] dims [0]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
        let x = Tensor::rand(&[1, m, 5], 9320 + i as u64);
        let want = x.reshaped(&[m, 5]);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

fn unsqueeze_cases() -> Vec<OpCase> {
    let cases: &[(&[usize], i64, &[usize])] = &[
        (&[3, 5], 0, &[1, 3, 5]),
        (&[3, 5], 1, &[3, 1, 5]),
        (&[3, 5], -1, &[3, 5, 1]),
        (&[3, 5], 2, &[3, 5, 1]),
        (&[3, 5], -3, &[1, 3, 5]),
        (&[], 0, &[1]),
    ];
    let mut v: Vec<OpCase> = cases
        .iter()
        .enumerate()
        .map(|(i, (x, d, o))| {
            copy_case(
                UNSQUEEZE,
                &Tensor::rand(x, 9400 + i as u64),
                ArgVal::Int(*d),
                o,
            )
        })
        .collect();
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[9, 5]);
    let di = g.int(0);
    let out = g.output(F32, &[1, 9, 5]);
    g.op(UNSQUEEZE, &[xi, di, out]);
    let mut case = OpCase::new(UNSQUEEZE, "dynamic [<=9, 5] dim 0", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [9usize, 2, 9].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 5], 9420 + i as u64);
        let want = x.reshaped(&[1, m, 5]);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- slice

/// PyTorch `x[..., start:end:step, ...]` along `dim`.
fn slice_ref(x: &Tensor, dim: i64, start: Option<i64>, end: Option<i64>, step: i64) -> Tensor {
    let d = norm(dim, x.sizes.len());
    let n = x.sizes[d] as i64;
    let wrap = |b: i64| if b < 0 { b + n } else { b };
    let s = wrap(start.unwrap_or(0)).clamp(0, n);
    let e = wrap(end.unwrap_or(n)).clamp(s, n);
    let idx: Vec<usize> = (s..e).step_by(step as usize).map(|i| i as usize).collect();
    let inner: usize = x.sizes[d + 1..].iter().product();
    let outer: usize = x.sizes[..d].iter().product();
    let mut out = Vec::new();
    for o in 0..outer {
        for &j in &idx {
            let base = (o * x.sizes[d] + j) * inner;
            out.extend_from_slice(&x.data[base..base + inner]);
        }
    }
    let mut sizes = x.sizes.clone();
    sizes[d] = idx.len();
    Tensor::new(x.dtype, &sizes, out)
}

fn bound(g: &mut CaseGraph, b: Option<i64>) -> usize {
    match b {
        Some(v) => g.int(v),
        None => g.null(),
    }
}

fn slice_case(
    sizes: &[usize],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
    seed: u64,
) -> OpCase {
    slice_case_of(Tensor::rand(sizes, seed), dim, start, end, step)
}

/// A slice of `x` (any dtype: one-byte elements take the shader's word-packed form).
fn slice_case_of(x: Tensor, dim: i64, start: Option<i64>, end: Option<i64>, step: i64) -> OpCase {
    let sizes = x.sizes.clone();
    let want = slice_ref(&x, dim, start, end, step);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let di = g.int(dim);
    let si = bound(&mut g, start);
    let ei = bound(&mut g, end);
    let st = g.int(step);
    let out = g.output(x.dtype, &want.sizes);
    g.op(SLICE, &[xi, di, si, ei, st, out]);
    let dt = if x.dtype == F32 {
        String::new()
    } else {
        format!("{} ", x.dtype.name())
    };
    OpCase::new(
        SLICE,
        format!("{dt}{sizes:?} dim {dim} [{start:?}:{end:?}:{step}]"),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![x], vec![want])
}

fn slice_cases() -> Vec<OpCase> {
    let mut v = vec![
        slice_case(&[7, 5], 0, Some(1), Some(6), 2, 9500),
        slice_case(&[3, 8, 5], 1, Some(-5), None, 1, 9501),
        slice_case(&[3, 8, 5], -1, Some(0), Some(100), 3, 9502),
        slice_case(&[32, 32], 1, None, Some(16), 1, 9503),
        slice_case(&[4, 6], 0, Some(-100), Some(-1), 1, 9504),
        slice_case(&[2, 3, 5, 7], 3, Some(2), Some(7), 4, 9505),
        slice_case(&[9], 0, None, None, 1, 9506),
        // One-byte elements (a causal mask's bool slice; int8, uint8), odd sizes so words
        // straddle rows.
        slice_case_of(
            Tensor::rand_int(DataType::Bool, &[7, 9], 0, 1, 9507),
            1,
            Some(2),
            Some(7),
            1,
        ),
        slice_case_of(
            Tensor::rand_int(DataType::Int8, &[5, 3, 6], -128, 127, 9508),
            0,
            Some(1),
            None,
            2,
        ),
        slice_case_of(
            Tensor::rand_int(DataType::Uint8, &[13], 0, 255, 9509),
            0,
            Some(-11),
            Some(12),
            3,
        ),
    ];

    // g3's pattern: a constant table sliced to the current sequence length, the end a
    // SymInt from sym_size of a dynamic input.
    let table = Tensor::rand(&[12, 4], 9510);
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[1, 9, 3]);
    let one = g.int(1);
    let s = g.symint();
    g.op(SYM_SIZE, &[xi, one, s]);
    let ti = g.constant(&table);
    let zero = g.int(0);
    let start = g.null();
    let out = g.output(F32, &[9, 4]);
    g.op(SLICE, &[ti, zero, start, s, one, out]);
    let mut case = OpCase::new(SLICE, "const [12, 4] [:sym_size(x, 1)] dynamic", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [9usize, 1, 5, 9].into_iter().enumerate() {
        let x = Tensor::rand(&[1, m, 3], 9520 + i as u64);
        let want = slice_ref(&table, 0, None, Some(m as i64), 1);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);

    // A decode's rope-table slice: start = a SymInt graph input (read on the GPU from the
    // scalar buffer, `slice_pos`), end = start + 1, so the launch stays put while the start
    // moves, wraps when negative and clamps past either end (an empty slice).
    for (dt, seed) in [(F32, 9540u64), (F16, 9550)] {
        let table = Tensor::rand_range(dt, &[12, 4], -1.0, 1.0, seed);
        let mut g = CaseGraph::new();
        let pos = g.symint();
        g.builder().mark_input(pos);
        let ti = g.constant(&table);
        let zero = g.int(0);
        let one = g.int(1);
        let end = g.symint();
        g.op("add", &[pos, one, end]);
        let out = g.output(dt, &[1, 4]);
        g.op(SLICE, &[ti, zero, pos, end, one, out]);
        let mut case = OpCase::new(
            SLICE,
            format!(
                "{} const [12, 4] [pos:pos + 1], pos a SymInt input",
                dt.name()
            ),
            g,
        )
        .tol(Tol::EXACT)
        .dynamic();
        for p in [0i64, 5, 11, 3, -2, -12, 7] {
            let want = slice_ref(&table, 0, Some(p), Some(p + 1), 1);
            case = case.run_vals(vec![Val::Int(p)], vec![want.into()]);
        }
        v.push(case);
    }

    // A dynamic input with a negative literal start: the result follows the current size.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[5, 9]);
    let d = g.int(1);
    let st = g.int(-4);
    let en = g.null();
    let step = g.int(1);
    let out = g.output(F32, &[5, 4]);
    g.op(SLICE, &[xi, d, st, en, step, out]);
    let mut case = OpCase::new(SLICE, "dynamic [5, <=9] dim 1 [-4:]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [9usize, 2, 6, 9].into_iter().enumerate() {
        let x = Tensor::rand(&[5, m], 9530 + i as u64);
        let want = slice_ref(&x, 1, Some(-4), None, 1);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}
