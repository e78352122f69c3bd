//! Comparisons that explain the first mismatch.
//!
//! - [`exact`]: bitwise equality, except that any NaN equals any NaN (NaN
//!   payloads are not part of the contract). Used for copy, max/min with
//!   elementwise operators, and everything computed by shared library code.
//! - [`close`]: `|got - want| <= c · ε_f32 · magnitude · n`, where
//!   `magnitude` is the sum of the absolute values of the terms that were
//!   added (so cancellation does not make the bound vacuous) and `n` the
//!   number of terms: the classical bound of recursive f32 summation is
//!   `(n - 1) · ε · Σ|terms|`. NaN must match NaN and ±inf must match exactly.
//! - [`args_equal`]: arg outputs, exactly.

/// Bitwise equality with NaN == NaN.
pub fn same_bits(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Exact comparison of two outputs.
pub fn exact(what: &str, got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: length {} != {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(&a, &b)| !same_bits(a, b)) {
        None => Ok(()),
        Some(i) => Err(format!("{what}: element {i}: got {:?}, want {:?} (exact comparison)", got[i], want[i])),
    }
}

/// Tolerance comparison: element `i` may differ by `c · ε · magnitude[i] · terms`.
pub fn close(what: &str, got: &[f32], want: &[f32], magnitude: &[f32], terms: usize, c: f32) -> Result<(), String> {
    if got.len() != want.len() || magnitude.len() != want.len() {
        return Err(format!("{what}: lengths {} / {} / {}", got.len(), want.len(), magnitude.len()));
    }
    for (i, ((&a, &b), &m)) in got.iter().zip(want).zip(magnitude).enumerate() {
        let ok = if b.is_nan() || b.is_infinite() || a.is_nan() || a.is_infinite() {
            same_bits(a, b)
        } else {
            let tol = c * f32::EPSILON * m.abs() * terms.max(1) as f32;
            (f64::from(a) - f64::from(b)).abs() <= f64::from(tol)
        };
        if !ok {
            let tol = c * f32::EPSILON * m.abs() * terms.max(1) as f32;
            return Err(format!(
                "{what}: element {i}: got {a:?}, want {b:?}, |diff| = {:e} > tol {tol:e} (magnitude {m}, {terms} terms)",
                (a - b).abs()
            ));
        }
    }
    Ok(())
}

/// Exact comparison of arg outputs.
pub fn args_equal<I: PartialEq + std::fmt::Debug>(what: &str, got: &[I], want: &[I]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: length {} != {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!("{what}: element {i}: got {:?}, want {:?}", got[i], want[i])),
    }
}

/// `|x|` elementwise.
pub fn abs(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| x.abs()).collect()
}
