// Prototype, not kept: perf-reports/ablation/2026-11-27_xeon_arg-partition-backward.tsv. It lived at src/ops/grad/arg/partition.rs,
// called from ArgBackward::run for source operands (both constant and value-reading partials).
//! The source gradient of a max/min message, scattered through source blocks.
//!
//! Any destination may write any source row, and the source gradient is
//! large: 2^16 sources × 128 floats is 32 MiB, sixteen times a 2 MiB L2.
//! Written where each term lands, every element is a random read-modify-write
//! of a line that has left the cache (the column-split sweep of
//! [`ArgBackward::sweep`]); pulled per source row over the out-CSR, every
//! out-edge re-reads its destination's `arg_e` and `g` rows, `E × d` pairs
//! (16× the `num_dst × d` the gradient depends on at degree 16).
//!
//! Here the terms are radix-partitioned by source block first, as a
//! partitioned hash join does:
//!
//! 1. **Partition.** Workers take destination chunks in order and append
//!    each term's `(offset in its block, c·g)` to that chunk's bucket of the
//!    term's source block: `arg_e` and `g` are read once, sequentially, and
//!    the buckets are written sequentially (8 bytes per term).
//! 2. **Accumulate.** Workers take source blocks; a block's gradient rows
//!    (half of one core's L2) are zeroed and receive the block's
//!    buckets chunk after chunk, so the read-modify-writes hit L2.
//!
//! A gradient element receives its terms in ascending destination order,
//! then term order: the chunks are taken in destination order and each
//! bucket keeps its chunk's order. That is the order of the sweep, whose
//! `(coef · g) as f32` each term stores, so the two are bitwise identical
//! whatever the number of workers (tested below). The buckets hold at most
//! [`ROUND_TERMS`] terms (64 MiB): larger outputs are partitioned and
//! accumulated in rounds of destinations, in order.

use super::{ArgBackward, Term};
use crate::Index;
use gnnkern_simd::tuning::CacheInfo;
use rayon::prelude::*;

/// Source blocks at least this many, where there are sources enough, so
/// that hub blocks (RMAT) do not leave a worker idle.
const MIN_BLOCKS: usize = 16;
/// Terms partitioned per round: 8 bytes each, 64 MiB of buckets.
const ROUND_TERMS: usize = 1 << 23;
/// Destination chunks per worker in the partition step (load balance).
const CHUNKS_PER_WORKER: usize = 4;

/// One partitioned term: its element's offset in its source block and the
/// contribution it adds there.
#[derive(Clone, Copy)]
struct Entry {
    at: u32,
    x: f32,
}

/// How the terms are partitioned: `1 << shift` source rows of `row_len`
/// floats per block, at most `round_terms` terms per round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Partitioning {
    shift: u32,
    row_len: usize,
    round_terms: usize,
}

impl Partitioning {
    /// Blocks of `row_len`-float rows sized for this CPU's L2, or `None`
    /// when a block's offsets would not fit the entries' `u32`.
    pub(super) fn for_rows(num_src: usize, row_len: usize) -> Option<Self> {
        // Half the L2: the other half holds the buckets streaming through.
        Self::sized(num_src, row_len, CacheInfo::get().l2 / 2, ROUND_TERMS)
    }

    fn sized(num_src: usize, row_len: usize, bytes: usize, round_terms: usize) -> Option<Self> {
        let fit = (bytes / (row_len * size_of::<f32>()).max(1)).max(1);
        let balanced = num_src.div_ceil(MIN_BLOCKS).max(1);
        // A power of two, so a source's block is a shift, not a division.
        let rows = fit.min(balanced);
        let shift = usize::BITS - 1 - rows.leading_zeros();
        let block_len = (1usize << shift).checked_mul(row_len)?;
        u32::try_from(block_len).ok()?;
        Some(Partitioning { shift, row_len, round_terms })
    }

    /// Blocks of `1 << shift` rows and rounds of `round_terms` terms, for tests.
    #[cfg(test)]
    pub(super) fn exactly(shift: u32, row_len: usize, round_terms: usize) -> Self {
        Partitioning { shift, row_len, round_terms }
    }

    fn rows(self) -> usize {
        1 << self.shift
    }
}

impl<I: Index> ArgBackward<'_, I> {
    /// Overwrites `grad` (`num_src × plan.row_len`) with the sum of `coef ·
    /// g` over `terms`, at `(row(e, v), t.col)`, as described in the module docs.
    pub(super) fn scatter_partitioned(
        &self,
        terms: &[Term],
        plan: Partitioning,
        grad: &mut [f32],
        row: impl Fn(usize, usize) -> usize + Sync,
        coef: impl Fn(&Term, usize, usize) -> f64 + Sync,
    ) {
        let (out_len, row_len) = (self.plan.out_len, plan.row_len);
        let num_dst = self.graph.num_dst();
        let block_len = plan.rows() * row_len;
        let num_blocks = grad.len().div_ceil(block_len);
        let round_len = (plan.round_terms / terms.len().max(1)).max(1);
        let chunks = rayon::current_num_threads() * CHUNKS_PER_WORKER;
        let mut buckets = vec![vec![Vec::<Entry>::new(); num_blocks]; chunks];

        grad.par_iter_mut().for_each(|y| *y = 0.0);
        for round in (0..num_dst).step_by(round_len) {
            let round = round..(round + round_len).min(num_dst);
            let chunk_len = round.len().div_ceil(chunks);
            buckets.par_iter_mut().enumerate().for_each(|(c, chunk)| {
                chunk.iter_mut().for_each(Vec::clear);
                let first = round.start + c * chunk_len;
                for v in first..(first + chunk_len).min(round.end) {
                    let arg_row = &self.arg_e[v * out_len..(v + 1) * out_len];
                    let g_row = &self.grad_out[v * out_len..(v + 1) * out_len];
                    for t in terms {
                        let e = arg_row[t.o];
                        if e == I::NONE {
                            continue;
                        }
                        let e = e.to_usize();
                        let u = row(e, v);
                        let x = (coef(t, e, v) * f64::from(g_row[t.o])) as f32;
                        let at = (u & (plan.rows() - 1)) * row_len + t.col;
                        // `at < block_len`, which `Partitioning` checked fits `u32`.
                        chunk[u >> plan.shift].push(Entry { at: at as u32, x });
                    }
                }
            });
            grad.par_chunks_mut(block_len).enumerate().for_each(|(b, block)| {
                for chunk in &buckets {
                    for entry in &chunk[b] {
                        block[entry.at as usize] += entry.x;
                    }
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_fit_the_budget_are_powers_of_two_and_balance() {
        // 1 MiB of 512-byte rows: 2048 rows, fewer than 2^16 / 16.
        assert_eq!(Partitioning::sized(1 << 16, 128, 1 << 20, ROUND_TERMS).unwrap().rows(), 2048);
        // 41 sources: at most ceil(41 / 16) = 3 rows, rounded down to 2.
        assert_eq!(Partitioning::sized(41, 40, 1 << 20, ROUND_TERMS).unwrap().rows(), 2);
        // Rows wider than the budget: one row per block.
        assert_eq!(Partitioning::sized(1 << 10, 1 << 20, 1 << 20, ROUND_TERMS).unwrap().rows(), 1);
        // Block offsets beyond u32: refused.
        assert_eq!(Partitioning::sized(4, 1 << 33, 1 << 20, ROUND_TERMS), None);
    }
}
