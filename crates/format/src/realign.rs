//! Repair of scalar vectors that a flatbuffer writer left unaligned.
//!
//! flatc (the ExecuTorch exporter serializes VkGraphs through it) can write an *empty*
//! `[long]` vector at a position that is 4 mod 8: there is no element to align, so the
//! writer does not pad. ExecuTorch's C++ runtime reads such buffers without complaint, but
//! the Rust verifier checks the alignment of every vector's payload, empty or not, and
//! refuses them (a real mobilenet_v3 export does this). Rather than skip verification, the
//! offending vector is copied to an aligned spot appended to a copy of the buffer and the one
//! offset that pointed at it is redirected; the result then passes the full verifier. Only
//! vectors of plain scalars are moved, never byte vectors, so byte ranges computed on the
//! repaired copy are the same as in the original.

use std::borrow::Cow;

use flatbuffers::{ErrorTraceDetail, InvalidFlatbuffer};

/// Most vectors one buffer may have moved; each move re-runs the verifier.
const MAX_MOVES: usize = 1 << 14;

/// Element size of a scalar type named by the verifier's `unaligned_type`.
fn scalar_size(type_name: &str) -> Option<usize> {
    let base = type_name.rsplit("::").next().unwrap_or(type_name);
    match base {
        "i16" | "u16" => Some(2),
        "i32" | "u32" | "f32" => Some(4),
        "i64" | "u64" | "f64" => Some(8),
        _ => None,
    }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Moves the vector whose payload the verifier found unaligned at `payload`, referenced
/// from the offset at `field`; `None` when the error is not of that shape.
fn move_vector(buf: &mut Vec<u8>, field: usize, payload: usize, elem: usize) -> Option<()> {
    let vector = payload.checked_sub(4)?;
    let target = field.checked_add(u32_at(buf, field)? as usize)?;
    if target != vector {
        return None;
    }
    let len = u32_at(buf, vector)? as usize;
    let data_end = payload.checked_add(len.checked_mul(elem)?)?;
    if data_end > buf.len() {
        return None;
    }
    // The new length field sits 4 bytes before an `elem`-aligned payload (elem <= 8).
    while !(buf.len() + 4).is_multiple_of(elem.max(4)) {
        buf.push(0);
    }
    let new_vector = buf.len();
    let new_offset = u32::try_from(new_vector - field).ok()?;
    buf.extend_from_within(vector..data_end);
    buf[field..field + 4].copy_from_slice(&new_offset.to_le_bytes());
    Some(())
}

/// `fb` itself when `verify` accepts it; otherwise a copy in which every unaligned scalar
/// vector was moved to an aligned position, if that makes `verify` accept it. Any other
/// verifier error is returned as is.
pub(crate) fn realign_unaligned_vectors<'a>(
    fb: &'a [u8],
    verify: impl Fn(&[u8]) -> Result<(), InvalidFlatbuffer>,
) -> Result<Cow<'a, [u8]>, InvalidFlatbuffer> {
    let mut err = match verify(fb) {
        Ok(()) => return Ok(Cow::Borrowed(fb)),
        Err(e) => e,
    };
    let mut buf: Option<Vec<u8>> = None;
    for _ in 0..MAX_MOVES {
        let InvalidFlatbuffer::Unaligned {
            position,
            unaligned_type,
            error_trace,
        } = &err
        else {
            return Err(err);
        };
        // The innermost trace entry is where the offset to the vector is stored.
        let field = match error_trace.as_ref().first() {
            Some(ErrorTraceDetail::TableField { position, .. })
            | Some(ErrorTraceDetail::VectorElement { position, .. }) => *position,
            _ => return Err(err),
        };
        let Some(elem) = scalar_size(unaligned_type) else {
            return Err(err);
        };
        let b = buf.get_or_insert_with(|| fb.to_vec());
        if b.len() > fb.len().saturating_mul(2).saturating_add(4096)
            || move_vector(b, field, *position, elem).is_none()
        {
            return Err(err);
        }
        err = match verify(b) {
            Ok(()) => return Ok(Cow::Owned(buf.unwrap_or_default())),
            Err(e) => e,
        };
    }
    Err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A root table with one `[long]` field, written by hand: root offset at 0, vtable at 8,
    /// table at 16 (its field, the offset to the vector, at 20), the vector at `vec_pos`. Its
    /// payload follows the 4-byte length, so `vec_pos % 8 == 0` makes it unaligned.
    fn table_with_long_vector(items: &[i64], vec_pos: usize) -> Vec<u8> {
        let mut b = vec![0u8; vec_pos];
        b[0..4].copy_from_slice(&16u32.to_le_bytes());
        b[8..10].copy_from_slice(&6u16.to_le_bytes()); // vtable size
        b[10..12].copy_from_slice(&8u16.to_le_bytes()); // table size
        b[12..14].copy_from_slice(&4u16.to_le_bytes()); // field 0 at table + 4
        b[16..20].copy_from_slice(&8i32.to_le_bytes()); // table - vtable
        b[20..24].copy_from_slice(&((vec_pos - 20) as u32).to_le_bytes());
        b.extend_from_slice(&(items.len() as u32).to_le_bytes());
        for x in items {
            b.extend_from_slice(&x.to_le_bytes());
        }
        b
    }

    fn verify(buf: &[u8]) -> Result<(), InvalidFlatbuffer> {
        use flatbuffers::{ForwardsUOffset, Vector, Verifiable, Verifier, VerifierOptions};
        struct Root;
        impl Verifiable for Root {
            fn run_verifier(v: &mut Verifier, pos: usize) -> Result<(), InvalidFlatbuffer> {
                v.visit_table(pos)?
                    .visit_field::<ForwardsUOffset<Vector<'_, i64>>>("items", 4, false)?
                    .finish();
                Ok(())
            }
        }
        let opts = VerifierOptions::default();
        let mut v = Verifier::new(&opts, buf);
        <ForwardsUOffset<Root>>::run_verifier(&mut v, 0)
    }

    /// The vector's items, following the offsets by hand after verification.
    fn read(buf: &[u8]) -> Vec<i64> {
        verify(buf).unwrap();
        let vector = 20 + u32_at(buf, 20).unwrap() as usize;
        let len = u32_at(buf, vector).unwrap() as usize;
        (0..len)
            .map(|i| {
                let at = vector + 4 + 8 * i;
                i64::from_le_bytes(buf[at..at + 8].try_into().unwrap())
            })
            .collect()
    }

    #[test]
    fn aligned_buffers_are_borrowed() {
        let b = table_with_long_vector(&[1, -2, 3], 28);
        let out = realign_unaligned_vectors(&b, verify).unwrap();
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(read(&out), vec![1, -2, 3]);
    }

    #[test]
    fn unaligned_vectors_are_moved_with_their_items() {
        for items in [&[][..], &[7, i64::MIN, 42][..]] {
            let b = table_with_long_vector(items, 24);
            assert!(matches!(
                verify(&b),
                Err(InvalidFlatbuffer::Unaligned { .. })
            ));
            let out = realign_unaligned_vectors(&b, verify).unwrap();
            assert!(matches!(out, Cow::Owned(_)));
            assert_eq!(read(&out), items.to_vec());
        }
    }

    #[test]
    fn other_errors_are_returned() {
        let mut b = table_with_long_vector(&[1, 2], 28);
        // A length past the end of the buffer.
        b[28..32].copy_from_slice(&1000u32.to_le_bytes());
        let e = realign_unaligned_vectors(&b, verify).unwrap_err();
        assert!(
            matches!(e, InvalidFlatbuffer::RangeOutOfBounds { .. }),
            "{e:?}"
        );
    }
}
