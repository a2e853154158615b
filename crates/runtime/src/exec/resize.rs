//! The resize pass: after an input's sizes, a SymInt or a watched input's values changed,
//! the resize functions of the nodes and host steps downstream of the change run again, in
//! chain order, to set their outputs' sizes and their launches.
//!
//! Incremental by default: each step's last run recorded which sizes, scalars and host values
//! it read ([`Shapes::begin_trace`]); a step runs again only when one of those changed (at
//! the graph's inputs or by an earlier step's run). Resize functions are functions of what
//! they read through [`Shapes`] and of their build, so a step none of whose reads changed
//! would compute what it did last time. A decode step changes one position: on the tiny
//! Llama exports 7-8 of 53-57 steps re-run instead of all of them (docs/performance.md,
//! session 34). A failed pass, and the first one, run every step.
//!
//! `ETVK_RESIZE=full` runs every step every time (the old behaviour, for comparisons);
//! `ETVK_RESIZE=check` runs the incremental pass and then a full one and fails the execute
//! if they disagree on any size, scalar, launch or kernel (tests).

use super::ComputeGraph;
use crate::api::{ResizeMode, Result};
use crate::error::{internal, unsupported};
use crate::graph::{Binding, Launch, ShapeKey, Shapes};

/// Per step, the keys its last run read (None: it has not run traced yet), and the keys
/// changed in the current pass.
#[derive(Default)]
pub(crate) struct ResizeDeps {
    nodes: Vec<Option<Box<[ShapeKey]>>>,
    steps: Vec<Option<Box<[ShapeKey]>>>,
    /// Changed sizes in this pass, by tensor index (cleared through `dims_set`).
    dims: Vec<bool>,
    dims_set: Vec<usize>,
    /// Changed scalars and host values in this pass (few).
    other: Vec<ShapeKey>,
    changed: Vec<ShapeKey>,
    /// Steps run by the last pass.
    ran: usize,
}

impl ResizeDeps {
    fn mark(&mut self, k: ShapeKey) {
        match k {
            ShapeKey::Dims(t) => {
                if t >= self.dims.len() {
                    self.dims.resize(t + 1, false);
                }
                if !self.dims[t] {
                    self.dims[t] = true;
                    self.dims_set.push(t);
                }
            }
            other => {
                if !self.other.contains(&other) {
                    self.other.push(other);
                }
            }
        }
    }

    fn is_changed(&self, k: ShapeKey) -> bool {
        match k {
            ShapeKey::Dims(t) => self.dims.get(t).copied().unwrap_or(false),
            other => self.other.contains(&other),
        }
    }

    /// Whether a step whose last run read `reads` must run again.
    fn stale(&self, reads: &Option<Box<[ShapeKey]>>) -> bool {
        match reads {
            None => true,
            Some(r) => r.iter().any(|&k| self.is_changed(k)),
        }
    }

    fn clear(&mut self) {
        for t in self.dims_set.drain(..) {
            self.dims[t] = false;
        }
        self.other.clear();
    }
}

/// What a full pass is compared on in `ETVK_RESIZE=check`.
#[derive(Clone)]
struct Snapshot {
    dims: Vec<Vec<usize>>,
    scalars: Vec<(usize, u64)>,
    launches: Vec<Launch>,
    kernels: Vec<usize>,
}

impl Snapshot {
    /// The first difference from `all` (the full pass), naming tensors and nodes by index
    /// with `tensor` and `node`; None when they agree.
    fn first_difference(
        &self,
        all: &Snapshot,
        tensor: impl Fn(usize) -> String,
        node: impl Fn(usize) -> String,
    ) -> Option<String> {
        if let Some(t) = (0..self.dims.len()).find(|&t| self.dims[t] != all.dims[t]) {
            return Some(format!(
                "{} sizes {:?}, full pass {:?}",
                tensor(t),
                self.dims[t],
                all.dims[t]
            ));
        }
        if self.scalars != all.scalars {
            return Some(format!(
                "scalars {:?}, full pass {:?}",
                self.scalars, all.scalars
            ));
        }
        let i = (0..self.launches.len())
            .find(|&i| self.launches[i] != all.launches[i] || self.kernels[i] != all.kernels[i])?;
        Some(format!(
            "{}: launch {:?} kernel {}, full pass {:?} kernel {}",
            node(i),
            self.launches[i],
            self.kernels[i],
            all.launches[i],
            all.kernels[i]
        ))
    }
}

impl ComputeGraph {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            dims: self.shapes.tensors.iter().map(|t| t.dims.clone()).collect(),
            scalars: self
                .shapes
                .scalars
                .iter()
                .map(|(&v, x)| (v, x.to_bits()))
                .collect(),
            launches: self.nodes.iter().map(|n| n.launch.clone()).collect(),
            kernels: self.kernels.iter().map(|k| k.current()).collect(),
        }
    }

    /// The resize pass after the changes `changed` (input sizes, scalars, host values).
    /// Every step runs when the last pass failed part-way, when none has run traced yet, or
    /// with [`ResizeMode::Full`].
    pub(super) fn resize(&mut self, changed: &[ShapeKey]) -> Result<()> {
        let full = self.resize_dirty || self.resize_mode == ResizeMode::Full;
        // Until it succeeds, the shapes and launches may be half updated: the next pass
        // then runs every step.
        self.resize_dirty = true;
        let incremental = self.propagate(changed, full);
        self.resize_steps = (
            self.resize_deps.ran,
            self.nodes.len() + self.host_steps.len(),
        );
        if incremental.is_ok() && self.resize_mode == ResizeMode::Check && !full {
            let inc = self.snapshot();
            self.propagate(&[], true)?;
            self.compare(&inc)?;
        }
        incremental?;
        self.resize_dirty = false;
        Ok(())
    }

    fn compare(&self, inc: &Snapshot) -> Result<()> {
        let all = self.snapshot();
        let tensor = |t: usize| self.shapes.tensors[t].label.clone();
        let node = |i: usize| format!("op {} (node {})", self.nodes[i].op, self.nodes[i].node_id);
        match inc.first_difference(&all, tensor, node) {
            Some(what) => Err(internal(format!(
                "incremental resize (ETVK_RESIZE=check) differs from a full pass: {what}"
            ))),
            None => Ok(()),
        }
    }

    fn propagate(&mut self, changed: &[ShapeKey], full: bool) -> Result<()> {
        let mut deps = std::mem::take(&mut self.resize_deps);
        deps.nodes.resize_with(self.nodes.len(), || None);
        deps.steps.resize_with(self.host_steps.len(), || None);
        deps.clear();
        deps.ran = 0;
        for &k in changed {
            deps.mark(k);
        }
        let result = self.propagate_with(&mut deps, full);
        deps.clear();
        self.resize_deps = deps;
        result
    }

    fn propagate_with(&mut self, deps: &mut ResizeDeps, full: bool) -> Result<()> {
        let mut next_step = 0;
        for i in 0..=self.nodes.len() {
            // Host steps placed before node i (e.g. sym_size.int feeding its resize).
            while next_step < self.host_steps.len() && self.host_steps[next_step].before_node <= i {
                let si = next_step;
                next_step += 1;
                if !full && !deps.stale(&deps.steps[si]) {
                    continue;
                }
                let st = &self.host_steps[si];
                let ((), reads) = run_traced(&mut self.shapes, deps, (&st.op, st.node_id), |s| {
                    (st.run)(s)
                })?;
                deps.steps[si] = Some(reads);
            }
            let Some(n) = self.nodes.get(i) else {
                break;
            };
            match &n.resize {
                Some(f) => {
                    if !full && !deps.stale(&deps.nodes[i]) {
                        continue;
                    }
                    let before = self.kernels[i].current();
                    let (launch, reads) =
                        run_traced(&mut self.shapes, deps, (&n.op, n.node_id), |s| f(s))?;
                    deps.nodes[i] = Some(reads);
                    if launch.push.len() != n.launch.push.len() {
                        return Err(internal(format!(
                            "op {} resize changed the push-constant size",
                            n.op
                        )));
                    }
                    if launch != n.launch {
                        self.nodes[i].launch = launch;
                        self.needs_record = true;
                    }
                    let after = self.kernels[i].current();
                    if after != before {
                        // Another kernel: the node shows its shader / local size / bindings.
                        let v = self.kernels[i]
                            .variants
                            .get(after)
                            .map(|v| v.2.clone())
                            .ok_or_else(|| internal("kernel variant out of range"))?;
                        let node = &mut self.nodes[i];
                        node.shader = v.shader;
                        node.local = v.local;
                        node.spec = v.spec;
                        node.bindings = v.bindings;
                        self.needs_record = true;
                    }
                }
                None => {
                    let resized = n.bindings.iter().any(|b| match b {
                        Binding::Tensor(t) => {
                            (full || deps.is_changed(ShapeKey::Dims(t.0))) && {
                                let s = &self.shapes.tensors[t.0];
                                s.dims != s.max_dims
                            }
                        }
                        Binding::Scalars | Binding::Faults => false,
                    });
                    if resized {
                        return Err(unsupported(format!(
                            "op {} (node {}) has no resize function, so it cannot run with inputs smaller than the exported sizes",
                            n.op, n.node_id
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Run one resize step (a node's resize function or a host step, `op` / `node_id` naming it
/// in errors) with its reads traced; on success the keys it changed are marked in `deps`.
fn run_traced<T>(
    shapes: &mut Shapes,
    deps: &mut ResizeDeps,
    (op, node_id): (&str, u32),
    step: impl FnOnce(&mut Shapes) -> Result<T>,
) -> Result<(T, Box<[ShapeKey]>)> {
    deps.ran += 1;
    shapes.begin_trace();
    let ran = step(shapes);
    let reads = shapes.end_trace(&mut deps.changed);
    let out = ran.map_err(|e| {
        crate::api::Error::new(
            e.kind,
            format!("op {op} (node {node_id}) resize: {}", e.message),
        )
    })?;
    while let Some(k) = deps.changed.pop() {
        deps.mark(k);
    }
    Ok((out, reads))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Shapes, TensorId, TensorShape};
    use etvk_format::ir::DataType;

    fn shapes() -> Shapes {
        let mut s = Shapes::default();
        for i in 0..3 {
            s.tensors.push(TensorShape {
                dtype: DataType::Float32,
                max_dims: vec![8, 4],
                dims: vec![8, 4],
                label: format!("t{i}"),
            });
        }
        s.scalars.insert(7, 1.0);
        s
    }

    #[test]
    fn a_trace_holds_what_was_read_and_what_changed() {
        let mut s = shapes();
        // Untraced reads and writes record nothing.
        let _ = s.dims(TensorId(0));
        s.set_dims(TensorId(1), vec![2, 4]).unwrap();
        s.begin_trace();
        let n = s.numel(TensorId(1)) + s.dims(TensorId(0))[0];
        let pos = s.scalar(7).unwrap();
        let _ = s.max_dims(TensorId(2));
        s.set_dims(TensorId(2), vec![n, 1]).unwrap();
        s.set_dims(TensorId(0), vec![8, 4]).unwrap(); // same sizes: no change
        s.set_scalar(7, pos).unwrap(); // same value: no change
        let mut changed = Vec::new();
        let reads = s.end_trace(&mut changed);
        assert_eq!(
            &*reads,
            &[ShapeKey::Dims(0), ShapeKey::Dims(1), ShapeKey::Scalar(7)]
        );
        assert_eq!(changed, vec![ShapeKey::Dims(2)]);
        assert_eq!(s.dims(TensorId(2)), &[16, 1]);
        // A failed set_dims changes nothing.
        s.begin_trace();
        assert!(s.set_dims(TensorId(1), vec![9, 4]).is_err());
        s.set_scalar(7, 2.0).unwrap();
        let mut changed = Vec::new();
        let _ = s.end_trace(&mut changed);
        assert_eq!(changed, vec![ShapeKey::Scalar(7)]);
    }

    #[test]
    fn the_check_names_the_first_difference() {
        use crate::graph::Global;
        let launch = |n: u64| Launch {
            push: vec![1, 2, 3, 4],
            global: Global::Linear(n),
        };
        let base = Snapshot {
            dims: vec![vec![2, 3], vec![4]],
            scalars: vec![(7, 1f64.to_bits())],
            launches: vec![launch(6), launch(4)],
            kernels: vec![0, 1],
        };
        let t = |i: usize| format!("t{i}");
        let n = |i: usize| format!("node {i}");
        assert_eq!(base.first_difference(&base.clone(), t, n), None);
        let mut d = base.clone();
        d.dims[1] = vec![3];
        let msg = base.first_difference(&d, t, n).expect("sizes differ");
        assert!(msg.starts_with("t1 sizes [4]"), "{msg}");
        let mut d = base.clone();
        d.scalars[0].1 = 2f64.to_bits();
        assert!(base
            .first_difference(&d, t, n)
            .expect("scalar")
            .starts_with("scalars"));
        let mut d = base.clone();
        d.launches[1] = launch(5);
        let msg = base.first_difference(&d, t, n).expect("launch differs");
        assert!(msg.starts_with("node 1: launch"), "{msg}");
        let mut d = base.clone();
        d.kernels[0] = 2;
        let msg = base.first_difference(&d, t, n).expect("kernel differs");
        assert!(
            msg.starts_with("node 0:") && msg.ends_with("kernel 2"),
            "{msg}"
        );
    }

    #[test]
    fn a_step_is_stale_when_something_it_read_changed() {
        let mut d = ResizeDeps::default();
        let reads: Option<Box<[ShapeKey]>> =
            Some(vec![ShapeKey::Dims(3), ShapeKey::Scalar(9)].into());
        assert!(d.stale(&None), "a step never traced must run");
        assert!(!d.stale(&reads));
        d.mark(ShapeKey::Dims(2));
        d.mark(ShapeKey::HostValues(9));
        assert!(
            !d.stale(&reads),
            "other keys (a host value of the same index) changed"
        );
        d.mark(ShapeKey::Scalar(9));
        assert!(d.stale(&reads));
        d.clear();
        assert!(!d.stale(&reads));
        d.mark(ShapeKey::Dims(3));
        assert!(d.stale(&reads));
        d.clear();
        assert!(!d.is_changed(ShapeKey::Dims(3)) && !d.is_changed(ShapeKey::Dims(2)));
    }
}
