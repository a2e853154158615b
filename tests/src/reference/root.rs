//! A CPU f64 reference interpreter for Vulkan delegate graphs, and whole programs run
//! on it (lib name `graph_reference`: `reference` is taken by the op-level references).
//!
//! - [`graph::RefGraph`]: one parsed VkGraph evaluated op by op in chain order, in f64,
//!   with dynamic sizes (every size follows the actual inputs and SymInt values) and
//!   persistent constant state (KV caches updated in place survive across calls). Unknown
//!   ops are refused at load, naming the op ([`ops::SUPPORTED`] lists the known ones).
//! - [`method`]: a `.pte` method through the host interpreter with every `VulkanBackend`
//!   delegate on the reference ([`method::load_reference_method`]) or on the GPU runtime
//!   in-process ([`method::load_gpu_method`]); CPU ops between delegates run on the host's
//!   portable kernels.
//! - [`sweep`]: the reference against every fixture's expected outputs, and the
//!   dynamic-length sweep (GPU against reference at every length 1..=max).
//!
//! Intermediate values are not rounded to the graph dtype (only integer tensors are kept
//! integral), so the reference is the exact math on the exact inputs and constants.

pub mod graph;
pub mod method;
pub mod ops;
pub mod quant_ops;
pub mod sweep;

pub use graph::{RefGraph, RefValue};
pub use method::{load_gpu_method, load_reference_method};

#[cfg(test)]
mod tests;
