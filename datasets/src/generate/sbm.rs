//! Stochastic block model: `n` nodes in `k` contiguous blocks of near-equal
//! size (node `v` is in block `v * k / n`, its label); each unordered pair
//! `{u, v}`, `u != v`, is an edge with probability `p_in` inside a block and
//! `p_out` across. Both directions are stored; no self-loops.
//!
//! Sparse probabilities are drawn by geometric skipping (Batagelj & Brandes
//! 2005): inside one block pair the candidate pairs are numbered, and the gap
//! to the next edge is `floor(ln(1 - U) / ln(1 - p))`, so the cost is
//! `O(edges + n)` rather than `O(n^2)` coin flips. Each of the
//! `k (k + 1) / 2` block pairs is a task with its own stream, run in parallel
//! and concatenated in task order.

use crate::dataset::Dataset;
use crate::rng::SplitMix64;
use rayon::prelude::*;

/// Calls `emit(i)` for each `i in 0..total` kept with probability `p`, in
/// increasing order.
fn bernoulli_positions(total: u64, p: f64, rng: &mut SplitMix64, mut emit: impl FnMut(u64)) {
    if total == 0 || p <= 0.0 {
        return;
    }
    if p >= 1.0 {
        (0..total).for_each(emit);
        return;
    }
    let log_q = (-p).ln_1p();
    let mut i = 0u64;
    loop {
        let skip = ((-rng.unit_f64()).ln_1p() / log_q).floor();
        if skip >= (total - i) as f64 {
            return;
        }
        i += skip as u64;
        emit(i);
        i += 1;
        if i >= total {
            return;
        }
    }
}

pub(super) fn generate(n: usize, k: usize, p_in: f64, p_out: f64, seed: u64) -> Dataset {
    let start = |b: usize| (b as u128 * n as u128 / k as u128) as usize;
    let pairs: Vec<(usize, usize)> = (0..k).flat_map(|i| (i..k).map(move |j| (i, j))).collect();
    let parts: Vec<Vec<(i64, i64)>> = pairs
        .par_iter()
        .enumerate()
        .map(|(t, &(bi, bj))| {
            let mut rng = SplitMix64::stream(seed, t as u64);
            let (oi, oj) = (start(bi), start(bj));
            let (si, sj) = (start(bi + 1) - oi, start(bj + 1) - oj);
            let mut out = Vec::new();
            if bi == bj {
                // Pairs u < v of one block, numbered row by row; row r holds
                // s - 1 - r pairs. Positions arrive in order, so walk rows.
                let s = si as u64;
                let (mut row, mut row_start) = (0u64, 0u64);
                bernoulli_positions(s * s.saturating_sub(1) / 2, p_in, &mut rng, |pos| {
                    while pos >= row_start + (s - 1 - row) {
                        row_start += s - 1 - row;
                        row += 1;
                    }
                    let col = row + 1 + (pos - row_start);
                    out.push(((oi as u64 + row) as i64, (oi as u64 + col) as i64));
                });
            } else {
                let sj64 = sj as u64;
                bernoulli_positions(si as u64 * sj64, p_out, &mut rng, |pos| {
                    out.push(((oi as u64 + pos / sj64) as i64, (oj as u64 + pos % sj64) as i64));
                });
            }
            out
        })
        .collect();
    let m: usize = parts.iter().map(|p| 2 * p.len()).sum();
    let (mut src, mut dst) = (Vec::with_capacity(m), Vec::with_capacity(m));
    for &(u, v) in parts.iter().flatten() {
        src.extend([u, v]);
        dst.extend([v, u]);
    }
    let labels = (0..n).map(|v| (v as u128 * k as u128 / n as u128) as i32).collect();
    Dataset { labels: Some(labels), ..Dataset::from_edges("", n, src, dst) }
}
