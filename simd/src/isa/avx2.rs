//! x86-64-v3 vocabulary: AVX2 + FMA, 8 `f32` lanes, `vmaskmov` tails.

use super::{Simd, Task};
use std::arch::x86_64::*;
// Miri cannot run `vmovntps` (inline assembly); an explicit import shadows the glob.
#[cfg(miri)]
use super::miri_stand_ins::_mm256_stream_ps;

/// Capability token for AVX2 + FMA. Holding one proves the CPU runs them.
#[derive(Clone, Copy, Debug)]
pub struct Avx2 {
    _private: (),
}

impl Avx2 {
    /// The token, if this CPU supports AVX2 and FMA.
    pub fn try_new() -> Option<Self> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")).then_some(Self { _private: () })
    }

    /// The token without checking.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    pub unsafe fn new_unchecked() -> Self {
        Self { _private: () }
    }
}

#[target_feature(enable = "avx,avx2,fma")]
fn vectorize_avx2<T: Task>(s: Avx2, task: T) -> T::Output {
    task.run(s)
}

/// Lanes `0..n` all-ones (`n <= 8`), the mask `vmaskmovps` takes.
#[inline(always)]
fn tail_mask(s: Avx2, n: usize) -> __m256i {
    let _ = s;
    // SAFETY: the token proves AVX2. Lane i is -1 when i < n.
    unsafe { _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)) }
}

// SAFETY (for every `unsafe` block below that calls an intrinsic): a value
// of `Avx2` exists only if the CPU supports AVX2 and FMA.
impl Simd for Avx2 {
    type F32 = __m256;
    type I32 = __m256i;
    /// All-ones lanes where true (the form `blendvps` reads).
    type Mask = __m256;
    const LANES: usize = 8;
    /// ymm0-ymm15.
    const REGISTERS: usize = 16;
    const NAME: &'static str = "avx2";
    const COMPARES_I64: bool = true;
    const EDGE_OFFSETS_GATHER: bool = false;
    const MIN_U32: bool = true;

    #[inline(always)]
    fn vectorize<T: Task>(self, task: T) -> T::Output {
        // SAFETY: the token proves the target features of the trampoline.
        unsafe { vectorize_avx2(self, task) }
    }

    #[inline(always)]
    fn splat(self, x: f32) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    fn add(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    fn div(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_div_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: the token proves FMA.
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn reduce_sum(self, a: __m256) -> f32 {
        // SAFETY: the token proves AVX (and SSE, which AVX implies).
        unsafe {
            let s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s));
            _mm_cvtss_f32(s)
        }
    }
    #[inline(always)]
    fn max(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_max_ps(a, b) }
    }
    #[inline(always)]
    fn min(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_min_ps(a, b) }
    }
    #[inline(always)]
    fn lt(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn replaces_max(self, val: __m256, acc: __m256) -> __m256 {
        // SAFETY: the token proves AVX. NLE_UQ: `!(val <= acc)`; ORD keeps a NaN accumulator.
        unsafe { _mm256_and_ps(_mm256_cmp_ps::<_CMP_NLE_UQ>(val, acc), _mm256_cmp_ps::<_CMP_ORD_Q>(acc, acc)) }
    }
    #[inline(always)]
    fn replaces_min(self, val: __m256, acc: __m256) -> __m256 {
        // SAFETY: the token proves AVX. NGE_UQ: `!(val >= acc)`.
        unsafe { _mm256_and_ps(_mm256_cmp_ps::<_CMP_NGE_UQ>(val, acc), _mm256_cmp_ps::<_CMP_ORD_Q>(acc, acc)) }
    }
    #[inline(always)]
    fn select(self, m: __m256, a: __m256, b: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_blendv_ps(b, a, m) }
    }
    #[inline(always)]
    fn round(self, a: __m256) -> __m256 {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn pow2i(self, n: __m256) -> __m256 {
        // SAFETY: the token proves AVX2. (n + 127) << 23 is the IEEE bit
        // pattern of 2^n for n in -126..=127.
        unsafe {
            let biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
            _mm256_castsi256_ps(_mm256_slli_epi32::<23>(biased))
        }
    }
    #[inline(always)]
    fn prefetch(self, ptr: *const f32) {
        // SAFETY: `prefetcht0` is a hint: it never faults on any address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.cast()) }
    }
    #[inline(always)]
    fn splat_i32(self, x: i32) -> __m256i {
        // SAFETY: the token proves AVX.
        unsafe { _mm256_set1_epi32(x) }
    }
    #[inline(always)]
    fn select_i32(self, m: __m256, a: __m256i, b: __m256i) -> __m256i {
        // SAFETY: the token proves AVX; blendvps moves 32-bit lanes bit-exactly.
        unsafe { _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(b), _mm256_castsi256_ps(a), m)) }
    }

    #[inline(always)]
    unsafe fn load(self, ptr: *const f32) -> __m256 {
        // SAFETY: the token proves AVX; the caller guarantees 8 readable floats.
        unsafe { _mm256_loadu_ps(ptr) }
    }
    #[inline(always)]
    unsafe fn store(self, ptr: *mut f32, v: __m256) {
        // SAFETY: the token proves AVX; the caller guarantees 8 writable floats.
        unsafe { _mm256_storeu_ps(ptr, v) }
    }
    #[inline(always)]
    unsafe fn load_partial(self, ptr: *const f32, n: usize) -> __m256 {
        // An xmm `vmaskmovps` for up to 4 lanes: a 32-byte masked access may
        // span two cache lines, which cost as much as a second random line
        // (edge softmax `[E, 4]`, uniform 2^20 / 2^24 at this level: 193 ->
        // 134 ms; see the AVX-512 level).
        // SAFETY: the token proves AVX2; `vmaskmovps` does not access (or
        // fault on) masked-off lanes, and the caller guarantees `n` floats.
        unsafe {
            let mask = tail_mask(self, n);
            if n <= 4 {
                _mm256_zextps128_ps256(_mm_maskload_ps(ptr, _mm256_castsi256_si128(mask)))
            } else {
                _mm256_maskload_ps(ptr, mask)
            }
        }
    }
    #[inline(always)]
    unsafe fn store_partial(self, ptr: *mut f32, v: __m256, n: usize) {
        // Narrowest register, as in `load_partial`.
        // SAFETY: as for `load_partial`: only the first `n` lanes are written.
        unsafe {
            let mask = tail_mask(self, n);
            if n <= 4 {
                _mm_maskstore_ps(ptr, _mm256_castsi256_si128(mask), _mm256_castps256_ps128(v))
            } else {
                _mm256_maskstore_ps(ptr, mask, v)
            }
        }
    }
    #[inline(always)]
    unsafe fn stream(self, ptr: *mut f32, v: __m256) {
        // SAFETY: the token proves AVX; the caller guarantees 8 writable
        // floats at a 32-byte aligned address.
        unsafe { _mm256_stream_ps(ptr, v) }
    }
    #[inline(always)]
    fn store_fence(self) {
        super::sfence()
    }
    #[inline(always)]
    unsafe fn store_i32(self, ptr: *mut i32, v: __m256i) {
        // SAFETY: the token proves AVX; the caller guarantees 8 writable ints.
        unsafe { _mm256_storeu_si256(ptr.cast(), v) }
    }
    #[inline(always)]
    unsafe fn load_i32(self, ptr: *const i32) -> __m256i {
        // SAFETY: the token proves AVX; the caller guarantees 8 readable ints.
        unsafe { _mm256_loadu_si256(ptr.cast()) }
    }
    #[inline(always)]
    unsafe fn gather_i32(self, table: *const i32, idx: __m256i, out: *mut i32, n: usize) {
        // SAFETY: the token proves AVX2; masked-off lanes are neither read
        // nor written, the caller guarantees the others.
        unsafe {
            let mask = tail_mask(self, n);
            let ids = _mm256_mask_i32gather_epi32::<4>(_mm256_setzero_si256(), table, idx, mask);
            _mm256_maskstore_epi32(out, mask, ids);
        }
    }
    #[inline(always)]
    unsafe fn gather_i64(self, table: *const i64, idx: __m256i, out: *mut i64, n: usize) {
        // SAFETY: as for `gather_i32`, four 64-bit lanes per `vpgatherdq`;
        // a 64-bit lane's mask is `tail_mask`'s 32-bit lane, sign-extended.
        unsafe {
            let zero = _mm256_setzero_si256();
            let mask = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(tail_mask(self, n.min(4))));
            let ids = _mm256_mask_i32gather_epi64::<8>(zero, table, _mm256_castsi256_si128(idx), mask);
            _mm256_maskstore_epi64(out, mask, ids);
            if n > 4 {
                let mask = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(tail_mask(self, n - 4)));
                let ids = _mm256_mask_i32gather_epi64::<8>(zero, table, _mm256_extracti128_si256::<1>(idx), mask);
                _mm256_maskstore_epi64(out.add(4), mask, ids);
            }
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
        // SAFETY: forwarded from the caller, with LANES = 8.
        unsafe { super::edge_offsets_by_lane(8, (ids, n), edge_src, rows_len_col, out) }
    }
    #[inline(always)]
    unsafe fn scatter_add(self, table: *mut f32, idx: *const i32, x: __m256) {
        let mut lanes = [0.0; 8];
        // SAFETY: the token proves AVX; `lanes` holds 8 floats; the rest is
        // forwarded from the caller.
        unsafe {
            _mm256_storeu_ps(lanes.as_mut_ptr(), x);
            super::scatter_add_by_lane(table, idx, &lanes)
        }
    }
}
