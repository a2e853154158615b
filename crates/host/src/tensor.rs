//! Dense host tensors (contiguous, row-major, little-endian bytes).

use crate::dtype::{read_scalar, DType, Scalar};
use crate::error::{HostError, Result};

/// A dense, contiguous host tensor: what methods take and return, and what `.npy` files hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Element type.
    pub dtype: DType,
    /// Sizes, outermost first (empty = rank-0 scalar).
    pub sizes: Vec<usize>,
    /// Exactly `numel * dtype.size_bytes()` bytes, little-endian.
    pub data: Vec<u8>,
}

/// Product of `sizes`, or an error naming them when it overflows.
pub fn checked_numel(sizes: &[usize]) -> Result<usize> {
    sizes
        .iter()
        .try_fold(1usize, |acc, &s| acc.checked_mul(s))
        .ok_or_else(|| HostError::InvalidInput(format!("tensor sizes {sizes:?} overflow")))
}

/// Bytes of a `dtype` tensor with `sizes`, checked.
pub fn checked_nbytes(dtype: DType, sizes: &[usize]) -> Result<usize> {
    checked_numel(sizes)?
        .checked_mul(dtype.size_bytes())
        .ok_or_else(|| {
            HostError::InvalidInput(format!("{dtype} tensor of sizes {sizes:?} overflows"))
        })
}

/// A zero-filled byte buffer, failing with an error instead of aborting when the host
/// cannot allocate it (sizes come from untrusted programs).
pub fn alloc_zeroed(nbytes: usize, what: &str) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    v.try_reserve_exact(nbytes)
        .map_err(|_| HostError::OutOfMemory(format!("{nbytes} bytes for {what}")))?;
    v.resize(nbytes, 0);
    Ok(v)
}

impl Tensor {
    /// A tensor from parts; `data` must hold exactly `numel * element size` bytes.
    pub fn new(dtype: DType, sizes: Vec<usize>, data: Vec<u8>) -> Result<Tensor> {
        let want = checked_nbytes(dtype, &sizes)?;
        if data.len() != want {
            return Err(HostError::InvalidInput(format!(
                "{dtype} tensor of sizes {sizes:?} needs {want} bytes, got {}",
                data.len()
            )));
        }
        Ok(Tensor { dtype, sizes, data })
    }

    /// A zero-filled tensor.
    pub fn zeros(dtype: DType, sizes: Vec<usize>) -> Result<Tensor> {
        let n = checked_nbytes(dtype, &sizes)?;
        Ok(Tensor {
            dtype,
            sizes,
            data: alloc_zeroed(n, "a tensor")?,
        })
    }

    /// A float32 tensor from values.
    pub fn from_f32(sizes: Vec<usize>, values: &[f32]) -> Result<Tensor> {
        Tensor::new(
            DType::F32,
            sizes,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    /// An int64 tensor from values.
    pub fn from_i64(sizes: Vec<usize>, values: &[i64]) -> Result<Tensor> {
        Tensor::new(
            DType::I64,
            sizes,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    /// An int32 tensor from values.
    pub fn from_i32(sizes: Vec<usize>, values: &[i32]) -> Result<Tensor> {
        Tensor::new(
            DType::I32,
            sizes,
            values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )
    }

    /// A bool tensor from values.
    pub fn from_bool(sizes: Vec<usize>, values: &[bool]) -> Result<Tensor> {
        Tensor::new(
            DType::Bool,
            sizes,
            values.iter().map(|&v| u8::from(v)).collect(),
        )
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.sizes.iter().product()
    }

    /// Element `i`, widened.
    pub fn get(&self, i: usize) -> Result<Scalar> {
        read_scalar(self.dtype, &self.data, i)
    }

    /// All elements as f64 (bool -> 0/1), for summaries and comparisons.
    pub fn to_f64_vec(&self) -> Result<Vec<f64>> {
        (0..self.numel())
            .map(|i| self.get(i).map(Scalar::as_f64))
            .collect()
    }

    /// All elements as f32 (any dtype, cast).
    pub fn to_f32_vec(&self) -> Result<Vec<f32>> {
        (0..self.numel())
            .map(|i| self.get(i).map(|s| s.as_f64() as f32))
            .collect()
    }

    /// All elements as i64 (any dtype, cast).
    pub fn to_i64_vec(&self) -> Result<Vec<i64>> {
        (0..self.numel())
            .map(|i| self.get(i).map(Scalar::as_i64))
            .collect()
    }
}
