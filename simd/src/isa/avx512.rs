//! x86-64-v4 vocabulary: AVX-512 F/BW/DQ/VL, 16 `f32` lanes, k-mask tails.

use super::{Simd, Task};
use std::arch::x86_64::*;
// Miri cannot run these; an explicit import shadows the glob.
#[cfg(miri)]
use super::miri_stand_ins::{
    _mm512_cmp_ps_mask, _mm512_cvtps_epi32, _mm512_mask_cmp_ps_mask, _mm512_mask_i32gather_epi32,
    _mm512_mask_i32gather_epi64, _mm512_mask_i32gather_ps, _mm512_mask_i32scatter_ps, _mm512_max_ps, _mm512_min_ps,
    _mm512_roundscale_ps, _mm512_stream_ps,
};

/// Capability token for AVX-512 F/BW/DQ/VL (plus AVX2 and FMA, which every
/// such CPU has). Holding one proves the CPU runs these instructions.
#[derive(Clone, Copy, Debug)]
pub struct Avx512 {
    _private: (),
}

impl Avx512 {
    /// The token, if this CPU supports AVX-512 F/BW/DQ/VL.
    pub fn try_new() -> Option<Self> {
        let ok = is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512dq")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma");
        ok.then_some(Self { _private: () })
    }

    /// The token without checking.
    ///
    /// # Safety
    /// The CPU must support AVX-512 F, BW, DQ and VL, AVX2 and FMA.
    pub unsafe fn new_unchecked() -> Self {
        Self { _private: () }
    }
}

/// `n` low bits set: the lanes of a partial vector (`n <= 16`).
#[inline(always)]
fn tail_mask(n: usize) -> __mmask16 {
    debug_assert!(n <= 16);
    ((1u32 << n) - 1) as __mmask16
}

#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx,avx2,fma")]
fn vectorize_avx512<T: Task>(s: Avx512, task: T) -> T::Output {
    task.run(s)
}

// SAFETY (for every `unsafe` block below that calls an intrinsic): a value
// of `Avx512` exists only if the CPU supports AVX-512 F/BW/DQ/VL, AVX2 and
// FMA (see `try_new` / `new_unchecked`), so the instructions are available.
impl Simd for Avx512 {
    type F32 = __m512;
    type I32 = __m512i;
    type Mask = __mmask16;
    const LANES: usize = 16;
    /// zmm0-zmm31.
    const REGISTERS: usize = 32;
    const NAME: &'static str = "avx512";
    const COMPARES_I64: bool = true;
    const EDGE_OFFSETS_GATHER: bool = true;
    const MIN_U32: bool = true;

    #[inline(always)]
    fn vectorize<T: Task>(self, task: T) -> T::Output {
        // SAFETY: the token proves the target features of the trampoline.
        unsafe { vectorize_avx512(self, task) }
    }

    #[inline(always)]
    fn splat(self, x: f32) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    fn add(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    fn div(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_div_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn reduce_sum(self, a: __m512) -> f32 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_reduce_add_ps(a) }
    }
    #[inline(always)]
    fn max(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_max_ps(a, b) }
    }
    #[inline(always)]
    fn min(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_min_ps(a, b) }
    }
    #[inline(always)]
    fn lt(self, a: __m512, b: __m512) -> __mmask16 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn replaces_max(self, val: __m512, acc: __m512) -> __mmask16 {
        // SAFETY: the token proves AVX-512F. NLE_UQ: `!(val <= acc)`, true
        // when either is NaN; the ORD mask on `acc` keeps a NaN accumulator.
        unsafe { _mm512_mask_cmp_ps_mask::<_CMP_NLE_UQ>(_mm512_cmp_ps_mask::<_CMP_ORD_Q>(acc, acc), val, acc) }
    }
    #[inline(always)]
    fn replaces_min(self, val: __m512, acc: __m512) -> __mmask16 {
        // SAFETY: the token proves AVX-512F. NGE_UQ: `!(val >= acc)`.
        unsafe { _mm512_mask_cmp_ps_mask::<_CMP_NGE_UQ>(_mm512_cmp_ps_mask::<_CMP_ORD_Q>(acc, acc), val, acc) }
    }
    #[inline(always)]
    fn select(self, m: __mmask16, a: __m512, b: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_mask_blend_ps(m, b, a) }
    }
    #[inline(always)]
    fn round(self, a: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn pow2i(self, n: __m512) -> __m512 {
        // SAFETY: the token proves AVX-512F. (n + 127) << 23 is the IEEE
        // bit pattern of 2^n for n in -126..=127.
        unsafe {
            let biased = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
            _mm512_castsi512_ps(_mm512_slli_epi32::<23>(biased))
        }
    }
    #[inline(always)]
    fn prefetch(self, ptr: *const f32) {
        // SAFETY: `prefetcht0` is a hint: it never faults on any address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.cast()) }
    }
    #[inline(always)]
    fn splat_i32(self, x: i32) -> __m512i {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_set1_epi32(x) }
    }
    #[inline(always)]
    fn select_i32(self, m: __mmask16, a: __m512i, b: __m512i) -> __m512i {
        // SAFETY: the token proves AVX-512F.
        unsafe { _mm512_mask_blend_epi32(m, b, a) }
    }

    #[inline(always)]
    unsafe fn load(self, ptr: *const f32) -> __m512 {
        // SAFETY: the token proves AVX-512F; the caller guarantees 16 readable floats.
        unsafe { _mm512_loadu_ps(ptr) }
    }
    #[inline(always)]
    unsafe fn store(self, ptr: *mut f32, v: __m512) {
        // SAFETY: the token proves AVX-512F; the caller guarantees 16 writable floats.
        unsafe { _mm512_storeu_ps(ptr, v) }
    }
    #[inline(always)]
    unsafe fn load_partial(self, ptr: *const f32, n: usize) -> __m512 {
        // The narrowest register that holds `n` lanes: a 64-byte masked
        // access spans two cache lines unless it starts line-aligned, and on
        // Zen 5 a 4-lane access through a zmm mask cost about as much as a
        // second random line (edge softmax over `[E, 4]` rows, uniform 2^20 /
        // 2^24: 239 ms with zmm masks, 131 ms with xmm ones; 1 lane 240 ->
        // 179 ms; docs/PERFORMANCE.md, "Partial vectors").
        // SAFETY: the token proves AVX-512F/VL; masked-off lanes are not
        // accessed (no fault), and the caller guarantees `n` readable floats.
        unsafe {
            if n <= 4 {
                _mm512_zextps128_ps512(_mm_maskz_loadu_ps(tail_mask(n) as __mmask8, ptr))
            } else if n <= 8 {
                _mm512_zextps256_ps512(_mm256_maskz_loadu_ps(tail_mask(n) as __mmask8, ptr))
            } else {
                _mm512_maskz_loadu_ps(tail_mask(n), ptr)
            }
        }
    }
    #[inline(always)]
    unsafe fn store_partial(self, ptr: *mut f32, v: __m512, n: usize) {
        // Narrowest register, as in `load_partial`.
        // SAFETY: as for `load_partial`: only the first `n` lanes are written.
        unsafe {
            if n <= 4 {
                _mm_mask_storeu_ps(ptr, tail_mask(n) as __mmask8, _mm512_castps512_ps128(v))
            } else if n <= 8 {
                _mm256_mask_storeu_ps(ptr, tail_mask(n) as __mmask8, _mm512_castps512_ps256(v))
            } else {
                _mm512_mask_storeu_ps(ptr, tail_mask(n), v)
            }
        }
    }
    #[inline(always)]
    unsafe fn stream(self, ptr: *mut f32, v: __m512) {
        // SAFETY: the token proves AVX-512F; the caller guarantees 16
        // writable floats at a 64-byte aligned address.
        unsafe { _mm512_stream_ps(ptr, v) }
    }
    #[inline(always)]
    fn store_fence(self) {
        super::sfence()
    }
    #[inline(always)]
    unsafe fn store_i32(self, ptr: *mut i32, v: __m512i) {
        // SAFETY: the token proves AVX-512F; the caller guarantees 16 writable ints.
        unsafe { _mm512_storeu_si512(ptr.cast(), v) }
    }
    #[inline(always)]
    unsafe fn load_i32(self, ptr: *const i32) -> __m512i {
        // SAFETY: the token proves AVX-512F; the caller guarantees 16 readable ints.
        unsafe { _mm512_loadu_si512(ptr.cast()) }
    }
    #[inline(always)]
    unsafe fn load_narrow_i32(self, ptr: *const u8, bytes: usize, n: usize) -> __m512i {
        // SAFETY: the token proves AVX-512F/BW/VL; masked-off lanes are not
        // read, the caller guarantees the `n` others.
        unsafe {
            let k = tail_mask(n);
            match bytes {
                1 => _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, ptr.cast())),
                2 => _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(k, ptr.cast())),
                _ => _mm512_maskz_loadu_epi32(k, ptr.cast()),
            }
        }
    }
    #[inline(always)]
    unsafe fn store_narrow_i32(self, ptr: *mut u8, bytes: usize, v: __m512i, n: usize) {
        // SAFETY: as for `load_narrow_i32`; masked-off lanes are not written.
        unsafe {
            let k = tail_mask(n);
            match bytes {
                1 => _mm_mask_storeu_epi8(ptr.cast(), k, _mm512_cvtepi32_epi8(v)),
                2 => _mm256_mask_storeu_epi16(ptr.cast(), k, _mm512_cvtepi32_epi16(v)),
                _ => _mm512_mask_storeu_epi32(ptr.cast(), k, v),
            }
        }
    }
    #[inline(always)]
    unsafe fn gather_i32(self, table: *const i32, idx: __m512i, out: *mut i32, n: usize) {
        // One `vpgatherdd` for 16 lanes where a scalar loop spends ~5
        // instructions per lane: copy_u_max at d = 32 looks up 32 ids per
        // arg output and row, against ~8 instructions per gathered edge.
        // SAFETY: the token proves AVX-512F; masked-off lanes are neither
        // read nor written, the caller guarantees the others.
        unsafe {
            let k = tail_mask(n);
            let ids = _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), k, idx, table);
            _mm512_mask_storeu_epi32(out, k, ids);
        }
    }
    #[inline(always)]
    unsafe fn gather_i64(self, table: *const i64, idx: __m512i, out: *mut i64, n: usize) {
        // SAFETY: as for `gather_i32`, eight 64-bit lanes per `vpgatherdq`.
        unsafe {
            let k = tail_mask(n);
            let (lo, hi) = (k as __mmask8, (k >> 8) as __mmask8);
            let zero = _mm512_setzero_si512();
            let ids = _mm512_mask_i32gather_epi64::<8>(zero, lo, _mm512_castsi512_si256(idx), table);
            _mm512_mask_storeu_epi64(out, lo, ids);
            if n > 8 {
                let ids = _mm512_mask_i32gather_epi64::<8>(zero, hi, _mm512_extracti64x4_epi64::<1>(idx), table);
                _mm512_mask_storeu_epi64(out.add(8), hi, ids);
            }
        }
    }
    #[inline(always)]
    unsafe fn edge_offsets(
        self,
        ids: *const i32,
        n: usize,
        edge_src: &[i32],
        (num_rows, row_len, col): (usize, usize, usize),
        out: *mut i32,
    ) {
        // One masked load, two unsigned compares (a negative id is a huge
        // unsigned one) and one `vpgatherdd` for 16 lanes. The lane-by-lane
        // form's chain of checks and dependent loads made `arg_scatter`
        // about 2x slower (RMAT 2^16 / 2^20 on an Intel Xeon VM: 7.3 ->
        // 3.4 ms at d = 32, 24 -> 11.6 ms at d = 128; perf-reports/ablation/
        // 2026-11-27_xeon_arg-scatter-backward.tsv). Bounds clamp to 2^31,
        // which no `i32` reaches.
        // SAFETY: the token proves AVX-512F; the load reads the first `n`
        // ids, the gather only lanes whose id is below `edge_src.len()`,
        // and `out` takes 16 ints (the caller's contract); the offsets fit
        // `i32` because `num_rows · row_len <= i32::MAX` and `col + n <= row_len`.
        unsafe {
            let bound = |x: usize| _mm512_set1_epi32(x.min(1 << 31) as u32 as i32);
            let e = _mm512_maskz_loadu_epi32(tail_mask(n), ids);
            let is_edge = _mm512_mask_cmplt_epu32_mask(tail_mask(n), e, bound(edge_src.len()));
            let u = _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), is_edge, e, edge_src.as_ptr());
            let is_row = _mm512_mask_cmplt_epu32_mask(is_edge, u, bound(num_rows));
            let lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
            let first = _mm512_add_epi32(lanes, _mm512_set1_epi32(col as i32));
            let at = _mm512_add_epi32(_mm512_mullo_epi32(u, _mm512_set1_epi32(row_len as i32)), first);
            _mm512_storeu_si512(out.cast(), _mm512_mask_blend_epi32(is_row, _mm512_set1_epi32(-1), at));
        }
    }
    #[inline(always)]
    unsafe fn scatter_add(self, table: *mut f32, idx: *const i32, x: __m512) {
        // 16 random read-modify-writes issued per `vgatherdps` /
        // `vscatterdps` pair. Alone, with offsets computed lane by lane, the
        // pair did not beat scalar loads, adds and stores (prototype
        // `vecb` against `scalar`, perf-reports/ablation/
        // 2026-11-27_xeon_arg-scatter-backward.tsv, section 1c); with the
        // vector id lookup of `edge_offsets` it did in seven of eight pairs
        // (`vec`: 0.85-1.5x the scalar form's speed, sections 1a and 1c).
        // SAFETY: the token proves AVX-512F; the caller guarantees 16
        // readable ids, and for the active lanes (`idx >= 0`, the mask)
        // readable, writable and distinct elements; inactive lanes are
        // neither read nor written.
        unsafe {
            let at = _mm512_loadu_si512(idx.cast());
            let active = _mm512_cmpge_epi32_mask(at, _mm512_setzero_si512());
            let old = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), active, at, table);
            _mm512_mask_i32scatter_ps::<4>(table, active, at, _mm512_add_ps(old, x));
        }
    }
}
