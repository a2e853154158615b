//! etvk host runtime: a small ExecuTorch-like runtime for `.pte` programs.
//!
//! [`LoadedMethod`] loads a method of a program, allocates its values, initializes each
//! `VulkanBackend` delegate through the etvk plugin ([`plugin`], opened with `libloading`
//! and called only through the C ABI of `etvk-abi`), and executes the method's
//! instructions: delegate calls go to the plugin, the few operators left outside the
//! delegate run on portable CPU [`kernels`]. [`npy`] reads and writes NumPy arrays.

pub mod dtype;
pub mod error;
pub mod kernels;
pub mod method;
pub mod npy;
pub mod plugin;
pub mod portable;
pub mod tensor;
pub mod values;

pub use dtype::DType;
pub use error::{HostError, Result};
pub use method::{
    load_program, load_ptd, DelegateExecutor, DelegateSpec, HostOptions, InstructionTime,
    LoadedMethod, MethodValue, ValueInfo, DEFAULT_MAX_INSTRUCTIONS, VULKAN_BACKEND_ID,
};
pub use plugin::{GpuOpTime, Plugin, PluginBackend, PluginDelegate};
pub use tensor::Tensor;
