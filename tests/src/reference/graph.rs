//! The interpreter state: one parsed VkGraph, its constants decoded to f64, the current
//! value of every tensor and SymInt, and the typed accessors the op functions use.
//!
//! Constants are decoded once at load and live as long as the graph, so an op that
//! mutates one (the KV caches of `sdpa_with_kv_cache`) mutates what later calls see, like
//! the GPU runtime's shared prepacked copy. `et_vk.prepack.default` makes its output an
//! alias of its input for the same reason.

use etvk_format::ir::{ConstantSource, DataType, OperatorCall, Value, VkGraph, VulkanDelegate};
use etvk_runtime::NamedData;

use crate::tensor::{decode, host_dtype, numel, Tensor};

use super::ops;

/// A delegate input or output: a tensor, or an integer (SymInt inputs / outputs).
#[derive(Debug, Clone, PartialEq)]
pub enum RefValue {
    /// A tensor (values in f64; `dtype` is what it is on the wire).
    Tensor(Tensor),
    /// A SymInt or Int.
    Int(i64),
}

/// A VkGraph delegate evaluated on the CPU in f64, op by op in chain order.
#[derive(Debug, Clone)]
pub struct RefGraph {
    label: String,
    graph: VkGraph,
    /// Current tensor of each value id (constants from load; others once produced).
    tensors: Vec<Option<Tensor>>,
    /// Current value of each SymInt value id (initial values from the graph).
    syms: Vec<i64>,
    /// `alias[v]`: the value id that holds `v`'s tensor (itself unless prepacked).
    alias: Vec<usize>,
}

/// The f64 tensor of constant `c` read from `named` / the blob's constant region.
fn load_constant(
    delegate: &VulkanDelegate,
    named: &dyn NamedData,
    dtype: DataType,
    dims: &[usize],
    c: usize,
    what: &str,
) -> Result<Tensor, String> {
    let bytes: &[u8] = match &delegate.graph.constants[c] {
        ConstantSource::Named { key, .. } => named
            .get(key)
            .ok_or_else(|| format!("{what}: named data {key:?} is missing from the program"))?,
        ConstantSource::Inline { offset, length } => delegate
            .constant_region
            .get(*offset..offset + length)
            .ok_or_else(|| format!("{what}: inline bytes {offset}+{length} outside the blob"))?,
    };
    let want = numel(dims) * dtype.size_bytes();
    if bytes.len() < want {
        return Err(format!(
            "{what}: {} bytes for a {} tensor of sizes {dims:?} ({want} needed)",
            bytes.len(),
            dtype.name()
        ));
    }
    let data = decode(host_dtype(dtype), &bytes[..want])?;
    Ok(Tensor {
        dtype,
        sizes: dims.to_vec(),
        data,
    })
}

impl RefGraph {
    /// Parse a `VH00` blob and load it; `named` serves named-data constants, `label`
    /// names the delegate in errors.
    pub fn from_blob(blob: &[u8], named: &dyn NamedData, label: &str) -> Result<RefGraph, String> {
        let parsed = etvk_format::vkgraph::parse_delegate(blob)
            .map_err(|e| format!("{label}: parse_delegate: {e}"))?;
        RefGraph::new(&parsed, named, label)
    }

    /// Load a parsed delegate: decode its constants and check every op is known.
    pub fn new(
        delegate: &VulkanDelegate,
        named: &dyn NamedData,
        label: &str,
    ) -> Result<RefGraph, String> {
        let graph = delegate.graph.clone();
        for call in &graph.chain {
            if !ops::is_supported(&call.name) {
                return Err(format!(
                    "{label}: op {} (node {}) has no CPU reference",
                    call.name, call.node_id
                ));
            }
        }
        let n = graph.values.len();
        let mut tensors = vec![None; n];
        let mut syms = vec![0i64; n];
        for (i, v) in graph.values.iter().enumerate() {
            match v {
                Value::Tensor(t) => {
                    if let Some(c) = t.constant_id {
                        let what = format!("{label}: constant value {i}");
                        tensors[i] =
                            Some(load_constant(delegate, named, t.dtype, &t.dims, c, &what)?);
                    }
                }
                Value::SymInt(s) => syms[i] = i64::from(*s),
                _ => {}
            }
        }
        Ok(RefGraph {
            label: label.to_string(),
            graph,
            tensors,
            syms,
            alias: (0..n).collect(),
        })
    }

    /// The graph.
    pub fn graph(&self) -> &VkGraph {
        &self.graph
    }

    /// Number of graph inputs.
    pub fn num_inputs(&self) -> usize {
        self.graph.input_ids.len()
    }

    /// Number of graph outputs.
    pub fn num_outputs(&self) -> usize {
        self.graph.output_ids.len()
    }

    /// Run once: bind `inputs` (graph input order), run every op, return the outputs
    /// (graph output order) at their current sizes, in the graph's dtypes.
    pub fn execute(&mut self, inputs: &[RefValue]) -> Result<Vec<RefValue>, String> {
        if inputs.len() != self.num_inputs() {
            return Err(format!(
                "{}: {} inputs given, the graph takes {}",
                self.label,
                inputs.len(),
                self.num_inputs()
            ));
        }
        for (k, (&v, input)) in self.graph.input_ids.clone().iter().zip(inputs).enumerate() {
            self.bind_input(k, v, input)?;
        }
        for i in 0..self.graph.chain.len() {
            let call = self.graph.chain[i].clone();
            ops::run(self, &call).map_err(|e| format!("{}: {e}", self.label))?;
        }
        let mut out = Vec::with_capacity(self.num_outputs());
        for (k, &v) in self.graph.output_ids.iter().enumerate() {
            let what = || format!("{}: output {k} (value {v})", self.label);
            out.push(match &self.graph.values[v] {
                Value::Tensor(_) => RefValue::Tensor(
                    self.tensors[self.alias[v]]
                        .clone()
                        .ok_or_else(|| format!("{} was never written", what()))?,
                ),
                Value::SymInt(_) => RefValue::Int(self.syms[v]),
                Value::Int(x) => RefValue::Int(*x),
                other => {
                    return Err(format!(
                        "{} is a {}, not a tensor or int",
                        what(),
                        other.kind_name()
                    ))
                }
            });
        }
        Ok(out)
    }

    fn bind_input(&mut self, k: usize, v: usize, input: &RefValue) -> Result<(), String> {
        let what = format!("{}: input {k} (value {v})", self.label);
        match (&self.graph.values[v], input) {
            (Value::Tensor(tv), RefValue::Tensor(t)) => {
                // The runtime's rule (ExecuTorch's resize): same rank, and no more elements
                // than the serialized (maximum) sizes hold.
                let fits = t.sizes.len() == tv.dims.len()
                    && t.sizes.iter().product::<usize>() <= tv.dims.iter().product::<usize>();
                if !fits {
                    return Err(format!(
                        "{what}: sizes {:?} do not fit the serialized (maximum) sizes {:?} (same rank, at most as many elements)",
                        t.sizes, tv.dims
                    ));
                }
                // The GPU sees the graph dtype (int64 host indices become int32, ...).
                let data = t.data.iter().map(|&x| round_value(tv.dtype, x)).collect();
                self.tensors[v] = Some(Tensor {
                    dtype: tv.dtype,
                    sizes: t.sizes.clone(),
                    data,
                });
                Ok(())
            }
            (Value::SymInt(_), RefValue::Int(x)) => {
                self.syms[v] = *x;
                Ok(())
            }
            (Value::Int(want), RefValue::Int(x)) if want == x => Ok(()),
            (other, given) => Err(format!(
                "{what}: the graph has a {} there, got {given:?}",
                other.kind_name()
            )),
        }
    }

    // ---- accessors for the op functions (errors name the op through `what`) ----

    /// The IR value `v`.
    pub(crate) fn value(&self, v: usize) -> &Value {
        &self.graph.values[v]
    }

    /// Serialized (maximum) sizes and dtype of tensor value `v`.
    pub(crate) fn tensor_info(&self, v: usize, what: &str) -> Result<(DataType, &[usize]), String> {
        match self.value(v) {
            Value::Tensor(t) => Ok((t.dtype, &t.dims)),
            other => Err(format!(
                "{what}: value {v} is a {}, expected a tensor",
                other.kind_name()
            )),
        }
    }

    /// The current tensor of value `v`.
    pub(crate) fn tensor(&self, v: usize, what: &str) -> Result<&Tensor, String> {
        self.tensor_info(v, what)?;
        self.tensors[self.alias[v]]
            .as_ref()
            .ok_or_else(|| format!("{what}: tensor value {v} is read before it is written"))
    }

    /// The current tensor of value `v`, `None` for a `Null` value.
    pub(crate) fn opt_tensor(&self, v: usize, what: &str) -> Result<Option<&Tensor>, String> {
        match self.value(v) {
            Value::Null => Ok(None),
            _ => self.tensor(v, what).map(Some),
        }
    }

    /// Mutable access to tensor value `v` (in-place ops).
    pub(crate) fn tensor_mut(&mut self, v: usize, what: &str) -> Result<&mut Tensor, String> {
        self.tensor_info(v, what)?;
        let a = self.alias[v];
        self.tensors[a]
            .as_mut()
            .ok_or_else(|| format!("{what}: tensor value {v} is used before it is written"))
    }

    /// Store `data` (row-major, `sizes`) as the new value of tensor `v`, in its graph
    /// dtype. The sizes must keep the serialized rank and hold no more elements than the
    /// serialized sizes, as the GPU runtime requires (its buffers are sized for those).
    pub(crate) fn put(
        &mut self,
        v: usize,
        sizes: Vec<usize>,
        data: Vec<f64>,
        what: &str,
    ) -> Result<(), String> {
        let (dtype, max) = self.tensor_info(v, what)?;
        if sizes.len() != max.len()
            || sizes.iter().product::<usize>() > max.iter().product::<usize>()
        {
            return Err(format!(
                "{what}: output value {v} gets sizes {sizes:?}, more elements than its serialized sizes {max:?}"
            ));
        }
        if data.len() != numel(&sizes) {
            return Err(format!(
                "{what}: {} values for output sizes {sizes:?} (reference bug)",
                data.len()
            ));
        }
        let data = if is_float(dtype) {
            data
        } else {
            data.into_iter().map(|x| round_value(dtype, x)).collect()
        };
        let a = self.alias[v];
        self.tensors[a] = Some(Tensor { dtype, sizes, data });
        Ok(())
    }

    /// Make value `out` refer to value `src`'s tensor (prepack).
    pub(crate) fn alias(&mut self, out: usize, src: usize, what: &str) -> Result<(), String> {
        self.tensor(src, what)?;
        self.tensor_info(out, what)?;
        self.alias[out] = self.alias[src];
        Ok(())
    }

    /// An Int, Bool or SymInt (current value) argument.
    pub(crate) fn int(&self, v: usize, what: &str) -> Result<i64, String> {
        match self.value(v) {
            Value::Int(x) => Ok(*x),
            // The exporter serializes equal scalars once: an Int 6 may share a Double 6.0.
            Value::Double(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Ok(*x as i64),
            Value::Bool(b) => Ok(i64::from(*b)),
            Value::SymInt(_) => Ok(self.syms[v]),
            other => Err(format!(
                "{what}: value {v} is a {}, expected an int",
                other.kind_name()
            )),
        }
    }

    /// [`RefGraph::int`], `None` for `Null`.
    pub(crate) fn opt_int(&self, v: usize, what: &str) -> Result<Option<i64>, String> {
        match self.value(v) {
            Value::Null => Ok(None),
            _ => self.int(v, what).map(Some),
        }
    }

    /// A Double (or an int) argument.
    pub(crate) fn double(&self, v: usize, what: &str) -> Result<f64, String> {
        match self.value(v) {
            Value::Double(x) => Ok(*x),
            Value::Int(_) | Value::Bool(_) | Value::SymInt(_) => Ok(self.int(v, what)? as f64),
            other => Err(format!(
                "{what}: value {v} is a {}, expected a number",
                other.kind_name()
            )),
        }
    }

    /// [`RefGraph::double`], `None` for `Null`.
    pub(crate) fn opt_double(&self, v: usize, what: &str) -> Result<Option<f64>, String> {
        match self.value(v) {
            Value::Null => Ok(None),
            _ => self.double(v, what).map(Some),
        }
    }

    /// An `IntList` of literals, or a `ValueList` of Int / SymInt value ids (current
    /// values), or a single int.
    pub(crate) fn int_list(&self, v: usize, what: &str) -> Result<Vec<i64>, String> {
        match self.value(v) {
            Value::IntList(l) => Ok(l.clone()),
            Value::ValueList(ids) => ids.iter().map(|&i| self.int(i, what)).collect(),
            Value::Int(_) | Value::SymInt(_) => Ok(vec![self.int(v, what)?]),
            other => Err(format!(
                "{what}: value {v} is a {}, expected an int list",
                other.kind_name()
            )),
        }
    }

    /// The value ids of a `ValueList`.
    pub(crate) fn value_list(&self, v: usize, what: &str) -> Result<Vec<usize>, String> {
        match self.value(v) {
            Value::ValueList(ids) => Ok(ids.clone()),
            other => Err(format!(
                "{what}: value {v} is a {}, expected a ValueList",
                other.kind_name()
            )),
        }
    }

    /// Set SymInt value `v` (an op's SymInt output).
    pub(crate) fn set_sym(&mut self, v: usize, x: i64, what: &str) -> Result<(), String> {
        match self.value(v) {
            Value::SymInt(_) => {
                self.syms[v] = x;
                Ok(())
            }
            other => Err(format!(
                "{what}: output value {v} is a {}, expected a SymInt",
                other.kind_name()
            )),
        }
    }
}

/// Whether `dt` holds floating-point values.
pub(crate) fn is_float(dt: DataType) -> bool {
    matches!(
        dt,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    )
}

/// `x` as `dt` holds it: floats unchanged (the reference keeps f64 between ops),
/// integers truncated toward zero like a C cast, bools as 0 / 1.
pub(crate) fn round_value(dt: DataType, x: f64) -> f64 {
    match dt {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => x,
        DataType::Bool => f64::from(u8::from(x != 0.0)),
        _ => x.trunc(),
    }
}

/// A short description of an op call for errors: `op NAME (node N)`.
pub(crate) fn what(call: &OperatorCall) -> String {
    format!("op {} (node {})", call.name, call.node_id)
}
