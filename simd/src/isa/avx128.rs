//! x86-64-v3 vocabulary on 128-bit registers: AVX2 + FMA, 4 `f32` lanes.
//!
//! Not a level of its own: [`super::with_row_token`] runs kernels whose rows
//! hold at most 4 floats (edge softmax over `[E, h]` logits with `h <= 4`)
//! on it at the AVX2 and AVX-512 levels. A wider register carries dead
//! lanes through every operation (the exponential's twenty and the divide,
//! per edge), and its partial loads and stores need a mask, where one and
//! two floats here are plain `vmovss`/`vmovq`. On the model-167 Xeon VM
//! (2^20 / 2^24, `kernel_bench`, rounds alternated) the range scheme took
//! 201–206 ms on RMAT `[E, 4]` against 219–224 ms with zmm registers, and
//! 114–127 ms on uniform `[E, 1]` against 367–380 ms
//! (`perf-reports/ablation/2026-11-28_xeon-m167_narrow-row-vectors.tsv`;
//! docs/PERFORMANCE.md, "Partial vectors").

use super::{Simd, Task};
use std::arch::x86_64::*;
// Miri cannot run `movntps` (inline assembly); an explicit import shadows the glob.
#[cfg(miri)]
use super::miri_stand_ins::_mm_stream_ps;

/// Capability token for AVX2 + FMA on xmm registers. Holding one proves the
/// CPU runs them.
#[derive(Clone, Copy, Debug)]
pub struct Avx128 {
    _private: (),
}

impl Avx128 {
    /// The token, if this CPU supports AVX2 and FMA.
    pub fn try_new() -> Option<Self> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")).then_some(Self { _private: () })
    }
}

#[target_feature(enable = "avx,avx2,fma")]
fn vectorize_avx128<T: Task>(s: Avx128, task: T) -> T::Output {
    task.run(s)
}

/// Lanes `0..n` all-ones (`n <= 4`), the mask `vmaskmovps` takes.
#[inline(always)]
fn tail_mask(s: Avx128, n: usize) -> __m128i {
    let _ = s;
    // SAFETY: the token proves SSE2. Lane i is -1 when i < n.
    unsafe { _mm_cmpgt_epi32(_mm_set1_epi32(n as i32), _mm_setr_epi32(0, 1, 2, 3)) }
}

/// `out[l] = table[idx[l]]` for lanes `l < n`, lane by lane (the gathers of
/// winning edge ids; the edge softmax, which this vocabulary serves, has none).
///
/// # Safety
/// The CPU supports SSE2 (every x86-64 does); `table.offset(idx[l])` readable
/// and `out.add(l)` writable for every `l < n <= 4`.
#[inline(always)]
unsafe fn gather_by_lane<T: Copy>(table: *const T, idx: __m128i, out: *mut T, n: usize) {
    let mut at = [0i32; 4];
    // SAFETY: `at` holds 4 ints; the lanes `l < n` are the caller's.
    unsafe {
        _mm_storeu_si128(at.as_mut_ptr().cast(), idx);
        for (l, &i) in at.iter().enumerate().take(n) {
            *out.add(l) = *table.offset(i as isize);
        }
    }
}

// SAFETY (for every `unsafe` block below that calls an intrinsic): a value
// of `Avx128` exists only if the CPU supports AVX2 and FMA (which imply AVX,
// SSE4.1 and SSE2).
impl Simd for Avx128 {
    type F32 = __m128;
    type I32 = __m128i;
    /// All-ones lanes where true (the form `blendvps` reads).
    type Mask = __m128;
    const LANES: usize = 4;
    /// xmm0-xmm15 (VEX encoding; xmm16-31 need AVX-512VL).
    const REGISTERS: usize = 16;
    const NAME: &'static str = "avx128";
    const COMPARES_I64: bool = true;
    const EDGE_OFFSETS_GATHER: bool = false;
    const MIN_U32: bool = true;

    #[inline(always)]
    fn vectorize<T: Task>(self, task: T) -> T::Output {
        // SAFETY: the token proves the target features of the trampoline.
        unsafe { vectorize_avx128(self, task) }
    }

    #[inline(always)]
    fn splat(self, x: f32) -> __m128 {
        // SAFETY: the token proves SSE.
        unsafe { _mm_set1_ps(x) }
    }
    #[inline(always)]
    fn add(self, a: __m128, b: __m128) -> __m128 {
        // SAFETY: the token proves SSE.
        unsafe { _mm_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m128, b: __m128) -> __m128 {
        // SAFETY: the token proves SSE.
        unsafe { _mm_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m128, b: __m128) -> __m128 {
        // SAFETY: the token proves SSE.
        unsafe { _mm_mul_ps(a, b) }
    }
    #[inline(always)]
    fn div(self, a: __m128, b: __m128) -> __m128 {
        // SAFETY: the token proves SSE.
        unsafe { _mm_div_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m128, b: __m128, c: __m128) -> __m128 {
        // SAFETY: the token proves FMA.
        unsafe { _mm_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn reduce_sum(self, a: __m128) -> f32 {
        // SAFETY: the token proves SSE. Same pairing as the wider levels'
        // last steps: (0 + 2) + (1 + 3).
        unsafe {
            let s = _mm_add_ps(a, _mm_movehl_ps(a, a));
            let s = _mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s));
            _mm_cvtss_f32(s)
        }
    }
    #[inline(always)]
    fn max(self, a: __m128, b: __m128) -> __m128 {
        // SAFETY: the token proves SSE.
        unsafe { _mm_max_ps(a, b) }
    }
    #[inline(always)]
    fn min(self, a: __m128, b: __m128) -> __m128 {
        // SAFETY: the token proves SSE.
        unsafe { _mm_min_ps(a, b) }
    }
    #[inline(always)]
    fn lt(self, a: __m128, b: __m128) -> __m128 {
        // SAFETY: the token proves AVX (the VEX compare with a predicate).
        unsafe { _mm_cmp_ps::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn replaces_max(self, val: __m128, acc: __m128) -> __m128 {
        // SAFETY: the token proves AVX. NLE_UQ: `!(val <= acc)`; ORD keeps a NaN accumulator.
        unsafe { _mm_and_ps(_mm_cmp_ps::<_CMP_NLE_UQ>(val, acc), _mm_cmp_ps::<_CMP_ORD_Q>(acc, acc)) }
    }
    #[inline(always)]
    fn replaces_min(self, val: __m128, acc: __m128) -> __m128 {
        // SAFETY: the token proves AVX. NGE_UQ: `!(val >= acc)`.
        unsafe { _mm_and_ps(_mm_cmp_ps::<_CMP_NGE_UQ>(val, acc), _mm_cmp_ps::<_CMP_ORD_Q>(acc, acc)) }
    }
    #[inline(always)]
    fn select(self, m: __m128, a: __m128, b: __m128) -> __m128 {
        // SAFETY: the token proves SSE4.1.
        unsafe { _mm_blendv_ps(b, a, m) }
    }
    #[inline(always)]
    fn round(self, a: __m128) -> __m128 {
        // SAFETY: the token proves SSE4.1.
        unsafe { _mm_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn pow2i(self, n: __m128) -> __m128 {
        // SAFETY: the token proves SSE2. (n + 127) << 23 is the IEEE bit
        // pattern of 2^n for n in -126..=127.
        unsafe {
            let biased = _mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127));
            _mm_castsi128_ps(_mm_slli_epi32::<23>(biased))
        }
    }
    #[inline(always)]
    fn prefetch(self, ptr: *const f32) {
        // SAFETY: `prefetcht0` is a hint: it never faults on any address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.cast()) }
    }
    #[inline(always)]
    fn splat_i32(self, x: i32) -> __m128i {
        // SAFETY: the token proves SSE2.
        unsafe { _mm_set1_epi32(x) }
    }
    #[inline(always)]
    fn select_i32(self, m: __m128, a: __m128i, b: __m128i) -> __m128i {
        // SAFETY: the token proves SSE4.1; blendvps moves 32-bit lanes bit-exactly.
        unsafe { _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(b), _mm_castsi128_ps(a), m)) }
    }

    #[inline(always)]
    unsafe fn load(self, ptr: *const f32) -> __m128 {
        // SAFETY: the token proves SSE; the caller guarantees 4 readable floats.
        unsafe { _mm_loadu_ps(ptr) }
    }
    #[inline(always)]
    unsafe fn store(self, ptr: *mut f32, v: __m128) {
        // SAFETY: the token proves SSE; the caller guarantees 4 writable floats.
        unsafe { _mm_storeu_ps(ptr, v) }
    }
    #[inline(always)]
    unsafe fn load_partial(self, ptr: *const f32, n: usize) -> __m128 {
        // One and two lanes as plain 4- and 8-byte loads (`vmovss`, `vmovq`),
        // which need no mask; three through `vmaskmovps`.
        // SAFETY: the token proves AVX2; each form reads exactly `n` floats
        // (`vmaskmovps` does not access masked-off lanes), which the caller
        // guarantees; `_mm_loadl_epi64` reads unaligned; the other lanes are zero.
        unsafe {
            match n {
                0 => _mm_setzero_ps(),
                1 => _mm_load_ss(ptr),
                2 => _mm_castsi128_ps(_mm_loadl_epi64(ptr.cast())),
                _ => _mm_maskload_ps(ptr, tail_mask(self, n)),
            }
        }
    }
    #[inline(always)]
    unsafe fn store_partial(self, ptr: *mut f32, v: __m128, n: usize) {
        // As in `load_partial`: `vmovss`, `vmovq`, then `vmaskmovps`.
        // SAFETY: as for `load_partial`: only the first `n` lanes are
        // written; `_mm_storel_epi64` writes unaligned.
        unsafe {
            match n {
                0 => {}
                1 => _mm_store_ss(ptr, v),
                2 => _mm_storel_epi64(ptr.cast(), _mm_castps_si128(v)),
                _ => _mm_maskstore_ps(ptr, tail_mask(self, n), v),
            }
        }
    }
    #[inline(always)]
    unsafe fn stream(self, ptr: *mut f32, v: __m128) {
        // SAFETY: the token proves SSE; the caller guarantees 4 writable
        // floats at a 16-byte aligned address.
        unsafe { _mm_stream_ps(ptr, v) }
    }
    #[inline(always)]
    fn store_fence(self) {
        super::sfence()
    }
    #[inline(always)]
    unsafe fn store_i32(self, ptr: *mut i32, v: __m128i) {
        // SAFETY: the token proves SSE2; the caller guarantees 4 writable ints.
        unsafe { _mm_storeu_si128(ptr.cast(), v) }
    }
    #[inline(always)]
    unsafe fn load_i32(self, ptr: *const i32) -> __m128i {
        // SAFETY: the token proves SSE2; the caller guarantees 4 readable ints.
        unsafe { _mm_loadu_si128(ptr.cast()) }
    }
    #[inline(always)]
    unsafe fn gather_i32(self, table: *const i32, idx: __m128i, out: *mut i32, n: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { gather_by_lane(table, idx, out, n) }
    }
    #[inline(always)]
    unsafe fn gather_i64(self, table: *const i64, idx: __m128i, out: *mut i64, n: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { gather_by_lane(table, idx, out, n) }
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
        // SAFETY: forwarded from the caller, with LANES = 4.
        unsafe { super::edge_offsets_by_lane(4, (ids, n), edge_src, rows_len_col, out) }
    }
    #[inline(always)]
    unsafe fn scatter_add(self, table: *mut f32, idx: *const i32, x: __m128) {
        let mut lanes = [0.0; 4];
        // SAFETY: the token proves SSE; `lanes` holds 4 floats; the rest is
        // forwarded from the caller.
        unsafe {
            _mm_storeu_ps(lanes.as_mut_ptr(), x);
            super::scatter_add_by_lane(table, idx, &lanes)
        }
    }
}
