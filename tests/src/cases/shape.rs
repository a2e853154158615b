//! Copies that change shape or layout: `aten.view_copy.default(x, sizes IntList, out)`
//! (`-1` inferred), `aten.permute_copy.default(x, dims IntList, out)`,
//! `aten.clone.default(x, memory_format Null, out)`,
//! `aten.expand_copy.default(x, size IntList|ValueList, implicit Bool, out)`,
//! `aten.split_with_sizes_copy.default(x, split_sizes IntList|ValueList, dim, out ValueList)`,
//! and the ops executorch 1.5.1's Vulkan partitioner registers on top (argument lists from
//! its serializer): `aten.permute.default(x, dims, out)`, `aten.t_copy.default(x, out)`,
//! `aten.alias_copy.default(x, out)`, `dim_order_ops._clone_dim_order.default(x,
//! non_blocking, dim_order, out)`, `aten.copy.default(self, src, non_blocking, out)`,
//! `aten.flip.default(x, dims, out)`, `aten.repeat.default(x, repeats, out)`,
//! `aten.unfold_copy.default(x, dimension, size, step, out)`.
//! Results are exact copies, checked against element-by-element f64 references written from
//! PyTorch's definitions (the reference interpreter uses the same functions); bool cases
//! use odd element counts so the last word of four is partial.

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
    v.extend(byte_cases());
    v.extend(permute_default_cases());
    v.extend(t_cases());
    v.extend(alias_cases());
    v.extend(clone_dim_order_cases());
    v.extend(copy_cases());
    v.extend(flip_cases());
    v.extend(repeat_cases());
    v.extend(unfold_cases());
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

    // Views of an intermediate, which share its storage (storage.rs): neg(x) viewed twice
    // (a chain), both views and neg(x) itself returned, then added to the first view in
    // the second view's sizes; static and with the rows resizing.
    for dynamic in [false, true] {
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[4, 6]);
        let a = g.output(F32, &[4, 6]);
        g.op("aten.neg.default", &[xi, a]);
        let s1 = g.int_list(&[-1, 3]);
        let b = g.output(F32, &[8, 3]);
        g.op(VIEW, &[a, s1, b]);
        let s2 = g.int_list(&[-1]);
        let c = g.output(F32, &[24]);
        g.op(VIEW, &[b, s2, c]);
        let s3 = g.int_list(&[-1, 3]);
        let c3 = g.tensor(F32, &[8, 3]);
        g.op(VIEW, &[c, s3, c3]);
        let one = g.int(1);
        let d = g.output(F32, &[8, 3]);
        g.op("aten.add.Tensor", &[b, c3, one, d]);
        let name = if dynamic {
            "views of an intermediate, chained, rows resize"
        } else {
            "views of an intermediate, chained"
        };
        let mut case = OpCase::new(VIEW, name, g).tol(Tol::EXACT);
        if dynamic {
            case = case.dynamic();
        }
        let ms: &[usize] = if dynamic { &[4, 2, 4] } else { &[4] };
        for (i, &m) in ms.iter().enumerate() {
            let x = Tensor::rand(&[m, 6], 6200 + i as u64);
            let a = Tensor::f32(&[m, 6], x.data.iter().map(|v| -v).collect());
            let b = a.reshaped(&[2 * m, 3]);
            let c = a.reshaped(&[6 * m]);
            let d = Tensor::f32(&[2 * m, 3], a.data.iter().map(|v| 2.0 * v).collect());
            case = case.run(vec![x], vec![a, b, c, d]);
        }
        v.push(case);
    }

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
pub(crate) fn expand_ref(x: &Tensor, size: &[i64]) -> Tensor {
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

    use etvk_runtime::ErrorKind;

    use crate::case::init_error as init_err;

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

// ---------------------------------------------------------------- one-byte elements

/// Bool copies through the existing shape ops (`_u8` variants, four elements a word).
fn byte_cases() -> Vec<OpCase> {
    let b = DataType::Bool;
    let mut v = Vec::new();

    let x = split_input(b, &[3, 7], 6900);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let si = g.int_list(&[7, 3]);
    let out = g.output(b, &[7, 3]);
    g.op(VIEW, &[xi, si, out]);
    v.push(
        OpCase::new(VIEW, "bool [3, 7] -> [7, 3]", g)
            .tol(Tol::EXACT)
            .run(vec![x.clone()], vec![x.reshaped(&[7, 3])]),
    );

    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let di = g.int_list(&[1, 0]);
    let out = g.output(b, &[7, 3]);
    g.op(PERMUTE, &[xi, di, out]);
    v.push(
        OpCase::new(PERMUTE, "bool [3, 7] dims [1, 0]", g)
            .tol(Tol::EXACT)
            .run(vec![x.clone()], vec![permute(&x, &[1, 0])]),
    );

    let y = split_input(b, &[3, 1], 6901);
    let mut g = CaseGraph::new();
    let yi = g.input_like(&y);
    let si = g.int_list(&[2, 3, 5]);
    let imp = g.bool(false);
    let out = g.output(b, &[2, 3, 5]);
    g.op(EXPAND, &[yi, si, imp, out]);
    v.push(
        OpCase::new(EXPAND, "bool [3, 1] -> [2, 3, 5]", g)
            .tol(Tol::EXACT)
            .run(vec![y.clone()], vec![expand_ref(&y, &[2, 3, 5])]),
    );

    // Dynamic clone of int8 data: 13 * m bytes, never a whole number of words.
    let mut g = CaseGraph::new();
    let xi = g.input(DataType::Int8, &[5, 13]);
    let mf = g.null();
    let out = g.output(DataType::Int8, &[5, 13]);
    g.op(CLONE, &[xi, mf, out]);
    let mut case = OpCase::new(CLONE, "dynamic int8 [<=5, 13]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [5usize, 1, 3, 5].into_iter().enumerate() {
        let x = Tensor::rand_int(DataType::Int8, &[m, 13], -128, 127, 6910 + i as u64);
        case = case.run(vec![x.clone()], vec![x]);
    }
    v.push(case);
    v
}

/// A data tensor of `dt` (ints in a wide range, bools 0 / 1, floats in [-3, 3)).
fn data(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    split_input(dt, sizes, seed)
}

/// A one-op case `op(x, extra..., out)` with x an input, for every entry of `runs` (x
/// sizes); `want` computes the expected output. Dynamic when a run's sizes differ from
/// `x_max`.
#[allow(clippy::too_many_arguments)]
fn unary_case(
    op: &'static str,
    name: String,
    dt: DataType,
    x_max: &[usize],
    out_max: &[usize],
    extra: impl FnOnce(&mut CaseGraph) -> Vec<usize>,
    runs: &[Vec<usize>],
    want: impl Fn(&Tensor) -> Tensor,
    seed: u64,
) -> OpCase {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let mut args = vec![xi];
    args.extend(extra(&mut g));
    args.push(g.output(dt, out_max));
    g.op(op, &args);
    let mut case = OpCase::new(op, name, g).tol(Tol::EXACT);
    if runs.iter().any(|r| r.as_slice() != x_max) {
        case = case.dynamic();
    }
    for (i, sizes) in runs.iter().enumerate() {
        let x = data(dt, sizes, seed + i as u64);
        let w = want(&x);
        case = case.run(vec![x], vec![w]);
    }
    case
}

// ---------------------------------------------------------------- permute.default, t_copy

const PERMUTE_DEFAULT: &str = "aten.permute.default";
const T_COPY: &str = "aten.t_copy.default";

fn permute_default_case(dt: DataType, sizes: &[usize], dims: &[i64], seed: u64) -> OpCase {
    let want_sizes = permute(&data(dt, sizes, 0), dims).sizes;
    let d = dims.to_vec();
    unary_case(
        PERMUTE_DEFAULT,
        format!("{} {sizes:?} dims {dims:?}", dt.name()),
        dt,
        sizes,
        &want_sizes,
        |g| vec![g.int_list(&d)],
        &[sizes.to_vec()],
        |x| permute(x, dims),
        seed,
    )
}

fn permute_default_cases() -> Vec<OpCase> {
    let b = DataType::Bool;
    vec![
        permute_default_case(F32, &[2, 3, 4], &[2, 0, 1], 7000),
        permute_default_case(F32, &[2, 3, 4], &[-1, 0, -2], 7001),
        permute_default_case(F16, &[3, 5], &[1, 0], 7002),
        permute_default_case(I32, &[2, 1, 3, 2], &[3, 2, 1, 0], 7003),
        permute_default_case(b, &[3, 5, 3], &[1, 2, 0], 7004),
        permute_default_case(F32, &[], &[], 7005),
        unary_case(
            PERMUTE_DEFAULT,
            "dynamic [<=6, 3, <=4] dims [2, 0, 1]".into(),
            F32,
            &[6, 3, 4],
            &[4, 6, 3],
            |g| vec![g.int_list(&[2, 0, 1])],
            &[vec![6, 3, 4], vec![1, 3, 2], vec![5, 3, 1], vec![6, 3, 4]],
            |x| permute(x, &[2, 0, 1]),
            7010,
        ),
    ]
}

/// PyTorch's `t`: rank 2 transposed, rank 0 / 1 unchanged.
pub(crate) fn t_ref(x: &Tensor) -> Tensor {
    if x.sizes.len() == 2 {
        permute(x, &[1, 0])
    } else {
        x.clone()
    }
}

fn t_case(dt: DataType, sizes: &[usize], seed: u64) -> OpCase {
    let out: Vec<usize> = sizes.iter().rev().copied().collect();
    unary_case(
        T_COPY,
        format!("{} {sizes:?}", dt.name()),
        dt,
        sizes,
        &out,
        |_| vec![],
        &[sizes.to_vec()],
        t_ref,
        seed,
    )
}

fn t_cases() -> Vec<OpCase> {
    vec![
        t_case(F32, &[3, 5], 7100),
        t_case(F32, &[1, 9], 7101),
        t_case(F16, &[4, 2], 7102),
        t_case(I32, &[7], 7103),
        t_case(F32, &[], 7104),
        t_case(DataType::Bool, &[3, 5], 7105),
        unary_case(
            T_COPY,
            "dynamic [<=6, 3]".into(),
            F32,
            &[6, 3],
            &[3, 6],
            |_| vec![],
            &[vec![6, 3], vec![1, 3], vec![4, 3]],
            t_ref,
            7110,
        ),
    ]
}

// ---------------------------------------------------------------- alias_copy, _clone_dim_order

const ALIAS: &str = "aten.alias_copy.default";
const CLONE_DIM_ORDER: &str = "dim_order_ops._clone_dim_order.default";

fn alias_cases() -> Vec<OpCase> {
    let mut v: Vec<OpCase> = [
        (F32, vec![2, 3]),
        (F16, vec![5]),
        (I32, vec![3, 1, 2]),
        (DataType::Bool, vec![5, 3]),
        (F32, vec![]),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (dt, sizes))| {
        unary_case(
            ALIAS,
            format!("{} {sizes:?}", dt.name()),
            dt,
            &sizes,
            &sizes,
            |_| vec![],
            std::slice::from_ref(&sizes),
            Tensor::clone,
            7200 + i as u64,
        )
    })
    .collect();
    v.push(unary_case(
        ALIAS,
        "dynamic [<=5, 7]".into(),
        F32,
        &[5, 7],
        &[5, 7],
        |_| vec![],
        &[vec![5, 7], vec![1, 7], vec![3, 7]],
        Tensor::clone,
        7210,
    ));
    v
}

fn clone_dim_order_case(
    dt: DataType,
    sizes: &[usize],
    order: Option<Vec<i64>>,
    seed: u64,
) -> OpCase {
    let how = match &order {
        Some(o) => format!("dim_order {o:?}"),
        None => "dim_order None".into(),
    };
    unary_case(
        CLONE_DIM_ORDER,
        format!("{} {sizes:?} {how}", dt.name()),
        dt,
        sizes,
        sizes,
        |g| {
            let nb = g.bool(false);
            let o = match &order {
                Some(o) => g.int_list(o),
                None => g.null(),
            };
            vec![nb, o]
        },
        &[sizes.to_vec()],
        Tensor::clone,
        seed,
    )
}

fn clone_dim_order_cases() -> Vec<OpCase> {
    vec![
        // The exporter's form: contiguous dim order written out.
        clone_dim_order_case(F32, &[1, 2, 3, 4], Some(vec![0, 1, 2, 3]), 7300),
        clone_dim_order_case(F16, &[3, 5], None, 7301),
        clone_dim_order_case(I32, &[7], Some(vec![0]), 7302),
        clone_dim_order_case(DataType::Bool, &[3, 3], Some(vec![0, 1]), 7303),
        clone_dim_order_case(F32, &[], Some(vec![]), 7304),
        unary_case(
            CLONE_DIM_ORDER,
            "dynamic [<=4, 6] dim_order [0, 1]".into(),
            F32,
            &[4, 6],
            &[4, 6],
            |g| {
                let nb = g.bool(false);
                vec![nb, g.int_list(&[0, 1])]
            },
            &[vec![4, 6], vec![1, 6], vec![3, 6]],
            Tensor::clone,
            7310,
        ),
    ]
}

// ---------------------------------------------------------------- copy

const COPY: &str = "aten.copy.default";

/// PyTorch's `copy(self, src)`: src broadcast to self's sizes (same dtype).
pub(crate) fn copy_ref(self_sizes: &[usize], src: &Tensor) -> Tensor {
    let want: Vec<i64> = self_sizes.iter().map(|&n| n as i64).collect();
    expand_ref(src, &want)
}

/// `copy(self, src)`: self an input (or a constant), src an input; `runs` of (self sizes,
/// src sizes).
fn copy_case(
    dt: DataType,
    self_max: &[usize],
    src_max: &[usize],
    self_const: bool,
    runs: &[(Vec<usize>, Vec<usize>)],
    seed: u64,
) -> OpCase {
    let mut g = CaseGraph::new();
    let si = if self_const {
        g.constant(&data(dt, self_max, seed))
    } else {
        g.input(dt, self_max)
    };
    let ri = g.input(dt, src_max);
    let nb = g.bool(false);
    let out = g.output(dt, self_max);
    g.op(COPY, &[si, ri, nb, out]);
    let how = if self_const { " (constant self)" } else { "" };
    let dynamic = runs.len() > 1;
    let name = format!(
        "{}{} self {self_max:?} src {src_max:?}{how}",
        if dynamic { "dynamic " } else { "" },
        dt.name()
    );
    let mut case = OpCase::new(COPY, name, g).tol(Tol::EXACT);
    if dynamic {
        case = case.dynamic();
    }
    for (i, (ss, rs)) in runs.iter().enumerate() {
        let src = data(dt, rs, seed + 1 + i as u64);
        let want = copy_ref(ss, &src);
        let mut inputs = Vec::new();
        if !self_const {
            // self's values never matter, only its sizes.
            inputs.push(data(dt, ss, seed + 50 + i as u64));
        }
        inputs.push(src);
        case = case.run(inputs, vec![want]);
    }
    case
}

fn copy_cases() -> Vec<OpCase> {
    let one = |a: &[usize], b: &[usize]| vec![(a.to_vec(), b.to_vec())];
    vec![
        // The partitioner's form: same sizes and dtype.
        copy_case(F32, &[2, 3], &[2, 3], false, &one(&[2, 3], &[2, 3]), 7400),
        copy_case(
            F32,
            &[2, 3, 4],
            &[3, 1],
            false,
            &one(&[2, 3, 4], &[3, 1]),
            7403,
        ),
        copy_case(F16, &[4, 5], &[5], true, &one(&[4, 5], &[5]), 7406),
        copy_case(I32, &[3, 2], &[], false, &one(&[3, 2], &[]), 7409),
        copy_case(
            DataType::Bool,
            &[3, 5],
            &[1, 5],
            false,
            &one(&[3, 5], &[1, 5]),
            7412,
        ),
        // Dynamic: self [<=5, 4] (its sizes drive the output), src [<=1, 4] -> broadcast.
        copy_case(
            F32,
            &[5, 4],
            &[1, 4],
            false,
            &[
                (vec![5, 4], vec![1, 4]),
                (vec![1, 4], vec![1, 4]),
                (vec![3, 4], vec![1, 4]),
            ],
            7420,
        ),
        // Dynamic: both change together.
        copy_case(
            F32,
            &[6, 3],
            &[6, 3],
            false,
            &[
                (vec![6, 3], vec![6, 3]),
                (vec![2, 3], vec![2, 3]),
                (vec![4, 3], vec![1, 3]),
            ],
            7430,
        ),
    ]
}

// ---------------------------------------------------------------- flip

const FLIP: &str = "aten.flip.default";

/// `torch.flip(x, dims)` (dims normalized).
pub(crate) fn flip_ref(x: &Tensor, dims: &[usize]) -> Tensor {
    let sizes = x.sizes.clone();
    let st = strides(&sizes);
    let data = (0..x.numel())
        .map(|i| {
            let idx = unravel(i, &sizes);
            let src: usize = (0..sizes.len())
                .map(|d| {
                    let c = if dims.contains(&d) {
                        sizes[d] - 1 - idx[d]
                    } else {
                        idx[d]
                    };
                    c * st[d]
                })
                .sum();
            x.data[src]
        })
        .collect();
    Tensor::new(x.dtype, &sizes, data)
}

fn norm(d: i64, rank: usize) -> usize {
    let r = rank.max(1) as i64;
    (if d < 0 { d + r } else { d }) as usize
}

fn flip_case(
    dt: DataType,
    x_max: &[usize],
    dims: &[i64],
    runs: &[Vec<usize>],
    seed: u64,
) -> OpCase {
    let dl = dims.to_vec();
    let nd: Vec<usize> = dims
        .iter()
        .map(|&d| norm(d, x_max.len()))
        .filter(|_| !x_max.is_empty())
        .collect();
    let dynamic = if runs.len() > 1 { "dynamic " } else { "" };
    unary_case(
        FLIP,
        format!("{dynamic}{} {x_max:?} dims {dims:?}", dt.name()),
        dt,
        x_max,
        x_max,
        |g| vec![g.int_list(&dl)],
        runs,
        |x| flip_ref(x, &nd),
        seed,
    )
}

fn flip_cases() -> Vec<OpCase> {
    let b = DataType::Bool;
    let one = |s: &[usize]| vec![s.to_vec()];
    vec![
        flip_case(F32, &[2, 3, 4], &[0, -1], &one(&[2, 3, 4]), 7500),
        flip_case(F32, &[1, 2, 3, 4], &[1], &one(&[1, 2, 3, 4]), 7501),
        flip_case(F32, &[2, 3, 4], &[2, 1, 0], &one(&[2, 3, 4]), 7502),
        flip_case(F32, &[3, 4], &[], &one(&[3, 4]), 7503),
        flip_case(F32, &[9], &[-1], &one(&[9]), 7504),
        flip_case(F32, &[], &[0], &one(&[]), 7505),
        flip_case(F16, &[5, 3], &[0], &one(&[5, 3]), 7506),
        flip_case(I32, &[2, 3], &[0, 1], &one(&[2, 3]), 7507),
        flip_case(b, &[3, 7], &[1], &one(&[3, 7]), 7508),
        flip_case(b, &[5, 3], &[-2], &one(&[5, 3]), 7509),
        flip_case(
            F32,
            &[6, 5],
            &[0],
            &[vec![6, 5], vec![1, 5], vec![4, 5], vec![0, 5], vec![6, 5]],
            7510,
        ),
    ]
}

// ---------------------------------------------------------------- repeat

const REPEAT: &str = "aten.repeat.default";

/// `x.repeat(reps)`: x padded with leading size-1 dims, each dim tiled.
pub(crate) fn repeat_ref(x: &Tensor, reps: &[usize]) -> Tensor {
    let off = reps.len() - x.sizes.len();
    let xs: Vec<usize> = (0..reps.len())
        .map(|d| if d < off { 1 } else { x.sizes[d - off] })
        .collect();
    let sizes: Vec<usize> = xs.iter().zip(reps).map(|(n, r)| n * r).collect();
    let st = strides(&xs);
    let data = (0..numel(&sizes))
        .map(|i| {
            let idx = unravel(i, &sizes);
            let src: usize = (0..sizes.len()).map(|d| (idx[d] % xs[d]) * st[d]).sum();
            x.data[src]
        })
        .collect();
    Tensor::new(x.dtype, &sizes, data)
}

fn repeat_case(dt: DataType, sizes: &[usize], reps: &[usize], seed: u64) -> OpCase {
    let r: Vec<i64> = reps.iter().map(|&n| n as i64).collect();
    let out = repeat_ref(&data(dt, sizes, 0), reps).sizes;
    unary_case(
        REPEAT,
        format!("{} {sizes:?} repeats {reps:?}", dt.name()),
        dt,
        sizes,
        &out,
        |g| vec![g.int_list(&r)],
        &[sizes.to_vec()],
        |x| repeat_ref(x, reps),
        seed,
    )
}

fn repeat_cases() -> Vec<OpCase> {
    let b = DataType::Bool;
    vec![
        repeat_case(F32, &[3, 4], &[2, 1, 3], 7600),
        repeat_case(F32, &[2, 3], &[2, 3], 7601),
        repeat_case(F32, &[], &[3, 2], 7602),
        repeat_case(F32, &[2, 3], &[0, 2], 7603),
        repeat_case(F32, &[5], &[1], 7604),
        repeat_case(F32, &[1, 2, 3, 2], &[2, 2, 2, 2], 7605),
        // Rank 5: ten (repeat, size) pairs merge to eight.
        repeat_case(F32, &[2, 3, 1, 2, 2], &[2, 2, 2, 2, 2], 7606),
        repeat_case(F16, &[3, 1], &[1, 4], 7607),
        repeat_case(I32, &[2], &[3, 1, 2], 7608),
        repeat_case(b, &[3], &[3, 3], 7609),
        repeat_case(b, &[1, 3], &[5, 1], 7610),
        unary_case(
            REPEAT,
            "dynamic [<=4, 3] repeats [2, 2]".into(),
            F32,
            &[4, 3],
            &[8, 6],
            |g| vec![g.int_list(&[2, 2])],
            &[vec![4, 3], vec![1, 3], vec![3, 3], vec![4, 3]],
            |x| repeat_ref(x, &[2, 2]),
            7620,
        ),
    ]
}

// ---------------------------------------------------------------- unfold_copy

const UNFOLD: &str = "aten.unfold_copy.default";

/// `x.unfold(d, size, step)`: dim d becomes `(n - size) / step + 1` windows and a last dim
/// of `size` walks each (a 0-d x is one element: out `[size]`). `None` if size > n.
pub(crate) fn unfold_ref(x: &Tensor, d: usize, size: usize, step: usize) -> Option<Tensor> {
    if x.sizes.is_empty() {
        return (size <= 1).then(|| Tensor::new(x.dtype, &[size], x.data[..size].to_vec()));
    }
    let n = x.sizes[d];
    if size > n {
        return None;
    }
    let mut sizes = x.sizes.clone();
    sizes[d] = (n - size) / step + 1;
    sizes.push(size);
    let st = strides(&x.sizes);
    let r = x.sizes.len();
    let data = (0..numel(&sizes))
        .map(|i| {
            let idx = unravel(i, &sizes);
            let src: usize = (0..r)
                .map(|k| {
                    if k == d {
                        (idx[k] * step + idx[r]) * st[k]
                    } else {
                        idx[k] * st[k]
                    }
                })
                .sum();
            x.data[src]
        })
        .collect();
    Some(Tensor::new(x.dtype, &sizes, data))
}

fn unfold_graph(
    dt: DataType,
    x_max: &[usize],
    dim: i64,
    size: i64,
    step: i64,
    out: &[usize],
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let di = g.int(dim);
    let si = g.int(size);
    let ti = g.int(step);
    let o = g.output(dt, out);
    g.op(UNFOLD, &[xi, di, si, ti, o]);
    g
}

fn unfold_case(
    dt: DataType,
    sizes: &[usize],
    dim: i64,
    size: usize,
    step: usize,
    seed: u64,
) -> OpCase {
    let x = data(dt, sizes, seed);
    let d = norm(dim, sizes.len());
    let want = unfold_ref(&x, d, size, step).expect("valid unfold case");
    let g = unfold_graph(dt, sizes, dim, size as i64, step as i64, &want.sizes);
    OpCase::new(
        UNFOLD,
        format!("{} {sizes:?} dim {dim} size {size} step {step}", dt.name()),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![x], vec![want])
}

fn unfold_cases() -> Vec<OpCase> {
    let mut v = vec![
        unfold_case(F32, &[2, 8, 3], 1, 3, 2, 7700),
        unfold_case(F32, &[2, 8, 3], -1, 2, 1, 7701),
        unfold_case(F32, &[7], 0, 7, 1, 7702),
        unfold_case(F32, &[7], 0, 2, 5, 7703),
        unfold_case(F32, &[3, 5], 1, 0, 1, 7704),
        unfold_case(F32, &[], 0, 1, 1, 7705),
        unfold_case(F16, &[4, 6], 0, 2, 2, 7706),
        unfold_case(I32, &[9, 2], -2, 4, 3, 7707),
        unfold_case(DataType::Bool, &[3, 11], 1, 3, 3, 7708),
    ];
    // Dynamic: x[<=9, 2] dim 0 size 3 step 2: 4, then 1, 2, then 4 windows again.
    let g = unfold_graph(F32, &[9, 2], 0, 3, 2, &[4, 2, 3]);
    let mut case = OpCase::new(UNFOLD, "dynamic [<=9, 2] dim 0 size 3 step 2", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [9usize, 3, 6, 9].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 2], 7710 + i as u64);
        let want = unfold_ref(&x, 0, 3, 2).unwrap();
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

#[cfg(test)]
mod new_op_tests {
    use super::*;
    use crate::case::run_case;
    use etvk_runtime::ErrorKind;

    use crate::case::init_error as init_err;

    #[test]
    fn references_follow_pytorch() {
        let x = Tensor::f32(&[2, 3], (0..6).map(f64::from).collect());
        assert_eq!(
            flip_ref(&x, &[0, 1]).data,
            vec![5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
        );
        assert_eq!(flip_ref(&x, &[1]).data, vec![2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
        // torch.arange(6.).view(2, 3).repeat(1, 2)
        let r = repeat_ref(&x, &[1, 2]);
        assert_eq!(r.sizes, vec![2, 6]);
        assert_eq!(r.data[..6], [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
        // torch.arange(7.).unfold(0, 3, 2) = [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
        let a = Tensor::f32(&[7], (0..7).map(f64::from).collect());
        let u = unfold_ref(&a, 0, 3, 2).unwrap();
        assert_eq!(u.sizes, vec![3, 3]);
        assert_eq!(u.data, vec![0.0, 1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0, 6.0]);
        assert!(unfold_ref(&a, 0, 8, 1).is_none());
        let c = copy_ref(&[2, 2], &Tensor::f32(&[2], vec![1.0, 2.0]));
        assert_eq!(c.data, vec![1.0, 2.0, 1.0, 2.0]);
    }

    #[test]
    fn bad_arguments_are_refused_at_load() {
        // flip with a repeated dim.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[2, 3]);
        let di = g.int_list(&[0, -2]);
        let out = g.output(F32, &[2, 3]);
        g.op(FLIP, &[xi, di, out]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::InvalidProgram, "{e}");
        assert!(
            e.message.contains(FLIP) && e.message.contains("multiple times"),
            "{e}"
        );

        // flip dim out of range.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[2, 3]);
        let di = g.int_list(&[2]);
        let out = g.output(F32, &[2, 3]);
        g.op(FLIP, &[xi, di, out]);
        let e = init_err(g);
        assert!(
            e.message.contains(FLIP) && e.message.contains("dim 2 out of range"),
            "{e}"
        );

        // repeat with fewer repeats than dims, and a negative repeat.
        for (reps, out, what) in [
            (vec![2i64], vec![2, 6], "can not be smaller"),
            (vec![2, -1], vec![4, 3], "negative"),
        ] {
            let mut g = CaseGraph::new();
            let xi = g.input(F32, &[2, 3]);
            let ri = g.int_list(&reps);
            let o = g.output(F32, &out);
            g.op(REPEAT, &[xi, ri, o]);
            let e = init_err(g);
            assert!(
                e.message.contains(REPEAT) && e.message.contains(what),
                "{e}"
            );
        }

        // repeat whose dims do not merge into the shader's eight.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[2, 3, 2, 3, 2]);
        let ri = g.int_list(&[2, 2, 2, 2, 2]);
        let o = g.output(F32, &[4, 6, 4, 6, 4]);
        g.op(REPEAT, &[xi, ri, o]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(
            e.message.contains(REPEAT) && e.message.contains("at most 8"),
            "{e}"
        );

        // unfold: size past the dim, step 0.
        let e = init_err(unfold_graph(F32, &[4, 2], 0, 5, 1, &[1, 2, 5]));
        assert!(
            e.message.contains(UNFOLD) && e.message.contains("maximum size"),
            "{e}"
        );
        let e = init_err(unfold_graph(F32, &[4, 2], 0, 2, 0, &[3, 2, 2]));
        assert!(
            e.message.contains(UNFOLD) && e.message.contains("step"),
            "{e}"
        );

        // t_copy of rank 3.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[2, 3, 4]);
        let o = g.output(F32, &[4, 3, 2]);
        g.op(T_COPY, &[xi, o]);
        let e = init_err(g);
        assert!(
            e.message.contains(T_COPY) && e.message.contains("<= 2 dims"),
            "{e}"
        );

        // _clone_dim_order into channels-last.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[1, 2, 3, 4]);
        let nb = g.bool(false);
        let o = g.int_list(&[0, 2, 3, 1]);
        let out = g.output(F32, &[1, 2, 3, 4]);
        g.op(CLONE_DIM_ORDER, &[xi, nb, o, out]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(
            e.message.contains(CLONE_DIM_ORDER) && e.message.contains("dim_order [0, 2, 3, 1]"),
            "{e}"
        );

        // copy: src that does not broadcast; mixed dtypes.
        let mut g = CaseGraph::new();
        let si = g.input(F32, &[2, 3]);
        let ri = g.input(F32, &[2, 2]);
        let nb = g.bool(false);
        let out = g.output(F32, &[2, 3]);
        g.op(COPY, &[si, ri, nb, out]);
        let e = init_err(g);
        assert!(
            e.message.contains(COPY) && e.message.contains("cannot be expanded"),
            "{e}"
        );
        let mut g = CaseGraph::new();
        let si = g.input(F32, &[2, 3]);
        let ri = g.input(I32, &[2, 3]);
        let nb = g.bool(false);
        let out = g.output(F32, &[2, 3]);
        g.op(COPY, &[si, ri, nb, out]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(
            e.message.contains(COPY) && e.message.contains("mixed dtypes"),
            "{e}"
        );
    }

    #[test]
    fn new_op_cases_agree_with_the_interpreter() {
        // Every case of the ops added for executorch 1.5.1's partitioner, run through the
        // f64 reference interpreter too (dynamic runs included). The interpreter raises on
        // out-of-range indices, as PyTorch does, where the runtime writes zeros: those runs
        // must fail there, naming the range.
        use crate::graph_reference::{RefGraph, RefValue};
        const OPS: &[&str] = &[
            PERMUTE_DEFAULT,
            T_COPY,
            ALIAS,
            CLONE_DIM_ORDER,
            COPY,
            FLIP,
            REPEAT,
            UNFOLD,
            "aten.index_select.default",
            "aten.gather.default",
            "aten.ones.default",
            "aten.zeros.default",
            "aten.ones_like.default",
            "aten.zeros_like.default",
            "aten.scalar_tensor.default",
            "aten.max_pool2d.default",
            "aten._assert_scalar.default",
            "aten.sym_constrain_range_for_size.default",
        ];
        let mut seen = std::collections::BTreeSet::new();
        let mut raised = 0;
        for case in crate::cases::all().iter().filter(|c| OPS.contains(&c.op)) {
            seen.insert(case.op);
            let mut r = RefGraph::from_blob(&case.blob, &case.named, &case.name)
                .unwrap_or_else(|e| panic!("{}: {e}", case.label()));
            for run in &case.runs {
                let inputs: Vec<RefValue> = run
                    .inputs
                    .iter()
                    .map(|v| match v {
                        Val::Tensor(t) => RefValue::Tensor(t.clone()),
                        Val::Int(i) => RefValue::Int(*i),
                    })
                    .collect();
                let outs = match r.execute(&inputs) {
                    Ok(o) => o,
                    Err(e) if e.contains("out of range") && case.op.contains("aten.") => {
                        raised += 1;
                        continue;
                    }
                    Err(e) => panic!("{}: {e}", case.label()),
                };
                assert_eq!(outs.len(), run.expected.len(), "{}", case.label());
                for (got, want) in outs.iter().zip(&run.expected) {
                    match (got, want) {
                        (RefValue::Tensor(got), Val::Tensor(want)) => {
                            let got = Tensor::new(want.dtype, &got.sizes, got.data.clone());
                            crate::compare::compare(&got, want, case.tol)
                                .unwrap_or_else(|e| panic!("{}: {e}", case.label()));
                        }
                        (RefValue::Int(g), Val::Int(w)) => assert_eq!(g, w, "{}", case.label()),
                        (g, w) => panic!("{}: got {g:?}, want {w:?}", case.label()),
                    }
                }
            }
        }
        assert_eq!(seen.len(), OPS.len(), "ops without cases: {seen:?}");
        // The index cases with out-of-range entries (index_select's [4, -1, 1, 7] and its
        // dynamic runs, gather's [-2, 5] range).
        assert!(raised >= 2, "{raised} runs raised");
    }

    #[test]
    fn unfold_past_a_shrunk_dim_fails_that_execute() {
        let g = unfold_graph(F32, &[9, 2], 0, 3, 2, &[4, 2, 3]);
        let case = OpCase::new(UNFOLD, "size 3 of a dim shrunk to 2", g)
            .dynamic()
            .run(
                vec![Tensor::rand(&[9, 2], 1)],
                vec![unfold_ref(&Tensor::rand(&[9, 2], 1), 0, 3, 2).unwrap()],
            )
            .run(
                vec![Tensor::rand(&[2, 2], 2)],
                vec![Tensor::rand(&[1, 2, 3], 3)],
            );
        let e = run_case(&case).unwrap_err();
        assert!(
            e.contains("run 1") && e.contains(UNFOLD) && e.contains("maximum size"),
            "{e}"
        );
    }
}
