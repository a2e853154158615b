//! Elementwise unary ops: `aten.relu.default(x, out)`, `aten.sigmoid.default(x, out)`, and the
//! ReLU gradient `aten.threshold_backward.default(grad, self, threshold, out)`.

use etvk_format::ir::DataType::Float32 as F32;

use crate::case::{CaseGraph, OpCase};
use crate::reference::{sigmoid, unary};
use crate::tensor::Tensor;

const RELU: &str = "aten.relu.default";
const SIGMOID: &str = "aten.sigmoid.default";

fn reference(op: &str, x: &Tensor) -> Tensor {
    match op {
        RELU => unary(x, |v| v.max(0.0)),
        SIGMOID => unary(x, sigmoid),
        _ => unreachable!("not a unary op: {op}"),
    }
}

/// Inputs span both signs; sigmoid also sees saturating magnitudes.
fn input(op: &str, sizes: &[usize], seed: u64) -> Tensor {
    let r = if op == SIGMOID { 12.0 } else { 3.0 };
    Tensor::rand_range(F32, sizes, -r, r, seed)
}

fn static_case(op: &'static str, sizes: &[usize], seed: u64) -> OpCase {
    let x = input(op, sizes, seed);
    let want = reference(op, &x);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let out = g.output(F32, sizes);
    g.op(op, &[xi, out]);
    OpCase::new(op, format!("{sizes:?}"), g).run(vec![x], vec![want])
}

fn op_cases(op: &'static str, seed: u64) -> Vec<OpCase> {
    let shapes: &[&[usize]] = &[&[7, 13], &[65], &[1], &[], &[2, 3, 5, 7], &[1, 1, 13]];
    let mut v: Vec<OpCase> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| static_case(op, s, seed + i as u64))
        .collect();

    // Exact zeros and extreme values: relu(0) = 0 and sigmoid must not overflow to NaN.
    let x = Tensor::f32(&[6], vec![0.0, -0.0, 80.0, -80.0, 1e-30, -1e-30]);
    let want = reference(op, &x);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let out = g.output(F32, &[6]);
    g.op(op, &[xi, out]);
    v.push(OpCase::new(op, "zeros and extremes", g).run(vec![x], vec![want]));

    // Dynamic: leading dim down then up.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[9, 13]);
    let out = g.output(F32, &[9, 13]);
    g.op(op, &[xi, out]);
    let mut case = OpCase::new(op, "dynamic [<=9, 13]", g).dynamic();
    for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
        let x = input(op, &[m, 13], seed + 100 + i as u64);
        let want = reference(op, &x);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

const THRESHOLD_BACKWARD: &str = "aten.threshold_backward.default";

/// `threshold_backward(grad, self, threshold)`: grad where self > threshold, else 0.
fn threshold_backward_ref(grad: &Tensor, x: &Tensor, threshold: f64) -> Tensor {
    let data = grad
        .data
        .iter()
        .zip(&x.data)
        .map(|(g, v)| if *v <= threshold { 0.0 } else { *g })
        .collect();
    Tensor::f32(&grad.sizes, data)
}

fn threshold_backward_cases() -> Vec<OpCase> {
    let op = THRESHOLD_BACKWARD;
    let mut v = Vec::new();
    for (i, (sizes, threshold)) in [
        (&[7usize, 13][..], 0.0),
        (&[1][..], 0.5),
        (&[2, 3, 5][..], -0.25),
    ]
    .into_iter()
    .enumerate()
    {
        let grad = Tensor::rand_range(F32, sizes, -2.0, 2.0, 5200 + i as u64);
        // Exact threshold values included: `self <= threshold` gives 0 there.
        let mut x = Tensor::rand_range(F32, sizes, -1.0, 1.0, 5300 + i as u64);
        x.data[0] = threshold;
        let want = threshold_backward_ref(&grad, &x, threshold);
        let mut g = CaseGraph::new();
        let gi = g.input_like(&grad);
        let xi = g.input_like(&x);
        let t = g.double(threshold);
        let out = g.output(F32, sizes);
        g.op(op, &[gi, xi, t, out]);
        v.push(
            OpCase::new(op, format!("{sizes:?} threshold {threshold}"), g)
                .run(vec![grad, x], vec![want]),
        );
    }
    let mut g = CaseGraph::new();
    let gi = g.input(F32, &[9, 5]);
    let xi = g.input(F32, &[9, 5]);
    let t = g.double(0.0);
    let out = g.output(F32, &[9, 5]);
    g.op(op, &[gi, xi, t, out]);
    let mut case = OpCase::new(op, "dynamic [<=9, 5]", g).dynamic();
    for (i, m) in [9usize, 2, 9].into_iter().enumerate() {
        let grad = Tensor::rand_range(F32, &[m, 5], -2.0, 2.0, 5400 + i as u64);
        let x = Tensor::rand_range(F32, &[m, 5], -1.0, 1.0, 5500 + i as u64);
        let want = threshold_backward_ref(&grad, &x, 0.0);
        case = case.run(vec![grad, x], vec![want]);
    }
    v.push(case);
    v
}

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = op_cases(RELU, 5000);
    v.extend(op_cases(SIGMOID, 5100));
    v.extend(threshold_backward_cases());
    v
}
