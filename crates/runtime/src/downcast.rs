//! 64-bit tensors at load. The exporter writes int64 / float64 graph tensors as int32 /
//! float32 unless its compile option `downcast_64_bit` is off; then the VkGraph holds int64
//! index tensors (embedding ids, `arange`) and the kernels, which read 32-bit elements,
//! cannot take them. [`downcast_64_bit`] applies the exporter's downcast to such a graph:
//! 64-bit tensors become 32-bit ones (their host staging dtype stays 64-bit, so inputs and
//! outputs convert as for a downcast program), and 64-bit constants are converted into a
//! new inline constant region; an int64 constant outside the int32 range is refused.

use etvk_format::ir::{ConstantSource, DataType, Value, VulkanDelegate};

use crate::api::{NamedData, Result};
use crate::error::{invalid_program, unsupported};

/// The graph with its 64-bit tensors made 32-bit, or `None` when it has none.
pub(crate) fn downcast_64_bit(
    delegate: &VulkanDelegate,
    named: &dyn NamedData,
) -> Result<Option<VulkanDelegate>> {
    let narrow = |dt: DataType| match dt {
        DataType::Int64 => Some(DataType::Int32),
        DataType::Float64 => Some(DataType::Float32),
        _ => None,
    };
    let wide = |v: &Value| matches!(v, Value::Tensor(t) if narrow(t.dtype).is_some());
    if !delegate.graph.values.iter().any(wide) {
        return Ok(None);
    }
    let mut out = delegate.clone();
    // Constant id -> its 64-bit dtype, from the tensors that read it.
    let mut converted: Vec<Option<DataType>> = vec![None; out.graph.constants.len()];
    for (id, v) in out.graph.values.iter_mut().enumerate() {
        let Value::Tensor(t) = v else { continue };
        let Some(dt) = narrow(t.dtype) else { continue };
        if let Some(cid) = t.constant_id {
            let slot = converted.get_mut(cid).ok_or_else(|| {
                invalid_program(format!("value {id}: constant {cid} out of range"))
            })?;
            match slot {
                Some(prev) if *prev != t.dtype => {
                    return Err(unsupported(format!(
                        "constant {cid} is read as both {} and {}",
                        prev.name(),
                        t.dtype.name()
                    )))
                }
                _ => *slot = Some(t.dtype),
            }
        }
        t.dtype = dt;
    }
    for (cid, wide_dt) in converted.iter().enumerate() {
        let Some(wide_dt) = wide_dt else { continue };
        let bytes = crate::builder::constant_source_bytes(
            &delegate.graph.constants,
            &delegate.constant_region,
            named,
            cid,
        )?;
        let narrowed = narrow_bytes(*wide_dt, bytes, cid)?;
        let offset = out.constant_region.len();
        out.constant_region.extend_from_slice(&narrowed);
        out.graph.constants[cid] = ConstantSource::Inline {
            offset,
            length: narrowed.len(),
        };
    }
    Ok(Some(out))
}

/// Little-endian int64 -> int32 (range-checked) or float64 -> float32 (rounded).
fn narrow_bytes(dt: DataType, bytes: &[u8], cid: usize) -> Result<Vec<u8>> {
    if !bytes.len().is_multiple_of(8) {
        return Err(invalid_program(format!(
            "constant {cid}: {} bytes is not a whole number of {} elements",
            bytes.len(),
            dt.name()
        )));
    }
    let mut out = Vec::with_capacity(bytes.len() / 2);
    for (i, c) in bytes.chunks_exact(8).enumerate() {
        let raw: [u8; 8] = [c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]];
        if dt == DataType::Int64 {
            let v = i64::from_le_bytes(raw);
            let v32 = i32::try_from(v).map_err(|_| {
                unsupported(format!(
                    "constant {cid} element {i}: int64 value {v} does not fit the GPU's int32"
                ))
            })?;
            out.extend_from_slice(&v32.to_le_bytes());
        } else {
            out.extend_from_slice(&(f64::from_le_bytes(raw) as f32).to_le_bytes());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrows_int64_with_a_range_check_and_rounds_float64() {
        let ints: Vec<u8> = [5i64, -7, i32::MAX as i64]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let got = narrow_bytes(DataType::Int64, &ints, 0).unwrap();
        let want: Vec<u8> = [5i32, -7, i32::MAX]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        assert_eq!(got, want);
        let big = (i32::MAX as i64 + 1).to_le_bytes();
        let err = narrow_bytes(DataType::Int64, &big, 3).unwrap_err();
        assert!(
            err.message.contains("constant 3 element 0"),
            "{}",
            err.message
        );
        let f = 0.1f64.to_le_bytes();
        assert_eq!(
            narrow_bytes(DataType::Float64, &f, 0).unwrap(),
            0.1f32.to_le_bytes()
        );
        assert!(narrow_bytes(DataType::Int64, &[0u8; 5], 0).is_err());
    }
}
