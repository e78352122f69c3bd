//! Graphs: validated edge sets with lazily built, cached formats.
//!
//! A [`Graph`] holds `num_edges` edges `(u, v)` from `num_src` source nodes
//! to `num_dst` destination nodes (the two may differ: sampled bipartite
//! blocks). Edge ids are the COO positions `0..E`, or the explicit ids of a
//! CSR/CSC input; edge feature rows are always indexed by edge id.
//!
//! Three formats exist, each built on first use (O(E) counting sort) and
//! cached for the graph's lifetime:
//! - **in-CSR**: rows = destinations, columns = sources: the *pull* format
//!   every g-SpMM kernel traverses;
//! - **out-CSR**: rows = sources: the in-CSR of the reverse graph, used by
//!   backward passes;
//! - **COO**: `src[e]`, `dst[e]`, used by edge-parallel g-SDDMM.
//!
//! Both CSRs keep rows sorted by (column, edge id) (see
//! [`gnnkern_simd::layout::CsrView`]) and carry the permutation to edge ids.
//! [`Graph::reverse`] swaps the roles in O(1) without copying edges.
//! Cloning a `Graph` is cheap (shared, reference-counted storage).

mod build;
mod csr;

pub use csr::Csr;

use crate::{Error, Index, Result};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

type CacheMap = HashMap<(TypeId, bool), Arc<dyn Any + Send + Sync>>;

struct Inner<I: Index> {
    num_src: usize,
    num_dst: usize,
    num_edges: usize,
    /// `(src, dst)` indexed by edge id.
    coo: OnceLock<(Vec<I>, Vec<I>)>,
    /// Rows = sources.
    out_csr: OnceLock<Csr<I>>,
    /// Rows = destinations.
    in_csr: OnceLock<Csr<I>>,
    /// Per-backend derived structures (blocked layouts, device buffers, ...).
    cache: Mutex<CacheMap>,
}

/// A directed (multi)graph from `num_src` source to `num_dst` destination
/// nodes, generic over the id type (`i32` or `i64`).
///
/// Self-loops and repeated edges are allowed. Construction validates every
/// id, so kernels can skip bounds checks.
#[derive(Clone)]
pub struct Graph<I: Index = i32> {
    inner: Arc<Inner<I>>,
    reversed: bool,
}

impl<I: Index> std::fmt::Debug for Graph<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("num_src", &self.num_src())
            .field("num_dst", &self.num_dst())
            .field("num_edges", &self.num_edges())
            .field("index", &I::NAME)
            .field("reversed", &self.reversed)
            .finish()
    }
}

impl<I: Index> Graph<I> {
    fn from_inner(inner: Inner<I>) -> Self {
        Self { inner: Arc::new(inner), reversed: false }
    }

    fn empty_inner(num_src: usize, num_dst: usize, num_edges: usize) -> Inner<I> {
        Inner {
            num_src,
            num_dst,
            num_edges,
            coo: OnceLock::new(),
            out_csr: OnceLock::new(),
            in_csr: OnceLock::new(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Builds a graph from edge lists: edge `e` goes from `src[e]` to `dst[e]`.
    pub fn from_coo(num_src: usize, num_dst: usize, src: Vec<I>, dst: Vec<I>) -> Result<Self> {
        csr::check_fits::<I>("num_src", num_src)?;
        csr::check_fits::<I>("num_dst", num_dst)?;
        if src.len() != dst.len() {
            return Err(Error::LengthMismatch { what: "dst (must match src)", expected: src.len(), actual: dst.len() });
        }
        csr::check_fits::<I>("number of edges", src.len())?;
        csr::check_ids("src", &src, num_src)?;
        csr::check_ids("dst", &dst, num_dst)?;
        let inner = Self::empty_inner(num_src, num_dst, src.len());
        let _ = inner.coo.set((src, dst));
        Ok(Self::from_inner(inner))
    }

    /// Builds a graph from an out-CSR: row `u` of `indptr`/`indices` lists
    /// the destinations of source `u`. `eids[k]` is the edge id of entry
    /// `k` (`None`: entry order).
    pub fn from_csr(
        num_src: usize,
        num_dst: usize,
        indptr: Vec<I>,
        indices: Vec<I>,
        eids: Option<Vec<I>>,
    ) -> Result<Self> {
        csr::check_fits::<I>("num_src", num_src)?;
        csr::check_fits::<I>("num_dst", num_dst)?;
        let csr = Csr::from_parts(num_src, num_dst, indptr, indices, eids)?;
        let inner = Self::empty_inner(num_src, num_dst, csr.num_edges());
        let _ = inner.out_csr.set(csr);
        Ok(Self::from_inner(inner))
    }

    /// Builds a graph from an in-CSR (a CSC of the adjacency): row `v` lists
    /// the sources of destination `v`.
    pub fn from_csc(
        num_src: usize,
        num_dst: usize,
        indptr: Vec<I>,
        indices: Vec<I>,
        eids: Option<Vec<I>>,
    ) -> Result<Self> {
        csr::check_fits::<I>("num_src", num_src)?;
        csr::check_fits::<I>("num_dst", num_dst)?;
        let csr = Csr::from_parts(num_dst, num_src, indptr, indices, eids)?;
        let inner = Self::empty_inner(num_src, num_dst, csr.num_edges());
        let _ = inner.in_csr.set(csr);
        Ok(Self::from_inner(inner))
    }

    /// Number of source nodes.
    pub fn num_src(&self) -> usize {
        if self.reversed { self.inner.num_dst } else { self.inner.num_src }
    }

    /// Number of destination nodes.
    pub fn num_dst(&self) -> usize {
        if self.reversed { self.inner.num_src } else { self.inner.num_dst }
    }

    /// Number of edges.
    pub fn num_edges(&self) -> usize {
        self.inner.num_edges
    }

    /// Whether this handle is the reverse of the graph as constructed.
    pub fn is_reversed(&self) -> bool {
        self.reversed
    }

    /// The reverse graph (every edge `u -> v` becomes `v -> u`, same edge
    /// id), sharing all storage and cached formats: O(1).
    pub fn reverse(&self) -> Self {
        Self { inner: Arc::clone(&self.inner), reversed: !self.reversed }
    }

    fn stored_out_csr(&self) -> &Csr<I> {
        let inner = &*self.inner;
        built_once(&inner.out_csr, || {
            if let Some(in_csr) = inner.in_csr.get() {
                build::transpose(in_csr)
            } else {
                let (src, dst) = self.stored_coo();
                build::csr_from_coo(src, dst, inner.num_src, inner.num_dst)
            }
        })
    }

    fn stored_in_csr(&self) -> &Csr<I> {
        let inner = &*self.inner;
        built_once(&inner.in_csr, || {
            if let Some(out_csr) = inner.out_csr.get() {
                build::transpose(out_csr)
            } else {
                let (src, dst) = self.stored_coo();
                build::csr_from_coo(dst, src, inner.num_dst, inner.num_src)
            }
        })
    }

    fn stored_coo(&self) -> (&[I], &[I]) {
        let inner = &*self.inner;
        let (s, d) = built_once(&inner.coo, || {
            if let Some(out_csr) = inner.out_csr.get() {
                build::coo_from_csr(out_csr)
            } else {
                let in_csr = inner.in_csr.get().expect("a graph is constructed with at least one format");
                let (dst, src) = build::coo_from_csr(in_csr);
                (src, dst)
            }
        });
        (s, d)
    }

    /// The pull format: rows = destinations, columns = sources.
    pub fn in_csr(&self) -> &Csr<I> {
        if self.reversed { self.stored_out_csr() } else { self.stored_in_csr() }
    }

    /// Rows = sources, columns = destinations (the reverse graph's in-CSR).
    pub fn out_csr(&self) -> &Csr<I> {
        if self.reversed { self.stored_in_csr() } else { self.stored_out_csr() }
    }

    /// `(src, dst)` of every edge, indexed by edge id.
    pub fn coo(&self) -> (&[I], &[I]) {
        let (s, d) = self.stored_coo();
        if self.reversed { (d, s) } else { (s, d) }
    }

    /// The destination of every edge by edge id, as the validated view the
    /// kernels read (builds the COO on first use).
    pub fn edge_dst(&self) -> gnnkern_simd::layout::EdgeDst<'_, I> {
        // SAFETY: the graph validated every destination id against
        // `num_dst` when it was built, and `coo()` gives this orientation's
        // destinations, the rows of its in-CSR.
        unsafe { gnnkern_simd::layout::EdgeDst::new_unchecked(self.coo().1, self.num_dst()) }
    }

    /// The source and destination of every edge by edge id, as the
    /// validated view the kernels read (builds the COO on first use).
    pub fn edge_list(&self) -> gnnkern_simd::layout::EdgeList<'_, I> {
        let (src, dst) = self.coo();
        // SAFETY: the graph validated every source id against `num_src` and
        // every destination id against `num_dst` when it was built, and
        // `coo()` gives this orientation's ends.
        unsafe { gnnkern_simd::layout::EdgeList::new_unchecked(src, dst, self.num_src(), self.num_dst()) }
    }

    /// In-degree of every destination node.
    pub fn in_degrees(&self) -> Vec<usize> {
        self.in_csr().indptr().windows(2).map(|w| w[1].to_usize() - w[0].to_usize()).collect()
    }

    /// Out-degree of every source node.
    pub fn out_degrees(&self) -> Vec<usize> {
        self.out_csr().indptr().windows(2).map(|w| w[1].to_usize() - w[0].to_usize()).collect()
    }

    /// Heap bytes of the formats built so far (not counting backend caches).
    pub fn format_bytes(&self) -> usize {
        let inner = &*self.inner;
        let coo = inner.coo.get().map_or(0, |(s, d)| (s.len() + d.len()) * std::mem::size_of::<I>());
        coo + inner.out_csr.get().map_or(0, Csr::bytes) + inner.in_csr.get().map_or(0, Csr::bytes)
    }

    /// A structure derived from this graph (and its orientation) by a
    /// backend, built by `init` on first request and shared afterwards.
    ///
    /// `init` runs with the cache unlocked (see `graph::built_once`): it may read
    /// the graph's formats and call `cached` itself; callers that race each
    /// run it, and the first value inserted is the one kept and returned.
    pub fn cached<T: Any + Send + Sync>(&self, init: impl FnOnce() -> Result<T>) -> Result<Arc<T>> {
        if let Some(v) = self.cached_if_built::<T>() {
            return Ok(v);
        }
        // Built with the map unlocked (see `built_once`); a racing builder's
        // value may be inserted first, and then that one is kept.
        let value: Arc<dyn Any + Send + Sync> = Arc::new(init()?);
        let key = (TypeId::of::<T>(), self.reversed);
        let mut map = self.inner.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let kept = Arc::clone(map.entry(key).or_insert(value));
        Ok(kept.downcast::<T>().expect("cache entries are keyed by their type"))
    }

    /// The structure of type `T` that [`Graph::cached`] built for this graph
    /// (and its orientation), if any; builds nothing (for reports that must
    /// not allocate what they measure).
    pub fn cached_if_built<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let key = (TypeId::of::<T>(), self.reversed);
        let map = self.inner.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        map.get(&key).map(|v| Arc::clone(v).downcast::<T>().expect("cache entries are keyed by their type"))
    }
}

/// The value of `cell`, built by `build` outside the cell's lock if unset.
///
/// A build runs rayon jobs, and a rayon worker that waits for its jobs runs
/// others meanwhile; when one of those (another caller's op on the same
/// graph) waited on the same `OnceLock::get_or_init`, or a mutex the build
/// held, below the build on the worker's own stack, neither could finish: two
/// C-ABI threads sharing a graph hung that way (`tests/c_abi_ops.rs`,
/// `handles_are_shared_across_threads…`, 2026-11-29). So nothing is locked
/// while building; callers that race each build, and the first value set is
/// kept (the same value: builds are deterministic).
pub(crate) fn built_once<T>(cell: &OnceLock<T>, build: impl FnOnce() -> T) -> &T {
    if let Some(v) = cell.get() {
        return v;
    }
    let value = build();
    cell.get_or_init(|| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edges(g: &Graph<i32>) -> Vec<(i32, i32, i32)> {
        let (s, d) = g.coo();
        let mut v: Vec<_> = (0..g.num_edges()).map(|e| (s[e], d[e], e as i32)).collect();
        v.sort();
        v
    }

    #[test]
    fn rows_by_edge_id_reorder_each_in_csr_row_and_nothing_when_ordered() {
        // Destination 0 gets edges 0 (source 2), 1 (source 0), 3 (source 1):
        // the in-CSR row is (0, 1), (1, 3), (2, 0) by source; by edge id 2, 0, 1.
        let g = Graph::<i32>::from_coo(3, 2, vec![2, 0, 1, 1], vec![0, 0, 1, 0]).unwrap();
        let csr = g.in_csr();
        assert_eq!((csr.indices(), csr.eids()), (&[0, 1, 2, 1][..], &[1, 3, 0, 2][..]));
        let (indices, eids) = csr.rows_by_edge_id().expect("row 0 is not in edge-id order");
        assert_eq!((indices, eids), (vec![2, 0, 1, 1], vec![0, 1, 3, 2]));
        let sorted = Graph::<i32>::from_coo(3, 2, vec![0, 1, 2, 1], vec![0, 0, 0, 1]).unwrap();
        assert_eq!(sorted.in_csr().rows_by_edge_id(), None);
    }

    #[test]
    fn formats_agree_and_rows_are_canonical() {
        let src = vec![2, 0, 1, 2, 0, 2, 2];
        let dst = vec![0, 1, 1, 0, 0, 3, 0];
        let g = Graph::<i32>::from_coo(3, 4, src.clone(), dst.clone()).unwrap();
        let inc = g.in_csr();
        assert_eq!(inc.indptr(), &[0, 4, 6, 6, 7]);
        // Row 0 (dst 0) sorted by (src, eid): (0,4) (2,0) (2,3) (2,6).
        assert_eq!(&inc.indices()[0..4], &[0, 2, 2, 2]);
        assert_eq!(&inc.eids()[0..4], &[4, 0, 3, 6]);
        let out = g.out_csr();
        assert_eq!(out.indptr(), &[0, 2, 3, 7]);
        // Rebuild from each CSR and compare edge sets with ids.
        let from_csr =
            Graph::from_csr(3, 4, out.indptr().to_vec(), out.indices().to_vec(), Some(out.eids().to_vec())).unwrap();
        let from_csc =
            Graph::from_csc(3, 4, inc.indptr().to_vec(), inc.indices().to_vec(), Some(inc.eids().to_vec())).unwrap();
        assert_eq!(edges(&from_csr), edges(&g));
        assert_eq!(edges(&from_csc), edges(&g));
        assert_eq!(from_csc.out_csr().indices(), out.indices());
    }

    #[test]
    fn reverse_swaps_roles_without_copying() {
        let g = Graph::<i64>::from_coo(2, 3, vec![0, 1, 1], vec![2, 2, 0]).unwrap();
        let r = g.reverse();
        assert_eq!((r.num_src(), r.num_dst()), (3, 2));
        assert!(std::ptr::eq(r.in_csr(), g.out_csr()));
        assert_eq!(r.coo().0, g.coo().1);
        assert_eq!(r.in_degrees(), g.out_degrees());
        assert!(!r.reverse().is_reversed());
    }

    #[test]
    fn invalid_inputs_are_typed_errors() {
        let e = Graph::<i32>::from_coo(2, 2, vec![0, 2], vec![0, 1]).unwrap_err();
        assert_eq!(e, Error::IndexOutOfRange { what: "src", position: 1, value: 2, bound: 2 });
        let e = Graph::<i32>::from_coo(2, 2, vec![0, -1], vec![0, 1]).unwrap_err();
        assert!(matches!(e, Error::IndexOutOfRange { what: "src", value: -1, .. }));
        let e = Graph::<i32>::from_coo(2, 2, vec![0], vec![0, 1]).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { .. }));
        let e = Graph::<i32>::from_csr(2, 2, vec![0, 2, 1], vec![0, 1], None).unwrap_err();
        assert_eq!(e, Error::BadIndptr { reason: "indptr must be non-decreasing", position: 2 });
        let e = Graph::<i32>::from_csr(2, 2, vec![0, 1], vec![0], None).unwrap_err();
        assert!(matches!(e, Error::LengthMismatch { .. }));
        let e = Graph::<i32>::from_csr(2, 2, vec![1, 1, 1], vec![0], None).unwrap_err();
        assert!(matches!(e, Error::BadIndptr { position: 0, .. }));
        let e = Graph::<i32>::from_csr(2, 2, vec![0, 1, 3], vec![0, 1], None).unwrap_err();
        assert!(matches!(e, Error::BadIndptr { position: 2, .. }));
        let e = Graph::<i32>::from_csr(2, 2, vec![0, 1, 2], vec![0, 1], Some(vec![1, 1])).unwrap_err();
        assert!(matches!(e, Error::BadEdgeIds { problem: "is repeated", .. }));
        let e = Graph::<i32>::from_coo(1 << 31, 1, vec![], vec![]).unwrap_err();
        assert!(matches!(e, Error::CountOverflow { index_type: "int32", .. }));
    }

    #[test]
    fn unsorted_csr_rows_are_canonicalised() {
        let g = Graph::<i32>::from_csr(1, 3, vec![0, 3], vec![2, 0, 2], Some(vec![0, 2, 1])).unwrap();
        assert_eq!(g.out_csr().indices(), &[0, 2, 2]);
        assert_eq!(g.out_csr().eids(), &[2, 0, 1]);
    }

    #[test]
    fn cache_builds_once_per_orientation() {
        let g = Graph::<i32>::from_coo(2, 2, vec![0], vec![1]).unwrap();
        let a = g.cached(|| Ok(7u32)).unwrap();
        let b = g.cached(|| -> Result<u32> { unreachable!() }).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(*g.reverse().cached(|| Ok(9u32)).unwrap(), 9);
    }

    #[test]
    fn peeking_at_the_cache_builds_nothing() {
        let g = Graph::<i32>::from_coo(2, 2, vec![0], vec![1]).unwrap();
        assert!(g.cached_if_built::<u32>().is_none());
        let a = g.cached(|| Ok(7u32)).unwrap();
        assert_eq!(*a, 7, "the miss left no entry, so `cached` built one");
        assert!(Arc::ptr_eq(&a, &g.cached_if_built::<u32>().unwrap()));
        assert!(g.reverse().cached_if_built::<u32>().is_none(), "entries are per orientation");
    }
}
