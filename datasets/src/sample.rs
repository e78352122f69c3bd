//! Neighbour sampling for mini-batch training (GraphSAGE, DGL's
//! `MultiLayerNeighborSampler` + `to_block`).
//!
//! With fanouts `[f_0, ..., f_{L-1}]`, sampling starts at the seeds with the
//! last layer's fanout and walks outwards, as DGL does:
//!
//! ```text
//! dst = seeds
//! for layer in L-1 down to 0:
//!     for each v in dst: pick min(f_layer, in_degree(v)) in-edges of v,
//!                        without replacement, uniformly
//!     block[layer] = bipartite graph sampled-sources -> dst, with
//!                    src_nodes = dst ++ (new sources, first-seen order)
//!     dst = block[layer].src_nodes
//! ```
//!
//! So `blocks[0]` is the input layer (largest) and the last block's
//! destinations are the seeds. Picks for destination `v` in layer `l` draw
//! from the stream `(seed, l * 2^40 + v)`: results depend only on the graph,
//! the seeds, the fanouts and `seed` — not on the order of work or thread
//! count. Use a different `seed` per mini-batch to resample.

use crate::dataset::Dataset;
use crate::error::{DatasetError, Result};
use crate::rng::SplitMix64;
use gnnkern::{Graph, Index};
use std::collections::{HashMap, HashSet};

/// One sampled layer: a bipartite graph from `num_src` to `num_dst` nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Number of source nodes (`src_nodes.len()`).
    pub num_src: usize,
    /// Number of destination nodes; they are `src_nodes[..num_dst]`.
    pub num_dst: usize,
    /// Local source id of each sampled edge (`0..num_src`).
    pub src: Vec<i64>,
    /// Local destination id of each sampled edge (`0..num_dst`).
    pub dst: Vec<i64>,
    /// Global node id of each local source; the destinations come first.
    pub src_nodes: Vec<i64>,
    /// Global edge id of each sampled edge (DGL's `block.edata[dgl.EID]`).
    pub eids: Vec<i64>,
}

impl Block {
    /// Global ids of the destination nodes.
    pub fn dst_nodes(&self) -> &[i64] {
        &self.src_nodes[..self.num_dst]
    }

    /// Number of sampled edges.
    pub fn num_edges(&self) -> usize {
        self.src.len()
    }

    /// The block as a kernel graph (`num_src` sources, `num_dst` destinations).
    pub fn graph<I: Index>(&self) -> Result<Graph<I>> {
        let narrow = |what: &str, v: &[i64]| -> Result<Vec<I>> {
            v.iter()
                .map(|&x| {
                    I::try_from_usize(x as usize).ok_or_else(|| DatasetError::IndexOverflow {
                        what: what.to_string(),
                        value: x,
                        index_type: I::NAME,
                    })
                })
                .collect()
        };
        Ok(Graph::from_coo(
            self.num_src,
            self.num_dst,
            narrow("block src", &self.src)?,
            narrow("block dst", &self.dst)?,
        )?)
    }
}

/// A graph neighbour sampling can read in-edges from.
pub trait InEdges {
    /// Number of nodes (seeds must be below it).
    fn num_nodes(&self) -> usize;
    /// Calls `f` with the in-CSR `(indptr, sources, edge ids)` as `i64`-convertible slices.
    fn with_in_csr<R>(&self, f: &mut dyn FnMut(&dyn InCsr) -> R) -> Result<R>;
}

/// Row access to an in-CSR (rows = destinations).
pub trait InCsr {
    /// In-edge positions of `v`.
    fn row(&self, v: usize) -> std::ops::Range<usize>;
    /// `(source, edge id)` of in-edge position `k`.
    fn entry(&self, k: usize) -> (i64, i64);
}

impl<I: Index> InCsr for gnnkern::graph::Csr<I> {
    fn row(&self, v: usize) -> std::ops::Range<usize> {
        self.row_range(v)
    }
    fn entry(&self, k: usize) -> (i64, i64) {
        (self.indices()[k].to_i64(), self.eids()[k].to_i64())
    }
}

impl<I: Index> InEdges for Graph<I> {
    fn num_nodes(&self) -> usize {
        self.num_src().max(self.num_dst())
    }
    fn with_in_csr<R>(&self, f: &mut dyn FnMut(&dyn InCsr) -> R) -> Result<R> {
        if self.num_src() != self.num_dst() {
            return Err(DatasetError::invalid(
                "graph",
                format!(
                    "sampling needs a square graph, got {} sources and {} destinations",
                    self.num_src(),
                    self.num_dst()
                ),
            ));
        }
        Ok(f(self.in_csr()))
    }
}

impl InEdges for Dataset {
    fn num_nodes(&self) -> usize {
        self.num_nodes
    }
    /// Builds the in-CSR once per call; for repeated sampling, build
    /// `ds.graph::<I>()` once and sample from the graph.
    fn with_in_csr<R>(&self, f: &mut dyn FnMut(&dyn InCsr) -> R) -> Result<R> {
        let g = self.graph::<i64>()?;
        Ok(f(g.in_csr()))
    }
}

/// Samples one block per fanout (see the module docs). Seeds must be
/// distinct and in range; fanout 0 gives blocks without edges.
pub fn sample_block<G: InEdges + ?Sized>(g: &G, seeds: &[i64], fanouts: &[usize], seed: u64) -> Result<Vec<Block>> {
    let n = g.num_nodes();
    if let Some(p) = crate::dataset::first_out_of_range(seeds, n) {
        return Err(DatasetError::invalid("seeds", format!("seeds[{p}] = {} is out of range 0..{n}", seeds[p])));
    }
    let mut seen = HashSet::with_capacity(seeds.len());
    if let Some(p) = seeds.iter().position(|s| !seen.insert(*s)) {
        return Err(DatasetError::invalid("seeds", format!("seeds[{p}] = {} is repeated", seeds[p])));
    }
    g.with_in_csr(&mut |csr| {
        let mut blocks = Vec::with_capacity(fanouts.len());
        let mut dst_nodes = seeds.to_vec();
        for (layer, &fanout) in fanouts.iter().enumerate().rev() {
            let block = sample_layer(csr, &dst_nodes, fanout, layer as u64, seed);
            dst_nodes = block.src_nodes.clone();
            blocks.push(block);
        }
        blocks.reverse();
        blocks
    })
}

fn sample_layer(csr: &dyn InCsr, dst_nodes: &[i64], fanout: usize, layer: u64, seed: u64) -> Block {
    let mut src_nodes = dst_nodes.to_vec();
    let mut local: HashMap<i64, i64> = dst_nodes.iter().enumerate().map(|(i, &v)| (v, i as i64)).collect();
    let (mut src, mut dst, mut eids) = (Vec::new(), Vec::new(), Vec::new());
    let mut picks = Vec::with_capacity(fanout);
    for (d, &v) in dst_nodes.iter().enumerate() {
        let row = csr.row(v as usize);
        let mut rng = SplitMix64::stream(seed, (layer << 40) ^ v as u64);
        choose_without_replacement(row.len(), fanout, &mut rng, &mut picks);
        for &k in &picks {
            let (u, e) = csr.entry(row.start + k);
            let next = src_nodes.len() as i64;
            let lu = *local.entry(u).or_insert_with(|| {
                src_nodes.push(u);
                next
            });
            src.push(lu);
            dst.push(d as i64);
            eids.push(e);
        }
    }
    Block { num_src: src_nodes.len(), num_dst: dst_nodes.len(), src, dst, src_nodes, eids }
}

/// Writes `min(k, n)` distinct positions of `0..n` into `out`, in increasing
/// order (all of them when `n <= k`), by Floyd's algorithm: `O(k log k)`
/// whatever `n` is, so hubs cost no more than leaves.
fn choose_without_replacement(n: usize, k: usize, rng: &mut SplitMix64, out: &mut Vec<usize>) {
    out.clear();
    if n <= k {
        out.extend(0..n);
        return;
    }
    let mut chosen = HashSet::with_capacity(k);
    for j in n - k..n {
        let t = rng.below(j as u64 + 1) as usize;
        chosen.insert(if chosen.contains(&t) { j } else { t });
    }
    out.extend(chosen);
    out.sort_unstable();
}
