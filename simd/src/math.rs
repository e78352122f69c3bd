//! Vectorised elementary functions built from the [`Simd`] vocabulary.

use crate::isa::Simd;

/// Below this, `exp(x)` is under `f32::MIN_POSITIVE` and flushes to 0.
const EXP_LO: f32 = -87.336_54;

/// `exp(x)` for `x <= 0` (the softmax domain: logits minus their maximum).
///
/// Cephes `expf`: `n = round(x·log2 e)`, `r = x − n·ln 2` (ln 2 split into a
/// short exact head and a tail so `r` is exact), `exp(r)` by a degree-6
/// minimax polynomial on `|r| <= ln2/2`, scaled by `2^n` through the
/// exponent bits. Maximum relative error over `[-87.3, 0]`: 1.6e-7
/// (≈ 2 ulp; the test `exp_error_is_within_two_ulp` sweeps the range
/// against f64 `exp`). `x < -87.34` (including `-inf`) gives exactly 0,
/// NaN gives NaN, and `x > 0` is clamped to 0 (gives 1).
#[inline(always)]
pub fn exp_nonpositive<S: Simd>(s: S, x: S::F32) -> S::F32 {
    let zero = s.splat(0.0);
    // `min`/`max` return their second operand on NaN: NaN flows through.
    let x = s.min(zero, x);
    let underflow = s.lt(x, s.splat(EXP_LO));
    let x = s.max(s.splat(EXP_LO), x);
    let n = s.round(s.mul(x, s.splat(std::f32::consts::LOG2_E)));
    let r = s.mul_add(n, s.splat(-0.693_359_4), x);
    let r = s.mul_add(n, s.splat(2.121_944_4e-4), r);
    let mut p = s.splat(1.987_569_1e-4);
    p = s.mul_add(p, r, s.splat(1.398_199_9e-3));
    p = s.mul_add(p, r, s.splat(8.333_452e-3));
    p = s.mul_add(p, r, s.splat(4.166_579_6e-2));
    p = s.mul_add(p, r, s.splat(1.666_666_5e-1));
    p = s.mul_add(p, r, s.splat(0.5));
    let r2 = s.mul(r, r);
    let y = s.add(s.mul_add(p, r2, r), s.splat(1.0));
    s.select(underflow, zero, s.mul(y, s.pow2i(n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{IsaLevel, Portable};

    fn check<S: Simd>(s: S) {
        let mut worst = 0.0f64;
        let mut buf = vec![0.0f32; S::LANES];
        let mut x = -87.3f32;
        while x <= 0.0 {
            let xs: Vec<f32> = (0..S::LANES).map(|i| x + i as f32 * 1e-3).map(|v| v.min(0.0)).collect();
            // SAFETY: `xs` and `buf` hold LANES floats.
            unsafe { s.store(buf.as_mut_ptr(), exp_nonpositive(s, s.load(xs.as_ptr()))) };
            for (i, &y) in buf.iter().enumerate() {
                let exact = f64::from(xs[i]).exp();
                worst = worst.max(((f64::from(y) - exact) / exact).abs());
            }
            x += 0.0137;
        }
        assert!(worst < 2.0 * f64::from(f32::EPSILON), "{}: max relative error {worst:e}", S::NAME);
        let special = [f32::NEG_INFINITY, -100.0, f32::NAN, 0.0, -0.0, 3.0];
        let mut v = vec![0.0f32; S::LANES];
        v[..special.len()].copy_from_slice(&special);
        // SAFETY: `v` and `buf` hold LANES floats.
        unsafe { s.store(buf.as_mut_ptr(), exp_nonpositive(s, s.load(v.as_ptr()))) };
        assert_eq!(&buf[..2], &[0.0, 0.0]);
        assert!(buf[2].is_nan());
        assert_eq!(&buf[3..6], &[1.0, 1.0, 1.0]);
    }

    #[test]
    fn exp_error_is_within_two_ulp() {
        check(Portable);
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(s) = crate::isa::Avx2::try_new() {
                check(s);
            }
            if let Some(s) = crate::isa::Avx512::try_new() {
                check(s);
            }
            assert!(IsaLevel::detected() < IsaLevel::Avx2 || crate::isa::Avx2::try_new().is_some());
        }
    }
}
