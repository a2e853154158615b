//! Statically quantized int8 ops (`ops/q8ta.rs`): the quantized_decomposed quantize /
//! dequantize ops and the `et_vk.q8ta_*` ops the exporter fuses for PT2E static
//! quantization, in the exporter's argument layouts (see the runtime module).
//!
//! The references follow eager PyTorch on the converted PT2E module: quantize is
//! `clamp(round_half_even(x * float(1 / scale)) + zp)` in fp32, dequantize
//! `float(q - zp) * float(scale)`, and the fused ops sum the dequantized operands' exact
//! products in f64, round the sum to fp32, then quantize. int8 outputs compare exactly, so
//! the cases keep their sums exact in fp32 too (input scales powers of two, weight scales
//! small multiples of 2^-8): only the quantize step rounds, once, the same way everywhere.
//! A few cases with arbitrary scales end in `dequantize_per_tensor` and allow one output
//! step. The functions are public: the reference interpreter (`reference/ops.rs`) uses
//! them.

use etvk_format::ir::DataType::Uint8 as U8;
use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32, Int32 as I32, Int8 as I8};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::reference::ConvParams;
use crate::tensor::{numel, Rng, Tensor};

pub const QUANT: &str = "quantized_decomposed.quantize_per_tensor.default";
pub const QUANT_T: &str = "quantized_decomposed.quantize_per_tensor.tensor";
pub const DEQUANT: &str = "quantized_decomposed.dequantize_per_tensor.default";
pub const DEQUANT_T: &str = "quantized_decomposed.dequantize_per_tensor.tensor";
pub const QUANT_C: &str = "quantized_decomposed.quantize_per_channel.default";
pub const DEQUANT_C: &str = "quantized_decomposed.dequantize_per_channel.default";
pub const LINEAR: &str = "et_vk.q8ta_linear.default";
pub const GEMV: &str = "et_vk.q8ta_linear_gemv.default";
pub const Q8CSW: &str = "et_vk.linear_q8ta_q8csw.default";
pub const CONV: &str = "et_vk.q8ta_conv2d.default";
pub const CONV_DW: &str = "et_vk.q8ta_conv2d_dw.default";
pub const CONV_PW: &str = "et_vk.q8ta_conv2d_pw.default";
pub const CONV_T: &str = "et_vk.q8ta_conv2d_transposed.default";
pub const ADD: &str = "et_vk.q8ta_add.default";
pub const RELU: &str = "et_vk.q8ta_relu.default";
pub const SHUFFLE: &str = "et_vk.q8ta_pixel_shuffle.default";

// ---------------------------------------------------------------- the fp32 emulation

/// PyTorch's `float(1.0 / scale)` (the division in double, as the Python float scale).
pub fn inv_scale(scale: f64) -> f32 {
    (1.0 / scale) as f32
}

/// quantize: `clamp(round_half_even(float(x) * inv) + zp, qmin, qmax)` in fp32.
pub fn quantize(x: f64, inv: f32, zp: i64, (qmin, qmax): (i64, i64)) -> f64 {
    let v = (x as f32) * inv;
    let q = f64::from(v.round_ties_even()) + zp as f64;
    q.clamp(qmin as f64, qmax as f64)
}

/// dequantize: `float(q - zp) * float(scale)`, one fp32 rounding.
pub fn dequantize(q: f64, zp: i64, scale: f32) -> f64 {
    f64::from(((q as i64 - zp) as f32) * scale)
}

/// Per-tensor quantization parameters: the graph's Double scale and Int zero point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Qp {
    /// Scale (a Double in the graph).
    pub scale: f64,
    /// Zero point.
    pub zp: i64,
}

impl Qp {
    /// A pair.
    pub fn new(scale: f64, zp: i64) -> Qp {
        Qp { scale, zp }
    }
    fn deq(&self, q: f64) -> f64 {
        dequantize(q, self.zp, self.scale as f32)
    }
    fn quant(&self, y: f64) -> f64 {
        quantize(y, inv_scale(self.scale), self.zp, (-128, 127))
    }
}

/// A fused op's fp32 result `y` (the exact f64 sum rounded once), relu'd if asked, then
/// quantized with `out` to int8.
pub fn requantize(y: f64, relu: bool, out: Qp) -> f64 {
    let mut y = f64::from(y as f32);
    if relu {
        y = y.max(0.0);
    }
    out.quant(y)
}

/// The linear's f64 sums: `x [.., K]` (int8 values, `xq`) times `w [N, K]` (int8, one
/// scale per row, `ws[n]`), plus the bias; sizes `[.., N]`.
pub fn linear_sums(x: &Tensor, xq: Qp, w: &Tensor, ws: &[f64], bias: Option<&[f64]>) -> Tensor {
    let k = *x.sizes.last().expect("rank >= 1");
    let n = w.sizes[0];
    let m = x.numel() / k.max(1);
    let mut out = Vec::with_capacity(m * n);
    for r in 0..m {
        for c in 0..n {
            let wsc = ws[c] as f32;
            let mut acc = bias.map_or(0.0, |b| b[c]);
            for p in 0..k {
                let xd = xq.deq(x.data[r * k + p]);
                let wd = dequantize(w.data[c * w.sizes[1] + p], 0, wsc);
                acc += xd * wd;
            }
            out.push(acc);
        }
    }
    let mut sizes = x.sizes.clone();
    *sizes.last_mut().expect("rank >= 1") = n;
    Tensor::new(DataType::Float64, &sizes, out)
}

/// The convolution's f64 sums of dequantized x and weights (the weight in PyTorch's own
/// layout, `[C_out, C_in / g, kH, kW]` or transposed `[C_in, C_out / g, kH, kW]`, int8
/// values; `ws` one scale per channel of the weight's output axis), plus the bias.
pub fn conv_sums(
    x: &Tensor,
    xq: Qp,
    w: &Tensor,
    ws: &[f64],
    bias: Option<&[f64]>,
    p: &ConvParams,
) -> Tensor {
    let xd = Tensor::new(
        DataType::Float64,
        &x.sizes,
        x.data.iter().map(|&q| xq.deq(q)).collect(),
    );
    let per = numel(&w.sizes[2..]);
    let wd: Vec<f64> = w
        .data
        .iter()
        .enumerate()
        .map(|(i, &q)| {
            let ch = if p.transposed {
                (i / per) % w.sizes[1]
            } else {
                i / (per * w.sizes[1])
            };
            dequantize(q, 0, ws[ch] as f32)
        })
        .collect();
    let wd = Tensor::new(DataType::Float64, &w.sizes, wd);
    let c_out = if p.transposed {
        w.sizes[1] * p.groups
    } else {
        w.sizes[0]
    };
    let b = bias.map(|b| Tensor::new(DataType::Float64, &[c_out], b[..c_out].to_vec()));
    crate::reference::conv(
        &xd,
        &wd,
        b.as_ref(),
        p,
        (f64::NEG_INFINITY, f64::INFINITY),
        DataType::Float64,
    )
}

/// The exporter's weight layout for q8ta convolutions from PyTorch's: `[C_out,
/// align4(kH kW C_in/g)]` (k = (kh kW + kw) C_in/g + ci; a transposed weight `[C_in,
/// C_out/g, kH, kW]` permuted to the same form), or depthwise `[kH, kW, align4(C)]`.
pub fn pack_conv_weight(w: &Tensor, groups: usize, transposed: bool, depthwise: bool) -> Tensor {
    let (kh, kw) = (w.sizes[2], w.sizes[3]);
    if depthwise {
        let c = w.sizes[0];
        let cp = c.div_ceil(4) * 4;
        let mut out = vec![0.0; kh * kw * cp];
        for ch in 0..c {
            for y in 0..kh {
                for z in 0..kw {
                    out[(y * kw + z) * cp + ch] = w.data[(ch * kh + y) * kw + z];
                }
            }
        }
        return Tensor::new(I8, &[kh, kw, cp], out);
    }
    let (c_out, cin_g) = if transposed {
        (w.sizes[1] * groups, w.sizes[0] / groups)
    } else {
        (w.sizes[0], w.sizes[1])
    };
    let k = kh * kw * cin_g;
    let kp = k.div_ceil(4) * 4;
    let mut out = vec![0.0; c_out * kp];
    for co in 0..c_out {
        for y in 0..kh {
            for z in 0..kw {
                for ci in 0..cin_g {
                    let v = if transposed {
                        let cout_g = w.sizes[1];
                        let (g, og) = (co / cout_g, co % cout_g);
                        w.data[(((g * cin_g + ci) * cout_g + og) * kh + y) * kw + z]
                    } else {
                        w.data[((co * cin_g + ci) * kh + y) * kw + z]
                    };
                    out[co * kp + (y * kw + z) * cin_g + ci] = v;
                }
            }
        }
    }
    Tensor::new(I8, &[c_out, kp], out)
}

/// The inverse of [`pack_conv_weight`]: PyTorch's layout from the exporter's, for `c_in`
/// input channels, `c_out` output channels and kernel `[kh, kw]`.
pub fn unpack_conv_weight(
    w: &Tensor,
    (c_in, c_out, groups): (usize, usize, usize),
    [kh, kw]: [usize; 2],
    transposed: bool,
    depthwise: bool,
) -> Tensor {
    if depthwise {
        let cp = w.sizes[2];
        let mut out = vec![0.0; c_out * kh * kw];
        for ch in 0..c_out {
            for y in 0..kh {
                for z in 0..kw {
                    out[(ch * kh + y) * kw + z] = w.data[(y * kw + z) * cp + ch];
                }
            }
        }
        return Tensor::new(I8, &[c_out, 1, kh, kw], out);
    }
    let (cin_g, cout_g) = (c_in / groups, c_out / groups);
    let kp = w.sizes[1];
    let sizes = if transposed {
        [c_in, cout_g, kh, kw]
    } else {
        [c_out, cin_g, kh, kw]
    };
    let mut out = vec![0.0; numel(&sizes)];
    for co in 0..c_out {
        for y in 0..kh {
            for z in 0..kw {
                for ci in 0..cin_g {
                    let v = w.data[co * kp + (y * kw + z) * cin_g + ci];
                    let at = if transposed {
                        let (g, og) = (co / cout_g, co % cout_g);
                        (((g * cin_g + ci) * cout_g + og) * kh + y) * kw + z
                    } else {
                        ((co * cin_g + ci) * kh + y) * kw + z
                    };
                    out[at] = v;
                }
            }
        }
    }
    Tensor::new(I8, &sizes, out)
}

/// q8ta_add: `quantize(fma(alpha, dequantize(b), dequantize(a)))`, broadcasting (rank <= 4,
/// right-aligned).
pub fn add(
    a: &Tensor,
    b: &Tensor,
    (qa, qb, qo): (Qp, Qp, Qp),
    alpha: f64,
) -> Result<Tensor, String> {
    let rank = a.sizes.len().max(b.sizes.len());
    let pad = |s: &[usize]| {
        let mut v = vec![1; rank - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (sa, sb) = (pad(&a.sizes), pad(&b.sizes));
    let mut so = vec![0; rank];
    for i in 0..rank {
        so[i] = match (sa[i], sb[i]) {
            (x, y) if x == y || y == 1 => x,
            (1, y) => y,
            _ => {
                return Err(format!(
                    "sizes {:?} and {:?} do not broadcast",
                    a.sizes, b.sizes
                ))
            }
        };
    }
    let st = |s: &[usize]| -> Vec<usize> {
        let full = crate::tensor::strides(s);
        (0..rank)
            .map(|i| if s[i] == 1 { 0 } else { full[i] })
            .collect()
    };
    let (ta, tb) = (st(&sa), st(&sb));
    let alpha = alpha as f32;
    let data = (0..numel(&so))
        .map(|i| {
            let idx = crate::tensor::unravel(i, &so);
            let ia: usize = idx.iter().zip(&ta).map(|(x, y)| x * y).sum();
            let ib: usize = idx.iter().zip(&tb).map(|(x, y)| x * y).sum();
            let (x, y) = (qa.deq(a.data[ia]) as f32, qb.deq(b.data[ib]) as f32);
            qo.quant(f64::from(alpha.mul_add(y, x)))
        })
        .collect();
    Ok(Tensor::new(I8, &so, data))
}

/// q8ta_relu (`r` = 0) / q8ta_pixel_shuffle (`r` >= 1): requantized data movement. For the
/// shuffle, `out` carries the exporter's `1 / out_scale` in its scale field inverted back.
pub fn requant(x: &Tensor, qi: Qp, out_inv: f32, out_zp: i64, r: usize) -> Result<Tensor, String> {
    let n = x.sizes.len();
    let (sizes, src): (Vec<usize>, Box<dyn Fn(usize) -> usize>) = if r == 0 {
        (x.sizes.clone(), Box::new(|i| i))
    } else {
        if n < 3 || !x.sizes[n - 3].is_multiple_of(r * r) {
            return Err(format!("input {:?} cannot be shuffled by {r}", x.sizes));
        }
        let mut o = x.sizes.clone();
        o[n - 3] /= r * r;
        o[n - 2] *= r;
        o[n - 1] *= r;
        let (c, oh, ow) = (o[n - 3], o[n - 2], o[n - 1]);
        let (h, w) = (oh / r, ow / r);
        (
            o,
            Box::new(move |i| {
                let (wi, t) = (i % ow, i / ow);
                let (hi, t) = (t % oh, t / oh);
                let (ci, b) = (t % c, t / c);
                let cs = (ci * r + hi % r) * r + wi % r;
                ((b * c * r * r + cs) * h + hi / r) * w + wi / r
            }),
        )
    };
    let data = (0..numel(&sizes))
        .map(|i| {
            let mut y = qi.deq(x.data[src(i)]);
            if r == 0 {
                y = y.max(0.0);
            }
            quantize(y, out_inv, out_zp, (-128, 127))
        })
        .collect();
    Ok(Tensor::new(I8, &sizes, data))
}

// ---------------------------------------------------------------- cases

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = vec![
        quant(F32, &[5, 37], &[5], Qp::new(0.0173, 3), (I8, -128, 127), 1),
        quant(
            F32,
            &[6, 10],
            &[6, 2, 6],
            Qp::new(0.125, -4),
            (I8, -128, 127),
            2,
        ),
        quant(F16, &[3, 4, 9], &[3], Qp::new(0.031, 100), (U8, 0, 255), 3),
        quant_tensor(false, &[4, 12], &[4, 1], Qp::new(0.0091, -7), 4),
        quant_tensor(true, &[4, 12], &[4, 2], Qp::new(0.0213, 11), 5),
        dequant(I8, F32, &[5, 13], &[5, 2, 5], Qp::new(0.0173, -3), 6),
        dequant(U8, F16, &[2, 3, 7], &[2], Qp::new(0.02, 128), 7),
        dequant_tensor(false, &[6, 8], &[6, 3], Qp::new(0.0371, 5), 8),
        dequant_tensor(true, &[6, 8], &[6, 1], Qp::new(0.0059, -128), 9),
        quant_channel(false, &[3, 6, 5], 1, &[3, 1], 10),
        quant_channel(true, &[4, 7], -1, &[4, 2], 11),
        dequant_channel(true, &[10, 12], 0, true, &[10], 12),
        dequant_channel(false, &[4, 6, 3], 1, false, &[4, 2], 13),
        dequant_channel(false, &[5, 8], 0, true, &[5, 3], 14),
    ];
    // Linear: exact sums (x scale 2^-5, weight scales k / 256).
    v.extend([
        linear(LINEAR, &[4, 32], &[4], 24, true, true, 20),
        linear(LINEAR, &[2, 3, 16], &[2, 1], 12, true, false, 21),
        linear(LINEAR, &[5, 13], &[5, 2, 4], 7, false, true, 22),
        linear(GEMV, &[1, 64], &[1], 20, true, true, 23),
        linear(GEMV, &[2, 1, 24], &[1, 2], 9, false, false, 24),
        q8csw(F32, &[4, 32], &[4, 1, 3], 10, true, 25),
        q8csw(F16, &[3, 20], &[3], 8, false, 26),
    ]);
    // Convolutions: general, depthwise, pointwise, transposed.
    v.extend([
        conv(
            ConvCase::new(CONV, [1, 3, 6, 6], 8, [3, 3]).pad(1).relu(),
            30,
        ),
        conv(
            ConvCase::new(CONV, [2, 4, 7, 5], 8, [3, 2])
                .stride(2)
                .pad(1)
                .dilation(2)
                .groups(2)
                .no_bias(),
            31,
        ),
        conv(
            ConvCase::new(CONV, [1, 2, 5, 5], 4, [3, 3]).pad(1).sizes(&[
                [1, 2, 3, 4],
                [1, 2, 5, 5],
                [1, 2, 2, 3],
            ]),
            32,
        ),
        conv(
            ConvCase::new(CONV_DW, [1, 8, 5, 5], 8, [3, 3])
                .pad(1)
                .relu()
                .groups(8),
            33,
        ),
        conv(
            ConvCase::new(CONV_DW, [2, 6, 6, 4], 6, [3, 3])
                .stride(2)
                .pad(1)
                .groups(6)
                .sizes(&[[2, 6, 6, 4], [1, 6, 3, 3]]),
            34,
        ),
        conv(ConvCase::new(CONV_PW, [1, 6, 4, 4], 8, [1, 1]).relu(), 35),
        conv(
            ConvCase::new(CONV_PW, [2, 8, 3, 5], 5, [1, 1])
                .no_bias()
                .sizes(&[[2, 8, 3, 5], [1, 8, 2, 4]]),
            36,
        ),
        conv(ConvCase::new(CONV_T, [1, 4, 3, 3], 8, [2, 2]).stride(2), 37),
        conv(
            ConvCase::new(CONV_T, [1, 4, 3, 4], 6, [3, 3])
                .stride(2)
                .pad(1)
                .output_padding(1)
                .groups(2)
                .relu(),
            38,
        ),
        conv(
            ConvCase::new(CONV_T, [1, 3, 4, 4], 4, [2, 2])
                .stride(2)
                .sizes(&[[1, 3, 4, 4], [1, 3, 2, 3]]),
            39,
        ),
    ]);
    v.extend([
        q8ta_add(&[1, 8, 4, 4], &[1, 8, 4, 4], &[1], 1.0, 40),
        q8ta_add(&[2, 6, 3, 3], &[1, 6, 1, 1], &[2, 1], 1.0, 41),
        q8ta_add(&[5, 7], &[5, 7], &[5], 0.5, 42),
        relu(&[1, 4, 5, 5], &[1], 43),
        relu(&[6, 9], &[6, 2, 5], 44),
        shuffle(&[1, 8, 3, 3], 2, &[1], 45),
        shuffle(&[2, 9, 2, 3], 3, &[2, 1], 46),
    ]);
    // Arbitrary scales: the linear / conv chain of a real export, through dequantize.
    v.extend([chain_linear(50), chain_conv(51)]);
    v
}

fn dynamic_if(case: OpCase, ms: &[usize]) -> OpCase {
    if ms.len() > 1 {
        case.dynamic()
    } else {
        case
    }
}

fn with_lead(sizes: &[usize], m: usize) -> Vec<usize> {
    let mut s = sizes.to_vec();
    s[0] = m;
    s
}

/// Float inputs around the quant range, with exact ties `(k + 0.5) * scale` mixed in when
/// the scale is a power of two, and values past both ends.
fn quant_input(dt: DataType, sizes: &[usize], q: Qp, seed: u64) -> Tensor {
    let mut rng = Rng::new(seed);
    let pow2 = q.scale.log2().fract() == 0.0;
    let data = (0..numel(sizes))
        .map(|i| match i % 7 {
            0 if pow2 => ((rng.next_u64() % 60) as f64 - 30.0 + 0.5) * q.scale,
            1 => rng.uniform(-300.0, 300.0) * q.scale,
            _ => rng.uniform(-140.0, 140.0) * q.scale,
        })
        .collect();
    Tensor::new(dt, sizes, data)
}

fn quant(
    xdt: DataType,
    xs: &[usize],
    ms: &[usize],
    q: Qp,
    (odt, qmin, qmax): (DataType, i64, i64),
    seed: u64,
) -> OpCase {
    let mut g = CaseGraph::new();
    let x = g.input(xdt, xs);
    let (s, z) = (g.double(q.scale), g.int(q.zp));
    let (lo, hi, dt) = (g.int(qmin), g.int(qmax), g.null());
    let out = g.output(odt, xs);
    g.op(QUANT, &[x, s, z, lo, hi, dt, out]);
    let name = format!(
        "{} x{xs:?} scale {} zp {} -> {} [{qmin}, {qmax}] M {ms:?}",
        xdt.name(),
        q.scale,
        q.zp,
        odt.name()
    );
    let mut case = dynamic_if(OpCase::new(QUANT, name, g), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = quant_input(xdt, &sizes, q, seed * 100 + r as u64);
        let inv = inv_scale(q.scale);
        let want = x
            .data
            .iter()
            .map(|&v| quantize(v, inv, q.zp, (qmin, qmax)))
            .collect();
        case = case.run(vec![x], vec![Tensor::new(odt, &sizes, want)]);
    }
    case
}

fn quant_tensor(runtime: bool, xs: &[usize], ms: &[usize], q: Qp, seed: u64) -> OpCase {
    let mut g = CaseGraph::new();
    let x = g.input(F32, xs);
    let st = Tensor::f32(&[1], vec![q.scale]);
    let zt = Tensor::new(I32, &[1], vec![q.zp as f64]);
    let (s, z) = if runtime {
        (g.input(F32, &[1]), g.input(I32, &[1]))
    } else {
        (g.constant(&st), g.constant(&zt))
    };
    let (lo, hi, dt) = (g.int(-128), g.int(127), g.null());
    let out = g.output(I8, xs);
    g.op(QUANT_T, &[x, s, z, lo, hi, dt, out]);
    let name = format!(
        "x{xs:?} scale {} zp {} runtime {runtime} M {ms:?}",
        q.scale, q.zp
    );
    let mut case = dynamic_if(OpCase::new(QUANT_T, name, g), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = quant_input(F32, &sizes, q, seed * 100 + r as u64);
        // The tensor overload's scale is an fp32 value: 1.0 / double(float(scale)).
        let inv = inv_scale(f64::from(q.scale as f32));
        let want = x
            .data
            .iter()
            .map(|&v| quantize(v, inv, q.zp, (-128, 127)))
            .collect();
        let mut inputs = vec![x];
        if runtime {
            inputs.extend([st.clone(), zt.clone()]);
        }
        case = case.run(inputs, vec![Tensor::new(I8, &sizes, want)]);
    }
    case
}

fn dequant(qdt: DataType, odt: DataType, xs: &[usize], ms: &[usize], q: Qp, seed: u64) -> OpCase {
    let (lo, hi) = if qdt == U8 { (0, 255) } else { (-128, 127) };
    let mut g = CaseGraph::new();
    let x = g.input(qdt, xs);
    let (s, z) = (g.double(q.scale), g.int(q.zp));
    let (a, b, dt, odt_v) = (g.int(lo), g.int(hi), g.null(), g.null());
    let out = g.output(odt, xs);
    g.op(DEQUANT, &[x, s, z, a, b, dt, odt_v, out]);
    let name = format!(
        "{} x{xs:?} scale {} zp {} -> {} M {ms:?}",
        qdt.name(),
        q.scale,
        q.zp,
        odt.name()
    );
    let tol = if odt == F16 { Tol::F16 } else { Tol::EXACT };
    let mut case = dynamic_if(OpCase::new(DEQUANT, name, g).tol(tol), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = Tensor::rand_int(qdt, &sizes, lo, hi, seed * 100 + r as u64);
        let want = x.data.iter().map(|&v| q.deq(v)).collect();
        case = case.run(vec![x], vec![Tensor::new(odt, &sizes, want)]);
    }
    case
}

fn dequant_tensor(runtime: bool, xs: &[usize], ms: &[usize], q: Qp, seed: u64) -> OpCase {
    let mut g = CaseGraph::new();
    let x = g.input(I8, xs);
    let st = Tensor::f32(&[1], vec![q.scale]);
    let zt = Tensor::new(I32, &[1], vec![q.zp as f64]);
    let (s, z) = if runtime {
        (g.input(F32, &[1]), g.input(I32, &[1]))
    } else {
        (g.constant(&st), g.constant(&zt))
    };
    let (a, b, dt, odt_v) = (g.int(-128), g.int(127), g.null(), g.null());
    let out = g.output(F32, xs);
    g.op(DEQUANT_T, &[x, s, z, a, b, dt, odt_v, out]);
    let name = format!(
        "x{xs:?} scale {} zp {} runtime {runtime} M {ms:?}",
        q.scale, q.zp
    );
    let mut case = dynamic_if(OpCase::new(DEQUANT_T, name, g).tol(Tol::EXACT), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = Tensor::rand_int(I8, &sizes, -128, 127, seed * 100 + r as u64);
        let want = x.data.iter().map(|&v| q.deq(v)).collect();
        let mut inputs = vec![x];
        if runtime {
            inputs.extend([st.clone(), zt.clone()]);
        }
        case = case.run(inputs, vec![Tensor::f32(&sizes, want)]);
    }
    case
}

/// Per-channel parameters for `c` channels: scales in [0.004, 0.05), zero points in
/// [-10, 10].
fn channel_params(c: usize, seed: u64) -> (Tensor, Tensor) {
    (
        Tensor::rand_range(F32, &[c], 0.004, 0.05, seed),
        Tensor::rand_int(I32, &[c], -10, 10, seed + 1),
    )
}

fn axis_of(rank: usize, axis: i64) -> usize {
    if axis < 0 {
        (axis + rank as i64) as usize
    } else {
        axis as usize
    }
}

fn channel_index(sizes: &[usize], axis: usize, i: usize) -> usize {
    let inner: usize = sizes[axis + 1..].iter().product();
    (i / inner) % sizes[axis]
}

fn quant_channel(runtime: bool, xs: &[usize], axis: i64, ms: &[usize], seed: u64) -> OpCase {
    let ax = axis_of(xs.len(), axis);
    let c = xs[ax];
    let (sc, zp) = channel_params(c, seed);
    let mut g = CaseGraph::new();
    let x = g.input(F32, xs);
    let (s, z) = if runtime {
        (g.input(F32, &[c]), g.input(I32, &[c]))
    } else {
        (g.constant(&sc), g.constant(&zp))
    };
    let (a, lo, hi, dt) = (g.int(axis), g.int(-128), g.int(127), g.null());
    let out = g.output(I8, xs);
    g.op(QUANT_C, &[x, s, z, a, lo, hi, dt, out]);
    let name = format!("x{xs:?} axis {axis} runtime {runtime} M {ms:?}");
    let mut case = dynamic_if(OpCase::new(QUANT_C, name, g), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = Tensor::rand_range(F32, &sizes, -4.0, 4.0, seed * 100 + r as u64);
        // PyTorch: x * (1.0 / scales), the reciprocal in the scales' fp32.
        let want = (0..x.numel())
            .map(|i| {
                let ch = channel_index(&sizes, ax, i);
                let inv = 1.0f32 / sc.data[ch] as f32;
                quantize(x.data[i], inv, zp.data[ch] as i64, (-128, 127))
            })
            .collect();
        let mut inputs = vec![x];
        if runtime {
            inputs.extend([sc.clone(), zp.clone()]);
        }
        case = case.run(inputs, vec![Tensor::new(I8, &sizes, want)]);
    }
    case
}

fn dequant_channel(
    constant: bool,
    xs: &[usize],
    axis: i64,
    with_zp: bool,
    ms: &[usize],
    seed: u64,
) -> OpCase {
    let ax = axis_of(xs.len(), axis);
    let c = xs[ax];
    let (sc, zp) = channel_params(c, seed);
    let q0 = Tensor::rand_int(I8, xs, -127, 127, seed + 7);
    let mut g = CaseGraph::new();
    let x = if constant {
        g.constant(&q0)
    } else {
        g.input(I8, xs)
    };
    let s = g.constant(&sc);
    let z = if with_zp { g.constant(&zp) } else { g.null() };
    let (a, lo, hi, dt, odt) = (g.int(axis), g.int(-127), g.int(127), g.null(), g.null());
    let out = g.output(F32, xs);
    g.op(DEQUANT_C, &[x, s, z, a, lo, hi, dt, odt, out]);
    let name = format!("x{xs:?} axis {axis} zp {with_zp} constant {constant} M {ms:?}");
    let mut case = dynamic_if(OpCase::new(DEQUANT_C, name, g).tol(Tol::EXACT), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let q = if constant {
            q0.clone()
        } else {
            Tensor::rand_int(I8, &sizes, -128, 127, seed * 100 + r as u64)
        };
        let want = (0..q.numel())
            .map(|i| {
                let ch = channel_index(&sizes, ax, i);
                let z = if with_zp { zp.data[ch] as i64 } else { 0 };
                dequantize(q.data[i], z, sc.data[ch] as f32)
            })
            .collect();
        let inputs = if constant { vec![] } else { vec![q] };
        case = case.run(inputs, vec![Tensor::f32(&sizes, want)]);
    }
    case
}

/// Exact-sum linear parameters: int8 x in [-64, 63] with scale 2^-5, weights in [-64, 63]
/// with scales k / 256 (k odd in 1..=15), bias a multiple of 2^-13; scales padded to a
/// multiple of 4 as the exporter does.
fn exact_linear_params(n: usize, k: usize, seed: u64) -> (Tensor, Tensor, Tensor) {
    let w = Tensor::rand_int(I8, &[n, k], -64, 63, seed);
    let np = n.div_ceil(4) * 4;
    let mut rng = Rng::new(seed + 1);
    let ws = (0..np)
        .map(|_| (2 * (rng.next_u64() % 8) + 1) as f64 / 256.0)
        .collect();
    let bias = (0..np)
        .map(|_| ((rng.next_u64() % 4001) as f64 - 2000.0) / 8192.0)
        .collect();
    (w, Tensor::f32(&[np], ws), Tensor::f32(&[np], bias))
}

/// Output quantization of the exact cases: a non-power-of-two scale that spreads the
/// sums over the int8 range.
fn out_qp(spread: f64) -> Qp {
    Qp::new(spread / 97.3, -5)
}

/// Weight sums, as the exporter writes them (not read by etvk).
fn weight_sums(n: usize) -> Tensor {
    Tensor::new(I32, &[n.div_ceil(4) * 4], vec![0.0; n.div_ceil(4) * 4])
}

fn linear(
    op: &'static str,
    xs: &[usize],
    ms: &[usize],
    n: usize,
    bias: bool,
    relu: bool,
    seed: u64,
) -> OpCase {
    let k = *xs.last().expect("rank >= 1");
    let (w, ws, b) = exact_linear_params(n, k, seed);
    let xq = Qp::new(1.0 / 32.0, 3);
    let oq = out_qp(0.4 * (k as f64).sqrt());
    let mut g = CaseGraph::new();
    let x = g.input(I8, xs);
    let (s, z) = (g.double(xq.scale), g.int(xq.zp));
    let wi = g.constant(&w);
    let si = g.constant(&weight_sums(n));
    let wsi = g.constant(&ws);
    let (os, oz) = (g.double(oq.scale), g.int(oq.zp));
    let bi = if bias { g.constant(&b) } else { g.null() };
    let act = g.builder().add_string(if relu { "relu" } else { "none" });
    let mut od = xs.to_vec();
    *od.last_mut().expect("rank >= 1") = n;
    let out = g.output(I8, &od);
    g.op(op, &[x, s, z, wi, si, wsi, os, oz, bi, act, out]);
    let name = format!("x{xs:?} N {n} bias {bias} relu {relu} M {ms:?}");
    let mut case = dynamic_if(OpCase::new(op, name, g), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = Tensor::rand_int(I8, &sizes, -64, 63, seed * 100 + r as u64);
        let y = linear_sums(&x, xq, &w, &ws.data, bias.then_some(b.data.as_slice()));
        let want = y.data.iter().map(|&v| requantize(v, relu, oq)).collect();
        case = case.run(vec![x], vec![Tensor::new(I8, &y.sizes, want)]);
    }
    case
}

fn q8csw(odt: DataType, xs: &[usize], ms: &[usize], n: usize, bias: bool, seed: u64) -> OpCase {
    let k = *xs.last().expect("rank >= 1");
    let (w, ws, b) = exact_linear_params(n, k, seed);
    let xq = Qp::new(1.0 / 32.0, -2);
    let mut g = CaseGraph::new();
    let x = g.input(I8, xs);
    let (s, z) = (g.double(xq.scale), g.int(xq.zp));
    let wi = g.constant(&w);
    let si = g.constant(&weight_sums(n));
    let wsi = g.constant(&ws);
    let bi = if bias { g.constant(&b) } else { g.null() };
    let mut od = xs.to_vec();
    *od.last_mut().expect("rank >= 1") = n;
    let out = g.output(odt, &od);
    g.op(Q8CSW, &[x, s, z, wi, si, wsi, bi, out]);
    let name = format!("{} x{xs:?} N {n} bias {bias} M {ms:?}", odt.name());
    let tol = if odt == F16 { Tol::F16 } else { Tol::EXACT };
    let mut case = dynamic_if(OpCase::new(Q8CSW, name, g).tol(tol), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = Tensor::rand_int(I8, &sizes, -64, 63, seed * 100 + r as u64);
        let y = linear_sums(&x, xq, &w, &ws.data, bias.then_some(b.data.as_slice()));
        case = case.run(vec![x], vec![Tensor::new(odt, &y.sizes, y.data)]);
    }
    case
}

/// One q8ta convolution case (builder style).
#[derive(Debug, Clone)]
struct ConvCase {
    op: &'static str,
    xs: [usize; 4],
    c_out: usize,
    kernel: [usize; 2],
    stride: usize,
    pad: usize,
    dilation: usize,
    output_padding: usize,
    groups: usize,
    bias: bool,
    relu: bool,
    runs: Vec<[usize; 4]>,
}

impl ConvCase {
    fn new(op: &'static str, xs: [usize; 4], c_out: usize, kernel: [usize; 2]) -> ConvCase {
        ConvCase {
            op,
            xs,
            c_out,
            kernel,
            stride: 1,
            pad: 0,
            dilation: 1,
            output_padding: 0,
            groups: 1,
            bias: true,
            relu: false,
            runs: vec![xs],
        }
    }
    fn stride(mut self, s: usize) -> Self {
        self.stride = s;
        self
    }
    fn pad(mut self, p: usize) -> Self {
        self.pad = p;
        self
    }
    fn dilation(mut self, d: usize) -> Self {
        self.dilation = d;
        self
    }
    fn output_padding(mut self, p: usize) -> Self {
        self.output_padding = p;
        self
    }
    fn groups(mut self, g: usize) -> Self {
        self.groups = g;
        self
    }
    fn no_bias(mut self) -> Self {
        self.bias = false;
        self
    }
    fn relu(mut self) -> Self {
        self.relu = true;
        self
    }
    fn sizes(mut self, runs: &[[usize; 4]]) -> Self {
        self.runs = runs.to_vec();
        self
    }
    fn params(&self) -> ConvParams {
        ConvParams {
            stride: vec![self.stride; 2],
            padding: vec![self.pad; 2],
            dilation: vec![self.dilation; 2],
            transposed: self.op == CONV_T,
            output_padding: vec![self.output_padding; 2],
            groups: self.groups,
        }
    }
    fn out_sizes(&self, xs: [usize; 4]) -> [usize; 4] {
        let ext = |n: usize, k: usize| {
            let span = self.dilation * (k - 1) + 1;
            if self.op == CONV_T {
                (n - 1) * self.stride + span + self.output_padding - 2 * self.pad
            } else {
                (n + 2 * self.pad - span) / self.stride + 1
            }
        };
        [
            xs[0],
            self.c_out,
            ext(xs[2], self.kernel[0]),
            ext(xs[3], self.kernel[1]),
        ]
    }
}

fn conv(c: ConvCase, seed: u64) -> OpCase {
    let transposed = c.op == CONV_T;
    let depthwise = c.op == CONV_DW;
    let c_in = c.xs[1];
    let wsizes = if transposed {
        [c_in, c.c_out / c.groups, c.kernel[0], c.kernel[1]]
    } else {
        [c.c_out, c_in / c.groups, c.kernel[0], c.kernel[1]]
    };
    let w = Tensor::rand_int(I8, &wsizes, -64, 63, seed);
    let nsc = if transposed {
        c.c_out / c.groups
    } else {
        c.c_out
    };
    let (_, ws, b) = exact_linear_params(nsc.max(c.c_out), 1, seed + 3);
    let packed = pack_conv_weight(&w, c.groups, transposed, depthwise);
    let xq = Qp::new(1.0 / 32.0, -1);
    let taps = c.kernel[0] * c.kernel[1] * c_in / c.groups;
    let oq = out_qp(0.4 * (taps as f64).sqrt());
    let mut g = CaseGraph::new();
    let x = g.input(I8, &c.xs);
    let (s, z) = (g.double(xq.scale), g.int(xq.zp));
    let wi = g.constant(&packed);
    let si = g.constant(&weight_sums(c.c_out));
    let wsi = g.constant(&ws);
    let (os, oz) = (g.double(oq.scale), g.int(oq.zp));
    let bi = if c.bias { g.constant(&b) } else { g.null() };
    let ks = g.int_list(&[c.kernel[0] as i64, c.kernel[1] as i64]);
    let st = g.int_list(&[c.stride as i64; 2]);
    let pd = g.int_list(&[c.pad as i64; 2]);
    let mut args = vec![x, s, z, wi, si, wsi, os, oz, bi, ks, st, pd];
    if transposed {
        args.push(g.int_list(&[c.output_padding as i64; 2]));
    }
    args.push(g.int_list(&[c.dilation as i64; 2]));
    args.push(g.int(c.groups as i64));
    args.push(g.builder().add_string(if c.relu { "relu" } else { "none" }));
    let out = g.output(I8, &c.out_sizes(c.xs));
    args.push(out);
    g.op(c.op, &args);
    let name = format!(
        "x{:?} C_out {} k {:?} s {} p {} d {} op {} g {} bias {} relu {} runs {:?}",
        c.xs,
        c.c_out,
        c.kernel,
        c.stride,
        c.pad,
        c.dilation,
        c.output_padding,
        c.groups,
        c.bias,
        c.relu,
        c.runs
    );
    let mut case = OpCase::new(c.op, name, g);
    if c.runs.len() > 1 {
        case = case.dynamic();
    }
    let p = c.params();
    for (r, &xs) in c.runs.iter().enumerate() {
        let x = Tensor::rand_int(I8, &xs, -64, 63, seed * 100 + r as u64);
        let y = conv_sums(
            &x,
            xq,
            &w,
            &ws.data,
            c.bias.then_some(b.data.as_slice()),
            &p,
        );
        let want = y.data.iter().map(|&v| requantize(v, c.relu, oq)).collect();
        case = case.run(vec![x], vec![Tensor::new(I8, &y.sizes, want)]);
    }
    case
}

fn q8ta_add(a_sizes: &[usize], b_sizes: &[usize], ms: &[usize], alpha: f64, seed: u64) -> OpCase {
    let (qa, qb, qo) = (
        Qp::new(0.0213, -3),
        Qp::new(0.0371, 9),
        Qp::new(0.0457, -128),
    );
    let out_sizes: Vec<usize> = a_sizes
        .iter()
        .zip(b_sizes)
        .map(|(&x, &y)| x.max(y))
        .collect();
    let mut g = CaseGraph::new();
    let a = g.input(I8, a_sizes);
    let b = g.input(I8, b_sizes);
    let (sa, za) = (g.double(qa.scale), g.int(qa.zp));
    let (sb, zb) = (g.double(qb.scale), g.int(qb.zp));
    let (so, zo) = (g.double(qo.scale), g.int(qo.zp));
    let al = if alpha == 1.0 {
        g.int(1)
    } else {
        g.double(alpha)
    };
    let out = g.output(I8, &out_sizes);
    g.op(ADD, &[a, b, sa, za, sb, zb, so, zo, al, out]);
    let name = format!("a{a_sizes:?} b{b_sizes:?} alpha {alpha} M {ms:?}");
    let mut case = dynamic_if(OpCase::new(ADD, name, g), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sa = with_lead(a_sizes, m);
        let sb = if b_sizes[0] == 1 {
            b_sizes.to_vec()
        } else {
            with_lead(b_sizes, m)
        };
        let x = Tensor::rand_int(I8, &sa, -128, 127, seed * 100 + r as u64);
        let y = Tensor::rand_int(I8, &sb, -128, 127, seed * 100 + r as u64 + 50);
        let want = add(&x, &y, (qa, qb, qo), alpha).expect("sizes broadcast");
        case = case.run(vec![x, y], vec![want]);
    }
    case
}

fn relu(xs: &[usize], ms: &[usize], seed: u64) -> OpCase {
    let (qi, qo) = (Qp::new(0.0213, 7), Qp::new(0.0117, -128));
    let mut g = CaseGraph::new();
    let x = g.input(I8, xs);
    let (si, zi) = (g.double(qi.scale), g.int(qi.zp));
    let (so, zo) = (g.double(qo.scale), g.int(qo.zp));
    let out = g.output(I8, xs);
    g.op(RELU, &[x, si, zi, so, zo, out]);
    let name = format!("x{xs:?} M {ms:?}");
    let mut case = dynamic_if(OpCase::new(RELU, name, g), ms);
    for (r, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = Tensor::rand_int(I8, &sizes, -128, 127, seed * 100 + r as u64);
        let want = requant(&x, qi, inv_scale(qo.scale), qo.zp, 0).expect("relu");
        case = case.run(vec![x], vec![want]);
    }
    case
}

fn shuffle(xs: &[usize], r: usize, ms: &[usize], seed: u64) -> OpCase {
    let (qi, out_scale, out_zp) = (Qp::new(0.0107, 17), 0.0145f64, -3);
    let inv = 1.0 / f64::from(out_scale as f32);
    let n = xs.len();
    let mut od = xs.to_vec();
    od[n - 3] /= r * r;
    od[n - 2] *= r;
    od[n - 1] *= r;
    let mut g = CaseGraph::new();
    let x = g.input(I8, xs);
    let (si, zi) = (g.double(qi.scale), g.int(qi.zp));
    let (iv, zo, rr) = (g.double(inv), g.int(out_zp), g.int(r as i64));
    let out = g.output(I8, &od);
    g.op(SHUFFLE, &[x, si, zi, iv, zo, rr, out]);
    let name = format!("x{xs:?} r {r} M {ms:?}");
    let mut case = dynamic_if(OpCase::new(SHUFFLE, name, g), ms);
    for (k, &m) in ms.iter().enumerate() {
        let sizes = with_lead(xs, m);
        let x = Tensor::rand_int(I8, &sizes, -128, 127, seed * 100 + k as u64);
        let want = requant(&x, qi, inv as f32, out_zp, r).expect("shuffle");
        case = case.run(vec![x], vec![want]);
    }
    case
}

/// quantize -> q8ta_linear (relu) -> q8ta_linear -> dequantize with arbitrary scales, as a
/// real export: float in, float out, one output step allowed (a sum that lands within an
/// fp32 rounding of a step boundary may round either way).
fn chain_linear(seed: u64) -> OpCase {
    let (k, n1, n2) = (32, 24, 10);
    let w1 = Tensor::rand_int(I8, &[n1, k], -127, 127, seed);
    let w2 = Tensor::rand_int(I8, &[n2, n1], -127, 127, seed + 1);
    let s1 = Tensor::rand_range(F32, &[n1], 0.001, 0.004, seed + 2);
    let s2 = Tensor::rand_range(F32, &[12], 0.001, 0.004, seed + 3);
    let b1 = Tensor::rand_range(F32, &[n1], -0.2, 0.2, seed + 4);
    let (q0, q1, q2) = (
        Qp::new(0.0247, -16),
        Qp::new(0.00478, -128),
        Qp::new(0.00567, 35),
    );
    let mut g = CaseGraph::new();
    let x = g.input(F32, &[4, k]);
    let (lo, hi) = (g.int(-128), g.int(127));
    let (s0, z0, dt) = (g.double(q0.scale), g.int(q0.zp), g.null());
    let xq = g.tensor(I8, &[4, k]);
    g.op(QUANT, &[x, s0, z0, lo, hi, dt, xq]);
    let (wi1, ws1, bi1) = (g.constant(&w1), g.constant(&s1), g.constant(&b1));
    let sums1 = g.constant(&weight_sums(n1));
    let (s1v, z1v) = (g.double(q1.scale), g.int(q1.zp));
    let relu = g.builder().add_string("relu");
    let h = g.tensor(I8, &[4, n1]);
    g.op(
        LINEAR,
        &[xq, s0, z0, wi1, sums1, ws1, s1v, z1v, bi1, relu, h],
    );
    let (wi2, ws2) = (g.constant(&w2), g.constant(&s2));
    let sums2 = g.constant(&weight_sums(n2));
    let (s2v, z2v, nb) = (g.double(q2.scale), g.int(q2.zp), g.null());
    let none = g.builder().add_string("none");
    let yq = g.tensor(I8, &[4, n2]);
    g.op(
        LINEAR,
        &[h, s1v, z1v, wi2, sums2, ws2, s2v, z2v, nb, none, yq],
    );
    let (dt2, odt) = (g.null(), g.null());
    let y = g.output(F32, &[4, n2]);
    g.op(DEQUANT, &[yq, s2v, z2v, lo, hi, dt2, odt, y]);
    let mut case = OpCase::new(
        LINEAR,
        "chain quantize-linear-linear-dequantize, arbitrary scales",
        g,
    )
    .tol(Tol::new(q2.scale * 1.01, 0.0));
    let xin = Tensor::rand_range(F32, &[4, k], -3.0, 3.0, seed + 9);
    let xi = Tensor::new(
        I8,
        &[4, k],
        xin.data
            .iter()
            .map(|&v| quantize(v, inv_scale(q0.scale), q0.zp, (-128, 127)))
            .collect(),
    );
    let h = linear_sums(&xi, q0, &w1, &s1.data, Some(&b1.data));
    let h = Tensor::new(
        I8,
        &h.sizes,
        h.data.iter().map(|&v| requantize(v, true, q1)).collect(),
    );
    let y = linear_sums(&h, q1, &w2, &s2.data, None);
    let want = y
        .data
        .iter()
        .map(|&v| q2.deq(requantize(v, false, q2)))
        .collect();
    case = case.run(vec![xin], vec![Tensor::f32(&y.sizes, want)]);
    case
}

/// quantize -> q8ta_conv2d (relu) -> dequantize with arbitrary scales (see [`chain_linear`]).
fn chain_conv(seed: u64) -> OpCase {
    let (c_in, c_out) = (3, 8);
    let w = Tensor::rand_int(I8, &[c_out, c_in, 3, 3], -127, 127, seed);
    let ws = Tensor::rand_range(F32, &[c_out], 0.002, 0.006, seed + 1);
    let b = Tensor::rand_range(F32, &[c_out], -0.1, 0.1, seed + 2);
    let (q0, q1) = (Qp::new(0.0184, 7), Qp::new(0.00678, -128));
    let mut g = CaseGraph::new();
    let x = g.input(F32, &[1, c_in, 6, 6]);
    let (lo, hi) = (g.int(-128), g.int(127));
    let (s0, z0, dt) = (g.double(q0.scale), g.int(q0.zp), g.null());
    let xq = g.tensor(I8, &[1, c_in, 6, 6]);
    g.op(QUANT, &[x, s0, z0, lo, hi, dt, xq]);
    let wi = g.constant(&pack_conv_weight(&w, 1, false, false));
    let (si, wsi, bi) = (
        g.constant(&weight_sums(c_out)),
        g.constant(&ws),
        g.constant(&b),
    );
    let (s1, z1) = (g.double(q1.scale), g.int(q1.zp));
    let (ks, st, pd, dl) = (
        g.int_list(&[3, 3]),
        g.int_list(&[1, 1]),
        g.int_list(&[1, 1]),
        g.int_list(&[1, 1]),
    );
    let (gr, act) = (g.int(1), g.builder().add_string("relu"));
    let yq = g.tensor(I8, &[1, c_out, 6, 6]);
    g.op(
        CONV,
        &[
            xq, s0, z0, wi, si, wsi, s1, z1, bi, ks, st, pd, dl, gr, act, yq,
        ],
    );
    let (dt2, odt) = (g.null(), g.null());
    let y = g.output(F32, &[1, c_out, 6, 6]);
    g.op(DEQUANT, &[yq, s1, z1, lo, hi, dt2, odt, y]);
    let mut case = OpCase::new(CONV, "chain quantize-conv-dequantize, arbitrary scales", g)
        .tol(Tol::new(q1.scale * 1.01, 0.0));
    let xin = Tensor::rand_range(F32, &[1, c_in, 6, 6], -2.0, 2.0, seed + 9);
    let xi = Tensor::new(
        I8,
        &xin.sizes,
        xin.data
            .iter()
            .map(|&v| quantize(v, inv_scale(q0.scale), q0.zp, (-128, 127)))
            .collect(),
    );
    let p = ConvParams {
        stride: vec![1, 1],
        padding: vec![1, 1],
        dilation: vec![1, 1],
        transposed: false,
        output_padding: vec![0, 0],
        groups: 1,
    };
    let y = conv_sums(&xi, q0, &w, &ws.data, Some(&b.data), &p);
    let want = y
        .data
        .iter()
        .map(|&v| q1.deq(requantize(v, true, q1)))
        .collect();
    case = case.run(vec![xin], vec![Tensor::f32(&y.sizes, want)]);
    case
}
