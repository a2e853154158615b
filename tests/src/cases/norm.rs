//! Normalization: `aten.native_layer_norm.default(input, normalized_shape IntList,
//! weight|None, bias|None, eps Double, out ValueList(out, mean, rstd))`, checked against an
//! f64 reference (biased variance; mean / rstd sized `input.shape[:axis] + [1] * k`).

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::Tensor;

const LAYER_NORM: &str = "aten.native_layer_norm.default";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = layer_norm_cases();
    v.extend(batch_norm_cases());
    v
}

const BATCH_NORM: &str = "aten._native_batch_norm_legit_no_training.default";

/// Inference batch norm `[x, weight|None, bias|None, running_mean, running_var, momentum,
/// eps, out ValueList(out, save_mean [0], save_rstd [0])]`.
fn batch_norm_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    let specs: [(DataType, &[usize], bool, bool); 5] = [
        (F32, &[1, 8, 10, 12], true, true),
        (F32, &[3, 5, 7], false, true),
        (F32, &[2, 6], true, false),
        (F16, &[1, 4, 3, 5], true, true),
        (F32, &[2, 3, 4, 5], false, false),
    ];
    for (i, &(dt, sizes, has_w, has_b)) in specs.iter().enumerate() {
        let seed = 13_700 + 10 * i as u64;
        let c = sizes[1];
        let x = Tensor::rand_range(dt, sizes, -2.0, 2.0, seed);
        let w = Tensor::rand_range(dt, &[c], 0.5, 1.5, seed + 1);
        let b = Tensor::rand_range(dt, &[c], -0.5, 0.5, seed + 2);
        let mean = Tensor::rand_range(dt, &[c], -0.5, 0.5, seed + 3);
        let var = Tensor::rand_range(dt, &[c], 0.2, 2.0, seed + 4);
        let (wo, bo) = (has_w.then_some(&w), has_b.then_some(&b));
        let want = crate::reference::batch_norm(&x, wo, bo, &mean, &var, 1e-3);
        let g = batch_norm_graph(dt, sizes, wo, bo, &mean, &var);
        let empty = Tensor::new(dt, &[0], vec![]);
        v.push(
            OpCase::new(
                BATCH_NORM,
                format!("{} {sizes:?} weight {has_w} bias {has_b}", dt.name()),
                g,
            )
            .tol(tol(dt))
            .run(vec![x], vec![want, empty.clone(), empty]),
        );
    }
    // Dynamic: batch and spatial sizes change, channels stay.
    let c = 3;
    let w = Tensor::rand_range(F32, &[c], 0.5, 1.5, 13_801);
    let b = Tensor::rand_range(F32, &[c], -0.5, 0.5, 13_802);
    let mean = Tensor::rand_range(F32, &[c], -0.5, 0.5, 13_803);
    let var = Tensor::rand_range(F32, &[c], 0.2, 2.0, 13_804);
    let g = batch_norm_graph(F32, &[4, 3, 6, 5], Some(&w), Some(&b), &mean, &var);
    let mut case = OpCase::new(BATCH_NORM, "dynamic [<=4, 3, <=6, <=5]", g)
        .tol(Tol::F32)
        .dynamic();
    for (i, sizes) in [[4usize, 3, 6, 5], [1, 3, 1, 1], [2, 3, 5, 2]]
        .iter()
        .enumerate()
    {
        let x = Tensor::rand_range(F32, sizes, -2.0, 2.0, 13_810 + i as u64);
        let want = crate::reference::batch_norm(&x, Some(&w), Some(&b), &mean, &var, 1e-3);
        let empty = Tensor::new(F32, &[0], vec![]);
        case = case.run(vec![x], vec![want, empty.clone(), empty]);
    }
    v.push(case);
    v
}

fn batch_norm_graph(
    dt: DataType,
    max_sizes: &[usize],
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    mean: &Tensor,
    var: &Tensor,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, max_sizes);
    let mut opt = |t: Option<&Tensor>| match t {
        Some(t) => g.constant(t),
        None => g.null(),
    };
    let (wi, bi) = (opt(w), opt(b));
    let mi = g.constant(mean);
    let vi = g.constant(var);
    let momentum = g.double(0.1);
    let eps = g.double(1e-3);
    let o = g.output(dt, max_sizes);
    let sm = g.output(dt, &[0]);
    let sr = g.output(dt, &[0]);
    let outs = g.value_list(&[o, sm, sr]);
    g.op(BATCH_NORM, &[xi, wi, bi, mi, vi, momentum, eps, outs]);
    g
}

/// `(out, mean, rstd)` of layer norm over the trailing `k` dims, in f64.
fn layer_norm_ref(
    x: &Tensor,
    k: usize,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> [Tensor; 3] {
    let rank = x.sizes.len();
    let axis = rank - k;
    let n: usize = x.sizes[axis..].iter().product();
    let (out, means, rstds) = crate::reference::layer_norm_rows(
        &x.data,
        n,
        w.map(|t| t.data.as_slice()),
        b.map(|t| t.data.as_slice()),
        eps,
    );
    let mut stat = x.sizes[..axis].to_vec();
    stat.resize(rank, 1);
    [
        Tensor::new(x.dtype, &x.sizes, out),
        Tensor::new(x.dtype, &stat, means),
        Tensor::new(x.dtype, &stat, rstds),
    ]
}

/// How weight / bias are passed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Param {
    None,
    Input,
    Constant,
}

struct Spec {
    dt: DataType,
    sizes: &'static [usize],
    k: usize,
    w: Param,
    b: Param,
    eps: f64,
    /// Input range (an offset mean tests the two-pass variance).
    range: (f64, f64),
}

fn graph(spec: &Spec, max_sizes: &[usize], w: Option<&Tensor>, b: Option<&Tensor>) -> CaseGraph {
    let rank = max_sizes.len();
    let axis = rank - spec.k;
    let mut g = CaseGraph::new();
    let xi = g.input(spec.dt, max_sizes);
    let shape: Vec<i64> = max_sizes[axis..].iter().map(|&n| n as i64).collect();
    let si = g.int_list(&shape);
    let param = |p: Param, t: Option<&Tensor>, g: &mut CaseGraph| match (p, t) {
        (Param::Input, Some(t)) => g.input_like(t),
        (Param::Constant, Some(t)) => g.constant(t),
        _ => g.null(),
    };
    let wi = param(spec.w, w, &mut g);
    let bi = param(spec.b, b, &mut g);
    let ei = g.double(spec.eps);
    let mut stat = max_sizes[..axis].to_vec();
    stat.resize(rank, 1);
    let o = g.output(spec.dt, max_sizes);
    let m = g.output(spec.dt, &stat);
    let r = g.output(spec.dt, &stat);
    let outs = g.value_list(&[o, m, r]);
    g.op(LAYER_NORM, &[xi, si, wi, bi, ei, outs]);
    g
}

/// Inputs of one run: x, then weight / bias when they are graph inputs.
fn run_inputs(spec: &Spec, x: Tensor, w: &Tensor, b: &Tensor) -> Vec<Tensor> {
    let mut v = vec![x];
    if spec.w == Param::Input {
        v.push(w.clone());
    }
    if spec.b == Param::Input {
        v.push(b.clone());
    }
    v
}

fn params(spec: &Spec, n_sizes: &[usize], seed: u64) -> (Tensor, Tensor) {
    (
        Tensor::rand_range(spec.dt, n_sizes, 0.5, 2.0, seed + 1),
        Tensor::rand_range(spec.dt, n_sizes, -1.0, 1.0, seed + 2),
    )
}

fn tol(dt: DataType) -> Tol {
    if dt == F16 {
        Tol::new(1e-2, 1e-2)
    } else {
        Tol::F32_SUM
    }
}

fn static_case(spec: Spec, seed: u64) -> OpCase {
    let axis = spec.sizes.len() - spec.k;
    let (w, b) = params(&spec, &spec.sizes[axis..], seed);
    let x = Tensor::rand_range(spec.dt, spec.sizes, spec.range.0, spec.range.1, seed);
    let wo = (spec.w != Param::None).then_some(&w);
    let bo = (spec.b != Param::None).then_some(&b);
    let want = layer_norm_ref(&x, spec.k, wo, bo, spec.eps);
    let g = graph(&spec, spec.sizes, wo, bo);
    OpCase::new(
        LAYER_NORM,
        format!(
            "{} {:?} k {} weight {:?} bias {:?} eps {} range {:?}",
            spec.dt.name(),
            spec.sizes,
            spec.k,
            spec.w,
            spec.b,
            spec.eps,
            spec.range
        ),
        g,
    )
    .tol(tol(spec.dt))
    .run(run_inputs(&spec, x, &w, &b), want.to_vec())
}

fn layer_norm_cases() -> Vec<OpCase> {
    use Param::{Constant as C, Input as I, None as N};
    let s = |dt, sizes, k, w, b, eps, range| Spec {
        dt,
        sizes,
        k,
        w,
        b,
        eps,
        range,
    };
    let unit = (-1.0, 1.0);
    let mut v: Vec<OpCase> = [
        s(F32, &[7, 13][..], 1, C, C, 1e-5, unit),
        s(F32, &[2, 3, 5, 7], 2, I, N, 1e-5, unit),
        s(F32, &[3, 300], 1, N, N, 1e-6, unit),
        s(F32, &[1, 1000], 1, C, I, 1e-5, (-3.0, 3.0)),
        s(F32, &[4, 5], 2, N, C, 1e-5, unit),
        s(F32, &[9], 1, C, C, 1e-3, unit),
        s(F32, &[67, 3, 1], 1, C, C, 1e-5, unit),
        // A large common offset: E[x^2] - mean^2 would lose most digits here.
        s(F32, &[5, 129], 1, C, C, 1e-5, (100.0, 100.5)),
        s(F16, &[3, 70], 1, C, C, 1e-5, unit),
        s(F16, &[2, 5, 11], 2, N, N, 1e-5, unit),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, spec)| static_case(spec, 13_000 + 10 * i as u64))
    .collect();

    // Dynamic: leading dims shrink and grow; the normalized dims stay.
    let spec = s(F32, &[6, 5, 13], 1, C, C, 1e-5, unit);
    let (w, b) = params(&spec, &[13], 13_500);
    let mut case = OpCase::new(
        LAYER_NORM,
        "dynamic [<=6, <=5, 13] k 1",
        graph(&spec, spec.sizes, Some(&w), Some(&b)),
    )
    .tol(Tol::F32_SUM)
    .dynamic();
    for (i, (m, n)) in [(6usize, 5usize), (1, 1), (3, 4), (6, 5)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand(&[m, n, 13], 13_510 + i as u64);
        let want = layer_norm_ref(&x, 1, Some(&w), Some(&b), 1e-5);
        case = case.run(vec![x], want.to_vec());
    }
    v.push(case);
    v
}
