//! GPU-resident state: reading and writing a built graph's tensors (parameters, optimizer
//! moments, KV caches, any graph tensor) by VkGraph value id between executes, e.g. to save
//! and restore adapters and optimizer state.
//!
//! Everything stays on the GPU across executes; these transfers happen only when the host
//! asks, through a temporary staging buffer and one fenced submission each.

use std::collections::BTreeMap;

use etvk_vulkan::{Access, Buffer, CommandBuffer, MemoryKind};

use super::{tensor_bytes, ComputeGraph, FENCE_TIMEOUT};
use crate::api::{HostDType, HostTensor, Result};
use crate::builder::GraphBuilder;
use crate::dtype::{gpu_to_host, host_of, host_to_gpu};
use crate::error::{internal, invalid_arg, unsupported};
use crate::graph::TensorId;

/// A value's GPU tensor and the host dtype it is exchanged as, or why it has none.
pub(crate) type StateTensor = std::result::Result<(TensorId, HostDType), String>;

/// The reachable tensors of a finished build, by value id (see
/// `GraphBuilder::state_tensors`). The host dtype is the value's staging dtype when the
/// graph declares one (what execute's inputs/outputs use), else the GPU dtype's.
pub(crate) fn state_tensors(b: &GraphBuilder<'_>) -> BTreeMap<usize, StateTensor> {
    b.state_tensors()
        .into_iter()
        .map(|(v, entry)| {
            let entry = entry.and_then(|t| {
                let dt = b.staging_dtype(v).unwrap_or(b.shapes.dtype(t));
                host_of(dt)
                    .map(|h| (t, h))
                    .ok_or_else(|| format!("value {v}: dtype {} has no host form", dt.name()))
            });
            (v, entry)
        })
        .collect()
}

impl ComputeGraph {
    /// The tensor behind value `v`, with a message naming `what` when there is none.
    fn state_tensor(&self, v: usize, what: &str) -> Result<(TensorId, HostDType)> {
        match self.state.get(&v) {
            Some(Ok(x)) => Ok(*x),
            Some(Err(why)) => Err(unsupported(format!("{what}: {why}"))),
            None => Err(invalid_arg(format!(
                "{what}: value {v} is not a tensor of this graph"
            ))),
        }
    }

    /// The device buffer of `t`, or an error saying that nothing uses the value.
    fn state_mem(&self, t: TensorId, v: usize, what: &str) -> Result<&Buffer> {
        self.mems[self.tensor_mem[t.0].0].as_ref().ok_or_else(|| {
            unsupported(format!(
                "{what}: value {v} has no GPU memory (no op and no graph input/output uses it)"
            ))
        })
    }

    /// Wait for an execute that timed out earlier, so that its buffers are not touched while
    /// the GPU may still use them.
    fn settle(&mut self) -> Result<()> {
        self.be.ctx.ensure_alive()?;
        if self.in_flight {
            self.fence
                .wait_and_reset(FENCE_TIMEOUT, "previous execute")?;
            self.in_flight = false;
        }
        Ok(())
    }

    /// Submit a one-off transfer and wait for it. On a failed wait the command buffer and
    /// the staging buffer may still be in use by the GPU, so they are leaked instead of
    /// freed (a fatal, rare path: the device is hung or lost).
    fn transfer(
        &mut self,
        cmd: CommandBuffer,
        staging: Buffer,
        what: &'static str,
    ) -> Result<Buffer> {
        cmd.submit(&self.fence)?;
        if let Err(e) = self.fence.wait_and_reset(FENCE_TIMEOUT, what) {
            std::mem::forget(cmd);
            std::mem::forget(staging);
            self.in_flight = true;
            return Err(e.into());
        }
        drop(cmd);
        Ok(staging)
    }

    /// Copy value `v`'s tensor (current sizes) to the host, in its host dtype.
    pub(crate) fn read_tensor(&mut self, v: usize) -> Result<HostTensor> {
        let what = format!("read_tensor(value {v})");
        self.settle()?;
        let (t, host) = self.state_tensor(v, &what)?;
        let nbytes = tensor_bytes(&self.shapes, t, false);
        let mut raw = vec![0u8; nbytes as usize];
        if nbytes > 0 {
            let ctx = self.be.ctx.clone();
            let src = self.state_mem(t, v, &what)?;
            let staging = Buffer::new(&ctx, nbytes, MemoryKind::Readback)?;
            let mut cmd = CommandBuffer::new(&ctx)?;
            cmd.begin()?;
            cmd.barrier(Access::All, Access::Transfer)?;
            cmd.copy(src, 0, &staging, 0, nbytes)?;
            cmd.barrier(Access::Transfer, Access::Host)?;
            cmd.end()?;
            let staging = self.transfer(cmd, staging, "read_tensor")?;
            staging.read(0, &mut raw)?;
        }
        let mut data = Vec::new();
        gpu_to_host(&raw, self.shapes.dtype(t), host, &mut data, &what)?;
        self.be.check_validation("during read_tensor")?;
        Ok(HostTensor {
            dtype: host,
            sizes: self.shapes.dims(t).to_vec(),
            data,
        })
    }

    /// Overwrite value `v`'s tensor with `ht` (sizes must equal the tensor's current sizes;
    /// the dtype must convert to the GPU dtype the way execute's inputs do).
    pub(crate) fn write_tensor(&mut self, v: usize, ht: &HostTensor) -> Result<()> {
        let what = format!("write_tensor(value {v})");
        self.settle()?;
        let (t, _) = self.state_tensor(v, &what)?;
        let cur = self.shapes.dims(t).to_vec();
        if ht.sizes != cur {
            return Err(invalid_arg(format!(
                "{what}: sizes {:?} differ from the tensor's current sizes {cur:?}",
                ht.sizes
            )));
        }
        let numel: usize = cur.iter().product();
        if ht.data.len() != numel * ht.dtype.size_bytes() {
            return Err(invalid_arg(format!(
                "{what}: {} data bytes for {:?} {:?} ({} expected)",
                ht.data.len(),
                ht.dtype,
                ht.sizes,
                numel * ht.dtype.size_bytes()
            )));
        }
        let mut bytes = Vec::new();
        host_to_gpu(&ht.data, ht.dtype, self.shapes.dtype(t), &mut bytes, &what)?;
        let nbytes = tensor_bytes(&self.shapes, t, false);
        if bytes.len() as u64 != nbytes {
            return Err(internal(format!(
                "{what}: converted {} bytes for a {nbytes}-byte tensor",
                bytes.len()
            )));
        }
        if nbytes == 0 {
            return Ok(());
        }
        let ctx = self.be.ctx.clone();
        let dst = self.state_mem(t, v, &what)?;
        let staging = Buffer::new(&ctx, nbytes, MemoryKind::Upload)?;
        staging.write(0, &bytes)?;
        let mut cmd = CommandBuffer::new(&ctx)?;
        cmd.begin()?;
        cmd.barrier(Access::All, Access::Transfer)?;
        cmd.copy(&staging, 0, dst, 0, nbytes)?;
        cmd.barrier(Access::Transfer, Access::All)?;
        cmd.end()?;
        self.transfer(cmd, staging, "write_tensor")?;
        self.be.check_validation("during write_tensor")
    }
}
