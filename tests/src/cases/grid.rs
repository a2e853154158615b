//! `aten.grid_sampler_2d` (every interpolation and padding mode, both align_corners) and
//! `et_vk.grid_priors` (`ops/grid.rs`). The references are PyTorch's CPU kernel written out:
//! the grid coordinate unnormalized and padded in fp32 as PyTorch computes it, the taps'
//! weighted sum in f64.

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::Tensor;

pub const GRID_SAMPLER: &str = "aten.grid_sampler_2d.default";
pub const GRID_PRIORS: &str = "et_vk.grid_priors.default";

fn unnormalize(v: f32, size: usize, align: bool) -> f32 {
    let s = size as f32;
    if align {
        ((v + 1.0) / 2.0) * (s - 1.0)
    } else {
        ((v + 1.0) * s - 1.0) / 2.0
    }
}

fn clip(v: f32, size: usize) -> f32 {
    (size as f32 - 1.0).min(v.max(0.0))
}

fn reflect(v: f32, twice_low: f32, twice_high: f32) -> f32 {
    if twice_low == twice_high {
        return 0.0;
    }
    let lo = twice_low / 2.0;
    let span = (twice_high - twice_low) / 2.0;
    let a = (v - lo).abs();
    let extra = a % span;
    let flips = (a / span).floor();
    if flips % 2.0 == 0.0 {
        extra + lo
    } else {
        span - extra + lo
    }
}

/// PyTorch's padding of a source coordinate: 0 zeros, 1 border, 2 reflection.
fn pad_coord(v: f32, size: usize, pad: i64, align: bool) -> f32 {
    match pad {
        1 => clip(v, size),
        2 => {
            let s = size as f32;
            let r = if align {
                reflect(v, 0.0, 2.0 * (s - 1.0))
            } else {
                reflect(v, -1.0, 2.0 * s - 1.0)
            };
            clip(r, size)
        }
        _ => v,
    }
}

fn cubic_coeffs(t: f64) -> [f64; 4] {
    let a = -0.75;
    let c1 = |x: f64| ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    let c2 = |x: f64| ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    [c2(t + 1.0), c1(t), c1(1.0 - t), c2(2.0 - t)]
}

/// `grid_sampler_2d(x [N, C, H, W], grid [N, Ho, Wo, 2], mode, padding, align_corners)`.
pub fn grid_sample(x: &Tensor, grid: &Tensor, mode: i64, pad: i64, align: bool) -> Tensor {
    let (n, c, h, w) = (x.sizes[0], x.sizes[1], x.sizes[2], x.sizes[3]);
    let (ho, wo) = (grid.sizes[1], grid.sizes[2]);
    let tap = |plane: usize, xi: i64, yi: i64| -> f64 {
        if xi < 0 || yi < 0 || xi >= w as i64 || yi >= h as i64 {
            0.0
        } else {
            x.data[plane * h * w + yi as usize * w + xi as usize]
        }
    };
    let mut out = Vec::with_capacity(n * c * ho * wo);
    for b in 0..n {
        for ch in 0..c {
            let plane = b * c + ch;
            for oy in 0..ho {
                for ox in 0..wo {
                    let gi = ((b * ho + oy) * wo + ox) * 2;
                    let (gx, gy) = (grid.data[gi] as f32, grid.data[gi + 1] as f32);
                    let v = if mode == 2 {
                        let (ix, iy) = (unnormalize(gx, w, align), unnormalize(gy, h, align));
                        let (x0, y0) = (ix.floor(), iy.floor());
                        let cx = cubic_coeffs(f64::from(ix - x0));
                        let cy = cubic_coeffs(f64::from(iy - y0));
                        let mut acc = 0.0;
                        for (j, wy) in cy.iter().enumerate() {
                            for (k, wx) in cx.iter().enumerate() {
                                let px = pad_coord(x0 - 1.0 + k as f32, w, pad, align);
                                let py = pad_coord(y0 - 1.0 + j as f32, h, pad, align);
                                acc += wy * wx * tap(plane, px.floor() as i64, py.floor() as i64);
                            }
                        }
                        acc
                    } else {
                        let ix = pad_coord(unnormalize(gx, w, align), w, pad, align);
                        let iy = pad_coord(unnormalize(gy, h, align), h, pad, align);
                        if mode == 1 {
                            tap(
                                plane,
                                ix.round_ties_even() as i64,
                                iy.round_ties_even() as i64,
                            )
                        } else {
                            let (x0, y0) = (ix.floor(), iy.floor());
                            let (tx, ty) = (f64::from(ix - x0), f64::from(iy - y0));
                            let (xi, yi) = (x0 as i64, y0 as i64);
                            tap(plane, xi, yi) * (1.0 - tx) * (1.0 - ty)
                                + tap(plane, xi + 1, yi) * tx * (1.0 - ty)
                                + tap(plane, xi, yi + 1) * (1.0 - tx) * ty
                                + tap(plane, xi + 1, yi + 1) * tx * ty
                        }
                    };
                    out.push(v);
                }
            }
        }
    }
    Tensor::new(x.dtype, &[n, c, ho, wo], out)
}

/// `grid_priors` of an input with last dims `(h, w)`: `[h w, 2]` in fp32.
pub fn grid_priors(h: usize, w: usize, stride: i64, offset: f64) -> Vec<f64> {
    let (s, o) = (stride as f32, offset as f32);
    let mut out = Vec::with_capacity(h * w * 2);
    for y in 0..h {
        for x in 0..w {
            out.push(f64::from((x as f32 + o) * s));
            out.push(f64::from((y as f32 + o) * s));
        }
    }
    out
}

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = Vec::new();
    let mut seed = 14000;
    for mode in 0..3 {
        for pad in 0..3 {
            for align in [false, true] {
                seed += 1;
                v.push(sampler(
                    F32,
                    [2, 3, 5, 7],
                    [4, 6],
                    (mode, pad, align),
                    &[2],
                    seed,
                ));
            }
        }
    }
    // fp16, and a dynamic case whose output grid and batch change.
    v.push(sampler(
        F16,
        [1, 2, 4, 4],
        [3, 5],
        (0, 1, true),
        &[1],
        14100,
    ));
    v.push(sampler(
        F32,
        [2, 2, 6, 5],
        [4, 4],
        (0, 0, false),
        &[2, 1, 2],
        14101,
    ));
    v.extend([
        priors(F32, &[1, 8, 5, 7], 8, 0.5, &[5, 7]),
        priors(F32, &[6, 4], 16, 0.0, &[6, 4]),
        priors(F16, &[1, 3, 4], 32, 0.5, &[3, 4]),
    ]);
    v.push(priors_dynamic());
    v
}

/// grid_sampler_2d built at x `[N, C, H, W]` and grid `[N, Ho, Wo, 2]` (`o`), run with batch
/// sizes `ns` (the grid's Ho / Wo shrinking with the run index).
fn sampler(
    dt: DataType,
    xs: [usize; 4],
    o: [usize; 2],
    (mode, pad, align): (i64, i64, bool),
    ns: &[usize],
    seed: u64,
) -> OpCase {
    let mut g = CaseGraph::new();
    let x = g.input(dt, &xs);
    let gr = g.input(dt, &[xs[0], o[0], o[1], 2]);
    let (m, p, a) = (g.int(mode), g.int(pad), g.bool(align));
    let out = g.output(dt, &[xs[0], xs[1], o[0], o[1]]);
    g.op(GRID_SAMPLER, &[x, gr, m, p, a, out]);
    let name = format!(
        "{} x{xs:?} out {o:?} mode {mode} padding {pad} align {align} N {ns:?}",
        dt.name()
    );
    let tol = if dt == F16 { Tol::F16 } else { Tol::F32 };
    let mut case = OpCase::new(GRID_SAMPLER, name, g).tol(tol);
    if ns.len() > 1 {
        case = case.dynamic();
    }
    for (r, &n) in ns.iter().enumerate() {
        let sizes = [n, xs[1], xs[2], xs[3]];
        let (ho, wo) = (o[0] - r.min(o[0] - 1), o[1]);
        let xt = Tensor::rand_range(dt, &sizes, -2.0, 2.0, seed * 10 + r as u64);
        // Past both ends of [-1, 1], so every padding mode matters.
        let grid = Tensor::rand_range(dt, &[n, ho, wo, 2], -1.4, 1.4, seed * 10 + 5 + r as u64);
        let want = grid_sample(&xt, &grid, mode, pad, align);
        case = case.run(vec![xt, grid], vec![want]);
    }
    case
}

fn priors_graph(dt: DataType, xs: &[usize], stride: i64, offset: f64) -> CaseGraph {
    let mut g = CaseGraph::new();
    let x = g.input(F32, xs);
    let (s, o) = (g.int(stride), g.double(offset));
    let (h, w) = (xs[xs.len() - 2], xs[xs.len() - 1]);
    let out = g.output(dt, &[h * w, 2]);
    g.op(GRID_PRIORS, &[x, s, o, out]);
    g
}

fn priors(dt: DataType, xs: &[usize], stride: i64, offset: f64, hw: &[usize]) -> OpCase {
    let g = priors_graph(dt, xs, stride, offset);
    let name = format!("{} x{xs:?} stride {stride} offset {offset}", dt.name());
    let x = Tensor::rand(xs, 14200);
    let want = Tensor::new(
        dt,
        &[hw[0] * hw[1], 2],
        grid_priors(hw[0], hw[1], stride, offset),
    );
    OpCase::new(GRID_PRIORS, name, g)
        .tol(Tol::EXACT)
        .run(vec![x], vec![want])
}

fn priors_dynamic() -> OpCase {
    let g = priors_graph(F32, &[1, 2, 6, 8], 4, 0.5);
    let mut case = OpCase::new(GRID_PRIORS, "dynamic x [1, 2, <=6, <=8]", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (r, (h, w)) in [(6, 8), (2, 3), (5, 8)].into_iter().enumerate() {
        let x = Tensor::rand(&[1, 2, h, w], 14300 + r as u64);
        let want = Tensor::f32(&[h * w, 2], grid_priors(h, w, 4, 0.5));
        case = case.run(vec![x], vec![want]);
    }
    case
}
