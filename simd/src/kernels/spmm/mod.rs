//! Pull-based g-SpMM: `out[v] = ρ_{e=(u,v)} φ(lhs[a(e)], rhs[b(e)])`.
//!
//! ```text
//! plain pass (default; sampled blocks and sparse graphs):
//!   [stage the edge operand by slot window]      <- scattered edge ids (`slot_order`)
//!   par over nnz-balanced row ranges:            <- one `vectorize` per task
//!     for v in rows:
//!       for chunk of ≤ 8 output vectors:          <- accumulators in registers (≤ 4: `Chunking::Narrow`)
//!         for k in row(v): gather lhs/rhs rows of edge k, acc = ρ(acc, φ(..))
//!         store acc (mean: / deg; max/min: per-lane winning ordinal -> arg ids)
//! blocked pass (traffic model says so, see `tuning`):
//!   for tile in feature tiles:                   <- N-dim tiling: out tile stays cached
//!     for block in source blocks (ascending):    <- K-dim blocking: all threads share one block
//!       par over nnz-balanced entries of the block:
//!         same chunk loop over the row's slots in this block, acc loaded from out
//!         (max/min: ordinals from the layout's scratch, 1/2/4 bytes each)
//!         (the row's first block: acc = identity, stores streamed;
//!          its last: mean / deg, max/min: ordinals -> arg ids)
//!   par fill empty rows
//! ```
//!
//! Max/min keep, per lane, the ordinal of the winning edge in its row's
//! CSR order in an `i32` vector (`select` on the `replaces` mask: strictly
//! better, or the first NaN), turned into `arg_u`/`arg_e` after the row
//! (the blocked pass: after its last block) by one vector gather of the
//! row's ids per output vector ([`Simd::gather_i32`]). A lane
//! that no message replaced saw only messages equal to the identity (±inf):
//! its winner is the row's first edge, as in the reference. With no arg
//! outputs requested, the ordinal bookkeeping is compiled out
//! (`ARGS = false`). The `replaces` test runs in its cheap ordered form
//! unless a chunk holds a NaN message ([`reduce::reduce_step`], [`reduce::reduce_chunk`]).
//!
//! Files: this one holds the entry points, the shared context and the
//! chunking of a row's output vectors; `plain.rs` and `blocked_pass.rs` the
//! two passes; `gather.rs` the edge loop of one chunk (general and dense
//! forms); `reduce.rs` the reduce step and the NaN fallback.

use super::blocked::BlockedCsr;
use super::common::{EdgeIds, Operand, Slot, plan_slots, target_rows, widest_gathered_row};
use super::slot_order::{EdgeStaging, StagedEdges, default_window, fits_cache};
use crate::Index;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task, active_level, with_token};
use crate::layout::{BroadcastPlan, CsrView};
use crate::op::{BinaryOp, Reducer, Target};
use crate::tuning::{
    BlockPlan, Blocking, Chunking, GatherShape, Staging, Streaming, active_tuning, blocking_budgets, cache_budget,
    plan_blocking,
};
use std::marker::PhantomData;

mod blocked_pass;
mod gather;
mod plain;
mod reduce;

use blocked_pass::{StateWidth, blocked_pass};
use plain::plain_pass;

/// Output vectors whose accumulators live in registers at once: 8 zmm
/// sums + loads fit AVX-512's 32 registers; max/min with arg outputs hold 8
/// values, 8 ordinals and one NaN probe, 17 registers beside the edge's 8
/// loads. (With a probe per vector, 8 of them, three ordinal vectors were
/// spilled per edge at d = 128: `perf annotate`, Zen 4;
/// [`reduce::fold_probe`].)
const CHUNK: usize = 8;

/// Output vectors per chunk under [`Chunking::Narrow`]: max/min state of
/// 4 values, 4 ordinals and the probe, 9 registers beside the edge's loads,
/// fits AVX2's 16 ymm where [`CHUNK`]'s 17 do not.
const NARROW_CHUNK: usize = 4;

/// One g-SpMM call on an in-CSR (rows = destinations, columns = sources).
pub struct SpmmArgs<'a, I: Index> {
    pub csr: CsrView<'a, I>,
    pub lhs_target: Target,
    pub rhs_target: Target,
    pub plan: &'a BroadcastPlan,
    /// Empty when the operator does not read lhs.
    pub lhs: &'a [f32],
    /// Empty when the operator does not read rhs.
    pub rhs: &'a [f32],
    /// `num_rows × plan.out_len`, overwritten.
    pub out: &'a mut [f32],
    pub arg_u: Option<&'a mut [I]>,
    pub arg_e: Option<&'a mut [I]>,
}

/// What the traffic model nominates for `args` under the thread's active
/// tuning ([`crate::tuning::plan_blocking`]): block plans, fewest blocks
/// first; none = the plain pass. `hot(k)` is the fraction of edges whose
/// source is among the `k` most frequent ([`crate::tuning::SourceProfile`]),
/// asked for only when blocking is a candidate. The caller builds (and
/// caches) the [`BlockedCsr`] for a plan's `block_sources` and passes it to
/// [`spmm`].
pub fn spmm_blocking<O: BinaryOp, I: Index>(args: &SpmmArgs<'_, I>, hot: impl Fn(usize) -> f64) -> Vec<BlockPlan> {
    if O::REDUCES_LAST_DIM || args.plan.out_len == 0 {
        return Vec::new();
    }
    let gathered = |used: bool, target: Target, len: usize| if used && target == Target::Src { len * 4 } else { 0 };
    let gathered_row_bytes = gathered(O::USE_LHS, args.lhs_target, args.plan.lhs_len)
        + gathered(O::USE_RHS, args.rhs_target, args.plan.rhs_len);
    // Max/min with arg outputs re-stream their state, one ordinal per output
    // element as wide as the largest degree needs (`StateWidth`). The rows
    // are scanned for it only where the model may nominate blocking at all:
    // the gathered rows exceed the smallest budget.
    let mut winner_bytes = 0;
    let budget = blocking_budgets().iter().copied().min().unwrap_or(0);
    if (args.arg_u.is_some() || args.arg_e.is_some()) && args.csr.num_cols().saturating_mul(gathered_row_bytes) > budget
    {
        let max_degree = (0..args.csr.num_rows()).map(|v| args.csr.degree(v)).max().unwrap_or(0);
        match StateWidth::for_degree(max_degree) {
            Some(width) => winner_bytes = width as usize,
            // The blocked pass runs plain for such rows (`spmm`).
            None if active_tuning().blocking == Blocking::Auto => return Vec::new(),
            None => {}
        }
    }
    let shape = GatherShape {
        num_src: args.csr.num_cols(),
        num_dst: args.csr.num_rows(),
        num_edges: args.csr.num_edges(),
        gathered_row_bytes,
        dst_row_bytes: args.plan.out_len * 4,
        winner_row_bytes: args.plan.out_len * winner_bytes,
        dst_rows_written: true,
        index_bytes: std::mem::size_of::<I>(),
    };
    plan_blocking(&shape, active_tuning(), hot)
}

/// Whether staging the edge operand ([`spmm_staging_into`]) is worth a
/// trial for `args`: the operator reads exactly one operand on edges, one
/// float per edge (a scalar edge weight), larger than the cache budget (and
/// few enough edges for cache-sized windows: 2^27 under a 1 MiB budget). It
/// pays only when the in-CSR's edge ids are scattered
/// ([`super::edge_ids_scattered`]), which the caller knows per graph.
///
/// Wider rows are staged on request (`Staging::On`) but not nominated:
/// staging costs bytes in proportion to the row while the random line it
/// replaces does not grow until the row fills one; with 4-float rows
/// (u_mul_e_sum, 4 heads, 2^24 edges, Intel Xeon VM) it measured level or
/// slower (`docs/PERFORMANCE.md`, "Staged edge operands").
pub fn spmm_may_stage<O: BinaryOp, I: Index>(args: &SpmmArgs<'_, I>) -> bool {
    match staged_operand::<O>((args.lhs_target, args.rhs_target), args.plan, (args.lhs, args.rhs)) {
        Some((data, row_len)) => {
            row_len == 1 && data.len() * 4 > cache_budget() && fits_cache(args.csr.num_edges(), row_len)
        }
        None => false,
    }
}

/// Whether chunks of 4 output vectors ([`Chunking::Narrow`]) are worth a
/// trial for `args` at the thread's active ISA level (under
/// `Chunking::Auto`): a max/min with arg outputs whose rows hold a whole
/// chunk of 8 vectors, and whose chunk state (`2 · 8 + 1` vectors: values,
/// winner ordinals, the NaN probe) exceeds the ISA's
/// registers. AVX2 has 16 ymm for 17, so the edge loop spills and reloads
/// every edge; AVX-512's 32 zmm hold them. Narrow chunks walk each row's
/// edges twice as often instead. On the Zen 3 VM (AVX2 in production,
/// d = 128, 2^20 nodes / 2^24 edges) they took copy_u_max 0.70-0.85x the
/// time on the uniform graph and 1.16-1.50x on RMAT, whose hub rows stay
/// cached for the extra walks
/// (`perf-reports/ablation/2026-12-01_zen3_avx2-max-chunk4.tsv`), and
/// 0.77-1.03x on both a few hours later
/// (`perf-reports/ablation/2026-12-02_zen3_avx2-narrow-chunks.tsv`):
/// neither width suits every graph and phase, and both give the same bits
/// (each lane takes the same steps in the same edge order), so the backend
/// times both.
///
/// The rule counts output vectors (`out_len / LANES`); a broadcast plan
/// with partial vectors has more slots than that and may hold a chunk of 8
/// that is not nominated.
pub fn spmm_may_narrow<O: BinaryOp, R: Reducer, I: Index>(args: &SpmmArgs<'_, I>) -> bool {
    struct Spills {
        out_len: usize,
    }
    impl Task for Spills {
        type Output = bool;
        fn run<S: Simd>(self, _: S) -> bool {
            2 * CHUNK + 1 > S::REGISTERS && self.out_len >= CHUNK * S::LANES
        }
    }
    R::HAS_ARG
        && !O::REDUCES_LAST_DIM
        && (args.arg_u.is_some() || args.arg_e.is_some())
        && active_tuning().chunking == Chunking::Auto
        && with_token(active_level(), Spills { out_len: args.plan.out_len })
}

/// The one operand on edges that the operator reads, and its row length.
fn staged_operand<'a, O: BinaryOp>(
    (lhs_target, rhs_target): (Target, Target),
    plan: &BroadcastPlan,
    (lhs, rhs): (&'a [f32], &'a [f32]),
) -> Option<(&'a [f32], usize)> {
    match (O::USE_LHS && lhs_target == Target::Edge, O::USE_RHS && rhs_target == Target::Edge) {
        (true, false) => Some((lhs, plan.lhs_len)),
        (false, true) => Some((rhs, plan.rhs_len)),
        _ => None,
    }
}

/// Runs the g-SpMM at the thread's active ISA level, blocked over `blocked`
/// (with feature tiles of `tile_bytes`) when given, else in one plain pass.
/// The plain pass stages an edge operand by slot window under
/// `Staging::On` / `Windows` (`super::slot_order`); a staged call builds its
/// plan and staged rows and frees them at return: see [`spmm_staging_into`]
/// to keep them between calls.
pub fn spmm<O: BinaryOp, R: Reducer, I: Index>(
    args: SpmmArgs<'_, I>,
    blocked: Option<(&BlockedCsr<I>, usize)>,
) -> Result<(), KernelError> {
    let level = crate::isa::active_level();
    let staging = &mut EdgeStaging::default();
    crate::isa::with_token(level, SpmmEntry::<O, R, I> { args, blocked, staging, _ops: PhantomData })
}

/// [`spmm`]'s plain pass, staging its edge operand (under `Staging::On` /
/// `Windows`) with the plans and rows kept in `staging`, which keeps them
/// for the caller's next call on the same CSR. The backend keeps one per
/// graph.
pub fn spmm_staging_into<O: BinaryOp, R: Reducer, I: Index>(
    args: SpmmArgs<'_, I>,
    staging: &mut EdgeStaging,
) -> Result<(), KernelError> {
    let level = crate::isa::active_level();
    crate::isa::with_token(level, SpmmEntry::<O, R, I> { args, blocked: None, staging, _ops: PhantomData })
}

struct SpmmEntry<'a, 'b, O, R, I: Index> {
    args: SpmmArgs<'a, I>,
    blocked: Option<(&'b BlockedCsr<I>, usize)>,
    staging: &'b mut EdgeStaging,
    _ops: PhantomData<(O, R)>,
}

impl<O: BinaryOp, R: Reducer, I: Index> Task for SpmmEntry<'_, '_, O, R, I> {
    type Output = Result<(), KernelError>;
    fn run<S: Simd>(self, s: S) -> Self::Output {
        let SpmmArgs { csr, lhs_target, rhs_target, plan, lhs, rhs, out, arg_u, arg_e } = self.args;
        let slots = plan_slots::<O>(
            plan,
            S::LANES,
            (lhs, target_rows(&csr, lhs_target)),
            (rhs, target_rows(&csr, rhs_target)),
            (out.len(), csr.num_rows()),
        )?;
        for arg in [&arg_u, &arg_e].into_iter().flatten() {
            check_len("arg output elements", out.len(), arg.len())?;
        }
        if !R::HAS_ARG && (arg_u.is_some() || arg_e.is_some()) {
            return Err(KernelError { what: "arg outputs (only max/min have them)", expected: 0, actual: 1 });
        }
        if plan.out_len == 0 || csr.num_rows() == 0 {
            return Ok(());
        }
        // The edge operand regrouped by slot window, when staged: the walk
        // reads slot `k`'s row at `StagedEdges::row_of(k)`.
        let window = |row_len| match active_tuning().staging {
            Staging::On => Some(default_window(row_len)),
            Staging::Windows(n) => Some(n),
            Staging::Auto | Staging::Off => None,
        };
        let staged = match (self.blocked, staged_operand::<O>((lhs_target, rhs_target), plan, (lhs, rhs))) {
            (None, Some((data, row_len))) => window(row_len).map(|w| self.staging.stage(&csr, data, row_len, w)),
            _ => None,
        };
        let by_slot = |used: bool, target: Target, data| match staged {
            Some(st) if used && target == Target::Edge => st.rows,
            _ => data,
        };
        let (lhs, rhs) = (by_slot(O::USE_LHS, lhs_target, lhs), by_slot(O::USE_RHS, rhs_target, rhs));
        let ctx = Ctx {
            csr,
            ids: EdgeIds::of(&csr),
            lhs: Operand { data: lhs, row_len: plan.lhs_len, target: lhs_target, contiguous: plan.lhs_contiguous },
            rhs: Operand { data: rhs, row_len: plan.rhs_len, target: rhs_target, contiguous: plan.rhs_contiguous },
            needs_eid: (O::USE_LHS && lhs_target == Target::Edge) || (O::USE_RHS && rhs_target == Target::Edge),
            staged_edges: staged,
            out_len: plan.out_len,
            slots: &slots,
            chunk_vectors: match active_tuning().chunking {
                Chunking::Narrow => NARROW_CHUNK,
                Chunking::Auto | Chunking::Wide => CHUNK,
            },
            prefetch: active_tuning().prefetch_slots(widest_gathered_row([
                (O::USE_LHS && lhs_target != Target::Dst, plan.lhs_len),
                (O::USE_RHS && rhs_target != Target::Dst, plan.rhs_len),
            ])),
            stream_out: match active_tuning().streaming {
                Streaming::Auto => out.len() * 4 > cache_budget(),
                Streaming::On => true,
                Streaming::Off => false,
            },
        };
        let args = arg_u.is_some() || arg_e.is_some();
        match (self.blocked, O::REDUCES_LAST_DIM) {
            (Some((layout, tile_bytes)), false) => {
                if !layout.matches(&csr) {
                    return Err(KernelError {
                        what: "blocked layout edges (built for another graph)",
                        expected: csr.num_edges(),
                        actual: layout.num_entries(),
                    });
                }
                match (args, StateWidth::for_degree(layout.max_degree())) {
                    (true, Some(width)) => {
                        blocked_pass::<O, R, I, S, true>(s, &ctx, (layout, tile_bytes), out, arg_u, arg_e, width)
                    }
                    // Rows of 2^31 edges or more: their ordinals do not fit
                    // the blocked pass's state.
                    (true, None) => plain_pass::<O, R, I, S, true>(s, &ctx, out, arg_u, arg_e),
                    (false, _) => blocked_pass::<O, R, I, S, false>(
                        s,
                        &ctx,
                        (layout, tile_bytes),
                        out,
                        None,
                        None,
                        StateWidth::U8,
                    ),
                }
            }
            _ if args => plain_pass::<O, R, I, S, true>(s, &ctx, out, arg_u, arg_e),
            _ => plain_pass::<O, R, I, S, false>(s, &ctx, out, None, None),
        }
        Ok(())
    }
}

/// Everything a row needs, shared read-only by the workers.
#[derive(Clone, Copy)]
struct Ctx<'a, I: Index> {
    csr: CsrView<'a, I>,
    /// The slots the pass walks: the CSR's (plain) or the layout's (blocked).
    ids: EdgeIds<'a, I>,
    lhs: Operand<'a>,
    rhs: Operand<'a>,
    needs_eid: bool,
    /// The edge operand was staged for this walk (plain pass only): its row
    /// for slot `k` is `row_of(k)`, not `eids[k]`.
    staged_edges: Option<StagedEdges<'a>>,
    out_len: usize,
    slots: &'a [Slot],
    /// The most output vectors per chunk: [`CHUNK`] or [`NARROW_CHUNK`].
    chunk_vectors: usize,
    /// Prefetch distance in CSR slots (0: off).
    prefetch: usize,
    /// The plain pass writes full, aligned output vectors with non-temporal
    /// stores: the output exceeds the cache budget, so its lines would be
    /// read for ownership only to be evicted before anyone reads them.
    stream_out: bool,
}

impl<I: Index> Ctx<'_, I> {
    /// The edge-operand row of slot `k`: its edge id, or its staged row.
    ///
    /// # Safety
    /// `k` is a slot of `self.ids` (with a staged operand, of `self.csr`:
    /// only the plain pass stages).
    #[inline(always)]
    unsafe fn edge_row(&self, k: usize) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { edge_row_of(&self.staged_edges, self.ids.eids, k) }
    }
}

/// The edge-operand row of slot `k`: its staged row under `staged`, else its
/// edge id `eids[k]`. Shared by [`Ctx::edge_row`] and `gather::DenseRows::at`,
/// which holds its own copy of `staged` and `eids` in registers.
///
/// # Safety
/// `k` is a slot of `eids`; with `staged`, of the CSR it was staged for.
#[inline(always)]
unsafe fn edge_row_of<I: Index>(staged: &Option<StagedEdges<'_>>, eids: &[I], k: usize) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe {
        match staged {
            Some(st) => st.row_of(k),
            None => eids.get_unchecked(k).to_usize_valid(),
        }
    }
}

/// Consecutive groups of 8 (unless narrowed to 4), 4, 2 or 1 slots
/// (greedy), so that each group's accumulators are a fixed-size register
/// array. (An iterator, not a closure-taking helper: closures are separate
/// functions that would not carry the ISA's target features.)
struct Chunks<'a> {
    slots: &'a [Slot],
    /// [`Ctx::chunk_vectors`].
    most: usize,
}

impl<'a> Chunks<'a> {
    /// The chunks of the pass's slots.
    #[inline(always)]
    fn of<I: Index>(ctx: &Ctx<'a, I>) -> Self {
        Chunks { slots: ctx.slots, most: ctx.chunk_vectors }
    }
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Chunk<'a>;
    #[inline(always)]
    fn next(&mut self) -> Option<Chunk<'a>> {
        let n = match self.slots.len() {
            0 => return None,
            r if r >= CHUNK && self.most >= CHUNK => CHUNK,
            r if r >= NARROW_CHUNK => NARROW_CHUNK,
            r if r >= 2 => 2,
            _ => 1,
        };
        let (head, tail) = self.slots.split_at(n);
        self.slots = tail;
        Some(Chunk(head))
    }
}

#[derive(Clone, Copy)]
struct Chunk<'a>(&'a [Slot]);

/// The register state of one chunk of `V` output vectors.
struct Acc<S: Simd, const V: usize> {
    val: [S::F32; V],
    /// Max/min: per lane, the ordinal of the winning edge in its row's CSR
    /// order (the row's first edge until a message replaces the identity).
    ord: [S::I32; V],
    /// Max/min: the ordinal of the walk's first edge (0 in the plain pass,
    /// the entry's row offset in the blocked one).
    base: i32,
    /// Ordered max/min: the sum of the messages (see [`reduce::fold_probe`]).
    probe: S::F32,
}

impl<S: Simd, const V: usize> Clone for Acc<S, V> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: Simd, const V: usize> Copy for Acc<S, V> {}

impl<S: Simd, const V: usize> Acc<S, V> {
    /// Accumulators `val` whose lanes name winning ordinals `ord` until a
    /// message replaces them, for a walk whose first edge has ordinal `base`.
    #[inline(always)]
    fn new(s: S, val: [S::F32; V], ord: [S::I32; V], base: i32) -> Self {
        Acc { val, ord, base, probe: s.splat(0.0) }
    }
}

/// `dst[l] = table[idx[l]]` for every `l < dst.len() <= LANES`.
///
/// # Safety
/// `idx[l] < table.len()` for those lanes.
#[inline(always)]
pub(super) unsafe fn gather_ids<S: Simd, I: Index>(s: S, table: &[I], idx: S::I32, dst: &mut [I]) {
    debug_assert!(dst.len() <= S::LANES);
    // SAFETY: `Index` is sealed to `i32` and `i64`, so the size names the
    // type; addresses as guaranteed by the caller, `dst` is writable.
    unsafe {
        if size_of::<I>() == 4 {
            s.gather_i32(table.as_ptr().cast(), idx, dst.as_mut_ptr().cast(), dst.len());
        } else {
            s.gather_i64(table.as_ptr().cast(), idx, dst.as_mut_ptr().cast(), dst.len());
        }
    }
}
