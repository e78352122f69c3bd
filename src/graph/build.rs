//! O(E) format conversions by counting sort.
//!
//! Every CSR this crate builds has rows sorted by (column, edge id). A
//! counting sort is stable, so feeding edges in (column, edge id) order
//! yields exactly that: `csr_from_coo` first orders edges by column (one
//! counting sort), then buckets them by row (a second one); `transpose`
//! gets the first order for free by walking the other CSR row by row.
//! The scatter passes are sequential: they are bound by random writes, and
//! a parallel scatter needs per-thread histograms (E/T extra traffic) to
//! win on two cores.

use super::csr::Csr;
use crate::Index;

/// Exclusive prefix sum of per-row counts, as `I` offsets.
fn offsets_from_counts<I: Index>(counts: &[usize]) -> Vec<I> {
    let mut indptr = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0usize;
    indptr.push(I::from_usize(0));
    for &c in counts {
        acc += c;
        indptr.push(I::from_usize(acc));
    }
    indptr
}

fn histogram<I: Index>(ids: &[I], bins: usize) -> Vec<usize> {
    let mut counts = vec![0usize; bins];
    for &v in ids {
        counts[v.to_usize()] += 1;
    }
    counts
}

/// Builds the CSR whose rows are `rows[e]` and columns `cols[e]` (ids
/// already validated against `num_rows` / `num_cols`).
pub(crate) fn csr_from_coo<I: Index>(rows: &[I], cols: &[I], num_rows: usize, num_cols: usize) -> Csr<I> {
    let num_edges = rows.len();
    // Pass 1: edge ids ordered by (column, edge id).
    let col_counts = histogram(cols, num_cols);
    let mut next: Vec<usize> = offsets_from_counts::<I>(&col_counts).iter().map(|o| o.to_usize()).collect();
    let mut by_col = vec![I::default(); num_edges];
    for (e, &c) in cols.iter().enumerate() {
        let slot = &mut next[c.to_usize()];
        by_col[*slot] = I::from_usize(e);
        *slot += 1;
    }
    // Pass 2: stable bucket by row.
    let indptr = offsets_from_counts::<I>(&histogram(rows, num_rows));
    let mut next: Vec<usize> = indptr[..num_rows].iter().map(|o| o.to_usize()).collect();
    let mut indices = vec![I::default(); num_edges];
    let mut eids = vec![I::default(); num_edges];
    for &e in &by_col {
        let eu = e.to_usize();
        let slot = &mut next[rows[eu].to_usize()];
        indices[*slot] = cols[eu];
        eids[*slot] = e;
        *slot += 1;
    }
    Csr::from_built(indptr, indices, eids, num_cols)
}

/// The CSR of the transposed matrix (in-CSR from out-CSR and back).
pub(crate) fn transpose<I: Index>(csr: &Csr<I>) -> Csr<I> {
    let (num_rows, num_cols) = (csr.num_rows(), csr.num_cols());
    let indptr = offsets_from_counts::<I>(&histogram(csr.indices(), num_cols));
    let mut next: Vec<usize> = indptr[..num_cols].iter().map(|o| o.to_usize()).collect();
    let mut indices = vec![I::default(); csr.num_edges()];
    let mut eids = vec![I::default(); csr.num_edges()];
    for r in 0..num_rows {
        for k in csr.row_range(r) {
            let slot = &mut next[csr.indices()[k].to_usize()];
            indices[*slot] = I::from_usize(r);
            eids[*slot] = csr.eids()[k];
            *slot += 1;
        }
    }
    Csr::from_built(indptr, indices, eids, num_rows)
}

/// COO `(row, col)` arrays indexed by edge id, from a CSR.
pub(crate) fn coo_from_csr<I: Index>(csr: &Csr<I>) -> (Vec<I>, Vec<I>) {
    let mut rows = vec![I::default(); csr.num_edges()];
    let mut cols = vec![I::default(); csr.num_edges()];
    for r in 0..csr.num_rows() {
        for k in csr.row_range(r) {
            let e = csr.eids()[k].to_usize();
            rows[e] = I::from_usize(r);
            cols[e] = csr.indices()[k];
        }
    }
    (rows, cols)
}
