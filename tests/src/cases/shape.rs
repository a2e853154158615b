//! Copies that change shape or layout: `aten.view_copy.default(x, sizes IntList, out)`
//! (`-1` inferred), `aten.permute_copy.default(x, dims IntList, out)`,
//! `aten.clone.default(x, memory_format Null, out)`,
//! `aten.expand_copy.default(x, size IntList|ValueList, implicit Bool, out)`,
//! `aten.split_with_sizes_copy.default(x, split_sizes IntList|ValueList, dim, out ValueList)`.
//! Results are exact copies.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32, Int32 as I32};

use crate::case::{CaseGraph, OpCase, Val};
use crate::compare::Tol;
use crate::reference::{permute, view_sizes};
use crate::tensor::{numel, strides, unravel, Tensor};

const VIEW: &str = "aten.view_copy.default";
const PERMUTE: &str = "aten.permute_copy.default";
const CLONE: &str = "aten.clone.default";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = view_cases();
    v.extend(permute_cases());
    v.extend(clone_cases());
    v.extend(expand_cases());
    v.extend(split_cases());
    v
}

fn view_case(x_sizes: &[usize], sizes: &[i64], seed: u64) -> OpCase {
    let x = Tensor::rand(x_sizes, seed);
    let want = x.reshaped(&view_sizes(sizes, x.numel()));
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let si = g.int_list(sizes);
    let out = g.output(F32, &want.sizes);
    g.op(VIEW, &[xi, si, out]);
    OpCase::new(VIEW, format!("{x_sizes:?} -> {sizes:?}"), g)
        .tol(Tol::EXACT)
        .run(vec![x], vec![want])
}

fn view_cases() -> Vec<OpCase> {
    let mut v = vec![
        view_case(&[4, 6], &[-1], 6000),
        view_case(&[2, 3, 5], &[5, -1], 6001),
        view_case(&[6, 5], &[2, -1, 5], 6002),
        view_case(&[7], &[1, 7, 1], 6003),
        view_case(&[13, 5], &[65], 6004),
        view_case(&[1, 1], &[], 6005),
        view_case(&[], &[1, -1], 6006),
        view_case(&[2, 3, 5, 7], &[6, 35], 6007),
    ];

    // Dynamic: an IntList with -1 re-inferred from the current input size.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[8, 6]);
    let si = g.int_list(&[-1, 2, 3]);
    let out = g.output(F32, &[8, 2, 3]);
    g.op(VIEW, &[xi, si, out]);
    let mut case = OpCase::new(VIEW, "dynamic [<=8, 6] -> [-1, 2, 3]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [8usize, 1, 5, 8].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 6], 6100 + i as u64);
        let want = x.reshaped(&[m, 2, 3]);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

fn permute_case(x_sizes: &[usize], dims: &[i64], seed: u64) -> OpCase {
    let x = Tensor::rand(x_sizes, seed);
    let want = permute(&x, dims);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let di = g.int_list(dims);
    let out = g.output(x.dtype, &want.sizes);
    g.op(PERMUTE, &[xi, di, out]);
    OpCase::new(PERMUTE, format!("{x_sizes:?} dims {dims:?}"), g)
        .tol(Tol::EXACT)
        .run(vec![x], vec![want])
}

fn permute_cases() -> Vec<OpCase> {
    let mut v = vec![
        permute_case(&[7, 13], &[1, 0], 6200),
        permute_case(&[1, 65], &[1, 0], 6201),
        permute_case(&[3, 5, 7], &[2, 0, 1], 6202),
        permute_case(&[3, 5, 7], &[0, 2, 1], 6203),
        permute_case(&[3, 5, 7], &[0, 1, 2], 6204),
        // The attention head split of the Llama fixtures.
        permute_case(&[1, 7, 3, 5], &[0, 2, 1, 3], 6205),
        permute_case(&[2, 3, 5, 7], &[3, 1, 0, 2], 6206),
        permute_case(&[2, 1, 3, 1], &[3, 2, 1, 0], 6207),
    ];

    // Dynamic: [S, 3, 5] -> [3, S, 5] with S down then up.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[7, 3, 5]);
    let di = g.int_list(&[1, 0, 2]);
    let out = g.output(F32, &[3, 7, 5]);
    g.op(PERMUTE, &[xi, di, out]);
    let mut case = OpCase::new(PERMUTE, "dynamic [<=7, 3, 5] dims [1, 0, 2]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, s) in [7usize, 1, 4, 7].into_iter().enumerate() {
        let x = Tensor::rand(&[s, 3, 5], 6300 + i as u64);
        let want = permute(&x, &[1, 0, 2]);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

fn clone_case(sizes: &[usize], seed: u64) -> OpCase {
    let x = Tensor::rand(sizes, seed);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let mf = g.null();
    let out = g.output(F32, sizes);
    g.op(CLONE, &[xi, mf, out]);
    OpCase::new(CLONE, format!("{sizes:?}"), g)
        .tol(Tol::EXACT)
        .run(vec![x.clone()], vec![x])
}

fn clone_cases() -> Vec<OpCase> {
    let mut v: Vec<OpCase> = [&[3, 5, 7][..], &[1, 16], &[1], &[], &[65]]
        .iter()
        .enumerate()
        .map(|(i, s)| clone_case(s, 6400 + i as u64))
        .collect();

    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[9, 13]);
    let mf = g.null();
    let out = g.output(F32, &[9, 13]);
    g.op(CLONE, &[xi, mf, out]);
    let mut case = OpCase::new(CLONE, "dynamic [<=9, 13]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [9usize, 2, 1, 9].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 13], 6500 + i as u64);
        case = case.run(vec![x.clone()], vec![x]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- expand_copy

const EXPAND: &str = "aten.expand_copy.default";

/// PyTorch `expand` of `x` to `size` (-1 keeps a dim), element by element in f64.
fn expand_ref(x: &Tensor, size: &[i64]) -> Tensor {
    let off = size.len() - x.sizes.len();
    let out: Vec<usize> = size
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            if w == -1 {
                x.sizes[i - off]
            } else {
                w as usize
            }
        })
        .collect();
    let xs = strides(&x.sizes);
    let data = (0..numel(&out))
        .map(|flat| {
            let idx = unravel(flat, &out);
            let src: usize = (off..out.len())
                .map(|i| {
                    let n = x.sizes[i - off];
                    if n == 1 {
                        0
                    } else {
                        idx[i] * xs[i - off]
                    }
                })
                .sum();
            x.data[src]
        })
        .collect();
    Tensor::new(x.dtype, &out, data)
}

fn expand_case(dt: DataType, x_sizes: &[usize], size: &[i64], seed: u64) -> OpCase {
    let x = if dt == I32 {
        Tensor::rand_int(I32, x_sizes, -1000, 1000, seed)
    } else {
        Tensor::rand_range(dt, x_sizes, -3.0, 3.0, seed)
    };
    let want = expand_ref(&x, size);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let si = g.int_list(size);
    let imp = g.bool(false);
    let out = g.output(dt, &want.sizes);
    g.op(EXPAND, &[xi, si, imp, out]);
    OpCase::new(EXPAND, format!("{} {x_sizes:?} -> {size:?}", dt.name()), g)
        .tol(Tol::EXACT)
        .run(vec![x], vec![want])
}

fn expand_cases() -> Vec<OpCase> {
    let mut v = vec![
        expand_case(F32, &[3, 1], &[2, -1, 4], 6600),
        expand_case(F32, &[1], &[5], 6601),
        expand_case(F32, &[2, 3], &[2, 3], 6602),
        expand_case(F32, &[1, 1, 5], &[4, 7, 5], 6603),
        expand_case(F32, &[], &[3, 2], 6604),
        expand_case(F32, &[2, 1, 3, 1, 2], &[2, 4, 3, 5, 2], 6605),
        expand_case(F32, &[7, 1], &[1, 1, 7, 13], 6606),
        expand_case(F16, &[1, 7], &[5, -1], 6607),
        expand_case(I32, &[3, 1, 2], &[3, 4, 2], 6608),
        expand_case(I32, &[1, 1], &[1, 67], 6609),
    ];

    // Dynamic: x[<=7, 1] -> [-1, 5]: the kept dim follows x.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[7, 1]);
    let si = g.int_list(&[-1, 5]);
    let imp = g.bool(false);
    let out = g.output(F32, &[7, 5]);
    g.op(EXPAND, &[xi, si, imp, out]);
    let mut case = OpCase::new(EXPAND, "dynamic [<=7, 1] -> [-1, 5]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [7usize, 1, 4, 7].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 1], 6700 + i as u64);
        let want = expand_ref(&x, &[-1, 5]);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);

    // Dynamic: x[1, <=4, 3] -> [s, -1, 3] with s a SymInt graph input (ValueList sizes):
    // both the broadcast dim (from the SymInt) and the kept dim (from x) change.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[1, 4, 3]);
    let s = g.symint();
    g.builder().mark_input(s);
    let m1 = g.int(-1);
    let three = g.int(3);
    let si = g.value_list(&[s, m1, three]);
    let imp = g.bool(false);
    let out = g.output(F32, &[6, 4, 3]);
    g.op(EXPAND, &[xi, si, imp, out]);
    let mut case = OpCase::new(EXPAND, "dynamic [1, <=4, 3] -> [s <= 6, -1, 3]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, (n, k)) in [(6usize, 4usize), (1, 2), (5, 1), (6, 4)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand(&[1, k, 3], 6710 + i as u64);
        let want = expand_ref(&x, &[n as i64, -1, 3]);
        case = case.run_vals(vec![x.into(), Val::Int(n as i64)], vec![want.into()]);
    }
    v.push(case);
    v
}

const SPLIT: &str = "aten.split_with_sizes_copy.default";

/// `torch.split(x, sizes, dim)`: consecutive runs of dim `d`, copied.
pub(crate) fn split_ref(x: &Tensor, sizes: &[usize], d: usize) -> Vec<Tensor> {
    let inner: usize = x.sizes[d + 1..].iter().product();
    let outer: usize = x.sizes[..d].iter().product();
    let n = x.sizes[d];
    let mut first = 0;
    sizes
        .iter()
        .map(|&len| {
            let mut data = Vec::with_capacity(outer * len * inner);
            for o in 0..outer {
                let at = (o * n + first) * inner;
                data.extend_from_slice(&x.data[at..at + len * inner]);
            }
            first += len;
            let mut od = x.sizes.clone();
            od[d] = len;
            Tensor::new(x.dtype, &od, data)
        })
        .collect()
}

fn split_input(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    match dt {
        I32 => Tensor::rand_int(I32, sizes, -1000, 1000, seed),
        DataType::Bool => Tensor::rand_int(dt, sizes, 0, 1, seed),
        _ => Tensor::rand_range(dt, sizes, -3.0, 3.0, seed),
    }
}

/// A split graph of x (max sizes `x_max`) into outputs of max sizes `outs`; `sizes` adds
/// the split_sizes value (an IntList, or a ValueList with SymInts).
fn split_graph(
    dt: DataType,
    x_max: &[usize],
    dim: i64,
    outs: &[Vec<usize>],
    sizes: impl FnOnce(&mut CaseGraph) -> usize,
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let si = sizes(&mut g);
    let di = g.int(dim);
    let ids: Vec<usize> = outs.iter().map(|o| g.output(dt, o)).collect();
    let list = g.value_list(&ids);
    g.op(SPLIT, &[xi, si, di, list]);
    g
}

fn split_case(dt: DataType, x_sizes: &[usize], sizes: &[usize], dim: i64, seed: u64) -> OpCase {
    let x = split_input(dt, x_sizes, seed);
    let d = if dim < 0 {
        dim + x_sizes.len() as i64
    } else {
        dim
    } as usize;
    let want = split_ref(&x, sizes, d);
    let outs: Vec<Vec<usize>> = want.iter().map(|t| t.sizes.clone()).collect();
    let list: Vec<i64> = sizes.iter().map(|&n| n as i64).collect();
    let g = split_graph(dt, x_sizes, dim, &outs, |g| g.int_list(&list));
    OpCase::new(
        SPLIT,
        format!("{} {x_sizes:?} sizes {sizes:?} dim {dim}", dt.name()),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![x], want)
}

fn split_cases() -> Vec<OpCase> {
    let b = DataType::Bool;
    let mut v = vec![
        split_case(F32, &[1, 9, 5, 5], &[2, 3, 4], 1, 6800),
        split_case(F32, &[3, 5, 10], &[4, 4, 2], -1, 6801),
        split_case(F32, &[1, 48, 3, 3], &[24, 24], 1, 6802),
        split_case(F32, &[7, 6], &[3, 0, 4], 0, 6803),
        split_case(F32, &[13], &[13], 0, 6804),
        split_case(F16, &[2, 7, 3], &[1, 5, 1], -2, 6805),
        split_case(I32, &[4, 11], &[5, 6], 1, 6806),
        split_case(b, &[2, 9], &[1, 7, 1], -1, 6807),
        split_case(b, &[5, 3], &[2, 3], 0, 6808),
    ];

    // Dynamic: x[<=6, 8] split [3, 5] on dim 1; the leading dim changes.
    let outs = vec![vec![6, 3], vec![6, 5]];
    let g = split_graph(F32, &[6, 8], 1, &outs, |g| g.int_list(&[3, 5]));
    let mut case = OpCase::new(SPLIT, "dynamic [<=6, 8] sizes [3, 5] dim 1", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [6usize, 1, 4, 6].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 8], 6810 + i as u64);
        let want = split_ref(&x, &[3, 5], 1);
        case = case.run(vec![x], want);
    }
    v.push(case);

    // Dynamic: x[2, <=9] split [s, 3] on dim -1 with s a SymInt graph input (ValueList
    // sizes): the first output follows s, the second's offset moves with it.
    let outs = vec![vec![2, 6], vec![2, 3]];
    let g = split_graph(F32, &[2, 9], -1, &outs, |g| {
        let s = g.symint();
        g.builder().mark_input(s);
        let three = g.int(3);
        g.value_list(&[s, three])
    });
    let mut case = OpCase::new(SPLIT, "dynamic [2, <=9] sizes [s <= 6, 3] dim -1", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, n) in [6usize, 0, 2, 6].into_iter().enumerate() {
        let x = Tensor::rand(&[2, n + 3], 6820 + i as u64);
        let want = split_ref(&x, &[n, 3], 1);
        let want: Vec<Val> = want.into_iter().map(Val::from).collect();
        case = case.run_vals(vec![x.into(), Val::Int(n as i64)], want);
    }
    v.push(case);
    v
}

#[cfg(test)]
mod split_tests {
    use super::*;
    use crate::case::backend;
    use etvk_runtime::{Delegate, ErrorKind};

    fn init_err(g: CaseGraph) -> etvk_runtime::Error {
        let (blob, named) = g.finish();
        match Delegate::init(&backend(), &blob, &[], &named) {
            Ok(_) => panic!("init succeeded"),
            Err(e) => e,
        }
    }

    #[test]
    fn split_sizes_must_match_the_outputs_and_the_dim() {
        let outs = vec![vec![2, 3], vec![2, 4]];
        let g = split_graph(F32, &[2, 7], 1, &outs, |g| g.int_list(&[3, 4, 0]));
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::InvalidProgram, "{e}");
        assert!(
            e.message.contains(SPLIT) && e.message.contains("3 split sizes"),
            "{e}"
        );

        let g = split_graph(F32, &[2, 7], 1, &outs, |g| g.int_list(&[3, 5]));
        let e = init_err(g);
        assert!(
            e.message.contains(SPLIT) && e.message.contains("sum to 8"),
            "{e}"
        );

        let g = split_graph(F32, &[2, 7], 2, &outs, |g| g.int_list(&[3, 4]));
        let e = init_err(g);
        assert!(
            e.message.contains(SPLIT) && e.message.contains("dim 2"),
            "{e}"
        );
    }

    #[test]
    fn split_reference_cuts_consecutive_runs() {
        let x = Tensor::f32(&[2, 5], (0..10).map(f64::from).collect());
        let parts = split_ref(&x, &[2, 0, 3], 1);
        assert_eq!(parts[0].data, vec![0.0, 1.0, 5.0, 6.0]);
        assert_eq!(parts[1].sizes, vec![2, 0]);
        assert_eq!(parts[2].data, vec![2.0, 3.0, 4.0, 7.0, 8.0, 9.0]);
    }
}
