//! Pull-based g-SpMM: `out[v] = ρ_{e=(u,v)} φ(lhs[a(e)], rhs[b(e)])`.
//!
//! ```text
//! plain pass (default; sampled blocks and sparse graphs):
//!   [stage the edge operand by slot window]      <- scattered edge ids (`slot_order`)
//!   par over nnz-balanced row ranges:            <- one `vectorize` per task
//!     for v in rows:
//!       for chunk of ≤ 8 output vectors:          <- accumulators in registers
//!         for k in row(v): gather lhs/rhs rows of edge k, acc = ρ(acc, φ(..))
//!         store acc (mean: / deg; max/min: per-lane winning slot -> arg ids)
//! blocked pass (traffic model says so, see `tuning`):
//!   for tile in feature tiles:                   <- N-dim tiling: out tile stays cached
//!     for block in source blocks (ascending):    <- K-dim blocking: all threads share one block
//!       par over nnz-balanced entries of the block:
//!         same chunk loop over the row's slots in this block, acc loaded from out
//!         (the row's first block: acc = identity, stores streamed; its last: mean / deg)
//!   par finalize rows (empty rows, arg ids)
//! ```
//!
//! Max/min keep, per lane, the row-relative ordinal of the winning edge in
//! an `i32` vector (`select` on the `replaces` mask: strictly better, or the
//! first NaN), turned into `arg_u`/`arg_e` after the row by one vector
//! gather of the row's ids per output vector ([`Simd::gather_i32`]). A lane
//! that no message replaced saw only messages equal to the identity (±inf):
//! its winner is the row's first edge, as in the reference. With no arg
//! outputs requested, the ordinal bookkeeping is compiled out
//! (`ARGS = false`). The `replaces` test runs in its cheap ordered form
//! unless a chunk holds a NaN message ([`reduce_step`], [`reduce_chunk`]).

use super::blocked::BlockedCsr;
use super::common::{
    EdgeIds, Operand, SharedMut, Slot, balanced_bounds, dot, num_parts, plan_slots, split_opt, split_rows, target_rows,
    widest_gathered_row,
};
use super::slot_order::{EdgeStaging, StagedEdges, default_window, fits_cache};
use crate::Index;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task};
use crate::layout::{BroadcastPlan, CsrView};
use crate::op::{BinaryOp, ReduceKind, Reducer, Target};
use crate::tuning::{BlockPlan, GatherShape, Staging, Streaming, active_tuning, cache_budget, plan_blocking};
use rayon::prelude::*;
use std::marker::PhantomData;

/// Output vectors whose accumulators live in registers at once: 8 zmm
/// accumulators + 8 ordinal vectors + loads fit AVX-512's 32 registers.
const CHUNK: usize = 8;

/// How far ahead (in CSR slots) the arg outputs' id lookup prefetches its
/// ids: 1 KiB of i32 ids (16 lines), ~16 rows of a degree-16 graph. 64, 128
/// and 256 slots measured within noise of each other
/// (`perf-reports/ablation/2026-11-25_zen5_max-ordered-step.tsv`).
const ARG_ID_PREFETCH: usize = 256;

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
    let shape = GatherShape {
        num_src: args.csr.num_cols(),
        num_dst: args.csr.num_rows(),
        num_edges: args.csr.num_edges(),
        gathered_row_bytes: gathered(O::USE_LHS, args.lhs_target, args.plan.lhs_len)
            + gathered(O::USE_RHS, args.rhs_target, args.plan.rhs_len),
        dst_row_bytes: args.plan.out_len * 4,
        winner_row_bytes: if args.arg_u.is_some() || args.arg_e.is_some() {
            args.plan.out_len * std::mem::size_of::<I>()
        } else {
            0
        },
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
                if args {
                    blocked_pass::<O, R, I, S, true>(s, &ctx, layout, tile_bytes, out, arg_u, arg_e);
                } else {
                    blocked_pass::<O, R, I, S, false>(s, &ctx, layout, tile_bytes, out, None, None);
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
/// edge id `eids[k]`. Shared by [`Ctx::edge_row`] and [`DenseRows::at`],
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

fn plain_pass<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    out: &mut [f32],
    arg_u: Option<&mut [I]>,
    arg_e: Option<&mut [I]>,
) {
    let csr = ctx.csr;
    let n = csr.num_rows();
    let indptr = csr.indptr();
    let bounds = balanced_bounds(n, num_parts(csr.num_edges() + n), |i| indptr[i].to_usize() + i);
    let outs = split_rows(out, &bounds, ctx.out_len);
    let us = split_opt(arg_u, &bounds, ctx.out_len);
    let es = split_opt(arg_e, &bounds, ctx.out_len);
    let tasks: Vec<_> = (0..outs.len())
        .zip(outs)
        .zip(us.into_iter().zip(es))
        .map(|((p, out), (arg_u, arg_e))| PlainRows::<O, R, I, ARGS> {
            ctx: *ctx,
            rows: bounds[p]..bounds[p + 1],
            out,
            arg_u,
            arg_e,
            _ops: PhantomData,
        })
        .collect();
    tasks.into_par_iter().for_each(|t| {
        s.vectorize(t);
    });
}

struct PlainRows<'a, 'b, O, R, I: Index, const ARGS: bool> {
    ctx: Ctx<'a, I>,
    rows: std::ops::Range<usize>,
    out: &'b mut [f32],
    arg_u: Option<&'b mut [I]>,
    arg_e: Option<&'b mut [I]>,
    _ops: PhantomData<(O, R)>,
}

impl<O: BinaryOp, R: Reducer, I: Index, const ARGS: bool> Task for PlainRows<'_, '_, O, R, I, ARGS> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let PlainRows { ctx, rows, out, mut arg_u, mut arg_e, .. } = self;
        let len = ctx.out_len;
        for v in rows.clone() {
            let edges = ctx.csr.row_range(v);
            let base = (v - rows.start) * len;
            let out_row = &mut out[base..base + len];
            let mut sink = ArgSink::<I> {
                ids: ctx.ids,
                arg_u: arg_u.as_deref_mut().map(|a| &mut a[base..base + len]),
                arg_e: arg_e.as_deref_mut().map(|a| &mut a[base..base + len]),
            };
            if R::HAS_ARG && edges.is_empty() {
                out_row.fill(0.0);
                sink.fill_none();
                continue;
            }
            if ARGS {
                // The edge ids the arg lookup of a later row reads: a copy_u
                // pass never touches `eids` otherwise, and a gather stalls on
                // a cold line (the source ids are read by every edge anyway).
                s.prefetch(ctx.ids.eids.as_ptr().wrapping_add(edges.start + ARG_ID_PREFETCH).cast());
            }
            if O::REDUCES_LAST_DIM {
                dot_row::<O, R, I, S, ARGS>(s, &ctx, v, edges, out_row, &mut sink);
            } else {
                for chunk in (Chunks { slots: ctx.slots }) {
                    // SAFETY: `out_row` has `out_len` elements and every slot
                    // of the checked plan lies inside it; the edges are a row
                    // of the validated CSR.
                    unsafe { plain_chunk::<O, R, I, S, ARGS>(s, &ctx, v, edges.clone(), chunk, out_row, &mut sink) }
                }
            }
        }
        if ctx.stream_out {
            // The task's streamed rows are visible before it reports done.
            s.store_fence();
        }
    }
}

/// Consecutive groups of 8, 4, 2 or 1 slots (greedy), so that each
/// group's accumulators are a fixed-size register array. (An iterator, not
/// a closure-taking helper: closures are separate functions that would not
/// carry the ISA's target features.)
struct Chunks<'a> {
    slots: &'a [Slot],
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Chunk<'a>;
    #[inline(always)]
    fn next(&mut self) -> Option<Chunk<'a>> {
        let n = match self.slots.len() {
            0 => return None,
            r if r >= CHUNK => CHUNK,
            r if r >= 4 => 4,
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

/// Writes arg outputs (max/min).
struct ArgSink<'a, I: Index> {
    ids: EdgeIds<'a, I>,
    arg_u: Option<&'a mut [I]>,
    arg_e: Option<&'a mut [I]>,
}

impl<I: Index> ArgSink<'_, I> {
    fn fill_none(&mut self) {
        for a in [&mut self.arg_u, &mut self.arg_e].into_iter().flatten() {
            a.fill(I::NONE);
        }
    }

    /// Elements `out .. out + len` were won by the slots `base + ord[l]`
    /// (`len <= LANES`; every `ord[l]` is an ordinal of the row starting
    /// at slot `base`).
    #[inline(always)]
    fn set_run<S: Simd>(&mut self, s: S, out: usize, base: usize, ord: S::I32, len: usize) {
        let (cols, eids) = (&self.ids.cols[base..], &self.ids.eids[base..]);
        for (arg, table) in [(self.arg_u.as_deref_mut(), cols), (self.arg_e.as_deref_mut(), eids)] {
            if let Some(a) = arg {
                // SAFETY: the ordinals index the row's slots, which `table`
                // (from the row's first slot on) holds.
                unsafe { gather_ids(s, table, ord, &mut a[out..out + len]) };
            }
        }
    }

    /// Element `o` was won by slot `k`.
    #[inline(always)]
    fn set(&mut self, o: usize, k: usize) {
        if let Some(a) = self.arg_u.as_deref_mut() {
            a[o] = self.ids.cols[k];
        }
        if let Some(a) = self.arg_e.as_deref_mut() {
            a[o] = self.ids.eids[k];
        }
    }
}

/// Accumulates one chunk of `V` slots over `edges` into `acc`.
///
/// # Safety
/// `edges` is a slot range of `ctx.ids`, whose ids are in bounds for the
/// operands; the slots come from `plan_slots` for the operands in `ctx`.
#[inline(always)]
unsafe fn accumulate<
    O: BinaryOp,
    R: Reducer,
    I: Index,
    S: Simd,
    const V: usize,
    const ARGS: bool,
    const ORDERED: bool,
>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    slots: &[Slot; V],
    acc: &mut Acc<S, V>,
) {
    if dense_gather::<O, S, V>(ctx, slots) {
        // SAFETY: forwarded from the caller; `dense_gather` checked the layout.
        unsafe { accumulate_dense::<O, R, I, S, V, ARGS, ORDERED>(s, ctx, edges, slots, acc) };
        return;
    }
    let indices = ctx.ids.cols;
    let zero = s.splat(0.0);
    let gathers = |op: &Operand<'_>, used: bool| used && op.target != Target::Dst;
    let (pf_l, pf_r) = (gathers(&ctx.lhs, O::USE_LHS), gathers(&ctx.rhs, O::USE_RHS));
    for k in edges.clone() {
        let kp = k + ctx.prefetch;
        if ctx.prefetch > 0 && kp < indices.len() {
            // The rows edge `kp` will gather (possibly in the next row: both
            // passes walk their slots in order). SAFETY: `kp` is a slot of
            // `ctx.ids`, so its ids index operand rows in bounds (`row` with
            // any `v`: Dst operands are not prefetched).
            unsafe {
                let u = indices.get_unchecked(kp).to_usize();
                let e = if ctx.needs_eid { ctx.edge_row(kp) } else { 0 };
                if pf_l {
                    let row = ctx.lhs.row(u, e, 0);
                    for sl in slots {
                        s.prefetch(row.add(sl.lhs));
                    }
                }
                if pf_r {
                    let row = ctx.rhs.row(u, e, 0);
                    for sl in slots {
                        s.prefetch(row.add(sl.rhs));
                    }
                }
            }
        }
        // SAFETY: `k` is a slot of `ctx.ids` (caller), whose ids are below
        // num_cols / num_edges, the operand row counts checked by
        // `plan_slots`, and each slot lies inside its operand row.
        unsafe {
            let u = indices.get_unchecked(k).to_usize();
            let e = if ctx.needs_eid { ctx.edge_row(k) } else { 0 };
            let lrow = if O::USE_LHS { ctx.lhs.row(u, e, v) } else { std::ptr::null() };
            let rrow = if O::USE_RHS { ctx.rhs.row(u, e, v) } else { std::ptr::null() };
            let kk = s.splat_i32((k - edges.start) as i32);
            for (i, sl) in slots.iter().enumerate() {
                let a = if O::USE_LHS { ctx.lhs.fetch(s, lrow, sl.lhs, sl.len) } else { zero };
                let b = if O::USE_RHS { ctx.rhs.fetch(s, rrow, sl.rhs, sl.len) } else { zero };
                reduce_step::<O, R, S, V, ARGS, ORDERED>(s, (a, b), kk, acc, i);
            }
        }
    }
}

/// Whether a chunk is the common dense case that [`accumulate_dense`]
/// serves: lhs rows gathered from sources as `V` consecutive full vectors
/// (copy_u, u_op_e, multi-head u_mul_e), rhs unused or read from the edge
/// (a broadcast scalar per slot, or consecutive full vectors).
#[inline(always)]
fn dense_gather<O: BinaryOp, S: Simd, const V: usize>(ctx: &Ctx<'_, impl Index>, slots: &[Slot; V]) -> bool {
    let consecutive = |off: fn(&Slot) -> usize| (0..V).all(|i| off(&slots[i]) == off(&slots[0]) + i * S::LANES);
    let full = slots.iter().all(|sl| sl.len == S::LANES);
    let lhs_ok = O::USE_LHS && ctx.lhs.target == Target::Src && ctx.lhs.contiguous && consecutive(|sl| sl.lhs);
    let rhs_ok = !O::USE_RHS || (ctx.rhs.target == Target::Edge && (!ctx.rhs.contiguous || consecutive(|sl| sl.rhs)));
    full && lhs_ok && rhs_ok
}

/// [`accumulate`] for chunks that pass [`dense_gather`].
///
/// Per edge this is one index load, one row address, `V` vector loads at
/// fixed offsets and `V` reduce steps — about 4 + 2V instructions against
/// ~20 + 10V for the general slot loop (operand target picks, tail masks and
/// slot offsets re-read per edge). The gathers are latency-bound random
/// lines, so fewer instructions per edge put more edges, hence more
/// outstanding misses, into the out-of-order window.
///
/// The edge operand's form is decided here, once per chunk, and each form
/// has its own loop ([`EdgeOperand`]): with the form a run-time flag, the
/// loop re-read its slot offsets and operand bases from memory on every
/// edge (the prefetches may write memory as far as the compiler knows) and
/// broadcast a scalar weight once per vector, ~60 instructions per edge at
/// d = 128 against copy_u's ~25. On the model-207 Xeon VM (uniform 2^20 /
/// 2^24, `w[E, 1]`, d = 128) u_mul_e_sum went from 602–795 ms (plain) to
/// 565–673 (plain) and 481 (staged) end to end in four alternated rounds,
/// and with the edge ids in slot order from 544–573 to 424–437 ms at
/// kernel level, 1.01–1.13× copy_u_sum's time
/// (perf-reports/ablation/2026-11-29_xeon-m207_spmm-dense-edge-operand.tsv).
///
/// # Safety
/// As for [`accumulate`], and `dense_gather(ctx, slots)` holds.
#[inline(always)]
unsafe fn accumulate_dense<
    O: BinaryOp,
    R: Reducer,
    I: Index,
    S: Simd,
    const V: usize,
    const ARGS: bool,
    const ORDERED: bool,
>(
    s: S,
    ctx: &Ctx<'_, I>,
    edges: std::ops::Range<usize>,
    slots: &[Slot; V],
    acc: &mut Acc<S, V>,
) {
    let rows = DenseRows::new(s, ctx, slots);
    // SAFETY: forwarded from the caller, `dense_gather` held, and each
    // loop gets the form just tested.
    unsafe {
        if !O::USE_RHS {
            dense_loop::<O, R, I, S, V, ARGS, ORDERED, { EdgeOperand::NONE }>(s, rows, edges, acc);
        } else if ctx.rhs.contiguous {
            dense_loop::<O, R, I, S, V, ARGS, ORDERED, { EdgeOperand::VECTORS }>(s, rows, edges, acc);
        } else if rows.rhs.iter().all(|&o| o == rows.rhs[0]) {
            dense_loop::<O, R, I, S, V, ARGS, ORDERED, { EdgeOperand::ONE_SCALAR }>(s, rows, edges, acc);
        } else {
            dense_loop::<O, R, I, S, V, ARGS, ORDERED, { EdgeOperand::SCALAR_PER_VECTOR }>(s, rows, edges, acc);
        }
    }
}

/// How a [`dense_gather`] chunk reads the edge operand (a const parameter
/// of [`dense_loop`]): `u8` constants, since stable Rust takes no enum as a
/// const parameter.
struct EdgeOperand;

impl EdgeOperand {
    /// The operator reads no rhs.
    const NONE: u8 = 0;
    /// `V` consecutive vectors of the edge's row.
    const VECTORS: u8 = 1;
    /// One scalar per edge for every vector (a one-head weight `w[E, 1]`):
    /// loaded and broadcast once.
    const ONE_SCALAR: u8 = 2;
    /// A scalar per vector (multi-head weights `a[E, H, 1]`), each broadcast.
    const SCALAR_PER_VECTOR: u8 = 3;
}

/// [`accumulate_dense`]'s loop over `edges` for one edge-operand form
/// `RHS`: per edge a prefetch `rows.prefetch` slots ahead, the source row's
/// `V` vectors and their rhs partners into `acc`.
///
/// # Safety
/// As for [`accumulate_dense`]; `RHS` is the form `accumulate_dense` found.
#[inline(always)]
unsafe fn dense_loop<
    O: BinaryOp,
    R: Reducer,
    I: Index,
    S: Simd,
    const V: usize,
    const ARGS: bool,
    const ORDERED: bool,
    const RHS: u8,
>(
    s: S,
    rows: DenseRows<'_, I, V>,
    edges: std::ops::Range<usize>,
    acc: &mut Acc<S, V>,
) {
    let first = edges.start;
    for k in edges {
        // SAFETY: `k` is a slot of `ctx.ids` (caller), so are the prefetched
        // ones below `cols.len()`; `dense_gather` holds.
        unsafe {
            rows.prefetch::<S, RHS>(s, k + rows.prefetch);
            let (row, erow) = rows.at::<RHS>(k);
            let kk = s.splat_i32((k - first) as i32);
            let one = if RHS == EdgeOperand::ONE_SCALAR { s.splat(*erow.add(rows.rhs[0])) } else { s.splat(0.0) };
            for i in 0..V {
                let a = s.load(row.add(i * S::LANES));
                let b = match RHS {
                    EdgeOperand::NONE => a,
                    EdgeOperand::VECTORS => s.load(erow.add(rows.rhs[0] + i * S::LANES)),
                    EdgeOperand::ONE_SCALAR => one,
                    _ => s.splat(*erow.add(rows.rhs[i])),
                };
                reduce_step::<O, R, S, V, ARGS, ORDERED>(s, (a, b), kk, acc, i);
            }
        }
    }
}

/// Row addressing of a [`dense_gather`] chunk, copied out of the context
/// so that the loop keeps it in registers: the lhs span of a slot's source
/// row and, for edge operands, its edge row.
#[derive(Clone, Copy)]
struct DenseRows<'a, I: Index, const V: usize> {
    cols: &'a [I],
    eids: &'a [I],
    staged: Option<StagedEdges<'a>>,
    /// The first gathered float of source row 0.
    lhs: *const f32,
    lhs_row_len: usize,
    rhs_data: *const f32,
    rhs_row_len: usize,
    /// Each slot's offset in the edge row.
    rhs: [usize; V],
    /// Prefetch distance in slots (0: off).
    prefetch: usize,
    /// Prefetches per span: one per 64-byte line.
    per_line: usize,
}

impl<'a, I: Index, const V: usize> DenseRows<'a, I, V> {
    #[inline(always)]
    fn new<S: Simd>(_s: S, ctx: &Ctx<'a, I>, slots: &[Slot; V]) -> Self {
        DenseRows {
            cols: ctx.ids.cols,
            eids: ctx.ids.eids,
            staged: ctx.staged_edges,
            lhs: ctx.lhs.data.as_ptr().wrapping_add(slots[0].lhs),
            lhs_row_len: ctx.lhs.row_len,
            rhs_data: ctx.rhs.data.as_ptr(),
            rhs_row_len: ctx.rhs.row_len,
            rhs: std::array::from_fn(|i| slots[i].rhs),
            prefetch: ctx.prefetch,
            per_line: (16 / S::LANES).max(1),
        }
    }

    /// The lhs span and the edge row of slot `k` (null without an edge
    /// operand).
    ///
    /// # Safety
    /// `k` is a slot of `ctx.ids`.
    #[inline(always)]
    unsafe fn at<const RHS: u8>(&self, k: usize) -> (*const f32, *const f32) {
        // SAFETY: slot `k`'s source id indexes a row of lhs and its edge id a
        // row of rhs, whose lengths `plan_slots` checked; `dense_gather` put
        // every slot inside them.
        unsafe {
            let u = self.cols.get_unchecked(k).to_usize_valid();
            let row = self.lhs.add(u * self.lhs_row_len);
            if RHS == EdgeOperand::NONE {
                return (row, std::ptr::null());
            }
            let e = edge_row_of(&self.staged, self.eids, k);
            (row, self.rhs_data.add(e * self.rhs_row_len))
        }
    }

    /// Prefetches the lines slot `kp` will gather (no-op past the last slot,
    /// or with prefetching off).
    ///
    /// # Safety
    /// Slots below `cols.len()` are slots of `ctx.ids`.
    #[inline(always)]
    unsafe fn prefetch<S: Simd, const RHS: u8>(&self, s: S, kp: usize) {
        if self.prefetch == 0 || kp >= self.cols.len() {
            return;
        }
        // SAFETY: `kp` is a slot of `ctx.ids`; prefetches never fault.
        unsafe {
            let (row, erow) = self.at::<RHS>(kp);
            for i in (0..V).step_by(self.per_line) {
                s.prefetch(row.add(i * S::LANES));
            }
            // The edge operand is read by edge id: a random line per edge
            // (a miss the gathered rows' prefetch does not cover).
            match RHS {
                EdgeOperand::NONE => {}
                EdgeOperand::VECTORS => {
                    for i in (0..V).step_by(self.per_line) {
                        s.prefetch(erow.add(self.rhs[0] + i * S::LANES));
                    }
                }
                _ => s.prefetch(erow.add(self.rhs[0])),
            }
        }
    }
}

/// One message into accumulator `i`: `acc + φ(a, b)` for sum/mean; for
/// max/min the `replaces` test, keeping the winner's row ordinal `kk` when
/// arg outputs are wanted.
///
/// Max/min come in two flavours with the same result whenever no message
/// is NaN. The exact step tests `replaces` (strictly better, or the first
/// NaN): an ORD compare on `acc`, a masked compare and a blend, three
/// dependent instructions on the `acc` chain of every edge. The ordered
/// step (`ORDERED`) keeps one `maxps`/`minps` on that chain:
/// `maxps(m, acc)` is `m > acc ? m : acc`, which is
/// `replaces` for any non-NaN `m` (a NaN `acc` stays NaN and keeps its
/// ordinal, as in `replaces`); the ordinal's compare reads the old `acc`
/// off the chain. It adds each message into `probe`, whose NaN after the
/// chunk (a NaN message, or `+inf` and `-inf` in one lane) makes the caller
/// rerun the chunk with the exact step ([`reduce_chunk`]).
#[inline(always)]
fn reduce_step<O: BinaryOp, R: Reducer, S: Simd, const V: usize, const ARGS: bool, const ORDERED: bool>(
    s: S,
    (a, b): (S::F32, S::F32),
    kk: S::I32,
    acc: &mut Acc<S, V>,
    i: usize,
) {
    if !R::HAS_ARG {
        acc.val[i] = O::accumulate_vec(s, a, b, acc.val[i]);
        return;
    }
    let (m, old) = (O::apply_vec(s, a, b), acc.val[i]);
    let min = R::KIND == ReduceKind::Min;
    let wins = if ORDERED {
        acc.probe[i] = s.add(acc.probe[i], m);
        acc.val[i] = if min { s.min(m, old) } else { s.max(m, old) };
        if min { s.lt(m, old) } else { s.lt(old, m) }
    } else {
        let wins = if min { s.replaces_min(m, old) } else { s.replaces_max(m, old) };
        acc.val[i] = s.select(wins, m, old);
        wins
    };
    if ARGS {
        acc.ord[i] = s.select_i32(wins, kk, acc.ord[i]);
    }
}

/// The register state of one chunk of `V` output vectors.
struct Acc<S: Simd, const V: usize> {
    val: [S::F32; V],
    /// Max/min: per lane, the row-relative ordinal of the winning edge (-1: none).
    ord: [S::I32; V],
    /// Ordered max/min: the sum of the messages (see [`reduce_step`]).
    probe: [S::F32; V],
}

impl<S: Simd, const V: usize> Clone for Acc<S, V> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: Simd, const V: usize> Copy for Acc<S, V> {}

impl<S: Simd, const V: usize> Acc<S, V> {
    /// Accumulators `val` whose lanes name winning ordinal `ord` until a
    /// message replaces them.
    #[inline(always)]
    fn new(s: S, val: [S::F32; V], ord: i32) -> Self {
        Acc { val, ord: [s.splat_i32(ord); V], probe: [s.splat(0.0); V] }
    }
}

/// Runs a chunk's edges into `acc`. Sums take their one step; max/min take
/// the ordered step, and when its probe saw a NaN (or opposite infinities)
/// run again from the same start with the exact step, so the result is
/// always the exact one (see [`reduce_step`]).
///
/// # Safety
/// As for [`accumulate`].
#[inline(always)]
unsafe fn reduce_chunk<O: BinaryOp, R: Reducer, I: Index, S: Simd, const V: usize, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    slots: &[Slot; V],
    acc: &mut Acc<S, V>,
) {
    if R::HAS_ARG {
        let start = *acc;
        // SAFETY: forwarded from the caller.
        unsafe { accumulate::<O, R, I, S, V, ARGS, true>(s, ctx, v, edges.clone(), slots, acc) };
        let mut probe = acc.probe[0];
        for p in &acc.probe[1..] {
            probe = s.add(probe, *p);
        }
        if !s.reduce_sum(probe).is_nan() {
            return;
        }
        *acc = start;
    }
    // SAFETY: forwarded from the caller.
    unsafe { accumulate::<O, R, I, S, V, ARGS, false>(s, ctx, v, edges, slots, acc) };
}

/// `dst[l] = table[idx[l]]` for every `l < dst.len() <= LANES`.
///
/// # Safety
/// `idx[l] < table.len()` for those lanes.
#[inline(always)]
unsafe fn gather_ids<S: Simd, I: Index>(s: S, table: &[I], idx: S::I32, dst: &mut [I]) {
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

/// Row-relative winning ordinals of one slot, as plain integers.
#[inline(always)]
fn ordinals<S: Simd>(s: S, ord: S::I32) -> [i32; 16] {
    let mut buf = [-1i32; 16];
    debug_assert!(S::LANES <= 16);
    // SAFETY: `buf` holds 16 >= LANES ints.
    unsafe { s.store_i32(buf.as_mut_ptr(), ord) };
    buf
}

/// # Safety
/// As for [`accumulate`]; `out_row` is the row's `out_len` outputs.
#[inline(always)]
unsafe fn plain_chunk<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    chunk: Chunk<'_>,
    out_row: &mut [f32],
    sink: &mut ArgSink<'_, I>,
) {
    macro_rules! run {
        ($v:literal) => {{
            let slots: &[Slot; $v] = chunk.0.try_into().expect("chunk sizes are 1, 2, 4 or 8");
            // A lane no message replaces (all were the identity, ±inf) is
            // won by the row's first edge, as in the reference: ordinal 0.
            let mut acc = Acc::<S, $v>::new(s, [s.splat(R::IDENTITY); $v], 0);
            // SAFETY: forwarded from the caller.
            unsafe { reduce_chunk::<O, R, I, S, $v, ARGS>(s, ctx, v, edges.clone(), slots, &mut acc) };
            let deg = edges.len();
            for i in 0..$v {
                let sl = slots[i];
                let mut val = acc.val[i];
                if R::DIVIDES_BY_DEGREE && deg > 0 {
                    val = s.div(val, s.splat(deg as f32));
                }
                // SAFETY: the slot lies inside `out_row` (checked plan); a
                // streamed vector is full and aligned (tested here).
                unsafe {
                    let p = out_row.as_mut_ptr().add(sl.out);
                    if ctx.stream_out && sl.len == S::LANES && (p as usize) % (4 * S::LANES) == 0 {
                        s.stream(p, val);
                    } else {
                        store(s, p, val, sl.len);
                    }
                }
                if ARGS {
                    sink.set_run(s, sl.out, edges.start, acc.ord[i], sl.len);
                }
            }
        }};
    }
    match chunk.0.len() {
        8 => run!(8),
        4 => run!(4),
        2 => run!(2),
        _ => run!(1),
    }
}

/// # Safety
/// `ptr` writable for `len <= LANES` floats.
#[inline(always)]
unsafe fn store<S: Simd>(s: S, ptr: *mut f32, v: S::F32, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { if len == S::LANES { s.store(ptr, v) } else { s.store_partial(ptr, v, len) } }
}

/// # Safety
/// `ptr` readable for `len <= LANES` floats.
#[inline(always)]
unsafe fn load<S: Simd>(s: S, ptr: *const f32, len: usize) -> S::F32 {
    // SAFETY: forwarded from the caller.
    unsafe { if len == S::LANES { s.load(ptr) } else { s.load_partial(ptr, len) } }
}

/// A row of a reducing operator (dot): each output is a K-long dot product
/// per edge, reduced over the row in scalar form.
#[inline(always)]
fn dot_row<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    out_row: &mut [f32],
    sink: &mut ArgSink<'_, I>,
) {
    let indices = ctx.ids.cols;
    for sl in ctx.slots {
        let mut acc = R::IDENTITY;
        let mut best: Option<usize> = None;
        for k in edges.clone() {
            // SAFETY: `k` is a slot of the row, hence of `ctx.ids`.
            let (u, e) = (indices[k].to_usize(), unsafe { ctx.edge_row(k) });
            // SAFETY: ids of `ctx.ids` index operand rows whose lengths
            // `plan_slots` checked; the K-long ranges lie inside them.
            let m =
                unsafe { dot::<O, S>(s, ctx.lhs.row(u, e, v).add(sl.lhs), ctx.rhs.row(u, e, v).add(sl.rhs), sl.len) };
            if R::HAS_ARG {
                if best.is_none() || R::replaces(m, acc) {
                    acc = m;
                    best = Some(k);
                }
            } else {
                acc += m;
            }
        }
        out_row[sl.out] = if R::DIVIDES_BY_DEGREE && !edges.is_empty() { acc / edges.len() as f32 } else { acc };
        if ARGS {
            sink.set(sl.out, best.unwrap_or(edges.start));
        }
    }
}

fn blocked_pass<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    layout: &BlockedCsr<I>,
    tile_bytes: usize,
    out: &mut [f32],
    mut arg_u: Option<&mut [I]>,
    mut arg_e: Option<&mut [I]>,
) {
    // No identity fill: a row's first entry (`BlockedCsr::opens_row`)
    // starts from the identity in registers (and writes `NONE` for lanes
    // without a winner), and `finalize_rows` fills the rows without
    // entries, so no output row is read before a pass wrote it. The fill
    // was a whole extra write of `out` (512 MiB at 2^20 rows of d = 128).
    // With args, the winning block-major slot is kept in whichever arg
    // output exists and turned into ids by `finalize_rows`.
    let winners: Option<&mut [I]> = if ARGS { arg_u.as_deref_mut().or(arg_e.as_deref_mut()) } else { None };
    let out_ptr = SharedMut::new(out);
    let win_ptr = winners.map(SharedMut::new);
    let ids = EdgeIds { cols: layout.cols(), eids: layout.eids() };
    let tile_slots = (tile_bytes / (4 * S::LANES)).max(1);
    for tile in ctx.slots.chunks(tile_slots) {
        let tctx = Ctx { slots: tile, ids, ..*ctx };
        for b in 0..layout.num_blocks() {
            // All workers share block b, so its feature rows are fetched
            // into the shared LLC once and reused by every worker.
            layout.balanced_entries(b).par_windows(2).for_each(|w| {
                s.vectorize(BlockRows::<O, R, I, ARGS> {
                    ctx: tctx,
                    layout,
                    entries: w[0]..w[1],
                    out: out_ptr,
                    winners: win_ptr,
                    _ops: PhantomData,
                });
            });
        }
    }
    finalize_rows::<R, I>(ctx, ids, out, arg_u, arg_e);
}

struct BlockRows<'a, 'b, O, R, I: Index, const ARGS: bool> {
    ctx: Ctx<'a, I>,
    layout: &'b BlockedCsr<I>,
    entries: std::ops::Range<usize>,
    out: SharedMut<f32>,
    winners: Option<SharedMut<I>>,
    _ops: PhantomData<(O, R)>,
}

impl<O: BinaryOp, R: Reducer, I: Index, const ARGS: bool> Task for BlockRows<'_, '_, O, R, I, ARGS> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let BlockRows { ctx, layout, entries, out, winners, .. } = self;
        for j in entries {
            let (v, edges) = layout.entry(j);
            let ends = (layout.opens_row(j), layout.closes_row(j));
            // SAFETY: within one block each row appears in one entry, and
            // the entries of a block are split into disjoint ranges across
            // workers, so this task alone touches row `v` now. The row is in
            // bounds (the layout matches the CSR), `edges` is a slot range of
            // `ctx.ids` (the layout's arrays) and the slots are in the row.
            unsafe {
                let out_row = out.at(v * ctx.out_len);
                let win_row = winners.map(|w| w.at(v * ctx.out_len));
                for chunk in (Chunks { slots: ctx.slots }) {
                    blocked_chunk::<O, R, I, S, ARGS>(s, &ctx, v, edges.clone(), chunk, out_row, win_row, ends);
                }
            }
        }
        if ctx.stream_out {
            // The task's streamed rows are visible before the next block's
            // tasks read them.
            s.store_fence();
        }
    }
}

/// Reduces one block's `edges` of row `v` into the chunk's slots of
/// `out_row`. `ends` says whether the entry opens the row (its lowest
/// block: start from the identity, not from `out_row`) and whether it
/// closes it (its highest block: a mean divides by the row's degree here,
/// as the plain pass does at its end, so the stored values are the same).
///
/// # Safety
/// As for [`accumulate`]; `out_row` / `win_row` point at row `v`'s
/// `out_len` elements, owned by this task for the duration.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn blocked_chunk<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    chunk: Chunk<'_>,
    out_row: *mut f32,
    win_row: Option<*mut I>,
    (opens, closes): (bool, bool),
) {
    macro_rules! run {
        ($v:literal) => {{
            let slots: &[Slot; $v] = chunk.0.try_into().expect("chunk sizes are 1, 2, 4 or 8");
            // SAFETY: slots lie inside the row (checked plan), of `out_row` and
            // `win_row` alike, which this task owns; forwarded contract.
            unsafe {
                let mut val = [s.splat(R::IDENTITY); $v];
                if !opens {
                    for i in 0..$v {
                        val[i] = load(s, out_row.add(slots[i].out), slots[i].len);
                    }
                }
                // -1: no winner in this block (the earlier block's stays).
                let mut acc = Acc::<S, $v>::new(s, val, -1);
                reduce_chunk::<O, R, I, S, $v, ARGS>(s, ctx, v, edges.clone(), slots, &mut acc);
                // A closing entry's row has edges: the degree is not 0.
                let degree = (R::DIVIDES_BY_DEGREE && closes).then(|| s.splat(ctx.csr.row_range(v).len() as f32));
                for i in 0..$v {
                    let sl = slots[i];
                    let val = match degree {
                        Some(degree) => s.div(acc.val[i], degree),
                        None => acc.val[i],
                    };
                    // An opening entry's row is not in cache (a later block, if any,
                    // reads it back from memory either way): a streamed full
                    // vector skips the read for ownership.
                    let p = out_row.add(sl.out);
                    if opens && ctx.stream_out && sl.len == S::LANES && (p as usize) % (4 * S::LANES) == 0 {
                        s.stream(p, val);
                    } else {
                        store(s, p, val, sl.len);
                    }
                    if let (true, Some(w)) = (ARGS, win_row) {
                        // Branch-free over the lanes (a lane's win is data-dependent
                        // and mispredicted; this form vectorizes): blocked copy_u_max
                        // at d = 128 took 0.78-0.82 s against 1.27 s with a branch per
                        // lane (perf-reports/ablation/2026-11-30_xeon-m207_blocked-max-args.tsv).
                        let o = ordinals(s, acc.ord[i]);
                        let w = std::slice::from_raw_parts_mut(w.add(sl.out), sl.len);
                        for (slot, &ord) in w.iter_mut().zip(&o) {
                            let kept = if opens { I::NONE } else { *slot };
                            *slot = if ord >= 0 { I::from_usize(edges.start + ord as usize) } else { kept };
                        }
                    }
                }
            }
        }};
    }
    match chunk.0.len() {
        8 => run!(8),
        4 => run!(4),
        2 => run!(2),
        _ => run!(1),
    }
}

/// After the blocked pass: empty rows -> 0 / -1, and the winning slots of
/// `ids` (kept in the first arg output) become source and edge ids.
fn finalize_rows<R: Reducer, I: Index>(
    ctx: &Ctx<'_, I>,
    ids: EdgeIds<'_, I>,
    out: &mut [f32],
    arg_u: Option<&mut [I]>,
    arg_e: Option<&mut [I]>,
) {
    let csr = ctx.csr;
    let len = ctx.out_len;
    let n = csr.num_rows();
    let bounds = balanced_bounds(n, num_parts(n * len), |i| i);
    let outs = split_rows(out, &bounds, len);
    let us = split_opt(arg_u, &bounds, len);
    let es = split_opt(arg_e, &bounds, len);
    let parts: Vec<_> = outs.into_iter().zip(us.into_iter().zip(es)).enumerate().collect();
    parts.into_par_iter().for_each(|(p, (out, (mut au, mut ae)))| {
        for v in bounds[p]..bounds[p + 1] {
            let edges = csr.row_range(v);
            let base = (v - bounds[p]) * len;
            let row = &mut out[base..base + len];
            if edges.is_empty() {
                row.fill(0.0);
            }
            if !R::HAS_ARG {
                continue;
            }
            for o in base..base + len {
                let slot = au.as_deref().or(ae.as_deref()).map(|w| w[o]);
                let Some(slot) = slot else { break };
                let (u, e) = if edges.is_empty() {
                    (I::NONE, I::NONE)
                } else if slot == I::NONE {
                    // No message replaced the identity: every message was
                    // ±inf, and the row's first edge in CSR order wins.
                    (csr.indices()[edges.start], csr.eids()[edges.start])
                } else {
                    (ids.cols[slot.to_usize()], ids.eids[slot.to_usize()])
                };
                if let Some(a) = ae.as_deref_mut() {
                    a[o] = e;
                }
                if let Some(a) = au.as_deref_mut() {
                    a[o] = u;
                }
            }
        }
    });
}
