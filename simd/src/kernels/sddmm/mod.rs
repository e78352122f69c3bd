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
//!
//! Files: this one holds the entry points, the nominations the backend's
//! trials ask for, and the dispatch to a walk; `walks.rs` the walks (CSR
//! rows, source-block entries, edge-list ranges) and where messages go;
//! `messages.rs` the per-edge message loops (general, dense vectors, dense
//! K-long dots); `tests.rs` the unit tests.

use super::blocked::BlockedCsr;
use super::common::{EdgeIds, Operand, SharedMut, Slot, balanced_bounds, num_parts, plan_slots, widest_gathered_row};
use super::edge_partition::Grouping;
use super::staged::{StagedRecords, StagingBuffer, default_window};
use crate::Index;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task};
use crate::layout::{BroadcastPlan, CsrView, EdgeList};
use crate::op::{BinaryOp, Target};
use crate::tuning::{BlockPlan, GatherShape, Staging, Streaming, active_tuning, cache_budget, plan_blocking};
use rayon::prelude::*;
use std::marker::PhantomData;

mod messages;
#[cfg(test)]
mod tests;
mod walks;

use walks::{BlockEntries, Direct, EdgeRange, PlainRows};

/// The edge walk's task size: at most about this many edges per task (and
/// at least `num_parts` tasks, a few per worker).
const EDGE_TASK: usize = 1 << 16;

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
