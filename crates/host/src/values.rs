//! The interpreter's value table: one runtime [`Value`] per plan `EValue`.

use crate::dtype::DType;
use crate::error::{HostError, Result};
use crate::tensor::{checked_nbytes, Tensor};

/// The most elements an unbound-dynamic tensor may grow to: the CPU kernels hold a
/// result in f64 before storing it, so a damaged program's sizes must fail as an error
/// before those buffers are made.
pub const MAX_COMPUTED_ELEMENTS: usize = 1 << 30;

/// A tensor value of a loaded method: a buffer of its maximum size plus its current sizes
/// (dynamic-shape tensors shrink and grow within that buffer).
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSlot {
    /// Element type (fixed).
    pub dtype: DType,
    /// Current sizes.
    pub sizes: Vec<usize>,
    /// Sizes the program declares (upper bounds for dynamic tensors).
    pub max_sizes: Vec<usize>,
    /// `shape_dynamism`: 0 static, 1 bound, 2 unbound.
    pub dynamism: i8,
    /// The buffer; its length is the capacity, the first [`TensorSlot::nbytes`] bytes are live.
    pub data: Vec<u8>,
}

impl TensorSlot {
    /// Live bytes for the current sizes.
    pub fn nbytes(&self) -> usize {
        self.sizes.iter().product::<usize>() * self.dtype.size_bytes()
    }

    /// Number of elements at the current sizes.
    pub fn numel(&self) -> usize {
        self.sizes.iter().product()
    }

    /// Live bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.nbytes().min(self.data.len())]
    }

    /// A copy as a dense [`Tensor`].
    pub fn to_tensor(&self) -> Tensor {
        Tensor {
            dtype: self.dtype,
            sizes: self.sizes.clone(),
            data: self.bytes().to_vec(),
        }
    }

    /// Change the current sizes, as ExecuTorch's `resize_tensor` allows: the rank is fixed,
    /// a static tensor keeps its sizes, a bound-dynamic one stays within its buffer, and an
    /// unbound one grows its buffer (up to [`MAX_COMPUTED_ELEMENTS`]). `what` names the
    /// tensor in errors.
    pub fn resize(&mut self, sizes: &[usize], what: &str) -> Result<()> {
        if sizes == self.sizes.as_slice() {
            return Ok(());
        }
        self.check_fits(sizes, what)?;
        let need = checked_nbytes(self.dtype, sizes)?;
        if need > self.data.len() {
            let extra = need - self.data.len();
            self.data
                .try_reserve_exact(extra)
                .map_err(|_| HostError::OutOfMemory(format!("{need} bytes for {what}")))?;
            self.data.resize(need, 0);
        }
        self.sizes = sizes.to_vec();
        Ok(())
    }

    /// Whether [`TensorSlot::resize`] would take `sizes`, checked before a kernel computes a
    /// result of that shape (so that a damaged program's sizes fail before the work and the
    /// memory, not after).
    pub fn check_fits(&self, sizes: &[usize], what: &str) -> Result<()> {
        if sizes.len() != self.max_sizes.len() {
            return Err(HostError::InvalidProgram(format!(
                "{what}: cannot change rank from {:?} to {sizes:?}",
                self.max_sizes
            )));
        }
        if self.dynamism == 0 && sizes != self.max_sizes.as_slice() {
            return Err(HostError::InvalidProgram(format!(
                "{what}: static tensor of sizes {:?} cannot be resized to {sizes:?}",
                self.max_sizes
            )));
        }
        let numel = crate::tensor::checked_numel(sizes)?;
        if numel <= self.data.len() / self.dtype.size_bytes().max(1) {
            return Ok(());
        }
        if self.dynamism != 2 {
            return Err(HostError::InvalidProgram(format!(
                "{what}: sizes {sizes:?} exceed the tensor's bound {:?}",
                self.max_sizes
            )));
        }
        if numel > MAX_COMPUTED_ELEMENTS {
            return Err(HostError::OutOfMemory(format!(
                "{what}: {numel} elements for an unbound tensor, past the host's limit of \
                 {MAX_COMPUTED_ELEMENTS}"
            )));
        }
        Ok(())
    }

    /// Resize to `sizes` and copy `data` (exactly `numel * element size` bytes) in.
    pub fn store(&mut self, sizes: &[usize], data: &[u8], what: &str) -> Result<()> {
        self.resize(sizes, what)?;
        let n = self.nbytes();
        if data.len() != n {
            return Err(HostError::InvalidProgram(format!(
                "{what}: {} bytes stored into {n}",
                data.len()
            )));
        }
        self.data[..n].copy_from_slice(data);
        Ok(())
    }
}

/// A runtime value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// None / Null.
    Null,
    /// An int (also SymInts).
    Int(i64),
    /// A bool.
    Bool(bool),
    /// A double.
    Double(f64),
    /// A tensor.
    Tensor(TensorSlot),
    /// A string.
    String(String),
    /// An int list, boxed as ExecuTorch does: the items are indices of `Int` values, so
    /// symbolic sizes produced at run time flow into the list.
    IntList(Vec<i64>),
    /// A list of doubles.
    DoubleList(Vec<f64>),
    /// A list of bools.
    BoolList(Vec<bool>),
    /// Indices of tensor values.
    TensorList(Vec<usize>),
    /// Indices of tensor values or None.
    OptionalTensorList(Vec<Option<usize>>),
}

impl Value {
    /// Variant name for errors.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "None",
            Value::Int(_) => "Int",
            Value::Bool(_) => "Bool",
            Value::Double(_) => "Double",
            Value::Tensor(_) => "Tensor",
            Value::String(_) => "String",
            Value::IntList(_) => "IntList",
            Value::DoubleList(_) => "DoubleList",
            Value::BoolList(_) => "BoolList",
            Value::TensorList(_) => "TensorList",
            Value::OptionalTensorList(_) => "OptionalTensorList",
        }
    }
}

/// Resolve a boxed int list (`Value::IntList` items are value indices of `Int`s).
pub fn resolve_int_list(values: &[Value], items: &[i64], what: &str) -> Result<Vec<i64>> {
    items
        .iter()
        .map(|&i| {
            let idx = usize::try_from(i).map_err(|_| {
                HostError::InvalidProgram(format!("{what}: int list item {i} is not a value index"))
            })?;
            match values.get(idx) {
                Some(Value::Int(v)) => Ok(*v),
                Some(other) => Err(HostError::InvalidProgram(format!(
                    "{what}: int list item refers to value {idx}, a {} (expected Int)",
                    other.kind_name()
                ))),
                None => Err(HostError::InvalidProgram(format!(
                    "{what}: int list item {idx} is out of range ({} values)",
                    values.len()
                ))),
            }
        })
        .collect()
}
