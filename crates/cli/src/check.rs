//! `etvk check DIR...`: run an exported fixture directory (`model.pte` + `io.json` with inputs
//! and expected outputs, the layout of `tests/fixtures/`, and any `.ptd` external data files) and compare every output with the
//! expected one under the fixture's `atol`/`rtol`. All cases run in order on one loaded method,
//! so stateful programs (KV caches) and dynamic-shape programs are checked as they are used.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use etvk_host::{npy, HostOptions, LoadedMethod, MethodValue};

use crate::error::CliError;

/// Arguments of `etvk check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Fixture directories (each with `model.pte` and `io.json`).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The etvk plugin (default: $ETVK_PLUGIN, else libetvk next to this executable).
    #[arg(long)]
    pub plugin: Option<PathBuf>,
}

fn json_err(dir: &Path, what: &str) -> CliError {
    CliError(format!("{}: io.json: {what}", dir.display()))
}

/// Whether every element is within `atol + rtol * |want|` (NaN matching NaN and equal
/// infinities matching, as `torch.allclose(equal_nan=True)`), and the max abs error over the
/// elements that are not such matches.
fn compare(got: &[f64], want: &[f64], atol: f64, rtol: f64) -> (bool, f64) {
    let mut ok = got.len() == want.len();
    let mut max_abs = 0f64;
    for (g, w) in got.iter().zip(want) {
        if g == w || (g.is_nan() && w.is_nan()) {
            continue;
        }
        let d = (g - w).abs();
        // An infinite `want` would make the tolerance infinite: only equality matches it.
        if d.is_nan() || !w.is_finite() || d > atol + rtol * w.abs() {
            ok = false;
        }
        if d > max_abs || d.is_nan() {
            max_abs = d;
        }
    }
    (ok, max_abs)
}

fn check_dir(dir: &Path, options: &HostOptions) -> Result<bool, CliError> {
    let io_text = std::fs::read_to_string(dir.join("io.json"))
        .map_err(|e| CliError(format!("{}: {e}", dir.join("io.json").display())))?;
    let io: serde_json::Value =
        serde_json::from_str(&io_text).map_err(|e| json_err(dir, &e.to_string()))?;
    let atol = io["atol"]
        .as_f64()
        .ok_or_else(|| json_err(dir, "no atol"))?;
    let rtol = io["rtol"]
        .as_f64()
        .ok_or_else(|| json_err(dir, "no rtol"))?;
    let method_name = io["method"].as_str().unwrap_or("forward");
    let cases = io["cases"]
        .as_array()
        .ok_or_else(|| json_err(dir, "no cases"))?;
    // External data files (`.ptd`) beside the program are attached to it.
    let mut options = options.clone();
    let entries =
        std::fs::read_dir(dir).map_err(|e| CliError(format!("{}: {e}", dir.display())))?;
    for e in entries {
        let p = e
            .map_err(|e| CliError(format!("{}: {e}", dir.display())))?
            .path();
        if p.extension().is_some_and(|x| x == "ptd") {
            options.data_files.push(p);
        }
    }
    options.data_files.sort();
    let mut method = LoadedMethod::load_file(&dir.join("model.pte"), method_name, &options)?;
    let mut all_ok = true;
    for (i, case) in cases.iter().enumerate() {
        let file = |v: &serde_json::Value| -> Result<PathBuf, CliError> {
            let name = v["npy"]
                .as_str()
                .ok_or_else(|| json_err(dir, &format!("case {i}: entry without npy")))?;
            Ok(dir.join(name))
        };
        let inputs = case["inputs"]
            .as_array()
            .ok_or_else(|| json_err(dir, &format!("case {i}: no inputs")))?
            .iter()
            .map(|v| Ok(MethodValue::Tensor(npy::read(&file(v)?)?)))
            .collect::<Result<Vec<_>, CliError>>()?;
        let t0 = Instant::now();
        let outputs = method.execute_values(&inputs)?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let expected = case["outputs"]
            .as_array()
            .ok_or_else(|| json_err(dir, &format!("case {i}: no outputs")))?;
        if expected.len() != outputs.len() {
            return Err(CliError(format!(
                "{}: case {i}: the method returned {} outputs, io.json expects {}",
                dir.display(),
                outputs.len(),
                expected.len()
            )));
        }
        for (j, (got, want)) in outputs.iter().zip(expected).enumerate() {
            let want = npy::read(&file(want)?)?;
            let MethodValue::Tensor(got) = got else {
                return Err(CliError(format!(
                    "{}: case {i} output {j}: not a tensor",
                    dir.display()
                )));
            };
            let shape_ok = got.sizes == want.sizes;
            let (ok, max_abs) = compare(&got.to_f64_vec()?, &want.to_f64_vec()?, atol, rtol);
            let ok = ok && shape_ok;
            all_ok &= ok;
            outln!(
                "{} case {i} out {j} {:?}: max |err| {max_abs:.3e} (atol {atol:e}, rtol {rtol:e}) {ms:.2} ms {}",
                dir.file_name().map(|n| n.to_string_lossy()).unwrap_or_default(),
                got.sizes,
                if ok { "PASS" } else if shape_ok { "FAIL" } else { "FAIL (shape)" }
            );
        }
    }
    Ok(all_ok)
}

/// Run `etvk check`.
pub fn check(args: &CheckArgs) -> Result<(), CliError> {
    let options = HostOptions {
        plugin_path: args.plugin.clone(),
        ..HostOptions::default()
    };
    let mut failed = Vec::new();
    for dir in &args.dirs {
        if !check_dir(dir, &options)? {
            failed.push(dir.display().to_string());
        }
    }
    if failed.is_empty() {
        outln!(
            "all {} fixture(s) match their expected outputs",
            args.dirs.len()
        );
        Ok(())
    } else {
        Err(CliError(format!(
            "outputs differ from the expected ones: {}",
            failed.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::compare;

    #[test]
    fn nan_matches_only_nan_and_infinities_match_their_sign() {
        let (nan, inf) = (f64::NAN, f64::INFINITY);
        let (ok, max_abs) = compare(&[1.0, nan, inf], &[1.0005, nan, inf], 1e-3, 0.0);
        assert!(ok && (max_abs - 5e-4).abs() < 1e-12, "{ok} {max_abs}");
        assert!(!compare(&[nan], &[0.0], 1e-3, 1e-3).0);
        assert!(!compare(&[0.0], &[nan], 1e-3, 1e-3).0);
        assert!(!compare(&[-inf], &[inf], 1e-3, 1e-3).0);
        assert!(!compare(&[5.0], &[inf], 1e-3, 1e-3).0);
        assert!(!compare(&[1.0], &[1.1], 1e-3, 1e-3).0);
        assert!(!compare(&[1.0], &[1.0, 2.0], 1e-3, 1e-3).0);
    }
}
