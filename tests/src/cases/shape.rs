//! Copies that change shape or layout: `aten.view_copy.default(x, sizes IntList, out)`
//! (`-1` inferred), `aten.permute_copy.default(x, dims IntList, out)`,
//! `aten.clone.default(x, memory_format Null, out)`,
//! `aten.expand_copy.default(x, size IntList|ValueList, implicit Bool, out)`. Results are exact
//! copies.

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
