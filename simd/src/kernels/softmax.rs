//! Fused edge softmax over each destination's in-edges, and its backward.
//!
//! ```text
//! forward, per destination v (par over nnz-balanced rows), per feature vector:
//!   m   = max_{e into v} x[e]                    (pass 1: reads logits)
//!   out[e] = exp(x[e] - m);  s = Σ out[e]        (pass 2: vectorised exp, writes out)
//!   out[e] = out[e] / s                          (pass 3: row's out lines are in L1/L2)
//! backward: t = Σ_e g[e]·y[e];  grad[e] = y[e]·(g[e] − t)
//! ```
//!
//! No temporaries: the only scratch is the output itself. The exponential
//! is [`crate::math::exp_nonpositive`] (max relative error 2 ulp on the
//! softmax domain); NaN logits make their destination's outputs NaN, as in
//! the reference. Feature rows narrower than a vector use masked loads.

use super::common::{SharedMut, balanced_bounds, num_parts};
use crate::Index;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task};
use crate::layout::CsrView;
use crate::math::exp_nonpositive;
use rayon::prelude::*;

/// `out = edge_softmax(logits)` over the in-edges of each row of `csr`
/// (an in-CSR), elementwise over `row_len` features per edge.
pub fn edge_softmax<I: Index>(
    csr: CsrView<'_, I>,
    logits: &[f32],
    row_len: usize,
    out: &mut [f32],
) -> Result<(), KernelError> {
    check_len("edge_softmax logits elements", csr.num_edges() * row_len, logits.len())?;
    check_len("edge_softmax output elements", csr.num_edges() * row_len, out.len())?;
    drive(Forward { csr, x: logits, d: row_len, out: SharedMut::new(out) });
    Ok(())
}

/// `grad_logits = y · (g − Σ_row g·y)` from the softmax output `y` and the
/// output gradient `g`.
pub fn edge_softmax_backward<I: Index>(
    csr: CsrView<'_, I>,
    y: &[f32],
    g: &[f32],
    row_len: usize,
    grad_logits: &mut [f32],
) -> Result<(), KernelError> {
    let n = csr.num_edges() * row_len;
    check_len("edge_softmax_backward output elements", n, y.len())?;
    check_len("edge_softmax_backward gradient elements", n, g.len())?;
    check_len("edge_softmax_backward logits-gradient elements", n, grad_logits.len())?;
    drive(Backward { csr, y, g, d: row_len, out: SharedMut::new(grad_logits) });
    Ok(())
}

/// A per-destination-row kernel over an in-CSR.
trait RowKernel: Copy + Send + Sync {
    /// The CSR rows are taken from, and the feature row length.
    fn shape(&self) -> (usize, usize, usize);
    /// Edges before row `i` plus `i`: the balancing weight.
    fn cum(&self, i: usize) -> usize;
    /// Runs rows `rows` with the vocabulary `s`.
    fn rows<S: Simd>(self, s: S, rows: std::ops::Range<usize>);
}

/// Runs `kernel` over all rows at the active ISA level, nnz-balanced.
fn drive<K: RowKernel>(kernel: K) {
    crate::isa::with_token(crate::isa::active_level(), Dispatch(kernel));
}

struct Dispatch<K>(K);

impl<K: RowKernel> Task for Dispatch<K> {
    type Output = ();
    fn run<S: Simd>(self, s: S) {
        let kernel = self.0;
        let (rows, edges, d) = kernel.shape();
        if edges == 0 || d == 0 {
            return;
        }
        let bounds = balanced_bounds(rows, num_parts((edges + rows) * d), |i| kernel.cum(i));
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

#[derive(Clone, Copy)]
struct Forward<'a, I: Index> {
    csr: CsrView<'a, I>,
    x: &'a [f32],
    d: usize,
    out: SharedMut<f32>,
}

#[derive(Clone, Copy)]
struct Backward<'a, I: Index> {
    csr: CsrView<'a, I>,
    y: &'a [f32],
    g: &'a [f32],
    d: usize,
    out: SharedMut<f32>,
}

/// # Safety
/// `ptr` readable for `len <= LANES` floats.
#[inline(always)]
unsafe fn load<S: Simd>(s: S, ptr: *const f32, len: usize) -> S::F32 {
    // SAFETY: forwarded from the caller.
    unsafe { if len == S::LANES { s.load(ptr) } else { s.load_partial(ptr, len) } }
}

/// # Safety
/// `ptr` writable for `len <= LANES` floats.
#[inline(always)]
unsafe fn store<S: Simd>(s: S, ptr: *mut f32, v: S::F32, len: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { if len == S::LANES { s.store(ptr, v) } else { s.store_partial(ptr, v, len) } }
}

impl<I: Index> RowKernel for Forward<'_, I> {
    fn shape(&self) -> (usize, usize, usize) {
        (self.csr.num_rows(), self.csr.num_edges(), self.d)
    }
    fn cum(&self, i: usize) -> usize {
        self.csr.indptr()[i].to_usize() + i
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
                // SAFETY: `eids` of the validated CSR are below num_edges, so
                // `e·d + j + len <= E·d`, the checked length of `x` and `out`.
                // Each edge id occurs in one row only and rows are split
                // disjointly across tasks: this task alone writes `out[e]`.
                unsafe {
                    let mut m = s.splat(f32::NEG_INFINITY);
                    for k in edges.clone() {
                        let e = eids.get_unchecked(k).to_usize();
                        m = s.max(m, load(s, x.add(e * d + j), len));
                    }
                    let mut sum = s.splat(0.0);
                    for k in edges.clone() {
                        let e = eids.get_unchecked(k).to_usize();
                        let ex = exp_nonpositive(s, s.sub(load(s, x.add(e * d + j), len), m));
                        store(s, self.out.at(e * d + j), ex, len);
                        sum = s.add(sum, ex);
                    }
                    for k in edges.clone() {
                        let p = self.out.at(eids.get_unchecked(k).to_usize() * d + j);
                        store(s, p, s.div(load(s, p, len), sum), len);
                    }
                }
                j += len;
            }
        }
    }
}

impl<I: Index> RowKernel for Backward<'_, I> {
    fn shape(&self) -> (usize, usize, usize) {
        (self.csr.num_rows(), self.csr.num_edges(), self.d)
    }
    fn cum(&self, i: usize) -> usize {
        self.csr.indptr()[i].to_usize() + i
    }
    #[inline(always)]
    fn rows<S: Simd>(self, s: S, rows: std::ops::Range<usize>) {
        let (d, eids) = (self.d, self.csr.eids());
        let (y, g) = (self.y.as_ptr(), self.g.as_ptr());
        for v in rows {
            let edges = self.csr.row_range(v);
            let mut j = 0;
            while j < d {
                let len = S::LANES.min(d - j);
                // SAFETY: as in the forward kernel: offsets `e·d + j + len`
                // stay below the checked `E·d`, and `out[e]` belongs to this task.
                unsafe {
                    let mut t = s.splat(0.0);
                    for k in edges.clone() {
                        let o = eids.get_unchecked(k).to_usize() * d + j;
                        t = s.mul_add(load(s, g.add(o), len), load(s, y.add(o), len), t);
                    }
                    for k in edges.clone() {
                        let o = eids.get_unchecked(k).to_usize() * d + j;
                        let yv = load(s, y.add(o), len);
                        store(s, self.out.at(o), s.mul(yv, s.sub(load(s, g.add(o), len), t)), len);
                    }
                }
                j += len;
            }
        }
    }
}
