//! Creation ops:
//! `aten.full.default(size IntList|ValueList, fill_value, dtype, layout, device, pin_memory, out)`,
//! `aten.full_like.default(self, fill_value, dtype, layout, device, pin_memory, memory_format, out)`,
//! `aten.arange.start_step(start, end, step, dtype, layout, device, pin_memory, out)`, and
//! from executorch 1.5.1's Vulkan partitioner (argument lists from its serializer):
//! `aten.ones.default` / `aten.zeros.default(size, dtype, layout, device, pin_memory, out)`,
//! `aten.ones_like.default` / `aten.zeros_like.default(self, dtype, layout, device,
//! pin_memory, memory_format, out)`, `aten.scalar_tensor.default(s, dtype, layout, device,
//! pin_memory, out)`. Bool outputs hold `value != 0`.
//! dtype / layout / device / memory_format are `Null` (as the exporter writes them); the
//! output's dtype decides. References are computed in f64 and rounded to the output dtype.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32, Int32 as I32};

use crate::case::{CaseGraph, OpCase, Val};
use crate::compare::Tol;
use crate::tensor::{numel, Tensor};

const FULL: &str = "aten.full.default";
const FULL_LIKE: &str = "aten.full_like.default";
const ARANGE: &str = "aten.arange.start_step";

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = full_cases();
    v.extend(full_like_cases());
    v.extend(arange_cases());
    v.extend(ones_zeros_cases());
    v.extend(like_cases());
    v.extend(scalar_tensor_cases());
    v
}

/// A scalar argument as the exporter serializes it.
#[derive(Debug, Clone, Copy)]
enum S {
    Int(i64),
    Double(f64),
    Bool(bool),
}

impl S {
    fn add(self, g: &mut CaseGraph) -> usize {
        match self {
            S::Int(x) => g.int(x),
            S::Double(x) => g.double(x),
            S::Bool(x) => g.bool(x),
        }
    }
    fn value(self) -> f64 {
        match self {
            S::Int(x) => x as f64,
            S::Double(x) => x,
            S::Bool(x) => f64::from(u8::from(x)),
        }
    }
}

/// `value` as PyTorch stores it in a tensor of `dt` (float -> int truncates toward zero).
pub(crate) fn cast(dt: DataType, value: f64) -> f64 {
    if dt == I32 {
        value.trunc()
    } else if dt == DataType::Bool {
        f64::from(u8::from(value != 0.0))
    } else {
        value
    }
}

pub(crate) fn filled(dt: DataType, sizes: &[usize], value: f64) -> Tensor {
    Tensor::new(dt, sizes, vec![cast(dt, value); numel(sizes)])
}

/// `n` Null values (dtype, layout, device, pin_memory, ...).
fn nulls(g: &mut CaseGraph, n: usize) -> Vec<usize> {
    (0..n).map(|_| g.null()).collect()
}

// ---------------------------------------------------------------- full

fn full_case(dt: DataType, sizes: &[usize], fill: S, value_list: bool) -> OpCase {
    let mut g = CaseGraph::new();
    let size: Vec<i64> = sizes.iter().map(|&n| n as i64).collect();
    let si = if value_list {
        let ids: Vec<usize> = size.iter().map(|&n| g.int(n)).collect();
        g.value_list(&ids)
    } else {
        g.int_list(&size)
    };
    let fi = fill.add(&mut g);
    let mut args = vec![si, fi];
    args.extend(nulls(&mut g, 4));
    args.push(g.output(dt, sizes));
    g.op(FULL, &args);
    let how = if value_list { " ValueList" } else { "" };
    OpCase::new(FULL, format!("{} {sizes:?} {fill:?}{how}", dt.name()), g)
        .tol(Tol::EXACT)
        .run(vec![], vec![filled(dt, sizes, fill.value())])
}

fn full_cases() -> Vec<OpCase> {
    let mut v = vec![
        full_case(F32, &[3, 5], S::Double(2.5), false),
        full_case(F32, &[1, 13, 1], S::Int(-4), false),
        full_case(F32, &[2, 3, 5, 7], S::Double(f64::NEG_INFINITY), false),
        full_case(F32, &[], S::Double(0.125), false),
        full_case(F32, &[67], S::Bool(true), true),
        full_case(F16, &[7], S::Double(-1.25), false),
        full_case(F16, &[3, 11], S::Double(1e5), false),
        full_case(I32, &[2, 3, 5], S::Int(7), false),
        full_case(I32, &[13], S::Double(-2.7), true),
        full_case(I32, &[4, 1], S::Int(-2_000_000_001), false),
    ];

    // Dynamic: size [s, 3] with s a SymInt graph input (the exporter's pattern for a mask
    // sized by the sequence length), resized down and up.
    let mut g = CaseGraph::new();
    let s = g.symint();
    g.builder().mark_input(s);
    let three = g.int(3);
    let si = g.value_list(&[s, three]);
    let fi = g.double(-0.5);
    let mut args = vec![si, fi];
    args.extend(nulls(&mut g, 4));
    args.push(g.output(F32, &[9, 3]));
    g.op(FULL, &args);
    let mut case = OpCase::new(FULL, "dynamic [s <= 9, 3] from a SymInt input", g)
        .tol(Tol::EXACT)
        .dynamic();
    for m in [9usize, 1, 4, 9] {
        case = case.run_vals(
            vec![Val::Int(m as i64)],
            vec![filled(F32, &[m, 3], -0.5).into()],
        );
    }
    v.push(case);

    // Dynamic: size [2, sym_size(x, 0)] in int32, and the fill value itself a SymInt.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[7, 2]);
    let d0 = g.int(0);
    let s = g.symint();
    g.op("sym_size.int", &[xi, d0, s]);
    let two = g.int(2);
    let si = g.value_list(&[two, s]);
    let mut args = vec![si, s];
    args.extend(nulls(&mut g, 4));
    args.push(g.output(I32, &[2, 7]));
    g.op(FULL, &args);
    let mut case = OpCase::new(
        FULL,
        "dynamic int32 [2, sym_size(x[<=7, 2], 0)] filled with it",
        g,
    )
    .tol(Tol::EXACT)
    .dynamic();
    for (i, m) in [7usize, 2, 1, 5].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 2], 12_000 + i as u64);
        case = case.run(vec![x], vec![filled(I32, &[2, m], m as f64)]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- full_like

fn full_like_graph(x_dt: DataType, x_sizes: &[usize], out_dt: DataType, fill: S) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(x_dt, x_sizes);
    let fi = fill.add(&mut g);
    let mut args = vec![xi, fi];
    args.extend(nulls(&mut g, 5));
    args.push(g.output(out_dt, x_sizes));
    g.op(FULL_LIKE, &args);
    g
}

fn full_like_case(x_dt: DataType, sizes: &[usize], out_dt: DataType, fill: S, seed: u64) -> OpCase {
    let x = Tensor::rand_range(x_dt, sizes, -3.0, 3.0, seed);
    OpCase::new(
        FULL_LIKE,
        format!("{} {sizes:?} -> {} {fill:?}", x_dt.name(), out_dt.name()),
        full_like_graph(x_dt, sizes, out_dt, fill),
    )
    .tol(Tol::EXACT)
    .run(vec![x], vec![filled(out_dt, sizes, fill.value())])
}

fn full_like_cases() -> Vec<OpCase> {
    let mut v = vec![
        full_like_case(F32, &[7, 13], F32, S::Double(0.5), 12_100),
        full_like_case(F32, &[2, 3, 5], I32, S::Int(-3), 12_101),
        full_like_case(F16, &[5], F16, S::Double(3.75), 12_102),
        full_like_case(I32, &[1, 1, 3], F32, S::Bool(false), 12_103),
        full_like_case(F32, &[], F32, S::Int(9), 12_104),
    ];

    // self a constant: only its sizes are used.
    let c = Tensor::rand(&[3, 7], 12_110);
    let mut g = CaseGraph::new();
    let ci = g.constant(&c);
    let fi = g.double(1.5);
    let mut args = vec![ci, fi];
    args.extend(nulls(&mut g, 5));
    args.push(g.output(F32, &[3, 7]));
    g.op(FULL_LIKE, &args);
    v.push(
        OpCase::new(FULL_LIKE, "constant self [3, 7]", g)
            .tol(Tol::EXACT)
            .run(vec![], vec![filled(F32, &[3, 7], 1.5)]),
    );

    // Dynamic: out follows self's sizes.
    let mut case = OpCase::new(
        FULL_LIKE,
        "dynamic [<=6, 5, <=3]",
        full_like_graph(F32, &[6, 5, 3], F32, S::Double(-7.0)),
    )
    .tol(Tol::EXACT)
    .dynamic();
    for (i, (m, k)) in [(6usize, 3usize), (1, 2), (4, 1), (6, 3)]
        .into_iter()
        .enumerate()
    {
        let x = Tensor::rand(&[m, 5, k], 12_120 + i as u64);
        case = case.run(vec![x], vec![filled(F32, &[m, 5, k], -7.0)]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- arange

/// PyTorch's arange: int outputs truncate the scalars first; length ceil((end-start)/step).
pub(crate) fn arange_ref(dt: DataType, start: f64, end: f64, step: f64) -> Tensor {
    let (start, end, step) = if dt == I32 {
        (start.trunc(), end.trunc(), step.trunc())
    } else {
        (start, end, step)
    };
    let n = ((end - start) / step).ceil().max(0.0) as usize;
    let data = (0..n).map(|i| start + i as f64 * step).collect();
    Tensor::new(dt, &[n], data)
}

fn arange_graph(dt: DataType, start: S, end: S, step: S, max_len: usize) -> CaseGraph {
    let mut g = CaseGraph::new();
    let a = start.add(&mut g);
    let b = end.add(&mut g);
    let c = step.add(&mut g);
    let mut args = vec![a, b, c];
    args.extend(nulls(&mut g, 4));
    args.push(g.output(dt, &[max_len]));
    g.op(ARANGE, &args);
    g
}

fn arange_tol(dt: DataType) -> Tol {
    match dt {
        F16 => Tol::F16,
        I32 => Tol::EXACT,
        _ => Tol::F32,
    }
}

fn arange_case(dt: DataType, start: S, end: S, step: S, max_len: Option<usize>) -> OpCase {
    let want = arange_ref(dt, start.value(), end.value(), step.value());
    let max_len = max_len.unwrap_or(want.sizes[0]);
    OpCase::new(
        ARANGE,
        format!(
            "{} ({start:?}, {end:?}, {step:?}) out <= {max_len}",
            dt.name()
        ),
        arange_graph(dt, start, end, step, max_len),
    )
    .tol(arange_tol(dt))
    .run(vec![], vec![want])
}

fn arange_cases() -> Vec<OpCase> {
    let mut v = vec![
        arange_case(F32, S::Int(0), S::Int(5), S::Int(1), None),
        arange_case(F32, S::Double(1.0), S::Int(0), S::Double(-0.3), None),
        arange_case(F32, S::Double(-3.5), S::Double(97.25), S::Double(0.5), None),
        arange_case(F16, S::Double(-3.5), S::Double(4.25), S::Double(0.5), None),
        arange_case(I32, S::Int(2), S::Int(11), S::Int(3), None),
        arange_case(I32, S::Int(10), S::Int(-7), S::Int(-2), None),
        // int32 outputs truncate float scalars (step 1.5 -> 1), as PyTorch does.
        arange_case(I32, S::Int(0), S::Int(5), S::Double(1.5), None),
        // Shorter than the output's serialized length; empty.
        arange_case(F32, S::Int(0), S::Int(7), S::Int(2), Some(13)),
        arange_case(I32, S::Int(3), S::Int(3), S::Int(1), Some(4)),
    ];

    // Dynamic: arange(0, s, 1) with s a SymInt graph input (position ids).
    let mut g = CaseGraph::new();
    let a = g.int(0);
    let s = g.symint();
    g.builder().mark_input(s);
    let c = g.int(1);
    let mut args = vec![a, s, c];
    args.extend(nulls(&mut g, 4));
    args.push(g.output(I32, &[16]));
    g.op(ARANGE, &args);
    let mut case = OpCase::new(ARANGE, "dynamic int32 (0, s <= 16, 1)", g)
        .tol(Tol::EXACT)
        .dynamic();
    for m in [16i64, 1, 7, 0, 16] {
        case = case.run_vals(
            vec![Val::Int(m)],
            vec![arange_ref(I32, 0.0, m as f64, 1.0).into()],
        );
    }
    v.push(case);

    // Dynamic float: arange(0.5, sym_size(x, 1), 2.0).
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[3, 20]);
    let d1 = g.int(1);
    let s = g.symint();
    g.op("sym_size.int", &[xi, d1, s]);
    let a = g.double(0.5);
    let c = g.double(2.0);
    let mut args = vec![a, s, c];
    args.extend(nulls(&mut g, 4));
    args.push(g.output(F32, &[10]));
    g.op(ARANGE, &args);
    let mut case = OpCase::new(
        ARANGE,
        "dynamic float32 (0.5, sym_size(x[3, <=20], 1), 2.0)",
        g,
    )
    .dynamic();
    for (i, n) in [20usize, 1, 8, 20].into_iter().enumerate() {
        let x = Tensor::rand(&[3, n], 12_200 + i as u64);
        case = case.run(vec![x], vec![arange_ref(F32, 0.5, n as f64, 2.0)]);
    }
    v.push(case);
    v
}

// ---------------------------------------------------------------- ones, zeros

const ONES: &str = "aten.ones.default";
const ZEROS: &str = "aten.zeros.default";
const ONES_LIKE: &str = "aten.ones_like.default";
const ZEROS_LIKE: &str = "aten.zeros_like.default";
const SCALAR_TENSOR: &str = "aten.scalar_tensor.default";

/// `op(size, dtype, layout, device, pin_memory, out)` with `size` from `sizes`.
fn ones_zeros_graph(
    op: &str,
    dt: DataType,
    sizes: impl FnOnce(&mut CaseGraph) -> usize,
    out: &[usize],
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let si = sizes(&mut g);
    let mut args = vec![si];
    args.extend(nulls(&mut g, 3));
    args.push(g.bool(false));
    args.push(g.output(dt, out));
    g.op(op, &args);
    g
}

fn ones_zeros_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    for (op, value) in [(ONES, 1.0), (ZEROS, 0.0)] {
        for (dt, sizes) in [
            (F32, vec![3, 4]),
            (F16, vec![5]),
            (I32, vec![2, 1, 3]),
            (DataType::Bool, vec![3, 3]),
            (F32, vec![]),
            (F32, vec![2, 0]),
        ] {
            let size: Vec<i64> = sizes.iter().map(|&n| n as i64).collect();
            let g = ones_zeros_graph(op, dt, |g| g.int_list(&size), &sizes);
            v.push(
                OpCase::new(op, format!("{} {sizes:?}", dt.name()), g)
                    .tol(Tol::EXACT)
                    .run(vec![], vec![filled(dt, &sizes, value)]),
            );
        }
        // Dynamic: size [sym_size(x, 0), 3], the mask pattern of a dynamic sequence.
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[7, 2]);
        let d0 = g.int(0);
        let s = g.symint();
        g.op("sym_size.int", &[xi, d0, s]);
        let three = g.int(3);
        let si = g.value_list(&[s, three]);
        let mut args = vec![si];
        args.extend(nulls(&mut g, 3));
        args.push(g.bool(false));
        args.push(g.output(DataType::Bool, &[7, 3]));
        g.op(op, &args);
        let mut case = OpCase::new(op, "dynamic bool [sym_size(x[<=7, 2], 0), 3]", g)
            .tol(Tol::EXACT)
            .dynamic();
        for (i, m) in [7usize, 1, 4, 7].into_iter().enumerate() {
            let x = Tensor::rand(&[m, 2], 12_500 + i as u64);
            case = case.run(vec![x], vec![filled(DataType::Bool, &[m, 3], value)]);
        }
        v.push(case);
    }
    v
}

// ---------------------------------------------------------------- ones_like, zeros_like

/// `op(self, dtype, layout, device, pin_memory, memory_format, out)`.
fn like_graph(op: &str, x_dt: DataType, x_sizes: &[usize], out_dt: DataType) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(x_dt, x_sizes);
    let mut args = vec![xi];
    args.extend(nulls(&mut g, 3));
    args.push(g.bool(false));
    args.push(g.null());
    args.push(g.output(out_dt, x_sizes));
    g.op(op, &args);
    g
}

fn like_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    for (op, value) in [(ONES_LIKE, 1.0), (ZEROS_LIKE, 0.0)] {
        for (i, (x_dt, sizes, out_dt)) in [
            (F32, vec![3, 4], F32),
            (F16, vec![2, 3, 5], F16),
            (I32, vec![7], I32),
            (F32, vec![5, 3], DataType::Bool),
            (F32, vec![], F32),
        ]
        .into_iter()
        .enumerate()
        {
            let x = Tensor::rand_range(x_dt, &sizes, -3.0, 3.0, 12_600 + i as u64);
            v.push(
                OpCase::new(
                    op,
                    format!("{} {sizes:?} -> {}", x_dt.name(), out_dt.name()),
                    like_graph(op, x_dt, &sizes, out_dt),
                )
                .tol(Tol::EXACT)
                .run(vec![x], vec![filled(out_dt, &sizes, value)]),
            );
        }
        let mut case = OpCase::new(op, "dynamic [<=5, <=4]", like_graph(op, F32, &[5, 4], F32))
            .tol(Tol::EXACT)
            .dynamic();
        for (i, (m, k)) in [(5usize, 4usize), (1, 1), (3, 2), (5, 4)]
            .into_iter()
            .enumerate()
        {
            let x = Tensor::rand(&[m, k], 12_620 + i as u64);
            case = case.run(vec![x], vec![filled(F32, &[m, k], value)]);
        }
        v.push(case);
    }
    v
}

// ---------------------------------------------------------------- scalar_tensor

fn scalar_tensor_graph(dt: DataType, s: impl FnOnce(&mut CaseGraph) -> usize) -> CaseGraph {
    let mut g = CaseGraph::new();
    let si = s(&mut g);
    let mut args = vec![si];
    args.extend(nulls(&mut g, 3));
    args.push(g.bool(false));
    args.push(g.output(dt, &[]));
    g.op(SCALAR_TENSOR, &args);
    g
}

fn scalar_tensor_cases() -> Vec<OpCase> {
    let mut v: Vec<OpCase> = [
        (F32, S::Double(2.5)),
        (F32, S::Int(-7)),
        (F16, S::Double(-0.375)),
        (I32, S::Double(-2.7)),
        (I32, S::Int(123_456)),
        (DataType::Bool, S::Bool(true)),
        (DataType::Bool, S::Double(0.0)),
        (F32, S::Double(f64::INFINITY)),
    ]
    .into_iter()
    .map(|(dt, s)| {
        OpCase::new(
            SCALAR_TENSOR,
            format!("{} {s:?}", dt.name()),
            scalar_tensor_graph(dt, |g| s.add(g)),
        )
        .tol(Tol::EXACT)
        .run(vec![], vec![filled(dt, &[], s.value())])
    })
    .collect();
    // Dynamic: s = sym_size(x, 0), re-read at every resize.
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[6, 2]);
    let d0 = g.int(0);
    let s = g.symint();
    g.op("sym_size.int", &[xi, d0, s]);
    let mut args = vec![s];
    args.extend(nulls(&mut g, 3));
    args.push(g.bool(false));
    args.push(g.output(F32, &[]));
    g.op(SCALAR_TENSOR, &args);
    let mut case = OpCase::new(SCALAR_TENSOR, "dynamic f32 sym_size(x[<=6, 2], 0)", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, m) in [6usize, 1, 4].into_iter().enumerate() {
        let x = Tensor::rand(&[m, 2], 12_700 + i as u64);
        case = case.run(vec![x], vec![filled(F32, &[], m as f64)]);
    }
    v.push(case);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::run_case;

    /// Init or execute must fail with a message containing every one of `needles`.
    fn expect_failure(case: &OpCase, needles: &[&str]) {
        let e = run_case(case).expect_err("the case must fail");
        for n in needles {
            assert!(e.contains(n), "error {e:?} lacks {n:?}");
        }
    }

    #[test]
    fn arange_rejects_zero_step_and_overlong_ranges() {
        let case = |start: S, end: S, step: S, max_len: usize| {
            OpCase::new(
                ARANGE,
                "error",
                arange_graph(F32, start, end, step, max_len),
            )
            .run(vec![], vec![Tensor::f32(&[1], vec![0.0])])
        };
        expect_failure(
            &case(S::Int(0), S::Int(5), S::Int(0), 5),
            &["aten.arange.start_step", "step must be nonzero"],
        );
        expect_failure(
            &case(S::Int(0), S::Int(10), S::Int(1), 4),
            &["aten.arange.start_step", "10 elements", "maximum 4"],
        );
        expect_failure(
            &case(S::Int(5), S::Int(0), S::Int(1), 4),
            &["aten.arange.start_step", "inconsistent with step sign"],
        );

        // A SymInt end past the serialized length fails at execute, naming the op.
        let mut g = CaseGraph::new();
        let a = g.int(0);
        let s = g.symint();
        g.builder().mark_input(s);
        let c = g.int(1);
        let mut args = vec![a, s, c];
        args.extend(nulls(&mut g, 4));
        args.push(g.output(I32, &[8]));
        g.op(ARANGE, &args);
        let case = OpCase::new(ARANGE, "error", g).dynamic().run_vals(
            vec![Val::Int(9)],
            vec![arange_ref(I32, 0.0, 9.0, 1.0).into()],
        );
        expect_failure(
            &case,
            &["aten.arange.start_step", "9 elements", "maximum 8"],
        );
    }

    #[test]
    fn scalar_tensor_needs_a_0d_output_and_ones_an_exact_rank() {
        let mut g = CaseGraph::new();
        let si = g.double(1.0);
        let mut args = vec![si];
        args.extend(nulls(&mut g, 3));
        args.push(g.bool(false));
        args.push(g.output(F32, &[1]));
        g.op(SCALAR_TENSOR, &args);
        let case = OpCase::new(SCALAR_TENSOR, "error", g).run(vec![], vec![filled(F32, &[1], 1.0)]);
        expect_failure(&case, &[SCALAR_TENSOR, "0-d"]);

        let g = ones_zeros_graph(ONES, F32, |g| g.int_list(&[2, 3]), &[2, 3, 1]);
        let case = OpCase::new(ONES, "error", g).run(vec![], vec![filled(F32, &[2, 3, 1], 1.0)]);
        expect_failure(&case, &[ONES, "2 entries", "rank 3"]);
        let g = ones_zeros_graph(ZEROS, F32, |g| g.int_list(&[2, -3]), &[2, 3]);
        let case = OpCase::new(ZEROS, "error", g).run(vec![], vec![filled(F32, &[2, 3], 0.0)]);
        expect_failure(&case, &[ZEROS, "not a non-negative integer"]);
    }

    #[test]
    fn full_rejects_an_int_fill_outside_int32() {
        let case = full_case(I32, &[2], S::Int(1 << 40), false);
        expect_failure(
            &case,
            &["aten.full.default", "does not fit the int32 output"],
        );
    }
}
