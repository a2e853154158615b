//! Portable CPU kernels: the few ExecuTorch `out`-variant operators that exporters leave
//! outside the delegate.
//!
//! A `KernelCall`'s args are the schema arguments followed by the out tensor(s); the
//! emitter also appends the return value, which is the out tensor again. Each kernel knows
//! its schema length; any further args are treated as aliases of the output and receive
//! the same result.

use crate::dtype::{read_scalar, write_scalar, DType, Scalar};
use crate::error::{HostError, Result};
use crate::values::{resolve_int_list, TensorSlot, Value};

/// The operators this host runs on the CPU, as `name.overload` (`aten::copy_` has the
/// default overload, spelled without a suffix).
pub const SUPPORTED_KERNELS: &[&str] = &[
    "aten::copy_",
    "aten::copy.out",
    "aten::expand_copy.out",
    "aten::mul.Scalar_out",
    "aten::any.out",
    "aten::any.all_out",
    "aten::any.dims_out",
    "aten::scalar_tensor.out",
    "aten::full_like.out",
    "quantized_decomposed::embedding_byte.out",
    "quantized_decomposed::embedding_byte.dtype_out",
];

/// `name.overload`, or `name` for the default overload.
pub fn qualified_name(name: &str, overload: &str) -> String {
    if overload.is_empty() || overload == "default" {
        name.to_string()
    } else {
        format!("{name}.{overload}")
    }
}

/// A computed result: sizes and bytes of the output's dtype.
struct Out {
    sizes: Vec<usize>,
    data: Vec<u8>,
}

struct Ctx<'a> {
    op: &'a str,
    values: &'a [Value],
    args: &'a [usize],
}

impl<'a> Ctx<'a> {
    fn err(&self, message: impl Into<String>) -> HostError {
        HostError::Kernel {
            op: self.op.to_string(),
            message: message.into(),
        }
    }

    fn value(&self, pos: usize) -> Result<&'a Value> {
        let idx = *self
            .args
            .get(pos)
            .ok_or_else(|| self.err(format!("missing argument {pos}")))?;
        self.values
            .get(idx)
            .ok_or_else(|| self.err(format!("argument {pos}: value {idx} out of range")))
    }

    fn tensor(&self, pos: usize) -> Result<&'a TensorSlot> {
        match self.value(pos)? {
            Value::Tensor(t) => Ok(t),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected a Tensor",
                v.kind_name()
            ))),
        }
    }

    fn int(&self, pos: usize) -> Result<i64> {
        match self.value(pos)? {
            Value::Int(i) => Ok(*i),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected an Int",
                v.kind_name()
            ))),
        }
    }

    fn bool_or(&self, pos: usize, default: bool) -> Result<bool> {
        match self.value(pos)? {
            Value::Bool(b) => Ok(*b),
            Value::Null => Ok(default),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected a Bool",
                v.kind_name()
            ))),
        }
    }

    fn scalar(&self, pos: usize) -> Result<Scalar> {
        match self.value(pos)? {
            Value::Int(i) => Ok(Scalar::Int(*i)),
            Value::Double(d) => Ok(Scalar::Float(*d)),
            Value::Bool(b) => Ok(Scalar::Bool(*b)),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected a Scalar",
                v.kind_name()
            ))),
        }
    }

    /// An `int[]?` argument: `None` for a Null value.
    fn opt_int_list(&self, pos: usize) -> Result<Option<Vec<i64>>> {
        match self.value(pos)? {
            Value::IntList(items) => Ok(Some(resolve_int_list(
                self.values,
                items,
                &format!("{} argument {pos}", self.op),
            )?)),
            Value::Null => Ok(None),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected an IntList",
                v.kind_name()
            ))),
        }
    }

    /// Wrap a possibly negative dim for a tensor of rank `rank` (rank 0 accepts 0 / -1).
    fn wrap_dim(&self, dim: i64, rank: usize) -> Result<usize> {
        let r = rank.max(1) as i64;
        let d = if dim < 0 { dim + r } else { dim };
        if d < 0 || d >= r {
            return Err(self.err(format!("dim {dim} out of range for rank {rank}")));
        }
        Ok(d as usize)
    }
}

/// The kernels of [`SUPPORTED_KERNELS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kernel {
    CopyInPlace,
    CopyOut,
    ExpandCopy,
    MulScalar,
    AnyDim,
    AnyAll,
    AnyDims,
    ScalarTensor,
    FullLike,
    /// `.dtype_out` when true (a `ScalarType? dtype` before the out tensor).
    EmbeddingByte(bool),
}

impl Kernel {
    fn from_name(op: &str) -> Option<Kernel> {
        Some(match op {
            "aten::copy_" => Kernel::CopyInPlace,
            "aten::copy.out" => Kernel::CopyOut,
            "aten::expand_copy.out" => Kernel::ExpandCopy,
            "aten::mul.Scalar_out" => Kernel::MulScalar,
            "aten::any.out" => Kernel::AnyDim,
            "aten::any.all_out" => Kernel::AnyAll,
            "aten::any.dims_out" => Kernel::AnyDims,
            "aten::scalar_tensor.out" => Kernel::ScalarTensor,
            "aten::full_like.out" => Kernel::FullLike,
            "quantized_decomposed::embedding_byte.out" => Kernel::EmbeddingByte(false),
            "quantized_decomposed::embedding_byte.dtype_out" => Kernel::EmbeddingByte(true),
            _ => return None,
        })
    }

    /// (number of schema args including the out tensor, position of the output).
    fn layout(self) -> (usize, usize) {
        match self {
            Kernel::CopyInPlace => (3, 0),
            Kernel::CopyOut
            | Kernel::ExpandCopy
            | Kernel::AnyDim
            | Kernel::AnyDims
            | Kernel::FullLike => (4, 3),
            Kernel::MulScalar => (3, 2),
            Kernel::AnyAll | Kernel::ScalarTensor => (2, 1),
            Kernel::EmbeddingByte(false) => (7, 6),
            Kernel::EmbeddingByte(true) => (8, 7),
        }
    }
}

/// Whether `op` (as [`qualified_name`] spells it) has a CPU kernel here.
pub fn is_supported(op: &str) -> bool {
    Kernel::from_name(op).is_some()
}

/// Run kernel `op` (as [`qualified_name`] spells it) on `values` with plan arg indices `args`.
pub fn run_kernel(op: &str, values: &mut [Value], args: &[usize]) -> Result<()> {
    let kernel = Kernel::from_name(op).ok_or_else(|| {
        HostError::Unsupported(format!(
            "operator {op} has no portable CPU kernel in etvk-host"
        ))
    })?;
    let (schema_len, out_pos) = kernel.layout();
    if args.len() < schema_len {
        return Err(HostError::Kernel {
            op: op.to_string(),
            message: format!("{} arguments, the schema needs {schema_len}", args.len()),
        });
    }
    let (out, out_dtype) = {
        let c = Ctx { op, values, args };
        let out_t = c.tensor(out_pos)?;
        let out_dtype = out_t.dtype;
        let out = match kernel {
            Kernel::CopyInPlace => {
                let dst = out_t;
                let src = c.tensor(1)?;
                let data = broadcast_cast(&c, src, &dst.sizes, out_dtype)?;
                Out {
                    sizes: dst.sizes.clone(),
                    data,
                }
            }
            Kernel::CopyOut => {
                let shape = c.tensor(0)?.sizes.clone();
                let data = broadcast_cast(&c, c.tensor(1)?, &shape, out_dtype)?;
                Out { sizes: shape, data }
            }
            Kernel::ExpandCopy => expand_copy(&c, out_dtype)?,
            Kernel::MulScalar => mul_scalar(&c, out_dtype)?,
            Kernel::AnyDim => {
                let src = c.tensor(0)?;
                let dim = c.wrap_dim(c.int(1)?, src.sizes.len())?;
                let keepdim = c.bool_or(2, false)?;
                any_reduce(&c, src, &[dim], keepdim, out_dtype)?
            }
            Kernel::AnyAll => {
                let src = c.tensor(0)?;
                let dims: Vec<usize> = (0..src.sizes.len()).collect();
                any_reduce(&c, src, &dims, false, out_dtype)?
            }
            Kernel::AnyDims => {
                let src = c.tensor(0)?;
                let keepdim = c.bool_or(2, false)?;
                let dims = match c.opt_int_list(1)? {
                    // An absent or empty dim list reduces over every dim, as in PyTorch.
                    None => (0..src.sizes.len()).collect(),
                    Some(d) if d.is_empty() => (0..src.sizes.len()).collect(),
                    Some(d) => d
                        .iter()
                        .map(|&x| c.wrap_dim(x, src.sizes.len()))
                        .collect::<Result<Vec<_>>>()?,
                };
                any_reduce(&c, src, &dims, keepdim, out_dtype)?
            }
            Kernel::EmbeddingByte(_) => embedding_byte(&c, out_dtype)?,
            Kernel::FullLike => {
                // `full_like.out(Tensor self, Scalar fill_value, *, MemoryFormat?
                // memory_format, Tensor(a!) out)`: self's sizes, every element fill_value.
                let sizes = c.tensor(0)?.sizes.clone();
                let fill = c.scalar(1)?;
                let n = sizes.iter().product::<usize>();
                let mut data = vec![0u8; n * out_dtype.size_bytes()];
                for i in 0..n {
                    write_scalar(out_dtype, &mut data, i, fill)?;
                }
                Out { sizes, data }
            }
            Kernel::ScalarTensor => {
                let s = c.scalar(0)?;
                let mut data = vec![0u8; out_dtype.size_bytes()];
                write_scalar(out_dtype, &mut data, 0, s)?;
                Out {
                    sizes: Vec::new(),
                    data,
                }
            }
        };
        (out, out_dtype)
    };
    // The out tensor, then any trailing return-value aliases that are distinct values.
    let mut targets = vec![args[out_pos]];
    for &a in &args[schema_len..] {
        if !targets.contains(&a) {
            targets.push(a);
        }
    }
    for idx in targets {
        match values.get_mut(idx) {
            Some(Value::Tensor(t)) if t.dtype != out_dtype => {
                return Err(HostError::Kernel {
                    op: op.to_string(),
                    message: format!(
                        "output value {idx} is {}, the out tensor is {out_dtype}",
                        t.dtype
                    ),
                })
            }
            Some(Value::Tensor(t)) => {
                t.store(&out.sizes, &out.data, &format!("{op} output (value {idx})"))?
            }
            Some(v) => {
                return Err(HostError::Kernel {
                    op: op.to_string(),
                    message: format!(
                        "output value {idx} is a {}, expected a Tensor",
                        v.kind_name()
                    ),
                })
            }
            None => {
                return Err(HostError::Kernel {
                    op: op.to_string(),
                    message: format!("output value {idx} out of range"),
                })
            }
        }
    }
    Ok(())
}

/// Row-major strides of `sizes`.
fn strides(sizes: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; sizes.len()];
    for i in (0..sizes.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * sizes[i + 1];
    }
    s
}

/// For each element of an `out_sizes` tensor, the index of the `in_sizes` element it reads
/// under numpy broadcasting (right-aligned; input dims of 1 repeat).
fn broadcast_indices(c: &Ctx<'_>, in_sizes: &[usize], out_sizes: &[usize]) -> Result<Vec<usize>> {
    if in_sizes.len() > out_sizes.len() {
        return Err(c.err(format!(
            "cannot broadcast sizes {in_sizes:?} to {out_sizes:?}"
        )));
    }
    let lead = out_sizes.len() - in_sizes.len();
    let in_strides = strides(in_sizes);
    // Effective input stride per output dim (0 where the input broadcasts).
    let mut eff = vec![0usize; out_sizes.len()];
    for (j, (&is, &st)) in in_sizes.iter().zip(&in_strides).enumerate() {
        let os = out_sizes[lead + j];
        if is == os {
            eff[lead + j] = st;
        } else if is != 1 {
            return Err(c.err(format!(
                "cannot broadcast sizes {in_sizes:?} to {out_sizes:?}"
            )));
        }
    }
    let numel: usize = out_sizes.iter().product();
    let mut idx = Vec::with_capacity(numel);
    let mut counter = vec![0usize; out_sizes.len()];
    let mut off = 0usize;
    for _ in 0..numel {
        idx.push(off);
        // Odometer increment, keeping `off` in step.
        for d in (0..out_sizes.len()).rev() {
            counter[d] += 1;
            off += eff[d];
            if counter[d] < out_sizes[d] {
                break;
            }
            off -= eff[d] * counter[d];
            counter[d] = 0;
        }
    }
    Ok(idx)
}

/// `src` broadcast to `out_sizes` and cast to `out_dtype`.
fn broadcast_cast(
    c: &Ctx<'_>,
    src: &TensorSlot,
    out_sizes: &[usize],
    out_dtype: DType,
) -> Result<Vec<u8>> {
    let idx = broadcast_indices(c, &src.sizes, out_sizes)?;
    let bytes = src.bytes();
    let es = out_dtype.size_bytes();
    let mut out = vec![0u8; idx.len() * es];
    if src.dtype == out_dtype {
        for (o, &i) in idx.iter().enumerate() {
            out[o * es..(o + 1) * es].copy_from_slice(&bytes[i * es..(i + 1) * es]);
        }
    } else {
        for (o, &i) in idx.iter().enumerate() {
            write_scalar(out_dtype, &mut out, o, read_scalar(src.dtype, bytes, i)?)?;
        }
    }
    Ok(out)
}

/// `quantized_decomposed::embedding_byte.(dtype_)out(Tensor weight, Tensor weight_scales,
/// Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max, Tensor indices,
/// (*, ScalarType? dtype,) Tensor(a!) out)`: rows of an 8-bit table, `(w - zp) * scale` with
/// one scale (and zero point) per row or per group of `D / groups` columns (the exporter's
/// `--embedding-quantize 8,G`, which the Vulkan partitioner leaves on the CPU).
fn embedding_byte(c: &Ctx<'_>, out_dtype: DType) -> Result<Out> {
    let (w, sc, idx) = (c.tensor(0)?, c.tensor(1)?, c.tensor(5)?);
    let zp = match c.value(2)? {
        Value::Null => None,
        _ => Some(c.tensor(2)?),
    };
    let (vocab, d) = match w.sizes.as_slice() {
        &[v, d] if d > 0 => (v, d),
        s => return Err(c.err(format!("weight sizes {s:?}: expected [V, D]"))),
    };
    let groups = match sc.sizes.as_slice() {
        &[v] if v == vocab => 1,
        &[v, g] if v == vocab && g > 0 && d % g == 0 => g,
        s => {
            return Err(c.err(format!(
                "weight_scales sizes {s:?} do not fit the weight [{vocab}, {d}] ([V] or [V, G], G dividing D)"
            )))
        }
    };
    if let Some(z) = zp {
        if z.sizes.iter().product::<usize>() != vocab * groups {
            return Err(c.err(format!(
                "weight_zero_points sizes {:?} differ from the scales' {:?}",
                z.sizes, sc.sizes
            )));
        }
    }
    let per = d / groups;
    let n = idx.sizes.iter().product::<usize>();
    let mut data = vec![0u8; n * d * out_dtype.size_bytes()];
    for i in 0..n {
        let t = match read_scalar(idx.dtype, &idx.data, i)? {
            Scalar::Int(t) => t,
            other => return Err(c.err(format!("index {other:?} is not an integer"))),
        };
        let row = usize::try_from(t)
            .ok()
            .filter(|&r| r < vocab)
            .ok_or_else(|| c.err(format!("index {t} out of range for the {vocab}-row table")))?;
        for col in 0..d {
            let q = scalar_f64(read_scalar(w.dtype, &w.data, row * d + col)?);
            let g = row * groups + col / per;
            let s = scalar_f64(read_scalar(sc.dtype, &sc.data, g)?);
            let z = match zp {
                Some(z) => scalar_f64(read_scalar(z.dtype, &z.data, g)?),
                None => 0.0,
            };
            // In the scale's float type, as ExecuTorch's kernel computes it.
            let v = ((q - z) as f32 * s as f32) as f64;
            write_scalar(out_dtype, &mut data, i * d + col, Scalar::Float(v))?;
        }
    }
    let mut sizes = idx.sizes.clone();
    sizes.push(d);
    Ok(Out { sizes, data })
}

fn scalar_f64(s: Scalar) -> f64 {
    match s {
        Scalar::Bool(b) => f64::from(u8::from(b)),
        Scalar::Int(i) => i as f64,
        Scalar::Float(f) => f,
    }
}

/// `expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, Tensor(a!) out)`.
fn expand_copy(c: &Ctx<'_>, out_dtype: DType) -> Result<Out> {
    let src = c.tensor(0)?;
    let size = c
        .opt_int_list(1)?
        .ok_or_else(|| c.err("argument 1 (size) is None"))?;
    // `implicit` only matters to autograd; read it to check the argument's type.
    let _implicit = c.bool_or(2, false)?;
    if size.len() < src.sizes.len() {
        return Err(c.err(format!(
            "size {size:?} has fewer dims than the input's {:?}",
            src.sizes
        )));
    }
    let lead = size.len() - src.sizes.len();
    let mut out_sizes = Vec::with_capacity(size.len());
    for (i, &s) in size.iter().enumerate() {
        let v = if i < lead {
            if s < 0 {
                return Err(c.err(format!(
                    "size {size:?}: -1 is not allowed for a new leading dim {i}"
                )));
            }
            s as usize
        } else {
            let have = src.sizes[i - lead];
            if s == -1 {
                have
            } else if s < 0 {
                return Err(c.err(format!("size {size:?}: negative size {s} at dim {i}")));
            } else if have != 1 && have as i64 != s {
                return Err(c.err(format!(
                    "cannot expand input of sizes {:?} to {size:?}: dim {i} is {have}",
                    src.sizes
                )));
            } else {
                s as usize
            }
        };
        out_sizes.push(v);
    }
    let data = broadcast_cast(c, src, &out_sizes, out_dtype)?;
    Ok(Out {
        sizes: out_sizes,
        data,
    })
}

/// `mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)`.
fn mul_scalar(c: &Ctx<'_>, out_dtype: DType) -> Result<Out> {
    let src = c.tensor(0)?;
    let other = c.scalar(1)?;
    let bytes = src.bytes();
    let n = src.numel();
    let mut data = vec![0u8; n * out_dtype.size_bytes()];
    let float = src.dtype.is_float() || out_dtype.is_float() || matches!(other, Scalar::Float(_));
    for i in 0..n {
        let a = read_scalar(src.dtype, bytes, i)?;
        let r = if float {
            Scalar::Float(a.as_f64() * other.as_f64())
        } else if let (Scalar::Bool(x), Scalar::Bool(y)) = (a, other) {
            Scalar::Bool(x && y)
        } else {
            Scalar::Int(a.as_i64().wrapping_mul(other.as_i64()))
        };
        write_scalar(out_dtype, &mut data, i, r)?;
    }
    Ok(Out {
        sizes: src.sizes.clone(),
        data,
    })
}

/// Logical-or reduction of `src` over `dims` (deduplicated), cast to `out_dtype`.
fn any_reduce(
    c: &Ctx<'_>,
    src: &TensorSlot,
    dims: &[usize],
    keepdim: bool,
    out_dtype: DType,
) -> Result<Out> {
    let rank = src.sizes.len();
    let mut reduce = vec![false; rank];
    for &d in dims {
        if d < rank {
            reduce[d] = true;
        }
    }
    // Reduced dims become 1 (keepdim) or disappear.
    let kept_sizes: Vec<usize> = src
        .sizes
        .iter()
        .zip(&reduce)
        .map(|(&s, &r)| if r { 1 } else { s })
        .collect();
    let out_sizes: Vec<usize> = if keepdim {
        kept_sizes.clone()
    } else {
        src.sizes
            .iter()
            .zip(&reduce)
            .filter(|(_, &r)| !r)
            .map(|(&s, _)| s)
            .collect()
    };
    let out_numel: usize = kept_sizes.iter().product();
    let mut acc = vec![false; out_numel];
    let kept_strides = strides(&kept_sizes);
    let bytes = src.bytes();
    let mut counter = vec![0usize; rank];
    for i in 0..src.numel() {
        let o: usize = counter
            .iter()
            .zip(&kept_strides)
            .zip(&reduce)
            .map(|((&k, &s), &r)| if r { 0 } else { k * s })
            .sum();
        if read_scalar(src.dtype, bytes, i)?.as_bool() {
            acc[o] = true;
        }
        for d in (0..rank).rev() {
            counter[d] += 1;
            if counter[d] < src.sizes[d] {
                break;
            }
            counter[d] = 0;
        }
    }
    if !matches!(out_dtype, DType::Bool | DType::U8) {
        return Err(c.err(format!("out dtype {out_dtype} must be bool or uint8")));
    }
    let mut data = vec![0u8; out_numel * out_dtype.size_bytes()];
    for (i, &b) in acc.iter().enumerate() {
        write_scalar(out_dtype, &mut data, i, Scalar::Bool(b))?;
    }
    Ok(Out {
        sizes: out_sizes,
        data,
    })
}
