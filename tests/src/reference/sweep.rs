//! Fixture-level checks built on the reference: the reference against each fixture's
//! expected outputs ([`check_fixture`]), and the dynamic-length sweep of GPU against
//! reference ([`sweep`]).

use std::sync::Arc;

use etvk_format::program_ir::Program;
use etvk_host::{LoadedMethod, ValueInfo};
use etvk_runtime::Backend;

use crate::compare::Tol;
use crate::fixtures::{check_output, fixtures_dir, load_io, Io};
use crate::tensor::{graph_dtype, Rng, Tensor};

use super::graph::is_float;
use super::method::{
    from_host_tensor, load_gpu_method, load_reference_method, requires_dynamic_shapes,
    runtime_dtype, to_host_tensor,
};

/// Fixtures of `tests/fixtures` that have an `io.json` (expected outputs), sorted.
pub fn fixtures_with_io() -> Result<Vec<String>, String> {
    let dir = fixtures_dir();
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        if e.path().join("io.json").is_file() && e.path().join("model.pte").is_file() {
            names.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Parse `tests/fixtures/<name>/model.pte` (its `.ptd` files attached).
pub fn load_fixture_program(name: &str) -> Result<Arc<Program>, String> {
    crate::fixtures::parse_fixture_program(name).map(Arc::new)
}

/// Whether `method` has a `VulkanBackend` delegate compiled with `require_dynamic_shapes`.
pub fn has_dynamic_delegate(program: &Program, method: &str) -> bool {
    program.plan(method).is_some_and(|p| {
        p.delegates.iter().any(|d| {
            d.id == etvk_host::VULKAN_BACKEND_ID && requires_dynamic_shapes(&d.compile_specs)
        })
    })
}

/// Whether `method` of `program` has a Vulkan delegate compiled with `force_fp16`.
pub fn has_fp16_delegate(program: &Program, method: &str) -> bool {
    program.plan(method).is_some_and(|p| {
        p.delegates.iter().any(|d| {
            d.id == etvk_host::VULKAN_BACKEND_ID
                && d.compile_specs
                    .iter()
                    .any(|(k, v)| k == "force_fp16" && v.iter().any(|&b| b != 0))
        })
    })
}

/// Run every `io.json` case of fixture `name` in order on one reference-loaded method
/// (delegates on the f64 reference, CPU ops on the host kernels) and compare with the
/// expected outputs under the fixture's tolerance (its `f64_reference_tol` when it has one). Returns the number of cases.
pub fn check_fixture(name: &str) -> Result<usize, String> {
    let io = load_io(name)?;
    let tol = match io.reference_tol {
        Some(t) => Tol::new(io.atol.max(t), io.rtol.max(t)),
        None => Tol::new(io.atol, io.rtol),
    };
    let mut m = load_reference_method(load_fixture_program(name)?, &io.method)
        .map_err(|e| format!("{name}: {e}"))?;
    for (ci, case) in io.cases.iter().enumerate() {
        let inputs = case
            .inputs
            .iter()
            .map(|t| to_host_tensor(&t.load()?))
            .collect::<Result<Vec<_>, String>>()?;
        let outs = m
            .execute(&inputs)
            .map_err(|e| format!("{name}: case {ci}: {e}"))?;
        if outs.len() != case.outputs.len() {
            return Err(format!(
                "{name}: case {ci}: {} outputs, io.json has {}",
                outs.len(),
                case.outputs.len()
            ));
        }
        for (oi, (got, want)) in outs.iter().zip(&case.outputs).enumerate() {
            check_output(&from_host_tensor(got)?, &want.load()?, tol)
                .map_err(|e| format!("{name}: case {ci} output {oi}: {e}"))?;
        }
    }
    Ok(io.cases.len())
}

/// What [`sweep`] did for one fixture.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepReport {
    /// The dynamic dims: (method input, dim).
    pub dims: Vec<(usize, usize)>,
    /// The exported maximum of the dynamic dim.
    pub max: usize,
    /// The lengths run, in order.
    pub lengths: Vec<usize>,
    /// The lengths that the GPU and the reference both refused (too short for the model).
    pub refused: Vec<usize>,
}

/// The dynamic dims of a fixture: every (input, dim) whose size differs between the
/// `io.json` cases. Returns them with the smallest serialized maximum among them.
fn dynamic_dims(
    io: &Io,
    infos: &[ValueInfo],
    name: &str,
) -> Result<(Vec<(usize, usize)>, usize), String> {
    let first = io
        .cases
        .first()
        .ok_or_else(|| format!("{name}: io.json has no cases"))?;
    let mut dims = Vec::new();
    for (k, t) in first.inputs.iter().enumerate() {
        for d in 0..t.shape.len() {
            if io
                .cases
                .iter()
                .any(|c| c.inputs.get(k).and_then(|x| x.shape.get(d)) != Some(&t.shape[d]))
            {
                dims.push((k, d));
            }
        }
    }
    let mut max = usize::MAX;
    for &(k, d) in &dims {
        match infos.get(k) {
            Some(ValueInfo::Tensor { max_sizes, dynamic: true, .. }) => max = max.min(max_sizes[d]),
            other => {
                return Err(format!(
                    "{name}: input {k} dim {d} changes between cases, but the method declares {other:?}"
                ))
            }
        }
    }
    if dims.is_empty() {
        return Err(format!(
            "{name}: the io.json cases all have the same input sizes, so the dynamic dim is unknown"
        ));
    }
    Ok((dims, max))
}

/// Random method inputs: case 0's sizes with every dynamic dim set to `len`; floats
/// uniform in [-1, 1), integers in [0, 4).
fn random_inputs(
    io: &Io,
    infos: &[ValueInfo],
    dims: &[(usize, usize)],
    len: usize,
    seed: u64,
) -> Result<Vec<etvk_host::Tensor>, String> {
    let mut out = Vec::new();
    for (k, t) in io.cases[0].inputs.iter().enumerate() {
        let mut sizes = t.shape.clone();
        for &(dk, d) in dims {
            if dk == k {
                sizes[d] = len;
            }
        }
        let dtype = match infos.get(k) {
            Some(ValueInfo::Tensor { dtype, .. }) => *dtype,
            other => return Err(format!("input {k} is {other:?}, not a tensor")),
        };
        let rt = runtime_dtype(dtype)?;
        let gdt = graph_dtype(rt).ok_or_else(|| format!("input {k}: dtype {dtype:?}"))?;
        let s = seed.wrapping_mul(31).wrapping_add(k as u64);
        let r = if is_float(gdt) {
            Tensor::rand_range(gdt, &sizes, -1.0, 1.0, s)
        } else {
            Tensor::rand_int(gdt, &sizes, 0, 3, s)
        };
        out.push(to_host_tensor(&r.to_host())?);
    }
    Ok(out)
}

/// The sweep order: every length from 1 to `max`, then `extra` random lengths (so the
/// program also shrinks and grows by large steps).
pub fn sweep_lengths(max: usize, extra: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let mut v: Vec<usize> = (1..=max).collect();
    v.extend((0..extra).map(|_| 1 + (rng.next_u64() % max as u64) as usize));
    v
}

fn run(
    m: &mut LoadedMethod,
    inputs: &[etvk_host::Tensor],
    what: &str,
) -> Result<Vec<etvk_host::Tensor>, String> {
    m.execute(inputs).map_err(|e| format!("{what}: {e}"))
}

/// Load fixture `name` once on the GPU (`backend`) and once on the reference, then run
/// every length of its dynamic dim from 1 to the exported maximum and `extra` random
/// lengths, with fresh random inputs each time, comparing every output under the
/// fixture's tolerance. A length that both refuse is skipped (see [`SweepReport::refused`]).
pub fn sweep(name: &str, backend: &Arc<Backend>, extra: usize) -> Result<SweepReport, String> {
    let io = load_io(name)?;
    // The fixture's tolerance covers PyTorch vs the exported program; against the f64
    // reference an fp32 program is held tighter (the GPU agrees to ~2e-6 on g1 and g3).
    // A force_fp16 delegate computes in fp16 behind fp32 host tensors: the fixture's own
    // tolerance then.
    let program = load_fixture_program(name)?;
    let all_fp32 = io
        .cases
        .iter()
        .flat_map(|c| &c.outputs)
        .all(|t| t.dtype == etvk_runtime::HostDType::Float)
        && !has_fp16_delegate(&program, &io.method);
    // Programs with int8 dynamic activations: an activation can round to a neighbouring
    // int8 step in f64 and not on the GPU (their `f64_reference_tol`).
    let tol = if let Some(t) = io.reference_tol {
        Tol::new(io.atol.max(t), io.rtol.max(t))
    } else if all_fp32 {
        Tol::new(io.atol.min(1e-4), io.rtol.min(1e-4))
    } else {
        Tol::new(io.atol, io.rtol)
    };
    let mut gpu = load_gpu_method(Arc::clone(&program), &io.method, backend)
        .map_err(|e| format!("{name}: {e}"))?;
    let mut reference =
        load_reference_method(program, &io.method).map_err(|e| format!("{name}: {e}"))?;
    let infos = gpu.inputs();
    let (dims, max) = dynamic_dims(&io, &infos, name)?;
    let lengths = sweep_lengths(max, extra, 0x5eed ^ max as u64);
    let mut refused = Vec::new();
    for (step, &len) in lengths.iter().enumerate() {
        let what = format!("{name}: step {step} (length {len})");
        let inputs = random_inputs(&io, &infos, &dims, len, 1000 + step as u64)
            .map_err(|e| format!("{what}: {e}"))?;
        let got = run(&mut gpu, &inputs, &format!("{what}: GPU"));
        let want = run(&mut reference, &inputs, &format!("{what}: reference"));
        // A length the model cannot take (a convolution's kernel longer than the input)
        // must be refused by both, and the loaded GPU method must go on working after it.
        let (got, want) = match (got, want) {
            (Ok(g), Ok(w)) => (g, w),
            (Err(_), Err(_)) => {
                refused.push(len);
                continue;
            }
            (Err(e), Ok(_)) => return Err(format!("{e} (the reference accepts this length)")),
            (Ok(_), Err(e)) => return Err(format!("{e} (the GPU accepted this length)")),
        };
        if got.len() != want.len() {
            return Err(format!(
                "{what}: {} GPU outputs, {} reference outputs",
                got.len(),
                want.len()
            ));
        }
        for (oi, (g, w)) in got.iter().zip(&want).enumerate() {
            check_output(&from_host_tensor(g)?, &from_host_tensor(w)?, tol)
                .map_err(|e| format!("{what}: output {oi}: {e}"))?;
        }
    }
    if backend.validation_error_count() != 0 {
        return Err(format!(
            "{name}: {} validation error(s) so far on the shared backend",
            backend.validation_error_count()
        ));
    }
    if refused.len() == lengths.len() {
        return Err(format!("{name}: every length was refused"));
    }
    Ok(SweepReport {
        dims,
        max,
        lengths,
        refused,
    })
}
