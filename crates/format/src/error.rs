//! Typed format errors. Every variant names the format (`ctx`: `pte`, `VH00`, `VkGraph`),
//! the field or region, and the offending value, so a rejected file can be diagnosed from
//! the message alone.

/// A format error naming what is wrong and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The input is shorter than a fixed-size structure requires.
    #[error("{ctx}: truncated: {what} needs {need} bytes, have {have}")]
    Truncated {
        /// Format being parsed.
        ctx: &'static str,
        /// Structure being read.
        what: &'static str,
        /// Bytes needed.
        need: u64,
        /// Bytes available.
        have: u64,
    },
    /// A magic number / file identifier did not match.
    #[error("{ctx}: bad magic at {at}: expected {expected:?}, found {found:?}")]
    BadMagic {
        /// Format being parsed.
        ctx: &'static str,
        /// Where the magic was read.
        at: &'static str,
        /// Expected magic.
        expected: &'static str,
        /// Bytes found (escaped).
        found: String,
    },
    /// The flatbuffers verifier rejected the buffer.
    #[error("{ctx}: flatbuffer verification failed: {detail}")]
    Verifier {
        /// Format being parsed.
        ctx: &'static str,
        /// The verifier's message (includes the path of the bad field).
        detail: String,
    },
    /// A byte region does not fit inside its container.
    #[error("{ctx}: {region} extends past end of {container} ({len} bytes)")]
    OutOfBounds {
        /// Format being parsed.
        ctx: &'static str,
        /// The region, e.g. `segment 3 [offset 1408, size 32768]`.
        region: String,
        /// The container, e.g. `file`, `constant region`.
        container: &'static str,
        /// Container length in bytes.
        len: u64,
    },
    /// An index field points outside the table it indexes.
    #[error("{ctx}: {field} = {index} out of range (len {len})")]
    IndexOutOfRange {
        /// Format being parsed.
        ctx: &'static str,
        /// The field, e.g. `chain[3].args[1]`.
        field: String,
        /// The index found.
        index: i64,
        /// Length of the indexed table.
        len: u64,
    },
    /// A union has tag NONE, an unknown tag, or a tag without its table.
    #[error("{ctx}: {field}: union tag {tag}: {detail}")]
    BadUnion {
        /// Format being parsed.
        ctx: &'static str,
        /// The union field, e.g. `values[4]`.
        field: String,
        /// The tag found.
        tag: u8,
        /// What is wrong with it.
        detail: &'static str,
    },
    /// Any other semantic violation (bad enum value, size overflow, length mismatch, ...).
    #[error("{ctx}: {field}: {detail}")]
    Invalid {
        /// Format being parsed.
        ctx: &'static str,
        /// The field or structure, e.g. `values[12] (Tensor) dims [4, 4294967295]`.
        field: String,
        /// What is wrong.
        detail: String,
    },
}

impl FormatError {
    pub(crate) fn invalid(
        ctx: &'static str,
        field: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        FormatError::Invalid {
            ctx,
            field: field.into(),
            detail: detail.into(),
        }
    }
}

/// Escape up to a few bytes for a magic-mismatch message.
pub(crate) fn escape_bytes(b: &[u8]) -> String {
    b.iter()
        .flat_map(|c| std::ascii::escape_default(*c))
        .map(char::from)
        .collect()
}

/// Largest element count accepted for one tensor (2^40): anything larger is certainly a
/// corrupt file, and rejecting it early keeps later byte arithmetic far from overflow.
pub const MAX_NUMEL: u64 = 1 << 40;
