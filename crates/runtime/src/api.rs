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
        Error {
            kind,
            message: message.into(),
        }
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
    /// `ETVK_SYNC_VALIDATION=1`: with `validation`, the layers' synchronization validation
    /// too (a missing barrier between dispatches is then an error; slow).
    pub sync_validation: bool,
    /// `ETVK_FENCE_SPIN_US` (default 500 from the environment, 0 in `Default`): how long an
    /// execute polls for the GPU to finish before it sleeps in the driver. H100, small
    /// decodes: the wait 150-160 -> 120-125 us per execute with 500 (docs/performance.md).
    pub fence_spin_us: u64,
    /// `ETVK_PROFILE=1`: record GPU timestamps around every dispatch, so that
    /// [`Delegate::profile`] reports per-node times after each execute. Off by default: the
    /// timestamps and their read-back cost ~0.1 ms per execute of a 38-node graph on an H200
    /// (a tiny Llama's decode: 0.22-0.30 ms per token without them, 0.33-0.38 with).
    pub profile: bool,
    /// `ETVK_RESIZE=full|check`: how resize passes run after a dynamic change (default
    /// [`ResizeMode::Incremental`]).
    pub resize: ResizeMode,
}

/// How an execute whose inputs changed sizes, SymInts or watched values re-runs the graph's
/// resize functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResizeMode {
    /// Only the steps whose last run read something that changed (the default).
    #[default]
    Incremental,
    /// Every step, every time (`ETVK_RESIZE=full`; comparisons).
    Full,
    /// Incremental, then a full pass, failing the execute where they differ
    /// (`ETVK_RESIZE=check`; tests).
    Check,
}

impl RuntimeOptions {
    /// Read `ETVK_DEVICE`, `ETVK_VALIDATION`, `ETVK_SYNC_VALIDATION`, `ETVK_FENCE_SPIN_US`,
    /// `ETVK_PROFILE` and `ETVK_RESIZE`.
    pub fn from_env() -> RuntimeOptions {
        let flag = |name: &str| std::env::var(name).map(|v| v == "1").unwrap_or(false);
        RuntimeOptions {
            device: std::env::var("ETVK_DEVICE").ok().filter(|s| !s.is_empty()),
            validation: flag("ETVK_VALIDATION"),
            sync_validation: flag("ETVK_SYNC_VALIDATION"),
            fence_spin_us: std::env::var("ETVK_FENCE_SPIN_US")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(500),
            profile: flag("ETVK_PROFILE"),
            resize: match std::env::var("ETVK_RESIZE").as_deref() {
                Ok("full") => ResizeMode::Full,
                Ok("check") => ResizeMode::Check,
                _ => ResizeMode::Incremental,
            },
        }
    }
}

/// A backend context: one Vulkan device, shared by all delegates created on it.
pub struct Backend {
    inner: Arc<crate::backend::BackendInner>,
}

/// GPU time of one dispatch of the last execute (see [`Delegate::profile_nodes`]).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeTime {
    /// Op name; `op/kernel` for nodes with kernel alternatives.
    pub op: String,
    /// VkGraph `OperatorCall.node_id` of the op.
    pub node_id: u32,
    /// Microseconds from the start of this dispatch to the start of the next one: the
    /// dispatch and the barrier after it (the times of a graph's nodes sum to its GPU time).
    pub us: f64,
    /// Microseconds between the timestamps right before and right after the dispatch: the
    /// kernel alone, without the barrier that follows it (0.6-0.7 us on an H200).
    pub dispatch_us: f64,
    /// Whether the dispatch ran: a kernel idle at the current shapes (e.g. a split-K sum
    /// that the chosen kernel does itself) records no work, and its times are ~0.
    pub launched: bool,
}

/// A loaded delegate (one VkGraph on the GPU).
pub struct Delegate {
    graph: crate::exec::ComputeGraph,
    _backend: Arc<Backend>,
}

impl Backend {
    /// Open the Vulkan device chosen by `options`.
    pub fn new(options: &RuntimeOptions) -> Result<Arc<Backend>> {
        let ctx = etvk_vulkan::Context::new(&etvk_vulkan::ContextOptions {
            device: options.device.clone(),
            validation: options.validation,
            sync_validation: options.sync_validation,
            fence_spin_us: options.fence_spin_us,
        })?;
        let inner = Arc::new(crate::backend::BackendInner::new(
            ctx,
            options.profile,
            options.resize,
        ));
        inner.check_validation("while opening the device")?;
        Ok(Arc::new(Backend { inner }))
    }
    /// One line describing the device (name, type, driver).
    pub fn device_description(&self) -> String {
        self.inner.ctx.description()
    }
    /// The device's capabilities and limits (what kernel variants can be picked).
    pub fn device_caps(&self) -> &etvk_vulkan::DeviceCaps {
        self.inner.ctx.caps()
    }
    /// Backend internals (benchmarks drive the device directly).
    pub(crate) fn inner(&self) -> &Arc<crate::backend::BackendInner> {
        &self.inner
    }
    /// Validation error messages counted so far (0 without validation).
    pub fn validation_error_count(&self) -> u64 {
        self.inner.ctx.validation_error_count()
    }
}

impl Delegate {
    /// Parse, validate and build a delegate blob (`VH00` + `VK00`), prepacking constants.
    pub fn init(
        backend: &Arc<Backend>,
        blob: &[u8],
        compile_specs: &[(String, Vec<u8>)],
        named_data: &dyn NamedData,
    ) -> Result<Delegate> {
        let parsed = etvk_format::vkgraph::parse_delegate(blob)?;
        Delegate::from_ir(backend, &parsed, compile_specs, named_data)
    }
    /// Build from an already parsed delegate (tests and tools that construct IR directly).
    pub fn from_ir(
        backend: &Arc<Backend>,
        delegate: &etvk_format::ir::VulkanDelegate,
        compile_specs: &[(String, Vec<u8>)],
        named_data: &dyn NamedData,
    ) -> Result<Delegate> {
        let dynamic = compile_specs
            .iter()
            .any(|(k, v)| k == "require_dynamic_shapes" && v.iter().any(|b| *b != 0));
        // A program exported with `downcast_64_bit` off: 32-bit on the GPU, as the default.
        let downcast = crate::downcast::downcast_64_bit(delegate, named_data)?;
        let delegate = downcast.as_ref().unwrap_or(delegate);
        let mut builder = crate::builder::GraphBuilder::new(
            &backend.inner,
            &delegate.graph,
            &delegate.constant_region,
            named_data,
            dynamic,
        )?;
        builder.cpu_prepack = compile_specs
            .iter()
            .any(|(k, v)| k == crate::builder::CPU_PREPACK_SPEC && v.iter().any(|b| *b != 0));
        let text_spec = |name: &str| {
            compile_specs.iter().find(|(k, _)| k == name).map(|(_, v)| {
                String::from_utf8_lossy(v)
                    .trim_end_matches('\0')
                    .to_string()
            })
        };
        builder.q4_gemv = text_spec(crate::builder::Q4_GEMV_SPEC);
        builder.q4_bwd = text_spec(crate::builder::Q4_BWD_SPEC);
        builder.q4_mma = text_spec(crate::builder::Q4_MMA_SPEC);
        builder.q4_fma = text_spec(crate::builder::Q4_FMA_SPEC);
        builder.row_range = text_spec(crate::builder::ROW_RANGE_SPEC);
        builder.norm_gemv = text_spec(crate::builder::NORM_GEMV_SPEC);
        builder.sdpa_split = text_spec(crate::builder::SDPA_SPLIT_SPEC);
        for (name, value, settings) in [
            (
                crate::builder::ROW_RANGE_SPEC,
                &builder.row_range,
                crate::builder::ROW_RANGE_SETTINGS,
            ),
            (
                crate::builder::NORM_GEMV_SPEC,
                &builder.norm_gemv,
                crate::builder::NORM_GEMV_SETTINGS,
            ),
            (
                crate::builder::SDPA_SPLIT_SPEC,
                &builder.sdpa_split,
                crate::builder::SDPA_SPLIT_SETTINGS,
            ),
        ] {
            if let Some(v) = value.as_deref().filter(|v| !settings.contains(v)) {
                return Err(crate::error::invalid_arg(format!(
                    "compile spec {name} = {v:?} is not one of {}",
                    settings.join(", ")
                )));
            }
        }
        crate::ops::q4_linear::check_compile_specs(
            builder.q4_gemv.as_deref(),
            builder.q4_bwd.as_deref(),
            builder.q4_mma.as_deref(),
            builder.q4_fma.as_deref(),
        )?;
        let graph = builder.build()?;
        backend.inner.check_validation("during delegate init")?;
        Ok(Delegate {
            graph,
            _backend: backend.clone(),
        })
    }
    /// Number of graph inputs (the first arguments of `execute`).
    pub fn num_inputs(&self) -> usize {
        self.graph.num_inputs()
    }
    /// Number of graph outputs (the last arguments of `execute`).
    pub fn num_outputs(&self) -> usize {
        self.graph.num_outputs()
    }
    /// Run once. `args.len()` must be `num_inputs() + num_outputs()`.
    pub fn execute(&mut self, args: &mut [DelegateArg]) -> Result<()> {
        self.graph.execute(args)
    }
    /// Run the last execute's work again on the inputs it left on the GPU, without host
    /// transfers; the outputs stay on the GPU ([`Delegate::read_tensor`]). An error before
    /// the first execute, or after an input size change until the next execute.
    pub fn replay(&mut self) -> Result<()> {
        self.graph.replay()
    }
    /// Per-dispatch GPU time of the last execute: (op name, microseconds), in execution
    /// order. Empty unless profiling is on ([`Delegate::set_profiling`], or a backend created
    /// with [`RuntimeOptions::profile`], `ETVK_PROFILE=1`), or when the queue has no timestamp
    /// support.
    pub fn profile(&self) -> Vec<(String, f64)> {
        self.graph
            .profile()
            .iter()
            .map(|t| (t.op.clone(), t.us))
            .collect()
    }
    /// Turn per-dispatch GPU timestamps on or off for later executes (initially
    /// [`RuntimeOptions::profile`]). Off, [`Delegate::profile`] is empty and an execute of a
    /// small graph is ~0.1 ms faster on an H200.
    pub fn set_profiling(&mut self, on: bool) -> Result<()> {
        self.graph.set_profiling(on)
    }
    /// With profiling on, time only whole executes: [`Delegate::profile`] then has one entry,
    /// `(whole execute)`, and the dispatches keep the barriers they have without profiling
    /// (per-node timestamps hold them in node order, a barrier after each). Also
    /// `ETVK_PROFILE_WHOLE=1`.
    pub fn set_profile_whole(&mut self, on: bool) {
        self.graph.set_profile_whole(on)
    }
    /// (resize steps run, resize steps in all) by the last execute: the resize functions of
    /// dispatches and host steps that a change of input sizes, SymInts or watched values
    /// reached ([`ResizeMode`]); (0, all) when nothing changed.
    pub fn resize_steps(&self) -> (usize, usize) {
        self.graph.resize_steps()
    }
    /// [`Delegate::profile`] with each dispatch's VkGraph node id (`OperatorCall.node_id`;
    /// an op with several dispatches has several entries with one id).
    pub fn profile_nodes(&self) -> &[NodeTime] {
        self.graph.profile()
    }
    /// (barriers, dispatches) of the last recorded execute: a barrier goes only between
    /// dependent dispatches (one touches memory another since the last barrier wrote, or
    /// writes memory one read), except with profiling on or `ETVK_BARRIERS=all`, where one
    /// follows every dispatch. (0, 0) before the first execute.
    pub fn barriers(&self) -> (usize, usize) {
        self.graph.barriers()
    }
    /// Set a runtime scalar (a SymInt, or an Int/Double value an op made GPU-visible, e.g.
    /// a learning rate) by VkGraph value id; takes effect at the next execute.
    pub fn set_scalar(&mut self, value_id: usize, value: f64) -> Result<()> {
        self.graph.set_scalar(value_id, value)
    }
    /// Copy the GPU-resident tensor of VkGraph value `value_id` to the host, at its current
    /// sizes, in the value's host dtype (its `staging_dtype`, e.g. int64 for an int32 GPU
    /// tensor; the GPU dtype for constants).
    ///
    /// Reaches graph tensors and constants. A constant maps to its contiguous GPU copy:
    /// the one that ops using it contiguously share and that in-place ops (`adamw_step`,
    /// KV-cache updates) mutate, which persists across executes. So after training steps
    /// this reads the updated parameter / optimizer moment. A constant that is only on the
    /// GPU in a packed layout, or not at all, is `Unsupported`; a non-tensor value is
    /// `InvalidArgument`. Graph tensors sharing a `mem_obj_id` share storage, so a value
    /// read after its storage was reused shows the later tensor's bytes, and a graph tensor
    /// that no execute and no [`Delegate::write_tensor`] has filled yet holds undefined bytes.
    ///
    /// VkGraph values have no names: a host that wants names keeps its own name -> value
    /// id map (e.g. the graph builder that wrote the training graph), so there is no
    /// lookup by name here.
    pub fn read_tensor(&mut self, value_id: usize) -> Result<HostTensor> {
        self.graph.read_tensor(value_id)
    }
    /// Overwrite the GPU-resident tensor of VkGraph value `value_id` (see
    /// [`Delegate::read_tensor`] for what is reachable), e.g. to restore saved adapters or
    /// optimizer state. `tensor.sizes` must equal the tensor's current sizes and its dtype
    /// must convert to the GPU dtype the way execute's inputs do (same dtype, int64 ->
    /// int32, float64 -> float32, float16 <-> float32); otherwise `InvalidArgument`. Takes
    /// effect for the next execute; nothing else is re-uploaded. A graph input tensor is
    /// overwritten by the next execute's input copy, as usual.
    pub fn write_tensor(&mut self, value_id: usize, tensor: &HostTensor) -> Result<()> {
        self.graph.write_tensor(value_id, tensor)
    }
    /// The prepacked constants of this delegate, one per distinct `(constant, layout)` (so
    /// one per GPU buffer): what ops packed and whether a GPU transform produced it.
    pub fn prepacked(&self) -> Vec<PrepackedInfo> {
        self.graph.prepacked()
    }
    /// The GPU bytes of prepacked constant `index` (an index into [`Delegate::prepacked`]),
    /// read back through a staging buffer: tests compare the CPU and GPU packers with it.
    pub fn read_prepacked(&self, index: usize) -> Result<Vec<u8>> {
        self.graph.read_prepacked(index)
    }
}

/// One prepacked constant of a loaded delegate (see [`Delegate::prepacked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepackedInfo {
    /// `constant C (layout)`.
    pub label: String,
    /// `VkGraph.constants` index.
    pub constant_id: usize,
    /// Layout name (the cache key with the constant).
    pub layout: String,
    /// GPU element type of the packed tensor.
    pub dtype: etvk_format::ir::DataType,
    /// Packed sizes.
    pub dims: Vec<usize>,
    /// GPU bytes.
    pub bytes: u64,
    /// Whether a GPU pack shader produced it (else the CPU packer's bytes were uploaded).
    pub on_gpu: bool,
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
pub fn list_devices(options: &RuntimeOptions) -> Result<Vec<DeviceInfo>> {
    let devs = etvk_vulkan::list_physical_devices(options.device.as_deref())?;
    Ok(devs
        .into_iter()
        .map(|d| {
            let mut properties = vec![("driver".to_string(), d.driver.clone())];
            if let Some(why) = &d.unusable {
                properties.push(("unusable".to_string(), why.clone()));
            }
            properties.extend(d.caps.properties());
            DeviceInfo {
                index: d.index,
                name: d.name,
                device_type: d.device_type.name().to_string(),
                selected: d.selected,
                properties,
            }
        })
        .collect())
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
    crate::registry::op_infos()
}
