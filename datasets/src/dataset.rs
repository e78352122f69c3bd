//! The in-memory dataset every loader and generator produces.
//!
//! A [`Dataset`] is a plain COO edge list over `num_nodes` nodes (edge id =
//! position) with optional node features, labels, per-edge relation ids and
//! node splits. Ids are stored as `i64` whatever the on-disk width;
//! [`Dataset::graph`] narrows them to the kernel's index type and reports
//! overflow as an error. [`Dataset::validate`] checks every invariant the
//! field docs state; loaders and generators call it before returning.

use crate::error::{DatasetError, Result};
use gnnkern::{Graph, Index};
use std::fmt;
use std::str::FromStr;

/// Dense node features, row-major `[num_nodes, dim]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Features {
    /// `num_nodes * dim` values; row `v` is `data[v * dim..(v + 1) * dim]`.
    pub data: Vec<f32>,
    /// Feature width.
    pub dim: usize,
}

/// The integer width of node ids on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum IndexWidth {
    /// int32 little-endian (the format of `../shared/datasets`).
    #[default]
    I32,
    /// int64 little-endian (graphs with 2^31 nodes or more).
    I64,
}

impl IndexWidth {
    /// Bytes per id.
    pub fn size(self) -> usize {
        match self {
            Self::I32 => 4,
            Self::I64 => 8,
        }
    }

    /// The name recorded in `meta.json` (`index_dtype`).
    pub fn dtype_name(self) -> &'static str {
        match self {
            Self::I32 => "int32",
            Self::I64 => "int64",
        }
    }

    /// Largest id this width holds.
    pub fn max_id(self) -> i64 {
        match self {
            Self::I32 => i64::from(i32::MAX),
            Self::I64 => i64::MAX,
        }
    }
}

impl fmt::Display for IndexWidth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.dtype_name())
    }
}

impl FromStr for IndexWidth {
    type Err = DatasetError;
    /// Accepts `int32`/`i32` and `int64`/`i64`, optionally followed by
    /// ` little-endian` (as the shared datasets' `meta.json` spells it).
    fn from_str(s: &str) -> Result<Self> {
        let head = s.trim().strip_suffix("little-endian").unwrap_or(s).trim();
        match head {
            "int32" | "i32" => Ok(Self::I32),
            "int64" | "i64" => Ok(Self::I64),
            _ => Err(DatasetError::invalid("index width", format!("{s:?} is not int32 or int64 (little-endian)"))),
        }
    }
}

/// A graph with optional node/edge data, as loaded or generated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dataset {
    /// Dataset name (the directory's `meta.json` name, or the generator spec).
    pub name: String,
    /// Number of nodes; every id is in `0..num_nodes`.
    pub num_nodes: usize,
    /// Source of each edge (edge id = position).
    pub src: Vec<i64>,
    /// Destination of each edge, same length as `src`.
    pub dst: Vec<i64>,
    /// Node features `[num_nodes, dim]`.
    pub feat: Option<Features>,
    /// Class of each node, `-1` = unlabeled.
    pub labels: Option<Vec<i32>>,
    /// Relation id of each edge (heterogeneous graphs), non-negative.
    pub etype: Option<Vec<i32>>,
    /// Training node ids.
    pub train: Option<Vec<i64>>,
    /// Validation node ids.
    pub val: Option<Vec<i64>>,
    /// Test node ids.
    pub test: Option<Vec<i64>>,
    /// `meta.json` contents when loaded from a directory; generators record
    /// their spec here.
    pub meta: Option<serde_json::Value>,
}

impl Dataset {
    /// A dataset with only edges.
    pub fn from_edges(name: impl Into<String>, num_nodes: usize, src: Vec<i64>, dst: Vec<i64>) -> Self {
        Self { name: name.into(), num_nodes, src, dst, ..Self::default() }
    }

    /// Number of stored edges.
    pub fn num_edges(&self) -> usize {
        self.src.len()
    }

    /// Number of relation types (`max(etype) + 1`; 1 without `etype`).
    pub fn num_relations(&self) -> usize {
        self.etype.as_ref().map_or(1, |t| t.iter().map(|&r| r as usize + 1).max().unwrap_or(0))
    }

    /// Number of classes (`max(label) + 1`), if labelled.
    pub fn num_classes(&self) -> Option<usize> {
        self.labels.as_ref().map(|l| l.iter().filter(|&&c| c >= 0).map(|&c| c as usize + 1).max().unwrap_or(0))
    }

    /// Checks every invariant stated on the fields: equal lengths, ids in
    /// range, feature/label/etype sizes, label and relation values.
    pub fn validate(&self) -> Result<()> {
        let n = self.num_nodes;
        let e = self.num_edges();
        if self.dst.len() != e {
            return Err(DatasetError::invalid(
                "dataset",
                format!("dst has {} entries but src has {e}", self.dst.len()),
            ));
        }
        check_ids("src", &self.src, n)?;
        check_ids("dst", &self.dst, n)?;
        if let Some(f) = &self.feat {
            let want = n.checked_mul(f.dim).ok_or_else(|| {
                DatasetError::invalid("feat", format!("{n} nodes x {} features overflows usize", f.dim))
            })?;
            if f.data.len() != want {
                return Err(DatasetError::invalid(
                    "feat",
                    format!("{} values, expected num_nodes {n} x dim {} = {want}", f.data.len(), f.dim),
                ));
            }
        }
        if let Some(l) = &self.labels {
            if l.len() != n {
                return Err(DatasetError::invalid("labels", format!("{} entries, expected num_nodes {n}", l.len())));
            }
            if let Some(p) = l.iter().position(|&c| c < -1) {
                return Err(DatasetError::invalid("labels", format!("labels[{p}] = {} is below -1", l[p])));
            }
        }
        if let Some(t) = &self.etype {
            if t.len() != e {
                return Err(DatasetError::invalid("etype", format!("{} entries, expected num_edges {e}", t.len())));
            }
            if let Some(p) = t.iter().position(|&r| r < 0) {
                return Err(DatasetError::invalid("etype", format!("etype[{p}] = {} is negative", t[p])));
            }
        }
        for (what, split) in [("train", &self.train), ("val", &self.val), ("test", &self.test)] {
            if let Some(ids) = split {
                check_ids(what, ids, n)?;
            }
        }
        Ok(())
    }

    /// The edges as a kernel graph with `num_nodes` sources and
    /// destinations. Fails with [`DatasetError::IndexOverflow`] when
    /// `num_nodes` or the edge count does not fit `I` (ids are then below
    /// `num_nodes` by [`Dataset::validate`]).
    pub fn graph<I: Index>(&self) -> Result<Graph<I>> {
        self.validate()?;
        for (what, count) in [("num_nodes", self.num_nodes), ("num_edges", self.num_edges())] {
            if count > I::MAX_USIZE {
                return Err(DatasetError::IndexOverflow {
                    what: what.to_string(),
                    value: count as i64,
                    index_type: I::NAME,
                });
            }
        }
        // Ids are validated to lie in 0..num_nodes <= I::MAX, so the
        // narrowing below is exact.
        let narrow = |v: &[i64]| v.iter().map(|&x| I::from_usize(x as usize)).collect::<Vec<I>>();
        Ok(Graph::from_coo(self.num_nodes, self.num_nodes, narrow(&self.src), narrow(&self.dst))?)
    }

    /// In-degree of every node (`O(N + E)`).
    pub fn in_degrees(&self) -> Vec<usize> {
        degrees(&self.dst, self.num_nodes)
    }

    /// Out-degree of every node (`O(N + E)`).
    pub fn out_degrees(&self) -> Vec<usize> {
        degrees(&self.src, self.num_nodes)
    }
}

fn degrees(ids: &[i64], n: usize) -> Vec<usize> {
    let mut d = vec![0usize; n];
    for &v in ids {
        if let Some(slot) = usize::try_from(v).ok().and_then(|v| d.get_mut(v)) {
            *slot += 1;
        }
    }
    d
}

/// Fails naming the first id of `ids` outside `0..bound`.
pub(crate) fn check_ids(what: &str, ids: &[i64], bound: usize) -> Result<()> {
    match first_out_of_range(ids, bound) {
        None => Ok(()),
        Some(p) => Err(DatasetError::invalid(what, format!("{what}[{p}] = {} is out of range 0..{bound}", ids[p]))),
    }
}

/// Position of the first id outside `0..bound`.
pub(crate) fn first_out_of_range(ids: &[i64], bound: usize) -> Option<usize> {
    let bound = i64::try_from(bound).unwrap_or(i64::MAX);
    ids.iter().position(|&v| v < 0 || v >= bound)
}
