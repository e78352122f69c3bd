//! Planetoid raw files: fixtures pickled by Python itself (protocols 0 and
//! 2, see fixtures/planetoid/make_fixtures.py) must assemble to exactly what
//! Kipf's `load_data` computes (expected.json); damaged files give errors.

use gnnkern_datasets::{DatasetError, planetoid};
use std::path::{Path, PathBuf};

fn fixtures(proto: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/planetoid").join(proto)
}

fn expected() -> serde_json::Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/planetoid/expected.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn ints<T: TryFrom<i64>>(v: &serde_json::Value) -> Vec<T>
where
    T::Error: std::fmt::Debug,
{
    v.as_array().unwrap().iter().map(|x| T::try_from(x.as_i64().unwrap()).unwrap()).collect()
}

#[test]
fn python_pickles_assemble_like_kipfs_load_data() {
    let want = expected();
    for proto in ["p0", "p2"] {
        let ds = planetoid::load(&fixtures(proto), "tiny").unwrap();
        assert_eq!(ds.num_nodes as u64, want["num_nodes"].as_u64().unwrap(), "{proto}");
        let feat = ds.feat.as_ref().unwrap();
        assert_eq!(feat.dim as u64, want["feat_dim"].as_u64().unwrap());
        let want_feat: Vec<f32> = want["feat"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        assert_eq!(feat.data, want_feat, "{proto} features");
        assert_eq!(ds.labels.clone().unwrap(), ints::<i32>(&want["labels"]), "{proto} labels");
        assert_eq!(ds.src, ints::<i64>(&want["src"]), "{proto} src");
        assert_eq!(ds.dst, ints::<i64>(&want["dst"]), "{proto} dst");
        assert_eq!(ds.train.clone().unwrap(), ints::<i64>(&want["train"]));
        assert_eq!(ds.val.clone().unwrap(), ints::<i64>(&want["val"]));
        assert_eq!(ds.test.clone().unwrap(), ints::<i64>(&want["test"]));
        // The padded (missing) test rows are unlabelled, as in citeseer.
        assert_eq!(ds.labels.as_ref().unwrap()[507], -1);
    }
}

fn damaged(edit: impl FnOnce(&Path)) -> DatasetError {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixtures("p0")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), tmp.path().join(e.file_name())).unwrap();
    }
    edit(tmp.path());
    planetoid::load(tmp.path(), "tiny").unwrap_err()
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn damaged_files_are_named() {
    match damaged(|d| std::fs::remove_file(d.join("ind.tiny.graph")).unwrap()) {
        DatasetError::MissingFile { path, .. } => assert_eq!(name_of(&path), "ind.tiny.graph"),
        e => panic!("wrong error: {e}"),
    }
    // Truncated pickle.
    match damaged(|d| {
        let p = d.join("ind.tiny.ally");
        let b = std::fs::read(&p).unwrap();
        std::fs::write(&p, &b[..b.len() / 2]).unwrap();
    }) {
        DatasetError::Format { path, problem, .. } => {
            assert_eq!(name_of(&path), "ind.tiny.ally");
            assert!(problem.contains("pickle"), "{problem}");
        }
        e => panic!("wrong error: {e}"),
    }
    // A hostile length: a 4 GiB BINSTRING in a tiny file.
    match damaged(|d| std::fs::write(d.join("ind.tiny.tx"), b"\x80\x02T\xff\xff\xff\xffabc.").unwrap()) {
        DatasetError::Format { path, offset: 7, problem } => {
            assert_eq!(name_of(&path), "ind.tiny.tx");
            assert!(problem.contains("past the end"), "{problem}");
        }
        e => panic!("wrong error: {e}"),
    }
    // Unsupported opcode (PERSID).
    match damaged(|d| std::fs::write(d.join("ind.tiny.x"), b"Pid\n.").unwrap()) {
        DatasetError::Format { offset: 0, problem, .. } => assert!(problem.contains("opcode 0x50"), "{problem}"),
        e => panic!("wrong error: {e}"),
    }
    // The right pickle in the wrong place.
    match damaged(|d| std::fs::copy(d.join("ind.tiny.graph"), d.join("ind.tiny.allx")).map(|_| ()).unwrap()) {
        DatasetError::Format { path, problem, .. } => {
            assert_eq!(name_of(&path), "ind.tiny.allx");
            assert!(problem.contains("csr_matrix"), "{problem}");
        }
        e => panic!("wrong error: {e}"),
    }
    // Labels whose row count disagrees with the features.
    match damaged(|d| std::fs::copy(d.join("ind.tiny.y"), d.join("ind.tiny.ally")).map(|_| ()).unwrap()) {
        DatasetError::Format { path, problem, .. } => {
            assert_eq!(name_of(&path), "ind.tiny.ally");
            assert!(problem.contains("3 rows, allx has 505"), "{problem}");
        }
        e => panic!("wrong error: {e}"),
    }
    match damaged(|d| std::fs::write(d.join("ind.tiny.test.index"), "505\nfive\n").unwrap()) {
        DatasetError::Parse { path, line: 2, .. } => assert_eq!(name_of(&path), "ind.tiny.test.index"),
        e => panic!("wrong error: {e}"),
    }
}
