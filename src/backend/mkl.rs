//! The MKL backend: sum and mean aggregation as a sparse × dense product,
//! `out = A · X`, with Intel MKL's inspector-executor sparse BLAS
//! (`mkl_sparse_s_mm`), as Avancha et al. run GNN aggregation on CPUs.
//!
//! `A` is the in-CSR (rows = destinations, columns = sources) with values
//! chosen per operator:
//!
//! | call                       | `A[v, u]` for the in-CSR entry of edge `e` |
//! |----------------------------|--------------------------------------------|
//! | `copy_u_sum`               | 1                                          |
//! | `copy_u_mean`              | 1 / in-degree(v)                           |
//! | `u_mul_e_sum`, `e_mul_u_sum` with a scalar per edge (`w: [E, 1]`) | `w[e]` |
//!
//! Threading: the MKL sequential layer runs under rayon. The destination
//! rows are cut into one block per rayon thread, balanced by non-zeros; each
//! block has its own MKL handle over its rows (its own rebased row offsets
//! and a slice of the column array), so blocks run independently and write
//! disjoint output rows. The unweighted handles (values 1 and 1/degree) are
//! built once per graph orientation, with `mkl_sparse_set_mm_hint` and
//! `mkl_sparse_optimize`, and cached in the graph ([`Graph::cached`]). The
//! weighted product gets its values per call (edge weights permuted into
//! in-CSR order), so it wraps the cached structure in short-lived,
//! unoptimised handles.
//!
//! Everything else (max/min, other operators, broadcasting beyond a scalar
//! edge weight, sizes beyond MKL's 32-bit `MKL_INT`) is
//! [`Error::Unsupported`], returned before anything is written.
//!
//! `auto` picks it only where the crossover measurements
//! (`examples/mkl_crossover.rs`, `perf-reports/mkl/`) put it ahead of the
//! SIMD kernels: supported calls with at most [`AUTO_MAX_WIDTH`] features
//! per row ([`auto_prefers`]). Forced (`GNNKERN_BACKEND=mkl`,
//! `Exec::forced`) it runs every call it supports, for comparisons.

use super::{Backend, BackendKind, EdgeSoftmaxBackwardCall, EdgeSoftmaxCall, SddmmCall, SpmmCall};
use crate::graph::{Csr, Graph};
use crate::{Error, Index, Result};
use gnnkern_simd::op::{BinaryOp, BinaryOpKind, ReduceKind, Reducer, Target};
use rayon::prelude::*;
use std::ops::Range;

/// The hand-written declarations of the few MKL functions used
/// (`mkl_spblas.h`, LP64 interface: `MKL_INT` is `i32`).
mod sys {
    use std::ffi::c_void;

    pub type MklInt = i32;
    pub type SparseMatrix = *mut c_void;
    pub type Status = i32;

    pub const SPARSE_STATUS_SUCCESS: Status = 0;
    pub const SPARSE_OPERATION_NON_TRANSPOSE: i32 = 10;
    pub const SPARSE_MATRIX_TYPE_GENERAL: i32 = 20;
    pub const SPARSE_INDEX_BASE_ZERO: i32 = 0;
    pub const SPARSE_FILL_MODE_LOWER: i32 = 40;
    pub const SPARSE_DIAG_NON_UNIT: i32 = 50;
    pub const SPARSE_LAYOUT_ROW_MAJOR: i32 = 101;

    /// `struct matrix_descr` (three C enums).
    #[repr(C)]
    #[derive(Clone, Copy)]
    pub struct MatrixDescr {
        pub kind: i32,
        pub mode: i32,
        pub diag: i32,
    }

    pub const GENERAL: MatrixDescr =
        MatrixDescr { kind: SPARSE_MATRIX_TYPE_GENERAL, mode: SPARSE_FILL_MODE_LOWER, diag: SPARSE_DIAG_NON_UNIT };

    unsafe extern "C" {
        pub fn mkl_sparse_s_create_csr(
            a: *mut SparseMatrix,
            indexing: i32,
            rows: MklInt,
            cols: MklInt,
            rows_start: *mut MklInt,
            rows_end: *mut MklInt,
            col_indx: *mut MklInt,
            values: *mut f32,
        ) -> Status;
        pub fn mkl_sparse_set_mm_hint(
            a: SparseMatrix,
            operation: i32,
            descr: MatrixDescr,
            layout: i32,
            dense_matrix_size: MklInt,
            expected_calls: MklInt,
        ) -> Status;
        pub fn mkl_sparse_optimize(a: SparseMatrix) -> Status;
        pub fn mkl_sparse_s_mm(
            operation: i32,
            alpha: f32,
            a: SparseMatrix,
            descr: MatrixDescr,
            layout: i32,
            x: *const f32,
            columns: MklInt,
            ldx: MklInt,
            beta: f32,
            y: *mut f32,
            ldy: MklInt,
        ) -> Status;
        pub fn mkl_sparse_destroy(a: SparseMatrix) -> Status;
    }
}

/// `Ok`: MKL is linked statically whenever the `mkl` feature is on.
pub fn availability() -> Result<()> {
    Ok(())
}

/// The MKL backend.
#[derive(Clone, Copy, Debug)]
pub struct Mkl;

impl Mkl {
    /// The backend (available whenever the `mkl` feature is built).
    pub fn get() -> Result<Mkl> {
        availability().map(|()| Mkl)
    }
}

fn unsupported(what: impl Into<String>) -> Error {
    Error::Unsupported { backend: "mkl", what: what.into() }
}

fn mkl_int(what: &str, n: usize) -> Result<sys::MklInt> {
    sys::MklInt::try_from(n).map_err(|_| unsupported(format!("{what} = {n} (above MKL's 32-bit MKL_INT)")))
}

fn check(status: sys::Status, what: &str) -> Result<()> {
    if status == sys::SPARSE_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Error::Device { backend: "mkl", message: format!("{what} failed with sparse_status_t {status}") })
    }
}

/// What the sparse matrix holds, per in-CSR entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Values {
    Ones,
    InverseDegree,
    /// `w[eid]`: the call's scalar edge weights.
    EdgeWeights,
}

/// One row block of the in-CSR in MKL's 32-bit form: row offsets rebased to
/// the block's first non-zero, and the block's slice of the column indices.
struct Block {
    rows: Range<usize>,
    nnz: Range<usize>,
    rows_start: Vec<sys::MklInt>,
    col_indx: Vec<sys::MklInt>,
}

/// An MKL matrix handle that owns the arrays it reads.
///
/// MKL's `create_csr` keeps pointers to the arrays rather than copying
/// them, so they live in the same struct (heap buffers do not move when the
/// struct does) and outlive the handle (dropped after it, in `Drop`).
struct Handle {
    raw: sys::SparseMatrix,
}

// SAFETY: an MKL sparse handle is a heap object with no thread affinity;
// the inspector-executor routines are thread safe (MKL developer reference,
// "Sparse BLAS inspector-executor: thread safety"), and after `optimize` the
// handle is only read by `mkl_sparse_s_mm`.
unsafe impl Send for Handle {}
// SAFETY: as above; shared use only calls the read-only `mkl_sparse_s_mm`.
unsafe impl Sync for Handle {}

impl Handle {
    /// Wraps one block with `values` (one per non-zero of the block).
    ///
    /// # Safety
    /// `block.rows_start`, `block.col_indx` and `values` must stay alive and
    /// unmodified for the lifetime of the handle.
    unsafe fn new(block: &Block, num_cols: sys::MklInt, values: &[f32]) -> Result<Self> {
        debug_assert_eq!(values.len(), block.col_indx.len());
        let rows = mkl_int("rows of a block", block.rows.len())?;
        let mut raw: sys::SparseMatrix = std::ptr::null_mut();
        let starts = block.rows_start.as_ptr().cast_mut();
        // SAFETY: the arrays have rows + 1 offsets (rows_end = starts + 1 is
        // the three-array CSR form), nnz column indices < num_cols and nnz
        // values; MKL does not write to them (create_csr documents the input
        // arrays as left unchanged), so the `cast_mut` is never written
        // through; the caller keeps them alive.
        let status = unsafe {
            sys::mkl_sparse_s_create_csr(
                &mut raw,
                sys::SPARSE_INDEX_BASE_ZERO,
                rows,
                num_cols,
                starts,
                starts.add(1),
                block.col_indx.as_ptr().cast_mut(),
                values.as_ptr().cast_mut(),
            )
        };
        check(status, "mkl_sparse_s_create_csr")?;
        Ok(Handle { raw })
    }

    /// `y[rows, d] = A · x[cols, d]` in row-major layout.
    ///
    /// # Safety
    /// `x` must hold `cols × d` and `y` `rows × d` elements for the block the
    /// handle was built from.
    unsafe fn mm(&self, x: &[f32], d: sys::MklInt, y: &mut [f32]) -> Result<()> {
        // SAFETY: the handle is live; x and y have the extents the caller
        // guarantees; beta = 0 makes MKL overwrite y without reading it.
        let status = unsafe {
            sys::mkl_sparse_s_mm(
                sys::SPARSE_OPERATION_NON_TRANSPOSE,
                1.0,
                self.raw,
                sys::GENERAL,
                sys::SPARSE_LAYOUT_ROW_MAJOR,
                x.as_ptr(),
                d,
                d,
                0.0,
                y.as_mut_ptr(),
                d,
            )
        };
        check(status, "mkl_sparse_s_mm")
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: `raw` came from a successful create_csr and is destroyed once.
        let status = unsafe { sys::mkl_sparse_destroy(self.raw) };
        debug_assert_eq!(status, sys::SPARSE_STATUS_SUCCESS);
    }
}

/// The in-CSR structure cut into row blocks (cached per graph orientation).
struct Structure {
    num_cols: sys::MklInt,
    blocks: Vec<Block>,
}

impl Structure {
    /// Cuts the in-CSR into `parts` row blocks of about equal non-zeros.
    fn build<I: Index>(csr: &Csr<I>, parts: usize) -> Result<Self> {
        let num_cols = mkl_int("source nodes", csr.num_cols())?;
        mkl_int("edges", csr.num_edges())?;
        let indptr = csr.indptr();
        let (rows, nnz) = (csr.num_rows(), csr.num_edges());
        let mut blocks = Vec::with_capacity(parts);
        let mut r0 = 0;
        for p in 1..=parts {
            // The first row whose offset reaches the p-th share of non-zeros.
            let target = nnz * p / parts;
            let r1 = if p == parts { rows } else { r0 + indptr[r0..].partition_point(|x| x.to_usize() < target) };
            let r1 = r1.clamp(r0, rows);
            if r1 > r0 {
                let base = indptr[r0].to_usize();
                let end = indptr[r1].to_usize();
                let rows_start = indptr[r0..=r1].iter().map(|x| (x.to_usize() - base) as sys::MklInt).collect();
                let col_indx = csr.indices()[base..end].iter().map(|x| x.to_usize() as sys::MklInt).collect();
                blocks.push(Block { rows: r0..r1, nnz: base..end, rows_start, col_indx });
            }
            r0 = r1;
        }
        Ok(Structure { num_cols, blocks })
    }
}

/// A block with its cached values and optimised handle.
struct OptimizedBlock {
    // Field order: the handle is dropped before the arrays it points into.
    handle: Option<Handle>,
    _values: Vec<f32>,
}

/// Cached, optimised handles for one unweighted value kind.
struct Optimized<const KIND: u8> {
    blocks: Vec<OptimizedBlock>,
}

const ONES: u8 = 0;
const INVERSE_DEGREE: u8 = 1;

impl<const KIND: u8> Optimized<KIND> {
    fn build<I: Index>(graph: &Graph<I>, structure: &Structure, d: sys::MklInt) -> Result<Self> {
        let indptr = graph.in_csr().indptr();
        let mut blocks = Vec::with_capacity(structure.blocks.len());
        for block in &structure.blocks {
            let values: Vec<f32> = if KIND == ONES {
                vec![1.0; block.nnz.len()]
            } else {
                block
                    .rows
                    .clone()
                    .flat_map(|v| {
                        let deg = indptr[v + 1].to_usize() - indptr[v].to_usize();
                        std::iter::repeat_n((1.0 / deg as f64) as f32, deg)
                    })
                    .collect()
            };
            let handle = if block.nnz.is_empty() {
                None
            } else {
                // SAFETY: `block` lives in the cached `Structure`, which the
                // graph cache keeps alive as long as this entry (both are
                // dropped with the graph, this one holding an Arc to it), and
                // `values` moves into the same `OptimizedBlock` as the handle.
                let h = unsafe { Handle::new(block, structure.num_cols, &values)? };
                // SAFETY: `h.raw` is a live handle.
                let hint = unsafe {
                    sys::mkl_sparse_set_mm_hint(
                        h.raw,
                        sys::SPARSE_OPERATION_NON_TRANSPOSE,
                        sys::GENERAL,
                        sys::SPARSE_LAYOUT_ROW_MAJOR,
                        d,
                        1000,
                    )
                };
                check(hint, "mkl_sparse_set_mm_hint")?;
                // SAFETY: `h.raw` is a live handle.
                check(unsafe { sys::mkl_sparse_optimize(h.raw) }, "mkl_sparse_optimize")?;
                Some(h)
            };
            blocks.push(OptimizedBlock { handle, _values: values });
        }
        Ok(Optimized { blocks })
    }
}

/// The structure plus, for the unweighted kinds, the optimised handles.
/// The structure is shared through an `Arc` so the handles' arrays outlive them.
struct Cached<const KIND: u8> {
    optimized: Optimized<KIND>,
    _structure: std::sync::Arc<Structure>,
}

/// What one supported call needs: the dense operand and, if weighted, the weights.
struct Plan<'a> {
    values: Values,
    x: &'a [f32],
    weights: &'a [f32],
    d: usize,
}

/// Which calls this backend runs; `Unsupported` (naming why) for the rest.
fn plan<'a, O: BinaryOp, R: Reducer, I: Index>(call: &SpmmCall<'a, I>) -> Result<Plan<'a>> {
    let name = || format!("g-SpMM {} with reducer {}", O::NAME, R::NAME);
    let reduce = R::KIND;
    if !matches!(reduce, ReduceKind::Sum | ReduceKind::Mean) {
        return Err(unsupported(format!("{} (only sum and mean reduce as a sparse × dense product)", name())));
    }
    let p = call.plan;
    match O::KIND {
        Some(BinaryOpKind::CopyLhs) if call.lhs_target == Target::Src => {
            let values = if reduce == ReduceKind::Mean { Values::InverseDegree } else { Values::Ones };
            Ok(Plan { values, x: call.lhs, weights: &[], d: p.out_len })
        }
        Some(BinaryOpKind::CopyRhs) if call.rhs_target == Target::Src => {
            let values = if reduce == ReduceKind::Mean { Values::InverseDegree } else { Values::Ones };
            Ok(Plan { values, x: call.rhs, weights: &[], d: p.out_len })
        }
        Some(BinaryOpKind::Mul) if reduce == ReduceKind::Sum && p.reduce_len == 1 => {
            let (x, w) = match (call.lhs_target, call.rhs_target) {
                (Target::Src, Target::Edge) if p.rhs_len == 1 && p.lhs_len == p.out_len => (call.lhs, call.rhs),
                (Target::Edge, Target::Src) if p.lhs_len == 1 && p.rhs_len == p.out_len => (call.rhs, call.lhs),
                _ => {
                    return Err(unsupported(format!(
                        "{} on these operands (only source features times one scalar per edge)",
                        name()
                    )));
                }
            };
            Ok(Plan { values: Values::EdgeWeights, x, weights: w, d: p.out_len })
        }
        _ => Err(unsupported(format!("{} (only copy_u sum/mean and u_mul_e sum with a scalar edge weight)", name()))),
    }
}

/// Widest feature row for which `auto` prefers MKL. Measured with
/// `examples/mkl_crossover.rs` (`perf-reports/mkl/`): at d = 4 MKL was
/// faster in all 15 cells on AMD Zen 5 (1.2–3.5×; the SIMD kernels fill a
/// quarter of a 16-lane vector per row there) and in every cell of an
/// earlier, loaded run on an Intel Xeon VM with the previous kernels; at d = 16 only 9 of 15 on AMD, at d ≥ 32 the SIMD kernels win
/// 1.4–16× on AMD. So the region is d ≤ 8.
pub const AUTO_MAX_WIDTH: usize = 8;

/// Whether `auto` should offer this g-SpMM to MKL first: a call MKL runs
/// (copy_u sum/mean, u_mul_e sum with a scalar weight) with at most
/// [`AUTO_MAX_WIDTH`] outputs per row.
pub(crate) fn auto_prefers<O: BinaryOp, R: Reducer, I: Index>(call: &SpmmCall<'_, I>) -> bool {
    call.plan.out_len <= AUTO_MAX_WIDTH && plan::<O, R, I>(call).is_ok()
}

/// Splits `out` into the disjoint row ranges of `blocks` (rows × d each).
fn split_rows<'o>(mut out: &'o mut [f32], blocks: &[Block], d: usize) -> Vec<&'o mut [f32]> {
    let mut parts = Vec::with_capacity(blocks.len());
    let mut row = 0;
    for b in blocks {
        let skip = (b.rows.start - row) * d;
        let (_, rest) = std::mem::take(&mut out).split_at_mut(skip);
        let (mine, rest) = rest.split_at_mut(b.rows.len() * d);
        parts.push(mine);
        out = rest;
        row = b.rows.end;
    }
    parts
}

impl Mkl {
    fn spmm<I: Index>(&self, call: SpmmCall<'_, I>, plan: Plan<'_>) -> Result<()> {
        let graph = call.graph;
        let d = mkl_int("feature width", plan.d)?;
        let structure = graph.cached(|| Structure::build(graph.in_csr(), rayon::current_num_threads().max(1)))?;
        mkl_int("source rows × features", graph.num_src().saturating_mul(plan.d))?;
        let out = call.out;
        // Rows outside every block have no in-edges: they get 0.
        let mut covered = 0;
        for b in &structure.blocks {
            out[covered * plan.d..b.rows.start * plan.d].fill(0.0);
            covered = b.rows.end;
        }
        out[covered * plan.d..].fill(0.0);
        if plan.d == 0 {
            return Ok(());
        }
        let parts = split_rows(out, &structure.blocks, plan.d);
        let x = plan.x;
        match plan.values {
            Values::Ones | Values::InverseDegree => {
                let run = |blocks: &[OptimizedBlock]| {
                    blocks.par_iter().zip(parts).try_for_each(|(b, y)| match &b.handle {
                        // SAFETY: x is num_src × d (validated call), y is this
                        // block's rows × d slice of out.
                        Some(h) => unsafe { h.mm(x, d, y) },
                        None => {
                            y.fill(0.0);
                            Ok(())
                        }
                    })
                };
                if plan.values == Values::Ones {
                    let c = graph.cached(|| {
                        Ok(Cached::<ONES> {
                            optimized: Optimized::build(graph, &structure, d)?,
                            _structure: structure.clone(),
                        })
                    })?;
                    run(&c.optimized.blocks)
                } else {
                    let c = graph.cached(|| {
                        Ok(Cached::<INVERSE_DEGREE> {
                            optimized: Optimized::build(graph, &structure, d)?,
                            _structure: structure.clone(),
                        })
                    })?;
                    run(&c.optimized.blocks)
                }
            }
            Values::EdgeWeights => {
                let eids = graph.in_csr().eids();
                let w = plan.weights;
                structure.blocks.par_iter().zip(parts).try_for_each(|(b, y)| {
                    if b.nnz.is_empty() {
                        y.fill(0.0);
                        return Ok(());
                    }
                    let values: Vec<f32> = eids[b.nnz.clone()].iter().map(|e| w[e.to_usize()]).collect();
                    // SAFETY: `b` (in the cached structure) and `values`
                    // outlive `h`, which is dropped at the end of this closure.
                    let h = unsafe { Handle::new(b, structure.num_cols, &values)? };
                    // SAFETY: x is num_src × d, y this block's rows × d.
                    unsafe { h.mm(x, d, y) }
                })
            }
        }
    }
}

impl Backend for Mkl {
    const KIND: BackendKind = BackendKind::Mkl;

    fn gspmm<O: BinaryOp, R: Reducer, I: Index>(&self, call: SpmmCall<'_, I>) -> Result<()> {
        let plan = plan::<O, R, I>(&call)?;
        self.spmm(call, plan)
    }

    fn gsddmm<O: BinaryOp, I: Index>(&self, _call: SddmmCall<'_, I>) -> Result<()> {
        Err(unsupported(format!("g-SDDMM {} (MKL runs only sparse × dense aggregation)", O::NAME)))
    }

    fn edge_softmax<I: Index>(&self, _call: EdgeSoftmaxCall<'_, I>) -> Result<()> {
        Err(unsupported("edge_softmax"))
    }

    fn edge_softmax_backward<I: Index>(&self, _call: EdgeSoftmaxBackwardCall<'_, I>) -> Result<()> {
        Err(unsupported("edge_softmax_backward"))
    }
}
