//! The edge loop of one chunk: the general slot loop, and the dense-gather
//! fast path with one loop per edge-operand form.

use super::reduce::{fold_probe, reduce_step};
use super::{Acc, Ctx, edge_row_of};
use crate::Index;
use crate::isa::Simd;
use crate::kernels::common::{Operand, Slot};
use crate::kernels::slot_order::StagedEdges;
use crate::op::{BinaryOp, Reducer, Target};

/// Accumulates one chunk of `V` slots over `edges` into `acc`, returned.
///
/// The accumulators travel by value, into the loop and out of it, so that
/// they stay in registers. Behind a `&mut`, LLVM kept them in memory: the
/// max/min loop at d = 128 stored all 24 of its zmm accumulators (values,
/// probes, ordinals) to the stack on every edge (`perf annotate` of
/// kernel_bench, Zen 4 VM), 24 stores per edge in a loop of 8 gathers, and
/// copy_u_max on RMAT 2^20 / 2^24 took 0.65× the time once they stayed in
/// registers (`perf-reports/ablation/2026-11-30_zen4_accumulators-by-value.tsv`).
///
/// # Safety
/// `edges` is a slot range of `ctx.ids`, whose ids are in bounds for the
/// operands; the slots come from `plan_slots` for the operands in `ctx`.
#[inline(always)]
pub(super) unsafe fn accumulate<
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
    mut acc: Acc<S, V>,
) -> Acc<S, V> {
    if dense_gather::<O, S, V>(ctx, slots) {
        // SAFETY: forwarded from the caller; `dense_gather` checked the layout.
        return unsafe { accumulate_dense::<O, R, I, S, V, ARGS, ORDERED>(s, ctx, edges, slots, acc) };
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
            let kk = s.splat_i32(acc.base + (k - edges.start) as i32);
            let mut msgs = [zero; V];
            for (i, sl) in slots.iter().enumerate() {
                let a = if O::USE_LHS { ctx.lhs.fetch(s, lrow, sl.lhs, sl.len) } else { zero };
                let b = if O::USE_RHS { ctx.rhs.fetch(s, rrow, sl.rhs, sl.len) } else { zero };
                msgs[i] = reduce_step::<O, R, S, V, ARGS, ORDERED>(s, (a, b), kk, &mut acc, i);
            }
            fold_probe::<R, S, V, ORDERED>(s, &mut acc, msgs);
        }
    }
    acc
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
    acc: Acc<S, V>,
) -> Acc<S, V> {
    let rows = DenseRows::new(s, ctx, slots);
    // SAFETY: forwarded from the caller, `dense_gather` held, and each
    // loop gets the form just tested.
    unsafe {
        if !O::USE_RHS {
            dense_loop::<O, R, I, S, V, ARGS, ORDERED, { EdgeOperand::NONE }>(s, rows, edges, acc)
        } else if ctx.rhs.contiguous {
            dense_loop::<O, R, I, S, V, ARGS, ORDERED, { EdgeOperand::VECTORS }>(s, rows, edges, acc)
        } else if rows.rhs.iter().all(|&o| o == rows.rhs[0]) {
            dense_loop::<O, R, I, S, V, ARGS, ORDERED, { EdgeOperand::ONE_SCALAR }>(s, rows, edges, acc)
        } else {
            dense_loop::<O, R, I, S, V, ARGS, ORDERED, { EdgeOperand::SCALAR_PER_VECTOR }>(s, rows, edges, acc)
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
    mut acc: Acc<S, V>,
) -> Acc<S, V> {
    let first = edges.start;
    for k in edges {
        // SAFETY: `k` is a slot of `ctx.ids` (caller), so are the prefetched
        // ones below `cols.len()`; `dense_gather` holds.
        unsafe {
            rows.prefetch::<S, RHS>(s, k + rows.prefetch);
            let (row, erow) = rows.at::<RHS>(k);
            let kk = s.splat_i32(acc.base + (k - first) as i32);
            let one = if RHS == EdgeOperand::ONE_SCALAR { s.splat(*erow.add(rows.rhs[0])) } else { s.splat(0.0) };
            let mut msgs = [one; V];
            for (i, msg) in msgs.iter_mut().enumerate() {
                let a = s.load(row.add(i * S::LANES));
                let b = match RHS {
                    EdgeOperand::NONE => a,
                    EdgeOperand::VECTORS => s.load(erow.add(rows.rhs[0] + i * S::LANES)),
                    EdgeOperand::ONE_SCALAR => one,
                    _ => s.splat(*erow.add(rows.rhs[i])),
                };
                *msg = reduce_step::<O, R, S, V, ARGS, ORDERED>(s, (a, b), kk, &mut acc, i);
            }
            fold_probe::<R, S, V, ORDERED>(s, &mut acc, msgs);
        }
    }
    acc
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
