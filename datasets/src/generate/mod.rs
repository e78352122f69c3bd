//! Seeded graph generators behind [`GraphSpec`] strings.
//!
//! Every generator is a pure function of its spec: the same spec gives the
//! same edges, in the same order, on any machine and thread count. Parallel
//! generators cut their output into fixed chunks of [`CHUNK`] edges (or
//! fixed tasks) and give each its own [`SplitMix64`] stream derived from
//! `(seed, chunk index)`; the thread count only decides who fills a chunk.

mod rmat;
mod sbm;
mod simple;
mod uniform;

use crate::dataset::Dataset;
use crate::error::Result;
use crate::rng::SplitMix64;
use crate::spec::GraphSpec;
use rayon::prelude::*;

/// Edges per independently seeded chunk of the parallel generators.
pub(crate) const CHUNK: usize = 1 << 16;

/// Parses `spec` and generates the graph it names.
pub fn generate(spec: &str) -> Result<Dataset> {
    generate_spec(&spec.parse()?)
}

/// Generates the graph a parsed spec names.
pub fn generate_spec(spec: &GraphSpec) -> Result<Dataset> {
    spec.validate()?;
    let name = spec.to_string();
    let mut ds = match *spec {
        GraphSpec::Uniform { n, m, seed } => uniform::generate(n, m, seed),
        GraphSpec::Rmat { scale, avg_degree, a, b, c, seed } => rmat::generate(scale, avg_degree, (a, b, c), seed),
        GraphSpec::Sbm { n, k, p_in, p_out, seed } => sbm::generate(n, k, p_in, p_out, seed),
        GraphSpec::Chain { n } => simple::chain(n),
        GraphSpec::Star { n } => simple::star(n),
    };
    let directed = !matches!(spec, GraphSpec::Sbm { .. });
    ds.meta = Some(serde_json::json!({ "generator": name, "directed": directed }));
    ds.name = name;
    debug_assert!(ds.validate().is_ok());
    Ok(ds)
}

/// Fills `m` edges in parallel: chunk `c` of [`CHUNK`] edges draws from
/// stream `(seed, c)` through `edge`.
pub(crate) fn chunked_edges(
    m: usize,
    seed: u64,
    edge: impl Fn(&mut SplitMix64) -> (i64, i64) + Sync,
) -> (Vec<i64>, Vec<i64>) {
    let mut src = vec![0i64; m];
    let mut dst = vec![0i64; m];
    src.par_chunks_mut(CHUNK).zip(dst.par_chunks_mut(CHUNK)).enumerate().for_each(|(c, (s, d))| {
        let mut rng = SplitMix64::stream(seed, c as u64);
        for (s, d) in s.iter_mut().zip(d.iter_mut()) {
            (*s, *d) = edge(&mut rng);
        }
    });
    (src, dst)
}
