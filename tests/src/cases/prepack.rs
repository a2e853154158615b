//! `et_vk.prepack.default(constant, out)`: a constant uploaded once for ops that take it
//! as a plain tensor. Checked as a graph output and through consumers, including two ops
//! sharing one prepacked constant and a consumer that resizes.

use etvk_format::ir::DataType::{Float32 as F32, Int32 as I32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::reference::broadcast_binary;
use crate::tensor::Tensor;

const PREPACK: &str = "et_vk.prepack.default";

/// `prepack(c) -> out`, `out` a graph output.
fn direct(c: &Tensor) -> OpCase {
    let mut g = CaseGraph::new();
    let ci = g.constant(c);
    let out = g.output(c.dtype, &c.sizes);
    g.op(PREPACK, &[ci, out]);
    OpCase::new(
        PREPACK,
        format!("{} {:?} as output", c.dtype.name(), c.sizes),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![], vec![c.clone()])
}

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = vec![
        direct(&Tensor::rand(&[3, 5], 7000)),
        direct(&Tensor::rand_int(I32, &[7], -100_000, 100_000, 7001)),
        direct(&Tensor::rand(&[], 7002)),
    ];

    // One prepacked constant read by two ops (add and mul), as the exporter emits for a
    // buffer used twice.
    let c = Tensor::rand(&[13], 7010);
    let x = Tensor::rand(&[3, 13], 7011);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let ci = g.constant(&c);
    let p = g.tensor(F32, &[13]);
    g.op(PREPACK, &[ci, p]);
    let sum = g.output(F32, &[3, 13]);
    let one = g.int(1);
    g.op("aten.add.Tensor", &[xi, p, one, sum]);
    let prod = g.output(F32, &[3, 13]);
    g.op("aten.mul.Tensor", &[xi, p, prod]);
    let want_sum = broadcast_binary(&x, &c, |a, b| a + b);
    let want_prod = broadcast_binary(&x, &c, |a, b| a * b);
    v.push(
        OpCase::new(PREPACK, "[13] shared by add and mul", g)
            .run(vec![x], vec![want_sum, want_prod]),
    );

    // The consumer resizes while the prepacked constant stays put.
    let c = Tensor::rand(&[5], 7020);
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[7, 5]);
    let ci = g.constant(&c);
    let p = g.tensor(F32, &[5]);
    g.op(PREPACK, &[ci, p]);
    let out = g.output(F32, &[7, 5]);
    let one = g.int(1);
    g.op("aten.add.Tensor", &[xi, p, one, out]);
    let mut case = OpCase::new(PREPACK, "dynamic add(x[<=7, 5], prepack([5]))", g).dynamic();
    for (i, m) in [7usize, 1, 3, 7].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 5], 7030 + i as u64);
        let want = broadcast_binary(&x, &c, |a, b| a + b);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}
