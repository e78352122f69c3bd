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
//! which of several parallel edges won. The scatter is O(num_dst × out_len),
//! a small fraction of the forward pass's O(E × out_len): destination
//! operands are written in parallel (each row by its own destination),
//! source and edge operands by one sequential scatter (parallelising it
//! would need atomics). Source rows accumulate in f64.

use crate::Index;
use crate::graph::Graph;
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
pub(super) fn partials(op: BinaryOpKind, a: f64, b: f64) -> (f64, f64) {
    match op {
        BinaryOpKind::Add => (1.0, 1.0),
        BinaryOpKind::Sub => (1.0, -1.0),
        BinaryOpKind::Mul | BinaryOpKind::Dot => (b, a),
        BinaryOpKind::Div => (1.0 / b, -a / (b * b)),
        BinaryOpKind::CopyLhs => (1.0, 0.0),
        BinaryOpKind::CopyRhs => (0.0, 1.0),
    }
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
    /// Calls `f(operand row, offset within the row, value)` for every
    /// contribution of output element `o` of destination `v` to `side`'s
    /// operand (none for an empty destination).
    fn contributions(&self, side: Side, v: usize, o: usize, mut f: impl FnMut(usize, usize, f64)) {
        let len = self.plan.out_len;
        let e = self.arg_e[v * len + o];
        if e == I::NONE {
            return;
        }
        let e = e.to_usize();
        let u = self.graph.coo().0[e].to_usize();
        let row = |(t, _): (Target, &[f32])| match t {
            Target::Src => u,
            Target::Edge => e,
            Target::Dst => v,
        };
        let (lr, rr) = (row(self.lhs), row(self.rhs));
        let (lo, ro) = self.plan.element(o);
        let at = |data: &[f32], len: usize, r: usize, i: usize| {
            if len == 0 { 0.0 } else { f64::from(data[r * len + i]) }
        };
        let g = f64::from(self.grad_out[v * len + o]);
        for k in 0..self.plan.reduce_len {
            let a = at(self.lhs.1, self.plan.lhs_len, lr, lo + k);
            let b = at(self.rhs.1, self.plan.rhs_len, rr, ro + k);
            let (da, db) = partials(self.op, a, b);
            match side {
                Side::Lhs => f(lr, lo + k, da * g),
                Side::Rhs => f(rr, ro + k, db * g),
            }
        }
    }

    /// Writes the gradient of `side`'s operand (overwrite) into `grad`.
    pub(super) fn run(&self, side: Side, grad: &mut [f32]) {
        let (target, row_len) = match side {
            Side::Lhs => (self.lhs.0, self.plan.lhs_len),
            Side::Rhs => (self.rhs.0, self.plan.rhs_len),
        };
        let out_len = self.plan.out_len;
        if row_len == 0 {
            return;
        }
        let num_dst = self.graph.num_dst();
        match target {
            Target::Dst => grad.par_chunks_mut(row_len).enumerate().for_each_init(
                || vec![0f64; row_len],
                |acc, (v, out)| {
                    acc.fill(0.0);
                    for o in 0..out_len {
                        self.contributions(side, v, o, |_, i, x| acc[i] += x);
                    }
                    for (y, a) in out.iter_mut().zip(acc.iter()) {
                        *y = *a as f32;
                    }
                },
            ),
            Target::Src => {
                let mut acc = vec![0f64; grad.len()];
                for v in 0..num_dst {
                    for o in 0..out_len {
                        self.contributions(side, v, o, |r, i, x| acc[r * row_len + i] += x);
                    }
                }
                grad.par_iter_mut().zip(acc.par_iter()).for_each(|(g, a)| *g = *a as f32);
            }
            Target::Edge => {
                // Each edge row receives contributions only from its own
                // destination's few output elements: accumulate in place.
                grad.fill(0.0);
                for v in 0..num_dst {
                    for o in 0..out_len {
                        self.contributions(side, v, o, |r, i, x| {
                            let y = &mut grad[r * row_len + i];
                            *y = (f64::from(*y) + x) as f32;
                        });
                    }
                }
            }
        }
    }
}
