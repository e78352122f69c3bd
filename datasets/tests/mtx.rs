//! Matrix Market: every field/symmetry combination we accept, the ones we
//! reject, and malformed files with the line each error names.

use gnnkern_datasets::DatasetError;
use gnnkern_datasets::mtx::{self, Field, Symmetry};
use std::path::{Path, PathBuf};

fn put(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("m.mtx");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn general_pattern_is_one_edge_per_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let p = put(tmp.path(), "%%MatrixMarket matrix coordinate pattern general\n% a comment\n\n3 4 3\n1 2\n3 4\n2 2\n");
    let m = mtx::read(&p).unwrap();
    assert_eq!((m.rows, m.cols, m.field, m.symmetry), (3, 4, Field::Pattern, Symmetry::General));
    assert_eq!((m.row, m.col, m.values), (vec![0, 2, 1], vec![1, 3, 1], None));
    let ds = mtx::load(&p).unwrap();
    assert_eq!(ds.num_nodes, 4);
    assert_eq!(ds.num_edges(), 3);
    assert_eq!(ds.meta.unwrap()["directed"], true);
}

#[test]
fn symmetric_expands_both_directions_and_keeps_the_diagonal_once() {
    let tmp = tempfile::tempdir().unwrap();
    let p =
        put(tmp.path(), "%%MatrixMarket matrix coordinate real symmetric\r\n3 3 3\r\n2 1 0.5\r\n3 3 -2\r\n3 1 1e3\r\n");
    let m = mtx::read(&p).unwrap();
    assert_eq!(m.row, vec![1, 0, 2, 2, 0]);
    assert_eq!(m.col, vec![0, 1, 2, 0, 2]);
    assert_eq!(m.values, Some(vec![0.5, 0.5, -2.0, 1000.0, 1000.0]));
}

#[test]
fn integer_values_and_case_insensitive_banner() {
    let tmp = tempfile::tempdir().unwrap();
    let p = put(tmp.path(), "%%MatrixMarket MATRIX Coordinate Integer General\n2 2 2\n1 1 7\n2 1 -3\n");
    let m = mtx::read(&p).unwrap();
    assert_eq!((m.field, m.values), (Field::Integer, Some(vec![7.0, -3.0])));
}

fn parse_error(text: &str) -> (usize, String) {
    let tmp = tempfile::tempdir().unwrap();
    let p = put(tmp.path(), text);
    match mtx::read(&p).unwrap_err() {
        DatasetError::Parse { line, problem, path } => {
            assert_eq!(path, p);
            (line, problem)
        }
        e => panic!("expected a parse error, got {e}"),
    }
}

#[test]
fn malformed_files_name_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "empty"),
        ("%%MatrixMarket matrix\n", 1, "banner"),
        ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1, "only coordinate"),
        ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", 1, "complex"),
        ("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", 1, "hermitian"),
        ("%%MatrixMarket matrix coordinate pattern general\n% only comments\n", 2, "missing size line"),
        ("%%MatrixMarket matrix coordinate pattern general\n2 2\n", 2, "ROWS COLS NNZ"),
        ("%%MatrixMarket matrix coordinate pattern general\n2 -2 1\n1 1\n", 2, "negative"),
        ("%%MatrixMarket matrix coordinate pattern symmetric\n2 3 1\n1 1\n", 2, "square"),
        ("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n3 1\n", 4, "row 3 is out of range 1..=2"),
        ("%%MatrixMarket matrix coordinate pattern general\n2 2 2\n1 2\n1 0\n", 4, "column 0 is out of range"),
        ("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 x\n", 3, "\"x\" is not an integer"),
        ("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1\n", 3, "expected 3 fields"),
        ("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 nope\n", 3, "not a number"),
        ("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 2.5\n", 3, "not an integer"),
        ("%%MatrixMarket matrix coordinate pattern general\n2 2 3\n1 2\n2 1\n", 4, "2 of 3 declared"),
        ("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n2 1\n", 4, "more entries"),
        ("%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n2 1\n1 3\n", 4, "above the diagonal"),
    ];
    for &(text, line, want) in cases {
        let (l, msg) = parse_error(text);
        assert_eq!(l, line, "{text:?}: {msg}");
        assert!(msg.contains(want), "{text:?}: got {msg:?}, want {want:?}");
    }
}

/// Rebuilds karate as a symmetric pattern file (lower triangle, as
/// SuiteSparse ships it) and checks the loader reproduces the stored edges.
#[test]
fn karate_from_matrix_market_matches_the_shared_copy() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets/karate");
    if !dir.exists() {
        println!("SKIPPED: {} is absent (the shared datasets live beside the repository)", dir.display());
        return;
    }
    let shared = gnnkern_datasets::load_dir(&dir).unwrap();
    let lower: Vec<(i64, i64)> =
        shared.src.iter().zip(&shared.dst).filter(|(s, d)| s > d).map(|(&s, &d)| (s, d)).collect();
    let mut text = format!("%%MatrixMarket matrix coordinate pattern symmetric\n34 34 {}\n", lower.len());
    for (s, d) in &lower {
        text.push_str(&format!("{} {}\n", s + 1, d + 1));
    }
    let tmp = tempfile::tempdir().unwrap();
    let ds = mtx::load(&put(tmp.path(), &text)).unwrap();
    assert_eq!(ds.num_nodes, 34);
    assert_eq!(ds.num_edges(), 156);
    let mut got: Vec<(i64, i64)> = ds.src.iter().copied().zip(ds.dst.iter().copied()).collect();
    let mut want: Vec<(i64, i64)> = shared.src.iter().copied().zip(shared.dst.iter().copied()).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}
