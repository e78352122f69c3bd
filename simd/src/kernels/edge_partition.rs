//! The edges regrouped for g-SDDMM's edge walk (`sddmm_edge_order`), in
//! one of two ways ([`Grouping`]):
//!
//! - **by destination range**: parts of `rows` consecutive destination ids,
//!   each part's edges in the order of the list it was built from
//!   (ascending edge id for a graph's COO). The edge walk in id order
//!   writes its `[E, d]` output sequentially but gathers both operand rows
//!   at random; the CSR walk reads each destination row once but writes its
//!   output rows at random. Grouped by destination range, the walk gathers
//!   the destination rows from a slice sized to the cache and still writes
//!   its output in ascending edge id, `parts` rows apart on average. On the
//!   Intel Xeon VM of family 6 model 167 (u_add_v, d = 32, 2^20 nodes /
//!   2^24 edges, a 1-2 MiB slice of destination rows) that took 197-209 ms
//!   against 317-334 ms in id order and 272-280 ms grouped by single
//!   destination (uniform), and 143-149 ms against 169-188 ms (RMAT).
//! - **by edge-id range**: parts of `edges` consecutive edge ids, each
//!   part's edges in the order of a CSR's rows. For messages narrower than
//!   a line (a one-float dot) the CSR walk's cost is its output: each
//!   message written at random reads and writes back a whole line. Here
//!   a part's messages land in a slice of the output sized to the cache,
//!   while the row operand is still read in ascending row order, mostly
//!   once per run of equal rows. On the Intel Xeon VM of family 6 model 207
//!   (u_dot_v, d = 32, RMAT 2^20 / 2^24, 64 parts of 1 MiB of output) the
//!   walk took 96-114 ms against the in-CSR walk's 117-146 ms at kernel level.
//!
//! `docs/PERFORMANCE.md`, "Destination ranges" and "Edge-id ranges".

use super::common::{SharedMut, balanced_bounds, num_parts};
use crate::Index;
use crate::layout::{CsrView, EdgeList};
use rayon::prelude::*;

/// How an [`EdgePartition`] groups the edges; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// Parts of this many consecutive destination ids (at least 1), each in
    /// the order of the list it was built from.
    DestinationRanges(usize),
    /// Parts of this many consecutive edge ids (at least 1), each in the
    /// order of the CSR it was built from.
    EdgeRanges(usize),
}

/// An edge list regrouped by destination or edge-id range; see the module
/// docs. Built once per graph and grouping, it costs `3 E · sizeof(I)` bytes.
#[derive(Debug)]
pub struct EdgePartition<I: Index> {
    grouping: Grouping,
    num_parts: usize,
    num_src: usize,
    num_dst: usize,
    src: Vec<I>,
    dst: Vec<I>,
    eids: Vec<I>,
}

impl<I: Index> EdgePartition<I> {
    /// Regroups `list` into parts of `rows_per_part` (at least 1)
    /// destination ids, keeping the list's order within each part.
    pub fn by_destination_range(list: &EdgeList<'_, I>, rows_per_part: usize) -> Self {
        let rows = rows_per_part.max(1);
        let parts = list.num_dst().div_ceil(rows).max(1);
        let e = list.num_edges();
        // Each chunk keeps one counter per part: bound them by the edges.
        let chunks = num_parts(e).min(e / parts + 1);
        let (src, dst, ids) = (list.src(), list.dst(), list.eids());
        let visit = |c: usize, edge: &mut dyn FnMut(I, I, I)| {
            for k in e * c / chunks..e * (c + 1) / chunks {
                // SAFETY: `k` is a position of the list.
                unsafe {
                    let id = ids.map_or(I::from_usize(k), |ids| *ids.get_unchecked(k));
                    edge(*src.get_unchecked(k), *dst.get_unchecked(k), id);
                }
            }
        };
        let (src, dst, eids) = regroup(e, parts, chunks, visit, |v, _| v.to_usize_valid() / rows);
        Self {
            grouping: Grouping::DestinationRanges(rows),
            num_parts: parts,
            num_src: list.num_src(),
            num_dst: list.num_dst(),
            src,
            dst,
            eids,
        }
    }

    /// Regroups the edges of `csr` into parts of `edges_per_part` edge ids
    /// (at least one), keeping the CSR's order within each part.
    /// `rows_are_dst`: the CSR's rows are the destinations (an in-CSR), else
    /// the sources.
    pub fn by_edge_range(csr: &CsrView<'_, I>, rows_are_dst: bool, edges_per_part: usize) -> Self {
        let per = edges_per_part.max(1);
        let e = csr.num_edges();
        let parts = e.div_ceil(per).max(1);
        let (indptr, cols, ids) = (csr.indptr(), csr.indices(), csr.eids());
        let rows = balanced_bounds(csr.num_rows(), num_parts(e).min(e / parts + 1), |i| indptr[i].to_usize() + i);
        let visit = |c: usize, edge: &mut dyn FnMut(I, I, I)| {
            for r in rows[c]..rows[c + 1] {
                let row = I::from_usize(r);
                for k in csr.row_range(r) {
                    // SAFETY: `k` is a slot of the CSR.
                    let (col, id) = unsafe { (*cols.get_unchecked(k), *ids.get_unchecked(k)) };
                    if rows_are_dst { edge(col, row, id) } else { edge(row, col, id) }
                }
            }
        };
        let (src, dst, eids) = regroup(e, parts, rows.len() - 1, visit, |_, id| id.to_usize_valid() / per);
        let (num_src, num_dst) =
            if rows_are_dst { (csr.num_cols(), csr.num_rows()) } else { (csr.num_rows(), csr.num_cols()) };
        Self { grouping: Grouping::EdgeRanges(per), num_parts: parts, num_src, num_dst, src, dst, eids }
    }

    /// The regrouped edges as a list for the edge walk.
    pub fn list(&self) -> EdgeList<'_, I> {
        // SAFETY: the builders permuted the edges of a validated list or
        // CSR: the node ids are its own (valid for its node counts, kept
        // here) and every edge id occurs once.
        unsafe { EdgeList::in_walk_order(&self.src, &self.dst, &self.eids, self.num_src, self.num_dst) }
    }

    /// How the edges are grouped.
    pub fn grouping(&self) -> Grouping {
        self.grouping
    }

    /// Number of parts.
    pub fn num_parts(&self) -> usize {
        self.num_parts
    }

    /// Heap bytes of the partition.
    pub fn bytes(&self) -> usize {
        3 * self.src.len() * std::mem::size_of::<I>()
    }
}

/// A parallel counting sort of `num_edges` edges into `parts`, in
/// O(E + chunks · parts): `visit(c, edge)` calls `edge(u, v, id)` for chunk
/// `c`'s edges in order; each chunk counts its edges per part
/// (`part_of(v, id)`), prefix sums in (part, chunk) order give every chunk
/// its own output range per part, and the chunks fill them in their order.
/// Returns the sources, destinations and edge ids in walk order.
fn regroup<I: Index>(
    num_edges: usize,
    parts: usize,
    chunks: usize,
    visit: impl Fn(usize, &mut dyn FnMut(I, I, I)) + Sync,
    part_of: impl Fn(I, I) -> usize + Sync,
) -> (Vec<I>, Vec<I>, Vec<I>) {
    let counts: Vec<Vec<usize>> = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut count = vec![0usize; parts];
            visit(c, &mut |_, v, id| count[part_of(v, id)] += 1);
            count
        })
        .collect();
    let mut starts = vec![vec![0usize; parts]; chunks];
    let mut next = 0;
    for p in 0..parts {
        for (c, count) in counts.iter().enumerate() {
            starts[c][p] = next;
            next += count[p];
        }
    }
    debug_assert_eq!(next, num_edges);
    let (mut src, mut dst, mut eids) =
        (vec![I::default(); num_edges], vec![I::default(); num_edges], vec![I::default(); num_edges]);
    let (src_w, dst_w, eids_w) = (SharedMut::new(&mut src), SharedMut::new(&mut dst), SharedMut::new(&mut eids));
    starts.into_par_iter().enumerate().for_each(|(c, mut next)| {
        visit(c, &mut |u, v, id| {
            let at = &mut next[part_of(v, id)];
            // SAFETY: the prefix sums give chunk c of part p the output
            // range of the edges c counted for p, disjoint from every other
            // (chunk, part) pair's and inside the arrays (of length E, the
            // total); `visit` yields the same edges again.
            unsafe {
                *src_w.at(*at) = u;
                *dst_w.at(*at) = v;
                *eids_w.at(*at) = id;
            }
            *at += 1;
        })
    });
    (src, dst, eids)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edges `(src, dst)` by id, scrambled destinations.
    fn edges(n: usize, e: usize) -> (Vec<i32>, Vec<i32>) {
        let src = (0..e).map(|i| ((i * 7 + 3) % n) as i32).collect();
        let dst = (0..e).map(|i| ((i * 2_654_435_761usize) % n) as i32).collect();
        (src, dst)
    }

    #[test]
    fn parts_hold_every_edge_once_by_destination_range_in_list_order() {
        let (n, e) = (37, 5_000);
        let (src, dst) = edges(n, e);
        // SAFETY: `edges` keeps every id below `n`.
        let list = unsafe { EdgeList::new_unchecked(&src, &dst, n, n) };
        for rows in [1, 4, 10, 37, 100] {
            let p = EdgePartition::by_destination_range(&list, rows);
            assert_eq!(p.num_parts(), n.div_ceil(rows));
            let walk = p.list();
            let eids = walk.eids().expect("a partition gives edge ids");
            let mut seen = vec![false; e];
            for k in 0..e {
                let id = eids[k] as usize;
                assert!(!seen[id], "edge {id} twice");
                seen[id] = true;
                assert_eq!((walk.src()[k], walk.dst()[k]), (src[id], dst[id]), "ends of edge {id}");
                if k > 0 {
                    let (prev, here) = (walk.dst()[k - 1] as usize / rows, walk.dst()[k] as usize / rows);
                    assert!(prev < here || (prev == here && (eids[k - 1] as usize) < id), "order at position {k}");
                }
            }
            assert!(seen.iter().all(|&s| s));
            // Regrouping a regrouped list keeps its edge ids.
            let again = EdgePartition::by_destination_range(&walk, rows);
            assert_eq!(again.list().eids(), walk.eids());
        }
    }

    #[test]
    fn parts_hold_every_edge_once_by_edge_range_in_csr_order() {
        let (n, e) = (37, 5_000);
        let (src, dst) = edges(n, e);
        // An in-CSR of the edges: rows by destination, each by (source, id).
        let mut order: Vec<usize> = (0..e).collect();
        order.sort_by_key(|&k| (dst[k], src[k], k));
        let mut indptr = vec![0i32; n + 1];
        dst.iter().for_each(|&v| indptr[v as usize + 1] += 1);
        (0..n).for_each(|i| indptr[i + 1] += indptr[i]);
        let cols: Vec<i32> = order.iter().map(|&k| src[k]).collect();
        let ids: Vec<i32> = order.iter().map(|&k| k as i32).collect();
        // SAFETY: a valid CSR of the edges (ids below `n`, rows sorted).
        let csr = unsafe { CsrView::new_unchecked(&indptr, &cols, &ids, n) };
        for per in [1, 7, 1_000, 5_000, 9_999] {
            for rows_are_dst in [true, false] {
                let p = EdgePartition::by_edge_range(&csr, rows_are_dst, per);
                assert_eq!((p.num_parts(), p.grouping()), (e.div_ceil(per), Grouping::EdgeRanges(per)));
                let walk = p.list();
                let eids = walk.eids().expect("a partition gives edge ids");
                let (rows, cols) = if rows_are_dst { (walk.dst(), walk.src()) } else { (walk.src(), walk.dst()) };
                let mut seen = vec![false; e];
                for k in 0..e {
                    let id = eids[k] as usize;
                    assert!(!seen[id], "edge {id} twice");
                    seen[id] = true;
                    assert_eq!((rows[k], cols[k]), (dst[id], src[id]), "ends of edge {id}");
                    if k > 0 {
                        // Parts ascend; within a part, the CSR's order.
                        let (prev, here) = (eids[k - 1] as usize, id);
                        let key = |id: usize| (dst[id], src[id], id);
                        assert!(
                            prev / per < here / per || (prev / per == here / per && key(prev) < key(here)),
                            "order at position {k}"
                        );
                    }
                }
                assert!(seen.iter().all(|&s| s));
            }
        }
    }
}
