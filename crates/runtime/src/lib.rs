//! etvk graph runtime and backend API.
//!
//! The backend API ([`Backend`], [`Delegate`]) is the Rust face of the delegate; `ffi/`
//! wraps it for C, `etvk-host` and the CLI use it through that C ABI.
//!
//! Internals (see `docs/architecture.md`): [`builder::GraphBuilder`] turns a VkGraph into
//! tensors, memory objects, prepacked constants and dispatch nodes by calling the op
//! builders of [`registry`] (families in [`ops`]); `exec::ComputeGraph` allocates,
//! uploads, records one command buffer and executes it, re-running resize functions when
//! input sizes or SymInts change.

pub mod api;
pub mod bench;
pub mod builder;
pub mod dtype;
pub mod graph;
pub mod ops;
pub mod prepack;
pub mod registry;

mod backend;
mod downcast;
mod error;
mod exec;
mod storage;

pub use api::*;
