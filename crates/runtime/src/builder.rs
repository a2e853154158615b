//! Building a compute graph from a VkGraph: values, tensors, memory objects, constants,
//! prepacked weights, dispatch nodes. Op builders (in `ops/`) talk to [`GraphBuilder`].

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use etvk_format::ir::{ConstantSource, DataType, Value, VkGraph};
use etvk_shaders::ShaderId;

use crate::api::{NamedData, Result};
use crate::backend::BackendInner;
use crate::error::{internal, invalid_program, unsupported};
use crate::exec::{workgroups, ComputeGraph, GpuPackJob, InputSlot, OutputSlot, PendingPack};
use crate::graph::{
    Binding, DispatchNode, Global, HostFn, HostStep, Launch, MemId, ResizeFn, Shapes, TensorId,
    TensorShape,
};
use crate::registry;

/// A VkGraph value as the builder sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum GValue {
    /// Null / None / dtype / device / layout.
    Null,
    /// Int.
    Int(i64),
    /// Double.
    Double(f64),
    /// Bool.
    Bool(bool),
    /// A GPU tensor.
    Tensor(TensorId),
    /// A constant tensor not yet on the GPU: ops upload it through [`GraphBuilder::prepack`].
    TensorRef(ConstantInfo),
    /// IntList.
    IntList(Vec<i64>),
    /// DoubleList.
    DoubleList(Vec<f64>),
    /// BoolList.
    BoolList(Vec<bool>),
    /// ValueList (value ids).
    ValueList(Vec<usize>),
    /// String.
    String(String),
    /// SymInt: its current value lives in `Shapes::scalar(value_id)`.
    SymInt,
}

/// A constant tensor's description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstantInfo {
    /// VkGraph value id.
    pub value: usize,
    /// `VkGraph.constants` index.
    pub constant_id: usize,
    /// Element type of the serialized bytes.
    pub dtype: DataType,
    /// Sizes.
    pub dims: Vec<usize>,
}

/// A packed GPU form of a constant, produced by a [`Layout`]'s pack function.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    /// Element type of `bytes` on the GPU.
    pub dtype: DataType,
    /// Logical sizes of the packed tensor.
    pub dims: Vec<usize>,
    /// The bytes to upload (`numel(dims) * dtype.size_bytes()` at most).
    pub bytes: Vec<u8>,
}

/// Pack function: serialized constant bytes -> packed bytes (CPU reference = load path).
pub type PackFn = Box<dyn Fn(&ConstantInfo, &[u8]) -> Result<Packed>>;

/// A packed layout. Two ops asking for the same `(constant, layout name)` share one GPU
/// buffer, so the name must encode every parameter of the transform (`q4gsw_g32`).
pub struct Layout {
    /// Cache key part.
    pub name: String,
    /// The transform.
    pub pack: PackFn,
}

impl Layout {
    /// The constant's bytes as they are (row-major, serialized dtype).
    pub fn contiguous() -> Layout {
        Layout {
            name: "contiguous".to_string(),
            pack: Box::new(|c, bytes| {
                Ok(Packed {
                    dtype: c.dtype,
                    dims: c.dims.clone(),
                    bytes: bytes.to_vec(),
                })
            }),
        }
    }
}

/// The GPU form of a layout's transform: the constant's serialized bytes are uploaded as
/// they are (padded to 4 bytes) and `shader` turns them into the packed tensor once, at init.
/// The shader binds the packed tensor at binding 0 and the raw bytes (as `uint[]`) at
/// binding 1, and must produce exactly the bytes of the layout's CPU `pack` function (the
/// reference; tests compare them bit for bit).
#[derive(Debug, Clone)]
pub struct GpuTransform {
    /// Element type of the packed tensor.
    pub dtype: DataType,
    /// Logical sizes of the packed tensor.
    pub dims: Vec<usize>,
    /// The pack shader (2 bindings: packed out, raw in).
    pub shader: ShaderId,
    /// Its push constants.
    pub push: Vec<u8>,
    /// Its invocations (default local size).
    pub global: Global,
}

/// Describes the GPU transform of a constant (from its description alone: the bytes stay
/// raw until the shader runs).
pub type GpuPackFn = Box<dyn Fn(&ConstantInfo) -> Result<GpuTransform>>;

/// Compile spec that forces every prepack onto the CPU reference path (value != 0).
pub const CPU_PREPACK_SPEC: &str = "etvk_cpu_prepack";

/// Compile spec forcing the 4-bit GEMV at M = 1: ASCII `lanes`, `wide`, `wide_dp4`,
/// `wide_dp4_pre` (its activation limbs from a pre-pass node), `wide_dp4_persist` (one wave
/// of workgroups walking the row blocks; rows of <= 256 chunks) or `half` (the same with half
/// a chunk per invocation, rows of any length; `half_early` / `half_late` with or without
/// its first block's second batch loaded early, on rows it does not slice; `half_tickets`
/// with its blocks past the first two rounds handed out by a counter); or `f16` /
/// `f16_emulated` (the f16
/// tensor-core forward from M = 9); tests and benchmarks compare them, the default picks by
/// row length, weight count and device features. Other values are refused at load.
pub const Q4_GEMV_SPEC: &str = "etvk_q4_gemv";

/// The values of [`Q4_GEMV_SPEC`] that a kernel choice reads.
pub const Q4_GEMV_FORMS: &[&str] = &[
    "lanes",
    "wide",
    "wide_dp4",
    "wide_dp4_pre",
    "wide_dp4_persist",
    "half",
    "half_early",
    "half_late",
    "half_tickets",
    "fma",
    "fma_w2",
    "f16",
    "f16_emulated",
];

/// Compile spec forcing the 4-bit backward: ASCII `split` (the split-N kernel at M <= 8),
/// `staged` (the staged kernel at M = 3..8), `wide[_c8|_c16|_c32][_magic|_f16|_f16t]` (the
/// wide kernel at M = 1, 2, its column width and decode) or `mma_emulated` (the tensor-core
/// kernel with plain arithmetic, M > 8); the default picks by shape and device. Other values
/// are refused at load.
pub const Q4_BWD_SPEC: &str = "etvk_q4_bwd";

/// Compile spec for the 4-bit forward on the tensor cores at M >= 8: ASCII `on` (the default
/// where the device has NV int8 cooperative matrices), `off` (the portable kernels; tests
/// of those and benchmarks use it; `1` / `0` the same), `emulated` (the int8 tensor-core
/// kernels with plain arithmetic for the MMAs, on any device: tests), or `cm2` / `cm2_f16`
/// (as `on`, with the f16 forward's M >= 128 through VK_NV_cooperative_matrix2 where the
/// device has it: exact / fp16 weights; slower on an H100, for tests and benchmarks). Other
/// values are refused at load.
pub const Q4_MMA_SPEC: &str = "etvk_q4_mma";

/// Compile spec for the 4-bit forward's FMA GEMV at M = 2..8 (`q4_linear_gemv_fma_m*`):
/// ASCII `on` (the default where the device can run it) or `off` (the int8 GEMVs and the
/// tensor-core forward serve those M instead; their tests and benchmarks use it; `1` / `0`
/// the same). Other values are refused at load.
pub const Q4_FMA_SPEC: &str = "etvk_q4_fma";

/// Compile spec for the row ranges that an 8da4w linear's producer writes for its M = 1 DQ
/// GEMVs (ops/quantize.rs `plan_row_minmax`): ASCII `auto` (the default: RMSNorms, alone or
/// fused with the residual add, on rows of at least 4096), `norm` (every RMSNorm), `all`
/// (the fused gated SiLU too, which then runs by rows) or `off`. Environment
/// `ETVK_ROW_RANGE` (`0` = `off`) when the spec is absent. Other values are refused at load.
pub const ROW_RANGE_SPEC: &str = "etvk_row_range";

/// The values of [`ROW_RANGE_SPEC`].
pub const ROW_RANGE_SETTINGS: &[&str] = &["auto", "norm", "all", "off"];

/// Compile spec for the RMSNorms that their 8da4w linears compute themselves at M = 1
/// (ops/fusion.rs `norm_into_gemv`): ASCII `auto` (the default: rows of at most 8192, the
/// unsliced GEMVs', where the GEMVs' extra cost stays under the norm node's; H100 and H200,
/// docs/performance.md, session 38),
/// `all` (any row) or `off`. Environment `ETVK_NORM_GEMV` (`0` = `off`) when the spec is
/// absent. Other values are refused at load.
pub const NORM_GEMV_SPEC: &str = "etvk_norm_gemv";

/// The values of [`NORM_GEMV_SPEC`].
pub const NORM_GEMV_SETTINGS: &[&str] = &["auto", "all", "off"];

/// Compile spec for splitting a KV-cache attention's keys over several workgroups per query
/// row (`sdpa_kv_*`, joined by the row's last to finish): ASCII `on` (the default) where a
/// launch has at most 264 query rows (half the split's wave) and more than 64 cache
/// positions, or `off`. Environment `ETVK_SDPA_SPLIT` (`0` = `off`) when the spec is absent.
/// Other values are refused at load.
pub const SDPA_SPLIT_SPEC: &str = "etvk_sdpa_split";

/// The values of [`SDPA_SPLIT_SPEC`].
pub const SDPA_SPLIT_SETTINGS: &[&str] = &["on", "off"];

/// A text compile spec's value as given, else environment variable `env`'s.
pub(crate) fn spec_or_env(spec: &Option<String>, env: &str) -> Option<String> {
    spec.clone().or_else(|| std::env::var(env).ok())
}

/// A dispatch with alternative kernels: the resize fn picks one per launch.
pub(crate) struct Alternatives {
    /// Each variant's dispatch description and pipeline.
    pub(crate) variants: Vec<(Dispatch, [u32; 3], Arc<etvk_vulkan::ComputePipeline>)>,
    /// Index of the variant the last resize chose.
    pub(crate) selected: Arc<AtomicUsize>,
}

/// One `OperatorCall`, as op builders receive it.
#[derive(Debug, Clone, Copy)]
pub struct OpCall<'a> {
    /// Exact op name.
    pub name: &'a str,
    /// Debug handle.
    pub node_id: u32,
    /// Value ids; the last is the output.
    pub args: &'a [usize],
    /// Position in the graph's chain (ops that look ahead at their consumers).
    pub index: usize,
}

impl OpCall<'_> {
    /// Fail unless there are exactly `n` args.
    pub fn expect_args(&self, n: usize) -> Result<()> {
        if self.args.len() != n {
            return Err(invalid_program(format!(
                "op {} (node {}): expected {n} args, got {}",
                self.name,
                self.node_id,
                self.args.len()
            )));
        }
        Ok(())
    }
    /// Value id of arg `i`.
    pub fn arg(&self, i: usize) -> Result<usize> {
        self.args.get(i).copied().ok_or_else(|| {
            invalid_program(format!(
                "op {} (node {}): missing arg {i}",
                self.name, self.node_id
            ))
        })
    }
    /// `op NAME (node N)` prefix for messages.
    pub fn what(&self) -> String {
        format!("op {} (node {})", self.name, self.node_id)
    }
}

/// How a dispatch is bound and specialized.
#[derive(Debug, Clone)]
pub struct Dispatch {
    /// Shader variant.
    pub shader: ShaderId,
    /// Bindings 0..n, in the shader's order.
    pub bindings: Vec<Binding>,
    /// Local size override (default: the manifest's).
    pub local: Option<[u32; 3]>,
    /// Extra specialization constants (ids 3..).
    pub spec: Vec<u32>,
}

impl Dispatch {
    /// A dispatch of `shader` over `bindings` with the default local size.
    pub fn new<B: Into<Binding>>(
        shader: ShaderId,
        bindings: impl IntoIterator<Item = B>,
    ) -> Dispatch {
        Dispatch {
            shader,
            bindings: bindings.into_iter().map(Into::into).collect(),
            local: None,
            spec: Vec::new(),
        }
    }
}

impl Dispatch {
    /// Bind the graph's fault record last (shaders that include `fault.glsl`).
    pub fn with_faults(mut self) -> Dispatch {
        self.bindings.push(Binding::Faults);
        self
    }
}

pub(crate) struct MemSpec {
    pub(crate) bytes: u64,
    pub(crate) label: String,
}

/// Builds the compute graph of one delegate; op builders call its methods.
pub struct GraphBuilder<'a> {
    pub(crate) be: &'a Arc<BackendInner>,
    graph: &'a VkGraph,
    constant_region: &'a [u8],
    named: &'a dyn NamedData,
    pub(crate) values: Vec<GValue>,
    /// Staging dtype of tensor values (by value id).
    staging: HashMap<usize, DataType>,
    pub(crate) shapes: Shapes,
    pub(crate) tensor_mem: Vec<MemId>,
    pub(crate) mems: Vec<MemSpec>,
    /// Tensors zeroed once when the graph is built ([`Self::new_zeroed_tensor`]).
    pub(crate) zeroed: Vec<TensorId>,
    shared: HashMap<usize, MemId>,
    pub(crate) nodes: Vec<DispatchNode>,
    pub(crate) host_steps: Vec<HostStep>,
    pub(crate) pipelines: Vec<Arc<etvk_vulkan::ComputePipeline>>,
    pub(crate) packs: Vec<PendingPack>,
    pack_cache: HashMap<(usize, String), TensorId>,
    pub(crate) scalar_slots: BTreeMap<usize, u32>,
    /// Scalar slots always stored as f32 (see [`GraphBuilder::scalar_slot_f32`]); they
    /// share the slot numbering with `scalar_slots`.
    pub(crate) scalar_f32_slots: BTreeMap<usize, u32>,
    dummy: Option<TensorId>,
    /// Kernel alternatives of `nodes[i]` (None: a plain dispatch).
    pub(crate) alternatives: Vec<Option<Alternatives>>,
    /// Compile spec `require_dynamic_shapes`.
    pub dynamic: bool,
    /// Compile spec [`CPU_PREPACK_SPEC`]: run every layout's CPU packer even where a GPU
    /// transform exists (tests compare both; a fallback for driver trouble).
    pub cpu_prepack: bool,
    /// Compile spec [`Q4_GEMV_SPEC`], when given.
    pub q4_gemv: Option<String>,
    /// [`Q4_BWD_SPEC`]'s value, when given.
    pub q4_bwd: Option<String>,
    /// [`Q4_MMA_SPEC`]'s value, when given.
    pub q4_mma: Option<String>,
    /// [`Q4_FMA_SPEC`]'s value, when given.
    pub q4_fma: Option<String>,
    /// Compile spec [`ROW_RANGE_SPEC`], as given.
    pub row_range: Option<String>,
    /// Compile spec [`NORM_GEMV_SPEC`], as given.
    pub norm_gemv: Option<String>,
    /// Compile spec [`SDPA_SPLIT_SPEC`], as given.
    pub sdpa_split: Option<String>,
    /// x quantized and dequantized per row by a fused choose_qparams node, keyed by the 8da4w
    /// linear's (x, input_scales, input_zp) value ids (ops/quantize.rs).
    pub(crate) act_quant: HashMap<(usize, usize, usize), crate::ops::quantize::ActQuantUse>,
    /// int8 weights of left-out dequantize_affine nodes, keyed by the node's output value:
    /// the aten.linear ops that read it run on the int8 weight (ops/q8_linear.rs).
    pub(crate) q8_weights: HashMap<usize, crate::ops::q8_linear::Q8Weight>,
    /// The fused choose_qparams nodes so far, for later ones on the same x to reuse.
    pub(crate) act_quant_sources: Vec<crate::ops::quantize::ActQuantSource>,
    /// The graph takes SymInt inputs. The exporter serializes them as 0, a placeholder
    /// until the first execute sets them, so a resize function that fails at build time may
    /// only be seeing that placeholder (e.g. a view to `[seq, 64]` with seq = 0).
    symint_inputs: bool,
    /// Every resize runs again at the first execute: a resize failed at build time in a
    /// graph with SymInt inputs (the node got an empty launch; the real values come with
    /// the first execute, and an error then is reported as usual), or a node's launch
    /// depends on ops built after it (a fused choose_qparams node counts the readers of
    /// its output that the later linears register).
    pub(crate) deferred_resize: bool,
    /// Contiguous copies whose output may share the input's storage (`storage.rs`).
    pub(crate) view_candidates: Vec<crate::storage::ViewCandidate>,
    /// Tensors a fusion reads after the last read the exporter planned (ops/fusion.rs): each
    /// gets a memory object of its own unless it already has one (`storage.rs`).
    pub(crate) kept_past_plan: Vec<TensorId>,
    /// Chain ops another op's fusion built (`ops/fusion.rs`): not built themselves.
    pub(crate) skip_ops: std::collections::HashSet<usize>,
    /// Chain index of an outer `mul` -> the fused gated SiLU it runs instead.
    pub(crate) silu_mul: HashMap<usize, crate::ops::fusion::SiluMul>,
    /// Chain index of an `sdpa_with_kv_cache` -> the RoPE it applies itself
    /// (ops/fusion.rs `plan_rope_into_sdpa`).
    pub(crate) rope_sdpa: HashMap<usize, crate::ops::fusion::RopeInputs>,
    /// Value id of an RMSNorm's or fused gated SiLU's output -> the [rows, 2] fp32 tensor
    /// where that op also writes each row's (min(0, min), max(0, max)), for the 8da4w
    /// linears that quantize that output per row (ops/quantize.rs `plan_row_minmax`).
    pub(crate) row_minmax: HashMap<usize, TensorId>,
    /// Fused gated SiLUs and RMSNorms whose output only choose_qparams nodes and 8da4w
    /// linears read, by that output's value id: the linears' M = 1 DQ GEMVs may compute it
    /// themselves (ops/fusion.rs `XSource`).
    pub(crate) x_sources: HashMap<usize, crate::ops::fusion::XSource>,
}

impl<'a> GraphBuilder<'a> {
    pub(crate) fn new(
        be: &'a Arc<BackendInner>,
        graph: &'a VkGraph,
        constant_region: &'a [u8],
        named: &'a dyn NamedData,
        dynamic: bool,
    ) -> Result<GraphBuilder<'a>> {
        let mut b = GraphBuilder {
            be,
            graph,
            constant_region,
            named,
            values: Vec::with_capacity(graph.values.len()),
            staging: HashMap::new(),
            shapes: Shapes {
                max_groups: be.ctx.caps().max_workgroup_count,
                ..Default::default()
            },
            tensor_mem: Vec::new(),
            mems: Vec::new(),
            zeroed: Vec::new(),
            shared: HashMap::new(),
            nodes: Vec::new(),
            host_steps: Vec::new(),
            pipelines: Vec::new(),
            packs: Vec::new(),
            pack_cache: HashMap::new(),
            scalar_slots: BTreeMap::new(),
            scalar_f32_slots: BTreeMap::new(),
            dummy: None,
            alternatives: Vec::new(),
            view_candidates: Vec::new(),
            kept_past_plan: Vec::new(),
            skip_ops: std::collections::HashSet::new(),
            silu_mul: HashMap::new(),
            rope_sdpa: HashMap::new(),
            row_minmax: HashMap::new(),
            x_sources: HashMap::new(),
            dynamic,
            cpu_prepack: false,
            q4_gemv: None,
            act_quant: HashMap::new(),
            act_quant_sources: Vec::new(),
            q8_weights: HashMap::new(),
            q4_bwd: None,
            q4_mma: None,
            q4_fma: None,
            row_range: None,
            norm_gemv: None,
            sdpa_split: None,
            symint_inputs: graph
                .input_ids
                .iter()
                .any(|&v| matches!(graph.values.get(v), Some(Value::SymInt(_)))),
            deferred_resize: false,
        };
        for (id, v) in graph.values.iter().enumerate() {
            let gv = match v {
                Value::Null => GValue::Null,
                Value::Int(i) => GValue::Int(*i),
                Value::Double(d) => GValue::Double(*d),
                Value::Bool(x) => GValue::Bool(*x),
                Value::IntList(l) => GValue::IntList(l.clone()),
                Value::DoubleList(l) => GValue::DoubleList(l.clone()),
                Value::BoolList(l) => GValue::BoolList(l.clone()),
                Value::ValueList(l) => GValue::ValueList(l.clone()),
                Value::String(s) => GValue::String(s.clone()),
                Value::SymInt(s) => {
                    b.shapes.scalars.insert(id, *s as f64);
                    GValue::SymInt
                }
                Value::Tensor(t) => match t.constant_id {
                    Some(cid) => GValue::TensorRef(ConstantInfo {
                        value: id,
                        constant_id: cid,
                        dtype: t.dtype,
                        dims: t.dims.clone(),
                    }),
                    None => {
                        b.staging.insert(id, t.staging_dtype);
                        let tid = b.new_tensor(
                            t.dtype,
                            t.dims.clone(),
                            t.mem_obj_id,
                            format!("value {id}"),
                        )?;
                        GValue::Tensor(tid)
                    }
                },
            };
            b.values.push(gv);
        }
        Ok(b)
    }

    /// A new tensor of its own memory, zero when the graph is built. For kernels that keep
    /// state across launches and restore it themselves (the counters of a reduction by the
    /// last workgroup to finish).
    pub fn new_zeroed_tensor(
        &mut self,
        dtype: DataType,
        dims: Vec<usize>,
        label: String,
    ) -> Result<TensorId> {
        let t = self.new_tensor(dtype, dims, None, label)?;
        self.zeroed.push(t);
        Ok(t)
    }

    /// A new tensor; `mem_obj` shares one allocation per id (sized to its largest user).
    pub fn new_tensor(
        &mut self,
        dtype: DataType,
        dims: Vec<usize>,
        mem_obj: Option<usize>,
        label: String,
    ) -> Result<TensorId> {
        let bytes = dims
            .iter()
            .try_fold(dtype.size_bytes(), |a, &d| a.checked_mul(d))
            .ok_or_else(|| invalid_program(format!("{label}: sizes {dims:?} overflow")))?
            as u64;
        let mem = match mem_obj {
            Some(id) => match self.shared.get(&id) {
                Some(m) => {
                    let spec = &mut self.mems[m.0];
                    spec.bytes = spec.bytes.max(bytes);
                    *m
                }
                None => {
                    let m = MemId(self.mems.len());
                    self.mems.push(MemSpec {
                        bytes,
                        label: format!("mem_obj {id}"),
                    });
                    self.shared.insert(id, m);
                    m
                }
            },
            None => {
                let m = MemId(self.mems.len());
                self.mems.push(MemSpec {
                    bytes,
                    label: label.clone(),
                });
                m
            }
        };
        let t = TensorId(self.shapes.tensors.len());
        self.shapes.tensors.push(TensorShape {
            dtype,
            max_dims: dims.clone(),
            dims,
            label,
        });
        self.tensor_mem.push(mem);
        Ok(t)
    }

    /// The serialized graph (ops that look ahead at their consumers).
    pub(crate) fn graph(&self) -> &'a VkGraph {
        self.graph
    }

    /// Shapes (serialized sizes at build time).
    pub fn shapes(&self) -> &Shapes {
        &self.shapes
    }

    /// The device's capabilities (to pick kernels).
    pub fn caps(&self) -> &etvk_vulkan::DeviceCaps {
        self.be.ctx.caps()
    }

    /// Whether every device feature `shader` needs is present (to choose a fallback).
    pub fn shader_supported(&self, shader: ShaderId) -> bool {
        self.be.shader_supported(shader)
    }

    /// The value with id `v`.
    pub fn value(&self, v: usize) -> Result<&GValue> {
        self.values
            .get(v)
            .ok_or_else(|| internal(format!("value id {v} out of range")))
    }

    /// Make value `v` refer to tensor `t` (used by ops whose output aliases another tensor,
    /// like `et_vk.prepack`, or by view ops that share storage).
    pub fn alias_value(&mut self, v: usize, t: TensorId) -> Result<()> {
        match self.values.get_mut(v) {
            Some(slot) => {
                *slot = GValue::Tensor(t);
                Ok(())
            }
            None => Err(internal(format!("value id {v} out of range"))),
        }
    }

    /// Arg `i` as a GPU tensor (a constant is an error: use [`Self::tensor_or_prepack`]).
    pub fn tensor_arg(&self, call: &OpCall, i: usize) -> Result<TensorId> {
        let v = call.arg(i)?;
        match self.value(v)? {
            GValue::Tensor(t) => Ok(*t),
            other => Err(invalid_program(format!(
                "{} arg {i} (value {v}): expected a tensor, got {}",
                call.what(),
                gvalue_kind(other)
            ))),
        }
    }

    /// Arg `i` as a GPU tensor, prepacking a constant contiguously.
    pub fn tensor_or_prepack(&mut self, call: &OpCall, i: usize) -> Result<TensorId> {
        let v = call.arg(i)?;
        if let GValue::TensorRef(_) = self.value(v)? {
            return self.prepack(v, &Layout::contiguous());
        }
        self.tensor_arg(call, i)
    }

    /// Arg `i` as an optional tensor (`Null` -> None), prepacking a constant contiguously.
    pub fn opt_tensor_or_prepack(&mut self, call: &OpCall, i: usize) -> Result<Option<TensorId>> {
        let v = call.arg(i)?;
        if let GValue::Null = self.value(v)? {
            return Ok(None);
        }
        self.tensor_or_prepack(call, i).map(Some)
    }

    /// Arg `i` as an integer (Int, Bool, a SymInt's current value, or an integral Double: the
    /// exporter serializes equal scalars once, so an Int 6 can share a Double 6.0's value).
    pub fn int_arg(&self, call: &OpCall, i: usize) -> Result<i64> {
        let v = call.arg(i)?;
        match self.value(v)? {
            GValue::Int(x) => Ok(*x),
            GValue::Bool(x) => Ok(*x as i64),
            GValue::SymInt => Ok(self.shapes.scalar(v)? as i64),
            GValue::Double(x) if integral(*x).is_some() => Ok(*x as i64),
            other => Err(invalid_program(format!(
                "{} arg {i} (value {v}): expected an int, got {}",
                call.what(),
                gvalue_kind(other)
            ))),
        }
    }

    /// Arg `i` as a float (Double or Int); `Null` gives `default`.
    pub fn double_arg_or(&self, call: &OpCall, i: usize, default: f64) -> Result<f64> {
        let v = call.arg(i)?;
        match self.value(v)? {
            GValue::Double(x) => Ok(*x),
            GValue::Int(x) => Ok(*x as f64),
            GValue::Bool(x) => Ok(*x as i64 as f64),
            GValue::Null => Ok(default),
            other => Err(invalid_program(format!(
                "{} arg {i} (value {v}): expected a number, got {}",
                call.what(),
                gvalue_kind(other)
            ))),
        }
    }

    /// Arg `i` as an int list (IntList, or a ValueList of Int/SymInt values).
    pub fn int_list_arg(&self, call: &OpCall, i: usize) -> Result<Vec<i64>> {
        let v = call.arg(i)?;
        match self.value(v)? {
            GValue::IntList(l) => Ok(l.clone()),
            GValue::ValueList(ids) => ids
                .iter()
                .map(|&id| match self.value(id)? {
                    GValue::Int(x) => Ok(*x),
                    GValue::SymInt => Ok(self.shapes.scalar(id)? as i64),
                    other => Err(invalid_program(format!(
                        "{} arg {i}: list item value {id} is {}, expected an int",
                        call.what(),
                        gvalue_kind(other)
                    ))),
                })
                .collect(),
            other => Err(invalid_program(format!(
                "{} arg {i} (value {v}): expected an int list, got {}",
                call.what(),
                gvalue_kind(other)
            ))),
        }
    }

    /// The serialized bytes of constant `cid`, length-checked.
    pub fn constant_bytes(&self, cid: usize) -> Result<&'a [u8]> {
        constant_source_bytes(&self.graph.constants, self.constant_region, self.named, cid)
    }

    /// Upload constant value `v` in `layout` (once per `(constant, layout.name)`), returning
    /// the GPU tensor every op asking for the same pair shares. The upload happens at the end
    /// of init; ops that mutate the tensor in place mutate the shared copy, which persists
    /// across executes.
    pub fn prepack(&mut self, v: usize, layout: &Layout) -> Result<TensorId> {
        self.prepack_impl(v, layout, None)
    }

    /// [`Self::prepack`] with a GPU transform: the constant's raw bytes are uploaded and
    /// `gpu`'s shader packs them on the device at init (unless the compile spec
    /// [`CPU_PREPACK_SPEC`] asks for the CPU path, or the raw bytes exceed one binding).
    /// Both paths produce the same bytes, so the cache key stays `(constant, layout.name)`.
    pub fn prepack_with_gpu(
        &mut self,
        v: usize,
        layout: &Layout,
        gpu: &GpuPackFn,
    ) -> Result<TensorId> {
        self.prepack_impl(v, layout, Some(gpu))
    }

    fn prepack_impl(
        &mut self,
        v: usize,
        layout: &Layout,
        gpu: Option<&GpuPackFn>,
    ) -> Result<TensorId> {
        let info = match self.value(v)? {
            GValue::TensorRef(c) => c.clone(),
            other => {
                return Err(invalid_program(format!(
                    "prepack of value {v}: expected a constant tensor, got {}",
                    gvalue_kind(other)
                )))
            }
        };
        let key = (info.constant_id, layout.name.clone());
        if let Some(t) = self.pack_cache.get(&key) {
            return Ok(*t);
        }
        let bytes = self.constant_bytes(info.constant_id)?;
        let need = crate::graph::checked_numel(&info.dims)
            .and_then(|n| n.checked_mul(info.dtype.size_bytes()))
            .ok_or_else(|| {
                invalid_program(format!(
                    "constant {} (value {v}): sizes {:?} of {} overflow",
                    info.constant_id,
                    info.dims,
                    info.dtype.name()
                ))
            })?;
        if bytes.len() < need {
            return Err(invalid_program(format!(
                "constant {} (value {v}): {} bytes for {} {:?} ({need} needed)",
                info.constant_id,
                bytes.len(),
                info.dtype.name(),
                info.dims
            )));
        }
        let label = format!("constant {} ({})", info.constant_id, layout.name);
        let max_range = self.caps().max_storage_buffer_range as usize;
        let raw_fits = need.div_ceil(4) * 4 <= max_range;
        let (dtype, dims, data, job) = match gpu {
            Some(f) if !self.cpu_prepack && raw_fits && need > 0 => {
                let tr = f(&info)?;
                let info_sh = tr.shader.info();
                if info_sh.num_bindings != 2
                    || tr.push.len() != info_sh.push_constant_bytes as usize
                {
                    return Err(internal(format!(
                        "layout {}: pack shader {} takes {} bindings / {} push bytes, expected 2 / {}",
                        layout.name,
                        info_sh.name,
                        info_sh.num_bindings,
                        info_sh.push_constant_bytes,
                        tr.push.len()
                    )));
                }
                let local = info_sh.local_size;
                let groups = workgroups(tr.global, local, self.shapes.max_groups).map_err(|e| {
                    crate::api::Error::new(e.kind, format!("{label}: {}", e.message))
                })?;
                let pipeline = self.be.pipeline(tr.shader, local, &[])?;
                // The shader reads whole words: pad the raw bytes to a multiple of 4.
                let mut raw = bytes[..need].to_vec();
                raw.resize(need.div_ceil(4) * 4, 0);
                let job = GpuPackJob {
                    pipeline,
                    push: tr.push,
                    groups,
                };
                (tr.dtype, tr.dims, raw, Some(job))
            }
            _ => {
                let packed = (layout.pack)(&info, &bytes[..need])?;
                (packed.dtype, packed.dims, packed.bytes, None)
            }
        };
        let cap = crate::graph::checked_numel(&dims)
            .and_then(|n| n.checked_mul(dtype.size_bytes()))
            .ok_or_else(|| {
                internal(format!(
                    "layout {}: packed sizes {dims:?} overflow",
                    layout.name
                ))
            })?;
        if job.is_none() && data.len() > cap.max(1) {
            return Err(internal(format!(
                "layout {}: packed {} bytes into a {cap}-byte tensor",
                layout.name,
                data.len()
            )));
        }
        let t = self.new_tensor(dtype, dims, None, label.clone())?;
        self.packs.push(PendingPack {
            tensor: t,
            bytes: data,
            gpu: job,
            label,
            constant_id: info.constant_id,
            layout: layout.name.clone(),
        });
        self.pack_cache.insert(key, t);
        Ok(t)
    }

    /// A GPU-readable slot for SymInt / Int / Double value `v` in the graph's scalar
    /// buffer (bind [`Binding::Scalars`], pass the slot in push constants). Ints are stored
    /// as i32, doubles as f32. SymInts are refreshed at every execute.
    pub fn scalar_slot(&mut self, v: usize) -> Result<u32> {
        let init = match self.value(v)? {
            GValue::SymInt => self.shapes.scalar(v)?,
            GValue::Int(x) => *x as f64,
            // A double must stay a float on the GPU even when its value is integral (an
            // i32 1 read as a float is a denormal), so it gets an f32 slot.
            GValue::Double(_) => return self.scalar_slot_f32(v),
            other => {
                return Err(invalid_program(format!(
                    "value {v}: {} cannot be a GPU scalar",
                    gvalue_kind(other)
                )))
            }
        };
        self.shapes.scalars.entry(v).or_insert(init);
        let n = (self.scalar_slots.len() + self.scalar_f32_slots.len()) as u32;
        Ok(*self.scalar_slots.entry(v).or_insert(n))
    }

    /// A GPU-readable slot holding SymInt / Int / Double value `v` **as an f32** whatever
    /// its type or current value (a shader declaring the scalar buffer as `float[]` reads
    /// it directly). For runtime-settable float arguments such as a learning rate, a bias
    /// correction or a loss normalizer that may arrive as an Int or a SymInt:
    /// `Delegate::set_scalar(v, x)` changes it between executes without a rebuild, and a
    /// SymInt graph input refreshes it at every execute. A value used both as an int slot
    /// and as an f32 slot gets one slot of each kind.
    pub fn scalar_slot_f32(&mut self, v: usize) -> Result<u32> {
        let init = match self.value(v)? {
            GValue::SymInt => self.shapes.scalar(v)?,
            GValue::Int(x) => *x as f64,
            GValue::Double(x) => *x,
            other => {
                return Err(invalid_program(format!(
                    "value {v}: {} cannot be a GPU float scalar",
                    gvalue_kind(other)
                )))
            }
        };
        self.shapes.scalars.entry(v).or_insert(init);
        let n = (self.scalar_slots.len() + self.scalar_f32_slots.len()) as u32;
        Ok(*self.scalar_f32_slots.entry(v).or_insert(n))
    }

    /// What `Delegate::read_tensor` / `write_tensor` can reach, by VkGraph value id: graph
    /// tensors (and values aliased to a tensor) map to their tensor; a constant maps to its
    /// contiguous prepack (the copy that in-place ops such as `adamw_step` mutate and that
    /// every op using the constant contiguously shares), or to the reason it cannot be
    /// reached. Values that are not tensors are absent.
    pub(crate) fn state_tensors(&self) -> BTreeMap<usize, std::result::Result<TensorId, String>> {
        let mut out = BTreeMap::new();
        for (v, gv) in self.values.iter().enumerate() {
            match gv {
                GValue::Tensor(t) => {
                    out.insert(v, Ok(*t));
                }
                GValue::TensorRef(c) => {
                    let contiguous = (c.constant_id, Layout::contiguous().name);
                    let entry = match self.pack_cache.get(&contiguous) {
                        Some(t) => Ok(*t),
                        None => {
                            let mut layouts: Vec<&str> = self
                                .pack_cache
                                .keys()
                                .filter(|(cid, _)| *cid == c.constant_id)
                                .map(|(_, name)| name.as_str())
                                .collect();
                            layouts.sort_unstable();
                            Err(if layouts.is_empty() {
                                format!(
                                    "constant value {v} (constant {}) is not on the GPU: no op uses it",
                                    c.constant_id
                                )
                            } else {
                                format!(
                                    "constant value {v} (constant {}) is only on the GPU in packed layout(s) {layouts:?}, not as a contiguous tensor",
                                    c.constant_id
                                )
                            })
                        }
                    };
                    out.insert(v, entry);
                }
                _ => {}
            }
        }
        out
    }

    /// The host dtype a graph value is staged as (its VkGraph `staging_dtype`), if it has one.
    pub(crate) fn staging_dtype(&self, v: usize) -> Option<DataType> {
        self.staging.get(&v).copied()
    }

    /// A 16-byte placeholder tensor for optional bindings the shader does not read.
    pub fn dummy(&mut self) -> Result<TensorId> {
        if let Some(t) = self.dummy {
            return Ok(t);
        }
        let t = self.new_tensor(DataType::Float32, vec![4], None, "placeholder".into())?;
        self.dummy = Some(t);
        Ok(t)
    }

    /// Arg `i` as a ValueList of exactly `N` tensors (an op's several outputs); `names`
    /// says what they are in the error, e.g. "out, mean, rstd".
    pub fn output_tensors<const N: usize>(
        &self,
        call: &OpCall,
        i: usize,
        names: &str,
    ) -> Result<[TensorId; N]> {
        let v = call.arg(i)?;
        let what = call.what();
        let ids = match self.value(v)? {
            GValue::ValueList(ids) if ids.len() == N => ids.clone(),
            other => {
                return Err(invalid_program(format!(
                "{what} arg {i} (value {v}): expected a ValueList of {N} tensors ({names}), got {}",
                match other {
                    GValue::ValueList(ids) => format!("a ValueList of {}", ids.len()),
                    o => gvalue_kind(o).to_string(),
                }
            )))
            }
        };
        let mut t = [TensorId(0); N];
        for (k, id) in ids.into_iter().enumerate() {
            t[k] = match self.value(id)? {
                GValue::Tensor(x) => *x,
                other => {
                    return Err(invalid_program(format!(
                        "{what} arg {i}: output item {k} (value {id}) is {}, expected a tensor",
                        gvalue_kind(other)
                    )))
                }
            };
        }
        Ok(t)
    }

    /// `t`, or the placeholder tensor bound where an optional operand is absent.
    pub fn or_dummy(&mut self, t: Option<TensorId>) -> Result<TensorId> {
        match t {
            Some(t) => Ok(t),
            None => self.dummy(),
        }
    }

    /// Add a dispatch whose launch (and output sizes) `resize` computes; it runs now with
    /// the serialized sizes and again after every input resize / scalar change.
    pub fn dispatch(
        &mut self,
        call: &OpCall,
        d: Dispatch,
        resize: impl Fn(&mut Shapes) -> Result<Launch> + Send + Sync + 'static,
    ) -> Result<()> {
        let f: ResizeFn = Box::new(resize);
        let launch = match f(&mut self.shapes) {
            Ok(l) => l,
            Err(e) => self.defer_or_fail(call, &d, e)?,
        };
        self.push_node(call, d, launch, Some(f))
    }

    /// A build-time resize failed: in a graph with SymInt inputs, give the node an empty
    /// launch and re-run every resize at the first execute (see `deferred_resize`);
    /// otherwise the error, naming the op.
    fn defer_or_fail(
        &mut self,
        call: &OpCall,
        d: &Dispatch,
        e: crate::api::Error,
    ) -> Result<Launch> {
        if !self.symint_inputs {
            return Err(crate::api::Error::new(
                e.kind,
                format!("{}: {}", call.what(), e.message),
            ));
        }
        log::debug!(
            "{}: resize deferred to the first execute (SymInt inputs): {}",
            call.what(),
            e.message
        );
        self.deferred_resize = true;
        Ok(Launch {
            push: vec![0; d.shader.info().push_constant_bytes as usize],
            global: Global::Linear(0),
        })
    }

    /// Add a host step: shape / scalar bookkeeping without GPU work (`sym_size.int` sets
    /// its SymInt from a tensor's current sizes). It runs now and again at every resize,
    /// in chain order, so later resize functions (and the GPU scalar buffer) see what it set.
    pub fn host_step(
        &mut self,
        call: &OpCall,
        step: impl Fn(&mut Shapes) -> Result<()> + Send + Sync + 'static,
    ) -> Result<()> {
        let f: HostFn = Box::new(step);
        if let Err(e) = f(&mut self.shapes) {
            if !self.symint_inputs {
                return Err(crate::api::Error::new(
                    e.kind,
                    format!("{}: {}", call.what(), e.message),
                ));
            }
            self.deferred_resize = true;
        }
        self.host_steps.push(HostStep {
            before_node: self.nodes.len(),
            op: call.name.to_string(),
            node_id: call.node_id,
            run: f,
        });
        Ok(())
    }

    /// Ask `execute` to keep the host values of graph-input tensor `v` in
    /// [`Shapes::host_values`], refreshed from the input data before every resize pass (a
    /// change of values triggers one). Data-dependent host steps (`et_vk.select_as_symint`)
    /// read them without a GPU round trip. Returns `Ok(None)` when `v` is not a graph
    /// input tensor. Until the first execute the values are zeros, the exporter's
    /// placeholder for data-dependent SymInts.
    pub fn watch_input_values(&mut self, v: usize) -> Result<Option<TensorId>> {
        if !self.graph.input_ids.contains(&v) {
            return Ok(None);
        }
        let GValue::Tensor(t) = *self.value(v)? else {
            return Ok(None);
        };
        let n = self.shapes.numel(t);
        self.shapes
            .host_values
            .entry(t.0)
            .or_insert_with(|| vec![0; n]);
        Ok(Some(t))
    }

    /// Add a dispatch with a fixed launch (the op cannot run in a resized graph).
    pub fn dispatch_static(&mut self, call: &OpCall, d: Dispatch, launch: Launch) -> Result<()> {
        self.push_node(call, d, launch, None)
    }

    /// Add a dispatch with alternative kernels (e.g. GEMV for small M, tiled GEMM above):
    /// `resize` returns `(variant index, launch)` at build and after every resize, so the
    /// choice follows dynamic shapes. All variants must take the same push-constant size.
    /// Profiles name such a node `op/kernel`.
    pub fn dispatch_select(
        &mut self,
        call: &OpCall,
        variants: Vec<Dispatch>,
        resize: impl Fn(&mut Shapes) -> Result<(usize, Launch)> + Send + Sync + 'static,
    ) -> Result<()> {
        let Some(first) = variants.first() else {
            return Err(internal(format!(
                "{}: dispatch_select without variants",
                call.what()
            )));
        };
        let push_bytes = first.shader.info().push_constant_bytes;
        let mut alts = Vec::with_capacity(variants.len());
        for d in &variants {
            let info = d.shader.info();
            if info.push_constant_bytes != push_bytes {
                return Err(internal(format!(
                    "{}: variants {} and {} differ in push-constant size",
                    call.what(),
                    first.shader.info().name,
                    info.name
                )));
            }
            let (local, pipeline) = self.dispatch_pipeline(call, d)?;
            alts.push((d.clone(), local, pipeline));
        }
        let count = alts.len();
        let selected = Arc::new(AtomicUsize::new(0));
        let sel = selected.clone();
        let f: ResizeFn = Box::new(move |s: &mut Shapes| {
            let (i, launch) = resize(s)?;
            if i >= count {
                return Err(internal(format!("variant {i} of {count} selected")));
            }
            sel.store(i, Ordering::Relaxed);
            Ok(launch)
        });
        let launch = match f(&mut self.shapes) {
            Ok(l) => l,
            Err(e) => self.defer_or_fail(call, first, e)?,
        };
        let i = selected.load(Ordering::Relaxed);
        let d = variants[i].clone();
        self.push_node(call, d, launch, Some(f))?;
        *self
            .alternatives
            .last_mut()
            .ok_or_else(|| internal("node without alternatives slot"))? = Some(Alternatives {
            variants: alts,
            selected,
        });
        Ok(())
    }

    /// The pipeline of dispatch `d` at its local size, after checking that it binds as many
    /// resources as its shader declares.
    fn dispatch_pipeline(
        &self,
        call: &OpCall,
        d: &Dispatch,
    ) -> Result<([u32; 3], Arc<etvk_vulkan::ComputePipeline>)> {
        let info = d.shader.info();
        if d.bindings.len() != info.num_bindings as usize {
            return Err(internal(format!(
                "{}: shader {} has {} bindings, {} given",
                call.what(),
                info.name,
                info.num_bindings,
                d.bindings.len()
            )));
        }
        let local = d.local.unwrap_or(info.local_size);
        let pipeline = self.be.pipeline(d.shader, local, &d.spec).map_err(|e| {
            crate::api::Error::new(e.kind, format!("{}: {}", call.what(), e.message))
        })?;
        Ok((local, pipeline))
    }

    fn push_node(
        &mut self,
        call: &OpCall,
        d: Dispatch,
        launch: Launch,
        resize: Option<ResizeFn>,
    ) -> Result<()> {
        let info = d.shader.info();
        if launch.push.len() != info.push_constant_bytes as usize {
            return Err(internal(format!(
                "{}: shader {} takes {} push-constant bytes, {} given",
                call.what(),
                info.name,
                info.push_constant_bytes,
                launch.push.len()
            )));
        }
        let (local, pipeline) = self.dispatch_pipeline(call, &d)?;
        self.pipelines.push(pipeline);
        self.alternatives.push(None);
        self.nodes.push(DispatchNode {
            op: call.name.to_string(),
            node_id: call.node_id,
            shader: d.shader,
            local,
            spec: d.spec,
            bindings: d.bindings,
            launch,
            resize,
        });
        Ok(())
    }

    /// Run every op of the chain through the registry, then create the IO slots.
    pub(crate) fn build(mut self) -> Result<ComputeGraph> {
        let reg = registry::registry()?;
        let graph = self.graph;
        for (index, op) in graph.chain.iter().enumerate() {
            if self.skip_ops.contains(&index) {
                continue;
            }
            let entry = reg.get(&op.name).ok_or_else(|| {
                unsupported(format!(
                    "op {} (node {}) is not supported by etvk",
                    op.name, op.node_id
                ))
            })?;
            let call = OpCall {
                name: &op.name,
                node_id: op.node_id,
                index,
                args: &op.args,
            };
            (entry.build)(&mut self, &call)?;
        }
        let mut inputs = Vec::new();
        for (i, &v) in graph.input_ids.iter().enumerate() {
            inputs.push(match self.value(v)? {
                GValue::Tensor(t) => InputSlot::Tensor { tensor: *t },
                GValue::SymInt => InputSlot::SymInt(v),
                GValue::TensorRef(_) => {
                    return Err(invalid_program(format!(
                        "input {i} (value {v}) is a constant tensor"
                    )))
                }
                _ => InputSlot::Ignored,
            });
        }
        let mut outputs = Vec::new();
        for &v in &graph.output_ids {
            // A constant returned as an output (the exporter leaves e.g. a counter the
            // partition only reads): uploaded once, then read back like any tensor.
            if let GValue::TensorRef(_) = self.value(v)? {
                let t = self.prepack(v, &Layout::contiguous())?;
                self.alias_value(v, t)?;
            }
            outputs.push(match self.value(v)? {
                GValue::Tensor(t) => OutputSlot::Tensor {
                    tensor: *t,
                    staging_dtype: self
                        .staging
                        .get(&v)
                        .copied()
                        .unwrap_or(self.shapes.dtype(*t)),
                },
                GValue::SymInt => OutputSlot::SymInt(v),
                GValue::Int(x) => OutputSlot::Int(*x),
                _ => OutputSlot::Ignored,
            });
        }
        let aliased = self.plan_storage(&inputs)?;
        log::debug!("{aliased} contiguous copies share their input's storage");
        ComputeGraph::finalize(self, inputs, outputs)
    }
}

/// The serialized bytes of constant `cid` of a graph (`constants`, its delegate's inline
/// `constant_region`, the program's `named` data), length-checked.
pub(crate) fn constant_source_bytes<'a>(
    constants: &[ConstantSource],
    constant_region: &'a [u8],
    named: &'a dyn NamedData,
    cid: usize,
) -> Result<&'a [u8]> {
    let src = constants
        .get(cid)
        .ok_or_else(|| invalid_program(format!("constant {cid} out of range")))?;
    match src {
        ConstantSource::Named { key, length } => {
            let bytes = named.get(key).ok_or_else(|| {
                invalid_program(format!(
                    "constant {cid}: named data key {key:?} not found in the program"
                ))
            })?;
            if bytes.len() < *length {
                return Err(invalid_program(format!(
                    "constant {cid}: named data {key:?} has {} bytes, the graph declares {length}",
                    bytes.len()
                )));
            }
            Ok(&bytes[..*length])
        }
        ConstantSource::Inline { offset, length } => {
            let end = offset.checked_add(*length);
            match end {
                Some(e) if e <= constant_region.len() => Ok(&constant_region[*offset..e]),
                _ => Err(invalid_program(format!(
                    "constant {cid}: bytes [{offset}, +{length}) outside the {}-byte constant region",
                    constant_region.len()
                ))),
            }
        }
    }
}

/// An integral Double as the Int it stands for: the exporter serializes equal scalars once,
/// so an Int argument can share a Double's value (an int8 zero point 6 and ReLU6's 6.0).
pub fn integral(x: f64) -> Option<i64> {
    (x.fract() == 0.0 && x.abs() < 9.0e15).then_some(x as i64)
}

/// Variant name of a value, for errors.
pub fn gvalue_kind(v: &GValue) -> &'static str {
    match v {
        GValue::Null => "Null",
        GValue::Int(_) => "Int",
        GValue::Double(_) => "Double",
        GValue::Bool(_) => "Bool",
        GValue::Tensor(_) => "Tensor",
        GValue::TensorRef(_) => "constant Tensor",
        GValue::IntList(_) => "IntList",
        GValue::DoubleList(_) => "DoubleList",
        GValue::BoolList(_) => "BoolList",
        GValue::ValueList(_) => "ValueList",
        GValue::String(_) => "String",
        GValue::SymInt => "SymInt",
    }
}
