//! Shared setup of the criterion benches: generated graphs and seeded operands.

use gnnkern::Graph;

/// A small and a medium generated graph: (label, graph).
pub fn graphs() -> Vec<(&'static str, Graph<i32>)> {
    [("rmat12x8", "rmat:12:8:1"), ("rmat15x16", "rmat:15:16:1")]
        .into_iter()
        .map(|(label, spec)| {
            let ds = gnnkern_datasets::generate(spec).expect("generator specs are valid");
            (label, ds.graph::<i32>().expect("generated graphs fit i32"))
        })
        .collect()
}

/// Seeded values in [-1, 1) (the bench CLI's input stream).
pub fn values(seed: u64, len: usize) -> Vec<f32> {
    gnnkern_bench::rng::uniform(seed, len, -1.0, 1.0)
}
