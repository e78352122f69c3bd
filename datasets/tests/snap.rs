//! SNAP edge lists: separators, comments, remapping, and bad lines.

use gnnkern_datasets::DatasetError;
use gnnkern_datasets::snap::{self, SnapOptions};
use std::path::{Path, PathBuf};

fn put(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("g.txt");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn comments_separators_and_extra_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let p = put(
        tmp.path(),
        "# Directed graph\n# FromNodeId\tToNodeId\n0\t1\n1,2\n  2 0 17 1234\n% matrix-style comment\n\n3 , 3\r\n",
    );
    let (ds, map) = snap::load(&p, SnapOptions::default()).unwrap();
    assert!(map.is_none());
    assert_eq!(ds.num_nodes, 4);
    assert_eq!(ds.src, vec![0, 1, 2, 3]);
    assert_eq!(ds.dst, vec![1, 2, 0, 3]);
    let (ds, _) = snap::load(&p, SnapOptions { num_nodes: Some(10), ..Default::default() }).unwrap();
    assert_eq!(ds.num_nodes, 10);
}

#[test]
fn remapping_sparse_ids_returns_the_map() {
    let tmp = tempfile::tempdir().unwrap();
    let p = put(tmp.path(), "1000000 7\n7 -5\n123456789012 1000000\n");
    let (ds, map) = snap::load(&p, SnapOptions { remap: true, num_nodes: None }).unwrap();
    let map = map.unwrap();
    assert_eq!(map, vec![-5, 7, 1_000_000, 123_456_789_012]);
    assert_eq!(ds.num_nodes, 4);
    assert_eq!(ds.src, vec![2, 1, 3]);
    assert_eq!(ds.dst, vec![1, 0, 2]);
    for (e, (&s, &d)) in ds.src.iter().zip(&ds.dst).enumerate() {
        let original = [(1_000_000, 7), (7, -5), (123_456_789_012, 1_000_000)][e];
        assert_eq!((map[s as usize], map[d as usize]), original);
    }
}

#[test]
fn empty_file_is_an_empty_graph() {
    let tmp = tempfile::tempdir().unwrap();
    let (ds, _) = snap::load(&put(tmp.path(), "# nothing\n"), SnapOptions::default()).unwrap();
    assert_eq!((ds.num_nodes, ds.num_edges()), (0, 0));
}

#[test]
fn bad_lines_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: &[(&str, SnapOptions, usize, &str)] = &[
        ("0 1\n5\n", SnapOptions::default(), 2, "two node ids"),
        ("0 1\n# c\n1 x\n", SnapOptions::default(), 3, "\"x\" is not an integer"),
        ("0 -1\n", SnapOptions::default(), 1, "-1 is not non-negative"),
        ("0 1\n1 4\n", SnapOptions { remap: false, num_nodes: Some(4) }, 2, "4 is not in 0..4"),
        ("0 99999999999999999999\n", SnapOptions { remap: true, num_nodes: None }, 1, "not an integer"),
    ];
    for (text, opts, line, want) in cases {
        match snap::load(&put(tmp.path(), text), *opts).unwrap_err() {
            DatasetError::Parse { line: l, problem, .. } => {
                assert_eq!(l, *line, "{text:?}");
                assert!(problem.contains(want), "{text:?}: {problem}");
            }
            e => panic!("wrong error: {e}"),
        }
    }
    let err = snap::load(&tmp.path().join("absent.txt"), SnapOptions::default()).unwrap_err();
    assert!(matches!(err, DatasetError::Io { op: "open", .. }), "{err}");
}
