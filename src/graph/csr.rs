//! Owned, validated CSR arrays in canonical row order.

use crate::{Error, Index, Result};
use gnnkern_simd::layout::CsrView;
use rayon::prelude::*;

/// A validated CSR: rows sorted by (column, edge id), edge ids a permutation.
///
/// Only this module's constructors build one, so [`Csr::view`] can hand
/// kernels a [`CsrView`] that skips bounds checks.
#[derive(Clone, Debug)]
pub struct Csr<I: Index> {
    indptr: Vec<I>,
    indices: Vec<I>,
    eids: Vec<I>,
    num_cols: usize,
}

impl<I: Index> Csr<I> {
    /// Validates user-supplied arrays and brings rows into canonical order
    /// (sorting only the rows that are not sorted already).
    ///
    /// `eids = None` means edge `k` of the CSR is edge id `k`.
    pub(crate) fn from_parts(
        num_rows: usize,
        num_cols: usize,
        indptr: Vec<I>,
        indices: Vec<I>,
        eids: Option<Vec<I>>,
    ) -> Result<Self> {
        let num_edges = indices.len();
        check_fits::<I>("number of edges", num_edges)?;
        if indptr.len() != num_rows + 1 {
            return Err(Error::LengthMismatch {
                what: "indptr (num_rows + 1)",
                expected: num_rows + 1,
                actual: indptr.len(),
            });
        }
        if indptr[0].to_i64() != 0 {
            return Err(Error::BadIndptr { reason: "indptr[0] must be 0", position: 0 });
        }
        if let Some(p) = indptr.windows(2).position(|w| w[1] < w[0]) {
            return Err(Error::BadIndptr { reason: "indptr must be non-decreasing", position: p + 1 });
        }
        if indptr[num_rows].to_usize() != num_edges {
            return Err(Error::BadIndptr {
                reason: "indptr[num_rows] must equal the number of indices",
                position: num_rows,
            });
        }
        check_ids("indices", &indices, num_cols)?;
        let eids = match eids {
            Some(e) => {
                if e.len() != num_edges {
                    return Err(Error::LengthMismatch { what: "edge ids", expected: num_edges, actual: e.len() });
                }
                check_permutation(&e)?;
                e
            }
            None => (0..num_edges).map(I::from_usize).collect(),
        };
        let mut csr = Self { indptr, indices, eids, num_cols };
        csr.sort_rows();
        Ok(csr)
    }

    /// Assembles arrays produced by this crate's builders, which guarantee
    /// the invariants by construction.
    pub(crate) fn from_built(indptr: Vec<I>, indices: Vec<I>, eids: Vec<I>, num_cols: usize) -> Self {
        let csr = Self { indptr, indices, eids, num_cols };
        debug_assert!(csr.rows_sorted());
        csr
    }

    fn rows_sorted(&self) -> bool {
        (0..self.num_rows()).into_par_iter().all(|r| {
            let range = self.row_range(r);
            let (c, e) = (&self.indices[range.clone()], &self.eids[range]);
            (1..c.len()).all(|k| (c[k - 1], e[k - 1]) < (c[k], e[k]))
        })
    }

    /// Sorts every row by (column, edge id) in place, in parallel over rows.
    fn sort_rows(&mut self) {
        sort_each_row(&self.indptr, &mut self.indices, &mut self.eids, false);
    }

    /// The rows' (columns, edge ids) with each row's edges in ascending
    /// edge id, or `None` where every row is in that order already. Edge
    /// softmax sums a row in that order on every scheme (see
    /// `backend::simd`'s softmax module); canonical rows stay (column, edge id).
    pub(crate) fn rows_by_edge_id(&self) -> Option<(Vec<I>, Vec<I>)> {
        if (0..self.num_rows()).into_par_iter().all(|r| self.eids[self.row_range(r)].is_sorted()) {
            return None;
        }
        let (mut indices, mut eids) = (self.indices.clone(), self.eids.clone());
        sort_each_row(&self.indptr, &mut indices, &mut eids, true);
        Some((indices, eids))
    }

    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Number of columns.
    pub fn num_cols(&self) -> usize {
        self.num_cols
    }

    /// Number of entries.
    pub fn num_edges(&self) -> usize {
        self.indices.len()
    }

    /// Row offsets.
    pub fn indptr(&self) -> &[I] {
        &self.indptr
    }

    /// Column ids, row by row.
    pub fn indices(&self) -> &[I] {
        &self.indices
    }

    /// Original edge id of each entry.
    pub fn eids(&self) -> &[I] {
        &self.eids
    }

    /// Entry range of row `r`.
    pub fn row_range(&self, r: usize) -> std::ops::Range<usize> {
        self.indptr[r].to_usize()..self.indptr[r + 1].to_usize()
    }

    /// Heap bytes held by the three arrays.
    pub fn bytes(&self) -> usize {
        (self.indptr.len() + 2 * self.indices.len()) * std::mem::size_of::<I>()
    }

    /// The kernel-facing view.
    pub fn view(&self) -> CsrView<'_, I> {
        // SAFETY: every constructor of `Csr` establishes the `CsrView`
        // invariants: `from_parts` validates indptr, index ranges and the
        // edge-id permutation and then sorts rows; `from_built` is only fed
        // by the counting-sort builders, which produce them by construction.
        unsafe { CsrView::new_unchecked(&self.indptr, &self.indices, &self.eids, self.num_cols) }
    }
}

/// Sorts each row of `indices`/`eids` (offsets `indptr`) in place, in
/// parallel over rows: by (column, edge id), or by edge id with
/// `by_edge_id`. Rows already in order are left untouched.
fn sort_each_row<I: Index>(indptr: &[I], indices: &mut [I], eids: &mut [I], by_edge_id: bool) {
    let mut rows: Vec<(&mut [I], &mut [I])> = Vec::with_capacity(indptr.len() - 1);
    let (mut ind, mut eid) = (indices, eids);
    for w in indptr.windows(2) {
        let len = w[1].to_usize() - w[0].to_usize();
        let (a, rest_i) = ind.split_at_mut(len);
        let (b, rest_e) = eid.split_at_mut(len);
        rows.push((a, b));
        ind = rest_i;
        eid = rest_e;
    }
    rows.into_par_iter().for_each(|(c, e)| {
        let key = |k: usize| if by_edge_id { (e[k], c[k]) } else { (c[k], e[k]) };
        if (1..c.len()).all(|k| key(k - 1) < key(k)) {
            return;
        }
        let mut pairs: Vec<(I, I)> = (0..c.len()).map(key).collect();
        pairs.sort_unstable();
        for (k, (x, y)) in pairs.into_iter().enumerate() {
            (c[k], e[k]) = if by_edge_id { (y, x) } else { (x, y) };
        }
    });
}

/// `count` must fit the index type (it is stored in indptr or as an id bound).
pub(crate) fn check_fits<I: Index>(what: &'static str, count: usize) -> Result<()> {
    if count > I::MAX_USIZE {
        return Err(Error::CountOverflow { what, count, index_type: I::NAME });
    }
    Ok(())
}

/// Every id in `ids` must be in `0..bound`; reports the first offender.
pub(crate) fn check_ids<I: Index>(what: &'static str, ids: &[I], bound: usize) -> Result<()> {
    match ids.par_iter().position_first(|&v| v.to_usize() >= bound) {
        None => Ok(()),
        Some(position) => Err(Error::IndexOutOfRange { what, position, value: ids[position].to_i64(), bound }),
    }
}

/// `ids` must be a permutation of `0..ids.len()`.
fn check_permutation<I: Index>(ids: &[I]) -> Result<()> {
    let n = ids.len();
    let mut seen = vec![false; n];
    for (position, &v) in ids.iter().enumerate() {
        let bad = |problem| Error::BadEdgeIds { num_edges: n, position, value: v.to_i64(), problem };
        let u = v.to_usize();
        if u >= n {
            return Err(bad("is out of range"));
        }
        if std::mem::replace(&mut seen[u], true) {
            return Err(bad("is repeated"));
        }
    }
    Ok(())
}
