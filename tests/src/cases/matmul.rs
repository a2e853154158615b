//! `aten.linear.default`, `aten.addmm.default`, `aten.mm.default`, `aten.bmm.default`.
//!
//! Argument layouts (exporter order, output last):
//! `linear(x, weight, bias | Null, out)`, `addmm(self, mat1, mat2, beta, alpha, out)`
//! (keyword args materialized: `Int 1` when left at their default, `Double` otherwise),
//! `mm(self, mat2, out)`, `bmm(self, mat2, out)`.

use etvk_format::ir::DataType::{Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::reference;
use crate::tensor::Tensor;

const LINEAR: &str = "aten.linear.default";
const ADDMM: &str = "aten.addmm.default";
const MM: &str = "aten.mm.default";
const BMM: &str = "aten.bmm.default";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    v.extend(linear_cases());
    v.extend(addmm_cases());
    v.extend(mm_cases());
    v.extend(bmm_cases());
    v
}

/// How the weight reaches the op.
#[derive(Clone, Copy, PartialEq)]
enum Weight {
    /// Named-data constant (what the exporter emits for parameters).
    Constant,
    /// A graph input.
    Input,
}

fn linear_static(x_sizes: &[usize], n: usize, bias: bool, weight: Weight, seed: u64) -> OpCase {
    let k = *x_sizes.last().expect("rank >= 1");
    let x = Tensor::rand(x_sizes, seed);
    let w = Tensor::rand(&[n, k], seed + 1);
    let b = bias.then(|| Tensor::rand(&[n], seed + 2));
    let want = reference::linear(&x, &w, b.as_ref());

    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let wi = match weight {
        Weight::Constant => g.constant(&w),
        Weight::Input => g.input_like(&w),
    };
    let bi = match &b {
        Some(b) => g.constant(b),
        None => g.null(),
    };
    let out = g.output(F32, &want.sizes);
    g.op(LINEAR, &[xi, wi, bi, out]);
    let name = format!(
        "x{x_sizes:?} W[{n}, {k}] {} {}",
        if bias { "bias" } else { "no bias" },
        if weight == Weight::Input {
            "W input"
        } else {
            "W const"
        }
    );
    let mut inputs = vec![x];
    if weight == Weight::Input {
        inputs.push(w);
    }
    OpCase::new(LINEAR, name, g)
        .tol(Tol::F32_SUM)
        .run(inputs, vec![want])
}

fn linear_cases() -> Vec<OpCase> {
    let mut v = vec![
        linear_static(&[4, 7], 13, true, Weight::Constant, 10),
        // M = 1, K = 65, no bias.
        linear_static(&[1, 65], 3, false, Weight::Constant, 20),
        // 3-D input: leading dims flattened into M.
        linear_static(&[2, 3, 13], 7, true, Weight::Constant, 30),
        linear_static(&[3, 1, 5], 1, false, Weight::Constant, 40),
        // Rank 1 input (a single row) and K = 1.
        linear_static(&[13], 7, true, Weight::Constant, 50),
        linear_static(&[5, 1], 3, true, Weight::Constant, 60),
        // Weight and bias as plain graph inputs.
        linear_static(&[3, 13], 7, false, Weight::Input, 70),
        // The GEMV's four-load rounds and their tail (K = 300 = 2 * 128 + 44), M = 1, 2, 7.
        linear_static(&[1, 300], 40, true, Weight::Constant, 71),
        linear_static(&[2, 260], 9, false, Weight::Constant, 72),
        linear_static(&[7, 129], 5, true, Weight::Constant, 73),
        // The tiled kernel: partial 64 x 64 tiles and a K that is no multiple of 16.
        linear_static(&[70, 150], 67, true, Weight::Constant, 74),
        linear_static(&[2, 65, 33], 130, false, Weight::Input, 75),
        linear_f16(&[3, 140], 20, 76),
        linear_f16(&[40, 70], 33, 77),
    ];

    // Dynamic: 3-D input with both leading dims changing, down then up again.
    let (k, n, max) = (13, 7, [4usize, 3, 13]);
    let w = Tensor::rand(&[n, k], 80);
    let b = Tensor::rand(&[n], 81);
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &max);
    let wi = g.constant(&w);
    let bi = g.constant(&b);
    let out = g.output(F32, &[max[0], max[1], n]);
    g.op(LINEAR, &[xi, wi, bi, out]);
    let mut case = OpCase::new(LINEAR, "dynamic x[<=4, <=3, 13] W[7, 13] bias", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, lead) in [[4, 3], [1, 3], [2, 1], [1, 1], [4, 3], [3, 2]]
        .iter()
        .enumerate()
    {
        let x = Tensor::rand(&[lead[0], lead[1], k], 90 + i as u64);
        let want = reference::linear(&x, &w, Some(&b));
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);

    // Dynamic M across the kernels: GEMV rows 1 / 2 / 4 / 8 and the tiled kernel.
    let (k, n) = (140usize, 70usize);
    let w = Tensor::rand(&[n, k], 95);
    let b = Tensor::rand(&[n], 96);
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[80, k]);
    let wi = g.constant(&w);
    let bi = g.constant(&b);
    let out = g.output(F32, &[80, n]);
    g.op(LINEAR, &[xi, wi, bi, out]);
    let mut case = OpCase::new(LINEAR, "dynamic x[<=80, 140] W[70, 140] bias", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, m) in [1usize, 9, 80, 2, 65, 3, 8].into_iter().enumerate() {
        let x = Tensor::rand(&[m, k], 97 + i as u64);
        let want = reference::linear(&x, &w, Some(&b));
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

/// fp16 x, weight and bias (fp32 accumulation), x sizes `xs`, N outputs.
fn linear_f16(xs: &[usize], n: usize, seed: u64) -> OpCase {
    let k = *xs.last().expect("rank >= 1");
    let x = Tensor::rand_range(F16, xs, -1.0, 1.0, seed);
    let w = Tensor::rand_range(F16, &[n, k], -1.0, 1.0, seed + 1);
    let b = Tensor::rand_range(F16, &[n], -1.0, 1.0, seed + 2);
    let want = reference::linear(&x, &w, Some(&b));
    let want = Tensor::new(F16, &want.sizes, want.data);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let wi = g.constant(&w);
    let bi = g.constant(&b);
    let out = g.output(F16, &want.sizes);
    g.op(LINEAR, &[xi, wi, bi, out]);
    OpCase::new(LINEAR, format!("float16 x{xs:?} W[{n}, {k}] bias"), g)
        .tol(Tol::F16)
        .run(vec![x], vec![want])
}

/// How `addmm`'s keyword args are serialized.
#[derive(Clone, Copy)]
enum Scalars {
    /// Left at their defaults: the exporter materializes `Int 1`.
    Default,
    /// Explicit floats.
    Double(f64, f64),
    /// Explicit ints.
    Int(i64, i64),
}

fn addmm_case(bias_sizes: &[usize], m: usize, k: usize, n: usize, s: Scalars, seed: u64) -> OpCase {
    let bias = Tensor::rand(bias_sizes, seed);
    let mat1 = Tensor::rand(&[m, k], seed + 1);
    let mat2 = Tensor::rand(&[k, n], seed + 2);
    let (beta, alpha) = match s {
        Scalars::Default => (1.0, 1.0),
        Scalars::Double(b, a) => (b, a),
        Scalars::Int(b, a) => (b as f64, a as f64),
    };
    let want = reference::addmm(&bias, &mat1, &mat2, beta, alpha);

    let mut g = CaseGraph::new();
    let si = g.constant(&bias);
    let m1 = g.input_like(&mat1);
    let m2 = g.constant(&mat2);
    let (bi, ai) = match s {
        Scalars::Default => (g.int(1), g.int(1)),
        Scalars::Double(b, a) => (g.double(b), g.double(a)),
        Scalars::Int(b, a) => (g.int(b), g.int(a)),
    };
    let out = g.output(F32, &[m, n]);
    g.op(ADDMM, &[si, m1, m2, bi, ai, out]);
    let name = format!("self{bias_sizes:?} [{m}, {k}] @ [{k}, {n}] beta {beta} alpha {alpha}");
    OpCase::new(ADDMM, name, g)
        .tol(Tol::F32_SUM)
        .run(vec![mat1], vec![want])
}

fn addmm_cases() -> Vec<OpCase> {
    let mut v = vec![
        addmm_case(&[13], 4, 7, 13, Scalars::Default, 100),
        addmm_case(&[3], 1, 65, 3, Scalars::Double(0.5, 2.0), 110),
        addmm_case(&[5, 7], 5, 13, 7, Scalars::Int(2, 3), 120),
        addmm_case(&[1, 7], 3, 1, 7, Scalars::Double(-1.0, 0.25), 130),
        // Partial 64 x 64 tiles, K no multiple of 16, a 2-D bias.
        addmm_case(&[70, 90], 70, 37, 90, Scalars::Double(0.5, 2.0), 140),
    ];

    // Dynamic: M goes down and back up; self [N] broadcasts over rows.
    let (k, n, max_m) = (13, 7, 9);
    let bias = Tensor::rand(&[n], 140);
    let mat2 = Tensor::rand(&[k, n], 141);
    let mut g = CaseGraph::new();
    let si = g.constant(&bias);
    let m1 = g.input(F32, &[max_m, k]);
    let m2 = g.constant(&mat2);
    let bi = g.double(0.5);
    let ai = g.double(1.5);
    let out = g.output(F32, &[max_m, n]);
    g.op(ADDMM, &[si, m1, m2, bi, ai, out]);
    let mut case = OpCase::new(ADDMM, "dynamic [<=9, 13] @ [13, 7] beta 0.5 alpha 1.5", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
        let mat1 = Tensor::rand(&[m, k], 150 + i as u64);
        let want = reference::addmm(&bias, &mat1, &mat2, 0.5, 1.5);
        case = case.run(vec![mat1], vec![want]);
    }
    v.push(case);
    v
}

fn mm_case(m: usize, k: usize, n: usize, b_const: bool, seed: u64) -> OpCase {
    let a = Tensor::rand(&[m, k], seed);
    let b = Tensor::rand(&[k, n], seed + 1);
    let want = reference::mm(&a, &b);
    let mut g = CaseGraph::new();
    let ai = g.input_like(&a);
    let bi = if b_const {
        g.constant(&b)
    } else {
        g.input_like(&b)
    };
    let out = g.output(F32, &[m, n]);
    g.op(MM, &[ai, bi, out]);
    let name = format!(
        "[{m}, {k}] @ [{k}, {n}]{}",
        if b_const { " (mat2 const)" } else { "" }
    );
    let inputs = if b_const { vec![a] } else { vec![a, b] };
    OpCase::new(MM, name, g)
        .tol(Tol::F32_SUM)
        .run(inputs, vec![want])
}

fn mm_cases() -> Vec<OpCase> {
    let mut v = vec![
        mm_case(4, 7, 13, false, 200),
        mm_case(1, 65, 3, false, 210),
        mm_case(13, 1, 5, false, 220),
        mm_case(7, 13, 1, false, 230),
        mm_case(3, 13, 7, true, 240),
        mm_case(130, 70, 65, false, 250),
        mm_case(65, 33, 129, true, 260),
    ];

    // Dynamic: M and K change together (both operands resize), down then up.
    let (n, max_m, max_k) = (5, 7, 13);
    let mut g = CaseGraph::new();
    let ai = g.input(F32, &[max_m, max_k]);
    let bi = g.input(F32, &[max_k, n]);
    let out = g.output(F32, &[max_m, n]);
    g.op(MM, &[ai, bi, out]);
    let mut case = OpCase::new(MM, "dynamic [<=7, <=13] @ [<=13, 5]", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, (m, k)) in [(7usize, 13usize), (1, 3), (3, 13), (7, 13)]
        .into_iter()
        .enumerate()
    {
        let a = Tensor::rand(&[m, k], 250 + 2 * i as u64);
        let b = Tensor::rand(&[k, n], 251 + 2 * i as u64);
        let want = reference::mm(&a, &b);
        case = case.run(vec![a, b], vec![want]);
    }
    v.push(case);
    v
}

fn bmm_case(bt: usize, m: usize, k: usize, n: usize, seed: u64) -> OpCase {
    let a = Tensor::rand(&[bt, m, k], seed);
    let b = Tensor::rand(&[bt, k, n], seed + 1);
    let want = reference::bmm(&a, &b);
    let mut g = CaseGraph::new();
    let ai = g.input_like(&a);
    let bi = g.input_like(&b);
    let out = g.output(F32, &[bt, m, n]);
    g.op(BMM, &[ai, bi, out]);
    OpCase::new(BMM, format!("[{bt}, {m}, {k}] @ [{bt}, {k}, {n}]"), g)
        .tol(Tol::F32_SUM)
        .run(vec![a, b], vec![want])
}

fn bmm_cases() -> Vec<OpCase> {
    let mut v = vec![
        bmm_case(2, 3, 7, 5, 300),
        bmm_case(1, 1, 13, 1, 310),
        bmm_case(3, 13, 65, 3, 320),
        bmm_case(5, 1, 3, 7, 330),
        bmm_case(3, 70, 20, 66, 340),
    ];

    // Dynamic: batch and M change (attention-style), down then up.
    let (k, n, max_b, max_m) = (7, 5, 4, 6);
    let mut g = CaseGraph::new();
    let ai = g.input(F32, &[max_b, max_m, k]);
    let bi = g.input(F32, &[max_b, k, n]);
    let out = g.output(F32, &[max_b, max_m, n]);
    g.op(BMM, &[ai, bi, out]);
    let mut case = OpCase::new(BMM, "dynamic [<=4, <=6, 7] @ [<=4, 7, 5]", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, (bt, m)) in [(4usize, 6usize), (1, 1), (3, 5), (4, 6)]
        .into_iter()
        .enumerate()
    {
        let a = Tensor::rand(&[bt, m, k], 340 + 2 * i as u64);
        let b = Tensor::rand(&[bt, k, n], 341 + 2 * i as u64);
        let want = reference::bmm(&a, &b);
        case = case.run(vec![a, b], vec![want]);
    }
    v.push(case);
    v
}
