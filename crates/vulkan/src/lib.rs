//! etvk device layer: a safe, RAII face over `ash` (loader opened at run time) and `vk-mem`.
//!
//! - [`Context`]: instance, device choice (discrete > integrated > virtual > CPU, or a
//!   selector), one compute queue, the allocator, the validation messenger, sticky device loss.
//! - [`Buffer`]: device-local or host-visible storage buffers.
//! - [`ComputePipeline`], [`DescriptorPool`]: SPIR-V pipelines with specialization and push
//!   constants over N storage-buffer bindings.
//! - [`CommandBuffer`], [`Fence`], [`QueryPool`]: recording, bounded waits, timestamps.
//!
//! Every child object holds an `Arc<Context>`, so destruction order is always safe.
//! `unsafe` is confined to this crate; each block carries a `SAFETY:` comment.

mod caps;
mod command;
mod context;
mod error;
mod memory;
mod pipeline;

pub use caps::{CoopMatShape, DeviceCaps, DeviceType};
pub use command::{Access, CommandBuffer, Fence, QueryPool};
pub use context::{list_physical_devices, Context, ContextOptions, PhysicalDeviceInfo};
pub use error::{VkError, VkResult};
pub use memory::{Buffer, MemoryKind};
pub use pipeline::{ComputePipeline, DescriptorPool, DescriptorSet};

/// Re-export of the `ash::vk` namespace for callers that need raw enums.
pub use ash::vk;
