//! One edge's (or one row's) messages: the general slot loop, and the
//! dense forms for whole-vector operands and for K-long dots.

use super::Ctx;
use super::walks::MessageSink;
use crate::Index;
use crate::isa::Simd;
use crate::kernels::common::{Slot, dot, store_or_stream};
use crate::op::{BinaryOp, Target};

/// The row lengths, in vectors, that the dense message forms compile for.
/// 16 is d = 128 at AVX2's 8 lanes (AVX-512 needs only 8): without it the
/// single-head u_dot_v at d = 128 ran the general slot loop on CPUs without
/// AVX-512, and on the Zen 3 VM took 1.4x the time of the 4-head one, which
/// gathers the same rows (`docs/PERFORMANCE.md`, "Dense dots at AVX2").
/// Each length is one more copy of the walks per op and index type.
pub(super) const DENSE_VECTORS: [usize; 5] = [1, 2, 4, 8, 16];

/// An edge walk's messages as whole vectors, both operands contiguous:
/// `heads` dots of `vectors` vectors laid head after head (as
/// [`DenseDot`]), or one elementwise message of `vectors` vectors.
pub(super) struct DenseEdges {
    pub(super) heads: usize,
    /// 1, 2, 4, 8 or 16 (see [`DENSE_VECTORS`]).
    pub(super) vectors: usize,
}

impl DenseEdges {
    pub(super) fn of<O: BinaryOp, S: Simd>(ctx: &Ctx<'_, impl Index>) -> Option<Self> {
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
        (k == v * l && DENSE_VECTORS.contains(&v) && laid_out).then_some(Self { heads, vectors: v })
    }
}

/// [`message`] for [`DenseEdges`] of `V` vectors: the same [`dot`] per head,
/// or the same `apply_vec` per vector, so bitwise the same messages, at a
/// length known at compile time. Without it (the general slot loop) the
/// edge walk took u_dot_v 1.2-1.3x and u_add_v 1.1-1.2x longer on RMAT
/// 2^20 / 2^24 at d = 32 (Intel Xeon VM; the ablation file of
/// [`super::sddmm_edge_order`], section 2): fewer instructions per edge keep more
/// edges, and so more misses, in the out-of-order window (as [`dense_dots`]).
///
/// # Safety
/// `a` and `b` are the edge's operand rows, `out` its output row (as for
/// [`message`]), and `DenseEdges::of(ctx)` gave `heads` and `V`.
#[inline(always)]
pub(super) unsafe fn dense_edge<O: BinaryOp, S: Simd, const V: usize>(
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
            store_or_stream(s, out.add(j * l), m, l, ctx.stream_out);
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
pub(super) unsafe fn edge_messages<O: BinaryOp, I: Index, S: Simd>(
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
pub(super) unsafe fn message<O: BinaryOp, S: Simd>(
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
            store_or_stream(s, out.add(sl.out), m, sl.len, ctx.stream_out);
        }
    }
}

/// Dots of `heads` slots of `V` full vectors each, laid head after head in
/// both operands and in the output (`slots[h] = (out h, lhs h·K, rhs h·K,
/// K)`, K = `V`·lanes: a single-head u_dot_v, or GAT's multi-head
/// `[N, H, K]` logits), one operand on the walk's row side and the other
/// gathered by column id (either walk).
pub(super) struct DenseDot {
    pub(super) heads: usize,
    /// K in vectors: 1, 2, 4, 8 or 16 (see [`DENSE_VECTORS`]).
    pub(super) vectors: usize,
    /// The lhs is the row-side operand (else the rhs is).
    pub(super) row_is_lhs: bool,
}

impl DenseDot {
    pub(super) fn of<O: BinaryOp, S: Simd>(ctx: &Ctx<'_, impl Index>) -> Option<Self> {
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
            && DENSE_VECTORS.contains(&v)
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
pub(super) unsafe fn dense_dots<O: BinaryOp, I: Index, S: Simd, const V: usize>(
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
pub(super) fn prefetch_row<S: Simd>(s: S, row: *const f32, len: usize) {
    let mut off = 0;
    while off < len.min(128) {
        s.prefetch(row.wrapping_add(off));
        off += 16;
    }
}
