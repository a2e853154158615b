//! `etvk run`: load a program once, run calls of one method in order, save or summarize outputs.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use etvk_host::dtype::DType;
use etvk_host::{npy, HostOptions, LoadedMethod, MethodValue, Tensor, ValueInfo};

use crate::error::CliError;

/// Arguments of `etvk run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The `.pte` file.
    pub model: PathBuf,
    /// Method to run.
    #[arg(long, default_value = "forward")]
    pub method: String,
    /// The etvk plugin (default: $ETVK_PLUGIN, else libetvk next to this executable).
    #[arg(long)]
    pub plugin: Option<PathBuf>,
    /// One call's inputs, comma-separated `.npy` files in input order; repeat for more calls.
    #[arg(long = "call", required = true, value_name = "A.npy[,B.npy...]")]
    pub calls: Vec<String>,
    /// Write `DIR/call{i}_out{j}.npy` instead of printing summaries.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Print a per-op GPU time table (summed over every call).
    #[arg(long)]
    pub profile: bool,
    /// An external data file (`.ptd`) the program's named data or external tensors live
    /// in; repeat for several.
    #[arg(long = "data", value_name = "FILE.ptd")]
    pub data_files: Vec<PathBuf>,
}

/// Convert a `.npy` tensor to what method input `k` expects: tensors pass through; a
/// one-element array feeds an `Int`/`Bool`/`Double` input (SymInt inputs).
fn to_input(t: Tensor, info: Option<&ValueInfo>, what: &str) -> Result<MethodValue, CliError> {
    let scalar = |t: &Tensor| -> Result<etvk_host::dtype::Scalar, CliError> {
        if t.numel() != 1 {
            return Err(CliError(format!(
                "{what}: a scalar input needs a one-element array, got sizes {:?}",
                t.sizes
            )));
        }
        Ok(t.get(0)?)
    };
    Ok(match info {
        Some(ValueInfo::Other("Int")) => MethodValue::Int(scalar(&t)?.as_i64()),
        Some(ValueInfo::Other("Bool")) => MethodValue::Bool(scalar(&t)?.as_bool()),
        Some(ValueInfo::Other("Double")) => MethodValue::Double(scalar(&t)?.as_f64()),
        _ => MethodValue::Tensor(t),
    })
}

/// One-line summary of an output value.
pub fn summarize(v: &MethodValue) -> String {
    match v {
        MethodValue::Tensor(t) => summarize_tensor(t),
        MethodValue::Int(i) => format!("int {i}"),
        MethodValue::Bool(b) => format!("bool {b}"),
        MethodValue::Double(d) => format!("double {d}"),
        MethodValue::None => "none".to_string(),
    }
}

fn summarize_tensor(t: &Tensor) -> String {
    let head = format!("{} {:?}", t.dtype, t.sizes);
    let vals = match t.to_f64_vec() {
        Ok(v) => v,
        Err(e) => return format!("{head} ({e})"),
    };
    if vals.is_empty() {
        return format!("{head} (empty)");
    }
    let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = vals.iter().sum::<f64>() / vals.len() as f64;
    let first: Vec<String> = vals
        .iter()
        .take(6)
        .map(|x| {
            if t.dtype.is_float() {
                format!("{x:.6}")
            } else {
                format!("{x}")
            }
        })
        .collect();
    let more = if vals.len() > 6 { ", ..." } else { "" };
    format!(
        "{head} min={min:.6} max={max:.6} mean={mean:.6} first=[{}{more}]",
        first.join(", ")
    )
}

/// A non-tensor output as a 0-d array, so every output can be saved.
fn as_tensor(v: &MethodValue) -> Option<Tensor> {
    match v {
        MethodValue::Tensor(t) => Some(t.clone()),
        MethodValue::Int(i) => Tensor::from_i64(vec![], &[*i]).ok(),
        MethodValue::Bool(b) => Tensor::from_bool(vec![], &[*b]).ok(),
        MethodValue::Double(d) => Tensor::new(DType::F64, vec![], d.to_le_bytes().to_vec()).ok(),
        MethodValue::None => None,
    }
}

fn read_call(spec: &str, i: usize, infos: &[ValueInfo]) -> Result<Vec<MethodValue>, CliError> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .enumerate()
        .map(|(k, file)| {
            let t = npy::read(Path::new(file))?;
            to_input(t, infos.get(k), &format!("call {i} input {k} ({file})"))
        })
        .collect()
}

/// Run `etvk run`.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let options = HostOptions {
        plugin_path: args.plugin.clone(),
        data_files: args.data_files.clone(),
        ..HostOptions::default()
    };
    let t0 = Instant::now();
    let mut method = LoadedMethod::load_file(&args.model, &args.method, &options)?;
    outln!(
        "loaded {} method {:?} in {:.3} ms ({} delegate(s))",
        args.model.display(),
        method.name(),
        t0.elapsed().as_secs_f64() * 1e3,
        method.num_delegates()
    );
    let infos = method.inputs();
    // Read every call's inputs before running any, so a bad file fails before the work.
    let calls = args
        .calls
        .iter()
        .enumerate()
        .map(|(i, spec)| read_call(spec, i, &infos))
        .collect::<Result<Vec<_>, CliError>>()?;
    if let Some(dir) = &args.out_dir {
        std::fs::create_dir_all(dir).map_err(|e| CliError(format!("{}: {e}", dir.display())))?;
    }
    method.set_profiling(args.profile)?;
    let mut table = crate::profile::ProfileTable::default();
    for (i, inputs) in calls.iter().enumerate() {
        let t = Instant::now();
        let outputs = method
            .execute_values(inputs)
            .map_err(|e| CliError(format!("call {i}: {e}")))?;
        if args.profile {
            table.add(method.last_profile());
        }
        outln!("call {i}: {:.3} ms", t.elapsed().as_secs_f64() * 1e3);
        for (j, out) in outputs.iter().enumerate() {
            match &args.out_dir {
                Some(dir) => match as_tensor(out) {
                    Some(t) => {
                        let path = dir.join(format!("call{i}_out{j}.npy"));
                        npy::write(&path, &t)?;
                        outln!("  out{j}: {} -> {}", summarize(out), path.display());
                    }
                    None => outln!("  out{j}: none (not written)"),
                },
                None => outln!("  out{j}: {}", summarize(out)),
            }
        }
    }
    if args.profile {
        outln!("{}", table.render(None).trim_end());
    }
    Ok(())
}
