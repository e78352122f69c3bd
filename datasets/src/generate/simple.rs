//! Deterministic shapes for edge cases: a chain (every in-degree 1, the
//! longest path) and a star (one hub row holding every edge).

use crate::dataset::Dataset;

/// `i -> i + 1` for `i in 0..n-1`.
pub(super) fn chain(n: usize) -> Dataset {
    let m = n.saturating_sub(1) as i64;
    Dataset::from_edges("", n, (0..m).collect(), (1..=m).collect())
}

/// `i -> 0` for `i in 1..n`.
pub(super) fn star(n: usize) -> Dataset {
    let m = n.saturating_sub(1);
    Dataset::from_edges("", n, (1..=m as i64).collect(), vec![0; m])
}
