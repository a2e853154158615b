//! Normalization: `aten.native_layer_norm.default(input, normalized_shape IntList,
//! weight|None, bias|None, eps Double, out ValueList(out, mean, rstd))`, checked against an
//! f64 reference (biased variance; mean / rstd sized `input.shape[:axis] + [1] * k`);
//! inference batch norm; `aten.native_group_norm.default(input, weight|None, bias|None,
//! N Int|SymInt, C Int, HxW Int|SymInt, group Int, eps Double, out ValueList(out, mean,
//! rstd))` with mean / rstd sized `[N, group]`.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::Tensor;

const LAYER_NORM: &str = "aten.native_layer_norm.default";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = layer_norm_cases();
    v.extend(batch_norm_cases());
    v.extend(group_norm_cases());
    v
}

const GROUP_NORM: &str = "aten.native_group_norm.default";

/// Group norm in f64 on x viewed as `[n, c, hxw]`: per (sample, group) the mean and biased
/// variance of its `c / group * hxw` elements, `rstd = 1 / sqrt(var + eps)`, then the
/// per-channel affine. Returns `(out, mean, rstd)`, mean / rstd `n * group` row-major.
#[allow(clippy::too_many_arguments)]
pub(crate) fn group_norm_ref(
    x: &[f64],
    n: usize,
    c: usize,
    hxw: usize,
    group: usize,
    w: Option<&[f64]>,
    b: Option<&[f64]>,
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let cpg = c / group;
    let len = cpg * hxw;
    let mut out = vec![0.0; x.len()];
    let (mut means, mut rstds) = (Vec::new(), Vec::new());
    for row in 0..n * group {
        let xs = &x[row * len..(row + 1) * len];
        let mean = xs.iter().sum::<f64>() / len as f64;
        let var = xs.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / len as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        for (j, &v) in xs.iter().enumerate() {
            let ch = (row % group) * cpg + j / hxw;
            let mut y = (v - mean) * rstd;
            if let Some(w) = w {
                y *= w[ch];
            }
            if let Some(b) = b {
                y += b[ch];
            }
            out[row * len + j] = y;
        }
        means.push(mean);
        rstds.push(rstd);
    }
    (out, means, rstds)
}

/// `(out, mean, rstd)` tensors of group norm on x `[N, C, *]`.
fn group_norm_expect(
    x: &Tensor,
    group: usize,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    eps: f64,
) -> Vec<Tensor> {
    let (n, c) = (x.sizes[0], x.sizes[1]);
    let hxw: usize = x.sizes[2..].iter().product();
    let (out, means, rstds) = group_norm_ref(
        &x.data,
        n,
        c,
        hxw,
        group,
        w.map(|t| t.data.as_slice()),
        b.map(|t| t.data.as_slice()),
        eps,
    );
    vec![
        Tensor::new(x.dtype, &x.sizes, out),
        Tensor::new(x.dtype, &[n, group], means),
        Tensor::new(x.dtype, &[n, group], rstds),
    ]
}

/// How N and HxW are passed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum GnSizes {
    /// Int literals (a static export).
    Ints,
    /// SymInts from `sym_size.int` of x (HxW the product of the spatial dims through the
    /// `mul` host op when there are two), as a dynamic export writes them.
    Syms,
}

struct GnSpec {
    dt: DataType,
    sizes: &'static [usize],
    group: usize,
    w: Param,
    b: Param,
    eps: f64,
    range: (f64, f64),
}

fn gn_graph(spec: &GnSpec, ns: GnSizes, w: Option<&Tensor>, b: Option<&Tensor>) -> CaseGraph {
    let max = spec.sizes;
    let (n, c) = (max[0], max[1]);
    let hxw: usize = max[2..].iter().product();
    let mut g = CaseGraph::new();
    let xi = g.input(spec.dt, max);
    let param = |p: Param, t: Option<&Tensor>, g: &mut CaseGraph| match (p, t) {
        (Param::Input, Some(t)) => g.input_like(t),
        (Param::Constant, Some(t)) => g.constant(t),
        _ => g.null(),
    };
    let wi = param(spec.w, w, &mut g);
    let bi = param(spec.b, b, &mut g);
    let gi = g.int(spec.group as i64);
    let (ni, hi) = match ns {
        // The exporter shares one Int value between equal literals (N == group here).
        GnSizes::Ints => (
            if n == spec.group { gi } else { g.int(n as i64) },
            g.int(hxw as i64),
        ),
        GnSizes::Syms => {
            let sym = |d: i64, g: &mut CaseGraph| {
                let di = g.int(d);
                let s = g.symint();
                g.op("sym_size.int", &[xi, di, s]);
                s
            };
            let ni = sym(0, &mut g);
            let mut hi = sym(2, &mut g);
            for d in 3..max.len() {
                let next = sym(d as i64, &mut g);
                let prod = g.symint();
                g.op("mul", &[hi, next, prod]);
                hi = prod;
            }
            (ni, hi)
        }
    };
    let ci = g.int(c as i64);
    let ei = g.double(spec.eps);
    let o = g.output(spec.dt, max);
    let m = g.output(spec.dt, &[n, spec.group]);
    let r = g.output(spec.dt, &[n, spec.group]);
    let outs = g.value_list(&[o, m, r]);
    g.op(GROUP_NORM, &[xi, wi, bi, ni, ci, hi, gi, ei, outs]);
    g
}

fn gn_params(spec: &GnSpec, seed: u64) -> (Tensor, Tensor) {
    let c = spec.sizes[1];
    (
        Tensor::rand_range(spec.dt, &[c], 0.5, 2.0, seed + 1),
        Tensor::rand_range(spec.dt, &[c], -1.0, 1.0, seed + 2),
    )
}

fn gn_inputs(spec: &GnSpec, x: Tensor, w: &Tensor, b: &Tensor) -> Vec<Tensor> {
    let mut v = vec![x];
    if spec.w == Param::Input {
        v.push(w.clone());
    }
    if spec.b == Param::Input {
        v.push(b.clone());
    }
    v
}

fn gn_static_case(spec: GnSpec, seed: u64) -> OpCase {
    let (w, b) = gn_params(&spec, seed);
    let x = Tensor::rand_range(spec.dt, spec.sizes, spec.range.0, spec.range.1, seed);
    let wo = (spec.w != Param::None).then_some(&w);
    let bo = (spec.b != Param::None).then_some(&b);
    let want = group_norm_expect(&x, spec.group, wo, bo, spec.eps);
    let g = gn_graph(&spec, GnSizes::Ints, wo, bo);
    OpCase::new(
        GROUP_NORM,
        format!(
            "{} {:?} group {} weight {:?} bias {:?} eps {} range {:?}",
            spec.dt.name(),
            spec.sizes,
            spec.group,
            spec.w,
            spec.b,
            spec.eps,
            spec.range
        ),
        g,
    )
    .tol(tol(spec.dt))
    .run(gn_inputs(&spec, x, &w, &b), want)
}

fn group_norm_cases() -> Vec<OpCase> {
    use Param::{Constant as C, Input as I, None as N};
    let s = |dt, sizes, group, w, b, eps, range| GnSpec {
        dt,
        sizes,
        group,
        w,
        b,
        eps,
        range,
    };
    let unit = (-1.0, 1.0);
    let mut v: Vec<OpCase> = [
        // As torch.nn.GroupNorm(2, 6) exports it (N == group: one shared Int value).
        s(F32, &[2, 6, 4, 5][..], 2, C, C, 1e-5, (-2.0, 2.0)),
        s(F32, &[1, 6, 7], 3, N, N, 1e-5, unit),
        // One element per group: zero variance, out = bias, rstd = 1 / sqrt(eps).
        s(F32, &[3, 4], 4, C, C, 1e-5, unit),
        // One group of 720 elements: many lanes, several strides each.
        s(F32, &[2, 8, 9, 10], 1, C, N, 1e-5, unit),
        // A large common offset: E[x^2] - mean^2 would lose most digits here.
        s(F32, &[1, 4, 3, 3], 2, N, C, 1e-5, (100.0, 100.5)),
        // Group per channel (instance norm), weight / bias as graph inputs.
        s(F32, &[2, 6, 3], 6, I, I, 1e-3, unit),
        s(F32, &[5, 9, 2, 1, 3], 3, C, C, 1e-5, unit),
        s(F16, &[1, 4, 3, 3], 2, C, C, 1e-5, unit),
        s(F16, &[2, 6, 5], 3, N, N, 1e-5, unit),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, spec)| gn_static_case(spec, 67_000 + 10 * i as u64))
    .collect();

    // Dynamic, as a dynamic export writes it: N and HxW SymInts from sym_size.int of x
    // (HxW = H * W through `mul` for 4-D x); batch and spatial sizes shrink and grow.
    type Dynamic = (&'static [usize], usize, &'static [&'static [usize]]);
    let dynamic: [Dynamic; 2] = [
        (
            &[4, 4, 16],
            2,
            &[&[2, 4, 6], &[1, 4, 2], &[4, 4, 16], &[3, 4, 5]],
        ),
        (
            &[2, 6, 5, 4],
            3,
            &[&[2, 6, 5, 4], &[1, 6, 1, 1], &[2, 6, 3, 2], &[1, 6, 5, 4]],
        ),
    ];
    for (k, (max, group, runs)) in dynamic.into_iter().enumerate() {
        let spec = s(F32, max, group, C, C, 1e-5, unit);
        let (w, b) = gn_params(&spec, 67_500 + 10 * k as u64);
        let g = gn_graph(&spec, GnSizes::Syms, Some(&w), Some(&b));
        let mut case = OpCase::new(
            GROUP_NORM,
            format!("dynamic {max:?} (upper bounds) group {group}, N / HxW SymInts"),
            g,
        )
        .tol(Tol::F32_SUM)
        .dynamic();
        for (i, sizes) in runs.iter().enumerate() {
            let x = Tensor::rand_range(F32, sizes, -2.0, 2.0, 67_600 + 10 * k as u64 + i as u64);
            let want = group_norm_expect(&x, group, Some(&w), Some(&b), 1e-5);
            case = case.run(vec![x], want);
        }
        v.push(case);
    }
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

#[cfg(test)]
mod group_norm_tests {
    use super::*;
    use crate::case::run_case;

    /// A group norm graph with the given literals, for the load-time checks.
    fn graph(sizes: &[usize], c: i64, group: i64, wc: usize) -> OpCase {
        let mut g = CaseGraph::new();
        let xi = g.input(F32, sizes);
        let w = Tensor::rand_range(F32, &[wc], 0.5, 1.5, 1);
        let wi = g.constant(&w);
        let bi = g.null();
        let hxw: usize = sizes.get(2..).map_or(1, |d| d.iter().product());
        let ni = g.int(sizes[0] as i64);
        let ci = g.int(c);
        let hi = g.int(hxw as i64);
        let gi = g.int(group);
        let ei = g.double(1e-5);
        let g_out = group.max(1) as usize;
        let o = g.output(F32, sizes);
        let m = g.output(F32, &[sizes[0], g_out]);
        let r = g.output(F32, &[sizes[0], g_out]);
        let outs = g.value_list(&[o, m, r]);
        g.op(GROUP_NORM, &[xi, wi, bi, ni, ci, hi, gi, ei, outs]);
        OpCase::new(GROUP_NORM, "limit", g).run(vec![Tensor::rand(sizes, 2)], vec![])
    }

    #[test]
    fn group_norm_refuses_bad_programs_naming_the_rule() {
        for (sizes, c, group, wc, rule) in [
            (&[2usize, 6, 3][..], 6, 4, 6, "C % group == 0"),
            (&[2, 6, 3], 6, 0, 6, "both >= 1"),
            (&[2, 6, 3], 5, 5, 5, "C = 5 channels in dim 1"),
            (&[2, 6, 3], 6, 2, 4, "weight sizes [4] do not match"),
            (&[6], 6, 2, 6, "rank >= 2"),
        ] {
            let e = run_case(&graph(sizes, c, group, wc)).unwrap_err();
            assert!(e.contains(GROUP_NORM) && e.contains(rule), "{e}");
        }
    }
}
