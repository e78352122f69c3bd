//! Miri stand-ins for the `std::arch` intrinsics Miri cannot execute.
//!
//! Miri interprets all of `std::arch` that the AVX2 level uses but its
//! non-temporal store, and AVX-512's loads, stores, masks, blends and
//! arithmetic, but not:
//! - `movntps`/`vmovntps` (`_mm_stream_ps`, `_mm256_stream_ps`,
//!   `_mm512_stream_ps`), which `std::arch`
//!   writes as inline assembly;
//! - seven AVX-512 intrinsics that lower to `llvm.x86.avx512.*` calls it has
//!   no shim for (probed one by one, nightly 2026-05-19);
//! - the `f32` gather and the scatter of the max/min backward's scatter-add
//!   (`vgatherdps`, `vscatterdps`), added 2026-11-27 and not probed: taken
//!   to be as unsupported as the integer gathers.
//!
//! Under `cfg(miri)`, `avx128.rs`, `avx2.rs` and `avx512.rs` import them from here
//! instead (an explicit import shadows their `std::arch` glob), so Miri runs
//! the x86 kernels whole (`.ci/miri`):
//! - the streaming stores are aligned stores, with the same alignment
//!   contract (Miri models no cache, so "non-temporal" has nothing to model;
//!   `super::sfence` stands in for the fence that orders them);
//! - the gathers read, and the scatter writes, every active lane's address,
//!   exactly as `vpgatherdd`, `vpgatherdq`, `vgatherdps` and `vscatterdps`
//!   do, so Miri checks those addresses;
//! - the lane arithmetic follows Intel's pseudocode for each instruction.
//!
//! Compiled under Miri, and in native test builds for the bit-for-bit check
//! against the instructions below; the kernels use them only under Miri.

use std::arch::x86_64::{__m128, __m256, __m256i, __m512, __m512i, __mmask8, __mmask16};
use std::mem::transmute;

/// `movntps` of 4 floats: an aligned store of the vector.
///
/// # Safety
/// `mem_addr` writable for 4 floats and 16-byte aligned.
pub unsafe fn _mm_stream_ps(mem_addr: *mut f32, a: __m128) {
    // SAFETY: forwarded from the caller.
    unsafe { mem_addr.cast::<__m128>().write(a) }
}

/// `vmovntps` of 8 floats: an aligned store of the vector.
///
/// # Safety
/// `mem_addr` writable for 8 floats and 32-byte aligned (the instruction's
/// contract; the store's alignment makes Miri check it).
pub unsafe fn _mm256_stream_ps(mem_addr: *mut f32, a: __m256) {
    // SAFETY: forwarded from the caller.
    unsafe { mem_addr.cast::<__m256>().write(a) }
}

/// `vmovntps` of 16 floats: an aligned store of the vector.
///
/// # Safety
/// `mem_addr` writable for 16 floats and 64-byte aligned.
pub unsafe fn _mm512_stream_ps(mem_addr: *mut f32, a: __m512) {
    // SAFETY: forwarded from the caller.
    unsafe { mem_addr.cast::<__m512>().write(a) }
}

fn f32s(a: __m512) -> [f32; 16] {
    // SAFETY: both are 64 bytes of plain data, every bit pattern valid.
    unsafe { transmute::<__m512, [f32; 16]>(a) }
}

fn from_f32s(a: [f32; 16]) -> __m512 {
    // SAFETY: as in `f32s`.
    unsafe { transmute::<[f32; 16], __m512>(a) }
}

fn lanewise(a: __m512, b: __m512, f: impl Fn(f32, f32) -> f32) -> __m512 {
    let (a, b) = (f32s(a), f32s(b));
    from_f32s(std::array::from_fn(|i| f(a[i], b[i])))
}

/// `vmaxps`: the second operand unless the first is greater (so a NaN in
/// either, or ±0 against ±0, gives the second).
///
/// # Safety
/// None beyond the intrinsic's (it is `unsafe` so call sites read alike).
pub unsafe fn _mm512_max_ps(a: __m512, b: __m512) -> __m512 {
    lanewise(a, b, |x, y| if x > y { x } else { y })
}

/// `vminps`: the second operand unless the first is less.
///
/// # Safety
/// As for [`_mm512_max_ps`].
pub unsafe fn _mm512_min_ps(a: __m512, b: __m512) -> __m512 {
    lanewise(a, b, |x, y| if x < y { x } else { y })
}

/// The 32 `vcmpps` predicates. Bit 4 only chooses whether a quiet NaN
/// signals, which changes no result bit.
#[allow(clippy::neg_cmp_op_on_partial_ord, reason = "the N predicates are negations: true when unordered")]
fn holds<const P: i32>(a: f32, b: f32) -> bool {
    let unordered = a.is_nan() || b.is_nan();
    match P & 0xf {
        0x0 => !unordered && a == b, // EQ_OQ
        0x1 => a < b,                // LT_OS
        0x2 => a <= b,               // LE_OS
        0x3 => unordered,            // UNORD_Q
        0x4 => unordered || a != b,  // NEQ_UQ
        0x5 => !(a < b),             // NLT_US
        0x6 => !(a <= b),            // NLE_US
        0x7 => !unordered,           // ORD_Q
        0x8 => unordered || a == b,  // EQ_UQ
        0x9 => !(a >= b),            // NGE_US
        0xa => !(a > b),             // NGT_US
        0xb => false,                // FALSE_OQ
        0xc => !unordered && a != b, // NEQ_OQ
        0xd => a >= b,               // GE_OS
        0xe => a > b,                // GT_OS
        _ => true,                   // TRUE_UQ
    }
}

/// `vcmpps` into a mask.
///
/// # Safety
/// As for [`_mm512_max_ps`].
pub unsafe fn _mm512_cmp_ps_mask<const IMM8: i32>(a: __m512, b: __m512) -> __mmask16 {
    let (a, b) = (f32s(a), f32s(b));
    (0..16).filter(|&i| holds::<IMM8>(a[i], b[i])).fold(0, |m, i| m | 1 << i)
}

/// `vcmpps` under a mask: lanes off in `k1` are 0.
///
/// # Safety
/// As for [`_mm512_max_ps`].
pub unsafe fn _mm512_mask_cmp_ps_mask<const IMM8: i32>(k1: __mmask16, a: __m512, b: __m512) -> __mmask16 {
    // SAFETY: as above.
    k1 & unsafe { _mm512_cmp_ps_mask::<IMM8>(a, b) }
}

/// `vrndscaleps` with scale 2^0 (the only one the kernels use): bits 1:0
/// pick the rounding unless bit 2 defers to MXCSR (round to nearest even).
///
/// # Safety
/// As for [`_mm512_max_ps`].
pub unsafe fn _mm512_roundscale_ps<const IMM8: i32>(a: __m512) -> __m512 {
    const { assert!(IMM8 >> 4 == 0, "only the scale 2^0 has a stand-in") };
    let mode = if IMM8 & 4 != 0 { 0 } else { IMM8 & 3 };
    lanewise(a, a, |x, _| match mode {
        0 => x.round_ties_even(),
        1 => x.floor(),
        2 => x.ceil(),
        _ => x.trunc(),
    })
}

/// `vcvtps2dq` under MXCSR's default rounding (nearest even); NaN and
/// out-of-range lanes give the integer indefinite, `i32::MIN`.
///
/// # Safety
/// As for [`_mm512_max_ps`].
pub unsafe fn _mm512_cvtps_epi32(a: __m512) -> __m512i {
    let ints: [i32; 16] = f32s(a).map(|x| {
        let r = x.round_ties_even();
        if (-2_147_483_648.0..2_147_483_648.0).contains(&r) { r as i32 } else { i32::MIN }
    });
    // SAFETY: 64 bytes of plain data either way.
    unsafe { transmute::<[i32; 16], __m512i>(ints) }
}

/// `vpgatherdd`: lane `i` on in `mask` reads the `i32` at byte
/// `offsets[i] * SCALE` from `slice`; lanes off keep `src`.
///
/// # Safety
/// Every active lane's address is readable (the intrinsic's contract).
pub unsafe fn _mm512_mask_i32gather_epi32<const SCALE: i32>(
    src: __m512i,
    mask: __mmask16,
    offsets: __m512i,
    slice: *const i32,
) -> __m512i {
    // SAFETY: 64 bytes of plain data.
    let (mut out, offsets) =
        unsafe { (transmute::<__m512i, [i32; 16]>(src), transmute::<__m512i, [i32; 16]>(offsets)) };
    for (i, lane) in out.iter_mut().enumerate() {
        if mask >> i & 1 == 1 {
            // SAFETY: the caller guarantees the active lanes' addresses.
            *lane = unsafe { slice.byte_offset(offsets[i] as isize * SCALE as isize).read_unaligned() };
        }
    }
    // SAFETY: as above.
    unsafe { transmute::<[i32; 16], __m512i>(out) }
}

/// `vpgatherdq`: as [`_mm512_mask_i32gather_epi32`] with eight `i64` lanes
/// and eight `i32` offsets.
///
/// # Safety
/// As for [`_mm512_mask_i32gather_epi32`].
pub unsafe fn _mm512_mask_i32gather_epi64<const SCALE: i32>(
    src: __m512i,
    mask: __mmask8,
    offsets: __m256i,
    slice: *const i64,
) -> __m512i {
    // SAFETY: plain data of equal sizes (64 and 32 bytes).
    let (mut out, offsets) = unsafe { (transmute::<__m512i, [i64; 8]>(src), transmute::<__m256i, [i32; 8]>(offsets)) };
    for (i, lane) in out.iter_mut().enumerate() {
        if mask >> i & 1 == 1 {
            // SAFETY: the caller guarantees the active lanes' addresses.
            *lane = unsafe { slice.byte_offset(offsets[i] as isize * SCALE as isize).read_unaligned() };
        }
    }
    // SAFETY: as above.
    unsafe { transmute::<[i64; 8], __m512i>(out) }
}

/// `vgatherdps`: as [`_mm512_mask_i32gather_epi32`] with `f32` lanes.
///
/// # Safety
/// As for [`_mm512_mask_i32gather_epi32`].
pub unsafe fn _mm512_mask_i32gather_ps<const SCALE: i32>(
    src: __m512,
    mask: __mmask16,
    offsets: __m512i,
    slice: *const f32,
) -> __m512 {
    // SAFETY: 64 bytes of plain data each, every bit pattern valid; the
    // caller guarantees the active lanes' addresses.
    unsafe {
        let ints = _mm512_mask_i32gather_epi32::<SCALE>(transmute::<__m512, __m512i>(src), mask, offsets, slice.cast());
        transmute::<__m512i, __m512>(ints)
    }
}

/// `vscatterdps`: lane `i` on in `mask` writes its float at byte
/// `offsets[i] * SCALE` of `slice`, lanes in ascending order (so the
/// highest of equal offsets lands last); lanes off write nothing.
///
/// # Safety
/// Every active lane's address is writable (the intrinsic's contract).
pub unsafe fn _mm512_mask_i32scatter_ps<const SCALE: i32>(
    slice: *mut f32,
    mask: __mmask16,
    offsets: __m512i,
    src: __m512,
) {
    // SAFETY: 64 bytes of plain data.
    let offsets = unsafe { transmute::<__m512i, [i32; 16]>(offsets) };
    for (i, x) in f32s(src).into_iter().enumerate() {
        if mask >> i & 1 == 1 {
            // SAFETY: the caller guarantees the active lanes' addresses.
            unsafe { slice.byte_offset(offsets[i] as isize * SCALE as isize).write_unaligned(x) };
        }
    }
}

/// The stand-ins against the instructions, bit for bit, on a CPU with
/// AVX-512 (natively; under Miri there are no instructions to compare).
#[cfg(all(test, not(miri)))]
mod tests {
    use super::*;
    use std::arch::x86_64 as hw;

    const SPECIALS: [f32; 12] =
        [0.0, -0.0, 1.0, -1.5, 2.5, 3.5, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 3e9, -3e9, 1e-40];

    /// Vectors pairing every special with every special, then random lanes.
    fn pairs() -> Vec<(__m512, __m512)> {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            f32::from_bits(seed as u32 & 0xc7ff_ffff) // |x| < 2^65, any sign
        };
        let specials: Vec<(f32, f32)> = SPECIALS.iter().flat_map(|&a| SPECIALS.map(|b| (a, b))).collect();
        let mut out: Vec<([f32; 16], [f32; 16])> = specials
            .chunks(16)
            .map(|c| (std::array::from_fn(|i| c[i % c.len()].0), std::array::from_fn(|i| c[i % c.len()].1)))
            .collect();
        out.extend((0..64).map(|_| (std::array::from_fn(|_| next()), std::array::from_fn(|_| next()))));
        out.into_iter().map(|(a, b)| (from_f32s(a), from_f32s(b))).collect()
    }

    /// One cache line, aligned for both streaming stores.
    #[repr(align(64))]
    struct Line([f32; 16]);

    fn bits<T>(v: T) -> Vec<u8> {
        // SAFETY: reads the plain bytes of a SIMD value.
        unsafe { std::slice::from_raw_parts((&v as *const T).cast::<u8>(), size_of::<T>()).to_vec() }
    }

    #[test]
    fn stand_ins_match_the_instructions() {
        if !(is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512vl")) {
            eprintln!("SKIPPED: no AVX-512 here");
            return;
        }
        // SAFETY: AVX-512F/VL were detected above; the streams write
        // inside an aligned `Line`, and the gathers read only
        // `table` and the scatters write only their 19-float arrays, at the
        // offsets below (all < 19).
        unsafe {
            for (a, b) in pairs() {
                assert_eq!(bits(_mm512_max_ps(a, b)), bits(hw::_mm512_max_ps(a, b)));
                assert_eq!(bits(_mm512_min_ps(a, b)), bits(hw::_mm512_min_ps(a, b)));
                assert_eq!(bits(_mm512_cvtps_epi32(a)), bits(hw::_mm512_cvtps_epi32(a)));
                let (mut ours, mut theirs) = (Line([0.0; 16]), Line([1.0; 16]));
                _mm512_stream_ps(ours.0.as_mut_ptr(), a);
                hw::_mm512_stream_ps(theirs.0.as_mut_ptr(), a);
                _mm256_stream_ps(ours.0.as_mut_ptr().add(8), hw::_mm512_castps512_ps256(b));
                hw::_mm256_stream_ps(theirs.0.as_mut_ptr().add(8), hw::_mm512_castps512_ps256(b));
                _mm_stream_ps(ours.0.as_mut_ptr().add(4), hw::_mm512_castps512_ps128(b));
                hw::_mm_stream_ps(theirs.0.as_mut_ptr().add(4), hw::_mm512_castps512_ps128(b));
                hw::_mm_sfence();
                assert_eq!(bits(ours.0), bits(theirs.0));
                macro_rules! predicates { ($($p:literal)*) => {$(
                    assert_eq!(_mm512_cmp_ps_mask::<$p>(a, b), hw::_mm512_cmp_ps_mask::<$p>(a, b), "predicate {}", $p);
                    assert_eq!(
                        _mm512_mask_cmp_ps_mask::<$p>(0x5a3c, a, b),
                        hw::_mm512_mask_cmp_ps_mask::<$p>(0x5a3c, a, b),
                    );
                )*}}
                predicates!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
                macro_rules! roundings { ($($m:literal)*) => {$(
                    assert_eq!(bits(_mm512_roundscale_ps::<$m>(a)), bits(hw::_mm512_roundscale_ps::<$m>(a)), "mode {}", $m);
                )*}}
                roundings!(0 1 2 3 4 8 9 10 11 12);
            }
            let table: Vec<i64> = (0..40).map(|i| i * 0x1_0000_0001 - 7).collect();
            let offsets: [i32; 16] = std::array::from_fn(|i| (i as i32 * 7) % 19);
            let (src, idx) = (hw::_mm512_set1_epi32(-3), transmute::<[i32; 16], __m512i>(offsets));
            for mask in [0u16, 1, 0x8001, 0xffff, 0x1234] {
                let t32 = table.as_ptr().cast::<i32>();
                assert_eq!(
                    bits(_mm512_mask_i32gather_epi32::<4>(src, mask, idx, t32)),
                    bits(hw::_mm512_mask_i32gather_epi32::<4>(src, mask, idx, t32)),
                );
                let (lo, m8) = (hw::_mm512_castsi512_si256(idx), mask as u8);
                assert_eq!(
                    bits(_mm512_mask_i32gather_epi64::<8>(src, m8, lo, table.as_ptr())),
                    bits(hw::_mm512_mask_i32gather_epi64::<8>(src, m8, lo, table.as_ptr())),
                );
                let (fsrc, tf) = (hw::_mm512_set1_ps(-2.5), table.as_ptr().cast::<f32>());
                assert_eq!(
                    bits(_mm512_mask_i32gather_ps::<4>(fsrc, mask, idx, tf)),
                    bits(hw::_mm512_mask_i32gather_ps::<4>(fsrc, mask, idx, tf)),
                );
                // Offsets repeat (i * 7 % 19): the highest lane of a pair lands last.
                let (mut ours, mut theirs) = ([0f32; 19], [0f32; 19]);
                let x = from_f32s(std::array::from_fn(|i| i as f32 + 0.5));
                _mm512_mask_i32scatter_ps::<4>(ours.as_mut_ptr(), mask, idx, x);
                hw::_mm512_mask_i32scatter_ps::<4>(theirs.as_mut_ptr(), mask, idx, x);
                assert_eq!(bits(ours), bits(theirs));
            }
        }
    }
}
