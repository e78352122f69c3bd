//! Edge-operand rows regrouped by slot window before a g-SpMM walk.
//!
//! The pull g-SpMM reads the edge operand of CSR slot `k` (u_mul_e's
//! weight, a copy_e row) at row `eids[k]`. When edge ids are not in slot
//! order (a graph built from unsorted COO), that is a random line per edge
//! for 4 useful bytes, a second random access beside the source-row
//! gather: on 2^24 RMAT edges at d = 32, u_mul_e_sum took 295-362 ms
//! against 192-223 ms with the same weights already in slot order (Intel
//! Xeon VM; `docs/PERFORMANCE.md`, "Staged edge operands").
//!
//! Staging regroups the operand with only sequential and cache-resident
//! accesses, so that the walk reads the rows of one slot window at a time:
//!
//! ```text
//! plan (once per CSR): slots and edge ids cut into windows of 2^k; the
//!        records of run (slot window S, id window W) are the edges with
//!        slot in S and id in W, S-major; per record its id within W
//!        (`id_low`), per slot its record within S (`record_low`)
//! stage: par over id windows W (one window of rows stays cached): for
//!        every S, copy row W·2^k + id_low[j] to record j of run (S, W):
//!        one sequential write stream per S
//! walk:  slot k reads record S·2^k + record_low[k]: random, but within
//!        the window of records its slot window fills (cache-resident)
//! ```
//!
//! Per edge of an `h`-float operand that is the row read once and written
//! once (`4h` bytes each, plus the read for ownership), the plan's 4-byte
//! `id_low` read, and in the walk `record_low` in place of `eids` and the
//! staged rows of one window at a time: streamed bytes in place of a random
//! 64-byte line. A second pass that sorted each window's records into slot
//! order (so the walk reads row `k` at `k`, for 21-23 ms more per 2^24
//! one-float rows) measured level with this in CPU time and is not kept.
//! The plan is `8E`
//! bytes, the staged rows `4hE` (proportional to the operand, not to
//! `E × d`), both kept by the caller in an [`EdgeStaging`] (the backend
//! keeps one per graph).

use super::common::SharedMut;
use crate::Index;
use crate::buffer::{AlignedVec, CACHE_LINE, aligned_filled};
use crate::layout::CsrView;
use crate::tuning::cache_budget;
use rayon::prelude::*;

/// At most this many windows per side: the run table is its square (8 MiB
/// of `usize`), so tiny forced windows on a large graph are widened instead.
/// One-float rows in cache-sized windows stay below it up to 2^27 edges
/// under a 1 MiB budget ([`fits_cache`]).
const MAX_WINDOWS: usize = 1024;

/// Ids per window for `row_len`-float rows: the largest power of two whose
/// rows take at most half the cache budget (the other half streams the
/// records, or the walk's gathers), at least 1.
pub(crate) fn default_window(row_len: usize) -> usize {
    let ids = (cache_budget() / 2 / (4 * row_len.max(1))).max(1);
    1 << ids.ilog2()
}

/// Whether `num_edges` rows of `row_len` floats stage in windows of the
/// cache-sized default ([`default_window`]), not widened past it.
pub(crate) fn fits_cache(num_edges: usize, row_len: usize) -> bool {
    num_edges.div_ceil(default_window(row_len)) <= MAX_WINDOWS
}

/// `log2` of the window for `num_edges` edges and a requested `window`:
/// rounded down to a power of two, widened to at most [`MAX_WINDOWS`]
/// windows, and at most 2^31 (ids within a window are stored as `u32`).
fn window_shift(num_edges: usize, window: usize) -> u32 {
    let fewest = num_edges.div_ceil(MAX_WINDOWS).max(1).next_power_of_two().ilog2();
    window.max(1).ilog2().max(fewest).min(31)
}

/// The records of one CSR's slot order (see the module docs).
struct SlotOrderPlan {
    /// A window holds slots (or edge ids) `w << shift .. (w + 1) << shift`.
    shift: u32,
    /// `(num_rows, num_cols, num_edges)` of the CSR it was built from.
    shape: (usize, usize, usize),
    num_windows: usize,
    /// `num_windows² + 1` record offsets, S-major: run (S, W) is
    /// `run_starts[S·nw + W] .. run_starts[S·nw + W + 1]`. Slot window S's
    /// records are exactly as many as its slots, at `S << shift ..`.
    run_starts: Vec<usize>,
    /// Per record: its edge id within its id window.
    id_low: AlignedVec<u32>,
    /// Per slot: its record within its slot window.
    record_low: AlignedVec<u32>,
}

impl SlotOrderPlan {
    /// Plans `csr`'s slot order in windows of `window` ids ([`window_shift`]).
    fn build<I: Index>(csr: &CsrView<'_, I>, window: usize) -> Self {
        let num_edges = csr.num_edges();
        let shift = window_shift(num_edges, window);
        let num_windows = num_edges.div_ceil(1 << shift).max(1);
        let eids = csr.eids();
        let counts: Vec<Vec<usize>> = eids
            .par_chunks(1 << shift)
            .map(|slots| {
                let mut c = vec![0usize; num_windows];
                for e in slots {
                    c[e.to_usize() >> shift] += 1;
                }
                c
            })
            .collect();
        let mut run_starts = Vec::with_capacity(num_windows * num_windows + 1);
        let mut next = 0;
        for s in 0..num_windows {
            for w in 0..num_windows {
                run_starts.push(next);
                next += counts.get(s).map_or(0, |c| c[w]);
            }
        }
        run_starts.push(next);
        debug_assert_eq!(next, num_edges, "every edge id occurs once");
        let mut id_low = aligned_filled(num_edges, 0u32);
        let mut record_low = aligned_filled(num_edges, 0u32);
        let mask = (1usize << shift) - 1;
        id_low.par_chunks_mut(1 << shift).zip(record_low.par_chunks_mut(1 << shift)).enumerate().for_each(
            |(s, (ids, records))| {
                let base = s << shift;
                let mut cursor: Vec<usize> =
                    run_starts[s * num_windows..(s + 1) * num_windows].iter().map(|&r| r - base).collect();
                for (record, e) in records.iter_mut().zip(&eids[base..]) {
                    let e = e.to_usize();
                    let j = &mut cursor[e >> shift];
                    ids[*j] = (e & mask) as u32;
                    *record = *j as u32;
                    *j += 1;
                }
            },
        );
        Self { shift, shape: (csr.num_rows(), csr.num_cols(), num_edges), num_windows, run_starts, id_low, record_low }
    }

    fn bytes(&self) -> usize {
        self.run_starts.capacity() * size_of::<usize>() + (self.id_low.capacity() + self.record_low.capacity()) * 4
    }

    /// Copies `rows` (`num_edges` rows of `row_len` floats, by edge id)
    /// into `staged` as records: slot window by slot window, each window's
    /// rows in record order.
    fn stage(&self, rows: &[f32], row_len: usize, staged: &mut [f32]) {
        let (nw, len) = (self.num_windows, row_len);
        debug_assert_eq!(rows.len(), self.shape.2 * len);
        debug_assert_eq!(staged.len(), rows.len());
        let out = SharedMut::new(staged);
        // One id window of rows per task.
        rows.par_chunks(len << self.shift).enumerate().for_each(|(w, window)| {
            for s in 0..nw {
                let run = self.run_starts[s * nw + w]..self.run_starts[s * nw + w + 1];
                let ids = &self.id_low[run.clone()];
                if len == 1 {
                    for (j, &i) in run.zip(ids) {
                        // SAFETY: record `j` lies in run (S, W), which only
                        // this task (id window W) writes, and below
                        // `num_edges` (the run table's total).
                        unsafe { *out.at(j) = window[i as usize] };
                    }
                } else {
                    for (j, &i) in run.zip(ids) {
                        let i = i as usize * len;
                        // SAFETY: as above, for the record's `len` floats.
                        let dst = unsafe { std::slice::from_raw_parts_mut(out.at(j * len), len) };
                        dst.copy_from_slice(&window[i..i + len]);
                    }
                }
            }
        });
    }
}

/// An edge operand staged for one CSR's walk: the row of slot `k` is
/// row [`StagedEdges::row_of`]`(k)` of `rows`.
#[derive(Clone, Copy)]
pub(crate) struct StagedEdges<'a> {
    pub rows: &'a [f32],
    /// Per slot: its row within its slot window.
    record_low: &'a [u32],
    shift: u32,
}

impl StagedEdges<'_> {
    /// The staged row of slot `k`: its slot window's base plus its record
    /// within the window, so a walk in slot order reads the rows of one
    /// window (cache-resident) at a time.
    ///
    /// # Safety
    /// `k` is a slot of the CSR the rows were staged for.
    #[inline(always)]
    pub unsafe fn row_of(&self, k: usize) -> usize {
        // SAFETY: forwarded from the caller: `record_low` has one entry per slot.
        ((k >> self.shift) << self.shift) | unsafe { *self.record_low.get_unchecked(k) } as usize
    }
}

/// What a caller keeps between g-SpMM calls that stage their edge operand
/// (see the module docs): the plans of one CSR (one per window size used)
/// and the staged rows. Bound to the CSR of its first call: a call with a
/// CSR of another shape rebuilds the plans, one of the same shape must be
/// the same CSR (the backend keeps one per graph). Freed on drop.
pub struct EdgeStaging {
    plans: Vec<SlotOrderPlan>,
    rows: AlignedVec<f32>,
}

impl Default for EdgeStaging {
    fn default() -> Self {
        Self { plans: Vec::new(), rows: AlignedVec::new(CACHE_LINE) }
    }
}

impl EdgeStaging {
    /// Heap bytes held: plans and staged rows.
    pub fn bytes(&self) -> usize {
        self.plans.iter().map(SlotOrderPlan::bytes).sum::<usize>() + self.rows.capacity() * 4
    }

    /// `rows` (by edge id, `row_len` floats each) staged for `csr`'s walk in
    /// windows of `window` ids ([`window_shift`]).
    pub(crate) fn stage<I: Index>(
        &mut self,
        csr: &CsrView<'_, I>,
        rows: &[f32],
        row_len: usize,
        window: usize,
    ) -> StagedEdges<'_> {
        let shape = (csr.num_rows(), csr.num_cols(), csr.num_edges());
        self.plans.retain(|p| p.shape == shape);
        let shift = window_shift(shape.2, window);
        let at = match self.plans.iter().position(|p| p.shift == shift) {
            Some(at) => at,
            None => {
                self.plans.push(SlotOrderPlan::build(csr, window));
                self.plans.len() - 1
            }
        };
        if self.rows.capacity() < rows.len() {
            // Dropped first: the old and the new buffer never coexist.
            self.rows = AlignedVec::new(CACHE_LINE);
            self.rows = aligned_filled(rows.len(), 0.0);
        }
        // Old values may stay: every record is written.
        self.rows.resize(rows.len(), 0.0);
        let plan = &self.plans[at];
        if row_len > 0 {
            plan.stage(rows, row_len, &mut self.rows);
        }
        StagedEdges { rows: &self.rows, record_low: &plan.record_low, shift: plan.shift }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CSR of `num_edges` slots in rows of 3, whose edge ids are a
    /// scrambled permutation (5k + 3 mod `num_edges`, which 5 must not divide).
    fn scrambled(num_edges: usize) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
        let indptr: Vec<i32> = (0..num_edges.div_ceil(3)).map(|r| (3 * r) as i32).chain([num_edges as i32]).collect();
        let indices = vec![0; num_edges];
        let eids = (0..num_edges).map(|k| ((5 * k + 3) % num_edges) as i32).collect();
        (indptr, indices, eids)
    }

    #[test]
    fn staged_rows_follow_the_slots() {
        // Windows of 1, 2 (3 rounded down), 4 and one wider than the ids;
        // 1- and 3-float rows; one staging serves every call, so plans are
        // kept, added and dropped, and rows reused with stale values.
        let mut staging = EdgeStaging::default();
        for num_edges in [1, 7, 13, 64] {
            let (indptr, indices, eids) = scrambled(num_edges);
            // SAFETY: `scrambled` builds a valid CSR (one column, rows sorted
            // by edge id is not needed for staging, which reads only `eids`).
            let csr = unsafe { CsrView::new_unchecked(&indptr, &indices, &eids, 1) };
            for window in [1, 3, 4, 128] {
                for row_len in [1, 3] {
                    let rows: Vec<f32> =
                        (0..num_edges * row_len).map(|i| (i / row_len) as f32 + (i % row_len) as f32 / 8.0).collect();
                    let staged = staging.stage(&csr, &rows, row_len, window);
                    let mut seen = vec![false; num_edges];
                    for (k, &e) in eids.iter().enumerate() {
                        // SAFETY: `k` is a slot of `csr`.
                        let r = unsafe { staged.row_of(k) };
                        assert!(!std::mem::replace(&mut seen[r], true), "row {r} given to two slots");
                        let (got, e) = (&staged.rows[r * row_len..(r + 1) * row_len], e as usize);
                        assert_eq!(
                            got,
                            &rows[e * row_len..(e + 1) * row_len],
                            "slot {k} of {num_edges}, window {window}"
                        );
                    }
                }
            }
        }
        assert_eq!(staging.plans.len(), 4, "windows 1, 2, 4 and 128 of the last CSR");
    }

    #[test]
    // Its 2^18-entry run table takes Miri longer than the rest of the crate's
    // tests; the staging code it runs is the test above's.
    #[cfg_attr(miri, ignore)]
    fn tiny_windows_are_widened_on_large_graphs() {
        let num_edges = MAX_WINDOWS * 4 + 1;
        let (indptr, indices, eids) = scrambled(num_edges);
        // SAFETY: as above.
        let csr = unsafe { CsrView::new_unchecked(&indptr, &indices, &eids, 1) };
        let mut staging = EdgeStaging::default();
        let rows: Vec<f32> = (0..num_edges).map(|e| e as f32).collect();
        let staged = staging.stage(&csr, &rows, 1, 1);
        // SAFETY: every `k` is a slot of `csr`.
        assert!(eids.iter().enumerate().all(|(k, &e)| staged.rows[unsafe { staged.row_of(k) }] == e as f32));
        assert!(staging.plans[0].num_windows <= MAX_WINDOWS, "{} windows", staging.plans[0].num_windows);
    }
}
