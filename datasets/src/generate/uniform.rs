//! Uniform random graph G(n, m): `m` directed edges whose two endpoints are
//! drawn independently and uniformly from `0..n`.
//!
//! Duplicate edges and self-loops are kept (a multigraph), so the edge count
//! is exactly `m` and generation is one parallel pass; for `m << n^2` the
//! expected number of duplicates is about `m^2 / (2 n^2)`. (DGL's
//! `rand_graph` instead samples distinct positions of the n x n matrix.)

use super::chunked_edges;
use crate::dataset::Dataset;

pub(super) fn generate(n: usize, m: usize, seed: u64) -> Dataset {
    let n64 = n as u64;
    let (src, dst) = chunked_edges(m, seed, |r| (r.below(n64) as i64, r.below(n64) as i64));
    Dataset::from_edges("", n, src, dst)
}
