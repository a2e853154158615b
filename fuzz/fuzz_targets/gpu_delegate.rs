//! A `.pte`'s Vulkan delegates built and executed by the runtime on the local Vulkan device
//! (lavapipe here), with the program's named data and compile specs, on zero inputs of the
//! serialized sizes: parse, validation, prepack and dispatch on whatever a damaged program
//! declares. Validation layer off (speed); the runtime's own checks are what is fuzzed.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};

use etvk_format::ir::{DataType, Value};
use etvk_format::program_ir::Program;
use etvk_runtime::{
    Backend, Delegate, DelegateArg, HostDType, HostTensor, NamedData, RuntimeOptions,
};

struct ProgramData<'a>(&'a Program);

impl NamedData for ProgramData<'_> {
    fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.named_data(key)
    }
}

/// Inputs above this many bytes are not made (the fuzzer's memory, not a finding).
const MAX_INPUT_BYTES: usize = 1 << 24;

fn backend() -> &'static Arc<Backend> {
    static BE: OnceLock<Arc<Backend>> = OnceLock::new();
    BE.get_or_init(|| {
        let opts = RuntimeOptions {
            validation: false,
            ..RuntimeOptions::from_env()
        };
        Backend::new(&opts).expect("a Vulkan device for the fuzzer")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(program) = etvk_format::program::parse_program(data.to_vec()) else {
        return;
    };
    let be = backend();
    for plan in &program.plans {
        for d in plan.delegates.iter().filter(|d| d.id == "VulkanBackend") {
            let Ok(parsed) = etvk_format::vkgraph::parse_delegate(program.delegate_blob(d)) else {
                continue;
            };
            let Ok(mut delegate) =
                Delegate::from_ir(be, &parsed, &d.compile_specs, &ProgramData(&program))
            else {
                continue;
            };
            let mut args = Vec::new();
            for &id in &parsed.graph.input_ids {
                match &parsed.graph.values[id] {
                    Value::Tensor(t) => {
                        let dtype = match t.staging_dtype {
                            DataType::Float32 => HostDType::Float,
                            DataType::Int32 => HostDType::Int,
                            DataType::Int64 => HostDType::Long,
                            _ => return,
                        };
                        let Some(bytes) = t.numel.checked_mul(dtype.size_bytes()) else {
                            return;
                        };
                        if bytes > MAX_INPUT_BYTES {
                            return;
                        }
                        args.push(DelegateArg::Tensor(HostTensor {
                            dtype,
                            sizes: t.dims.clone(),
                            data: vec![0; bytes],
                        }));
                    }
                    _ => args.push(DelegateArg::Int(1)),
                }
            }
            for _ in &parsed.graph.output_ids {
                args.push(DelegateArg::Tensor(HostTensor {
                    dtype: HostDType::Float,
                    sizes: vec![],
                    data: vec![],
                }));
            }
            let _ = delegate.execute(&mut args);
            let _ = delegate.execute(&mut args);
        }
    }
});
