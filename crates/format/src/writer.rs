//! Writer side for the Vulkan delegate: VkGraph flatbuffer, `VH00` blob, and a small
//! [`GraphBuilder`] for tests and tools.
//!
//! The output follows the exporter: fields equal to their schema default are omitted
//! (the flatbuffers builder does that by itself), tensors always carry an explicit
//! `staging_datatype`, and the blob layout is §2.1 (32-byte header, flatbuffer and constant
//! bytes each padded to 16).
use flatbuffers::{FlatBufferBuilder, WIPOffset};
use sha2::{Digest, Sha256};

use crate::generated::vk;
use crate::ir::{ConstantSource, DataType, OperatorCall, TensorValue, Value, VkGraph};
use crate::vkgraph::{DELEGATE_HEADER_SIZE, NAMED_DATA_OFFSET};

/// Named-data key of a constant as the exporter computes it: sha256 of the bytes, lowercase hex.
pub fn named_key(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn align_up(x: usize, a: usize) -> usize {
    x.div_ceil(a) * a
}

fn index_i32(i: usize) -> i32 {
    // Graphs built in memory never approach 2^31 values; saturating keeps this total.
    i32::try_from(i).unwrap_or(i32::MAX)
}

/// Serialize a VkGraph as a `VK00` flatbuffer.
pub fn write_vkgraph(g: &VkGraph) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::with_capacity(1024);

    let mut values = Vec::with_capacity(g.values.len());
    for v in &g.values {
        let (tag, off) = write_value(&mut fbb, v);
        let vv = vk::VkValue::create(
            &mut fbb,
            &vk::VkValueArgs {
                value_type: tag,
                value: Some(off),
            },
        );
        values.push(vv);
    }
    let values = fbb.create_vector(&values);

    let mut chain = Vec::with_capacity(g.chain.len());
    for op in &g.chain {
        let name = fbb.create_string(&op.name);
        let args: Vec<i32> = op.args.iter().map(|&a| index_i32(a)).collect();
        let args = fbb.create_vector(&args);
        chain.push(vk::OperatorCall::create(
            &mut fbb,
            &vk::OperatorCallArgs {
                node_id: op.node_id,
                name: Some(name),
                args: Some(args),
            },
        ));
    }
    let chain = fbb.create_vector(&chain);

    let mut constants = Vec::with_capacity(g.constants.len());
    for c in &g.constants {
        let c = match c {
            ConstantSource::Named { key, length } => {
                let key = fbb.create_string(key);
                vk::VkBytes::create(
                    &mut fbb,
                    &vk::VkBytesArgs {
                        offset: NAMED_DATA_OFFSET,
                        length: *length as u64,
                        named_key: Some(key),
                    },
                )
            }
            ConstantSource::Inline { offset, length } => vk::VkBytes::create(
                &mut fbb,
                &vk::VkBytesArgs {
                    offset: *offset as u64,
                    length: *length as u64,
                    named_key: None,
                },
            ),
        };
        constants.push(c);
    }
    let constants = fbb.create_vector(&constants);
    let shaders = fbb.create_vector::<WIPOffset<vk::VkBytes>>(&[]);
    let ids = |v: &[usize]| -> Vec<u32> {
        v.iter()
            .map(|&i| u32::try_from(i).unwrap_or(u32::MAX))
            .collect()
    };
    let input_ids = fbb.create_vector(&ids(&g.input_ids));
    let output_ids = fbb.create_vector(&ids(&g.output_ids));
    let version = fbb.create_string(&g.version);
    let root = vk::VkGraph::create(
        &mut fbb,
        &vk::VkGraphArgs {
            version: Some(version),
            chain: Some(chain),
            values: Some(values),
            input_ids: Some(input_ids),
            output_ids: Some(output_ids),
            constants: Some(constants),
            shaders: Some(shaders),
            storage_type_override: vk::VkStorageType(g.storage_type_override),
            memory_layout_override: vk::VkMemoryLayout(g.memory_layout_override),
        },
    );
    vk::finish_vk_graph_buffer(&mut fbb, root);
    fbb.finished_data().to_vec()
}

fn write_value<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    v: &Value,
) -> (vk::GraphTypes, WIPOffset<flatbuffers::UnionWIPOffset>) {
    use vk::GraphTypes as T;
    match v {
        Value::Null => (
            T::Null,
            vk::Null::create(fbb, &vk::NullArgs {}).as_union_value(),
        ),
        Value::Int(x) => (
            T::Int,
            vk::Int::create(fbb, &vk::IntArgs { int_val: *x }).as_union_value(),
        ),
        Value::Double(x) => (
            T::Double,
            vk::Double::create(fbb, &vk::DoubleArgs { double_val: *x }).as_union_value(),
        ),
        Value::Bool(x) => (
            T::Bool,
            vk::Bool::create(fbb, &vk::BoolArgs { bool_val: *x }).as_union_value(),
        ),
        Value::IntList(x) => {
            let items = fbb.create_vector(x);
            (
                T::IntList,
                vk::IntList::create(fbb, &vk::IntListArgs { items: Some(items) }).as_union_value(),
            )
        }
        Value::DoubleList(x) => {
            let items = fbb.create_vector(x);
            (
                T::DoubleList,
                vk::DoubleList::create(fbb, &vk::DoubleListArgs { items: Some(items) })
                    .as_union_value(),
            )
        }
        Value::BoolList(x) => {
            let items = fbb.create_vector(x);
            (
                T::BoolList,
                vk::BoolList::create(fbb, &vk::BoolListArgs { items: Some(items) })
                    .as_union_value(),
            )
        }
        Value::ValueList(x) => {
            let items: Vec<i32> = x.iter().map(|&i| index_i32(i)).collect();
            let items = fbb.create_vector(&items);
            (
                T::ValueList,
                vk::ValueList::create(fbb, &vk::ValueListArgs { items: Some(items) })
                    .as_union_value(),
            )
        }
        Value::String(s) => {
            let s = fbb.create_string(s);
            (
                T::String,
                vk::String::create(
                    fbb,
                    &vk::StringArgs {
                        string_val: Some(s),
                    },
                )
                .as_union_value(),
            )
        }
        Value::SymInt(x) => (
            T::SymInt,
            vk::SymInt::create(fbb, &vk::SymIntArgs { value: *x }).as_union_value(),
        ),
        Value::Tensor(t) => {
            let dims: Vec<u32> = t
                .dims
                .iter()
                .map(|&d| u32::try_from(d).unwrap_or(u32::MAX))
                .collect();
            let dims = fbb.create_vector(&dims);
            let t = vk::VkTensor::create(
                fbb,
                &vk::VkTensorArgs {
                    datatype: vk::VkDataType(t.dtype.code()),
                    dims: Some(dims),
                    constant_id: t.constant_id.map_or(-1, index_i32),
                    mem_obj_id: t.mem_obj_id.map_or(-1, index_i32),
                    storage_type: vk::VkStorageType(t.storage_type),
                    memory_layout: vk::VkMemoryLayout(t.memory_layout),
                    staging_datatype: vk::VkDataType(t.staging_dtype.code()),
                },
            );
            (T::VkTensor, t.as_union_value())
        }
    }
}

/// Serialize a complete delegate blob: `VH00` header, the VkGraph flatbuffer, then
/// `constant_region` (the bytes inline constants index into), each padded to 16 bytes.
pub fn write_delegate(g: &VkGraph, constant_region: &[u8]) -> Vec<u8> {
    let fb = write_vkgraph(g);
    let fb_offset = align_up(DELEGATE_HEADER_SIZE as usize, 16);
    let bytes_offset = fb_offset + align_up(fb.len(), 16);
    let total = bytes_offset + align_up(constant_region.len(), 16);
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(b"VH00");
    out.extend_from_slice(&DELEGATE_HEADER_SIZE.to_le_bytes());
    // Offsets are u32 in the header; a blob over 4 GiB cannot be expressed (and no test
    // builds one), so saturate rather than wrap.
    let u32_sat = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
    out.extend_from_slice(&u32_sat(fb_offset).to_le_bytes());
    out.extend_from_slice(&u32_sat(fb.len()).to_le_bytes());
    out.extend_from_slice(&u32_sat(bytes_offset).to_le_bytes());
    out.extend_from_slice(&(constant_region.len() as u64).to_le_bytes());
    out.resize(fb_offset, 0);
    out.extend_from_slice(&fb);
    out.resize(bytes_offset, 0);
    out.extend_from_slice(constant_region);
    out.resize(total, 0);
    out
}

/// Builds a [`VkGraph`] value by value, for tests and tools.
///
/// Ids returned by the `add_*` methods are value ids (indices into `values`). Tensors get
/// the exporter's defaults: dedicated memory, `staging_dtype == dtype`, default storage
/// and layout (255). Op `node_id`s are their chain positions.
#[derive(Debug, Clone, Default)]
pub struct GraphBuilder {
    values: Vec<Value>,
    chain: Vec<OperatorCall>,
    input_ids: Vec<usize>,
    output_ids: Vec<usize>,
    constants: Vec<ConstantSource>,
    inline: Vec<u8>,
    names: std::collections::BTreeMap<String, usize>,
}

impl GraphBuilder {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append any value; returns its id.
    pub fn add_value(&mut self, v: Value) -> usize {
        self.values.push(v);
        self.values.len() - 1
    }

    fn tensor_value(dtype: DataType, dims: &[usize], constant_id: Option<usize>) -> TensorValue {
        TensorValue {
            dtype,
            dims: dims.to_vec(),
            // Saturating so absurd test shapes reach the parser's checks instead of panicking here.
            numel: dims
                .iter()
                .try_fold(1usize, |a, &d| a.checked_mul(d))
                .unwrap_or(usize::MAX),
            constant_id,
            mem_obj_id: None,
            staging_dtype: dtype,
            storage_type: 255,
            memory_layout: 255,
        }
    }

    /// A non-constant tensor.
    pub fn add_tensor(&mut self, dtype: DataType, dims: &[usize]) -> usize {
        self.add_value(Value::Tensor(Self::tensor_value(dtype, dims, None)))
    }

    /// A constant tensor whose bytes are the program's named data under `key` (see
    /// [`named_key`]); its length is `numel * dtype size`.
    pub fn add_constant_named(&mut self, dtype: DataType, dims: &[usize], key: &str) -> usize {
        let t = Self::tensor_value(dtype, dims, Some(self.constants.len()));
        let length = t.numel.saturating_mul(dtype.size_bytes());
        self.constants.push(ConstantSource::Named {
            key: key.to_owned(),
            length,
        });
        self.add_value(Value::Tensor(t))
    }

    /// A constant tensor whose bytes go into the blob's inline constant region (each
    /// constant starts at a 16-byte boundary, as the exporter lays them out).
    ///
    /// # Panics
    /// If `bytes.len()` is not `numel * dtype size` (a bug in the caller's test/tool).
    pub fn add_constant_inline(&mut self, dtype: DataType, dims: &[usize], bytes: &[u8]) -> usize {
        let t = Self::tensor_value(dtype, dims, Some(self.constants.len()));
        assert_eq!(
            Some(bytes.len()),
            t.numel.checked_mul(dtype.size_bytes()),
            "constant bytes for {dtype:?} {dims:?}"
        );
        let offset = self.inline.len();
        self.inline.extend_from_slice(bytes);
        self.inline.resize(align_up(self.inline.len(), 16), 0);
        self.constants.push(ConstantSource::Inline {
            offset,
            length: bytes.len(),
        });
        self.add_value(Value::Tensor(t))
    }

    /// `Int`.
    pub fn add_int(&mut self, x: i64) -> usize {
        self.add_value(Value::Int(x))
    }
    /// `Double`.
    pub fn add_double(&mut self, x: f64) -> usize {
        self.add_value(Value::Double(x))
    }
    /// `Bool`.
    pub fn add_bool(&mut self, x: bool) -> usize {
        self.add_value(Value::Bool(x))
    }
    /// `Null` (None, dtype, device, ...).
    pub fn add_null(&mut self) -> usize {
        self.add_value(Value::Null)
    }
    /// `IntList`.
    pub fn add_int_list(&mut self, x: &[i64]) -> usize {
        self.add_value(Value::IntList(x.to_vec()))
    }
    /// `DoubleList`.
    pub fn add_double_list(&mut self, x: &[f64]) -> usize {
        self.add_value(Value::DoubleList(x.to_vec()))
    }
    /// `BoolList`.
    pub fn add_bool_list(&mut self, x: &[bool]) -> usize {
        self.add_value(Value::BoolList(x.to_vec()))
    }
    /// `ValueList` of existing value ids.
    pub fn add_value_list(&mut self, ids: &[usize]) -> usize {
        self.add_value(Value::ValueList(ids.to_vec()))
    }
    /// `SymInt` with its initial value.
    pub fn add_symint(&mut self, x: i32) -> usize {
        self.add_value(Value::SymInt(x))
    }
    /// `String`.
    pub fn add_string(&mut self, s: &str) -> usize {
        self.add_value(Value::String(s.to_owned()))
    }

    /// Append an operator call (`args` = value ids, output last); returns its chain index.
    pub fn add_op(&mut self, name: &str, args: &[usize]) -> usize {
        let node_id = u32::try_from(self.chain.len()).unwrap_or(u32::MAX);
        self.chain.push(OperatorCall {
            node_id,
            name: name.to_owned(),
            args: args.to_vec(),
        });
        self.chain.len() - 1
    }

    /// Append `id` to `input_ids`.
    pub fn mark_input(&mut self, id: usize) {
        self.input_ids.push(id);
    }
    /// Append `id` to `output_ids`.
    pub fn mark_output(&mut self, id: usize) {
        self.output_ids.push(id);
    }

    fn tensor_mut(&mut self, id: usize) -> Option<&mut TensorValue> {
        match self.values.get_mut(id) {
            Some(Value::Tensor(t)) => Some(t),
            _ => None,
        }
    }

    /// Share memory object `mem_obj` (or `None`: dedicated). No-op if `id` is not a tensor.
    pub fn set_mem_obj(&mut self, id: usize, mem_obj: Option<usize>) {
        if let Some(t) = self.tensor_mut(id) {
            t.mem_obj_id = mem_obj;
        }
    }
    /// Set the host-visible dtype. No-op if `id` is not a tensor.
    pub fn set_staging_dtype(&mut self, id: usize, dtype: DataType) {
        if let Some(t) = self.tensor_mut(id) {
            t.staging_dtype = dtype;
        }
    }
    /// Set raw storage type / memory layout hints. No-op if `id` is not a tensor.
    pub fn set_storage(&mut self, id: usize, storage_type: u8, memory_layout: u8) {
        if let Some(t) = self.tensor_mut(id) {
            t.storage_type = storage_type;
            t.memory_layout = memory_layout;
        }
    }

    /// Give value `id` a name, so that a host can find it later (VkGraph itself stores no
    /// names: keep [`GraphBuilder::names`] beside the blob, e.g. to read or write a trained
    /// adapter by name through `Delegate::read_tensor` / `write_tensor`). Returns `id`.
    /// A name given twice now refers to the later value.
    pub fn set_name(&mut self, id: usize, name: &str) -> usize {
        self.names.insert(name.to_owned(), id);
        id
    }
    /// The value named `name`, if any.
    pub fn id_of(&self, name: &str) -> Option<usize> {
        self.names.get(name).copied()
    }
    /// Every name given so far, with its value id, sorted by name.
    pub fn names(&self) -> &std::collections::BTreeMap<String, usize> {
        &self.names
    }

    /// The value `id`, if any.
    pub fn value(&self, id: usize) -> Option<&Value> {
        self.values.get(id)
    }
    /// Number of values so far.
    pub fn num_values(&self) -> usize {
        self.values.len()
    }

    /// The graph (version "0") and its inline constant region.
    pub fn finish(self) -> (VkGraph, Vec<u8>) {
        let g = VkGraph {
            version: "0".to_owned(),
            values: self.values,
            chain: self.chain,
            input_ids: self.input_ids,
            output_ids: self.output_ids,
            constants: self.constants,
            storage_type_override: 255,
            memory_layout_override: 255,
        };
        (g, self.inline)
    }

    /// Like [`GraphBuilder::finish_delegate`], also returning the name map.
    pub fn finish_delegate_named(self) -> (Vec<u8>, std::collections::BTreeMap<String, usize>) {
        let names = self.names.clone();
        (self.finish_delegate(), names)
    }

    /// Shortcut: [`GraphBuilder::finish`] then [`write_delegate`].
    pub fn finish_delegate(self) -> Vec<u8> {
        let (g, inline) = self.finish();
        write_delegate(&g, &inline)
    }
}
