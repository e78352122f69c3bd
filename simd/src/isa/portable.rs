//! The fallback vocabulary: plain arrays of 8 lanes that run on any CPU
//! (the compiler maps them onto SSE2 on x86-64). Semantics match the x86
//! instructions of the other levels exactly (max/min return `b` on NaN,
//! round ties to even), so every level computes the same values.

use super::{Simd, Task};

/// The always-available token.
#[derive(Clone, Copy, Debug, Default)]
pub struct Portable;

const L: usize = 8;

#[inline(always)]
fn map(a: [f32; L], b: [f32; L], f: impl Fn(f32, f32) -> f32) -> [f32; L] {
    std::array::from_fn(|i| f(a[i], b[i]))
}

impl Simd for Portable {
    type F32 = [f32; L];
    type I32 = [i32; L];
    type Mask = [bool; L];
    const LANES: usize = L;
    /// On x86-64, 16 xmm registers of 4 lanes hold 8 vectors of 8.
    const REGISTERS: usize = 8;
    const NAME: &'static str = "portable";
    const COMPARES_I64: bool = false;
    const EDGE_OFFSETS_GATHER: bool = false;
    const MIN_U32: bool = false;

    #[inline(always)]
    fn vectorize<T: Task>(self, task: T) -> T::Output {
        task.run(self)
    }

    #[inline(always)]
    fn splat(self, x: f32) -> [f32; L] {
        [x; L]
    }
    #[inline(always)]
    fn add(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        map(a, b, |x, y| x + y)
    }
    #[inline(always)]
    fn sub(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        map(a, b, |x, y| x - y)
    }
    #[inline(always)]
    fn mul(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        map(a, b, |x, y| x * y)
    }
    #[inline(always)]
    fn div(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        map(a, b, |x, y| x / y)
    }
    #[inline(always)]
    fn mul_add(self, a: [f32; L], b: [f32; L], c: [f32; L]) -> [f32; L] {
        // Unfused: `f32::mul_add` is a libm call without hardware FMA.
        std::array::from_fn(|i| a[i] * b[i] + c[i])
    }
    #[inline(always)]
    fn reduce_sum(self, a: [f32; L]) -> f32 {
        // Pairwise, like the tree the x86 levels use.
        let s4: [f32; 4] = std::array::from_fn(|i| a[i] + a[i + 4]);
        (s4[0] + s4[2]) + (s4[1] + s4[3])
    }
    #[inline(always)]
    fn max(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        map(a, b, |x, y| if x > y { x } else { y })
    }
    #[inline(always)]
    fn min(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        map(a, b, |x, y| if x < y { x } else { y })
    }
    #[inline(always)]
    fn lt(self, a: [f32; L], b: [f32; L]) -> [bool; L] {
        std::array::from_fn(|i| a[i] < b[i])
    }
    #[inline(always)]
    fn replaces_max(self, val: [f32; L], acc: [f32; L]) -> [bool; L] {
        std::array::from_fn(|i| !acc[i].is_nan() && val[i].partial_cmp(&acc[i]).is_none_or(|o| o.is_gt()))
    }
    #[inline(always)]
    fn replaces_min(self, val: [f32; L], acc: [f32; L]) -> [bool; L] {
        std::array::from_fn(|i| !acc[i].is_nan() && val[i].partial_cmp(&acc[i]).is_none_or(|o| o.is_lt()))
    }
    #[inline(always)]
    fn select(self, m: [bool; L], a: [f32; L], b: [f32; L]) -> [f32; L] {
        std::array::from_fn(|i| if m[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    fn round(self, a: [f32; L]) -> [f32; L] {
        a.map(f32::round_ties_even)
    }
    #[inline(always)]
    fn pow2i(self, n: [f32; L]) -> [f32; L] {
        n.map(|x| f32::from_bits(((x as i32 + 127) as u32) << 23))
    }
    #[inline(always)]
    fn prefetch(self, _ptr: *const f32) {}
    #[inline(always)]
    fn splat_i32(self, x: i32) -> [i32; L] {
        [x; L]
    }
    #[inline(always)]
    fn select_i32(self, m: [bool; L], a: [i32; L], b: [i32; L]) -> [i32; L] {
        std::array::from_fn(|i| if m[i] { a[i] } else { b[i] })
    }

    #[inline(always)]
    unsafe fn load(self, ptr: *const f32) -> [f32; L] {
        // SAFETY: the caller guarantees `L` readable floats; unaligned read.
        unsafe { ptr.cast::<[f32; L]>().read_unaligned() }
    }
    #[inline(always)]
    unsafe fn store(self, ptr: *mut f32, v: [f32; L]) {
        // SAFETY: the caller guarantees `L` writable floats; unaligned write.
        unsafe { ptr.cast::<[f32; L]>().write_unaligned(v) }
    }
    #[inline(always)]
    unsafe fn load_partial(self, ptr: *const f32, n: usize) -> [f32; L] {
        let mut v = [0.0; L];
        // SAFETY: the caller guarantees `n <= L` readable floats at `ptr`.
        unsafe { std::ptr::copy_nonoverlapping(ptr, v.as_mut_ptr(), n) };
        v
    }
    #[inline(always)]
    unsafe fn store_partial(self, ptr: *mut f32, v: [f32; L], n: usize) {
        // SAFETY: the caller guarantees `n <= L` writable floats at `ptr`.
        unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), ptr, n) };
    }
    #[inline(always)]
    unsafe fn stream(self, ptr: *mut f32, v: [f32; L]) {
        // A plain store: the portable level has no non-temporal form.
        // SAFETY: forwarded from the caller.
        unsafe { self.store(ptr, v) }
    }
    #[inline(always)]
    fn store_fence(self) {}
    #[inline(always)]
    unsafe fn store_i32(self, ptr: *mut i32, v: [i32; L]) {
        // SAFETY: the caller guarantees `L` writable ints; unaligned write.
        unsafe { ptr.cast::<[i32; L]>().write_unaligned(v) }
    }
    #[inline(always)]
    unsafe fn load_i32(self, ptr: *const i32) -> [i32; L] {
        // SAFETY: the caller guarantees `L` readable ints; unaligned read.
        unsafe { ptr.cast::<[i32; L]>().read_unaligned() }
    }
    #[inline(always)]
    unsafe fn gather_i32(self, table: *const i32, idx: [i32; L], out: *mut i32, n: usize) {
        for (l, &i) in idx[..n].iter().enumerate() {
            // SAFETY: the caller guarantees both addresses for `l < n`.
            unsafe { *out.add(l) = *table.add(i as usize) };
        }
    }
    #[inline(always)]
    unsafe fn gather_i64(self, table: *const i64, idx: [i32; L], out: *mut i64, n: usize) {
        for (l, &i) in idx[..n].iter().enumerate() {
            // SAFETY: the caller guarantees both addresses for `l < n`.
            unsafe { *out.add(l) = *table.add(i as usize) };
        }
    }
    #[inline(always)]
    unsafe fn edge_offsets(
        self,
        ids: *const i32,
        n: usize,
        edge_src: &[i32],
        rows_len_col: (usize, usize, usize),
        out: *mut i32,
    ) {
        // SAFETY: forwarded from the caller, with LANES = L.
        unsafe { super::edge_offsets_by_lane(L, (ids, n), edge_src, rows_len_col, out) }
    }
    #[inline(always)]
    unsafe fn scatter_add(self, table: *mut f32, idx: *const i32, x: [f32; L]) {
        // SAFETY: forwarded from the caller.
        unsafe { super::scatter_add_by_lane(table, idx, &x) }
    }
}
