//! Checking DLPack tensors and viewing them as slices.
//!
//! The `DLTensor` type is dlpark's (`dlpark::ffi::DLTensor`), whose layout
//! is the one every DLPack version has used for `DLTensor` (the legacy
//! struct DGL passes; the header declares it when `dlpack.h` was not
//! included first). A tensor is accepted when, in this order:
//! - the pointer is not NULL;
//! - `device.device_type == kDLCPU`;
//! - `dtype` is the required one exactly (`lanes == 1`);
//! - `1 <= ndim <= 32`, `shape` is not NULL, every extent is `>= 0` and the
//!   element count does not overflow;
//! - `strides` is NULL (compact, legacy DLPack) or equals the compact
//!   row-major strides on every dimension of extent > 1 (the stride of an
//!   extent-1 dimension never changes an address, and PyTorch reports
//!   arbitrary values there). Anything else is rejected with
//!   `GK_ERROR_LAYOUT` naming the strides: gnnkern never reads a strided
//!   tensor as if it were compact (DGL issue #6049);
//! - `data + byte_offset` is non-NULL (when there are elements) and aligned
//!   for the dtype.

use super::status::{CResult, Failure, gk_status};
use crate::tensor::{TensorMut, TensorRef};
use dlpark::ffi::{DLDataTypeCode, DLDeviceType, DLTensor};
use std::ops::Range;

/// The highest `ndim` accepted (a sanity bound against garbage).
const MAX_NDIM: i32 = 32;

/// An element type a tensor may hold, with its DLPack dtype.
pub(crate) trait DlElement: Copy + 'static {
    const CODE: DLDataTypeCode;
    const BITS: u8;
    const NAME: &'static str;
}

impl DlElement for f32 {
    const CODE: DLDataTypeCode = DLDataTypeCode::FLOAT;
    const BITS: u8 = 32;
    const NAME: &'static str = "float32";
}

impl DlElement for i32 {
    const CODE: DLDataTypeCode = DLDataTypeCode::INT;
    const BITS: u8 = 32;
    const NAME: &'static str = "int32";
}

impl DlElement for i64 {
    const CODE: DLDataTypeCode = DLDataTypeCode::INT;
    const BITS: u8 = 64;
    const NAME: &'static str = "int64";
}

/// A checked tensor: its shape and the byte range of its elements.
pub(crate) struct Checked {
    pub name: &'static str,
    pub shape: Vec<usize>,
    /// `data + byte_offset`, keeping the caller's pointer provenance (so
    /// Miri checks every access against the caller's own allocation).
    ptr: *mut u8,
    numel: usize,
}

impl Checked {
    /// Bytes covered (empty for no elements).
    pub fn bytes<T>(&self) -> Range<usize> {
        let start = self.ptr.addr();
        if self.numel == 0 { 0..0 } else { start..start + self.numel * size_of::<T>() }
    }

    /// The elements as a slice.
    ///
    /// # Safety
    /// The tensor's memory must be valid for reading for `'a` and not
    /// written by anyone during `'a`.
    pub unsafe fn slice<'a, T: DlElement>(&self) -> &'a [T] {
        if self.numel == 0 {
            return &[];
        }
        // SAFETY: `check` proved ptr non-NULL and aligned for T and the byte
        // size below isize::MAX; the caller guarantees validity.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<T>().cast_const(), self.numel) }
    }

    /// The elements as a mutable slice.
    ///
    /// # Safety
    /// As [`Checked::slice`], for writing, and no other live reference may
    /// overlap the memory (see [`check_disjoint`]).
    pub unsafe fn slice_mut<'a, T: DlElement>(&self) -> &'a mut [T] {
        if self.numel == 0 {
            return &mut [];
        }
        // SAFETY: as in `slice`; exclusivity is the caller's guarantee.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<T>(), self.numel) }
    }
}

fn err(status: gk_status, message: String) -> Failure {
    Failure::new(status, message)
}

fn device_name(t: DLDeviceType) -> &'static str {
    match t {
        DLDeviceType::CPU => "kDLCPU",
        DLDeviceType::CUDA => "kDLCUDA",
        DLDeviceType::CUDAHOST => "kDLCUDAHost",
        DLDeviceType::OPENCL => "kDLOpenCL",
        DLDeviceType::VULKAN => "kDLVulkan",
        DLDeviceType::METAL => "kDLMetal",
        DLDeviceType::ROCM => "kDLROCM",
        _ => "a non-CPU device",
    }
}

/// Checks a tensor for element type `T`; `None` for a NULL pointer.
///
/// # Safety
/// `t` must be NULL or point to a readable `DLTensor` whose `shape` (and
/// non-NULL `strides`) hold `ndim` readable values.
pub(crate) unsafe fn check<T: DlElement>(name: &'static str, t: *const DLTensor) -> CResult<Option<Checked>> {
    if t.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and readable (caller contract).
    let t = unsafe { &*t };
    if t.device.device_type != DLDeviceType::CPU {
        return Err(err(
            gk_status::GK_ERROR_DEVICE,
            format!(
                "{name}: tensor is on {} (device_type {}, device_id {}); gnnkern's C ABI reads CPU memory (kDLCPU = 1) only",
                device_name(t.device.device_type),
                t.device.device_type.0,
                t.device.device_id
            ),
        ));
    }
    let dt = t.dtype;
    if dt.code != T::CODE || dt.bits != T::BITS || dt.lanes != 1 {
        return Err(err(
            gk_status::GK_ERROR_DTYPE,
            format!(
                "{name}: dtype (code {}, bits {}, lanes {}) is not {} (code {}, bits {}, lanes 1)",
                dt.code.0,
                dt.bits,
                dt.lanes,
                T::NAME,
                T::CODE.0,
                T::BITS
            ),
        ));
    }
    if !(1..=MAX_NDIM).contains(&t.ndim) {
        return Err(err(
            gk_status::GK_ERROR_SHAPE,
            format!(
                "{name}: ndim = {} (a tensor needs a leading node/edge dimension; 1 <= ndim <= {MAX_NDIM})",
                t.ndim
            ),
        ));
    }
    if t.shape.is_null() {
        return Err(Failure::null(&format!("{name}: shape")));
    }
    let ndim = t.ndim as usize;
    // SAFETY: non-NULL, `ndim` readable extents (caller contract).
    let raw_shape = unsafe { std::slice::from_raw_parts(t.shape, ndim) };
    let mut shape = Vec::with_capacity(ndim);
    for (i, &n) in raw_shape.iter().enumerate() {
        let n = usize::try_from(n).map_err(|_| {
            err(
                gk_status::GK_ERROR_SHAPE,
                format!("{name}: shape {raw_shape:?} has a negative extent at dimension {i}"),
            )
        })?;
        shape.push(n);
    }
    let overflow = || err(gk_status::GK_ERROR_SHAPE, format!("{name}: shape {raw_shape:?} has too many elements"));
    let numel = shape.iter().try_fold(1usize, |acc, &n| acc.checked_mul(n)).ok_or_else(overflow)?;
    let nbytes = numel.checked_mul(size_of::<T>()).filter(|&b| b <= isize::MAX as usize).ok_or_else(overflow)?;
    if !t.strides.is_null() {
        // SAFETY: non-NULL, `ndim` readable strides (caller contract).
        let strides = unsafe { std::slice::from_raw_parts(t.strides, ndim) };
        let mut compact = vec![1i64; ndim];
        for i in (0..ndim.saturating_sub(1)).rev() {
            compact[i] = compact[i + 1].saturating_mul(raw_shape[i + 1]);
        }
        let mismatch = (0..ndim).find(|&i| shape[i] > 1 && strides[i] != compact[i]);
        if let (Some(i), true) = (mismatch, numel > 0) {
            return Err(err(
                gk_status::GK_ERROR_LAYOUT,
                format!(
                    "{name}: strides {strides:?} for shape {raw_shape:?} are not compact row-major (expected {compact:?}; \
                     dimension {i} differs): gnnkern reads only contiguous tensors, make it contiguous first"
                ),
            ));
        }
    }
    let offset = usize::try_from(t.byte_offset).map_err(|_| {
        err(gk_status::GK_ERROR_LAYOUT, format!("{name}: byte_offset {} does not fit the address space", t.byte_offset))
    })?;
    let addr = t.data.addr().checked_add(offset).filter(|p| p.checked_add(nbytes).is_some()).ok_or_else(|| {
        err(
            gk_status::GK_ERROR_LAYOUT,
            format!("{name}: data + byte_offset ({}) wraps the address space", t.byte_offset),
        )
    })?;
    if numel > 0 {
        if t.data.is_null() {
            return Err(Failure::null(&format!("{name}: data (of a tensor with {numel} elements)")));
        }
        if addr % align_of::<T>() != 0 {
            return Err(err(
                gk_status::GK_ERROR_LAYOUT,
                format!(
                    "{name}: data + byte_offset = {addr:#x} is not aligned to {} bytes for {}",
                    align_of::<T>(),
                    T::NAME
                ),
            ));
        }
    }
    // `wrapping_add`: the offset was checked not to wrap, and it is only
    // dereferenced when there are elements (then the caller promises it lies
    // in the tensor's allocation).
    let ptr = t.data.cast::<u8>().wrapping_add(offset);
    Ok(Some(Checked { name, shape, ptr, numel }))
}

/// A checked tensor that must be present.
///
/// # Safety
/// As for [`check`].
pub(crate) unsafe fn required<T: DlElement>(name: &'static str, t: *const DLTensor) -> CResult<Checked> {
    // SAFETY: forwarded caller contract.
    unsafe { check::<T>(name, t) }?.ok_or_else(|| Failure::null(name))
}

/// Read-only view of a checked float tensor.
///
/// # Safety
/// The tensor memory must be readable and unwritten for `'a`.
pub(crate) unsafe fn view<'a>(c: &'a Checked) -> TensorRef<'a> {
    // SAFETY: forwarded caller contract.
    let data = unsafe { c.slice::<f32>() };
    TensorRef::new(data, &c.shape).expect("shape and element count were checked together")
}

/// Writable view of a checked float tensor.
///
/// # Safety
/// The tensor memory must be writable for `'a` and overlap no other view.
pub(crate) unsafe fn view_mut<'a>(c: &'a Checked) -> TensorMut<'a> {
    // SAFETY: forwarded caller contract.
    let data = unsafe { c.slice_mut::<f32>() };
    TensorMut::new(data, &c.shape).expect("shape and element count were checked together")
}

/// Checks that every output's bytes overlap no other tensor's.
pub(crate) fn check_disjoint(outputs: &[(&Checked, Range<usize>)], inputs: &[(&Checked, Range<usize>)]) -> CResult {
    for (k, (out, ob)) in outputs.iter().enumerate() {
        let others = outputs.iter().skip(k + 1).chain(inputs);
        for (other, b) in others {
            if ob.start < b.end && b.start < ob.end {
                return Err(err(
                    gk_status::GK_ERROR_ALIASING,
                    format!(
                        "output {} overlaps {} in memory; outputs must not alias any other tensor",
                        out.name, other.name
                    ),
                ));
            }
        }
    }
    Ok(())
}
