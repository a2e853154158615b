//! Comparison, logical, `where` and dtype-conversion ops (runtime `ops/logic.rs`):
//!
//! - `aten.{eq,ne,lt,le,gt,ge}.Scalar` (`(self, other Int|Double|Bool, out)`) and
//!   `.Tensor` (`(self, other, out)`, broadcasting): Bool out, compared in PyTorch's
//!   promoted type, which each case states (float32, float16-rounded or exact int).
//! - `aten.logical_{and,or,xor}.default` (broadcasting) and `aten.logical_not.default`.
//! - `aten.where.self` (`(condition, self, other, out)`, three-way broadcasting).
//! - `aten._to_copy.default` (`(self, dtype, layout, device, pin_memory, non_blocking,
//!   memory_format, out)`, kwargs as the exporter writes them: `Null`s and
//!   `non_blocking = Bool false`) and `dim_order_ops._to_dim_order_copy.default`
//!   (`(self, dtype, non_blocking, dim_order, out)`).
//!
//! Values sit on a coarse grid so that equal elements (ties) are common; float inputs
//! include -0.0 and NaN where the semantics single them out.

use etvk_format::ir::DataType::{self, Bool as BOOL, Float16 as F16, Float32 as F32, Int32 as I32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::{numel, round_to, strides, unravel, Tensor};

const CMP: &[(&str, &str)] = &[
    ("eq", "aten.eq.Scalar"),
    ("ne", "aten.ne.Scalar"),
    ("lt", "aten.lt.Scalar"),
    ("le", "aten.le.Scalar"),
    ("gt", "aten.gt.Scalar"),
    ("ge", "aten.ge.Scalar"),
];
const CMP_T: &[(&str, &str)] = &[
    ("eq", "aten.eq.Tensor"),
    ("ne", "aten.ne.Tensor"),
    ("lt", "aten.lt.Tensor"),
    ("le", "aten.le.Tensor"),
    ("gt", "aten.gt.Tensor"),
    ("ge", "aten.ge.Tensor"),
];
const AND: &str = "aten.logical_and.default";
const OR: &str = "aten.logical_or.default";
const XOR: &str = "aten.logical_xor.default";
const NOT: &str = "aten.logical_not.default";
const WHERE: &str = "aten.where.self";
const TO_COPY: &str = "aten._to_copy.default";
const TO_DIM_ORDER: &str = "dim_order_ops._to_dim_order_copy.default";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    v.extend(compare_scalar_cases());
    v.extend(compare_tensor_cases());
    v.extend(logical_cases());
    v.extend(where_cases());
    v.extend(to_copy_cases());
    v
}

// ---------------------------------------------------------------- references

/// PyTorch broadcast of several shapes (right-aligned; sizes equal or 1).
fn bshape(shapes: &[&[usize]]) -> Vec<usize> {
    let r = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..r)
        .map(|i| {
            let mut out = 1;
            for s in shapes {
                let d = if i + s.len() >= r {
                    s[i + s.len() - r]
                } else {
                    1
                };
                assert!(
                    d == 1 || out == 1 || d == out,
                    "shapes {shapes:?} do not broadcast"
                );
                if d != 1 {
                    out = d;
                }
            }
            out
        })
        .collect()
}

/// `f` over the broadcast of `inputs`, as `dtype` values.
fn bmap(inputs: &[&Tensor], dtype: DataType, f: impl Fn(&[f64]) -> f64) -> Tensor {
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.sizes.as_slice()).collect();
    let sizes = bshape(&shapes);
    let data = (0..numel(&sizes))
        .map(|i| {
            let idx = unravel(i, &sizes);
            let vals: Vec<f64> = inputs
                .iter()
                .map(|t| {
                    let st = strides(&t.sizes);
                    let off = idx.len() - t.sizes.len();
                    let flat: usize = (0..t.sizes.len())
                        .map(|d| {
                            if t.sizes[d] == 1 {
                                0
                            } else {
                                idx[off + d] * st[d]
                            }
                        })
                        .sum();
                    t.data[flat]
                })
                .collect();
            f(&vals)
        })
        .collect();
    Tensor::new(dtype, &sizes, data)
}

/// The domain PyTorch's promotion puts a comparison in.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Domain {
    F32,
    F16,
    Int,
}

impl Domain {
    fn round(self, x: f64) -> f64 {
        match self {
            Domain::F32 => round_to(F32, x),
            Domain::F16 => round_to(F16, x),
            Domain::Int => x,
        }
    }
}

fn cmp(op: &str, a: f64, b: f64) -> bool {
    // f64 comparisons have IEEE NaN semantics, as torch: only `ne` holds for NaN.
    match op {
        "eq" => a == b,
        "ne" => a != b,
        "lt" => a < b,
        "le" => a <= b,
        "gt" => a > b,
        "ge" => a >= b,
        _ => unreachable!("not a comparison: {op}"),
    }
}

fn b2f(b: bool) -> f64 {
    f64::from(u8::from(b))
}

// ---------------------------------------------------------------- inputs

/// Values on a grid of 0.5 in [-2, 2] (ints: [-3, 3]; bools: 0 / 1), so ties are common.
fn grid(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    match dt {
        BOOL => Tensor::rand_int(BOOL, sizes, 0, 1, seed),
        I32 => Tensor::rand_int(I32, sizes, -3, 3, seed),
        _ => {
            let k = Tensor::rand_int(I32, sizes, -4, 4, seed);
            Tensor::new(dt, sizes, k.data.iter().map(|x| x * 0.5).collect())
        }
    }
}

/// `grid` with NaN and -0.0 planted (float dtypes) where the tensor is large enough.
fn grid_special(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    let mut t = grid(dt, sizes, seed);
    if matches!(dt, F32 | F16) && t.numel() >= 5 {
        t.data[1] = f64::NAN;
        t.data[3] = -0.0;
        t.data[4] = 0.0;
    }
    t
}

// ---------------------------------------------------------------- comparisons

#[derive(Debug, Clone, Copy)]
enum Scalar {
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl Scalar {
    fn value(self) -> f64 {
        match self {
            Scalar::Int(x) => x as f64,
            Scalar::Double(x) => x,
            Scalar::Bool(x) => b2f(x),
        }
    }
    fn add(self, g: &mut CaseGraph) -> usize {
        match self {
            Scalar::Int(x) => g.int(x),
            Scalar::Double(x) => g.double(x),
            Scalar::Bool(x) => g.bool(x),
        }
    }
}

fn compare_scalar_ref(op: &str, x: &Tensor, s: Scalar, dom: Domain) -> Tensor {
    let sv = dom.round(s.value());
    bmap(&[x], BOOL, |v| b2f(cmp(op, dom.round(v[0]), sv)))
}

/// One static scalar comparison case on an input tensor.
fn scalar_case(op: &'static str, tag: &str, x: Tensor, s: Scalar, dom: Domain) -> OpCase {
    let want = compare_scalar_ref(tag, &x, s, dom);
    let mut g = CaseGraph::new();
    let xi = g.input_like(&x);
    let si = s.add(&mut g);
    let out = g.output(BOOL, &x.sizes);
    g.op(op, &[xi, si, out]);
    let name = format!("{}{:?} vs {s:?} in {dom:?}", x.dtype.name(), x.sizes);
    OpCase::new(op, name, g).run(vec![x], vec![want])
}

fn compare_scalar_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    for (i, &(tag, op)) in CMP.iter().enumerate() {
        let seed = 31_000 + 100 * i as u64;
        let f32x = grid_special(F32, &[5, 7], seed);
        v.push(scalar_case(op, tag, f32x, Scalar::Double(0.5), Domain::F32));
        // fp16 vs Double: the scalar rounds to half first (0.1 -> 0.0999755859375), so
        // an element holding half(0.1) is equal.
        let mut h = grid_special(F16, &[3, 11], seed + 1);
        h.data[7] = round_to(F16, 0.1);
        h.data[8] = round_to(F16, 0.1);
        v.push(scalar_case(op, tag, h, Scalar::Double(0.1), Domain::F16));
        // int32 vs Int: exact; vs Double: compared in float32 (2 < 2.5 < 3).
        v.push(scalar_case(
            op,
            tag,
            grid(I32, &[13], seed + 2),
            Scalar::Int(1),
            Domain::Int,
        ));
        v.push(scalar_case(
            op,
            tag,
            grid(I32, &[2, 3, 1, 5], seed + 3),
            Scalar::Double(-1.5),
            Domain::F32,
        ));
        // Large int32 values vs an Int beyond float32's exact range: exact int compare.
        let big = Tensor::new(
            I32,
            &[6],
            vec![
                16_777_217.0,
                16_777_216.0,
                16_777_218.0,
                -16_777_217.0,
                2_147_483_647.0,
                0.0,
            ],
        );
        v.push(scalar_case(
            op,
            tag,
            big,
            Scalar::Int(16_777_217),
            Domain::Int,
        ));
        v.push(scalar_case(
            op,
            tag,
            grid(BOOL, &[3, 5], seed + 4),
            Scalar::Int(1),
            Domain::Int,
        ));
        v.push(scalar_case(
            op,
            tag,
            grid(BOOL, &[9], seed + 5),
            Scalar::Bool(false),
            Domain::Int,
        ));
        v.push(scalar_case(
            op,
            tag,
            grid(F32, &[], seed + 6),
            Scalar::Int(0),
            Domain::F32,
        ));

        // Dynamic: built at [6, 9], run smaller then at the maximum again.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[6, 9]);
        let si = g.double(-0.5);
        let out = g.output(BOOL, &[6, 9]);
        g.op(op, &[xi, si, out]);
        let mut case = OpCase::new(op, "dynamic f32[<=6, <=9] vs -0.5", g).dynamic();
        for (j, sz) in [[6usize, 9], [2, 5], [1, 1], [5, 3], [6, 9]]
            .iter()
            .enumerate()
        {
            let x = grid(F32, sz, seed + 50 + j as u64);
            let want = compare_scalar_ref(tag, &x, Scalar::Double(-0.5), Domain::F32);
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    v
}

fn compare_tensor_ref(op: &str, a: &Tensor, b: &Tensor, dom: Domain) -> Tensor {
    bmap(&[a, b], BOOL, |v| {
        b2f(cmp(op, dom.round(v[0]), dom.round(v[1])))
    })
}

/// `(a dtype, a sizes, b dtype, b sizes, domain)`.
type TensorPair = (
    DataType,
    &'static [usize],
    DataType,
    &'static [usize],
    Domain,
);

const CMP_PAIRS: &[TensorPair] = &[
    (F32, &[7, 13], F32, &[7, 13], Domain::F32),
    (F32, &[3, 1, 5], F32, &[4, 1], Domain::F32),
    (F16, &[2, 1, 3, 7], F16, &[7], Domain::F16),
    (I32, &[5, 3], I32, &[5, 1], Domain::Int),
    (BOOL, &[4, 1], BOOL, &[1, 5], Domain::Int),
    // Mixed dtypes promote: int32 with float32 -> float32, int32 with fp16 -> fp16,
    // bool with int32 -> int32.
    (I32, &[3, 5], F32, &[5], Domain::F32),
    (F16, &[11], I32, &[2, 11], Domain::F16),
    (BOOL, &[2, 3], I32, &[3], Domain::Int),
    (F32, &[], F32, &[2, 3], Domain::F32),
];

fn compare_tensor_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    for (i, &(tag, op)) in CMP_T.iter().enumerate() {
        let seed = 32_000 + 100 * i as u64;
        for (j, &(da, sa, db, sb, dom)) in CMP_PAIRS.iter().enumerate() {
            let a = grid_special(da, sa, seed + 2 * j as u64);
            let b = grid(db, sb, seed + 2 * j as u64 + 1);
            let want = compare_tensor_ref(tag, &a, &b, dom);
            let mut g = CaseGraph::new();
            let ai = g.input_like(&a);
            let bi = g.input_like(&b);
            let out = g.output(BOOL, &want.sizes);
            g.op(op, &[ai, bi, out]);
            let name = format!("{}{sa:?} vs {}{sb:?}", da.name(), db.name());
            v.push(OpCase::new(op, name, g).run(vec![a, b], vec![want]));
        }
        // A constant right operand (a registered buffer).
        let a = grid(F32, &[4, 7], seed + 60);
        let b = grid(F32, &[7], seed + 61);
        let want = compare_tensor_ref(tag, &a, &b, Domain::F32);
        let mut g = CaseGraph::new();
        let ai = g.input_like(&a);
        let bi = g.constant(&b);
        let out = g.output(BOOL, &[4, 7]);
        g.op(op, &[ai, bi, out]);
        v.push(OpCase::new(op, "f32[4, 7] vs const f32[7]", g).run(vec![a], vec![want]));

        // Dynamic: a[<=5, <=6] vs b[<=6], both resized (b broadcast along rows).
        let mut g = CaseGraph::new();
        let ai = g.input(I32, &[5, 6]);
        let bi = g.input(I32, &[6]);
        let out = g.output(BOOL, &[5, 6]);
        g.op(op, &[ai, bi, out]);
        let mut case = OpCase::new(op, "dynamic i32[<=5, <=6] vs i32[<=6]", g).dynamic();
        for (j, (m, n)) in [(5usize, 6usize), (1, 3), (3, 1), (4, 5), (5, 6)]
            .into_iter()
            .enumerate()
        {
            let a = grid(I32, &[m, n], seed + 70 + 2 * j as u64);
            let b = grid(I32, &[n], seed + 71 + 2 * j as u64);
            let want = compare_tensor_ref(tag, &a, &b, Domain::Int);
            case = case.run(vec![a, b], vec![want]);
        }
        v.push(case);
    }
    v
}

// ---------------------------------------------------------------- logical ops

fn truth(x: f64) -> bool {
    // NaN != 0 is true, as `bool(float('nan'))`.
    x != 0.0
}

fn logical_ref(op: &str, a: &Tensor, b: Option<&Tensor>) -> Tensor {
    match b {
        None => bmap(&[a], BOOL, |v| b2f(!truth(v[0]))),
        Some(b) => bmap(&[a, b], BOOL, |v| {
            let (x, y) = (truth(v[0]), truth(v[1]));
            b2f(match op {
                AND => x && y,
                OR => x || y,
                XOR => x != y,
                _ => unreachable!("not a logical op: {op}"),
            })
        }),
    }
}

fn logical_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    let pairs: &[(DataType, &[usize], DataType, &[usize])] = &[
        (BOOL, &[7, 13], BOOL, &[7, 13]),
        (BOOL, &[3, 1, 5], BOOL, &[4, 1]),
        (F32, &[2, 3, 5], I32, &[5]),
        (F16, &[11], BOOL, &[3, 1]),
        (I32, &[], F32, &[2, 1, 3, 2]),
    ];
    for (i, op) in [AND, OR, XOR].into_iter().enumerate() {
        let seed = 33_000 + 100 * i as u64;
        for (j, &(da, sa, db, sb)) in pairs.iter().enumerate() {
            let a = grid_special(da, sa, seed + 2 * j as u64);
            let b = grid(db, sb, seed + 2 * j as u64 + 1);
            let want = logical_ref(op, &a, Some(&b));
            let mut g = CaseGraph::new();
            let ai = g.input_like(&a);
            let bi = g.input_like(&b);
            let out = g.output(BOOL, &want.sizes);
            g.op(op, &[ai, bi, out]);
            let name = format!("{}{sa:?} vs {}{sb:?}", da.name(), db.name());
            v.push(OpCase::new(op, name, g).run(vec![a, b], vec![want]));
        }
        let mut g = CaseGraph::new();
        let ai = g.input(BOOL, &[4, 9]);
        let bi = g.input(BOOL, &[4, 1]);
        let out = g.output(BOOL, &[4, 9]);
        g.op(op, &[ai, bi, out]);
        let mut case = OpCase::new(op, "dynamic bool[<=4, <=9] vs bool[<=4, 1]", g).dynamic();
        for (j, (m, n)) in [(4usize, 9usize), (1, 1), (3, 7), (2, 2), (4, 9)]
            .into_iter()
            .enumerate()
        {
            let a = grid(BOOL, &[m, n], seed + 80 + 2 * j as u64);
            let b = grid(BOOL, &[m, 1], seed + 81 + 2 * j as u64);
            let want = logical_ref(op, &a, Some(&b));
            case = case.run(vec![a, b], vec![want]);
        }
        v.push(case);
    }

    let seed = 33_500;
    let inputs: &[(DataType, &[usize])] = &[
        (BOOL, &[7, 13]),
        (F32, &[3, 5]),
        (F16, &[2, 3, 1, 7]),
        (I32, &[17]),
        (F32, &[]),
    ];
    for (j, &(dt, sz)) in inputs.iter().enumerate() {
        let a = grid_special(dt, sz, seed + j as u64);
        let want = logical_ref(NOT, &a, None);
        let mut g = CaseGraph::new();
        let ai = g.input_like(&a);
        let out = g.output(BOOL, sz);
        g.op(NOT, &[ai, out]);
        let name = format!("{}{sz:?}", dt.name());
        v.push(OpCase::new(NOT, name, g).run(vec![a], vec![want]));
    }
    let mut g = CaseGraph::new();
    let ai = g.input(F32, &[5, 11]);
    let out = g.output(BOOL, &[5, 11]);
    g.op(NOT, &[ai, out]);
    let mut case = OpCase::new(NOT, "dynamic f32[<=5, <=11]", g).dynamic();
    for (j, sz) in [[5usize, 11], [1, 3], [4, 7], [5, 11]].iter().enumerate() {
        let a = grid_special(F32, sz, seed + 20 + j as u64);
        let want = logical_ref(NOT, &a, None);
        case = case.run(vec![a], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- where

fn where_ref(c: &Tensor, a: &Tensor, b: &Tensor, out: DataType) -> Tensor {
    bmap(&[c, a, b], out, |v| if truth(v[0]) { v[1] } else { v[2] })
}

fn where_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    type Triple = (
        &'static [usize],
        DataType,
        &'static [usize],
        DataType,
        &'static [usize],
        DataType,
    );
    let triples: &[Triple] = &[
        (&[7, 13], F32, &[7, 13], F32, &[7, 13], F32),
        (&[3, 1, 5], F32, &[4, 5], F32, &[3, 4, 1], F32),
        (&[2, 1, 3], F16, &[1, 7, 3], F16, &[3], F16),
        (&[5, 1], I32, &[1, 11], I32, &[], I32),
        // int32 and float32 operands promote to float32.
        (&[4, 3], I32, &[3], F32, &[4, 1], F32),
        (&[], F32, &[2, 3], F32, &[2, 1], F32),
    ];
    for (j, &(sc, da, sa, db, sb, dout)) in triples.iter().enumerate() {
        let seed = 34_000 + 10 * j as u64;
        let c = grid(BOOL, sc, seed);
        let a = Tensor::rand_range(da, sa, -3.0, 3.0, seed + 1);
        let a = if da == I32 {
            grid(I32, sa, seed + 1)
        } else {
            a
        };
        let b = if db == I32 {
            grid(I32, sb, seed + 2)
        } else {
            Tensor::rand_range(db, sb, -3.0, 3.0, seed + 2)
        };
        let want = where_ref(&c, &a, &b, dout);
        let mut g = CaseGraph::new();
        let ci = g.input_like(&c);
        let ai = g.input_like(&a);
        let bi = g.input_like(&b);
        let out = g.output(dout, &want.sizes);
        g.op(WHERE, &[ci, ai, bi, out]);
        let name = format!("bool{sc:?} ? {}{sa:?} : {}{sb:?}", da.name(), db.name());
        let tol = if dout == F16 { Tol::F16 } else { Tol::F32 };
        v.push(
            OpCase::new(WHERE, name, g)
                .tol(tol)
                .run(vec![c, a, b], vec![want]),
        );
    }
    // A constant `other` (e.g. a -inf mask fill) and a float condition (`!= 0`).
    let c = grid_special(F32, &[3, 5], 34_100);
    let a = Tensor::rand(&[3, 5], 34_101);
    let b = Tensor::f32(&[1], vec![f64::NEG_INFINITY]);
    let want = where_ref(&c, &a, &b, F32);
    let mut g = CaseGraph::new();
    let ci = g.input_like(&c);
    let ai = g.input_like(&a);
    let bi = g.constant(&b);
    let out = g.output(F32, &[3, 5]);
    g.op(WHERE, &[ci, ai, bi, out]);
    v.push(
        OpCase::new(WHERE, "f32 cond[3, 5] ? f32[3, 5] : const -inf[1]", g)
            .run(vec![c, a], vec![want]),
    );

    // Dynamic: cond[<=4, <=6], self[<=6], other[<=4, 1].
    let mut g = CaseGraph::new();
    let ci = g.input(BOOL, &[4, 6]);
    let ai = g.input(F32, &[6]);
    let bi = g.input(F32, &[4, 1]);
    let out = g.output(F32, &[4, 6]);
    g.op(WHERE, &[ci, ai, bi, out]);
    let mut case =
        OpCase::new(WHERE, "dynamic bool[<=4, <=6] ? f32[<=6] : f32[<=4, 1]", g).dynamic();
    for (j, (m, n)) in [(4usize, 6usize), (1, 1), (3, 5), (2, 6), (4, 6)]
        .into_iter()
        .enumerate()
    {
        let s = 34_200 + 3 * j as u64;
        let c = grid(BOOL, &[m, n], s);
        let a = Tensor::rand(&[n], s + 1);
        let b = Tensor::rand(&[m, 1], s + 2);
        let want = where_ref(&c, &a, &b, F32);
        case = case.run(vec![c, a, b], vec![want]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- dtype conversion

/// PyTorch's cast of `x` to `to`: float -> int truncates toward zero, -> bool is `!= 0`.
fn convert(x: f64, to: DataType) -> f64 {
    match to {
        BOOL => b2f(truth(x)),
        I32 => x.trunc(),
        _ => round_to(to, x),
    }
}

/// Inputs for a conversion from `dt`: fractional values of both signs (truncation),
/// zeros (-0.0 too) and ints.
fn conv_input(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    match dt {
        F32 | F16 => {
            let mut t = Tensor::rand_range(dt, sizes, -9.0, 9.0, seed);
            if t.numel() >= 4 {
                t.data[0] = -2.75;
                t.data[1] = 0.0;
                t.data[2] = -0.0;
                t.data[3] = 0.5;
            }
            t
        }
        I32 => Tensor::rand_int(I32, sizes, -1000, 1000, seed),
        _ => grid(dt, sizes, seed),
    }
}

/// Args of a conversion call from `x` into `out`, as the exporter writes them.
fn conversion_args(g: &mut CaseGraph, op: &str, x: usize, out: usize, rank: usize) -> Vec<usize> {
    if op == TO_COPY {
        // dtype, layout, device, pin_memory: Null; non_blocking: false; memory_format: Null.
        let (d, l, dev, pin) = (g.null(), g.null(), g.null(), g.null());
        let nb = g.bool(false);
        let mf = g.null();
        vec![x, d, l, dev, pin, nb, mf, out]
    } else if !rank.is_multiple_of(2) || rank == 0 {
        // executorch 1.5's layout: [self, dtype, layout, device, pin_memory, non_blocking,
        // dim_order, out], the contiguous order written out ([] for a 0-dim tensor).
        let (d, l, dev, pin) = (g.null(), g.null(), g.null(), g.null());
        let nb = g.bool(false);
        let o: Vec<i64> = (0..rank as i64).collect();
        let order = g.int_list(&o);
        vec![x, d, l, dev, pin, nb, order, out]
    } else {
        let d = g.null();
        let nb = g.bool(false);
        // The exporter writes the contiguous dim order explicitly; None means the same.
        let order = if rank.is_multiple_of(4) {
            let o: Vec<i64> = (0..rank as i64).collect();
            g.int_list(&o)
        } else {
            g.null()
        };
        vec![x, d, nb, order, out]
    }
}

fn to_copy_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    let pairs: &[(DataType, DataType, &[usize])] = &[
        (F32, F16, &[7, 13]),
        (F32, I32, &[3, 5, 2]),
        (F32, BOOL, &[11]),
        (F16, F32, &[2, 3, 1, 5]),
        (F16, I32, &[9]),
        (F16, BOOL, &[3, 3]),
        (I32, F32, &[5, 7]),
        (I32, F16, &[13]),
        (I32, BOOL, &[1, 9]),
        (BOOL, F32, &[6, 5]),
        (BOOL, F16, &[3]),
        (BOOL, I32, &[2, 7]),
        (BOOL, BOOL, &[17]),
        (F32, F32, &[]),
        (I32, I32, &[4]),
    ];
    for (i, op) in [TO_COPY, TO_DIM_ORDER].into_iter().enumerate() {
        let seed = 35_000 + 1000 * i as u64;
        for (j, &(from, to, sz)) in pairs.iter().enumerate() {
            let x = conv_input(from, sz, seed + j as u64);
            let want = Tensor::new(to, sz, x.data.iter().map(|&e| convert(e, to)).collect());
            let mut g = CaseGraph::new();
            let xi = g.input_like(&x);
            let out = g.output(to, sz);
            let args = conversion_args(&mut g, op, xi, out, sz.len());
            g.op(op, &args);
            let name = format!("{} -> {} {sz:?}", from.name(), to.name());
            let tol = if to == F16 { Tol::F16 } else { Tol::F32 };
            v.push(OpCase::new(op, name, g).tol(tol).run(vec![x], vec![want]));
        }
        // Dynamic: f32[<=6, <=7] -> bool (odd element counts exercise the last word).
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[6, 7]);
        let out = g.output(BOOL, &[6, 7]);
        let args = conversion_args(&mut g, op, xi, out, 2);
        g.op(op, &args);
        let mut case = OpCase::new(op, "dynamic f32[<=6, <=7] -> bool", g).dynamic();
        for (j, sz) in [[6usize, 7], [1, 1], [3, 5], [2, 3], [6, 7]]
            .iter()
            .enumerate()
        {
            let x = grid_special(F32, sz, seed + 500 + j as u64);
            let want = Tensor::new(BOOL, sz, x.data.iter().map(|&e| convert(e, BOOL)).collect());
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
        // Dynamic: f32[<=5, <=3] -> int32.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[5, 3]);
        let out = g.output(I32, &[5, 3]);
        let args = conversion_args(&mut g, op, xi, out, 2);
        g.op(op, &args);
        let mut case = OpCase::new(op, "dynamic f32[<=5, <=3] -> i32", g).dynamic();
        for (j, sz) in [[5usize, 3], [2, 2], [5, 1], [5, 3]].iter().enumerate() {
            let x = conv_input(F32, sz, seed + 600 + j as u64);
            let want = Tensor::new(I32, sz, x.data.iter().map(|&e| convert(e, I32)).collect());
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    use etvk_runtime::ErrorKind;

    use crate::case::init_error as init_err;

    #[test]
    fn non_contiguous_dim_order_is_unsupported() {
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[2, 3]);
        let d = g.null();
        let nb = g.bool(false);
        let order = g.int_list(&[1, 0]);
        let out = g.output(F16, &[2, 3]);
        g.op(TO_DIM_ORDER, &[xi, d, nb, order, out]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(
            e.message.contains("dim_order") && e.message.contains(TO_DIM_ORDER),
            "{e}"
        );
    }

    #[test]
    fn non_bool_compare_output_is_unsupported() {
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[4]);
        let s = g.double(1.0);
        let out = g.output(F32, &[4]);
        g.op("aten.eq.Scalar", &[xi, s, out]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(e.message.contains("aten.eq.Scalar"), "{e}");
    }

    #[test]
    fn reference_broadcasts_three_ways() {
        assert_eq!(bshape(&[&[3, 1, 5], &[4, 5], &[3, 4, 1]]), vec![3, 4, 5]);
        let c = Tensor::new(BOOL, &[2, 1], vec![1.0, 0.0]);
        let a = Tensor::f32(&[2], vec![1.0, 2.0]);
        let b = Tensor::f32(&[], vec![9.0]);
        assert_eq!(where_ref(&c, &a, &b, F32).data, vec![1.0, 2.0, 9.0, 9.0]);
        assert_eq!(convert(-2.75, I32), -2.0);
        assert_eq!(convert(-0.0, BOOL), 0.0);
        assert_eq!(convert(f64::NAN, BOOL), 1.0);
    }
}
