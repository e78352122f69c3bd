//! Staged output of narrow edge messages whose edge ids are scattered.
//!
//! A CSR walk writes edge `e`'s message to `out[e]`. When edge ids are not in
//! walk order (a graph built from unsorted COO) and a message row is
//! narrower than a 64-byte line (a dot's float, GAT's `[E, H]` logits), each
//! edge touches a random line of an output far larger than the cache: the
//! line is read for ownership, 4-60 bytes of it change, and it is evicted
//! dirty — ~128 bytes of DRAM traffic for a few useful ones, and per edge
//! about as much as gathering a d = 32 source row. Non-temporal stores do
//! not help: a partial line streamed costs a write-combining flush.
//!
//! Staging groups the messages by edge-id window instead:
//!
//! ```text
//! plan:    per task (a range of CSR slots), count its edges per window of
//!          2^k consecutive edge ids; prefix sums give every (task, window)
//!          its own run of records in the window's region of the buffer
//! phase 1: the walk appends (edge id within window, message) records to
//!          the runs: one sequential write stream per window and task
//! phase 2: par over windows: copy the window's records into its slice of
//!          `out`, which is sized to stay in a core's cache
//! ```
//!
//! Per edge that moves the eid again (4 bytes, read for the counts) and a
//! `4 + 4h`-byte record three times (written, read for ownership, read back)
//! — 24 bytes for one float — plus the output once, sequentially. On 2^24
//! RMAT edges at d = 32 it made u_dot_v's kernel 1.13-1.79x faster on the
//! Intel Xeon VM, 1.06x end to end (`docs/PERFORMANCE.md`, "Staged narrow
//! messages"); with 4-float rows it was slower, so only one-float rows are
//! nominated (`super::sddmm_may_stage`). The buffer holds `E × (1 + h)`
//! floats: proportional to the output, not to `E × d`. [`super::sddmm`](fn@super::sddmm)
//! allocates it per call; [`super::sddmm_staging_into`] keeps it in a
//! caller's [`StagingBuffer`] (the backend keeps one per graph), which saves
//! its page faults and fill on every later call.

use super::common::SharedMut;
use crate::Index;
use crate::buffer::{AlignedVec, CACHE_LINE, aligned_filled};
use crate::tuning::cache_budget;
use rayon::prelude::*;
use std::ops::Range;

/// The records of one staged call: window-major, each window's records
/// task by task in walk order.
pub(crate) struct StagedRecords {
    /// A window holds edge ids `w << shift .. (w + 1) << shift`.
    shift: u32,
    out_len: usize,
    /// `num_tasks × num_windows`: where each task's run in each window starts (in records).
    run_starts: Vec<usize>,
    num_windows: usize,
    /// `num_windows + 1` record offsets: where each window's records start.
    window_starts: Vec<usize>,
    /// `num_edges` records of `1 + out_len` floats: the edge id within its
    /// window (as bits), then the message.
    /// Line-aligned and advised for huge pages: phase 1 keeps one write
    /// stream per window and task open, each a TLB entry on 4 KiB pages.
    records: AlignedVec<f32>,
}

/// The records buffer of staged g-SDDMM calls, kept by a caller between
/// calls ([`super::sddmm_staging_into`]): a fresh 128 MiB buffer (2^24
/// one-float records) cost ~40 ms of page faults and zero fill per call on
/// the Intel Xeon VM, a tenth of the call (`docs/PERFORMANCE.md`, "Staged
/// narrow messages"). It grows to the largest call it served and is freed
/// on drop.
pub struct StagingBuffer {
    records: AlignedVec<f32>,
}

impl Default for StagingBuffer {
    fn default() -> Self {
        Self { records: AlignedVec::new(CACHE_LINE) }
    }
}

impl StagingBuffer {
    /// Heap bytes held.
    pub fn bytes(&self) -> usize {
        self.records.capacity() * size_of::<f32>()
    }

    /// The buffer as `len` floats: reused when its capacity suffices (old
    /// values stay; a staged call writes every record before reading it),
    /// else a new line-aligned, huge-page advised one.
    fn take(&mut self, len: usize) -> AlignedVec<f32> {
        let mut records = std::mem::replace(&mut self.records, AlignedVec::new(CACHE_LINE));
        if records.capacity() < len {
            // Dropped first: the old and the new buffer never coexist.
            drop(records);
            return aligned_filled(len, 0.0);
        }
        records.resize(len, 0.0);
        records
    }
}

/// Edges per window for `out_len`-float messages: the largest power of two
/// whose output slice takes at most half the cache budget (the other half
/// streams the records through), at least 1.
pub(crate) fn default_window(out_len: usize) -> usize {
    let edges = (cache_budget() / 2 / (4 * out_len.max(1))).max(1);
    1 << edges.ilog2()
}

impl StagedRecords {
    /// Plans the records of `num_edges` edges, `out_len` floats per message,
    /// in windows of `window` edge ids (rounded down to a power of two), in
    /// `buffer`'s storage. Task `t` walks the slots `task_slots[t]` of
    /// `eids`, which hold every edge id below `num_edges` once (a validated
    /// CSR's). [`Self::finish`] gives the storage back.
    pub(crate) fn plan<I: Index>(
        eids: &[I],
        task_slots: &[Range<usize>],
        (num_edges, out_len): (usize, usize),
        window: usize,
        buffer: &mut StagingBuffer,
    ) -> Self {
        // Ids within a window are stored as 32-bit patterns.
        let shift = window.max(1).ilog2().min(31);
        let num_windows = num_edges.div_ceil(1 << shift).max(1);
        let counts: Vec<Vec<usize>> = task_slots
            .par_iter()
            .map(|slots| {
                let mut c = vec![0usize; num_windows];
                for e in &eids[slots.clone()] {
                    c[e.to_usize() >> shift] += 1;
                }
                c
            })
            .collect();
        let mut run_starts = vec![0usize; task_slots.len() * num_windows];
        let mut window_starts = Vec::with_capacity(num_windows + 1);
        let mut next = 0;
        for w in 0..num_windows {
            window_starts.push(next);
            for (t, c) in counts.iter().enumerate() {
                run_starts[t * num_windows + w] = next;
                next += c[w];
            }
        }
        window_starts.push(next);
        debug_assert_eq!(next, num_edges, "every edge id occurs once");
        Self { shift, out_len, run_starts, num_windows, window_starts, records: buffer.take(next * (1 + out_len)) }
    }

    /// Returns the records' storage to `buffer` for the next call.
    pub(crate) fn finish(self, buffer: &mut StagingBuffer) {
        buffer.records = self.records;
    }

    /// One writer per task, in task order; they write disjoint records.
    pub(crate) fn writers(&mut self) -> Vec<StageWriter> {
        // One pointer for all writers: each is a copy of the same borrow.
        let records = SharedMut::new(&mut self.records);
        self.run_starts
            .chunks_exact(self.num_windows)
            .map(|starts| StageWriter {
                cursors: starts.to_vec(),
                records,
                shift: self.shift,
                stride: 1 + self.out_len,
            })
            .collect()
    }

    /// Phase 2: copies every record into `out` (`num_edges × out_len`), one
    /// window per task.
    pub(crate) fn drain(&self, out: &mut [f32]) {
        let (len, stride) = (self.out_len, 1 + self.out_len);
        out.par_chunks_mut(len << self.shift).enumerate().for_each(|(w, window)| {
            let records = &self.records[self.window_starts[w] * stride..self.window_starts[w + 1] * stride];
            if len == 1 {
                // The case staging is for: one store per record, where a
                // `copy_from_slice` of a run-time length is a `memcpy` call
                // per record. 2^24 records: 73 -> 34 ms on the Intel Xeon VM
                // (docs/PERFORMANCE.md, "Staged narrow messages").
                for r in records.chunks_exact(2) {
                    window[r[0].to_bits() as usize] = r[1];
                }
                return;
            }
            for r in records.chunks_exact(stride) {
                let at = r[0].to_bits() as usize * len;
                window[at..at + len].copy_from_slice(&r[1..]);
            }
        });
    }
}

/// One task's cursor into its runs: hands out the message row of each edge.
pub(crate) struct StageWriter {
    cursors: Vec<usize>,
    records: SharedMut<f32>,
    shift: u32,
    stride: usize,
}

impl StageWriter {
    /// The row to write edge `e`'s message to, after recording `e`.
    ///
    /// # Safety
    /// `e` is an edge id of this writer's task slots (as planned), passed once.
    #[inline(always)]
    pub(crate) unsafe fn row(&mut self, e: usize) -> *mut f32 {
        let cursor = &mut self.cursors[e >> self.shift];
        let j = *cursor;
        *cursor += 1;
        // SAFETY: the plan counted `e` in this task's run of its window, so
        // record `j` lies inside the buffer and belongs to this task alone;
        // the id within the window is below 2^shift <= 2^31.
        unsafe {
            let rec = self.records.at(j * self.stride);
            *rec = f32::from_bits((e & ((1 << self.shift) - 1)) as u32);
            rec.add(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stages `out_len`-float messages `[e + 1/2, e + 1/4, e + 1/6]` of
    /// edges whose ids are a scrambled permutation (3k + 2 mod `num_edges`,
    /// which 3 must not divide), walked by three tasks, in `buffer`.
    fn staged(num_edges: usize, out_len: usize, window: usize, buffer: &mut StagingBuffer) -> Vec<f32> {
        let eids: Vec<i32> = (0..num_edges).map(|k| ((k * 3 + 2) % num_edges) as i32).collect();
        let cut = [0, num_edges / 3, num_edges / 2, num_edges];
        let tasks: Vec<Range<usize>> = cut.windows(2).map(|w| w[0]..w[1]).collect();
        let mut plan = StagedRecords::plan(&eids, &tasks, (num_edges, out_len), window, buffer);
        for (slots, mut writer) in tasks.iter().zip(plan.writers()) {
            for &e in &eids[slots.clone()] {
                let e = e as usize;
                // SAFETY: `e` is one of this task's edge ids, passed once.
                let row = unsafe { writer.row(e) };
                for i in 0..out_len {
                    // SAFETY: the row holds `out_len` floats.
                    unsafe { *row.add(i) = e as f32 + 0.5 / (i + 1) as f32 };
                }
            }
        }
        let mut out = vec![f32::NAN; num_edges * out_len];
        plan.drain(&mut out);
        plan.finish(buffer);
        out
    }

    #[test]
    fn every_message_lands_at_its_edge_id() {
        // 7 and 13 edges: windows of 1, 2 (3 rounded down), 4 and one
        // larger than the ids; 1- and 3-float rows. One buffer serves every
        // call, so records are reused with stale values, shrunk and grown.
        let mut buffer = StagingBuffer::default();
        for num_edges in [7, 13] {
            for window in [1, 3, 4, 64] {
                for out_len in [1, 3] {
                    let out = staged(num_edges, out_len, window, &mut buffer);
                    for (e, row) in out.chunks_exact(out_len).enumerate() {
                        let want: Vec<f32> = (0..out_len).map(|i| e as f32 + 0.5 / (i + 1) as f32).collect();
                        assert_eq!(row, &want[..], "edge {e} of {num_edges}, window {window}, {out_len} floats");
                    }
                }
            }
        }
        assert_eq!(buffer.bytes(), 13 * 4 * 4, "grown to the largest call (13 edges, 3 floats + id)");
    }
}
