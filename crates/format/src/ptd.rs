//! `.ptd` parsing: ExecuTorch's external tensor data ("program-data separation"; the
//! `FlatTensor` flatbuffer, identifier `FT01`, with an `FH01` header inserted at byte 8 and
//! the data segments after it). A program whose constants were exported to such a file
//! (the Vulkan compile option `external_constants_max_data_bytes`, or tensors saved as
//! external data) looks its named data up here by key.

use std::ops::Range;

use crate::error::{escape_bytes, FormatError};
use crate::generated::{ft, verifier_options};

const PTD: &str = ".ptd";

/// The `FH01` header's magic.
pub const PTD_HEADER_MAGIC: &[u8; 4] = b"FH01";
/// Bytes of the `FH01` header as ExecuTorch writes it (magic, length, four u64s).
const PTD_HEADER_LEN: usize = 40;

/// A parsed `.ptd` file: its bytes and, per key, the byte range of its data.
#[derive(Debug, Clone, PartialEq)]
pub struct PtdFile {
    bytes: Vec<u8>,
    named: Vec<(String, Range<usize>)>,
}

impl PtdFile {
    /// The bytes stored under `key`, if any.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.named
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, r)| &self.bytes[r.clone()])
    }

    /// The keys, in file order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.named.iter().map(|(k, _)| k.as_str())
    }
}

fn read_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

/// Parse and validate a whole `.ptd` file: every named blob must lie inside the file.
pub fn parse_ptd(bytes: Vec<u8>) -> Result<PtdFile, FormatError> {
    let len = bytes.len() as u64;
    if bytes.len() < 8 + PTD_HEADER_LEN {
        return Err(FormatError::Truncated {
            ctx: PTD,
            what: "flatbuffer root + identifier + FH01 header",
            need: (8 + PTD_HEADER_LEN) as u64,
            have: len,
        });
    }
    for (at, range, want) in [
        ("bytes 4..8", 4..8, &b"FT01"[..]),
        ("bytes 8..12", 8..12, &PTD_HEADER_MAGIC[..]),
    ] {
        if &bytes[range.clone()] != want {
            return Err(FormatError::BadMagic {
                ctx: PTD,
                at,
                expected: if range.start == 4 { "FT01" } else { "FH01" },
                found: escape_bytes(&bytes[range]),
            });
        }
    }
    let header_len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    if header_len < PTD_HEADER_LEN {
        return Err(FormatError::invalid(
            PTD,
            "FH01 header length",
            format!("{header_len} bytes, at least {PTD_HEADER_LEN} expected"),
        ));
    }
    let (fb_offset, fb_size) = (read_u64(&bytes, 16), read_u64(&bytes, 24));
    let (base, data_size) = (read_u64(&bytes, 32), read_u64(&bytes, 40));
    let fb_end = fb_offset
        .checked_add(fb_size)
        .filter(|&e| e <= len)
        .ok_or_else(|| FormatError::OutOfBounds {
            ctx: PTD,
            region: format!("flatbuffer [offset {fb_offset}, size {fb_size}]"),
            container: "file",
            len,
        })?;
    if base.checked_add(data_size).is_none_or(|e| e > len) {
        return Err(FormatError::OutOfBounds {
            ctx: PTD,
            region: format!("segment data [offset {base}, size {data_size}]"),
            container: "file",
            len,
        });
    }
    // The flatbuffer's offsets count from byte 0 (the header sits inside its padding).
    let fb = &bytes[..fb_end as usize];
    let opts = verifier_options(fb.len());
    let root = ft::root_as_flat_tensor_with_opts(&opts, fb).map_err(|e| FormatError::Verifier {
        ctx: PTD,
        detail: e.to_string(),
    })?;
    let mut segments = Vec::new();
    for (i, s) in root.segments().iter().flatten().enumerate() {
        let range = s
            .offset()
            .checked_add(s.size())
            .filter(|&e| e <= data_size)
            .map(|e| (base + s.offset()) as usize..(base + e) as usize)
            .ok_or_else(|| FormatError::OutOfBounds {
                ctx: PTD,
                region: format!("segment {i} [offset {}, size {}]", s.offset(), s.size()),
                container: "segment data",
                len: data_size,
            })?;
        segments.push(range);
    }
    let mut named = Vec::new();
    for (i, n) in root.named_data().iter().flatten().enumerate() {
        let key = n
            .key()
            .ok_or_else(|| FormatError::invalid(PTD, format!("named_data[{i}]"), "no key"))?;
        let s = n.segment_index() as usize;
        let range = segments
            .get(s)
            .ok_or_else(|| FormatError::IndexOutOfRange {
                ctx: PTD,
                field: format!("named_data[{i}].segment_index"),
                index: s as i64,
                len: segments.len() as u64,
            })?;
        named.push((key.to_string(), range.clone()));
    }
    Ok(PtdFile { bytes, named })
}
