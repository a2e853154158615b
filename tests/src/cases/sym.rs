//! `sym_size.int(x, dim Int, out SymInt)`: the current size of a dim as a symbolic int.
//! Checked as a graph output (the backend API returns SymInt outputs as
//! `DelegateArg::Int`) and feeding `aten.view_copy.default` sizes through a `ValueList`
//! `[SymInt, Int, Int]`, the exporter's pattern for dynamic reshapes.
//!
//! Also the assertion ops the Vulkan partitioner registers (the exporter removes them before
//! serializing; argument lists from their schemas): `aten._assert_scalar.default(cond,
//! assert_msg)` and `aten.sym_constrain_range_for_size.default(size, min, max)`. They
//! compute nothing; a SymInt operand is checked at every resize and a failure fails that
//! execute, naming the op and the message.

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
    v.extend(arith_cases());
    v.extend(assert_cases());
    v
}

const ASSERT: &str = "aten._assert_scalar.default";
const CONSTRAIN: &str = "aten.sym_constrain_range_for_size.default";

/// x[<=max_rows, 2] -> s = sym_size(x, 0), t = s - sub (a SymInt), `assert(t)` style op
/// added by `op`, and the output view_copy(x, [s, 2]) plus t.
fn assert_graph(max_rows: usize, sub: i64, op: impl FnOnce(&mut CaseGraph, usize)) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[max_rows, 2]);
    let d0 = g.int(0);
    let s = g.symint();
    g.op(SYM_SIZE, &[xi, d0, s]);
    let k = g.int(sub);
    let t = g.symint();
    g.op("sub", &[s, k, t]);
    op(&mut g, t);
    let two = g.int(2);
    let sizes = g.value_list(&[s, two]);
    let out = g.output(F32, &[max_rows, 2]);
    g.op("aten.view_copy.default", &[xi, sizes, out]);
    g.mark_output(t);
    g
}

fn assert_op(g: &mut CaseGraph, t: usize) {
    let msg = g.builder().add_string("rows must not be 2");
    g.op(ASSERT, &[t, msg]);
}

fn constrain_op(g: &mut CaseGraph, t: usize) {
    let lo = g.int(1);
    let hi = g.int(4);
    g.op(CONSTRAIN, &[t, lo, hi]);
}

/// Runs of x[m, 2] for `rows`, expecting x itself and m - sub.
fn assert_runs(mut case: OpCase, rows: &[usize], sub: i64, seed: u64) -> OpCase {
    for (i, &m) in rows.iter().enumerate() {
        let x = Tensor::rand(&[m, 2], seed + i as u64);
        case = case.run_vals(
            vec![x.clone().into()],
            vec![x.into(), Val::Int(m as i64 - sub)],
        );
    }
    case
}

fn assert_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    // assert(s - 2): rows 2 would fail; every run avoids it.
    let g = assert_graph(6, 2, assert_op);
    let case = OpCase::new(ASSERT, "assert(sym_size(x[<=6, 2], 0) - 2)", g)
        .tol(Tol::EXACT)
        .dynamic();
    v.push(assert_runs(case, &[6, 1, 3, 6], 2, 8600));

    // Literal conditions that hold: nothing to check after the load.
    for (label, cond) in [("Bool true", 0), ("Int 3", 1), ("Double 0.5", 2)] {
        let g = assert_graph(4, 0, |g, _| {
            let c = match cond {
                0 => g.bool(true),
                1 => g.int(3),
                _ => g.double(0.5),
            };
            let msg = g.builder().add_string("never");
            g.op(ASSERT, &[c, msg]);
        });
        let case = OpCase::new(ASSERT, format!("literal {label}"), g).tol(Tol::EXACT);
        v.push(assert_runs(case, &[4], 0, 8610));
    }

    // sym_constrain_range_for_size(s - 1, min=1, max=4): rows 2..=5 hold.
    let g = assert_graph(8, 1, constrain_op);
    let case = OpCase::new(CONSTRAIN, "sym_size(x[<=8, 2], 0) - 1 in [1, 4]", g)
        .tol(Tol::EXACT)
        .dynamic();
    v.push(assert_runs(case, &[5, 2, 4, 3], 1, 8620));

    // Defaults: min 0, no max; a literal size.
    let g = assert_graph(3, 0, |g, t| {
        let n = g.null();
        g.op(CONSTRAIN, &[t, n, n]);
        let five = g.int(5);
        g.op(CONSTRAIN, &[five, n, n]);
    });
    let case = OpCase::new(CONSTRAIN, "min and max None; a literal 5", g).tol(Tol::EXACT);
    v.push(assert_runs(case, &[3], 0, 8630));
    v
}

// SymInt arithmetic: the Python operators `add`, `sub`, `mul`, `floordiv` on SymInt / Int
// operands (`(a, b, out SymInt)`), host steps recomputed at every resize. Each case derives
// a SymInt from `sym_size.int` of a dynamic input, feeds it to a shape op and also returns
// the arithmetic results (negative ones too) as Int outputs.

/// Python's `a // b` (rounds toward negative infinity).
fn py_floordiv(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && (a < 0) != (b < 0) {
        q - 1
    } else {
        q
    }
}

/// `x[start..end]` along dim 0 (in-range bounds).
fn rows(x: &Tensor, start: usize, end: usize) -> Tensor {
    let inner: usize = x.sizes[1..].iter().product();
    let mut sizes = x.sizes.clone();
    sizes[0] = end - start;
    Tensor::new(x.dtype, &sizes, x.data[start * inner..end * inner].to_vec())
}

fn arith_cases() -> Vec<OpCase> {
    let mut v = Vec::new();

    // view_copy(x[<=8, 6], [add(s, s), 3]) with s = sym_size(x, 0); plus add(-5, s).
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[8, 6]);
    let d0 = g.int(0);
    let s = g.symint();
    g.op(SYM_SIZE, &[xi, d0, s]);
    let t = g.symint();
    g.op("add", &[s, s, t]);
    let three = g.int(3);
    let sizes = g.value_list(&[t, three]);
    let out = g.output(F32, &[16, 3]);
    g.op("aten.view_copy.default", &[xi, sizes, out]);
    let minus5 = g.int(-5);
    let u = g.symint();
    g.op("add", &[minus5, s, u]);
    g.mark_output(t);
    g.mark_output(u);
    let mut case = OpCase::new("add", "view_copy(x[<=8, 6], [s + s, 3]), -5 + s", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [8usize, 1, 5, 8].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 6], 8200 + i as u64);
        let m = m as i64;
        case = case.run_vals(
            vec![x.clone().into()],
            vec![
                x.reshaped(&[2 * m as usize, 3]).into(),
                Val::Int(2 * m),
                Val::Int(m - 5),
            ],
        );
    }
    v.push(case);

    // slice_copy(x[<=9, 2], 0, 0, sub(s, 2)); plus sub(1, s).
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[9, 2]);
    let d0 = g.int(0);
    let s = g.symint();
    g.op(SYM_SIZE, &[xi, d0, s]);
    let two = g.int(2);
    let e = g.symint();
    g.op("sub", &[s, two, e]);
    let start = g.int(0);
    let step = g.int(1);
    let out = g.output(F32, &[9, 2]);
    g.op("aten.slice_copy.Tensor", &[xi, d0, start, e, step, out]);
    let one = g.int(1);
    let n = g.symint();
    g.op("sub", &[one, s, n]);
    g.mark_output(e);
    g.mark_output(n);
    let mut case = OpCase::new("sub", "slice_copy(x[<=9, 2], 0, 0, s - 2), 1 - s", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [9usize, 4, 3, 7].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 2], 8300 + i as u64);
        let want = rows(&x, 0, m - 2);
        let m = m as i64;
        case = case.run_vals(
            vec![x.into()],
            vec![want.into(), Val::Int(m - 2), Val::Int(1 - m)],
        );
    }
    v.push(case);

    // view_copy(x[<=7, 6], [mul(s, 6)]); plus mul(s, -3).
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[7, 6]);
    let d0 = g.int(0);
    let s = g.symint();
    g.op(SYM_SIZE, &[xi, d0, s]);
    let six = g.int(6);
    let n = g.symint();
    g.op("mul", &[s, six, n]);
    let sizes = g.value_list(&[n]);
    let out = g.output(F32, &[42]);
    g.op("aten.view_copy.default", &[xi, sizes, out]);
    let m3 = g.int(-3);
    let p = g.symint();
    g.op("mul", &[s, m3, p]);
    g.mark_output(n);
    g.mark_output(p);
    let mut case = OpCase::new("mul", "view_copy(x[<=7, 6], [s * 6]), s * -3", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [7usize, 2, 1, 7].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 6], 8400 + i as u64);
        let want = x.reshaped(&[6 * m]);
        let m = m as i64;
        case = case.run_vals(
            vec![x.into()],
            vec![want.into(), Val::Int(6 * m), Val::Int(-3 * m)],
        );
    }
    v.push(case);

    // slice_copy(x[<=9, 4], 0, floordiv(s, 2), None); plus floordiv(1 - s, 3) and
    // floordiv(s, -4), which round toward -inf.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[9, 4]);
    let d0 = g.int(0);
    let s = g.symint();
    g.op(SYM_SIZE, &[xi, d0, s]);
    let two = g.int(2);
    let h = g.symint();
    g.op("floordiv", &[s, two, h]);
    let end = g.null();
    let step = g.int(1);
    let out = g.output(F32, &[9, 4]);
    g.op("aten.slice_copy.Tensor", &[xi, d0, h, end, step, out]);
    let one = g.int(1);
    let neg = g.symint();
    g.op("sub", &[one, s, neg]);
    let three = g.int(3);
    let q1 = g.symint();
    g.op("floordiv", &[neg, three, q1]);
    let m4 = g.int(-4);
    let q2 = g.symint();
    g.op("floordiv", &[s, m4, q2]);
    g.mark_output(h);
    g.mark_output(q1);
    g.mark_output(q2);
    let mut case = OpCase::new(
        "floordiv",
        "slice_copy(x[<=9, 4], 0, s // 2), (1 - s) // 3, s // -4",
        g,
    )
    .tol(Tol::EXACT)
    .dynamic();
    for (i, m) in [9usize, 5, 2, 1, 9].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 4], 8500 + i as u64);
        let want = rows(&x, m / 2, m);
        let m = m as i64;
        case = case.run_vals(
            vec![x.into()],
            vec![
                want.into(),
                Val::Int(py_floordiv(m, 2)),
                Val::Int(py_floordiv(1 - m, 3)),
                Val::Int(py_floordiv(m, -4)),
            ],
        );
    }
    v.push(case);
    v
}

#[cfg(test)]
mod assert_tests {
    use super::*;
    use crate::case::run_case;
    use etvk_runtime::ErrorKind;

    use crate::case::init_error as init_err;

    #[test]
    fn a_failed_assertion_fails_the_execute_naming_the_message() {
        // rows 2 make the condition s - 2 zero: that run fails, and the next one, back in
        // range, works again.
        let g = assert_graph(6, 2, assert_op);
        let case = OpCase::new(ASSERT, "assert(s - 2)", g).dynamic();
        let ok = assert_runs(case.clone(), &[4], 2, 1);
        run_case(&ok).unwrap();
        let bad = assert_runs(case.clone(), &[4, 2], 2, 1);
        let e = run_case(&bad).unwrap_err();
        assert!(
            e.contains("run 1") && e.contains(ASSERT) && e.contains("rows must not be 2"),
            "{e}"
        );
        let again = assert_runs(case, &[4, 3], 2, 1);
        run_case(&again).unwrap();

        // The serialized sizes themselves fail (a static graph): the first execute fails.
        let g = assert_graph(2, 2, assert_op);
        let case = assert_runs(OpCase::new(ASSERT, "static rows 2", g), &[2], 2, 1);
        let e = run_case(&case).unwrap_err();
        assert!(
            e.contains("run 0") && e.contains("rows must not be 2"),
            "{e}"
        );
    }

    #[test]
    fn constrain_range_checks_both_bounds() {
        let g = assert_graph(8, 1, constrain_op);
        let case = OpCase::new(CONSTRAIN, "s - 1 in [1, 4]", g).dynamic();
        for rows in [1usize, 6] {
            let bad = assert_runs(case.clone(), &[3, rows], 1, 1);
            let e = run_case(&bad).unwrap_err();
            assert!(
                e.contains("run 1")
                    && e.contains(CONSTRAIN)
                    && e.contains(&format!("invalid value range for {}", rows - 1)),
                "{e}"
            );
        }
    }

    #[test]
    fn false_literals_and_bad_bounds_fail_the_load() {
        let g = assert_graph(4, 0, |g, _| {
            let c = g.bool(false);
            let msg = g.builder().add_string("always false");
            g.op(ASSERT, &[c, msg]);
        });
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::InvalidProgram, "{e}");
        assert!(
            e.message.contains(ASSERT) && e.message.contains("always false"),
            "{e}"
        );

        let g = assert_graph(4, 0, |g, _| {
            let v = g.int(-1);
            let n = g.null();
            g.op(CONSTRAIN, &[v, n, n]);
        });
        let e = init_err(g);
        assert!(
            e.message.contains(CONSTRAIN) && e.message.contains("invalid value range for -1"),
            "{e}"
        );

        // PyTorch's rule: max must exceed 2.
        let g = assert_graph(4, 0, |g, t| {
            let n = g.null();
            let two = g.int(2);
            g.op(CONSTRAIN, &[t, n, two]);
        });
        let e = init_err(g);
        assert!(
            e.message.contains(CONSTRAIN) && e.message.contains("greater than 2"),
            "{e}"
        );
    }
}

#[cfg(test)]
mod arith_tests {
    use super::*;
    use crate::case::{backend, run_case};
    use etvk_runtime::Delegate;

    #[test]
    fn py_floordiv_matches_python() {
        assert_eq!(py_floordiv(-7, 2), -4);
        assert_eq!(py_floordiv(7, -2), -4);
        assert_eq!(py_floordiv(-7, -2), 3);
        assert_eq!(py_floordiv(6, 3), 2);
    }

    #[test]
    fn floordiv_by_zero_is_an_error_naming_the_op() {
        // A literal zero divisor fails at init.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[4, 2]);
        let d0 = g.int(0);
        let s = g.symint();
        g.op(SYM_SIZE, &[xi, d0, s]);
        let zero = g.int(0);
        let q = g.symint();
        g.op("floordiv", &[s, zero, q]);
        g.mark_output(q);
        let (blob, named) = g.finish();
        let e = match Delegate::init(&backend(), &blob, &[], &named) {
            Ok(_) => panic!("init succeeded"),
            Err(e) => e,
        };
        assert!(
            e.message.contains("floordiv") && e.message.contains("division by zero"),
            "{e}"
        );

        // A divisor that becomes zero at execute time (s - 3 with s = 3) fails that execute.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[8, 2]);
        let d0 = g.int(0);
        let s = g.symint();
        g.op(SYM_SIZE, &[xi, d0, s]);
        let three = g.int(3);
        let d = g.symint();
        g.op("sub", &[s, three, d]);
        let seven = g.int(7);
        let q = g.symint();
        g.op("floordiv", &[seven, d, q]);
        g.mark_output(q);
        let case = OpCase::new("floordiv", "7 // (s - 3)", g)
            .dynamic()
            .run_vals(vec![Tensor::rand(&[8, 2], 1).into()], vec![Val::Int(1)])
            .run_vals(vec![Tensor::rand(&[3, 2], 2).into()], vec![Val::Int(0)]);
        let e = run_case(&case).unwrap_err();
        assert!(
            e.contains("run 1") && e.contains("floordiv") && e.contains("division by zero"),
            "{e}"
        );
    }
}
