//! Host element types (ExecuTorch `ScalarType` numbering) and element conversions.

use crate::error::{HostError, Result};

/// Element type of a host tensor. Codes are ExecuTorch's `ScalarType` values, which are
/// also the C ABI's `etvk_abi::dtype` codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// uint8 (0)
    U8,
    /// int8 (1)
    I8,
    /// int16 (2)
    I16,
    /// int32 (3)
    I32,
    /// int64 (4)
    I64,
    /// float16 (5)
    F16,
    /// float32 (6)
    F32,
    /// float64 (7)
    F64,
    /// bool, one byte (11)
    Bool,
}

impl DType {
    /// ExecuTorch `ScalarType` code.
    pub fn code(self) -> i32 {
        match self {
            DType::U8 => 0,
            DType::I8 => 1,
            DType::I16 => 2,
            DType::I32 => 3,
            DType::I64 => 4,
            DType::F16 => 5,
            DType::F32 => 6,
            DType::F64 => 7,
            DType::Bool => 11,
        }
    }

    /// From an ExecuTorch `ScalarType` code; `None` for types the host cannot hold.
    pub fn from_code(code: i32) -> Option<DType> {
        Some(match code {
            0 => DType::U8,
            1 => DType::I8,
            2 => DType::I16,
            3 => DType::I32,
            4 => DType::I64,
            5 => DType::F16,
            6 => DType::F32,
            7 => DType::F64,
            11 => DType::Bool,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::U8 | DType::I8 | DType::Bool => 1,
            DType::I16 | DType::F16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    /// Lower-case name (`float32`, `int64`, ...), as numpy and PyTorch spell it.
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::Bool => "bool",
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::F32 | DType::F64)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One element, widened: what kernels compute with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// A boolean.
    Bool(bool),
    /// Any integer type.
    Int(i64),
    /// Any float type.
    Float(f64),
}

impl Scalar {
    /// As f64 (bool -> 0/1).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => f64::from(u8::from(b)),
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    /// As i64 (floats truncate toward zero, saturating, as a C++ cast of an in-range value).
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => i64::from(b),
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
    /// As bool (non-zero is true).
    pub fn as_bool(self) -> bool {
        match self {
            Scalar::Bool(b) => b,
            Scalar::Int(i) => i != 0,
            Scalar::Float(f) => f != 0.0,
        }
    }
}

/// Read element `i` of little-endian `bytes` holding `dtype` elements.
///
/// Callers index within `numel`; an out-of-range index is a host bug, reported as an error.
pub fn read_scalar(dtype: DType, bytes: &[u8], i: usize) -> Result<Scalar> {
    let es = dtype.size_bytes();
    let b = i
        .checked_mul(es)
        .and_then(|s| bytes.get(s..s + es))
        .ok_or_else(|| {
            HostError::InvalidProgram(format!(
                "element {i} outside a {dtype} buffer of {} bytes",
                bytes.len()
            ))
        })?;
    Ok(match dtype {
        DType::U8 => Scalar::Int(i64::from(b[0])),
        DType::I8 => Scalar::Int(i64::from(b[0] as i8)),
        DType::I16 => Scalar::Int(i64::from(i16::from_le_bytes([b[0], b[1]]))),
        DType::I32 => Scalar::Int(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DType::I64 => Scalar::Int(i64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
        DType::F16 => Scalar::Float(f64::from(f16_to_f32(u16::from_le_bytes([b[0], b[1]])))),
        DType::F32 => Scalar::Float(f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))),
        DType::F64 => Scalar::Float(f64::from_le_bytes(b.try_into().unwrap_or([0; 8]))),
        DType::Bool => Scalar::Bool(b[0] != 0),
    })
}

/// Write `v`, cast to `dtype` (C++ static_cast semantics: integers wrap, floats round),
/// as element `i` of `bytes`.
pub fn write_scalar(dtype: DType, bytes: &mut [u8], i: usize, v: Scalar) -> Result<()> {
    let es = dtype.size_bytes();
    let len = bytes.len();
    let b = i
        .checked_mul(es)
        .and_then(|s| bytes.get_mut(s..s + es))
        .ok_or_else(|| {
            HostError::InvalidProgram(format!(
                "element {i} outside a {dtype} buffer of {len} bytes"
            ))
        })?;
    match dtype {
        DType::U8 => b[0] = v.as_i64() as u8,
        DType::I8 => b[0] = v.as_i64() as i8 as u8,
        DType::I16 => b.copy_from_slice(&(v.as_i64() as i16).to_le_bytes()),
        DType::I32 => b.copy_from_slice(&(v.as_i64() as i32).to_le_bytes()),
        DType::I64 => b.copy_from_slice(&v.as_i64().to_le_bytes()),
        DType::F16 => b.copy_from_slice(&f32_to_f16(v.as_f64() as f32).to_le_bytes()),
        DType::F32 => b.copy_from_slice(&(v.as_f64() as f32).to_le_bytes()),
        DType::F64 => b.copy_from_slice(&v.as_f64().to_le_bytes()),
        DType::Bool => b[0] = u8::from(v.as_bool()),
    }
    Ok(())
}

pub use etvk_format::f16::{f16_to_f32, f32_to_f16};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_casts_follow_cpp() {
        let mut b = [0u8; 4];
        write_scalar(DType::I32, &mut b, 0, Scalar::Float(-2.7)).unwrap();
        assert_eq!(read_scalar(DType::I32, &b, 0).unwrap(), Scalar::Int(-2));
        let mut u = [0u8; 1];
        write_scalar(DType::U8, &mut u, 0, Scalar::Int(257)).unwrap();
        assert_eq!(u[0], 1);
        assert!(read_scalar(DType::F32, &b, 1).is_err());
    }
}
