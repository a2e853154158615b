//! `aten.add.Tensor`, `aten.sub.Tensor` (`(a, b, alpha, out)`; `alpha` is `Int 1` when
//! left at its default, as the exporter materializes it), `aten.mul.Tensor`,
//! `aten.div.Tensor`, `aten.minimum.default`, `aten.maximum.default`,
//! `aten.pow.Tensor_Tensor` (`(a, b, out)`), with PyTorch broadcasting, and
//! `aten.pow.Tensor_Scalar` (`(a, exponent, out)`, exponent `Int` or `Double`);
//! `aten.bitwise_and.Tensor` / `aten.bitwise_or.Tensor` (`(a, b, out)`, broadcasting) and
//! `aten.bitwise_not.default` (`(x, out)`) on int32 and bool; `aten.div.Tensor_mode`
//! (`(a, b, rounding_mode String|Null, out)`, broadcasting) on float32, float16 and int32.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32, Int32 as I32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::reference::{broadcast_binary, broadcast_shape, unary};
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
    if dt == I32 {
        // The index arithmetic of exported linspace / arange: both signs, past fp16's range.
        return (
            Tensor::rand_int(I32, a, -1000, 1000, seed),
            Tensor::rand_int(I32, b, -1000, 1000, seed + 1),
        );
    }
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
    if matches!(op, ADD | SUB | MUL | MINIMUM | MAXIMUM) {
        let alpha = if op == ADD || op == SUB {
            Alpha::Int(3)
        } else {
            Alpha::None
        };
        for (i, (a, b, b_const)) in [(&[3, 1, 5][..], &[4, 1][..], false), (&[2, 6], &[6], true)]
            .into_iter()
            .enumerate()
        {
            let s = seed + 800 + 10 * i as u64;
            v.push(static_case(op, I32, a, b, alpha, b_const, Tol::EXACT, s));
        }
    }
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
    v.extend(bitwise_cases());
    v.extend(div_mode_cases());
    v
}

// ---------------------------------------------------------------- bitwise

const BITWISE_AND: &str = "aten.bitwise_and.Tensor";
const BITWISE_OR: &str = "aten.bitwise_or.Tensor";
const BITWISE_NOT: &str = "aten.bitwise_not.default";

/// `a op b` on int32 values (two's complement) or bools (0 / 1).
pub(crate) fn bitwise_ref(op: &str, x: f64, y: f64) -> f64 {
    let (a, b) = (x as i64, y as i64);
    match op {
        BITWISE_AND => (a & b) as f64,
        BITWISE_OR => (a | b) as f64,
        _ => unreachable!("not a binary bitwise op: {op}"),
    }
}

/// `~x`: int32 complement, or logical not of a bool.
pub(crate) fn bitwise_not_ref(dt: DataType, x: f64) -> f64 {
    if dt == DataType::Bool {
        f64::from(u8::from(x == 0.0))
    } else {
        !(x as i64) as f64
    }
}

/// Random operands of `dt`: bools, or int32 spanning both signs with the extremes planted.
fn bitwise_operand(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    if dt == DataType::Bool {
        return Tensor::rand_int(dt, sizes, 0, 1, seed);
    }
    let mut t = Tensor::rand_int(dt, sizes, -100_000, 100_000, seed);
    for (i, v) in [i32::MIN as f64, i32::MAX as f64, -1.0, 0.0]
        .into_iter()
        .enumerate()
    {
        if i < t.data.len() {
            let j = (i * 7 + seed as usize) % t.data.len();
            t.data[j] = v;
        }
    }
    t
}

fn bitwise_binary_case(
    op: &'static str,
    dt: DataType,
    a_sizes: &[usize],
    b_sizes: &[usize],
    b_const: bool,
    seed: u64,
) -> OpCase {
    let a = bitwise_operand(dt, a_sizes, seed);
    let b = bitwise_operand(dt, b_sizes, seed + 1);
    let want = broadcast_binary(&a, &b, |x, y| bitwise_ref(op, x, y));
    let mut g = CaseGraph::new();
    let ai = g.input_like(&a);
    let bi = if b_const {
        g.constant(&b)
    } else {
        g.input_like(&b)
    };
    let out = g.output(dt, &want.sizes);
    g.op(op, &[ai, bi, out]);
    let name = format!(
        "{} {a_sizes:?} vs {b_sizes:?}{}",
        dt.name(),
        if b_const { " (b const)" } else { "" }
    );
    let inputs = if b_const { vec![a] } else { vec![a, b] };
    OpCase::new(op, name, g)
        .tol(Tol::EXACT)
        .run(inputs, vec![want])
}

fn bitwise_not_graph(dt: DataType, sizes: &[usize]) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, sizes);
    let out = g.output(dt, sizes);
    g.op(BITWISE_NOT, &[xi, out]);
    g
}

fn bitwise_cases() -> Vec<OpCase> {
    use DataType::{Bool, Int32};
    let mut v = Vec::new();
    // Odd element counts put bool outputs across partial words; broadcasts both ways.
    let shapes: &[(&[usize], &[usize])] = &[
        (&[7, 13], &[7, 13]),
        (&[3, 1, 5], &[4, 1]),
        (&[2, 3, 7], &[1]),
        (&[], &[]),
        (&[], &[2, 3]),
        (&[5], &[3, 1]),
    ];
    for (k, op) in [BITWISE_AND, BITWISE_OR].into_iter().enumerate() {
        for dt in [Int32, Bool] {
            for (i, (a, b)) in shapes.iter().enumerate() {
                let seed = 60_000 + 1000 * k as u64 + 100 * u64::from(dt == Bool) + 10 * i as u64;
                v.push(bitwise_binary_case(op, dt, a, b, false, seed));
            }
            let seed = 60_090 + 1000 * k as u64 + 100 * u64::from(dt == Bool);
            v.push(bitwise_binary_case(op, dt, &[5, 7], &[7], true, seed));
        }
        // Dynamic: [M, 5] op [5], M down then up (bool words change with M).
        for dt in [Int32, Bool] {
            let mut g = CaseGraph::new();
            let ai = g.input(dt, &[7, 5]);
            let bi = g.input(dt, &[5]);
            let out = g.output(dt, &[7, 5]);
            g.op(op, &[ai, bi, out]);
            let mut case = OpCase::new(op, format!("{} dynamic [<=7, 5] vs [5]", dt.name()), g)
                .tol(Tol::EXACT)
                .dynamic();
            for (i, m) in [7usize, 1, 3, 7].into_iter().enumerate() {
                let seed = 62_000 + 100 * k as u64 + 10 * u64::from(dt == Bool) + i as u64;
                let a = bitwise_operand(dt, &[m, 5], seed);
                let b = bitwise_operand(dt, &[5], seed + 50);
                let want = broadcast_binary(&a, &b, |x, y| bitwise_ref(op, x, y));
                case = case.run(vec![a, b], vec![want]);
            }
            v.push(case);
        }
    }
    for dt in [Int32, Bool] {
        for (i, sizes) in [&[7usize, 13][..], &[65], &[1], &[], &[2, 3, 5]]
            .into_iter()
            .enumerate()
        {
            let x = bitwise_operand(dt, sizes, 63_000 + 10 * i as u64 + u64::from(dt == Bool));
            let want = unary(&x, |e| bitwise_not_ref(dt, e));
            v.push(
                OpCase::new(
                    BITWISE_NOT,
                    format!("{} {sizes:?}", dt.name()),
                    bitwise_not_graph(dt, sizes),
                )
                .tol(Tol::EXACT)
                .run(vec![x], vec![want]),
            );
        }
        let mut case = OpCase::new(
            BITWISE_NOT,
            format!("{} dynamic [<=9, 13]", dt.name()),
            bitwise_not_graph(dt, &[9, 13]),
        )
        .tol(Tol::EXACT)
        .dynamic();
        for (i, m) in [9usize, 1, 4, 9].into_iter().enumerate() {
            let x = bitwise_operand(dt, &[m, 13], 63_500 + i as u64 + u64::from(dt == Bool));
            let want = unary(&x, |e| bitwise_not_ref(dt, e));
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    v
}

// ---------------------------------------------------------------- div.Tensor_mode

const DIV_MODE: &str = "aten.div.Tensor_mode";

/// `torch.div(a, b, rounding_mode=mode)` for tensors of `dt`. Floats follow PyTorch's CPU
/// kernels, which compute in float (fp16 too, as opmath): "trunc" is `trunc(a / b)` of the
/// correctly rounded float quotient (1 / 0.1f is 10, not the 9 of the exact quotient);
/// "floor" is `div_floor_floating` (fmod, then `(a - mod) / b` rounded to an integer); None
/// is true division. int32 is exact, and a zero divisor gives 0 (PyTorch raises; the
/// runtime's documented result); int32 with None is true division (a float result).
pub(crate) fn div_mode_ref(dt: DataType, mode: Option<&str>, x: f64, y: f64) -> f64 {
    if dt == DataType::Int32 && mode.is_some() {
        let (a, b) = (x as i32, y as i32);
        if b == 0 {
            return 0.0;
        }
        let q = a.wrapping_div(b);
        let q = match mode {
            Some("floor") if a.wrapping_rem(b) != 0 && ((a < 0) != (b < 0)) => q - 1,
            _ => q,
        };
        return f64::from(q);
    }
    if dt == DataType::Int32 {
        return x / y;
    }
    let (a, b) = (x as f32, y as f32);
    let r = match mode {
        None => a / b,
        Some("trunc") => (a / b).trunc(),
        Some("floor") => {
            if b == 0.0 {
                a / b
            } else {
                // Rust's `%` on floats is C fmod (exact).
                let m = a % b;
                let mut d = (a - m) / b;
                if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
                    d -= 1.0;
                }
                if d != 0.0 {
                    let mut f = d.floor();
                    if d - f > 0.5 {
                        f += 1.0;
                    }
                    f
                } else {
                    0f32.copysign(a / b)
                }
            }
        }
        Some(other) => unreachable!("rounding mode {other}"),
    };
    f64::from(r)
}

fn div_mode_graph(dt: DataType, a: &[usize], b: &[usize], mode: Option<&str>) -> CaseGraph {
    let mut g = CaseGraph::new();
    let ai = g.input(dt, a);
    let bi = g.input(dt, b);
    let mi = match mode {
        Some(m) => g.builder().add_string(m),
        None => g.null(),
    };
    let out = g.output(dt, &broadcast_shape(a, b));
    g.op(DIV_MODE, &[ai, bi, mi, out]);
    g
}

/// Divisors: floats away from zero (with a few exact multiples of the dividends), ints
/// nonzero in [-9, 9] (zero divisors have their own case).
fn div_mode_operands(dt: DataType, a: &[usize], b: &[usize], seed: u64) -> (Tensor, Tensor) {
    if dt == DataType::Int32 {
        let ta = Tensor::rand_int(dt, a, -1000, 1000, seed);
        let mut tb = Tensor::rand_int(dt, b, 1, 9, seed + 1);
        let mut rng = crate::tensor::Rng::new(seed + 2);
        for v in &mut tb.data {
            if rng.next_u64() & 1 == 1 {
                *v = -*v;
            }
        }
        return (ta, tb);
    }
    // Dividends on a 0.25 grid and divisors in {±0.5, ±1, ±1.5, ...} give exact integer
    // quotients often, the edge the rounding modes must get right.
    let mut ta = Tensor::rand_int(dt, a, -40, 40, seed);
    ta.data.iter_mut().for_each(|v| *v *= 0.25);
    let ta = Tensor::new(dt, a, ta.data);
    let t = Tensor::rand_away_from_zero(b, 0.3, 3.0, seed + 1);
    let mut rng = crate::tensor::Rng::new(seed + 2);
    let data = t
        .data
        .iter()
        .map(|&x| {
            if rng.next_u64().is_multiple_of(3) {
                (x * 2.0).round().max(1.0).copysign(x) * 0.5
            } else {
                x
            }
        })
        .collect();
    (ta, Tensor::new(dt, b, data))
}

fn div_mode_case(
    dt: DataType,
    a_sizes: &[usize],
    b_sizes: &[usize],
    mode: Option<&'static str>,
    seed: u64,
) -> OpCase {
    let (a, b) = div_mode_operands(dt, a_sizes, b_sizes, seed);
    let want = broadcast_binary(&a, &b, |x, y| div_mode_ref(dt, mode, x, y));
    let tol = match dt {
        DataType::Float16 => Tol::F16,
        DataType::Int32 => Tol::EXACT,
        _ => Tol::F32,
    };
    OpCase::new(
        DIV_MODE,
        format!("{} {a_sizes:?} vs {b_sizes:?} mode {mode:?}", dt.name()),
        div_mode_graph(dt, a_sizes, b_sizes, mode),
    )
    .tol(tol)
    .run(vec![a, b], vec![want])
}

fn div_mode_cases() -> Vec<OpCase> {
    use DataType::Int32;
    let mut v = Vec::new();
    let shapes: &[(&[usize], &[usize])] = &[
        (&[7, 13], &[7, 13]),
        (&[3, 1, 5], &[4, 1]),
        (&[2, 3, 7], &[1]),
        (&[], &[]),
        (&[], &[2, 3]),
    ];
    for (m, mode) in [Some("trunc"), Some("floor")].into_iter().enumerate() {
        for (d, dt) in [F32, Int32].into_iter().enumerate() {
            for (i, (a, b)) in shapes.iter().enumerate() {
                let seed = 64_000 + 1000 * m as u64 + 100 * d as u64 + 10 * i as u64;
                v.push(div_mode_case(dt, a, b, mode, seed));
            }
        }
        v.push(div_mode_case(
            F16,
            &[3, 1, 5],
            &[4, 1],
            mode,
            64_500 + m as u64,
        ));
    }
    v.push(div_mode_case(F32, &[3, 1, 5], &[4, 1], None, 64_600));
    v.push(div_mode_case(F16, &[2, 7], &[7], None, 64_610));

    // Special values: exact quotients of both signs, 1 / 0.1 (trunc of the rounded
    // quotient 10, floor 9), signed zeros, zero and infinite divisors, infinite and NaN
    // dividends, overflow.
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let a = vec![
        1.0, -1.0, 0.3, 7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 5.0, -5.0, 0.0, inf, -inf, nan, 1.0, -1.0,
        3.0, 6.0, 1e30, -1e30, 2.5, -2.5, 0.7, 1e-3,
    ];
    let b = vec![
        0.1, 0.1, 0.1, 2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, 0.0, 2.0, 2.0, 1.0, inf, inf,
        -inf, 3.0, 1e-10, 1e-10, 0.5, 0.5, -0.1, 7.0,
    ];
    for dt in [F32, F16] {
        for mode in [Some("trunc"), Some("floor"), None] {
            let n = a.len();
            let (ta, tb) = (
                Tensor::new(dt, &[n], a.clone()),
                Tensor::new(dt, &[n], b.clone()),
            );
            let want = broadcast_binary(&ta, &tb, |x, y| div_mode_ref(dt, mode, x, y));
            let tol = if dt == F16 { Tol::F16 } else { Tol::F32 };
            v.push(
                OpCase::new(
                    DIV_MODE,
                    format!("{} special values mode {mode:?}", dt.name()),
                    div_mode_graph(dt, &[n], &[n], mode),
                )
                .tol(tol)
                .run(vec![ta, tb], vec![want]),
            );
        }
    }
    // int32: signs, remainders, INT_MIN / -1 (wraps), INT_MIN / 1, zero divisors (-> 0).
    let (lo, hi) = (i32::MIN as f64, i32::MAX as f64);
    let a = vec![
        7.0, -7.0, 7.0, -7.0, 6.0, -6.0, 0.0, -1.0, 1.0, lo, lo, hi, hi, 5.0, -5.0, 0.0, lo,
    ];
    let b = vec![
        2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 3.0, 5.0, -5.0, -1.0, 1.0, -1.0, 2.0, 0.0, 0.0, 0.0, 7.0,
    ];
    for mode in ["trunc", "floor"] {
        let n = a.len();
        let (ta, tb) = (
            Tensor::new(Int32, &[n], a.clone()),
            Tensor::new(Int32, &[n], b.clone()),
        );
        let want = broadcast_binary(&ta, &tb, |x, y| div_mode_ref(Int32, Some(mode), x, y));
        v.push(
            OpCase::new(
                DIV_MODE,
                format!("int32 special values mode {mode:?}"),
                div_mode_graph(Int32, &[n], &[n], Some(mode)),
            )
            .tol(Tol::EXACT)
            .run(vec![ta, tb], vec![want]),
        );
    }
    // Dynamic: one side resizes, the other broadcasts.
    for (k, (dt, mode)) in [(F32, "floor"), (Int32, "trunc")].into_iter().enumerate() {
        let mut case = OpCase::new(
            DIV_MODE,
            format!("{} dynamic [<=3, 1, 5] vs [4, 1] mode {mode}", dt.name()),
            div_mode_graph(dt, &[3, 1, 5], &[4, 1], Some(mode)),
        )
        .tol(if dt == F32 { Tol::F32 } else { Tol::EXACT })
        .dynamic();
        for (i, bt) in [3usize, 1, 2, 3].into_iter().enumerate() {
            let seed = 65_000 + 100 * k as u64 + 2 * i as u64;
            let (a, b) = div_mode_operands(dt, &[bt, 1, 5], &[4, 1], seed);
            let want = broadcast_binary(&a, &b, |x, y| div_mode_ref(dt, Some(mode), x, y));
            case = case.run(vec![a, b], vec![want]);
        }
        v.push(case);
    }
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

#[cfg(test)]
mod tests {
    use crate::graph_reference::{RefGraph, RefValue};
    use crate::tensor::Tensor;

    /// The ops added with ExecuTorch 1.5.1's Vulkan registry (this module's bitwise and
    /// div.Tensor_mode, and log10 / round / hardshrink / argmin / group norm of the unary,
    /// reduce and norm families): every case, dynamic runs included, through the reference
    /// interpreter must agree with the case's own expectation.
    #[test]
    fn div_mode_and_bitwise_references_follow_pytorch() {
        use etvk_format::ir::DataType::{Bool, Float32 as F32, Int32};
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        let f = |m: &str, a: f64, b: f64| super::div_mode_ref(F32, Some(m), a, b);
        // Values printed by torch 2.13 (torch.div(a, b, rounding_mode=...)) on float32.
        for (a, b, trunc, floor) in [
            (1.0, 0.1, 10.0, 9.0),
            (-1.0, 0.1, -10.0, -10.0),
            (0.3, 0.1, 3.0, 3.0),
            (-7.0, 2.0, -3.0, -4.0),
            (7.0, -2.0, -3.0, -4.0),
            (-1.0, inf, -0.0, -1.0),
            (3.0, -inf, -0.0, -1.0),
            (5.0, 0.0, inf, inf),
            (1e30, 1e-10, inf, inf),
        ] {
            assert_eq!(f("trunc", a, b), trunc, "{a} trunc {b}");
            assert_eq!(f("floor", a, b), floor, "{a} floor {b}");
        }
        assert!(f("floor", inf, 2.0).is_nan() && f("trunc", inf, 2.0) == inf);
        assert!(f("floor", 0.0, 0.0).is_nan() && f("trunc", nan, 1.0).is_nan());
        assert!(f("floor", -0.0, 3.0).is_sign_negative());
        let i = |m: &str, a: f64, b: f64| super::div_mode_ref(Int32, Some(m), a, b);
        assert_eq!(
            [
                i("floor", 7.0, -2.0),
                i("floor", -1.0, 5.0),
                i("trunc", -7.0, 2.0)
            ],
            [-4.0, -1.0, -3.0]
        );
        assert_eq!(i("floor", 5.0, 0.0), 0.0);
        assert_eq!(i("trunc", i32::MIN as f64, -1.0), i32::MIN as f64);
        assert_eq!(super::bitwise_not_ref(Int32, 2147483647.0), -2147483648.0);
        assert_eq!(super::bitwise_not_ref(Bool, 1.0), 0.0);
        assert_eq!(super::bitwise_ref(super::BITWISE_AND, -1.0, 6.0), 6.0);
        assert_eq!(
            crate::cases::unary::round_half_even(-2.5),
            -2.0,
            "torch.round(-2.5)"
        );
    }

    #[test]
    fn div_mode_and_bitwise_refuse_bad_programs_naming_the_rule() {
        use crate::case::{run_case, CaseGraph, OpCase};
        use etvk_format::ir::DataType::{self, Float32 as F32, Int32};
        let div = |dt: DataType, mode: &str| {
            let mut g = CaseGraph::new();
            let (a, b) = (g.input(dt, &[3]), g.input(dt, &[3]));
            let m = if mode.is_empty() {
                g.null()
            } else {
                g.builder().add_string(mode)
            };
            let o = g.output(dt, &[3]);
            g.op(super::DIV_MODE, &[a, b, m, o]);
            OpCase::new(super::DIV_MODE, "limit", g).run(vec![], vec![])
        };
        let e = run_case(&div(F32, "round")).unwrap_err();
        assert!(e.contains("rounding_mode \"round\" is not one of"), "{e}");
        let e = run_case(&div(Int32, "")).unwrap_err();
        assert!(e.contains("rounding_mode None on int32"), "{e}");
        let mut g = CaseGraph::new();
        let (a, b) = (g.input(F32, &[3]), g.input(F32, &[3]));
        let o = g.output(F32, &[3]);
        g.op(super::BITWISE_AND, &[a, b, o]);
        let e =
            run_case(&OpCase::new(super::BITWISE_AND, "limit", g).run(vec![], vec![])).unwrap_err();
        assert!(
            e.contains(super::BITWISE_AND)
                && e.contains("dtype float32 is not supported (int32, bool are)"),
            "{e}"
        );
    }

    #[test]
    fn new_op_cases_agree_with_the_reference_interpreter() {
        const OPS: &[&str] = &[
            "aten.log10.default",
            "aten.round.default",
            "aten.hardshrink.default",
            "aten.bitwise_and.Tensor",
            "aten.bitwise_or.Tensor",
            "aten.bitwise_not.default",
            "aten.div.Tensor_mode",
            "aten.argmin.default",
            "aten.native_group_norm.default",
        ];
        let mut seen = std::collections::BTreeSet::new();
        for case in crate::cases::all().iter().filter(|c| OPS.contains(&c.op)) {
            seen.insert(case.op);
            let mut r = RefGraph::from_blob(&case.blob, &case.named, &case.name)
                .unwrap_or_else(|e| panic!("{}: {e}", case.label()));
            for run in &case.runs {
                let inputs: Vec<RefValue> = run
                    .inputs
                    .iter()
                    .map(|v| match v {
                        crate::case::Val::Tensor(t) => RefValue::Tensor(t.clone()),
                        crate::case::Val::Int(i) => RefValue::Int(*i),
                    })
                    .collect();
                let outs = r
                    .execute(&inputs)
                    .unwrap_or_else(|e| panic!("{}: {e}", case.label()));
                assert_eq!(outs.len(), run.expected.len(), "{}", case.label());
                for (got, want) in outs.iter().zip(&run.expected) {
                    let (RefValue::Tensor(got), crate::case::Val::Tensor(want)) = (got, want)
                    else {
                        panic!("{}: tensor outputs only", case.label())
                    };
                    let got = Tensor::new(want.dtype, &got.sizes, got.data.clone());
                    crate::compare::compare(&got, want, case.tol)
                        .unwrap_or_else(|e| panic!("{}: {e}", case.label()));
                }
            }
        }
        assert_eq!(seen.len(), OPS.len(), "ops without cases: {seen:?}");
    }
}
