//! The built graph: allocation, prepack upload, command recording, execute, resize.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etvk_format::ir::DataType;
use etvk_vulkan::{
    Access, Buffer, CommandBuffer, ComputePipeline, DescriptorPool, DescriptorSet, Fence,
    MemoryKind, QueryPool,
};

use crate::api::{DelegateArg, HostDType, HostTensor, PrepackedInfo, Result};
use crate::backend::BackendInner;
use crate::builder::GraphBuilder;
use crate::dtype::{gpu_to_host, host_of, host_to_gpu};
use crate::error::{internal, invalid_arg, unsupported};
use crate::graph::checked_numel;
use crate::graph::{Binding, DispatchNode, Global, HostStep, MemId, ShapeKey, Shapes, TensorId};
use etvk_shaders::ShaderId;

mod barriers;
mod resize;
mod state;

/// Bound on every fence wait (lavapipe is slow; real GPUs finish far sooner).
const FENCE_TIMEOUT: Duration = Duration::from_secs(300);

/// Staged bytes per prepack submission: bounds host staging (and, for GPU transforms, the
/// raw copies) while a large model loads.
const PREPACK_BATCH_BYTES: u64 = 256 << 20;

/// A constant waiting for upload at the end of init.
pub(crate) struct PendingPack {
    pub(crate) tensor: TensorId,
    /// CPU-packed bytes, or the raw serialized bytes (padded to 4) when `gpu` is set.
    pub(crate) bytes: Vec<u8>,
    /// The GPU transform that turns `bytes` into the packed tensor.
    pub(crate) gpu: Option<GpuPackJob>,
    pub(crate) label: String,
    pub(crate) constant_id: usize,
    pub(crate) layout: String,
}

/// One pack-shader dispatch at init: binding 0 = packed tensor, binding 1 = raw bytes.
pub(crate) struct GpuPackJob {
    pub(crate) pipeline: Arc<ComputePipeline>,
    pub(crate) push: Vec<u8>,
    pub(crate) groups: [u32; 3],
}

/// Workgroup counts of a launch with local size `local`, checked against `max`
/// (`maxComputeWorkGroupCount`). `Global::Linear` spills into y past `max[0]`.
pub(crate) fn workgroups(global: Global, local: [u32; 3], max: [u32; 3]) -> Result<[u32; 3]> {
    let g = match global {
        Global::Linear(count) => {
            let total = count.div_ceil(local[0] as u64);
            let x = total.min(max[0] as u64).max(1);
            let y = total.div_ceil(x);
            if count == 0 {
                [0, 1, 1]
            } else {
                [x as u32, u32::try_from(y).unwrap_or(u32::MAX), 1]
            }
        }
        Global::Grid(g) => [
            g[0].div_ceil(local[0]),
            g[1].div_ceil(local[1]),
            g[2].div_ceil(local[2]),
        ],
    };
    if g.iter().zip(max.iter()).any(|(a, b)| a > b) {
        return Err(unsupported(format!(
            "dispatch of {g:?} workgroups exceeds the device limit {max:?}"
        )));
    }
    Ok(g)
}

/// Per-node kernel choices: one for a plain dispatch, several for `dispatch_select`.
struct NodeKernels {
    /// (pipeline, descriptor set, what the node shows) per variant.
    variants: Vec<(Arc<ComputePipeline>, DescriptorSet, NodeVariant)>,
    /// The variant the resize fn chose (None: a plain dispatch, always variant 0).
    selected: Option<Arc<AtomicUsize>>,
}

/// What a `DispatchNode` shows while a variant is selected.
#[derive(Clone)]
struct NodeVariant {
    shader: ShaderId,
    local: [u32; 3],
    spec: Vec<u32>,
    bindings: Vec<Binding>,
}

impl NodeKernels {
    fn current(&self) -> usize {
        self.selected
            .as_ref()
            .map(|s| s.load(Ordering::Relaxed))
            .unwrap_or(0)
    }
}

/// A graph input.
pub(crate) enum InputSlot {
    /// Copied from a host tensor through `staging` (GPU dtype bytes).
    Tensor { tensor: TensorId },
    /// Updates the SymInt value (by value id).
    SymInt(usize),
    /// Anything else (ignored).
    Ignored,
}

/// A graph output.
pub(crate) enum OutputSlot {
    /// Read back into a host tensor.
    Tensor {
        tensor: TensorId,
        staging_dtype: DataType,
    },
    /// A SymInt's current value.
    SymInt(usize),
    /// A constant int.
    Int(i64),
    /// Ignored (constant tensors, lists).
    Ignored,
}

/// A built, allocated, prepacked graph ready to execute.
pub(crate) struct ComputeGraph {
    be: Arc<BackendInner>,
    shapes: Shapes,
    tensor_mem: Vec<MemId>,
    mems: Vec<Option<Buffer>>,
    nodes: Vec<DispatchNode>,
    /// Host steps (no GPU work), interleaved with `nodes` by `before_node`.
    host_steps: Vec<HostStep>,
    kernels: Vec<NodeKernels>,
    _pool: DescriptorPool,
    /// Prepacked constants (for introspection / tests), in creation order.
    prepacked: Vec<(TensorId, PrepackedInfo)>,
    inputs: Vec<InputSlot>,
    outputs: Vec<OutputSlot>,
    in_staging: Vec<Option<Buffer>>,
    out_staging: Vec<Option<Buffer>>,
    scalar_slots: BTreeMap<usize, u32>,
    /// Slots stored as f32 whatever the value (see `GraphBuilder::scalar_slot_f32`).
    scalar_f32_slots: BTreeMap<usize, u32>,
    /// Tensors reachable by `read_tensor` / `write_tensor`, by value id (see `state`).
    state: BTreeMap<usize, state::StateTensor>,
    scalar_buf: Buffer,
    /// Device-local copy of `scalar_buf` that shaders bind (copied at each execute's start).
    scalar_dev: Buffer,
    /// The fault record (`shaders/fault.glsl`): host-shared, zero between executes; a
    /// kernel that meets an out-of-range index writes [node_id + 1, value, limit] there.
    faults: Buffer,
    /// Whether any kernel binds `faults` (else it is never read).
    uses_faults: bool,
    /// `ETVK_BARRIERS=all`: a barrier after every dispatch, as before barriers were planned
    /// (`exec/barriers.rs`); for comparisons.
    barrier_every_node: bool,
    /// `ETVK_BARRIERS=none`: no barrier between dispatches at all, a race on purpose: the
    /// negative control of the synchronization-validation test (never right on a GPU).
    no_barriers: bool,
    /// (barriers between dispatches, dispatches) of the last record.
    barriers: (usize, usize),
    /// The last barrier plan (record order, barrier before each) and what it was made for:
    /// each node's kernel variant, or `usize::MAX` where it launched nothing. Records after a
    /// resize that changed only push constants or workgroup counts reuse it.
    plan_cache: Option<(Vec<usize>, barriers::DispatchPlan)>,
    /// `ETVK_HOST_TIMING=1`: host time per execute phase (inputs, resize, record, submit and
    /// wait, outputs) summed over executes, printed to stderr when the graph is dropped.
    host_timing: Option<HostTiming>,
    /// `ETVK_PROFILE_WHOLE=1`: profiles time only the whole execute (one entry) and keep
    /// the barriers an execute has without profiling (planned, or after every dispatch with
    /// `ETVK_BARRIERS=all`): what the plan saves, measured (per-node timestamps would hold
    /// the dispatches in node order themselves).
    profile_whole: bool,
    /// The reusable execute command buffer (taken out while recording).
    cmd: Option<CommandBuffer>,
    fence: Fence,
    queries: Option<QueryPool>,
    needs_record: bool,
    /// A resize failed part-way: shapes/launches may be inconsistent until one succeeds.
    resize_dirty: bool,
    /// What each resize step read in its last run (`exec/resize.rs`).
    resize_deps: resize::ResizeDeps,
    /// Incremental, full or checked resize passes ([`crate::RuntimeOptions::resize`]).
    resize_mode: crate::api::ResizeMode,
    /// (resize steps run, resize steps in all) by the last execute.
    resize_steps: (usize, usize),
    in_flight: bool,
    dynamic: bool,
    profile: Vec<crate::api::NodeTime>,
    /// Per node, whether the last record launched it (a kernel idle at the current shapes
    /// records no dispatch).
    launched: Vec<bool>,
    scratch: Vec<u8>,
}

impl ComputeGraph {
    pub(crate) fn finalize(
        mut b: GraphBuilder<'_>,
        inputs: Vec<InputSlot>,
        outputs: Vec<OutputSlot>,
    ) -> Result<ComputeGraph> {
        let ctx = b.be.ctx.clone();
        let max_range = ctx.caps().max_storage_buffer_range as u64;
        // Which memory objects are used at all (bound, IO, or prepacked).
        let mut used = vec![false; b.mems.len()];
        let mut bound = vec![false; b.mems.len()];
        // Every kernel alternative's bindings too: a tensor only some other M's variant binds
        // (a scratch buffer) needs its memory as much as the build-time variant's do.
        let alt_bindings = b
            .alternatives
            .iter()
            .flatten()
            .flat_map(|a| a.variants.iter().flat_map(|v| v.0.bindings.iter()));
        for bd in b
            .nodes
            .iter()
            .flat_map(|n| n.bindings.iter())
            .chain(alt_bindings)
        {
            if let Binding::Tensor(t) = bd {
                used[b.tensor_mem[t.0].0] = true;
                bound[b.tensor_mem[t.0].0] = true;
            }
        }
        for s in &inputs {
            if let InputSlot::Tensor { tensor, .. } = s {
                used[b.tensor_mem[tensor.0].0] = true;
            }
        }
        for s in &outputs {
            if let OutputSlot::Tensor { tensor, .. } = s {
                used[b.tensor_mem[tensor.0].0] = true;
            }
        }
        for p in &b.packs {
            used[b.tensor_mem[p.tensor.0].0] = true;
        }
        for t in &b.zeroed {
            used[b.tensor_mem[t.0].0] = true;
        }
        let mut mems = Vec::with_capacity(b.mems.len());
        for (i, spec) in b.mems.iter().enumerate() {
            if bound[i] && spec.bytes > max_range {
                return Err(unsupported(format!(
                    "{}: {} bytes exceed the device's maxStorageBufferRange ({max_range})",
                    spec.label, spec.bytes
                )));
            }
            mems.push(if used[i] {
                Some(Buffer::new(&ctx, spec.bytes, MemoryKind::DeviceLocal)?)
            } else {
                None
            });
        }
        let mem_of = |t: TensorId| -> Result<&Buffer> {
            mems[b.tensor_mem[t.0].0]
                .as_ref()
                .ok_or_else(|| internal(format!("tensor {} has no memory", t.0)))
        };

        // Host-shared scalars (SymInts and runtime-settable scalars), one 4-byte slot each.
        let state = state::state_tensors(&b);
        let scalar_buf = Buffer::new(
            &ctx,
            ((b.scalar_slots.len() + b.scalar_f32_slots.len()) as u64 * 4).max(16),
            MemoryKind::HostShared,
        )?;
        // Shaders read a device-local mirror, refreshed by a copy at the start of every
        // execute: host-shared memory may live in system memory, where per-invocation reads
        // (adamw_step reads seven scalars per element) would cross the bus.
        let scalar_dev = Buffer::new(&ctx, scalar_buf.size(), MemoryKind::DeviceLocal)?;
        let faults = Buffer::new(&ctx, 16, MemoryKind::HostShared)?;
        faults.write(0, &[0u8; 16])?;

        // Descriptor sets, one per node and kernel variant.
        let mut alternatives = std::mem::take(&mut b.alternatives);
        if alternatives.len() != b.nodes.len() || b.pipelines.len() != b.nodes.len() {
            return Err(internal(format!(
                "{} nodes, {} pipelines, {} kernel-alternative slots",
                b.nodes.len(),
                b.pipelines.len(),
                alternatives.len()
            )));
        }
        let total_sets: usize = alternatives
            .iter()
            .map(|a| a.as_ref().map(|a| a.variants.len()).unwrap_or(1))
            .sum();
        let total_bindings: usize = b
            .nodes
            .iter()
            .zip(&alternatives)
            .map(|(n, a)| match a {
                Some(a) => a.variants.iter().map(|v| v.0.bindings.len()).sum(),
                None => n.bindings.len(),
            })
            .sum();
        // Only graphs with a kernel that can record a fault read the record after executes.
        let uses_faults = b.nodes.iter().zip(&alternatives).any(|(n, a)| {
            let has = |bs: &[Binding]| bs.contains(&Binding::Faults);
            match a {
                Some(a) => a.variants.iter().any(|v| has(&v.0.bindings)),
                None => has(&n.bindings),
            }
        });
        let mut pool = DescriptorPool::new(&ctx, total_sets as u32, total_bindings as u32)?;
        let bufs_of = |bindings: &[Binding]| -> Result<Vec<&Buffer>> {
            bindings
                .iter()
                .map(|bd| match bd {
                    Binding::Tensor(t) => mem_of(*t),
                    Binding::Scalars => Ok(&scalar_dev),
                    Binding::Faults => Ok(&faults),
                })
                .collect()
        };
        let mut kernels = Vec::with_capacity(b.nodes.len());
        for ((n, p), alt) in b
            .nodes
            .iter()
            .zip(&b.pipelines)
            .zip(alternatives.iter_mut())
        {
            match alt.take() {
                None => {
                    let set = pool.allocate(p, &bufs_of(&n.bindings)?)?;
                    let v = NodeVariant {
                        shader: n.shader,
                        local: n.local,
                        spec: n.spec.clone(),
                        bindings: n.bindings.clone(),
                    };
                    kernels.push(NodeKernels {
                        variants: vec![(p.clone(), set, v)],
                        selected: None,
                    });
                }
                Some(a) => {
                    let mut variants = Vec::with_capacity(a.variants.len());
                    for (d, local, pipe) in a.variants {
                        let set = pool.allocate(&pipe, &bufs_of(&d.bindings)?)?;
                        let v = NodeVariant {
                            shader: d.shader,
                            local,
                            spec: d.spec,
                            bindings: d.bindings,
                        };
                        variants.push((pipe, set, v));
                    }
                    kernels.push(NodeKernels {
                        variants,
                        selected: Some(a.selected),
                    });
                }
            }
        }

        // Staging buffers sized for the serialized maxima, in the GPU dtype.
        let mut in_staging = Vec::new();
        for s in &inputs {
            in_staging.push(match s {
                InputSlot::Tensor { tensor, .. } => Some(Buffer::new(
                    &ctx,
                    tensor_bytes(&b.shapes, *tensor, true),
                    MemoryKind::Upload,
                )?),
                _ => None,
            });
        }
        let mut out_staging = Vec::new();
        for s in &outputs {
            out_staging.push(match s {
                OutputSlot::Tensor { tensor, .. } => Some(Buffer::new(
                    &ctx,
                    tensor_bytes(&b.shapes, *tensor, true),
                    MemoryKind::Readback,
                )?),
                _ => None,
            });
        }

        // Prepack: upload every packed constant once. CPU-packed bytes are copied into
        // place; GPU transforms read their raw bytes straight from the upload buffer (bound
        // as a storage buffer) and write the packed tensor, so no raw copy stays on the
        // device. Batches bound the staging memory of large models.
        let fence = Fence::new(&ctx)?;
        let gpu_jobs = b.packs.iter().filter(|p| p.gpu.is_some()).count() as u32;
        let mut pack_pool = if gpu_jobs > 0 {
            Some(DescriptorPool::new(&ctx, gpu_jobs, 2 * gpu_jobs)?)
        } else {
            None
        };
        let mut next = 0;
        while next < b.packs.len() {
            let mut cmd = CommandBuffer::new(&ctx)?;
            let mut temps = Vec::new();
            let mut staged = 0u64;
            let mut any_gpu = false;
            cmd.begin()?;
            while next < b.packs.len() {
                let p = &b.packs[next];
                let len = p.bytes.len() as u64;
                if staged > 0 && staged + len > PREPACK_BATCH_BYTES {
                    break;
                }
                next += 1;
                if p.bytes.is_empty() {
                    continue;
                }
                let dst = mem_of(p.tensor)?;
                let st = Buffer::new(&ctx, len, MemoryKind::Upload)?;
                st.write(0, &p.bytes)?;
                match &p.gpu {
                    None => cmd.copy(&st, 0, dst, 0, len)?,
                    Some(job) => {
                        let pool = pack_pool
                            .as_mut()
                            .ok_or_else(|| internal("prepack descriptor pool missing"))?;
                        let set = pool.allocate(&job.pipeline, &[dst, &st])?;
                        cmd.dispatch(&job.pipeline, set, &job.push, job.groups)?;
                        any_gpu = true;
                    }
                }
                staged += len;
                temps.push(st);
            }
            cmd.barrier(Access::Transfer, Access::All)?;
            if any_gpu {
                cmd.barrier(Access::Compute, Access::All)?;
            }
            cmd.end()?;
            cmd.submit(&fence)?;
            fence.wait_and_reset(FENCE_TIMEOUT, "prepack upload")?;
            // The command buffer references the staging buffers: free it first.
            drop(cmd);
            drop(temps);
        }
        drop(pack_pool);
        if !b.zeroed.is_empty() {
            let mut cmd = CommandBuffer::new(&ctx)?;
            cmd.begin()?;
            for &t in &b.zeroed {
                cmd.zero(mem_of(t)?)?;
            }
            cmd.barrier(Access::Transfer, Access::All)?;
            cmd.end()?;
            cmd.submit(&fence)?;
            fence.wait_and_reset(FENCE_TIMEOUT, "zeroing state tensors")?;
        }
        let prepacked = b
            .packs
            .iter()
            .map(|p| {
                let s = &b.shapes.tensors[p.tensor.0];
                (
                    p.tensor,
                    PrepackedInfo {
                        label: p.label.clone(),
                        constant_id: p.constant_id,
                        layout: p.layout.clone(),
                        dtype: s.dtype,
                        dims: s.max_dims.clone(),
                        bytes: (s.max_numel() * s.dtype.size_bytes()) as u64,
                        on_gpu: p.gpu.is_some(),
                    },
                )
            })
            .collect();

        let mut g = ComputeGraph {
            be: b.be.clone(),
            shapes: b.shapes,
            tensor_mem: b.tensor_mem,
            mems,
            nodes: b.nodes,
            host_steps: b.host_steps,
            kernels,
            _pool: pool,
            prepacked,
            inputs,
            outputs,
            in_staging,
            out_staging,
            scalar_slots: b.scalar_slots,
            scalar_f32_slots: b.scalar_f32_slots,
            state,
            scalar_buf,
            scalar_dev,
            faults,
            uses_faults,
            barrier_every_node: std::env::var("ETVK_BARRIERS").is_ok_and(|v| v == "all"),
            no_barriers: std::env::var("ETVK_BARRIERS").is_ok_and(|v| v == "none"),
            barriers: (0, 0),
            plan_cache: None,
            profile_whole: std::env::var("ETVK_PROFILE_WHOLE").is_ok_and(|v| v == "1"),
            host_timing: std::env::var("ETVK_HOST_TIMING")
                .is_ok_and(|v| v == "1")
                .then(HostTiming::default),
            cmd: Some(CommandBuffer::new(&ctx)?),
            fence,
            queries: None,
            needs_record: true,
            // A resize deferred at build (placeholder SymInt inputs) runs at the first execute.
            resize_dirty: b.deferred_resize,
            resize_deps: Default::default(),
            resize_mode: b.be.resize_mode,
            resize_steps: (0, 0),
            in_flight: false,
            dynamic: b.dynamic,
            profile: Vec::new(),
            launched: Vec::new(),
            scratch: Vec::new(),
        };
        // Timestamps only when profiling was asked for (RuntimeOptions::profile): they cost
        // ~0.1 ms per execute of a small graph on an H200.
        let profile = g.be.profile;
        g.set_profiling(profile)?;
        g.write_scalars()?;
        Ok(g)
    }

    pub(crate) fn num_inputs(&self) -> usize {
        self.inputs.len()
    }
    pub(crate) fn num_outputs(&self) -> usize {
        self.outputs.len()
    }
    pub(crate) fn profile(&self) -> &[crate::api::NodeTime] {
        &self.profile
    }

    pub(crate) fn barriers(&self) -> (usize, usize) {
        self.barriers
    }

    pub(crate) fn resize_steps(&self) -> (usize, usize) {
        self.resize_steps
    }

    pub(crate) fn set_profile_whole(&mut self, on: bool) {
        if on != self.profile_whole {
            self.profile_whole = on;
            self.profile.clear();
            self.needs_record = true;
        }
    }

    /// Record (or stop recording) GPU timestamps around every dispatch; the next execute
    /// re-records its command buffer. A no-op on queues without timestamps.
    pub(crate) fn set_profiling(&mut self, on: bool) -> Result<()> {
        let want = on && self.be.ctx.caps().timestamps && !self.nodes.is_empty();
        if want == self.queries.is_some() {
            return Ok(());
        }
        if self.in_flight {
            return Err(internal("profiling switched while an execute is in flight"));
        }
        self.queries = if want {
            // Per node: before and after its dispatch; then one after the last barrier.
            Some(QueryPool::new(
                &self.be.ctx,
                2 * self.nodes.len() as u32 + 1,
            )?)
        } else {
            None
        };
        self.profile.clear();
        self.needs_record = true;
        Ok(())
    }

    fn mem(&self, t: TensorId) -> Result<&Buffer> {
        self.mems[self.tensor_mem[t.0].0]
            .as_ref()
            .ok_or_else(|| internal(format!("tensor {} has no memory", t.0)))
    }

    fn write_scalars(&mut self) -> Result<()> {
        let total = self.scalar_slots.len() + self.scalar_f32_slots.len();
        if total == 0 {
            return Ok(());
        }
        let mut bytes = vec![0u8; total * 4];
        for (v, slot) in &self.scalar_slots {
            let x = self.shapes.scalar(*v)?;
            let word = if x.fract() == 0.0 && x.abs() < 2_147_483_648.0 {
                (x as i32).to_le_bytes()
            } else {
                (x as f32).to_le_bytes()
            };
            bytes[*slot as usize * 4..*slot as usize * 4 + 4].copy_from_slice(&word);
        }
        for (v, slot) in &self.scalar_f32_slots {
            let word = (self.shapes.scalar(*v)? as f32).to_le_bytes();
            bytes[*slot as usize * 4..*slot as usize * 4 + 4].copy_from_slice(&word);
        }
        self.scalar_buf.write(0, &bytes)?;
        Ok(())
    }

    /// Set a runtime scalar (SymInt / Int / Double value made GPU-visible) between executes.
    pub(crate) fn set_scalar(&mut self, value: usize, x: f64) -> Result<()> {
        match self.shapes.scalars.get_mut(&value) {
            Some(s) => {
                *s = x;
            }
            None => {
                return Err(invalid_arg(format!(
                    "value {value} is not a runtime scalar of this graph"
                )))
            }
        }
        self.resize(&[ShapeKey::Scalar(value)])?;
        self.write_scalars()
    }

    fn groups(&self, n: &DispatchNode) -> Result<[u32; 3]> {
        workgroups(n.launch.global, n.local, self.shapes.max_groups).map_err(|e| {
            crate::api::Error::new(
                e.kind,
                format!("op {} (node {}): {}", n.op, n.node_id, e.message),
            )
        })
    }

    /// The prepacked constants of this graph (one entry per distinct `(constant, layout)`).
    pub(crate) fn prepacked(&self) -> Vec<PrepackedInfo> {
        self.prepacked.iter().map(|(_, i)| i.clone()).collect()
    }

    /// Read prepacked constant `index` back from the GPU (tests compare packers).
    pub(crate) fn read_prepacked(&self, index: usize) -> Result<Vec<u8>> {
        let (t, info) = self.prepacked.get(index).ok_or_else(|| {
            invalid_arg(format!(
                "prepacked constant {index} out of range ({} in this graph)",
                self.prepacked.len()
            ))
        })?;
        let n = info.bytes;
        let mut out = vec![0u8; n as usize];
        if n == 0 {
            return Ok(out);
        }
        let ctx = &self.be.ctx;
        let rb = Buffer::new(ctx, n, MemoryKind::Readback)?;
        let fence = Fence::new(ctx)?;
        let mut cmd = CommandBuffer::new(ctx)?;
        cmd.begin()?;
        cmd.barrier(Access::All, Access::Transfer)?;
        cmd.copy(self.mem(*t)?, 0, &rb, 0, n)?;
        cmd.barrier(Access::Transfer, Access::Host)?;
        cmd.end()?;
        cmd.submit(&fence)?;
        fence.wait_and_reset(FENCE_TIMEOUT, "prepacked readback")?;
        rb.read(0, &mut out)?;
        Ok(out)
    }

    fn record(&mut self) -> Result<()> {
        let mut groups = Vec::with_capacity(self.nodes.len());
        for n in &self.nodes {
            groups.push(self.groups(n)?);
        }
        let mut cmd = self
            .cmd
            .take()
            .ok_or_else(|| internal("command buffer missing"))?;
        let key: Vec<usize> = groups
            .iter()
            .zip(&self.kernels)
            .map(|(g, k)| {
                if g.iter().all(|&c| c > 0) {
                    k.current()
                } else {
                    usize::MAX
                }
            })
            .collect();
        // Only recordings that plan their barriers need the plan (made again only when the
        // launched nodes or the kernel variants changed).
        let (_, every_node) = self.record_mode();
        let plan = if every_node || self.no_barriers {
            None
        } else {
            Some(match self.plan_cache.take() {
                Some((k, plan)) if k == key => plan,
                _ => barriers::dispatch_order(&self.accesses(&groups)),
            })
        };
        let r = self.record_into(&mut cmd, &groups, plan.as_ref());
        if let Some(plan) = plan {
            self.plan_cache = Some((key, plan));
        }
        self.cmd = Some(cmd);
        self.barriers = r?;
        self.launched = groups.iter().map(|g| g.iter().all(|&c| c > 0)).collect();
        self.needs_record = false;
        Ok(())
    }

    /// How the execute is recorded: (timestamps around the whole execute only, a barrier
    /// after every dispatch). Profiles keep node order and a barrier after every dispatch, so that each node's time
    /// is its own, unless they time whole executes (`profile_whole`).
    fn record_mode(&self) -> (bool, bool) {
        let whole = self.queries.is_some() && self.profile_whole;
        let node_stamps = self.queries.is_some() && !whole;
        (whole, node_stamps || self.barrier_every_node)
    }

    /// Each node's bindings as barrier-plan accesses (None where it launches nothing).
    fn accesses(&self, groups: &[[u32; 3]]) -> Vec<Option<Vec<barriers::Access>>> {
        self.nodes
            .iter()
            .zip(groups)
            .map(|(n, g)| {
                let written = n.shader.info().written_bindings;
                g.iter().all(|&c| c > 0).then(|| {
                    n.bindings
                        .iter()
                        .enumerate()
                        .map(|(b, bd)| {
                            let region = match bd {
                                Binding::Tensor(t) => barriers::Region::Mem(self.tensor_mem[t.0].0),
                                Binding::Scalars => barriers::Region::Scalars,
                                Binding::Faults => barriers::Region::Faults,
                            };
                            (region, b >= 32 || written & (1 << b) != 0)
                        })
                        .collect()
                })
            })
            .collect()
    }

    /// Records the execute; returns (barriers between dispatches, dispatches).
    fn record_into(
        &self,
        cmd: &mut CommandBuffer,
        groups: &[[u32; 3]],
        plan: Option<&barriers::DispatchPlan>,
    ) -> Result<(usize, usize)> {
        cmd.begin()?;
        cmd.barrier(Access::All, Access::Transfer)?;
        if !self.scalar_slots.is_empty() || !self.scalar_f32_slots.is_empty() {
            // Host writes to scalar_buf before the submit are visible to this copy; the
            // Transfer -> Compute barrier below orders it before every dispatch.
            cmd.copy(
                &self.scalar_buf,
                0,
                &self.scalar_dev,
                0,
                self.scalar_buf.size(),
            )?;
        }
        if let Some(q) = &self.queries {
            cmd.reset_queries(q, 0, q.count())?;
        }
        for (slot, st) in self.inputs.iter().zip(&self.in_staging) {
            if let (InputSlot::Tensor { tensor, .. }, Some(st)) = (slot, st) {
                cmd.copy(
                    st,
                    0,
                    self.mem(*tensor)?,
                    0,
                    tensor_bytes(&self.shapes, *tensor, false),
                )?;
            }
        }
        cmd.barrier(Access::Transfer, Access::Compute)?;
        let launched: Vec<bool> = groups.iter().map(|g| g.iter().all(|&c| c > 0)).collect();
        let dispatches = launched.iter().filter(|&&l| l).count();
        // Without a plan: node order (`ETVK_BARRIERS=none`: launched nodes only, no barrier);
        // with one, dependent dispatches only are kept apart (exec/barriers.rs).
        let (whole, every_node) = self.record_mode();
        let node_stamps = if whole { None } else { self.queries.as_ref() };
        let (order, barrier_before): (Vec<usize>, &[bool]) = match plan {
            Some(p) => (p.0.clone(), &p.1),
            None if every_node => ((0..self.nodes.len()).collect(), &[]),
            None => (
                (0..self.nodes.len()).filter(|&i| launched[i]).collect(),
                &[],
            ),
        };
        let between = if every_node {
            dispatches.saturating_sub(1)
        } else {
            barrier_before.iter().filter(|&&b| b).count()
        };
        if let (true, Some(q)) = (whole, &self.queries) {
            cmd.timestamp(q, 0)?;
        }
        for (pos, &i) in order.iter().enumerate() {
            let n = &self.nodes[i];
            if let Some(q) = node_stamps {
                cmd.timestamp(q, 2 * i as u32)?;
            }
            let k = &self.kernels[i];
            let (pipeline, set, _) = k
                .variants
                .get(k.current())
                .ok_or_else(|| internal(format!("op {}: kernel variant out of range", n.op)))?;
            if barrier_before.get(pos).copied().unwrap_or(false) {
                cmd.barrier(Access::Compute, Access::Compute)?;
            }
            // A launch of no workgroups (a kernel idle at the current shapes) records
            // nothing: neither the dispatch nor a barrier, which costs ~1 us on a GPU.
            if launched[i] {
                cmd.dispatch(pipeline, *set, &n.launch.push, groups[i])?;
            }
            // Between the dispatch and its barrier: the kernel's time without the barrier's.
            if let Some(q) = node_stamps {
                cmd.timestamp(q, 2 * i as u32 + 1)?;
            }
            if launched[i] && every_node {
                cmd.barrier(Access::Compute, Access::Compute)?;
            }
        }
        if let Some(q) = &self.queries {
            cmd.timestamp(q, 2 * self.nodes.len() as u32)?;
        }
        cmd.barrier(Access::Compute, Access::Transfer)?;
        for (slot, st) in self.outputs.iter().zip(&self.out_staging) {
            if let (OutputSlot::Tensor { tensor, .. }, Some(st)) = (slot, st) {
                cmd.copy(
                    self.mem(*tensor)?,
                    0,
                    st,
                    0,
                    tensor_bytes(&self.shapes, *tensor, false),
                )?;
            }
        }
        // The output copies, and the kernels' writes to the fault record when any binds it.
        let before_host = if self.uses_faults {
            Access::All
        } else {
            Access::Transfer
        };
        cmd.barrier(before_host, Access::Host)?;
        cmd.end()?;
        Ok((between, dispatches))
    }

    /// Copy the inputs in, run the resize pass after a change (`exec/resize.rs`), re-record
    /// when a launch or an input / output size changed, submit, wait, copy the outputs out.
    pub(crate) fn execute(&mut self, args: &mut [DelegateArg]) -> Result<()> {
        self.be.ctx.ensure_alive()?;
        if self.in_flight {
            // A previous execute timed out: wait for it before touching shared buffers.
            self.fence
                .wait_and_reset(FENCE_TIMEOUT, "previous execute")?;
            self.in_flight = false;
        }
        let (ni, no) = (self.inputs.len(), self.outputs.len());
        if args.len() != ni + no {
            return Err(invalid_arg(format!(
                "execute: {} args given, the delegate takes {ni} inputs + {no} outputs",
                args.len()
            )));
        }
        let mut clock = std::time::Instant::now();
        let mut lap = |slot: usize, t: &mut Option<HostTiming>| {
            if let Some(t) = t {
                let now = std::time::Instant::now();
                t.us[slot] += now.duration_since(clock).as_secs_f64() * 1e6;
                clock = now;
            }
        };
        let mut changed: Vec<ShapeKey> = Vec::new();
        let mut scalars_changed = false;
        for i in 0..ni {
            match (&self.inputs[i], &args[i]) {
                (InputSlot::Tensor { tensor, .. }, DelegateArg::Tensor(ht)) => {
                    let t = *tensor;
                    let cur = self.shapes.dims(t).to_vec();
                    if ht.sizes != cur {
                        let max = self.shapes.max_dims(t).to_vec();
                        if !self.dynamic && ht.sizes != max {
                            return Err(invalid_arg(format!(
                                "input {i}: sizes {:?} differ from the program's {max:?} and the program was not exported with dynamic shapes",
                                ht.sizes
                            )));
                        }
                        // As ExecuTorch's resize of a bound-dynamic tensor: the rank is
                        // fixed and the elements must fit the allocation, which the upper
                        // bound sized; a single dim may pass its bound (ExecuTorch's own
                        // delegate tests feed such inputs). Every node's resize then checks
                        // the shapes it needs and that its outputs fit theirs.
                        let fits = crate::graph::checked_numel(&ht.sizes)
                            .is_some_and(|n| n <= max.iter().product::<usize>());
                        if ht.sizes.len() != max.len() || !fits {
                            return Err(invalid_arg(format!(
                                "input {i}: sizes {:?} do not fit the exported upper bound {max:?} (same rank, at most as many elements)",
                                ht.sizes
                            )));
                        }
                        self.shapes.set_dims(t, ht.sizes.clone())?;
                        changed.push(ShapeKey::Dims(t.0));
                    }
                    let numel: usize = ht.sizes.iter().product();
                    if ht.data.len() != numel * ht.dtype.size_bytes() {
                        return Err(invalid_arg(format!(
                            "input {i}: {} data bytes for {:?} {:?} ({} expected)",
                            ht.data.len(),
                            ht.dtype,
                            ht.sizes,
                            numel * ht.dtype.size_bytes()
                        )));
                    }
                    let gpu = self.shapes.dtype(t);
                    host_to_gpu(
                        &ht.data,
                        ht.dtype,
                        gpu,
                        &mut self.scratch,
                        &format!("input {i}"),
                    )?;
                    if let Some(st) = &self.in_staging[i] {
                        st.write(0, &self.scratch)?;
                    }
                    // Data-dependent host steps (select_as_symint) read these values: a
                    // change re-runs the resize pass like a size change would.
                    if self.shapes.host_values.contains_key(&t.0) {
                        let vals = host_ints(ht, &format!("input {i}"))?;
                        if self.shapes.host_values.get(&t.0) != Some(&vals) {
                            self.shapes.host_values.insert(t.0, vals);
                            changed.push(ShapeKey::HostValues(t.0));
                        }
                    }
                }
                (InputSlot::Tensor { .. }, other) => {
                    return Err(invalid_arg(format!(
                        "input {i}: expected a tensor, got {other:?}"
                    )));
                }
                (InputSlot::SymInt(v), arg) => {
                    let x = match arg {
                        DelegateArg::Int(x) => *x,
                        DelegateArg::Tensor(ht) if checked_numel(&ht.sizes) == Some(1) => {
                            match ht.dtype {
                                HostDType::Long => i64::from_le_bytes(
                                    ht.data
                                        .get(..8)
                                        .and_then(|b| b.try_into().ok())
                                        .ok_or_else(|| {
                                            invalid_arg(format!("input {i}: short int64 scalar"))
                                        })?,
                                ),
                                HostDType::Int => i32::from_le_bytes(
                                    ht.data
                                        .get(..4)
                                        .and_then(|b| b.try_into().ok())
                                        .ok_or_else(|| {
                                            invalid_arg(format!("input {i}: short int32 scalar"))
                                        })?,
                                ) as i64,
                                d => {
                                    return Err(invalid_arg(format!(
                                        "input {i}: SymInt input given a {d:?} tensor"
                                    )))
                                }
                            }
                        }
                        other => {
                            return Err(invalid_arg(format!(
                                "input {i}: SymInt input given {other:?}"
                            )))
                        }
                    };
                    let v = *v;
                    if self.shapes.scalar(v)? != x as f64 {
                        self.shapes.scalars.insert(v, x as f64);
                        changed.push(ShapeKey::Scalar(v));
                        scalars_changed = true;
                    }
                }
                (InputSlot::Ignored, _) => {}
            }
        }
        lap(0, &mut self.host_timing);
        self.resize_steps = (0, self.nodes.len() + self.host_steps.len());
        if !changed.is_empty() || self.resize_dirty {
            // The staging copies are recorded with the inputs' and outputs' current byte
            // counts; the resize pass marks the record stale where a launch changed.
            let io_bytes = |g: &ComputeGraph| -> Vec<u64> {
                let slots = g.inputs.iter().filter_map(|s| match s {
                    InputSlot::Tensor { tensor } => Some(*tensor),
                    _ => None,
                });
                let outs = g.outputs.iter().filter_map(|s| match s {
                    OutputSlot::Tensor { tensor, .. } => Some(*tensor),
                    _ => None,
                });
                slots
                    .chain(outs)
                    .map(|t| tensor_bytes(&g.shapes, t, false))
                    .collect()
            };
            let before = io_bytes(self);
            self.resize(&changed)?;
            if io_bytes(self) != before {
                self.needs_record = true;
            }
        }
        // Host steps (sym_size.int) may have changed SymInts during the resize, so the GPU
        // copy of the scalars is refreshed whenever one ran.
        if scalars_changed || (!changed.is_empty() && !self.host_steps.is_empty()) {
            self.write_scalars()?;
        }
        lap(1, &mut self.host_timing);
        if self.needs_record {
            self.record()?;
            if let Some(t) = &mut self.host_timing {
                t.records += 1;
            }
        }
        lap(2, &mut self.host_timing);
        self.cmd
            .as_ref()
            .ok_or_else(|| internal("command buffer missing"))?
            .submit(&self.fence)?;
        self.in_flight = true;
        self.fence.wait_and_reset(FENCE_TIMEOUT, "execute")?;
        self.in_flight = false;
        lap(3, &mut self.host_timing);
        self.read_profile()?;
        self.check_faults()?;
        for j in 0..no {
            let arg = &mut args[ni + j];
            match &self.outputs[j] {
                OutputSlot::Tensor {
                    tensor,
                    staging_dtype,
                } => {
                    let t = *tensor;
                    let gpu = self.shapes.dtype(t);
                    let nbytes = tensor_bytes(&self.shapes, t, false) as usize;
                    let mut raw = vec![0u8; nbytes];
                    if let Some(st) = &self.out_staging[j] {
                        st.read(0, &mut raw)?;
                    }
                    let host_dtype = match arg {
                        DelegateArg::Tensor(ht) => ht.dtype,
                        _ => host_of(*staging_dtype).ok_or_else(|| internal("no host dtype"))?,
                    };
                    let mut data = Vec::new();
                    gpu_to_host(&raw, gpu, host_dtype, &mut data, &format!("output {j}"))?;
                    *arg = DelegateArg::Tensor(HostTensor {
                        dtype: host_dtype,
                        sizes: self.shapes.dims(t).to_vec(),
                        data,
                    });
                }
                OutputSlot::SymInt(v) => *arg = DelegateArg::Int(self.shapes.scalar(*v)? as i64),
                OutputSlot::Int(x) => *arg = DelegateArg::Int(*x),
                OutputSlot::Ignored => {}
            }
        }
        lap(4, &mut self.host_timing);
        if let Some(t) = &mut self.host_timing {
            t.executes += 1;
        }
        self.be.check_validation("during execute")
    }

    /// Submit the work the last execute recorded again, on the inputs it left on the GPU,
    /// without host transfers: outputs stay on the GPU ([`ComputeGraph::read_tensor`] reads
    /// them), profiles are refreshed. Benchmarks use it to keep the GPU busy between
    /// repetitions (an H200 lowers its clock when it idles through host copies).
    pub(crate) fn replay(&mut self) -> Result<()> {
        self.be.ctx.ensure_alive()?;
        if self.in_flight {
            self.fence
                .wait_and_reset(FENCE_TIMEOUT, "previous execute")?;
            self.in_flight = false;
        }
        if self.needs_record || self.resize_dirty {
            return Err(invalid_arg(
                "replay: no execute has run at the current sizes (execute first)".to_string(),
            ));
        }
        self.cmd
            .as_ref()
            .ok_or_else(|| invalid_arg("replay: no execute has run yet".to_string()))?
            .submit(&self.fence)?;
        self.in_flight = true;
        self.fence.wait_and_reset(FENCE_TIMEOUT, "replay")?;
        self.in_flight = false;
        self.read_profile()?;
        self.check_faults()?;
        self.be.check_validation("during replay")
    }

    /// Fail when a kernel recorded a fault during the last submission (the record is
    /// cleared for the next one): its outputs hold zeros where PyTorch would have raised.
    fn check_faults(&mut self) -> Result<()> {
        if !self.uses_faults {
            return Ok(());
        }
        let mut raw = [0u8; 16];
        self.faults.read(0, &mut raw)?;
        let word = |i: usize| {
            u32::from_le_bytes([raw[4 * i], raw[4 * i + 1], raw[4 * i + 2], raw[4 * i + 3]])
        };
        let tag = word(0);
        if tag == 0 {
            return Ok(());
        }
        self.faults.write(0, &[0u8; 16])?;
        let node_id = tag - 1;
        let op = self
            .nodes
            .iter()
            .find(|n| n.node_id == node_id)
            .map_or("?", |n| n.op.as_str());
        Err(invalid_arg(format!(
            "op {op} (node {node_id}): index {} is out of range for a dim of size {} (PyTorch raises here; this execute's outputs are not valid)",
            word(1) as i32,
            word(2)
        )))
    }

    fn read_profile(&mut self) -> Result<()> {
        self.profile.clear();
        let Some(q) = &self.queries else {
            return Ok(());
        };
        let period = self.be.ctx.caps().timestamp_period_ns as f64;
        if self.profile_whole {
            // Only the first and the last query were written.
            let last = 2 * self.nodes.len() as u32;
            let (t0, t1) = (q.read(0, 1)?[0], q.read(last, 1)?[0]);
            let us = t1.saturating_sub(t0) as f64 * period / 1000.0;
            self.profile.push(crate::api::NodeTime {
                op: "(whole execute)".into(),
                node_id: u32::MAX,
                us,
                dispatch_us: us,
                launched: true,
            });
            return Ok(());
        }
        let ticks = q.read(0, q.count())?;
        let us_between =
            |a: usize, b: usize| ticks[b].saturating_sub(ticks[a]) as f64 * period / 1000.0;
        for (i, n) in self.nodes.iter().enumerate() {
            // Nodes with kernel alternatives say which one ran: `op/kernel`.
            let name = if self.kernels[i].selected.is_some() {
                format!("{}/{}", n.op, n.shader.info().name)
            } else {
                n.op.clone()
            };
            self.profile.push(crate::api::NodeTime {
                op: name,
                node_id: n.node_id,
                us: us_between(2 * i, 2 * i + 2),
                dispatch_us: us_between(2 * i, 2 * i + 1),
                launched: self.launched.get(i).copied().unwrap_or(true),
            });
        }
        Ok(())
    }
}

/// Host time of executes by phase (`ETVK_HOST_TIMING=1`).
#[derive(Debug, Default)]
struct HostTiming {
    /// Microseconds: inputs, resize, record, submit and wait, outputs.
    us: [f64; 5],
    executes: usize,
    records: usize,
}

impl Drop for ComputeGraph {
    fn drop(&mut self) {
        if let Some(t) = &self.host_timing {
            let n = t.executes.max(1) as f64;
            eprintln!(
                "etvk host timing, {} executes ({} recorded), mean us: inputs {:.1}, resize {:.1}, record {:.1}, submit + wait {:.1}, outputs {:.1}",
                t.executes,
                t.records,
                t.us[0] / n,
                t.us[1] / n,
                t.us[2] / n,
                t.us[3] / n,
                t.us[4] / n
            );
        }
        if self.in_flight {
            // Resources must outlive a submission that timed out; wait (bounded) before freeing.
            let _ = self.fence.wait_and_reset(FENCE_TIMEOUT, "teardown");
        }
    }
}

/// Bytes of `t` at its maximum (`max = true`) or current sizes.
fn tensor_bytes(shapes: &Shapes, t: TensorId, max: bool) -> u64 {
    let s = &shapes.tensors[t.0];
    let n = if max { s.max_numel() } else { s.numel() };
    (n * s.dtype.size_bytes()) as u64
}

/// The elements of an integer host tensor as i64 (for data-dependent host steps).
fn host_ints(ht: &HostTensor, what: &str) -> Result<Vec<i64>> {
    let (n, f): (usize, fn(&[u8]) -> i64) = match ht.dtype {
        HostDType::Long => (8, |b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
        HostDType::Int => (4, |b| {
            i32::from_le_bytes(b.try_into().unwrap_or([0; 4])) as i64
        }),
        d => {
            return Err(invalid_arg(format!(
                "{what}: a host step reads this input's values, so it must be int32 or int64, got {d:?}"
            )))
        }
    };
    Ok(ht.data.chunks_exact(n).map(f).collect())
}
