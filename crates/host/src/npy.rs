//! `.npy` (NumPy array file) reading and writing: header versions 1, 2 and 3, C order,
//! little-endian `float16/32/64`, `int8/16/32/64`, `uint8`, `bool`.

use std::path::Path;

use crate::dtype::DType;
use crate::error::{HostError, Result};
use crate::tensor::{checked_nbytes, Tensor};

const MAGIC: &[u8; 6] = b"\x93NUMPY";

fn err(message: impl Into<String>) -> HostError {
    HostError::Npy {
        path: None,
        message: message.into(),
    }
}

/// numpy `descr` string for a dtype (what [`write()`] emits).
pub fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::Bool => "|b1",
    }
}

fn dtype_of_descr(d: &str) -> Result<DType> {
    // One-byte types may carry any byte-order mark; wider ones must be little-endian
    // (`=` is native, and every host etvk runs on is little-endian).
    let (order, kind) = match d.as_bytes().first() {
        Some(b'<' | b'|' | b'=') => (d.as_bytes()[0], &d[1..]),
        Some(b'>') => (b'>', &d[1..]),
        _ => (b'|', d),
    };
    let dt = match kind {
        "u1" | "B" => DType::U8,
        "i1" | "b" => DType::I8,
        "b1" | "?" => DType::Bool,
        "i2" => DType::I16,
        "i4" => DType::I32,
        "i8" => DType::I64,
        "f2" | "e" => DType::F16,
        "f4" => DType::F32,
        "f8" => DType::F64,
        _ => {
            return Err(err(format!(
                "unsupported dtype '{d}' (supported: float16/32/64, int8/16/32/64, uint8, bool)"
            )))
        }
    };
    if order == b'>' && dt.size_bytes() > 1 {
        return Err(err(format!("big-endian dtype '{d}' is not supported")));
    }
    Ok(dt)
}

/// Value of `'key': <value>` in the header dict, as the raw text up to the next top-level
/// `,` or `}` (tuples kept whole).
fn dict_field<'a>(header: &'a str, key: &str) -> Result<&'a str> {
    let pat_sq = format!("'{key}'");
    let pat_dq = format!("\"{key}\"");
    let start = header
        .find(&pat_sq)
        .map(|i| i + pat_sq.len())
        .or_else(|| header.find(&pat_dq).map(|i| i + pat_dq.len()))
        .ok_or_else(|| err(format!("header has no '{key}' field: {header}")))?;
    let rest = header[start..].trim_start();
    let rest = rest
        .strip_prefix(':')
        .ok_or_else(|| err(format!("header field '{key}' has no ':': {header}")))?
        .trim_start();
    let mut depth = 0i32;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | '}' if depth == 0 => return Ok(rest[..i].trim()),
            _ => {}
        }
    }
    Err(err(format!(
        "header field '{key}' is not terminated: {header}"
    )))
}

/// Parse a `.npy` file's bytes.
pub fn read_bytes(bytes: &[u8]) -> Result<Tensor> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(err("not an .npy file (bad magic)"));
    }
    let major = bytes[6];
    let (hlen, hstart) = match major {
        1 => (
            usize::from(u16::from_le_bytes([bytes[8], bytes[9]])),
            10usize,
        ),
        2 | 3 => {
            let b = bytes.get(8..12).ok_or_else(|| err("truncated v2 header"))?;
            (
                u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize,
                12usize,
            )
        }
        v => return Err(err(format!("unsupported format version {v}"))),
    };
    let hend = hstart
        .checked_add(hlen)
        .filter(|&e| e <= bytes.len())
        .ok_or_else(|| {
            err(format!(
                "header length {hlen} runs past the end of the file ({} bytes)",
                bytes.len()
            ))
        })?;
    let header =
        std::str::from_utf8(&bytes[hstart..hend]).map_err(|_| err("header is not text"))?;

    let descr_raw = dict_field(header, "descr")?;
    let descr = descr_raw.trim_matches(|c| c == '\'' || c == '"');
    if descr.starts_with('[') || descr.starts_with('(') {
        return Err(err(format!(
            "structured dtype {descr_raw} is not supported"
        )));
    }
    let dtype = dtype_of_descr(descr)?;
    match dict_field(header, "fortran_order")? {
        "False" => {}
        "True" => {
            return Err(err(
                "Fortran-order arrays are not supported (save with C order)",
            ))
        }
        other => return Err(err(format!("bad fortran_order value '{other}'"))),
    }
    let shape_raw = dict_field(header, "shape")?;
    let inner = shape_raw
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| err(format!("shape '{shape_raw}' is not a tuple")))?;
    let sizes = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.trim_end_matches('L')
                .parse::<usize>()
                .map_err(|_| err(format!("bad dimension '{s}' in shape {shape_raw}")))
        })
        .collect::<Result<Vec<usize>>>()?;
    let nbytes = checked_nbytes(dtype, &sizes).map_err(|e| err(e.to_string()))?;
    let data = &bytes[hend..];
    if data.len() != nbytes {
        return Err(err(format!(
            "{dtype} array of shape {sizes:?} needs {nbytes} data bytes, file has {}",
            data.len()
        )));
    }
    Ok(Tensor {
        dtype,
        sizes,
        data: data.to_vec(),
    })
}

/// Serialize a tensor as a `.npy` file (version 1 header unless it needs version 2).
pub fn write_bytes(t: &Tensor) -> Result<Vec<u8>> {
    let want = checked_nbytes(t.dtype, &t.sizes)?;
    if t.data.len() != want {
        return Err(err(format!(
            "tensor of sizes {:?} has {} bytes, expected {want}",
            t.sizes,
            t.data.len()
        )));
    }
    let shape = match t.sizes.len() {
        0 => "()".to_string(),
        1 => format!("({},)", t.sizes[0]),
        _ => format!(
            "({})",
            t.sizes
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut dict = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        descr(t.dtype)
    );
    // numpy pads the header with spaces and a final newline so the data starts 64-aligned;
    // version 1 stores the padded header length in a u16, version 2 in a u32.
    let padded = |prefix: usize| (prefix + dict.len() + 1).div_ceil(64) * 64;
    let v1 = padded(10) - 10 <= usize::from(u16::MAX);
    let prefix = if v1 { 10 } else { 12 };
    let total = padded(prefix);
    dict.push_str(&" ".repeat(total - prefix - dict.len() - 1));
    dict.push('\n');
    let mut out = Vec::with_capacity(total + t.data.len());
    out.extend_from_slice(MAGIC);
    if v1 {
        out.extend_from_slice(&[1, 0]);
        out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&[2, 0]);
        out.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.extend_from_slice(&t.data);
    Ok(out)
}

/// Read a `.npy` file.
pub fn read(path: &Path) -> Result<Tensor> {
    let bytes = std::fs::read(path).map_err(|source| HostError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read_bytes(&bytes).map_err(|e| match e {
        HostError::Npy { message, .. } => HostError::Npy {
            path: Some(path.to_path_buf()),
            message,
        },
        other => other,
    })
}

/// Write a `.npy` file.
pub fn write(path: &Path, t: &Tensor) -> Result<()> {
    let bytes = write_bytes(t).map_err(|e| match e {
        HostError::Npy { message, .. } => HostError::Npy {
            path: Some(path.to_path_buf()),
            message,
        },
        other => other,
    })?;
    std::fs::write(path, bytes).map_err(|source| HostError::Io {
        path: path.to_path_buf(),
        source,
    })
}
