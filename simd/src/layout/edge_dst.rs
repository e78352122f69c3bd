//! A borrowed, already-validated map from edge id to destination node.

use crate::Index;

/// The destination node of every edge, indexed by edge id (the `dst`
/// array of a validated graph's COO).
///
/// Only [`EdgeDst::new_unchecked`] creates one, so holding an `EdgeDst`
/// means every id is a valid destination row and kernels may index per-node
/// tables with it without bounds checks.
#[derive(Clone, Copy, Debug)]
pub struct EdgeDst<'a, I: Index> {
    dst: &'a [I],
    num_dst: usize,
}

impl<'a, I: Index> EdgeDst<'a, I> {
    /// Wraps a validated destination array.
    ///
    /// # Safety
    /// Every `dst[e]` is in `0..num_dst`, and `dst[e]` is the destination
    /// (in-CSR row) of edge `e` of the graph the kernels are called with.
    pub unsafe fn new_unchecked(dst: &'a [I], num_dst: usize) -> Self {
        debug_assert!(dst.iter().all(|v| v.to_usize() < num_dst));
        Self { dst, num_dst }
    }

    /// Destination of each edge, by edge id.
    #[inline]
    pub fn ids(&self) -> &'a [I] {
        self.dst
    }

    /// Number of destination nodes (the bound on the ids).
    #[inline]
    pub fn num_dst(&self) -> usize {
        self.num_dst
    }
}
