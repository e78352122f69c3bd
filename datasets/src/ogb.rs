//! OGB node-property datasets in their raw download layout.
//!
//! ```text
//! ROOT/raw/num-node-list.csv.gz    one line: N (single-graph datasets only)
//! ROOT/raw/edge.csv.gz             one `SRC,DST` line per edge
//! ROOT/raw/num-edge-list.csv.gz    one line: E (optional; checked if present)
//! ROOT/raw/node-feat.csv.gz        N lines of comma-separated floats (optional)
//! ROOT/raw/node-label.csv.gz       N lines, one integer or `nan` (-1) (optional)
//! ROOT/split/NAME/{train,valid,test}.csv.gz   one node id per line (optional)
//! ```
//!
//! `split` picks `NAME`; without it the only folder under `split/` is used
//! (several are an error listing them). Edges are loaded as stored: where
//! OGB's `master.csv` says `add_inverse_edge` (ogbn-products), the file
//! holds one direction per undirected edge and a caller wanting both adds
//! the reverses. Multi-column labels (ogbn-proteins) are rejected. Files are streamed through a gzip decoder;
//! errors name the file and line.

use crate::dataset::{Dataset, Features};
use crate::error::{DatasetError, Result};
use crate::text::{for_each_gz_line, int, real, tokens};
use std::path::{Path, PathBuf};

fn required(path: PathBuf, why: &str) -> Result<PathBuf> {
    if path.exists() { Ok(path) } else { Err(DatasetError::MissingFile { path, why: why.into() }) }
}

/// Reads a file holding exactly one non-negative integer line.
fn single_count(path: &Path) -> Result<usize> {
    let mut value = None;
    for_each_gz_line(path, |ln, line| {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        if value.is_some() {
            return Err(DatasetError::parse(
                path,
                ln,
                "several graphs listed; only single-graph datasets are supported",
            ));
        }
        let t: Vec<&[u8]> = tokens(line).collect();
        if t.len() != 1 {
            return Err(DatasetError::parse(path, ln, "expected one count"));
        }
        let x = int(path, ln, t[0], "count")?;
        value = Some(usize::try_from(x).map_err(|_| DatasetError::parse(path, ln, format!("count {x} is negative")))?);
        Ok(())
    })?;
    value.ok_or_else(|| DatasetError::parse(path, 1, "file is empty"))
}

/// Reads one node id per line, each below `n`.
fn id_list(path: &Path, n: usize) -> Result<Vec<i64>> {
    let mut ids = Vec::new();
    for_each_gz_line(path, |ln, line| {
        let t: Vec<&[u8]> = tokens(line).collect();
        match t.len() {
            0 => return Ok(()),
            1 => {}
            k => return Err(DatasetError::parse(path, ln, format!("expected one node id, found {k} fields"))),
        }
        let v = int(path, ln, t[0], "node id")?;
        if v < 0 || v as u64 >= n as u64 {
            return Err(DatasetError::parse(path, ln, format!("node id {v} is out of range 0..{n}")));
        }
        ids.push(v);
        Ok(())
    })?;
    Ok(ids)
}

/// Loads an OGB node-property dataset root (see the module docs).
pub fn load(root: &Path, split: Option<&str>) -> Result<Dataset> {
    let raw = root.join("raw");
    let n = single_count(&required(raw.join("num-node-list.csv.gz"), "OGB layout: raw/num-node-list.csv.gz")?)?;

    let edge_path = required(raw.join("edge.csv.gz"), "OGB layout: raw/edge.csv.gz")?;
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for_each_gz_line(&edge_path, |ln, line| {
        let t: Vec<&[u8]> = tokens(line).collect();
        match t.len() {
            0 => return Ok(()),
            2 => {}
            k => return Err(DatasetError::parse(&edge_path, ln, format!("expected `SRC,DST`, found {k} fields"))),
        }
        for (tok, what, out) in [(t[0], "source id", &mut src), (t[1], "destination id", &mut dst)] {
            let v = int(&edge_path, ln, tok, what)?;
            if v < 0 || v as u64 >= n as u64 {
                return Err(DatasetError::parse(&edge_path, ln, format!("{what} {v} is out of range 0..{n}")));
            }
            out.push(v);
        }
        Ok(())
    })?;
    let e_path = raw.join("num-edge-list.csv.gz");
    if e_path.exists() {
        let e = single_count(&e_path)?;
        if e != src.len() {
            return Err(DatasetError::parse(
                &e_path,
                1,
                format!("declares {e} edges but edge.csv.gz has {}", src.len()),
            ));
        }
    }

    let feat_path = raw.join("node-feat.csv.gz");
    let feat = if feat_path.exists() {
        let (mut data, mut dim, mut rows) = (Vec::new(), None, 0usize);
        for_each_gz_line(&feat_path, |ln, line| {
            let start = data.len();
            for tok in tokens(line) {
                data.push(real(&feat_path, ln, tok, "feature")? as f32);
            }
            let width = data.len() - start;
            if width == 0 {
                return Ok(());
            }
            if *dim.get_or_insert(width) != width {
                return Err(DatasetError::parse(
                    &feat_path,
                    ln,
                    format!("{width} features, previous rows have {}", dim.unwrap_or(0)),
                ));
            }
            rows += 1;
            if rows > n {
                return Err(DatasetError::parse(&feat_path, ln, format!("more than num_nodes = {n} rows")));
            }
            Ok(())
        })?;
        if rows != n {
            return Err(DatasetError::parse(&feat_path, rows, format!("{rows} rows, expected num_nodes = {n}")));
        }
        Some(Features { data, dim: dim.unwrap_or(0) })
    } else {
        None
    };

    let label_path = raw.join("node-label.csv.gz");
    let labels = if label_path.exists() {
        let mut labels = Vec::with_capacity(n);
        for_each_gz_line(&label_path, |ln, line| {
            let t: Vec<&[u8]> = tokens(line).collect();
            match t.len() {
                0 => return Ok(()),
                1 => {}
                k => {
                    return Err(DatasetError::parse(
                        &label_path,
                        ln,
                        format!("{k} label columns; only single-label node classification is supported"),
                    ));
                }
            }
            let c = if t[0].eq_ignore_ascii_case(b"nan") {
                -1
            } else {
                let x = real(&label_path, ln, t[0], "label")?;
                if x.fract() != 0.0 || x < -1.0 || x > f64::from(i32::MAX) {
                    return Err(DatasetError::parse(&label_path, ln, format!("label {x} is not a class id")));
                }
                x as i32
            };
            labels.push(c);
            Ok(())
        })?;
        if labels.len() != n {
            return Err(DatasetError::parse(
                &label_path,
                labels.len(),
                format!("{} labels, expected num_nodes = {n}", labels.len()),
            ));
        }
        Some(labels)
    } else {
        None
    };

    let split_dir = match split {
        Some(name) => Some(required(root.join("split").join(name), "the requested split")?),
        None => {
            let dir = root.join("split");
            if dir.is_dir() {
                let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
                    .map_err(|e| DatasetError::io(&dir, "list", e))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.is_dir())
                    .collect();
                names.sort();
                match names.len() {
                    0 => None,
                    1 => names.pop(),
                    _ => {
                        return Err(DatasetError::invalid(
                            "OGB split",
                            format!("{} holds several splits {names:?}; name one", dir.display()),
                        ));
                    }
                }
            } else {
                None
            }
        }
    };
    let part = |name: &str| -> Result<Option<Vec<i64>>> {
        match &split_dir {
            Some(d) => id_list(&required(d.join(name), "every OGB split has train, valid and test")?, n).map(Some),
            None => Ok(None),
        }
    };
    let name = root.file_name().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let ds = Dataset {
        train: part("train.csv.gz")?,
        val: part("valid.csv.gz")?,
        test: part("test.csv.gz")?,
        feat,
        labels,
        meta: Some(serde_json::json!({ "source": root.display().to_string(), "format": "ogb-node-property" })),
        ..Dataset::from_edges(name, n, src, dst)
    };
    ds.validate()?;
    Ok(ds)
}
