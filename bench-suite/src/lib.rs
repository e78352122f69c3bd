//! Benchmark suite of gnnkern.
