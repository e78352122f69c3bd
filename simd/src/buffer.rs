//! Cache-line aligned buffers, advised for huge pages when large.
//!
//! Every buffer this project allocates for the kernels (gnnkern's `Tensor`
//! storage, the edge softmax's node table, the gradients' scratch, the
//! benchmarks' operands and the model suite's tensors) comes
//! from here, because the kernels count on line-aligned rows. A row that
//! starts mid-line costs a line more whenever its length is not a multiple
//! of the offset's complement: a 128-byte feature row (d = 32) at 16 bytes
//! into a line spans 3 lines instead of 2 (copy_u_sum 1.4x slower on a
//! 2^24-edge graph), and a 32-byte softmax table row `[max | sum]` of 4
//! heads spans 2 lines in every other row, so phase 2 of the two-phase edge
//! softmax took two random misses per such edge, one of them never
//! prefetched (2.4-3.3x slower; docs/PERFORMANCE.md, "Alignment"). glibc's
//! `malloc`, behind `Vec`, returns large blocks 16 bytes into a line.

use aligned_vec::{AVec, ConstAlign};

/// Bytes of a cache line: the alignment of [`AlignedVec`].
pub const CACHE_LINE: usize = 64;

/// A `Vec`-like buffer whose data starts on a cache line. It derefs to a
/// slice; `aligned_vec`'s `AVec` API applies.
pub type AlignedVec<T> = AVec<T, ConstAlign<CACHE_LINE>>;

/// An empty [`AlignedVec`] with room for `len` elements, advised to use
/// huge pages when large ([`crate::huge_pages`]) before anything touches it.
pub fn aligned_with_capacity<T>(len: usize) -> AlignedVec<T> {
    let v = AlignedVec::<T>::with_capacity(CACHE_LINE, len);
    crate::huge_pages::advise(v.as_ptr().cast(), len.saturating_mul(size_of::<T>()));
    v
}

/// `len` copies of `value` in an [`AlignedVec`].
pub fn aligned_filled<T: Copy>(len: usize, value: T) -> AlignedVec<T> {
    let mut v = aligned_with_capacity(len);
    v.resize(len, value);
    v
}

/// A copy of `data` in an [`AlignedVec`].
pub fn aligned_copy<T: Copy>(data: &[T]) -> AlignedVec<T> {
    let mut v = aligned_with_capacity(data.len());
    v.extend_from_slice(data);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_start_on_a_line_and_hold_their_values() {
        for n in [0usize, 1, 3, 17, 1 << 20] {
            let v = aligned_filled(n, 2.5f32);
            assert_eq!(v.as_ptr() as usize % CACHE_LINE, 0, "filled({n})");
            assert!(v.len() == n && v.iter().all(|&x| x == 2.5));
            let data: Vec<i64> = (0..n as i64).collect();
            let c = aligned_copy(&data);
            assert_eq!(c.as_ptr() as usize % CACHE_LINE, 0, "copy({n})");
            assert_eq!(&c[..], &data[..]);
        }
    }
}
