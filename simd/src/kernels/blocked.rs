//! The source-blocked copy of an in-CSR, built once per graph and block size.
//!
//! Sources are cut into blocks of `block_sources` consecutive ids. The
//! layout is block-major: block `b` lists, in ascending row order, one
//! *entry* per destination row with an in-edge from the block, and the
//! entries' slots (source id and edge id of each edge) follow each other
//! contiguously, block after block:
//!
//! ```text
//! block b: entries block_ptr[b] .. block_ptr[b+1]
//! entry j: row rows[j], slots cum[j] .. cum[j+1] of cols[] and eids[],
//!          ends[j]: whether j is its row's first entry (OPENS, lowest block)
//!          and its last (CLOSES, highest block)
//! ```
//!
//! A blocked pass therefore streams `rows`, `cum`, `cols` (and `eids` when
//! the op reads edge data) front to back, and a prefetch `k + 16` slots ahead
//! lands on rows of the *same* block. The earlier layout stored only
//! `(row, start)` into the original CSR: since a degree-16 row's slots share
//! one 64-byte line of `indices` and each block uses one or two of them,
//! every block pass pulled the whole index array through the cache again
//! (16 blocks: 16 × 64 MB on a 2^24-edge graph), and its prefetches fetched
//! rows of later blocks. Copying the ids costs `2 · size_of::<I>()` bytes per
//! edge; see [`BlockedCsr::bytes`].
//!
//! Within an entry the slots keep the CSR row order (source id, then edge
//! id), and blocks are visited in ascending order, so every row sees its
//! edges in row order: max/min ties and NaNs resolve exactly as in the
//! plain pass. Gathers within an entry ascend by source id, and all entries
//! of a block gather from one window of `block_sources` feature rows — the
//! "radix-sorted" gather order of Avancha et al. falls out of the canonical
//! CSR order, no extra sort.

use super::common::{SharedMut, balanced_bounds, num_parts};
use crate::Index;
use crate::buffer::{AlignedVec, aligned_with_capacity};
use crate::layout::CsrView;
use rayon::prelude::*;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Source blocks of one in-CSR (see the module docs).
#[derive(Debug)]
pub struct BlockedCsr<I: Index> {
    block_sources: usize,
    num_rows: usize,
    num_cols: usize,
    num_edges: usize,
    /// Entry offsets per block (`num_blocks + 1`).
    block_ptr: Vec<usize>,
    /// Destination row of each entry.
    rows: Vec<I>,
    /// Slot offsets per entry (`num_entries + 1`, starting at 0).
    cum: Vec<I>,
    /// [`OPENS`] and [`CLOSES`] bits of each entry. A pass starts a row's
    /// output from the reducer's identity at its opening entry instead of
    /// reading it, and finishes the row (a mean's division) at its closing
    /// one, so no pass over the whole output precedes or follows the blocks.
    ends: Vec<u8>,
    /// Source id of each slot, block-major.
    cols: Vec<I>,
    /// Edge id of each slot, block-major.
    eids: Vec<I>,
    /// Position of each entry's first slot within its CSR row (the row's
    /// slots in lower blocks): a slot's row ordinal is this plus its place
    /// in the entry, which is what a blocked max/min keeps between blocks.
    row_offsets: Vec<I>,
    /// The largest row degree.
    max_degree: usize,
    /// Scratch a blocked max/min pass keeps its state in
    /// ([`BlockedCsr::with_scratch`]), kept for the layout's later calls.
    scratch: Mutex<AlignedVec<u8>>,
    /// Its capacity, for [`BlockedCsr::bytes`] without taking the lock.
    scratch_bytes: AtomicUsize,
}

/// [`BlockedCsr`] entry bit: the row's first entry.
const OPENS: u8 = 1;
/// [`BlockedCsr`] entry bit: the row's last entry.
const CLOSES: u8 = 2;

/// Entry and slot counts of one (part of the rows, block) pair.
#[derive(Clone, Copy, Default)]
struct Counts {
    entries: usize,
    slots: usize,
}

impl<I: Index> BlockedCsr<I> {
    /// Cuts `csr` into blocks of `block_sources` (at least 1) source ids.
    ///
    /// A parallel counting sort, O(E + parts · blocks): the rows are split
    /// into parts, each part counts its entries and slots per block, prefix
    /// sums in (block, part) order give every part its own output regions,
    /// and the parts fill them. Parts are in row order, so entries of a
    /// block stay in ascending row order.
    pub fn build(csr: &CsrView<'_, I>, block_sources: usize) -> Self {
        let bs = block_sources.max(1);
        let nb = csr.num_cols().div_ceil(bs).max(1);
        let (n, e) = (csr.num_rows(), csr.num_edges());
        // Each part keeps 2 counters per block: bound them by the edges.
        let parts = num_parts(e + n).min(e / nb + 1);
        let indptr = csr.indptr();
        let bounds = balanced_bounds(n, parts, |i| indptr[i].to_usize() + i);
        let counts: Vec<Vec<Counts>> = bounds
            .par_windows(2)
            .map(|w| {
                let mut c = vec![Counts::default(); nb];
                for_each_piece(csr, bs, w[0]..w[1], |_, b, slots| {
                    c[b].entries += 1;
                    c[b].slots += slots.len();
                });
                c
            })
            .collect();
        // Exclusive prefix sums in (block, part) order.
        let mut starts = vec![vec![Counts::default(); nb]; counts.len()];
        let mut block_ptr = Vec::with_capacity(nb + 1);
        let mut next = Counts::default();
        for b in 0..nb {
            block_ptr.push(next.entries);
            for (p, c) in counts.iter().enumerate() {
                starts[p][b] = next;
                next.entries += c[b].entries;
                next.slots += c[b].slots;
            }
        }
        block_ptr.push(next.entries);
        debug_assert_eq!(next.slots, e);
        let mut rows = vec![I::default(); next.entries];
        let mut cum = vec![I::default(); next.entries + 1];
        let mut ends = vec![0u8; next.entries];
        let mut row_offsets = vec![I::default(); next.entries];
        let (mut cols, mut eids) = (vec![I::default(); e], vec![I::default(); e]);
        let (rows_w, cum_w, ends_w) = (SharedMut::new(&mut rows), SharedMut::new(&mut cum), SharedMut::new(&mut ends));
        let offsets_w = SharedMut::new(&mut row_offsets);
        let (cols_w, eids_w) = (SharedMut::new(&mut cols), SharedMut::new(&mut eids));
        let (indices, csr_eids) = (csr.indices(), csr.eids());
        bounds.par_windows(2).zip(starts).for_each(|(w, mut next)| {
            for_each_piece(csr, bs, w[0]..w[1], |v, b, slots| {
                let at = &mut next[b];
                let end = at.slots + slots.len();
                // SAFETY: the prefix sums give part p of block b the entry
                // range and slot range that p counted for b, disjoint from
                // every other (part, block) pair's, and inside the arrays
                // (whose lengths are the totals); this closure writes only
                // inside them, so no element is written twice or by two
                // threads. `cum` has one more element than `rows`, `ends` and
                // `row_offsets` as many.
                unsafe {
                    *rows_w.at(at.entries) = I::from_usize(v);
                    *offsets_w.at(at.entries) = I::from_usize(slots.start - indptr[v].to_usize());
                    *cum_w.at(at.entries + 1) = I::from_usize(end);
                    let (opens, closes) = (slots.start == indptr[v].to_usize(), slots.end == indptr[v + 1].to_usize());
                    *ends_w.at(at.entries) = if opens { OPENS } else { 0 } | if closes { CLOSES } else { 0 };
                    std::ptr::copy_nonoverlapping(indices.as_ptr().add(slots.start), cols_w.at(at.slots), slots.len());
                    std::ptr::copy_nonoverlapping(csr_eids.as_ptr().add(slots.start), eids_w.at(at.slots), slots.len());
                }
                at.entries += 1;
                at.slots = end;
            });
        });
        Self {
            block_sources: bs,
            num_rows: n,
            num_cols: csr.num_cols(),
            num_edges: e,
            block_ptr,
            rows,
            cum,
            ends,
            cols,
            eids,
            row_offsets,
            max_degree: (0..n).map(|v| csr.degree(v)).max().unwrap_or(0),
            scratch: Mutex::new(aligned_with_capacity(0)),
            scratch_bytes: AtomicUsize::new(0),
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
            + (self.rows.len() + self.cum.len() + self.cols.len() + self.eids.len() + self.row_offsets.len())
                * std::mem::size_of::<I>()
            + self.ends.len()
            + self.scratch_bytes.load(Ordering::Relaxed)
    }

    /// Runs `f` on at least `bytes` bytes of line-aligned scratch, whose
    /// contents are unspecified and may be uninitialised: `f` writes every
    /// byte it reads first. The layout keeps the buffer for its later calls
    /// (reported by [`BlockedCsr::bytes`]): a fresh one per call paid the
    /// kernel's zeroing of every page on first touch, 128 MiB for a blocked
    /// copy_u_max at 2^20 rows of d = 128, which made RMAT 2^20 / 2^24 at
    /// d = 32 take 1.3-1.5x as long
    /// (`perf-reports/ablation/2026-12-04_xeon-m167_blocked-max-state.tsv`).
    /// A concurrent call on the same layout gets a fresh buffer.
    pub(crate) fn with_scratch<R>(&self, bytes: usize, f: impl FnOnce(SharedMut<u8>) -> R) -> R {
        match self.scratch.try_lock() {
            Ok(mut kept) => {
                if kept.capacity() < bytes {
                    *kept = aligned_with_capacity(bytes);
                    self.scratch_bytes.store(kept.capacity(), Ordering::Relaxed);
                }
                f(SharedMut::from_capacity(&mut kept))
            }
            Err(_) => f(SharedMut::from_capacity(&mut aligned_with_capacity(bytes))),
        }
    }

    /// Whether the layout was built from a CSR of this shape: what keeps its
    /// rows, source ids and edge ids in bounds for `csr`'s operands.
    pub fn matches(&self, csr: &CsrView<'_, I>) -> bool {
        (self.num_rows, self.num_cols, self.num_edges) == (csr.num_rows(), csr.num_cols(), csr.num_edges())
    }

    /// Entry range of block `b`.
    pub(crate) fn block(&self, b: usize) -> std::ops::Range<usize> {
        self.block_ptr[b]..self.block_ptr[b + 1]
    }

    /// `(row, slot range)` of entry `j`.
    #[inline(always)]
    pub(crate) fn entry(&self, j: usize) -> (usize, std::ops::Range<usize>) {
        (self.rows[j].to_usize(), self.cum[j].to_usize()..self.cum[j + 1].to_usize())
    }

    /// Whether entry `j` is its row's first (the row's lowest block): its
    /// row has seen no message before it in a pass.
    #[inline(always)]
    pub(crate) fn opens_row(&self, j: usize) -> bool {
        self.ends[j] & OPENS != 0
    }

    /// Whether entry `j` is its row's last (the row's highest block): no
    /// message of the row follows it in a pass.
    #[inline(always)]
    pub(crate) fn closes_row(&self, j: usize) -> bool {
        self.ends[j] & CLOSES != 0
    }

    /// How many of entry `j`'s row's slots lie in lower blocks: the row
    /// ordinal (position in CSR row order) of the entry's first slot.
    #[inline(always)]
    pub(crate) fn row_offset(&self, j: usize) -> usize {
        self.row_offsets[j].to_usize()
    }

    /// The largest row degree of the CSR the layout was built from.
    pub(crate) fn max_degree(&self) -> usize {
        self.max_degree
    }

    /// Slots before entry `j` (over all blocks): the weight prefix for balancing.
    #[inline]
    pub(crate) fn slots_before(&self, j: usize) -> usize {
        self.cum[j].to_usize()
    }

    /// Entry bounds (absolute entry indices, ascending) that split block `b`
    /// among workers, balanced by slots plus entries: every window of two
    /// consecutive bounds is one task's entry range.
    pub(crate) fn balanced_entries(&self, b: usize) -> Vec<usize> {
        let entries = self.block(b);
        let first = self.slots_before(entries.start);
        let total = self.slots_before(entries.end) - first + entries.len();
        let local =
            balanced_bounds(entries.len(), num_parts(total), |i| self.slots_before(entries.start + i) - first + i);
        local.into_iter().map(|i| entries.start + i).collect()
    }

    /// Source ids of the slots.
    pub(crate) fn cols(&self) -> &[I] {
        &self.cols
    }

    /// Edge ids of the slots.
    pub(crate) fn eids(&self) -> &[I] {
        &self.eids
    }
}

/// Calls `f(row, block, slots)` for every maximal run of a row's slots that
/// falls into one block, rows in order. Rows are sorted by source id, so a
/// row's blocks ascend and each block's slots are one run.
fn for_each_piece<I: Index>(
    csr: &CsrView<'_, I>,
    block_sources: usize,
    rows: std::ops::Range<usize>,
    mut f: impl FnMut(usize, usize, std::ops::Range<usize>),
) {
    let indices = csr.indices();
    for v in rows {
        let range = csr.row_range(v);
        let mut k = range.start;
        while k < range.end {
            let b = indices[k].to_usize() / block_sources;
            let limit = (b + 1) * block_sources;
            let end = k + 1 + indices[k + 1..range.end].partition_point(|c| c.to_usize() < limit);
            f(v, b, k..end);
            k = end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per block, its entries: (row, [(source, edge id)]).
    type Pieces = Vec<Vec<(usize, Vec<(usize, usize)>)>>;

    fn pieces<I: Index>(b: &BlockedCsr<I>) -> Pieces {
        (0..b.num_blocks())
            .map(|blk| {
                b.block(blk)
                    .map(|j| {
                        let (v, slots) = b.entry(j);
                        (v, slots.map(|k| (b.cols()[k].to_usize(), b.eids()[k].to_usize())).collect())
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn blocks_hold_every_edge_once_in_row_order() {
        // Row 0: sources 0 1 4 5 8; row 1: none; row 2: 3 3 9 (edge ids permuted).
        let indptr = [0i32, 5, 5, 8];
        let indices = [0i32, 1, 4, 5, 8, 3, 3, 9];
        let eids = [7i32, 1, 2, 3, 4, 0, 6, 5];
        // SAFETY: the arrays satisfy the CsrView invariants (sorted rows, ids < 10).
        let csr = unsafe { CsrView::new_unchecked(&indptr, &indices, &eids, 10) };
        let b = BlockedCsr::build(&csr, 4);
        assert_eq!(b.num_blocks(), 3);
        assert_eq!(
            pieces(&b),
            vec![
                vec![(0, vec![(0, 7), (1, 1)]), (2, vec![(3, 0), (3, 6)])],
                vec![(0, vec![(4, 2), (5, 3)])],
                vec![(0, vec![(8, 4)]), (2, vec![(9, 5)])],
            ]
        );
        assert!(b.matches(&csr));
        assert_eq!(b.num_entries(), 5);
        // Row 0 opens in block 0, row 2 too; their later entries do not.
        let opens: Vec<bool> = (0..5).map(|j| b.opens_row(j)).collect();
        assert_eq!(opens, [true, true, false, false, false]);
        // Row 0 closes in block 2, row 2 too.
        let closes: Vec<bool> = (0..5).map(|j| b.closes_row(j)).collect();
        assert_eq!(closes, [false, false, false, true, true]);
        // Row 0's entries start at its slots 0, 2 and 4; row 2's at 0 and 2.
        let offsets: Vec<usize> = (0..5).map(|j| b.row_offset(j)).collect();
        assert_eq!(offsets, [0, 0, 2, 4, 2]);
        assert_eq!(b.max_degree(), 5);
        assert_eq!(b.bytes(), 4 * 8 + (5 + 6 + 8 + 8 + 5) * 4 + 5);
    }

    #[test]
    fn parallel_build_matches_a_sequential_walk() {
        // 3000 rows, skewed sources: many parts and many blocks.
        let (n, per_row) = (3000usize, 9usize);
        let mut indptr = vec![0i64];
        let mut indices = Vec::new();
        for v in 0..n {
            let mut row: Vec<i64> =
                (0..per_row).map(|k| ((v * 7919 + k * k * 104_729) % (v % 50 + 1) * 60) as i64).collect();
            row.sort_unstable();
            indices.extend(row);
            indptr.push(indices.len() as i64);
        }
        // Edge ids: the rows in reverse order, ascending within each row.
        let e = indices.len() as i64;
        let eids: Vec<i64> = (0..n)
            .flat_map(|v| {
                let (a, b) = (indptr[v], indptr[v + 1]);
                (a..b).map(move |k| e - b + (k - a))
            })
            .collect();
        // SAFETY: rows are sorted, ids < 3000, and `eids` is a permutation
        // of 0..E ascending within each row.
        let csr = unsafe { CsrView::new_unchecked(&indptr, &indices, &eids, 3000) };
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for bs in [1, 7, 64, 1000, 5000] {
            let b = pool.install(|| BlockedCsr::build(&csr, bs));
            let mut want: Pieces = vec![Vec::new(); b.num_blocks()];
            for v in 0..n {
                for k in csr.row_range(v) {
                    let blk = indices[k] as usize / bs;
                    let list = &mut want[blk];
                    if list.last().is_none_or(|(r, _)| *r != v) {
                        list.push((v, Vec::new()));
                    }
                    list.last_mut().unwrap().1.push((indices[k] as usize, eids[k] as usize));
                }
            }
            assert_eq!(pieces(&b), want, "block size {bs}");
            // An entry opens its row iff no lower block holds the row, and
            // closes it iff no higher block does.
            let (mut first, mut last) = (vec![None; n], vec![None; n]);
            for blk in 0..b.num_blocks() {
                for j in b.block(blk) {
                    let v = b.entry(j).0;
                    first[v] = first[v].or(Some(j));
                    last[v] = Some(j);
                }
            }
            // An entry's row offset counts its row's slots in lower blocks.
            let mut seen = vec![0; n];
            for blk in 0..b.num_blocks() {
                for j in b.block(blk) {
                    let (v, slots) = b.entry(j);
                    assert_eq!(b.opens_row(j), first[v] == Some(j), "block size {bs}, entry {j}");
                    assert_eq!(b.closes_row(j), last[v] == Some(j), "block size {bs}, entry {j}");
                    assert_eq!(b.row_offset(j), seen[v], "block size {bs}, entry {j}");
                    seen[v] += slots.len();
                }
            }
            assert_eq!(b.max_degree(), per_row);
        }
    }
}
