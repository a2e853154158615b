//! More portable CPU kernels, for ops the Vulkan partitioner leaves on the CPU in real
//! exports: elementwise math (`log.out`, `log1p.out`, `expm1.out`, `elu.out`, ...), scans
//! (`cumsum.out`), selection and sorting with an index output (`topk.values`, `sort.values`,
//! `max.dim_max`, `min.dim_min`), the statistics-free batch norm that
//! `nn.InstanceNorm2d` exports as (`_native_batch_norm_legit.no_stats_out`), inference batch
//! norm (`_native_batch_norm_legit_no_training.out`: a 3-D batch norm, which the partitioner
//! leaves here) and adaptive average pooling (`_adaptive_avg_pool2d.out`: output sizes that
//! do not divide the input, as torchvision's AlexNet / VGG heads on small inputs).
//!
//! Math runs in f64 and is rounded once to the out dtype (PyTorch's CPU kernels use fp32
//! libm for fp32 tensors: within an ulp of this). Index outputs are int64 as PyTorch's.
//! Orderings follow PyTorch: NaN sorts above every number; ties keep the input order.

use std::cmp::Ordering;

use crate::dtype::{read_scalar, write_scalar, DType, Scalar};
use crate::error::{HostError, Result};
use crate::values::{TensorSlot, Value};

/// An elementwise function.
type Elementwise = fn(f64) -> f64;

/// A binary elementwise function of (a, b, alpha).
type Binary = fn(f64, f64, f64) -> f64;

/// A lane along the sorted dim: (value, its index in the lane).
type Lane = Vec<(f64, usize)>;

/// (outer, size, inner) of a tensor around one dim.
type Split = (usize, usize, usize);

/// Elementwise ops of `(self, out)`: name and function.
const UNARY: &[(&str, Elementwise)] = &[
    ("aten::log.out", f64::ln),
    ("aten::log1p.out", f64::ln_1p),
    ("aten::log2.out", f64::log2),
    ("aten::log10.out", f64::log10),
    ("aten::exp.out", f64::exp),
    ("aten::expm1.out", f64::exp_m1),
    ("aten::sqrt.out", f64::sqrt),
    ("aten::rsqrt.out", rsqrt),
    ("aten::sin.out", f64::sin),
    ("aten::cos.out", f64::cos),
    ("aten::tan.out", f64::tan),
    ("aten::tanh.out", f64::tanh),
    ("aten::atan.out", f64::atan),
    ("aten::asin.out", f64::asin),
    ("aten::acos.out", f64::acos),
    ("aten::sigmoid.out", sigmoid),
    ("aten::reciprocal.out", reciprocal),
    ("aten::floor.out", f64::floor),
    ("aten::ceil.out", f64::ceil),
    ("aten::trunc.out", f64::trunc),
    ("aten::round.out", f64::round_ties_even),
    ("aten::erf.out", erf),
    ("aten::sign.out", sign),
    ("aten::frac.out", frac),
    ("aten::relu.out", relu),
];

/// Other kernels here: (name, number of schema args including the outs).
const OTHERS: &[(&str, usize)] = &[
    ("aten::elu.out", 5),
    ("aten::cumsum.out", 4),
    ("aten::topk.values", 7),
    ("aten::sort.values", 5),
    ("aten::max.dim_max", 5),
    ("aten::min.dim_min", 5),
    ("aten::_native_batch_norm_legit.no_stats_out", 9),
    ("aten::_native_batch_norm_legit_no_training.out", 10),
    ("aten::_adaptive_avg_pool2d.out", 3),
    ("aten::var.correction_out", 5),
    ("aten::prod.int_out", 5),
    // Broadcasting binary ops, comparisons (bool out), where, clamp with tensor bounds.
    ("aten::add.out", 4),
    ("aten::sub.out", 4),
    ("aten::mul.out", 3),
    ("aten::div.out", 3),
    ("aten::maximum.out", 3),
    ("aten::minimum.out", 3),
    ("aten::pow.Tensor_Tensor_out", 3),
    ("aten::eq.Tensor_out", 3),
    ("aten::ne.Tensor_out", 3),
    ("aten::lt.Tensor_out", 3),
    ("aten::le.Tensor_out", 3),
    ("aten::gt.Tensor_out", 3),
    ("aten::ge.Tensor_out", 3),
    ("aten::eq.Scalar_out", 3),
    ("aten::ne.Scalar_out", 3),
    ("aten::lt.Scalar_out", 3),
    ("aten::le.Scalar_out", 3),
    ("aten::gt.Scalar_out", 3),
    ("aten::ge.Scalar_out", 3),
    ("aten::logical_and.out", 3),
    ("aten::logical_or.out", 3),
    ("aten::logical_xor.out", 3),
    ("aten::logical_not.out", 2),
    ("aten::where.self_out", 4),
    ("aten::clamp.Tensor_out", 4),
    ("aten::clamp.out", 4),
    // Data movement: views as copies, dtype copies, arange.
    ("aten::view_copy.out", 3),
    ("aten::unsqueeze_copy.out", 3),
    ("aten::squeeze_copy.dims_out", 3),
    ("aten::permute_copy.out", 3),
    ("aten::clone.out", 3),
    ("aten::_to_copy.out", 4),
    ("aten::arange.start_out", 4),
    ("aten::arange.out", 2),
    ("aten::add.Scalar_out", 4),
    ("aten::sub.Scalar_out", 4),
    ("aten::div.Scalar_out", 3),
    ("aten::rsub.Scalar_out", 4),
    ("aten::scatter.value_out", 5),
    ("aten::index.Tensor_out", 3),
    ("aten::sum.IntList_out", 5),
    ("aten::mean.dtype_out", 3),
];

fn rsqrt(x: f64) -> f64 {
    1.0 / x.sqrt()
}
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}
fn reciprocal(x: f64) -> f64 {
    1.0 / x
}

/// torch.sign: -1, 0 or 1 (NaN stays NaN).
fn sign(x: f64) -> f64 {
    if x == 0.0 || x.is_nan() {
        x
    } else {
        x.signum()
    }
}

/// torch.relu: max(x, 0), NaN kept.
fn relu(x: f64) -> f64 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

/// torch.frac: x - trunc(x).
fn frac(x: f64) -> f64 {
    x - x.trunc()
}

/// erf by its Maclaurin series up to |x| = 4 (cancellation costs at most ~7 of f64's 16
/// digits there); beyond, erfc < 2e-8 and fp32's erf is +-1.
fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() > 4.0 {
        return x.signum();
    }
    let x2 = x * x;
    let (mut term, mut sum) = (x, x);
    for n in 1..200 {
        term *= -x2 / n as f64;
        let t = term / (2 * n + 1) as f64;
        sum += t;
        if t.abs() < 1e-17 * sum.abs() {
            break;
        }
    }
    sum * std::f64::consts::FRAC_2_SQRT_PI
}

/// Every operator this module runs.
pub fn names() -> impl Iterator<Item = &'static str> {
    UNARY
        .iter()
        .map(|(n, _)| *n)
        .chain(OTHERS.iter().map(|(n, _)| *n))
}

/// Whether `op` is one of [`names`].
pub fn is_supported(op: &str) -> bool {
    names().any(|n| n == op)
}

/// The argument reader shared with `kernels.rs`, with the accessors only these kernels use.
type Call<'a> = crate::kernels::Ctx<'a>;

impl Call<'_> {
    fn opt_tensor(&self, pos: usize) -> Result<Option<&TensorSlot>> {
        match self.value(pos)? {
            Value::Null => Ok(None),
            _ => self.tensor(pos).map(Some),
        }
    }

    fn number(&self, pos: usize) -> Result<f64> {
        Ok(self.scalar(pos)?.as_f64())
    }

    fn dim(&self, pos: usize, rank: usize) -> Result<usize> {
        self.wrap_dim(self.int(pos)?, rank)
    }

    /// The out tensor at `pos`: its value index and dtype.
    fn out(&self, pos: usize) -> Result<(usize, DType)> {
        let t = self.tensor(pos)?;
        Ok((self.args[pos], t.dtype))
    }
}

/// The broadcasting binary ops of `OTHERS`: `f(a, b, alpha)` in f64 (comparisons give 0 / 1
/// for a bool out tensor).
const BINARY: &[(&str, Binary)] = &[
    ("aten::add.out", |a, b, al| a + al * b),
    ("aten::add.Scalar_out", |a, b, al| a + al * b),
    ("aten::sub.Scalar_out", |a, b, al| a - al * b),
    ("aten::rsub.Scalar_out", |a, b, al| b - al * a),
    ("aten::div.Scalar_out", |a, b, _| a / b),
    ("aten::sub.out", |a, b, al| a - al * b),
    ("aten::mul.out", |a, b, _| a * b),
    ("aten::div.out", |a, b, _| a / b),
    ("aten::maximum.out", |a, b, _| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    }),
    ("aten::minimum.out", |a, b, _| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.min(b)
        }
    }),
    ("aten::pow.Tensor_Tensor_out", |a, b, _| a.powf(b)),
    ("aten::eq.Tensor_out", |a, b, _| f64::from(u8::from(a == b))),
    ("aten::ne.Tensor_out", |a, b, _| f64::from(u8::from(a != b))),
    ("aten::lt.Tensor_out", |a, b, _| f64::from(u8::from(a < b))),
    ("aten::le.Tensor_out", |a, b, _| f64::from(u8::from(a <= b))),
    ("aten::gt.Tensor_out", |a, b, _| f64::from(u8::from(a > b))),
    ("aten::ge.Tensor_out", |a, b, _| f64::from(u8::from(a >= b))),
    ("aten::eq.Scalar_out", |a, b, _| f64::from(u8::from(a == b))),
    ("aten::ne.Scalar_out", |a, b, _| f64::from(u8::from(a != b))),
    ("aten::lt.Scalar_out", |a, b, _| f64::from(u8::from(a < b))),
    ("aten::le.Scalar_out", |a, b, _| f64::from(u8::from(a <= b))),
    ("aten::gt.Scalar_out", |a, b, _| f64::from(u8::from(a > b))),
    ("aten::ge.Scalar_out", |a, b, _| f64::from(u8::from(a >= b))),
    ("aten::logical_and.out", |a, b, _| {
        f64::from(u8::from(a != 0.0 && b != 0.0))
    }),
    ("aten::logical_or.out", |a, b, _| {
        f64::from(u8::from(a != 0.0 || b != 0.0))
    }),
    ("aten::logical_xor.out", |a, b, _| {
        f64::from(u8::from((a != 0.0) != (b != 0.0)))
    }),
];

/// An operand: a tensor's values and sizes, or a scalar (sizes []).
fn operand(c: &Call<'_>, pos: usize) -> Result<(Vec<f64>, Vec<usize>)> {
    match c.value(pos)? {
        Value::Tensor(t) => Ok((floats(c, t)?, t.sizes.clone())),
        _ => Ok((vec![c.number(pos)?], Vec::new())),
    }
}

/// PyTorch's broadcast of two shapes.
fn broadcast_shape(c: &Call<'_>, a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let x = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let y = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            match (x, y) {
                (x, y) if x == y => Ok(x),
                (1, y) => Ok(y),
                (x, 1) => Ok(x),
                _ => Err(c.err(format!("sizes {a:?} and {b:?} do not broadcast"))),
            }
        })
        .collect()
}

/// The shape operands broadcast to.
fn broadcast_shape_all(c: &Call<'_>, ops: &[(Vec<f64>, Vec<usize>)]) -> Result<Vec<usize>> {
    ops.iter()
        .try_fold(Vec::new(), |shape, (_, s)| broadcast_shape(c, &shape, s))
}

/// Operands broadcast to one shape: their values at each element of it. The result of
/// these ops has that shape, so the out tensor at `out_pos` must take it: checked before
/// anything is expanded.
fn broadcast_all(
    c: &Call<'_>,
    ops: &[(Vec<f64>, Vec<usize>)],
    out_pos: usize,
) -> Result<(Vec<usize>, Vec<Vec<f64>>)> {
    let shape = broadcast_shape_all(c, ops)?;
    c.check_out(out_pos, &shape)?;
    let values = expand_all(c, ops, &shape)?;
    Ok((shape, values))
}

/// Each operand's values at every element of `shape` (which they broadcast to).
fn expand_all(
    c: &Call<'_>,
    ops: &[(Vec<f64>, Vec<usize>)],
    shape: &[usize],
) -> Result<Vec<Vec<f64>>> {
    let mut out = Vec::with_capacity(ops.len());
    for (v, s) in ops {
        let idx = crate::kernels::broadcast_indices(c, s, shape)?;
        out.push(idx.into_iter().map(|i| v[i]).collect());
    }
    Ok(out)
}

/// `op(self, other, (alpha,) out)` with broadcasting.
fn binary(c: &Call<'_>) -> Result<Result1> {
    let f = BINARY
        .iter()
        .find(|(n, _)| *n == c.op)
        .map(|(_, f)| *f)
        .ok_or_else(|| c.err("not a binary op"))?;
    let has_alpha = matches!(
        c.op,
        "aten::add.out"
            | "aten::sub.out"
            | "aten::add.Scalar_out"
            | "aten::sub.Scalar_out"
            | "aten::rsub.Scalar_out"
    );
    let alpha = if has_alpha { c.number(2)? } else { 1.0 };
    let out_pos = if has_alpha { 3 } else { 2 };
    let (idx, dtype) = c.out(out_pos)?;
    let (sizes, vals) = broadcast_all(c, &[operand(c, 0)?, operand(c, 1)?], out_pos)?;
    let data = vals[0]
        .iter()
        .zip(&vals[1])
        .map(|(&a, &b)| f(a, b, alpha))
        .collect();
    Ok(Result1::new((idx, dtype), sizes, data))
}

/// `where.self_out(condition, self, other, out)`.
fn where_self(c: &Call<'_>) -> Result<Result1> {
    let (idx, dtype) = c.out(3)?;
    let (sizes, vals) = broadcast_all(c, &[operand(c, 0)?, operand(c, 1)?, operand(c, 2)?], 3)?;
    let data = (0..vals[0].len())
        .map(|i| {
            if vals[0][i] != 0.0 {
                vals[1][i]
            } else {
                vals[2][i]
            }
        })
        .collect();
    Ok(Result1::new((idx, dtype), sizes, data))
}

/// `clamp.Tensor_out(self, min?, max?, out)` / `clamp.out` (Scalar bounds): NaN stays.
fn clamp(c: &Call<'_>) -> Result<Result1> {
    let (idx, dtype) = c.out(3)?;
    let bound = |pos: usize, none: f64| -> Result<(Vec<f64>, Vec<usize>)> {
        match c.value(pos)? {
            Value::Null => Ok((vec![none], Vec::new())),
            _ => operand(c, pos),
        }
    };
    let (sizes, vals) = broadcast_all(
        c,
        &[
            operand(c, 0)?,
            bound(1, f64::NEG_INFINITY)?,
            bound(2, f64::INFINITY)?,
        ],
        3,
    )?;
    let data = (0..vals[0].len())
        .map(|i| {
            let x = vals[0][i];
            if x.is_nan() {
                x
            } else {
                x.max(vals[1][i]).min(vals[2][i])
            }
        })
        .collect();
    Ok(Result1::new((idx, dtype), sizes, data))
}

fn logical_not(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let (idx, dtype) = c.out(1)?;
    let data = floats(c, x)?
        .into_iter()
        .map(|v| f64::from(u8::from(v == 0.0)))
        .collect();
    Ok(Result1::new((idx, dtype), x.sizes.clone(), data))
}

/// The view copies (`view_copy`, `unsqueeze_copy`, `squeeze_copy.dims`) and the plain copies
/// (`clone`, `_to_copy`): the elements in order, the new sizes from the op's arguments.
fn reshape_copy(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let numel = x.numel();
    let out_pos = if c.op == "aten::_to_copy.out" { 3 } else { 2 };
    let (idx, dtype) = c.out(out_pos)?;
    let sizes = match c.op {
        "aten::view_copy.out" => {
            let Value::IntList(items) = c.value(1)? else {
                return Err(c.err("argument 1 (size) must be an int list"));
            };
            let want = crate::values::resolve_int_list(c.values, items, "view_copy size")?;
            let known: usize = want
                .iter()
                .filter(|&&d| d >= 0)
                .map(|&d| d as usize)
                .product();
            let infer = want.iter().filter(|&&d| d < 0).count();
            if infer > 1
                || (infer == 0 && known != numel)
                || (infer == 1 && (known == 0 || numel % known != 0))
            {
                return Err(c.err(format!("cannot view {:?} as {want:?}", x.sizes)));
            }
            want.iter()
                .map(|&d| if d < 0 { numel / known } else { d as usize })
                .collect()
        }
        "aten::unsqueeze_copy.out" => {
            let rank = x.sizes.len() + 1;
            let d = c.dim(1, rank)?;
            let mut s = x.sizes.clone();
            s.insert(d, 1);
            s
        }
        "aten::squeeze_copy.dims_out" => {
            let Value::IntList(items) = c.value(1)? else {
                return Err(c.err("argument 1 (dims) must be an int list"));
            };
            let dims = crate::values::resolve_int_list(c.values, items, "squeeze dims")?;
            let rank = x.sizes.len();
            let mut drop = vec![false; rank];
            for d in dims {
                let w = c.wrap_dim(d, rank)?;
                if rank > 0 && x.sizes[w] == 1 {
                    drop[w] = true;
                }
            }
            (0..rank)
                .filter(|&d| !drop[d])
                .map(|d| x.sizes[d])
                .collect()
        }
        _ => x.sizes.clone(),
    };
    Ok(Result1 {
        idx,
        dtype,
        sizes,
        data: floats(c, x)?,
    })
}

/// `permute_copy.out(self, dims, out)`.
fn permute_copy(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let rank = x.sizes.len();
    let Value::IntList(items) = c.value(1)? else {
        return Err(c.err("argument 1 (dims) must be an int list"));
    };
    let perm = crate::values::resolve_int_list(c.values, items, "permute dims")?
        .into_iter()
        .map(|d| c.wrap_dim(d, rank))
        .collect::<Result<Vec<_>>>()?;
    let mut seen = vec![false; rank];
    if perm.len() != rank || perm.iter().any(|&d| std::mem::replace(&mut seen[d], true)) {
        return Err(c.err(format!(
            "dims {perm:?} are not a permutation of rank {rank}"
        )));
    }
    let (idx, dtype) = c.out(2)?;
    let v = floats(c, x)?;
    let sizes: Vec<usize> = perm.iter().map(|&d| x.sizes[d]).collect();
    let in_strides: Vec<usize> = (0..rank)
        .map(|d| x.sizes[d + 1..].iter().product())
        .collect();
    let n = v.len();
    let mut data = Vec::with_capacity(n);
    let mut counter = vec![0usize; rank];
    for _ in 0..n {
        let src: usize = counter
            .iter()
            .zip(&perm)
            .map(|(&i, &d)| i * in_strides[d])
            .sum();
        data.push(v[src]);
        for d in (0..rank).rev() {
            counter[d] += 1;
            if counter[d] < sizes[d] {
                break;
            }
            counter[d] = 0;
        }
    }
    Ok(Result1::new((idx, dtype), sizes, data))
}

/// An index value along a dim of `size` (negative counts from the end), checked.
fn wrap_index(c: &Call<'_>, i: f64, size: usize) -> Result<usize> {
    let k = if i < 0.0 { i + size as f64 } else { i };
    if k < 0.0 || k >= size as f64 {
        return Err(c.err(format!("index {i} out of range for a dim of size {size}")));
    }
    Ok(k as usize)
}

/// `scatter.value_out(self, dim, index, value, out)`: a copy of self with
/// `out[.. index[p] along dim ..] = value` for every position p of index.
fn scatter_value(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let rank = x.sizes.len();
    let dim = c.dim(1, rank)?;
    let index = c.tensor(2)?;
    let value = c.number(3)?;
    let (idx, dtype) = c.out(4)?;
    if index.sizes.len() != rank {
        return Err(c.err(format!(
            "index {:?} must have self's rank {rank}",
            index.sizes
        )));
    }
    let mut data = floats(c, x)?;
    let iv = floats(c, index)?;
    let x_strides: Vec<usize> = (0..rank)
        .map(|d| x.sizes[d + 1..].iter().product())
        .collect();
    let mut counter = vec![0usize; rank];
    for &target in &iv {
        let mut at = 0;
        for d in 0..rank {
            let coord = if d == dim {
                wrap_index(c, target, x.sizes[d])?
            } else if counter[d] < x.sizes[d] {
                counter[d]
            } else {
                return Err(c.err(format!(
                    "index {:?} exceeds self {:?}",
                    index.sizes, x.sizes
                )));
            };
            at += coord * x_strides[d];
        }
        data[at] = value;
        for d in (0..rank).rev() {
            counter[d] += 1;
            if counter[d] < index.sizes[d] {
                break;
            }
            counter[d] = 0;
        }
    }
    Ok(Result1::new((idx, dtype), x.sizes.clone(), data))
}

/// `index.Tensor_out(self, indices (optional tensors), out)`: advanced indexing. The index
/// tensors broadcast together; their shape replaces the indexed dims in place when those
/// are adjacent, and goes first otherwise (NumPy's rule).
fn index_tensor(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let rank = x.sizes.len();
    let Value::OptionalTensorList(items) = c.value(1)? else {
        return Err(c.err("argument 1 (indices) must be a list of optional tensors"));
    };
    if items.len() > rank {
        return Err(c.err(format!("{} indices for rank {rank}", items.len())));
    }
    let mut indexed = Vec::new();
    let mut ops = Vec::new();
    for (d, item) in items.iter().enumerate() {
        if let Some(v) = item {
            let Some(Value::Tensor(t)) = c.values.get(*v) else {
                return Err(c.err(format!("index {d} is not a tensor")));
            };
            indexed.push(d);
            ops.push((floats(c, t)?, t.sizes.clone()));
        }
    }
    if indexed.is_empty() {
        return Err(c.err("no index tensors"));
    }
    let bshape = broadcast_shape_all(c, &ops)?;
    let adjacent = indexed.windows(2).all(|w| w[1] == w[0] + 1);
    let kept: Vec<usize> = (0..rank).filter(|d| !indexed.contains(d)).collect();
    // Output dims: (source dim or None for a broadcast dim) in order.
    let insert_at = if adjacent {
        kept.iter().filter(|&&d| d < indexed[0]).count()
    } else {
        0
    };
    let mut layout: Vec<Option<usize>> = kept.iter().map(|&d| Some(d)).collect();
    for (i, _) in bshape.iter().enumerate() {
        layout.insert(insert_at + i, None);
    }
    let sizes: Vec<usize> = {
        let mut bi = 0;
        layout
            .iter()
            .map(|l| match l {
                Some(d) => x.sizes[*d],
                None => {
                    bi += 1;
                    bshape[bi - 1]
                }
            })
            .collect()
    };
    // The result's sizes are known before the indices are expanded: checked first, and an
    // empty result (a kept dim of 0) expands nothing.
    c.check_out(2, &sizes)?;
    let (idx, dtype) = c.out(2)?;
    if sizes.contains(&0) {
        return Ok(Result1::new((idx, dtype), sizes, Vec::new()));
    }
    let bvals = expand_all(c, &ops, &bshape)?;
    let v = floats(c, x)?;
    let x_strides: Vec<usize> = (0..rank)
        .map(|d| x.sizes[d + 1..].iter().product())
        .collect();
    let b_strides: Vec<usize> = (0..bshape.len())
        .map(|d| bshape[d + 1..].iter().product())
        .collect();
    let n: usize = sizes.iter().product();
    let mut data = Vec::with_capacity(n);
    let mut counter = vec![0usize; sizes.len()];
    for _ in 0..n {
        let (mut at, mut b_flat, mut bi) = (0, 0, 0);
        for (k, l) in layout.iter().enumerate() {
            match l {
                Some(d) => at += counter[k] * x_strides[*d],
                None => {
                    b_flat += counter[k] * b_strides[bi];
                    bi += 1;
                }
            }
        }
        for (j, &d) in indexed.iter().enumerate() {
            at += wrap_index(c, bvals[j][b_flat], x.sizes[d])? * x_strides[d];
        }
        data.push(v[at]);
        for k in (0..sizes.len()).rev() {
            counter[k] += 1;
            if counter[k] < sizes[k] {
                break;
            }
            counter[k] = 0;
        }
    }
    Ok(Result1::new((idx, dtype), sizes, data))
}

/// `arange.start_out(start, end, step, out)` / `arange.out(end, out)`.
fn arange(c: &Call<'_>) -> Result<Result1> {
    let (start, end, step, out_pos) = if c.op == "aten::arange.out" {
        (0.0, c.number(0)?, 1.0, 1)
    } else {
        (c.number(0)?, c.number(1)?, c.number(2)?, 3)
    };
    if step == 0.0 || !((end - start) / step).is_finite() {
        return Err(c.err(format!("arange({start}, {end}, {step}) has no length")));
    }
    let n = ((end - start) / step).ceil().max(0.0);
    let (idx, dtype) = c.out(out_pos)?;
    // The out tensor's capacity bounds the length before anything is allocated.
    let cap: usize = c.tensor(out_pos)?.max_sizes.iter().product();
    if n > cap as f64 {
        return Err(c.err(format!(
            "arange({start}, {end}, {step}) has {n} elements; the out tensor holds {cap}"
        )));
    }
    let n = n as usize;
    Ok(Result1::new(
        (idx, dtype),
        vec![n],
        (0..n).map(|i| start + i as f64 * step).collect(),
    ))
}

/// A tensor's elements as f64.
fn floats(c: &Call<'_>, t: &TensorSlot) -> Result<Vec<f64>> {
    let bytes = t.bytes();
    (0..t.numel())
        .map(|i| read_scalar(t.dtype, bytes, i).map(|s| s.as_f64()))
        .collect::<Result<Vec<_>>>()
        .map_err(|e| c.err(e.to_string()))
}

/// Values as `dtype` bytes (integers from floats truncate, as a cast).
fn encode(dtype: DType, data: &[f64]) -> Result<Vec<u8>> {
    let mut bytes = vec![0u8; data.len() * dtype.size_bytes()];
    for (i, &v) in data.iter().enumerate() {
        let s = if dtype.is_float() {
            Scalar::Float(v)
        } else if dtype == DType::Bool {
            Scalar::Bool(v != 0.0)
        } else {
            Scalar::Int(v as i64)
        };
        write_scalar(dtype, &mut bytes, i, s)?;
    }
    Ok(bytes)
}

/// A result for the value at `idx`.
struct Result1 {
    idx: usize,
    dtype: DType,
    sizes: Vec<usize>,
    data: Vec<f64>,
}

impl Result1 {
    /// The out tensor `(value index, dtype)` with `sizes` and `data`.
    fn new((idx, dtype): (usize, DType), sizes: Vec<usize>, data: Vec<f64>) -> Result1 {
        Result1 {
            idx,
            dtype,
            sizes,
            data,
        }
    }
}

/// Run `op` when this module has it: `None` when it does not.
pub fn run(op: &str, values: &mut [Value], args: &[usize]) -> Option<Result<()>> {
    let unary = UNARY.iter().find(|(n, _)| *n == op).map(|(_, f)| *f);
    let schema = match unary {
        Some(_) => 2,
        None => OTHERS.iter().find(|(n, _)| *n == op)?.1,
    };
    Some(run_known(op, values, args, unary, schema))
}

fn run_known(
    op: &str,
    values: &mut [Value],
    args: &[usize],
    unary: Option<Elementwise>,
    schema: usize,
) -> Result<()> {
    let results = {
        let c = Call { op, values, args };
        if args.len() < schema {
            return Err(c.err(format!(
                "{} arguments, the schema needs {schema}",
                args.len()
            )));
        }
        match unary {
            Some(f) => vec![map_unary(&c, f)?],
            None => match op {
                "aten::elu.out" => vec![elu(&c)?],
                "aten::cumsum.out" => vec![cumsum(&c)?],
                "aten::topk.values" => topk(&c)?,
                "aten::sort.values" => sort(&c)?,
                "aten::max.dim_max" => reduce_index(&c, true)?,
                "aten::min.dim_min" => reduce_index(&c, false)?,
                "aten::var.correction_out" => vec![var(&c)?],
                "aten::sum.IntList_out" | "aten::mean.dtype_out" => vec![sum_mean(&c)?],
                "aten::prod.int_out" => vec![prod(&c)?],
                "aten::where.self_out" => vec![where_self(&c)?],
                "aten::clamp.Tensor_out" | "aten::clamp.out" => vec![clamp(&c)?],
                "aten::logical_not.out" => vec![logical_not(&c)?],
                "aten::view_copy.out"
                | "aten::unsqueeze_copy.out"
                | "aten::squeeze_copy.dims_out"
                | "aten::clone.out"
                | "aten::_to_copy.out" => vec![reshape_copy(&c)?],
                "aten::permute_copy.out" => vec![permute_copy(&c)?],
                "aten::scatter.value_out" => vec![scatter_value(&c)?],
                "aten::index.Tensor_out" => vec![index_tensor(&c)?],
                "aten::arange.start_out" | "aten::arange.out" => vec![arange(&c)?],
                "aten::_native_batch_norm_legit_no_training.out" => batch_norm_inference(&c)?,
                "aten::_adaptive_avg_pool2d.out" => vec![adaptive_avg_pool2d(&c)?],
                _ if BINARY.iter().any(|(n, _)| *n == op) => vec![binary(&c)?],
                _ => batch_norm_no_stats(&c)?,
            },
        }
    };
    for r in &results {
        store(op, values, r)?;
    }
    // A single out tensor may be named again as the return value (a distinct value gets
    // the same result); several outputs come back as a TensorList of the outs themselves.
    if let [first] = results.as_slice() {
        let first = first.idx;
        for &a in &args[schema..] {
            if a != first && matches!(values.get(a), Some(Value::Tensor(_))) {
                let r = &results[0];
                store(
                    op,
                    values,
                    &Result1 {
                        idx: a,
                        dtype: r.dtype,
                        sizes: r.sizes.clone(),
                        data: r.data.clone(),
                    },
                )?;
            }
        }
    }
    Ok(())
}

fn store(op: &str, values: &mut [Value], r: &Result1) -> Result<()> {
    let bytes = encode(r.dtype, &r.data)?;
    match values.get_mut(r.idx) {
        Some(Value::Tensor(t)) if t.dtype == r.dtype => {
            t.store(&r.sizes, &bytes, &format!("{op} output (value {})", r.idx))
        }
        _ => Err(HostError::Kernel {
            op: op.to_string(),
            message: format!("output value {} is not a {} tensor", r.idx, r.dtype),
        }),
    }
}

fn map_unary(c: &Call<'_>, f: Elementwise) -> Result<Result1> {
    let x = c.tensor(0)?;
    let (idx, dtype) = c.out(1)?;
    let data = floats(c, x)?.into_iter().map(f).collect();
    Ok(Result1::new((idx, dtype), x.sizes.clone(), data))
}

/// `elu.out(self, alpha, scale, input_scale, out)`.
fn elu(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let (alpha, scale, input_scale) = (c.number(1)?, c.number(2)?, c.number(3)?);
    let (idx, dtype) = c.out(4)?;
    let data = floats(c, x)?
        .into_iter()
        .map(|v| {
            if v > 0.0 {
                scale * v
            } else {
                scale * alpha * (v * input_scale).exp_m1()
            }
        })
        .collect();
    Ok(Result1::new((idx, dtype), x.sizes.clone(), data))
}

/// (outer, size, inner) of `sizes` around `dim`.
fn split(sizes: &[usize], dim: usize) -> Split {
    if sizes.is_empty() {
        return (1, 1, 1);
    }
    (
        sizes[..dim].iter().product(),
        sizes[dim],
        sizes[dim + 1..].iter().product(),
    )
}

/// `cumsum.out(self, dim, dtype?, out)`: accumulated in f64 (PyTorch's CPU accumulates
/// floats in double).
fn cumsum(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let dim = c.dim(1, x.sizes.len())?;
    let (idx, dtype) = c.out(3)?;
    let v = floats(c, x)?;
    let (outer, n, inner) = split(&x.sizes, dim);
    let mut data = v.clone();
    for o in 0..outer {
        for k in 0..inner {
            let mut acc = 0.0;
            for j in 0..n {
                let i = (o * n + j) * inner + k;
                acc += v[i];
                data[i] = acc;
            }
        }
    }
    Ok(Result1::new((idx, dtype), x.sizes.clone(), data))
}

/// PyTorch's order for sorting: NaN above every number.
fn total(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Each lane along `dim` of x as (value, index) pairs sorted (stable) descending or not;
/// returns the lanes and the (outer, n, inner) split.
fn sorted_lanes(v: &[f64], sizes: &[usize], dim: usize, descending: bool) -> (Vec<Lane>, Split) {
    let (outer, n, inner) = split(sizes, dim);
    let mut lanes = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for k in 0..inner {
            let mut lane: Vec<(f64, usize)> =
                (0..n).map(|j| (v[(o * n + j) * inner + k], j)).collect();
            lane.sort_by(|a, b| {
                let ord = total(a.0, b.0);
                if descending {
                    ord.reverse()
                } else {
                    ord
                }
            });
            lanes.push(lane);
        }
    }
    (lanes, (outer, n, inner))
}

/// The first `take` entries of each lane written back along `dim` (sizes with `dim` =
/// `take`): (values, indices).
fn gather_lanes(lanes: &[Lane], (outer, _, inner): Split, take: usize) -> (Vec<f64>, Vec<f64>) {
    let mut vals = vec![0.0; outer * take * inner];
    let mut inds = vec![0.0; outer * take * inner];
    for o in 0..outer {
        for k in 0..inner {
            let lane = &lanes[o * inner + k];
            for (j, &(v, i)) in lane.iter().take(take).enumerate() {
                vals[(o * take + j) * inner + k] = v;
                inds[(o * take + j) * inner + k] = i as f64;
            }
        }
    }
    (vals, inds)
}

/// `topk.values(self, k, dim, largest, sorted, values, indices)` (always sorted).
fn topk(c: &Call<'_>) -> Result<Vec<Result1>> {
    let x = c.tensor(0)?;
    let k = c.int(1)?;
    let rank = x.sizes.len();
    let dim = c.dim(2, rank)?;
    let largest = c.bool(3)?;
    let n = x.sizes.get(dim).copied().unwrap_or(1);
    if k < 0 || k as usize > n {
        return Err(c.err(format!("k = {k} out of range for a dim of size {n}")));
    }
    let (vi, vd) = c.out(5)?;
    let (ii, id) = c.out(6)?;
    let v = floats(c, x)?;
    let (lanes, split3) = sorted_lanes(&v, &x.sizes, dim, largest);
    let (vals, inds) = gather_lanes(&lanes, split3, k as usize);
    let mut sizes = x.sizes.clone();
    if !sizes.is_empty() {
        sizes[dim] = k as usize;
    }
    Ok(vec![
        Result1::new((vi, vd), sizes.clone(), vals),
        Result1::new((ii, id), sizes, inds),
    ])
}

/// `sort.values(self, dim, descending, values, indices)`.
fn sort(c: &Call<'_>) -> Result<Vec<Result1>> {
    let x = c.tensor(0)?;
    let dim = c.dim(1, x.sizes.len())?;
    let descending = c.bool(2)?;
    let (vi, vd) = c.out(3)?;
    let (ii, id) = c.out(4)?;
    let v = floats(c, x)?;
    let (lanes, split3) = sorted_lanes(&v, &x.sizes, dim, descending);
    let (vals, inds) = gather_lanes(&lanes, split3, split3.1);
    Ok(vec![
        Result1::new((vi, vd), x.sizes.clone(), vals),
        Result1::new((ii, id), x.sizes.clone(), inds),
    ])
}

/// `max.dim_max(self, dim, keepdim, max, max_values)` / `min.dim_min`: the extreme value
/// along `dim` and its first index (NaN wins, as in PyTorch).
fn reduce_index(c: &Call<'_>, is_max: bool) -> Result<Vec<Result1>> {
    let x = c.tensor(0)?;
    let rank = x.sizes.len();
    let dim = c.dim(1, rank)?;
    let keepdim = c.bool(2)?;
    let (vi, vd) = c.out(3)?;
    let (ii, id) = c.out(4)?;
    let v = floats(c, x)?;
    let (outer, n, inner) = split(&x.sizes, dim);
    if n == 0 {
        return Err(c.err("reduction over an empty dim"));
    }
    let mut vals = Vec::with_capacity(outer * inner);
    let mut inds = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for k in 0..inner {
            let (mut best, mut at) = (v[o * n * inner + k], 0);
            for j in 1..n {
                let cur = v[(o * n + j) * inner + k];
                if best.is_nan() {
                    break;
                }
                let better = cur.is_nan() || if is_max { cur > best } else { cur < best };
                if better {
                    best = cur;
                    at = j;
                }
            }
            vals.push(best);
            inds.push(at as f64);
        }
    }
    let mut sizes = x.sizes.clone();
    if !sizes.is_empty() {
        if keepdim {
            sizes[dim] = 1;
        } else {
            sizes.remove(dim);
        }
    }
    Ok(vec![
        Result1::new((vi, vd), sizes.clone(), vals),
        Result1::new((ii, id), sizes, inds),
    ])
}

/// `prod.int_out(self, dim, keepdim, dtype?, out)`: the product along `dim` (f64).
fn prod(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let rank = x.sizes.len();
    let dim = c.dim(1, rank)?;
    let keepdim = c.bool(2)?;
    let (idx, dtype) = c.out(4)?;
    let v = floats(c, x)?;
    let (outer, n, inner) = split(&x.sizes, dim);
    let mut data = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        for k in 0..inner {
            data.push((0..n).map(|j| v[(o * n + j) * inner + k]).product());
        }
    }
    let mut sizes = x.sizes.clone();
    if !sizes.is_empty() {
        if keepdim {
            sizes[dim] = 1;
        } else {
            sizes.remove(dim);
        }
    }
    Ok(Result1::new((idx, dtype), sizes, data))
}

/// The dims of an `int[]?` reduction argument at `pos` (None or empty: every dim).
fn reduce_dims(c: &Call<'_>, pos: usize, rank: usize) -> Result<Vec<usize>> {
    match c.value(pos)? {
        Value::Null => Ok((0..rank).collect()),
        Value::IntList(items) => {
            let list = crate::values::resolve_int_list(c.values, items, "reduction dims")?;
            if list.is_empty() {
                return Ok((0..rank).collect());
            }
            list.iter().map(|&d| c.wrap_dim(d, rank)).collect()
        }
        v => Err(c.err(format!(
            "argument {pos} is a {}, expected an int list",
            v.kind_name()
        ))),
    }
}

/// `f` over the elements of each group that `dims` reduce, in the kept dims' row-major
/// order; sizes with the reduced dims 1 (`keepdim`) or removed.
fn reduce(
    c: &Call<'_>,
    x: &TensorSlot,
    dims: &[usize],
    keepdim: bool,
    f: impl Fn(&[f64]) -> f64,
) -> Result<(Vec<usize>, Vec<f64>)> {
    let rank = x.sizes.len();
    let reduced: Vec<bool> = (0..rank).map(|d| dims.contains(&d)).collect();
    let kept: Vec<usize> = (0..rank)
        .map(|d| if reduced[d] { 1 } else { x.sizes[d] })
        .collect();
    let groups: usize = kept.iter().product();
    let strides = |sizes: &[usize]| -> Vec<usize> {
        (0..sizes.len())
            .map(|d| sizes[d + 1..].iter().product())
            .collect()
    };
    let (xs, ks) = (strides(&x.sizes), strides(&kept));
    let mut members = vec![Vec::new(); groups];
    for (i, e) in floats(c, x)?.into_iter().enumerate() {
        let g: usize = (0..rank)
            .map(|d| {
                if reduced[d] {
                    0
                } else {
                    (i / xs[d]) % x.sizes[d] * ks[d]
                }
            })
            .sum();
        members[g].push(e);
    }
    let data = members.iter().map(|m| f(m)).collect();
    let sizes = if keepdim {
        kept
    } else {
        (0..rank)
            .filter(|&d| !reduced[d])
            .map(|d| x.sizes[d])
            .collect()
    };
    Ok((sizes, data))
}

/// `var.correction_out(self, dim?, correction?, keepdim, out)`: the variance over `dim`
/// (all dims when None or empty) with `correction` (default 1) subtracted from the count.
fn var(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let dims = reduce_dims(c, 1, x.sizes.len())?;
    let correction = match c.value(2)? {
        Value::Null => 1.0,
        _ => c.number(2)?,
    };
    let keepdim = c.bool(3)?;
    let (idx, dtype) = c.out(4)?;
    let (sizes, data) = reduce(c, x, &dims, keepdim, |m| {
        let mean = m.iter().sum::<f64>() / m.len().max(1) as f64;
        let sq: f64 = m.iter().map(|e| (e - mean).powi(2)).sum();
        sq / (m.len() as f64 - correction).max(0.0)
    })?;
    Ok(Result1::new((idx, dtype), sizes, data))
}

/// `sum.IntList_out(self, dim?, keepdim, dtype?, out)` and `mean.dtype_out(self, dtype?,
/// out)` (every dim), accumulated in f64.
fn sum_mean(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let rank = x.sizes.len();
    let (dims, keepdim, out_pos, mean) = if c.op == "aten::mean.dtype_out" {
        ((0..rank).collect(), false, 2, true)
    } else {
        (reduce_dims(c, 1, rank)?, c.bool(2)?, 4, false)
    };
    let (idx, dtype) = c.out(out_pos)?;
    let (sizes, data) = reduce(c, x, &dims, keepdim, |m| {
        let s: f64 = m.iter().sum();
        if mean {
            s / m.len() as f64
        } else {
            s
        }
    })?;
    Ok(Result1::new((idx, dtype), sizes, data))
}

/// `_native_batch_norm_legit.no_stats_out(input, weight?, bias?, training, momentum, eps,
/// out, save_mean, save_invstd)`: batch statistics per channel (dim 1) over every other
/// dim, biased variance; `out = (x - mean) * invstd * weight + bias`.
fn batch_norm_no_stats(c: &Call<'_>) -> Result<Vec<Result1>> {
    let x = c.tensor(0)?;
    if x.sizes.len() < 2 {
        return Err(c.err(format!("input {:?} needs a channel dim", x.sizes)));
    }
    let w = c.opt_tensor(1)?.map(|t| floats(c, t)).transpose()?;
    let b = c.opt_tensor(2)?.map(|t| floats(c, t)).transpose()?;
    let eps = c.number(5)?;
    let (oi, od) = c.out(6)?;
    let (mi, md) = c.out(7)?;
    let (si, sd) = c.out(8)?;
    let v = floats(c, x)?;
    let (outer, ch, inner) = split(&x.sizes, 1);
    for p in [&w, &b].into_iter().flatten() {
        if p.len() != ch {
            return Err(c.err(format!("{} affine parameters for {ch} channels", p.len())));
        }
    }
    let count = (outer * inner) as f64;
    if count == 0.0 {
        return Err(c.err("batch norm over no elements"));
    }
    let (mut means, mut invstds) = (Vec::with_capacity(ch), Vec::with_capacity(ch));
    for cc in 0..ch {
        let idx = |o: usize, k: usize| (o * ch + cc) * inner + k;
        let mut sum = 0.0;
        for o in 0..outer {
            for k in 0..inner {
                sum += v[idx(o, k)];
            }
        }
        let mean = sum / count;
        let mut sq = 0.0;
        for o in 0..outer {
            for k in 0..inner {
                sq += (v[idx(o, k)] - mean).powi(2);
            }
        }
        means.push(mean);
        invstds.push(1.0 / (sq / count + eps).sqrt());
    }
    let out = normalize_channels(&v, (outer, ch, inner), &means, &invstds, (&w, &b));
    Ok(vec![
        Result1::new((oi, od), x.sizes.clone(), out),
        Result1::new((mi, md), vec![ch], means),
        Result1::new((si, sd), vec![ch], invstds),
    ])
}

/// `_native_batch_norm_legit_no_training.out(input, weight?, bias?, running_mean,
/// running_var, momentum, eps, out0, out1, out2)`: per channel (dim 1)
/// `out0 = (x - running_mean) / sqrt(running_var + eps) * weight + bias`; out1 / out2 (the
/// saved statistics, which inference does not compute) come back empty, as ExecuTorch's
/// portable kernel leaves them.
fn batch_norm_inference(c: &Call<'_>) -> Result<Vec<Result1>> {
    let x = c.tensor(0)?;
    if x.sizes.len() < 2 {
        return Err(c.err(format!("input {:?} needs a channel dim", x.sizes)));
    }
    let (outer, ch, inner) = split(&x.sizes, 1);
    let per_channel = |pos: usize, what: &str| -> Result<Option<Vec<f64>>> {
        let Some(t) = c.opt_tensor(pos)? else {
            return Ok(None);
        };
        let v = floats(c, t)?;
        if v.len() != ch {
            return Err(c.err(format!("{} {what} values for {ch} channels", v.len())));
        }
        Ok(Some(v))
    };
    let w = per_channel(1, "weight")?;
    let b = per_channel(2, "bias")?;
    let mean = per_channel(3, "running_mean")?.ok_or_else(|| c.err("running_mean is required"))?;
    let var = per_channel(4, "running_var")?.ok_or_else(|| c.err("running_var is required"))?;
    let eps = c.number(6)?;
    let (oi, od) = c.out(7)?;
    let invstds: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
    let out = normalize_channels(
        &floats(c, x)?,
        (outer, ch, inner),
        &mean,
        &invstds,
        (&w, &b),
    );
    let mut results = vec![Result1::new((oi, od), x.sizes.clone(), out)];
    for pos in [8, 9] {
        let (i, d) = c.out(pos)?;
        results.push(Result1::new((i, d), vec![0], Vec::new()));
    }
    Ok(results)
}

/// `_adaptive_avg_pool2d.out(self, output_size, out)` over the last two dims of a 3-D or
/// 4-D input: output cell (i, j) averages rows floor(i * H / oh) .. ceil((i + 1) * H / oh)
/// and the columns alike (PyTorch's bins, which overlap where oh does not divide H).
fn adaptive_avg_pool2d(c: &Call<'_>) -> Result<Result1> {
    let x = c.tensor(0)?;
    let rank = x.sizes.len();
    if !(3..=4).contains(&rank) {
        return Err(c.err(format!("input {:?} must be 3-D or 4-D", x.sizes)));
    }
    let size = c
        .opt_int_list(1)?
        .ok_or_else(|| c.err("output_size is required"))?;
    let [oh, ow] = size[..] else {
        return Err(c.err(format!("output_size {size:?} must have two entries")));
    };
    let (h, w) = (x.sizes[rank - 2], x.sizes[rank - 1]);
    if oh <= 0 || ow <= 0 || h == 0 || w == 0 {
        return Err(c.err(format!(
            "output_size {size:?} must be positive over an input of {h} x {w}"
        )));
    }
    let (oh, ow) = (oh as usize, ow as usize);
    let mut sizes = x.sizes[..rank - 2].to_vec();
    sizes.extend([oh, ow]);
    c.check_out(2, &sizes)?;
    let planes: usize = x.sizes[..rank - 2].iter().product();
    let v = floats(c, x)?;
    let bin = |i: usize, n: usize, o: usize| (i * n / o, ((i + 1) * n).div_ceil(o));
    let mut out = Vec::with_capacity(planes * oh * ow);
    for p in 0..planes {
        let plane = &v[p * h * w..(p + 1) * h * w];
        for i in 0..oh {
            let (r0, r1) = bin(i, h, oh);
            for j in 0..ow {
                let (c0, c1) = bin(j, w, ow);
                let mut sum = 0.0;
                for r in r0..r1 {
                    sum += plane[r * w + c0..r * w + c1].iter().sum::<f64>();
                }
                out.push(sum / ((r1 - r0) * (c1 - c0)) as f64);
            }
        }
    }
    let (oi, od) = c.out(2)?;
    Ok(Result1::new((oi, od), sizes, out))
}

/// `(x - mean[c]) * invstd[c] * weight[c] + bias[c]` over the channels (dim 1) of `v`, laid
/// out as `split` gives them; absent weight / bias count as 1 / 0. Both batch norms' last
/// step.
fn normalize_channels(
    v: &[f64],
    (outer, ch, inner): Split,
    mean: &[f64],
    invstd: &[f64],
    (w, b): (&Option<Vec<f64>>, &Option<Vec<f64>>),
) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    for cc in 0..ch {
        let (wc, bc) = (
            w.as_ref().map_or(1.0, |w| w[cc]),
            b.as_ref().map_or(0.0, |b| b[cc]),
        );
        for o in 0..outer {
            let base = (o * ch + cc) * inner;
            for k in base..base + inner {
                out[k] = (v[k] - mean[cc]) * invstd[cc] * wc + bc;
            }
        }
    }
    out
}
