//! The public op entry points: validate, plan broadcasting, dispatch.
//!
//! Every entry point checks all of its inputs (operand presence, leading
//! sizes, broadcast compatibility, output shape) before any backend runs, so
//! an error never leaves a partly written output. Outputs are written in
//! overwrite mode into caller-provided buffers; the library never allocates
//! an `E × d` message tensor.

mod alloc;
mod grad;
mod validate;

pub use alloc::{Gradients, SpmmGradInputs, SpmmOutput, Wanted};
pub use grad::{SddmmBackwardIo, SpmmBackwardIo};

use crate::backend::{self, BackendChoice, BackendKind, EdgeSoftmaxBackwardCall, EdgeSoftmaxCall, SddmmCall, SpmmCall};
use crate::graph::Graph;
use crate::spec::{SddmmSpec, SpmmSpec};
use crate::tensor::{TensorMut, TensorRef};
use crate::{Index, Result};
use gnnkern_simd::op::{BinaryOp, Reducer, Target};
use gnnkern_simd::{dispatch_binary_op, dispatch_reducer};

/// Inputs and outputs of one g-SpMM.
///
/// `lhs`/`rhs` are the operand tensors (leading dimension: the rows of their
/// target); the one an operator does not read may be `None`. `out` is
/// `[num_dst, out_feat...]`. `arg_u`/`arg_e` (max/min only, optional) have
/// `out`'s element count and receive the source id / edge id of the
/// selected message per output element, `-1` for empty rows.
#[derive(Debug)]
pub struct SpmmIo<'a, I: Index> {
    pub lhs: Option<TensorRef<'a>>,
    pub rhs: Option<TensorRef<'a>>,
    pub out: TensorMut<'a>,
    pub arg_u: Option<&'a mut [I]>,
    pub arg_e: Option<&'a mut [I]>,
}

impl<'a, I: Index> SpmmIo<'a, I> {
    /// Inputs and output, no arg outputs.
    pub fn new(lhs: Option<TensorRef<'a>>, rhs: Option<TensorRef<'a>>, out: TensorMut<'a>) -> Self {
        Self { lhs, rhs, out, arg_u: None, arg_e: None }
    }
}

/// Inputs and output of one g-SDDMM; `out` is `[num_edges, out_feat...]`.
#[derive(Debug)]
pub struct SddmmIo<'a> {
    pub lhs: Option<TensorRef<'a>>,
    pub rhs: Option<TensorRef<'a>>,
    pub out: TensorMut<'a>,
}

/// Runs ops on a chosen backend. `Exec::default()` is `auto`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exec {
    choice: BackendChoice,
}

impl Exec {
    /// Runs on the backend `choice` selects.
    pub fn new(choice: BackendChoice) -> Self {
        Self { choice }
    }

    /// Runs only on `kind`; an unavailable or unsupporting backend is an error.
    pub fn forced(kind: BackendKind) -> Self {
        Self::new(BackendChoice::Forced(kind))
    }

    /// The process-wide default from `GNNKERN_BACKEND` (see [`BackendChoice::from_env`]).
    pub fn from_env() -> Result<Self> {
        BackendChoice::from_env().map(Self::new)
    }

    /// The backend choice.
    pub fn choice(&self) -> BackendChoice {
        self.choice
    }

    /// g-SpMM named by `spec`; returns the backend that ran it.
    pub fn gspmm<I: Index>(&self, graph: &Graph<I>, spec: SpmmSpec, io: SpmmIo<'_, I>) -> Result<BackendKind> {
        dispatch_binary_op!(spec.op, O => dispatch_reducer!(spec.reduce, R => self.gspmm_with::<O, R, I>(graph, spec.lhs, spec.rhs, io)))
    }

    /// g-SpMM with operator and reducer as types — the entry point for
    /// user-defined message functions.
    pub fn gspmm_with<O: BinaryOp, R: Reducer, I: Index>(
        &self,
        graph: &Graph<I>,
        lhs_target: Target,
        rhs_target: Target,
        io: SpmmIo<'_, I>,
    ) -> Result<BackendKind> {
        let SpmmIo { lhs, rhs, mut out, arg_u, arg_e } = io;
        let checked = validate::binary::<O, I>(graph, "g-SpMM", (lhs_target, lhs), (rhs_target, rhs))?;
        validate::output(&format!("g-SpMM {}", O::NAME), &out, graph.num_dst(), &checked.plan.out_shape)?;
        validate::arg_outputs::<R, I>(out.as_ref().data().len(), arg_u.as_deref(), arg_e.as_deref())?;
        let call = SpmmCall {
            graph,
            lhs_target,
            rhs_target,
            plan: &checked.plan,
            lhs: checked.lhs,
            rhs: checked.rhs,
            out: out.data(),
            arg_u,
            arg_e,
        };
        backend::gspmm::<O, R, I>(&self.choice, call)
    }

    /// g-SDDMM named by `spec`; returns the backend that ran it.
    pub fn gsddmm<I: Index>(&self, graph: &Graph<I>, spec: SddmmSpec, io: SddmmIo<'_>) -> Result<BackendKind> {
        dispatch_binary_op!(spec.op, O => self.gsddmm_with::<O, I>(graph, spec.lhs, spec.rhs, io))
    }

    /// g-SDDMM with the operator as a type.
    pub fn gsddmm_with<O: BinaryOp, I: Index>(
        &self,
        graph: &Graph<I>,
        lhs_target: Target,
        rhs_target: Target,
        io: SddmmIo<'_>,
    ) -> Result<BackendKind> {
        let SddmmIo { lhs, rhs, mut out } = io;
        let checked = validate::binary::<O, I>(graph, "g-SDDMM", (lhs_target, lhs), (rhs_target, rhs))?;
        validate::output(&format!("g-SDDMM {}", O::NAME), &out, graph.num_edges(), &checked.plan.out_shape)?;
        let call = SddmmCall {
            graph,
            lhs_target,
            rhs_target,
            plan: &checked.plan,
            lhs: checked.lhs,
            rhs: checked.rhs,
            out: out.data(),
        };
        backend::gsddmm::<O, I>(&self.choice, call)
    }

    /// Softmax of edge `logits` (`[E, feat...]`) over each destination's
    /// in-edges, elementwise per feature, into `out` (same shape). Use
    /// `graph.reverse()` to normalise over each source's out-edges instead.
    pub fn edge_softmax<I: Index>(
        &self,
        graph: &Graph<I>,
        logits: TensorRef<'_>,
        mut out: TensorMut<'_>,
    ) -> Result<BackendKind> {
        validate::edge_tensor("edge_softmax: logits", logits.shape(), graph.num_edges())?;
        validate::same_shape("edge_softmax: output", logits.shape(), out.shape())?;
        let call = EdgeSoftmaxCall { graph, logits: logits.data(), row_len: logits.row_len(), out: out.data() };
        backend::edge_softmax(&self.choice, call)
    }

    /// Gradient of [`Exec::edge_softmax`] w.r.t. the logits, from its output
    /// `out` and the output gradient `grad_out` (all `[E, feat...]`).
    pub fn edge_softmax_backward<I: Index>(
        &self,
        graph: &Graph<I>,
        out: TensorRef<'_>,
        grad_out: TensorRef<'_>,
        mut grad_logits: TensorMut<'_>,
    ) -> Result<BackendKind> {
        validate::edge_tensor("edge_softmax_backward: softmax output", out.shape(), graph.num_edges())?;
        validate::same_shape("edge_softmax_backward: output gradient", out.shape(), grad_out.shape())?;
        validate::same_shape("edge_softmax_backward: logits gradient", out.shape(), grad_logits.shape())?;
        let call = EdgeSoftmaxBackwardCall {
            graph,
            out: out.data(),
            grad_out: grad_out.data(),
            row_len: out.row_len(),
            grad_logits: grad_logits.data(),
        };
        backend::edge_softmax_backward(&self.choice, call)
    }
}
