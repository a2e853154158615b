//! The interpreter: a loaded method of a program, run instruction by instruction.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use etvk_abi::{arg_kind, EtvkArg, EtvkTensor, ETVK_MAX_DIMS};
use etvk_format::program_ir::{
    BackendDelegate, DelegateData, EValue, ExecutionPlan, Instruction, PlanTensor, Program,
    TensorData,
};

use crate::dtype::DType;
use crate::error::{HostError, Result};
use crate::kernels::{is_supported, qualified_name, run_kernel};
use crate::plugin::{Plugin, PluginBackend, PluginDelegate};
use crate::tensor::{alloc_zeroed, checked_nbytes, checked_numel, Tensor};
use crate::values::{TensorSlot, Value};

/// The backend id whose delegates the etvk plugin runs.
pub const VULKAN_BACKEND_ID: &str = "VulkanBackend";

/// Default bound on instructions executed by one `execute` (see [`HostOptions`]).
pub const DEFAULT_MAX_INSTRUCTIONS: u64 = 10_000_000;

/// How to load a method.
#[derive(Debug, Clone)]
pub struct HostOptions {
    /// The plugin file; `None` searches `$ETVK_PLUGIN` and next to the executable
    /// ([`crate::plugin::plugin_candidates`]). Only opened when the method has a
    /// `VulkanBackend` delegate.
    pub plugin_path: Option<PathBuf>,
    /// An `execute` that runs more instructions than this fails (a `JumpFalseCall` loop
    /// that never ends).
    pub max_instructions: u64,
    /// External data files (`.ptd`) that [`LoadedMethod::load_file`] attaches to the
    /// program: named data and external tensors the `.pte` does not hold.
    pub data_files: Vec<PathBuf>,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions {
            plugin_path: None,
            max_instructions: DEFAULT_MAX_INSTRUCTIONS,
            data_files: Vec::new(),
        }
    }
}

/// A method input or output value.
#[derive(Debug, Clone, PartialEq)]
pub enum MethodValue {
    /// None (also what a non-tensor, non-scalar output is reported as).
    None,
    /// An int.
    Int(i64),
    /// A bool.
    Bool(bool),
    /// A double.
    Double(f64),
    /// A tensor.
    Tensor(Tensor),
}

/// What a method expects at one input (or produces at one output).
#[derive(Debug, Clone, PartialEq)]
pub enum ValueInfo {
    /// A tensor of this dtype with these (maximum, for dynamic shapes) sizes.
    Tensor {
        /// Element type.
        dtype: DType,
        /// Sizes (upper bounds when `dynamic`).
        max_sizes: Vec<usize>,
        /// Whether sizes may be smaller than `max_sizes`.
        dynamic: bool,
    },
    /// Any other value kind (`Int`, `Bool`, ...), by name.
    Other(&'static str),
}

/// A delegate of the plan, loaded.
struct LoadedDelegate {
    executor: Box<dyn DelegateExecutor>,
    num_inputs: usize,
    num_outputs: usize,
    label: String,
}

/// What a [`DelegateExecutor`] factory gets for each delegate of the method.
#[derive(Debug, Clone, Copy)]
pub struct DelegateSpec<'a> {
    /// Index in the plan's delegate table.
    pub index: usize,
    /// The plan's entry (id, compile specs).
    pub delegate: &'a BackendDelegate,
    /// The processed blob.
    pub blob: &'a [u8],
    /// The program (named data).
    pub program: &'a Program,
    /// Inputs of the delegate's graph: the first DelegateCall args.
    pub num_inputs: usize,
    /// Outputs of the delegate's graph: the last DelegateCall args.
    pub num_outputs: usize,
    /// Names the delegate in errors, e.g. `delegate 1 (VulkanBackend)`.
    pub label: &'a str,
}

/// A loaded delegate as the interpreter drives it. The etvk plugin is one implementation
/// ([`LoadedMethod::load_with_backend`]); tests and tools may supply others
/// ([`LoadedMethod::load_with_executors`]).
pub trait DelegateExecutor: Send {
    /// Run once. `args` are value indices in DelegateCall order: the first `num_inputs`
    /// are read, the rest are outputs to write (tensor bytes, resized with
    /// [`TensorSlot::resize`] when the shape is dynamic; `Int` values for SymInt outputs).
    /// `at` describes the instruction, for errors.
    fn execute(
        &mut self,
        values: &mut [Value],
        args: &[usize],
        at: &dyn Fn() -> String,
    ) -> Result<()>;

    /// Per-dispatch GPU times of the last execute (empty when the executor has none).
    fn gpu_profile(&self) -> Result<Vec<crate::plugin::GpuOpTime>> {
        Ok(Vec::new())
    }

    /// Record GPU times at later executes, or stop (a no-op for executors without them).
    fn set_gpu_profiling(&mut self, _on: bool) -> Result<()> {
        Ok(())
    }
}

/// The plugin's delegate behind [`DelegateExecutor`]: marshals values to `EtvkArg`s.
struct PluginExecutor {
    handle: PluginDelegate,
    num_inputs: usize,
    label: String,
}

/// A method of a program, loaded and ready to execute; its state (mutable buffers, delegate
/// state) persists across [`LoadedMethod::execute`] calls.
pub struct LoadedMethod {
    program: Arc<Program>,
    plan_index: usize,
    values: Vec<Value>,
    /// Per plan delegate (dropped before `backend`).
    delegates: Vec<LoadedDelegate>,
    /// Per plan operator: `name.overload`.
    operator_names: Vec<String>,
    backend: Option<Arc<PluginBackend>>,
    max_instructions: u64,
    profiling: bool,
    profile: Vec<InstructionTime>,
}

/// Wall time of one executed instruction (see [`LoadedMethod::set_profiling`]).
#[derive(Debug, Clone, PartialEq)]
pub struct InstructionTime {
    /// Instruction index in chain 0.
    pub index: usize,
    /// `delegate N`, `kernel aten::...`, `move`, `free` or `jump_false`.
    pub what: String,
    /// Wall time, including the plugin call for delegates.
    pub elapsed: Duration,
    /// For a delegate call: its per-dispatch GPU times (empty otherwise, or when the device
    /// has no timestamps).
    pub gpu: Vec<crate::plugin::GpuOpTime>,
}

impl std::fmt::Debug for LoadedMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedMethod")
            .field("method", &self.plan().name)
            .field("values", &self.values.len())
            .field("delegates", &self.delegates.len())
            .finish()
    }
}

/// Parse a `.pte` file.
pub fn load_program(path: &Path) -> Result<Program> {
    read_and_parse(path, etvk_format::program::parse_program)
}

/// Read and parse an external data file (`.ptd`).
pub fn load_ptd(path: &Path) -> Result<etvk_format::ptd::PtdFile> {
    read_and_parse(path, etvk_format::ptd::parse_ptd)
}

fn read_and_parse<T>(
    path: &Path,
    parse: impl FnOnce(Vec<u8>) -> std::result::Result<T, etvk_format::error::FormatError>,
) -> Result<T> {
    let bytes = std::fs::read(path).map_err(|source| HostError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(bytes).map_err(|source| HostError::Format {
        context: path.display().to_string(),
        source,
    })
}

fn plan_dtype(code: i8, what: &str) -> Result<DType> {
    DType::from_code(i32::from(code)).ok_or_else(|| {
        HostError::Unsupported(format!(
            "{what}: scalar type {code} is not supported by the host"
        ))
    })
}

fn plan_sizes(sizes: &[i64], what: &str) -> Result<Vec<usize>> {
    sizes
        .iter()
        .map(|&s| {
            usize::try_from(s).map_err(|_| {
                HostError::InvalidProgram(format!("{what}: negative size in {sizes:?}"))
            })
        })
        .collect()
}

fn file_range<'a>(
    program: &'a Program,
    r: &std::ops::Range<usize>,
    what: &str,
) -> Result<&'a [u8]> {
    program.bytes.get(r.clone()).ok_or_else(|| {
        HostError::InvalidProgram(format!(
            "{what}: bytes {r:?} outside the file ({} bytes)",
            program.bytes.len()
        ))
    })
}

fn tensor_slot(program: &Program, t: &PlanTensor, what: &str) -> Result<TensorSlot> {
    let dtype = plan_dtype(t.scalar_type, what)?;
    let sizes = plan_sizes(&t.sizes, what)?;
    let contiguous = t.dim_order.is_empty()
        || t.dim_order
            .iter()
            .enumerate()
            .all(|(i, &d)| usize::from(d) == i);
    if !contiguous {
        return Err(HostError::Unsupported(format!(
            "{what}: non-contiguous dim order {:?}",
            t.dim_order
        )));
    }
    let nbytes = checked_nbytes(dtype, &sizes)?;
    let mut data = alloc_zeroed(nbytes, what)?;
    match &t.data {
        TensorData::None | TensorData::Planned { .. } => {}
        TensorData::Constant(r) | TensorData::MutableInit(r) => {
            let src = file_range(program, r, what)?;
            if src.len() < nbytes {
                return Err(HostError::InvalidProgram(format!(
                    "{what}: initial data has {} bytes, the {dtype} tensor of sizes {sizes:?} needs {nbytes}",
                    src.len()
                )));
            }
            data.copy_from_slice(&src[..nbytes]);
        }
        TensorData::External(name) => {
            let src = program.named_data(name).ok_or_else(|| {
                HostError::InvalidProgram(format!(
                    "{what}: external tensor data {name:?} is in none of the attached .ptd files \
                     ({} attached)",
                    program.external.len()
                ))
            })?;
            if src.len() < nbytes {
                return Err(HostError::InvalidProgram(format!(
                    "{what}: external data {name:?} has {} bytes, the {dtype} tensor of sizes {sizes:?} needs {nbytes}",
                    src.len()
                )));
            }
            data.copy_from_slice(&src[..nbytes]);
        }
    }
    Ok(TensorSlot {
        dtype,
        sizes: sizes.clone(),
        max_sizes: sizes,
        dynamism: t.shape_dynamism,
        data,
    })
}

fn runtime_value(program: &Program, v: &EValue, what: &str) -> Result<Value> {
    Ok(match v {
        EValue::Null => Value::Null,
        EValue::Int(i) => Value::Int(*i),
        EValue::Bool(b) => Value::Bool(*b),
        EValue::Double(d) => Value::Double(*d),
        EValue::Tensor(t) => Value::Tensor(tensor_slot(program, t, what)?),
        EValue::String(s) => Value::String(s.clone()),
        EValue::IntList(l) => Value::IntList(l.clone()),
        EValue::DoubleList(l) => Value::DoubleList(l.clone()),
        EValue::BoolList(l) => Value::BoolList(l.clone()),
        EValue::TensorList(l) => Value::TensorList(l.clone()),
        EValue::OptionalTensorList(l) => Value::OptionalTensorList(l.clone()),
    })
}

fn delegate_blob<'a>(program: &'a Program, data: &DelegateData, what: &str) -> Result<&'a [u8]> {
    let range = match data {
        DelegateData::Inline(i) => program.inline_delegate_data.get(*i),
        DelegateData::Segment(i) => program.segments.get(*i),
    }
    .ok_or_else(|| {
        HostError::InvalidProgram(format!("{what}: blob reference {data:?} out of range"))
    })?;
    file_range(program, range, what)
}

impl LoadedMethod {
    /// Read, parse and load `method` of the `.pte` at `path`.
    pub fn load_file(path: &Path, method: &str, options: &HostOptions) -> Result<LoadedMethod> {
        let mut program = load_program(path)?;
        for f in &options.data_files {
            program.attach_external(load_ptd(f)?);
        }
        LoadedMethod::load(Arc::new(program), method, options)
    }

    /// Load `method` of `program`. The plugin is opened (and a backend created) only when
    /// the method has a `VulkanBackend` delegate.
    pub fn load(
        program: Arc<Program>,
        method: &str,
        options: &HostOptions,
    ) -> Result<LoadedMethod> {
        let plan = find_plan(&program, method)?;
        let backend = if plan.delegates.iter().any(|d| d.id == VULKAN_BACKEND_ID) {
            Some(PluginBackend::create(Plugin::load(
                options.plugin_path.as_deref(),
            )?)?)
        } else {
            None
        };
        LoadedMethod::load_with_backend(program, method, backend, options.max_instructions)
    }

    /// Load `method` of `program` on an existing plugin backend (several methods or
    /// programs may share one device). `backend` may be `None` when the method has no
    /// `VulkanBackend` delegate.
    pub fn load_with_backend(
        program: Arc<Program>,
        method: &str,
        backend: Option<Arc<PluginBackend>>,
        max_instructions: u64,
    ) -> Result<LoadedMethod> {
        let mut make = |spec: DelegateSpec<'_>| -> Result<Box<dyn DelegateExecutor>> {
            let backend = backend.as_ref().ok_or_else(|| {
                HostError::Plugin(format!(
                    "{} needs the etvk plugin, and no backend was given",
                    spec.label
                ))
            })?;
            let handle = PluginDelegate::init(
                backend,
                spec.blob,
                &spec.delegate.compile_specs,
                spec.program,
                spec.label,
            )?;
            log::debug!(
                "initialized {}: {} bytes, {} compile specs",
                spec.label,
                spec.blob.len(),
                spec.delegate.compile_specs.len()
            );
            Ok(Box::new(PluginExecutor {
                handle,
                num_inputs: spec.num_inputs,
                label: spec.label.to_string(),
            }))
        };
        let mut m =
            LoadedMethod::load_with_executors(program, method, max_instructions, &mut make)?;
        m.backend = backend;
        Ok(m)
    }

    /// Load `method` of `program`, creating each `VulkanBackend` delegate's executor with
    /// `make` (called once per delegate, in order).
    pub fn load_with_executors(
        program: Arc<Program>,
        method: &str,
        max_instructions: u64,
        make: &mut dyn FnMut(DelegateSpec<'_>) -> Result<Box<dyn DelegateExecutor>>,
    ) -> Result<LoadedMethod> {
        let plan_index = program
            .plans
            .iter()
            .position(|p| p.name == method)
            .ok_or_else(|| no_such_method(&program, method))?;
        let plan = &program.plans[plan_index];
        let chain = plan
            .chains
            .first()
            .ok_or_else(|| HostError::InvalidProgram(format!("method {method:?} has no chain")))?;

        let values = plan
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| runtime_value(&program, v, &format!("method {method:?} value {i}")))
            .collect::<Result<Vec<Value>>>()?;
        for (what, list) in [("input", &plan.inputs), ("output", &plan.outputs)] {
            for &i in list.iter() {
                if i >= values.len() {
                    return Err(HostError::InvalidProgram(format!(
                        "method {method:?}: {what} value {i} out of range ({} values)",
                        values.len()
                    )));
                }
            }
        }

        let operator_names: Vec<String> = plan
            .operators
            .iter()
            .map(|o| qualified_name(&o.name, &o.overload))
            .collect();
        // Fail at load, as ExecuTorch does, for any operator a KernelCall needs and this host lacks.
        for (pc, ins) in chain.instructions.iter().enumerate() {
            if let Instruction::KernelCall { op_index, .. } = ins {
                let name = operator_names.get(*op_index).ok_or_else(|| {
                    HostError::InvalidProgram(format!(
                        "method {method:?} instruction {pc}: operator {op_index} out of range"
                    ))
                })?;
                if !is_supported(name) {
                    return Err(HostError::Unsupported(format!(
                        "method {method:?} instruction {pc}: operator {name} has no portable CPU kernel in etvk-host"
                    )));
                }
            }
        }

        let mut delegates = Vec::with_capacity(plan.delegates.len());
        for (i, d) in plan.delegates.iter().enumerate() {
            let label = format!("delegate {i} ({})", d.id);
            if d.id != VULKAN_BACKEND_ID {
                return Err(HostError::Unsupported(format!(
                    "method {method:?} delegate {i} has backend id {:?}; etvk-host runs only {VULKAN_BACKEND_ID}",
                    d.id
                )));
            }
            let blob = delegate_blob(&program, &d.processed, &label)?;
            // The graph's input/output counts split DelegateCall args (inputs get exact byte
            // counts, outputs their capacity), so parse the header + graph here as well.
            let parsed =
                etvk_format::vkgraph::parse_delegate(blob).map_err(|source| HostError::Format {
                    context: format!("method {method:?} {label}"),
                    source,
                })?;
            let (num_inputs, num_outputs) =
                (parsed.graph.input_ids.len(), parsed.graph.output_ids.len());
            let executor = make(DelegateSpec {
                index: i,
                delegate: d,
                blob,
                program: &program,
                num_inputs,
                num_outputs,
                label: &label,
            })?;
            delegates.push(LoadedDelegate {
                executor,
                num_inputs,
                num_outputs,
                label,
            });
        }
        for (pc, ins) in chain.instructions.iter().enumerate() {
            if let Instruction::DelegateCall {
                delegate_index,
                args,
            } = ins
            {
                let d = delegates.get(*delegate_index).ok_or_else(|| {
                    HostError::InvalidProgram(format!(
                        "method {method:?} instruction {pc}: delegate {delegate_index} out of range"
                    ))
                })?;
                if args.len() != d.num_inputs + d.num_outputs {
                    // executorch 1.5.1 writes such a call for a model that mutates a buffer
                    // (`self.acc.add_(..)`) unless the Vulkan compile option
                    // alias_buffer_mutations is set: the buffer's new value is a graph
                    // output the call does not pass, and the update would be lost.
                    let hint = if args.len() < d.num_inputs + d.num_outputs {
                        " (a graph output the call does not pass is usually a mutated buffer: export with \
                         the Vulkan compile option alias_buffer_mutations = True)"
                    } else {
                        ""
                    };
                    return Err(HostError::InvalidProgram(format!(
                        "method {method:?} instruction {pc}: {} passes {} args, its graph has {} inputs + {} outputs{hint}",
                        d.label,
                        args.len(),
                        d.num_inputs,
                        d.num_outputs
                    )));
                }
            }
        }

        Ok(LoadedMethod {
            program,
            plan_index,
            values,
            delegates,
            operator_names,
            backend: None,
            max_instructions,
            profiling: false,
            profile: Vec::new(),
        })
    }

    fn plan(&self) -> &ExecutionPlan {
        &self.program.plans[self.plan_index]
    }

    /// The program this method belongs to.
    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    /// The method's name.
    pub fn name(&self) -> &str {
        &self.plan().name
    }

    /// The plugin backend, when the method has delegates.
    pub fn backend(&self) -> Option<&Arc<PluginBackend>> {
        self.backend.as_ref()
    }

    /// Number of loaded delegates.
    pub fn num_delegates(&self) -> usize {
        self.delegates.len()
    }

    fn info(&self, idx: usize) -> ValueInfo {
        match self.values.get(idx) {
            Some(Value::Tensor(t)) => ValueInfo::Tensor {
                dtype: t.dtype,
                max_sizes: t.max_sizes.clone(),
                dynamic: t.dynamism != 0,
            },
            Some(v) => ValueInfo::Other(v.kind_name()),
            None => ValueInfo::Other("None"),
        }
    }

    /// What each input expects.
    pub fn inputs(&self) -> Vec<ValueInfo> {
        self.plan().inputs.iter().map(|&i| self.info(i)).collect()
    }

    /// What each output is (declared maxima).
    pub fn outputs(&self) -> Vec<ValueInfo> {
        self.plan().outputs.iter().map(|&i| self.info(i)).collect()
    }

    /// Run the method on tensor inputs; every output must be a tensor.
    pub fn execute(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let ins: Vec<MethodValue> = inputs.iter().cloned().map(MethodValue::Tensor).collect();
        self.execute_values(&ins)?
            .into_iter()
            .enumerate()
            .map(|(j, v)| match v {
                MethodValue::Tensor(t) => Ok(t),
                other => Err(HostError::Unsupported(format!(
                    "method {:?} output {j} is {other:?}, not a tensor (use execute_values)",
                    self.name()
                ))),
            })
            .collect()
    }

    /// Run the method on any input values.
    pub fn execute_values(&mut self, inputs: &[MethodValue]) -> Result<Vec<MethodValue>> {
        let program = Arc::clone(&self.program);
        let plan = &program.plans[self.plan_index];
        if inputs.len() != plan.inputs.len() {
            return Err(HostError::InvalidInput(format!(
                "method {:?} takes {} inputs, got {}",
                plan.name,
                plan.inputs.len(),
                inputs.len()
            )));
        }
        for (k, (&idx, input)) in plan.inputs.iter().zip(inputs).enumerate() {
            self.bind_input(k, idx, input)?;
        }
        self.run_chain(plan)?;
        Ok(plan
            .outputs
            .iter()
            .map(|&i| match &self.values[i] {
                Value::Tensor(t) => MethodValue::Tensor(t.to_tensor()),
                Value::Int(v) => MethodValue::Int(*v),
                Value::Bool(v) => MethodValue::Bool(*v),
                Value::Double(v) => MethodValue::Double(*v),
                _ => MethodValue::None,
            })
            .collect())
    }

    fn bind_input(&mut self, k: usize, idx: usize, input: &MethodValue) -> Result<()> {
        let what = format!("input {k} (value {idx})");
        match (&mut self.values[idx], input) {
            (Value::Tensor(slot), MethodValue::Tensor(t)) => {
                if t.dtype != slot.dtype {
                    return Err(HostError::InvalidInput(format!(
                        "{what}: dtype {}, the method expects {}",
                        t.dtype, slot.dtype
                    )));
                }
                // ExecuTorch's resize rule: a static input keeps its sizes, a bound-dynamic
                // one keeps its rank and fits its buffer (a single dim may pass its bound).
                let max_numel: usize = slot.max_sizes.iter().product();
                let fits = t.sizes.len() == slot.max_sizes.len()
                    && match slot.dynamism {
                        0 => t.sizes == slot.max_sizes,
                        1 => checked_numel(&t.sizes).is_ok_and(|n| n <= max_numel),
                        _ => true,
                    };
                if !fits {
                    return Err(HostError::InvalidInput(format!(
                        "{what}: sizes {:?}, the method expects {}{:?}",
                        t.sizes,
                        if slot.dynamism == 0 {
                            ""
                        } else {
                            "the rank and at most the elements of "
                        },
                        slot.max_sizes
                    )));
                }
                let n = checked_nbytes(t.dtype, &t.sizes)?;
                if t.data.len() != n {
                    return Err(HostError::InvalidInput(format!(
                        "{what}: {} data bytes for sizes {:?} ({n} expected)",
                        t.data.len(),
                        t.sizes
                    )));
                }
                slot.store(&t.sizes, &t.data, &what)
            }
            (Value::Int(v), MethodValue::Int(x)) => {
                *v = *x;
                Ok(())
            }
            (Value::Bool(v), MethodValue::Bool(x)) => {
                *v = *x;
                Ok(())
            }
            (Value::Double(v), MethodValue::Double(x)) => {
                *v = *x;
                Ok(())
            }
            (Value::Null, MethodValue::None) => Ok(()),
            (slot, given) => Err(HostError::InvalidInput(format!(
                "{what}: the method expects a {}, got {}",
                slot.kind_name(),
                match given {
                    MethodValue::None => "None",
                    MethodValue::Int(_) => "Int",
                    MethodValue::Bool(_) => "Bool",
                    MethodValue::Double(_) => "Double",
                    MethodValue::Tensor(_) => "Tensor",
                }
            ))),
        }
    }

    fn value_mut(&mut self, idx: usize, at: &dyn Fn() -> String) -> Result<&mut Value> {
        let n = self.values.len();
        self.values.get_mut(idx).ok_or_else(|| {
            HostError::InvalidProgram(format!("{}: value {idx} out of range ({n} values)", at()))
        })
    }

    fn run_chain(&mut self, plan: &ExecutionPlan) -> Result<()> {
        let instructions = &plan.chains[0].instructions;
        self.profile.clear();
        let mut pc = 0usize;
        let mut steps = 0u64;
        while pc < instructions.len() {
            steps += 1;
            if steps > self.max_instructions {
                return Err(HostError::InvalidProgram(format!(
                    "method {:?}: more than {} instructions executed (a loop that never ends?)",
                    plan.name, self.max_instructions
                )));
            }
            // Built only on the error paths: execute is a hot loop for benchmarks.
            let at = || format!("method {:?} instruction {pc}", plan.name);
            let started = self.profiling.then(Instant::now);
            let next = match &instructions[pc] {
                Instruction::KernelCall { op_index, args } => {
                    let name = self.operator_names.get(*op_index).ok_or_else(|| {
                        HostError::InvalidProgram(format!(
                            "{}: operator {op_index} out of range",
                            at()
                        ))
                    })?;
                    log::trace!("{}: kernel {name} {args:?}", at());
                    run_kernel(name, &mut self.values, args).map_err(|e| match e {
                        HostError::Kernel { op, message } => HostError::Kernel {
                            op,
                            message: format!("{message} (at {})", at()),
                        },
                        other => other,
                    })?;
                    pc + 1
                }
                Instruction::DelegateCall {
                    delegate_index,
                    args,
                } => {
                    log::trace!("{}: delegate {delegate_index} {args:?}", at());
                    self.call_delegate(*delegate_index, args, &at)?;
                    pc + 1
                }
                Instruction::MoveCall { from, to } => {
                    let v = self.value_mut(*from, &at)?.clone();
                    *self.value_mut(*to, &at)? = v;
                    pc + 1
                }
                Instruction::FreeCall { value } => {
                    // Buffers are owned per value and reused across executes; nothing to free.
                    self.value_mut(*value, &at)?;
                    pc + 1
                }
                Instruction::JumpFalseCall { cond, destination } => {
                    let c = match self.value_mut(*cond, &at)? {
                        Value::Bool(b) => *b,
                        // ExecuTorch's parse_cond_value: a bool tensor is true when all its elements are.
                        Value::Tensor(t) if t.dtype == DType::Bool => {
                            t.bytes().iter().all(|&b| b != 0)
                        }
                        other => {
                            return Err(HostError::InvalidProgram(format!(
                                "{}: JumpFalseCall condition is a {}, expected a Bool",
                                at(),
                                other.kind_name()
                            )))
                        }
                    };
                    if c {
                        pc + 1
                    } else if *destination > instructions.len() {
                        return Err(HostError::InvalidProgram(format!(
                            "{}: jump destination {destination} out of range ({} instructions)",
                            at(),
                            instructions.len()
                        )));
                    } else {
                        *destination
                    }
                }
            };
            if let Some(t0) = started {
                let elapsed = t0.elapsed();
                let gpu = match &instructions[pc] {
                    Instruction::DelegateCall { delegate_index, .. } => {
                        match self.delegates.get(*delegate_index) {
                            Some(d) => d.executor.gpu_profile()?,
                            None => Vec::new(),
                        }
                    }
                    _ => Vec::new(),
                };
                self.profile.push(InstructionTime {
                    index: pc,
                    what: self.describe(&instructions[pc]),
                    elapsed,
                    gpu,
                });
            }
            pc = next;
        }
        Ok(())
    }

    fn describe(&self, ins: &Instruction) -> String {
        match ins {
            Instruction::KernelCall { op_index, .. } => {
                format!(
                    "kernel {}",
                    self.operator_names
                        .get(*op_index)
                        .map(String::as_str)
                        .unwrap_or("?")
                )
            }
            Instruction::DelegateCall { delegate_index, .. } => {
                format!("delegate {delegate_index}")
            }
            Instruction::MoveCall { .. } => "move".into(),
            Instruction::FreeCall { .. } => "free".into(),
            Instruction::JumpFalseCall { .. } => "jump_false".into(),
        }
    }

    /// Record per-instruction wall times on each execute, and per-dispatch GPU times of the
    /// delegates that have them (see [`LoadedMethod::last_profile`]). Off by default: the GPU
    /// timestamps cost ~0.1 ms per execute of a small graph on a discrete GPU.
    pub fn set_profiling(&mut self, on: bool) -> Result<()> {
        for d in &mut self.delegates {
            d.executor.set_gpu_profiling(on)?;
        }
        self.profiling = on;
        if !on {
            self.profile.clear();
        }
        Ok(())
    }

    /// Per-instruction wall times of the last execute, in execution order (empty unless
    /// profiling is on).
    pub fn last_profile(&self) -> &[InstructionTime] {
        &self.profile
    }

    fn call_delegate(
        &mut self,
        delegate_index: usize,
        args: &[usize],
        at: &dyn Fn() -> String,
    ) -> Result<()> {
        let nd = self.delegates.len();
        let d = self.delegates.get_mut(delegate_index).ok_or_else(|| {
            HostError::InvalidProgram(format!(
                "{}: delegate {delegate_index} out of range ({nd})",
                at()
            ))
        })?;
        d.executor.execute(&mut self.values, args, at)
    }
}

impl DelegateExecutor for PluginExecutor {
    fn gpu_profile(&self) -> Result<Vec<crate::plugin::GpuOpTime>> {
        self.handle.profile()
    }

    fn set_gpu_profiling(&mut self, on: bool) -> Result<()> {
        self.handle.set_profiling(on)
    }

    fn execute(
        &mut self,
        values: &mut [Value],
        args: &[usize],
        at: &dyn Fn() -> String,
    ) -> Result<()> {
        let num_inputs = self.num_inputs;
        let zero_tensor = EtvkTensor {
            dtype: 0,
            ndim: 0,
            sizes: [0; ETVK_MAX_DIMS],
            data: std::ptr::null_mut(),
            nbytes: 0,
        };
        let mut raw = Vec::with_capacity(args.len());
        for (pos, &idx) in args.iter().enumerate() {
            let is_output = pos >= num_inputs;
            let n = values.len();
            let v = values.get_mut(idx).ok_or_else(|| {
                HostError::InvalidProgram(format!(
                    "{}: arg value {idx} out of range ({n} values)",
                    at()
                ))
            })?;
            let arg = match v {
                Value::Tensor(t) => {
                    if t.sizes.len() > ETVK_MAX_DIMS {
                        return Err(HostError::Unsupported(format!(
                            "{}: arg value {idx} has rank {} (the C ABI carries at most {ETVK_MAX_DIMS})",
                            at(),
                            t.sizes.len()
                        )));
                    }
                    let mut sizes = [0i64; ETVK_MAX_DIMS];
                    for (s, &v) in sizes.iter_mut().zip(&t.sizes) {
                        *s = v as i64;
                    }
                    // Inputs: exactly the live bytes. Outputs: the whole buffer (capacity).
                    let nbytes = if is_output { t.data.len() } else { t.nbytes() };
                    EtvkArg {
                        kind: arg_kind::TENSOR,
                        int_value: 0,
                        tensor: EtvkTensor {
                            dtype: t.dtype.code(),
                            ndim: t.sizes.len() as u32,
                            sizes,
                            data: t.data.as_mut_ptr().cast(),
                            nbytes,
                        },
                    }
                }
                Value::Int(i) => EtvkArg {
                    kind: arg_kind::INT,
                    int_value: *i,
                    tensor: zero_tensor,
                },
                _ => EtvkArg {
                    kind: arg_kind::NONE,
                    int_value: 0,
                    tensor: zero_tensor,
                },
            };
            raw.push(arg);
        }
        self.handle.execute(&mut raw)?;
        let label = &self.label;
        // Outputs: take back the produced sizes (dynamic shapes) and ints (SymInt outputs).
        for (pos, (&idx, arg)) in args.iter().zip(&raw).enumerate().skip(num_inputs) {
            let what = || {
                format!(
                    "{}: {label} output {} (value {idx})",
                    at(),
                    pos - num_inputs
                )
            };
            match values.get_mut(idx) {
                Some(Value::Tensor(t)) => {
                    let ndim = arg.tensor.ndim as usize;
                    if ndim > ETVK_MAX_DIMS {
                        return Err(HostError::Plugin(format!(
                            "{}: plugin returned rank {ndim}",
                            what()
                        )));
                    }
                    let mut sizes = Vec::with_capacity(ndim);
                    for &s in &arg.tensor.sizes[..ndim] {
                        sizes.push(usize::try_from(s).map_err(|_| {
                            HostError::Plugin(format!("{}: plugin returned size {s}", what()))
                        })?);
                    }
                    if sizes != t.sizes {
                        t.resize(&sizes, &what())?;
                    }
                }
                Some(Value::Int(i)) if arg.kind == arg_kind::INT => *i = arg.int_value,
                _ => {}
            }
        }
        Ok(())
    }
}

fn no_such_method(program: &Program, method: &str) -> HostError {
    HostError::InvalidInput(format!(
        "no method {method:?} in the program (methods: {})",
        program
            .plans
            .iter()
            .map(|p| format!("{:?}", p.name))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn find_plan<'a>(program: &'a Program, method: &str) -> Result<&'a ExecutionPlan> {
    program
        .plan(method)
        .ok_or_else(|| no_such_method(program, method))
}
