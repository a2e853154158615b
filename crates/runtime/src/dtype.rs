//! Host <-> GPU element conversions done while filling / draining staging buffers
//! (ExecuTorch's `maybe_cast_and_copy_{into,from}_staging`, plus fp32 <-> fp16 for
//! force_fp16 programs whose GPU tensors are FLOAT16 while the host sees FLOAT32).

use etvk_format::ir::DataType;

use crate::api::{HostDType, Result};
use crate::error::invalid_arg;

pub use etvk_format::f16::{f16_to_f32, f32_to_f16};

/// The host dtype whose bytes equal the GPU dtype's.
pub fn host_of(dt: DataType) -> Option<HostDType> {
    Some(match dt {
        DataType::Bool => HostDType::Bool,
        DataType::Uint8 => HostDType::Byte,
        DataType::Int8 => HostDType::Char,
        DataType::Int32 => HostDType::Int,
        DataType::Float16 => HostDType::Half,
        DataType::Float32 => HostDType::Float,
        DataType::Float64 => HostDType::Double,
        DataType::Int64 => HostDType::Long,
    })
}

/// Convert `src` (host dtype `from`) into GPU dtype `to` bytes, appending to `dst`.
/// `what` names the argument for errors.
pub fn host_to_gpu(
    src: &[u8],
    from: HostDType,
    to: DataType,
    dst: &mut Vec<u8>,
    what: &str,
) -> Result<()> {
    dst.clear();
    if host_of(to) == Some(from) {
        dst.extend_from_slice(src);
        return Ok(());
    }
    match (from, to) {
        (HostDType::Long, DataType::Int32) => {
            for c in src.chunks_exact(8) {
                let v = i64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
                let v32 = i32::try_from(v).map_err(|_| {
                    invalid_arg(format!(
                        "{what}: int64 value {v} does not fit the graph's int32"
                    ))
                })?;
                dst.extend_from_slice(&v32.to_le_bytes());
            }
        }
        (HostDType::Double, DataType::Float32) => {
            for c in src.chunks_exact(8) {
                dst.extend_from_slice(
                    &(f64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32).to_le_bytes(),
                );
            }
        }
        (HostDType::Half, DataType::Float32) => {
            for c in src.chunks_exact(2) {
                dst.extend_from_slice(&f16_to_f32(u16::from_le_bytes([c[0], c[1]])).to_le_bytes());
            }
        }
        (HostDType::Float, DataType::Float16) => {
            for c in src.chunks_exact(4) {
                dst.extend_from_slice(
                    &f32_to_f16(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes(),
                );
            }
        }
        _ => {
            return Err(invalid_arg(format!(
                "{what}: host dtype {from:?} cannot be converted to the graph's {}",
                to.name()
            )))
        }
    }
    Ok(())
}

/// Convert GPU dtype `from` bytes into host dtype `to`, appending to `dst`.
pub fn gpu_to_host(
    src: &[u8],
    from: DataType,
    to: HostDType,
    dst: &mut Vec<u8>,
    what: &str,
) -> Result<()> {
    dst.clear();
    if host_of(from) == Some(to) {
        dst.extend_from_slice(src);
        return Ok(());
    }
    match (from, to) {
        (DataType::Int32, HostDType::Long) => {
            for c in src.chunks_exact(4) {
                dst.extend_from_slice(
                    &(i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).to_le_bytes(),
                );
            }
        }
        (DataType::Float32, HostDType::Double) => {
            for c in src.chunks_exact(4) {
                dst.extend_from_slice(
                    &(f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).to_le_bytes(),
                );
            }
        }
        (DataType::Float32, HostDType::Half) => {
            for c in src.chunks_exact(4) {
                dst.extend_from_slice(
                    &f32_to_f16(f32::from_le_bytes([c[0], c[1], c[2], c[3]])).to_le_bytes(),
                );
            }
        }
        (DataType::Float16, HostDType::Float) => {
            for c in src.chunks_exact(2) {
                dst.extend_from_slice(&f16_to_f32(u16::from_le_bytes([c[0], c[1]])).to_le_bytes());
            }
        }
        _ => {
            return Err(invalid_arg(format!(
                "{what}: the graph's {} cannot be converted to host dtype {to:?}",
                from.name()
            )))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trip_and_rounding() {
        for v in [
            0.0f32,
            -0.0,
            1.0,
            -2.5,
            65504.0,
            6.1035156e-5,
            5.9604645e-8,
            0.33325195,
        ] {
            assert_eq!(f16_to_f32(f32_to_f16(v)), v, "{v}");
        }
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(65520.0), 0x7c00); // rounds to inf
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00); // tie to even
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
        assert!(f16_to_f32(f32_to_f16(f32::NAN)).is_nan());
    }

    #[test]
    fn host_conversions() {
        let mut out = Vec::new();
        let src: Vec<u8> = [3i64, -4].iter().flat_map(|v| v.to_le_bytes()).collect();
        host_to_gpu(&src, HostDType::Long, DataType::Int32, &mut out, "x").unwrap();
        assert_eq!(
            out,
            [3i32, -4]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>()
        );
        let big: Vec<u8> = (1i64 << 40).to_le_bytes().to_vec();
        assert!(host_to_gpu(&big, HostDType::Long, DataType::Int32, &mut out, "x").is_err());
        assert!(host_to_gpu(&[0; 4], HostDType::Int, DataType::Float32, &mut out, "x").is_err());
        let f: Vec<u8> = 1.5f32.to_le_bytes().to_vec();
        gpu_to_host(&f, DataType::Float32, HostDType::Double, &mut out, "y").unwrap();
        assert_eq!(f64::from_le_bytes(out[..8].try_into().unwrap()), 1.5);
    }
}
