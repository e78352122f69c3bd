//! Allocating convenience wrappers: each sizes its outputs from the
//! validated shapes, allocates them and runs the overwrite-mode entry point.

use super::grad::{SddmmBackwardIo, SpmmBackwardIo};
use super::{Exec, SddmmIo, SpmmIo, validate};
use crate::backend::BackendKind;
use crate::graph::Graph;
use crate::spec::{SddmmSpec, SpmmSpec};
use crate::tensor::{Tensor, TensorRef};
use crate::{Error, Index, Result};
use gnnkern_simd::dispatch_binary_op;

/// The result of [`Exec::gspmm_alloc`].
#[derive(Clone, Debug, PartialEq)]
pub struct SpmmOutput<I: Index> {
    /// `[num_dst, out_feat...]`.
    pub out: Tensor,
    /// Source id of each output element's message (max/min only; -1 for empty rows).
    pub arg_u: Option<Vec<I>>,
    /// Edge id of each output element's message (max/min only; -1 for empty rows).
    pub arg_e: Option<Vec<I>>,
    /// The backend that ran the op.
    pub backend: BackendKind,
}

/// Which operand gradients an allocating backward pass computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wanted {
    pub lhs: bool,
    pub rhs: bool,
}

impl Wanted {
    /// Both operands' gradients (only those the operator reads are computed).
    pub const BOTH: Wanted = Wanted { lhs: true, rhs: true };
}

/// The inputs of [`Exec::gspmm_backward_alloc`] (see [`SpmmBackwardIo`]).
#[derive(Clone, Copy, Debug)]
pub struct SpmmGradInputs<'a, I: Index> {
    pub lhs: Option<TensorRef<'a>>,
    pub rhs: Option<TensorRef<'a>>,
    pub grad_out: TensorRef<'a>,
    /// The forward pass's arg-edge output (max/min only).
    pub arg_e: Option<&'a [I]>,
}

/// Gradients returned by the allocating backward passes; `None` where not
/// wanted or where the operator does not read the operand.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gradients {
    pub lhs: Option<Tensor>,
    pub rhs: Option<Tensor>,
}

fn out_shape(rows: usize, feat: &[usize]) -> Vec<usize> {
    let mut s = vec![rows];
    s.extend_from_slice(feat);
    s
}

/// A zero tensor shaped like `operand` when its gradient is wanted and the operator reads it.
fn grad_buffer(wanted: bool, used: bool, operand: Option<TensorRef<'_>>, side: &str) -> Result<Option<Tensor>> {
    match (wanted && used, operand) {
        (false, _) => Ok(None),
        (true, Some(t)) => Tensor::zeros(t.shape()).map(Some),
        (true, None) => {
            Err(Error::MissingOperand(format!("the {side} gradient was requested but no {side} operand was given")))
        }
    }
}

impl Exec {
    /// g-SpMM into freshly allocated outputs; max/min also return both arg outputs.
    pub fn gspmm_alloc<I: Index>(
        &self,
        graph: &Graph<I>,
        spec: SpmmSpec,
        lhs: Option<TensorRef<'_>>,
        rhs: Option<TensorRef<'_>>,
    ) -> Result<SpmmOutput<I>> {
        let checked = dispatch_binary_op!(spec.op, O => validate::binary::<O, I>(graph, "g-SpMM", (spec.lhs, lhs), (spec.rhs, rhs)))?;
        let mut out = Tensor::zeros(&out_shape(graph.num_dst(), &checked.plan.out_shape))?;
        let (mut arg_u, mut arg_e) = if spec.reduce.has_arg() {
            (Some(vec![I::NONE; out.data().len()]), Some(vec![I::NONE; out.data().len()]))
        } else {
            (None, None)
        };
        let io = SpmmIo { lhs, rhs, out: out.view_mut(), arg_u: arg_u.as_deref_mut(), arg_e: arg_e.as_deref_mut() };
        let backend = self.gspmm(graph, spec, io)?;
        Ok(SpmmOutput { out, arg_u, arg_e, backend })
    }

    /// g-SDDMM into a freshly allocated `[num_edges, out_feat...]` tensor.
    pub fn gsddmm_alloc<I: Index>(
        &self,
        graph: &Graph<I>,
        spec: SddmmSpec,
        lhs: Option<TensorRef<'_>>,
        rhs: Option<TensorRef<'_>>,
    ) -> Result<Tensor> {
        let checked = dispatch_binary_op!(spec.op, O => validate::binary::<O, I>(graph, "g-SDDMM", (spec.lhs, lhs), (spec.rhs, rhs)))?;
        let mut out = Tensor::zeros(&out_shape(graph.num_edges(), &checked.plan.out_shape))?;
        self.gsddmm(graph, spec, SddmmIo { lhs, rhs, out: out.view_mut() })?;
        Ok(out)
    }

    /// [`Exec::edge_softmax`] into a freshly allocated tensor shaped like `logits`.
    pub fn edge_softmax_alloc<I: Index>(&self, graph: &Graph<I>, logits: TensorRef<'_>) -> Result<Tensor> {
        let mut out = Tensor::zeros(logits.shape())?;
        self.edge_softmax(graph, logits, out.view_mut())?;
        Ok(out)
    }

    /// [`Exec::edge_softmax_backward`] into a freshly allocated tensor.
    pub fn edge_softmax_backward_alloc<I: Index>(
        &self,
        graph: &Graph<I>,
        out: TensorRef<'_>,
        grad_out: TensorRef<'_>,
    ) -> Result<Tensor> {
        let mut grad = Tensor::zeros(out.shape())?;
        self.edge_softmax_backward(graph, out, grad_out, grad.view_mut())?;
        Ok(grad)
    }

    /// [`Exec::gspmm_backward`] into freshly allocated gradients.
    pub fn gspmm_backward_alloc<I: Index>(
        &self,
        graph: &Graph<I>,
        spec: SpmmSpec,
        inputs: SpmmGradInputs<'_, I>,
        wanted: Wanted,
    ) -> Result<Gradients> {
        let SpmmGradInputs { lhs, rhs, grad_out, arg_e } = inputs;
        let mut gl = grad_buffer(wanted.lhs, spec.op.uses_lhs(), lhs, "lhs")?;
        let mut gr = grad_buffer(wanted.rhs, spec.op.uses_rhs(), rhs, "rhs")?;
        let io = SpmmBackwardIo {
            lhs,
            rhs,
            grad_out,
            arg_e,
            grad_lhs: gl.as_mut().map(Tensor::view_mut),
            grad_rhs: gr.as_mut().map(Tensor::view_mut),
        };
        self.gspmm_backward(graph, spec, io)?;
        Ok(Gradients { lhs: gl, rhs: gr })
    }

    /// [`Exec::gsddmm_backward`] into freshly allocated gradients.
    pub fn gsddmm_backward_alloc<I: Index>(
        &self,
        graph: &Graph<I>,
        spec: SddmmSpec,
        lhs: Option<TensorRef<'_>>,
        rhs: Option<TensorRef<'_>>,
        grad_out: TensorRef<'_>,
        wanted: Wanted,
    ) -> Result<Gradients> {
        let mut gl = grad_buffer(wanted.lhs, spec.op.uses_lhs(), lhs, "lhs")?;
        let mut gr = grad_buffer(wanted.rhs, spec.op.uses_rhs(), rhs, "rhs")?;
        let io = SddmmBackwardIo {
            lhs,
            rhs,
            grad_out,
            grad_lhs: gl.as_mut().map(Tensor::view_mut),
            grad_rhs: gr.as_mut().map(Tensor::view_mut),
        };
        self.gsddmm_backward(graph, spec, io)?;
        Ok(Gradients { lhs: gl, rhs: gr })
    }
}
