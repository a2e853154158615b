//! ExecuTorch `.pte` and Vulkan delegate formats: bytes -> validated, owned IR, and back.
#![deny(unsafe_code)] // generated flatbuffers code is the only exception, allowed module by module

pub mod ir;
pub mod program_ir;
pub mod error;
pub mod program;
pub mod vkgraph;

pub use error::FormatError;
