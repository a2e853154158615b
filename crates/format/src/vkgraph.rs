//! Vulkan delegate blob parsing. (FORMAT agent: implement; keep the signature.)
use crate::error::FormatError;
use crate::ir::VulkanDelegate;

/// Parse and validate a Vulkan delegate blob (`VH00` header + `VK00` VkGraph + bytes).
pub fn parse_delegate(_blob: &[u8]) -> Result<VulkanDelegate, FormatError> {
    Err(FormatError::Other("parse_delegate not implemented yet".into()))
}
