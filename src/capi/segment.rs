//! Segment reductions (DGL `segment_reduce`) on DLPack tensors: the C face
//! of [`crate::segment`].
//!
//! The segments come as one int32 or int64 tensor, either offsets
//! (`num_segments + 1` entries) or lengths (`num_segments`, DGL's `seglen`),
//! chosen by a `gk_segments` value; its dtype is the id type of the `arg`
//! tensor. Everything is checked before anything is written — tensors
//! (`dlpack`), aliasing, the segments against the row count, arg presence
//! and shape, and (backward) every arg id against its segment — and the
//! reduction then runs on gnnkern's pool. No backend runs it (it is dense
//! and backend-independent), so `gk_last_backend` / `gk_last_isa` are left
//! as they were.

use super::dlpack::{Checked, DlElement, check, check_disjoint, required, view, view_mut};
use super::enums::{RawReduce, RawSegments, gk_segments};
use super::runtime::run_dense;
use super::status::{CResult, Failure, boundary, gk_status};
use crate::{Error, Index, segment};
use dlpark::ffi::{DLDataTypeCode, DLDeviceType, DLTensor};
use gnnkern_simd::op::ReduceKind;
use std::borrow::Cow;

/// Which id type the segments tensor holds (int32 or int64). A tensor on
/// another device or NULL is left to [`check`] (int32) to report.
///
/// # Safety
/// `segments` must be NULL or point to a readable `DLTensor`.
unsafe fn is_wide(segments: *const DLTensor) -> CResult<bool> {
    // SAFETY: NULL or readable (caller contract).
    let Some(t) = (unsafe { segments.as_ref() }) else { return Ok(false) };
    let dt = t.dtype;
    let int = dt.code == DLDataTypeCode::INT && dt.lanes == 1;
    match (int, dt.bits) {
        (true, 64) => Ok(true),
        (true, 32) => Ok(false),
        _ if t.device.device_type != DLDeviceType::CPU => Ok(false),
        _ => Err(Failure::new(
            gk_status::GK_ERROR_DTYPE,
            format!(
                "segments: dtype (code {}, bits {}, lanes {}) is not int32 or int64 (code 0, bits 32 or 64, lanes 1)",
                dt.code.0, dt.bits, dt.lanes
            ),
        )),
    }
}

/// The segment offsets for `rows` rows, from the checked segments tensor.
///
/// # Safety
/// The tensor's memory must be readable and unwritten during the call.
unsafe fn offsets<'a, I: Index + DlElement>(kind: gk_segments, seg: &'a Checked, rows: usize) -> CResult<Cow<'a, [I]>> {
    if seg.shape.len() != 1 {
        return Err(Error::BadShape {
            what: "segments (must be one-dimensional)".into(),
            expected: vec![seg.shape.iter().product()],
            actual: seg.shape.clone(),
        }
        .into());
    }
    // SAFETY: forwarded caller contract.
    let values = unsafe { seg.slice::<I>() };
    match kind {
        gk_segments::GK_SEGMENTS_OFFSETS => Ok(Cow::Borrowed(values)),
        gk_segments::GK_SEGMENTS_LENGTHS => {
            let offsets = segment::offsets_from_lengths(values)?;
            let total = offsets.last().map_or(0, |o| o.to_usize());
            if total != rows {
                return Err(Failure::new(
                    gk_status::GK_ERROR_SHAPE,
                    format!("segments: the lengths sum to {total}, but the tensor has {rows} rows"),
                ));
            }
            Ok(Cow::Owned(offsets))
        }
    }
}

/// `arg` (when given) must have the shape of the per-segment tensor.
fn check_arg_shape(arg: &Option<Checked>, shape: &[usize]) -> CResult {
    match arg {
        Some(a) if a.shape != shape => Err(Error::BadShape {
            what: "segment arg (must have the per-segment tensor's shape)".into(),
            expected: shape.to_vec(),
            actual: a.shape.clone(),
        }
        .into()),
        _ => Ok(()),
    }
}

/// `arg` is written (forward) or read (backward) only for max/min.
fn check_arg_presence(reduce: ReduceKind, arg: &Option<Checked>, backward: bool) -> CResult {
    let problem = match (reduce.has_arg(), arg.is_some()) {
        (false, true) => format!("arg was given but reducer {} has no arg; pass NULL", reduce.name()),
        (true, false) if backward => format!("the {} backward needs the forward pass's arg", reduce.name()),
        _ => return Ok(()),
    };
    Err(Failure::new(gk_status::GK_ERROR_OPERAND, problem))
}

/// # Safety
/// As for [`gk_segment_reduce`], with `segments` of id type `I`.
unsafe fn reduce_typed<I: Index + DlElement>(
    reduce: ReduceKind,
    kind: gk_segments,
    segments: *const DLTensor,
    x: *const DLTensor,
    out: *mut DLTensor,
    arg: *mut DLTensor,
) -> CResult {
    // SAFETY: the caller's contract on every tensor pointer.
    let (seg, x, out, arg) = unsafe {
        (
            required::<I>("segments", segments)?,
            required::<f32>("x", x)?,
            required::<f32>("out", out)?,
            check::<I>("arg", arg)?,
        )
    };
    check_arg_presence(reduce, &arg, false)?;
    check_arg_shape(&arg, &out.shape)?;
    let outputs: Vec<_> =
        [(&out, out.bytes::<f32>())].into_iter().chain(arg.as_ref().map(|a| (a, a.bytes::<I>()))).collect();
    check_disjoint(&outputs, &[(&seg, seg.bytes::<I>()), (&x, x.bytes::<f32>())])?;
    // SAFETY: inputs are only read; the outputs are disjoint from them and
    // from each other (checked above).
    unsafe {
        let offsets = offsets::<I>(kind, &seg, x.shape[0])?;
        let (xv, ov, av) = (view(&x), view_mut(&out), arg.as_ref().map(|a| a.slice_mut::<I>()));
        run_dense(|| segment::segment_reduce(reduce, &offsets, xv, ov, av))
    }
}

/// # Safety
/// As for [`gk_segment_reduce_backward`], with `segments` of id type `I`.
unsafe fn backward_typed<I: Index + DlElement>(
    reduce: ReduceKind,
    kind: gk_segments,
    segments: *const DLTensor,
    grad_out: *const DLTensor,
    arg: *const DLTensor,
    grad_x: *mut DLTensor,
) -> CResult {
    // SAFETY: the caller's contract on every tensor pointer.
    let (seg, gy, arg, gx) = unsafe {
        (
            required::<I>("segments", segments)?,
            required::<f32>("grad_out", grad_out)?,
            check::<I>("arg", arg)?,
            required::<f32>("grad_x", grad_x)?,
        )
    };
    check_arg_presence(reduce, &arg, true)?;
    check_arg_shape(&arg, &gy.shape)?;
    let inputs: Vec<_> = [(&seg, seg.bytes::<I>()), (&gy, gy.bytes::<f32>())]
        .into_iter()
        .chain(arg.as_ref().map(|a| (a, a.bytes::<I>())))
        .collect();
    check_disjoint(&[(&gx, gx.bytes::<f32>())], &inputs)?;
    // SAFETY: inputs are only read; the output is disjoint from them.
    unsafe {
        let offsets = offsets::<I>(kind, &seg, gx.shape[0])?;
        let (gyv, av, gxv) = (view(&gy), arg.as_ref().map(|a| a.slice::<I>()), view_mut(&gx));
        run_dense(|| segment::segment_reduce_backward(reduce, &offsets, gyv, av, gxv))
    }
}

/// Segment reduction (DGL `segment_reduce`): reduces each run of
/// consecutive rows of `x` (`[N, feat...]`, float32) to one row of `out`
/// (`[num_segments, feat...]`, caller-allocated, overwritten).
///
/// `segments` is a one-dimensional int32 or int64 tensor: offsets
/// (`GK_SEGMENTS_OFFSETS`: `num_segments + 1` entries, starting at 0,
/// non-decreasing, ending at N) or lengths (`GK_SEGMENTS_LENGTHS`:
/// `num_segments` entries `>= 0` summing to N). Sum and mean accumulate in
/// double precision; max and min propagate NaN and keep the first of equal
/// extremes. An empty segment gives 0 for every reducer. `arg` (nullable;
/// max/min only) has `out`'s shape and the segments' dtype and receives the
/// row of `x` that won each element (-1 for an empty segment).
///
/// Runs on gnnkern's pool; uses no backend, so `gk_last_backend` and
/// `gk_last_isa` are unchanged.
///
/// Errors: NULL_POINTER, INVALID_ENUM, DTYPE, DEVICE, LAYOUT, ALIASING (as
/// for `gk_gspmm`); SHAPE (segments not 1-D, lengths not summing to N, `out`
/// or `arg` of the wrong shape); INVALID_GRAPH (malformed offsets);
/// INDEX_OUT_OF_RANGE (a negative length); OPERAND (`arg` for sum/mean).
/// On any error nothing has been written.
///
/// # Safety
/// Every non-NULL tensor pointer must point to a valid `DLTensor` whose
/// memory is valid for the call's reads (inputs) or writes (outputs) and is
/// not modified by another thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_segment_reduce(
    reduce: RawReduce,
    segments_kind: RawSegments,
    segments: *const DLTensor,
    x: *const DLTensor,
    out: *mut DLTensor,
    arg: *mut DLTensor,
) -> gk_status {
    boundary(|| {
        let (reduce, kind) = (reduce.kind()?, segments_kind.kind()?);
        // SAFETY: the caller's contract on every tensor pointer.
        unsafe {
            if is_wide(segments)? {
                reduce_typed::<i64>(reduce, kind, segments, x, out, arg)
            } else {
                reduce_typed::<i32>(reduce, kind, segments, x, out, arg)
            }
        }
    })
}

/// Gradient of `gk_segment_reduce` w.r.t. `x`: `grad_x` (`[N, feat...]`,
/// overwritten) from `grad_out` (`[num_segments, feat...]`). Sum copies each
/// segment's gradient row to its rows, mean also divides by the segment
/// length, max/min route each element to the row in `arg` (required for
/// max/min, NULL for sum/mean: the forward pass's arg output, each id a row
/// of its own segment or -1 for an empty one) and write 0 elsewhere.
///
/// Errors: as `gk_segment_reduce`, plus INDEX_OUT_OF_RANGE for an arg id
/// outside its segment and OPERAND for a missing max/min arg. On any error
/// nothing has been written.
///
/// # Safety
/// As for `gk_segment_reduce`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_segment_reduce_backward(
    reduce: RawReduce,
    segments_kind: RawSegments,
    segments: *const DLTensor,
    grad_out: *const DLTensor,
    arg: *const DLTensor,
    grad_x: *mut DLTensor,
) -> gk_status {
    boundary(|| {
        let (reduce, kind) = (reduce.kind()?, segments_kind.kind()?);
        // SAFETY: the caller's contract on every tensor pointer.
        unsafe {
            if is_wide(segments)? {
                backward_typed::<i64>(reduce, kind, segments, grad_out, arg, grad_x)
            } else {
                backward_typed::<i32>(reduce, kind, segments, grad_out, arg, grad_x)
            }
        }
    })
}
