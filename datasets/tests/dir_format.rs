//! The directory format: round trips at both id widths, and one test per
//! kind of malformed directory, each asserting the specific error.

use gnnkern_datasets::{Dataset, DatasetError, Features, IndexWidth, load_dir, open, write_dir};
use std::path::Path;

fn sample() -> Dataset {
    Dataset {
        name: "tiny".into(),
        num_nodes: 5,
        src: vec![0, 1, 2, 3, 4, 4],
        dst: vec![1, 2, 3, 4, 0, 4],
        feat: Some(Features { data: (0..15).map(|x| x as f32 * 0.5 - 2.0).collect(), dim: 3 }),
        labels: Some(vec![0, 1, -1, 2, 1]),
        etype: Some(vec![0, 1, 0, 2, 1, 0]),
        train: Some(vec![0, 1]),
        val: Some(vec![3]),
        test: Some(vec![4, 2]),
        meta: None,
    }
}

fn without_meta(mut ds: Dataset) -> Dataset {
    ds.meta = None;
    ds
}

fn roundtrip(width: IndexWidth) {
    let tmp = tempfile::tempdir().unwrap();
    let ds = sample();
    write_dir(&ds, tmp.path(), width).unwrap();
    let size = std::fs::metadata(tmp.path().join("src.bin")).unwrap().len();
    assert_eq!(size, 6 * width.size() as u64);
    assert_eq!(std::fs::metadata(tmp.path().join("train.bin")).unwrap().len(), 2 * width.size() as u64);
    let back = load_dir(tmp.path()).unwrap();
    let meta = back.meta.clone().unwrap();
    assert_eq!(meta["index_dtype"], format!("{} little-endian", width.dtype_name()));
    assert_eq!(meta["num_edges"], 6);
    assert_eq!(meta["feat_dim"], 3);
    assert_eq!(meta["num_relations"], 3);
    assert_eq!(without_meta(back), ds);
}

#[test]
fn roundtrip_int32() {
    roundtrip(IndexWidth::I32);
}

#[test]
fn roundtrip_int64() {
    roundtrip(IndexWidth::I64);
}

#[test]
fn ids_beyond_int32_need_int64() {
    let tmp = tempfile::tempdir().unwrap();
    let big = 3_000_000_000i64;
    let ds = Dataset::from_edges("big", big as usize + 1, vec![0, big], vec![big, 1]);
    let out = tmp.path().join("big");
    let err = write_dir(&ds, &out, IndexWidth::I32).unwrap_err();
    assert!(matches!(err, DatasetError::IndexOverflow { value, index_type: "int32", .. } if value == big), "{err}");
    assert!(!out.exists(), "nothing may be written when the width is too small");
    write_dir(&ds, &out, IndexWidth::I64).unwrap();
    let back = load_dir(&out).unwrap();
    assert_eq!(back.src, vec![0, big]);
    let err = back.graph::<i32>().unwrap_err();
    assert!(matches!(err, DatasetError::IndexOverflow { ref what, .. } if what == "num_nodes"), "{err}");
}

fn written() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    write_dir(&sample(), tmp.path(), IndexWidth::I32).unwrap();
    tmp
}

fn set_meta(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let p = dir.join("meta.json");
    let mut v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&p, v.to_string()).unwrap();
}

fn file_name(p: &Path) -> &str {
    p.file_name().unwrap().to_str().unwrap()
}

#[test]
fn truncated_edge_file_names_expected_and_actual_bytes() {
    let tmp = written();
    let p = tmp.path().join("src.bin");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 4]).unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::FileSize { path, expected, actual, .. } => {
            assert_eq!(file_name(&path), "src.bin");
            assert_eq!((expected, actual), (24, 20));
        }
        e => panic!("wrong error: {e}"),
    }
}

#[test]
fn feature_file_of_the_wrong_dtype_size_is_rejected() {
    let tmp = written();
    // float64 features where float32 is expected: twice the bytes.
    std::fs::write(tmp.path().join("feat.bin"), vec![0u8; 15 * 8]).unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::FileSize { path, expected, actual, .. } => {
            assert_eq!(file_name(&path), "feat.bin");
            assert_eq!((expected, actual), (60, 120));
        }
        e => panic!("wrong error: {e}"),
    }
}

#[test]
fn ragged_split_file_is_rejected() {
    let tmp = written();
    std::fs::write(tmp.path().join("val.bin"), [1u8, 0, 0, 0, 2, 0]).unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::RaggedFile { path, actual: 6, elem_size: 4, .. } => assert_eq!(file_name(&path), "val.bin"),
        e => panic!("wrong error: {e}"),
    }
}

#[test]
fn out_of_range_ids_name_file_and_position() {
    let tmp = written();
    let mut dst: Vec<u8> = [1i32, 2, 3, 4, 0, 4].iter().flat_map(|x| x.to_le_bytes()).collect();
    dst[12..16].copy_from_slice(&7i32.to_le_bytes());
    std::fs::write(tmp.path().join("dst.bin"), &dst).unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::IdOutOfRange { path, position: 3, value: 7, bound: 5 } => assert_eq!(file_name(&path), "dst.bin"),
        e => panic!("wrong error: {e}"),
    }
    let tmp = written();
    std::fs::write(tmp.path().join("test.bin"), (-1i32).to_le_bytes()).unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::IdOutOfRange { path, position: 0, value: -1, .. } => assert_eq!(file_name(&path), "test.bin"),
        e => panic!("wrong error: {e}"),
    }
}

#[test]
fn relation_ids_are_checked_against_num_relations() {
    let tmp = written();
    set_meta(tmp.path(), |m| m["num_relations"] = 2.into());
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::IdOutOfRange { path, position: 3, value: 2, bound: 2 } => {
            assert_eq!(file_name(&path), "etype.bin")
        }
        e => panic!("wrong error: {e}"),
    }
}

#[test]
fn labels_below_minus_one_are_rejected() {
    let tmp = written();
    let labels: Vec<u8> = [0i32, 1, -3, 2, 1].iter().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(tmp.path().join("labels.bin"), labels).unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::Format { path, offset: 8, .. } => assert_eq!(file_name(&path), "labels.bin"),
        e => panic!("wrong error: {e}"),
    }
}

fn meta_error_field(edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let tmp = written();
    set_meta(tmp.path(), edit);
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::BadMeta { path, field, .. } => {
            assert_eq!(file_name(&path), "meta.json");
            field
        }
        e => panic!("wrong error: {e}"),
    }
}

#[test]
fn bad_meta_fields_are_named() {
    let obj = |m: &mut serde_json::Value| m.as_object_mut().unwrap().clone();
    assert_eq!(
        meta_error_field(|m| {
            m.as_object_mut().unwrap().remove("num_nodes");
        }),
        "num_nodes"
    );
    assert_eq!(meta_error_field(|m| m["num_edges"] = (-6).into()), "num_edges");
    assert_eq!(meta_error_field(|m| m["num_edges"] = "six".into()), "num_edges");
    assert_eq!(meta_error_field(|m| m["feat_dim"] = 2.5.into()), "feat_dim");
    assert_eq!(meta_error_field(|m| m["index_dtype"] = "int16".into()), "index_dtype");
    assert_eq!(meta_error_field(|m| m["name"] = 3.into()), "name");
    assert_eq!(meta_error_field(|m| *m = serde_json::Value::Array(vec![obj(m).into()])), "(root)");
    // feat.bin present but meta says there are no features.
    assert_eq!(meta_error_field(|m| m["feat_dim"] = 0.into()), "feat_dim");
}

#[test]
fn malformed_meta_json_names_the_line() {
    let tmp = written();
    std::fs::write(tmp.path().join("meta.json"), "{\n  \"num_nodes\": 5,\n  \"num_edges\": ,\n}").unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::Parse { path, line: 3, .. } => assert_eq!(file_name(&path), "meta.json"),
        e => panic!("wrong error: {e}"),
    }
}

#[test]
fn edge_count_inconsistent_with_meta_is_a_size_error() {
    let tmp = written();
    set_meta(tmp.path(), |m| m["num_edges"] = 7.into());
    let err = load_dir(tmp.path()).unwrap_err();
    assert!(matches!(err, DatasetError::FileSize { expected: 28, actual: 24, .. }), "{err}");
}

#[test]
fn missing_files_are_named() {
    let tmp = written();
    std::fs::remove_file(tmp.path().join("dst.bin")).unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::MissingFile { path, .. } => assert_eq!(file_name(&path), "dst.bin"),
        e => panic!("wrong error: {e}"),
    }
    let tmp = written();
    std::fs::remove_file(tmp.path().join("feat.bin")).unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::MissingFile { path, .. } => assert_eq!(file_name(&path), "feat.bin"),
        e => panic!("wrong error: {e}"),
    }
    let tmp = tempfile::tempdir().unwrap();
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::MissingFile { path, .. } => assert_eq!(file_name(&path), "meta.json"),
        e => panic!("wrong error: {e}"),
    }
}

#[test]
fn rewriting_removes_files_the_new_dataset_lacks() {
    let tmp = written();
    let plain = Dataset::from_edges("plain", 3, vec![0, 1], vec![1, 2]);
    write_dir(&plain, tmp.path(), IndexWidth::I64).unwrap();
    for f in ["feat.bin", "labels.bin", "etype.bin", "train.bin", "val.bin", "test.bin"] {
        assert!(!tmp.path().join(f).exists(), "{f} left behind");
    }
    let back = load_dir(tmp.path()).unwrap();
    assert_eq!(without_meta(back), plain);
}

#[test]
fn invalid_datasets_are_not_written() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let mut ds = sample();
    ds.dst[2] = 5;
    let err = write_dir(&ds, &out, IndexWidth::I32).unwrap_err();
    assert!(matches!(err, DatasetError::Invalid { .. }), "{err}");
    assert!(err.to_string().contains("dst[2] = 5"), "{err}");
    let mut ds = sample();
    ds.feat.as_mut().unwrap().data.pop();
    assert!(matches!(write_dir(&ds, &out, IndexWidth::I32).unwrap_err(), DatasetError::Invalid { .. }));
    assert!(!out.exists());
}

#[test]
fn open_takes_a_directory_or_a_spec() {
    let tmp = written();
    assert_eq!(open(tmp.path().to_str().unwrap()).unwrap().num_edges(), 6);
    assert_eq!(open("chain:4").unwrap().num_edges(), 3);
    let err = open("/no/such/dir").unwrap_err();
    assert!(matches!(err, DatasetError::BadSpec { .. }), "{err}");
    assert!(err.to_string().contains("no directory"), "{err}");
}

#[test]
fn graph_conversion_keeps_edges() {
    let ds = sample();
    let g = ds.graph::<i32>().unwrap();
    assert_eq!((g.num_src(), g.num_dst(), g.num_edges()), (5, 5, 6));
    let (s, d) = g.coo();
    assert_eq!(s, &[0, 1, 2, 3, 4, 4]);
    assert_eq!(d, &[1, 2, 3, 4, 0, 4]);
    assert_eq!(g.in_degrees(), ds.in_degrees());
}

#[test]
fn a_failed_rewrite_does_not_look_like_a_dataset() {
    let tmp = written();
    // Make writing labels.bin fail midway through the rewrite.
    std::fs::remove_file(tmp.path().join("labels.bin")).unwrap();
    std::fs::create_dir(tmp.path().join("labels.bin")).unwrap();
    let err = write_dir(&sample(), tmp.path(), IndexWidth::I64).unwrap_err();
    assert!(matches!(err, DatasetError::Io { op: "create", ref path, .. } if file_name(path) == "labels.bin"), "{err}");
    match load_dir(tmp.path()).unwrap_err() {
        DatasetError::MissingFile { path, .. } => assert_eq!(file_name(&path), "meta.json"),
        e => panic!("a half-written directory loaded: {e}"),
    }
}
