//! Edge softmax and its backward pass, composed on the device from g-SpMM
//! and g-SDDMM (so split hub rows, windows and the NaN rules come for free):
//!
//! ```text
//! forward   m = max_e→v x_e            g-SpMM  copy_lhs, max   (e operand)
//!           t = exp(x_e − m_v)         g-SDDMM exp_sub         (e, v)
//!           s = Σ_e→v t_e              g-SpMM  copy_lhs, sum   (e)
//!           y = t_e / s_v              g-SDDMM div             (e, v)
//! backward  s = Σ_e→v g_e · y_e        g-SpMM  mul, sum        (e, e)
//!           d = g_e − s_v              g-SDDMM sub             (e, v)
//!           ∂x = d_e · y_e             g-SDDMM mul             (e, e)
//! ```
//!
//! Rows without in-edges produce nothing (they own no edges).

use crate::context::GpuContext;
use crate::error::{GpuError, Result};
use crate::graph::GpuGraph;
use crate::sddmm::{SddmmArgs, plain_plan};
use crate::shader::MessageOp;
use crate::spmm::SpmmArgs;
use crate::tensor::GpuTensor;
use gnnkern_simd::op::{CopyLhs, Div, Mul, ReduceKind, Sub, Target};

impl GpuContext {
    /// Softmax of `logits` (`num_edges × row_len`) over each destination's
    /// in-edges, elementwise per feature, into `out` (same length).
    pub fn edge_softmax(&self, g: &GpuGraph, logits: &GpuTensor, row_len: usize, out: &GpuTensor) -> Result<()> {
        g.check(self)?;
        let e_len = g.num_edges() * row_len;
        logits.check(self, "edge_softmax logits", e_len)?;
        out.check(self, "edge_softmax output", e_len)?;
        if e_len == 0 {
            return Ok(());
        }
        let copy = MessageOp::of::<CopyLhs>()?;
        let div = MessageOp::of::<Div>()?;
        let copy_plan = plain_plan_unary(&copy, row_len)?;
        let bin_plan = plain_plan(&div, row_len)?;
        let v_len = g.num_dst() * row_len;
        let max = self.zeros(v_len)?;
        self.spmm(&SpmmArgs {
            graph: g,
            op: copy,
            reduce: ReduceKind::Max,
            lhs_target: Target::Edge,
            rhs_target: Target::Dst,
            plan: &copy_plan,
            lhs: Some(logits),
            rhs: None,
            out: &max,
            arg: None,
        })?;
        let num = self.zeros(e_len)?;
        self.sddmm(&SddmmArgs {
            graph: g,
            op: MessageOp::EXP_SUB,
            lhs_target: Target::Edge,
            rhs_target: Target::Dst,
            plan: &bin_plan,
            lhs: Some(logits),
            rhs: Some(&max),
            out: &num,
        })?;
        drop(max);
        let den = self.zeros(v_len)?;
        self.spmm(&SpmmArgs {
            graph: g,
            op: copy,
            reduce: ReduceKind::Sum,
            lhs_target: Target::Edge,
            rhs_target: Target::Dst,
            plan: &copy_plan,
            lhs: Some(&num),
            rhs: None,
            out: &den,
            arg: None,
        })?;
        self.sddmm(&SddmmArgs {
            graph: g,
            op: div,
            lhs_target: Target::Edge,
            rhs_target: Target::Dst,
            plan: &bin_plan,
            lhs: Some(&num),
            rhs: Some(&den),
            out,
        })
    }

    /// Gradient of [`GpuContext::edge_softmax`] w.r.t. the logits from its
    /// output `y` and the output gradient `grad_out`:
    /// `grad[e] = y[e] · (g[e] − Σ_{e' into v} g[e']·y[e'])`.
    pub fn edge_softmax_backward(
        &self,
        g: &GpuGraph,
        y: &GpuTensor,
        grad_out: &GpuTensor,
        row_len: usize,
        grad_logits: &GpuTensor,
    ) -> Result<()> {
        g.check(self)?;
        let e_len = g.num_edges() * row_len;
        y.check(self, "edge_softmax_backward output", e_len)?;
        grad_out.check(self, "edge_softmax_backward output gradient", e_len)?;
        grad_logits.check(self, "edge_softmax_backward logits gradient", e_len)?;
        if e_len == 0 {
            return Ok(());
        }
        let mul = MessageOp::of::<Mul>()?;
        let sub = MessageOp::of::<Sub>()?;
        let plan = plain_plan(&mul, row_len)?;
        let dot = self.zeros(g.num_dst() * row_len)?;
        self.spmm(&SpmmArgs {
            graph: g,
            op: mul,
            reduce: ReduceKind::Sum,
            lhs_target: Target::Edge,
            rhs_target: Target::Edge,
            plan: &plan,
            lhs: Some(grad_out),
            rhs: Some(y),
            out: &dot,
            arg: None,
        })?;
        let diff = self.zeros(e_len)?;
        self.sddmm(&SddmmArgs {
            graph: g,
            op: sub,
            lhs_target: Target::Edge,
            rhs_target: Target::Dst,
            plan: &plan,
            lhs: Some(grad_out),
            rhs: Some(&dot),
            out: &diff,
        })?;
        self.sddmm(&SddmmArgs {
            graph: g,
            op: mul,
            lhs_target: Target::Edge,
            rhs_target: Target::Edge,
            plan: &plan,
            lhs: Some(&diff),
            rhs: Some(y),
            out: grad_logits,
        })
    }
}

fn plain_plan_unary(op: &MessageOp, row_len: usize) -> Result<gnnkern_simd::layout::BroadcastPlan> {
    gnnkern_simd::layout::BroadcastPlan::new(op.shape(), &[row_len], &[])
        .map_err(|e| GpuError::InvalidArgument(e.to_string()))
}
