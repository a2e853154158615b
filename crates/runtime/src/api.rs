//! The backend API: the contract between the runtime and its users (ffi, tests, CLI).
//!
//! CONTRACT FILE: the signatures here are relied on by `ffi/`, `crates/host` and `tests/`.
//! Implementations may change; signatures change only together with their users.

use std::sync::Arc;

/// Error categories; map 1:1 onto `etvk_abi::EtvkStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad argument from the caller (shape, dtype, count, null).
    InvalidArgument,
    /// Malformed program / blob.
    InvalidProgram,
    /// Valid but unsupported (unknown op, limit exceeded).
    Unsupported,
    /// Vulkan error.
    Device,
    /// Device lost (sticky).
    DeviceLost,
    /// Out of host or device memory.
    OutOfMemory,
    /// Bug.
    Internal,
}

/// A runtime error: a category plus a one-line message that says what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    /// Category.
    pub kind: ErrorKind,
    /// Message naming the op / value / limit.
    pub message: String,
}

impl Error {
    /// Build an error.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error { kind, message: message.into() }
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// Host dtypes (ExecuTorch `ScalarType` numbering via [`HostDType::code`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostDType {
    /// uint8 (0)
    Byte,
    /// int8 (1)
    Char,
    /// int16 (2)
    Short,
    /// int32 (3)
    Int,
    /// int64 (4)
    Long,
    /// float16 (5)
    Half,
    /// float32 (6)
    Float,
    /// float64 (7)
    Double,
    /// bool (11)
    Bool,
}

impl HostDType {
    /// ExecuTorch ScalarType code.
    pub fn code(self) -> i32 {
        match self {
            HostDType::Byte => 0,
            HostDType::Char => 1,
            HostDType::Short => 2,
            HostDType::Int => 3,
            HostDType::Long => 4,
            HostDType::Half => 5,
            HostDType::Float => 6,
            HostDType::Double => 7,
            HostDType::Bool => 11,
        }
    }
    /// From an ExecuTorch ScalarType code.
    pub fn from_code(code: i32) -> Option<HostDType> {
        Some(match code {
            0 => HostDType::Byte,
            1 => HostDType::Char,
            2 => HostDType::Short,
            3 => HostDType::Int,
            4 => HostDType::Long,
            5 => HostDType::Half,
            6 => HostDType::Float,
            7 => HostDType::Double,
            11 => HostDType::Bool,
            _ => return None,
        })
    }
    /// Element size in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            HostDType::Byte | HostDType::Char | HostDType::Bool => 1,
            HostDType::Short | HostDType::Half => 2,
            HostDType::Int | HostDType::Float => 4,
            HostDType::Long | HostDType::Double => 8,
        }
    }
}

/// A dense host tensor (row-major, little-endian bytes).
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    /// Element type.
    pub dtype: HostDType,
    /// Sizes, outermost first.
    pub sizes: Vec<usize>,
    /// `numel * dtype.size_bytes()` bytes.
    pub data: Vec<u8>,
}

/// One argument of [`Delegate::execute`], in DelegateCall order (inputs, then outputs).
#[derive(Debug, Clone, PartialEq)]
pub enum DelegateArg {
    /// A tensor. Inputs are read; outputs are overwritten (dtype kept, sizes and data
    /// replaced by what the graph produced).
    Tensor(HostTensor),
    /// An integer (SymInt inputs / outputs).
    Int(i64),
    /// Anything else; ignored.
    None,
}

/// Named-data provider (the program's `named_data`, keyed by exact key bytes).
pub trait NamedData {
    /// The bytes stored under `key`, if any.
    fn get(&self, key: &str) -> Option<&[u8]>;
}

/// Knobs, read once (from the environment by [`RuntimeOptions::from_env`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// `ETVK_DEVICE`: device index or name substring.
    pub device: Option<String>,
    /// `ETVK_VALIDATION=1`: enable validation layers; error messages fail the operation.
    pub validation: bool,
}

impl RuntimeOptions {
    /// Read `ETVK_DEVICE` and `ETVK_VALIDATION`.
    pub fn from_env() -> RuntimeOptions {
        RuntimeOptions {
            device: std::env::var("ETVK_DEVICE").ok().filter(|s| !s.is_empty()),
            validation: std::env::var("ETVK_VALIDATION").map(|v| v == "1").unwrap_or(false),
        }
    }
}

/// A backend context: one Vulkan device, shared by all delegates created on it.
pub struct Backend {
    // implementation-defined
    _private: (),
}

/// A loaded delegate (one VkGraph on the GPU).
pub struct Delegate {
    // implementation-defined
    _private: (),
}

impl Backend {
    /// Open the Vulkan device chosen by `options`.
    pub fn new(_options: &RuntimeOptions) -> Result<Arc<Backend>> {
        Err(Error::new(ErrorKind::Internal, "etvk-runtime: Backend::new not implemented yet"))
    }
    /// One line describing the device (name, type, driver).
    pub fn device_description(&self) -> String {
        String::new()
    }
}

impl Delegate {
    /// Parse, validate and build a delegate blob (`VH00` + `VK00`), prepacking constants.
    pub fn init(
        _backend: &Arc<Backend>,
        _blob: &[u8],
        _compile_specs: &[(String, Vec<u8>)],
        _named_data: &dyn NamedData,
    ) -> Result<Delegate> {
        Err(Error::new(ErrorKind::Internal, "etvk-runtime: Delegate::init not implemented yet"))
    }
    /// Number of graph inputs (the first arguments of `execute`).
    pub fn num_inputs(&self) -> usize {
        0
    }
    /// Number of graph outputs (the last arguments of `execute`).
    pub fn num_outputs(&self) -> usize {
        0
    }
    /// Run once. `args.len()` must be `num_inputs() + num_outputs()`.
    pub fn execute(&mut self, _args: &mut [DelegateArg]) -> Result<()> {
        Err(Error::new(ErrorKind::Internal, "etvk-runtime: Delegate::execute not implemented yet"))
    }
}

/// A Vulkan physical device as `etvk devices` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Index in enumeration order (what `ETVK_DEVICE=<index>` selects).
    pub index: usize,
    /// Device name.
    pub name: String,
    /// "discrete", "integrated", "virtual", "cpu", "other".
    pub device_type: String,
    /// Whether `RuntimeOptions` would select it.
    pub selected: bool,
    /// Limits and features that matter, as (name, value) lines.
    pub properties: Vec<(String, String)>,
}

/// Enumerate Vulkan devices.
pub fn list_devices(_options: &RuntimeOptions) -> Result<Vec<DeviceInfo>> {
    Err(Error::new(ErrorKind::Internal, "etvk-runtime: list_devices not implemented yet"))
}

/// One registry entry as `etvk ops` and `docs/ops.md` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpInfo {
    /// Exact op name.
    pub name: String,
    /// Supported dtypes, e.g. `["float32", "float16"]`.
    pub dtypes: Vec<String>,
    /// Whether the op supports dynamic shapes (has a resize function).
    pub dynamic_shapes: bool,
    /// One-line note (limits, semantics).
    pub note: String,
}

/// All registered ops, sorted by name.
pub fn registered_ops() -> Vec<OpInfo> {
    Vec::new()
}
