//! A borrowed, already-validated list of edges by id (the COO).

use crate::Index;

/// The source and destination node of every edge, indexed by edge id (the
/// `src` and `dst` arrays of a validated graph's COO).
///
/// Only [`EdgeList::new_unchecked`] creates one, so holding an `EdgeList`
/// means every id is a valid node of its side and kernels may index
/// per-node operand rows with it without bounds checks.
#[derive(Clone, Copy, Debug)]
pub struct EdgeList<'a, I: Index> {
    src: &'a [I],
    dst: &'a [I],
    num_src: usize,
    num_dst: usize,
}

impl<'a, I: Index> EdgeList<'a, I> {
    /// Wraps validated edge arrays.
    ///
    /// # Safety
    /// `src.len() == dst.len()`; every `src[e]` is in `0..num_src` and every
    /// `dst[e]` in `0..num_dst`.
    pub unsafe fn new_unchecked(src: &'a [I], dst: &'a [I], num_src: usize, num_dst: usize) -> Self {
        debug_assert_eq!(src.len(), dst.len());
        debug_assert!(src.iter().all(|u| u.to_usize() < num_src));
        debug_assert!(dst.iter().all(|v| v.to_usize() < num_dst));
        Self { src, dst, num_src, num_dst }
    }

    /// Source of each edge, by edge id.
    #[inline]
    pub fn src(&self) -> &'a [I] {
        self.src
    }

    /// Destination of each edge, by edge id.
    #[inline]
    pub fn dst(&self) -> &'a [I] {
        self.dst
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
