//! Owned, validated IR of an ExecuTorch `.pte` program (`ET12`).
//!
//! Indices (values, segments, delegates, operators, named data) are checked in range;
//! byte ranges are checked to lie inside the file.

use std::ops::Range;

/// An `EValue` of an execution plan (union `KernelTypes`).
#[derive(Debug, Clone, PartialEq)]
pub enum EValue {
    /// `Null` / NONE.
    Null,
    /// `Int`.
    Int(i64),
    /// `Bool`.
    Bool(bool),
    /// `Double`.
    Double(f64),
    /// `Tensor`.
    Tensor(PlanTensor),
    /// `String`.
    String(String),
    /// `IntList`.
    IntList(Vec<i64>),
    /// `DoubleList`.
    DoubleList(Vec<f64>),
    /// `BoolList`.
    BoolList(Vec<bool>),
    /// `TensorList`: value indices.
    TensorList(Vec<usize>),
    /// `OptionalTensorList`: value indices, `None` for -1.
    OptionalTensorList(Vec<Option<usize>>),
}

/// Where a plan tensor's initial data comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TensorData {
    /// Bound at input time or produced by an instruction (no initial data).
    None,
    /// A constant: byte range in the file.
    Constant(Range<usize>),
    /// Memory-planned in arena `memory_id` at `offset` (ExecuTorch's planner); etvk's host
    /// allocates per tensor and ignores the offset.
    Planned {
        /// Arena id.
        memory_id: u32,
        /// Offset in the arena.
        offset: u64,
    },
    /// Mutable with an initial value: byte range in the file.
    MutableInit(Range<usize>),
    /// External named data (`.ptd`) under this fully qualified name.
    External(String),
}

/// A tensor of an execution plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanTensor {
    /// ExecuTorch `ScalarType` code (0 u8, 1 i8, 3 i32, 4 i64, 5 f16, 6 f32, 7 f64, 11 bool, ...).
    pub scalar_type: i8,
    /// Sizes (upper bounds for dynamic tensors).
    pub sizes: Vec<i64>,
    /// Dim order.
    pub dim_order: Vec<u8>,
    /// `shape_dynamism` (0 static, 1 bound, 2 unbound).
    pub shape_dynamism: i8,
    /// Initial data.
    pub data: TensorData,
}

/// One instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Instruction {
    /// Call operator `op_index` of the plan with value indices `args`.
    KernelCall {
        /// Index into `ExecutionPlan::operators`.
        op_index: usize,
        /// Value indices.
        args: Vec<usize>,
    },
    /// Call delegate `delegate_index` with value indices `args` (inputs then outputs).
    DelegateCall {
        /// Index into `ExecutionPlan::delegates`.
        delegate_index: usize,
        /// Value indices.
        args: Vec<usize>,
    },
    /// `values[to] = values[from]`.
    MoveCall {
        /// Source value.
        from: usize,
        /// Destination value.
        to: usize,
    },
    /// If `values[cond]` is false jump to `destination`.
    JumpFalseCall {
        /// Bool value index.
        cond: usize,
        /// Instruction index in the chain (checked in range).
        destination: usize,
    },
    /// Free a value.
    FreeCall {
        /// Value index.
        value: usize,
    },
}

/// A chain of instructions.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// Input value indices.
    pub inputs: Vec<usize>,
    /// Output value indices.
    pub outputs: Vec<usize>,
    /// Instructions.
    pub instructions: Vec<Instruction>,
}

/// An operator of the plan's operator table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// e.g. `aten::expand_copy`.
    pub name: String,
    /// e.g. `out`.
    pub overload: String,
}

/// Where a delegate's processed blob lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DelegateData {
    /// `Program.backend_delegate_data[i]`.
    Inline(usize),
    /// `Program.segments[i]`.
    Segment(usize),
}

/// A `BackendDelegate`.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendDelegate {
    /// Backend id, e.g. `VulkanBackend`.
    pub id: String,
    /// Where its blob is.
    pub processed: DelegateData,
    /// Compile specs, verbatim.
    pub compile_specs: Vec<(String, Vec<u8>)>,
}

/// An execution plan (a method).
#[derive(Debug, Clone, PartialEq)]
pub struct ExecutionPlan {
    /// Method name (`forward`).
    pub name: String,
    /// All values.
    pub values: Vec<EValue>,
    /// User input value indices.
    pub inputs: Vec<usize>,
    /// User output value indices.
    pub outputs: Vec<usize>,
    /// Chains (chain 0 is the entry).
    pub chains: Vec<Chain>,
    /// Operator table.
    pub operators: Vec<Operator>,
    /// Delegates.
    pub delegates: Vec<BackendDelegate>,
    /// `non_const_buffer_sizes`.
    pub non_const_buffer_sizes: Vec<i64>,
}

/// The `eh00` extended header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtendedHeader {
    /// Header length field.
    pub header_length: u32,
    /// Bytes of flatbuffer data from file offset 0.
    pub program_size: u64,
    /// File offset of the first segment (0 if none).
    pub segment_base_offset: u64,
    /// Bytes from segment_base_offset to the end of the last segment.
    pub segment_data_size: u64,
}

/// A validated program. Byte ranges index into the file bytes it was parsed from, which
/// [`Program`] keeps (`bytes`).
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The whole file.
    pub bytes: Vec<u8>,
    /// The extended header, if present.
    pub extended_header: Option<ExtendedHeader>,
    /// Execution plans.
    pub plans: Vec<ExecutionPlan>,
    /// Inline delegate data (`backend_delegate_data`): file byte ranges.
    pub inline_delegate_data: Vec<Range<usize>>,
    /// Segments: file byte ranges (checked inside the file).
    pub segments: Vec<Range<usize>>,
    /// Named data: key and file byte range.
    pub named_data: Vec<(String, Range<usize>)>,
    /// External data files (`.ptd`) attached after parsing ([`Program::attach_external`]):
    /// named data and external tensors the file itself does not hold are looked up there.
    pub external: Vec<crate::ptd::PtdFile>,
}

impl Program {
    /// The plan called `name`.
    pub fn plan(&self, name: &str) -> Option<&ExecutionPlan> {
        self.plans.iter().find(|p| p.name == name)
    }
    /// Bytes of a delegate's processed blob.
    pub fn delegate_blob(&self, d: &BackendDelegate) -> &[u8] {
        let r = match d.processed {
            DelegateData::Inline(i) => self.inline_delegate_data[i].clone(),
            DelegateData::Segment(i) => self.segments[i].clone(),
        };
        &self.bytes[r]
    }
    /// Named data by exact key.
    pub fn named_data(&self, key: &str) -> Option<&[u8]> {
        self.named_data
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, r)| &self.bytes[r.clone()])
            .or_else(|| self.external.iter().find_map(|f| f.get(key)))
    }
    /// Attach an external data file (`.ptd`): its keys serve [`Program::named_data`] lookups
    /// the program's own named data does not answer.
    pub fn attach_external(&mut self, file: crate::ptd::PtdFile) {
        self.external.push(file);
    }
}
