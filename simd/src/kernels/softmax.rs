//! Fused edge softmax over each destination's in-edges, and its backward.
//!
//! Two schemes here; the caller picks one per call (the backend asks
//! [`prefers_edge_order`]) by passing the edge destinations for the
//! two-phase scheme. A third, forward only, walks destination ranges and
//! moves the logits by chunk (`softmax_ranges.rs`):
//!
//! ```text
//! row order (three passes per destination row v, per feature vector):
//!   m = max_{e into v} x[e]                    (pass 1: reads logits, prefetching ahead)
//!   out[e] = exp(x[e] - m);  s = Σ out[e]      (pass 2: writes out)
//!   out[e] = out[e] / s                        (pass 3: the row's out lines are in L1/L2)
//! row order, streamed (Streaming::On, rows of whole aligned lines: softmax_may_stream):
//!   pass 2 only sums exp(x[e] - m); pass 3 writes exp(x[e] - m) / s once, non-temporal
//! two phases:
//!   phase 1, row order:  table[v] = [m | s]   (a max pass and an exp-sum pass; reads logits only)
//!   phase 2, edge order: out[e] = exp(x[e] - m[dst e]) / s[dst e]
//!                        (streams x, dst and out; reads one table row per edge)
//! backward: t = Σ_e g[e]·y[e];  grad[e] = y[e]·(g[e] − t)   (same two schemes, table = t)
//! ```
//!
//! When edge ids are not in CSR order (they are a permutation: generated
//! and most real edge lists), every `x[e]` / `out[e]` access of the row-order
//! scheme is a random line, and a written line is first read for ownership
//! and later written back. The two-phase scheme keeps the random reads of
//! phase 1 but writes the output in edge order, paying instead one read of
//! the node's table row — a narrow table (1–4 heads: 8–32 bytes per node) is
//! largely cache-resident. For wide rows (`[E, 32]`) the table (256 bytes per
//! node) costs more than the output lines it saves, and the row-order scheme
//! runs. Both prefetch the logits (and output) lines of the edge
//! `Tuning::prefetch_slots` slots ahead across row boundaries, so many misses are
//! in flight at once.
//!
//! Both schemes perform the same floating-point operations in the same order
//! for every output element (the max and the exp-sum over a row's edges in
//! CSR order, then `exp(x − m) / s`), so their results are bitwise identical
//! (tested) and the backend may pick either by timing it without making a
//! result depend on timing. A one-pass online max/sum (Milakov & Gimelshein
//! 2018) in phase 1 rounds differently, which rules that out, and measured
//! slower on the Zen 5 VM (uniform 2^20 / 2^24, 4 heads: phase 1 ~350 ms
//! against ~210 ms for the two passes; docs/PERFORMANCE.md).
//!
//! Temporaries: the two-phase scheme's node table (`N × 2d` floats forward,
//! `N × d` backward), never anything proportional to `E`. The exponential
//! is [`crate::math::exp_nonpositive`] (max relative error 2 ulp on the
//! softmax domain); a NaN or `+inf` logit makes its destination's outputs
//! NaN, as in the reference (its max ignores NaN, the sum then does not).

use super::common::{SharedMut, balanced_bounds, load, num_parts, prefetch_rows, store};
use crate::Index;
use crate::buffer::aligned_filled;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task};
use crate::layout::{CsrView, EdgeDst};
use crate::math::exp_nonpositive;
use crate::tuning::{LINE_RANDOM, LINE_STREAMED, Streaming, active_tuning, cache_budget};
use rayon::prelude::*;

/// Whether the two-phase scheme is expected to move fewer random lines than
/// the row-order one, for a graph of `num_dst` destinations and `num_edges`
/// edges with `d` features per edge and `table_floats` floats per node in
/// the node table (`2d` forward, `d` backward).
///
/// Row order: the output row of each edge is a random line read for
/// ownership and later written back (`1.5 · lines(4d)` random lines).
/// Two phases: the node table row, cached with the probability that a
/// random node's row is within the cache budget, plus streaming the logits,
/// the output and the destination ids. Small problems (everything within the
/// budget) keep the row-order scheme, which needs no table. This is a
/// nomination: its line costs do not carry across machines, and gnnkern's
/// backend times both schemes before it keeps the two-phase one.
pub fn prefers_edge_order(num_dst: usize, num_edges: usize, d: usize, table_floats: usize) -> bool {
    let budget = cache_budget() as f64;
    let lines = |bytes: usize| bytes.div_ceil(64) as f64;
    if (num_edges * d * 4) as f64 <= budget || num_dst == 0 {
        return false;
    }
    let table_bytes = (num_dst * table_floats * 4) as f64;
    let cached = (budget / table_bytes).min(1.0);
    let two =
        lines(4 * table_floats) * (1.0 - cached) * LINE_RANDOM + (3.0 * 4.0 * d as f64 + 4.0) / 64.0 * LINE_STREAMED;
    let row = lines(4 * d) * 1.5 * LINE_RANDOM;
    two < row
}

/// Whether the row-order scheme can write `out` (rows of `d` floats) with
/// non-temporal stores, which it does under `Streaming::On` (`Auto` means
/// plain stores here; the SIMD backend times both where the output exceeds
/// the cache): every row is whole 64-byte lines from a line-aligned base, so
/// the streamed vectors fill each line they touch.
pub fn softmax_may_stream(d: usize, out: &[f32]) -> bool {
    d > 0 && (4 * d).is_multiple_of(64) && out.as_ptr().addr().is_multiple_of(64)
}

/// `out = edge_softmax(logits)` over the in-edges of each row of `csr` (an
/// in-CSR), elementwise over `row_len` features per edge. With `dst` (the
/// destination of every edge of the same graph) the two-phase scheme runs,
/// without it the row-order scheme, its output streamed under
/// `Streaming::On` where [`softmax_may_stream`].
pub fn edge_softmax<I: Index>(
    csr: CsrView<'_, I>,
    dst: Option<EdgeDst<'_, I>>,
    logits: &[f32],
    row_len: usize,
    out: &mut [f32],
) -> Result<(), KernelError> {
    let (e, d, n) = (csr.num_edges(), row_len, csr.num_rows());
    check_len("edge_softmax logits elements", e * d, logits.len())?;
    check_len("edge_softmax output elements", e * d, out.len())?;
    let prefetch = active_tuning().prefetch_slots(4 * d);
    match edge_order(&csr, dst)? {
        None => {
            let stream = active_tuning().streaming == Streaming::On && softmax_may_stream(d, out);
            drive_rows(RowOrder { csr, x: logits, d, out: SharedMut::new(out), prefetch, stream });
        }
        Some(dst) => {
            let mut table = aligned_filled(n * 2 * d, 0f32);
            drive_rows(MaxSum { csr, x: logits, d, table: SharedMut::new(&mut table), prefetch });
            drive_edges(Normalize { dst, x: logits, d, table: &table, out: SharedMut::new(out), prefetch });
        }
    }
    Ok(())
}

/// `grad_logits = y · (g − Σ_row g·y)` from the softmax output `y` and the
/// output gradient `g`; `dst` as for [`edge_softmax`].
pub fn edge_softmax_backward<I: Index>(
    csr: CsrView<'_, I>,
    dst: Option<EdgeDst<'_, I>>,
    y: &[f32],
    g: &[f32],
    row_len: usize,
    grad_logits: &mut [f32],
) -> Result<(), KernelError> {
    let (e, d, n) = (csr.num_edges(), row_len, csr.num_rows());
    check_len("edge_softmax_backward output elements", e * d, y.len())?;
    check_len("edge_softmax_backward gradient elements", e * d, g.len())?;
    check_len("edge_softmax_backward logits-gradient elements", e * d, grad_logits.len())?;
    let prefetch = active_tuning().prefetch_slots(4 * d);
    match edge_order(&csr, dst)? {
        None => drive_rows(RowOrderBackward { csr, y, g, d, out: SharedMut::new(grad_logits), prefetch }),
        Some(dst) => {
            let mut table = aligned_filled(n * d, 0f32);
            drive_rows(RowDot { csr, y, g, d, out: SharedMut::new(&mut table), prefetch });
            drive_edges(Gradient { dst, y, g, d, table: &table, out: SharedMut::new(grad_logits), prefetch });
        }
    }
    Ok(())
}

/// Checks that `dst` describes the edges and destinations of `csr`.
fn edge_order<'a, I: Index>(
    csr: &CsrView<'_, I>,
    dst: Option<EdgeDst<'a, I>>,
) -> Result<Option<EdgeDst<'a, I>>, KernelError> {
    if let Some(d) = dst {
        check_len("edge destinations", csr.num_edges(), d.ids().len())?;
        check_len("edge destination bound (rows of the in-CSR)", csr.num_rows(), d.num_dst())?;
    }
    Ok(dst)
}

/// `exp(x − m)` of the `len <= LANES` floats at `x`.
///
/// # Safety
/// `x` readable for `len` floats.
#[inline(always)]
unsafe fn shifted_exp<S: Simd>(s: S, x: *const f32, m: S::F32, len: usize) -> S::F32 {
    // SAFETY: forwarded from the caller.
    exp_nonpositive(s, s.sub(unsafe { load(s, x, len) }, m))
}

/// Prefetches edge `eids[k]`'s `d`-float rows of `rows` (no-op past the last slot).
#[inline(always)]
fn prefetch_edge<S: Simd, I: Index>(s: S, eids: &[I], k: usize, d: usize, rows: &[*const f32]) {
    if let Some(e) = eids.get(k) {
        prefetch_rows(s, rows, e.to_usize() * d, d);
    }
}

/// `Σ_e g[e]·y[e]` over a row's `edges`, floats `j .. j + len` of each
/// edge's `d`-float rows (the backward's per-row dot, shared by both
/// schemes), prefetching `lines` of the edge `prefetch` slots ahead (0: off).
///
/// # Safety
/// The edge ids at `edges` are below `E`, `j + len <= d`, `len <= LANES`,
/// and `g`, `y` are readable for `E·d` floats.
#[inline(always)]
unsafe fn row_dot<S: Simd, I: Index>(
    s: S,
    eids: &[I],
    edges: std::ops::Range<usize>,
    (g, y): (*const f32, *const f32),
    (d, j, len): (usize, usize, usize),
    prefetch: usize,
    lines: &[*const f32],
) -> S::F32 {
    let mut t = s.splat(0.0);
    for k in edges {
        if prefetch > 0 {
            prefetch_edge(s, eids, k + prefetch, d, lines);
        }
        // SAFETY: forwarded from the caller.
        unsafe {
            let o = eids.get_unchecked(k).to_usize() * d + j;
            t = s.mul_add(load(s, g.add(o), len), load(s, y.add(o), len), t);
        }
    }
    t
}

// ---------------------------------------------------------------- drivers

/// A per-destination-row kernel over an in-CSR.
trait RowKernel: Copy + Send + Sync {
    fn csr(&self) -> CsrView<'_, impl Index>;
    fn d(&self) -> usize;
    /// Runs rows `rows` with the vocabulary `s`.
    fn rows<S: Simd>(self, s: S, rows: std::ops::Range<usize>);
}

/// A kernel over ranges of edge ids.
trait EdgeKernel: Copy + Send + Sync {
    fn num_edges(&self) -> usize;
    fn d(&self) -> usize;
    /// Runs edges `edges` with the vocabulary `s`.
    fn edges<S: Simd>(self, s: S, edges: std::ops::Range<usize>);
}

/// Runs `kernel` over all rows at the active ISA level, on the narrowest
/// vector that covers a row (`isa::with_row_token`), nnz-balanced.
fn drive_rows<K: RowKernel>(kernel: K) {
    let d = kernel.d();
    crate::isa::with_row_token(crate::isa::active_level(), d, RowDispatch(kernel));
}

/// Runs `kernel` over all edge ids at the active ISA level, on the narrowest
/// vector that covers a row, in equal ranges.
fn drive_edges<K: EdgeKernel>(kernel: K) {
    let d = kernel.d();
    crate::isa::with_row_token(crate::isa::active_level(), d, EdgeDispatch(kernel));
}

struct RowDispatch<K>(K);

impl<K: RowKernel> Task for RowDispatch<K> {
    type Output = ();
    fn run<S: Simd>(self, s: S) {
        let kernel = self.0;
        let csr = kernel.csr();
        let (rows, edges, d) = (csr.num_rows(), csr.num_edges(), kernel.d());
        if edges == 0 || d == 0 {
            return;
        }
        let indptr = csr.indptr();
        let bounds = balanced_bounds(rows, num_parts((edges + rows) * d), |i| indptr[i].to_usize() + i);
        bounds.par_windows(2).for_each(|w| s.vectorize(RowsTask { kernel, rows: w[0]..w[1] }));
    }
}

struct RowsTask<K> {
    kernel: K,
    rows: std::ops::Range<usize>,
}

impl<K: RowKernel> Task for RowsTask<K> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        self.kernel.rows(s, self.rows);
    }
}

struct EdgeDispatch<K>(K);

impl<K: EdgeKernel> Task for EdgeDispatch<K> {
    type Output = ();
    fn run<S: Simd>(self, s: S) {
        let kernel = self.0;
        let (e, d) = (kernel.num_edges(), kernel.d());
        if e == 0 || d == 0 {
            return;
        }
        let bounds = balanced_bounds(e, num_parts(e * d), |i| i);
        bounds.par_windows(2).for_each(|w| s.vectorize(EdgesTask { kernel, edges: w[0]..w[1] }));
    }
}

struct EdgesTask<K> {
    kernel: K,
    edges: std::ops::Range<usize>,
}

impl<K: EdgeKernel> Task for EdgesTask<K> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        self.kernel.edges(s, self.edges);
    }
}

// ---------------------------------------------------------------- row order

#[derive(Clone, Copy)]
struct RowOrder<'a, I: Index> {
    csr: CsrView<'a, I>,
    x: &'a [f32],
    d: usize,
    out: SharedMut<f32>,
    /// Prefetch distance in CSR slots (0: off).
    prefetch: usize,
    /// Writes each output vector once, with a non-temporal store of
    /// `exp(x − m) / s` (see [`softmax_may_stream`]).
    stream: bool,
}

impl<I: Index> RowKernel for RowOrder<'_, I> {
    fn csr(&self) -> CsrView<'_, impl Index> {
        self.csr
    }
    fn d(&self) -> usize {
        self.d
    }
    #[inline(always)]
    fn rows<S: Simd>(self, s: S, rows: std::ops::Range<usize>) {
        let (d, eids) = (self.d, self.csr.eids());
        let x = self.x.as_ptr();
        // The lines fetched ahead: the logits, and the output lines that
        // plain stores read for ownership (streamed ones do not read them).
        // SAFETY: offset 0 of `out`.
        let lines = [x, unsafe { self.out.at(0) }.cast_const()];
        let ahead = if self.stream { &lines[..1] } else { &lines[..] };
        for v in rows {
            let edges = self.csr.row_range(v);
            let mut j = 0;
            while j < d {
                let len = S::LANES.min(d - j);
                // SAFETY: `eids` of the validated CSR are below num_edges, so
                // `e·d + j + len <= E·d`, the checked length of `x` and `out`.
                // Each edge id occurs in one row only and rows are split
                // disjointly across tasks: this task alone writes `out[e]`.
                // Streamed, `len == LANES` and `out + e·d + j` is 64-byte
                // aligned (`softmax_may_stream`: `4d` whole lines from an
                // aligned base, so `j` is a multiple of `LANES`).
                unsafe {
                    let mut m = s.splat(f32::NEG_INFINITY);
                    for k in edges.clone() {
                        if j == 0 && self.prefetch > 0 {
                            prefetch_edge(s, eids, k + self.prefetch, d, ahead);
                        }
                        let e = eids.get_unchecked(k).to_usize();
                        m = s.max(m, load(s, x.add(e * d + j), len));
                    }
                    let mut sum = s.splat(0.0);
                    if self.stream {
                        // The exponential twice instead of the output row
                        // twice: the second pass's random output lines
                        // (read for ownership, written back, read again)
                        // become one full-line write each.
                        for k in edges.clone() {
                            let o = eids.get_unchecked(k).to_usize() * d + j;
                            sum = s.add(sum, shifted_exp(s, x.add(o), m, len));
                        }
                        for k in edges.clone() {
                            let o = eids.get_unchecked(k).to_usize() * d + j;
                            s.stream(self.out.at(o), s.div(shifted_exp(s, x.add(o), m, len), sum));
                        }
                    } else {
                        for k in edges.clone() {
                            let o = eids.get_unchecked(k).to_usize() * d + j;
                            let ex = shifted_exp(s, x.add(o), m, len);
                            store(s, self.out.at(o), ex, len);
                            sum = s.add(sum, ex);
                        }
                        for k in edges.clone() {
                            let p = self.out.at(eids.get_unchecked(k).to_usize() * d + j);
                            store(s, p, s.div(load(s, p, len), sum), len);
                        }
                    }
                }
                j += len;
            }
        }
        if self.stream {
            s.store_fence();
        }
    }
}

/// The backward's row pass: per row and vector of features, the dot
/// `t = Σ_e g[e]·y[e]` ([`row_dot`]), then under `TO_TABLE` (phase 1 of the
/// two-phase scheme) `t` into the node table's row `v`, else (row order) each
/// edge's gradient `out[e] = y[e]·(g[e] − t)` straight away.
#[derive(Clone, Copy)]
struct BackwardRows<'a, I: Index, const TO_TABLE: bool> {
    csr: CsrView<'a, I>,
    y: &'a [f32],
    g: &'a [f32],
    d: usize,
    /// `TO_TABLE`: the `num_rows × d` table, row `v` written by the task
    /// owning `v`; else the `E × d` gradient, edge rows written by the task
    /// owning their destination.
    out: SharedMut<f32>,
    /// Prefetch distance in CSR slots (0: off).
    prefetch: usize,
}

impl<I: Index, const TO_TABLE: bool> RowKernel for BackwardRows<'_, I, TO_TABLE> {
    fn csr(&self) -> CsrView<'_, impl Index> {
        self.csr
    }
    fn d(&self) -> usize {
        self.d
    }
    #[inline(always)]
    fn rows<S: Simd>(self, s: S, rows: std::ops::Range<usize>) {
        let (d, eids) = (self.d, self.csr.eids());
        let (y, g) = (self.y.as_ptr(), self.g.as_ptr());
        // The lines fetched ahead: both operands, and in row order the
        // gradient's lines, which its stores read for ownership.
        // SAFETY: offset 0 of `out`.
        let lines = [g, y, unsafe { self.out.at(0) }.cast_const()];
        let ahead = if TO_TABLE { &lines[..2] } else { &lines[..] };
        for v in rows {
            let edges = self.csr.row_range(v);
            let mut j = 0;
            while j < d {
                let len = S::LANES.min(d - j);
                // SAFETY: as in the forward kernels: offsets `e·d + j + len`
                // stay below the checked `E·d`; table row `v` (`d` floats)
                // and the rows of this row's edges belong to this task.
                unsafe {
                    let pf = if j == 0 { self.prefetch } else { 0 };
                    let t = row_dot(s, eids, edges.clone(), (g, y), (d, j, len), pf, ahead);
                    if TO_TABLE {
                        store(s, self.out.at(v * d + j), t, len);
                    } else {
                        for k in edges.clone() {
                            let o = eids.get_unchecked(k).to_usize() * d + j;
                            let yv = load(s, y.add(o), len);
                            store(s, self.out.at(o), s.mul(yv, s.sub(load(s, g.add(o), len), t)), len);
                        }
                    }
                }
                j += len;
            }
        }
    }
}

/// The row-order backward: gradients written row by row.
type RowOrderBackward<'a, I> = BackwardRows<'a, I, false>;

/// Phase 1 backward: `table[v] = Σ_e g[e]·y[e]`.
type RowDot<'a, I> = BackwardRows<'a, I, true>;

// ---------------------------------------------------------------- two phases

/// Phase 1 forward: `table[v] = [max_e x[e] | Σ_e exp(x[e] − max)]`.
#[derive(Clone, Copy)]
struct MaxSum<'a, I: Index> {
    csr: CsrView<'a, I>,
    x: &'a [f32],
    d: usize,
    /// `num_rows × 2d`; row `v` written by the task owning `v`.
    table: SharedMut<f32>,
    prefetch: usize,
}

impl<I: Index> RowKernel for MaxSum<'_, I> {
    fn csr(&self) -> CsrView<'_, impl Index> {
        self.csr
    }
    fn d(&self) -> usize {
        self.d
    }
    #[inline(always)]
    fn rows<S: Simd>(self, s: S, rows: std::ops::Range<usize>) {
        let (d, eids) = (self.d, self.csr.eids());
        let x = self.x.as_ptr();
        for v in rows {
            let edges = self.csr.row_range(v);
            let mut j = 0;
            while j < d {
                let len = S::LANES.min(d - j);
                // SAFETY: edge ids of the validated CSR are below num_edges
                // (`e·d + j + len <= E·d`, the checked length of `x`); row
                // `v < num_rows` owns table floats `v·2d .. (v+1)·2d`, and rows
                // are split disjointly across tasks.
                unsafe {
                    let mut m = s.splat(f32::NEG_INFINITY);
                    for k in edges.clone() {
                        let ahead = k + self.prefetch;
                        if self.prefetch > 0 && (j == 0 || ahead < edges.end) {
                            prefetch_edge(s, eids, ahead, d, &[x]);
                        }
                        let e = eids.get_unchecked(k).to_usize();
                        m = s.max(m, load(s, x.add(e * d + j), len));
                    }
                    let mut sum = s.splat(0.0);
                    for k in edges.clone() {
                        let e = eids.get_unchecked(k).to_usize();
                        sum = s.add(sum, exp_nonpositive(s, s.sub(load(s, x.add(e * d + j), len), m)));
                    }
                    let row = self.table.at(v * 2 * d);
                    store(s, row.add(j), m, len);
                    store(s, row.add(d + j), sum, len);
                }
                j += len;
            }
        }
    }
}

/// Phase 2 forward: `out[e] = exp(x[e] − m[dst e]) / s[dst e]` in edge order.
#[derive(Clone, Copy)]
struct Normalize<'a, I: Index> {
    dst: EdgeDst<'a, I>,
    x: &'a [f32],
    d: usize,
    table: &'a [f32],
    /// Edge rows, written by the task owning the edge range.
    out: SharedMut<f32>,
    prefetch: usize,
}

impl<I: Index> EdgeKernel for Normalize<'_, I> {
    fn num_edges(&self) -> usize {
        self.dst.ids().len()
    }
    fn d(&self) -> usize {
        self.d
    }
    #[inline(always)]
    fn edges<S: Simd>(self, s: S, edges: std::ops::Range<usize>) {
        let (d, dst) = (self.d, self.dst.ids());
        let (x, table) = (self.x.as_ptr(), self.table.as_ptr());
        for e in edges {
            if self.prefetch > 0 {
                // The table row of a later edge: the one random read per edge.
                if let Some(v) = dst.get(e + self.prefetch) {
                    prefetch_rows(s, &[table], v.to_usize() * 2 * d, 2 * d);
                }
            }
            // SAFETY: `e < num_edges` (the ranges partition `0..num_edges`),
            // so `e·d + d <= E·d`, the checked lengths of `x` and `out`;
            // `dst[e] < num_rows` (`EdgeDst`'s contract, its bound checked
            // against the CSR), so the table row is inside the `num_rows × 2d`
            // table. Edge ranges are disjoint across tasks.
            unsafe {
                let v = dst.get_unchecked(e).to_usize();
                let row = table.add(v * 2 * d);
                let mut j = 0;
                while j < d {
                    let len = S::LANES.min(d - j);
                    let ex = exp_nonpositive(s, s.sub(load(s, x.add(e * d + j), len), load(s, row.add(j), len)));
                    store(s, self.out.at(e * d + j), s.div(ex, load(s, row.add(d + j), len)), len);
                    j += len;
                }
            }
        }
    }
}

/// Phase 2 backward: `grad[e] = y[e]·(g[e] − t[dst e])` in edge order.
#[derive(Clone, Copy)]
struct Gradient<'a, I: Index> {
    dst: EdgeDst<'a, I>,
    y: &'a [f32],
    g: &'a [f32],
    d: usize,
    table: &'a [f32],
    out: SharedMut<f32>,
    prefetch: usize,
}

impl<I: Index> EdgeKernel for Gradient<'_, I> {
    fn num_edges(&self) -> usize {
        self.dst.ids().len()
    }
    fn d(&self) -> usize {
        self.d
    }
    #[inline(always)]
    fn edges<S: Simd>(self, s: S, edges: std::ops::Range<usize>) {
        let (d, dst) = (self.d, self.dst.ids());
        let (y, g, table) = (self.y.as_ptr(), self.g.as_ptr(), self.table.as_ptr());
        for e in edges {
            if self.prefetch > 0
                && let Some(v) = dst.get(e + self.prefetch)
            {
                prefetch_rows(s, &[table], v.to_usize() * d, d);
            }
            // SAFETY: as for `Normalize`: `e·d + d <= E·d` and the table row
            // of `dst[e] < num_rows` is inside the `num_rows × d` table.
            unsafe {
                let row = table.add(dst.get_unchecked(e).to_usize() * d);
                let mut j = 0;
                while j < d {
                    let len = S::LANES.min(d - j);
                    let o = e * d + j;
                    let yv = load(s, y.add(o), len);
                    let grad = s.mul(yv, s.sub(load(s, g.add(o), len), load(s, row.add(j), len)));
                    store(s, self.out.at(o), grad, len);
                    j += len;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{IsaLevel, with_row_token, with_token};

    /// Runs `task` on the narrow-row token (`narrow`) or the level's own.
    fn dispatch<T: Task>(level: IsaLevel, d: usize, narrow: bool, task: T) {
        if narrow {
            with_row_token(level, d, task);
        } else {
            with_token(level, task);
        }
    }

    /// Forward (row order, two phases) and backward (row order, two phases)
    /// outputs, concatenated as bits, on one token choice.
    fn all_outputs(level: IsaLevel, d: usize, narrow: bool) -> Vec<u32> {
        // 40 destinations, 700 edges with pseudo-random destinations; the
        // in-CSR lists each row's edges in ascending id.
        let (n, e) = (40usize, 700usize);
        let dst: Vec<i32> = (0..e).map(|i| ((i * 7_919 + i * i * 13) % n) as i32).collect();
        let mut indptr = vec![0i32; n + 1];
        dst.iter().for_each(|&v| indptr[v as usize + 1] += 1);
        (0..n).for_each(|v| indptr[v + 1] += indptr[v]);
        let (mut next, mut eids) = (indptr.clone(), vec![0i32; e]);
        for (id, &v) in dst.iter().enumerate() {
            eids[next[v as usize] as usize] = id as i32;
            next[v as usize] += 1;
        }
        let cols: Vec<i32> = eids.iter().map(|&id| id % 97).collect();
        // SAFETY: offsets from the counts, columns below 97, eids a permutation.
        let csr = unsafe { CsrView::new_unchecked(&indptr, &cols, &eids, 97) };
        // SAFETY: every destination is below `n`.
        let edge_dst = unsafe { EdgeDst::new_unchecked(&dst, n) };
        let x: Vec<f32> = (0..e * d).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.173).collect();
        let g: Vec<f32> = (0..e * d).map(|i| ((i * 53 % 89) as f32 - 44.0) * 0.011).collect();
        let mut outs = Vec::new();
        let mut row_order = aligned_filled(e * d, 0f32);
        dispatch(
            level,
            d,
            narrow,
            RowDispatch(RowOrder { csr, x: &x, d, out: SharedMut::new(&mut row_order), prefetch: 2, stream: false }),
        );
        let mut table = aligned_filled(n * 2 * d, 0f32);
        dispatch(
            level,
            d,
            narrow,
            RowDispatch(MaxSum { csr, x: &x, d, table: SharedMut::new(&mut table), prefetch: 2 }),
        );
        let mut two_phase = aligned_filled(e * d, 0f32);
        let out = SharedMut::new(&mut two_phase);
        dispatch(
            level,
            d,
            narrow,
            EdgeDispatch(Normalize { dst: edge_dst, x: &x, d, table: &table, out, prefetch: 2 }),
        );
        let y = &row_order;
        let mut back = aligned_filled(e * d, 0f32);
        let out = SharedMut::new(&mut back);
        dispatch(level, d, narrow, RowDispatch(RowOrderBackward { csr, y, g: &g, d, out, prefetch: 2 }));
        let mut dots = aligned_filled(n * d, 0f32);
        let out = SharedMut::new(&mut dots);
        dispatch(level, d, narrow, RowDispatch(RowDot { csr, y, g: &g, d, out, prefetch: 2 }));
        let mut back2 = aligned_filled(e * d, 0f32);
        let out = SharedMut::new(&mut back2);
        dispatch(
            level,
            d,
            narrow,
            EdgeDispatch(Gradient { dst: edge_dst, y, g: &g, d, table: &dots, out, prefetch: 2 }),
        );
        for v in [&row_order, &two_phase, &back, &back2] {
            outs.extend(v.iter().map(|f| f.to_bits()));
        }
        outs
    }

    /// The narrow-row tokens (`with_row_token`) compute every softmax pass
    /// bitwise as the level's own token does: same operations lane for lane.
    #[test]
    fn narrow_row_tokens_give_the_wide_tokens_bits() {
        for level in IsaLevel::tested().into_iter().filter(|&l| l >= IsaLevel::Avx2) {
            for d in [1, 2, 3, 4, 5, 8] {
                let (wide, narrow) = (all_outputs(level, d, false), all_outputs(level, d, true));
                assert!(wide.iter().any(|&b| b != 0), "{}, d = {d}: outputs written", level.name());
                assert!(wide == narrow, "{}, d = {d}: narrow token differs from the level's own", level.name());
            }
        }
    }
}
