//! Gradients of max/min g-SpMM through the arg outputs.
//!
//! Output element `o` of destination `v` is the message of one edge,
//! `e* = arg_e[v][o]` (with source `u* = src(e*)`); its gradient flows to
//! exactly the operand elements that message read:
//!
//! ```text
//! grad_lhs[a(e*)][lo(o) + k] += ∂φ/∂a · g[v][o]      (k < K for dot, else k = 0)
//! grad_rhs[b(e*)][ro(o) + k] += ∂φ/∂b · g[v][o]
//! ```
//!
//! `arg_e` alone identifies the message (`arg_u` is `src(arg_e)`), including
//! which of several parallel edges won. The scatter touches
//! O(num_dst × out_len) elements, against the forward pass's O(E × out_len).
//!
//! # Parallel without atomics, deterministic for any thread count
//! The `(o, k)` terms are listed once, with the operand column each one
//! writes. Destination and edge rows are written by one destination only
//! (an edge has one destination), so those passes split the destinations
//! among workers. Source rows are written by any destination, so that pass
//! splits the operand's *columns* instead, in whole 64-byte lines (16 f32,
//! no false sharing): every worker walks all destinations in order but
//! writes only its own columns. Either way each gradient element receives
//! its contributions in the same order (destination ascending, then term
//! order) whatever the number of workers, so results are bit-identical run
//! to run and across thread counts. Contributions are formed in f64 and
//! accumulated in f32 in place: an element's sum has at most out-degree
//! terms, the `eps · magnitude · degree` bound of every sum here, and no
//! `num_src × row_len` f64 buffer (1 GB at 2^20 nodes × 128) is needed.

use crate::Index;
use crate::graph::Graph;
use gnnkern_simd::kernels::SharedMut;
use gnnkern_simd::layout::BroadcastPlan;
use gnnkern_simd::op::{BinaryOpKind, Target};
use rayon::prelude::*;

/// Which operand is differentiated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Side {
    Lhs,
    Rhs,
}

/// `(∂φ/∂a, ∂φ/∂b)` at `(a, b)` (for dot: of one product term).
fn partials(op: BinaryOpKind, a: f64, b: f64) -> (f64, f64) {
    match op {
        BinaryOpKind::Add => (1.0, 1.0),
        BinaryOpKind::Sub => (1.0, -1.0),
        BinaryOpKind::Mul | BinaryOpKind::Dot => (b, a),
        BinaryOpKind::Div => (1.0 / b, -a / (b * b)),
        BinaryOpKind::CopyLhs => (1.0, 0.0),
        BinaryOpKind::CopyRhs => (0.0, 1.0),
    }
}

/// Whether [`partials`] reads the operand values (else they need not be loaded:
/// for copy/add/sub the scatter touches only `arg_e`, `g` and the gradient).
fn partials_read_values(op: BinaryOpKind) -> bool {
    matches!(op, BinaryOpKind::Mul | BinaryOpKind::Dot | BinaryOpKind::Div)
}

/// Gradient elements per 64-byte line: the unit of a column split.
const LINE_F32: usize = 16;
/// Destinations per task of a row split (a few thousand elements of work).
const ROWS_PER_TASK: usize = 64;

/// One product term `(o, k)` of the forward message: the output element it
/// feeds, the operand elements it reads and the gradient column it writes.
#[derive(Clone, Copy)]
struct Term {
    o: usize,
    lhs: usize,
    rhs: usize,
    /// `lhs` or `rhs`, whichever side is differentiated.
    col: usize,
}

/// A validated max/min backward pass (see the module docs).
pub(super) struct ArgBackward<'a, I: Index> {
    pub graph: &'a Graph<I>,
    pub op: BinaryOpKind,
    pub plan: &'a BroadcastPlan,
    pub lhs: (Target, &'a [f32]),
    pub rhs: (Target, &'a [f32]),
    pub grad_out: &'a [f32],
    /// Validated: `-1` exactly for empty rows, else an in-edge of the row's destination.
    pub arg_e: &'a [I],
}

impl<I: Index> ArgBackward<'_, I> {
    /// Every `(o, k)` term in output order, with `side`'s column.
    fn terms(&self, side: Side) -> Vec<Term> {
        let plan = self.plan;
        let mut terms = Vec::with_capacity(plan.out_len * plan.reduce_len);
        for o in 0..plan.out_len {
            let (lo, ro) = plan.element(o);
            terms.extend((0..plan.reduce_len).map(|k| {
                let (lhs, rhs) = (lo + k, ro + k);
                Term { o, lhs, rhs, col: if side == Side::Lhs { lhs } else { rhs } }
            }));
        }
        terms
    }

    /// `∂φ/∂side` of term `t` of the message on edge `e` into `v`.
    fn partial(&self, side: Side, t: &Term, e: usize, v: usize) -> f64 {
        let src = self.graph.coo().0;
        let value = |(target, data): (Target, &[f32]), len: usize, i: usize| {
            let row = match target {
                Target::Src => src[e].to_usize(),
                Target::Edge => e,
                Target::Dst => v,
            };
            if len == 0 { 0.0 } else { f64::from(data[row * len + i]) }
        };
        let a = value(self.lhs, self.plan.lhs_len, t.lhs);
        let b = value(self.rhs, self.plan.rhs_len, t.rhs);
        let (da, db) = partials(self.op, a, b);
        if side == Side::Lhs { da } else { db }
    }

    /// Adds `coef(t, e, v) · g[v][t.o]` at `(row(e, v), t.col)` of `grad` for
    /// destination `v`'s outputs, restricted to `terms`.
    ///
    /// # Safety
    /// No other thread accesses the gradient elements these terms write for
    /// `v`, and `row` returns rows of the gradient (`< grad.len() / row_len`).
    #[inline(always)]
    unsafe fn scatter_row(
        &self,
        v: usize,
        terms: &[Term],
        (grad, row_len): (SharedMut<f32>, usize),
        row: &impl Fn(usize, usize) -> usize,
        coef: &impl Fn(&Term, usize, usize) -> f64,
    ) {
        let out_len = self.plan.out_len;
        let arg_row = &self.arg_e[v * out_len..(v + 1) * out_len];
        let g_row = &self.grad_out[v * out_len..(v + 1) * out_len];
        for t in terms {
            let e = arg_row[t.o];
            if e == I::NONE {
                continue;
            }
            let e = e.to_usize();
            let x = coef(t, e, v) * f64::from(g_row[t.o]);
            debug_assert!(t.col < row_len);
            // SAFETY: `row` is in bounds and `t.col < row_len` (the plan's
            // offsets), so the element is in bounds; the caller owns it.
            unsafe { *grad.at(row(e, v) * row_len + t.col) += x as f32 };
        }
    }

    /// Writes the gradient of `side`'s operand (overwrite) into `grad`.
    pub(super) fn run(&self, side: Side, grad: &mut [f32]) {
        let (target, row_len) = match side {
            Side::Lhs => (self.lhs.0, self.plan.lhs_len),
            Side::Rhs => (self.rhs.0, self.plan.rhs_len),
        };
        if row_len == 0 {
            return;
        }
        grad.par_iter_mut().for_each(|y| *y = 0.0);
        let out = (SharedMut::new(grad), row_len);
        // Monomorphise the sweep per row rule and per partial kind, so the
        // per-element loop holds no `match` (copy/add/sub: a constant).
        let src = self.graph.coo().0;
        let constant = (!partials_read_values(self.op)).then(|| {
            let (da, db) = partials(self.op, 0.0, 0.0);
            if side == Side::Lhs { da } else { db }
        });
        match (target, constant) {
            (Target::Src, Some(c)) => self.sweep(side, target, out, |e, _| src[e].to_usize(), |_, _, _| c),
            (Target::Src, None) => {
                self.sweep(side, target, out, |e, _| src[e].to_usize(), |t, e, v| self.partial(side, t, e, v))
            }
            (Target::Edge, Some(c)) => self.sweep(side, target, out, |e, _| e, |_, _, _| c),
            (Target::Edge, None) => self.sweep(side, target, out, |e, _| e, |t, e, v| self.partial(side, t, e, v)),
            (Target::Dst, Some(c)) => self.sweep(side, target, out, |_, v| v, |_, _, _| c),
            (Target::Dst, None) => self.sweep(side, target, out, |_, v| v, |t, e, v| self.partial(side, t, e, v)),
        }
    }

    /// Runs [`Self::scatter_row`] over every destination, split among
    /// workers as the module docs describe.
    fn sweep(
        &self,
        side: Side,
        target: Target,
        out: (SharedMut<f32>, usize),
        row: impl Fn(usize, usize) -> usize + Sync,
        coef: impl Fn(&Term, usize, usize) -> f64 + Sync,
    ) {
        let terms = self.terms(side);
        let num_dst = self.graph.num_dst();
        let row_len = out.1;
        match target {
            // A destination writes its own row and the rows of its own in-edges.
            Target::Dst | Target::Edge => {
                (0..num_dst).into_par_iter().with_min_len(ROWS_PER_TASK).for_each(|v| {
                    // SAFETY: destination `v` (one task) writes row `v`, or the
                    // rows of edges whose destination is `v` (validated
                    // `arg_e`); no other task does. Rows are validated node
                    // and edge ids.
                    unsafe { self.scatter_row(v, &terms, out, &row, &coef) }
                });
            }
            // Any destination may write any source row: split by column.
            Target::Src => {
                // One stripe per worker, in whole lines where the row has
                // enough of them (else narrower, accepting false sharing over
                // idle workers). Narrower stripes, one line each, shrink a
                // stripe's working set to num_src × 64 B but measured slower
                // (104 → 150 ms, uniform 2^16 / 2^20, d = 128): each extra
                // sweep re-reads `arg_e` and `g` rows at a 512-byte stride.
                let lines = row_len.div_ceil(LINE_F32);
                let parts = rayon::current_num_threads().clamp(1, row_len);
                let stripe_of = |col: usize| {
                    if parts <= lines { col / LINE_F32 * parts / lines } else { col * parts / row_len }
                };
                let mut stripes = vec![Vec::new(); parts];
                for t in &terms {
                    stripes[stripe_of(t.col)].push(*t);
                }
                stripes.par_iter().for_each(|stripe| {
                    for v in 0..num_dst {
                        // SAFETY: the stripes partition the operand's columns,
                        // and this task alone writes this stripe's columns;
                        // source ids are validated.
                        unsafe { self.scatter_row(v, stripe, out, &row, &coef) }
                    }
                });
            }
        }
    }
}
