//! Error plumbing: device-layer errors into the API's categories, and short constructors.

use crate::api::{Error, ErrorKind};
use etvk_vulkan::VkError;

impl From<VkError> for Error {
    fn from(e: VkError) -> Error {
        let kind = match &e {
            VkError::DeviceLost => ErrorKind::DeviceLost,
            VkError::OutOfMemory { .. } => ErrorKind::OutOfMemory,
            VkError::Invalid(_) => ErrorKind::Internal,
            VkError::LoaderMissing(_)
            | VkError::ValidationLayerMissing
            | VkError::NoDevice(_)
            | VkError::Vk { .. }
            | VkError::Timeout { .. } => ErrorKind::Device,
        };
        Error::new(kind, e.to_string())
    }
}

impl From<etvk_format::FormatError> for Error {
    fn from(e: etvk_format::FormatError) -> Error {
        Error::new(ErrorKind::InvalidProgram, format!("delegate blob: {e}"))
    }
}

/// `InvalidArgument` error.
pub(crate) fn invalid_arg(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidArgument, msg)
}

/// `InvalidProgram` error.
pub(crate) fn invalid_program(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::InvalidProgram, msg)
}

/// `Unsupported` error.
pub(crate) fn unsupported(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Unsupported, msg)
}

/// `Internal` error.
pub(crate) fn internal(msg: impl Into<String>) -> Error {
    Error::new(ErrorKind::Internal, msg)
}
