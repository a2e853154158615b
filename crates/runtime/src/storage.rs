//! Storage decisions made once every op is built, from what each node writes and reads
//! (the shaders' written bindings, every kernel alternative counted).
//!
//! Copies that need not copy: `view_copy`, `squeeze_copy`, `unsqueeze_copy`, `clone` and
//! their kin (`ops/shape.rs`) turn into no dispatch when their output can share the input's
//! storage. The exporter plans input and output into their own memory objects and may reuse
//! the input's object for another tensor while the output is still live, so the output
//! cannot simply take the input's memory. Instead, when nothing else can tell, both move into
//! a memory object of their own (sized for the larger) and the copy's node launches nothing
//! (no dispatch, no barrier: ~2 us each on an H100 in a small model's decode). Nothing else
//! can tell when
//! - the input is an intermediate: written by at least one node, every one of them before
//!   the copy (no graph input, constant, zero-initialized or in-place-mutated tensor), and
//!   no node writes it (or any tensor already moved with it) after the copy;
//! - the copy's node is the only one that writes the output;
//! - no other tensor planned into the memory objects they leave reads data it never wrote
//!   (an alias the exporter meant through that object).
//!
//! Tensors read past their planned lifetime: a fusion that reads a tensor at a later node
//! than the exporter planned its last read (the fused gated SiLU reads its gate at the outer
//! `mul`; the 8da4w linear after it may compute the SiLU from gate and up) registers it in
//! `kept_past_plan`; such a tensor moves out of its planned memory object when that holds
//! other tensors (which the exporter may have written over it in between), into one shared
//! only with other such tensors whose spans of nodes do not overlap. Where that could break
//! an alias the plan means, the load fails rather than compute from overwritten data.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::builder::{GraphBuilder, MemSpec};
use crate::exec::InputSlot;
use crate::graph::{Binding, Global, MemId, TensorId};

/// A contiguous copy whose output may alias its input (registered by `ops/shape.rs`).
pub(crate) struct ViewCandidate {
    /// Index of the copy's dispatch node.
    pub(crate) node: usize,
    pub(crate) x: TensorId,
    pub(crate) out: TensorId,
    /// Set when the output aliases the input: the node's resize then launches nothing.
    pub(crate) aliased: Arc<AtomicBool>,
}

/// Who writes and who reads each tensor, and which hold data no node writes.
struct Accesses {
    /// Nodes that may write each tensor, in node order.
    writers: Vec<Vec<usize>>,
    /// Whether some node reads the tensor through a binding it does not write.
    read: Vec<bool>,
    /// Inputs, constants, zero-initialized tensors.
    persistent: HashSet<TensorId>,
}

impl Accesses {
    fn of(b: &GraphBuilder<'_>, inputs: &[InputSlot]) -> Accesses {
        let n_tensors = b.shapes.tensors.len();
        let mut writers: Vec<Vec<usize>> = vec![Vec::new(); n_tensors];
        let mut read: Vec<bool> = vec![false; n_tensors];
        for (i, node) in b.nodes.iter().enumerate() {
            let mut note = |shader: etvk_shaders::ShaderId, bindings: &[Binding]| {
                let written = shader.info().written_bindings;
                for (k, bd) in bindings.iter().enumerate() {
                    if let Binding::Tensor(t) = bd {
                        if k >= 32 || written & (1 << k) != 0 {
                            if writers[t.0].last() != Some(&i) {
                                writers[t.0].push(i);
                            }
                        } else {
                            read[t.0] = true;
                        }
                    }
                }
            };
            match b.alternatives.get(i).and_then(|a| a.as_ref()) {
                Some(a) => {
                    for (d, _, _) in &a.variants {
                        note(d.shader, &d.bindings);
                    }
                }
                None => note(node.shader, &node.bindings),
            }
        }
        let mut persistent: HashSet<TensorId> = b.zeroed.iter().copied().collect();
        persistent.extend(b.packs.iter().map(|p| p.tensor));
        persistent.extend(inputs.iter().filter_map(|s| match s {
            InputSlot::Tensor { tensor } => Some(*tensor),
            _ => None,
        }));
        Accesses {
            writers,
            read,
            persistent,
        }
    }

    /// Tensor `y` reads data it never wrote: it sees another tensor's through their shared
    /// memory object, an alias the plan means.
    fn reads_through_memory(&self, y: TensorId) -> bool {
        self.read[y.0] && self.writers[y.0].is_empty() && !self.persistent.contains(&y)
    }
}

impl GraphBuilder<'_> {
    /// Bytes of tensor `t` at its largest sizes.
    fn tensor_bytes(&self, t: TensorId) -> u64 {
        let s = &self.shapes.tensors[t.0];
        (s.max_numel() * s.dtype.size_bytes()) as u64
    }

    /// Each memory object's tensors.
    fn tensors_by_mem(&self) -> HashMap<MemId, Vec<TensorId>> {
        let mut by_mem: HashMap<MemId, Vec<TensorId>> = HashMap::new();
        for (t, m) in self.tensor_mem.iter().enumerate() {
            by_mem.entry(*m).or_default().push(TensorId(t));
        }
        by_mem
    }

    fn new_mem(&mut self, bytes: u64, label: String) -> MemId {
        let m = MemId(self.mems.len());
        self.mems.push(MemSpec { bytes, label });
        m
    }

    /// The storage decisions of the module doc; returns how many copies launch nothing.
    /// `ETVK_VIEW_ALIAS=0` keeps every copy (comparisons).
    pub(crate) fn plan_storage(&mut self, inputs: &[InputSlot]) -> crate::api::Result<usize> {
        if self.view_candidates.is_empty() && self.kept_past_plan.is_empty() {
            return Ok(0);
        }
        let mut acc = Accesses::of(self, inputs);
        let (count, own) = if std::env::var("ETVK_VIEW_ALIAS").is_ok_and(|v| v == "0") {
            (0, HashSet::new())
        } else {
            self.alias_views(&mut acc)
        };
        self.keep_past_plan(&acc, &own)?;
        Ok(count)
    }

    /// Moves each tensor of `kept_past_plan` whose memory object holds other tensors into
    /// one of its own (`own`: the objects `alias_views` made, a tensor and its views only).
    /// Those objects are shared among such tensors whose spans of nodes (first to last
    /// binding) do not overlap, as a layer's gate and up and the next layer's do not: the
    /// extra memory is one layer's worth, not one per layer.
    fn keep_past_plan(&mut self, acc: &Accesses, own: &HashSet<MemId>) -> crate::api::Result<()> {
        let kept = std::mem::take(&mut self.kept_past_plan);
        let mut moving: Vec<TensorId> = Vec::new();
        for t in kept {
            let m = self.tensor_mem[t.0];
            if moving.contains(&t) || own.contains(&m) || acc.persistent.contains(&t) {
                continue;
            }
            let others: Vec<TensorId> = (0..self.tensor_mem.len())
                .map(TensorId)
                .filter(|&y| y != t && self.tensor_mem[y.0] == m)
                .collect();
            if others.is_empty() {
                continue;
            }
            if acc.reads_through_memory(t) || others.iter().any(|&y| acc.reads_through_memory(y)) {
                return Err(crate::error::internal(format!(
                    "a fusion reads {} past its planned lifetime, and its memory object is \
                     also read through another tensor; load with ETVK_FUSE=0",
                    self.shapes.tensors[t.0].label
                )));
            }
            moving.push(t);
        }
        if moving.is_empty() {
            return Ok(());
        }
        // Each moving tensor's span: the first and last node that binds it (any variant).
        let moving_set: HashSet<TensorId> = moving.iter().copied().collect();
        let mut span: HashMap<TensorId, (usize, usize)> = HashMap::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let mut note = |bindings: &[Binding]| {
                for bd in bindings {
                    if let Binding::Tensor(t) = bd {
                        if moving_set.contains(t) {
                            let e = span.entry(*t).or_insert((i, i));
                            e.0 = e.0.min(i);
                            e.1 = e.1.max(i);
                        }
                    }
                }
            };
            match self.alternatives.get(i).and_then(|a| a.as_ref()) {
                Some(a) => a.variants.iter().for_each(|(d, _, _)| note(&d.bindings)),
                None => note(&node.bindings),
            }
        }
        moving.sort_by_key(|t| span.get(t).map_or(0, |s| s.0));
        // (object, the last node of its latest tensor).
        let mut pool: Vec<(MemId, usize)> = Vec::new();
        for t in moving {
            let (first, last) = span.get(&t).copied().unwrap_or((0, usize::MAX));
            let bytes = self.tensor_bytes(t);
            let m = match pool.iter_mut().find(|(_, end)| *end < first) {
                Some(slot) => {
                    slot.1 = last;
                    let spec = &mut self.mems[slot.0 .0];
                    spec.bytes = spec.bytes.max(bytes);
                    slot.0
                }
                None => {
                    let label = format!("{} (kept past its plan)", self.shapes.tensors[t.0].label);
                    let m = self.new_mem(bytes, label);
                    pool.push((m, last));
                    m
                }
            };
            self.tensor_mem[t.0] = m;
        }
        Ok(())
    }

    /// Returns how many copies launch nothing and the memory objects made for a tensor and
    /// its views.
    fn alias_views(&mut self, acc: &mut Accesses) -> (usize, HashSet<MemId>) {
        // Each memory object's tensors as planned (those moved since are skipped by their
        // current memory).
        let by_mem = self.tensors_by_mem();
        // Tensors moved so far, by their new memory: the tensors whose writes count.
        let mut moved: HashMap<MemId, Vec<TensorId>> = HashMap::new();
        let mut count = 0;
        let candidates = std::mem::take(&mut self.view_candidates);
        for c in &candidates {
            let (x, out, v) = (c.x, c.out, c.node);
            if x == out || acc.persistent.contains(&x) || acc.persistent.contains(&out) {
                continue;
            }
            if acc.writers[out.0] != [v] {
                continue;
            }
            let xm = self.tensor_mem[x.0];
            let group: Vec<TensorId> = moved.get(&xm).cloned().unwrap_or_else(|| vec![x]);
            let produced = group.iter().any(|t| !acc.writers[t.0].is_empty());
            let all_before = group
                .iter()
                .all(|t| acc.writers[t.0].iter().all(|&w| w < v));
            if !produced || !all_before {
                continue;
            }
            // No other tensor of a memory object x or out leaves reads what it did not write.
            let tensor_mem = &self.tensor_mem;
            let meant_alias = |mem: MemId, leaving: TensorId| {
                by_mem.get(&mem).is_some_and(|ts| {
                    ts.iter().any(|&y| {
                        y != leaving && tensor_mem[y.0] == mem && acc.reads_through_memory(y)
                    })
                })
            };
            if meant_alias(self.tensor_mem[out.0], out)
                || (!moved.contains_key(&xm) && meant_alias(xm, x))
            {
                continue;
            }
            if !moved.contains_key(&xm) {
                let label = format!("{} (shared with its views)", self.shapes.tensors[x.0].label);
                let m = self.new_mem(self.tensor_bytes(x), label);
                self.tensor_mem[x.0] = m;
                moved.insert(m, vec![x]);
            }
            let m = self.tensor_mem[x.0];
            let need = self.tensor_bytes(out);
            let spec = &mut self.mems[m.0];
            spec.bytes = spec.bytes.max(need);
            self.tensor_mem[out.0] = m;
            if let Some(g) = moved.get_mut(&m) {
                g.push(out);
            }
            // The copy's node no longer writes `out`; its data is x's.
            acc.writers[out.0] = acc.writers[x.0].clone();
            c.aliased.store(true, Ordering::Relaxed);
            self.nodes[v].launch.global = Global::Linear(0);
            count += 1;
        }
        (count, moved.into_keys().collect())
    }
}
