//! The directory format: `../shared/datasets` layout, also our own output.
//!
//! ```text
//! meta.json            num_nodes, num_edges, feat_dim (default 0),
//!                      index_dtype ("int32" default | "int64", optional
//!                      " little-endian" suffix), anything else kept as is
//! src.bin, dst.bin     node ids, index_dtype LE, num_edges each
//! feat.bin             float32 LE [num_nodes, feat_dim], iff feat_dim > 0
//! labels.bin           int32 LE [num_nodes], -1 = unlabeled      (optional)
//! etype.bin            int32 LE [num_edges], relation id >= 0    (optional)
//! train/val/test.bin   node ids, index_dtype LE                  (optional)
//! ```
//!
//! Loading maps each file, checks its byte size against `meta.json` (a
//! truncated file names the expected and actual bytes) and every id against
//! its bound (naming the file and entry), and decodes it once into the
//! [`Dataset`]. Writing validates the whole dataset and the id width first,
//! so invalid input writes nothing (only an I/O failure midway can leave a
//! partial directory, and then its `meta.json` — removed first, written
//! last — is absent, so the loader refuses it); files of the format that the dataset does not have are removed
//! so the directory cannot mix two datasets.

use crate::binio;
use crate::dataset::{Dataset, Features, IndexWidth};
use crate::error::{DatasetError, Result};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Every data file name of the format (besides `meta.json`).
const DATA_FILES: [&str; 8] =
    ["src.bin", "dst.bin", "feat.bin", "labels.bin", "etype.bin", "train.bin", "val.bin", "test.bin"];

/// The fields of `meta.json` the loader needs.
struct Meta {
    name: Option<String>,
    num_nodes: usize,
    num_edges: usize,
    feat_dim: usize,
    index: IndexWidth,
    num_relations: Option<usize>,
    doc: Value,
}

fn read_meta(path: &Path) -> Result<Meta> {
    if !path.exists() {
        return Err(DatasetError::MissingFile {
            path: path.to_path_buf(),
            why: "a dataset directory needs meta.json with num_nodes and num_edges".into(),
        });
    }
    let text = std::fs::read_to_string(path).map_err(|e| DatasetError::io(path, "read", e))?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| DatasetError::parse(path, e.line(), format!("malformed JSON: {e}")))?;
    let obj = doc.as_object().ok_or_else(|| DatasetError::meta(path, "(root)", "is not a JSON object"))?;
    let count = |field: &str, required: bool| -> Result<Option<usize>> {
        match obj.get(field) {
            None if required => Err(DatasetError::meta(path, field, "is missing")),
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|x| usize::try_from(x).ok())
                .map(Some)
                .ok_or_else(|| DatasetError::meta(path, field, format!("{v} is not a non-negative integer"))),
        }
    };
    let index = match obj.get("index_dtype") {
        None => IndexWidth::I32,
        Some(Value::String(s)) => {
            s.parse().map_err(|_| DatasetError::meta(path, "index_dtype", format!("{s:?} is not int32 or int64")))?
        }
        Some(v) => return Err(DatasetError::meta(path, "index_dtype", format!("{v} is not a string"))),
    };
    let name = match obj.get("name") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => return Err(DatasetError::meta(path, "name", format!("{v} is not a string"))),
    };
    Ok(Meta {
        name,
        num_nodes: count("num_nodes", true)?.unwrap_or(0),
        num_edges: count("num_edges", true)?.unwrap_or(0),
        feat_dim: count("feat_dim", false)?.unwrap_or(0),
        index,
        num_relations: count("num_relations", false)?,
        doc,
    })
}

/// Loads a dataset directory (see the module docs for the layout).
pub fn load_dir(path: &Path) -> Result<Dataset> {
    let meta_path = path.join("meta.json");
    let meta = read_meta(&meta_path)?;
    let (n, e) = (meta.num_nodes, meta.num_edges);
    let file = |name: &str| -> PathBuf { path.join(name) };

    let mut ends = Vec::with_capacity(2);
    for name in ["src.bin", "dst.bin"] {
        let p = file(name);
        if !p.exists() {
            return Err(DatasetError::MissingFile { path: p, why: "every dataset directory has edges".into() });
        }
        let ids = binio::read_ids(&p, meta.index, Some((e, "num_edges in meta.json")))?;
        binio::check_ids_in_file(&p, &ids, n)?;
        ends.push(ids);
    }
    let dst = ends.pop().expect("two edge arrays");
    let src = ends.pop().expect("two edge arrays");

    let feat_path = file("feat.bin");
    let feat = if meta.feat_dim > 0 {
        if !feat_path.exists() {
            return Err(DatasetError::MissingFile {
                path: feat_path,
                why: format!("meta.json has feat_dim = {}", meta.feat_dim),
            });
        }
        let count = n.checked_mul(meta.feat_dim).ok_or_else(|| {
            DatasetError::meta(&meta_path, "feat_dim", format!("num_nodes {n} x feat_dim {} overflows", meta.feat_dim))
        })?;
        let data = binio::read_f32(&feat_path, Some((count, "num_nodes x feat_dim in meta.json")))?;
        Some(Features { data, dim: meta.feat_dim })
    } else {
        if feat_path.exists() {
            return Err(DatasetError::meta(&meta_path, "feat_dim", "is 0 (or absent) but feat.bin exists"));
        }
        None
    };

    let labels = optional(&file("labels.bin"), |p| {
        let l = binio::read_i32(p, Some((n, "num_nodes in meta.json")))?;
        match l.iter().position(|&c| c < -1) {
            Some(i) => Err(DatasetError::format(p, i as u64 * 4, format!("label {} is below -1 (unlabeled)", l[i]))),
            None => Ok(l),
        }
    })?;
    let etype = optional(&file("etype.bin"), |p| {
        let t = binio::read_i32(p, Some((e, "num_edges in meta.json")))?;
        let bound = meta.num_relations.unwrap_or(i32::MAX as usize);
        match t.iter().position(|&r| r < 0 || r as usize >= bound) {
            Some(i) => {
                Err(DatasetError::IdOutOfRange { path: p.to_path_buf(), position: i, value: i64::from(t[i]), bound })
            }
            None => Ok(t),
        }
    })?;
    let split = |name: &str| {
        optional(&file(name), |p| {
            let ids = binio::read_ids(p, meta.index, None)?;
            binio::check_ids_in_file(p, &ids, n)?;
            Ok(ids)
        })
    };
    let ds = Dataset {
        name: meta.name.unwrap_or_else(|| path.file_name().map_or_else(String::new, |s| s.to_string_lossy().into())),
        num_nodes: n,
        src,
        dst,
        feat,
        labels,
        etype,
        train: split("train.bin")?,
        val: split("val.bin")?,
        test: split("test.bin")?,
        meta: Some(meta.doc),
    };
    debug_assert!(ds.validate().is_ok());
    Ok(ds)
}

fn optional<T>(path: &Path, read: impl FnOnce(&Path) -> Result<T>) -> Result<Option<T>> {
    if path.exists() { read(path).map(Some) } else { Ok(None) }
}

/// Writes `ds` as a dataset directory with ids of width `index`, creating
/// the directory if needed. `ds.meta` (if an object) is kept, with the
/// fields this format defines overwritten.
pub fn write_dir(ds: &Dataset, path: &Path, index: IndexWidth) -> Result<()> {
    ds.validate()?;
    if ds.num_nodes > 0 && (ds.num_nodes - 1) as u64 > index.max_id() as u64 {
        return Err(DatasetError::IndexOverflow {
            what: "largest node id".into(),
            value: (ds.num_nodes - 1) as i64,
            index_type: index.dtype_name(),
        });
    }
    std::fs::create_dir_all(path).map_err(|e| DatasetError::io(path, "create directory", e))?;
    // A partial write must not look like a dataset: meta.json goes first
    // and comes back last.
    let meta_path = path.join("meta.json");
    if meta_path.exists() {
        std::fs::remove_file(&meta_path).map_err(|e| DatasetError::io(&meta_path, "remove", e))?;
    }

    let mut written: Vec<&str> = vec!["src.bin", "dst.bin"];
    binio::write_ids(&path.join("src.bin"), &ds.src, index)?;
    binio::write_ids(&path.join("dst.bin"), &ds.dst, index)?;
    if let Some(f) = &ds.feat
        && f.dim > 0
    {
        binio::write_f32(&path.join("feat.bin"), &f.data)?;
        written.push("feat.bin");
    }
    if let Some(l) = &ds.labels {
        binio::write_i32(&path.join("labels.bin"), l)?;
        written.push("labels.bin");
    }
    if let Some(t) = &ds.etype {
        binio::write_i32(&path.join("etype.bin"), t)?;
        written.push("etype.bin");
    }
    for (name, split) in [("train.bin", &ds.train), ("val.bin", &ds.val), ("test.bin", &ds.test)] {
        if let Some(ids) = split {
            binio::write_ids(&path.join(name), ids, index)?;
            written.push(name);
        }
    }
    for stale in DATA_FILES.iter().filter(|f| !written.contains(f)) {
        let p = path.join(stale);
        if p.exists() {
            std::fs::remove_file(&p).map_err(|e| DatasetError::io(&p, "remove stale file", e))?;
        }
    }

    let mut meta = match &ds.meta {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let feat_dim = ds.feat.as_ref().map_or(0, |f| f.dim);
    written.push("meta.json");
    written.sort_unstable();
    meta.insert("name".into(), Value::from(ds.name.clone()));
    meta.insert("num_nodes".into(), Value::from(ds.num_nodes));
    meta.insert("num_edges".into(), Value::from(ds.num_edges()));
    meta.insert("feat_dim".into(), Value::from(feat_dim));
    meta.insert("index_dtype".into(), Value::from(format!("{} little-endian", index.dtype_name())));
    meta.insert("files".into(), Value::from(written));
    if ds.etype.is_some() {
        // A declared count may exceed max(etype) + 1 (unused relations).
        let declared = meta.get("num_relations").and_then(Value::as_u64).unwrap_or(0) as usize;
        meta.insert("num_relations".into(), Value::from(declared.max(ds.num_relations())));
    } else {
        meta.remove("num_relations");
    }
    let text = serde_json::to_string_pretty(&Value::Object(meta)).expect("a JSON map always serializes");
    std::fs::write(&meta_path, text + "\n").map_err(|e| DatasetError::io(&meta_path, "write", e))
}
