//! Fixture programs (`tests/fixtures/<name>/`): real ExecuTorch exports with inputs and
//! expected outputs (`io.json`), run two ways:
//!
//! - [`run_delegate`]: parse `model.pte`, take its `VulkanBackend` delegate and run every
//!   case through `Delegate::execute` on one loaded delegate (programs whose method is a
//!   single delegate call);
//! - [`run_cli`]: the `etvk run` binary, all cases as `--call`s of one invocation (one load,
//!   in order), comparing the `.npy` files it writes.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use etvk_format::program::parse_program;
use etvk_format::program_ir::{EValue, Instruction, Program};
use etvk_runtime::{Backend, Delegate, DelegateArg, HostDType, HostTensor, NamedData};
use serde_json::Value as Json;

use crate::case::backend;
use crate::compare::{compare_values, Tol};
use crate::npy;
use crate::tensor::decode;

/// `tests/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// One tensor of an `io.json` case.
#[derive(Debug, Clone)]
pub struct IoTensor {
    /// Raw little-endian file.
    pub file: PathBuf,
    /// The same data as `.npy`.
    pub npy: PathBuf,
    /// Sizes.
    pub shape: Vec<usize>,
    /// Host dtype.
    pub dtype: HostDType,
}

impl IoTensor {
    /// The tensor read from its raw file.
    pub fn load(&self) -> Result<HostTensor, String> {
        let data =
            std::fs::read(&self.file).map_err(|e| format!("{}: {e}", self.file.display()))?;
        let want = self.shape.iter().product::<usize>() * self.dtype.size_bytes();
        if data.len() != want {
            return Err(format!(
                "{}: {} bytes, io.json says {:?} {:?} ({want} bytes)",
                self.file.display(),
                data.len(),
                self.dtype,
                self.shape
            ));
        }
        Ok(HostTensor {
            dtype: self.dtype,
            sizes: self.shape.clone(),
            data,
        })
    }
}

/// One call: inputs in method input order, expected outputs in method output order.
#[derive(Debug, Clone)]
pub struct IoCase {
    /// Inputs.
    pub inputs: Vec<IoTensor>,
    /// Expected outputs.
    pub outputs: Vec<IoTensor>,
}

/// A fixture's `io.json`.
#[derive(Debug, Clone)]
pub struct Io {
    /// Method name.
    pub method: String,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance.
    pub rtol: f64,
    /// `f64_reference_tol`: the tolerance of the f64 reference interpreter against the
    /// expected outputs where it differs from atol / rtol (programs whose int8 dynamic
    /// activation quantization can round differently in f64; see the fixture's note).
    pub reference_tol: Option<f64>,
    /// Calls, to run in order.
    pub cases: Vec<IoCase>,
}

/// The host dtype named by `io.json` (`float32`, `int64`, ...).
pub fn dtype_from_name(name: &str) -> Result<HostDType, String> {
    Ok(match name {
        "float32" => HostDType::Float,
        "float16" => HostDType::Half,
        "float64" => HostDType::Double,
        "int64" => HostDType::Long,
        "int32" => HostDType::Int,
        "int16" => HostDType::Short,
        "int8" => HostDType::Char,
        "uint8" => HostDType::Byte,
        "bool" => HostDType::Bool,
        other => return Err(format!("unknown dtype {other:?}")),
    })
}

fn io_tensor(dir: &Path, j: &Json) -> Result<IoTensor, String> {
    let s = |k: &str| {
        j.get(k)
            .and_then(Json::as_str)
            .ok_or_else(|| format!("io.json tensor lacks {k}: {j}"))
    };
    let shape = j
        .get("shape")
        .and_then(Json::as_array)
        .ok_or_else(|| format!("io.json tensor lacks shape: {j}"))?
        .iter()
        .map(|d| d.as_u64().map(|d| d as usize).ok_or("bad dim"))
        .collect::<Result<Vec<usize>, _>>()?;
    Ok(IoTensor {
        file: dir.join(s("file")?),
        npy: dir.join(s("npy")?),
        shape,
        dtype: dtype_from_name(s("dtype")?)?,
    })
}

/// Read `tests/fixtures/<name>/io.json`.
pub fn load_io(name: &str) -> Result<Io, String> {
    let dir = fixtures_dir().join(name);
    let path = dir.join("io.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let j: Json = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let num = |k: &str| {
        j.get(k)
            .and_then(Json::as_f64)
            .ok_or_else(|| format!("{}: no number {k}", path.display()))
    };
    let list = |c: &Json, k: &str| -> Result<Vec<IoTensor>, String> {
        c.get(k)
            .and_then(Json::as_array)
            .ok_or_else(|| format!("{}: case lacks {k}", path.display()))?
            .iter()
            .map(|t| io_tensor(&dir, t))
            .collect()
    };
    let cases = j
        .get("cases")
        .and_then(Json::as_array)
        .ok_or_else(|| format!("{}: no cases", path.display()))?
        .iter()
        .map(|c| {
            Ok(IoCase {
                inputs: list(c, "inputs")?,
                outputs: list(c, "outputs")?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Io {
        method: j
            .get("method")
            .and_then(Json::as_str)
            .unwrap_or("forward")
            .to_string(),
        atol: num("atol")?,
        rtol: num("rtol")?,
        reference_tol: j.get("f64_reference_tol").and_then(Json::as_f64),
        cases,
    })
}

/// A program's named data as the delegate sees it.
struct ProgramData<'a>(&'a Program);

impl NamedData for ProgramData<'_> {
    fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.named_data(key)
    }
}

/// Compare an output with its expected tensor under the fixture's tolerance.
pub fn check_output(got: &HostTensor, want: &HostTensor, tol: Tol) -> Result<(), String> {
    if got.sizes != want.sizes {
        return Err(format!(
            "sizes {:?} differ from the expected {:?}",
            got.sizes, want.sizes
        ));
    }
    if got.dtype != want.dtype {
        return Err(format!(
            "dtype {:?} differs from the expected {:?}",
            got.dtype, want.dtype
        ));
    }
    compare_values(
        &decode(got.dtype, &got.data)?,
        &decode(want.dtype, &want.data)?,
        &want.sizes,
        tol,
    )
}

/// The external data files (`.ptd`) in fixture `name`'s directory, sorted.
pub fn fixture_data_files(name: &str) -> Result<Vec<std::path::PathBuf>, String> {
    let dir = fixtures_dir().join(name);
    let mut files = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let p = e.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if p.extension().is_some_and(|x| x == "ptd") {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

/// Parse fixture `name`'s `model.pte` with its `.ptd` files attached.
pub fn parse_fixture_program(name: &str) -> Result<etvk_format::program_ir::Program, String> {
    let path = fixtures_dir().join(name).join("model.pte");
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut program = parse_program(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    for f in fixture_data_files(name)? {
        let bytes = std::fs::read(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let ptd =
            etvk_format::ptd::parse_ptd(bytes).map_err(|e| format!("{}: {e}", f.display()))?;
        program.attach_external(ptd);
    }
    Ok(program)
}

/// Run every `io.json` case of fixture `name` in order on one delegate loaded from its
/// program, through the backend API. The method must be a single `VulkanBackend`
/// delegate call (other instructions may only move or free values).
pub fn run_delegate(name: &str) -> Result<(), String> {
    run_delegate_on(name, &backend()).map(|_| ())
}

/// [`run_delegate`] on backend `be`; returns (barriers, dispatches) of the last execute
/// ([`Delegate::barriers`]).
pub fn run_delegate_on(name: &str, be: &Arc<Backend>) -> Result<(usize, usize), String> {
    run_delegate_with(name, be, |_, _| {}).map(|d| d.barriers())
}

/// [`run_delegate`] on backend `be`, calling `after_case(case index, delegate)` after each
/// case's execute; returns the delegate.
pub fn run_delegate_with(
    name: &str,
    be: &Arc<Backend>,
    after_case: impl FnMut(usize, &Delegate),
) -> Result<Delegate, String> {
    run_delegate_inner(name, be, (false, &[]), after_case)
}

/// [`run_delegate_with`] with profiling on: `after_case` can read each execute's
/// [`Delegate::profile_nodes`].
pub fn run_delegate_profiled(
    name: &str,
    be: &Arc<Backend>,
    after_case: impl FnMut(usize, &Delegate),
) -> Result<Delegate, String> {
    run_delegate_inner(name, be, (true, &[]), after_case)
}

/// [`run_delegate_profiled`] with compile specs added to the program's (a forced choice).
pub fn run_delegate_profiled_with(
    name: &str,
    be: &Arc<Backend>,
    specs: &[(String, Vec<u8>)],
    after_case: impl FnMut(usize, &Delegate),
) -> Result<Delegate, String> {
    run_delegate_inner(name, be, (true, specs), after_case)
}

fn run_delegate_inner(
    name: &str,
    be: &Arc<Backend>,
    (profile, extra_specs): (bool, &[(String, Vec<u8>)]),
    mut after_case: impl FnMut(usize, &Delegate),
) -> Result<Delegate, String> {
    let io = load_io(name)?;
    let tol = Tol::new(io.atol, io.rtol);
    let program = parse_fixture_program(name)?;
    let plan = program
        .plan(&io.method)
        .ok_or_else(|| format!("{name}: no method {:?}", io.method))?;

    let mut call = None;
    for chain in &plan.chains {
        for ins in &chain.instructions {
            match ins {
                Instruction::DelegateCall {
                    delegate_index,
                    args,
                } if call.is_none() => call = Some((*delegate_index, args.clone())),
                Instruction::MoveCall { .. } | Instruction::FreeCall { .. } => {}
                other => {
                    return Err(format!(
                        "{name}: the method is not a single delegate call ({other:?}); run it through the host (CLI test)"
                    ))
                }
            }
        }
    }
    let (di, call_args) = call.ok_or_else(|| format!("{name}: no delegate call"))?;
    let delegate = &plan.delegates[di];
    if delegate.id != "VulkanBackend" {
        return Err(format!("{name}: delegate {di} is {:?}", delegate.id));
    }

    let specs: Vec<(String, Vec<u8>)> = delegate
        .compile_specs
        .iter()
        .cloned()
        .chain(extra_specs.iter().cloned())
        .collect();
    let mut d = Delegate::init(
        be,
        program.delegate_blob(delegate),
        &specs,
        &ProgramData(&program),
    )
    .map_err(|e| format!("{name}: init failed: {e} ({:?})", e.kind))?;
    if profile {
        d.set_profiling(true)
            .map_err(|e| format!("{name}: profiling: {e}"))?;
    }
    let (ni, no) = (d.num_inputs(), d.num_outputs());
    if call_args.len() != ni + no {
        return Err(format!(
            "{name}: the delegate call passes {} args, the delegate takes {ni} + {no}",
            call_args.len()
        ));
    }

    for (ci, case) in io.cases.iter().enumerate() {
        let what = format!("{name}: case {ci}");
        let mut args = Vec::with_capacity(ni + no);
        for &v in &call_args[..ni] {
            let arg = match plan.inputs.iter().position(|&i| i == v) {
                Some(p) => DelegateArg::Tensor(
                    case.inputs
                        .get(p)
                        .ok_or_else(|| format!("{what}: io.json has no input {p}"))?
                        .load()?,
                ),
                None => match &plan.values[v] {
                    EValue::Int(x) => DelegateArg::Int(*x),
                    _ => DelegateArg::None,
                },
            };
            args.push(arg);
        }
        let mut expected = Vec::with_capacity(no);
        for &v in &call_args[ni..] {
            let p = plan.outputs.iter().position(|&o| o == v).ok_or_else(|| {
                format!("{what}: delegate output value {v} is not a method output")
            })?;
            let want = case
                .outputs
                .get(p)
                .ok_or_else(|| format!("{what}: io.json has no output {p}"))?
                .load()?;
            args.push(DelegateArg::Tensor(HostTensor {
                dtype: want.dtype,
                sizes: Vec::new(),
                data: Vec::new(),
            }));
            expected.push((p, want));
        }
        d.execute(&mut args)
            .map_err(|e| format!("{what}: execute failed: {e} ({:?})", e.kind))?;
        after_case(ci, &d);
        for (k, (p, want)) in expected.iter().enumerate() {
            match &args[ni + k] {
                DelegateArg::Tensor(got) => {
                    check_output(got, want, tol).map_err(|e| format!("{what}: output {p}: {e}"))?
                }
                other => return Err(format!("{what}: output {p} is {other:?}")),
            }
        }
    }
    if be.validation_error_count() != 0 {
        return Err(format!(
            "{name}: {} validation error(s) so far on the shared backend",
            be.validation_error_count()
        ));
    }
    Ok(d)
}

/// The `etvk` binary of the profile this test was built with (`target/<profile>/etvk`,
/// found from the test executable `target/<profile>/deps/<test>-<hash>`).
pub fn cli_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut dir = exe
        .parent()
        .ok_or("test executable has no parent dir")?
        .to_path_buf();
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.pop();
    }
    let bin = dir.join(format!("etvk{}", std::env::consts::EXE_SUFFIX));
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "the CLI binary {} does not exist: run `cargo build --workspace` (same profile) before this test",
            bin.display()
        ))
    }
}

/// Run fixture `name` through `etvk run` (every case as one `--call`, one load, in order)
/// writing into `out_root/<name>`, and compare the written `.npy` outputs.
pub fn run_cli(name: &str, out_root: &Path) -> Result<(), String> {
    let bin = cli_binary()?;
    let dir = fixtures_dir().join(name);
    let io = load_io(name)?;
    let tol = Tol::new(io.atol, io.rtol);
    let out_dir = out_root.join(name);
    if out_dir.exists() {
        std::fs::remove_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    }
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;

    let mut cmd = Command::new(&bin);
    cmd.arg("run")
        .arg(dir.join("model.pte"))
        .arg("--method")
        .arg(&io.method);
    for case in &io.cases {
        let files: Vec<String> = case
            .inputs
            .iter()
            .map(|t| t.npy.display().to_string())
            .collect();
        cmd.arg("--call").arg(files.join(","));
    }
    for f in fixture_data_files(name)? {
        cmd.arg("--data").arg(f);
    }
    cmd.arg("--out-dir").arg(&out_dir);
    cmd.env("ETVK_VALIDATION", "1");
    let out = cmd
        .output()
        .map_err(|e| format!("{name}: cannot start {}: {e}", bin.display()))?;
    if !out.status.success() {
        // `cargo test -p etvk-tests` does not rebuild the CLI or the plugin it loads, so
        // a failure may come from stale binaries rather than the current sources.
        return Err(format!(
            "{name}: `etvk run` failed ({}): {} (if the sources handle this, {} or its plugin \
             may be stale: run `cargo build --workspace`)",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim(),
            bin.display()
        ));
    }
    for (ci, case) in io.cases.iter().enumerate() {
        for (oi, want) in case.outputs.iter().enumerate() {
            let path = out_dir.join(format!("call{ci}_out{oi}.npy"));
            let got = npy::read(&path).map_err(|e| format!("{name}: {e}"))?;
            check_output(&got, &want.load()?, tol)
                .map_err(|e| format!("{name}: case {ci} output {oi} ({}): {e}", path.display()))?;
        }
    }
    Ok(())
}
