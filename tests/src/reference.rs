//! CPU references in f64, written from the ATen semantics (not from the shaders).
//!
//! Results are returned in the output dtype's values (rounded once at the end by
//! [`Tensor::new`]), so a reference is "the exact result, rounded to the output dtype".

use etvk_format::ir::DataType;

use crate::tensor::{numel, strides, unravel, Tensor};

/// `a[M, K] @ b[K, N]` on flat row-major slices.
pub fn matmul(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
        }
    }
    out
}

/// Transpose of a row-major `[r, c]` matrix.
pub fn transpose2(a: &[f64], r: usize, c: usize) -> Vec<f64> {
    let mut out = vec![0.0; r * c];
    for i in 0..r {
        for j in 0..c {
            out[j * r + i] = a[i * c + j];
        }
    }
    out
}

/// `aten.linear`: `x[..., K] @ w[N, K]^T + bias[N]`.
pub fn linear(x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> Tensor {
    let (n, k) = (w.sizes[0], w.sizes[1]);
    assert_eq!(
        x.sizes.last(),
        Some(&k),
        "linear: x {:?} w {:?}",
        x.sizes,
        w.sizes
    );
    let m = x.numel() / k;
    let mut out = matmul(&x.data, &transpose2(&w.data, n, k), m, k, n);
    if let Some(b) = bias {
        for (i, v) in out.iter_mut().enumerate() {
            *v += b.data[i % n];
        }
    }
    let mut sizes = x.sizes.clone();
    *sizes.last_mut().expect("rank >= 1") = n;
    Tensor::new(x.dtype, &sizes, out)
}

/// `aten.mm`: `a[M, K] @ b[K, N]`.
pub fn mm(a: &Tensor, b: &Tensor) -> Tensor {
    let (m, k, n) = (a.sizes[0], a.sizes[1], b.sizes[1]);
    assert_eq!(b.sizes[0], k, "mm: a {:?} b {:?}", a.sizes, b.sizes);
    Tensor::new(a.dtype, &[m, n], matmul(&a.data, &b.data, m, k, n))
}

/// `aten.bmm`: `a[B, M, K] @ b[B, K, N]`.
pub fn bmm(a: &Tensor, b: &Tensor) -> Tensor {
    let (bt, m, k, n) = (a.sizes[0], a.sizes[1], a.sizes[2], b.sizes[2]);
    assert_eq!(
        &b.sizes[..2],
        &[bt, k],
        "bmm: a {:?} b {:?}",
        a.sizes,
        b.sizes
    );
    let mut out = Vec::with_capacity(bt * m * n);
    for i in 0..bt {
        out.extend(matmul(
            &a.data[i * m * k..(i + 1) * m * k],
            &b.data[i * k * n..(i + 1) * k * n],
            m,
            k,
            n,
        ));
    }
    Tensor::new(a.dtype, &[bt, m, n], out)
}

/// `aten.addmm`: `beta * self + alpha * (mat1 @ mat2)`, `self` broadcast to `[M, N]`.
pub fn addmm(bias: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: f64, alpha: f64) -> Tensor {
    let (m, k, n) = (mat1.sizes[0], mat1.sizes[1], mat2.sizes[1]);
    assert_eq!(
        mat2.sizes[0], k,
        "addmm: mat1 {:?} mat2 {:?}",
        mat1.sizes, mat2.sizes
    );
    // Stay in f64 until the end: the product is not rounded to the output dtype on its own.
    let prod = Tensor {
        dtype: DataType::Float64,
        sizes: vec![m, n],
        data: matmul(&mat1.data, &mat2.data, m, k, n),
    };
    let bias64 = Tensor {
        dtype: DataType::Float64,
        ..bias.clone()
    };
    let out = broadcast_binary(&bias64, &prod, |s, p| beta * s + alpha * p);
    assert_eq!(
        out.sizes,
        vec![m, n],
        "addmm: self {:?} does not broadcast to [{m}, {n}]",
        bias.sizes
    );
    Tensor::new(mat1.dtype, &out.sizes, out.data)
}

/// PyTorch broadcast of two shapes (right-aligned; sizes equal or 1).
///
/// # Panics
/// If the shapes do not broadcast (a bug in a case).
pub fn broadcast_shape(a: &[usize], b: &[usize]) -> Vec<usize> {
    let r = a.len().max(b.len());
    (0..r)
        .map(|i| {
            let da = if i + a.len() >= r {
                a[i + a.len() - r]
            } else {
                1
            };
            let db = if i + b.len() >= r {
                b[i + b.len() - r]
            } else {
                1
            };
            match (da, db) {
                (x, y) if x == y => x,
                (1, y) => y,
                (x, 1) => x,
                _ => panic!("shapes {a:?} and {b:?} do not broadcast"),
            }
        })
        .collect()
}

/// Element of `t` at output multi-index `idx` of a broadcast result.
fn broadcast_get(t: &Tensor, idx: &[usize]) -> f64 {
    let st = strides(&t.sizes);
    let off = idx.len() - t.sizes.len();
    let flat: usize = t
        .sizes
        .iter()
        .enumerate()
        .map(|(d, &s)| if s == 1 { 0 } else { idx[off + d] * st[d] })
        .sum();
    t.data[flat]
}

/// Elementwise `f(a, b)` with PyTorch broadcasting; the result has `a`'s dtype.
pub fn broadcast_binary(a: &Tensor, b: &Tensor, f: impl Fn(f64, f64) -> f64) -> Tensor {
    let sizes = broadcast_shape(&a.sizes, &b.sizes);
    let data = (0..numel(&sizes))
        .map(|i| {
            let idx = unravel(i, &sizes);
            f(broadcast_get(a, &idx), broadcast_get(b, &idx))
        })
        .collect();
    Tensor::new(a.dtype, &sizes, data)
}

/// Elementwise `f(x)`.
pub fn unary(x: &Tensor, f: impl Fn(f64) -> f64) -> Tensor {
    Tensor::new(x.dtype, &x.sizes, x.data.iter().map(|&v| f(v)).collect())
}

/// The logistic function.
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `aten.permute_copy`: `out.sizes[i] = x.sizes[dims[i]]` (negative dims count from the end).
pub fn permute(x: &Tensor, dims: &[i64]) -> Tensor {
    let r = x.sizes.len();
    let dims: Vec<usize> = dims
        .iter()
        .map(|&d| {
            if d < 0 {
                (d + r as i64) as usize
            } else {
                d as usize
            }
        })
        .collect();
    let sizes: Vec<usize> = dims.iter().map(|&d| x.sizes[d]).collect();
    let st = strides(&x.sizes);
    let data = (0..x.numel())
        .map(|i| {
            let idx = unravel(i, &sizes);
            let src: usize = idx.iter().zip(&dims).map(|(&v, &d)| v * st[d]).sum();
            x.data[src]
        })
        .collect();
    Tensor::new(x.dtype, &sizes, data)
}

/// `aten.view_copy` sizes with at most one `-1` resolved against `numel`.
///
/// # Panics
/// If the sizes do not fit `numel` (a bug in a case).
pub fn view_sizes(sizes: &[i64], numel: usize) -> Vec<usize> {
    let known: usize = sizes
        .iter()
        .filter(|&&s| s >= 0)
        .map(|&s| s as usize)
        .product();
    sizes
        .iter()
        .map(|&s| {
            if s < 0 {
                assert!(
                    known > 0 && numel.is_multiple_of(known),
                    "view {sizes:?} of {numel}"
                );
                numel / known
            } else {
                s as usize
            }
        })
        .collect()
}

/// torchao's `choose_qparams_affine` for one row of fp32 values, computed in fp32 step by
/// step as PyTorch does for fp32 input: `(scale, zero_point)` for `mapping`
/// (`ASYMMETRIC`, `SYMMETRIC`, `SYMMETRIC_NO_CLIPPING_ERR`) over `[qmin, qmax]`.
pub fn torchao_qparams(
    row: &[f32],
    mapping: &str,
    (qmin, qmax): (i64, i64),
    eps: f32,
) -> (f32, f32) {
    let lo = row.iter().copied().fold(f32::INFINITY, f32::min).min(0.0);
    let hi = row
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, f32::max)
        .max(0.0);
    let (fmin, fmax) = (qmin as f32, qmax as f32);
    // Python's int((qmax + qmin + 1) / 2).
    let sym_zp = ((qmax + qmin + 1) as f64 / 2.0).trunc() as f32;
    match mapping {
        "SYMMETRIC" => (((-lo).max(hi) / ((fmax - fmin) / 2.0)).max(eps), sym_zp),
        "SYMMETRIC_NO_CLIPPING_ERR" => {
            let (smin, smax) = (lo / fmin, hi / fmax);
            ((if smin > smax { smin } else { smax }).max(eps), sym_zp)
        }
        _ => {
            let scale = ((hi - lo) / (fmax - fmin)).max(eps);
            let zp = (fmin - (lo / scale).round_ties_even()).clamp(fmin, fmax);
            (scale, zp)
        }
    }
}

/// torchao's `quantize_affine` then `dequantize_affine` of `v` to int8 in fp32:
/// `clamp(round(v * (1 / scale)) + zp, -128, 127)`, then `(q - zp) * scale`.
pub fn torchao_int8_fake_quant(v: f32, scale: f32, zp: f32) -> f32 {
    let q = ((v * (1.0f32 / scale)).round_ties_even() + zp).clamp(-128.0, 127.0);
    (q - zp) * scale
}

/// Layer norm of `rows` rows of `n` values (biased variance), optional `weight` / `bias`
/// over the row: `(out, mean per row, rstd per row)`, in f64.
pub fn layer_norm_rows(
    x: &[f64],
    n: usize,
    weight: Option<&[f64]>,
    bias: Option<&[f64]>,
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let rows = x.len().checked_div(n).unwrap_or(0);
    let mut out = Vec::with_capacity(rows * n);
    let (mut means, mut rstds) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for row in x.chunks_exact(n.max(1)).take(rows) {
        let mean = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        for (j, v) in row.iter().enumerate() {
            let mut y = (v - mean) * rstd;
            if let Some(w) = weight {
                y *= w[j];
            }
            if let Some(b) = bias {
                y += b[j];
            }
            out.push(y);
        }
        means.push(mean);
        rstds.push(rstd);
    }
    (out, means, rstds)
}

/// The arguments of a convolution (`aten.convolution`), per spatial dim (1 or 2 of them).
#[derive(Debug, Clone)]
pub struct ConvParams {
    /// Stride per spatial dim.
    pub stride: Vec<usize>,
    /// Zero padding per spatial dim (both sides).
    pub padding: Vec<usize>,
    /// Dilation per spatial dim.
    pub dilation: Vec<usize>,
    /// Transposed convolution (weight `[C_in, C_out / groups, k...]`).
    pub transposed: bool,
    /// Extra output size of a transposed convolution, per spatial dim.
    pub output_padding: Vec<usize>,
    /// Channel groups.
    pub groups: usize,
}

/// Convolution of `x [N, C_in, spatial...]` (1 or 2 spatial dims) in f64, from the
/// definition: every output element sums input * weight over the taps that land inside the
/// input. Transposed convolutions scatter each input element instead (the adjoint), which is
/// a different loop from the gather the GPU kernel does. Then clamped to `clamp`.
pub fn conv(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    p: &ConvParams,
    clamp: (f64, f64),
    out_dtype: DataType,
) -> Tensor {
    let sd = x.sizes.len() - 2;
    // View 1-D as 2-D with height 1; a single-entry list applies to every spatial dim.
    let lift = |v: &[usize], unit: usize| -> [usize; 2] {
        match (sd, v) {
            (1, [a]) => [unit, *a],
            (_, [a]) => [*a, *a],
            (_, v) => [v[0], v[1]],
        }
    };
    let (n, c_in) = (x.sizes[0], x.sizes[1]);
    let [h, wd] = lift(&x.sizes[2..], 1);
    let [kh, kw] = lift(&w.sizes[2..], 1);
    let [sh, sw] = lift(&p.stride, 1);
    let [ph, pw] = lift(&p.padding, 0);
    let [dh, dw] = lift(&p.dilation, 1);
    let [oph, opw] = lift(&p.output_padding, 0);
    let g = p.groups;
    let (c_out, oh, ow) = if p.transposed {
        let ext = |i: usize, s: usize, pd: usize, d: usize, k: usize, op: usize| {
            (i - 1) * s + d * (k - 1) + op + 1 - 2 * pd
        };
        (
            w.sizes[1] * g,
            ext(h, sh, ph, dh, kh, oph),
            ext(wd, sw, pw, dw, kw, opw),
        )
    } else {
        let ext = |i: usize, s: usize, pd: usize, d: usize, k: usize| {
            (i + 2 * pd - d * (k - 1) - 1) / s + 1
        };
        (w.sizes[0], ext(h, sh, ph, dh, kh), ext(wd, sw, pw, dw, kw))
    };
    let (cin_g, cout_g) = (c_in / g, c_out / g);
    let mut out = vec![0.0; n * c_out * oh * ow];
    let xi = |b: usize, c: usize, y: usize, z: usize| x.data[((b * c_in + c) * h + y) * wd + z];
    let wi =
        |a: usize, b: usize, y: usize, z: usize| w.data[((a * w.sizes[1] + b) * kh + y) * kw + z];
    for b in 0..n {
        for gi in 0..g {
            for ci in 0..cin_g {
                let c = gi * cin_g + ci;
                for co in 0..cout_g {
                    let o = gi * cout_g + co;
                    for y in 0..kh {
                        for z in 0..kw {
                            if p.transposed {
                                // Input (iy, iz) lands on output iy * s - p + tap * d.
                                for iy in 0..h {
                                    let ty = (iy * sh + y * dh) as i64 - ph as i64;
                                    if ty < 0 || ty >= oh as i64 {
                                        continue;
                                    }
                                    for iz in 0..wd {
                                        let tz = (iz * sw + z * dw) as i64 - pw as i64;
                                        if tz < 0 || tz >= ow as i64 {
                                            continue;
                                        }
                                        let at =
                                            ((b * c_out + o) * oh + ty as usize) * ow + tz as usize;
                                        out[at] += xi(b, c, iy, iz) * wi(c, co, y, z);
                                    }
                                }
                            } else {
                                for oy in 0..oh {
                                    let iy = (oy * sh + y * dh) as i64 - ph as i64;
                                    if iy < 0 || iy >= h as i64 {
                                        continue;
                                    }
                                    for oz in 0..ow {
                                        let iz = (oz * sw + z * dw) as i64 - pw as i64;
                                        if iz < 0 || iz >= wd as i64 {
                                            continue;
                                        }
                                        let at = ((b * c_out + o) * oh + oy) * ow + oz;
                                        out[at] +=
                                            xi(b, c, iy as usize, iz as usize) * wi(o, ci, y, z);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for (i, v) in out.iter_mut().enumerate() {
        let o = (i / (oh * ow)) % c_out;
        *v += bias.map_or(0.0, |t| t.data[o]);
        *v = v.max(clamp.0).min(clamp.1);
    }
    let mut sizes = vec![n, c_out];
    if sd == 2 {
        sizes.push(oh);
    }
    sizes.push(ow);
    Tensor::new(out_dtype, &sizes, out)
}

/// Inference batch norm over dim 1 of `x [N, C, ...]` with running statistics, in f64.
pub fn batch_norm(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    mean: &Tensor,
    var: &Tensor,
    eps: f64,
) -> Tensor {
    let c = x.sizes[1];
    let inner: usize = x.sizes[2..].iter().product();
    let data = x
        .data
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let ch = (i / inner.max(1)) % c;
            let y = (v - mean.data[ch]) / (var.data[ch] + eps).sqrt();
            y * w.map_or(1.0, |t| t.data[ch]) + b.map_or(0.0, |t| t.data[ch])
        })
        .collect();
    Tensor::new(x.dtype, &x.sizes, data)
}
