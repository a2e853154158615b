//! Portable CPU kernels: the few ExecuTorch `out`-variant operators that exporters leave
//! outside the delegate.
//!
//! A `KernelCall`'s args are the schema arguments followed by the out tensor(s); the
//! emitter also appends the return value, which is the out tensor again. Each kernel knows
//! its schema length; any further args are treated as aliases of the output and receive
//! the same result.

use crate::dtype::{f16_to_f32, f32_to_f16, read_scalar, write_scalar, DType, Scalar};
use crate::error::{HostError, Result};
use crate::tensor::{alloc_zeroed, checked_numel};
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
    "aten::as_strided_copy.out",
    "aten::mean.out",
    "aten::convolution.out",
    "aten::slice_scatter.out",
    "aten::fmod.Scalar_out",
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

/// One kernel call's arguments (value indices into `values`), read with the schema's types.
pub(crate) struct Ctx<'a> {
    pub(crate) op: &'a str,
    pub(crate) values: &'a [Value],
    pub(crate) args: &'a [usize],
}

impl<'a> Ctx<'a> {
    pub(crate) fn err(&self, message: impl Into<String>) -> HostError {
        HostError::Kernel {
            op: self.op.to_string(),
            message: message.into(),
        }
    }

    /// The out tensor at `pos` must take a result of `sizes`: checked before the kernel
    /// computes it, so that sizes a damaged program derives from its arguments fail as an
    /// error instead of first costing the time and memory of the result.
    pub(crate) fn check_out(&self, pos: usize, sizes: &[usize]) -> Result<()> {
        self.tensor(pos)?
            .check_fits(sizes, &format!("the out tensor (argument {pos})"))
            .map_err(|e| self.err(e.to_string()))
    }

    pub(crate) fn value(&self, pos: usize) -> Result<&'a Value> {
        let idx = *self
            .args
            .get(pos)
            .ok_or_else(|| self.err(format!("missing argument {pos}")))?;
        self.values
            .get(idx)
            .ok_or_else(|| self.err(format!("argument {pos}: value {idx} out of range")))
    }

    pub(crate) fn tensor(&self, pos: usize) -> Result<&'a TensorSlot> {
        match self.value(pos)? {
            Value::Tensor(t) => Ok(t),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected a Tensor",
                v.kind_name()
            ))),
        }
    }

    pub(crate) fn int(&self, pos: usize) -> Result<i64> {
        match self.value(pos)? {
            Value::Int(i) => Ok(*i),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected an Int",
                v.kind_name()
            ))),
        }
    }

    /// An `int?` argument: `None` for a Null value.
    pub(crate) fn opt_int(&self, pos: usize) -> Result<Option<i64>> {
        match self.value(pos)? {
            Value::Int(i) => Ok(Some(*i)),
            Value::Null => Ok(None),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected an Int or None",
                v.kind_name()
            ))),
        }
    }

    /// A `ScalarType?` argument (an Int holding the ScalarType code): `None` for Null.
    pub(crate) fn opt_dtype(&self, pos: usize) -> Result<Option<DType>> {
        match self.opt_int(pos)? {
            None => Ok(None),
            Some(code) => i32::try_from(code)
                .ok()
                .and_then(DType::from_code)
                .map(Some)
                .ok_or_else(|| {
                    self.err(format!(
                        "argument {pos}: ScalarType code {code} is not a dtype this host holds"
                    ))
                }),
        }
    }

    /// A required `bool` argument.
    pub(crate) fn bool(&self, pos: usize) -> Result<bool> {
        match self.value(pos)? {
            Value::Bool(b) => Ok(*b),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected a Bool",
                v.kind_name()
            ))),
        }
    }

    pub(crate) fn bool_or(&self, pos: usize, default: bool) -> Result<bool> {
        match self.value(pos)? {
            Value::Bool(b) => Ok(*b),
            Value::Null => Ok(default),
            v => Err(self.err(format!(
                "argument {pos} is a {}, expected a Bool",
                v.kind_name()
            ))),
        }
    }

    pub(crate) fn scalar(&self, pos: usize) -> Result<Scalar> {
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
    pub(crate) fn opt_int_list(&self, pos: usize) -> Result<Option<Vec<i64>>> {
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
    pub(crate) fn wrap_dim(&self, dim: i64, rank: usize) -> Result<usize> {
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
    AsStridedCopy,
    Mean,
    Convolution,
    SliceScatter,
    FmodScalar,
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
            "aten::as_strided_copy.out" => Kernel::AsStridedCopy,
            "aten::mean.out" => Kernel::Mean,
            "aten::convolution.out" => Kernel::Convolution,
            "aten::slice_scatter.out" => Kernel::SliceScatter,
            "aten::fmod.Scalar_out" => Kernel::FmodScalar,
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
            Kernel::MulScalar | Kernel::FmodScalar => (3, 2),
            Kernel::SliceScatter => (7, 6),
            Kernel::AsStridedCopy | Kernel::Mean => (5, 4),
            Kernel::AnyAll | Kernel::ScalarTensor => (2, 1),
            Kernel::Convolution => (10, 9),
            Kernel::EmbeddingByte(false) => (7, 6),
            Kernel::EmbeddingByte(true) => (8, 7),
        }
    }
}

/// Whether `op` (as [`qualified_name`] spells it) has a CPU kernel here (this module's or
/// [`crate::portable`]'s).
pub fn is_supported(op: &str) -> bool {
    Kernel::from_name(op).is_some() || crate::portable::is_supported(op)
}

/// Run kernel `op` (as [`qualified_name`] spells it) on `values` with plan arg indices `args`.
pub fn run_kernel(op: &str, values: &mut [Value], args: &[usize]) -> Result<()> {
    if let Some(done) = crate::portable::run(op, values, args) {
        return done;
    }
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
            Kernel::ExpandCopy => expand_copy(&c, out_pos, out_dtype)?,
            Kernel::MulScalar => mul_scalar(&c, out_dtype)?,
            Kernel::FmodScalar => fmod_scalar(&c, out_dtype)?,
            Kernel::SliceScatter => slice_scatter(&c, out_dtype)?,
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
            Kernel::EmbeddingByte(_) => embedding_byte(&c, out_pos, out_dtype)?,
            Kernel::AsStridedCopy => as_strided_copy(&c, out_t, out_dtype)?,
            Kernel::Mean => mean(&c, out_dtype)?,
            Kernel::Convolution => convolution(&c, out_t, out_dtype)?,
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
pub(crate) fn broadcast_indices(
    c: &Ctx<'_>,
    in_sizes: &[usize],
    out_sizes: &[usize],
) -> Result<Vec<usize>> {
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
fn embedding_byte(c: &Ctx<'_>, out_pos: usize, out_dtype: DType) -> Result<Out> {
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
    let mut sizes = idx.sizes.clone();
    sizes.push(d);
    c.check_out(out_pos, &sizes)?;
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
fn expand_copy(c: &Ctx<'_>, out_pos: usize, out_dtype: DType) -> Result<Out> {
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
    c.check_out(out_pos, &out_sizes)?;
    let data = broadcast_cast(c, src, &out_sizes, out_dtype)?;
    Ok(Out {
        sizes: out_sizes,
        data,
    })
}

/// `mul.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)`.
fn mul_scalar(c: &Ctx<'_>, out_dtype: DType) -> Result<Out> {
    map_with_scalar(c, out_dtype, |a, other, float| {
        Ok(if float {
            Scalar::Float(a.as_f64() * other.as_f64())
        } else if let (Scalar::Bool(x), Scalar::Bool(y)) = (a, other) {
            Scalar::Bool(x && y)
        } else {
            Scalar::Int(a.as_i64().wrapping_mul(other.as_i64()))
        })
    })
}

/// `fmod.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out)`: C's fmod (the remainder
/// with the dividend's sign), in floats when either side is a float (exact, so f64 gives the
/// fp32 result too), else in integers (a zero divisor is an error, as in PyTorch).
fn fmod_scalar(c: &Ctx<'_>, out_dtype: DType) -> Result<Out> {
    map_with_scalar(c, out_dtype, |a, other, float| {
        if float {
            Ok(Scalar::Float(a.as_f64() % other.as_f64()))
        } else if other.as_i64() == 0 {
            Err(c.err("integer fmod by zero"))
        } else {
            Ok(Scalar::Int(a.as_i64().wrapping_rem(other.as_i64())))
        }
    })
}

/// `op(self, Scalar other, out)` elementwise: `f(element, other, in floats)`, floats when the
/// tensor, the out tensor or the scalar is one.
fn map_with_scalar(
    c: &Ctx<'_>,
    out_dtype: DType,
    f: impl Fn(Scalar, Scalar, bool) -> Result<Scalar>,
) -> Result<Out> {
    let src = c.tensor(0)?;
    let other = c.scalar(1)?;
    let bytes = src.bytes();
    let n = src.numel();
    let mut data = vec![0u8; n * out_dtype.size_bytes()];
    let float = src.dtype.is_float() || out_dtype.is_float() || matches!(other, Scalar::Float(_));
    for i in 0..n {
        let r = f(read_scalar(src.dtype, bytes, i)?, other, float)?;
        write_scalar(out_dtype, &mut data, i, r)?;
    }
    Ok(Out {
        sizes: src.sizes.clone(),
        data,
    })
}

/// `slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt?
/// end=None, SymInt step=1, *, Tensor(a!) out)`: a copy of `self` whose slice
/// `start:end:step` along `dim` (Python's clamping of negative and out-of-range bounds) is
/// replaced by `src`, which must have the slice's sizes.
fn slice_scatter(c: &Ctx<'_>, out_dtype: DType) -> Result<Out> {
    let base = c.tensor(0)?;
    let src = c.tensor(1)?;
    let rank = base.sizes.len();
    if rank == 0 {
        return Err(c.err("slice_scatter of a rank-0 tensor"));
    }
    let dim = c.wrap_dim(c.int(2)?, rank)?;
    let size = base.sizes[dim] as i64;
    let step = c.int(5)?;
    if step <= 0 {
        return Err(c.err(format!("step {step} must be positive")));
    }
    let clamp = |v: i64| {
        let v = if v < 0 { v + size } else { v };
        v.clamp(0, size)
    };
    let start = clamp(c.opt_int(3)?.unwrap_or(0));
    let end = clamp(c.opt_int(4)?.unwrap_or(size)).max(start);
    let len = ((end - start) + step - 1) / step;
    let mut want = base.sizes.clone();
    want[dim] = len as usize;
    if src.sizes != want {
        return Err(c.err(format!(
            "src sizes {:?} do not match the slice {start}:{end}:{step} of dim {dim} of {:?} ({want:?})",
            src.sizes, base.sizes
        )));
    }
    let n = base.numel();
    let mut data = vec![0u8; n * out_dtype.size_bytes()];
    let (bb, sb) = (base.bytes(), src.bytes());
    for i in 0..n {
        write_scalar(out_dtype, &mut data, i, read_scalar(base.dtype, bb, i)?)?;
    }
    let inner: usize = base.sizes[dim + 1..].iter().product();
    let outer: usize = base.sizes[..dim].iter().product();
    let len = len as usize;
    for o in 0..outer {
        for j in 0..len {
            let d = start as usize + j * step as usize;
            for k in 0..inner {
                let si = (o * len + j) * inner + k;
                let di = (o * size as usize + d) * inner + k;
                write_scalar(out_dtype, &mut data, di, read_scalar(src.dtype, sb, si)?)?;
            }
        }
    }
    Ok(Out {
        sizes: base.sizes.clone(),
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

/// `as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride, SymInt?
/// storage_offset=None, *, Tensor(a!) out)`: the strided view of self's contiguous data,
/// copied out densely. Every element read is checked against self's storage, since sizes,
/// strides and the offset all come from the program.
fn as_strided_copy(c: &Ctx<'_>, out_t: &TensorSlot, out_dtype: DType) -> Result<Out> {
    let src = c.tensor(0)?;
    let size = c
        .opt_int_list(1)?
        .ok_or_else(|| c.err("argument 1 (size) is None"))?;
    let stride = c
        .opt_int_list(2)?
        .ok_or_else(|| c.err("argument 2 (stride) is None"))?;
    // ExecuTorch tensors own dense storage of their own, so None means element 0 of it.
    let offset = c.opt_int(3)?.unwrap_or(0);
    if src.dtype != out_dtype {
        return Err(c.err(format!(
            "self is {} but the out tensor is {out_dtype}; as_strided_copy does not cast",
            src.dtype
        )));
    }
    if size.len() != stride.len() {
        return Err(c.err(format!(
            "size {size:?} has {} dims but stride {stride:?} has {}",
            size.len(),
            stride.len()
        )));
    }
    if out_t.sizes.len() != size.len() {
        return Err(c.err(format!(
            "size {size:?} has {} dims but the out tensor has rank {}",
            size.len(),
            out_t.sizes.len()
        )));
    }
    let to_usize = |what: &str, list: &[i64]| -> Result<Vec<usize>> {
        list.iter()
            .enumerate()
            .map(|(d, &x)| {
                usize::try_from(x)
                    .map_err(|_| c.err(format!("{what} {list:?}: negative {what} {x} at dim {d}")))
            })
            .collect()
    };
    let sizes = to_usize("size", &size)?;
    let strides = to_usize("stride", &stride)?;
    let offset = usize::try_from(offset)
        .map_err(|_| c.err(format!("storage_offset {offset} is negative")))?;
    let numel = checked_numel(&sizes).map_err(|_| c.err(format!("size {size:?} overflows")))?;
    let storage = src.numel();
    if numel > 0 {
        // The furthest element the view reaches; strides are non-negative, so every other
        // element lies between the offset and it.
        let last = sizes
            .iter()
            .zip(&strides)
            .try_fold(offset, |acc, (&n, &st)| {
                (n - 1).checked_mul(st).and_then(|x| acc.checked_add(x))
            });
        match last {
            Some(l) if l < storage => {}
            _ => {
                let reach = last.map_or_else(|| "past usize::MAX".to_string(), |l| l.to_string());
                return Err(c.err(format!(
                    "size {size:?}, stride {stride:?}, storage_offset {offset} reach element {reach}, \
                     but self (sizes {:?}) holds {storage} elements",
                    src.sizes
                )));
            }
        }
    }
    let es = out_dtype.size_bytes();
    let nbytes = numel
        .checked_mul(es)
        .ok_or_else(|| c.err(format!("size {size:?} overflows")))?;
    // Refuse before allocating: a stride-0 view can ask for far more than self holds.
    out_t
        .check_fits(&sizes, "the out tensor")
        .map_err(|e| c.err(e.to_string()))?;
    let mut data = alloc_zeroed(nbytes, &format!("{} output", c.op))?;
    let bytes = src.bytes();
    let rank = sizes.len();
    let mut counter = vec![0usize; rank];
    let mut at = offset;
    for o in 0..numel {
        let from = at
            .checked_mul(es)
            .and_then(|s| bytes.get(s..s + es))
            .ok_or_else(|| c.err(format!("element {at} outside self's {} bytes", bytes.len())))?;
        data[o * es..(o + 1) * es].copy_from_slice(from);
        // Odometer increment, keeping `at` in step. Wrapping: a stride of a size-1 dim is
        // never used and may be huge, and the step past the last element may overflow; the
        // modular sum is still exact wherever an element is read.
        for d in (0..rank).rev() {
            counter[d] += 1;
            at = at.wrapping_add(strides[d]);
            if counter[d] < sizes[d] {
                break;
            }
            at = at.wrapping_sub(strides[d].wrapping_mul(counter[d]));
            counter[d] = 0;
        }
    }
    Ok(Out { sizes, data })
}

/// `mean.out(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None,
/// Tensor(a!) out)`. Sums in f64 so long f16 / f32 reductions do not lose precision.
fn mean(c: &Ctx<'_>, out_dtype: DType) -> Result<Out> {
    let src = c.tensor(0)?;
    let rank = src.sizes.len();
    let keepdim = c.bool_or(2, false)?;
    if !src.dtype.is_float() {
        return Err(c.err(format!("self is {}, expected a float tensor", src.dtype)));
    }
    // A dtype other than self's would make ExecuTorch cast before summing; no exporter
    // writes one for mean, so it is refused rather than guessed at.
    match c.opt_dtype(3)? {
        Some(d) if d != src.dtype => {
            return Err(c.err(format!(
                "dtype {d} differs from self's {}; only None or the input's dtype is supported",
                src.dtype
            )))
        }
        Some(d) if d != out_dtype => {
            return Err(c.err(format!(
                "dtype {d} differs from the out tensor's {out_dtype}"
            )))
        }
        _ => {}
    }
    if !out_dtype.is_float() {
        return Err(c.err(format!("out dtype {out_dtype} is not a float type")));
    }
    let mut reduce = vec![false; rank];
    match c.opt_int_list(1)? {
        // An absent or empty dim list reduces over every dim, as in PyTorch.
        None => reduce.fill(true),
        Some(d) if d.is_empty() => reduce.fill(true),
        Some(d) => {
            for &x in &d {
                let w = c.wrap_dim(x, rank)?;
                // Rank 0 accepts dim 0 / -1, which reduce nothing.
                if w < rank {
                    if reduce[w] {
                        return Err(c.err(format!("dim {x} appears more than once in {d:?}")));
                    }
                    reduce[w] = true;
                }
            }
        }
    }
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
    let in_numel = src.numel();
    // Elements summed into each output; 0 for an empty reduced dim, giving NaN as PyTorch does.
    let count = in_numel.checked_div(out_numel).unwrap_or(0);
    let mut acc = vec![0f64; out_numel];
    let kept_strides = strides(&kept_sizes);
    let bytes = src.bytes();
    let mut counter = vec![0usize; rank];
    for i in 0..in_numel {
        let o: usize = counter
            .iter()
            .zip(&kept_strides)
            .zip(&reduce)
            .map(|((&k, &s), &r)| if r { 0 } else { k * s })
            .sum();
        acc[o] += read_scalar(src.dtype, bytes, i)?.as_f64();
        for d in (0..rank).rev() {
            counter[d] += 1;
            if counter[d] < src.sizes[d] {
                break;
            }
            counter[d] = 0;
        }
    }
    let mut data = vec![0u8; out_numel * out_dtype.size_bytes()];
    for (i, &s) in acc.iter().enumerate() {
        write_scalar(out_dtype, &mut data, i, Scalar::Float(s / count as f64))?;
    }
    Ok(Out {
        sizes: out_sizes,
        data,
    })
}

/// A float tensor's elements as f64, checking that its buffer holds every element.
fn floats(c: &Ctx<'_>, t: &TensorSlot, what: &str) -> Result<Vec<f64>> {
    let bytes = t.bytes();
    let need = checked_numel(&t.sizes)
        .ok()
        .and_then(|n| n.checked_mul(t.dtype.size_bytes()));
    if need != Some(bytes.len()) {
        return Err(c.err(format!(
            "{what} (sizes {:?}) holds {} bytes, fewer than its sizes need",
            t.sizes,
            bytes.len()
        )));
    }
    Ok(match t.dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect(),
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|b| f64::from(f16_to_f32(u16::from_le_bytes([b[0], b[1]]))))
            .collect(),
        DType::F64 => bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect(),
        d => return Err(c.err(format!("{what} is {d}, expected a float tensor"))),
    })
}

/// The `a` in `0..count` with `0 <= a * step + off < bound`, as a range (empty when none).
fn conv_range(count: usize, step: usize, off: i128, bound: usize) -> std::ops::Range<usize> {
    let (count_i, step_i, bound_i) = (count as i128, step as i128, bound as i128);
    let lo = if off >= 0 {
        0
    } else {
        (-off + step_i - 1) / step_i
    };
    let hi = if off >= bound_i {
        0
    } else {
        (bound_i - 1 - off) / step_i + 1
    };
    let (lo, hi) = (lo.min(count_i), hi.min(count_i));
    // Both lie in 0..=count, so they fit usize.
    lo as usize..hi.max(lo) as usize
}

/// One spatial geometry, padded to three dims (depth, height, width; a 1-D or 2-D
/// convolution has leading dims of size 1).
struct ConvGeom {
    /// Input sizes.
    input: [usize; 3],
    /// Output sizes.
    output: [usize; 3],
    kernel: [usize; 3],
    stride: [usize; 3],
    padding: [usize; 3],
    dilation: [usize; 3],
    transposed: bool,
}

impl ConvGeom {
    /// For kernel offset `k` along dim `i`: the range of iterated positions (output
    /// positions, or input positions when transposed) that pair with a position of the other
    /// tensor, and that other position for the range's first element; `None` when no
    /// position pairs. Consecutive iterated positions step `stride[i]` apart in the other
    /// tensor.
    fn pairs(&self, i: usize, k: usize) -> Option<(std::ops::Range<usize>, usize)> {
        let off = k as i128 * self.dilation[i] as i128 - self.padding[i] as i128;
        let (count, bound) = if self.transposed {
            (self.input[i], self.output[i])
        } else {
            (self.output[i], self.input[i])
        };
        let r = conv_range(count, self.stride[i], off, bound);
        if r.is_empty() {
            return None;
        }
        // In 0..bound, since the range is non-empty.
        let first = (r.start as i128 * self.stride[i] as i128 + off) as usize;
        Some((r, first))
    }

    /// Accumulate one (input channel, output channel) pair: `x` an input plane, `w` the
    /// kernel, `y` an output plane.
    fn accumulate(&self, x: &[f64], w: &[f64], y: &mut [f64]) {
        let [_, kh_n, kw_n] = self.kernel;
        let [_, ih_n, iw_n] = self.input;
        let [_, oh_n, ow_n] = self.output;
        let [_, sh, sw] = self.stride;
        for (ki, &wv) in w.iter().enumerate() {
            let (kd, kh, kw) = (ki / (kh_n * kw_n), (ki / kw_n) % kh_n, ki % kw_n);
            let (Some((rd, fd)), Some((rh, fh)), Some((rw, fw))) =
                (self.pairs(0, kd), self.pairs(1, kh), self.pairs(2, kw))
            else {
                continue;
            };
            let sd = self.stride[0];
            for (jd, ad) in rd.enumerate() {
                let bd = fd + jd * sd;
                for (jh, ah) in rh.clone().enumerate() {
                    let bh = fh + jh * sh;
                    if self.transposed {
                        // Iterating the input row; the output row is written every `sw`.
                        let xrow = &x[(ad * ih_n + ah) * iw_n..][..iw_n];
                        let yrow = &mut y[(bd * oh_n + bh) * ow_n..][..ow_n];
                        for (yv, xv) in yrow[fw..].iter_mut().step_by(sw).zip(&xrow[rw.clone()]) {
                            *yv += wv * xv;
                        }
                    } else {
                        // Iterating the output row; the input row is read every `sw`.
                        let xrow = &x[(bd * ih_n + bh) * iw_n..][..iw_n];
                        let yrow = &mut y[(ad * oh_n + ah) * ow_n..][..ow_n];
                        for (yv, xv) in yrow[rw.clone()]
                            .iter_mut()
                            .zip(xrow[fw..].iter().step_by(sw))
                        {
                            *yv += wv * xv;
                        }
                    }
                }
            }
        }
    }
}

/// `convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[]
/// padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, *,
/// Tensor(a!) out)`, as PyTorch defines it: a 1-, 2- or 3-D convolution of input
/// `[N, C_in, spatial...]` with weight `[C_out, C_in / groups, k...]` (transposed:
/// `[C_in, C_out / groups, k...]`), zero padding, stride and dilation; single-entry lists
/// apply to every spatial dim. ExecuTorch's Vulkan partitioner leaves convolutions with a
/// batch above 1 here. Accumulates in f64.
fn convolution(c: &Ctx<'_>, out_t: &TensorSlot, out_dtype: DType) -> Result<Out> {
    let input = c.tensor(0)?;
    let weight = c.tensor(1)?;
    let bias = match c.value(2)? {
        Value::Null => None,
        _ => Some(c.tensor(2)?),
    };
    let transposed = c.bool(6)?;
    let groups_arg = c.int(8)?;

    let dt = input.dtype;
    if !dt.is_float() {
        return Err(c.err(format!("input is {dt}, expected a float tensor")));
    }
    if weight.dtype != dt {
        return Err(c.err(format!(
            "weight is {} but the input is {dt}; the dtypes must match",
            weight.dtype
        )));
    }
    if let Some(b) = bias {
        if b.dtype != dt {
            return Err(c.err(format!(
                "bias is {} but the input is {dt}; the dtypes must match",
                b.dtype
            )));
        }
    }
    if out_dtype != dt {
        return Err(c.err(format!(
            "the out tensor is {out_dtype} but the input is {dt}; convolution does not cast"
        )));
    }
    let rank = input.sizes.len();
    if !(3..=5).contains(&rank) {
        return Err(c.err(format!(
            "input sizes {:?} have rank {rank}; expected 3 ([N, C, L]), 4 ([N, C, H, W]) or 5 ([N, C, D, H, W])",
            input.sizes
        )));
    }
    if weight.sizes.len() != rank {
        return Err(c.err(format!(
            "weight sizes {:?} have rank {} but the input {:?} has rank {rank}",
            weight.sizes,
            weight.sizes.len(),
            input.sizes
        )));
    }
    let nsp = rank - 2;
    // A spatial parameter list: one entry for every dim, or one per spatial dim.
    let spatial = |pos: usize, name: &str, min: i64| -> Result<Vec<usize>> {
        let list = c
            .opt_int_list(pos)?
            .ok_or_else(|| c.err(format!("argument {pos} ({name}) is None")))?;
        let expanded = match list.len() {
            1 => vec![list[0]; nsp],
            n if n == nsp => list.clone(),
            n => {
                return Err(c.err(format!(
                "{name} {list:?} has {n} entries; expected 1 or {nsp} (the input's spatial dims)"
            )))
            }
        };
        expanded
            .iter()
            .map(|&x| {
                usize::try_from(x)
                    .ok()
                    .filter(|&v| v as i64 >= min)
                    .ok_or_else(|| {
                        let rule = if min > 0 { "positive" } else { "non-negative" };
                        c.err(format!(
                            "{name} {list:?}: every entry must be {rule}, got {x}"
                        ))
                    })
            })
            .collect()
    };
    let stride = spatial(3, "stride", 1)?;
    let padding = spatial(4, "padding", 0)?;
    let dilation = spatial(5, "dilation", 1)?;
    let output_padding = spatial(7, "output_padding", 0)?;
    let groups = usize::try_from(groups_arg)
        .ok()
        .filter(|&g| g > 0)
        .ok_or_else(|| c.err(format!("groups {groups_arg} must be positive")))?;

    let (n, c_in) = (input.sizes[0], input.sizes[1]);
    let (w0, w1) = (weight.sizes[0], weight.sizes[1]);
    if c_in % groups != 0 {
        return Err(c.err(format!(
            "input channels {c_in} (input sizes {:?}) are not divisible by groups {groups}",
            input.sizes
        )));
    }
    let (c_out, icpg, ocpg) = if transposed {
        if w0 != c_in {
            return Err(c.err(format!(
                "transposed weight sizes {:?} ([C_in, C_out / groups, k...]) expect {w0} input channels, the input {:?} has {c_in}",
                weight.sizes, input.sizes
            )));
        }
        let c_out = w1.checked_mul(groups).ok_or_else(|| {
            c.err(format!(
                "weight sizes {:?} times groups {groups} overflow",
                weight.sizes
            ))
        })?;
        (c_out, c_in / groups, w1)
    } else {
        if w0 % groups != 0 {
            return Err(c.err(format!(
                "weight sizes {:?}: output channels {w0} are not divisible by groups {groups}",
                weight.sizes
            )));
        }
        if w1.checked_mul(groups) != Some(c_in) {
            return Err(c.err(format!(
                "weight sizes {:?} ([C_out, C_in / groups, k...]) with groups {groups} expect {w1} x {groups} input channels, the input {:?} has {c_in}",
                weight.sizes, input.sizes
            )));
        }
        (w0, w1, w0 / groups)
    };
    if let Some(b) = bias {
        if b.sizes.as_slice() != [c_out] {
            return Err(c.err(format!(
                "bias sizes {:?}, expected [{c_out}] (one per output channel)",
                b.sizes
            )));
        }
    }

    let mut out_sizes = vec![n, c_out];
    for i in 0..nsp {
        let in_i = input.sizes[2 + i] as i128;
        let k = weight.sizes[2 + i] as i128;
        let (s, p, d, op) = (
            stride[i] as i128,
            padding[i] as i128,
            dilation[i] as i128,
            output_padding[i] as i128,
        );
        if k == 0 {
            return Err(c.err(format!(
                "weight sizes {:?}: kernel size 0 at spatial dim {i}",
                weight.sizes
            )));
        }
        // The dilated kernel's extent, d * (k - 1) + 1.
        let extent = d.checked_mul(k - 1).and_then(|x| x.checked_add(1));
        let size = if transposed {
            if op >= s && op >= d {
                return Err(c.err(format!(
                    "output_padding {op} at spatial dim {i} must be smaller than the stride ({s}) or the dilation ({d})"
                )));
            }
            // (in - 1) * stride - 2 * padding + d * (k - 1) + output_padding + 1.
            let size = extent
                .and_then(|e| (in_i - 1).checked_mul(s)?.checked_add(e))
                .and_then(|x| x.checked_add(op)?.checked_sub(2 * p))
                .ok_or_else(|| c.err(format!("output size at spatial dim {i} overflows")))?;
            if size <= 0 {
                return Err(c.err(format!(
                    "transposed output size {size} at spatial dim {i} is not positive (input {in_i}, kernel {k}, stride {s}, padding {p}, dilation {d}, output_padding {op})"
                )));
            }
            size
        } else {
            let extent = extent
                .ok_or_else(|| c.err(format!("kernel extent at spatial dim {i} overflows")))?;
            let padded = in_i + 2 * p;
            if padded < extent {
                return Err(c.err(format!(
                    "kernel size {k} (dilation {d}, extent {extent}) at spatial dim {i} is larger than the padded input size {padded} (input sizes {:?}, padding {padding:?})",
                    input.sizes
                )));
            }
            (padded - extent) / s + 1
        };
        out_sizes.push(
            usize::try_from(size)
                .map_err(|_| c.err(format!("output size {size} at spatial dim {i} overflows")))?,
        );
    }

    // The out tensor must be able to take these sizes: check before computing.
    let numel = checked_numel(&out_sizes)
        .map_err(|_| c.err(format!("output sizes {out_sizes:?} overflow")))?;
    let nbytes = numel
        .checked_mul(out_dtype.size_bytes())
        .ok_or_else(|| c.err(format!("output sizes {out_sizes:?} overflow")))?;
    if out_t.sizes.len() != rank {
        return Err(c.err(format!(
            "the out tensor's sizes {:?} have rank {}, the output {out_sizes:?} rank {rank}",
            out_t.sizes,
            out_t.sizes.len()
        )));
    }
    if out_t.dynamism == 0 && out_t.sizes != out_sizes {
        return Err(c.err(format!(
            "the out tensor's static sizes {:?} differ from the output sizes {out_sizes:?}",
            out_t.sizes
        )));
    }
    if out_t.dynamism == 1 && nbytes > out_t.data.len() {
        return Err(c.err(format!(
            "output sizes {out_sizes:?} exceed the out tensor's bound {:?}",
            out_t.max_sizes
        )));
    }

    let x = floats(c, input, "input")?;
    let w = floats(c, weight, "weight")?;
    let b = bias.map(|t| floats(c, t, "bias")).transpose()?;
    let mut acc: Vec<f64> = Vec::new();
    acc.try_reserve_exact(numel)
        .map_err(|_| HostError::OutOfMemory(format!("{numel} accumulators for {} output", c.op)))?;
    acc.resize(numel, 0.0);

    let pad3 = |v: &[usize], fill: usize| -> [usize; 3] {
        let mut a = [fill; 3];
        a[3 - v.len()..].copy_from_slice(v);
        a
    };
    let geom = ConvGeom {
        input: pad3(&input.sizes[2..], 1),
        output: pad3(&out_sizes[2..], 1),
        kernel: pad3(&weight.sizes[2..], 1),
        stride: pad3(&stride, 1),
        padding: pad3(&padding, 0),
        dilation: pad3(&dilation, 1),
        transposed,
    };
    let iplane: usize = geom.input.iter().product();
    let oplane: usize = geom.output.iter().product();
    let kvol: usize = geom.kernel.iter().product();
    for ni in 0..n {
        for oc in 0..c_out {
            let y = &mut acc[(ni * c_out + oc) * oplane..][..oplane];
            y.fill(b.as_ref().map_or(0.0, |b| b[oc]));
        }
        for g in 0..groups {
            for icg in 0..icpg {
                let ic = g * icpg + icg;
                let xp = &x[(ni * c_in + ic) * iplane..][..iplane];
                for ocg in 0..ocpg {
                    let oc = g * ocpg + ocg;
                    let wi = if transposed {
                        ic * ocpg + ocg
                    } else {
                        oc * icpg + icg
                    };
                    let wk = &w[wi * kvol..][..kvol];
                    let y = &mut acc[(ni * c_out + oc) * oplane..][..oplane];
                    geom.accumulate(xp, wk, y);
                }
            }
        }
    }

    let mut data = alloc_zeroed(nbytes, &format!("{} output", c.op))?;
    match out_dtype {
        DType::F32 => {
            for (o, &v) in data.chunks_exact_mut(4).zip(&acc) {
                o.copy_from_slice(&(v as f32).to_le_bytes());
            }
        }
        DType::F16 => {
            for (o, &v) in data.chunks_exact_mut(2).zip(&acc) {
                o.copy_from_slice(&f32_to_f16(v as f32).to_le_bytes());
            }
        }
        _ => {
            for (i, &v) in acc.iter().enumerate() {
                write_scalar(out_dtype, &mut data, i, Scalar::Float(v))?;
            }
        }
    }
    Ok(Out {
        sizes: out_sizes,
        data,
    })
}
