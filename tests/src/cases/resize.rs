//! Upsampling, constant padding and pixel shuffle, as executorch 1.5.1 exports them:
//! `aten.upsample_nearest2d.vec(x, output_size IntList|None, scale_factors DoubleList|None,
//! out)`, `aten.upsample_bilinear2d.vec(x, output_size, align_corners Bool, scale_factors,
//! out)`, `aten.constant_pad_nd.default(x, pad IntList, value Double, out)` and
//! `aten.pixel_shuffle.default(x, upscale_factor Int, out)`, checked against f64 references
//! written from ATen (`UpSample.h`, `UpSampleKernel.cpp`, `PadNd.cpp`, `PixelShuffle.cpp`).
//! The upsampling source indices and weights are computed in f32 as ATen's CPU kernels do
//! (the choice of source pixel depends on float rounding); the interpolation itself in f64.
//! The reference interpreter uses the same functions.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32, Int32 as I32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::Tensor;

const NEAREST: &str = "aten.upsample_nearest2d.vec";
const BILINEAR: &str = "aten.upsample_bilinear2d.vec";
const PAD: &str = "aten.constant_pad_nd.default";
const SHUFFLE: &str = "aten.pixel_shuffle.default";

/// How an upsampling's output is given (exactly one of PyTorch's two arguments).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resample {
    /// output_size (H, W).
    Size(Vec<i64>),
    /// scale_factors (H, W).
    Scales(Vec<f64>),
}

/// PyTorch's `compute_output_size` for a 4-D input: output_size, or `trunc(in * scale)`;
/// every size must be >= 1 and the input non-empty.
pub(crate) fn upsample_out_sizes(x: &[usize], r: &Resample) -> Result<Vec<usize>, String> {
    if x.len() != 4 {
        return Err(format!("upsampling input of rank {} (4 expected)", x.len()));
    }
    if x.contains(&0) {
        return Err(format!("upsampling an empty input {x:?}"));
    }
    let hw: Vec<i64> = match r {
        Resample::Size(s) => s.clone(),
        Resample::Scales(s) => s
            .iter()
            .zip(&x[2..])
            .map(|(&f, &n)| (n as f64 * f) as i64)
            .collect(),
    };
    if hw.len() != 2 {
        return Err(format!("{r:?}: 2 entries (H, W) expected"));
    }
    if hw.iter().any(|&o| o < 1) {
        return Err(format!(
            "upsampling {x:?} with {r:?} gives output sizes {hw:?} (must be >= 1)"
        ));
    }
    Ok(vec![x[0], x[1], hw[0] as usize, hw[1] as usize])
}

/// ATen's `compute_scales_value<float>`.
fn scales_value(scale: Option<f64>, n_in: usize, n_out: usize) -> f32 {
    match scale {
        Some(s) if s > 0.0 => (1.0 / s) as f32,
        _ => n_in as f32 / n_out as f32,
    }
}

/// The scale factor of dim `a` (0 = H, 1 = W), if given.
fn given(r: &Resample, a: usize) -> Option<f64> {
    match r {
        Resample::Scales(s) => Some(s[a]),
        Resample::Size(_) => None,
    }
}

/// ATen's `nearest_idx` (CPU): copy when the sizes match, `o / 2` for exactly twice the
/// size, else `min(floorf(o * scale), in - 1)` in float.
fn nearest_index(o: usize, n_in: usize, n_out: usize, scale: Option<f64>) -> usize {
    if n_out == n_in {
        o
    } else if n_out == 2 * n_in {
        o >> 1
    } else {
        let s = scales_value(scale, n_in, n_out);
        (((o as f32) * s).floor() as usize).min(n_in - 1)
    }
}

/// ATen's `compute_source_index_and_lambda` (float opmath): (i0, i1, weight of i1).
fn linear_taps(
    o: usize,
    n_in: usize,
    n_out: usize,
    align_corners: bool,
    scale: Option<f64>,
) -> (usize, usize, f64) {
    if n_out == n_in {
        return (o, o, 0.0);
    }
    let real: f32 = if align_corners {
        let s = if n_out > 1 {
            (n_in - 1) as f32 / (n_out - 1) as f32
        } else {
            0.0
        };
        s * o as f32
    } else {
        let s = scales_value(scale, n_in, n_out);
        (s * (o as f32 + 0.5) - 0.5).max(0.0)
    };
    let i0 = (real.floor() as usize).min(n_in - 1);
    let l1 = f64::from(real - i0 as f32).clamp(0.0, 1.0);
    let i1 = if i0 < n_in - 1 { i0 + 1 } else { i0 };
    (i0, i1, l1)
}

/// `aten.upsample_nearest2d.vec` in f64.
pub(crate) fn upsample_nearest2d(x: &Tensor, r: &Resample) -> Result<Tensor, String> {
    let od = upsample_out_sizes(&x.sizes, r)?;
    let (h, w, oh, ow) = (x.sizes[2], x.sizes[3], od[2], od[3]);
    let planes = od[0] * od[1];
    let mut out = Vec::with_capacity(planes * oh * ow);
    for pl in 0..planes {
        for i in 0..oh {
            let si = nearest_index(i, h, oh, given(r, 0));
            for j in 0..ow {
                let sj = nearest_index(j, w, ow, given(r, 1));
                out.push(x.data[(pl * h + si) * w + sj]);
            }
        }
    }
    Ok(Tensor::new(x.dtype, &od, out))
}

/// `aten.upsample_bilinear2d.vec` in f64 (indices and weights as ATen computes them).
pub(crate) fn upsample_bilinear2d(
    x: &Tensor,
    r: &Resample,
    align_corners: bool,
) -> Result<Tensor, String> {
    let od = upsample_out_sizes(&x.sizes, r)?;
    let (h, w, oh, ow) = (x.sizes[2], x.sizes[3], od[2], od[3]);
    let planes = od[0] * od[1];
    let mut out = Vec::with_capacity(planes * oh * ow);
    for pl in 0..planes {
        let at = |a: usize, b: usize| x.data[(pl * h + a) * w + b];
        for i in 0..oh {
            let (h0, h1, lh) = linear_taps(i, h, oh, align_corners, given(r, 0));
            for j in 0..ow {
                let (w0, w1, lw) = linear_taps(j, w, ow, align_corners, given(r, 1));
                let top = (1.0 - lw) * at(h0, w0) + lw * at(h0, w1);
                let bottom = (1.0 - lw) * at(h1, w0) + lw * at(h1, w1);
                out.push((1.0 - lh) * top + lh * bottom);
            }
        }
    }
    Ok(Tensor::new(x.dtype, &od, out))
}

/// `aten.constant_pad_nd` in f64: pad pairs from the last dim backwards, negative entries
/// crop, `value` outside the input (cast to the dtype: truncated for integers).
pub(crate) fn constant_pad(x: &Tensor, pad: &[i64], value: f64) -> Result<Tensor, String> {
    let r = x.sizes.len();
    if !pad.len().is_multiple_of(2) || pad.len() / 2 > r {
        return Err(format!("pad {pad:?} for rank {r}"));
    }
    let mut od = x.sizes.clone();
    let mut lo = vec![0i64; r];
    for (k, p) in pad.chunks(2).enumerate() {
        let d = r - 1 - k;
        let n = x.sizes[d] as i64 + p[0] + p[1];
        if n < 0 {
            return Err(format!(
                "padding dim {d} of {:?} by {p:?} gives a negative size",
                x.sizes
            ));
        }
        od[d] = n as usize;
        lo[d] = p[0];
    }
    let fill = if matches!(x.dtype, F32 | F16 | DataType::Float64) {
        value
    } else {
        value.trunc()
    };
    let xs = crate::tensor::strides(&x.sizes);
    let n: usize = od.iter().product();
    let out = (0..n)
        .map(|i| {
            let c = crate::tensor::unravel(i, &od);
            let mut src = 0usize;
            for d in 0..r {
                let ic = c[d] as i64 - lo[d];
                if ic < 0 || ic >= x.sizes[d] as i64 {
                    return fill;
                }
                src += ic as usize * xs[d];
            }
            x.data[src]
        })
        .collect();
    Ok(Tensor::new(x.dtype, &od, out))
}

/// `aten.pixel_shuffle` in f64: `[*, C r^2, H, W] -> [*, C, H r, W r]`.
pub(crate) fn pixel_shuffle(x: &Tensor, r: i64) -> Result<Tensor, String> {
    let rank = x.sizes.len();
    if rank < 3 || r < 1 {
        return Err(format!(
            "pixel_shuffle of {:?} by {r} (rank >= 3, r >= 1)",
            x.sizes
        ));
    }
    let r = r as usize;
    let (c, h, w) = (x.sizes[rank - 3], x.sizes[rank - 2], x.sizes[rank - 1]);
    if !c.is_multiple_of(r * r) {
        return Err(format!(
            "pixel_shuffle: channels {c} not divisible by {}",
            r * r
        ));
    }
    let co = c / (r * r);
    let b: usize = x.sizes[..rank - 3].iter().product();
    let mut od = x.sizes.clone();
    od[rank - 3] = co;
    od[rank - 2] = h * r;
    od[rank - 1] = w * r;
    let mut out = Vec::with_capacity(x.data.len());
    for bi in 0..b {
        for ci in 0..co {
            for oh in 0..h * r {
                for ow in 0..w * r {
                    let ic = ci * r * r + (oh % r) * r + ow % r;
                    out.push(x.data[((bi * c + ic) * h + oh / r) * w + ow / r]);
                }
            }
        }
    }
    Ok(Tensor::new(x.dtype, &od, out))
}

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = nearest_cases();
    v.extend(bilinear_cases());
    v.extend(pad_cases());
    v.extend(shuffle_cases());
    // grid_sampler_2d and grid_priors (ops/grid.rs).
    v.extend(super::grid::cases());
    v
}

/// The output_size and scale_factors values of `r` (the other one None).
fn resample_args(g: &mut CaseGraph, r: &Resample) -> (usize, usize) {
    match r {
        Resample::Size(s) => {
            let s = g.int_list(s);
            (s, g.null())
        }
        Resample::Scales(f) => {
            let n = g.null();
            (n, g.double_list(f))
        }
    }
}

/// An upsampling graph: `align_corners` None for nearest.
fn upsample_graph(
    dt: DataType,
    x_max: &[usize],
    r: &Resample,
    align_corners: Option<bool>,
    out_max: &[usize],
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let (size, scales) = resample_args(&mut g, r);
    match align_corners {
        None => {
            let o = g.output(dt, out_max);
            g.op(NEAREST, &[xi, size, scales, o]);
        }
        Some(ac) => {
            let a = g.bool(ac);
            let o = g.output(dt, out_max);
            g.op(BILINEAR, &[xi, size, a, scales, o]);
        }
    }
    g
}

fn upsample_label(dt: DataType, sizes: &[usize], r: &Resample, ac: Option<bool>) -> String {
    let r = match r {
        Resample::Size(s) => format!("output_size {s:?}"),
        Resample::Scales(f) => format!("scale_factors {f:?}"),
    };
    match ac {
        None => format!("{} {sizes:?} {r}", dt.name()),
        Some(ac) => format!("{} {sizes:?} {r} align_corners {ac}", dt.name()),
    }
}

fn nearest_case(dt: DataType, sizes: &[usize], r: Resample, seed: u64) -> OpCase {
    let x = Tensor::rand_range(dt, sizes, -2.0, 2.0, seed);
    let want = upsample_nearest2d(&x, &r).expect("valid nearest case");
    let g = upsample_graph(dt, sizes, &r, None, &want.sizes);
    OpCase::new(NEAREST, upsample_label(dt, sizes, &r, None), g)
        .tol(Tol::EXACT)
        .run(vec![x], vec![want])
}

fn bilinear_tol(dt: DataType) -> Tol {
    if dt == F16 {
        Tol::F16
    } else {
        Tol::F32
    }
}

fn bilinear_case(dt: DataType, sizes: &[usize], r: Resample, ac: bool, seed: u64) -> OpCase {
    let x = Tensor::rand_range(dt, sizes, -2.0, 2.0, seed);
    let want = upsample_bilinear2d(&x, &r, ac).expect("valid bilinear case");
    let g = upsample_graph(dt, sizes, &r, Some(ac), &want.sizes);
    OpCase::new(BILINEAR, upsample_label(dt, sizes, &r, Some(ac)), g)
        .tol(bilinear_tol(dt))
        .run(vec![x], vec![want])
}

fn scales(h: f64, w: f64) -> Resample {
    Resample::Scales(vec![h, w])
}

fn size(h: i64, w: i64) -> Resample {
    Resample::Size(vec![h, w])
}

fn nearest_cases() -> Vec<OpCase> {
    let mut v = vec![
        // nn.Upsample(scale_factor=2): the shift case.
        nearest_case(F32, &[1, 3, 8, 10], scales(2.0, 2.0), 9400),
        nearest_case(F32, &[2, 3, 5, 7], scales(1.7, 1.7), 9401),
        // Downscale: 9 -> 5, 11 -> 6.
        nearest_case(F32, &[1, 2, 9, 11], scales(0.6, 0.6), 9402),
        nearest_case(F32, &[1, 2, 7, 9], size(13, 5), 9403),
        // out == in with a scale that is not 1 (a copy), and out == 2 in from 2.05 (a shift),
        // where floor(dst / scale) would differ.
        nearest_case(F32, &[1, 1, 10, 10], scales(1.05, 2.05), 9404),
        nearest_case(F32, &[1, 3, 6, 5], scales(3.3, 0.45), 9405),
        nearest_case(F32, &[2, 2, 3, 4], size(1, 1), 9406),
        nearest_case(F16, &[1, 4, 6, 5], scales(2.5, 1.5), 9407),
        nearest_case(F16, &[1, 3, 7, 4], size(4, 11), 9408),
    ];

    // Dynamic: the output follows trunc(in * scale) at every resize.
    let r = scales(1.7, 0.6);
    let g = upsample_graph(F32, &[2, 3, 12, 13], &r, None, &[2, 3, 20, 7]);
    let mut case = OpCase::new(
        NEAREST,
        "dynamic [<=2, 3, <=12, <=13] scale_factors [1.7, 0.6]",
        g,
    )
    .tol(Tol::EXACT)
    .dynamic();
    for (i, sz) in [
        [2usize, 3, 12, 13],
        [1, 3, 5, 4],
        [2, 3, 1, 2],
        [1, 3, 9, 11],
        [2, 3, 12, 13],
    ]
    .iter()
    .enumerate()
    {
        let x = Tensor::rand_range(F32, sz, -2.0, 2.0, 9410 + i as u64);
        let want = upsample_nearest2d(&x, &r).unwrap();
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);

    // Dynamic output_size: [7, W] with W a SymInt from sym_size.int(x, 3) (the input width
    // follows into the output; the height is a literal).
    let mut g = CaseGraph::new();
    let xi = g.input(F32, &[1, 2, 6, 9]);
    let d3 = g.int(3);
    let wsym = g.symint();
    g.op("sym_size.int", &[xi, d3, wsym]);
    let h7 = g.int(7);
    let size_v = g.value_list(&[h7, wsym]);
    let none = g.null();
    let o = g.output(F32, &[1, 2, 7, 9]);
    g.op(NEAREST, &[xi, size_v, none, o]);
    let mut case = OpCase::new(
        NEAREST,
        "dynamic [1, 2, <=6, <=9] output_size [7, SymInt width]",
        g,
    )
    .tol(Tol::EXACT)
    .dynamic();
    for (i, sz) in [[1usize, 2, 6, 9], [1, 2, 2, 3], [1, 2, 5, 1], [1, 2, 6, 9]]
        .iter()
        .enumerate()
    {
        let x = Tensor::rand_range(F32, sz, -2.0, 2.0, 9420 + i as u64);
        let want = upsample_nearest2d(&x, &size(7, sz[3] as i64)).unwrap();
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

fn bilinear_cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    for ac in [false, true] {
        let s = 9500 + 20 * u64::from(ac);
        v.extend([
            bilinear_case(F32, &[1, 3, 8, 10], scales(2.0, 2.0), ac, s),
            bilinear_case(F32, &[1, 3, 8, 10], scales(1.7, 1.7), ac, s + 1),
            // Downscale: 9 -> 5, 11 -> 6.
            bilinear_case(F32, &[1, 2, 9, 11], scales(0.6, 0.6), ac, s + 2),
            bilinear_case(F32, &[2, 3, 5, 7], size(13, 4), ac, s + 3),
            // One output row / column: scale 0 with align_corners.
            bilinear_case(F32, &[1, 1, 4, 5], size(1, 7), ac, s + 4),
            // 10 -> 10 from scale 1.05 copies rows (ATen's out == in case).
            bilinear_case(F32, &[1, 2, 10, 10], scales(1.05, 2.0), ac, s + 5),
            bilinear_case(F32, &[1, 3, 6, 5], scales(3.3, 0.45), ac, s + 6),
            // lraspp's head: 4x4 -> 8x8 and 8x8 -> 64x64 by output_size.
            bilinear_case(F32, &[1, 4, 4, 4], size(8, 8), ac, s + 7),
            bilinear_case(F32, &[1, 2, 1, 1], size(5, 3), ac, s + 8),
            bilinear_case(F16, &[1, 4, 6, 5], scales(2.5, 1.5), ac, s + 9),
            bilinear_case(F16, &[2, 2, 5, 6], size(3, 11), ac, s + 10),
        ]);
    }

    // Dynamic: scale factors (the output follows the input), and a fixed output_size with
    // align_corners (the scale follows the input).
    for (r, ac, out_max, label) in [
        (
            scales(1.7, 0.6),
            false,
            [2usize, 3, 20, 7],
            "dynamic [<=2, 3, <=12, <=13] scale_factors [1.7, 0.6]",
        ),
        (
            size(9, 14),
            true,
            [2, 3, 9, 14],
            "dynamic [<=2, 3, <=12, <=13] output_size [9, 14]",
        ),
    ] {
        let g = upsample_graph(F32, &[2, 3, 12, 13], &r, Some(ac), &out_max);
        let mut case = OpCase::new(BILINEAR, format!("{label} align_corners {ac}"), g)
            .tol(Tol::F32)
            .dynamic();
        for (i, sz) in [
            [2usize, 3, 12, 13],
            [1, 3, 5, 4],
            [2, 3, 1, 2],
            [1, 3, 9, 14 - 3],
            [2, 3, 12, 13],
        ]
        .iter()
        .enumerate()
        {
            let x = Tensor::rand_range(F32, sz, -2.0, 2.0, 9560 + i as u64);
            let want = upsample_bilinear2d(&x, &r, ac).unwrap();
            case = case.run(vec![x], vec![want]);
        }
        v.push(case);
    }
    v
}

fn pad_graph(
    dt: DataType,
    x_max: &[usize],
    pad: &[i64],
    value: f64,
    out_max: &[usize],
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let p = g.int_list(pad);
    let val = g.double(value);
    let o = g.output(dt, out_max);
    g.op(PAD, &[xi, p, val, o]);
    g
}

fn pad_case(dt: DataType, sizes: &[usize], pad: &[i64], value: f64, seed: u64) -> OpCase {
    let x = if dt == I32 {
        Tensor::rand_int(dt, sizes, -50, 50, seed)
    } else {
        Tensor::rand_range(dt, sizes, -2.0, 2.0, seed)
    };
    let want = constant_pad(&x, pad, value).expect("valid pad case");
    let g = pad_graph(dt, sizes, pad, value, &want.sizes);
    OpCase::new(
        PAD,
        format!("{} {sizes:?} pad {pad:?} value {value}", dt.name()),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![x], vec![want])
}

fn pad_cases() -> Vec<OpCase> {
    let mut v = vec![
        pad_case(F32, &[1, 3, 8, 10], &[1, 2, -1, 3], 0.5, 9600),
        // F.pad(x, (1, 1)): the last dim only.
        pad_case(F32, &[1, 3, 8, 10], &[1, 1], 0.0, 9601),
        // Every dim of a rank-3 input.
        pad_case(F32, &[3, 4, 5], &[0, 0, 2, 1, 1, 0], -1.5, 9602),
        pad_case(
            F32,
            &[1, 2, 2, 3, 2],
            &[1, 0, 0, 1, 1, 1, 0, 0, 1, 1],
            2.0,
            9603,
        ),
        // Crop only.
        pad_case(F32, &[2, 3, 6, 7], &[-2, -1, -1, -3], 0.0, 9604),
        pad_case(F32, &[7], &[3, -2], 1.0, 9605),
        pad_case(F16, &[2, 3, 4, 5], &[2, -1], 0.25, 9606),
        pad_case(F16, &[1, 2, 3, 3], &[1, 1, 1, 1], -3.0, 9607),
        pad_case(I32, &[2, 5], &[-1, -2, 1, 1], 7.0, 9608),
        // An int value of a float Scalar is truncated.
        pad_case(I32, &[3, 2, 2], &[1, 0], -2.75, 9609),
    ];

    // Dynamic: the padded sizes follow the input.
    let pad = [1i64, 2, -1, 3];
    let g = pad_graph(F32, &[2, 3, 9, 10], &pad, 0.5, &[2, 3, 11, 13]);
    let mut case = OpCase::new(PAD, "dynamic [<=2, 3, <=9, <=10] pad [1, 2, -1, 3]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, sz) in [
        [2usize, 3, 9, 10],
        [1, 3, 1, 1],
        [2, 3, 4, 7],
        [2, 3, 9, 10],
    ]
    .iter()
    .enumerate()
    {
        let x = Tensor::rand(sz, 9620 + i as u64);
        let want = constant_pad(&x, &pad, 0.5).unwrap();
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

fn shuffle_graph(dt: DataType, x_max: &[usize], r: i64, out_max: &[usize]) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let rv = g.int(r);
    let o = g.output(dt, out_max);
    g.op(SHUFFLE, &[xi, rv, o]);
    g
}

fn shuffle_case(dt: DataType, sizes: &[usize], r: i64, seed: u64) -> OpCase {
    let x = Tensor::rand_range(dt, sizes, -2.0, 2.0, seed);
    let want = pixel_shuffle(&x, r).expect("valid pixel_shuffle case");
    let g = shuffle_graph(dt, sizes, r, &want.sizes);
    OpCase::new(SHUFFLE, format!("{} {sizes:?} r {r}", dt.name()), g)
        .tol(Tol::EXACT)
        .run(vec![x], vec![want])
}

fn shuffle_cases() -> Vec<OpCase> {
    let mut v = vec![
        shuffle_case(F32, &[1, 8, 3, 4], 2, 9700),
        shuffle_case(F32, &[2, 9, 3, 3], 3, 9701),
        shuffle_case(F32, &[8, 2, 3], 2, 9702),
        shuffle_case(F32, &[2, 1, 4, 2, 3], 2, 9703),
        shuffle_case(F32, &[1, 3, 2, 5], 1, 9704),
        shuffle_case(F16, &[1, 12, 3, 4], 2, 9705),
    ];
    let g = shuffle_graph(F32, &[2, 8, 5, 6], 2, &[2, 2, 10, 12]);
    let mut case = OpCase::new(SHUFFLE, "dynamic [<=2, 8, <=5, <=6] r 2", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, sz) in [[2usize, 8, 5, 6], [1, 8, 2, 3], [2, 8, 1, 1], [2, 8, 5, 6]]
        .iter()
        .enumerate()
    {
        let x = Tensor::rand(sz, 9720 + i as u64);
        let want = pixel_shuffle(&x, 2).unwrap();
        case = case.run(vec![x], vec![want]);
    }
    v.push(case);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    use etvk_runtime::ErrorKind;

    use crate::case::init_error as init_err;

    fn close(got: &[f64], want: &[f64]) -> bool {
        got.len() == want.len() && got.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-5)
    }

    #[test]
    fn reference_matches_pytorch_values() {
        // Values printed by torch 2.13 for x = arange(12.).reshape(1, 1, 3, 4).
        let x = Tensor::f32(&[1, 1, 3, 4], (0..12).map(f64::from).collect());
        // upsample_nearest2d.vec(x, None, [1.7, 1.3]) -> [1, 1, 5, 5].
        let n = upsample_nearest2d(&x, &scales(1.7, 1.3)).unwrap();
        #[rustfmt::skip]
        let want = [
            0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 4.0, 5.0, 6.0, 7.0,
            4.0, 4.0, 5.0, 6.0, 7.0, 8.0, 8.0, 9.0, 10.0, 11.0,
        ];
        assert_eq!(n.sizes, vec![1, 1, 5, 5]);
        assert_eq!(n.data, want);
        // upsample_bilinear2d.vec(x, None, False, [1.7, 0.6]) -> [1, 1, 5, 2].
        let b = upsample_bilinear2d(&x, &scales(1.7, 0.6), false).unwrap();
        #[rustfmt::skip]
        let want = [
            0.333333, 2.0, 1.862745, 3.529412, 4.215686, 5.882353, 6.568628, 8.235294,
            8.333333, 10.0,
        ];
        assert_eq!(b.sizes, vec![1, 1, 5, 2]);
        assert!(close(&b.data, &want), "{:?}", b.data);
        // upsample_bilinear2d.vec(x, [2, 5], True, None).
        let b = upsample_bilinear2d(&x, &size(2, 5), true).unwrap();
        let want = [0.0, 0.75, 1.5, 2.25, 3.0, 8.0, 8.75, 9.5, 10.25, 11.0];
        assert!(close(&b.data, &want), "{:?}", b.data);
        // nearest with 1.05 (a copy) and 2.05 (a shift) as ATen special-cases them.
        let x = Tensor::f32(&[1, 1, 1, 10], (0..10).map(f64::from).collect());
        let n = upsample_nearest2d(&x, &scales(1.0, 1.05)).unwrap();
        assert_eq!(n.data, x.data);
        let n = upsample_nearest2d(&x, &scales(1.0, 2.05)).unwrap();
        assert_eq!(
            n.data,
            (0..20).map(|i| f64::from(i / 2)).collect::<Vec<_>>()
        );
        assert!(upsample_nearest2d(&x, &scales(1.0, 0.05)).is_err());
        // constant_pad_nd(arange(6.).reshape(2, 3), [1, -1, -1, 1], 9.0).
        let x = Tensor::f32(&[2, 3], (0..6).map(f64::from).collect());
        let p = constant_pad(&x, &[1, -1, -1, 1], 9.0).unwrap();
        assert_eq!(p.sizes, vec![2, 3]);
        assert_eq!(p.data, vec![9.0, 3.0, 4.0, 9.0, 9.0, 9.0]);
        // pixel_shuffle(arange(8.).reshape(1, 8, 1, 1), 2) is arange(8) as [1, 2, 2, 2].
        let x = Tensor::f32(&[1, 8, 1, 1], (0..8).map(f64::from).collect());
        let s = pixel_shuffle(&x, 2).unwrap();
        assert_eq!(s.sizes, vec![1, 2, 2, 2]);
        assert_eq!(s.data, x.data);
    }

    fn expect(e: etvk_runtime::Error, kind: ErrorKind, op: &str, text: &str) {
        assert_eq!(e.kind, kind, "{e}");
        assert!(
            e.message.contains(op) && e.message.contains(text),
            "{e} (expected {op} and {text:?})"
        );
    }

    #[test]
    fn bad_upsamplings_are_refused_at_load() {
        // Both output_size and scale_factors, and neither.
        for both in [true, false] {
            let mut g = CaseGraph::new();
            let xi = g.input(F32, &[1, 1, 4, 4]);
            let (s, f) = if both {
                (g.int_list(&[8, 8]), g.double_list(&[2.0, 2.0]))
            } else {
                (g.null(), g.null())
            };
            let o = g.output(F32, &[1, 1, 8, 8]);
            g.op(NEAREST, &[xi, s, f, o]);
            let e = init_err(g);
            expect(e, ErrorKind::InvalidProgram, NEAREST, "exactly one");
        }
        // Rank 3: PyTorch's upsample_*2d take 4-D inputs only.
        let g = upsample_graph(F32, &[2, 4, 4], &scales(2.0, 2.0), Some(false), &[2, 8, 8]);
        expect(init_err(g), ErrorKind::Unsupported, BILINEAR, "rank 3");
        // Three scale factors; a zero scale; a negative output size.
        let g = upsample_graph(
            F32,
            &[1, 1, 4, 4],
            &Resample::Scales(vec![2.0, 2.0, 2.0]),
            None,
            &[1, 1, 8, 8],
        );
        expect(init_err(g), ErrorKind::InvalidProgram, NEAREST, "2 entries");
        let g = upsample_graph(
            F32,
            &[1, 1, 4, 4],
            &scales(0.0, 2.0),
            Some(true),
            &[1, 1, 8, 8],
        );
        expect(init_err(g), ErrorKind::InvalidProgram, BILINEAR, "> 0");
        let g = upsample_graph(F32, &[1, 1, 4, 4], &size(-1, 2), None, &[1, 1, 8, 8]);
        expect(init_err(g), ErrorKind::InvalidProgram, NEAREST, ">= 1");
        // An input too small for the scale: trunc(1 * 0.5) = 0.
        let g = upsample_graph(F32, &[1, 1, 1, 4], &scales(0.5, 1.0), None, &[1, 1, 1, 4]);
        expect(
            init_err(g),
            ErrorKind::InvalidArgument,
            NEAREST,
            "must be >= 1",
        );
        // int32 data.
        let g = upsample_graph(I32, &[1, 1, 4, 4], &scales(2.0, 2.0), None, &[1, 1, 8, 8]);
        expect(init_err(g), ErrorKind::Unsupported, NEAREST, "int32");
    }

    #[test]
    fn bad_pads_and_shuffles_are_refused_at_load() {
        let g = pad_graph(F32, &[2, 3], &[1, 1, 1], 0.0, &[2, 5]);
        expect(init_err(g), ErrorKind::InvalidProgram, PAD, "even length");
        let g = pad_graph(F32, &[2, 3], &[1, 1, 1, 1, 1, 1], 0.0, &[4, 5]);
        expect(
            init_err(g),
            ErrorKind::InvalidProgram,
            PAD,
            "at most 2 * rank",
        );
        let g = pad_graph(F32, &[2, 3], &[-2, -2], 0.0, &[2, 3]);
        expect(
            init_err(g),
            ErrorKind::InvalidArgument,
            PAD,
            "negative size",
        );
        let g = pad_graph(I32, &[2, 3], &[1, 1], 3e9, &[2, 5]);
        expect(
            init_err(g),
            ErrorKind::Unsupported,
            PAD,
            "does not fit int32",
        );
        let g = shuffle_graph(F32, &[1, 6, 2, 2], 2, &[1, 1, 4, 4]);
        expect(
            init_err(g),
            ErrorKind::InvalidArgument,
            SHUFFLE,
            "not divisible",
        );
        let g = shuffle_graph(F32, &[1, 4, 2, 2], 0, &[1, 4, 2, 2]);
        expect(
            init_err(g),
            ErrorKind::InvalidProgram,
            SHUFFLE,
            "upscale_factor 0",
        );
        let g = shuffle_graph(F32, &[4, 2], 2, &[1, 4]);
        expect(init_err(g), ErrorKind::InvalidProgram, SHUFFLE, "rank >= 3");
    }
}
