//! Edge-parallel g-SDDMM: `out[e] = φ(lhs[a(e)], rhs[b(e)])`.
//!
//! ```text
//! par over nnz-balanced row ranges of the chosen CSR:   <- one `vectorize` per task
//!   for r in rows:                                        <- row operand stays hot in L1
//!     for k in row(r): e = eid[k]; (u, v) from (r, col[k])
//!       for slot in plan: out[e][slot] = φ(lhs slot, rhs slot)   (dot: 4-accumulator K-dot)
//! ```
//!
//! Locality: traversing the rows of a CSR keeps one operand row (the row's
//! node) in L1 and gathers the other in ascending id order, while the
//! output row goes to `out[eid]`. Which CSR to walk is decided once per
//! graph by [`sddmm_order`]: the one whose edge ids are most often
//! consecutive, so output writes stream instead of scattering (a graph
//! built from source-sorted COO walks its out-CSR and writes sequentially;
//! one built from a CSC walks its in-CSR).

use super::common::{Operand, SharedMut, Slot, balanced_bounds, dot, num_parts, plan_slots};
use crate::Index;
use crate::error::KernelError;
use crate::isa::{Simd, Task};
use crate::layout::{BroadcastPlan, CsrView};
use crate::op::{BinaryOp, Target};
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
    let runs = |c: &CsrView<'_, I>| {
        c.eids().par_windows(2).filter(|w| w[1].to_usize() == w[0].to_usize().wrapping_add(1)).count()
    };
    if runs(out_csr) > runs(in_csr) { SddmmOrder::OutCsr } else { SddmmOrder::InCsr }
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

/// Runs the g-SDDMM at the thread's active ISA level.
pub fn sddmm<O: BinaryOp, I: Index>(args: SddmmArgs<'_, I>) -> Result<(), KernelError> {
    crate::isa::with_token(crate::isa::active_level(), SddmmEntry::<O, I> { args, _op: PhantomData })
}

struct SddmmEntry<'a, O, I: Index> {
    args: SddmmArgs<'a, I>,
    _op: PhantomData<O>,
}

impl<O: BinaryOp, I: Index> Task for SddmmEntry<'_, O, I> {
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
        if plan.out_len == 0 || csr.num_edges() == 0 {
            return Ok(());
        }
        let ctx = Ctx {
            csr,
            rows_are_dst: order == SddmmOrder::InCsr,
            lhs: Operand { data: lhs, row_len: plan.lhs_len, target: lhs_target, contiguous: plan.lhs_contiguous },
            rhs: Operand { data: rhs, row_len: plan.rhs_len, target: rhs_target, contiguous: plan.rhs_contiguous },
            out_len: plan.out_len,
            slots: &slots,
            out: SharedMut::new(out),
        };
        let n = csr.num_rows();
        let indptr = csr.indptr();
        let bounds = balanced_bounds(n, num_parts(csr.num_edges() + n), |i| indptr[i].to_usize() + i);
        bounds.par_windows(2).for_each(|w| {
            s.vectorize(SddmmRows::<O, I> { ctx, rows: w[0]..w[1], _op: PhantomData });
        });
        Ok(())
    }
}

#[derive(Clone, Copy)]
struct Ctx<'a, I: Index> {
    csr: CsrView<'a, I>,
    rows_are_dst: bool,
    lhs: Operand<'a>,
    rhs: Operand<'a>,
    out_len: usize,
    slots: &'a [Slot],
    out: SharedMut<f32>,
}

struct SddmmRows<'a, O, I: Index> {
    ctx: Ctx<'a, I>,
    rows: std::ops::Range<usize>,
    _op: PhantomData<O>,
}

impl<O: BinaryOp, I: Index> Task for SddmmRows<'_, O, I> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let ctx = self.ctx;
        let (indices, eids) = (ctx.csr.indices(), ctx.csr.eids());
        let zero = s.splat(0.0);
        for r in self.rows {
            for k in ctx.csr.row_range(r) {
                // SAFETY: `k` is a slot of the validated CSR, so the column is
                // below its bound and the edge id below num_edges; operand
                // lengths and slot extents were checked by `plan_slots`. Edge
                // `e` occurs once in the CSR, and rows are split disjointly
                // across tasks, so this task alone writes `out[e]`.
                unsafe {
                    let c = indices.get_unchecked(k).to_usize();
                    let e = eids.get_unchecked(k).to_usize();
                    let (u, v) = if ctx.rows_are_dst { (c, r) } else { (r, c) };
                    let lrow = ctx.lhs.row(u, e, v);
                    let rrow = ctx.rhs.row(u, e, v);
                    let out = ctx.out.at(e * ctx.out_len);
                    for sl in ctx.slots {
                        if O::REDUCES_LAST_DIM {
                            *out.add(sl.out) = dot::<O, S>(s, lrow.add(sl.lhs), rrow.add(sl.rhs), sl.len);
                            continue;
                        }
                        let a = if O::USE_LHS { ctx.lhs.fetch(s, lrow, sl.lhs, sl.len) } else { zero };
                        let b = if O::USE_RHS { ctx.rhs.fetch(s, rrow, sl.rhs, sl.len) } else { zero };
                        let m = O::apply_vec(s, a, b);
                        if sl.len == S::LANES {
                            s.store(out.add(sl.out), m);
                        } else {
                            s.store_partial(out.add(sl.out), m, sl.len);
                        }
                    }
                }
            }
        }
    }
}
