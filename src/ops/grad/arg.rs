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
//! to run and across thread counts.
//!
//! The commonest source gradient, an elementwise message with a constant
//! partial (copy_u, u_add_*, u_sub_*: `c·g`), runs one of two kernels, as
//! timed trials per signature and graph decide (`trials::Scattered`):
//! - *pulled* over the out-CSR ([`gnnkern_simd::kernels::arg_pull`]): each
//!   worker owns whole source rows and reads, per out-edge, the
//!   destination's contiguous `arg_e` and `g` rows, prefetched ahead
//!   (1.3–1.6× faster than this module's scalar sweep at d = 128 on the
//!   Zen 5 VM, docs/PERFORMANCE.md); out-CSR rows are sorted by
//!   destination, so the terms arrive in the sweep's order;
//! - *scattered* by column stripes ([`gnnkern_simd::kernels::arg_scatter`]),
//!   as the sweep below but with the winning edges' sources looked up and
//!   16 read-modify-writes issued per AVX-512 gather/scatter, which beat
//!   the pull on RMAT graphs on an Intel Xeon VM (family 6 model 207), and
//!   tied or lost on uniform ones.
//!
//! All three are bitwise identical (tested below).
//!
//! Contributions are formed in f64 and accumulated in f32 in place: an
//! element's sum has at most out-degree terms, the `eps · magnitude ·
//! degree` bound of every sum here, and no `num_src × row_len` f64 buffer
//! (1 GB at 2^20 nodes × 128) is needed.

use crate::Index;
use crate::backend::simd::trials::{self, Signature};
use crate::backend::simd::{PassKind, note_pass_kind};
use crate::graph::Graph;
use crate::{Error, Result};
use gnnkern_simd::kernels::{self, SharedMut};
use gnnkern_simd::layout::BroadcastPlan;
use gnnkern_simd::op::{BinaryOpKind, Target};
use rayon::prelude::*;
use std::any::TypeId;

/// Marks the copy-like source gradient in trial signatures.
struct CopyLikeSourceGradient;

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
    pub(super) fn run(&self, side: Side, grad: &mut [f32]) -> Result<()> {
        let (target, row_len) = match side {
            Side::Lhs => (self.lhs.0, self.plan.lhs_len),
            Side::Rhs => (self.rhs.0, self.plan.rhs_len),
        };
        if row_len == 0 {
            return Ok(());
        }
        let constant = (!partials_read_values(self.op)).then(|| {
            let (da, db) = partials(self.op, 0.0, 0.0);
            if side == Side::Lhs { da } else { db }
        });
        if let (Target::Src, Some(c)) = (target, constant)
            && self.is_elementwise(side)
        {
            return self.copy_like_sources(c, grad);
        }
        grad.par_iter_mut().for_each(|y| *y = 0.0);
        let out = (SharedMut::new(grad), row_len);
        // Monomorphise the sweep per row rule and per partial kind, so the
        // per-element loop holds no `match` (copy/add/sub: a constant).
        let src = self.graph.coo().0;
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
        Ok(())
    }

    /// Whether `side`'s terms are exactly `o → column o` (no broadcast, no
    /// dot): then the source gradient can be pulled or scattered by the simd
    /// kernels ([`Self::copy_like_sources`]).
    fn is_elementwise(&self, side: Side) -> bool {
        let plan = self.plan;
        let len = if side == Side::Lhs { plan.lhs_len } else { plan.rhs_len };
        plan.reduce_len == 1
            && len == plan.out_len
            && (0..plan.out_len).all(|o| {
                let (lo, ro) = plan.element(o);
                (if side == Side::Lhs { lo } else { ro }) == o
            })
    }

    /// The source gradient of an elementwise message with constant partial
    /// `c` (copy/add/sub), pulled over the out-CSR
    /// ([`gnnkern_simd::kernels::arg_pull`]: each worker owns whole source
    /// rows) or scattered by column stripes with vector gathers and scatters
    /// ([`gnnkern_simd::kernels::arg_scatter`]), as the timed trials of the
    /// signature on this graph decide ([`trials::Scattered`]). Either way
    /// every element receives its terms in ascending destination order, as
    /// [`Self::sweep`] adds them (bitwise identical; tested).
    fn copy_like_sources(&self, c: f64, grad: &mut [f32]) -> Result<()> {
        let row_len = self.plan.out_len;
        // `c` is 1, -1 or 0 (`partials` of copy/add/sub), exact in f32, so
        // `c · g` rounds as the sweep's f64 product does.
        debug_assert!(c == 1.0 || c == -1.0 || c == 0.0);
        let c = c as f32;
        let sig = Signature {
            kernel: TypeId::of::<CopyLikeSourceGradient>(),
            lhs: Target::Src,
            rhs: Target::Dst,
            lhs_len: row_len,
            rhs_len: 0,
            out_len: row_len,
            args: true,
        };
        let nominated = kernels::arg_scatter_may_help(row_len, grad.len());
        trials::run_scheme::<I, trials::Scattered>(self.graph, sig, nominated, &mut |scatter| {
            note_pass_kind(Some(if scatter { PassKind::Scattered } else { PassKind::Pulled }));
            if scatter {
                kernels::arg_scatter(self.graph.coo().0, self.arg_e, self.grad_out, row_len, c, grad)
            } else {
                kernels::arg_pull(self.graph.out_csr().view(), self.arg_e, self.grad_out, row_len, c, grad)
            }
            .map_err(Error::from)
        })
        .map(drop)
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

#[cfg(test)]
mod tests {
    use super::*;
    use gnnkern_simd::layout::OperandShape;

    /// A graph with a hub source, parallel edges, destinations without
    /// in-edges and `num_src != num_dst`, and for every destination element
    /// an `arg_e` naming one of its in-edges (`-1` for empty rows).
    fn case(d: usize) -> (Graph<i32>, Vec<i32>, Vec<f32>) {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (num_src, num_dst) = (41, 29);
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for _ in 0..600 {
            let u = if next(4) == 0 { 3 } else { next(num_src) };
            let v = loop {
                let v = next(num_dst);
                if v % 7 != 5 {
                    break v;
                }
            };
            let copies = if next(8) == 0 { 2 } else { 1 };
            for _ in 0..copies {
                src.push(u as i32);
                dst.push(v as i32);
            }
        }
        let graph = Graph::from_coo(num_src, num_dst, src, dst).unwrap();
        let csr = graph.in_csr();
        let mut arg_e = Vec::with_capacity(num_dst * d);
        for v in 0..num_dst {
            let edges = csr.row_range(v);
            for _ in 0..d {
                arg_e.push(if edges.is_empty() { -1 } else { csr.eids()[edges.start + next(edges.len())] });
            }
        }
        let g = (0..num_dst * d).map(|_| (next(2001) as f32 - 1000.0) / 997.0).collect();
        (graph, arg_e, g)
    }

    /// The pulled and the scattered source gradient (copy_u: `c = 1`; the
    /// source operand of `v_sub_u`: `c = -1`) are bitwise what the
    /// column-split sweep adds, called directly and through the trials
    /// (which run both on their way to a decision where the scatter is
    /// nominated).
    #[test]
    fn copy_like_source_gradients_are_bitwise_the_sweep() {
        const D: usize = 40;
        let (graph, arg_e, g) = case(D);
        let features = vec![0f32; graph.num_src().max(graph.num_dst()) * D];
        let copy = OperandShape { uses_lhs: true, uses_rhs: false, reduces_last_dim: false };
        let binary = OperandShape { uses_lhs: true, uses_rhs: true, reduces_last_dim: false };
        let cases = [
            (BinaryOpKind::CopyLhs, BroadcastPlan::new(copy, &[D], &[]).unwrap(), Target::Src, Target::Dst, Side::Lhs),
            (BinaryOpKind::Sub, BroadcastPlan::new(binary, &[D], &[D]).unwrap(), Target::Dst, Target::Src, Side::Rhs),
        ];
        let bits = |x: &[f32]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
        for (op, plan, lhs, rhs, side) in cases {
            let pass = ArgBackward {
                graph: &graph,
                op,
                plan: &plan,
                lhs: (lhs, &features),
                rhs: (rhs, &features),
                grad_out: &g,
                arg_e: &arg_e,
            };
            assert!(pass.is_elementwise(side), "{op:?}");
            let mut swept = vec![0f32; graph.num_src() * D];
            let c = if op == BinaryOpKind::Sub { -1.0 } else { 1.0 };
            let src = graph.coo().0;
            let out = (SharedMut::new(&mut swept), D);
            pass.sweep(side, Target::Src, out, |e, _| src[e].to_usize(), |_, _, _| c);
            assert!(swept.iter().any(|&y| y != 0.0), "{op:?}: nothing was swept");

            let mut pulled = vec![f32::NAN; graph.num_src() * D];
            kernels::arg_pull(graph.out_csr().view(), &arg_e, &g, D, c as f32, &mut pulled).unwrap();
            assert_eq!(bits(&pulled), bits(&swept), "{op:?}: pulled");
            let mut scattered = vec![f32::NAN; graph.num_src() * D];
            kernels::arg_scatter(src, &arg_e, &g, D, c as f32, &mut scattered).unwrap();
            assert_eq!(bits(&scattered), bits(&swept), "{op:?}: scattered");
            for call in 1..=trials::CALLS_TO_DECIDE + 1 {
                let mut ran = vec![f32::NAN; graph.num_src() * D];
                pass.run(side, &mut ran).unwrap();
                assert_eq!(bits(&ran), bits(&swept), "{op:?}: call {call}");
            }
        }
    }
}
