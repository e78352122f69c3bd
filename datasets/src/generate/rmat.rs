//! RMAT (Chakrabarti, Zhan & Faloutsos 2004), as in Graph500's generator.
//!
//! Each edge descends `scale` levels of the adjacency matrix; at every level
//! it picks the top-left quadrant with probability `a`, top-right `b`,
//! bottom-left `c`, bottom-right `d = 1 - a - b - c`, which appends one bit
//! to the source (bottom) and one to the destination (right). One draw
//! per level (32 bits of a 64-bit draw, so the quadrant probabilities
//! resolve to 2^-32) is compared against precomputed integer thresholds.
//!
//! Like Graph500's raw edge list, duplicates and self-loops are kept. Not
//! done: Graph500's per-level noise and vertex-id scrambling, so hubs sit at
//! low ids (node 0 has the largest expected degree).

use super::chunked_edges;
use crate::dataset::Dataset;

/// `p` as a fraction of 2^32 (saturating at 2^32, which no draw reaches).
fn threshold(p: f64) -> u64 {
    (p * 4_294_967_296.0).min(4_294_967_296.0) as u64
}

pub(super) fn generate(scale: u32, avg_degree: usize, (a, b, c): (f64, f64, f64), seed: u64) -> Dataset {
    let n = 1usize << scale;
    let m = n * avg_degree;
    let (ta, tab, tabc) = (threshold(a), threshold(a + b), threshold(a + b + c));
    let (src, dst) = chunked_edges(m, seed, |r| {
        let (mut u, mut v) = (0i64, 0i64);
        let mut bits = 0u64;
        for level in 0..scale {
            // One 64-bit draw serves two levels (32 bits each).
            if level % 2 == 0 {
                bits = r.next_u64();
            } else {
                bits >>= 32;
            }
            let x = bits & 0xFFFF_FFFF;
            // Branch-free quadrant choice (the branches would mispredict
            // about half the time): bottom half iff x >= a + b; right half
            // iff x lies in [a, a+b) or [a+b+c, 1).
            let du = i64::from(x >= tab);
            let dv = i64::from(x >= ta) ^ i64::from(x >= tab) ^ i64::from(x >= tabc);
            u = (u << 1) | du;
            v = (v << 1) | dv;
        }
        (u, v)
    });
    Dataset::from_edges("", n, src, dst)
}
