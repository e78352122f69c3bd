//! Backward passes of g-SpMM and g-SDDMM w.r.t. both operands.
//!
//! For an operand `X` on target `t` and upstream gradient `g` (on
//! destinations for g-SpMM, on edges for g-SDDMM), every gradient is
//! DGL's Theorem 1 — a g-SpMM on the reverse graph (`t = u`), a g-SpMM on
//! the graph (`t = v`) or a g-SDDMM (`t = e`) — of one factor:
//!
//! | op       | ∂/∂lhs                 | ∂/∂rhs                          |
//! |----------|------------------------|---------------------------------|
//! | add      | `g`                    | `g`                             |
//! | sub      | `g`                    | `-g`                            |
//! | mul, dot | `g · rhs`              | `g · lhs`                       |
//! | div      | `g / rhs`              | `-(Σ g · lhs) / rhs²`           |
//! | copy_lhs | `g`                    | —                               |
//! | copy_rhs | —                      | `g`                             |
//!
//! summed over the operand's broadcast dimensions (DGL `_reduce_grad`);
//! see [`term`] for how the sum is mapped onto the primitives without an
//! `E × d` message tensor. `mean` is `sum` with `g` scaled by 1/in-degree.
//! `max`/`min` route each output element's gradient to the one message
//! that won, identified by `arg_e` (see [`arg`]).
//!
//! The sum/mean paths run through [`Exec`]'s g-SpMM/g-SDDMM, so every
//! backend runs them (a forced backend that does not support one of the
//! primitive calls reports `Unsupported`; gradients computed before that
//! call may already be written).

mod arg;
mod dense;
mod term;

use self::arg::{ArgBackward, Side};
use self::term::{Factor, Placed, Term};
use super::validate;
use crate::backend::{BackendChoice, target_rows};
use crate::graph::Graph;
use crate::ops::Exec;
use crate::spec::{SddmmSpec, SpmmSpec};
use crate::tensor::{TensorMut, TensorRef, aligned_filled};
use crate::{Error, Index, Result};
use gnnkern_simd::dispatch_binary_op;
use gnnkern_simd::kernels;
use gnnkern_simd::layout::BroadcastPlan;
use gnnkern_simd::op::{BinaryOpKind, ReduceKind, Target};
use rayon::prelude::*;

/// Inputs and gradient outputs of one g-SpMM backward pass.
///
/// `lhs`/`rhs` are the forward operands (each required when the operator
/// reads it), `grad_out` is `[num_dst, out_feat...]`. `arg_e` (max/min only,
/// then required) is the forward pass's arg-edge output. `grad_lhs` /
/// `grad_rhs` have their operand's shape and are written (overwrite) when
/// given; pass `None` for a gradient you do not need.
#[derive(Debug)]
pub struct SpmmBackwardIo<'a, I: Index> {
    pub lhs: Option<TensorRef<'a>>,
    pub rhs: Option<TensorRef<'a>>,
    pub grad_out: TensorRef<'a>,
    pub arg_e: Option<&'a [I]>,
    pub grad_lhs: Option<TensorMut<'a>>,
    pub grad_rhs: Option<TensorMut<'a>>,
}

/// Inputs and gradient outputs of one g-SDDMM backward pass; `grad_out` is
/// `[num_edges, out_feat...]`, the rest as in [`SpmmBackwardIo`].
#[derive(Debug)]
pub struct SddmmBackwardIo<'a> {
    pub lhs: Option<TensorRef<'a>>,
    pub rhs: Option<TensorRef<'a>>,
    pub grad_out: TensorRef<'a>,
    pub grad_lhs: Option<TensorMut<'a>>,
    pub grad_rhs: Option<TensorMut<'a>>,
}

/// The validated pieces shared by both backward passes.
struct Checked<'a> {
    plan: BroadcastPlan,
    lhs: (Target, &'a [f32], &'a [usize]),
    rhs: (Target, &'a [f32], &'a [usize]),
}

/// Operand checks as in the forward pass, plus the gradient outputs.
fn check_operands<'a, I: Index>(
    graph: &Graph<I>,
    family: &str,
    op: BinaryOpKind,
    (lhs_target, lhs): (Target, Option<TensorRef<'a>>),
    (rhs_target, rhs): (Target, Option<TensorRef<'a>>),
    grad_lhs: Option<&TensorMut<'_>>,
    grad_rhs: Option<&TensorMut<'_>>,
) -> Result<Checked<'a>> {
    let checked =
        dispatch_binary_op!(op, O => validate::binary::<O, I>(graph, family, (lhs_target, lhs), (rhs_target, rhs)))?;
    let shape_of = |t: Option<TensorRef<'a>>| t.map_or(&[][..], |t| t.feat_shape());
    for (side, used, operand, grad) in [("lhs", op.uses_lhs(), lhs, grad_lhs), ("rhs", op.uses_rhs(), rhs, grad_rhs)] {
        let Some(grad) = grad else { continue };
        let Some(operand) = operand.filter(|_| used) else {
            return Err(Error::MissingOperand(format!(
                "{family} {}: grad_{side} was given but the operator does not read its {side} operand",
                op.name()
            )));
        };
        validate::same_shape(&format!("{family} {} backward: grad_{side}", op.name()), operand.shape(), grad.shape())?;
    }
    Ok(Checked {
        lhs: (lhs_target, checked.lhs, if op.uses_lhs() { shape_of(lhs) } else { &[] }),
        rhs: (rhs_target, checked.rhs, if op.uses_rhs() { shape_of(rhs) } else { &[] }),
        plan: checked.plan,
    })
}

/// `arg_e` of a max/min g-SpMM: `-1` exactly for destinations without
/// in-edges, otherwise an in-edge of the element's destination.
///
/// Checked in parallel, destinations in tasks of [`CHECK_ROWS_PER_TASK`], by
/// a vector screen (`gnnkern_simd::kernels::first_bad_arg_row`: each
/// element compared with its destination's in-edge ids, or for hubs its
/// edge's destination looked up at random); only a bad row is checked
/// element by element, for the error. The error names the first bad
/// element in memory order whatever the thread count (`find_map_first`).
fn check_arg_e<I: Index>(graph: &Graph<I>, arg_e: &[I], out_len: usize) -> Result<()> {
    let expected = graph.num_dst() * out_len;
    if arg_e.len() != expected {
        return Err(Error::LengthMismatch { what: "arg_e", expected, actual: arg_e.len() });
    }
    if out_len == 0 {
        return Ok(());
    }
    let dst = graph.coo().1;
    let csr = graph.in_csr();
    let bad = |position: usize, value: I, problem: String| Error::BadArg {
        what: "arg_e",
        position,
        value: value.to_i64(),
        problem,
    };
    let check_row = |v: usize, row: &[I]| {
        let empty = csr.row_range(v).is_empty();
        row.iter().enumerate().find_map(|(o, &e)| {
            let position = v * out_len + o;
            if e == I::NONE {
                (!empty).then(|| bad(position, e, format!("but destination {v} has in-edges")))
            } else if e.to_usize() >= graph.num_edges() {
                Some(bad(position, e, format!("is not an edge id (0..{})", graph.num_edges())))
            } else if dst[e.to_usize()].to_usize() != v {
                Some(bad(position, e, format!("is not an in-edge of destination {v}")))
            } else {
                None
            }
        })
    };
    let first_bad = arg_e.par_chunks(CHECK_ROWS_PER_TASK * out_len).enumerate().find_map_first(|(task, rows)| {
        let first = task * CHECK_ROWS_PER_TASK;
        let rows = first..first + rows.len() / out_len;
        // The vector screen finds the first bad row; the element-by-element
        // check words the error from there on.
        match kernels::first_bad_arg_row(csr.view(), dst, arg_e, out_len, rows.clone()) {
            Ok(None) => None,
            Ok(Some(bad)) => (bad..rows.end).find_map(|v| check_row(v, &arg_e[v * out_len..(v + 1) * out_len])),
            // Not reached: the rows are whole rows of `arg_e`, whose length is checked above.
            Err(e) => Some(Error::from(e)),
        }
    });
    first_bad.map_or(Ok(()), Err)
}

/// Destinations per task of [`check_arg_e`] (a few thousand lookups).
const CHECK_ROWS_PER_TASK: usize = 64;

/// One requested gradient, ready to run.
struct Request<'a, 'b> {
    side: Side,
    grad: TensorMut<'b>,
    /// The differentiated operand and its partner.
    this: (Target, &'a [f32], &'a [usize]),
    other: (Target, &'a [f32], &'a [usize]),
}

impl Exec {
    /// Gradients of the g-SpMM `spec` w.r.t. its operands (see [`SpmmBackwardIo`]).
    ///
    /// All inputs are checked before anything is written: operands as in
    /// [`Exec::gspmm`], `grad_out` against the forward output shape, each
    /// gradient against its operand's shape, and for max/min `arg_e` (length
    /// and that every id is an in-edge of its destination).
    ///
    /// ```
    /// use gnnkern::{Exec, Graph, SpmmBackwardIo, SpmmSpec, Tensor};
    /// // out[2] = x[0] * w[0] + x[1] * w[1] (u_mul_e_sum on edges 0->2, 1->2).
    /// let g = Graph::<i32>::from_coo(3, 3, vec![0, 1], vec![2, 2]).unwrap();
    /// let x = Tensor::from_vec(vec![1.0, 2.0, 3.0], vec![3, 1]).unwrap();
    /// let w = Tensor::from_vec(vec![10.0, 20.0], vec![2, 1]).unwrap();
    /// let grad_out = Tensor::from_vec(vec![0.0, 0.0, 1.0], vec![3, 1]).unwrap();
    /// let (mut grad_x, mut grad_w) = (Tensor::zeros(&[3, 1]).unwrap(), Tensor::zeros(&[2, 1]).unwrap());
    /// let io = SpmmBackwardIo {
    ///     lhs: Some(x.view()),
    ///     rhs: Some(w.view()),
    ///     grad_out: grad_out.view(),
    ///     arg_e: None,
    ///     grad_lhs: Some(grad_x.view_mut()),
    ///     grad_rhs: Some(grad_w.view_mut()),
    /// };
    /// Exec::default().gspmm_backward(&g, SpmmSpec::from_name("u_mul_e_sum").unwrap(), io).unwrap();
    /// assert_eq!(grad_x.data(), &[10.0, 20.0, 0.0]); // Σ over out-edges of w · g[dst]
    /// assert_eq!(grad_w.data(), &[1.0, 2.0]); // x[src] · g[dst]
    /// ```
    pub fn gspmm_backward<I: Index>(&self, graph: &Graph<I>, spec: SpmmSpec, io: SpmmBackwardIo<'_, I>) -> Result<()> {
        let SpmmBackwardIo { lhs, rhs, grad_out, arg_e, grad_lhs, grad_rhs } = io;
        let family = "g-SpMM";
        let checked = check_operands(
            graph,
            family,
            spec.op,
            (spec.lhs, lhs),
            (spec.rhs, rhs),
            grad_lhs.as_ref(),
            grad_rhs.as_ref(),
        )?;
        validate::tensor_shape(
            &format!("g-SpMM {} backward: grad_out", spec.name()),
            grad_out.shape(),
            graph.num_dst(),
            &checked.plan.out_shape,
        )?;
        let wants_grad = grad_lhs.is_some() || grad_rhs.is_some();
        match (spec.reduce.has_arg(), arg_e) {
            (true, Some(a)) => check_arg_e(graph, a, checked.plan.out_len)?,
            (true, None) if wants_grad => {
                return Err(Error::MissingOperand(format!(
                    "g-SpMM {} backward needs the forward pass's arg_e output",
                    spec.name()
                )));
            }
            (false, Some(_)) => {
                return Err(Error::MissingOperand(format!(
                    "arg_e was given but reducer {} has no arg output",
                    spec.reduce.name()
                )));
            }
            _ => {}
        }
        self.check_backend()?;

        let requests = requests(&checked, grad_lhs, grad_rhs);
        if let (true, Some(arg_e)) = (spec.reduce.has_arg(), arg_e) {
            let pass = ArgBackward {
                graph,
                op: spec.op,
                plan: &checked.plan,
                lhs: (checked.lhs.0, checked.lhs.1),
                rhs: (checked.rhs.0, checked.rhs.1),
                grad_out: grad_out.data(),
                arg_e,
            };
            // What `backend::simd::last_pass` reports: the source gradient's
            // kernel if a copy-like one ran, else nothing.
            crate::backend::simd::note_pass_kind(None);
            for mut r in requests {
                pass.run(r.side, r.grad.data())?;
            }
            return Ok(());
        }
        // Mean: the upstream gradient of every edge into v is g[v] / deg(v).
        let scaled;
        let g = if spec.reduce == ReduceKind::Mean {
            let inv: Vec<f32> =
                graph.in_degrees().into_iter().map(|d| if d == 0 { 0.0 } else { (1.0 / d as f64) as f32 }).collect();
            // Line-aligned: the reverse-graph pull gathers these rows at random.
            let mut s = aligned_filled(grad_out.data().len(), 0f32);
            dense::scale_rows(grad_out.data(), &inv, &mut s, checked.plan.out_len);
            scaled = s;
            &scaled[..]
        } else {
            grad_out.data()
        };
        for r in requests {
            self.sum_gradient(
                graph,
                spec.op,
                Placed { target: Target::Dst, data: g, feat: &checked.plan.out_shape },
                r,
            )?;
        }
        Ok(())
    }

    /// Gradients of the g-SDDMM `spec` w.r.t. its operands (see [`SddmmBackwardIo`]).
    ///
    /// All inputs are checked before anything is written, as in
    /// [`Exec::gspmm_backward`].
    pub fn gsddmm_backward<I: Index>(&self, graph: &Graph<I>, spec: SddmmSpec, io: SddmmBackwardIo<'_>) -> Result<()> {
        let SddmmBackwardIo { lhs, rhs, grad_out, grad_lhs, grad_rhs } = io;
        let checked = check_operands(
            graph,
            "g-SDDMM",
            spec.op,
            (spec.lhs, lhs),
            (spec.rhs, rhs),
            grad_lhs.as_ref(),
            grad_rhs.as_ref(),
        )?;
        validate::tensor_shape(
            &format!("g-SDDMM {} backward: grad_out", spec.name()),
            grad_out.shape(),
            graph.num_edges(),
            &checked.plan.out_shape,
        )?;
        self.check_backend()?;
        let g = Placed { target: Target::Edge, data: grad_out.data(), feat: &checked.plan.out_shape };
        for r in requests(&checked, grad_lhs, grad_rhs) {
            self.sum_gradient(graph, spec.op, g, r)?;
        }
        Ok(())
    }

    /// A forced backend must be available before any gradient is written.
    fn check_backend(&self) -> Result<()> {
        match self.choice() {
            BackendChoice::Forced(kind) => kind.availability(),
            BackendChoice::Auto => Ok(()),
        }
    }

    /// One gradient of a sum-reduced (or edge-wise) message: the factor of
    /// the table in the module docs, run as one [`Term`], then post-scaled.
    fn sum_gradient<I: Index>(
        &self,
        graph: &Graph<I>,
        op: BinaryOpKind,
        g: Placed<'_>,
        mut r: Request<'_, '_>,
    ) -> Result<()> {
        let partner = Placed { target: r.other.0, data: r.other.1, feat: r.other.2 };
        let (factor, p) = match (op, r.side) {
            (BinaryOpKind::Add | BinaryOpKind::Sub | BinaryOpKind::CopyLhs | BinaryOpKind::CopyRhs, _) => {
                (Factor::Copy, None)
            }
            (BinaryOpKind::Mul | BinaryOpKind::Dot, _) | (BinaryOpKind::Div, Side::Rhs) => (Factor::Mul, Some(partner)),
            (BinaryOpKind::Div, Side::Lhs) => (Factor::DivBy, Some(partner)),
        };
        let term = Term { factor, g, p, target: r.this.0, feat: r.this.2 };
        let grad = r.grad.data();
        self.gradient_term(graph, &term, grad)?;
        match (op, r.side) {
            (BinaryOpKind::Sub, Side::Rhs) => dense::negate(grad),
            (BinaryOpKind::Div, Side::Rhs) => {
                let len: usize = r.this.2.iter().product();
                match r.this.0 {
                    Target::Edge => dense::div_rhs_post(grad, r.this.1, len, |_| 1),
                    Target::Src => {
                        let csr = graph.out_csr();
                        dense::div_rhs_post(grad, r.this.1, len, |x| csr.row_range(x).len())
                    }
                    Target::Dst => {
                        let csr = graph.in_csr();
                        dense::div_rhs_post(grad, r.this.1, len, |x| csr.row_range(x).len())
                    }
                }
            }
            _ => {}
        }
        debug_assert_eq!(grad.len(), target_rows(graph, r.this.0) * r.this.2.iter().product::<usize>());
        Ok(())
    }
}

fn requests<'a, 'b>(
    checked: &Checked<'a>,
    grad_lhs: Option<TensorMut<'b>>,
    grad_rhs: Option<TensorMut<'b>>,
) -> Vec<Request<'a, 'b>> {
    let mut out = Vec::with_capacity(2);
    if let Some(grad) = grad_lhs {
        out.push(Request { side: Side::Lhs, grad, this: checked.lhs, other: checked.rhs });
    }
    if let Some(grad) = grad_rhs {
        out.push(Request { side: Side::Rhs, grad, this: checked.rhs, other: checked.lhs });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A graph of 300 destinations, destination `v` with in-edges `2v` and
    /// `2v + 1` (sources `v` and `v + 1`), and its valid `arg_e` at `d = 3`.
    fn pairs() -> (Graph<i32>, Vec<i32>) {
        let n = 300;
        let src = (0..n).flat_map(|v| [v, v + 1]).collect();
        let dst = (0..n).flat_map(|v| [v, v]).collect();
        let graph = Graph::from_coo(n as usize + 1, n as usize, src, dst).unwrap();
        let arg_e = (0..n).flat_map(|v| [2 * v, 2 * v + 1, 2 * v]).collect();
        (graph, arg_e)
    }

    /// The parallel check reports the first bad element in memory order,
    /// though a later task may find its own bad element first.
    #[test]
    fn the_arg_check_names_the_first_bad_element() {
        let (graph, mut arg_e) = pairs();
        check_arg_e(&graph, &arg_e, 3).unwrap();
        // Destination 250 (a later task) names an edge into 249.
        arg_e[250 * 3 + 2] = 2 * 249;
        let late = check_arg_e(&graph, &arg_e, 3).unwrap_err();
        assert!(matches!(late, Error::BadArg { position: 752, value: 498, .. }), "{late:?}");
        // Destination 10 names an edge id past the graph's.
        arg_e[10 * 3 + 1] = 600;
        for _ in 0..20 {
            let first = check_arg_e(&graph, &arg_e, 3).unwrap_err();
            assert!(matches!(first, Error::BadArg { position: 31, value: 600, .. }), "{first:?}");
        }
    }
}
