//! Recycled `f32` buffers for activations, gradients and edge tensors.
//!
//! A full-graph epoch on RMAT 2^20 with 128 features handles a dozen
//! `N × 128` f32 tensors of 512 MiB each. Allocated fresh, each one is a new
//! glibc `mmap` whose 131,072 4-KiB pages fault in on first touch and are
//! returned to the kernel when it is freed: measured on the Zen 4 dev VM
//! (`examples/dense_ops.rs`, 2 threads), a fresh 512 MiB clone takes
//! 302 ms against 49 ms for a copy into an existing buffer. The pool hands
//! back buffers of earlier passes and epochs instead, so after the first
//! epoch no large buffer is allocated.
//!
//! Policy: best fit among the free buffers whose capacity is `len` to
//! `1.5·len`, so a smaller tensor (`N × 16` logits, GAT's `E × 4` edge
//! tensors beside `N × 128` activations) does not take a larger buffer
//! that the next larger request then misses. On a miss the largest free
//! buffer smaller than `len` is released before a new one is allocated (it
//! is being outgrown: mini-batches vary their sizes). New buffers reserve
//! [`HEADROOM`] extra capacity: untouched capacity costs address space only
//! (pages fault in when written), and it lets the next mini-batch's
//! slightly larger tensor reuse the buffer.
//!
//! Buffers start on a cache line ([`Buf`]): the kernels gather activation
//! rows at random, and a row that starts mid-line (glibc's `malloc` returns
//! large blocks 16 bytes into one) costs an extra line per gather whenever
//! its length is not a multiple of the offset's complement.

use super::Buf;
use gnnkern::aligned_with_capacity;

/// Extra capacity reserved by a new buffer, as a fraction (1/4) of its length.
const HEADROOM: usize = 4;

/// A free list of `f32` buffers.
#[derive(Debug, Default)]
pub struct BufferPool {
    free: Vec<Buf>,
}

impl BufferPool {
    /// A buffer of `len` elements whose contents are unspecified (whatever
    /// an earlier user left, or zeros): callers overwrite every element.
    pub fn take(&mut self, len: usize) -> Buf {
        let fits = |v: &Buf| v.capacity() >= len && v.capacity() <= len.saturating_add(len / 2).max(1);
        let best = (0..self.free.len()).filter(|&i| fits(&self.free[i])).min_by_key(|&i| self.free[i].capacity());
        let mut v = match best {
            Some(i) => self.free.swap_remove(i),
            None => {
                let outgrown = (0..self.free.len())
                    .filter(|&i| self.free[i].capacity() < len)
                    .max_by_key(|&i| self.free[i].capacity());
                if let Some(i) = outgrown {
                    self.free.swap_remove(i);
                }
                aligned_with_capacity(len + len / HEADROOM)
            }
        };
        if v.len() >= len {
            v.truncate(len);
        } else {
            v.resize(len, 0.0);
        }
        v
    }

    /// Returns `v` to the pool.
    pub fn give(&mut self, v: Buf) {
        if v.capacity() > 0 {
            self.free.push(v);
        }
    }

    /// Number of free buffers.
    #[cfg(test)]
    fn free_buffers(&self) -> usize {
        self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_the_smallest_buffer_that_fits() {
        let mut pool = BufferPool::default();
        let small = pool.take(100);
        let large = pool.take(1000);
        let (small_ptr, large_ptr) = (small.as_ptr(), large.as_ptr());
        pool.give(large);
        pool.give(small);
        let v = pool.take(90);
        assert_eq!(v.len(), 90);
        assert_eq!(v.as_ptr(), small_ptr);
        assert_eq!(v.as_ptr() as usize % gnnkern::CACHE_LINE, 0);
        // The large buffer holds 1250 (1000 plus headroom): a request of
        // 900 fits it (at most 1.5 times the request).
        let w = pool.take(900);
        assert_eq!(w.len(), 900);
        assert_eq!(w.as_ptr(), large_ptr);
        assert_eq!(pool.free_buffers(), 0);
    }

    #[test]
    fn a_small_request_leaves_a_much_larger_buffer_alone() {
        let mut pool = BufferPool::default();
        let large = pool.take(1000);
        let large_ptr = large.as_ptr();
        pool.give(large);
        let small = pool.take(100);
        assert_ne!(small.as_ptr(), large_ptr);
        let again = pool.take(1000);
        assert_eq!(again.as_ptr(), large_ptr);
    }

    #[test]
    fn growing_requests_do_not_accumulate_buffers() {
        let mut pool = BufferPool::default();
        for len in (1..50).map(|i| i * 1000) {
            let a = pool.take(len);
            let b = pool.take(len * 2);
            assert_eq!((a.len(), b.len()), (len, len * 2));
            pool.give(a);
            pool.give(b);
            assert!(pool.free_buffers() <= 2, "{} free buffers", pool.free_buffers());
        }
    }
}
