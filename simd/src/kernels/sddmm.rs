//! Edge-parallel g-SDDMM: `out[e] = φ(lhs[a(e)], rhs[b(e)])`.
//!
//! ```text
//! plain pass, over the chosen CSR:
//!   par over nnz-balanced row ranges:                    <- one `vectorize` per task
//!     for r in rows:                                      <- row operand stays hot in L1
//!       for k in row(r): edge_messages(r, k)
//! blocked pass, over the in-CSR's source blocks (traffic model, see `tuning`):
//!   for block in source blocks (ascending):              <- all workers share one block
//!     par over nnz-balanced entries (v, slots) of the block:
//!       for k in slots: edge_messages(v, k)               <- source rows hit the cache
//! edge_messages(r, k): e = eid[k]; (u, v) from (r, col[k]);
//!   prefetch the gathered rows of slot k + distance;
//!   for slot in plan: out[e][slot] = φ(lhs slot, rhs slot)   (dot: K-long dot)
//! ```
//!
//! Locality: walking the rows of a CSR keeps one operand row (the row's
//! node) in L1 and gathers the other by column id, while the output row goes
//! to `out[eid]`. Which CSR to walk is decided once per graph by
//! [`sddmm_order`]: the one whose edge ids are most often consecutive, so
//! output writes stream instead of scattering (a graph built from
//! source-sorted COO walks its out-CSR and writes sequentially; one built
//! from a CSC walks its in-CSR). When neither is (edges in random order),
//! the gathered source rows and the scattered `out[eid]` writes are both
//! random lines; source blocking turns the gathers into cache hits, leaving
//! the writes — measured on 2^24 edges at d = 32 in `docs/PERFORMANCE.md`.

use super::blocked::BlockedCsr;
use super::common::{
    EdgeIds, Operand, SharedMut, Slot, balanced_bounds, dot, num_parts, plan_slots, widest_gathered_row,
};
use super::edge_partition::Grouping;
use super::staged::{StageWriter, StagedRecords, StagingBuffer, default_window};
use crate::Index;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task};
use crate::layout::{BroadcastPlan, CsrView, EdgeList};
use crate::op::{BinaryOp, Target};
use crate::tuning::{BlockPlan, GatherShape, Staging, Streaming, active_tuning, cache_budget, plan_blocking};
use rayon::prelude::*;
use std::marker::PhantomData;

/// Which CSR a g-SDDMM walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SddmmOrder {
    /// The in-CSR: rows are destinations.
    InCsr,
    /// The out-CSR: rows are sources.
    OutCsr,
}

/// Picks the CSR whose edge-id sequence is most often consecutive (ties: in-CSR). O(E).
pub fn sddmm_order<I: Index>(in_csr: &CsrView<'_, I>, out_csr: &CsrView<'_, I>) -> SddmmOrder {
    if consecutive_ids(out_csr) > consecutive_ids(in_csr) { SddmmOrder::OutCsr } else { SddmmOrder::InCsr }
}

/// Whether a walk of `csr` visits edge ids mostly out of order (g-SDDMM
/// writes `out[eid]`, g-SpMM reads an edge operand's row `eid`): fewer than
/// half of its successive slots hold consecutive edge ids. O(E).
pub fn edge_ids_scattered<I: Index>(csr: &CsrView<'_, I>) -> bool {
    2 * consecutive_ids(csr) < csr.num_edges().saturating_sub(1)
}

/// How many successive slots of `csr` hold consecutive edge ids.
fn consecutive_ids<I: Index>(csr: &CsrView<'_, I>) -> usize {
    csr.eids().par_windows(2).filter(|w| w[1].to_usize() == w[0].to_usize().wrapping_add(1)).count()
}

/// One g-SDDMM call.
pub struct SddmmArgs<'a, I: Index> {
    /// The CSR to walk: the in-CSR for [`SddmmOrder::InCsr`], else the out-CSR.
    pub csr: CsrView<'a, I>,
    pub order: SddmmOrder,
    pub lhs_target: Target,
    pub rhs_target: Target,
    pub plan: &'a BroadcastPlan,
    pub lhs: &'a [f32],
    pub rhs: &'a [f32],
    /// `num_edges × plan.out_len`, overwritten.
    pub out: &'a mut [f32],
}

/// What the traffic model nominates for `args` under the thread's active
/// tuning, as [`super::spmm_blocking`] (block plans, fewest blocks first;
/// none = the plain pass). Only an in-CSR walk that gathers source rows can
/// block. The caller builds (and caches) the [`BlockedCsr`] of the in-CSR
/// and passes it to [`sddmm`].
pub fn sddmm_blocking<O: BinaryOp, I: Index>(args: &SddmmArgs<'_, I>, hot: impl Fn(usize) -> f64) -> Vec<BlockPlan> {
    if args.order != SddmmOrder::InCsr || args.plan.out_len == 0 {
        return Vec::new();
    }
    let (plan, lt, rt) = (args.plan, args.lhs_target, args.rhs_target);
    let bytes = |target: Target| {
        let l = if O::USE_LHS && lt == target { plan.lhs_len } else { 0 };
        let r = if O::USE_RHS && rt == target { plan.rhs_len } else { 0 };
        4 * (l + r)
    };
    let shape = GatherShape {
        num_src: args.csr.num_cols(),
        num_dst: args.csr.num_rows(),
        num_edges: args.csr.num_edges(),
        gathered_row_bytes: bytes(Target::Src),
        dst_row_bytes: bytes(Target::Dst),
        winner_row_bytes: 0,
        dst_rows_written: false,
        index_bytes: std::mem::size_of::<I>(),
    };
    plan_blocking(&shape, active_tuning(), hot).into_iter().map(|p| BlockPlan { tile_bytes: 0, ..p }).collect()
}

/// Whether streaming `args`' messages is worth a trial: vector messages
/// whose rows are whole 64-byte lines (16-float multiples: in a
/// line-aligned output their streamed vectors fill whole lines, while a
/// partial line streamed costs a write-combining flush; dots write a float
/// per slot) and whose output exceeds the cache budget.
///
/// Non-temporal stores write each 64-byte line of `out[eid]` once, where a
/// plain store first reads the random line for ownership only to evict it
/// unread. Whether that pays depends on the machine: u_add_v at d = 32 on
/// 2^24 edges went from ~1,150 to ~590 ms with streaming on an Intel Xeon
/// VM and from ~500 to ~800 ms on an AMD Zen 4 VM (`docs/PERFORMANCE.md`,
/// "Streamed output rows"). So the kernel streams only under
/// `Streaming::On`; `Auto` means plain stores here, and the SIMD backend
/// times both on the first calls (`gnnkern::backend::simd::trials`).
pub fn sddmm_may_stream<O: BinaryOp, I: Index>(args: &SddmmArgs<'_, I>) -> bool {
    !O::REDUCES_LAST_DIM && args.plan.out_len.is_multiple_of(16) && args.out.len().saturating_mul(4) > cache_budget()
}

/// How the edge walk should regroup `args`' edges ([`super::EdgePartition`]),
/// or `None` to walk them in id order:
///
/// - messages narrower than a line in an output larger than the cache
///   budget (a one-float dot): by edge-id range, `budget / message bytes`
///   edges per part in the CSR's row order, so that a part's messages land
///   in one budget's slice of the output instead of reading and writing back
///   a random line each. On an Intel Xeon VM of family 6 model 207 (u_dot_v,
///   d = 32, RMAT 2^20 / 2^24, a 1 MiB budget: 64 parts) the walk took
///   96-114 ms against 117-146 ms for the in-CSR walk (`docs/PERFORMANCE.md`,
///   "Edge-id ranges");
/// - else, destination operand rows larger than the cache budget: by
///   destination range, `budget / row bytes` destinations per part, each in
///   edge-id order, so the destination rows are gathered from one budget's
///   slice at a time while the output is still written in ascending edge id.
///   On an Intel Xeon VM (u_add_v, d = 32, 2^24 edges, a 1 MiB budget: 128
///   parts) that walk took 197-209 ms against 317-334 ms in id order on a
///   uniform graph (`docs/PERFORMANCE.md`, "Destination ranges").
pub fn sddmm_edge_parts<O: BinaryOp, I: Index>(args: &SddmmArgs<'_, I>) -> Option<Grouping> {
    let budget = cache_budget();
    let message_bytes = 4 * args.plan.out_len;
    if message_bytes > 0 && message_bytes < 64 && args.out.len().saturating_mul(4) > budget {
        return Some(Grouping::EdgeRanges((budget / message_bytes).max(1)));
    }
    let dst_len = |used: bool, target: Target, len: usize| if used && target == Target::Dst { len } else { 0 };
    let row_bytes = 4 * dst_len(O::USE_LHS, args.lhs_target, args.plan.lhs_len).max(dst_len(
        O::USE_RHS,
        args.rhs_target,
        args.plan.rhs_len,
    ));
    let num_dst = match args.order {
        SddmmOrder::InCsr => args.csr.num_rows(),
        SddmmOrder::OutCsr => args.csr.num_cols(),
    };
    (row_bytes > 0 && num_dst.saturating_mul(row_bytes) > budget)
        .then(|| Grouping::DestinationRanges((budget / row_bytes).max(1)))
}

/// Whether staging `args`' messages by edge-id window is worth a trial:
/// one float per edge (a single-head dot, 1-head attention logits) in an
/// output that exceeds the cache budget. It pays only when the walk's edge
/// ids are scattered ([`edge_ids_scattered`]), which the caller knows per
/// graph. Traffic per edge: `super::staged`.
///
/// Why one float: on 2^24 RMAT edges at d = 32 (Intel Xeon VM, in-process
/// A/B) staging took the 1-float dot from 404-452 to 267-353 ms, but the
/// 4-head dot from 326-446 to 564-674 ms and the 4-float u_add_v from
/// 236-264 to 329-471 ms, at every window size tried (32K-2M edges):
/// the 20-byte records moved three times cost more than the random
/// 16-byte writes they replace.
pub fn sddmm_may_stage<O: BinaryOp, I: Index>(args: &SddmmArgs<'_, I>) -> bool {
    args.plan.out_len == 1 && args.out.len().saturating_mul(4) > cache_budget()
}

/// Runs the g-SDDMM at the thread's active ISA level, over the source
/// blocks of `blocked` (a layout of the in-CSR) when given. The plain pass
/// stages its messages under `Staging::On` / `Windows` (`super::staged`);
/// the blocked pass writes `out[eid]` directly.
///
/// A staged call allocates its records and frees them at return; see
/// [`sddmm_staging_into`] to keep them between calls.
pub fn sddmm<O: BinaryOp, I: Index>(
    args: SddmmArgs<'_, I>,
    blocked: Option<&BlockedCsr<I>>,
) -> Result<(), KernelError> {
    let staging = &mut StagingBuffer::default();
    let entry = SddmmEntry::<O, I> { args, blocked, edges: None, staging, _op: PhantomData };
    crate::isa::with_token(crate::isa::active_level(), entry)
}

/// Runs the g-SDDMM at the thread's active ISA level over `edges` (the
/// graph's COO) in edge-id order instead of over `args.csr`, which then
/// only fixes the shapes: `out[e]` is written sequentially, and both
/// operand rows of an edge are gathered (and prefetched) by node id.
///
/// ```text
/// par over equal ranges of edge ids:                 <- one `vectorize` per task
///   for e in range: prefetch the gathered rows of e + distance;
///                   out[e] = φ(lhs[a(e)], rhs[b(e)])  (the CSR walks' message code)
/// ```
///
/// The trade against a CSR walk: the walk's row operand is no longer
/// reused from L1, but no output line is written at random. On RMAT 2^20 /
/// 2^24 at d = 32 (Intel Xeon VM, family 6 model 207), where most edges
/// end in hub rows that stay cached, u_add_v with streamed stores took
/// 145 ms end to end against the streamed in-CSR walk's 206 ms; on the
/// uniform graph, where every row is cold, the two took the same time,
/// and u_dot_v stayed on the in-CSR walk's dense dot loop on both
/// (`perf-reports/ablation/2026-11-27_xeon_sddmm-edge-order.tsv`). Which
/// wins is the graph's, so the SIMD backend times both. Messages are
/// computed by the same code as the CSR walks', so the results are bitwise
/// identical. Streams full, aligned message vectors under `Streaming::On`;
/// never stages (the writes are already sequential).
pub fn sddmm_edge_order<O: BinaryOp, I: Index>(
    args: SddmmArgs<'_, I>,
    edges: EdgeList<'_, I>,
) -> Result<(), KernelError> {
    let staging = &mut StagingBuffer::default();
    let entry = SddmmEntry::<O, I> { args, blocked: None, edges: Some(edges), staging, _op: PhantomData };
    crate::isa::with_token(crate::isa::active_level(), entry)
}

/// [`sddmm`]'s plain pass, staging (under `Staging::On` / `Windows`) in
/// `staging`'s storage, which keeps it for the caller's next call. The
/// backend keeps one per graph.
pub fn sddmm_staging_into<O: BinaryOp, I: Index>(
    args: SddmmArgs<'_, I>,
    staging: &mut StagingBuffer,
) -> Result<(), KernelError> {
    let entry = SddmmEntry::<O, I> { args, blocked: None, edges: None, staging, _op: PhantomData };
    crate::isa::with_token(crate::isa::active_level(), entry)
}

struct SddmmEntry<'a, 'b, O, I: Index> {
    args: SddmmArgs<'a, I>,
    blocked: Option<&'b BlockedCsr<I>>,
    /// Walk these edges in id order instead of the CSR.
    edges: Option<EdgeList<'b, I>>,
    staging: &'b mut StagingBuffer,
    _op: PhantomData<O>,
}

impl<O: BinaryOp, I: Index> Task for SddmmEntry<'_, '_, O, I> {
    type Output = Result<(), KernelError>;
    fn run<S: Simd>(self, s: S) -> Self::Output {
        let SddmmArgs { csr, order, lhs_target, rhs_target, plan, lhs, rhs, out } = self.args;
        let (num_src, num_dst) = match order {
            SddmmOrder::InCsr => (csr.num_cols(), csr.num_rows()),
            SddmmOrder::OutCsr => (csr.num_rows(), csr.num_cols()),
        };
        let rows_of = |t: Target| match t {
            Target::Src => num_src,
            Target::Edge => csr.num_edges(),
            Target::Dst => num_dst,
        };
        let slots = plan_slots::<O>(
            plan,
            S::LANES,
            (lhs, rows_of(lhs_target)),
            (rhs, rows_of(rhs_target)),
            (out.len(), csr.num_edges()),
        )?;
        if let Some(layout) = self.blocked
            && (order != SddmmOrder::InCsr || !layout.matches(&csr))
        {
            return Err(KernelError {
                what: "blocked layout edges (built for another graph or orientation)",
                expected: csr.num_edges(),
                actual: layout.num_entries(),
            });
        }
        if let Some(list) = self.edges {
            check_len("edge list edges (built for another graph)", csr.num_edges(), list.num_edges())?;
            check_len("edge list source nodes (built for another graph or orientation)", num_src, list.num_src())?;
            check_len("edge list destination nodes (built for another graph or orientation)", num_dst, list.num_dst())?;
        }
        if plan.out_len == 0 || csr.num_edges() == 0 {
            return Ok(());
        }
        // The operand side a walk gathers by column id.
        let column = if order == SddmmOrder::InCsr { Target::Src } else { Target::Dst };
        let gathered = |used: bool, t: Target| used && (t == column || t == Target::Edge);
        let ctx = Ctx {
            ids: EdgeIds::of(&csr),
            rows_are_dst: order == SddmmOrder::InCsr,
            lhs: Operand { data: lhs, row_len: plan.lhs_len, target: lhs_target, contiguous: plan.lhs_contiguous },
            rhs: Operand { data: rhs, row_len: plan.rhs_len, target: rhs_target, contiguous: plan.rhs_contiguous },
            prefetch_lhs: gathered(O::USE_LHS, lhs_target),
            prefetch_rhs: gathered(O::USE_RHS, rhs_target),
            out_len: plan.out_len,
            slots: &slots,
            out: SharedMut::new(&mut *out),
            prefetch: active_tuning().prefetch_slots(widest_gathered_row([
                (gathered(O::USE_LHS, lhs_target), plan.lhs_len),
                (gathered(O::USE_RHS, rhs_target), plan.rhs_len),
            ])),
            stream_out: !O::REDUCES_LAST_DIM && active_tuning().streaming == Streaming::On,
        };
        if let Some(list) = self.edges {
            // Both gathered rows of an edge count towards the lines in flight.
            let gathered = |used: bool, t: Target, len: usize| if used && t != Target::Edge { 4 * len } else { 0 };
            let row_bytes =
                gathered(O::USE_LHS, lhs_target, plan.lhs_len) + gathered(O::USE_RHS, rhs_target, plan.rhs_len);
            let ctx = Ctx {
                prefetch_lhs: O::USE_LHS && lhs_target != Target::Edge,
                prefetch_rhs: O::USE_RHS && rhs_target != Target::Edge,
                prefetch: active_tuning().prefetch_slots(row_bytes),
                ..ctx
            };
            let e = list.num_edges();
            balanced_bounds(e, num_parts(e).max(e / EDGE_TASK), |i| i).par_windows(2).for_each(|w| {
                s.vectorize(EdgeRange::<O, I> { ctx, list, edges: w[0]..w[1], _op: PhantomData });
            });
            return Ok(());
        }
        let window = match active_tuning().staging {
            Staging::Auto | Staging::Off => None,
            Staging::On => Some(default_window(plan.out_len)),
            Staging::Windows(n) => Some(n),
        };
        match self.blocked {
            None => {
                let n = csr.num_rows();
                let indptr = csr.indptr();
                let bounds = balanced_bounds(n, num_parts(csr.num_edges() + n), |i| indptr[i].to_usize() + i);
                let Some(window) = window else {
                    bounds.par_windows(2).for_each(|w| {
                        let sink = Direct { out: ctx.out, out_len: ctx.out_len };
                        s.vectorize(PlainRows::<O, I, _> { ctx, csr, rows: w[0]..w[1], sink, _op: PhantomData });
                    });
                    return Ok(());
                };
                let slots: Vec<_> =
                    bounds.windows(2).map(|w| indptr[w[0]].to_usize()..indptr[w[1]].to_usize()).collect();
                let edges = (csr.num_edges(), plan.out_len);
                let mut staged = StagedRecords::plan(csr.eids(), &slots, edges, window, self.staging);
                bounds.par_windows(2).zip(staged.writers()).for_each(|(w, sink)| {
                    s.vectorize(PlainRows::<O, I, _> { ctx, csr, rows: w[0]..w[1], sink, _op: PhantomData });
                });
                staged.drain(out);
                staged.finish(self.staging);
            }
            Some(layout) => {
                let ctx = Ctx { ids: EdgeIds { cols: layout.cols(), eids: layout.eids() }, ..ctx };
                for b in 0..layout.num_blocks() {
                    layout.balanced_entries(b).par_windows(2).for_each(|w| {
                        s.vectorize(BlockEntries::<O, I> { ctx, layout, entries: w[0]..w[1], _op: PhantomData });
                    });
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct Ctx<'a, I: Index> {
    /// The slots walked: the CSR's (plain) or the in-CSR layout's (blocked).
    ids: EdgeIds<'a, I>,
    rows_are_dst: bool,
    lhs: Operand<'a>,
    rhs: Operand<'a>,
    /// Whether lhs / rhs rows are gathered per edge (by column or edge id)
    /// and so worth prefetching.
    prefetch_lhs: bool,
    prefetch_rhs: bool,
    out_len: usize,
    slots: &'a [Slot],
    out: SharedMut<f32>,
    /// Prefetch distance in slots (0: off).
    prefetch: usize,
    /// Full, aligned message vectors go out with non-temporal stores
    /// (`Streaming::On` only, see [`sddmm_may_stream`]).
    stream_out: bool,
}

/// Where a walk writes each edge's message row.
trait MessageSink {
    /// The row of edge `e`.
    ///
    /// # Safety
    /// `e` is an edge id below the output's row count, passed once per call
    /// and by one task only (the task's own edges).
    unsafe fn row(&mut self, e: usize) -> *mut f32;
}

/// `out[e]` itself.
struct Direct {
    out: SharedMut<f32>,
    out_len: usize,
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

struct PlainRows<'a, O, I: Index, K> {
    ctx: Ctx<'a, I>,
    csr: CsrView<'a, I>,
    rows: std::ops::Range<usize>,
    sink: K,
    _op: PhantomData<O>,
}

impl<O: BinaryOp, I: Index, K: MessageSink + Send> Task for PlainRows<'_, O, I, K> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(mut self, s: S) {
        if let Some(dense) = DenseDot::of::<O, S>(&self.ctx) {
            for r in self.rows.clone() {
                // SAFETY: as below, and `DenseDot::of` checked the operands.
                unsafe {
                    match dense.vectors {
                        1 => dense_dots::<O, I, S, 1>(s, &self.ctx, &dense, r, self.csr.row_range(r), &mut self.sink),
                        2 => dense_dots::<O, I, S, 2>(s, &self.ctx, &dense, r, self.csr.row_range(r), &mut self.sink),
                        4 => dense_dots::<O, I, S, 4>(s, &self.ctx, &dense, r, self.csr.row_range(r), &mut self.sink),
                        _ => dense_dots::<O, I, S, 8>(s, &self.ctx, &dense, r, self.csr.row_range(r), &mut self.sink),
                    }
                }
            }
        } else {
            for r in self.rows {
                // SAFETY: the row range of a validated CSR indexes its own id
                // arrays (`ctx.ids` = the CSR's); rows are split disjointly, and
                // the sink is this task's.
                unsafe { edge_messages::<O, I, S>(s, &self.ctx, r, self.csr.row_range(r), &mut self.sink) };
            }
        }
        if self.ctx.stream_out {
            // The task's streamed messages are visible before it reports done.
            s.store_fence();
        }
    }
}

struct BlockEntries<'a, 'b, O, I: Index> {
    ctx: Ctx<'a, I>,
    layout: &'b BlockedCsr<I>,
    entries: std::ops::Range<usize>,
    _op: PhantomData<O>,
}

impl<O: BinaryOp, I: Index> Task for BlockEntries<'_, '_, O, I> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let mut sink = Direct { out: self.ctx.out, out_len: self.ctx.out_len };
        for j in self.entries {
            let (v, slots) = self.layout.entry(j);
            // SAFETY: the slot range of an entry indexes the layout's id
            // arrays (`ctx.ids`); the layout matches the in-CSR, so `v` is a
            // destination row. Every edge is in one entry of one block and
            // entries are split disjointly.
            unsafe { edge_messages::<O, I, S>(s, &self.ctx, v, slots, &mut sink) };
        }
        if self.ctx.stream_out {
            s.store_fence();
        }
    }
}

/// The edge walk's task size: at most about this many edges per task (and
/// at least `num_parts` tasks, a few per worker).
const EDGE_TASK: usize = 1 << 16;

struct EdgeRange<'a, 'b, O, I: Index> {
    ctx: Ctx<'a, I>,
    list: EdgeList<'b, I>,
    edges: std::ops::Range<usize>,
    _op: PhantomData<O>,
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
            Some(DenseEdges { heads, .. }) => self.walk_dense::<S, 8>(s, heads),
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

/// An edge walk's messages as whole vectors, both operands contiguous:
/// `heads` dots of `vectors` vectors laid head after head (as
/// [`DenseDot`]), or one elementwise message of `vectors` vectors.
struct DenseEdges {
    heads: usize,
    /// 1, 2, 4 or 8.
    vectors: usize,
}

impl DenseEdges {
    fn of<O: BinaryOp, S: Simd>(ctx: &Ctx<'_, impl Index>) -> Option<Self> {
        let l = S::LANES;
        let by_node = ctx.lhs.target != Target::Edge && ctx.rhs.target != Target::Edge;
        if !(O::USE_LHS && O::USE_RHS && ctx.lhs.contiguous && ctx.rhs.contiguous && by_node) {
            return None;
        }
        let (heads, k) =
            if O::REDUCES_LAST_DIM { (ctx.slots.len(), ctx.slots.first()?.len) } else { (1, ctx.slots.len() * l) };
        let v = k / l;
        let slot = |i: usize| {
            if O::REDUCES_LAST_DIM {
                Slot { out: i, lhs: i * k, rhs: i * k, len: k }
            } else {
                Slot { out: i * l, lhs: i * l, rhs: i * l, len: l }
            }
        };
        let laid_out = ctx.slots.iter().enumerate().all(|(i, sl)| *sl == slot(i));
        (k == v * l && matches!(v, 1 | 2 | 4 | 8) && laid_out).then_some(Self { heads, vectors: v })
    }
}

/// [`message`] for [`DenseEdges`] of `V` vectors: the same [`dot`] per head,
/// or the same `apply_vec` per vector, so bitwise the same messages, at a
/// length known at compile time. Without it (the general slot loop) the
/// edge walk took u_dot_v 1.2-1.3x and u_add_v 1.1-1.2x longer on RMAT
/// 2^20 / 2^24 at d = 32 (Intel Xeon VM; the ablation file of
/// [`sddmm_edge_order`], section 2): fewer instructions per edge keep more
/// edges, and so more misses, in the out-of-order window (as [`dense_dots`]).
///
/// # Safety
/// `a` and `b` are the edge's operand rows, `out` its output row (as for
/// [`message`]), and `DenseEdges::of(ctx)` gave `heads` and `V`.
#[inline(always)]
unsafe fn dense_edge<O: BinaryOp, S: Simd, const V: usize>(
    s: S,
    ctx: &Ctx<'_, impl Index>,
    heads: usize,
    (a, b): (*const f32, *const f32),
    out: *mut f32,
) {
    let l = S::LANES;
    // SAFETY: forwarded from the caller; the slots `DenseEdges::of` matched
    // lie inside both operand rows and the output row (`plan_slots`).
    unsafe {
        if O::REDUCES_LAST_DIM {
            let k = V * l;
            for h in 0..heads {
                *out.add(h) = dot::<O, S>(s, a.add(h * k), b.add(h * k), k);
            }
            return;
        }
        for j in 0..V {
            let m = O::apply_vec(s, s.load(a.add(j * l)), s.load(b.add(j * l)));
            let p = out.add(j * l);
            if ctx.stream_out && (p as usize).is_multiple_of(4 * l) {
                s.stream(p, m);
            } else {
                s.store(p, m);
            }
        }
    }
}

/// Messages of the edges in slots `slots` of `ctx.ids`, all on row `r`,
/// written to the rows `sink` gives.
///
/// # Safety
/// `slots` indexes `ctx.ids`, whose column ids are below the column side's
/// node count and edge ids below `num_edges` (the operand and output row
/// counts `plan_slots` checked); `r` is a row of that side. No other task
/// handles these edges: edge `e` occurs once, so this task alone writes its row.
#[inline(always)]
unsafe fn edge_messages<O: BinaryOp, I: Index, S: Simd>(
    s: S,
    ctx: &Ctx<'_, I>,
    r: usize,
    slots: std::ops::Range<usize>,
    sink: &mut impl MessageSink,
) {
    let (cols, eids) = (ctx.ids.cols, ctx.ids.eids);
    let ends = |c: usize, e: usize| if ctx.rows_are_dst { (c, e, r) } else { (r, e, c) };
    for k in slots {
        let kp = k + ctx.prefetch;
        if ctx.prefetch > 0 && kp < cols.len() {
            // The rows slot `kp` will gather (possibly in a later row or
            // entry). SAFETY: `kp` is a slot of `ctx.ids`, so its ids index
            // operand rows in bounds; the row-side operand (`r`) is not
            // prefetched, so any `r` gives an in-bounds address.
            unsafe {
                let (u, e, v) = ends(cols.get_unchecked(kp).to_usize_valid(), eids.get_unchecked(kp).to_usize_valid());
                if ctx.prefetch_lhs {
                    prefetch_row(s, ctx.lhs.row(u, e, v), ctx.lhs.row_len);
                }
                if ctx.prefetch_rhs {
                    prefetch_row(s, ctx.rhs.row(u, e, v), ctx.rhs.row_len);
                }
            }
        }
        // SAFETY: by the function's contract `k` indexes `ctx.ids`, whose
        // ids are in bounds for the operands and the output, and this task
        // alone handles edge `e`.
        unsafe {
            let (u, e, v) = ends(cols.get_unchecked(k).to_usize_valid(), eids.get_unchecked(k).to_usize_valid());
            message::<O, S>(s, ctx, (u, e, v), sink.row(e));
        }
    }
}

/// The message of edge `e = (u, v)`, written to `out` (its output row):
/// what every walk computes per edge, so every walk writes bitwise the
/// same messages.
///
/// # Safety
/// `u`, `e` and `v` are below the row counts `plan_slots` checked for the
/// operands, `out` is `ctx.out_len` writable floats no other task writes,
/// and the slots lie inside the rows (`plan_slots`).
#[inline(always)]
unsafe fn message<O: BinaryOp, S: Simd>(
    s: S,
    ctx: &Ctx<'_, impl Index>,
    (u, e, v): (usize, usize, usize),
    out: *mut f32,
) {
    let zero = s.splat(0.0);
    // SAFETY: forwarded from the caller.
    unsafe {
        let lrow = ctx.lhs.row(u, e, v);
        let rrow = ctx.rhs.row(u, e, v);
        for sl in ctx.slots {
            if O::REDUCES_LAST_DIM {
                *out.add(sl.out) = dot::<O, S>(s, lrow.add(sl.lhs), rrow.add(sl.rhs), sl.len);
                continue;
            }
            let a = if O::USE_LHS { ctx.lhs.fetch(s, lrow, sl.lhs, sl.len) } else { zero };
            let b = if O::USE_RHS { ctx.rhs.fetch(s, rrow, sl.rhs, sl.len) } else { zero };
            let m = O::apply_vec(s, a, b);
            let p = out.add(sl.out);
            if sl.len < S::LANES {
                s.store_partial(p, m, sl.len);
            } else if ctx.stream_out && (p as usize).is_multiple_of(4 * S::LANES) {
                s.stream(p, m);
            } else {
                s.store(p, m);
            }
        }
    }
}

/// Dots of `heads` slots of `V` full vectors each, laid head after head in
/// both operands and in the output (`slots[h] = (out h, lhs h·K, rhs h·K,
/// K)`, K = `V`·lanes: a single-head u_dot_v, or GAT's multi-head
/// `[N, H, K]` logits), one operand on the walk's row side and the other
/// gathered by column id (either walk).
struct DenseDot {
    heads: usize,
    /// K in vectors: 1, 2, 4 or 8.
    vectors: usize,
    /// The lhs is the row-side operand (else the rhs is).
    row_is_lhs: bool,
}

impl DenseDot {
    fn of<O: BinaryOp, S: Simd>(ctx: &Ctx<'_, impl Index>) -> Option<Self> {
        let k = ctx.slots.first()?.len;
        let v = k / S::LANES;
        let row_side = if ctx.rows_are_dst { Target::Dst } else { Target::Src };
        let col_side = if ctx.rows_are_dst { Target::Src } else { Target::Dst };
        let head_after_head =
            ctx.slots.iter().enumerate().all(|(h, sl)| *sl == Slot { out: h, lhs: h * k, rhs: h * k, len: k });
        let dense = O::REDUCES_LAST_DIM
            && O::USE_LHS
            && O::USE_RHS
            && k == v * S::LANES
            && matches!(v, 1 | 2 | 4 | 8)
            && head_after_head
            && ctx.lhs.contiguous
            && ctx.rhs.contiguous
            && ((ctx.lhs.target, ctx.rhs.target) == (row_side, col_side)
                || (ctx.lhs.target, ctx.rhs.target) == (col_side, row_side));
        dense.then_some(Self { heads: ctx.slots.len(), vectors: v, row_is_lhs: ctx.lhs.target == row_side })
    }
}

/// [`edge_messages`] for a [`DenseDot`]: the row operand's address once per
/// row, then per edge one column id, one row address and per head the dot
/// of `V` vectors (the same [`dot`], so bitwise the same messages). The
/// general loop re-reads the slot list, picks both operands' rows by target
/// and runs `dot`'s loops at a run-time length per slot; without that, the
/// plain single-head u_dot_v walk on 2^24 edges ran 1.35-1.54x faster at
/// d = 32 on the Intel Xeon VM (`docs/PERFORMANCE.md`, "Staged narrow
/// messages"), which, like the g-SpMM dense path, puts more edges and so
/// more outstanding misses into the out-of-order window.
///
/// # Safety
/// As for [`edge_messages`], and `DenseDot::of(ctx)` gave `dense`, `V`
/// vectors long.
#[inline(always)]
unsafe fn dense_dots<O: BinaryOp, I: Index, S: Simd, const V: usize>(
    s: S,
    ctx: &Ctx<'_, I>,
    dense: &DenseDot,
    r: usize,
    slots: std::ops::Range<usize>,
    sink: &mut impl MessageSink,
) {
    let k = V * S::LANES;
    let col_len = if dense.row_is_lhs { ctx.rhs.row_len } else { ctx.lhs.row_len };
    // SAFETY: forwarded.
    unsafe {
        if dense.heads == 1 && col_len == k {
            // One head (u_dot_v): the gathered rows' stride and the lines to
            // prefetch become constants, as in the edge walk
            // (`EdgeRange::walk_dense`). The staged walk gained most: uniform
            // 2^20 / 2^24 u_dot_v at d = 32 took 141-149 ms staged end to
            // end against 168-215 ms plain before (the ablation file there).
            dense_dot_rows::<O, I, S, V>(s, ctx, dense, (r, slots, sink), (1, k));
        } else {
            dense_dot_rows::<O, I, S, V>(s, ctx, dense, (r, slots, sink), (dense.heads, col_len));
        }
    }
}

/// [`dense_dots`]' loop for `heads` heads and gathered rows of `col_len`
/// floats; inlined into both of its calls, so constant arguments fold into
/// the loop.
///
/// # Safety
/// As for [`dense_dots`]; `heads` and `col_len` are `dense.heads` and the
/// gathered operand's row length.
#[inline(always)]
unsafe fn dense_dot_rows<O: BinaryOp, I: Index, S: Simd, const V: usize>(
    s: S,
    ctx: &Ctx<'_, I>,
    dense: &DenseDot,
    (r, slots, sink): (usize, std::ops::Range<usize>, &mut impl MessageSink),
    (heads, col_len): (usize, usize),
) {
    let (cols, eids) = (ctx.ids.cols, ctx.ids.eids);
    let k = V * S::LANES;
    let (row_op, col_op) = if dense.row_is_lhs { (&ctx.lhs, &ctx.rhs) } else { (&ctx.rhs, &ctx.lhs) };
    // SAFETY: `r` is a row of the row side, whose operand rows were checked.
    let row = unsafe { row_op.data.as_ptr().add(r * row_op.row_len) };
    let col_base = col_op.data.as_ptr();
    for k_slot in slots {
        let kp = k_slot + ctx.prefetch;
        if ctx.prefetch > 0 && kp < cols.len() {
            // SAFETY: slot `kp` of `ctx.ids` holds an in-bounds column id.
            let c = unsafe { cols.get_unchecked(kp).to_usize_valid() };
            prefetch_row(s, col_base.wrapping_add(c * col_len), col_len);
        }
        // SAFETY: by the contract `k_slot` indexes `ctx.ids`, whose ids are
        // in bounds; head `h`'s `V` vectors at `h·K` lie inside both operand
        // rows and its message at `h` inside the output row (`plan_slots`
        // checked every slot, and `DenseDot::of` that they are these).
        unsafe {
            let c = cols.get_unchecked(k_slot).to_usize_valid();
            let col = col_base.add(c * col_len);
            let out = sink.row(eids.get_unchecked(k_slot).to_usize_valid());
            for h in 0..heads {
                let (row_h, col_h) = (row.add(h * k), col.add(h * k));
                *out.add(h) =
                    if dense.row_is_lhs { dot::<O, S>(s, row_h, col_h, k) } else { dot::<O, S>(s, col_h, row_h, k) };
            }
        }
    }
}

/// Prefetches the 64-byte lines of a `len`-float row (at most 8 lines: the
/// hardware's adjacent-line and stream prefetchers take longer rows).
/// Prefetches never fault, so any address is fine.
#[inline(always)]
fn prefetch_row<S: Simd>(s: S, row: *const f32, len: usize) {
    let mut off = 0;
    while off < len.min(128) {
        s.prefetch(row.wrapping_add(off));
        off += 16;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::aligned_filled;
    use crate::isa::{IsaLevel, with_level};
    use crate::kernels::EdgePartition;
    use crate::layout::OperandShape;
    use crate::op::Dot;
    use crate::tuning::{Tuning, with_tuning};

    /// In-CSR of 4 sources -> 3 destinations, edges (u, v, e) with scrambled
    /// ids: (0,0,4) (2,0,1) (1,1,5) (3,1,0) (0,2,3) (3,2,2).
    fn in_csr() -> (Vec<i32>, Vec<i32>, Vec<i32>) {
        (vec![0, 2, 4, 6], vec![0, 2, 1, 3, 0, 3], vec![4, 1, 5, 0, 3, 2])
    }

    /// Small integers, so every dot below is exact in f32.
    fn features(rows: usize, d: usize, seed: usize) -> Vec<f32> {
        (0..rows * d).map(|i| ((i * 7 + seed * 3) % 5) as f32 - 2.0).collect()
    }

    #[test]
    fn dots_are_exact_at_every_level_both_ways_round_and_staged() {
        let (indptr, cols, eids) = in_csr();
        // SAFETY: rows sorted by column, ids in bounds, eids a permutation.
        let csr = unsafe { CsrView::new_unchecked(&indptr, &cols, &eids, 4) };
        let edges = [(0, 0, 4), (2, 0, 1), (1, 1, 5), (3, 1, 0), (0, 2, 3), (3, 2, 2)];
        // Heads of whole vectors at every level (dense walk) and of 48 = 3
        // AVX-512 vectors (general loop), written directly and staged.
        for heads in [1, 3] {
            for d in [8, 16, 32, 48, 128] {
                let hd = heads * d;
                let (x, y) = (features(4, hd, 1), features(3, hd, 2));
                let plan = BroadcastPlan::new(OperandShape::of::<Dot>(), &[heads, d], &[heads, d]).unwrap();
                for src_is_lhs in [true, false] {
                    let (lhs, rhs, lt, rt) = if src_is_lhs {
                        (&x, &y, Target::Src, Target::Dst)
                    } else {
                        (&y, &x, Target::Dst, Target::Src)
                    };
                    let mut want = vec![0f32; 6 * heads];
                    for (u, v, e) in edges {
                        for h in 0..heads {
                            let at = |row: usize, j: usize| row * hd + h * d + j;
                            let dot: f64 = (0..d).map(|j| f64::from(x[at(u, j)]) * f64::from(y[at(v, j)])).sum();
                            want[e * heads + h] = dot as f32;
                        }
                    }
                    for level in [IsaLevel::Portable, IsaLevel::Avx2, IsaLevel::Avx512] {
                        for staging in [Staging::Off, Staging::Windows(2)] {
                            let mut out = vec![f32::NAN; 6 * heads];
                            let args = SddmmArgs {
                                csr,
                                order: SddmmOrder::InCsr,
                                lhs_target: lt,
                                rhs_target: rt,
                                plan: &plan,
                                lhs,
                                rhs,
                                out: &mut out,
                            };
                            let tuning = Tuning { staging, ..Tuning::DEFAULT };
                            let ran = with_level(level, || with_tuning(tuning, || sddmm::<Dot, i32>(args, None)));
                            let Ok(result) = ran else { continue }; // level not on this CPU
                            result.unwrap();
                            let what = format!("{heads} x {d}, src lhs {src_is_lhs}, {level:?}, {staging:?}");
                            assert_eq!(out, want, "{what}");
                        }
                    }
                }
            }
        }
    }

    /// A random multigraph (sources 0..37 → destinations 0..23, a hub
    /// destination, edges in random id order) as `(src, dst)` by edge id,
    /// its in-CSR and its out-CSR, rows sorted by (column, edge id).
    #[allow(clippy::type_complexity)]
    fn random_graph<I: Index + TryFrom<usize>>() -> (usize, usize, Vec<I>, Vec<I>, [(Vec<I>, Vec<I>, Vec<I>); 2]) {
        let mut next = crate::kernels::common::xorshift(0x2545_f491_4f6c_dd1du64);
        let (num_src, num_dst, e) = (37, 23, 400);
        let src: Vec<usize> = (0..e).map(|_| next(num_src)).collect();
        let dst: Vec<usize> = (0..e).map(|_| if next(3) == 0 { 5 } else { next(num_dst) }).collect();
        let id = |x: usize| I::try_from(x).ok().unwrap();
        let csr = |rows: &[usize], cols: &[usize], n: usize| {
            let mut order: Vec<usize> = (0..e).collect();
            order.sort_by_key(|&k| (rows[k], cols[k], k));
            let mut indptr = vec![0usize; n + 1];
            rows.iter().for_each(|&r| indptr[r + 1] += 1);
            (0..n).for_each(|r| indptr[r + 1] += indptr[r]);
            (
                indptr.into_iter().map(id).collect(),
                order.iter().map(|&k| id(cols[k])).collect(),
                order.iter().map(|&k| id(k)).collect(),
            )
        };
        let csrs = [csr(&dst, &src, num_dst), csr(&src, &dst, num_src)];
        (num_src, num_dst, src.iter().map(|&u| id(u)).collect(), dst.iter().map(|&v| id(v)).collect(), csrs)
    }

    /// `O` over the edge walk against both CSR walks, bitwise, at every
    /// level, streamed and not, for operand `shape`s on `targets`.
    fn edge_walk_matches<O: BinaryOp, I: Index + TryFrom<usize>>(
        shapes: (&[usize], &[usize]),
        targets: (Target, Target),
    ) {
        let (num_src, num_dst, src, dst, [in_csr, out_csr]) = random_graph::<I>();
        let e = src.len();
        // SAFETY: `random_graph` builds valid CSRs and an edge list of the same edges.
        let (in_view, out_view, list) = unsafe {
            (
                CsrView::new_unchecked(&in_csr.0, &in_csr.1, &in_csr.2, num_src),
                CsrView::new_unchecked(&out_csr.0, &out_csr.1, &out_csr.2, num_dst),
                EdgeList::new_unchecked(&src, &dst, num_src, num_dst),
            )
        };
        let plan = BroadcastPlan::new(OperandShape::of::<O>(), shapes.0, shapes.1).unwrap();
        let rows = |t: Target| match t {
            Target::Src => num_src,
            Target::Dst => num_dst,
            Target::Edge => e,
        };
        let (lhs, rhs) = (features(rows(targets.0), plan.lhs_len, 1), features(rows(targets.1), plan.rhs_len, 2));
        let lhs: Vec<f32> = lhs.iter().enumerate().map(|(i, x)| x + (i % 11) as f32 / 7.0).collect();
        let what = format!("{} {shapes:?} {targets:?} {}", O::NAME, I::NAME);
        for level in [IsaLevel::Portable, IsaLevel::Avx2, IsaLevel::Avx512] {
            for streaming in [Streaming::Off, Streaming::On] {
                let run = |walk: Option<SddmmOrder>, list: EdgeList<'_, I>| {
                    let mut out = aligned_filled(e * plan.out_len, f32::NAN);
                    let (csr, order) = match walk {
                        Some(SddmmOrder::OutCsr) => (out_view, SddmmOrder::OutCsr),
                        _ => (in_view, SddmmOrder::InCsr),
                    };
                    let args = SddmmArgs {
                        csr,
                        order,
                        lhs_target: targets.0,
                        rhs_target: targets.1,
                        plan: &plan,
                        lhs: &lhs,
                        rhs: &rhs,
                        out: &mut out,
                    };
                    let tuning = Tuning { streaming, ..Tuning::DEFAULT };
                    let ran = with_level(level, || {
                        with_tuning(tuning, || match walk {
                            Some(_) => sddmm::<O, I>(args, None),
                            None => sddmm_edge_order::<O, I>(args, list),
                        })
                    });
                    ran.ok().map(|r| {
                        r.unwrap();
                        out.iter().map(|x| x.to_bits()).collect::<Vec<u32>>()
                    })
                };
                let Some(edges) = run(None, list) else { continue }; // level not on this CPU
                assert!(edges.iter().all(|&b| !f32::from_bits(b).is_nan()), "{what}: every message written");
                for walk in [SddmmOrder::InCsr, SddmmOrder::OutCsr] {
                    assert_eq!(
                        run(Some(walk), list),
                        Some(edges.clone()),
                        "{what}: {walk:?} at {level:?}, {streaming:?}"
                    );
                }
                // Regrouped by destination range: 23, 5 and 1 parts, and by
                // edge-id range from either CSR: 1, a few and E parts (one
                // each under Miri, which interprets every lane of every walk).
                let (rows, edge_parts): (&[usize], &[usize]) =
                    if cfg!(miri) { (&[5], &[7]) } else { (&[1, 5, num_dst], &[1, 7, e]) };
                let by_rows = rows.iter().map(|&r| EdgePartition::by_destination_range(&list, r));
                let by_edges = edge_parts.iter().flat_map(|&per| {
                    [
                        EdgePartition::by_edge_range(&in_view, true, per),
                        EdgePartition::by_edge_range(&out_view, false, per),
                    ]
                });
                for parts in by_rows.chain(by_edges) {
                    let got = run(None, parts.list());
                    assert_eq!(
                        got,
                        Some(edges.clone()),
                        "{what}: {:?} ({} parts) at {level:?}, {streaming:?}",
                        parts.grouping(),
                        parts.num_parts()
                    );
                }
            }
        }
    }

    #[test]
    fn the_edge_walk_is_bitwise_the_csr_walks_at_every_level() {
        use crate::op::{Add, Mul, Sub};
        let (src_dst, dst_src, src_edge) =
            ((Target::Src, Target::Dst), (Target::Dst, Target::Src), (Target::Src, Target::Edge));
        // Dense dots of 1, 2, 4 and 8 AVX-512 vectors, several heads, and
        // lengths the dense loop does not take (48 = 3 vectors, 5). Under
        // Miri, which interprets every lane, the rows of at most two
        // vectors (the dense path, a partial vector, heads).
        let dots: &[[usize; 2]] = if cfg!(miri) {
            &[[1, 32], [3, 16], [2, 5]]
        } else {
            &[[1, 16], [1, 32], [2, 64], [1, 128], [3, 16], [1, 48], [2, 5], [1, 8]]
        };
        for heads_d in dots {
            edge_walk_matches::<Dot, i32>((heads_d, heads_d), src_dst);
            edge_walk_matches::<Dot, i64>((heads_d, heads_d), dst_src);
        }
        // Dense elementwise rows, rows with a partial vector, a broadcast
        // operand, and an edge operand (the general loop).
        for &d in if cfg!(miri) { &[32, 5][..] } else { &[16, 32, 64, 5, 40] } {
            edge_walk_matches::<Add, i32>((&[d], &[d]), src_dst);
            edge_walk_matches::<Sub, i64>((&[d], &[d]), dst_src);
            edge_walk_matches::<Mul, i32>((&[d], &[1]), src_edge);
        }
        edge_walk_matches::<Add, i32>((&[4, 16], &[1, 16]), src_dst);
    }

    #[test]
    fn an_edge_list_of_another_graph_is_a_typed_error() {
        let (num_src, num_dst, src, dst, [in_csr, _]) = random_graph::<i32>();
        // SAFETY: as in `edge_walk_matches`.
        let csr = unsafe { CsrView::new_unchecked(&in_csr.0, &in_csr.1, &in_csr.2, num_src) };
        let plan = BroadcastPlan::new(OperandShape::of::<Dot>(), &[16], &[16]).unwrap();
        let (x, y) = (features(num_src, 16, 1), features(num_dst, 16, 2));
        // SAFETY: every id is within the (equal or larger) bounds given.
        let lists = unsafe {
            [
                (EdgeList::new_unchecked(&src[1..], &dst[1..], num_src, num_dst), "edge list edges"),
                (EdgeList::new_unchecked(&src, &dst, num_src + 1, num_dst), "edge list source nodes"),
                (EdgeList::new_unchecked(&src, &dst, num_src, num_dst + 2), "edge list destination nodes"),
            ]
        };
        for (list, what) in lists {
            let mut out = vec![7f32; src.len()];
            let args = SddmmArgs {
                csr,
                order: SddmmOrder::InCsr,
                lhs_target: Target::Src,
                rhs_target: Target::Dst,
                plan: &plan,
                lhs: &x,
                rhs: &y,
                out: &mut out,
            };
            let err = sddmm_edge_order::<Dot, i32>(args, list).unwrap_err();
            assert!(err.what.starts_with(what), "{what}: {err:?}");
            assert!(out.iter().all(|&v| v == 7.0), "{what}: nothing written");
        }
    }
}
