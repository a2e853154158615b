//! Typed host errors: each names what failed and where.

use std::path::PathBuf;

/// Everything the host runtime can fail with.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The `.pte` (or a delegate blob) could not be parsed.
    #[error("{context}: {source}")]
    Format {
        /// What was being parsed.
        context: String,
        /// The parser's error.
        #[source]
        source: etvk_format::FormatError,
    },
    /// The plugin could not be found, opened, or is incompatible.
    #[error("plugin: {0}")]
    Plugin(String),
    /// A plugin call returned a non-OK status.
    #[error("{call} failed ({status}): {message}")]
    PluginCall {
        /// Which call and on what (e.g. `etvk_delegate_execute (delegate 1)`).
        call: String,
        /// The status name.
        status: String,
        /// `etvk_last_error()`.
        message: String,
    },
    /// The program is valid flatbuffers but cannot be run as written.
    #[error("invalid program: {0}")]
    InvalidProgram(String),
    /// A caller-supplied input does not match the method.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Valid, but this host does not support it (an operator, a delegate id, a dtype).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A portable CPU kernel rejected its arguments.
    #[error("kernel {op}: {message}")]
    Kernel {
        /// `name.overload`.
        op: String,
        /// What is wrong.
        message: String,
    },
    /// A `.npy` file is malformed or of an unsupported kind.
    #[error("npy{}: {message}", .path.as_ref().map(|p| format!(" {}", p.display())).unwrap_or_default())]
    Npy {
        /// The file, when known.
        path: Option<PathBuf>,
        /// What is wrong.
        message: String,
    },
    /// Host memory could not be allocated.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
}

/// Result alias for the host.
pub type Result<T> = std::result::Result<T, HostError>;
