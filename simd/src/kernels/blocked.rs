//! The source-blocked view of an in-CSR, built once per graph and block size.
//!
//! Sources are cut into blocks of `block_sources` consecutive ids. Because
//! every CSR row is sorted by source id, the edges of row `v` that fall into
//! block `b` are one contiguous slot range of the *original* CSR, so the
//! layout stores no copy of the edges — only, per block, the rows it touches
//! and their slot ranges:
//!
//! ```text
//! block b: entries block_ptr[b]..block_ptr[b+1]
//! entry j: row rows[j], CSR slots starts[j] .. starts[j] + (cum[j+1] - cum[j])
//! ```
//!
//! Visiting blocks in ascending order visits each row's edges in row order,
//! so max/min ties and NaNs resolve exactly as in the unblocked pass. Within
//! a block, rows are visited in ascending id and each row's gathers ascend
//! by source id: the gathers of a block touch a window of `block_sources`
//! feature rows, in ascending address order per row (the "radix-sorted"
//! order of Avancha et al. falls out of the canonical CSR order, no sort
//! needed). Memory: `3 · size_of::<I>()` bytes per (block, touched row)
//! entry, at most `3 · size_of::<I>() · E` — see [`BlockedCsr::bytes`].

use crate::Index;
use crate::layout::CsrView;

/// Source blocks of one in-CSR (see the module docs).
#[derive(Debug)]
pub struct BlockedCsr<I: Index> {
    block_sources: usize,
    num_rows: usize,
    num_cols: usize,
    num_edges: usize,
    block_ptr: Vec<usize>,
    rows: Vec<I>,
    starts: Vec<I>,
    cum: Vec<I>,
}

impl<I: Index> BlockedCsr<I> {
    /// Cuts `csr` into blocks of `block_sources` (at least 1) source ids. O(E).
    pub fn build(csr: &CsrView<'_, I>, block_sources: usize) -> Self {
        let bs = block_sources.max(1);
        let nb = csr.num_cols().div_ceil(bs).max(1);
        let indices = csr.indices();
        // Visits the (block, start, end) pieces of every row, in row order.
        let for_each_piece = |f: &mut dyn FnMut(usize, usize, usize, usize)| {
            for v in 0..csr.num_rows() {
                let range = csr.row_range(v);
                let mut k = range.start;
                while k < range.end {
                    let b = indices[k].to_usize() / bs;
                    let limit = (b + 1) * bs;
                    let mut end = k + 1;
                    while end < range.end && indices[end].to_usize() < limit {
                        end += 1;
                    }
                    f(v, b, k, end);
                    k = end;
                }
            }
        };
        let mut counts = vec![0usize; nb + 1];
        for_each_piece(&mut |_, b, _, _| counts[b + 1] += 1);
        for b in 0..nb {
            counts[b + 1] += counts[b];
        }
        let block_ptr = counts.clone();
        let total = block_ptr[nb];
        let mut next = counts;
        let (mut rows, mut starts, mut lens) =
            (vec![I::default(); total], vec![I::default(); total], vec![0usize; total]);
        for_each_piece(&mut |v, b, k, end| {
            let j = next[b];
            next[b] += 1;
            rows[j] = I::from_usize(v);
            starts[j] = I::from_usize(k);
            lens[j] = end - k;
        });
        let mut cum = Vec::with_capacity(total + 1);
        let mut acc = 0usize;
        cum.push(I::from_usize(0));
        for len in lens {
            acc += len;
            cum.push(I::from_usize(acc));
        }
        Self {
            block_sources: bs,
            num_rows: csr.num_rows(),
            num_cols: csr.num_cols(),
            num_edges: csr.num_edges(),
            block_ptr,
            rows,
            starts,
            cum,
        }
    }

    /// Source ids per block.
    pub fn block_sources(&self) -> usize {
        self.block_sources
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> usize {
        self.block_ptr.len() - 1
    }

    /// Number of (block, row) entries.
    pub fn num_entries(&self) -> usize {
        self.rows.len()
    }

    /// Heap bytes of the layout.
    pub fn bytes(&self) -> usize {
        self.block_ptr.len() * std::mem::size_of::<usize>()
            + (self.rows.len() + self.starts.len() + self.cum.len()) * std::mem::size_of::<I>()
    }

    /// Whether the layout was built from a CSR of this shape (what makes its
    /// slot ranges in bounds for `csr`).
    pub fn matches(&self, csr: &CsrView<'_, I>) -> bool {
        (self.num_rows, self.num_cols, self.num_edges) == (csr.num_rows(), csr.num_cols(), csr.num_edges())
    }

    /// Entry range of block `b`.
    pub(crate) fn block(&self, b: usize) -> std::ops::Range<usize> {
        self.block_ptr[b]..self.block_ptr[b + 1]
    }

    /// `(row, CSR slot range)` of entry `j`.
    #[inline(always)]
    pub(crate) fn entry(&self, j: usize) -> (usize, std::ops::Range<usize>) {
        let start = self.starts[j].to_usize();
        let len = self.cum[j + 1].to_usize() - self.cum[j].to_usize();
        (self.rows[j].to_usize(), start..start + len)
    }

    /// Edges before entry `j` (over all blocks): the weight prefix for balancing.
    #[inline]
    pub(crate) fn edges_before(&self, j: usize) -> usize {
        self.cum[j].to_usize()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_every_edge_once_in_block_order() {
        // Row 0: sources 0 1 4 5 8; row 1: none; row 2: 3 3 9.
        let indptr = [0i32, 5, 5, 8];
        let indices = [0i32, 1, 4, 5, 8, 3, 3, 9];
        let eids = [0i32, 1, 2, 3, 4, 5, 6, 7];
        // SAFETY: the arrays satisfy the CsrView invariants (sorted rows, ids < 10).
        let csr = unsafe { CsrView::new_unchecked(&indptr, &indices, &eids, 10) };
        let b = BlockedCsr::build(&csr, 4);
        assert_eq!(b.num_blocks(), 3);
        let pieces: Vec<Vec<(usize, std::ops::Range<usize>)>> =
            (0..3).map(|blk| b.block(blk).map(|j| b.entry(j)).collect()).collect();
        assert_eq!(pieces[0], vec![(0, 0..2), (2, 5..7)]);
        assert_eq!(pieces[1], vec![(0, 2..4)]);
        assert_eq!(pieces[2], vec![(0, 4..5), (2, 7..8)]);
        assert!(b.matches(&csr));
        assert!(b.bytes() > 0);
    }
}
