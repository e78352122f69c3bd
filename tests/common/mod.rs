//! The shared test harness of the `gnnkern` crate's integration tests:
//!
//! - [`rng`]: a tiny seeded generator, so every input is reproducible;
//! - [`cases`]: graph cases (no edges, empty rows, one hub, self-loops,
//!   duplicate edges, bipartite, random) for `i32` and `i64`, operand
//!   shapes (feature sizes straddling every lane count, multi-head
//!   broadcasting, dot) and operand data (finite, or sprinkled with NaN/±inf);
//! - [`compare`]: exact (bitwise, NaN == NaN) and `eps · magnitude · n`
//!   comparisons that return a message naming the first mismatch;
//! - [`oracle`]: brute-force f64 formulas (per-destination edge lists, dense
//!   adjacency algebra) independent of the library's CSR and broadcast plans;
//! - [`dl`]: DLPack tensors over Rust memory for calling the C ABI, in every
//!   layout a caller may use, with exactly sized allocations;
//! - [`backends`]: every backend the build knows, each SIMD ISA level, with
//!   `GNNKERN_REQUIRE_BACKENDS` / `GNNKERN_REQUIRE_ISA` turning a skip into a
//!   failure. A new backend is covered with no test change.
//!
//! Each test file includes this module; not every file uses every helper.
#![allow(dead_code)]

pub mod backends;
pub mod cases;
pub mod compare;
pub mod dl;
pub mod oracle;
pub mod rng;

use proptest::test_runner::{Config, RngAlgorithm, RngSeed};

/// A deterministic proptest configuration: fixed seed, no persistence files.
pub fn proptest_config(cases: u32) -> Config {
    Config {
        cases,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(0x6e6e_6b65_726e),
        failure_persistence: None,
        max_shrink_iters: 64,
        ..Config::default()
    }
}
