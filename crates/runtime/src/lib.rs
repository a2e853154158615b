//! etvk graph runtime and backend API.
//!
//! The backend API ([`Backend`], [`Delegate`]) is the Rust face of the delegate; `ffi/`
//! wraps it for C, `etvk-host` and the CLI use it through that C ABI.

pub mod api;
pub use api::*;
