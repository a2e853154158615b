//! Quantization ops beyond the per-row torchao pair (`ops/quant_blocks.rs`):
//! `torchao.quantize_affine`, `quantized_decomposed.quantize_per_token` /
//! `dequantize_per_token` / `choose_qparams_per_token_asymmetric` / `choose_qparams.tensor`,
//! and `torchao.choose_qparams_affine` with blocks other than rows.
//!
//! Argument layouts (exporter order, outputs last; the exporter writes the float64 / int64
//! parameters of the quantized_decomposed ops as float32 / int32):
//! `quantize_affine(x, block_size, scale, zero_point | Null, output_dtype, quant_min,
//! quant_max, out)`, `quantize_per_token(x, scales, zero_points, quant_min, quant_max, dtype,
//! out)`, `dequantize_per_token(q, scales, zero_points, quant_min, quant_max, dtype,
//! output_dtype, out)`, `choose_qparams_per_token_asymmetric(x, dtype, ValueList(scales,
//! zero_points))`, `choose_qparams.tensor(x, quant_min, quant_max, eps, dtype,
//! ValueList(scale, zero_point))`.
//!
//! The references are eager PyTorch's arithmetic: fp32 where PyTorch computes in fp32
//! (torchao, the choose ops), f64 where its float64 parameters make it (quantize_per_token).
//! They are public for the reference interpreter (`reference/ops.rs`).

use etvk_format::ir::DataType::{
    self, Float16 as F16, Float32 as F32, Int32 as I32, Int8 as I8, Uint8 as U8,
};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::reference::torchao_qparams;
use crate::tensor::{Rng, Tensor};

pub const QUANT_AFFINE: &str = "torchao.quantize_affine.default";
pub const QUANT_TOKEN: &str = "quantized_decomposed.quantize_per_token.default";
pub const DEQUANT_TOKEN: &str = "quantized_decomposed.dequantize_per_token.default";
pub const CHOOSE_TOKEN: &str = "quantized_decomposed.choose_qparams_per_token_asymmetric.default";
pub const CHOOSE_TENSOR: &str = "quantized_decomposed.choose_qparams.tensor";
const CHOOSE_AFFINE: &str = "torchao.choose_qparams_affine.default";

/// Scales to within an ulp of fp32 (GPU division), zero points exactly.
const QPARAM_TOL: Tol = Tol {
    atol: 0.0,
    rtol: 1e-6,
};

// ---------------------------------------------------------------- the references

/// The block of element `i` of a tensor of `sizes` in the row-major grid of `block` blocks
/// (a partial last block counts as a block).
pub fn block_index(sizes: &[usize], block: &[usize], i: usize) -> usize {
    let mut rest = i;
    let (mut blk, mut stride) = (0, 1);
    for d in (0..sizes.len()).rev() {
        let c = rest % sizes[d];
        rest /= sizes[d];
        blk += c / block[d] * stride;
        stride *= sizes[d].div_ceil(block[d]);
    }
    blk
}

/// torchao's quantize_affine of one value: `clamp(round(x * (1 / scale)) + zp)` in fp32.
pub fn quantize_affine_value(x: f64, scale: f32, zp: f64, (qmin, qmax): (i64, i64)) -> f64 {
    let v = (x as f32) * (1.0f32 / scale);
    (f64::from(v.round_ties_even()) + zp).clamp(qmin as f64, qmax as f64)
}

/// quantize_per_token of one value, as PyTorch computes it with float64 scales:
/// `clamp(round(x * (1.0 / scale) + zp))` in f64.
pub fn quantize_token_value(x: f64, scale: f32, zp: f64, (qmin, qmax): (i64, i64)) -> f64 {
    (x * (1.0 / f64::from(scale)) + zp)
        .round_ties_even()
        .clamp(qmin as f64, qmax as f64)
}

/// choose_qparams_per_token_asymmetric of one row, in fp32 as PyTorch: the asymmetric int8
/// scale, and the zero point from the end whose rounding error is smaller (XNNPACK's rule).
pub fn token_qparams(row: &[f32]) -> (f32, f32) {
    let lo = row.iter().copied().fold(f32::INFINITY, f32::min).min(0.0);
    let hi = row
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max)
        .max(0.0);
    let (qmin, qmax) = (-128.0f32, 127.0f32);
    let scale = ((hi - lo) / 255.0).max(f32::EPSILON);
    let (dmin, dmax) = (lo / scale, hi / scale);
    let zp = if (qmin + dmin) + (qmax + dmax) > 0.0 {
        qmin - dmin
    } else {
        qmax - dmax
    };
    (scale, zp.clamp(qmin, qmax).round_ties_even())
}

/// torchao's choose_qparams_affine output sizes (see `ops/quant_blocks.rs`).
pub fn choose_out_sizes(sizes: &[usize], block: &[usize], keepdim: bool) -> Vec<usize> {
    let mut out = Vec::new();
    for (&n, &b) in sizes.iter().zip(block) {
        if keepdim || (b != n && b > 1) {
            out.push(n / b);
        } else if b == 1 {
            out.push(n);
        }
    }
    out
}

/// Each block's elements (fp32), in the blocks' row-major order; sizes multiples of blocks.
pub fn block_elements(x: &Tensor, block: &[usize]) -> Vec<Vec<f32>> {
    let groups: usize = x.sizes.iter().zip(block).map(|(&n, &b)| n / b).product();
    let mut out = vec![Vec::new(); groups];
    for (i, &v) in x.data.iter().enumerate() {
        out[block_index(&x.sizes, block, i)].push(v as f32);
    }
    out
}

// ---------------------------------------------------------------- cases

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    vec![
        // torchao int8 per-row (runtime x, resized), int4 values in int8 per group with fp16
        // scales and no zero point, per tensor into uint8, int32 output with 3-D blocks.
        quant_affine(
            F32,
            &[6, 24],
            &[1, 24],
            (F32, Some(I8)),
            (I8, None),
            &[6, 1, 4],
            1,
        ),
        quant_affine(
            F32,
            &[3, 32],
            &[1, 8],
            (F16, None),
            (I8, Some((-8, 7))),
            &[3],
            2,
        ),
        quant_affine(
            F16,
            &[2, 5, 6],
            &[2, 5, 6],
            (F32, Some(I32)),
            (U8, None),
            &[2],
            3,
        ),
        quant_affine(
            F32,
            &[4, 3, 8],
            &[2, 1, 4],
            (F32, Some(F32)),
            (I32, Some((-1000, 1000))),
            &[4, 2],
            4,
        ),
        quant_token(F32, &[3, 5, 16], true, (I8, -128, 127), &[3, 1, 2], 5),
        quant_token(F32, &[6, 40], false, (U8, 0, 255), &[6], 6),
        quant_token(F16, &[4, 12], true, (I8, -100, 100), &[4, 2], 7),
        dequant_token(I8, F32, &[3, 4, 10], &[3, 1], 8),
        dequant_token(U8, F16, &[5, 9], &[5], 9),
        dequant_token(I32, F32, &[6, 7], &[6, 2], 10),
        choose_token(F32, &[4, 7, 33], (F32, I32), &[4, 1, 2], 11),
        choose_token(F16, &[6, 20], (F32, F32), &[6], 12),
        choose_token(F32, &[5, 300], (F16, I8), &[5, 3], 13),
        choose_tensor(&[8, 9], (-128, 127), (F32, I32), &[8, 1, 5], 14),
        choose_tensor(&[3, 4, 6], (0, 255), (F32, I32), &[3], 15),
        choose_blocks(&[4, 32], &[1, 8], "ASYMMETRIC", false, &[4, 2], 16),
        choose_blocks(&[6, 4, 10], &[1, 4, 5], "SYMMETRIC", false, &[6], 17),
        choose_blocks(&[6, 4, 10], &[1, 4, 5], "ASYMMETRIC", true, &[6, 3], 18),
        choose_blocks(
            &[8, 6],
            &[2, 3],
            "SYMMETRIC_NO_CLIPPING_ERR",
            true,
            &[8],
            19,
        ),
    ]
}

fn with_lead(sizes: &[usize], m: usize) -> Vec<usize> {
    let mut s = sizes.to_vec();
    s[0] = m;
    s
}

fn dynamic_if(case: OpCase, ms: &[usize]) -> OpCase {
    if ms.len() > 1 {
        case.dynamic()
    } else {
        case
    }
}

/// Values around the quant range of `scale`, with exact ties `(k + 0.5) * scale` and
/// near-ties (the tie's fp32 neighbours) mixed in, and a few past both ends.
fn quant_inputs(
    dt: DataType,
    sizes: &[usize],
    scale_of: impl Fn(usize) -> f64,
    seed: u64,
) -> Tensor {
    let mut rng = Rng::new(seed);
    let n: usize = sizes.iter().product();
    let data = (0..n)
        .map(|i| {
            let s = scale_of(i);
            let k = (rng.uniform(-140.0, 140.0)).floor();
            match i % 5 {
                0 => (k + 0.5) * s,
                1 => {
                    let t = ((k + 0.5) * s) as f32;
                    let bits = t.to_bits();
                    f64::from(f32::from_bits(if i % 2 == 0 { bits + 1 } else { bits - 1 }))
                }
                _ => rng.uniform(-150.0, 150.0) * s,
            }
        })
        .collect();
    Tensor::new(dt, sizes, data)
}

/// quantize_affine: x `xs` (leading dim resized to each of `ms`), block sizes `block`
/// (the leading block 1 or the whole dim), constant parameters `(scale dtype, zero-point
/// dtype)`, output dtype and an explicit range (None: the dtype's).
fn quant_affine(
    xdt: DataType,
    xs: &[usize],
    block: &[usize],
    (sdt, zdt): (DataType, Option<DataType>),
    (odt, range): (DataType, Option<(i64, i64)>),
    ms: &[usize],
    seed: u64,
) -> OpCase {
    // Constant parameters when the sizes stay; runtime ones (sized per run) when resized.
    let runtime = ms.len() > 1;
    let groups_of = |sizes: &[usize]| -> usize {
        sizes
            .iter()
            .zip(block)
            .map(|(&n, &b)| n.div_ceil(b))
            .product()
    };
    let params = |groups: usize, seed: u64| {
        let mut rng = Rng::new(seed);
        // Scales: powers of two (exact ties) and arbitrary ones.
        let sc = (0..groups)
            .map(|i| {
                if i % 2 == 0 {
                    2f64.powi(-(3 + i as i32 % 4))
                } else {
                    rng.uniform(0.01, 0.2)
                }
            })
            .collect();
        let zp = zdt.map(|z| {
            let v = (0..groups)
                .map(|i| ((i * 7 + seed as usize) % 21) as f64 - 10.0)
                .collect();
            Tensor::new(z, &[groups], v)
        });
        (Tensor::new(sdt, &[groups], sc), zp)
    };
    let g0 = groups_of(xs);
    let (sc0, zp0) = params(g0, seed);
    let mut g = CaseGraph::new();
    let x = g.input(xdt, xs);
    let bs = g.int_list(&block.iter().map(|&b| b as i64).collect::<Vec<_>>());
    let s = if runtime {
        g.input(sdt, &[g0])
    } else {
        g.constant(&sc0)
    };
    let z = match (&zp0, runtime) {
        (Some(t), false) => g.constant(t),
        (Some(t), true) => g.input(t.dtype, &[g0]),
        (None, _) => g.null(),
    };
    let od = g.null();
    let (lo, hi) = match range {
        Some((a, b)) => (g.int(a), g.int(b)),
        None => (g.null(), g.null()),
    };
    let out = g.output(odt, xs);
    g.op(QUANT_AFFINE, &[x, bs, s, z, od, lo, hi, out]);
    let name = format!(
        "{} x{xs:?} block {block:?} scale {} zp {:?} -> {} {range:?} M {ms:?}",
        xdt.name(),
        sdt.name(),
        zdt.map(|z| z.name()),
        odt.name()
    );
    let qrange = range.unwrap_or(match odt {
        U8 => (0, 255),
        I32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (-128, 127),
    });
    let mut case = dynamic_if(OpCase::new(QUANT_AFFINE, name, g).tol(Tol::EXACT), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let (sc, zp) = if runtime {
            params(groups_of(&sizes), seed + 10 + r as u64)
        } else {
            (sc0.clone(), zp0.clone())
        };
        let scale_at = |i: usize| sc.data[block_index(&sizes, block, i)];
        let x = quant_inputs(xdt, &sizes, scale_at, seed * 100 + r as u64);
        let want = (0..x.numel())
            .map(|i| {
                let b = block_index(&sizes, block, i);
                let z = zp.as_ref().map_or(0.0, |z| z.data[b]);
                quantize_affine_value(x.data[i], sc.data[b] as f32, z, qrange)
            })
            .collect();
        let mut inputs = vec![x];
        if runtime {
            inputs.push(sc);
            inputs.extend(zp);
        }
        case = case.run(inputs, vec![Tensor::new(odt, &sizes, want)]);
    }
    case
}

/// Per-token (scale, zero point) for `rows` rows: powers of two and arbitrary scales.
fn token_params(rows: usize, seed: u64) -> (Tensor, Tensor) {
    let mut rng = Rng::new(seed);
    let sc = (0..rows)
        .map(|r| {
            if r % 2 == 0 {
                2f64.powi(-(2 + r as i32 % 5))
            } else {
                rng.uniform(0.005, 0.1)
            }
        })
        .collect();
    let zp = (0..rows).map(|r| ((r * 5) % 17) as f64 - 8.0).collect();
    (
        Tensor::new(F32, &[rows, 1], sc),
        Tensor::new(I32, &[rows, 1], zp),
    )
}

/// quantize_per_token: x `xs` (leading dim resized), scales / zero points as runtime inputs
/// (`runtime`) or constants sized for `xs`.
fn quant_token(
    xdt: DataType,
    xs: &[usize],
    runtime: bool,
    (odt, qmin, qmax): (DataType, i64, i64),
    ms: &[usize],
    seed: u64,
) -> OpCase {
    let k = *xs.last().expect("rank >= 1");
    let mut ps = xs.to_vec();
    *ps.last_mut().expect("rank >= 1") = 1;
    let rows0 = xs.iter().product::<usize>() / k;
    let (sc0, zp0) = token_params(rows0, seed);
    let mut g = CaseGraph::new();
    let x = g.input(xdt, xs);
    let (s, z) = if runtime {
        (g.input(F32, &ps), g.input(I32, &ps))
    } else {
        (
            g.constant(&sc0.reshaped(&ps)),
            g.constant(&zp0.reshaped(&ps)),
        )
    };
    let (lo, hi, dt) = (g.int(qmin), g.int(qmax), g.null());
    let out = g.output(odt, xs);
    g.op(QUANT_TOKEN, &[x, s, z, lo, hi, dt, out]);
    let name = format!(
        "{} x{xs:?} runtime {runtime} -> {} [{qmin}, {qmax}] M {ms:?}",
        xdt.name(),
        odt.name()
    );
    let mut case = dynamic_if(OpCase::new(QUANT_TOKEN, name, g).tol(Tol::EXACT), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let rows = sizes.iter().product::<usize>() / k;
        let (sc, zp) = if runtime {
            token_params(rows, seed + 50 + r as u64)
        } else {
            (sc0.clone(), zp0.clone())
        };
        let x = quant_inputs(xdt, &sizes, |i| sc.data[i / k], seed * 100 + r as u64);
        let want = (0..x.numel())
            .map(|i| {
                quantize_token_value(
                    x.data[i],
                    sc.data[i / k] as f32,
                    zp.data[i / k],
                    (qmin, qmax),
                )
            })
            .collect();
        let p = with_lead(&ps, m);
        let mut inputs = vec![x];
        if runtime {
            inputs.extend([sc.reshaped(&p), zp.reshaped(&p)]);
        }
        case = case.run(inputs, vec![Tensor::new(odt, &sizes, want)]);
    }
    case
}

/// dequantize_per_token: q `qs` of `qdt` (leading dim resized), runtime scales / zero points.
fn dequant_token(qdt: DataType, odt: DataType, qs: &[usize], ms: &[usize], seed: u64) -> OpCase {
    let k = *qs.last().expect("rank >= 1");
    let mut ps = qs.to_vec();
    *ps.last_mut().expect("rank >= 1") = 1;
    let mut g = CaseGraph::new();
    let q = g.input(qdt, qs);
    let (s, z) = (g.input(F32, &ps), g.input(I32, &ps));
    let (lo, hi, dt, od) = (g.int(-128), g.int(127), g.null(), g.null());
    let out = g.output(odt, qs);
    g.op(DEQUANT_TOKEN, &[q, s, z, lo, hi, dt, od, out]);
    let name = format!("{} q{qs:?} -> {} M {ms:?}", qdt.name(), odt.name());
    let tol = if odt == F16 {
        Tol::new(0.0, 1e-3)
    } else {
        Tol::EXACT
    };
    let mut case = dynamic_if(OpCase::new(DEQUANT_TOKEN, name, g).tol(tol), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(qs, m);
        let rows = sizes.iter().product::<usize>() / k;
        let (sc, zp) = token_params(rows, seed * 10 + r as u64);
        let (lo, hi) = match qdt {
            U8 => (0, 255),
            I32 => (-5000, 5000),
            _ => (-128, 127),
        };
        let qv = Tensor::rand_int(qdt, &sizes, lo, hi, seed * 100 + r as u64);
        let want = (0..qv.numel())
            .map(|i| {
                let row = i / k;
                f64::from(((qv.data[i] - zp.data[row]) as f32) * sc.data[row] as f32)
            })
            .collect();
        let p = with_lead(&ps, m);
        case = case.run(
            vec![qv, sc.reshaped(&p), zp.reshaped(&p)],
            vec![Tensor::new(odt, &sizes, want)],
        );
    }
    case
}

/// Rows with mixed signs and magnitudes; row 0 all zero (scale = eps), row 1 positive, row
/// 2 negative.
fn choose_inputs(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    let k = *sizes.last().expect("rank >= 1");
    let mut rng = Rng::new(seed);
    let n: usize = sizes.iter().product();
    let data = (0..n)
        .map(|i| match i / k {
            0 => 0.0,
            1 => rng.uniform(0.1, 3.0),
            2 => rng.uniform(-2.0, -0.05),
            row => rng.uniform(-1.0, 1.0) * (1.0 + (row % 7) as f64),
        })
        .collect();
    Tensor::new(dt, sizes, data)
}

/// The choose op's (scale, zero point) outputs in ValueList form.
fn qparam_outputs(g: &mut CaseGraph, (sdt, zdt): (DataType, DataType), sizes: &[usize]) -> usize {
    let s = g.output(sdt, sizes);
    let z = g.output(zdt, sizes);
    g.value_list(&[s, z])
}

fn qparam_tol(sdt: DataType) -> Tol {
    if sdt == F16 {
        Tol::new(0.0, 1e-3)
    } else {
        QPARAM_TOL
    }
}

fn choose_token(
    xdt: DataType,
    xs: &[usize],
    (sdt, zdt): (DataType, DataType),
    ms: &[usize],
    seed: u64,
) -> OpCase {
    let k = *xs.last().expect("rank >= 1");
    let mut ps = xs.to_vec();
    *ps.last_mut().expect("rank >= 1") = 1;
    let mut g = CaseGraph::new();
    let x = g.input(xdt, xs);
    let dt = g.null();
    let vl = qparam_outputs(&mut g, (sdt, zdt), &ps);
    g.op(CHOOSE_TOKEN, &[x, dt, vl]);
    let name = format!(
        "{} x{xs:?} scale {} zp {} M {ms:?}",
        xdt.name(),
        sdt.name(),
        zdt.name()
    );
    let mut case = dynamic_if(OpCase::new(CHOOSE_TOKEN, name, g).tol(qparam_tol(sdt)), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = choose_inputs(xdt, &sizes, seed * 100 + r as u64);
        let (mut sv, mut zv) = (Vec::new(), Vec::new());
        for row in x.data.chunks(k) {
            let row: Vec<f32> = row.iter().map(|&v| v as f32).collect();
            let (s, z) = token_qparams(&row);
            sv.push(f64::from(s));
            zv.push(f64::from(z));
        }
        let p = with_lead(&ps, m);
        case = case.run(
            vec![x],
            vec![Tensor::new(sdt, &p, sv), Tensor::new(zdt, &p, zv)],
        );
    }
    case
}

fn choose_tensor(
    xs: &[usize],
    (qmin, qmax): (i64, i64),
    (sdt, zdt): (DataType, DataType),
    ms: &[usize],
    seed: u64,
) -> OpCase {
    let eps = f64::from(f32::EPSILON);
    let mut g = CaseGraph::new();
    let x = g.input(F32, xs);
    let (lo, hi, e, dt) = (g.int(qmin), g.int(qmax), g.double(eps), g.null());
    let vl = qparam_outputs(&mut g, (sdt, zdt), &[1]);
    g.op(CHOOSE_TENSOR, &[x, lo, hi, e, dt, vl]);
    let name = format!("x{xs:?} [{qmin}, {qmax}] M {ms:?}");
    let mut case = dynamic_if(OpCase::new(CHOOSE_TENSOR, name, g).tol(qparam_tol(sdt)), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        // Shifted so that runs see all-positive, all-negative and mixed tensors.
        let shift = [0.0, 2.5, -3.0][r % 3];
        let mut x = Tensor::rand_range(F32, &sizes, -1.0, 1.0, seed * 100 + r as u64);
        x.data
            .iter_mut()
            .for_each(|v| *v = f64::from((*v + shift) as f32));
        let all: Vec<f32> = x.data.iter().map(|&v| v as f32).collect();
        let (s, z) = torchao_qparams(&all, "ASYMMETRIC", (qmin, qmax), eps as f32);
        case = case.run(
            vec![x],
            vec![
                Tensor::new(sdt, &[1], vec![f64::from(s)]),
                Tensor::new(zdt, &[1], vec![f64::from(z)]),
            ],
        );
    }
    case
}

/// choose_qparams_affine with block sizes other than rows (int8 range, fp32 scale, int32
/// zero point); the leading block is 1 so the leading dim can be resized.
fn choose_blocks(
    xs: &[usize],
    block: &[usize],
    mapping: &'static str,
    keepdim: bool,
    ms: &[usize],
    seed: u64,
) -> OpCase {
    let eps = f64::from(f32::EPSILON);
    let mut g = CaseGraph::new();
    let x = g.input(F32, xs);
    let mt = g.builder().add_string(mapping);
    let bs = g.int_list(&block.iter().map(|&b| b as i64).collect::<Vec<_>>());
    let (td, lo, hi, e) = (g.null(), g.int(-128), g.int(127), g.double(eps));
    let (sd, zd, kd) = (g.null(), g.null(), g.bool(keepdim));
    let vl = qparam_outputs(&mut g, (F32, I32), &choose_out_sizes(xs, block, keepdim));
    g.op(CHOOSE_AFFINE, &[x, mt, bs, td, lo, hi, e, sd, zd, kd, vl]);
    let name = format!("x{xs:?} block {block:?} {mapping} keepdim {keepdim} M {ms:?}");
    let mut case = dynamic_if(OpCase::new(CHOOSE_AFFINE, name, g).tol(QPARAM_TOL), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = choose_inputs(F32, &sizes, seed * 100 + r as u64);
        let (mut sv, mut zv) = (Vec::new(), Vec::new());
        for elems in block_elements(&x, block) {
            let (s, z) = torchao_qparams(&elems, mapping, (-128, 127), eps as f32);
            sv.push(f64::from(s));
            zv.push(f64::from(z));
        }
        let os = choose_out_sizes(&sizes, block, keepdim);
        case = case.run(
            vec![x],
            vec![Tensor::new(F32, &os, sv), Tensor::new(I32, &os, zv)],
        );
    }
    case
}
