//! OGB node-property layout: a tiny dataset written with gzip, and each
//! malformed variant with the file and line its error names.

use flate2::Compression;
use flate2::write::GzEncoder;
use gnnkern_datasets::{DatasetError, ogb};
use std::io::Write;
use std::path::Path;

fn gz(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut enc = GzEncoder::new(std::fs::File::create(path).unwrap(), Compression::fast());
    enc.write_all(text.as_bytes()).unwrap();
    enc.finish().unwrap();
}

fn layout() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    gz(&r.join("raw/num-node-list.csv.gz"), "4\n");
    gz(&r.join("raw/num-edge-list.csv.gz"), "3\n");
    gz(&r.join("raw/edge.csv.gz"), "0,1\n1,2\n3,0\n");
    gz(&r.join("raw/node-feat.csv.gz"), "0.5,1\n-1,2e-1\n0,0\n3,4\n");
    gz(&r.join("raw/node-label.csv.gz"), "2\n0\nnan\n1.0\n");
    gz(&r.join("split/time/train.csv.gz"), "0\n1\n");
    gz(&r.join("split/time/valid.csv.gz"), "3\n");
    gz(&r.join("split/time/test.csv.gz"), "2\n");
    tmp
}

#[test]
fn loads_every_part_of_the_layout() {
    let tmp = layout();
    let ds = ogb::load(tmp.path(), None).unwrap();
    assert_eq!(ds.num_nodes, 4);
    assert_eq!((ds.src.clone(), ds.dst.clone()), (vec![0, 1, 3], vec![1, 2, 0]));
    let f = ds.feat.clone().unwrap();
    assert_eq!(f.dim, 2);
    assert_eq!(f.data, vec![0.5, 1.0, -1.0, 0.2, 0.0, 0.0, 3.0, 4.0]);
    assert_eq!(ds.labels, Some(vec![2, 0, -1, 1]));
    assert_eq!((ds.train, ds.val, ds.test), (Some(vec![0, 1]), Some(vec![3]), Some(vec![2])));
    let named = ogb::load(tmp.path(), Some("time")).unwrap();
    assert_eq!(named.num_edges(), 3);
}

#[test]
fn optional_parts_may_be_absent() {
    let tmp = layout();
    for f in ["raw/node-feat.csv.gz", "raw/node-label.csv.gz", "raw/num-edge-list.csv.gz"] {
        std::fs::remove_file(tmp.path().join(f)).unwrap();
    }
    std::fs::remove_dir_all(tmp.path().join("split")).unwrap();
    let ds = ogb::load(tmp.path(), None).unwrap();
    assert!(ds.feat.is_none() && ds.labels.is_none() && ds.train.is_none());
}

/// Replaces `file` with `content` and returns the parse error's file
/// (relative to the root), line and message.
fn parse_error(file: &str, content: &str) -> (String, usize, String) {
    let tmp = layout();
    gz(&tmp.path().join(file), content);
    match ogb::load(tmp.path(), None).unwrap_err() {
        DatasetError::Parse { path, line, problem } => {
            (path.strip_prefix(tmp.path()).unwrap().display().to_string(), line, problem)
        }
        e => panic!("expected a parse error, got {e}"),
    }
}

#[test]
fn malformed_files_name_file_and_line() {
    // (file replaced, its new content, file the error names, line, message)
    let cases = [
        ("raw/edge.csv.gz", "0,1\n1,4\n", "raw/edge.csv.gz", 2, "out of range 0..4"),
        ("raw/edge.csv.gz", "0,1\n1\n", "raw/edge.csv.gz", 2, "SRC,DST"),
        ("raw/edge.csv.gz", "0,1\n2,0\n", "raw/num-edge-list.csv.gz", 1, "declares 3"),
        ("raw/num-node-list.csv.gz", "4\n5\n", "raw/num-node-list.csv.gz", 2, "single-graph"),
        ("raw/num-node-list.csv.gz", "", "raw/num-node-list.csv.gz", 1, "empty"),
        ("raw/node-feat.csv.gz", "1,2\n3\n", "raw/node-feat.csv.gz", 2, "1 features"),
        ("raw/node-feat.csv.gz", "1,2\n3,x\n", "raw/node-feat.csv.gz", 2, "not a number"),
        ("raw/node-feat.csv.gz", "1,2\n3,4\n", "raw/node-feat.csv.gz", 2, "expected num_nodes"),
        ("raw/node-label.csv.gz", "1,0\n", "raw/node-label.csv.gz", 1, "2 label columns"),
        ("raw/node-label.csv.gz", "1\n0.5\n", "raw/node-label.csv.gz", 2, "not a class id"),
        ("split/time/test.csv.gz", "2\n9\n", "split/time/test.csv.gz", 2, "out of range"),
    ];
    for (replaced, content, file, line, want) in cases {
        let (f, l, msg) = parse_error(replaced, content);
        assert_eq!((f.as_str(), l), (file, line), "{msg}");
        assert!(msg.contains(want), "{file}: got {msg:?}, want {want:?}");
    }
}

#[test]
fn missing_files_and_ambiguous_splits() {
    let tmp = layout();
    std::fs::remove_file(tmp.path().join("raw/edge.csv.gz")).unwrap();
    let err = ogb::load(tmp.path(), None).unwrap_err();
    assert!(matches!(err, DatasetError::MissingFile { ref path, .. } if path.ends_with("raw/edge.csv.gz")), "{err}");

    let tmp = layout();
    gz(&tmp.path().join("split/random/train.csv.gz"), "0\n");
    let err = ogb::load(tmp.path(), None).unwrap_err();
    assert!(matches!(err, DatasetError::Invalid { .. }) && err.to_string().contains("random"), "{err}");
    let err = ogb::load(tmp.path(), Some("random")).unwrap_err();
    assert!(matches!(err, DatasetError::MissingFile { ref path, .. } if path.ends_with("valid.csv.gz")), "{err}");
    assert!(ogb::load(tmp.path(), Some("time")).is_ok());
    let err = ogb::load(tmp.path(), Some("nope")).unwrap_err();
    assert!(matches!(err, DatasetError::MissingFile { .. }), "{err}");
}

#[test]
fn corrupt_gzip_is_an_io_error_naming_the_file() {
    let tmp = layout();
    std::fs::write(tmp.path().join("raw/edge.csv.gz"), b"\x1f\x8b\x08\x00garbage").unwrap();
    match ogb::load(tmp.path(), None).unwrap_err() {
        DatasetError::Io { path, op: "decompress", .. } => assert!(path.ends_with("raw/edge.csv.gz")),
        e => panic!("wrong error: {e}"),
    }
}
