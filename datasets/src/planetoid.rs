//! Planetoid raw files (`ind.NAME.{x,y,tx,ty,allx,ally,graph,test.index}`,
//! Yang et al. 2016, as read by Kipf & Welling's GCN code).
//!
//! `x`, `tx`, `allx` are pickled `scipy.sparse.csr_matrix` feature rows (a
//! dense `numpy.ndarray` is accepted too), `y`, `ty`, `ally` one-hot
//! `numpy.ndarray` labels, `graph` a pickled `dict`/`defaultdict` of
//! adjacency lists, `test.index` one node id per line. The pickles (Python 2
//! or 3, protocols 0-2) are read by the non-executing reader in
//! `pickle.rs`. Assembly follows Kipf's `load_data` exactly:
//!
//! ```text
//! order  = test.index (file order); sorted = sort(order)
//! tx, ty are padded to rows min(sorted)..=max(sorted) (citeseer has
//!   isolated test nodes missing from tx): row sorted[i] - min gets tx[i]
//! features = [allx; tx]; labels = argmax([ally; ty]) (-1 for an all-zero row)
//! features[order] = features[sorted]; labels likewise
//! train = 0..len(y); val = len(y)..len(y)+500; test = sorted
//! edges  = every adjacency-list pair in both directions, self-loops
//!          dropped, duplicates merged, sorted by (src, dst)
//! ```
//!
//! This reproduces `../shared/datasets/{cora,citeseer}` (PyG's processed
//! form: symmetric, no self-loops).

use crate::binio::Mapped;
use crate::dataset::{Dataset, Features};
use crate::error::{DatasetError, Result};
use crate::pickle::{self, Value};
use crate::text::{self, int, lines, tokens};
use std::path::{Path, PathBuf};

/// Size of the validation split in the Planetoid public split.
pub const VAL_SIZE: usize = 500;

fn file(dir: &Path, name: &str, part: &str) -> Result<PathBuf> {
    let p = dir.join(format!("ind.{name}.{part}"));
    if p.exists() {
        Ok(p)
    } else {
        Err(DatasetError::MissingFile {
            path: p,
            why: "every Planetoid dataset has x, y, tx, ty, allx, ally, graph and test.index".into(),
        })
    }
}

fn read_pickle(path: &Path) -> Result<Value> {
    let map = Mapped::open(path)?;
    pickle::parse(path, map.bytes())
}

fn content_error(path: &Path, problem: String) -> DatasetError {
    DatasetError::format(path, 0, format!("unexpected pickle content: {problem}"))
}

/// A feature matrix: CSR or dense 2-D array, as `(rows, cols, row-major)`.
fn matrix(path: &Path) -> Result<(usize, usize, Vec<f32>)> {
    let v = read_pickle(path)?;
    match pickle::csr_matrix(&v) {
        Ok(m) => Ok((m.rows, m.cols, m.to_dense())),
        Err(csr_err) => match pickle::ndarray(&v) {
            Ok(a) if a.shape.len() == 2 => Ok((a.shape[0], a.shape[1], a.data.iter().map(|&x| x as f32).collect())),
            Ok(a) => Err(content_error(path, format!("feature array has shape {:?}, expected 2-D", a.shape))),
            Err(_) => Err(content_error(path, csr_err)),
        },
    }
}

/// One-hot label rows as class ids (`-1` for an all-zero row).
fn one_hot(path: &Path) -> Result<(usize, usize, Vec<i32>)> {
    let v = read_pickle(path)?;
    let a = pickle::ndarray(&v).map_err(|e| content_error(path, e))?;
    let [rows, classes] = a.shape[..] else {
        return Err(content_error(path, format!("label array has shape {:?}, expected [nodes, classes]", a.shape)));
    };
    let mut out = Vec::with_capacity(rows);
    for r in 0..rows {
        let row = &a.data[r * classes..(r + 1) * classes];
        let best = row.iter().enumerate().fold(None, |best: Option<(usize, f64)>, (c, &x)| match best {
            Some((_, bx)) if bx >= x => best,
            _ => Some((c, x)),
        });
        out.push(match best {
            Some((c, x)) if x > 0.0 => c as i32,
            _ => -1,
        });
    }
    Ok((rows, classes, out))
}

fn adjacency(path: &Path) -> Result<Vec<(i64, Vec<i64>)>> {
    let v = read_pickle(path)?;
    let items = match &v {
        Value::Dict(d) => d,
        Value::Object { callable, items, .. } if callable.is_global(&["collections"], "defaultdict") => items,
        _ => return Err(content_error(path, "graph is not a dict of adjacency lists".into())),
    };
    items
        .iter()
        .map(|(k, v)| {
            let Value::Int(u) = k else {
                return Err(content_error(path, format!("graph key {k:?} is not a node id")));
            };
            let Value::List(l) = v else {
                return Err(content_error(path, format!("adjacency of node {u} is not a list")));
            };
            let nbrs = l
                .iter()
                .map(|x| match x {
                    Value::Int(x) => Ok(*x),
                    _ => Err(content_error(path, format!("neighbour {x:?} of node {u} is not a node id"))),
                })
                .collect::<Result<Vec<i64>>>()?;
            Ok((*u, nbrs))
        })
        .collect()
}

fn test_index(path: &Path) -> Result<Vec<i64>> {
    let map = Mapped::open(path)?;
    let mut out = Vec::new();
    for (ln, line) in lines(map.bytes()) {
        if text::is_comment_or_blank(line) {
            continue;
        }
        let t: Vec<&[u8]> = tokens(line).collect();
        if t.len() != 1 {
            return Err(DatasetError::parse(path, ln, "expected one node id"));
        }
        let v = int(path, ln, t[0], "node id")?;
        if v < 0 {
            return Err(DatasetError::parse(path, ln, format!("node id {v} is negative")));
        }
        out.push(v);
    }
    Ok(out)
}

/// Loads `DIR/ind.NAME.*` (see the module docs).
pub fn load(dir: &Path, name: &str) -> Result<Dataset> {
    let (nx, _, _) = matrix(&file(dir, name, "x")?)?;
    let (ny, _, _) = one_hot(&file(dir, name, "y")?)?;
    let allx_path = file(dir, name, "allx")?;
    let (n_all, dim, allx) = matrix(&allx_path)?;
    let tx_path = file(dir, name, "tx")?;
    let (n_tx, tdim, tx) = matrix(&tx_path)?;
    let ally_path = file(dir, name, "ally")?;
    let (n_ally, classes, ally) = one_hot(&ally_path)?;
    let ty_path = file(dir, name, "ty")?;
    let (n_ty, tclasses, ty) = one_hot(&ty_path)?;
    let index_path = file(dir, name, "test.index")?;
    let order = test_index(&index_path)?;
    let graph_path = file(dir, name, "graph")?;
    let adj = adjacency(&graph_path)?;

    let mismatch = |path: &Path, what: String| Err(content_error(path, what));
    if tdim != dim {
        return mismatch(&tx_path, format!("{tdim} feature columns, allx has {dim}"));
    }
    if tclasses != classes {
        return mismatch(&ty_path, format!("{tclasses} classes, ally has {classes}"));
    }
    if n_ally != n_all {
        return mismatch(&ally_path, format!("{n_ally} rows, allx has {n_all}"));
    }
    if n_ty != n_tx || order.len() != n_tx {
        return mismatch(&ty_path, format!("ty has {n_ty} rows, tx {n_tx}, test.index {} entries", order.len()));
    }
    if nx != ny || ny + VAL_SIZE > n_all {
        return mismatch(
            &allx_path,
            format!("x has {nx} rows, y {ny}; allx needs at least y + {VAL_SIZE} rows, has {n_all}"),
        );
    }
    let mut sorted = order.clone();
    sorted.sort_unstable();
    let (lo, hi) = match (sorted.first(), sorted.last()) {
        (Some(&lo), Some(&hi)) => (lo as usize, hi as usize),
        _ => (n_all, n_all.saturating_sub(1)),
    };
    if lo < n_all && !sorted.is_empty() {
        return Err(DatasetError::parse(&index_path, 1, format!("test ids start at {lo}, inside allx's {n_all} rows")));
    }
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return Err(DatasetError::parse(&index_path, 1, "test ids repeat"));
    }
    let n = n_all + if sorted.is_empty() { 0 } else { hi - lo + 1 };

    // [allx; tx padded], then rows `order` take the rows `sorted`.
    let mut feat = vec![0f32; n * dim];
    feat[..n_all * dim].copy_from_slice(&allx);
    let mut labels = vec![-1i32; n];
    labels[..n_all].copy_from_slice(&ally);
    for (i, &s) in sorted.iter().enumerate() {
        let row = n_all + (s as usize - lo);
        feat[row * dim..(row + 1) * dim].copy_from_slice(&tx[i * dim..(i + 1) * dim]);
        labels[row] = ty[i];
    }
    let (src_feat, src_labels) = (feat.clone(), labels.clone());
    for (&o, &s) in order.iter().zip(&sorted) {
        let (o, s) = (o as usize, s as usize);
        feat[o * dim..(o + 1) * dim].copy_from_slice(&src_feat[s * dim..(s + 1) * dim]);
        labels[o] = src_labels[s];
    }

    let mut pairs = Vec::new();
    for (u, nbrs) in &adj {
        for &v in nbrs {
            for x in [*u, v] {
                if x < 0 || x as u64 >= n as u64 {
                    return Err(content_error(&graph_path, format!("node id {x} is out of range 0..{n}")));
                }
            }
            if *u != v {
                pairs.push((*u, v));
                pairs.push((v, *u));
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    let (src, dst) = pairs.into_iter().unzip();
    let ds = Dataset {
        feat: Some(Features { data: feat, dim }),
        labels: Some(labels),
        train: Some((0..ny as i64).collect()),
        val: Some((ny as i64..(ny + VAL_SIZE) as i64).collect()),
        test: Some(sorted),
        meta: Some(serde_json::json!({
            "source": dir.join(format!("ind.{name}.*")).display().to_string(),
            "format": "planetoid",
            "directed": false,
            "num_classes": classes,
        })),
        ..Dataset::from_edges(name, n, src, dst)
    };
    ds.validate()?;
    Ok(ds)
}
