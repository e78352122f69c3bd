//! The blocked pass: feature tiles, then source blocks in ascending order
//! shared by all workers, each row's partial reduction carried in `out`
//! from block to block (max/min: each element's winner as a row ordinal in
//! the layout's scratch, written as ids once the row's last block is done);
//! `fill_empty_rows` writes the rows no block wrote.

use super::reduce::reduce_chunk;
use super::{Acc, Chunk, Chunks, Ctx, gather_ids};
use crate::Index;
use crate::isa::{Simd, Task};
use crate::kernels::blocked::BlockedCsr;
use crate::kernels::common::{
    EdgeIds, SharedMut, Slot, balanced_bounds, load, num_parts, split_opt, split_rows, store_or_stream,
};
use crate::layout::CsrView;
use crate::op::{BinaryOp, Reducer};
use rayon::prelude::*;
use std::marker::PhantomData;

/// Runs the rows of `ctx.csr` block by block over `layout` (and feature
/// tile by tile, `tile_bytes` wide), then [`fill_empty_rows`]. With
/// `ARGS`, `width` is the state's ([`StateWidth::for_degree`] of the
/// layout's largest degree); it is not read otherwise.
pub(super) fn blocked_pass<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    (layout, tile_bytes): (&BlockedCsr<I>, usize),
    out: &mut [f32],
    mut arg_u: Option<&mut [I]>,
    mut arg_e: Option<&mut [I]>,
    width: StateWidth,
) {
    // No identity fill: a row's first entry (`BlockedCsr::opens_row`)
    // starts from the identity in registers, and `fill_empty_rows` fills
    // the rows without entries, so no output row is read before a pass wrote it. The fill
    // was a whole extra write of `out` (512 MiB at 2^20 rows of d = 128).
    // With args, each row's winners travel from block to block as ordinals
    // in the layout's scratch and are written as ids when the row's last
    // block is done (`WinnerRows`), so no pass over them follows the blocks.
    let out_ptr = SharedMut::new(out);
    let (u, e) = (arg_u.as_deref_mut().map(SharedMut::new), arg_e.as_deref_mut().map(SharedMut::new));
    let ids = EdgeIds { cols: layout.cols(), eids: layout.eids() };
    let tile_slots = (tile_bytes / (4 * S::LANES)).max(1);
    let run = |args: Option<WinnerRows<I>>| {
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
                        args,
                        _ops: PhantomData,
                    });
                });
            }
        }
    };
    if ARGS {
        // A row's opening entry writes its state before later entries read
        // it (`ArgRows::store_state`, `load_state`).
        let row_bytes = ctx.out_len * width as usize;
        layout.with_scratch(ctx.csr.num_rows() * row_bytes, |state| {
            run(Some(WinnerRows { state, u, e, width, row_bytes }))
        });
    } else {
        run(None);
    }
    fill_empty_rows::<R, I>(ctx, out, arg_u, arg_e);
}

struct BlockRows<'a, 'b, O, R, I: Index, const ARGS: bool> {
    ctx: Ctx<'a, I>,
    layout: &'b BlockedCsr<I>,
    entries: std::ops::Range<usize>,
    out: SharedMut<f32>,
    args: Option<WinnerRows<I>>,
    _ops: PhantomData<(O, R)>,
}

impl<O: BinaryOp, R: Reducer, I: Index, const ARGS: bool> Task for BlockRows<'_, '_, O, R, I, ARGS> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let BlockRows { ctx, layout, entries, out, args, .. } = self;
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
                let arg_rows = args.map(|a| a.row(v, v * ctx.out_len, layout.row_offset(j)));
                for chunk in Chunks::of(&ctx) {
                    blocked_chunk::<O, R, I, S, ARGS>(s, &ctx, v, edges.clone(), chunk, out_row, arg_rows, ends);
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
/// As for [`super::gather::accumulate`]; `out_row` and `args` point at row
/// `v`'s `out_len` elements, owned by this task for the duration.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn blocked_chunk<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    chunk: Chunk<'_>,
    out_row: *mut f32,
    args: Option<ArgRows<I>>,
    (opens, closes): (bool, bool),
) {
    macro_rules! run {
        ($v:literal) => {{
            let slots: &[Slot; $v] = chunk.0.try_into().expect("chunk sizes are 1, 2, 4 or 8");
            // SAFETY: slots lie inside the row (checked plan), of `out_row` and
            // `args` alike, which this task owns; forwarded contract.
            unsafe {
                let (mut val, mut ord) = ([s.splat(R::IDENTITY); $v], [s.splat_i32(0); $v]);
                if !opens {
                    for i in 0..$v {
                        val[i] = load(s, out_row.add(slots[i].out), slots[i].len);
                        if let (true, Some(args)) = (ARGS, args) {
                            ord[i] = args.load_state(s, slots[i]);
                        }
                    }
                }
                let base = args.map_or(0, |a| a.offset);
                let mut acc = Acc::<S, $v>::new(s, val, ord, base);
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
                    store_or_stream(s, out_row.add(sl.out), val, sl.len, opens && ctx.stream_out);
                    if let (true, Some(args)) = (ARGS, args) {
                        if closes {
                            args.write_ids(s, sl, acc.ord[i], ctx.csr, ctx.csr.row_range(v).start);
                        } else {
                            args.store_state(s, sl, acc.ord[i]);
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

/// The arg outputs of a blocked max/min pass and its state from block to
/// block: per output element, the row ordinal (position in the row's CSR
/// order) of the edge winning it so far, in the narrowest [`StateWidth`]
/// that holds the graph's degrees, in a buffer of `out_len · width` bytes
/// per row. The edge loop keeps row ordinals ([`Acc::base`]), so a row's
/// entries load them into the ordinal registers, reduce, and store them
/// back, and the row's last block looks the ids up by them, one vector
/// gather per output vector as in the plain pass. A lane no message
/// replaced keeps ordinal 0, the row's first edge, as in the plain pass.
///
/// A pass re-streams a row's state at every block the row has edges in, as
/// it does the row's values, so narrow state is less traffic; rows follow
/// each other in it, so a block's ascending rows stream it. Keeping winning
/// slots as `I` in the arg outputs and turning them into ids in a pass
/// after the blocks took blocked copy_u_max 1.20x the plain pass's time at
/// d = 128 on a uniform 2^24-edge graph where blocked copy_u_sum took 0.81x
/// (`perf-reports/ablation/2026-12-02_xeon-m167_uniform-max-blocked.tsv`);
/// merging the state lane by lane instead of in the ordinal registers cost
/// as much (`perf-reports/ablation/2026-12-04_xeon-m167_blocked-max-state.tsv`).
#[derive(Clone, Copy)]
struct WinnerRows<I> {
    state: SharedMut<u8>,
    u: Option<SharedMut<I>>,
    e: Option<SharedMut<I>>,
    width: StateWidth,
    /// State bytes per row.
    row_bytes: usize,
}

/// Bytes per element of a blocked max/min pass's state ([`WinnerRows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StateWidth {
    U8 = 1,
    U16 = 2,
    U32 = 4,
}

impl StateWidth {
    /// The narrowest width that holds every ordinal of rows of up to
    /// `max_degree` edges; `None` for rows of more than 2^31 edges, whose
    /// ordinals the `i32` lanes cannot hold (the plain pass runs).
    pub(super) fn for_degree(max_degree: usize) -> Option<Self> {
        match max_degree {
            d if d <= 1 << 8 => Some(Self::U8),
            d if d <= 1 << 16 => Some(Self::U16),
            d if d <= 1 << 31 => Some(Self::U32),
            _ => None,
        }
    }
}

impl<I: Index> WinnerRows<I> {
    /// Row `v`'s state and outputs (`out_len` elements at `at`), for an
    /// entry whose first slot is the row's `offset`-th.
    ///
    /// # Safety
    /// As for [`SharedMut::at`].
    #[inline(always)]
    unsafe fn row(&self, v: usize, at: usize, offset: usize) -> ArgRows<I> {
        // SAFETY: forwarded from the caller.
        let (state, u, e) =
            unsafe { (self.state.at(v * self.row_bytes), self.u.map(|p| p.at(at)), self.e.map(|p| p.at(at))) };
        ArgRows { state, u, e, width: self.width, offset: offset as i32 }
    }
}

/// One row's state and arg outputs ([`WinnerRows::row`]).
#[derive(Clone, Copy)]
struct ArgRows<I> {
    state: *mut u8,
    u: Option<*mut I>,
    e: Option<*mut I>,
    width: StateWidth,
    /// Row ordinal of the entry's first slot (below the degree, <= 2^31).
    offset: i32,
}

impl<I: Index> ArgRows<I> {
    /// The ordinals an earlier block left for the lanes of `sl`.
    ///
    /// # Safety
    /// The row is the task's own, `sl` lies in it, and an earlier entry of
    /// the row stored the state ([`ArgRows::store_state`]).
    #[inline(always)]
    unsafe fn load_state<S: Simd>(&self, s: S, sl: Slot) -> S::I32 {
        let w = self.width as usize;
        // SAFETY: the lanes' state lies in the row's `out_len · width`
        // bytes, aligned to `width` (the buffer is line-aligned, rows and
        // lanes multiples of `width` apart); it was written (caller).
        unsafe { s.load_narrow_i32(self.state.add(sl.out * w), w, sl.len) }
    }

    /// Keeps the lanes' ordinals `ord` for the row's next block.
    ///
    /// # Safety
    /// As for [`ArgRows::load_state`], but the state need not be written yet.
    #[inline(always)]
    unsafe fn store_state<S: Simd>(&self, s: S, sl: Slot, ord: S::I32) {
        let w = self.width as usize;
        // SAFETY: as in `load_state`; the ordinals fit `width`
        // (`StateWidth::for_degree`).
        unsafe { s.store_narrow_i32(self.state.add(sl.out * w), w, ord, sl.len) }
    }

    /// The row's last block: the lanes' ids by their ordinals `ord`, from
    /// the row's slots of `csr` (starting at `row_start`).
    ///
    /// # Safety
    /// The row is the task's own, `sl` lies in it, and every ordinal is
    /// below the row's degree.
    #[inline(always)]
    unsafe fn write_ids<S: Simd>(&self, s: S, sl: Slot, ord: S::I32, csr: CsrView<'_, I>, row_start: usize) {
        for (arg, ids) in [(self.u, csr.indices()), (self.e, csr.eids())] {
            if let Some(arg) = arg {
                // SAFETY: `sl` lies in the task's row of each output; the
                // ordinals index the row's slots (caller).
                unsafe {
                    gather_ids(s, &ids[row_start..], ord, std::slice::from_raw_parts_mut(arg.add(sl.out), sl.len))
                };
            }
        }
    }
}

/// After the blocked pass: rows without edges, which no entry wrote, get
/// the plain pass's 0 and `NONE`.
fn fill_empty_rows<R: Reducer, I: Index>(
    ctx: &Ctx<'_, I>,
    out: &mut [f32],
    arg_u: Option<&mut [I]>,
    arg_e: Option<&mut [I]>,
) {
    let csr = ctx.csr;
    let len = ctx.out_len;
    let n = csr.num_rows();
    let bounds = balanced_bounds(n, num_parts(n * len), |i| i);
    let outs = split_rows(out, &bounds, len);
    let us = split_opt(arg_u.filter(|_| R::HAS_ARG), &bounds, len);
    let es = split_opt(arg_e.filter(|_| R::HAS_ARG), &bounds, len);
    let parts: Vec<_> = outs.into_iter().zip(us.into_iter().zip(es)).enumerate().collect();
    parts.into_par_iter().for_each(|(p, (out, (mut au, mut ae)))| {
        for v in (bounds[p]..bounds[p + 1]).filter(|&v| csr.row_range(v).is_empty()) {
            let row = (v - bounds[p]) * len..(v - bounds[p] + 1) * len;
            out[row.clone()].fill(0.0);
            for arg in [au.as_deref_mut(), ae.as_deref_mut()].into_iter().flatten() {
                arg[row.clone()].fill(I::NONE);
            }
        }
    });
}
