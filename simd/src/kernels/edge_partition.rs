//! The edges regrouped by destination range for g-SDDMM's edge walk
//! (`sddmm_edge_order`): parts of `rows_per_part` consecutive destination
//! ids, each part's edges in the order of the list it was built from
//! (ascending edge id for a graph's COO).
//!
//! Why: the edge walk in id order writes its `[E, d]` output sequentially
//! but gathers both operand rows at random; the CSR walk reads each
//! destination row once but writes its output rows at random. Grouped by
//! destination range, the walk gathers the destination rows from a slice
//! sized to the cache and still writes its output in ascending edge id,
//! `parts` rows apart on average. On the Intel Xeon VM of family 6 model
//! 167 (u_add_v, d = 32, 2^20 nodes / 2^24 edges, a 1-2 MiB slice of
//! destination rows) that took 197-209 ms against 317-334 ms in id order
//! and 272-280 ms grouped by single destination (uniform), and 143-149 ms
//! against 169-188 ms (RMAT); `docs/PERFORMANCE.md`, "Destination ranges".

use super::common::{SharedMut, num_parts};
use crate::Index;
use crate::layout::EdgeList;
use rayon::prelude::*;

/// An edge list regrouped by destination range; see the module docs.
/// Built once per graph and part size, it costs `3 E · sizeof(I)` bytes.
#[derive(Debug)]
pub struct EdgePartition<I: Index> {
    rows_per_part: usize,
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
    ///
    /// A parallel counting sort in O(E + chunks · parts): the positions are
    /// cut into chunks, each counts its edges per part, prefix sums in
    /// (part, chunk) order give every chunk its own output range per part,
    /// and the chunks fill them in their order.
    pub fn build(list: &EdgeList<'_, I>, rows_per_part: usize) -> Self {
        let rows = rows_per_part.max(1);
        let parts = list.num_dst().div_ceil(rows).max(1);
        let e = list.num_edges();
        // Each chunk keeps one counter per part: bound them by the edges.
        let chunks = num_parts(e).min(e / parts + 1);
        let bounds: Vec<usize> = (0..=chunks).map(|c| e * c / chunks).collect();
        let (src, dst) = (list.src(), list.dst());
        let counts: Vec<Vec<usize>> = bounds
            .par_windows(2)
            .map(|w| {
                let mut c = vec![0usize; parts];
                dst[w[0]..w[1]].iter().for_each(|v| c[v.to_usize() / rows] += 1);
                c
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
        debug_assert_eq!(next, e);
        let (mut src_out, mut dst_out, mut eids_out) =
            (vec![I::default(); e], vec![I::default(); e], vec![I::default(); e]);
        let (src_w, dst_w, eids_w) =
            (SharedMut::new(&mut src_out), SharedMut::new(&mut dst_out), SharedMut::new(&mut eids_out));
        let ids = list.eids();
        bounds.par_windows(2).zip(starts).for_each(|(w, mut next)| {
            for (k, &v) in (w[0]..w[1]).zip(&dst[w[0]..w[1]]) {
                let at = &mut next[v.to_usize() / rows];
                // SAFETY: the prefix sums give chunk c of part p the output
                // range of the edges c counted for p, disjoint from every
                // other (chunk, part) pair's and inside the arrays (of
                // length E, the total); `k` is a position of the list.
                unsafe {
                    *src_w.at(*at) = *src.get_unchecked(k);
                    *dst_w.at(*at) = v;
                    *eids_w.at(*at) = ids.map_or(I::from_usize(k), |ids| *ids.get_unchecked(k));
                }
                *at += 1;
            }
        });
        Self {
            rows_per_part: rows,
            num_parts: parts,
            num_src: list.num_src(),
            num_dst: list.num_dst(),
            src: src_out,
            dst: dst_out,
            eids: eids_out,
        }
    }

    /// The regrouped edges as a list for the edge walk.
    pub fn list(&self) -> EdgeList<'_, I> {
        // SAFETY: `build` permuted the positions of a validated list: the
        // node ids are the list's (valid for its node counts, kept here)
        // and every edge id of the list occurs once.
        unsafe { EdgeList::in_walk_order(&self.src, &self.dst, &self.eids, self.num_src, self.num_dst) }
    }

    /// Destination ids per part.
    pub fn rows_per_part(&self) -> usize {
        self.rows_per_part
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
            let p = EdgePartition::build(&list, rows);
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
            let again = EdgePartition::build(&walk, rows);
            assert_eq!(again.list().eids(), walk.eids());
        }
    }
}
