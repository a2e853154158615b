//! Typed format errors. (FORMAT agent: extend freely; keep `FormatError` the public type.)

/// A format error naming what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// Placeholder until the parsers land.
    #[error("{0}")]
    Other(String),
}
