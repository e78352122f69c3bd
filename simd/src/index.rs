//! Index types for node and edge ids.
//!
//! Graphs are generic over `i32` and `i64` ids, as in DGL. The same type stores
//! CSR offsets (`indptr`), so a graph whose edge count does not fit `i32` must
//! use `i64`; the graph constructors check this and report it as an error.

use std::fmt::Debug;
use std::hash::Hash;

mod sealed {
    pub trait Sealed {}
    impl Sealed for i32 {}
    impl Sealed for i64 {}
}

/// A node/edge id type: `i32` or `i64`.
///
/// Values held in a validated graph are always non-negative and below the
/// relevant bound, so [`Index::to_usize`] is a plain widening there.
pub trait Index: sealed::Sealed + Copy + Ord + Hash + Debug + Default + Send + Sync + 'static {
    /// Name used in error messages and in the C ABI (`"int32"`, `"int64"`).
    const NAME: &'static str;
    /// Largest representable id, as `usize` (counts and offsets must not exceed it).
    const MAX_USIZE: usize;
    /// The "no edge" marker written into arg outputs of empty rows.
    const NONE: Self;

    /// Widens a non-negative id. Negative values map to `usize::MAX` so that a
    /// subsequent range check rejects them instead of wrapping to a small id.
    fn to_usize(self) -> usize;
    /// An id already validated as non-negative (a slot of a checked CSR):
    /// a plain widening, without [`Index::to_usize`]'s negative check that
    /// costs a `test` + `cmov` per gathered edge in the kernels' hot loops.
    fn to_usize_valid(self) -> usize;
    /// Narrows `v`; `None` when it does not fit.
    fn try_from_usize(v: usize) -> Option<Self>;
    /// Narrows `v` that the caller has already checked to be `<= MAX_USIZE`.
    fn from_usize(v: usize) -> Self;
    /// Widens to `i64` (lossless for both id types).
    fn to_i64(self) -> i64;
    /// `ids` as `i32`s when `Self` is `i32` (for the vector id paths of
    /// [`crate::isa::Simd::edge_offsets`]), else `None`.
    fn as_i32s(ids: &[Self]) -> Option<&[i32]>;
    /// `ids` as `i64`s when `Self` is `i64`, else `None`.
    fn as_i64s(ids: &[Self]) -> Option<&[i64]>;
}

macro_rules! impl_index {
    ($t:ty, $name:literal, $as_i32s:expr, $as_i64s:expr) => {
        impl Index for $t {
            const NAME: &'static str = $name;
            const MAX_USIZE: usize = <$t>::MAX as usize;
            const NONE: Self = -1;

            #[inline(always)]
            fn to_usize(self) -> usize {
                usize::try_from(self).unwrap_or(usize::MAX)
            }
            #[inline(always)]
            fn to_usize_valid(self) -> usize {
                debug_assert!(self >= 0);
                self as usize
            }
            #[inline(always)]
            fn try_from_usize(v: usize) -> Option<Self> {
                <$t>::try_from(v).ok()
            }
            #[inline(always)]
            fn from_usize(v: usize) -> Self {
                debug_assert!(v <= Self::MAX_USIZE);
                v as $t
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                i64::from(self)
            }
            #[inline(always)]
            fn as_i32s(ids: &[Self]) -> Option<&[i32]> {
                ($as_i32s)(ids)
            }
            fn as_i64s(ids: &[Self]) -> Option<&[i64]> {
                ($as_i64s)(ids)
            }
        }
    };
}

impl_index!(i32, "int32", Some, |_| None);
impl_index!(i64, "int64", |_| None, Some);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_ids_never_look_in_range() {
        assert_eq!((-1i32).to_usize(), usize::MAX);
        assert_eq!((-5i64).to_usize(), usize::MAX);
        assert_eq!(7i32.to_usize(), 7);
    }

    #[test]
    fn narrowing_reports_overflow() {
        assert_eq!(i32::try_from_usize(1 << 31), None);
        assert_eq!(i32::try_from_usize((1 << 31) - 1), Some(i32::MAX));
        assert_eq!(i64::try_from_usize(1 << 40), Some(1 << 40));
    }

    #[test]
    fn only_i32_ids_are_i32s() {
        assert_eq!(i32::as_i32s(&[3, -1]), Some(&[3, -1][..]));
        assert_eq!(i64::as_i32s(&[3, -1]), None);
    }
}
