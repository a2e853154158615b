//! Command buffers, fences, timestamp queries and submission.

use std::sync::Arc;
use std::time::Duration;

use ash::vk;

use crate::context::Context;
use crate::error::{VkError, VkResult};
use crate::memory::Buffer;
use crate::pipeline::{ComputePipeline, DescriptorSet};

/// A primary command buffer with its own pool (reset as a whole before re-recording).
/// Recording methods are thin wrappers; resources they reference must outlive execution,
/// which the owner (the graph) guarantees by holding them.
pub struct CommandBuffer {
    ctx: Arc<Context>,
    pool: vk::CommandPool,
    cb: vk::CommandBuffer,
    recording: bool,
}

impl CommandBuffer {
    /// Create a pool on the compute queue family and one primary buffer from it.
    pub fn new(ctx: &Arc<Context>) -> VkResult<CommandBuffer> {
        ctx.ensure_alive()?;
        let info = vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family);
        // SAFETY: valid create info; destroyed in Drop.
        let pool = ctx.check("vkCreateCommandPool", unsafe {
            ctx.device.create_command_pool(&info, None)
        })?;
        let ainfo = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool was just created.
        match ctx.check("vkAllocateCommandBuffers", unsafe {
            ctx.device.allocate_command_buffers(&ainfo)
        }) {
            Ok(cbs) => Ok(CommandBuffer {
                ctx: ctx.clone(),
                pool,
                cb: cbs[0],
                recording: false,
            }),
            Err(e) => {
                // SAFETY: unused pool.
                unsafe { ctx.device.destroy_command_pool(pool, None) };
                Err(e)
            }
        }
    }

    /// Reset the pool and begin recording (the buffer must not be pending: wait its fence).
    pub fn begin(&mut self) -> VkResult<()> {
        self.ctx.ensure_alive()?;
        // SAFETY: callers only re-record after the previous submission's fence signalled.
        let r = unsafe {
            self.ctx
                .device
                .reset_command_pool(self.pool, vk::CommandPoolResetFlags::empty())
        };
        self.ctx.check("vkResetCommandPool", r)?;
        let info = vk::CommandBufferBeginInfo::default();
        // SAFETY: the buffer is in the initial state after the pool reset.
        let r = unsafe { self.ctx.device.begin_command_buffer(self.cb, &info) };
        self.ctx.check("vkBeginCommandBuffer", r)?;
        self.recording = true;
        Ok(())
    }

    /// Finish recording.
    pub fn end(&mut self) -> VkResult<()> {
        self.require_recording("end")?;
        // SAFETY: the buffer is recording.
        let r = unsafe { self.ctx.device.end_command_buffer(self.cb) };
        self.recording = false;
        self.ctx.check("vkEndCommandBuffer", r)
    }

    fn require_recording(&self, what: &str) -> VkResult<()> {
        if self.recording {
            Ok(())
        } else {
            Err(VkError::Invalid(format!(
                "command buffer {what} outside begin/end"
            )))
        }
    }

    /// Bind `pipeline` and `set`, push `push` bytes, dispatch `groups` workgroups.
    pub fn dispatch(
        &mut self,
        pipeline: &ComputePipeline,
        set: DescriptorSet,
        push: &[u8],
        groups: [u32; 3],
    ) -> VkResult<()> {
        self.require_recording("dispatch")?;
        if push.len() as u32 != pipeline.push_constant_bytes() {
            return Err(VkError::Invalid(format!(
                "shader {}: {} push-constant bytes given, layout declares {}",
                pipeline.name(),
                push.len(),
                pipeline.push_constant_bytes()
            )));
        }
        let max = self.ctx.caps().max_workgroup_count;
        if groups.iter().zip(max.iter()).any(|(g, m)| g > m) {
            return Err(VkError::Invalid(format!(
                "shader {}: dispatch {groups:?} exceeds maxComputeWorkGroupCount {max:?}",
                pipeline.name()
            )));
        }
        let (p, layout) = pipeline.raw();
        let d = &self.ctx.device;
        // SAFETY: recording; pipeline, layout and set are alive (held by the graph) and
        // compatible (the set was allocated for this pipeline's layout).
        unsafe {
            d.cmd_bind_pipeline(self.cb, vk::PipelineBindPoint::COMPUTE, p);
            d.cmd_bind_descriptor_sets(
                self.cb,
                vk::PipelineBindPoint::COMPUTE,
                layout,
                0,
                &[set.0],
                &[],
            );
            if !push.is_empty() {
                d.cmd_push_constants(self.cb, layout, vk::ShaderStageFlags::COMPUTE, 0, push);
            }
            if groups.iter().all(|&g| g > 0) {
                d.cmd_dispatch(self.cb, groups[0], groups[1], groups[2]);
            }
        }
        Ok(())
    }

    /// A global memory barrier from `src` to `dst` accesses.
    pub fn barrier(&mut self, src: Access, dst: Access) -> VkResult<()> {
        self.require_recording("barrier")?;
        let (ss, sa) = src.stage_access();
        let (ds, da) = dst.stage_access();
        let mb = [vk::MemoryBarrier::default()
            .src_access_mask(sa)
            .dst_access_mask(da)];
        // SAFETY: recording; a plain global barrier.
        unsafe {
            self.ctx.device.cmd_pipeline_barrier(
                self.cb,
                ss,
                ds,
                vk::DependencyFlags::empty(),
                &mb,
                &[],
                &[],
            )
        };
        Ok(())
    }

    /// Copy `size` bytes from `src[src_offset..]` to `dst[dst_offset..]`.
    pub fn copy(
        &mut self,
        src: &Buffer,
        src_offset: u64,
        dst: &Buffer,
        dst_offset: u64,
        size: u64,
    ) -> VkResult<()> {
        self.require_recording("copy")?;
        if size == 0 {
            return Ok(());
        }
        let fits = |b: &Buffer, o: u64| o.checked_add(size).map(|e| e <= b.size()).unwrap_or(false);
        if !fits(src, src_offset) || !fits(dst, dst_offset) {
            return Err(VkError::Invalid(format!(
                "copy of {size} bytes out of range (src {} at {src_offset}, dst {} at {dst_offset})",
                src.size(),
                dst.size()
            )));
        }
        let region = [vk::BufferCopy::default()
            .src_offset(src_offset)
            .dst_offset(dst_offset)
            .size(size)];
        // SAFETY: recording; both buffers alive and the region is in range.
        unsafe {
            self.ctx
                .device
                .cmd_copy_buffer(self.cb, src.handle(), dst.handle(), &region)
        };
        Ok(())
    }

    /// Fill `dst` with zeros (whole buffer).
    pub fn zero(&mut self, dst: &Buffer) -> VkResult<()> {
        self.require_recording("zero")?;
        // SAFETY: recording; whole-size fill of a live buffer whose size is a multiple of 4.
        unsafe {
            self.ctx
                .device
                .cmd_fill_buffer(self.cb, dst.handle(), 0, vk::WHOLE_SIZE, 0)
        };
        Ok(())
    }

    /// Reset `count` queries of `pool` from `first` (must precede their writes).
    pub fn reset_queries(&mut self, pool: &QueryPool, first: u32, count: u32) -> VkResult<()> {
        self.require_recording("reset_queries")?;
        if first
            .checked_add(count)
            .map(|e| e > pool.count)
            .unwrap_or(true)
        {
            return Err(VkError::Invalid(format!(
                "query reset {first}+{count} beyond pool of {}",
                pool.count
            )));
        }
        // SAFETY: recording; range checked.
        unsafe {
            self.ctx
                .device
                .cmd_reset_query_pool(self.cb, pool.pool, first, count)
        };
        Ok(())
    }

    /// Write a timestamp after all previous compute work into query `index`.
    pub fn timestamp(&mut self, pool: &QueryPool, index: u32) -> VkResult<()> {
        self.require_recording("timestamp")?;
        if index >= pool.count {
            return Err(VkError::Invalid(format!(
                "timestamp query {index} beyond pool of {}",
                pool.count
            )));
        }
        // SAFETY: recording; index checked; the queue supports timestamps (pool creation checks).
        unsafe {
            self.ctx.device.cmd_write_timestamp(
                self.cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                pool.pool,
                index,
            )
        };
        Ok(())
    }

    /// Submit to the compute queue, signalling `fence` (which must be unsignalled).
    pub fn submit(&self, fence: &Fence) -> VkResult<()> {
        self.ctx.ensure_alive()?;
        if self.recording {
            return Err(VkError::Invalid(
                "submit of a command buffer still recording".into(),
            ));
        }
        let cbs = [self.cb];
        let submit = [vk::SubmitInfo::default().command_buffers(&cbs)];
        let queue = self
            .ctx
            .queue
            .lock()
            .map_err(|_| VkError::Invalid("queue mutex poisoned".into()))?;
        // SAFETY: the queue is externally synchronized by the mutex; the buffer is executable
        // and all resources it references are held by its owner until the fence signals.
        let r = unsafe { self.ctx.device.queue_submit(*queue, &submit, fence.fence) };
        self.ctx.check("vkQueueSubmit", r)
    }
}

impl Drop for CommandBuffer {
    fn drop(&mut self) {
        // SAFETY: owners wait for the last submission before dropping; destroying the pool
        // frees its buffer.
        unsafe { self.ctx.device.destroy_command_pool(self.pool, None) };
    }
}

/// Classes of accesses for [`CommandBuffer::barrier`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Shader reads and writes in compute.
    Compute,
    /// Transfer (copy / fill) reads and writes.
    Transfer,
    /// Host reads after the submission.
    Host,
    /// Everything (start of a reused command buffer: orders it after any earlier work).
    All,
}

impl Access {
    fn stage_access(self) -> (vk::PipelineStageFlags, vk::AccessFlags) {
        match self {
            Access::Compute => (
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE,
            ),
            Access::Transfer => (
                vk::PipelineStageFlags::TRANSFER,
                vk::AccessFlags::TRANSFER_READ | vk::AccessFlags::TRANSFER_WRITE,
            ),
            Access::Host => (
                vk::PipelineStageFlags::HOST,
                vk::AccessFlags::HOST_READ | vk::AccessFlags::HOST_WRITE,
            ),
            Access::All => (
                vk::PipelineStageFlags::ALL_COMMANDS,
                vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE,
            ),
        }
    }
}

/// A fence; waits are bounded.
pub struct Fence {
    ctx: Arc<Context>,
    fence: vk::Fence,
}

impl Fence {
    /// An unsignalled fence.
    pub fn new(ctx: &Arc<Context>) -> VkResult<Fence> {
        ctx.ensure_alive()?;
        let info = vk::FenceCreateInfo::default();
        // SAFETY: valid create info; destroyed in Drop.
        let fence = ctx.check("vkCreateFence", unsafe {
            ctx.device.create_fence(&info, None)
        })?;
        Ok(Fence {
            ctx: ctx.clone(),
            fence,
        })
    }

    /// Wait up to `timeout`, then reset the fence for the next submission.
    pub fn wait_and_reset(&self, timeout: Duration, what: &'static str) -> VkResult<()> {
        self.ctx.ensure_alive()?;
        let ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        // Short waits: poll for up to the spin budget before sleeping in the driver, whose
        // wake-up can take longer than a small graph's whole GPU time.
        let spin = self.ctx.fence_spin();
        if !spin.is_zero() {
            let start = std::time::Instant::now();
            while start.elapsed() < spin {
                // SAFETY: the fence is alive.
                if unsafe { self.ctx.device.get_fence_status(self.fence) } == Ok(true) {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        // SAFETY: the fence is alive.
        let r = unsafe { self.ctx.device.wait_for_fences(&[self.fence], true, ns) };
        match r {
            Err(vk::Result::TIMEOUT) => {
                return Err(VkError::Timeout {
                    what,
                    millis: timeout.as_millis() as u64,
                });
            }
            other => self.ctx.check("vkWaitForFences", other)?,
        }
        // SAFETY: signalled, so no pending submission uses it.
        let r = unsafe { self.ctx.device.reset_fences(&[self.fence]) };
        self.ctx.check("vkResetFences", r)
    }
}

impl Drop for Fence {
    fn drop(&mut self) {
        // SAFETY: owners do not drop a fence with a pending submission (they wait first).
        unsafe { self.ctx.device.destroy_fence(self.fence, None) };
    }
}

/// A pool of timestamp queries.
pub struct QueryPool {
    ctx: Arc<Context>,
    pool: vk::QueryPool,
    count: u32,
}

impl QueryPool {
    /// `count` timestamp queries; fails when the queue has no timestamp support.
    pub fn new(ctx: &Arc<Context>, count: u32) -> VkResult<QueryPool> {
        ctx.ensure_alive()?;
        if !ctx.caps().timestamps {
            return Err(VkError::Invalid(
                "the compute queue does not support timestamps".into(),
            ));
        }
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(count.max(1));
        // SAFETY: valid create info; destroyed in Drop.
        let pool = ctx.check("vkCreateQueryPool", unsafe {
            ctx.device.create_query_pool(&info, None)
        })?;
        Ok(QueryPool {
            ctx: ctx.clone(),
            pool,
            count: count.max(1),
        })
    }

    /// Number of queries.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Raw tick values of queries `first..first+n` (call after the submission's fence).
    pub fn read(&self, first: u32, n: u32) -> VkResult<Vec<u64>> {
        self.ctx.ensure_alive()?;
        if first.checked_add(n).map(|e| e > self.count).unwrap_or(true) {
            return Err(VkError::Invalid(format!(
                "query read {first}+{n} beyond pool of {}",
                self.count
            )));
        }
        let mut out = vec![0u64; n as usize];
        // SAFETY: range checked; the writing submission completed (fence waited by caller).
        let r = unsafe {
            self.ctx.device.get_query_pool_results(
                self.pool,
                first,
                &mut out,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        };
        self.ctx.check("vkGetQueryPoolResults", r)?;
        Ok(out)
    }
}

impl Drop for QueryPool {
    fn drop(&mut self) {
        // SAFETY: no pending submission uses the pool when its owner drops it.
        unsafe { self.ctx.device.destroy_query_pool(self.pool, None) };
    }
}
