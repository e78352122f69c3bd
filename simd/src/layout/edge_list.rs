//! A borrowed, already-validated list of edges (the COO, or the COO
//! regrouped by [`crate::kernels::EdgePartition`]).

use crate::Index;

/// The source and destination node of every edge, in walk order: by edge
/// id (the `src` and `dst` arrays of a validated graph's COO), or in the
/// order of an [`crate::kernels::EdgePartition`], which also gives the edge
/// id at each position.
///
/// Only [`EdgeList::new_unchecked`] and `EdgePartition::list` create one,
/// so holding an `EdgeList` means every node id is a valid node of its side
/// (kernels may index per-node operand rows with it without bounds checks)
/// and the edge ids of the positions are `0..num_edges`, each once (each
/// output row is written at one position only).
#[derive(Clone, Copy, Debug)]
pub struct EdgeList<'a, I: Index> {
    src: &'a [I],
    dst: &'a [I],
    /// The edge id at each position; `None`: position `k` is edge `k`.
    eids: Option<&'a [I]>,
    num_src: usize,
    num_dst: usize,
}

impl<'a, I: Index> EdgeList<'a, I> {
    /// Wraps validated edge arrays, indexed by edge id.
    ///
    /// # Safety
    /// `src.len() == dst.len()`; every `src[e]` is in `0..num_src` and every
    /// `dst[e]` in `0..num_dst`.
    pub unsafe fn new_unchecked(src: &'a [I], dst: &'a [I], num_src: usize, num_dst: usize) -> Self {
        debug_assert_eq!(src.len(), dst.len());
        debug_assert!(src.iter().all(|u| u.to_usize() < num_src));
        debug_assert!(dst.iter().all(|v| v.to_usize() < num_dst));
        Self { src, dst, eids: None, num_src, num_dst }
    }

    /// Wraps edge arrays in walk order with the edge id of each position.
    ///
    /// # Safety
    /// As [`EdgeList::new_unchecked`], `eids.len() == src.len()`, and
    /// `eids` holds every id of `0..src.len()` once.
    pub(crate) unsafe fn in_walk_order(
        src: &'a [I],
        dst: &'a [I],
        eids: &'a [I],
        num_src: usize,
        num_dst: usize,
    ) -> Self {
        debug_assert_eq!(eids.len(), src.len());
        // SAFETY: forwarded.
        Self { eids: Some(eids), ..unsafe { Self::new_unchecked(src, dst, num_src, num_dst) } }
    }

    /// Source of each edge, by position.
    #[inline]
    pub fn src(&self) -> &'a [I] {
        self.src
    }

    /// Destination of each edge, by position.
    #[inline]
    pub fn dst(&self) -> &'a [I] {
        self.dst
    }

    /// The edge id of each position, or `None` when position `k` is edge `k`.
    #[inline]
    pub fn eids(&self) -> Option<&'a [I]> {
        self.eids
    }

    /// Number of edges.
    #[inline]
    pub fn num_edges(&self) -> usize {
        self.src.len()
    }

    /// Number of source nodes (the bound on the source ids).
    #[inline]
    pub fn num_src(&self) -> usize {
        self.num_src
    }

    /// Number of destination nodes (the bound on the destination ids).
    #[inline]
    pub fn num_dst(&self) -> usize {
        self.num_dst
    }
}
