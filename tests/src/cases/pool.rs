//! 2-D pooling: `aten.max_pool2d_with_indices.default(x, kernel_size, stride, padding,
//! dilation, ceil_mode, out ValueList(values, indices int32))` and
//! `aten.avg_pool2d.default(x, kernel_size, stride, padding, ceil_mode, count_include_pad,
//! divisor_override Int|None, out)`, as executorch 1.5.1 exports them (IntLists of 1 or 2
//! entries, an empty stride meaning the kernel size), checked against f64 references written
//! from PyTorch's definitions. The reference interpreter uses the same functions. Also
//! `aten.max_pool2d.default(x, kernel_size, stride, padding, dilation, ceil_mode, out)`, the
//! values alone (registered by the Vulkan partitioner, decomposed by the exporter; the
//! argument list is its serializer's with the op kept).

use etvk_format::ir::DataType::{self, Float16 as F16, Float32 as F32, Int32 as I32};

use crate::case::{CaseGraph, OpCase};
use crate::compare::Tol;
use crate::tensor::{round_to, Tensor};

const MAX_POOL: &str = "aten.max_pool2d_with_indices.default";
const AVG_POOL: &str = "aten.avg_pool2d.default";
const MAX_POOL_VALUES: &str = "aten.max_pool2d.default";

/// Window parameters, (h, w) pairs, as PyTorch's pooling functions take them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Pool {
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    pub pad: [usize; 2],
    pub dilation: [usize; 2],
    pub ceil_mode: bool,
    /// avg_pool2d only.
    pub count_include_pad: bool,
    /// avg_pool2d only.
    pub divisor: Option<i64>,
}

/// A 1- or 2-entry list as a pair; an empty list gives `empty` (the stride's default).
pub(crate) fn pool_pair(l: &[i64], empty: Option<[usize; 2]>) -> Option<[usize; 2]> {
    let u = |x: i64| usize::try_from(x).ok();
    match l {
        [x] => Some([u(*x)?, u(*x)?]),
        [h, w] => Some([u(*h)?, u(*w)?]),
        [] => empty,
        _ => None,
    }
}

/// PyTorch's `pooling_output_shape`: `floor` (or `ceil`) of
/// `(in + 2 pad - dilation (k - 1) - 1) / stride + 1`; with ceil_mode, a last window starting
/// at or past `in + pad` is dropped. `None` below 1.
pub(crate) fn pool_out_size(
    input: usize,
    k: usize,
    pad: usize,
    stride: usize,
    dilation: usize,
    ceil: bool,
) -> Option<usize> {
    // i128: graphs may carry any i64 window parameters.
    let w = |x: usize| x as i128;
    let span = w(input) + 2 * w(pad) - (w(dilation) * (w(k) - 1) + 1);
    if span < 0 || stride == 0 {
        return None;
    }
    let s = w(stride);
    let mut o = if ceil { (span + s - 1) / s } else { span / s } + 1;
    if ceil && (o - 1) * s >= w(input) + w(pad) {
        o -= 1;
    }
    usize::try_from(o).ok().filter(|&o| o >= 1)
}

/// Output sizes for `x` (rank 3 or 4), or an error.
fn out_sizes(x: &[usize], p: &Pool) -> Result<Vec<usize>, String> {
    let r = x.len();
    if r != 3 && r != 4 {
        return Err(format!("pooling input of rank {r} (3 or 4 expected)"));
    }
    if [p.kernel, p.stride, p.dilation]
        .iter()
        .any(|v| v.contains(&0))
    {
        return Err(format!(
            "pooling with a zero kernel, stride or dilation: {p:?}"
        ));
    }
    if p.pad[0] > p.kernel[0] / 2 || p.pad[1] > p.kernel[1] / 2 {
        return Err(format!(
            "padding {:?} beyond half the kernel {:?}",
            p.pad, p.kernel
        ));
    }
    let mut od = x.to_vec();
    for a in 0..2 {
        od[r - 2 + a] = pool_out_size(
            x[r - 2 + a],
            p.kernel[a],
            p.pad[a],
            p.stride[a],
            p.dilation[a],
            p.ceil_mode,
        )
        .ok_or_else(|| format!("pooling {x:?} with {p:?} leaves an empty output"))?;
    }
    Ok(od)
}

/// Input positions along one axis of output position `o`: `o * stride - pad + j * dilation`
/// for `j < k`, as (offset, in range).
fn taps(
    o: usize,
    k: usize,
    stride: usize,
    pad: usize,
    dilation: usize,
    n: usize,
) -> Vec<(i64, bool)> {
    (0..k)
        .map(|j| {
            let at = (o * stride + j * dilation) as i64 - pad as i64;
            (at, at >= 0 && at < n as i64)
        })
        .collect()
}

/// max_pool2d_with_indices in f64: (values, flat `h * W + w` indices). The max starts at
/// -inf with the first non-negative tap's index (PyTorch's CPU kernel; it stays there when
/// nothing in the window beats -inf); `v > max || isnan(v)` replaces it.
pub(crate) fn max_pool2d(x: &Tensor, p: &Pool) -> Result<(Tensor, Tensor), String> {
    let od = out_sizes(&x.sizes, p)?;
    let r = x.sizes.len();
    let (h, w) = (x.sizes[r - 2], x.sizes[r - 1]);
    let (oh, ow) = (od[r - 2], od[r - 1]);
    let planes: usize = x.sizes[..r - 2].iter().product();
    let (mut vals, mut idxs) = (Vec::new(), Vec::new());
    for pl in 0..planes {
        let plane = &x.data[pl * h * w..(pl + 1) * h * w];
        for i in 0..oh {
            let th = taps(i, p.kernel[0], p.stride[0], p.pad[0], p.dilation[0], h);
            for j in 0..ow {
                let tw = taps(j, p.kernel[1], p.stride[1], p.pad[1], p.dilation[1], w);
                let first =
                    |t: &[(i64, bool)]| t.iter().map(|&(a, _)| a).find(|&a| a >= 0).unwrap_or(0);
                let mut best = first(&th) * w as i64 + first(&tw);
                let mut m = f64::NEG_INFINITY;
                for &(a, ina) in &th {
                    for &(b, inb) in &tw {
                        if !(ina && inb) {
                            continue;
                        }
                        let at = a * w as i64 + b;
                        let v = plane[at as usize];
                        if v > m || v.is_nan() {
                            m = v;
                            best = at;
                        }
                    }
                }
                vals.push(m);
                idxs.push(best as f64);
            }
        }
    }
    Ok((Tensor::new(x.dtype, &od, vals), Tensor::new(I32, &od, idxs)))
}

/// avg_pool2d in f64: the sum over the window clipped to the input, divided by
/// divisor_override, or the window area clipped to the padded input (count_include_pad), or
/// the number of input elements summed. A window entirely in the padding gives 0.
pub(crate) fn avg_pool2d(x: &Tensor, p: &Pool) -> Result<Tensor, String> {
    let od = out_sizes(&x.sizes, p)?;
    if p.divisor == Some(0) {
        return Err("divisor_override 0".into());
    }
    let r = x.sizes.len();
    let (h, w) = (x.sizes[r - 2], x.sizes[r - 1]);
    let (oh, ow) = (od[r - 2], od[r - 1]);
    let planes: usize = x.sizes[..r - 2].iter().product();
    let mut out = Vec::new();
    for pl in 0..planes {
        let plane = &x.data[pl * h * w..(pl + 1) * h * w];
        for i in 0..oh {
            let th = taps(i, p.kernel[0], p.stride[0], p.pad[0], 1, h);
            // Taps past the right padding do not count toward the padded area.
            let ph = th
                .iter()
                .filter(|&&(a, _)| a < (h + p.pad[0]) as i64)
                .count();
            for j in 0..ow {
                let tw = taps(j, p.kernel[1], p.stride[1], p.pad[1], 1, w);
                let pw = tw
                    .iter()
                    .filter(|&&(b, _)| b < (w + p.pad[1]) as i64)
                    .count();
                let mut sum = 0.0;
                let mut n = 0usize;
                for &(a, ina) in &th {
                    for &(b, inb) in &tw {
                        if ina && inb {
                            sum += plane[a as usize * w + b as usize];
                            n += 1;
                        }
                    }
                }
                out.push(if n == 0 {
                    0.0
                } else {
                    let div = match p.divisor {
                        Some(d) => d as f64,
                        None if p.count_include_pad => (ph * pw) as f64,
                        None => n as f64,
                    };
                    sum / div
                });
            }
        }
    }
    Ok(Tensor::new(x.dtype, &od, out))
}

/// Every case of the family.
pub fn cases() -> Vec<OpCase> {
    let mut v = max_pool_cases();
    v.extend(avg_pool_cases());
    v.extend(max_pool_values_cases());
    v
}

/// How the lists are written: `kernel`, `stride` (empty = kernel), `padding`, `dilation`.
struct Lists {
    kernel: Vec<i64>,
    stride: Vec<i64>,
    pad: Vec<i64>,
    dilation: Vec<i64>,
}

fn lists(k: &[i64], s: &[i64], p: &[i64], d: &[i64]) -> Lists {
    Lists {
        kernel: k.to_vec(),
        stride: s.to_vec(),
        pad: p.to_vec(),
        dilation: d.to_vec(),
    }
}

impl Lists {
    fn pool(&self, ceil_mode: bool, count_include_pad: bool, divisor: Option<i64>) -> Pool {
        let kernel = pool_pair(&self.kernel, None).expect("kernel");
        Pool {
            kernel,
            stride: pool_pair(&self.stride, Some(kernel)).expect("stride"),
            pad: pool_pair(&self.pad, None).expect("padding"),
            dilation: pool_pair(&self.dilation, None).expect("dilation"),
            ceil_mode,
            count_include_pad,
            divisor,
        }
    }

    fn label(&self) -> String {
        format!(
            "k {:?} s {:?} p {:?} d {:?}",
            self.kernel, self.stride, self.pad, self.dilation
        )
    }
}

/// Inputs on a coarse grid (ties are common), in the graph's dtype.
fn pool_input(dt: DataType, sizes: &[usize], seed: u64) -> Tensor {
    let mut x = Tensor::rand_range(dt, sizes, -4.0, 4.0, seed);
    for v in &mut x.data {
        *v = round_to(dt, (*v * 4.0).round() / 4.0);
    }
    x
}

fn max_graph(
    dt: DataType,
    x_max: &[usize],
    l: &Lists,
    ceil_mode: bool,
    out_max: &[usize],
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let k = g.int_list(&l.kernel);
    let s = g.int_list(&l.stride);
    let p = g.int_list(&l.pad);
    let d = g.int_list(&l.dilation);
    let c = g.bool(ceil_mode);
    let o = g.output(dt, out_max);
    let i = g.output(I32, out_max);
    let outs = g.value_list(&[o, i]);
    g.op(MAX_POOL, &[xi, k, s, p, d, c, outs]);
    g
}

fn max_case(dt: DataType, sizes: &[usize], l: Lists, ceil_mode: bool, seed: u64) -> OpCase {
    max_case_with(pool_input(dt, sizes, seed), l, ceil_mode, "")
}

fn max_case_with(x: Tensor, l: Lists, ceil_mode: bool, tag: &str) -> OpCase {
    let p = l.pool(ceil_mode, false, None);
    let (vals, idx) = max_pool2d(&x, &p).expect("valid max pool case");
    let g = max_graph(x.dtype, &x.sizes, &l, ceil_mode, &vals.sizes);
    OpCase::new(
        MAX_POOL,
        format!(
            "{} {:?} {} ceil {ceil_mode}{tag}",
            x.dtype.name(),
            x.sizes,
            l.label()
        ),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![x], vec![vals, idx])
}

fn max_pool_cases() -> Vec<OpCase> {
    let mut v = vec![
        // resnet18 / shufflenet's stem pool.
        max_case(
            F32,
            &[1, 4, 9, 9],
            lists(&[3, 3], &[2, 2], &[1, 1], &[1, 1]),
            false,
            9000,
        ),
        max_case(
            F32,
            &[2, 3, 10, 10],
            lists(&[3, 3], &[2, 2], &[1, 1], &[2, 2]),
            true,
            9001,
        ),
        max_case(
            F32,
            &[2, 3, 10, 10],
            lists(&[3, 3], &[2, 2], &[1, 1], &[2, 2]),
            false,
            9002,
        ),
        // Rank 3, default stride (an empty list), as nn.MaxPool2d(2) exports.
        max_case(
            F32,
            &[3, 7, 8],
            lists(&[2, 2], &[], &[0, 0], &[1, 1]),
            false,
            9003,
        ),
        max_case(
            F32,
            &[3, 7, 8],
            lists(&[2, 2], &[], &[0, 0], &[1, 1]),
            true,
            9004,
        ),
        // Rectangular everything; one-entry lists.
        max_case(
            F32,
            &[1, 2, 11, 7],
            lists(&[3, 2], &[2, 1], &[1, 0], &[1, 2]),
            true,
            9005,
        ),
        max_case(
            F32,
            &[1, 3, 6, 7],
            lists(&[3], &[1], &[1], &[1]),
            false,
            9006,
        ),
        // ceil_mode drops the window that would start in the right padding (5 -> 3, not 4).
        max_case(
            F32,
            &[1, 2, 5, 5],
            lists(&[2, 2], &[2, 2], &[1, 1], &[1, 1]),
            true,
            9007,
        ),
        max_case(
            F32,
            &[1, 1, 13, 1],
            lists(&[5, 1], &[3, 1], &[2, 0], &[1, 1]),
            true,
            9008,
        ),
        max_case(
            F32,
            &[1, 1, 1, 1],
            lists(&[1, 1], &[1, 1], &[0, 0], &[1, 1]),
            false,
            9009,
        ),
        max_case(
            F32,
            &[1, 5, 17, 19],
            lists(&[4, 3], &[3, 3], &[2, 1], &[2, 3]),
            true,
            9010,
        ),
        max_case(
            F16,
            &[1, 3, 9, 11],
            lists(&[3, 3], &[2, 2], &[1, 1], &[1, 1]),
            true,
            9011,
        ),
        max_case(
            F16,
            &[2, 8, 8],
            lists(&[2, 2], &[2, 2], &[1, 0], &[1, 1]),
            false,
            9012,
        ),
    ];
    // NaN propagates (the last NaN's index), -inf everywhere keeps the first tap's index,
    // ties keep the first.
    let inf = f64::INFINITY;
    let nan = f64::NAN;
    #[rustfmt::skip]
    let data = vec![
        1.0, nan, 3.0, 3.0,
        nan, 2.0, 5.0, 3.0,
        -inf, -inf, 2.0, 2.0,
        -inf, -inf, 2.0, 2.0,
    ];
    let x = Tensor::f32(&[1, 1, 4, 4], data);
    v.push(max_case_with(
        x,
        lists(&[2, 2], &[1, 1], &[1, 1], &[1, 1]),
        true,
        " specials",
    ));

    // Dynamic: batch, height and width change; the output follows.
    let l = lists(&[3, 3], &[2, 2], &[1, 1], &[1, 1]);
    let p = l.pool(false, false, None);
    let g = max_graph(F32, &[2, 3, 12, 13], &l, false, &[2, 3, 6, 7]);
    let mut case = OpCase::new(MAX_POOL, "dynamic [<=2, 3, <=12, <=13] k 3 s 2 p 1", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, sz) in [
        [2usize, 3, 12, 13],
        [1, 3, 5, 4],
        [2, 3, 1, 2],
        [1, 3, 9, 12],
        [2, 3, 12, 13],
    ]
    .iter()
    .enumerate()
    {
        let x = pool_input(F32, sz, 9100 + i as u64);
        let (vals, idx) = max_pool2d(&x, &p).unwrap();
        case = case.run(vec![x], vec![vals, idx]);
    }
    v.push(case);
    v
}

fn max_values_graph(
    dt: DataType,
    x_max: &[usize],
    l: &Lists,
    ceil_mode: bool,
    out_max: &[usize],
) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let k = g.int_list(&l.kernel);
    let s = g.int_list(&l.stride);
    let p = g.int_list(&l.pad);
    let d = g.int_list(&l.dilation);
    let c = g.bool(ceil_mode);
    let o = g.output(dt, out_max);
    g.op(MAX_POOL_VALUES, &[xi, k, s, p, d, c, o]);
    g
}

fn max_values_case(x: Tensor, l: Lists, ceil_mode: bool, tag: &str) -> OpCase {
    let p = l.pool(ceil_mode, false, None);
    let (vals, _) = max_pool2d(&x, &p).expect("valid max pool case");
    let g = max_values_graph(x.dtype, &x.sizes, &l, ceil_mode, &vals.sizes);
    OpCase::new(
        MAX_POOL_VALUES,
        format!(
            "{} {:?} {} ceil {ceil_mode}{tag}",
            x.dtype.name(),
            x.sizes,
            l.label()
        ),
        g,
    )
    .tol(Tol::EXACT)
    .run(vec![x], vec![vals])
}

fn max_pool_values_cases() -> Vec<OpCase> {
    let mut v = vec![
        // The exporter's test model: F.max_pool2d(x, 3, 2, 1).
        max_values_case(
            pool_input(F32, &[1, 2, 9, 9], 9400),
            lists(&[3, 3], &[2, 2], &[1, 1], &[1, 1]),
            false,
            "",
        ),
        max_values_case(
            pool_input(F32, &[2, 3, 10, 10], 9401),
            lists(&[3, 3], &[2, 2], &[1, 1], &[2, 2]),
            true,
            "",
        ),
        max_values_case(
            pool_input(F32, &[3, 7, 8], 9402),
            lists(&[2, 2], &[], &[0, 0], &[1, 1]),
            false,
            "",
        ),
        max_values_case(
            pool_input(F32, &[1, 2, 11, 7], 9403),
            lists(&[3, 2], &[2, 1], &[1, 0], &[1, 2]),
            true,
            "",
        ),
        max_values_case(
            pool_input(F16, &[1, 3, 9, 11], 9404),
            lists(&[3, 3], &[2, 2], &[1, 1], &[1, 1]),
            true,
            "",
        ),
    ];
    let nan = f64::NAN;
    let x = Tensor::f32(
        &[1, 1, 2, 3],
        vec![1.0, nan, 3.0, f64::NEG_INFINITY, 2.0, 5.0],
    );
    v.push(max_values_case(
        x,
        lists(&[2], &[1], &[0], &[1]),
        false,
        " specials",
    ));

    // Dynamic: height and width change (the partitioner's dynamic export, Dim 4..16).
    let l = lists(&[3, 3], &[2, 2], &[1, 1], &[1, 1]);
    let p = l.pool(false, false, None);
    let g = max_values_graph(F32, &[1, 2, 16, 16], &l, false, &[1, 2, 8, 8]);
    let mut case = OpCase::new(MAX_POOL_VALUES, "dynamic [1, 2, <=16, <=16] k 3 s 2 p 1", g)
        .tol(Tol::EXACT)
        .dynamic();
    for (i, sz) in [
        [1usize, 2, 16, 16],
        [1, 2, 4, 5],
        [1, 2, 9, 12],
        [1, 2, 16, 16],
    ]
    .iter()
    .enumerate()
    {
        let x = pool_input(F32, sz, 9410 + i as u64);
        let (vals, _) = max_pool2d(&x, &p).unwrap();
        case = case.run(vec![x], vec![vals]);
    }
    v.push(case);
    v
}

fn avg_graph(dt: DataType, x_max: &[usize], l: &Lists, p: &Pool, out_max: &[usize]) -> CaseGraph {
    let mut g = CaseGraph::new();
    let xi = g.input(dt, x_max);
    let k = g.int_list(&l.kernel);
    let s = g.int_list(&l.stride);
    let pd = g.int_list(&l.pad);
    let c = g.bool(p.ceil_mode);
    let cip = g.bool(p.count_include_pad);
    let dv = match p.divisor {
        Some(d) => g.int(d),
        None => g.null(),
    };
    let o = g.output(dt, out_max);
    g.op(AVG_POOL, &[xi, k, s, pd, c, cip, dv, o]);
    g
}

fn avg_tol(dt: DataType) -> Tol {
    if dt == F16 {
        Tol::F16
    } else {
        Tol::F32_SUM
    }
}

fn avg_case(
    dt: DataType,
    sizes: &[usize],
    l: Lists,
    (ceil_mode, cip, divisor): (bool, bool, Option<i64>),
    seed: u64,
) -> OpCase {
    let x = Tensor::rand_range(dt, sizes, -3.0, 3.0, seed);
    let p = l.pool(ceil_mode, cip, divisor);
    let want = avg_pool2d(&x, &p).expect("valid avg pool case");
    let g = avg_graph(dt, sizes, &l, &p, &want.sizes);
    OpCase::new(
        AVG_POOL,
        format!(
            "{} {sizes:?} {} ceil {ceil_mode} count_include_pad {cip} divisor {divisor:?}",
            dt.name(),
            l.label()
        ),
        g,
    )
    .tol(avg_tol(dt))
    .run(vec![x], vec![want])
}

fn avg_pool_cases() -> Vec<OpCase> {
    let no = [0i64; 0];
    let l = |k: &[i64], s: &[i64], p: &[i64]| lists(k, s, p, &[1, 1]);
    let mut v = vec![
        avg_case(
            F32,
            &[1, 4, 9, 9],
            l(&[3, 3], &[2, 2], &[1, 1]),
            (false, true, None),
            9200,
        ),
        avg_case(
            F32,
            &[1, 4, 9, 9],
            l(&[3, 3], &[2, 2], &[1, 1]),
            (false, false, None),
            9201,
        ),
        avg_case(
            F32,
            &[1, 4, 9, 9],
            l(&[3, 3], &[2, 2], &[1, 1]),
            (true, false, Some(5)),
            9202,
        ),
        avg_case(
            F32,
            &[1, 4, 9, 9],
            l(&[3, 3], &[2, 2], &[1, 1]),
            (true, true, None),
            9203,
        ),
        avg_case(
            F32,
            &[2, 3, 8, 8],
            l(&[2, 2], &no, &[0, 0]),
            (false, true, None),
            9204,
        ),
        avg_case(
            F32,
            &[1, 2, 7, 10],
            l(&[3, 2], &[2, 3], &[1, 1]),
            (true, true, None),
            9205,
        ),
        avg_case(
            F32,
            &[1, 2, 7, 10],
            l(&[3, 2], &[2, 3], &[1, 1]),
            (true, false, None),
            9206,
        ),
        avg_case(
            F32,
            &[1, 2, 7, 10],
            l(&[3, 2], &[2, 3], &[1, 1]),
            (true, true, Some(-3)),
            9207,
        ),
        // ceil_mode windows that run past the right padding (5, k 2, s 2, p 1 -> 3).
        avg_case(
            F32,
            &[1, 2, 5, 5],
            l(&[2, 2], &[2, 2], &[1, 1]),
            (true, true, None),
            9208,
        ),
        avg_case(
            F32,
            &[1, 2, 6, 6],
            l(&[3, 3], &[2, 2], &[0, 0]),
            (true, true, None),
            9209,
        ),
        avg_case(
            F32,
            &[3, 6, 5],
            l(&[3], &[1], &[1]),
            (false, false, None),
            9210,
        ),
        avg_case(
            F32,
            &[1, 3, 4, 4],
            l(&[4, 4], &[1, 1], &[0, 0]),
            (false, true, None),
            9211,
        ),
        avg_case(
            F16,
            &[1, 3, 9, 11],
            l(&[3, 3], &[2, 2], &[1, 1]),
            (true, false, None),
            9212,
        ),
        avg_case(
            F16,
            &[2, 5, 6],
            l(&[2, 3], &[2, 2], &[1, 1]),
            (false, true, None),
            9213,
        ),
    ];

    // Dynamic: height and width change.
    let lst = l(&[3, 3], &[2, 2], &[1, 1]);
    let p = lst.pool(true, false, None);
    let g = avg_graph(F32, &[1, 4, 11, 12], &lst, &p, &[1, 4, 6, 7]);
    let mut case = OpCase::new(AVG_POOL, "dynamic [1, 4, <=11, <=12] k 3 s 2 p 1 ceil", g)
        .tol(Tol::F32_SUM)
        .dynamic();
    for (i, sz) in [
        [1usize, 4, 11, 12],
        [1, 4, 2, 3],
        [1, 4, 7, 5],
        [1, 4, 11, 12],
    ]
    .iter()
    .enumerate()
    {
        let x = Tensor::rand(sz, 9300 + i as u64);
        let want = avg_pool2d(&x, &p).unwrap();
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

    #[test]
    fn reference_matches_pytorch_values() {
        // torch.nn.functional.max_pool2d_with_indices(x, 2, 1) of [[1, nan, 3], [nan, 2, 5]]:
        // values [nan, nan], indices [3, 1].
        let nan = f64::NAN;
        let x = Tensor::f32(&[1, 1, 2, 3], vec![1.0, nan, 3.0, nan, 2.0, 5.0]);
        let p = lists(&[2], &[1], &[0], &[1]).pool(false, false, None);
        let (v, i) = max_pool2d(&x, &p).unwrap();
        assert!(v.data.iter().all(|x| x.is_nan()));
        assert_eq!(i.data, vec![3.0, 1.0]);
        // All -inf with padding 1: indices of the first in-range tap.
        let x = Tensor::f32(&[1, 1, 3, 3], vec![f64::NEG_INFINITY; 9]);
        let p = lists(&[2], &[1], &[1], &[1]).pool(false, false, None);
        let (_, i) = max_pool2d(&x, &p).unwrap();
        #[rustfmt::skip]
        let want = vec![0.0, 0.0, 1.0, 2.0, 0.0, 0.0, 1.0, 2.0, 3.0, 3.0, 4.0, 5.0, 6.0, 6.0, 7.0, 8.0];
        assert_eq!(i.data, want);
        // avg_pool2d(ones(5, 5), 3, 2, 1, ceil_mode=True): corners 4/9, edges 6/9, centre 1.
        let x = Tensor::f32(&[1, 1, 5, 5], vec![1.0; 25]);
        let p = lists(&[3], &[2], &[1], &[1]).pool(true, true, None);
        let a = avg_pool2d(&x, &p).unwrap();
        assert_eq!(a.sizes, vec![1, 1, 3, 3]);
        let (c, e) = (4.0 / 9.0, 6.0 / 9.0);
        let want = [c, e, c, e, 1.0, e, c, e, c];
        // The f32 graph dtype rounds the stored values.
        assert!(
            a.data.iter().zip(want).all(|(x, y)| (x - y).abs() < 1e-7),
            "{:?}",
            a.data
        );
        assert_eq!(pool_out_size(5, 2, 1, 2, 1, true), Some(3));
        assert_eq!(pool_out_size(10, 3, 1, 2, 2, true), Some(5));
        assert_eq!(pool_out_size(2, 3, 1, 1, 2, false), None);
    }

    #[test]
    fn bad_windows_are_refused_at_load() {
        let l = lists(&[2, 2], &[2, 2], &[2, 0], &[1, 1]);
        let g = max_graph(F32, &[1, 1, 8, 8], &l, false, &[1, 1, 6, 4]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::InvalidProgram, "{e}");
        assert!(
            e.message.contains(MAX_POOL) && e.message.contains("half of kernel_size"),
            "{e}"
        );

        // Too small an input for the kernel: an empty output.
        let l = lists(&[3, 3], &[1, 1], &[0, 0], &[2, 2]);
        let g = max_graph(F32, &[1, 1, 4, 4], &l, false, &[1, 1, 1, 1]);
        let e = init_err(g);
        assert!(
            e.message.contains(MAX_POOL) && e.message.contains("empty output"),
            "{e}"
        );

        // int64 indices (a graph exported with downcast_64_bit off) are held as int32 and
        // come back as int64: the max of each 2 x 2 block of 0..16 is its last element.
        let l = lists(&[2, 2], &[2, 2], &[0, 0], &[1, 1]);
        let mut g = CaseGraph::new();
        let xi = g.input(F32, &[1, 1, 4, 4]);
        let (k, s, p, d) = (
            g.int_list(&l.kernel),
            g.int_list(&l.stride),
            g.int_list(&l.pad),
            g.int_list(&l.dilation),
        );
        let c = g.bool(false);
        let o = g.output(F32, &[1, 1, 2, 2]);
        let i = g.output(DataType::Int64, &[1, 1, 2, 2]);
        let outs = g.value_list(&[o, i]);
        g.op(MAX_POOL, &[xi, k, s, p, d, c, outs]);
        let x = Tensor::new(F32, &[1, 1, 4, 4], (0..16).map(f64::from).collect());
        let best = vec![5.0, 7.0, 13.0, 15.0];
        let case = OpCase::new(MAX_POOL, "int64 indices", g)
            .tol(Tol::EXACT)
            .run(
                vec![x],
                vec![
                    Tensor::new(F32, &[1, 1, 2, 2], best.clone()),
                    Tensor::new(DataType::Int64, &[1, 1, 2, 2], best),
                ],
            );
        crate::case::run_case(&case).unwrap();

        // divisor_override 0.
        let l = lists(&[2, 2], &[2, 2], &[0, 0], &[1, 1]);
        let mut p = l.pool(false, true, None);
        p.divisor = Some(0);
        let g = avg_graph(F32, &[1, 1, 4, 4], &l, &p, &[1, 1, 2, 2]);
        let e = init_err(g);
        assert!(
            e.message.contains(AVG_POOL) && e.message.contains("divisor_override"),
            "{e}"
        );

        // Rank 2 input.
        let l = lists(&[2, 2], &[2, 2], &[0, 0], &[1, 1]);
        let p = l.pool(false, true, None);
        let g = avg_graph(F32, &[4, 4], &l, &p, &[2, 2]);
        let e = init_err(g);
        assert_eq!(e.kind, ErrorKind::Unsupported, "{e}");
        assert!(
            e.message.contains(AVG_POOL) && e.message.contains("rank 2"),
            "{e}"
        );
    }
}
