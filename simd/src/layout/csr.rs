//! A borrowed, already-validated compressed sparse row structure.

use crate::Index;

/// Rows of a sparse matrix in CSR form, borrowed from a validated graph.
///
/// Row `r` holds the entries `indptr[r]..indptr[r+1]`; entry `k` has column
/// `indices[k]` and original edge id `eids[k]`. For an in-CSR (the pull
/// format) rows are destinations and columns sources; for an out-CSR the
/// reverse. Within a row, entries are sorted by (column, edge id): this is
/// what makes source-blocked traversal visit a row's edges in row order.
///
/// Only [`CsrView::new_unchecked`] creates one, so holding a `CsrView`
/// means the invariants below hold and kernels may skip bounds checks.
#[derive(Clone, Copy, Debug)]
pub struct CsrView<'a, I: Index> {
    indptr: &'a [I],
    indices: &'a [I],
    eids: &'a [I],
    num_cols: usize,
}

impl<'a, I: Index> CsrView<'a, I> {
    /// Wraps validated CSR arrays.
    ///
    /// # Safety
    /// - `indptr.len() >= 1`, `indptr[0] == 0`, `indptr` is non-decreasing and
    ///   `indptr[last] == indices.len() == eids.len()`;
    /// - every `indices[k]` is in `0..num_cols`;
    /// - `eids` is a permutation of `0..indices.len()`;
    /// - within each row, entries are sorted by `(indices[k], eids[k])`.
    ///
    /// Kernels rely on these to index feature rows without bounds checks.
    pub unsafe fn new_unchecked(indptr: &'a [I], indices: &'a [I], eids: &'a [I], num_cols: usize) -> Self {
        debug_assert!(!indptr.is_empty());
        debug_assert_eq!(indptr[indptr.len() - 1].to_usize(), indices.len());
        debug_assert_eq!(indices.len(), eids.len());
        Self { indptr, indices, eids, num_cols }
    }

    /// Number of rows.
    #[inline]
    pub fn num_rows(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Number of columns (the bound on `indices`).
    #[inline]
    pub fn num_cols(&self) -> usize {
        self.num_cols
    }

    /// Number of stored entries (edges).
    #[inline]
    pub fn num_edges(&self) -> usize {
        self.indices.len()
    }

    /// Row offsets, `num_rows + 1` long.
    #[inline]
    pub fn indptr(&self) -> &'a [I] {
        self.indptr
    }

    /// Column of each entry.
    #[inline]
    pub fn indices(&self) -> &'a [I] {
        self.indices
    }

    /// Original edge id of each entry.
    #[inline]
    pub fn eids(&self) -> &'a [I] {
        self.eids
    }

    /// Entry range of row `r`.
    #[inline]
    pub fn row_range(&self, r: usize) -> std::ops::Range<usize> {
        self.indptr[r].to_usize()..self.indptr[r + 1].to_usize()
    }

    /// Number of entries in row `r`.
    #[inline]
    pub fn degree(&self, r: usize) -> usize {
        self.row_range(r).len()
    }
}
