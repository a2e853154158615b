//! Reductions and concatenation:
//! `aten.sum.dim_IntList(x, dims IntList|None, keepdim Bool, dtype None, out)`,
//! `aten.mean.dim(x, dims, keepdim, dtype, out)`,
//! `aten.amax.default(x, dims IntList, keepdim, out)`, `aten.amin.default(...)`,
//! `aten.cat.default(ValueList(tensors), dim Int, out)`,
//! `aten.argmax.default(x, dim Int|None, keepdim Bool, out int32)`, `aten.argmin.default`
//! (the same args),
//! `aten._log_softmax.default(x, dim Int, half_to_float Bool, out)`.
//! References are computed in f64.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::Tensor;

const SUM: &str = "aten.sum.dim_IntList";
const MEAN: &str = "aten.mean.dim";
const AMAX: &str = "aten.amax.default";
const AMIN: &str = "aten.amin.default";
const CAT: &str = "aten.cat.default";
const REDUCTIONS: [&str; 4] = [SUM, MEAN, AMAX, AMIN];

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    for op in REDUCTIONS {
        v.extend(reduce_cases(op));
    }
    v.extend(cat_cases());
    v.extend(argmax_cases());
    v.extend(argmin_cases());
    v.extend(log_softmax_cases());
    v
}

fn norm(d: i64, rank: usize) -> usize {
    if d < 0 {
        (d + rank as i64) as usize
    } else {
        d as usize
    }
}

// ---------------------------------------------------------------- reductions

/// `op` of `x` over `dims` (None / empty = all), PyTorch semantics, in f64.
fn reduce_ref(op: &str, x: &Tensor, dims: Option<&[i64]>, keepdim: bool) -> Tensor {
    let rank = x.sizes.len();
    let mut red = vec![dims.is_none_or(|d| d.is_empty()); rank];
    for &d in dims.unwrap_or(&[]) {
        if rank > 0 {
            red[norm(d, rank)] = true;
        }
    }
    let out_sizes: Vec<usize> = x
        .sizes
        .iter()
        .zip(&red)
        .filter_map(|(&n, &r)| match (r, keepdim) {
            (false, _) => Some(n),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    let kept: Vec<usize> = (0..rank).filter(|&d| !red[d]).collect();
    let outs: usize = kept.iter().map(|&d| x.sizes[d]).product();
    let mut groups: Vec<Vec<f64>> = vec![Vec::new(); outs];
    for (i, &v) in x.data.iter().enumerate() {
        // Coordinates of element i, then its output index over the kept dims.
        let mut rem = i;
        let mut coord = vec![0; rank];
        for d in (0..rank).rev() {
            coord[d] = rem % x.sizes[d];
            rem /= x.sizes[d];
        }
        let o = kept.iter().fold(0, |o, &d| o * x.sizes[d] + coord[d]);
        groups[o].push(v);
    }
    let data = groups
        .iter()
        .map(|g| match op {
            SUM => g.iter().sum(),
            MEAN => g.iter().sum::<f64>() / g.len() as f64,
            AMAX => g.iter().copied().fold(f64::NEG_INFINITY, |a, b| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else {
                    a.max(b)
                }
            }),
            _ => g.iter().copied().fold(f64::INFINITY, |a, b| {
                if a.is_nan() || b.is_nan() {
                    f64::NAN
                } else {
                    a.min(b)
                }
            }),
        })
        .collect();
    Tensor::new(x.dtype, &out_sizes, data)
}

/// The one-op graph; `dtype_code` is the optional `dtype` arg of sum / mean.
fn reduce_graph(
    op: &'static str,
    dt: DataType,
    sizes: &[usize],
    dims: Option<&[i64]>,
    keepdim: bool,
    out_sizes: &[usize],
    dtype_code: Option<i64>,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, sizes);
    let di = match dims {
        Some(d) => g.int_list(d),
        None => g.null(),
    };
    let k = g.bool(keepdim);
    let out = g.output(dt, out_sizes);
    if op == SUM || op == MEAN {
        let dty = match dtype_code {
            Some(c) => g.int(c),
            None => g.null(),
        };
        g.op(op, &[xi, di, k, dty, out]);
    } else {
        g.op(op, &[xi, di, k, out]);
    }
    g
}

fn tol(op: &str, dt: DataType) -> Tol {
    match (dt, op) {
        (F16, _) => Tol::F16,
        (_, AMAX | AMIN) => Tol::EXACT,
        _ => Tol::F32_SUM,
    }
}

fn reduce_case(
    op: &'static str,
    x: Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    label: &str,
) -> OpCase {
    let dt = x.dtype;
    let want = reduce_ref(op, &x, dims, keepdim);
    let g = reduce_graph(op, dt, &x.sizes, dims, keepdim, &want.sizes, None);
    OpCase::new(
        op,
        format!(
            "{} {:?} dims {dims:?} keepdim {keepdim}{label}",
            dt.name(),
            x.sizes
        ),
        g,
    )
    .tol(tol(op, dt))
    .run(vec![x], vec![want])
}

/// `(x sizes, dims, keepdim)` of a reduction case.
type ReduceShape = (&'static [usize], Option<&'static [i64]>, bool);

fn reduce_cases(op: &'static str) -> Vec<OpCase> {
    // (sizes, dims, keepdim): one dim (first / last / middle, negative), several
    // non-adjacent dims, all dims (None and []), rows longer than a workgroup (300, 1000:
    // the workgroup-per-output kernel) and short ones (the per-invocation kernel), rank 0.
    let shapes: &[ReduceShape] = &[
        (&[7, 13], Some(&[-1]), false),
        (&[7, 13], Some(&[0]), true),
        (&[2, 3, 5, 7], Some(&[1]), false),
        (&[2, 3, 5, 7], Some(&[1, 3]), true),
        (&[2, 3, 5, 7], Some(&[-4, 2]), false),
        (&[2, 3, 5, 7], Some(&[]), false),
        (&[3, 5], None, true),
        (&[3, 300], Some(&[1]), false),
        (&[5, 1000], Some(&[0, 1]), false),
        (&[67, 3, 5], Some(&[0]), false),
        (&[1, 1, 9], Some(&[0, 1]), false),
        (&[9], Some(&[0]), true),
        (&[], None, false),
        (&[], Some(&[-1]), true),
    ];
    let mut v: Vec<OpCase> = shapes
        .iter()
        .enumerate()
        .map(|(i, (s, d, k))| {
            let x = Tensor::rand_range(F32, s, -4.0, 4.0, 9600 + i as u64);
            reduce_case(op, x, *d, *k, "")
        })
        .collect();
    v.push(reduce_case(
        op,
        Tensor::rand_range(F16, &[3, 130], -4.0, 4.0, 9650),
        Some(&[-1]),
        false,
        "",
    ));
    v.push(reduce_case(
        op,
        Tensor::rand_range(F16, &[5, 7, 3], -4.0, 4.0, 9651),
        Some(&[0, 2]),
        true,
        "",
    ));
    // A NaN poisons its own output only.
    let mut x = Tensor::rand_range(F32, &[4, 70], -4.0, 4.0, 9652);
    x.data[70 + 33] = f64::NAN;
    v.push(reduce_case(op, x, Some(&[1]), false, " one NaN"));
    if op == SUM || op == MEAN {
        // Empty reductions: sum gives 0, mean NaN (PyTorch); amax / amin reject them.
        let x = Tensor::rand_range(F32, &[3, 0], -4.0, 4.0, 9654);
        v.push(reduce_case(op, x, Some(&[1]), false, " empty"));
        // An explicit dtype equal to x's (ScalarType::Float = 6) is accepted.
        let x = Tensor::rand_range(F32, &[4, 6], -4.0, 4.0, 9653);
        let want = reduce_ref(op, &x, Some(&[1]), false);
        let g = reduce_graph(op, F32, &x.sizes, Some(&[1]), false, &want.sizes, Some(6));
        v.push(
            OpCase::new(op, "float32 [4, 6] dims [1] dtype float", g)
                .tol(Tol::F32_SUM)
                .run(vec![x], vec![want]),
        );
    }
    // Dynamic: the reduced dim shrinks and grows (crossing the 64-element kernel switch),
    // then a kept dim does.
    for (dims, out_max, seed) in [(&[1i64][..], 6usize, 9660u64), (&[0][..], 90, 9670)] {
        let g = reduce_graph(op, F32, &[6, 90], Some(dims), false, &[out_max], None);
        let mut case = OpCase::new(op, format!("dynamic [<=6, <=90] dims {dims:?}"), g)
            .tol(tol(op, F32))
            .dynamic();
        for (i, (m, n)) in [(6usize, 90usize), (1, 5), (3, 64), (6, 90)]
            .into_iter()
            .enumerate()
        {
            let x = Tensor::rand_range(F32, &[m, n], -4.0, 4.0, seed + i as u64);
            let want = reduce_ref(op, &x, Some(dims), false);
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    v
}

// ---------------------------------------------------------------- cat

fn cat_ref(xs: &[Tensor], dim: i64) -> Tensor {
    let parts: Vec<&Tensor> = xs.iter().filter(|x| x.sizes != [0]).collect();
    let first = parts[0];
    let d = norm(dim, first.sizes.len());
    let outer: usize = first.sizes[..d].iter().product();
    let inner: usize = first.sizes[d + 1..].iter().product();
    let mut data = Vec::new();
    for o in 0..outer {
        for x in &parts {
            let chunk = x.sizes[d] * inner;
            data.extend_from_slice(&x.data[o * chunk..(o + 1) * chunk]);
        }
    }
    let mut sizes = first.sizes.clone();
    sizes[d] = parts.iter().map(|x| x.sizes[d]).sum();
    Tensor::new(first.dtype, &sizes, data)
}

/// `xs` as graph inputs, except those flagged in `consts` (served as constants).
fn cat_graph(xs: &[Tensor], consts: &[bool], dim: i64, out_sizes: &[usize]) -> CaseGraph {
    let mut g = CaseGraph::new();
    let ids: Vec<usize> = xs
        .iter()
        .zip(consts.iter().chain(std::iter::repeat(&false)))
        .map(|(x, &c)| if c { g.constant(x) } else { g.input_like(x) })
        .collect();
    let list = g.value_list(&ids);
    let di = g.int(dim);
    let out = g.output(xs[0].dtype, out_sizes);
    g.op(CAT, &[list, di, out]);
    g
}

fn cat_case(dt: DataType, sizes: &[&[usize]], dim: i64, consts: &[bool], seed: u64) -> OpCase {
    let xs: Vec<Tensor> = sizes
        .iter()
        .enumerate()
        .map(|(i, s)| Tensor::rand_range(dt, s, -4.0, 4.0, seed + i as u64))
        .collect();
    let want = cat_ref(&xs, dim);
    let g = cat_graph(&xs, consts, dim, &want.sizes);
    let inputs: Vec<Tensor> = xs
        .iter()
        .zip(consts.iter().chain(std::iter::repeat(&false)))
        .filter(|(_, &c)| !c)
        .map(|(x, _)| x.clone())
        .collect();
    let how = if consts.contains(&true) {
        format!(" consts {consts:?}")
    } else {
        String::new()
    };
    OpCase::new(CAT, format!("{} {sizes:?} dim {dim}{how}", dt.name()), g)
        .tol(Tol::EXACT)
        .run(inputs, vec![want])
}

fn cat_cases() -> Vec<OpCase> {
    let mut v = vec![
        cat_case(F32, &[&[3, 5], &[4, 5]], 0, &[], 9700),
        cat_case(F32, &[&[3, 5], &[3, 1], &[3, 7]], -1, &[], 9710),
        cat_case(
            F32,
            &[&[2, 3, 5], &[2, 1, 5], &[2, 4, 5], &[2, 2, 5]],
            1,
            &[],
            9720,
        ),
        cat_case(F32, &[&[2, 3, 5], &[2, 3, 5]], -3, &[], 9730),
        cat_case(F32, &[&[7]], 0, &[], 9740),
        cat_case(F32, &[&[2, 3, 4], &[2, 3, 0], &[2, 3, 1]], 2, &[], 9750),
        // PyTorch skips 1-D empty inputs whatever the other ranks.
        cat_case(F32, &[&[3, 5], &[0], &[2, 5]], 0, &[], 9760),
        cat_case(F32, &[&[1, 4], &[5, 4]], 0, &[true, false], 9770),
        cat_case(F16, &[&[3, 9], &[3, 70]], 1, &[], 9780),
        cat_case(F16, &[&[5, 2], &[1, 2], &[2, 2]], 0, &[], 9790),
    ];
    // Dynamic: a KV-cache-like append; the first input's size along the cat dim changes,
    // so the second input's offset and the output size follow.
    for (dim, seed) in [(0i64, 9800u64), (-1, 9820)] {
        let d = norm(dim, 2);
        let mut a_max = vec![3usize; 2];
        a_max[d] = 8;
        let mut b_sizes = vec![3usize; 2];
        b_sizes[d] = 2;
        let mut out_max = vec![3usize; 2];
        out_max[d] = 10;
        let mut g = CaseGraph::new();
        let ai = g.input(F32, &a_max);
        let bi = g.input(F32, &b_sizes);
        let list = g.value_list(&[ai, bi]);
        let di = g.int(dim);
        let out = g.output(F32, &out_max);
        g.op(CAT, &[list, di, out]);
        let mut case = OpCase::new(
            CAT,
            format!("dynamic [<=8 along {dim}, 3] + 2 dim {dim}"),
            g,
        )
        .tol(Tol::EXACT)
        .dynamic();
        for (i, m) in [8usize, 1, 5, 8].into_iter().enumerate() {
            let mut a_sizes = vec![3usize; 2];
            a_sizes[d] = m;
            let a = Tensor::rand(&a_sizes, seed + 2 * i as u64);
            let b = Tensor::rand(&b_sizes, seed + 2 * i as u64 + 1);
            let want = cat_ref(&[a.clone(), b.clone()], dim);
            case = case.run(vec![a, b], vec![want]);
        }
        v.push(case);
    }
    v
}

// ---------------------------------------------------------------- argmax

const ARGMAX: &str = "aten.argmax.default";
const LOG_SOFTMAX: &str = "aten._log_softmax.default";

/// `(outer, D, inner)` of x around `dim` (None: flattened; rank 0: one element).
fn lines_of(sizes: &[usize], dim: Option<i64>) -> (usize, usize, usize) {
    match dim {
        Some(d) if !sizes.is_empty() => {
            let d = norm(d, sizes.len());
            (
                sizes[..d].iter().product(),
                sizes[d],
                sizes[d + 1..].iter().product(),
            )
        }
        _ => (1, sizes.iter().product(), 1),
    }
}

/// PyTorch argmax: first index of the max, a NaN beating every number (first NaN wins).
fn argmax_ref(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Tensor {
    let rank = x.sizes.len();
    let (outer, n, inner) = lines_of(&x.sizes, dim);
    let mut data = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| x.data[(o * n + j) * inner + i];
            let mut best = 0;
            for j in 1..n {
                let (v, b) = (at(j), at(best));
                if !b.is_nan() && (v.is_nan() || v > b) {
                    best = j;
                }
            }
            data.push(best as f64);
        }
    }
    let sizes: Vec<usize> = match dim {
        None if keepdim => vec![1; rank],
        None => vec![],
        Some(_) if rank == 0 => vec![],
        Some(d) => {
            let d = norm(d, rank);
            let mut s = x.sizes.clone();
            if keepdim {
                s[d] = 1;
            } else {
                s.remove(d);
            }
            s
        }
    };
    Tensor::new(DataType::Int32, &sizes, data)
}

fn argmax_graph(
    dt: DataType,
    sizes: &[usize],
    dim: Option<i64>,
    keepdim: bool,
    out: &[usize],
) -> CaseGraph {
    arg_graph(ARGMAX, dt, sizes, dim, keepdim, out)
}

/// `[x, dim Int|None, keepdim Bool, out int32]` of `op` (argmax / argmin).
fn arg_graph(
    op: &str,
    dt: DataType,
    sizes: &[usize],
    dim: Option<i64>,
    keepdim: bool,
    out: &[usize],
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, sizes);
    let di = match dim {
        Some(d) => g.int(d),
        None => g.null(),
    };
    let k = g.bool(keepdim);
    let o = g.output(DataType::Int32, out);
    g.op(op, &[xi, di, k, o]);
    g
}

fn argmax_case(x: Tensor, dim: Option<i64>, keepdim: bool, label: &str) -> OpCase {
    let want = argmax_ref(&x, dim, keepdim);
    let g = argmax_graph(x.dtype, &x.sizes, dim, keepdim, &want.sizes);
    OpCase::new(
        ARGMAX,
        format!(
            "{} {:?} dim {dim:?} keepdim {keepdim}{label}",
            x.dtype.name(),
            x.sizes
        ),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![x], vec![want])
}

fn argmax_cases() -> Vec<OpCase> {
    let shapes: &[(&[usize], Option<i64>, bool)] = &[
        (&[7, 13], Some(-1), false),
        (&[7, 13], Some(0), true),
        (&[2, 3, 5, 7], Some(1), false),
        (&[2, 3, 5, 7], Some(-4), true),
        (&[3, 300], Some(1), false),
        (&[67, 3], Some(0), false),
        (&[5, 7], None, false),
        (&[5, 7], None, true),
        (&[1000], None, false),
        (&[9], Some(0), true),
        (&[], None, false),
        (&[], Some(0), true),
    ];
    let mut v: Vec<OpCase> = shapes
        .iter()
        .enumerate()
        .map(|(i, (s, d, k))| {
            let x = Tensor::rand_range(F32, s, -4.0, 4.0, 9900 + i as u64);
            argmax_case(x, *d, *k, "")
        })
        .collect();
    // Ties everywhere (few distinct values): the first index must win, in both kernels.
    for (i, (s, d)) in [(&[4usize, 100][..], 1i64), (&[6, 10], 1), (&[90, 3], 0)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand_int(F32, s, 0, 2, 9920 + i as u64);
        v.push(argmax_case(x, Some(d), false, " ties"));
    }
    // NaN counts as the max; the first NaN wins. Row 0 none, row 1 two NaNs (late), row 2 a
    // NaN first, row 3 NaN at the very end; long rows (workgroup kernel) and short ones.
    for (n, seed) in [(70usize, 9930u64), (9, 9931)] {
        let mut x = Tensor::rand_range(F32, &[4, n], -4.0, 4.0, seed);
        x.data[n + n / 2] = f64::NAN;
        x.data[n + n - 2] = f64::NAN;
        x.data[2 * n] = f64::NAN;
        x.data[4 * n - 1] = f64::NAN;
        v.push(argmax_case(x.clone(), Some(1), false, " NaNs"));
        v.push(argmax_case(x, None, false, " NaNs"));
    }
    v.push(argmax_case(
        Tensor::rand_range(F16, &[3, 130], -4.0, 4.0, 9940),
        Some(-1),
        false,
        "",
    ));
    v.push(argmax_case(
        Tensor::rand_range(F16, &[5, 7, 3], -4.0, 4.0, 9941),
        Some(1),
        true,
        "",
    ));
    // int32 values that differ only past float precision (2^30 + small).
    v.push(argmax_case(
        Tensor::rand_int(
            DataType::Int32,
            &[3, 77],
            (1 << 30) - 3,
            (1 << 30) + 3,
            9942,
        ),
        Some(1),
        false,
        " near 2^30",
    ));
    v.push(argmax_case(
        Tensor::rand_int(DataType::Int32, &[5, 6], -50, 50, 9943),
        Some(0),
        true,
        "",
    ));
    // Dynamic: the reduced dim crosses the 64-element kernel switch, then a kept dim changes.
    for (dim, out_max, seed) in [(1i64, vec![6usize], 9950u64), (0, vec![90], 9960)] {
        let g = argmax_graph(F32, &[6, 90], Some(dim), false, &out_max);
        let mut case = OpCase::new(ARGMAX, format!("dynamic [<=6, <=90] dim {dim}"), g)
            .tol(Tol::EXACT)
            .dynamic();
        for (i, (m, n)) in [(6usize, 90usize), (1, 5), (3, 64), (6, 90)]
            .into_iter()
            .enumerate()
        {
            let x = Tensor::rand_range(F32, &[m, n], -4.0, 4.0, seed + i as u64);
            let want = argmax_ref(&x, Some(dim), false);
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    let g = argmax_graph(F32, &[6, 90], None, false, &[]);
    let mut case = OpCase::new(ARGMAX, "dynamic [<=6, <=90] flattened", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, (m, n)) in [(6usize, 90usize), (1, 5), (2, 40), (6, 90)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand_range(F32, &[m, n], -4.0, 4.0, 9970 + i as u64);
        let want = argmax_ref(&x, None, false);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- argmin

const ARGMIN: &str = "aten.argmin.default";

/// PyTorch argmin: first index of the min, a NaN beating every number (first NaN wins).
/// The output sizes are argmax's (same dim / keepdim rules).
pub(crate) fn argmin_ref(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Tensor {
    let (outer, n, inner) = lines_of(&x.sizes, dim);
    let mut data = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| x.data[(o * n + j) * inner + i];
            let mut best = 0;
            for j in 1..n {
                let (v, b) = (at(j), at(best));
                if !b.is_nan() && (v.is_nan() || v < b) {
                    best = j;
                }
            }
            data.push(best as f64);
        }
    }
    let sizes = argmax_ref(x, dim, keepdim).sizes;
    Tensor::new(DataType::Int32, &sizes, data)
}

fn argmin_case(x: Tensor, dim: Option<i64>, keepdim: bool, label: &str) -> OpCase {
    let want = argmin_ref(&x, dim, keepdim);
    let g = arg_graph(ARGMIN, x.dtype, &x.sizes, dim, keepdim, &want.sizes);
    OpCase::new(
        ARGMIN,
        format!(
            "{} {:?} dim {dim:?} keepdim {keepdim}{label}",
            x.dtype.name(),
            x.sizes
        ),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![x], vec![want])
}

/// argmin as the exporter writes it (`dim` an Int, keepdim a Bool) and flattened (`dim`
/// None, hand-written: the partitioner keeps that on the CPU); both kernels (lines of 64
/// and more take the workgroup one), ties, NaNs and -inf, fp16, int32 past float precision.
fn argmin_cases() -> Vec<OpCase> {
    let shapes: &[(&[usize], Option<i64>, bool)] = &[
        (&[7, 13], Some(-1), false),
        (&[7, 13], Some(0), true),
        (&[2, 3, 5, 7], Some(1), false),
        (&[3, 300], Some(1), false),
        (&[67, 3], Some(0), false),
        (&[5, 7], None, false),
        (&[1000], None, true),
        (&[9], Some(0), true),
        (&[], None, false),
    ];
    let mut v: Vec<OpCase> = shapes
        .iter()
        .enumerate()
        .map(|(i, (s, d, k))| {
            let x = Tensor::rand_range(F32, s, -4.0, 4.0, 66_000 + i as u64);
            argmin_case(x, *d, *k, "")
        })
        .collect();
    for (i, (s, d)) in [(&[4usize, 100][..], 1i64), (&[6, 10], 1), (&[90, 3], 0)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand_int(F32, s, 0, 2, 66_100 + i as u64);
        v.push(argmin_case(x, Some(d), false, " ties"));
    }
    // Row 0: -inf twice (first wins); row 1: two NaNs after a -inf (first NaN wins); row 2:
    // NaN first; row 3: NaN last.
    for (n, seed) in [(70usize, 66_200u64), (9, 66_201)] {
        let mut x = Tensor::rand_range(F32, &[4, n], -4.0, 4.0, seed);
        x.data[3] = f64::NEG_INFINITY;
        x.data[n - 1] = f64::NEG_INFINITY;
        x.data[n + 1] = f64::NEG_INFINITY;
        x.data[n + n / 2] = f64::NAN;
        x.data[n + n - 2] = f64::NAN;
        x.data[2 * n] = f64::NAN;
        x.data[4 * n - 1] = f64::NAN;
        v.push(argmin_case(x.clone(), Some(1), false, " NaNs"));
        v.push(argmin_case(x.clone(), Some(0), true, " NaNs"));
        v.push(argmin_case(x, None, false, " NaNs"));
    }
    v.push(argmin_case(
        Tensor::rand_range(F16, &[3, 130], -4.0, 4.0, 66_300),
        Some(-1),
        false,
        "",
    ));
    v.push(argmin_case(
        Tensor::rand_range(F16, &[5, 7, 3], -4.0, 4.0, 66_301),
        Some(1),
        true,
        "",
    ));
    v.push(argmin_case(
        Tensor::rand_int(
            DataType::Int32,
            &[3, 77],
            -(1 << 30) - 3,
            -(1 << 30) + 3,
            66_302,
        ),
        Some(1),
        false,
        " near -2^30",
    ));
    v.push(argmin_case(
        Tensor::rand_int(DataType::Int32, &[5, 6], -50, 50, 66_303),
        Some(0),
        true,
        "",
    ));
    // Dynamic: the reduced dim crosses the 64-element kernel switch, then shrinks; and the
    // flattened form.
    let g = arg_graph(ARGMIN, F32, &[6, 90], Some(-1), false, &[6]);
    let mut case = OpCase::new(ARGMIN, "dynamic [<=6, <=90] dim -1", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, (m, n)) in [(6usize, 90usize), (1, 5), (3, 64), (6, 90)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand_range(F32, &[m, n], -4.0, 4.0, 66_400 + i as u64);
        let want = argmin_ref(&x, Some(-1), false);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    let g = arg_graph(ARGMIN, F32, &[6, 90], None, true, &[1, 1]);
    let mut case = OpCase::new(ARGMIN, "dynamic [<=6, <=90] flattened keepdim", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, (m, n)) in [(6usize, 90usize), (1, 5), (2, 40), (6, 90)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand_range(F32, &[m, n], -4.0, 4.0, 66_500 + i as u64);
        let want = argmin_ref(&x, None, true);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- log_softmax

/// log_softmax along `dim` in f64, max-shifted; the result has `out_dt`.
fn log_softmax_ref(x: &Tensor, dim: i64, out_dt: DataType) -> Tensor {
    let (outer, n, inner) = lines_of(&x.sizes, Some(dim));
    let mut data = vec![0.0; x.numel()];
    for o in 0..outer {
        for i in 0..inner {
            let idx = |j: usize| (o * n + j) * inner + i;
            let m = (0..n)
                .map(|j| x.data[idx(j)])
                .fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..n).map(|j| (x.data[idx(j)] - m).exp()).sum();
            for j in 0..n {
                data[idx(j)] = x.data[idx(j)] - m - sum.ln();
            }
        }
    }
    Tensor::new(out_dt, &x.sizes, data)
}

fn log_softmax_graph(
    dt: DataType,
    sizes: &[usize],
    dim: i64,
    half_to_float: bool,
    out_dt: DataType,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, sizes);
    let di = g.int(dim);
    let h = g.bool(half_to_float);
    let o = g.output(out_dt, sizes);
    g.op(LOG_SOFTMAX, &[xi, di, h, o]);
    g
}

fn log_softmax_case(x: Tensor, dim: i64, half_to_float: bool, label: &str) -> OpCase {
    let out_dt = if half_to_float { F32 } else { x.dtype };
    let want = log_softmax_ref(&x, dim, out_dt);
    let g = log_softmax_graph(x.dtype, &x.sizes, dim, half_to_float, out_dt);
    let tol = if out_dt == F16 {
        Tol::F16
    } else {
        Tol::F32_SUM
    };
    OpCase::new(
        LOG_SOFTMAX,
        format!(
            "{} {:?} dim {dim} half_to_float {half_to_float}{label}",
            x.dtype.name(),
            x.sizes
        ),
        g,
    )
    .tol(tol)
    .run(vec![x], vec![want])
}

fn log_softmax_cases() -> Vec<OpCase> {
    let shapes: &[(&[usize], i64)] = &[
        (&[7, 13], -1),
        (&[7, 13], 0),
        (&[2, 3, 5, 7], 1),
        (&[2, 3, 5, 7], -4),
        (&[3, 300], 1),
        (&[1000], 0),
        (&[67, 3, 5], 0),
        (&[1, 1], -1),
        (&[], 0),
    ];
    let mut v: Vec<OpCase> = shapes
        .iter()
        .enumerate()
        .map(|(i, (s, d))| {
            let x = Tensor::rand_range(F32, s, -6.0, 6.0, 10_000 + i as u64);
            log_softmax_case(x, *d, false, "")
        })
        .collect();
    v.push(log_softmax_case(
        Tensor::rand_range(F16, &[3, 130], -4.0, 4.0, 10_020),
        -1,
        false,
        "",
    ));
    v.push(log_softmax_case(
        Tensor::rand_range(F16, &[5, 7, 3], -4.0, 4.0, 10_021),
        1,
        true,
        "",
    ));
    // Large magnitudes (exp would overflow unshifted) and -inf entries (probability 0).
    let x = Tensor::f32(
        &[3, 4],
        vec![
            1000.0,
            1001.0,
            999.0,
            -1000.0, //
            -1e30,
            0.0,
            f64::NEG_INFINITY,
            1.0, //
            88.0,
            89.0,
            90.0,
            f64::NEG_INFINITY,
        ],
    );
    v.push(log_softmax_case(x, 1, false, " extremes"));
    // Dynamic: the softmax dim and a kept dim change.
    for (dim, seed) in [(1i64, 10_030u64), (0, 10_040)] {
        let g = log_softmax_graph(F32, &[6, 90], dim, false, F32);
        let mut case = OpCase::new(LOG_SOFTMAX, format!("dynamic [<=6, <=90] dim {dim}"), g)
            .tol(Tol::F32_SUM)
            .dynamic();
        for (i, (m, n)) in [(6usize, 90usize), (1, 5), (3, 64), (6, 90)]
            .into_iter()
            .enumerate()
        {
            let x = Tensor::rand_range(F32, &[m, n], -6.0, 6.0, seed + i as u64);
            let want = log_softmax_ref(&x, dim, F32);
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    v
}
