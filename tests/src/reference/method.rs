//! Whole programs through the host interpreter (`etvk_host::LoadedMethod`) with each
//! `VulkanBackend` delegate run either by the f64 reference ([`load_reference_method`]) or
//! by the GPU runtime in this process ([`load_gpu_method`]); the CPU ops between
//! delegates run on the host's portable kernels either way. Both plug into the host
//! through its public [`DelegateExecutor`] hook (`LoadedMethod::load_with_executors`).

use std::sync::Arc;

use etvk_format::program_ir::Program;
use etvk_host::values::{TensorSlot, Value};
use etvk_host::{
    DelegateExecutor, DelegateSpec, HostError, LoadedMethod, DEFAULT_MAX_INSTRUCTIONS,
};
use etvk_runtime::{Backend, Delegate, DelegateArg, HostDType, HostTensor, NamedData};

use crate::tensor::{decode, encode, graph_dtype, Tensor};

use super::graph::{RefGraph, RefValue};

/// A program's named data.
#[derive(Debug, Clone, Copy)]
pub struct ProgramNamedData<'a>(pub &'a Program);

impl NamedData for ProgramNamedData<'_> {
    fn get(&self, key: &str) -> Option<&[u8]> {
        self.0.named_data(key)
    }
}

/// Whether a delegate's compile specs ask for dynamic shapes (`require_dynamic_shapes`
/// present with a nonzero byte).
pub fn requires_dynamic_shapes(compile_specs: &[(String, Vec<u8>)]) -> bool {
    compile_specs
        .iter()
        .any(|(k, v)| k == "require_dynamic_shapes" && v.iter().any(|&b| b != 0))
}

/// The runtime's host dtype of a host-interpreter dtype (same ScalarType codes).
pub fn runtime_dtype(d: etvk_host::DType) -> Result<HostDType, String> {
    HostDType::from_code(d.code()).ok_or_else(|| format!("host dtype {d:?} has no runtime dtype"))
}

/// The host interpreter's tensor of a runtime host tensor.
pub fn to_host_tensor(t: &HostTensor) -> Result<etvk_host::Tensor, String> {
    let dtype = etvk_host::DType::from_code(t.dtype.code())
        .ok_or_else(|| format!("dtype {:?} has no host interpreter dtype", t.dtype))?;
    etvk_host::Tensor::new(dtype, t.sizes.clone(), t.data.clone()).map_err(|e| e.to_string())
}

/// A host interpreter tensor as a runtime host tensor.
pub fn from_host_tensor(t: &etvk_host::Tensor) -> Result<HostTensor, String> {
    Ok(HostTensor {
        dtype: runtime_dtype(t.dtype)?,
        sizes: t.sizes.clone(),
        data: t.data.clone(),
    })
}

fn plugin_err(label: &str, at: &dyn Fn() -> String, e: impl std::fmt::Display) -> HostError {
    HostError::Plugin(format!("{}: {label}: {e}", at()))
}

fn arg_value<'a>(
    values: &'a mut [Value],
    idx: usize,
    at: &dyn Fn() -> String,
) -> Result<&'a mut Value, HostError> {
    let n = values.len();
    values.get_mut(idx).ok_or_else(|| {
        HostError::InvalidProgram(format!(
            "{}: arg value {idx} out of range ({n} values)",
            at()
        ))
    })
}

/// Store `data` (f64 values, `sizes`) into a method tensor slot in the slot's dtype.
fn store_slot(
    slot: &mut TensorSlot,
    sizes: &[usize],
    data: &[f64],
    what: &str,
) -> Result<(), String> {
    let dt = graph_dtype(runtime_dtype(slot.dtype)?)
        .ok_or_else(|| format!("{what}: host dtype {:?} has no VkGraph dtype", slot.dtype))?;
    slot.store(sizes, &encode(dt, data), what)
        .map_err(|e| e.to_string())
}

/// A delegate evaluated by the f64 reference.
#[derive(Debug)]
pub struct ReferenceExecutor {
    graph: RefGraph,
    label: String,
}

impl ReferenceExecutor {
    /// Load the reference for one delegate of a method.
    pub fn new(spec: &DelegateSpec<'_>) -> Result<ReferenceExecutor, String> {
        let graph = RefGraph::from_blob(spec.blob, &ProgramNamedData(spec.program), spec.label)?;
        Ok(ReferenceExecutor {
            graph,
            label: spec.label.to_string(),
        })
    }
}

impl DelegateExecutor for ReferenceExecutor {
    fn execute(
        &mut self,
        values: &mut [Value],
        args: &[usize],
        at: &dyn Fn() -> String,
    ) -> Result<(), HostError> {
        let ni = self.graph.num_inputs();
        let label = self.label.as_str();
        let mut inputs = Vec::with_capacity(ni);
        for &idx in args.iter().take(ni) {
            inputs.push(match arg_value(values, idx, at)? {
                Value::Tensor(t) => {
                    let dt = runtime_dtype(t.dtype).map_err(|e| plugin_err(label, at, e))?;
                    let data = decode(dt, t.bytes()).map_err(|e| plugin_err(label, at, e))?;
                    let gdt = graph_dtype(dt).ok_or_else(|| {
                        plugin_err(
                            label,
                            at,
                            format!("input dtype {dt:?} has no VkGraph dtype"),
                        )
                    })?;
                    RefValue::Tensor(Tensor {
                        dtype: gdt,
                        sizes: t.sizes.clone(),
                        data,
                    })
                }
                Value::Int(i) => RefValue::Int(*i),
                other => {
                    return Err(plugin_err(
                        label,
                        at,
                        format!("input value {idx} is a {}", other.kind_name()),
                    ))
                }
            });
        }
        let outputs = self
            .graph
            .execute(&inputs)
            .map_err(|e| plugin_err(label, at, e))?;
        for (k, (&idx, out)) in args.iter().skip(ni).zip(&outputs).enumerate() {
            let what = format!("{}: {label} output {k} (value {idx})", at());
            match (arg_value(values, idx, at)?, out) {
                (Value::Tensor(slot), RefValue::Tensor(t)) => {
                    store_slot(slot, &t.sizes, &t.data, &what).map_err(HostError::Plugin)?
                }
                (Value::Int(slot), RefValue::Int(x)) => *slot = *x,
                (slot, out) => {
                    return Err(HostError::Plugin(format!(
                        "{what}: the method holds a {} there, the graph produced {out:?}",
                        slot.kind_name()
                    )))
                }
            }
        }
        Ok(())
    }
}

/// Load `method` of `program` with every `VulkanBackend` delegate evaluated by the f64
/// reference (state such as KV caches persists across executes, as on the GPU).
pub fn load_reference_method(program: Arc<Program>, method: &str) -> Result<LoadedMethod, String> {
    let mut make = |spec: DelegateSpec<'_>| -> Result<Box<dyn DelegateExecutor>, HostError> {
        Ok(Box::new(
            ReferenceExecutor::new(&spec).map_err(HostError::Plugin)?,
        ))
    };
    LoadedMethod::load_with_executors(program, method, DEFAULT_MAX_INSTRUCTIONS, &mut make)
        .map_err(|e| format!("reference load of method {method:?}: {e}"))
}

/// A delegate run by the GPU runtime in this process (`etvk_runtime::Delegate`, the code
/// the plugin wraps), so tests share one validation-enabled backend.
pub struct RuntimeExecutor {
    delegate: Delegate,
    label: String,
}

impl DelegateExecutor for RuntimeExecutor {
    fn execute(
        &mut self,
        values: &mut [Value],
        args: &[usize],
        at: &dyn Fn() -> String,
    ) -> Result<(), HostError> {
        let ni = self.delegate.num_inputs();
        let label = self.label.as_str();
        let mut dargs = Vec::with_capacity(args.len());
        for (pos, &idx) in args.iter().enumerate() {
            dargs.push(match arg_value(values, idx, at)? {
                Value::Tensor(t) => {
                    let dtype = runtime_dtype(t.dtype).map_err(|e| plugin_err(label, at, e))?;
                    DelegateArg::Tensor(HostTensor {
                        dtype,
                        sizes: if pos < ni {
                            t.sizes.clone()
                        } else {
                            Vec::new()
                        },
                        data: if pos < ni {
                            t.bytes().to_vec()
                        } else {
                            Vec::new()
                        },
                    })
                }
                Value::Int(i) => DelegateArg::Int(*i),
                _ => DelegateArg::None,
            });
        }
        self.delegate
            .execute(&mut dargs)
            .map_err(|e| plugin_err(label, at, format!("{e} ({:?})", e.kind)))?;
        for (k, (&idx, arg)) in args.iter().zip(&dargs).enumerate().skip(ni) {
            let what = format!("{}: {label} output {} (value {idx})", at(), k - ni);
            match (arg_value(values, idx, at)?, arg) {
                (Value::Tensor(slot), DelegateArg::Tensor(t)) => {
                    slot.store(&t.sizes, &t.data, &what)?
                }
                (Value::Int(slot), DelegateArg::Int(x)) => *slot = *x,
                _ => {}
            }
        }
        Ok(())
    }
}

/// Load `method` of `program` with every `VulkanBackend` delegate initialized on
/// `backend` by the GPU runtime.
pub fn load_gpu_method(
    program: Arc<Program>,
    method: &str,
    backend: &Arc<Backend>,
) -> Result<LoadedMethod, String> {
    let mut make = |spec: DelegateSpec<'_>| -> Result<Box<dyn DelegateExecutor>, HostError> {
        let delegate = Delegate::init(
            backend,
            spec.blob,
            &spec.delegate.compile_specs,
            &ProgramNamedData(spec.program),
        )
        .map_err(|e| HostError::Plugin(format!("{}: init: {e} ({:?})", spec.label, e.kind)))?;
        Ok(Box::new(RuntimeExecutor {
            delegate,
            label: spec.label.to_string(),
        }))
    };
    LoadedMethod::load_with_executors(program, method, DEFAULT_MAX_INSTRUCTIONS, &mut make)
        .map_err(|e| format!("GPU load of method {method:?}: {e}"))
}
