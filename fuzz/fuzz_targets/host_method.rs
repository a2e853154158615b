//! A `.pte` loaded and executed by the host runtime: every method loaded, its delegates
//! parsed and replaced by an executor that leaves their outputs as allocated, then run once
//! on zero inputs of the declared sizes. Exercises the interpreter and the portable CPU
//! kernels on whatever a damaged program asks of them.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

use etvk_host::values::Value;
use etvk_host::{DelegateExecutor, DelegateSpec, LoadedMethod, MethodValue, Tensor, ValueInfo};

/// Stands in for the GPU: the outputs keep whatever the method allocated for them.
struct Idle;

impl DelegateExecutor for Idle {
    fn execute(
        &mut self,
        _values: &mut [Value],
        _args: &[usize],
        _at: &dyn Fn() -> String,
    ) -> etvk_host::Result<()> {
        Ok(())
    }
}

/// Inputs whose bytes exceed this are not made (the fuzzer's memory limit, not a finding).
const MAX_INPUT_BYTES: usize = 1 << 26;

/// Programs whose declared tensors add up to more than this are skipped: the host allocates
/// them at load (fallibly: an `Err` where the allocator refuses), and a damaged program
/// declaring 20 GB would only meet the fuzzer's memory limit (or, near 1 GiB, spend seconds
/// a run in legitimate element loops). Sizes computed at execute time by the kernels are not
/// bounded here: those are fuzzed.
const MAX_DECLARED_BYTES: u64 = 1 << 28;

fn declared_bytes(program: &etvk_format::program_ir::Program) -> u64 {
    let mut total = 0u64;
    for plan in &program.plans {
        for v in &plan.values {
            if let etvk_format::program_ir::EValue::Tensor(t) = v {
                let numel = t
                    .sizes
                    .iter()
                    .try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?));
                total = total.saturating_add(numel.map_or(u64::MAX, |n| n.saturating_mul(8)));
            }
        }
    }
    total
}

fuzz_target!(|data: &[u8]| {
    let Ok(program) = etvk_format::program::parse_program(data.to_vec()) else {
        return;
    };
    if declared_bytes(&program) > MAX_DECLARED_BYTES {
        return;
    }
    let program = Arc::new(program);
    let names: Vec<String> = program.plans.iter().map(|p| p.name.clone()).collect();
    for name in names {
        let mut make = |spec: DelegateSpec<'_>| -> etvk_host::Result<Box<dyn DelegateExecutor>> {
            let _ = etvk_format::vkgraph::parse_delegate(spec.blob);
            Ok(Box::new(Idle))
        };
        let Ok(mut method) =
            LoadedMethod::load_with_executors(Arc::clone(&program), &name, 100_000, &mut make)
        else {
            continue;
        };
        let mut inputs = Vec::new();
        for info in method.inputs() {
            inputs.push(match info {
                ValueInfo::Tensor {
                    dtype, max_sizes, ..
                } => {
                    let bytes = max_sizes
                        .iter()
                        .try_fold(dtype.size_bytes(), |acc, &d| acc.checked_mul(d));
                    match bytes {
                        Some(b) if b <= MAX_INPUT_BYTES => match Tensor::zeros(dtype, max_sizes) {
                            Ok(t) => MethodValue::Tensor(t),
                            Err(_) => return,
                        },
                        _ => return,
                    }
                }
                ValueInfo::Other("Int") => MethodValue::Int(1),
                ValueInfo::Other("Bool") => MethodValue::Bool(false),
                ValueInfo::Other("Double") => MethodValue::Double(0.5),
                ValueInfo::Other(_) => MethodValue::None,
            });
        }
        let _ = method.execute_values(&inputs);
        let _ = method.execute_values(&inputs);
    }
});
