//! The three walks of a g-SDDMM, each a rayon task over its share of the
//! edges: nnz-balanced rows of a CSR, the entries of one source block, or a
//! range of an edge list; and where each edge's message goes
//! ([`MessageSink`]: `out[e]` itself, or a staging window).

use super::Ctx;
use super::messages::{DenseDot, DenseEdges, dense_dots, dense_edge, edge_messages, message, prefetch_row};
use crate::Index;
use crate::isa::{Simd, Task};
use crate::kernels::blocked::BlockedCsr;
use crate::kernels::common::SharedMut;
use crate::kernels::staged::StageWriter;
use crate::layout::{CsrView, EdgeList};
use crate::op::{BinaryOp, Target};
use std::marker::PhantomData;

/// Where a walk writes each edge's message row.
pub(super) trait MessageSink {
    /// The row of edge `e`.
    ///
    /// # Safety
    /// `e` is an edge id below the output's row count, passed once per call
    /// and by one task only (the task's own edges).
    unsafe fn row(&mut self, e: usize) -> *mut f32;
}

/// `out[e]` itself.
pub(super) struct Direct {
    pub(super) out: SharedMut<f32>,
    pub(super) out_len: usize,
}

impl MessageSink for Direct {
    #[inline(always)]
    unsafe fn row(&mut self, e: usize) -> *mut f32 {
        // SAFETY: forwarded (`e` in bounds and this task's alone).
        unsafe { self.out.at(e * self.out_len) }
    }
}

impl MessageSink for StageWriter {
    #[inline(always)]
    unsafe fn row(&mut self, e: usize) -> *mut f32 {
        // SAFETY: forwarded; the plan gave this task's edges to this writer.
        unsafe { StageWriter::row(self, e) }
    }
}

/// The CSR walk's task: rows `rows` of `csr`, each row's edges in slot order.
pub(super) struct PlainRows<'a, O, I: Index, K> {
    pub(super) ctx: Ctx<'a, I>,
    pub(super) csr: CsrView<'a, I>,
    pub(super) rows: std::ops::Range<usize>,
    pub(super) sink: K,
    pub(super) _op: PhantomData<O>,
}

impl<O: BinaryOp, I: Index, K: MessageSink + Send> Task for PlainRows<'_, O, I, K> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let Self { ctx, csr, rows, mut sink, .. } = self;
        // SAFETY: the row range of a validated CSR indexes its own id arrays
        // (`ctx.ids` = the CSR's); rows are split disjointly, and the sink is
        // this task's.
        unsafe { row_messages::<O, I, S>(s, &ctx, rows.map(|r| (r, csr.row_range(r))), &mut sink) };
        if ctx.stream_out {
            // The task's streamed messages are visible before it reports done.
            s.store_fence();
        }
    }
}

/// The messages of each `(r, slots)` of `rows` (a row and its slots of
/// `ctx.ids`), in the dense dot form where [`DenseDot::of`] takes the
/// operands, else by the general loop. The CSR walk and the blocked walk
/// share it: the blocked one ran the general loop alone before, at a cost
/// measured in `docs/PERFORMANCE.md`, "Dense dots at AVX2".
///
/// # Safety
/// Each `(r, slots)` as for [`edge_messages`].
#[inline(always)]
unsafe fn row_messages<O: BinaryOp, I: Index, S: Simd>(
    s: S,
    ctx: &Ctx<'_, I>,
    rows: impl Iterator<Item = (usize, std::ops::Range<usize>)>,
    sink: &mut impl MessageSink,
) {
    let Some(dense) = DenseDot::of::<O, S>(ctx) else {
        for (r, slots) in rows {
            // SAFETY: forwarded.
            unsafe { edge_messages::<O, I, S>(s, ctx, r, slots, sink) };
        }
        return;
    };
    for (r, slots) in rows {
        // SAFETY: forwarded, and `DenseDot::of` checked the operands.
        unsafe {
            match dense.vectors {
                1 => dense_dots::<O, I, S, 1>(s, ctx, &dense, r, slots, sink),
                2 => dense_dots::<O, I, S, 2>(s, ctx, &dense, r, slots, sink),
                4 => dense_dots::<O, I, S, 4>(s, ctx, &dense, r, slots, sink),
                8 => dense_dots::<O, I, S, 8>(s, ctx, &dense, r, slots, sink),
                _ => dense_dots::<O, I, S, 16>(s, ctx, &dense, r, slots, sink),
            }
        }
    }
}

/// The blocked walk's task: entries `entries` of one source block of `layout`.
pub(super) struct BlockEntries<'a, 'b, O, I: Index> {
    pub(super) ctx: Ctx<'a, I>,
    pub(super) layout: &'b BlockedCsr<I>,
    pub(super) entries: std::ops::Range<usize>,
    pub(super) _op: PhantomData<O>,
}

impl<O: BinaryOp, I: Index> Task for BlockEntries<'_, '_, O, I> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let mut sink = Direct { out: self.ctx.out, out_len: self.ctx.out_len };
        let entries = self.entries.map(|j| self.layout.entry(j));
        // SAFETY: the slot range of an entry indexes the layout's id arrays
        // (`ctx.ids`); the layout matches the in-CSR, so its row is a
        // destination row. Every edge is in one entry of one block and
        // entries are split disjointly.
        unsafe { row_messages::<O, I, S>(s, &self.ctx, entries, &mut sink) };
        if self.ctx.stream_out {
            s.store_fence();
        }
    }
}

/// The edge walk's task: positions `edges` of the edge list `list`.
pub(super) struct EdgeRange<'a, 'b, O, I: Index> {
    pub(super) ctx: Ctx<'a, I>,
    pub(super) list: EdgeList<'b, I>,
    pub(super) edges: std::ops::Range<usize>,
    pub(super) _op: PhantomData<O>,
}

impl<O: BinaryOp, I: Index> Task for EdgeRange<'_, '_, O, I> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let ctx = &self.ctx;
        let row = |e: usize| {
            // SAFETY: `e` is an edge id below the output's rows (the list's
            // length was checked against them), handled by this task alone.
            unsafe { ctx.out.at(e * ctx.out_len) }
        };
        match DenseEdges::of::<O, S>(ctx) {
            Some(DenseEdges { heads, vectors: 1 }) => self.walk_dense::<S, 1>(s, heads),
            Some(DenseEdges { heads, vectors: 2 }) => self.walk_dense::<S, 2>(s, heads),
            Some(DenseEdges { heads, vectors: 4 }) => self.walk_dense::<S, 4>(s, heads),
            Some(DenseEdges { heads, vectors: 8 }) => self.walk_dense::<S, 8>(s, heads),
            Some(DenseEdges { heads, .. }) => self.walk_dense::<S, 16>(s, heads),
            // SAFETY: `walk` passes edges of the validated list, whose node
            // ids are in bounds for the operands, from this task's disjoint
            // range of positions only, and each edge id occurs at one
            // position, so `row(e)` is this task's.
            None => self.walk(s, |ends| unsafe { message::<O, S>(s, ctx, ends, row(ends.1)) }),
        }
        if ctx.stream_out {
            // The task's streamed messages are visible before it reports done.
            s.store_fence();
        }
    }
}

impl<O: BinaryOp, I: Index> EdgeRange<'_, '_, O, I> {
    /// Calls `visit((u, e, v))` for each position of the range in list
    /// order (`e` its edge id), prefetching the gathered rows of the
    /// position `ctx.prefetch` ahead first.
    #[inline(always)]
    fn walk<S: Simd>(&self, s: S, mut visit: impl FnMut((usize, usize, usize))) {
        let (ctx, src, dst) = (&self.ctx, self.list.src(), self.list.dst());
        for k in self.edges.clone() {
            let kp = k + ctx.prefetch;
            if ctx.prefetch > 0 && kp < src.len() {
                // SAFETY: position `kp` of a validated list has in-bounds
                // node ids and edge id; edge operands are not prefetched.
                unsafe {
                    let (u, v) = (src.get_unchecked(kp).to_usize_valid(), dst.get_unchecked(kp).to_usize_valid());
                    let ep = edge_at(self.list, kp);
                    if ctx.prefetch_lhs {
                        prefetch_row(s, ctx.lhs.row(u, ep, v), ctx.lhs.row_len);
                    }
                    if ctx.prefetch_rhs {
                        prefetch_row(s, ctx.rhs.row(u, ep, v), ctx.rhs.row_len);
                    }
                }
            }
            // SAFETY: `k` is in the range, below the list's length.
            let (u, e, v) = unsafe {
                (src.get_unchecked(k).to_usize_valid(), edge_at(self.list, k), dst.get_unchecked(k).to_usize_valid())
            };
            visit((u, e, v));
        }
    }

    /// [`Self::walk`] with [`dense_edge`] for messages, both operands
    /// gathered by node id (`DenseEdges::of`): the row bases, lengths and
    /// id arrays are fixed before the loop.
    #[inline(always)]
    fn walk_dense<S: Simd, const V: usize>(&self, s: S, heads: usize) {
        let ctx = &self.ctx;
        let (k, rows) = (V * S::LANES, (ctx.lhs.row_len, ctx.rhs.row_len, ctx.out_len));
        let one_message = (k, k, if O::REDUCES_LAST_DIM { 1 } else { k });
        if heads == 1 && rows == one_message {
            // Rows of one message each (single-head u_dot_v, u_add_v): the
            // row and output strides and the lines to prefetch become
            // constants, which took the loop from ~50 to ~30 instructions
            // per edge (the strides' reloads and multiplies, the prefetch
            // loops' compares) and its u_dot_v on RMAT 2^20 / 2^24 at d = 32
            // from 148-319 to 124-157 ms (Intel Xeon VM, `perf-reports/
            // ablation/2026-11-29_xeon-m207_sddmm-dot-constants.tsv`): a walk
            // bound by misses in flight keeps more edges in the window.
            self.walk_dense_rows::<S, V>(s, 1, one_message);
        } else {
            self.walk_dense_rows::<S, V>(s, heads, rows);
        }
    }

    /// [`Self::walk_dense`]'s loop for rows of `a_len` and `b_len` floats and
    /// messages of `out_len`; inlined into both of its calls, so constant
    /// arguments fold into the loop.
    #[inline(always)]
    fn walk_dense_rows<S: Simd, const V: usize>(
        &self,
        s: S,
        heads: usize,
        (a_len, b_len, out_len): (usize, usize, usize),
    ) {
        let ctx = &self.ctx;
        let (src, dst) = (self.list.src(), self.list.dst());
        let ids = |t: Target| if t == Target::Src { src } else { dst };
        let (a_ids, b_ids) = (ids(ctx.lhs.target), ids(ctx.rhs.target));
        let (a_base, b_base) = (ctx.lhs.data.as_ptr(), ctx.rhs.data.as_ptr());
        let lines = |len: usize| len.min(128).div_ceil(16);
        let (a_lines, b_lines) = (lines(a_len), lines(b_len));
        let n = src.len();
        for k in self.edges.clone() {
            let kp = k + ctx.prefetch;
            if ctx.prefetch > 0 && kp < n {
                // SAFETY: position `kp` of the list; prefetches never fault.
                let (a, b) =
                    unsafe { (a_ids.get_unchecked(kp).to_usize_valid(), b_ids.get_unchecked(kp).to_usize_valid()) };
                let (pa, pb) = (a_base.wrapping_add(a * a_len), b_base.wrapping_add(b * b_len));
                for line in 0..a_lines {
                    s.prefetch(pa.wrapping_add(16 * line));
                }
                for line in 0..b_lines {
                    s.prefetch(pb.wrapping_add(16 * line));
                }
            }
            // SAFETY: position `k` of the list has node ids below the
            // operands' row counts (checked at entry), so both rows are in
            // bounds; `DenseEdges::of` checked the slots; its edge id occurs
            // at this position only, so this task alone writes its row.
            unsafe {
                let (a, b) = (a_ids.get_unchecked(k).to_usize_valid(), b_ids.get_unchecked(k).to_usize_valid());
                let out = ctx.out.at(edge_at(self.list, k) * out_len);
                dense_edge::<O, S, V>(s, ctx, heads, (a_base.add(a * a_len), b_base.add(b * b_len)), out);
            }
        }
    }
}

/// The edge id at position `k` of `list`.
///
/// # Safety
/// `k < list.num_edges()`.
#[inline(always)]
unsafe fn edge_at<I: Index>(list: EdgeList<'_, I>, k: usize) -> usize {
    // SAFETY: a list's edge ids have its length (caller: `k` below it).
    list.eids().map_or(k, |ids| unsafe { ids.get_unchecked(k) }.to_usize_valid())
}
