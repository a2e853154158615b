//! A minimal `.npy` reader (C order, little-endian), independent of `etvk-host`'s writer so
//! the CLI test checks the files rather than a round trip through one implementation.

use etvk_runtime::{HostDType, HostTensor};

/// The host dtype of a NumPy `descr` such as `<f4`.
pub fn dtype_of_descr(descr: &str) -> Result<HostDType, String> {
    let (order, code) = descr.split_at(descr.len().min(1));
    if order == ">" {
        return Err(format!("big-endian descr {descr:?} is not supported"));
    }
    if !matches!(order, "<" | "|" | "=") {
        return Err(format!("descr {descr:?} has no byte-order prefix"));
    }
    Ok(match code {
        "f2" => HostDType::Half,
        "f4" => HostDType::Float,
        "f8" => HostDType::Double,
        "i1" => HostDType::Char,
        "u1" => HostDType::Byte,
        "b1" => HostDType::Bool,
        "i2" => HostDType::Short,
        "i4" => HostDType::Int,
        "i8" => HostDType::Long,
        _ => return Err(format!("unsupported descr {descr:?}")),
    })
}

/// The text after `'key':` in a header dict, trimmed.
fn field<'a>(header: &'a str, key: &str) -> Result<&'a str, String> {
    let pat = format!("'{key}':");
    let at = header
        .find(&pat)
        .ok_or_else(|| format!("npy header {header:?} lacks {key}"))?;
    Ok(header[at + pat.len()..].trim_start())
}

/// Parse `.npy` bytes.
pub fn parse(bytes: &[u8]) -> Result<HostTensor, String> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not a .npy file (bad magic)".to_string());
    }
    let (len, start) = match bytes[6] {
        1 => (usize::from(u16::from_le_bytes([bytes[8], bytes[9]])), 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported .npy version {v}")),
    };
    let header = bytes
        .get(start..start + len)
        .ok_or("truncated .npy header")?;
    let header = std::str::from_utf8(header).map_err(|e| format!("npy header: {e}"))?;

    let descr = field(header, "descr")?;
    let descr = descr
        .strip_prefix('\'')
        .and_then(|d| d.split('\'').next())
        .ok_or_else(|| format!("npy header {header:?}: bad descr"))?;
    let dtype = dtype_of_descr(descr)?;
    if field(header, "fortran_order")?.starts_with("True") {
        return Err("Fortran-order .npy files are not supported".to_string());
    }
    let shape = field(header, "shape")?;
    let shape = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| format!("npy header {header:?}: bad shape"))?;
    let sizes = shape
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse::<usize>()
                .map_err(|e| format!("npy shape {shape:?}: {e}"))
        })
        .collect::<Result<Vec<usize>, String>>()?;

    let data = bytes[start + len..].to_vec();
    let want = sizes.iter().product::<usize>() * dtype.size_bytes();
    if data.len() != want {
        return Err(format!(
            "npy {descr} {sizes:?}: {} data bytes, expected {want}",
            data.len()
        ));
    }
    Ok(HostTensor { dtype, sizes, data })
}

/// Read a `.npy` file.
pub fn read(path: &std::path::Path) -> Result<HostTensor, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_fixture_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/a_linear_fp32");
        let t = read(&dir.join("case0_in0.npy")).unwrap();
        assert_eq!(t.dtype, HostDType::Float);
        assert_eq!(t.sizes, vec![4, 64]);
        assert_eq!(t.data, std::fs::read(dir.join("case0_in0.bin")).unwrap());
    }

    #[test]
    fn parses_rank_0_and_rejects_garbage() {
        let header = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }";
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend_from_slice(&(header.len() as u16).to_le_bytes());
        b.extend_from_slice(header.as_bytes());
        b.extend_from_slice(&7i64.to_le_bytes());
        let t = parse(&b).unwrap();
        assert_eq!((t.dtype, t.sizes.len()), (HostDType::Long, 0));
        assert!(parse(b"nope").is_err());
        b.pop();
        assert!(parse(&b).is_err());
    }
}
