//! ExecuTorch `.pte` and Vulkan delegate formats: bytes -> validated, owned IR, and back.
//!
//! # Reading
//!
//! ```text
//! .pte bytes ──► program::parse_program ──► program_ir::Program
//!                 1. "ET12" identifier, optional "eh00" extended header (program_size,
//!                    segment_base_offset, segment_data_size), checked against the file length
//!                 2. flatbuffers verifier over the program region, explicit VerifierOptions
//!                    (depth, table count, apparent size bounded by the buffer length)
//!                 3. semantic checks: segments inside the file, named data / delegate /
//!                    operator / value indices in range, union tags known, tensor sizes and
//!                    byte lengths with checked arithmetic, constant data inside its segment
//!
//! delegate blob ──► vkgraph::parse_delegate ──► ir::VulkanDelegate
//!                 1. "VH00" header (§2.1 rules, checked arithmetic; bytes_size == 0 means
//!                    "rest of the blob")
//!                 2. vkgraph::parse_vkgraph: "VK00" identifier, verifier, then every value /
//!                    arg / input / output / constant index in range, union tags, dtypes,
//!                    dims product <= 2^40, constant length == numel * element size, schema
//!                    defaults applied (staging UNSET -> dtype, negative ids -> None)
//!                 3. inline constants inside the blob's constant region
//! ```
//!
//! Everything the rest of etvk sees has passed these checks, so downstream code may index
//! with IR values without re-checking them. Errors are [`FormatError`]s naming the format,
//! the field and the value. No `unsafe` here: the only `unsafe` is inside the generated
//! flatbuffers accessors, which run on verified buffers only.
//!
//! # Writing
//!
//! - [`writer::write_vkgraph`] / [`writer::write_delegate`]: a [`ir::VkGraph`] to `VK00`
//!   flatbuffer bytes / a complete `VH00` blob, omitting default-valued fields like the
//!   exporter. [`writer::GraphBuilder`] builds graphs value by value for tests and tools;
//!   [`writer::named_key`] is the exporter's sha256 key of a constant.
//! - [`program_writer::ProgramBuilder`] / [`program_writer::write_program`]: a `.pte` with
//!   extended header, 128-aligned segments, named data, inline or segment delegate blobs,
//!   constant and mutable tensor data, any number of execution plans and all instruction
//!   kinds. [`program_writer::single_delegate_program`] wraps one delegate blob.
//!
//! The flatbuffers bindings are generated from `schema/*.fbs` by
//! `scripts/gen-flatbuffers.sh` (checked in; `--check` detects drift).
#![deny(unsafe_code)] // generated flatbuffers code is the only exception, allowed module by module

pub mod error;
pub mod f16;
mod generated;
pub mod ir;
pub mod program;
pub mod program_ir;
pub mod program_writer;
pub mod ptd;
mod realign;
pub mod vkgraph;
pub mod writer;

pub use error::FormatError;
