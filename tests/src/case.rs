//! Op test cases: a small VkGraph (usually one op), named data for its constants, and one
//! or more runs (inputs + expected outputs computed by a CPU f64 reference).
//!
//! A case is built with [`CaseGraph`], which mirrors how the ExecuTorch exporter
//! serializes a call: one value per schema argument in schema order, then the output
//! (`aten.add.Tensor(a, b, alpha Int, out)`), constants in the program's named data under
//! the sha256 of their bytes. [`run_case`] loads it through the normal path
//! (`Delegate::init` on the serialized `VH00` blob), executes every run on the same loaded
//! delegate and compares.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use etvk_format::ir::DataType;
use etvk_format::writer::{named_key, GraphBuilder};
use etvk_runtime::{
    Backend, Delegate, DelegateArg, HostTensor, NamedData, ResizeMode, RuntimeOptions,
};

use crate::compare::{compare, Tol};
use crate::tensor::{host_dtype, Tensor};

/// Named data held in a map (what a program's named data would serve).
#[derive(Debug, Clone, Default)]
pub struct NamedMap(pub HashMap<String, Vec<u8>>);

impl NamedData for NamedMap {
    fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.get(key).map(Vec::as_slice)
    }
}

/// The tests' resize passes: incremental ones checked against a full pass after every
/// dynamic change ([`ResizeMode::Check`]), unless `ETVK_RESIZE` says otherwise.
pub fn resize_mode_for_tests() -> ResizeMode {
    if std::env::var_os("ETVK_RESIZE").is_some() {
        RuntimeOptions::from_env().resize
    } else {
        ResizeMode::Check
    }
}

/// The backend shared by every test of one test binary (opening a device is slow on
/// lavapipe). Validation layers are forced on; `ETVK_DEVICE` still selects the device.
///
/// # Panics
/// If no Vulkan device can be opened: every GPU test needs one.
pub fn backend() -> Arc<Backend> {
    static BACKEND: OnceLock<Result<Arc<Backend>, String>> = OnceLock::new();
    let r = BACKEND.get_or_init(|| {
        let opts = RuntimeOptions {
            validation: true,
            resize: resize_mode_for_tests(),
            ..RuntimeOptions::from_env()
        };
        Backend::new(&opts).map_err(|e| format!("{e} ({:?})", e.kind))
    });
    match r {
        Ok(b) => b.clone(),
        Err(e) => panic!(
            "cannot open a Vulkan device with validation: {e} (install Mesa lavapipe and the \
             Khronos validation layer, or set ETVK_DEVICE)"
        ),
    }
}

/// Builder of a case's VkGraph: tensors, scalars and ops by value id, in the exporter's
/// argument conventions.
#[derive(Debug, Default)]
pub struct CaseGraph {
    gb: GraphBuilder,
    named: NamedMap,
}

impl CaseGraph {
    /// An empty graph.
    pub fn new() -> CaseGraph {
        CaseGraph::default()
    }

    /// A graph input tensor with its upper-bound sizes (the exported sizes); runs may
    /// pass smaller sizes when the case is dynamic. Inputs are numbered in call order.
    pub fn input(&mut self, dtype: DataType, max_sizes: &[usize]) -> usize {
        let id = self.gb.add_tensor(dtype, max_sizes);
        self.gb.mark_input(id);
        id
    }

    /// A graph input with the dtype and sizes of `t`.
    pub fn input_like(&mut self, t: &Tensor) -> usize {
        self.input(t.dtype, &t.sizes)
    }

    /// A constant tensor served from named data (key = sha256 of its bytes, as exported).
    pub fn constant(&mut self, t: &Tensor) -> usize {
        let bytes = t.to_bytes();
        let key = named_key(&bytes);
        self.named.0.insert(key.clone(), bytes);
        self.gb.add_constant_named(t.dtype, &t.sizes, &key)
    }

    /// An intermediate tensor (neither input nor output).
    pub fn tensor(&mut self, dtype: DataType, max_sizes: &[usize]) -> usize {
        self.gb.add_tensor(dtype, max_sizes)
    }

    /// An output tensor (upper-bound sizes); outputs are numbered in call order.
    pub fn output(&mut self, dtype: DataType, max_sizes: &[usize]) -> usize {
        let id = self.gb.add_tensor(dtype, max_sizes);
        self.gb.mark_output(id);
        id
    }

    /// Mark an existing value (a SymInt, an intermediate tensor) as the next output.
    pub fn mark_output(&mut self, id: usize) {
        self.gb.mark_output(id);
    }

    /// `Int`.
    pub fn int(&mut self, x: i64) -> usize {
        self.gb.add_int(x)
    }
    /// `Double`.
    pub fn double(&mut self, x: f64) -> usize {
        self.gb.add_double(x)
    }
    /// `Bool`.
    pub fn bool(&mut self, x: bool) -> usize {
        self.gb.add_bool(x)
    }
    /// `Null` (None, a dtype, a memory format, ...).
    pub fn null(&mut self) -> usize {
        self.gb.add_null()
    }
    /// `IntList`.
    pub fn int_list(&mut self, x: &[i64]) -> usize {
        self.gb.add_int_list(x)
    }
    /// `DoubleList`.
    pub fn double_list(&mut self, x: &[f64]) -> usize {
        self.gb.add_double_list(x)
    }
    /// `BoolList`.
    pub fn bool_list(&mut self, x: &[bool]) -> usize {
        self.gb.add_bool_list(x)
    }
    /// `ValueList` of value ids (int lists mixing SymInts, multi-output results).
    pub fn value_list(&mut self, ids: &[usize]) -> usize {
        self.gb.add_value_list(ids)
    }
    /// `SymInt` (the exporter writes 0 as its initial value).
    pub fn symint(&mut self) -> usize {
        self.gb.add_symint(0)
    }

    /// Append an operator call: `args` are value ids, the output last.
    pub fn op(&mut self, name: &str, args: &[usize]) {
        self.gb.add_op(name, args);
    }

    /// The underlying format builder, for what the helpers above do not cover (memory
    /// objects, storage hints, staging dtypes).
    pub fn builder(&mut self) -> &mut GraphBuilder {
        &mut self.gb
    }

    /// The serialized delegate blob and its named data.
    pub fn finish(self) -> (Vec<u8>, NamedMap) {
        (self.gb.finish_delegate(), self.named)
    }
}

/// A value passed to or expected from one execute.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// A tensor.
    Tensor(Tensor),
    /// An integer (SymInt inputs and outputs).
    Int(i64),
}

impl From<Tensor> for Val {
    fn from(t: Tensor) -> Val {
        Val::Tensor(t)
    }
}

/// One execute: inputs in graph-input order, expected outputs in graph-output order.
#[derive(Debug, Clone)]
pub struct Run {
    /// Inputs.
    pub inputs: Vec<Val>,
    /// Expected outputs (for a failing run: placeholders giving the output dtypes).
    pub expected: Vec<Val>,
    /// The execute must fail with a message containing this (an input PyTorch raises on).
    pub fails_with: Option<String>,
}

/// One op test case.
#[derive(Debug, Clone)]
pub struct OpCase {
    /// The registry op this case covers (exact `OperatorCall.name`).
    pub op: &'static str,
    /// What the case exercises (shapes, args), unique within its op.
    pub name: String,
    /// The `VH00` delegate blob.
    pub blob: Vec<u8>,
    /// Named data for the blob's constants.
    pub named: NamedMap,
    /// Compile specs (`require_dynamic_shapes` for dynamic cases).
    pub compile_specs: Vec<(String, Vec<u8>)>,
    /// Executes, in order, on one loaded delegate.
    pub runs: Vec<Run>,
    /// Comparison tolerance for float outputs (integer outputs compare exactly).
    pub tol: Tol,
}

impl OpCase {
    /// A static case of `op` on `graph`, fp32 default tolerance, no runs yet.
    pub fn new(op: &'static str, name: impl Into<String>, graph: CaseGraph) -> OpCase {
        let (blob, named) = graph.finish();
        OpCase {
            op,
            name: name.into(),
            blob,
            named,
            compile_specs: Vec::new(),
            runs: Vec::new(),
            tol: Tol::F32,
        }
    }

    /// Set the tolerance.
    pub fn tol(mut self, tol: Tol) -> OpCase {
        self.tol = tol;
        self
    }

    /// Mark as dynamic: compile spec `require_dynamic_shapes` = [1], so runs may pass
    /// input sizes up to the graph's (upper-bound) sizes.
    pub fn dynamic(mut self) -> OpCase {
        self.compile_specs
            .push(("require_dynamic_shapes".to_string(), vec![1]));
        self
    }

    /// Add compile spec `key` = `value` (a forced kernel choice), named in the case's name.
    pub fn spec(mut self, key: &str, value: &str) -> OpCase {
        self.name = format!("{} [{key} = {value}]", self.name);
        self.compile_specs
            .push((key.to_string(), value.as_bytes().to_vec()));
        self
    }

    /// Add a run of tensor inputs and tensor outputs.
    pub fn run(self, inputs: Vec<Tensor>, expected: Vec<Tensor>) -> OpCase {
        self.run_vals(
            inputs.into_iter().map(Val::Tensor).collect(),
            expected.into_iter().map(Val::Tensor).collect(),
        )
    }

    /// Add a run of any values.
    pub fn run_vals(mut self, inputs: Vec<Val>, expected: Vec<Val>) -> OpCase {
        self.runs.push(Run {
            inputs,
            expected,
            fails_with: None,
        });
        self
    }

    /// The last run's execute must fail with an error containing `message`; the delegate
    /// stays usable for the runs after it.
    pub fn fails(mut self, message: &str) -> OpCase {
        if let Some(r) = self.runs.last_mut() {
            r.fails_with = Some(message.to_string());
        }
        self
    }

    /// Whether the case was built for dynamic shapes and its runs change some input's sizes.
    pub fn is_dynamic(&self) -> bool {
        let dynamic = self
            .compile_specs
            .iter()
            .any(|(k, v)| k == "require_dynamic_shapes" && v.iter().any(|b| *b != 0));
        let sizes = |r: &Run| -> Vec<Vec<usize>> {
            r.inputs
                .iter()
                .map(|v| match v {
                    Val::Tensor(t) => t.sizes.clone(),
                    Val::Int(x) => vec![*x as usize],
                })
                .collect()
        };
        dynamic
            && self
                .runs
                .first()
                .is_some_and(|first| self.runs.iter().any(|r| sizes(r) != sizes(first)))
    }

    /// `op: name`.
    pub fn label(&self) -> String {
        format!("{}: {}", self.op, self.name)
    }
}

/// The execute argument of an input value.
pub fn to_arg(v: &Val) -> DelegateArg {
    match v {
        Val::Tensor(t) => DelegateArg::Tensor(t.to_host()),
        Val::Int(x) => DelegateArg::Int(*x),
    }
}

/// The placeholder passed for an output: its dtype says what the host wants back; sizes
/// and data are overwritten. Int outputs start at a sentinel so a missing write shows.
pub fn output_placeholder(v: &Val) -> DelegateArg {
    match v {
        Val::Tensor(t) => DelegateArg::Tensor(HostTensor {
            dtype: host_dtype(t.dtype),
            sizes: Vec::new(),
            data: Vec::new(),
        }),
        Val::Int(_) => DelegateArg::Int(i64::MIN),
    }
}

fn describe_inputs(run: &Run) -> String {
    let parts: Vec<String> = run
        .inputs
        .iter()
        .map(|v| match v {
            Val::Tensor(t) => format!("{}{:?}", t.dtype.name(), t.sizes),
            Val::Int(x) => format!("int {x}"),
        })
        .collect();
    parts.join(", ")
}

fn check_output(got: &DelegateArg, want: &Val, tol: Tol) -> Result<(), String> {
    match (got, want) {
        (DelegateArg::Tensor(g), Val::Tensor(w)) => {
            let g = Tensor::from_host(g)?;
            if g.dtype != w.dtype {
                return Err(format!(
                    "dtype {} differs from the expected {}",
                    g.dtype.name(),
                    w.dtype.name()
                ));
            }
            let is_float = matches!(
                w.dtype,
                DataType::Float16 | DataType::Float32 | DataType::Float64
            );
            compare(&g, w, if is_float { tol } else { Tol::EXACT })
        }
        (DelegateArg::Int(g), Val::Int(w)) if g == w => Ok(()),
        (DelegateArg::Int(g), Val::Int(w)) => Err(format!("got int {g}, want {w}")),
        (g, w) => Err(format!("got {g:?}, expected a value like {w:?}")),
    }
}

/// Load `case` on the shared backend, execute every run in order on the one delegate and
/// compare each output. The error names the case, the run (with its input sizes) and the
/// output.
pub fn run_case(case: &OpCase) -> Result<(), String> {
    let be = backend();
    let label = case.label();
    if case.runs.is_empty() {
        return Err(format!("{label}: the case has no runs"));
    }
    let mut d = Delegate::init(&be, &case.blob, &case.compile_specs, &case.named)
        .map_err(|e| format!("{label}: init failed: {e} ({:?})", e.kind))?;
    for (ri, run) in case.runs.iter().enumerate() {
        let what = format!("{label}: run {ri} ({})", describe_inputs(run));
        let mut args: Vec<DelegateArg> = run.inputs.iter().map(to_arg).collect();
        args.extend(run.expected.iter().map(output_placeholder));
        if let Some(msg) = &run.fails_with {
            match d.execute(&mut args) {
                Err(e) if e.message.contains(msg.as_str()) => continue,
                Err(e) => return Err(format!("{what}: failed with {e}, expected {msg:?}")),
                Ok(()) => return Err(format!("{what}: ran, expected to fail with {msg:?}")),
            }
        }
        d.execute(&mut args)
            .map_err(|e| format!("{what}: execute failed: {e} ({:?})", e.kind))?;
        for (oi, want) in run.expected.iter().enumerate() {
            check_output(&args[run.inputs.len() + oi], want, case.tol)
                .map_err(|e| format!("{what}: output {oi}: {e}"))?;
        }
    }
    Ok(())
}

/// Run every case, then fail listing every failing case (not only the first), and fail if
/// the shared backend saw any validation error.
///
/// # Panics
/// If any case fails.
pub fn run_cases(cases: &[OpCase]) {
    assert!(!cases.is_empty(), "no cases to run");
    let mut failures = Vec::new();
    for case in cases {
        let t = Instant::now();
        match run_case(case) {
            Ok(()) => println!(
                "ok   {} ({} runs, {:.0} ms)",
                case.label(),
                case.runs.len(),
                t.elapsed().as_secs_f64() * 1e3
            ),
            Err(e) => {
                println!("FAIL {e}");
                failures.push(e);
            }
        }
    }
    let validation = backend().validation_error_count();
    if validation != 0 {
        failures.push(format!(
            "the shared backend reported {validation} validation error(s) (run with \
             RUST_LOG=warn and --nocapture to see them)"
        ));
    }
    if !failures.is_empty() {
        panic!(
            "{} of {} cases failed:\n  {}",
            failures.len(),
            cases.len(),
            failures.join("\n  ")
        );
    }
}

/// The load error of graph `g` (a test of a refused graph; panics when it loads).
pub fn init_error(g: CaseGraph) -> etvk_runtime::Error {
    let (blob, named) = g.finish();
    match etvk_runtime::Delegate::init(&backend(), &blob, &[], &named) {
        Ok(_) => panic!("init of a graph that should be refused succeeded"),
        Err(e) => e,
    }
}
