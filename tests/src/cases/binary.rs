//! `aten.add.Tensor`, `aten.sub.Tensor` (`(a, b, alpha, out)`; `alpha` is `Int 1` when
//! left at its default, as the exporter materializes it), `aten.mul.Tensor`,
//! `aten.div.Tensor`, `aten.minimum.default`, `aten.maximum.default`,
//! `aten.pow.Tensor_Tensor` (`(a, b, out)`), with PyTorch broadcasting, and
//! `aten.pow.Tensor_Scalar` (`(a, exponent, out)`, exponent `Int` or `Double`).

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::reference::{broadcast_binary, broadcast_shape};
use crate::tensor::Tensor;

const ADD: &str = "aten.add.Tensor";
const SUB: &str = "aten.sub.Tensor";
const MUL: &str = "aten.mul.Tensor";
const DIV: &str = "aten.div.Tensor";
const MINIMUM: &str = "aten.minimum.default";
const MAXIMUM: &str = "aten.maximum.default";
const POW: &str = "aten.pow.Tensor_Tensor";
const POW_SCALAR: &str = "aten.pow.Tensor_Scalar";

/// PyTorch's `minimum` / `maximum` propagate NaN (f64::min / max would drop it).
fn nan_or(a: f64, b: f64, f: fn(f64, f64) -> f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        f(a, b)
    }
}

/// The `alpha` argument of add/sub.
#[derive(Clone, Copy, Debug)]
enum Alpha {
    /// Not an arg (mul, div).
    None,
    /// `Int`.
    Int(i64),
    /// `Double`.
    Double(f64),
}

impl Alpha {
    fn value(self) -> f64 {
        match self {
            Alpha::None => 1.0,
            Alpha::Int(x) => x as f64,
            Alpha::Double(x) => x,
        }
    }
}

fn reference(op: &str, a: &Tensor, b: &Tensor, alpha: f64) -> Tensor {
    match op {
        ADD => broadcast_binary(a, b, |x, y| x + alpha * y),
        SUB => broadcast_binary(a, b, |x, y| x - alpha * y),
        MUL => broadcast_binary(a, b, |x, y| x * y),
        DIV => broadcast_binary(a, b, |x, y| x / y),
        MINIMUM => broadcast_binary(a, b, |x, y| nan_or(x, y, f64::min)),
        MAXIMUM => broadcast_binary(a, b, |x, y| nan_or(x, y, f64::max)),
        // f64::powf has C pow semantics, as torch.pow: (-8)^(1/3) is NaN, 0^-1 is inf.
        POW => broadcast_binary(a, b, f64::powf),
        _ => unreachable!("not a binary op: {op}"),
    }
}

/// Inputs for `op`: divisors are kept away from zero so the quotient stays well scaled;
/// pow bases are positive (negative bases need integral exponents: see `pow_specials`).
fn operands(op: &str, dt: DataType, a: &[usize], b: &[usize], seed: u64) -> (Tensor, Tensor) {
    if op == POW {
        return (
            Tensor::rand_range(dt, a, 0.25, 2.5, seed),
            Tensor::rand_range(dt, b, -3.0, 3.0, seed + 1),
        );
    }
    let ta = Tensor::rand_range(dt, a, -2.0, 2.0, seed);
    let tb = if op == DIV {
        let t = Tensor::rand_away_from_zero(b, 0.5, 2.0, seed + 1);
        Tensor::new(dt, b, t.data)
    } else {
        Tensor::rand_range(dt, b, -2.0, 2.0, seed + 1)
    };
    (ta, tb)
}

/// Push the args of one binary call; `b` may be a constant, or `usize::MAX` for none
/// (`pow.Tensor_Scalar`, whose scalar rides in `alpha`).
fn call(g: &mut CaseGraph, op: &'static str, a: usize, b: usize, alpha: Alpha, out: usize) {
    let mut args = vec![a];
    if b != usize::MAX {
        args.push(b);
    }
    match alpha {
        Alpha::None => {}
        Alpha::Int(x) => args.push(g.int(x)),
        Alpha::Double(x) => args.push(g.double(x)),
    }
    args.push(out);
    g.op(op, &args);
}

fn default_alpha(op: &str) -> Alpha {
    if op == ADD || op == SUB {
        Alpha::Int(1)
    } else {
        Alpha::None
    }
}

#[allow(clippy::too_many_arguments)]
fn static_case(
    op: &'static str,
    dt: DataType,
    a_sizes: &[usize],
    b_sizes: &[usize],
    alpha: Alpha,
    b_const: bool,
    tol: Tol,
    seed: u64,
) -> OpCase {
    let (a, b) = operands(op, dt, a_sizes, b_sizes, seed);
    let want = reference(op, &a, &b, alpha.value());
    let mut g = CaseGraph::new();
    let ai = g.input_like(&a);
    let bi = if b_const {
        g.constant(&b)
    } else {
        g.input_like(&b)
    };
    let out = g.output(dt, &want.sizes);
    call(&mut g, op, ai, bi, alpha, out);
    let mut name = format!("{} {a_sizes:?} vs {b_sizes:?}", dt.name());
    if !matches!(alpha, Alpha::None) {
        name += &format!(" alpha {alpha:?}");
    }
    if b_const {
        name += " (b const)";
    }
    let inputs = if b_const { vec![a] } else { vec![a, b] };
    OpCase::new(op, name, g).tol(tol).run(inputs, vec![want])
}

/// Shapes every binary op is checked on: same shape, the broadcasts of the brief
/// (`[3,1,5]` vs `[4,1]`, scalar-shaped `[1]`, rank-0 tensors), both-side broadcasts and
/// leading batch dims, with odd and prime sizes.
const SHAPES: &[(&[usize], &[usize])] = &[
    (&[7, 13], &[7, 13]),
    (&[3, 1, 5], &[4, 1]),
    (&[4, 1], &[3, 1, 5]),
    (&[2, 3, 7], &[1]),
    (&[1], &[65]),
    (&[], &[]),
    (&[3, 5], &[]),
    (&[], &[2, 3]),
    (&[4, 1], &[1, 5]),
    (&[2, 1, 3, 13], &[13]),
    (&[1, 1], &[1, 1]),
];

fn op_cases(op: &'static str, seed: u64) -> Vec<OpCase> {
    let mut v = Vec::new();
    for (i, (a, b)) in SHAPES.iter().enumerate() {
        let s = seed + 10 * i as u64;
        v.push(static_case(
            op,
            F32,
            a,
            b,
            default_alpha(op),
            false,
            Tol::F32,
            s,
        ));
    }
    // A constant operand (e.g. a registered buffer), broadcast along rows.
    v.push(static_case(
        op,
        F32,
        &[5, 7],
        &[7],
        default_alpha(op),
        true,
        Tol::F32,
        seed + 500,
    ));
    if op == ADD || op == SUB {
        v.push(static_case(
            op,
            F32,
            &[3, 7],
            &[3, 7],
            Alpha::Int(2),
            false,
            Tol::F32,
            seed + 510,
        ));
        v.push(static_case(
            op,
            F32,
            &[2, 5],
            &[5],
            Alpha::Double(-0.5),
            false,
            Tol::F32,
            seed + 520,
        ));
    }
    // fp16 tensors end to end (the registry declares float16).
    v.push(static_case(
        op,
        F16,
        &[3, 1, 5],
        &[4, 1],
        default_alpha(op),
        false,
        Tol::F16,
        seed + 530,
    ));
    v.push(dynamic_same_shape(op, seed + 600));
    v.push(dynamic_broadcast(op, seed + 700));
    v
}

/// Both inputs resize together: `[M, 5]` op `[M, 5]`, M down then up.
fn dynamic_same_shape(op: &'static str, seed: u64) -> OpCase {
    let alpha = default_alpha(op);
    let mut g = CaseGraph::new();
    let ai = g.input(F32, &[7, 5]);
    let bi = g.input(F32, &[7, 5]);
    let out = g.output(F32, &[7, 5]);
    call(&mut g, op, ai, bi, alpha, out);
    let mut case = OpCase::new(op, "dynamic [<=7, 5] vs [<=7, 5]", g).dynamic();
    for (i, m) in [7usize, 2, 1, 7, 3].into_iter().enumerate() {
        let (a, b) = operands(op, F32, &[m, 5], &[m, 5], seed + 2 * i as u64);
        let want = reference(op, &a, &b, alpha.value());
        case = case.run(vec![a, b], vec![want]);
    }
    case
}

/// Only one side resizes and the other broadcasts: `[B, 1, 5]` op `[4, 1]` -> `[B, 4, 5]`.
fn dynamic_broadcast(op: &'static str, seed: u64) -> OpCase {
    let alpha = default_alpha(op);
    let mut g = CaseGraph::new();
    let ai = g.input(F32, &[3, 1, 5]);
    let bi = g.input(F32, &[4, 1]);
    let out = g.output(F32, &broadcast_shape(&[3, 1, 5], &[4, 1]));
    call(&mut g, op, ai, bi, alpha, out);
    let mut case = OpCase::new(op, "dynamic [<=3, 1, 5] vs [4, 1]", g).dynamic();
    for (i, bt) in [3usize, 1, 2, 3].into_iter().enumerate() {
        let (a, b) = operands(op, F32, &[bt, 1, 5], &[4, 1], seed + 2 * i as u64);
        let want = reference(op, &a, &b, alpha.value());
        case = case.run(vec![a, b], vec![want]);
    }
    case
}

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = op_cases(ADD, 1000);
    v.extend(op_cases(SUB, 2000));
    v.extend(op_cases(MUL, 3000));
    v.extend(op_cases(DIV, 4000));
    v.extend(op_cases(MINIMUM, 20000));
    v.extend(op_cases(MAXIMUM, 21000));
    v.extend(op_cases(POW, 22000));
    v.extend(special_cases());
    v.extend(pow_scalar_cases());
    v
}

/// Hand-picked pairs random inputs miss: NaN, infinities, signed zeros, ties for
/// minimum / maximum; negative bases, zero bases and exponents for pow.
fn special_cases() -> Vec<OpCase> {
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let minmax = (
        vec![nan, 1.0, 2.0, -inf, inf, 0.0, -3.0, 7.5],
        vec![1.0, nan, 2.0, 5.0, 5.0, -0.0, -3.5, inf],
    );
    let pow = (
        vec![
            -2.0, -2.0, -0.5, 0.0, 0.0, 0.0, 3.0, -3.0, 2.0, 1.0, -1.0, -1.0, 2.0, 0.5, 0.0, 1.0,
        ],
        vec![
            3.0, 2.0, -3.0, 0.0, 2.0, -1.0, 0.0, 0.5, -2.0, inf, 4.0, inf, inf, inf, -inf, nan,
        ],
    );
    let mut v = Vec::new();
    for (op, (a, b)) in [(MINIMUM, minmax.clone()), (MAXIMUM, minmax), (POW, pow)] {
        let n = a.len();
        let (a, b) = (Tensor::f32(&[n], a), Tensor::f32(&[n], b));
        let want = reference(op, &a, &b, 1.0);
        let mut g = CaseGraph::new();
        let ai = g.input_like(&a);
        let bi = g.input_like(&b);
        let out = g.output(F32, &[n]);
        g.op(op, &[ai, bi, out]);
        v.push(OpCase::new(op, "special values", g).run(vec![a, b], vec![want]));
    }
    v
}

/// `[x, exponent, out]` as the exporter writes it: `Int` for `x ** 2`, `Double` for
/// `x ** 0.5`. Integral exponents also see negative bases.
fn pow_scalar_cases() -> Vec<OpCase> {
    let op = POW_SCALAR;
    let exps = [
        (Alpha::Int(2), -2.0),
        (Alpha::Int(3), -2.0),
        (Alpha::Int(-1), 0.25),
        (Alpha::Int(0), -2.0),
        (Alpha::Double(0.5), 0.0),
        (Alpha::Double(-1.5), 0.25),
        (Alpha::Double(2.5), 0.0),
    ];
    let shapes: &[&[usize]] = &[&[7, 13], &[1], &[], &[2, 3, 5, 7]];
    let graph = |dt: DataType, sizes: &[usize], e: Alpha| {
        let mut g = CaseGraph::new();
        let xi = g.input(dt, sizes);
        let out = g.output(dt, sizes);
        call(&mut g, op, xi, usize::MAX, e, out);
        g
    };
    let pow_ref = |x: &Tensor, e: f64| crate::reference::unary(x, |v| v.powf(e));
    let mut v = Vec::new();
    for (i, (e, lo)) in exps.into_iter().enumerate() {
        let seed = 23000 + 100 * i as u64;
        for (j, s) in shapes.iter().enumerate() {
            let x = Tensor::rand_range(F32, s, lo, 2.5, seed + j as u64);
            let want = pow_ref(&x, e.value());
            v.push(
                OpCase::new(op, format!("{s:?} exponent {e:?}"), graph(F32, s, e))
                    .run(vec![x], vec![want]),
            );
        }
        let x = Tensor::rand_range(F16, &[3, 5, 7], lo, 2.5, seed + 50);
        let want = pow_ref(&x, e.value());
        v.push(
            OpCase::new(
                op,
                format!("float16 [3, 5, 7] exponent {e:?}"),
                graph(F16, &[3, 5, 7], e),
            )
            .tol(Tol::F16)
            .run(vec![x], vec![want]),
        );
    }
    // Zero and negative bases, infinities; a non-integral exponent of a negative base is NaN.
    let x = Tensor::f32(&[7], vec![0.0, -0.0, -2.0, 4.0, f64::INFINITY, 1.0, -1e-3]);
    for e in [
        Alpha::Double(0.5),
        Alpha::Int(-2),
        Alpha::Int(3),
        Alpha::Int(0),
    ] {
        let want = pow_ref(&x, e.value());
        v.push(
            OpCase::new(
                op,
                format!("special values exponent {e:?}"),
                graph(F32, &[7], e),
            )
            .run(vec![x.clone()], vec![want]),
        );
    }
    let mut case = OpCase::new(op, "dynamic [<=9, 13] exponent Int(2)", {
        graph(F32, &[9, 13], Alpha::Int(2))
    })
    .dynamic();
    for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
        let x = Tensor::rand_range(F32, &[m, 13], -2.0, 2.0, 23900 + i as u64);
        let want = pow_ref(&x, 2.0);
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}
