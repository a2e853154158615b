//! `sym_size.int(x, dim Int, out SymInt)`: the current size of a dim as a symbolic int.
//! Checked as a graph output (the backend API returns SymInt outputs as
//! `DelegateArg::Int`) and feeding `aten.view_copy.default` sizes through a `ValueList`
//! `[SymInt, Int, Int]`, the exporter's pattern for dynamic reshapes.

use etvk_format::ir::DataType::Float32 as F32;

use crate::case::{CaseGraph, OpCase, Val};
use crate::compare::Tol;
use crate::tensor::Tensor;

const SYM_SIZE: &str = "sym_size.int";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = Vec::new();

    // Both dims of x[<=6, 5] as outputs: dim 0 follows the input, dim 1 stays 5.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[6, 5]);
    let d0 = g.int(0);
    let s0 = g.symint();
    g.op(SYM_SIZE, &[xi, d0, s0]);
    let d1 = g.int(1);
    let s1 = g.symint();
    g.op(SYM_SIZE, &[xi, d1, s1]);
    g.mark_output(s0);
    g.mark_output(s1);
    let mut case = OpCase::new(SYM_SIZE, "dims 0 and 1 of x[<=6, 5] as outputs", g).dynamic();
    for (i, m) in [6usize, 2, 1, 6].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 5], 8000 + i as u64);
        case = case.run_vals(vec![x.into()], vec![Val::Int(m as i64), Val::Int(5)]);
    }
    v.push(case);

    // view_copy(x, [sym_size(x, 0), 2, 3]) on x[<=8, 6], plus the SymInt itself.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[8, 6]);
    let d0 = g.int(0);
    let s = g.symint();
    g.op(SYM_SIZE, &[xi, d0, s]);
    let two = g.int(2);
    let three = g.int(3);
    let sizes = g.value_list(&[s, two, three]);
    let out = g.output(F32, &[8, 2, 3]);
    g.op("aten.view_copy.default", &[xi, sizes, out]);
    g.mark_output(s);
    let mut case = OpCase::new(SYM_SIZE, "view_copy(x[<=8, 6], [sym_size(x, 0), 2, 3])", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [8usize, 1, 5, 8].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 6], 8100 + i as u64);
        let want = x.reshaped(&[m, 2, 3]);
        case = case.run_vals(vec![x.into()], vec![want.into(), Val::Int(m as i64)]);
    }
    v.push(case);
    v
}
