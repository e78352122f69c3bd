//! `.npy` reading: the header variants NumPy writes, and hostile headers
//! and bodies, each with its specific error.

use gnnkern_datasets::DatasetError;
use gnnkern_datasets::npy::{self, NpyArray, NpyData};
use std::path::{Path, PathBuf};

/// A file with `header` (padded as NumPy pads) under format `version`.
fn npy_bytes(version: u8, header: &str, body: &[u8]) -> Vec<u8> {
    let len_size = if version == 1 { 2 } else { 4 };
    let mut h = header.to_string();
    let total = 8 + len_size + h.len() + 1;
    h.push_str(&" ".repeat((64 - total % 64) % 64));
    h.push('\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend([version, 0]);
    if version == 1 {
        out.extend((h.len() as u16).to_le_bytes());
    } else {
        out.extend((h.len() as u32).to_le_bytes());
    }
    out.extend(h.as_bytes());
    out.extend(body);
    out
}

fn header(descr: &str, shape: &str) -> String {
    format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}")
}

fn put(dir: &Path, bytes: &[u8]) -> PathBuf {
    let p = dir.join("a.npy");
    std::fs::write(&p, bytes).unwrap();
    p
}

fn le<T: Copy, const N: usize>(v: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

#[test]
fn reads_every_dtype_and_version() {
    let tmp = tempfile::tempdir().unwrap();
    let f32s = [0.5f32, -1.0, 2.25, 3.0, 4.0, 5.5];
    let p = put(tmp.path(), &npy_bytes(1, &header("<f4", "(2, 3)"), &le(&f32s, f32::to_le_bytes)));
    assert_eq!(npy::read(&p).unwrap(), NpyArray { shape: vec![2, 3], data: NpyData::F32(f32s.to_vec()) });

    let i64s = [1i64, -2, 1 << 40];
    let p = put(tmp.path(), &npy_bytes(2, &header("<i8", "(3,)"), &le(&i64s, i64::to_le_bytes)));
    assert_eq!(npy::read(&p).unwrap().data, NpyData::I64(i64s.to_vec()));

    let i32s = [7i32, 8];
    let p = put(tmp.path(), &npy_bytes(3, &header("<i4", "(2,)"), &le(&i32s, i32::to_le_bytes)));
    assert_eq!(npy::read(&p).unwrap().to_i64(), Some(vec![7, 8]));

    let f64s = [1.5f64];
    let p = put(
        tmp.path(),
        &npy_bytes(1, "{\"shape\": (), \"fortran_order\": False, \"descr\": \"<f8\"}", &le(&f64s, f64::to_le_bytes)),
    );
    assert_eq!(npy::read(&p).unwrap(), NpyArray { shape: vec![], data: NpyData::F64(vec![1.5]) });

    let p = put(tmp.path(), &npy_bytes(1, &header("<f4", "(0, 16)"), &[]));
    assert_eq!(npy::read(&p).unwrap().shape, vec![0, 16]);
}

#[test]
fn writer_output_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("w.npy");
    for (shape, data) in [
        (vec![2, 2], NpyData::F32(vec![1.0, 2.0, 3.0, 4.0])),
        (vec![3], NpyData::I32(vec![-1, 0, 1])),
        (vec![1, 1, 2], NpyData::F64(vec![0.25, 0.5])),
        (vec![2], NpyData::I64(vec![5, 6])),
    ] {
        npy::write(&p, &shape, &data).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().len() as usize % 64,
            (data.len() * if matches!(data, NpyData::I32(_) | NpyData::F32(_)) { 4 } else { 8 }) % 64
        );
        assert_eq!(npy::read(&p).unwrap(), NpyArray { shape, data });
    }
    let err = npy::write(&p, &[3], &NpyData::I32(vec![1])).unwrap_err();
    assert!(matches!(err, DatasetError::Invalid { .. }), "{err}");
}

fn format_error(bytes: &[u8]) -> (u64, String) {
    let tmp = tempfile::tempdir().unwrap();
    let p = put(tmp.path(), bytes);
    match npy::read(&p).unwrap_err() {
        DatasetError::Format { offset, problem, .. } => (offset, problem),
        e => panic!("expected a format error, got {e}"),
    }
}

#[test]
fn hostile_headers_are_rejected_with_offsets() {
    let body = [0u8; 24];
    let (off, msg) = format_error(b"PK\x03\x04 not numpy");
    assert_eq!(off, 0);
    assert!(msg.contains("magic"), "{msg}");
    let mut v4 = npy_bytes(1, &header("<f4", "(6,)"), &body);
    v4[6] = 4;
    assert_eq!(format_error(&v4).0, 6);

    let cases = [
        ("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", "fortran_order True"),
        ("{'descr': '<f4', 'shape': (6,), }", "missing key 'fortran_order'"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}", "unexpected key"),
        ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,)}", "appears twice"),
        ("{'descr': '<f4', 'fortran_order': maybe, 'shape': (6,)}", "True or False"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (6, -1)}", "not a non-negative integer"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': [6]}", "expected '('"),
        ("{'descr': '>f4', 'fortran_order': False, 'shape': (6,)}", "not supported"),
        ("{'descr': '<u2', 'fortran_order': False, 'shape': (6,)}", "not supported"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)} junk", "trailing"),
        ("{'descr': '<f4\\x00', 'fortran_order': False, 'shape': (6,)}", "escape"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)", "expected ',' or '}'"),
        ("descr", "expected '{'"),
    ];
    for (h, want) in cases {
        let bytes = npy_bytes(1, h, &body);
        let (off, msg) = format_error(&bytes);
        assert!(msg.contains(want), "header {h:?}: got {msg:?}, want {want:?}");
        let header_end = (bytes.len() - body.len()) as u64;
        assert!((10..=header_end).contains(&off), "offset {off} outside the header for {h:?}");
    }
    // A shape whose element count overflows.
    let (_, msg) = format_error(&npy_bytes(1, &header("<f8", "(4294967296, 4294967296, 4294967296)"), &body));
    assert!(msg.contains("more elements"), "{msg}");
}

#[test]
fn huge_shapes_and_truncated_bodies_are_size_errors() {
    let tmp = tempfile::tempdir().unwrap();
    // Fits usize but not the file: must fail on size, never allocate.
    let p = put(tmp.path(), &npy_bytes(1, &header("<f4", "(1000000000000, 1000)"), &[0; 8]));
    let err = npy::read(&p).unwrap_err();
    assert!(matches!(err, DatasetError::FileSize { actual: 136, .. }), "{err}");
    let p = put(tmp.path(), &npy_bytes(1, &header("<i4", "(3, 2)"), &[0; 20]));
    match npy::read(&p).unwrap_err() {
        DatasetError::FileSize { expected, actual, .. } => assert_eq!(expected - actual, 4),
        e => panic!("wrong error: {e}"),
    }
    // Header length field pointing past the end of the file.
    let mut bytes = npy_bytes(2, &header("<i4", "(1,)"), &[]);
    bytes[8..12].copy_from_slice(&5000u32.to_le_bytes());
    let p = put(tmp.path(), &bytes);
    let err = npy::read(&p).unwrap_err();
    assert!(matches!(err, DatasetError::FileSize { expected: 5012, .. }), "{err}");
    // A 4 GiB header length is refused before anything is read.
    bytes[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    let p = put(tmp.path(), &bytes);
    assert!(matches!(npy::read(&p).unwrap_err(), DatasetError::Format { offset: 8, .. }));
}

#[test]
fn edge_index_arrays_load_as_graphs() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("edges.npy");
    npy::write(&p, &[2, 3], &NpyData::I64(vec![0, 1, 2, 1, 2, 0])).unwrap();
    let ds = npy::load_edge_index(&p, None).unwrap();
    assert_eq!((ds.num_nodes, ds.src.clone(), ds.dst.clone()), (3, vec![0, 1, 2], vec![1, 2, 0]));
    npy::write(&p, &[3, 2], &NpyData::I32(vec![0, 1, 1, 2, 2, 0])).unwrap();
    let ds2 = npy::load_edge_index(&p, Some(4)).unwrap();
    assert_eq!((ds2.num_nodes, ds2.src, ds2.dst), (4, ds.src, ds.dst));
    let err = npy::load_edge_index(&p, Some(2)).unwrap_err();
    assert!(matches!(err, DatasetError::IdOutOfRange { position: 3, value: 2, bound: 2, .. }), "{err}");
    npy::write(&p, &[2, 2], &NpyData::F32(vec![0.0; 4])).unwrap();
    assert!(matches!(npy::load_edge_index(&p, None).unwrap_err(), DatasetError::Format { .. }));
    npy::write(&p, &[3, 3], &NpyData::I32(vec![0; 9])).unwrap();
    assert!(matches!(npy::load_edge_index(&p, None).unwrap_err(), DatasetError::Format { .. }));
}
