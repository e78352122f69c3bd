//! DLPack tensors over Rust memory, for calling the C ABI's entry points
//! directly, as a C caller does.

use dlpark::ffi::{DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLTensor};

/// An element type with its DLPack dtype.
pub trait Dtype: Copy + PartialEq + std::fmt::Debug {
    const DTYPE: DLDataType;

    /// Bitwise equality (a NaN guard must equal itself).
    fn same(self, other: Self) -> bool {
        self == other
    }
}
impl Dtype for f32 {
    const DTYPE: DLDataType = DLDataType { code: DLDataTypeCode::FLOAT, bits: 32, lanes: 1 };

    fn same(self, other: Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}
impl Dtype for i32 {
    const DTYPE: DLDataType = DLDataType { code: DLDataTypeCode::INT, bits: 32, lanes: 1 };
}
impl Dtype for i64 {
    const DTYPE: DLDataType = DLDataType { code: DLDataTypeCode::INT, bits: 64, lanes: 1 };
}

/// A compact CPU tensor at `data` (NULL is allowed when `shape` has no
/// elements); `shape` must outlive every use of the result.
pub fn raw<T: Dtype>(data: *mut T, shape: &mut [i64]) -> DLTensor {
    DLTensor {
        data: data.cast(),
        device: DLDevice { device_type: DLDeviceType::CPU, device_id: 0 },
        ndim: shape.len() as i32,
        dtype: T::DTYPE,
        shape: shape.as_mut_ptr(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    }
}

/// A compact CPU tensor over `data`; `shape` must outlive every use of the result.
pub fn tensor<T: Dtype>(data: &mut [T], shape: &mut [i64]) -> DLTensor {
    raw(data.as_mut_ptr(), shape)
}

/// How a caller lays out a compact tensor: the forms DLPack allows for
/// contiguous row-major memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `data` at the first element, `strides` NULL.
    Plain,
    /// `data` at the allocation's start, the first element [`GUARD`]
    /// elements further through `byte_offset`.
    Offset,
    /// `strides` given, equal to the compact ones.
    CompactStrides,
    /// Compact strides, but an arbitrary stride on every extent-1 dimension
    /// (PyTorch reports such strides; they never change an address).
    UnitDimStrides,
}

impl Layout {
    pub const ALL: [Layout; 4] = [Layout::Plain, Layout::Offset, Layout::CompactStrides, Layout::UnitDimStrides];
}

/// Elements before the data in [`Layout::Offset`].
pub const GUARD: usize = 3;

/// A caller-owned tensor whose allocation holds exactly what it describes
/// (plus the [`GUARD`] elements of [`Layout::Offset`] before it, none
/// after), so that an access past either end leaves the allocation (Miri
/// reports it) or changes the guard (checked natively).
pub struct Owned<T> {
    buf: Vec<T>,
    shape: Vec<i64>,
    strides: Option<Vec<i64>>,
    guard: usize,
    guard_value: T,
}

impl<T: Dtype> Owned<T> {
    /// `values` (row-major, `shape`'s element count) laid out as `layout`;
    /// `guard_value` fills the guard.
    pub fn new(values: &[T], shape: &[usize], layout: Layout, guard_value: T) -> Owned<T> {
        assert_eq!(values.len(), shape.iter().product::<usize>(), "values for shape {shape:?}");
        let guard = if layout == Layout::Offset { GUARD } else { 0 };
        let mut buf = Vec::with_capacity(guard + values.len());
        buf.resize(guard, guard_value);
        buf.extend_from_slice(values);
        let mut compact = vec![1i64; shape.len()];
        for i in (0..shape.len().saturating_sub(1)).rev() {
            compact[i] = compact[i + 1] * shape[i + 1] as i64;
        }
        let strides = match layout {
            Layout::CompactStrides => Some(compact),
            Layout::UnitDimStrides => {
                Some(compact.iter().zip(shape).map(|(&s, &n)| if n == 1 { 12_345 } else { s }).collect())
            }
            Layout::Plain | Layout::Offset => None,
        };
        Owned { buf, shape: shape.iter().map(|&n| n as i64).collect(), strides, guard, guard_value }
    }

    /// `shape`'s element count of `fill` (an output's prior contents).
    pub fn filled(fill: T, shape: &[usize], layout: Layout) -> Owned<T> {
        Owned::new(&vec![fill; shape.iter().product()], shape, layout, fill)
    }

    /// The DLPack view; valid while `self` is neither moved nor dropped.
    pub fn dl(&mut self) -> DLTensor {
        DLTensor {
            strides: self.strides.as_mut().map_or(std::ptr::null_mut(), |s| s.as_mut_ptr()),
            byte_offset: (self.guard * size_of::<T>()) as u64,
            ..raw(self.buf.as_mut_ptr(), &mut self.shape)
        }
    }

    /// The tensor's elements.
    pub fn values(&self) -> &[T] {
        &self.buf[self.guard..]
    }

    /// Whether the guard elements still hold their value.
    pub fn guard_intact(&self) -> bool {
        self.buf[..self.guard].iter().all(|&g| g.same(self.guard_value))
    }
}
