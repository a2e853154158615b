//! `.npy` reading and writing.

use std::path::PathBuf;

use etvk_host::dtype::{f32_to_f16, DType};
use etvk_host::npy;
use etvk_host::{HostError, Tensor};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

#[test]
fn round_trips_every_dtype_and_rank() {
    let cases = vec![
        Tensor::from_f32(vec![2, 3], &[1.0, -2.5, 3.25, 0.0, 1e-7, -1e30]).unwrap(),
        Tensor::from_f32(vec![], &[42.0]).unwrap(),
        Tensor::from_f32(vec![0, 4], &[]).unwrap(),
        Tensor::from_i64(vec![3], &[i64::MIN, 0, i64::MAX]).unwrap(),
        Tensor::from_i32(vec![1, 1, 2], &[-7, 9]).unwrap(),
        Tensor::from_bool(vec![4], &[true, false, false, true]).unwrap(),
        Tensor::new(DType::U8, vec![2], vec![0, 255]).unwrap(),
        Tensor::new(DType::F64, vec![1], 0.1f64.to_le_bytes().to_vec()).unwrap(),
        Tensor::new(
            DType::F16,
            vec![2],
            [f32_to_f16(1.0), f32_to_f16(-0.5)]
                .iter()
                .flat_map(|h| h.to_le_bytes())
                .collect(),
        )
        .unwrap(),
    ];
    for t in cases {
        let bytes = npy::write_bytes(&t).unwrap();
        // numpy's layout: magic, version 1.0, header padded so the data is 64-byte aligned.
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + hlen) % 64, 0);
        assert_eq!(bytes[10 + hlen - 1], b'\n');
        let back = npy::read_bytes(&bytes).unwrap();
        assert_eq!(back, t);
    }
}

#[test]
fn header_text_is_numpy_style() {
    let t = Tensor::from_f32(vec![3], &[1.0, 2.0, 3.0]).unwrap();
    let bytes = npy::write_bytes(&t).unwrap();
    let hlen = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    let header = std::str::from_utf8(&bytes[10..10 + hlen]).unwrap();
    assert!(
        header.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"),
        "{header}"
    );
    let s = Tensor::from_i64(vec![], &[5]).unwrap();
    let bytes = npy::write_bytes(&s).unwrap();
    let header = String::from_utf8(bytes[10..bytes.len() - 8].to_vec()).unwrap();
    assert!(header.contains("'shape': ()"), "{header}");
}

fn with_header(version: u8, header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY".to_vec();
    out.push(version);
    out.push(0);
    if version == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn reads_version_2_headers_and_native_order() {
    let data: Vec<u8> = [1i32, -2, 3, 4]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let bytes = with_header(
        2,
        "{'descr': '=i4', 'fortran_order': False, 'shape': (2, 2), }\n",
        &data,
    );
    let t = npy::read_bytes(&bytes).unwrap();
    assert_eq!(t.dtype, DType::I32);
    assert_eq!(t.sizes, vec![2, 2]);
    assert_eq!(t.to_i64_vec().unwrap(), vec![1, -2, 3, 4]);
}

fn npy_message(bytes: &[u8]) -> String {
    match npy::read_bytes(bytes) {
        Err(HostError::Npy { message, .. }) => message,
        other => panic!("expected an npy error, got {other:?}"),
    }
}

#[test]
fn rejects_what_it_cannot_hold() {
    let f4 = [0u8; 8];
    let m = npy_message(&with_header(
        1,
        "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n",
        &f4,
    ));
    assert!(m.contains("Fortran"), "{m}");
    let m = npy_message(&with_header(
        1,
        "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n",
        &f4,
    ));
    assert!(m.contains("big-endian"), "{m}");
    let m = npy_message(&with_header(
        1,
        "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n",
        &f4,
    ));
    assert!(m.contains("unsupported dtype '<c8'"), "{m}");
    let m = npy_message(&with_header(
        1,
        "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n",
        &f4,
    ));
    assert!(m.contains("needs 12 data bytes, file has 8"), "{m}");
    let m = npy_message(b"\x93NUMPY\x01\x00\xff\x00{");
    assert!(m.contains("runs past the end"), "{m}");
    let m = npy_message(b"PK\x03\x04 not npy");
    assert!(m.contains("bad magic"), "{m}");
}

#[test]
fn file_errors_name_the_path() {
    let err = npy::read(std::path::Path::new("/nonexistent/x.npy"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nonexistent/x.npy"), "{err}");
}

#[test]
fn reads_the_fixture_arrays() {
    let dir = fixtures().join("g3_llama_block_dynamic_seq");
    let t = npy::read(&dir.join("case2_in0.npy")).unwrap();
    assert_eq!(t.dtype, DType::F32);
    assert_eq!(t.sizes, vec![1, 5, 64]);
    assert_eq!(t.data, std::fs::read(dir.join("case2_in0.bin")).unwrap());

    // int64 token inputs of the KV-cache fixture.
    let dir = fixtures().join("e5_llama3_tiny_kvcache_fp32");
    let tokens = npy::read(&dir.join("case0_in0.npy")).unwrap();
    assert_eq!(tokens.dtype, DType::I64);
    assert_eq!(tokens.sizes, vec![1, 1]);
    assert_eq!(
        tokens.data,
        std::fs::read(dir.join("case0_in0.bin")).unwrap()
    );
    let pos = npy::read(&dir.join("case0_in1.npy")).unwrap();
    assert_eq!(pos.sizes, vec![1]);
    assert_eq!(pos.to_i64_vec().unwrap(), vec![0]);

    // Writing what we read reproduces a file that reads back identically.
    let tmp = std::env::temp_dir().join(format!("etvk-host-npy-{}.npy", std::process::id()));
    npy::write(&tmp, &t).unwrap();
    assert_eq!(npy::read(&tmp).unwrap(), t);
    std::fs::remove_file(&tmp).unwrap();
}
