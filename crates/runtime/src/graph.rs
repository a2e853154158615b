//! Graph data structures shared by the builder, the op builders and the executor:
//! tensors and their shapes, memory objects, dispatch nodes, launches, push constants.

use etvk_format::ir::DataType;
use etvk_shaders::ShaderId;

use crate::api::Result;
use crate::error::{internal, invalid_arg, unsupported};

/// Index of a GPU tensor in the graph (not a VkGraph value id: several values may alias one
/// tensor, e.g. `et_vk.prepack` outputs alias the packed constant).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub usize);

/// Index of a memory object (one device allocation shared by one or more tensors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MemId(pub usize);

/// Shape state of one tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorShape {
    /// GPU element type.
    pub dtype: DataType,
    /// Serialized (maximum) sizes; the allocation is sized for these.
    pub max_dims: Vec<usize>,
    /// Current sizes (equal to `max_dims` until a dynamic resize).
    pub dims: Vec<usize>,
    /// A label for errors (`value 12`, `packed const 3 (contiguous)`).
    pub label: String,
}

impl TensorShape {
    /// Elements at the current sizes.
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }
    /// Elements at the maximum sizes.
    pub fn max_numel(&self) -> usize {
        self.max_dims.iter().product()
    }
}

/// A piece of [`Shapes`] that can change between executes: a tensor's current sizes, a
/// runtime scalar, or a watched input's host values (by tensor index / value id). The
/// incremental resize pass (`exec/resize.rs`) re-runs a resize function only when one of the
/// keys it read last time changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum ShapeKey {
    Dims(usize),
    Scalar(usize),
    HostValues(usize),
}

/// What a resize function read and changed, recorded while `on` (one step at a time).
#[derive(Debug, Clone, Default)]
pub(crate) struct ShapeTrace {
    on: std::cell::Cell<bool>,
    reads: std::cell::RefCell<Vec<ShapeKey>>,
    changed: Vec<ShapeKey>,
}

/// Shapes and scalar values visible to resize functions. Op builders get it at build time
/// (with the serialized sizes) and resize functions get it at every resize.
#[derive(Debug, Clone, Default)]
pub struct Shapes {
    pub(crate) tensors: Vec<TensorShape>,
    /// Current values of SymInt / runtime-settable scalar values, by VkGraph value id.
    pub(crate) scalars: std::collections::BTreeMap<usize, f64>,
    /// Host-side element values of int graph-input tensors that a host step reads
    /// (`et_vk.select_as_symint`), by tensor index. Only watched inputs have an entry;
    /// `execute` refreshes it from the host input data before the resize pass.
    pub(crate) host_values: std::collections::BTreeMap<usize, Vec<i64>>,
    /// `maxComputeWorkGroupCount`, used to spill 1-D launches into y.
    pub(crate) max_groups: [u32; 3],
    /// Reads and changes of the resize step being traced (the current sizes, scalars and host
    /// values; max sizes and dtypes never change after the build).
    pub(crate) trace: ShapeTrace,
}

impl Shapes {
    fn note(&self, k: ShapeKey) {
        if self.trace.on.get() {
            self.trace.reads.borrow_mut().push(k);
        }
    }
    /// Start recording what the resize functions read and change.
    pub(crate) fn begin_trace(&mut self) {
        self.trace.on.set(true);
        self.trace.reads.get_mut().clear();
        self.trace.changed.clear();
    }
    /// Stop recording: the keys read since [`Self::begin_trace`] (sorted, once each), and
    /// appends the keys whose value changed to `changed`.
    pub(crate) fn end_trace(&mut self, changed: &mut Vec<ShapeKey>) -> Box<[ShapeKey]> {
        self.trace.on.set(false);
        changed.append(&mut self.trace.changed);
        let reads = self.trace.reads.get_mut();
        reads.sort_unstable();
        reads.dedup();
        reads.as_slice().into()
    }
    /// Current sizes of `t`.
    pub fn dims(&self, t: TensorId) -> &[usize] {
        self.note(ShapeKey::Dims(t.0));
        &self.tensors[t.0].dims
    }
    /// Serialized (maximum) sizes of `t`.
    pub fn max_dims(&self, t: TensorId) -> &[usize] {
        &self.tensors[t.0].max_dims
    }
    /// Element type of `t`.
    pub fn dtype(&self, t: TensorId) -> DataType {
        self.tensors[t.0].dtype
    }
    /// Current element count of `t`.
    pub fn numel(&self, t: TensorId) -> usize {
        self.note(ShapeKey::Dims(t.0));
        self.tensors[t.0].numel()
    }
    /// Set the current sizes of an op's output. Fails when the element count exceeds the
    /// allocation (the serialized maximum), since buffers never grow.
    pub fn set_dims(&mut self, t: TensorId, dims: Vec<usize>) -> Result<()> {
        let ts = &mut self.tensors[t.0];
        let numel = checked_numel(&dims);
        match numel {
            Some(n) if n <= ts.max_numel() => {
                if ts.dims != dims {
                    ts.dims = dims;
                    if self.trace.on.get() {
                        self.trace.changed.push(ShapeKey::Dims(t.0));
                    }
                }
                Ok(())
            }
            _ => Err(invalid_arg(format!(
                "{}: sizes {dims:?} exceed its serialized maximum {:?}",
                ts.label, ts.max_dims
            ))),
        }
    }
    /// Current value of a SymInt / scalar value (by VkGraph value id).
    pub fn scalar(&self, value: usize) -> Result<f64> {
        self.note(ShapeKey::Scalar(value));
        self.scalars
            .get(&value)
            .copied()
            .ok_or_else(|| internal(format!("value {value} is not a runtime scalar")))
    }
    /// The current host values of graph input `t`, when a host step watches it (see
    /// `GraphBuilder::watch_input_values`); row-major over its current sizes.
    pub fn host_values(&self, t: TensorId) -> Option<&[i64]> {
        self.note(ShapeKey::HostValues(t.0));
        self.host_values.get(&t.0).map(|v| v.as_slice())
    }
    /// Set the current value of a SymInt / scalar value, e.g. the output of `sym_size.int`
    /// from a host step. Later resize functions in chain order see the new value, and it
    /// is written to the GPU scalar buffer before the next submission.
    pub fn set_scalar(&mut self, value: usize, x: f64) -> Result<()> {
        match self.scalars.get_mut(&value) {
            Some(s) => {
                if s.to_bits() != x.to_bits() {
                    *s = x;
                    if self.trace.on.get() {
                        self.trace.changed.push(ShapeKey::Scalar(value));
                    }
                }
                Ok(())
            }
            None => Err(internal(format!("value {value} is not a runtime scalar"))),
        }
    }
}

/// How many invocations a dispatch needs; the runtime divides by the local size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Global {
    /// `n` invocations along x; spills into y beyond `maxComputeWorkGroupCount.x` groups
    /// (shaders index with `linear_id()` from `common.glsl`). Local size must be (lx, 1, 1).
    Linear(u64),
    /// A 3-D invocation grid.
    Grid([u32; 3]),
}

/// What one dispatch needs per execute: push-constant bytes and the invocation count.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    /// Push-constant bytes (exactly the shader's push-constant block size).
    pub push: Vec<u8>,
    /// Invocations.
    pub global: Global,
}

/// A resize function: reads input shapes, sets output shapes, returns the launch. Called
/// once at build (serialized sizes) and again whenever inputs or scalars change.
pub type ResizeFn = Box<dyn Fn(&mut Shapes) -> Result<Launch> + Send + Sync>;

/// A host step: shape/scalar bookkeeping with no GPU work (e.g. `sym_size.int`). Runs at
/// build and at every resize, in chain order with the dispatches' resize functions.
pub type HostFn = Box<dyn Fn(&mut Shapes) -> Result<()> + Send + Sync>;

/// A [`HostFn`] and its place in the chain.
pub struct HostStep {
    /// Runs before the dispatch node with this index (`nodes.len()` when it was added).
    pub before_node: usize,
    /// Op name (for errors).
    pub op: String,
    /// `OperatorCall.node_id`.
    pub node_id: u32,
    /// The step.
    pub run: HostFn,
}

/// A buffer bound to a dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// A tensor's storage.
    Tensor(TensorId),
    /// The graph's host-shared scalar buffer (`int`/`float` slots; see
    /// `GraphBuilder::scalar_slot`).
    Scalars,
    /// The graph's fault record (`shaders/fault.glsl`): kernels record there the first input
    /// PyTorch would raise on (an index out of range), and the execute fails with it.
    Faults,
}

impl From<TensorId> for Binding {
    fn from(t: TensorId) -> Binding {
        Binding::Tensor(t)
    }
}

/// One compute dispatch of the execute sequence.
pub struct DispatchNode {
    /// Op name (for errors and profiles).
    pub op: String,
    /// `OperatorCall.node_id`.
    pub node_id: u32,
    /// Shader variant.
    pub shader: ShaderId,
    /// Local size used.
    pub local: [u32; 3],
    /// Extra specialization constants (ids 3..).
    pub spec: Vec<u32>,
    /// Bindings 0..n.
    pub bindings: Vec<Binding>,
    /// Current launch.
    pub launch: Launch,
    /// Resize function (None: static op; a resized graph touching it is an error).
    pub resize: Option<ResizeFn>,
}

/// Little-endian push-constant builder: `Push::new().u32(m).u32(n).f32(alpha).finish()`.
/// Values are appended in declaration order; std430 scalar/uvec4 alignment is the caller's
/// job (keep blocks to 4-byte scalars and uvec4 arrays, padded like the GLSL).
#[derive(Debug, Clone, Default)]
pub struct Push(Vec<u8>);

impl Push {
    /// Empty.
    pub fn new() -> Push {
        Push(Vec::with_capacity(64))
    }
    /// Append a u32.
    pub fn u32(mut self, v: u32) -> Push {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append an i32.
    pub fn i32(mut self, v: i32) -> Push {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append an f32.
    pub fn f32(mut self, v: f32) -> Push {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append `values` padded with `fill` to `len` u32s (e.g. a `uvec4[2]` of sizes).
    pub fn u32_array(mut self, values: &[u32], len: usize, fill: u32) -> Push {
        for i in 0..len {
            self = self.u32(values.get(i).copied().unwrap_or(fill));
        }
        self
    }
    /// The bytes.
    pub fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Convert a size to u32 for a shader, failing with a clear message when it does not fit.
pub fn to_u32(v: usize, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| {
        unsupported(format!(
            "{what} = {v} exceeds the 32-bit shader index range"
        ))
    })
}

/// Contiguous (row-major) element strides of `dims`.
pub fn contiguous_strides(dims: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1];
    }
    s
}

/// PyTorch broadcasting of two shapes; `what` names the op for errors.
pub fn broadcast_shapes(a: &[usize], b: &[usize], what: &str) -> Result<Vec<usize>> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i < rank - a.len() {
            1
        } else {
            a[i - (rank - a.len())]
        };
        let db = if i < rank - b.len() {
            1
        } else {
            b[i - (rank - b.len())]
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(invalid_arg(format!(
                "{what}: shapes {a:?} and {b:?} do not broadcast"
            )));
        };
    }
    Ok(out)
}

/// Strides of `input` (contiguous) viewed as broadcast to `out` (0 on broadcast dims),
/// aligned to the right like PyTorch.
pub fn broadcast_strides(input: &[usize], out: &[usize]) -> Vec<usize> {
    let strides = contiguous_strides(input);
    let off = out.len() - input.len();
    (0..out.len())
        .map(|i| {
            if i < off || input[i - off] == 1 {
                0
            } else {
                strides[i - off]
            }
        })
        .collect()
}

/// The element count of `dims`, or `None` when it overflows `usize` (sizes from the caller
/// or from a graph's size lists are untrusted: never multiply them unchecked).
pub fn checked_numel(dims: &[usize]) -> Option<usize> {
    dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(
            broadcast_shapes(&[4, 1, 3], &[5, 1], "t").unwrap(),
            vec![4, 5, 3]
        );
        assert_eq!(broadcast_strides(&[5, 1], &[4, 5, 3]), vec![0, 1, 0]);
        assert_eq!(broadcast_strides(&[4, 1, 3], &[4, 5, 3]), vec![3, 0, 1]);
        assert!(broadcast_shapes(&[2, 3], &[4, 3], "t").is_err());
        assert_eq!(broadcast_shapes(&[], &[2], "t").unwrap(), vec![2]);
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
    }
}
