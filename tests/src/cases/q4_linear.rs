//! The 4-bit linear family: `et_vk.linear_q4gsw.default` (and its alias
//! `et_vk.q4gsw_linear.default`), `et_vk.linear_q4gsw_backward.default`,
//! `et_vk.linear_qcs4w.default`. The exhaustive shape table, the packers and the limits are
//! tested in `crates/runtime/tests/q4_linear.rs`; these cases give each op static and
//! dynamic coverage through the harness.
//!
//! Argument layouts (exporter order, output last):
//! `linear_q4gsw(x, weights u8 [N, Kp/2] (even k low nibble), scales [G, N'], group_size,
//! bias | Null, out)`, `linear_q4gsw_backward(d_out, weights, scales, group_size, d_x)`,
//! `linear_qcs4w(x, weight u8 [N, ceil(K/2)] (even k high nibble), scales [N], out)`.
//! Codes are uniform in [0, 15] (q = code - 8), scales in [0.005, 0.015].

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32, Uint8 as U8};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::{Rng, Tensor};

const Q4GSW: &str = "et_vk.linear_q4gsw.default";
const Q4GSW_ALIAS: &str = "et_vk.q4gsw_linear.default";
const Q4GSW_BWD: &str = "et_vk.linear_q4gsw_backward.default";
const QCS4W: &str = "et_vk.linear_qcs4w.default";

/// Sums of up to a few hundred products of |x| <= 1 and |w| <= 0.12.
const TOL: Tol = Tol {
    atol: 1e-5,
    rtol: 1e-5,
};

/// fp32 sums, or fp16 storage (inputs rounded, fp32 math, one fp16 rounding of the output).
fn tol_of(dt: DataType) -> Tol {
    if dt == F16 {
        Tol::F16
    } else {
        TOL
    }
}

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    vec![
        q4gsw(F32, Q4GSW, &[3], &[3], 64, 37, 16, true, 1),
        q4gsw(F32, Q4GSW, &[2, 3], &[2], 100, 8, 4, false, 2),
        q4gsw(F32, Q4GSW, &[16], &[16, 1, 5], 96, 40, 32, true, 3),
        q4gsw(F32, Q4GSW_ALIAS, &[1], &[1], 64, 32, 16, false, 4),
        q4gsw(F32, Q4GSW_ALIAS, &[12], &[12, 2, 9], 64, 24, 32, false, 5),
        backward(F32, &[2, 3], &[2], 64, 37, 16, 6),
        backward(F32, &[16], &[16, 1, 6], 96, 40, 32, 7),
        // Rows of >= 128 uvec4 chunks: the wide GEMV at M <= 2 (group in one chunk, groups
        // split inside a chunk, ragged K with scalar x loads).
        q4gsw(F32, Q4GSW, &[2], &[2, 1, 2], 4096, 21, 64, true, 10),
        q4gsw(F32, Q4GSW, &[1], &[1], 4100, 13, 20, false, 11),
        q4gsw(F32, Q4GSW, &[2], &[1, 2], 4097, 9, 16, true, 12),
        qcs4w(F32, &[1], &[1], 63, 37, 8),
        // fp16 activations and outputs (force_fp16 programs): converted around the fp32
        // kernels; GEMV, wide GEMV and tiled paths, the backward and qcs4w.
        q4gsw(F16, Q4GSW, &[9], &[9, 1, 3], 96, 40, 32, true, 14),
        q4gsw(F16, Q4GSW, &[1], &[1], 4096, 12, 64, false, 15),
        // M = 1 with an fp16 output: the half GEMV writes it (`_f16out`), sliced too.
        q4gsw(F16, Q4GSW, &[1], &[1], 8448, 20, 32, true, 41),
        backward(F16, &[9], &[9, 2], 64, 37, 16, 16),
        qcs4w(F16, &[3], &[3, 1], 64, 20, 17),
        qcs4w(F32, &[2], &[2, 1], 4099, 11, 13),
        qcs4w(F32, &[10], &[10, 3, 1], 64, 32, 9),
    ]
}

/// Random codes [n][2 * row_bytes] (columns >= k are 8, as the exporter pads).
fn codes(n: usize, k: usize, row_bytes: usize, rng: &mut Rng) -> Vec<u8> {
    let kp = 2 * row_bytes;
    (0..n * kp)
        .map(|i| {
            if i % kp < k {
                (rng.next_u64() >> 60) as u8
            } else {
                8
            }
        })
        .collect()
}

/// Serialized bytes [n][row_bytes] of `codes`, even k in the high nibble when `even_high`.
fn pack_bytes(codes: &[u8], n: usize, row_bytes: usize, even_high: bool) -> Tensor {
    let mut out = Vec::with_capacity(n * row_bytes);
    for pair in codes.chunks_exact(2) {
        let b = if even_high {
            (pair[0] << 4) | pair[1]
        } else {
            pair[0] | (pair[1] << 4)
        };
        out.push(b as f64);
    }
    Tensor::new(U8, &[n, row_bytes], out)
}

/// x [m][k] @ wd[n][kp]^T (first k columns) + bias.
pub(crate) fn forward_ref(
    x: &Tensor,
    wd: &[f64],
    kp: usize,
    n: usize,
    bias: Option<&Tensor>,
) -> Tensor {
    let k = *x.sizes.last().expect("rank >= 1");
    let m = x.numel() / k;
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let mut acc = bias.map(|b| b.data[j]).unwrap_or(0.0);
            for c in 0..k {
                acc += x.data[i * k + c] * wd[j * kp + c];
            }
            out.push(acc);
        }
    }
    let mut sizes = x.sizes.clone();
    *sizes.last_mut().expect("rank >= 1") = n;
    Tensor::f32(&sizes, out)
}

/// A q4gsw problem: (weights, scales [G, N'], dequantized W [n][kp], kp).
pub(crate) fn q4gsw_problem(
    k: usize,
    n: usize,
    gs: usize,
    seed: u64,
) -> (Tensor, Tensor, Vec<f64>, usize) {
    let mut rng = Rng::new(seed);
    let row_bytes = k.div_ceil(8) * 4;
    let kp = 2 * row_bytes;
    let c = codes(n, k, row_bytes, &mut rng);
    let groups = k.div_ceil(gs);
    let n_pad = n.div_ceil(4) * 4;
    let scales = Tensor::rand_range(F32, &[groups, n_pad], 0.005, 0.015, seed + 1000);
    let mut wd = vec![0f64; n * kp];
    for r in 0..n {
        for col in 0..kp {
            let g = col / gs;
            if g < groups {
                wd[r * kp + col] = (c[r * kp + col] as f64 - 8.0) * scales.data[g * n_pad + r];
            }
        }
    }
    (pack_bytes(&c, n, row_bytes, false), scales, wd, kp)
}

/// Forward q4gsw built at x sizes `lead ++ [k]`; runs at M = each of `ms` (only the first
/// leading dim varies), dynamic when there is more than one run.
#[allow(clippy::too_many_arguments)]
fn q4gsw(
    dt: DataType,
    op: &'static str,
    lead: &[usize],
    ms: &[usize],
    k: usize,
    n: usize,
    gs: usize,
    bias: bool,
    seed: u64,
) -> OpCase {
    let (w, s, wd, kp) = q4gsw_problem(k, n, gs, seed);
    let b = bias.then(|| Tensor::rand(&[n.div_ceil(4) * 4], seed + 2000));
    let mut xs = lead.to_vec();
    xs.push(k);
    let mut os = lead.to_vec();
    os.push(n);
    let mut g = CaseGraph::new();
    let xi = g.input(dt, &xs);
    let wi = g.constant(&w);
    let si = g.constant(&s);
    let gi = g.int(gs as i64);
    let bi = match &b {
        Some(b) => g.constant(b),
        None => g.null(),
    };
    let out = g.output(dt, &os);
    g.op(op, &[xi, wi, si, gi, bi, out]);
    let name = format!("{} x{xs:?} N {n} gs {gs} bias {bias} M {ms:?}", dt.name());
    let mut case = OpCase::new(op, name, g).tol(tol_of(dt));
    if ms.len() > 1 {
        case = case.dynamic();
    }
    for (r, &m) in ms.iter().enumerate() {
        let mut sizes = xs.clone();
        sizes[0] = m;
        let x = Tensor::rand_range(dt, &sizes, -1.0, 1.0, seed + 10 * r as u64);
        let want = forward_ref(&x, &wd, kp, n, b.as_ref());
        let want = Tensor::new(dt, &want.sizes, want.data);
        case = case.run(vec![x], vec![want]);
    }
    case
}

/// Backward built at d_out sizes `lead ++ [n]` -> d_x `lead ++ [Kp]`; runs at M = `ms`.
#[allow(clippy::too_many_arguments)]
fn backward(
    dt: DataType,
    lead: &[usize],
    ms: &[usize],
    k: usize,
    n: usize,
    gs: usize,
    seed: u64,
) -> OpCase {
    let (w, s, wd, kp) = q4gsw_problem(k, n, gs, seed);
    let mut ys = lead.to_vec();
    ys.push(n);
    let mut xs = lead.to_vec();
    xs.push(kp);
    let mut g = CaseGraph::new();
    let yi = g.input(dt, &ys);
    let wi = g.constant(&w);
    let si = g.constant(&s);
    let gi = g.int(gs as i64);
    let out = g.output(dt, &xs);
    g.op(Q4GSW_BWD, &[yi, wi, si, gi, out]);
    let name = format!("{} d_out{ys:?} Kp {kp} gs {gs} M {ms:?}", dt.name());
    let mut case = OpCase::new(Q4GSW_BWD, name, g).tol(tol_of(dt));
    if ms.len() > 1 {
        case = case.dynamic();
    }
    for (r, &m) in ms.iter().enumerate() {
        let mut sizes = ys.clone();
        sizes[0] = m;
        let dy = Tensor::rand_range(dt, &sizes, -1.0, 1.0, seed + 10 * r as u64);
        let rows = dy.numel() / n;
        let mut dx = Vec::with_capacity(rows * kp);
        for i in 0..rows {
            for c in 0..kp {
                dx.push((0..n).map(|j| dy.data[i * n + j] * wd[j * kp + c]).sum());
            }
        }
        let mut out_sizes = sizes.clone();
        *out_sizes.last_mut().expect("rank >= 1") = kp;
        case = case.run(vec![dy], vec![Tensor::new(dt, &out_sizes, dx)]);
    }
    case
}

/// qcs4w built at x sizes `lead ++ [k]`; runs at M = `ms`.
fn qcs4w(dt: DataType, lead: &[usize], ms: &[usize], k: usize, n: usize, seed: u64) -> OpCase {
    let mut rng = Rng::new(seed);
    let row_bytes = k.div_ceil(2);
    let kp = 2 * row_bytes;
    let c = codes(n, k, row_bytes, &mut rng);
    let w = pack_bytes(&c, n, row_bytes, true);
    let s = Tensor::rand_range(F32, &[n], 0.005, 0.015, seed + 1000);
    let wd: Vec<f64> = (0..n * kp)
        .map(|i| (c[i] as f64 - 8.0) * s.data[i / kp])
        .collect();
    let mut xs = lead.to_vec();
    xs.push(k);
    let mut os = lead.to_vec();
    os.push(n);
    let mut g = CaseGraph::new();
    let xi = g.input(dt, &xs);
    let wi = g.constant(&w);
    let si = g.constant(&s);
    let out = g.output(dt, &os);
    g.op(QCS4W, &[xi, wi, si, out]);
    let name = format!("{} x{xs:?} N {n} M {ms:?}", dt.name());
    let mut case = OpCase::new(QCS4W, name, g).tol(tol_of(dt));
    if ms.len() > 1 {
        case = case.dynamic();
    }
    for (r, &m) in ms.iter().enumerate() {
        let mut sizes = xs.clone();
        sizes[0] = m;
        let x = Tensor::rand_range(dt, &sizes, -1.0, 1.0, seed + 10 * r as u64);
        let want = forward_ref(&x, &wd, kp, n, None);
        let want = Tensor::new(dt, &want.sizes, want.data);
        case = case.run(vec![x], vec![want]);
    }
    case
}
