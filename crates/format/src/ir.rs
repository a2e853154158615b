//! The owned, validated IR that the rest of etvk consumes.
//!
//! Everything here has passed the flatbuffers verifier and the semantic checks: indices are
//! in range, union tags are consistent, schema defaults are applied, byte sizes fit. Code
//! downstream may index with these values without re-checking them against the graph.

/// Element type of a VkGraph tensor (`VkDataType`). `UNSET` (127) is represented as
/// `None` where it may appear (`staging_datatype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataType {
    /// 0
    Bool,
    /// 1
    Uint8,
    /// 2
    Int8,
    /// 3
    Int32,
    /// 4
    Float16,
    /// 5
    Float32,
    /// 6
    Float64,
    /// 7
    Int64,
}

impl DataType {
    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            DataType::Bool | DataType::Uint8 | DataType::Int8 => 1,
            DataType::Float16 => 2,
            DataType::Int32 | DataType::Float32 => 4,
            DataType::Float64 | DataType::Int64 => 8,
        }
    }
    /// The serialized `VkDataType` code.
    pub fn code(self) -> i8 {
        match self {
            DataType::Bool => 0,
            DataType::Uint8 => 1,
            DataType::Int8 => 2,
            DataType::Int32 => 3,
            DataType::Float16 => 4,
            DataType::Float32 => 5,
            DataType::Float64 => 6,
            DataType::Int64 => 7,
        }
    }
    /// Inverse of [`DataType::code`].
    pub fn from_code(code: i8) -> Option<DataType> {
        Some(match code {
            0 => DataType::Bool,
            1 => DataType::Uint8,
            2 => DataType::Int8,
            3 => DataType::Int32,
            4 => DataType::Float16,
            5 => DataType::Float32,
            6 => DataType::Float64,
            7 => DataType::Int64,
            _ => return None,
        })
    }
    /// Lower-case name (`float32`, ...), as used in errors and docs.
    pub fn name(self) -> &'static str {
        match self {
            DataType::Bool => "bool",
            DataType::Uint8 => "uint8",
            DataType::Int8 => "int8",
            DataType::Int32 => "int32",
            DataType::Float16 => "float16",
            DataType::Float32 => "float32",
            DataType::Float64 => "float64",
            DataType::Int64 => "int64",
        }
    }
}

/// A VkGraph tensor value.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorValue {
    /// Element type on the GPU side (after the exporter's downcasts / force_fp16).
    pub dtype: DataType,
    /// Sizes, outermost first (PyTorch order). Empty = rank-0 scalar. For dynamic-shape
    /// programs these are the maxima.
    pub dims: Vec<usize>,
    /// Product of `dims`, checked.
    pub numel: usize,
    /// `Some(i)` when the tensor is constant `VkGraph.constants[i]` (index checked).
    pub constant_id: Option<usize>,
    /// `Some(id)` when the tensor shares memory object `id` with others.
    pub mem_obj_id: Option<usize>,
    /// dtype the host sees; defaults to `dtype` when the field is UNSET.
    pub staging_dtype: DataType,
    /// Raw `VkStorageType` (255 = default). Accepted and ignored: etvk uses buffers.
    pub storage_type: u8,
    /// Raw `VkMemoryLayout` (255 = default). Accepted and ignored.
    pub memory_layout: u8,
}

/// One entry of `VkGraph.values` (union `GraphTypes`).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `Null` (also used for None, dtypes, devices, layouts).
    Null,
    /// `Int`.
    Int(i64),
    /// `Double`.
    Double(f64),
    /// `Bool`.
    Bool(bool),
    /// `VkTensor`.
    Tensor(TensorValue),
    /// `IntList`.
    IntList(Vec<i64>),
    /// `DoubleList`.
    DoubleList(Vec<f64>),
    /// `BoolList`.
    BoolList(Vec<bool>),
    /// `ValueList`: indices into `values` (checked in range).
    ValueList(Vec<usize>),
    /// `String`.
    String(String),
    /// `SymInt` with its initial value.
    SymInt(i32),
}

impl Value {
    /// Short name of the variant, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Null => "Null",
            Value::Int(_) => "Int",
            Value::Double(_) => "Double",
            Value::Bool(_) => "Bool",
            Value::Tensor(_) => "Tensor",
            Value::IntList(_) => "IntList",
            Value::DoubleList(_) => "DoubleList",
            Value::BoolList(_) => "BoolList",
            Value::ValueList(_) => "ValueList",
            Value::String(_) => "String",
            Value::SymInt(_) => "SymInt",
        }
    }
}

/// Where a constant's bytes live (`VkBytes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConstantSource {
    /// `offset == UINT64_MAX` with a `named_key`: the program's named data (`key` is usually
    /// the sha256 hex of the bytes). `length` is the serialized byte length.
    Named {
        /// Named-data key.
        key: String,
        /// Expected length in bytes.
        length: usize,
    },
    /// Bytes inside the delegate blob's constant region: `[offset, offset + length)`
    /// relative to the region start; checked to lie inside it.
    Inline {
        /// Offset from the start of the constant region.
        offset: usize,
        /// Length in bytes.
        length: usize,
    },
}

/// One `OperatorCall` of the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct OperatorCall {
    /// Debug handle.
    pub node_id: u32,
    /// Exact op name (`aten.add.Tensor`, `et_vk.linear_q4gsw.default`, `sym_size.int`).
    pub name: String,
    /// Value indices (checked in range); the last one is the output.
    pub args: Vec<usize>,
}

/// A validated VkGraph.
#[derive(Debug, Clone, PartialEq)]
pub struct VkGraph {
    /// `version` string (the writer puts "0").
    pub version: String,
    /// All values; a value's id is its index.
    pub values: Vec<Value>,
    /// Operator calls in execution order.
    pub chain: Vec<OperatorCall>,
    /// Graph inputs (value ids, checked).
    pub input_ids: Vec<usize>,
    /// Graph outputs (value ids, checked).
    pub output_ids: Vec<usize>,
    /// Constant table.
    pub constants: Vec<ConstantSource>,
    /// Raw `storage_type_override` table field (dead in ExecuTorch; kept for inspect).
    pub storage_type_override: u8,
    /// Raw `memory_layout_override` table field (dead in ExecuTorch; kept for inspect).
    pub memory_layout_override: u8,
}

/// The `VH00` header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelegateHeader {
    /// header_size (>= 30)
    pub header_size: u16,
    /// flatbuffer_offset
    pub flatbuffer_offset: u32,
    /// flatbuffer_size
    pub flatbuffer_size: u32,
    /// bytes_offset
    pub bytes_offset: u32,
    /// bytes_size (as serialized; see [`VulkanDelegate::constant_region`])
    pub bytes_size: u64,
}

/// A parsed Vulkan delegate blob: header, graph, and the blob's constant byte region.
#[derive(Debug, Clone, PartialEq)]
pub struct VulkanDelegate {
    /// The header.
    pub header: DelegateHeader,
    /// The validated graph.
    pub graph: VkGraph,
    /// The raw constant region (`bytes_size` bytes at `bytes_offset`, or the rest of the
    /// blob when `bytes_size == 0`, as ExecuTorch does). Inline constants index into it.
    pub constant_region: Vec<u8>,
}
