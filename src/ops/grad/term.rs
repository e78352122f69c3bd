//! The one computation behind every sum/mean gradient (DGL's Theorem 1):
//!
//! ```text
//! grad[x] = Σ_{e : t(e) = x}  reduce_to_operand( F(G[gt(e)], P[pt(e)]) )
//! ```
//!
//! `x` is a row of the differentiated operand (target `t`), `G` the upstream
//! gradient (on destinations for g-SpMM, on edges for g-SDDMM), `P` the
//! partner operand and `F` one of `G`, `G·P`, `G/P`. `reduce_to_operand` sums
//! over the dimensions the operand was broadcast along.
//!
//! Mapped onto the primitives, run through [`Exec`] on whatever backend the
//! caller chose:
//! - `t = e` (edge operand): a g-SDDMM on the graph;
//! - `t = v`: a g-SpMM (sum) on the graph;
//! - `t = u`: a g-SpMM (sum) on `graph.reverse()` (O(1)), with `u`/`v`
//!   operands swapping roles.
//!
//! The output is written straight into the gradient buffer. When the
//! operand was broadcast, the reduction is folded into the primitive where
//! possible: `Σ_k G·P` over trailing broadcast dimensions is a `dot`
//! message (GAT: `x[N,H,D] * a[E,H,1]` gives `grad_a = dot(G[H,D], x[H,D])`
//! as an `[E,H,1]` g-SDDMM). Other broadcasts reduce a node-sized scratch
//! (`t = u, v`), pre-reduce `G` (copy) or, for an edge operand, run a fused
//! per-edge loop with an `O(operand row)` accumulator per thread. No path
//! allocates an `E × d` message tensor.

use super::dense::{self, broadcast, pad, reduce_map};
use crate::backend::target_rows;
use crate::graph::Graph;
use crate::ops::{Exec, SddmmIo, SpmmIo};
use crate::spec::{SddmmSpec, SpmmSpec};
use crate::tensor::{TensorMut, TensorRef, aligned_filled};
use crate::{Index, Result};
use gnnkern_simd::layout::{BroadcastPlan, OperandShape};
use gnnkern_simd::op::{BinaryOpKind, ReduceKind, Target};
use rayon::prelude::*;

/// How the upstream gradient `G` combines with the partner operand `P`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Factor {
    /// `G`
    Copy,
    /// `G · P`
    Mul,
    /// `G / P`
    DivBy,
}

/// A tensor placed on a target, by feature shape.
#[derive(Clone, Copy)]
pub(super) struct Placed<'a> {
    pub target: Target,
    pub data: &'a [f32],
    pub feat: &'a [usize],
}

/// One gradient term: see the module docs.
pub(super) struct Term<'a> {
    pub factor: Factor,
    pub g: Placed<'a>,
    /// The partner operand; `None` exactly when `factor` is `Copy`.
    pub p: Option<Placed<'a>>,
    /// Target of the differentiated operand.
    pub target: Target,
    /// Feature shape of the differentiated operand (and of its gradient).
    pub feat: &'a [usize],
}

/// How the message shape relates to the operand shape.
enum Reduction {
    /// Same element count: the message is the gradient.
    None,
    /// The broadcast dimensions are trailing: `Σ G·P` is a dot message over
    /// them, with `G` and `P` viewed with these feature shapes.
    TrailingDot { g_feat: Vec<usize>, p_feat: Vec<usize> },
    /// Anything else: message element `o` is summed into operand element `map[o]`.
    General { map: Vec<usize> },
}

fn classify(factor: Factor, msg: &[usize], feat: &[usize], g: &[usize], p: &[usize]) -> Reduction {
    let msg_len: usize = msg.iter().product();
    let feat_len: usize = feat.iter().product();
    if msg_len == feat_len {
        return Reduction::None;
    }
    let general = || Reduction::General { map: reduce_map(msg, feat) };
    if factor != Factor::Mul || msg.contains(&0) {
        return general();
    }
    let rank = msg.len();
    let (feat_p, g_p, p_p) = (pad(feat, rank), pad(g, rank), pad(p, rank));
    // Dimensions of size 1 in the message are 1 everywhere: skip them.
    let kept: Vec<usize> = (0..rank).filter(|&d| msg[d] != 1).collect();
    let reduced = |d: usize| feat_p[d] == 1;
    let first_reduced = kept.iter().position(|&d| reduced(d)).unwrap_or(kept.len());
    let trailing = kept[first_reduced..].iter().all(|&d| reduced(d) && g_p[d] == msg[d] && p_p[d] == msg[d]);
    if !trailing {
        return general();
    }
    let k: usize = kept[first_reduced..].iter().map(|&d| msg[d]).product();
    let lead = |s: &[usize]| -> Vec<usize> {
        let mut v: Vec<usize> = kept[..first_reduced].iter().map(|&d| s[d]).collect();
        v.push(k);
        v
    };
    Reduction::TrailingDot { g_feat: lead(&g_p), p_feat: lead(&p_p) }
}

fn with_rows(rows: usize, feat: &[usize]) -> Vec<usize> {
    let mut s = Vec::with_capacity(feat.len() + 1);
    s.push(rows);
    s.extend_from_slice(feat);
    s
}

fn swap_ends(t: Target) -> Target {
    match t {
        Target::Src => Target::Dst,
        Target::Dst => Target::Src,
        Target::Edge => Target::Edge,
    }
}

/// The row of `target` that edge `e = (u, v)` reads.
fn row_of(target: Target, u: usize, e: usize, v: usize) -> usize {
    match target {
        Target::Src => u,
        Target::Edge => e,
        Target::Dst => v,
    }
}

impl Exec {
    /// Writes `grad` (`[rows of term.target, term.feat...]`, overwrite) for one term.
    pub(super) fn gradient_term<I: Index>(&self, graph: &Graph<I>, term: &Term<'_>, grad: &mut [f32]) -> Result<()> {
        let p_feat = term.p.map_or(&[][..], |p| p.feat);
        let msg = if term.p.is_some() { broadcast(term.g.feat, p_feat) } else { term.g.feat.to_vec() };
        let rows = target_rows(graph, term.target);
        match classify(term.factor, &msg, term.feat, term.g.feat, p_feat) {
            Reduction::None => self.message_sum(graph, term, term.g.feat, p_feat, false, &msg, grad),
            Reduction::TrailingDot { g_feat, p_feat } => {
                let mut out_feat: Vec<usize> = broadcast(&g_feat[..g_feat.len() - 1], &p_feat[..p_feat.len() - 1]);
                out_feat.push(1);
                self.message_sum(graph, term, &g_feat, &p_feat, true, &out_feat, grad)
            }
            Reduction::General { map } => {
                let feat_len: usize = term.feat.iter().product();
                match (term.target, term.factor, term.g.target) {
                    // An edge gradient of an edge-placed G: reduce G's rows directly.
                    (Target::Edge, Factor::Copy, Target::Edge) => {
                        dense::reduce_rows(term.g.data, &map, grad, feat_len);
                        Ok(())
                    }
                    // Copy of a node-placed G: reduce G per node first, then copy it to edges.
                    (Target::Edge, Factor::Copy, g_target) => {
                        let g_rows = target_rows(graph, g_target);
                        // Line-aligned: the edge pass below gathers these rows at random.
                        let mut reduced = aligned_filled(g_rows * feat_len, 0f32);
                        dense::reduce_rows(term.g.data, &map, &mut reduced, feat_len);
                        let pre = Term {
                            factor: Factor::Copy,
                            g: Placed { target: g_target, data: &reduced, feat: term.feat },
                            p: None,
                            target: Target::Edge,
                            feat: term.feat,
                        };
                        self.message_sum(graph, &pre, term.feat, &[], false, term.feat, grad)
                    }
                    (Target::Edge, _, _) => {
                        fused_edge_reduce(graph, term, &msg, &map, grad);
                        Ok(())
                    }
                    // Node gradients: the full message sum into a node-sized scratch, then reduce.
                    _ => {
                        let msg_len: usize = msg.iter().product();
                        // Line-aligned like any g-SpMM output: full rows are streamed only when aligned.
                        let mut scratch = aligned_filled(rows * msg_len, 0f32);
                        self.message_sum(graph, term, term.g.feat, p_feat, false, &msg, &mut scratch)?;
                        dense::reduce_rows(&scratch, &map, grad, feat_len);
                        Ok(())
                    }
                }
            }
        }
    }

    /// Runs `Σ F(G, P)` onto `term.target` as one g-SDDMM or g-SpMM, viewing
    /// `G`/`P` with the given feature shapes and `out` as `[rows, out_feat]`.
    #[allow(clippy::too_many_arguments)]
    fn message_sum<I: Index>(
        &self,
        graph: &Graph<I>,
        term: &Term<'_>,
        g_feat: &[usize],
        p_feat: &[usize],
        dot: bool,
        out_feat: &[usize],
        out: &mut [f32],
    ) -> Result<()> {
        let op = match (term.factor, dot) {
            (Factor::Copy, _) => BinaryOpKind::CopyLhs,
            (Factor::Mul, true) => BinaryOpKind::Dot,
            (Factor::Mul, false) => BinaryOpKind::Mul,
            (Factor::DivBy, _) => BinaryOpKind::Div,
        };
        let rows = target_rows(graph, term.target);
        let g_shape = with_rows(target_rows(graph, term.g.target), g_feat);
        let g = TensorRef::new(term.g.data, &g_shape)?;
        let p_shape;
        let p = match term.p {
            Some(p) => {
                p_shape = with_rows(target_rows(graph, p.target), p_feat);
                Some(TensorRef::new(p.data, &p_shape)?)
            }
            None => None,
        };
        let p_target = term.p.map_or(Target::Edge, |p| p.target);
        let out_shape = with_rows(rows, out_feat);
        let out = TensorMut::new(out, &out_shape)?;
        match term.target {
            Target::Edge => {
                let spec = SddmmSpec::new(op, term.g.target, p_target);
                self.gsddmm(graph, spec, SddmmIo { lhs: Some(g), rhs: p, out })?;
            }
            Target::Dst => {
                let spec = SpmmSpec::new(op, term.g.target, p_target, ReduceKind::Sum);
                self.gspmm(graph, spec, SpmmIo::new(Some(g), p, out))?;
            }
            Target::Src => {
                let spec = SpmmSpec::new(op, swap_ends(term.g.target), swap_ends(p_target), ReduceKind::Sum);
                self.gspmm(&graph.reverse(), spec, SpmmIo::new(Some(g), p, out))?;
            }
        }
        Ok(())
    }
}

/// An edge gradient whose broadcast is not trailing:
/// `grad[e][map[o]] = Σ_o F(G, P)[o]`, one edge row at a time with an f64
/// accumulator of one operand row per thread.
fn fused_edge_reduce<I: Index>(graph: &Graph<I>, term: &Term<'_>, msg: &[usize], map: &[usize], grad: &mut [f32]) {
    let feat_len: usize = term.feat.iter().product();
    if feat_len == 0 {
        return;
    }
    let p = term.p.expect("a fused edge reduction has a partner operand");
    const BIN: OperandShape = OperandShape { uses_lhs: true, uses_rhs: true, reduces_last_dim: false };
    let plan = BroadcastPlan::new(BIN, term.g.feat, p.feat).expect("validated shapes broadcast");
    debug_assert_eq!(plan.out_shape, msg);
    let (src, dst) = graph.coo();
    let div = term.factor == Factor::DivBy;
    grad.par_chunks_mut(feat_len).enumerate().for_each_init(
        || vec![0f64; feat_len],
        |acc, (e, out)| {
            let (u, v) = (src[e].to_usize(), dst[e].to_usize());
            let g_row = &term.g.data[row_of(term.g.target, u, e, v) * plan.lhs_len..][..plan.lhs_len];
            let p_row = &p.data[row_of(p.target, u, e, v) * plan.rhs_len..][..plan.rhs_len];
            acc.fill(0.0);
            for (o, &m) in map.iter().enumerate() {
                let (gi, pi) = plan.element(o);
                let (a, b) = (f64::from(g_row[gi]), f64::from(p_row[pi]));
                acc[m] += if div { a / b } else { a * b };
            }
            for (x, a) in out.iter_mut().zip(acc.iter()) {
                *x = *a as f32;
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gat_broadcast_is_a_trailing_dot() {
        // grad of a[E,4,1] in x[N,4,8] * a: msg [4,8], operand [4,1].
        match classify(Factor::Mul, &[4, 8], &[4, 1], &[4, 8], &[4, 8]) {
            Reduction::TrailingDot { g_feat, p_feat } => assert_eq!((g_feat, p_feat), (vec![4, 8], vec![4, 8])),
            _ => panic!("expected a trailing dot"),
        }
        // Scalar edge weight against [H,D]: everything reduces.
        match classify(Factor::Mul, &[4, 8], &[1], &[4, 8], &[4, 8]) {
            Reduction::TrailingDot { g_feat, .. } => assert_eq!(g_feat, vec![32]),
            _ => panic!("expected a trailing dot"),
        }
        // A leading broadcast is not trailing.
        assert!(matches!(classify(Factor::Mul, &[4, 8], &[8], &[4, 8], &[4, 8]), Reduction::General { .. }));
        assert!(matches!(classify(Factor::DivBy, &[4, 8], &[4, 1], &[4, 8], &[4, 8]), Reduction::General { .. }));
        assert!(matches!(classify(Factor::Mul, &[4, 8], &[4, 8], &[4, 8], &[4, 1]), Reduction::None));
    }
}
