//! The blocked pass: feature tiles, then source blocks in ascending order
//! shared by all workers, each row's partial reduction carried in `out`
//! from block to block; `finalize_rows` writes empty rows and arg ids.

use super::reduce::reduce_chunk;
use super::{Acc, Chunk, Chunks, Ctx};
use crate::Index;
use crate::isa::{Simd, Task};
use crate::kernels::blocked::BlockedCsr;
use crate::kernels::common::{
    EdgeIds, SharedMut, Slot, balanced_bounds, load, num_parts, split_opt, split_rows, store_or_stream,
};
use crate::op::{BinaryOp, Reducer};
use rayon::prelude::*;
use std::marker::PhantomData;

/// Runs the rows of `ctx.csr` block by block over `layout` (and feature
/// tile by tile, `tile_bytes` wide), then [`finalize_rows`].
pub(super) fn blocked_pass<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
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
                for chunk in Chunks::of(&ctx) {
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
/// As for [`super::gather::accumulate`]; `out_row` / `win_row` point at row `v`'s
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
                    store_or_stream(s, out_row.add(sl.out), val, sl.len, opens && ctx.stream_out);
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

/// Row-relative winning ordinals of one slot, as plain integers.
#[inline(always)]
fn ordinals<S: Simd>(s: S, ord: S::I32) -> [i32; 16] {
    let mut buf = [-1i32; 16];
    debug_assert!(S::LANES <= 16);
    // SAFETY: `buf` holds 16 >= LANES ints.
    unsafe { s.store_i32(buf.as_mut_ptr(), ord) };
    buf
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
