//! Loads the real graphs of `../shared/datasets` and checks them against
//! their own `meta.json` (counts, feature width, classes, splits). Skips,
//! saying so, when the folder is absent.

use gnnkern_datasets::{IndexWidth, load_dir, write_dir};
use std::path::PathBuf;

fn shared(name: &str) -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets").join(name);
    if dir.is_dir() {
        Some(dir)
    } else {
        println!("SKIPPED: {} is absent (the shared datasets live beside the repository)", dir.display());
        None
    }
}

fn check_against_meta(name: &str) -> Option<gnnkern_datasets::Dataset> {
    let dir = shared(name)?;
    let ds = load_dir(&dir).unwrap();
    let meta = ds.meta.clone().unwrap();
    assert_eq!(ds.num_nodes as u64, meta["num_nodes"].as_u64().unwrap(), "{name}");
    assert_eq!(ds.num_edges() as u64, meta["num_edges"].as_u64().unwrap(), "{name}");
    assert_eq!(ds.feat.as_ref().map_or(0, |f| f.dim) as u64, meta["feat_dim"].as_u64().unwrap(), "{name}");
    if let Some(c) = meta.get("num_classes") {
        assert_eq!(ds.num_classes().unwrap() as u64, c.as_u64().unwrap(), "{name}");
    }
    if let Some(r) = meta.get("num_relations") {
        assert_eq!(ds.num_relations() as u64, r.as_u64().unwrap(), "{name}");
    }
    if let Some(sizes) = meta.get("split_sizes") {
        assert_eq!(ds.train.as_ref().unwrap().len() as u64, sizes["train"].as_u64().unwrap());
        assert_eq!(ds.test.as_ref().unwrap().len() as u64, sizes["test"].as_u64().unwrap());
    }
    let g = ds.graph::<i32>().unwrap();
    assert_eq!(g.num_edges(), ds.num_edges());
    Some(ds)
}

#[test]
fn cora_matches_its_meta_and_the_planetoid_split() {
    let Some(ds) = check_against_meta("cora") else { return };
    assert_eq!((ds.num_nodes, ds.num_edges()), (2708, 10556));
    assert_eq!(ds.train.as_ref().unwrap().len(), 140);
    assert_eq!(ds.val.as_ref().unwrap().len(), 500);
    assert_eq!(ds.test.as_ref().unwrap().len(), 1000);
    let feat = ds.feat.as_ref().unwrap();
    assert!(feat.data.iter().all(|&x| x == 0.0 || x == 1.0), "bag of words");
    assert_eq!(
        feat.data.iter().filter(|&&x| x == 1.0).count() as u64,
        ds.meta.as_ref().unwrap()["feat_nnz"].as_u64().unwrap()
    );
    // Undirected: in- and out-degrees agree.
    assert_eq!(ds.in_degrees(), ds.out_degrees());
}

#[test]
fn karate_matches_its_meta() {
    let Some(ds) = check_against_meta("karate") else { return };
    assert_eq!((ds.num_nodes, ds.num_edges()), (34, 156));
    assert_eq!(*ds.in_degrees().iter().max().unwrap(), 17);
}

#[test]
fn aifb_matches_its_meta_with_relations() {
    let Some(ds) = check_against_meta("aifb") else { return };
    assert_eq!((ds.num_nodes, ds.num_edges(), ds.num_relations()), (8285, 29043, 45));
    let labelled = ds.labels.as_ref().unwrap().iter().filter(|&&l| l >= 0).count();
    assert_eq!(labelled, 176);
}

#[test]
fn every_shared_dataset_loads_and_round_trips_as_int64() {
    let Some(root) = shared("") else { return };
    let mut names: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("meta.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for name in names {
        let ds = check_against_meta(&name).unwrap();
        if ds.num_edges() > 200_000 {
            continue; // keep the debug-mode test fast; small graphs cover the writer
        }
        let tmp = tempfile::tempdir().unwrap();
        write_dir(&ds, tmp.path(), IndexWidth::I64).unwrap();
        let mut back = load_dir(tmp.path()).unwrap();
        assert_eq!(back.meta.as_ref().unwrap()["index_dtype"], "int64 little-endian");
        back.meta = ds.meta.clone();
        assert!(back == ds, "{name} changed in an int64 round trip");
    }
}
