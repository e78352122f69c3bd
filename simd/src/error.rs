//! The one error kernels report: an argument that does not fit the call.
//!
//! Kernels are safe functions over raw slices, so they check every length
//! and every broadcast-plan offset (O(1) / O(runs)) before touching memory.
//! The `gnnkern` backend validates everything earlier and maps this to its
//! own typed error; reaching it from there is a bug.

use std::fmt;

/// A slice or plan that does not match the graph and the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// Which argument.
    pub what: &'static str,
    /// The length (or bound) it needed.
    pub expected: usize,
    /// What it had.
    pub actual: usize,
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: expected {}, got {}", self.what, self.expected, self.actual)
    }
}

impl std::error::Error for KernelError {}

/// `Ok` when `actual == expected`.
pub(crate) fn check_len(what: &'static str, expected: usize, actual: usize) -> Result<(), KernelError> {
    if expected == actual { Ok(()) } else { Err(KernelError { what, expected, actual }) }
}
