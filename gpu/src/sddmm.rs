//! g-SDDMM on the device: edge-parallel, one thread per output element, or
//! one workgroup per edge with a tree reduction for `dot`.

use crate::context::GpuContext;
use crate::error::{GpuError, Result};
use crate::graph::GpuGraph;
use crate::plan;
use crate::shader::{Kernel, MessageOp, SddParams, WG, target_code};
use crate::spmm::{bind_operand, contig_bits, fits_u32, operand, operand_windows, runs_buffer, window_cap};
use crate::tensor::GpuTensor;
use gnnkern_simd::layout::BroadcastPlan;
use gnnkern_simd::op::{ReduceKind, Target};

/// One g-SDDMM on device tensors: `out[e] = φ(lhs[a(e)], rhs[b(e)])`, `out`
/// holding `num_edges × plan.out_len` elements.
pub struct SddmmArgs<'a> {
    pub graph: &'a GpuGraph,
    pub op: MessageOp,
    pub lhs_target: Target,
    pub rhs_target: Target,
    pub plan: &'a BroadcastPlan,
    pub lhs: Option<&'a GpuTensor>,
    pub rhs: Option<&'a GpuTensor>,
    pub out: &'a GpuTensor,
}

impl GpuContext {
    /// Runs a g-SDDMM on device tensors (see [`SddmmArgs`]); waits for completion.
    pub fn sddmm(&self, a: &SddmmArgs<'_>) -> Result<()> {
        let (g, plan) = (a.graph, a.plan);
        g.check(self)?;
        let lhs = operand(self, g, "lhs", a.op.uses_lhs, a.lhs, a.lhs_target, plan.lhs_len)?;
        let rhs = operand(self, g, "rhs", a.op.uses_rhs, a.rhs, a.rhs_target, plan.rhs_len)?;
        let out_len = plan.out_len;
        let e_total = g.num_edges;
        a.out.check(self, "g-SDDMM output", e_total * out_len)?;
        if out_len == 0 || e_total == 0 {
            return Ok(());
        }
        fits_u32("g-SDDMM output", e_total * out_len)?;
        let dot = a.op.reduces_last_dim;
        let kernel = if dot { Kernel::SddmmDot } else { Kernel::Sddmm };
        // The reducer does not shape SDDMM kernels; Sum keeps one cache entry per op.
        let (pipe, layout) = self.pipeline(kernel, &a.op, ReduceKind::Sum)?;
        let (runs, runs_words) = runs_buffer(self, plan)?;
        let cap = window_cap(self)?;
        let edge_len =
            |o: Option<crate::spmm::Operand<'_>>| o.filter(|o| o.target == Target::Edge).map_or(0, |o| o.len);
        let edge_words = out_len.max(2).max(edge_len(lhs)).max(edge_len(rhs));
        let blocks = plan::item_windows("edge", e_total, edge_words, cap)?;
        let lhs_windows = operand_windows(lhs, Target::Edge, cap)?;
        let rhs_windows = operand_windows(rhs, Target::Edge, cap)?;
        let (runs_bind, _) = self.window(&runs, runs_words, 0, runs_words)?;
        let params = SddParams {
            lhs_target: target_code(a.lhs_target),
            rhs_target: target_code(a.rhs_target),
            out_len: out_len as u32,
            lhs_len: plan.lhs_len as u32,
            rhs_len: plan.rhs_len as u32,
            run_len: plan.run_len.max(1) as u32,
            reduce_len: plan.reduce_len as u32,
            contig: contig_bits(plan),
            ..Default::default()
        };
        self.scoped("g-SDDMM", || {
            let mut enc = self.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            for b in &blocks {
                let whole = [b.clone()];
                let lw = lhs_windows.as_deref().unwrap_or(&whole);
                let rw = rhs_windows.as_deref().unwrap_or(&whole);
                let (coo, coo_base) = self.window(&g.coo, 2 * e_total, 2 * b.start, 2 * b.end)?;
                let (out, out_base) =
                    self.window(&a.out.buffer, e_total * out_len, b.start * out_len, b.end * out_len)?;
                for l in lw {
                    for r in rw {
                        let (lb, lhs_base, lhs_lo, lhs_hi) = bind_operand(self, lhs, l)?;
                        let (rb, rhs_base, rhs_lo, rhs_hi) = bind_operand(self, rhs, r)?;
                        let p = SddParams {
                            n_items: b.len() as u32,
                            e_first: b.start as u32,
                            coo_base,
                            out_base,
                            lhs_base,
                            rhs_base,
                            lhs_lo,
                            lhs_hi,
                            rhs_lo,
                            rhs_hi,
                            ..params
                        };
                        let groups =
                            if dot { b.len() as u64 } else { (b.len() * out_len).div_ceil(WG as usize) as u64 };
                        self.dispatch(
                            &mut enc,
                            &pipe,
                            &layout,
                            bytemuck::bytes_of(&p),
                            &[runs_bind, coo, lb, rb, out],
                            groups,
                        )?;
                    }
                }
            }
            self.queue().submit([enc.finish()]);
            Ok(())
        })
    }
}

/// Checks a plan against an operator: a plain helper for composed kernels.
pub(crate) fn plain_plan(op: &MessageOp, row_len: usize) -> Result<BroadcastPlan> {
    let shape = [row_len];
    BroadcastPlan::new(op.shape(), &shape, &shape).map_err(|e| GpuError::InvalidArgument(e.to_string()))
}
