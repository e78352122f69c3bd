//! The op entry points: g-SpMM, g-SDDMM, edge softmax and their gradients.
//!
//! Each entry point, before anything is written: looks up the handle,
//! converts the enums, checks every tensor (dtype, device, shape, strides,
//! alignment — see `dlpack`), checks that no output overlaps another tensor,
//! and lets `Exec` validate shapes against the graph and the operator. Only
//! then does a backend run, on gnnkern's pool (see `runtime`).

use super::dlpack::{Checked, DlElement, check, check_disjoint, required, view, view_mut};
use super::enums::{RawOp, RawReduce, RawTarget};
use super::graph::{gk_graph, lookup, with_graph};
use super::runtime::run;
use super::status::{CResult, Failure, boundary, gk_status};
use crate::graph::Graph;
use crate::{Index, SddmmBackwardIo, SddmmIo, SddmmSpec, SpmmBackwardIo, SpmmIo, SpmmSpec};
use dlpark::ffi::DLTensor;
use gnnkern_simd::op::BinaryOpKind;

/// The byte ranges of the present tensors (for [`check_disjoint`]).
fn ranges<'c, T>(tensors: &[Option<&'c Checked>]) -> Vec<(&'c Checked, std::ops::Range<usize>)> {
    tensors.iter().flatten().map(|&c| (c, c.bytes::<T>())).collect()
}

/// The g-SpMM spec of the C enums (the only place they become types).
fn spmm_spec(op: RawOp, lhs_target: RawTarget, rhs_target: RawTarget, reduce: RawReduce) -> CResult<SpmmSpec> {
    let (lt, rt) = (lhs_target.target("lhs_target")?, rhs_target.target("rhs_target")?);
    Ok(SpmmSpec::new(op.kind()?, lt, rt, reduce.kind()?))
}

/// The g-SDDMM spec of the C enums.
fn sddmm_spec(op: RawOp, lhs_target: RawTarget, rhs_target: RawTarget) -> CResult<SddmmSpec> {
    Ok(SddmmSpec::new(op.kind()?, lhs_target.target("lhs_target")?, rhs_target.target("rhs_target")?))
}

/// The checked `lhs` / `rhs` operands of `op`: each present exactly when
/// given; one the operator ignores must be NULL (see [`check_ignored`]).
///
/// # Safety
/// As for [`check`].
unsafe fn operands(op: BinaryOpKind, lhs: *const DLTensor, rhs: *const DLTensor) -> CResult<Operands> {
    // SAFETY: forwarded caller contract.
    let (l, r) = unsafe { (check::<f32>("lhs", lhs)?, check::<f32>("rhs", rhs)?) };
    check_ignored(op, &l, &r)?;
    Ok((l, r))
}

/// Checked `lhs` and `rhs` operands (NULL ones absent).
type Operands = (Option<Checked>, Option<Checked>);

/// An operand the operator ignores must be NULL (a non-NULL one is almost
/// certainly a caller mix-up, e.g. a copy with the operands swapped).
fn check_ignored(op: BinaryOpKind, lhs: &Option<Checked>, rhs: &Option<Checked>) -> CResult {
    for (name, used, given) in [("lhs", op.uses_lhs(), lhs.is_some()), ("rhs", op.uses_rhs(), rhs.is_some())] {
        if given && !used {
            return Err(Failure::new(
                gk_status::GK_ERROR_OPERAND,
                format!("{name} was given but operator {} ignores it; pass NULL", op.name()),
            ));
        }
    }
    Ok(())
}

/// The `arg_u` / `arg_e` output slices of a max/min g-SpMM.
type ArgSlices<'a, I> = (Option<&'a mut [I]>, Option<&'a mut [I]>);

/// Arg outputs of a g-SpMM (max/min), in the graph's index type.
///
/// # Safety
/// The tensors must be writable for `'a` and disjoint from all others.
unsafe fn arg_slices<'a, I: Index + DlElement>(
    arg_u: *const DLTensor,
    arg_e: *const DLTensor,
    out_shape: &[usize],
    inputs: &[(&Checked, std::ops::Range<usize>)],
    outputs: &[(&Checked, std::ops::Range<usize>)],
) -> CResult<ArgSlices<'a, I>> {
    // SAFETY: forwarded caller contract.
    let (u, e) = unsafe { (check::<I>("arg_u", arg_u)?, check::<I>("arg_e", arg_e)?) };
    for c in [&u, &e].into_iter().flatten() {
        if c.shape != out_shape {
            return Err(crate::Error::BadShape {
                what: format!("g-SpMM: {} (must have the output's shape)", c.name),
                expected: out_shape.to_vec(),
                actual: c.shape.clone(),
            }
            .into());
        }
    }
    let args: Vec<_> = [&u, &e].into_iter().flatten().map(|c| (c, c.bytes::<I>())).collect();
    check_disjoint(&args, inputs)?;
    check_disjoint(&args, outputs)?;
    // SAFETY: checked for dtype/shape/alignment, disjoint from every other
    // tensor; writability is the caller's contract.
    Ok(unsafe { (u.as_ref().map(|c| c.slice_mut::<I>()), e.as_ref().map(|c| c.slice_mut::<I>())) })
}

/// # Safety
/// As for [`gk_gspmm`].
#[allow(clippy::too_many_arguments)]
unsafe fn gspmm_typed<I: Index + DlElement>(
    graph: &Graph<I>,
    spec: SpmmSpec,
    (lhs, rhs): &Operands,
    out: &Checked,
    arg_u: *const DLTensor,
    arg_e: *const DLTensor,
) -> CResult {
    let inputs = ranges::<f32>(&[lhs.as_ref(), rhs.as_ref()]);
    let outputs = ranges::<f32>(&[Some(out)]);
    check_disjoint(&outputs, &inputs)?;
    // SAFETY: forwarded caller contract; disjointness checked inside.
    let (arg_u, arg_e) = unsafe { arg_slices::<I>(arg_u, arg_e, &out.shape, &inputs, &outputs)? };
    if (arg_u.is_some() || arg_e.is_some()) && !spec.reduce.has_arg() {
        return Err(Failure::new(
            gk_status::GK_ERROR_OPERAND,
            format!("g-SpMM: arg outputs are written only by max/min, not by {}", spec.reduce.name()),
        ));
    }
    // SAFETY: inputs are only read; the output is disjoint from them.
    let (l, r, o) = unsafe { (lhs.as_ref().map(|c| view(c)), rhs.as_ref().map(|c| view(c)), view_mut(out)) };
    run(|exec| exec.gspmm(graph, spec, SpmmIo { lhs: l, rhs: r, out: o, arg_u, arg_e }).map(Some))
}

/// g-SpMM: `out[v] = reduce over edges e = (u, v) of op(lhs[a(e)], rhs[b(e)])`,
/// where `a`, `b` are `lhs_target`, `rhs_target` (source, edge or
/// destination rows). DGL's `copy_u_sum` is `GK_OP_COPY_LHS` with
/// `lhs_target = GK_TARGET_SRC`, `rhs = NULL`; `u_mul_e_max` is `GK_OP_MUL`,
/// `GK_TARGET_SRC`, `GK_TARGET_EDGE`, `GK_REDUCE_MAX`.
///
/// Tensors: float32, CPU, compact. `lhs`/`rhs` have as many rows as their
/// target (`[rows, feat...]`); the one the op ignores must be NULL. Feature
/// shapes broadcast as in NumPy (`GK_OP_DOT` reduces the last dimension and
/// keeps it as 1). `out` is `[num_dst, out_feat...]`, caller-allocated and
/// overwritten (never read). `arg_u` / `arg_e` (nullable, max/min only) have
/// `out`'s shape and the graph's index type, and receive the source / edge
/// id of the winning message (-1 for a destination without in-edges, which
/// gets 0 in `out` for every reducer).
///
/// Errors: see `gk_status`; on any error nothing has been written.
///
/// # Safety
/// Every non-NULL tensor pointer must point to a valid `DLTensor` whose
/// memory is valid for the call's reads (inputs) or writes (outputs) and is
/// not modified by another thread during the call.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gk_gspmm(
    graph: gk_graph,
    op: RawOp,
    lhs_target: RawTarget,
    rhs_target: RawTarget,
    reduce: RawReduce,
    lhs: *const DLTensor,
    rhs: *const DLTensor,
    out: *mut DLTensor,
    arg_u: *mut DLTensor,
    arg_e: *mut DLTensor,
) -> gk_status {
    boundary(|| {
        let g = lookup(graph)?;
        let spec = spmm_spec(op, lhs_target, rhs_target, reduce)?;
        // SAFETY: the caller's contract on every tensor pointer.
        unsafe {
            let operands = operands(spec.op, lhs, rhs)?;
            let o = required::<f32>("out", out)?;
            with_graph!(&g, g => gspmm_typed(g, spec, &operands, &o, arg_u, arg_e))
        }
    })
}

/// g-SDDMM: `out[e] = op(lhs[a(e)], rhs[b(e)])` for every edge e = (u, v).
/// `out` is `[num_edges, out_feat...]`, indexed by edge id; otherwise as
/// `gk_gspmm` (without reducer and arg outputs).
///
/// # Safety
/// As for `gk_gspmm`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_gsddmm(
    graph: gk_graph,
    op: RawOp,
    lhs_target: RawTarget,
    rhs_target: RawTarget,
    lhs: *const DLTensor,
    rhs: *const DLTensor,
    out: *mut DLTensor,
) -> gk_status {
    boundary(|| {
        let g = lookup(graph)?;
        let spec = sddmm_spec(op, lhs_target, rhs_target)?;
        // SAFETY: the caller's contract on every tensor pointer.
        let ((l, r), o) = unsafe { (operands(spec.op, lhs, rhs)?, required::<f32>("out", out)?) };
        check_disjoint(&ranges::<f32>(&[Some(&o)]), &ranges::<f32>(&[l.as_ref(), r.as_ref()]))?;
        // SAFETY: inputs are only read; the output is disjoint from them.
        let (lv, rv, ov) = unsafe { (l.as_ref().map(|c| view(c)), r.as_ref().map(|c| view(c)), view_mut(&o)) };
        with_graph!(&g, g => run(|exec| exec.gsddmm(g, spec, SddmmIo { lhs: lv, rhs: rv, out: ov }).map(Some)))
    })
}

/// Edge softmax: for every destination v and feature position,
/// `out[e] = exp(logits[e] - max) / sum over in-edges of v of exp(... - max)`.
/// `logits` and `out` are `[num_edges, feat...]`. To normalise over each
/// source's out-edges, call it on the handle from `gk_graph_reverse`.
///
/// # Safety
/// As for `gk_gspmm`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_edge_softmax(graph: gk_graph, logits: *const DLTensor, out: *mut DLTensor) -> gk_status {
    boundary(|| {
        let g = lookup(graph)?;
        // SAFETY: the caller's contract on every tensor pointer.
        let (x, o) = unsafe { (required::<f32>("logits", logits)?, required::<f32>("out", out)?) };
        check_disjoint(&ranges::<f32>(&[Some(&o)]), &ranges::<f32>(&[Some(&x)]))?;
        // SAFETY: input only read; output disjoint from it.
        let (xv, ov) = unsafe { (view(&x), view_mut(&o)) };
        with_graph!(&g, g => run(|exec| exec.edge_softmax(g, xv, ov).map(Some)))
    })
}

/// Gradient of `gk_edge_softmax` w.r.t. its logits:
/// `grad_logits[e] = out[e] * (grad_out[e] - sum over in-edges e' of v of grad_out[e'] * out[e'])`,
/// from the forward output `out` and the output gradient `grad_out` (all
/// `[num_edges, feat...]`).
///
/// # Safety
/// As for `gk_gspmm`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_edge_softmax_backward(
    graph: gk_graph,
    out: *const DLTensor,
    grad_out: *const DLTensor,
    grad_logits: *mut DLTensor,
) -> gk_status {
    boundary(|| {
        let g = lookup(graph)?;
        // SAFETY: the caller's contract on every tensor pointer.
        let (y, gy, gx) = unsafe {
            (
                required::<f32>("out", out)?,
                required::<f32>("grad_out", grad_out)?,
                required::<f32>("grad_logits", grad_logits)?,
            )
        };
        check_disjoint(&ranges::<f32>(&[Some(&gx)]), &ranges::<f32>(&[Some(&y), Some(&gy)]))?;
        // SAFETY: inputs only read; the output is disjoint from them.
        let (yv, gyv, gxv) = unsafe { (view(&y), view(&gy), view_mut(&gx)) };
        with_graph!(&g, g => run(|exec| exec.edge_softmax_backward(g, yv, gyv, gxv).map(Some)))
    })
}

/// Gradient tensors of a backward pass, checked and disjoint from every
/// input and from each other.
struct Grads {
    lhs: Option<Checked>,
    rhs: Option<Checked>,
}

/// # Safety
/// As for the backward entry points.
unsafe fn grads(grad_lhs: *mut DLTensor, grad_rhs: *mut DLTensor, inputs: &[Option<&Checked>]) -> CResult<Grads> {
    // SAFETY: forwarded caller contract.
    let (gl, gr) = unsafe { (check::<f32>("grad_lhs", grad_lhs)?, check::<f32>("grad_rhs", grad_rhs)?) };
    check_disjoint(&ranges::<f32>(&[gl.as_ref(), gr.as_ref()]), &ranges::<f32>(inputs))?;
    Ok(Grads { lhs: gl, rhs: gr })
}

/// # Safety
/// As for [`gk_gspmm_backward`].
unsafe fn gspmm_backward_typed<I: Index + DlElement>(
    graph: &Graph<I>,
    spec: SpmmSpec,
    (lhs, rhs): &Operands,
    grad_out: &Checked,
    arg_e: &Option<Checked>,
    grads: &Grads,
) -> CResult {
    // SAFETY: inputs are only read; the gradients are disjoint from them
    // and from each other (checked by `grads`).
    let io = unsafe {
        SpmmBackwardIo {
            lhs: lhs.as_ref().map(|c| view(c)),
            rhs: rhs.as_ref().map(|c| view(c)),
            grad_out: view(grad_out),
            arg_e: arg_e.as_ref().map(|c| c.slice::<I>()),
            grad_lhs: grads.lhs.as_ref().map(|c| view_mut(c)),
            grad_rhs: grads.rhs.as_ref().map(|c| view_mut(c)),
        }
    };
    run(|exec| exec.gspmm_backward(graph, spec, io).map(|()| None))
}

/// Gradients of `gk_gspmm` w.r.t. `lhs` and/or `rhs` (DGL's Theorem 1: a
/// g-SpMM on the reverse graph, a g-SpMM, or a g-SDDMM per operand).
///
/// `lhs`/`rhs` are the forward operands (each required when the op reads
/// it), `grad_out` is `[num_dst, out_feat...]`. For max/min, `arg_e` (the
/// forward pass's arg-edge output, graph index type, `out`'s shape) is
/// required and routes each gradient element to the winning message; it
/// must be NULL for sum/mean. `grad_lhs` / `grad_rhs` have their operand's
/// shape and are overwritten when non-NULL (pass NULL for a gradient you do
/// not need).
///
/// Errors: as `gk_gspmm`. With a *forced* backend that cannot run one of
/// the primitive calls a gradient is made of, the call fails with
/// UNSUPPORTED and a gradient computed before that primitive may already
/// be written; under `GK_BACKEND_AUTO` this cannot happen.
///
/// # Safety
/// As for `gk_gspmm`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gk_gspmm_backward(
    graph: gk_graph,
    op: RawOp,
    lhs_target: RawTarget,
    rhs_target: RawTarget,
    reduce: RawReduce,
    lhs: *const DLTensor,
    rhs: *const DLTensor,
    grad_out: *const DLTensor,
    arg_e: *const DLTensor,
    grad_lhs: *mut DLTensor,
    grad_rhs: *mut DLTensor,
) -> gk_status {
    boundary(|| {
        let g = lookup(graph)?;
        let spec = spmm_spec(op, lhs_target, rhs_target, reduce)?;
        // SAFETY: the caller's contract on every tensor pointer.
        unsafe {
            let operands = operands(spec.op, lhs, rhs)?;
            let go = required::<f32>("grad_out", grad_out)?;
            with_graph!(&g, g => {
                let arg = check_arg_input(g, arg_e)?;
                if arg.is_some() != spec.reduce.has_arg() {
                    return Err(Failure::new(
                        gk_status::GK_ERROR_OPERAND,
                        format!("arg_e is required for max/min and must be NULL for {}", spec.reduce.name()),
                    ));
                }
                let grads = grads(grad_lhs, grad_rhs, &[operands.0.as_ref(), operands.1.as_ref(), Some(&go)])?;
                check_disjoint(&ranges::<f32>(&[grads.lhs.as_ref(), grads.rhs.as_ref()]), &arg_range(g, &arg))?;
                gspmm_backward_typed(g, spec, &operands, &go, &arg, &grads)
            })
        }
    })
}

/// The `arg_e` input of a max/min backward, in the graph's index type.
///
/// # Safety
/// As for [`check`].
unsafe fn check_arg_input<I: Index + DlElement>(_graph: &Graph<I>, arg_e: *const DLTensor) -> CResult<Option<Checked>> {
    // SAFETY: forwarded caller contract.
    unsafe { check::<I>("arg_e", arg_e) }
}

fn arg_range<'c, I: Index>(_graph: &Graph<I>, arg: &'c Option<Checked>) -> Vec<(&'c Checked, std::ops::Range<usize>)> {
    arg.as_ref().map(|c| (c, c.bytes::<I>())).into_iter().collect()
}

/// Gradients of `gk_gsddmm` w.r.t. `lhs` and/or `rhs`; `grad_out` is
/// `[num_edges, out_feat...]`, the rest as `gk_gspmm_backward` (no arg input).
///
/// # Safety
/// As for `gk_gspmm`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn gk_gsddmm_backward(
    graph: gk_graph,
    op: RawOp,
    lhs_target: RawTarget,
    rhs_target: RawTarget,
    lhs: *const DLTensor,
    rhs: *const DLTensor,
    grad_out: *const DLTensor,
    grad_lhs: *mut DLTensor,
    grad_rhs: *mut DLTensor,
) -> gk_status {
    boundary(|| {
        let g = lookup(graph)?;
        let spec = sddmm_spec(op, lhs_target, rhs_target)?;
        // SAFETY: the caller's contract on every tensor pointer.
        let ((l, r), go) = unsafe { (operands(spec.op, lhs, rhs)?, required::<f32>("grad_out", grad_out)?) };
        // SAFETY: as above.
        let gr = unsafe { grads(grad_lhs, grad_rhs, &[l.as_ref(), r.as_ref(), Some(&go)])? };
        // SAFETY: inputs only read; gradients disjoint from them and each other.
        let io = unsafe {
            SddmmBackwardIo {
                lhs: l.as_ref().map(|c| view(c)),
                rhs: r.as_ref().map(|c| view(c)),
                grad_out: view(&go),
                grad_lhs: gr.lhs.as_ref().map(|c| view_mut(c)),
                grad_rhs: gr.rhs.as_ref().map(|c| view_mut(c)),
            }
        };
        with_graph!(&g, g => run(|exec| exec.gsddmm_backward(g, spec, io).map(|()| None)))
    })
}
