//! g-SpMM on the device: segment-parallel accumulate, row-parallel finalize
//! (see the crate docs for the scheme and [`crate::plan`] for chunking).

use crate::context::{Binding, GpuContext};
use crate::error::{GpuError, Result};
use crate::graph::GpuGraph;
use crate::plan::{self, BlockCosts};
use crate::shader::{self, AccParams, FinParams, Kernel, MessageOp, target_code};
use crate::tensor::{GpuIds, GpuTensor};
use gnnkern_simd::layout::BroadcastPlan;
use gnnkern_simd::op::{ReduceKind, Target};
use std::ops::Range;

/// One g-SpMM on device tensors: `out[v] = ρ(φ(lhs[a(e)], rhs[b(e)]))`.
///
/// Operands hold `rows(target) × plan.lhs_len` (resp. `rhs_len`) elements;
/// one the operator does not read may be `None`. `out` holds
/// `num_dst × plan.out_len`; `arg` (max/min only) receives the
/// (source, edge) pair of each selected message, `-1` for empty rows.
pub struct SpmmArgs<'a> {
    pub graph: &'a GpuGraph,
    pub op: MessageOp,
    pub reduce: ReduceKind,
    pub lhs_target: Target,
    pub rhs_target: Target,
    pub plan: &'a BroadcastPlan,
    pub lhs: Option<&'a GpuTensor>,
    pub rhs: Option<&'a GpuTensor>,
    pub out: &'a GpuTensor,
    pub arg: Option<&'a GpuIds>,
}

/// Rows of the operand tensor a target reads.
pub(crate) fn target_rows(g: &GpuGraph, t: Target) -> usize {
    match t {
        Target::Src => g.num_src,
        Target::Edge => g.num_edges,
        Target::Dst => g.num_dst,
    }
}

/// A used operand: its tensor, row length and target.
#[derive(Clone, Copy)]
pub(crate) struct Operand<'a> {
    pub tensor: &'a GpuTensor,
    pub len: usize,
    pub target: Target,
}

/// Checks presence and length of an operand the operator reads.
pub(crate) fn operand<'a>(
    ctx: &GpuContext,
    g: &GpuGraph,
    side: &str,
    used: bool,
    tensor: Option<&'a GpuTensor>,
    target: Target,
    len: usize,
) -> Result<Option<Operand<'a>>> {
    if !used {
        return Ok(None);
    }
    let t = tensor.ok_or_else(|| GpuError::InvalidArgument(format!("the operator reads {side} but none was given")))?;
    let rows = target_rows(g, target);
    t.check(ctx, side, rows * len)?;
    fits_u32(side, rows * len)?;
    Ok(Some(Operand { tensor: t, len, target }))
}

/// Shader index arithmetic is 32-bit: every array must have < 2^32 words.
pub(crate) fn fits_u32(what: &str, words: usize) -> Result<()> {
    if words > u32::MAX as usize {
        return Err(GpuError::Unsupported(format!("{what} has {words} words; device indices are 32-bit")));
    }
    Ok(())
}

/// Usable bytes per binding window (the aligned-down start costs up to one alignment).
pub(crate) fn window_cap(ctx: &GpuContext) -> Result<u64> {
    let cap = ctx.max_binding_bytes().saturating_sub(ctx.offset_align());
    if cap < 64 {
        return Err(GpuError::Unsupported(format!(
            "max storage binding {} bytes leaves no room after the {}-byte offset alignment",
            ctx.max_binding_bytes(),
            ctx.offset_align()
        )));
    }
    Ok(cap)
}

/// The row windows a gathered operand is processed in; a block-indexed one
/// (`block_target`) uses the block's own range.
pub(crate) fn operand_windows(
    op: Option<Operand<'_>>,
    block_target: Target,
    cap: u64,
) -> Result<Option<Vec<Range<usize>>>> {
    match op {
        Some(o) if o.target != block_target => {
            let rows = o.tensor.len() / o.len.max(1);
            plan::item_windows("operand", rows, o.len, cap).map(Some)
        }
        _ => Ok(None),
    }
}

/// Binds rows `rows` of an operand (or the placeholder) and returns the
/// binding, its word base and the row filter bounds.
pub(crate) fn bind_operand<'a>(
    ctx: &'a GpuContext,
    op: Option<Operand<'a>>,
    rows: &Range<usize>,
) -> Result<(Binding<'a>, u32, u32, u32)> {
    match op {
        Some(o) => {
            let (b, base) = ctx.window(&o.tensor.buffer, o.tensor.len(), rows.start * o.len, rows.end * o.len)?;
            Ok((b, base, rows.start as u32, rows.end as u32))
        }
        None => Ok((ctx.unused(), 0, 0, u32::MAX)),
    }
}

pub(crate) fn runs_buffer(ctx: &GpuContext, plan: &BroadcastPlan) -> Result<(wgpu::Buffer, usize)> {
    let runs: Vec<u32> = plan.runs.iter().flat_map(|r| [r.out as u32, r.lhs as u32, r.rhs as u32]).collect();
    if runs.len() as u64 * 4 > ctx.max_binding_bytes() {
        return Err(GpuError::Unsupported(format!("broadcast plan with {} runs exceeds one binding", plan.runs.len())));
    }
    Ok((ctx.storage_init("gnnkern runs", bytemuck::cast_slice(&runs))?, runs.len()))
}

pub(crate) fn contig_bits(plan: &BroadcastPlan) -> u32 {
    u32::from(plan.lhs_contiguous) | (u32::from(plan.rhs_contiguous) << 1)
}

impl GpuContext {
    /// Runs a g-SpMM on device tensors (see [`SpmmArgs`]); waits for completion.
    pub fn spmm(&self, a: &SpmmArgs<'_>) -> Result<()> {
        let (g, plan, reduce) = (a.graph, a.plan, a.reduce);
        g.check(self)?;
        let lhs = operand(self, g, "lhs", a.op.uses_lhs, a.lhs, a.lhs_target, plan.lhs_len)?;
        let rhs = operand(self, g, "rhs", a.op.uses_rhs, a.rhs, a.rhs_target, plan.rhs_len)?;
        let out_len = plan.out_len;
        a.out.check(self, "g-SpMM output", g.num_dst * out_len)?;
        if let Some(arg) = a.arg {
            if !reduce.has_arg() {
                return Err(GpuError::InvalidArgument(format!("reducer {} has no arg output", reduce.name())));
            }
            arg.check(self, g.num_dst * out_len)?;
        }
        if out_len == 0 || g.num_dst == 0 {
            return Ok(());
        }
        let pstride = shader::pstride(reduce) as usize;
        let num_segs = g.num_segments();
        fits_u32("g-SpMM arg output", 2 * g.num_dst * out_len)?;
        fits_u32("g-SpMM partial results", num_segs * out_len * pstride)?;

        let (acc_pipe, acc_layout) = self.pipeline(Kernel::SpmmAccumulate, &a.op, reduce)?;
        let (fin_pipe, fin_layout) = self.pipeline(Kernel::SpmmFinalize, &a.op, reduce)?;
        let (runs, runs_words) = runs_buffer(self, plan)?;
        let cap = window_cap(self)?;
        let dst_len = |o: Option<Operand<'_>>| o.filter(|o| o.target == Target::Dst).map_or(0, |o| o.len);
        let arg_words = if a.arg.is_some() { 2 * out_len } else { out_len };
        let costs = BlockCosts {
            row_words: arg_words.max(dst_len(lhs)).max(dst_len(rhs)).max(1),
            seg_words: (out_len * pstride).max(3),
            slot_words: 2,
        };
        let blocks = plan::spmm_blocks(&g.host_row_ptr, &g.host_row_seg, costs, cap)?;
        let lhs_windows = operand_windows(lhs, Target::Dst, cap)?;
        let rhs_windows = operand_windows(rhs, Target::Dst, cap)?;
        let part_words = num_segs * out_len * pstride;
        let partials = self.storage_zeroed("gnnkern g-SpMM partials", part_words)?;
        let (runs_bind, _) = self.window(&runs, runs_words, 0, runs_words)?;
        let params = AccParams {
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
        log::trace!("g-SpMM {}:{} on {} blocks", a.op.name, reduce.name(), blocks.len());

        self.scoped("g-SpMM", || {
            let mut enc = self.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            for b in &blocks {
                let whole = [b.rows.clone()];
                let lw = lhs_windows.as_deref().unwrap_or(&whole);
                let rw = rhs_windows.as_deref().unwrap_or(&whole);
                let (nbr, nbr_base) = self.window(&g.nbr, 2 * g.num_edges, 2 * b.slots.start, 2 * b.slots.end)?;
                let (part, part_base) = self.window(
                    &partials,
                    part_words,
                    b.segs.start * out_len * pstride,
                    b.segs.end * out_len * pstride,
                )?;
                if !b.segs.is_empty() {
                    let (segs, seg_base) = self.window(&g.segs, 3 * num_segs, 3 * b.segs.start, 3 * b.segs.end)?;
                    let mut merge = 0;
                    for l in lw {
                        for r in rw {
                            let (lb, lhs_base, lhs_lo, lhs_hi) = bind_operand(self, lhs, l)?;
                            let (rb, rhs_base, rhs_lo, rhs_hi) = bind_operand(self, rhs, r)?;
                            let p = AccParams {
                                n_items: b.segs.len() as u32,
                                seg_first: b.segs.start as u32,
                                seg_base,
                                nbr_base,
                                lhs_base,
                                rhs_base,
                                part_base,
                                merge,
                                lhs_lo,
                                lhs_hi,
                                rhs_lo,
                                rhs_hi,
                                ..params
                            };
                            self.dispatch(
                                &mut enc,
                                &acc_pipe,
                                &acc_layout,
                                bytemuck::bytes_of(&p),
                                &[runs_bind, segs, nbr, lb, rb, part],
                                b.segs.len() as u64,
                            )?;
                            merge = 1;
                        }
                    }
                }
                let n = g.num_dst;
                let (row_ptr, rp_base) = self.window(&g.row_ptr, n + 1, b.rows.start, b.rows.end + 1)?;
                let (row_seg, rs_base) = self.window(&g.row_seg, n + 1, b.rows.start, b.rows.end + 1)?;
                let (out, out_base) =
                    self.window(&a.out.buffer, n * out_len, b.rows.start * out_len, b.rows.end * out_len)?;
                let (arg, arg_base) = match a.arg {
                    Some(ids) => {
                        self.window(&ids.buffer, 2 * n * out_len, 2 * b.rows.start * out_len, 2 * b.rows.end * out_len)?
                    }
                    None => (self.unused(), 0),
                };
                let p = FinParams {
                    n_items: b.rows.len() as u32,
                    row_first: b.rows.start as u32,
                    rp_base,
                    rs_base,
                    part_base,
                    nbr_base,
                    out_base,
                    arg_base,
                    out_len: out_len as u32,
                    write_arg: u32::from(a.arg.is_some()),
                    ..Default::default()
                };
                self.dispatch(
                    &mut enc,
                    &fin_pipe,
                    &fin_layout,
                    bytemuck::bytes_of(&p),
                    &[row_ptr, row_seg, part, nbr, out, arg],
                    b.rows.len() as u64,
                )?;
            }
            self.queue().submit([enc.finish()]);
            Ok(())
        })
    }
}
