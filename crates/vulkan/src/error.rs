//! Typed errors of the device layer.

use ash::vk;

/// An error of the Vulkan layer. Messages say what failed and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VkError {
    /// The Vulkan loader library could not be opened.
    #[error("cannot load the Vulkan loader ({0}); install it (Debian: apt-get install libvulkan1) and a driver (mesa-vulkan-drivers for lavapipe)")]
    LoaderMissing(String),
    /// Validation was requested but the Khronos layer is not installed.
    #[error("validation requested but VK_LAYER_KHRONOS_validation is not installed (Debian: apt-get install vulkan-validationlayers)")]
    ValidationLayerMissing,
    /// No usable device, or the `ETVK_DEVICE` selector matched none.
    #[error("no usable Vulkan device: {0}")]
    NoDevice(String),
    /// A Vulkan call returned an error.
    #[error("{what} failed: {result:?}")]
    Vk {
        /// The call / object being created.
        what: &'static str,
        /// The Vulkan result code.
        result: vk::Result,
    },
    /// Host or device memory ran out.
    #[error("out of memory in {what} ({result:?})")]
    OutOfMemory {
        /// The call that failed.
        what: &'static str,
        /// The Vulkan result code.
        result: vk::Result,
    },
    /// The device was lost; sticky for the lifetime of the context.
    #[error("Vulkan device lost (sticky: the context is unusable)")]
    DeviceLost,
    /// A fence wait exceeded its bound.
    #[error("{what} did not finish within {millis} ms")]
    Timeout {
        /// What was being waited for.
        what: &'static str,
        /// The bound in milliseconds.
        millis: u64,
    },
    /// A caller error in the use of this layer (bad size, range, count).
    #[error("{0}")]
    Invalid(String),
}

/// Result alias of the device layer.
pub type VkResult<T> = std::result::Result<T, VkError>;
