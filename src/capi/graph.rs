//! Graph handles: creation from COO / CSR / CSC arrays, queries, reverse,
//! destroy.
//!
//! Decision — a handle registry, not a pointer: `gk_graph` is a 64-bit id
//! looked up in a process-wide map. Ids are never reused, so a destroyed,
//! never-created or zero handle is found missing and reported as
//! `GK_ERROR_INVALID_HANDLE`. A raw pointer with a magic field cannot give
//! that guarantee: reading the magic of freed memory is itself a
//! use-after-free, and the allocator may have put a new graph there. The
//! cost is one read-locked hash lookup and an `Arc` clone per call, nothing
//! next to a kernel. A call clones the graph out of the registry, so a
//! concurrent `gk_graph_destroy` only drops the registry's reference: the
//! running call finishes on its own clone.

use super::enums::gk_index_type;
use super::status::{CResult, Failure, boundary, gk_status};
use crate::graph::Graph;
use crate::{Error, Index};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, RwLock};

/// An opaque graph handle. Zero is never a valid handle.
///
/// Ownership: created by a `gk_graph_from_*` function or `gk_graph_reverse`
/// and owned by the caller until `gk_graph_destroy`. The handle owns copies
/// of the arrays it was built from; the caller's arrays may be freed right
/// after creation. Thread safety: a handle may be used from any number of
/// threads at once (formats built lazily are built once, under a lock, and
/// shared).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub struct gk_graph {
    pub id: u64,
}

/// A live graph of either index type.
#[derive(Clone)]
pub(crate) enum AnyGraph {
    I32(Graph<i32>),
    I64(Graph<i64>),
}

/// Runs `$body` with `$g` bound to the typed graph.
macro_rules! with_graph {
    ($any:expr, $g:ident => $body:expr) => {
        match $any {
            $crate::capi::graph::AnyGraph::I32($g) => $body,
            $crate::capi::graph::AnyGraph::I64($g) => $body,
        }
    };
}
pub(crate) use with_graph;

static REGISTRY: LazyLock<RwLock<HashMap<u64, AnyGraph>>> = LazyLock::new(Default::default);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn insert(graph: AnyGraph) -> gk_graph {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    REGISTRY.write().unwrap_or_else(|p| p.into_inner()).insert(id, graph);
    gk_graph { id }
}

fn invalid_handle(h: gk_graph) -> Failure {
    Failure::new(
        gk_status::GK_ERROR_INVALID_HANDLE,
        format!("graph handle {} is not live (never created, or already destroyed)", h.id),
    )
}

/// The graph behind a live handle (a cheap clone sharing its storage).
pub(crate) fn lookup(h: gk_graph) -> CResult<AnyGraph> {
    REGISTRY.read().unwrap_or_else(|p| p.into_inner()).get(&h.id).cloned().ok_or_else(|| invalid_handle(h))
}

/// The caller's handle slot, checked non-NULL before any work is done.
fn slot(out: *mut gk_graph) -> CResult<NonNull<gk_graph>> {
    NonNull::new(out).ok_or_else(|| Failure::null("out (the handle slot)"))
}

/// Registers `graph` and writes its new handle to `out`.
///
/// # Safety
/// `out` must be valid for writing one `gk_graph`.
unsafe fn publish(out: NonNull<gk_graph>, graph: AnyGraph) {
    let handle = insert(graph);
    // SAFETY: non-NULL by type; writable by the caller's contract.
    unsafe { out.write(handle) };
}

fn count(what: &'static str, n: i64) -> CResult<usize> {
    usize::try_from(n)
        .map_err(|_| Failure::new(gk_status::GK_ERROR_INVALID_ARGUMENT, format!("{what} = {n} is negative")))
}

/// Copies `len` ids from `ptr` after checking the count fits the index type
/// (so a hostile count is an error before anything is read).
///
/// # Safety
/// `ptr` must be NULL or valid for reading `len` values of `I`.
unsafe fn copy_ids<I: Index>(what: &'static str, ptr: *const I, len: usize) -> CResult<Vec<I>> {
    if len > I::MAX_USIZE {
        return Err(Error::CountOverflow { what, count: len, index_type: I::NAME }.into());
    }
    if len == 0 {
        return Ok(Vec::new());
    }
    if ptr.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: non-NULL, and the caller guarantees `len` readable values;
    // `len <= I::MAX` keeps the byte size far below isize::MAX.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec())
}

fn sizes<I: Index>(num_src: i64, num_dst: i64, num_edges: i64) -> CResult<(usize, usize, usize)> {
    let fits = |what: &'static str, n: i64| -> CResult<usize> {
        let n = count(what, n)?;
        if n > I::MAX_USIZE {
            return Err(Error::CountOverflow { what, count: n, index_type: I::NAME }.into());
        }
        Ok(n)
    };
    Ok((fits("num_src", num_src)?, fits("num_dst", num_dst)?, fits("num_edges", num_edges)?))
}

trait Wrap: Index {
    fn wrap(g: Graph<Self>) -> AnyGraph;
}
impl Wrap for i32 {
    fn wrap(g: Graph<i32>) -> AnyGraph {
        AnyGraph::I32(g)
    }
}
impl Wrap for i64 {
    fn wrap(g: Graph<i64>) -> AnyGraph {
        AnyGraph::I64(g)
    }
}

/// # Safety
/// As for the `gk_graph_from_coo_*` functions.
unsafe fn from_coo<I: Wrap>(
    num_src: i64,
    num_dst: i64,
    num_edges: i64,
    src: *const I,
    dst: *const I,
    out: *mut gk_graph,
) -> gk_status {
    boundary(|| {
        let out = slot(out)?;
        let (ns, nd, ne) = sizes::<I>(num_src, num_dst, num_edges)?;
        // SAFETY: the caller guarantees `num_edges` readable ids in each array.
        let (s, d) = unsafe { (copy_ids("src", src, ne)?, copy_ids("dst", dst, ne)?) };
        let graph = Graph::from_coo(ns, nd, s, d)?;
        // SAFETY: `out` is writable (caller contract).
        unsafe { publish(out, I::wrap(graph)) };
        Ok(())
    })
}

/// Which compressed format: rows = sources (CSR) or destinations (CSC).
#[derive(Clone, Copy)]
enum Compressed {
    Csr,
    Csc,
}

/// # Safety
/// As for the `gk_graph_from_csr_*` / `gk_graph_from_csc_*` functions.
#[allow(clippy::too_many_arguments)]
unsafe fn from_compressed<I: Wrap>(
    format: Compressed,
    num_src: i64,
    num_dst: i64,
    num_edges: i64,
    indptr: *const I,
    indices: *const I,
    eids: *const I,
    out: *mut gk_graph,
) -> gk_status {
    boundary(|| {
        let out = slot(out)?;
        let (ns, nd, ne) = sizes::<I>(num_src, num_dst, num_edges)?;
        let rows = match format {
            Compressed::Csr => ns,
            Compressed::Csc => nd,
        };
        // SAFETY: the caller guarantees rows + 1 offsets and num_edges ids
        // (and num_edges edge ids when `eids` is not NULL); rows + 1 fits
        // since rows <= I::MAX, and being at least 1, a NULL `indptr` is
        // reported by `copy_ids`.
        let (p, i, e) = unsafe {
            (
                copy_ids("indptr", indptr, rows + 1)?,
                copy_ids("indices", indices, ne)?,
                if eids.is_null() { None } else { Some(copy_ids("eids", eids, ne)?) },
            )
        };
        let graph = match format {
            Compressed::Csr => Graph::from_csr(ns, nd, p, i, e)?,
            Compressed::Csc => Graph::from_csc(ns, nd, p, i, e)?,
        };
        // SAFETY: `out` is writable (caller contract).
        unsafe { publish(out, I::wrap(graph)) };
        Ok(())
    })
}

// The six constructors are spelled out (not generated by a macro) because
// cbindgen reads the source without expanding macros.

/// Creates a graph with int32 ids from edge lists: edge e goes from
/// `src[e]` to `dst[e]`; edge ids are the positions 0..num_edges. Ids must
/// lie in `0..num_src` / `0..num_dst`; self-loops and repeated edges are
/// allowed. The arrays are copied. On success writes the new handle to
/// `*out` (release it with `gk_graph_destroy`).
///
/// Errors: NULL_POINTER (`out`, or an array while num_edges > 0),
/// INVALID_ARGUMENT (a negative count), INVALID_GRAPH (a count above the
/// index type's range), INDEX_OUT_OF_RANGE (an id; the message names the
/// array and position).
///
/// # Safety
/// `src` and `dst` must each be NULL or valid for reading `num_edges` ids;
/// `out` must be NULL or valid for writing one handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_graph_from_coo_i32(
    num_src: i64,
    num_dst: i64,
    num_edges: i64,
    src: *const i32,
    dst: *const i32,
    out: *mut gk_graph,
) -> gk_status {
    // SAFETY: forwarded caller contract.
    unsafe { from_coo(num_src, num_dst, num_edges, src, dst, out) }
}

/// `gk_graph_from_coo_i32` with int64 ids.
///
/// # Safety
/// As for `gk_graph_from_coo_i32`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_graph_from_coo_i64(
    num_src: i64,
    num_dst: i64,
    num_edges: i64,
    src: *const i64,
    dst: *const i64,
    out: *mut gk_graph,
) -> gk_status {
    // SAFETY: forwarded caller contract.
    unsafe { from_coo(num_src, num_dst, num_edges, src, dst, out) }
}

/// Creates a graph with int32 ids from an out-CSR: row u of `indptr`
/// (num_src + 1 offsets) and `indices` (num_edges destination ids) lists the
/// destinations of source u. `eids` (nullable) gives the edge id of each
/// entry, a permutation of 0..num_edges; NULL means entry order. Rows need
/// not be sorted. The arrays are copied.
///
/// Errors: as for COO, plus INVALID_GRAPH for a malformed `indptr` (first
/// offset not 0, decreasing, last offset not num_edges) or `eids` that are
/// not a permutation.
///
/// # Safety
/// `indptr` must be NULL or valid for reading num_src + 1 offsets; `indices`
/// and `eids` NULL or valid for num_edges ids; `out` as for COO.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_graph_from_csr_i32(
    num_src: i64,
    num_dst: i64,
    num_edges: i64,
    indptr: *const i32,
    indices: *const i32,
    eids: *const i32,
    out: *mut gk_graph,
) -> gk_status {
    // SAFETY: forwarded caller contract.
    unsafe { from_compressed(Compressed::Csr, num_src, num_dst, num_edges, indptr, indices, eids, out) }
}

/// `gk_graph_from_csr_i32` with int64 ids.
///
/// # Safety
/// As for `gk_graph_from_csr_i32`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_graph_from_csr_i64(
    num_src: i64,
    num_dst: i64,
    num_edges: i64,
    indptr: *const i64,
    indices: *const i64,
    eids: *const i64,
    out: *mut gk_graph,
) -> gk_status {
    // SAFETY: forwarded caller contract.
    unsafe { from_compressed(Compressed::Csr, num_src, num_dst, num_edges, indptr, indices, eids, out) }
}

/// Creates a graph with int32 ids from an in-CSR (the CSC of the
/// adjacency): row v of `indptr` (num_dst + 1 offsets) and `indices` lists
/// the sources of destination v. Otherwise as `gk_graph_from_csr_i32`.
///
/// # Safety
/// `indptr` must be NULL or valid for reading num_dst + 1 offsets; `indices`
/// and `eids` NULL or valid for num_edges ids; `out` as for COO.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_graph_from_csc_i32(
    num_src: i64,
    num_dst: i64,
    num_edges: i64,
    indptr: *const i32,
    indices: *const i32,
    eids: *const i32,
    out: *mut gk_graph,
) -> gk_status {
    // SAFETY: forwarded caller contract.
    unsafe { from_compressed(Compressed::Csc, num_src, num_dst, num_edges, indptr, indices, eids, out) }
}

/// `gk_graph_from_csc_i32` with int64 ids.
///
/// # Safety
/// As for `gk_graph_from_csc_i32`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_graph_from_csc_i64(
    num_src: i64,
    num_dst: i64,
    num_edges: i64,
    indptr: *const i64,
    indices: *const i64,
    eids: *const i64,
    out: *mut gk_graph,
) -> gk_status {
    // SAFETY: forwarded caller contract.
    unsafe { from_compressed(Compressed::Csc, num_src, num_dst, num_edges, indptr, indices, eids, out) }
}

/// Destroys a handle. Calls running on the graph in other threads finish
/// normally; the graph's memory is freed when the last of them returns.
/// Errors: INVALID_HANDLE (zero, unknown or already destroyed: destroying
/// twice is an error, never a crash).
#[unsafe(no_mangle)]
pub extern "C" fn gk_graph_destroy(graph: gk_graph) -> gk_status {
    boundary(|| {
        let removed = REGISTRY.write().unwrap_or_else(|p| p.into_inner()).remove(&graph.id);
        removed.map(drop).ok_or_else(|| invalid_handle(graph))
    })
}

/// Creates a handle to the reverse graph (every edge u -> v becomes v -> u,
/// same edge id), sharing the storage and cached formats of `graph`: O(1).
/// The new handle is independent: destroy each handle separately.
///
/// # Safety
/// `out` must be NULL or valid for writing one handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_graph_reverse(graph: gk_graph, out: *mut gk_graph) -> gk_status {
    boundary(|| {
        let out = slot(out)?;
        let reversed = match lookup(graph)? {
            AnyGraph::I32(g) => AnyGraph::I32(g.reverse()),
            AnyGraph::I64(g) => AnyGraph::I64(g.reverse()),
        };
        // SAFETY: `out` is writable (caller contract).
        unsafe { publish(out, reversed) };
        Ok(())
    })
}

/// Node and edge counts of a graph.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
#[allow(non_camel_case_types)]
pub struct gk_graph_info {
    pub num_src: i64,
    pub num_dst: i64,
    pub num_edges: i64,
    pub index_type: gk_index_type,
}

/// Writes the node/edge counts and index type of `graph` to `*info`.
///
/// # Safety
/// `info` must be NULL or valid for writing one `gk_graph_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gk_graph_get_info(graph: gk_graph, info: *mut gk_graph_info) -> gk_status {
    boundary(|| {
        if info.is_null() {
            return Err(Failure::null("info"));
        }
        let g = lookup(graph)?;
        let index_type = match g {
            AnyGraph::I32(_) => gk_index_type::GK_INDEX_INT32,
            AnyGraph::I64(_) => gk_index_type::GK_INDEX_INT64,
        };
        let value = with_graph!(&g, g => gk_graph_info {
            num_src: g.num_src() as i64,
            num_dst: g.num_dst() as i64,
            num_edges: g.num_edges() as i64,
            index_type,
        });
        // SAFETY: non-NULL and writable (caller contract).
        unsafe { info.write(value) };
        Ok(())
    })
}

/// Number of live graph handles in the process (for leak checks in tests).
#[unsafe(no_mangle)]
pub extern "C" fn gk_graph_live_count() -> i64 {
    REGISTRY.read().unwrap_or_else(|p| p.into_inner()).len() as i64
}
