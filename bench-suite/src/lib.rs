//! The benchmark suite of gnnkern: the `gnnkern-bench` CLI (`cli`), the op
//! timer (`runner`) with its cost model (`model`) and traversal-traffic
//! simulation (`traversal`), suites defined as data
//! (`suite`, `bench-suite/suites.toml`), the Python peers (`peers`), the
//! regression check (`check`) and the dashboard (`report`).
//! docs/BENCHMARKS.md describes the result schema, formulas and traffic models.

pub mod check;
pub mod cli;
pub mod compare;
pub mod error;
pub mod graphs;
pub mod machine;
pub mod model;
pub mod models;
pub mod opspec;
pub mod peers;
pub mod report;
pub mod rng;
pub mod rss;
pub mod runfile;
pub mod runner;
pub mod suite;
pub mod table;
pub mod traversal;
pub mod triad;

pub use error::{BenchError, Result};
