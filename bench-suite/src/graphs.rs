//! Graphs the bench runs on: a directory in the dataset format or a
//! generator spec (`rmat:16:16:1`, `uniform:N:M:SEED`, ...), loaded once and
//! turned into a kernel graph with the narrowest index type that fits.

use crate::error::{BenchError, Result};
use crate::opspec::GraphDims;
use gnnkern::Graph;
use gnnkern_datasets::{Block, Dataset, IndexWidth};
use std::path::{Path, PathBuf};

/// A kernel graph with i32 indices when every id and edge count fits, else i64.
pub enum KernelGraph {
    I32(Graph<i32>),
    I64(Graph<i64>),
}

impl KernelGraph {
    /// Bytes per index.
    pub fn index_bytes(&self) -> u64 {
        match self {
            KernelGraph::I32(_) => 4,
            KernelGraph::I64(_) => 8,
        }
    }
}

/// A loaded benchmark graph.
pub struct BenchGraph {
    /// Display name: the spec string or the directory's name.
    pub name: String,
    pub dataset: Dataset,
    pub kernel: KernelGraph,
}

impl BenchGraph {
    /// Opens a dataset directory or generates a spec (see `gnnkern_datasets::open`).
    pub fn open(dir_or_spec: &str) -> Result<Self> {
        let dataset = gnnkern_datasets::open(dir_or_spec)
            .map_err(|e| BenchError::Graph { graph: dir_or_spec.to_string(), message: e.to_string() })?;
        Self::from_dataset(display_name(dir_or_spec), dataset)
    }

    /// Wraps a dataset already in memory. A dataset whose `meta.json` has
    /// `num_dst` is a sampled block: a bipartite graph whose destinations
    /// are the first `num_dst` nodes.
    pub fn from_dataset(name: String, dataset: Dataset) -> Result<Self> {
        let err = |e: gnnkern_datasets::DatasetError| BenchError::Graph { graph: name.clone(), message: e.to_string() };
        let num_dst = block_dst_count(&dataset).map_err(|m| BenchError::Graph { graph: name.clone(), message: m })?;
        let fits_i32 = dataset.num_nodes <= i32::MAX as usize && dataset.num_edges() <= i32::MAX as usize;
        let kernel = match num_dst {
            None if fits_i32 => KernelGraph::I32(dataset.graph::<i32>().map_err(err)?),
            None => KernelGraph::I64(dataset.graph::<i64>().map_err(err)?),
            Some(num_dst) => {
                dataset.validate().map_err(err)?;
                let block = Block {
                    num_src: dataset.num_nodes,
                    num_dst,
                    src: dataset.src.clone(),
                    dst: dataset.dst.clone(),
                    src_nodes: Vec::new(),
                    eids: Vec::new(),
                };
                if fits_i32 {
                    KernelGraph::I32(block.graph::<i32>().map_err(err)?)
                } else {
                    KernelGraph::I64(block.graph::<i64>().map_err(err)?)
                }
            }
        };
        Ok(Self { name, dataset, kernel })
    }

    /// A neighbour-sampled block: `seeds` destinations spread evenly over
    /// the node ids of `from` (ids `i · ⌊N / seeds⌋`), `fanout` in-edges
    /// each, sampled with `seed` by `gnnkern_datasets::sample_block`.
    pub fn sampled_block(name: String, from: &str, seeds: usize, fanout: usize, seed: u64) -> Result<Self> {
        let err = |m: String| BenchError::Graph { graph: name.clone(), message: m };
        let base = gnnkern_datasets::open(from).map_err(|e| err(format!("{from}: {e}")))?;
        if seeds == 0 || seeds > base.num_nodes {
            return Err(err(format!("{seeds} seeds requested from a graph of {} nodes", base.num_nodes)));
        }
        let step = base.num_nodes / seeds;
        let seed_ids: Vec<i64> = (0..seeds).map(|i| (i * step) as i64).collect();
        let mut blocks =
            gnnkern_datasets::sample_block(&base, &seed_ids, &[fanout], seed).map_err(|e| err(e.to_string()))?;
        let block = blocks.pop().ok_or_else(|| err("sampling returned no block".to_string()))?;
        let mut ds = Dataset::from_edges(name.clone(), block.num_src, block.src, block.dst);
        ds.meta = Some(serde_json::json!({
            "num_dst": block.num_dst,
            "block": { "from": from, "seeds": seeds, "fanout": fanout, "seed": seed },
        }));
        Self::from_dataset(name, ds)
    }

    /// Node and edge counts.
    pub fn dims(&self) -> GraphDims {
        let (num_src, num_dst, num_edges) = match &self.kernel {
            KernelGraph::I32(g) => (g.num_src(), g.num_dst(), g.num_edges()),
            KernelGraph::I64(g) => (g.num_src(), g.num_dst(), g.num_edges()),
        };
        GraphDims { num_src, num_dst, num_edges }
    }

    /// Writes the graph in the directory format (i32 indices) under
    /// `cache/<slug of name>` unless already there, for tools that read
    /// directories (the peer scripts). Returns the directory.
    pub fn materialize(&self, cache: &Path) -> Result<PathBuf> {
        let dir = cache.join(file_slug(&self.name));
        if dir.join("meta.json").exists() && dir.join("src.bin").exists() {
            return Ok(dir);
        }
        let width = if matches!(self.kernel, KernelGraph::I32(_)) { IndexWidth::I32 } else { IndexWidth::I64 };
        let tmp = cache.join(format!(".{}.partial", file_slug(&self.name)));
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp).map_err(|e| BenchError::io(&tmp, e))?;
        }
        gnnkern_datasets::write_dir(&self.dataset, &tmp, width)
            .map_err(|e| BenchError::Graph { graph: self.name.clone(), message: e.to_string() })?;
        std::fs::rename(&tmp, &dir).map_err(|e| BenchError::io(&dir, e))?;
        Ok(dir)
    }
}

/// `meta.num_dst` of a block dataset (`None` for an ordinary graph).
fn block_dst_count(ds: &Dataset) -> std::result::Result<Option<usize>, String> {
    let Some(v) = ds.meta.as_ref().and_then(|m| m.get("num_dst")) else {
        return Ok(None);
    };
    match v.as_u64() {
        Some(n) if n as usize <= ds.num_nodes => Ok(Some(n as usize)),
        _ => Err(format!("meta.json num_dst = {v} must be an integer at most num_nodes = {}", ds.num_nodes)),
    }
}

/// The name a graph is reported under: a spec as written, a directory by its last component.
pub fn display_name(dir_or_spec: &str) -> String {
    let p = Path::new(dir_or_spec);
    if p.is_dir() {
        p.canonicalize()
            .ok()
            .and_then(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir_or_spec.to_string())
    } else {
        dir_or_spec.to_string()
    }
}

/// A name as a file-name component (`rmat:16:16:1` -> `rmat_16_16_1`).
pub fn file_slug(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}
