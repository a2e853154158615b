//! Buffers allocated through vk-mem.

use std::sync::Arc;

use ash::vk;
use vk_mem::Alloc;

use crate::context::Context;
use crate::error::{VkError, VkResult};

/// Where a buffer lives and how the host touches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryKind {
    /// Device-local storage buffer, not host visible (tensors, packed weights).
    DeviceLocal,
    /// Host-visible, mapped, written sequentially by the host (input / prepack staging).
    Upload,
    /// Host-visible, mapped, read by the host (output staging, readback).
    Readback,
    /// Host-visible storage buffer that shaders read directly (small runtime scalars,
    /// SymInts): written by the host between submissions.
    HostShared,
}

/// A storage / transfer buffer with its allocation. Holds the context alive.
pub struct Buffer {
    ctx: Arc<Context>,
    buffer: vk::Buffer,
    allocation: vk_mem::Allocation,
    size: u64,
    mapped: *mut u8,
    kind: MemoryKind,
}

// SAFETY: the raw mapped pointer is only dereferenced by bounds-checked methods; vk-mem
// allocations and Vulkan handles may be used from any thread. Host accesses never overlap
// GPU use of the same bytes because owners only touch mappings between fenced submits,
// and each buffer has one owner that serializes its host accesses.
unsafe impl Send for Buffer {}
// SAFETY: shared access only reads handles or performs reads from the mapping.
unsafe impl Sync for Buffer {}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer")
            .field("size", &self.size)
            .field("kind", &self.kind)
            .finish()
    }
}

impl Buffer {
    /// Allocate `size` bytes (rounded up to 16, never 0 so it can always be bound).
    pub fn new(ctx: &Arc<Context>, size: u64, kind: MemoryKind) -> VkResult<Buffer> {
        ctx.ensure_alive()?;
        let size = size.max(16).div_ceil(16) * 16;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST;
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let (mem_usage, flags) = match kind {
            MemoryKind::DeviceLocal => (
                vk_mem::MemoryUsage::AutoPreferDevice,
                vk_mem::AllocationCreateFlags::empty(),
            ),
            MemoryKind::Upload => (
                vk_mem::MemoryUsage::AutoPreferHost,
                vk_mem::AllocationCreateFlags::HOST_ACCESS_SEQUENTIAL_WRITE
                    | vk_mem::AllocationCreateFlags::MAPPED,
            ),
            MemoryKind::Readback => (
                vk_mem::MemoryUsage::AutoPreferHost,
                vk_mem::AllocationCreateFlags::HOST_ACCESS_RANDOM
                    | vk_mem::AllocationCreateFlags::MAPPED,
            ),
            MemoryKind::HostShared => (
                vk_mem::MemoryUsage::Auto,
                vk_mem::AllocationCreateFlags::HOST_ACCESS_RANDOM
                    | vk_mem::AllocationCreateFlags::MAPPED,
            ),
        };
        let ainfo = vk_mem::AllocationCreateInfo {
            usage: mem_usage,
            flags,
            ..Default::default()
        };
        // SAFETY: valid create infos; the allocator belongs to `ctx`, which the buffer keeps.
        let r = unsafe { ctx.allocator.create_buffer(&info, &ainfo) };
        let (buffer, allocation) = ctx.check("vmaCreateBuffer", r)?;
        let mapped = if kind == MemoryKind::DeviceLocal {
            std::ptr::null_mut()
        } else {
            ctx.allocator.get_allocation_info(&allocation).mapped_data as *mut u8
        };
        if kind != MemoryKind::DeviceLocal && mapped.is_null() {
            let mut allocation = allocation;
            // SAFETY: created just above, not in use.
            unsafe { ctx.allocator.destroy_buffer(buffer, &mut allocation) };
            return Err(VkError::Invalid(
                "host-visible buffer came back unmapped".into(),
            ));
        }
        Ok(Buffer {
            ctx: ctx.clone(),
            buffer,
            allocation,
            size,
            mapped,
            kind,
        })
    }

    /// Size in bytes (after rounding).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The memory kind.
    pub fn kind(&self) -> MemoryKind {
        self.kind
    }

    /// Raw handle (for descriptor writes and copies).
    pub fn handle(&self) -> vk::Buffer {
        self.buffer
    }

    fn check_range(&self, offset: u64, len: usize, what: &str) -> VkResult<()> {
        if self.mapped.is_null() {
            return Err(VkError::Invalid(format!(
                "{what} on a device-local buffer (not mapped)"
            )));
        }
        let end = offset.checked_add(len as u64);
        match end {
            Some(e) if e <= self.size => Ok(()),
            _ => Err(VkError::Invalid(format!(
                "{what} of {len} bytes at offset {offset} exceeds buffer size {}",
                self.size
            ))),
        }
    }

    /// Copy `data` into the mapping at `offset` and flush it.
    pub fn write(&self, offset: u64, data: &[u8]) -> VkResult<()> {
        self.check_range(offset, data.len(), "buffer write")?;
        // SAFETY: the range is inside the persistent mapping (checked above); the GPU does
        // not access the buffer concurrently (callers write only between fenced submits).
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.mapped.add(offset as usize),
                data.len(),
            )
        };
        let r = self
            .ctx
            .allocator
            .flush_allocation(&self.allocation, offset, data.len() as u64);
        self.ctx.check("vmaFlushAllocation", r)
    }

    /// Invalidate and copy `out.len()` bytes from the mapping at `offset`.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> VkResult<()> {
        self.check_range(offset, out.len(), "buffer read")?;
        let r =
            self.ctx
                .allocator
                .invalidate_allocation(&self.allocation, offset, out.len() as u64);
        self.ctx.check("vmaInvalidateAllocation", r)?;
        // SAFETY: range checked; the GPU finished writing (callers read after the fence).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.mapped.add(offset as usize),
                out.as_mut_ptr(),
                out.len(),
            )
        };
        Ok(())
    }

    /// The owning context.
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the buffer and allocation were created together by this allocator and
        // are destroyed once; owners drop GPU-visible buffers only after their last fence.
        unsafe {
            self.ctx
                .allocator
                .destroy_buffer(self.buffer, &mut self.allocation)
        };
    }
}
