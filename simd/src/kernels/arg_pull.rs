//! Source gradient of a copy-like max/min g-SpMM, pulled over the out-CSR.
//!
//! Output element `j` of destination `v` came from one edge, `arg_e[v][j]`.
//! When the message is `c · x_u` elementwise (copy_u, u_add_*, u_sub_*:
//! a constant partial, no broadcast), the source gradient is
//!
//! ```text
//! grad[u][j] = Σ_{k in out-row u}  c · g[v_k][j]   where arg_e[v_k][j] == eid_k
//! ```
//!
//! Scattering it (`grad[src(arg_e[v][j])][j] += c·g[v][j]` for every `v, j`)
//! is one random read-modify-write of a 4-byte element per output element:
//! 2^16 × 128 of them for a 2^16-node graph at d = 128, each on its own line,
//! and a scatter needs the columns split among workers to avoid atomics.
//! The pull owns whole source rows (no atomics, no zeroing pass) and reads
//! the `arg_e` and `g` rows of each out-edge's destination: contiguous
//! `d`-element rows that it prefetches `Tuning::prefetch_slots` edges ahead,
//! as the forward kernels do. It reads `E × d` arg/gradient pairs instead of
//! touching `N × d` random elements: 36 against 57 ms on uniform 2^16 / 2^20
//! at d = 128, 20 against 25 ms on RMAT (docs/PERFORMANCE.md, "The pull (2026-11-25)").
//!
//! Order: out-CSR rows are sorted by (destination, edge id), so every
//! gradient element receives its terms in ascending destination order, the
//! order of the scatter: the two are bitwise identical (tested in the core
//! crate), whatever the thread count. The compare-and-add loop is plain Rust
//! inside [`Simd::vectorize`], so the compiler vectorises it with the
//! token's target features (AVX-512: per 16 lanes a `vpcmpeqd` into a
//! k-mask, a zero-masking load of `g`, a multiply and an add into the row,
//! checked in the release build's disassembly; Rust never fuses them). Adding `c·0` leaves an
//! unmatched lane unchanged: an accumulator that starts at `+0` never
//! becomes `-0` under round-to-nearest, and `x + ±0 = x` for every other `x`.

use super::common::{balanced_bounds, num_parts, prefetch_rows, split_rows};
use crate::Index;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task};
use crate::layout::CsrView;
use crate::tuning::active_tuning;
use rayon::prelude::*;

/// `grad[u] = Σ_{(u→v, e)} c · g[v] · [arg_e[v] == e]` (elementwise, `row_len`
/// elements per row) for every row `u` of `out_csr`, overwriting `grad`.
///
/// `arg_e` and `grad_out` have one row per column of `out_csr` (the
/// destinations); their values are compared, never used as addresses, so
/// any `arg_e` is memory-safe (an id that matches no edge contributes
/// nothing).
pub fn arg_pull<I: Index>(
    out_csr: CsrView<'_, I>,
    arg_e: &[I],
    grad_out: &[f32],
    row_len: usize,
    c: f32,
    grad: &mut [f32],
) -> Result<(), KernelError> {
    let (rows, cols, edges) = (out_csr.num_rows(), out_csr.num_cols(), out_csr.num_edges());
    check_len("arg_pull arg_e elements (destinations × row)", cols * row_len, arg_e.len())?;
    check_len("arg_pull grad_out elements (destinations × row)", cols * row_len, grad_out.len())?;
    check_len("arg_pull gradient elements (sources × row)", rows * row_len, grad.len())?;
    if row_len == 0 {
        return Ok(());
    }
    let edge_bytes = row_len * (size_of::<I>() + size_of::<f32>());
    let prefetch = active_tuning().prefetch_slots(edge_bytes);
    let indptr = out_csr.indptr();
    let bounds = balanced_bounds(rows, num_parts((edges + rows) * row_len), |i| indptr[i].to_usize() + i);
    let parts = split_rows(grad, &bounds, row_len);
    let pass = Pass { csr: out_csr, arg_e, grad_out, row_len, c, prefetch };
    crate::isa::with_token(crate::isa::active_level(), Dispatch { pass, bounds: &bounds, parts });
    Ok(())
}

/// The validated arguments, shared by every worker.
#[derive(Clone, Copy)]
struct Pass<'a, I: Index> {
    csr: CsrView<'a, I>,
    arg_e: &'a [I],
    grad_out: &'a [f32],
    row_len: usize,
    c: f32,
    /// Edges ahead whose destination rows are prefetched (0: off).
    prefetch: usize,
}

struct Dispatch<'a, 'g, I: Index> {
    pass: Pass<'a, I>,
    bounds: &'a [usize],
    parts: Vec<&'g mut [f32]>,
}

impl<I: Index> Task for Dispatch<'_, '_, I> {
    type Output = ();
    fn run<S: Simd>(self, s: S) {
        let pass = self.pass;
        self.parts
            .into_par_iter()
            .zip(self.bounds.par_windows(2))
            .for_each(|(grad, w)| s.vectorize(Rows { pass, rows: w[0]..w[1], grad }));
    }
}

/// Source rows `rows`, whose gradient rows are `grad`.
struct Rows<'a, 'g, I: Index> {
    pass: Pass<'a, I>,
    rows: std::ops::Range<usize>,
    grad: &'g mut [f32],
}

impl<I: Index> Task for Rows<'_, '_, I> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let Pass { csr, arg_e, grad_out, row_len, c, prefetch } = self.pass;
        let (dsts, eids) = (csr.indices(), csr.eids());
        let (arg_ptr, g_ptr) = (arg_e.as_ptr().cast::<f32>(), grad_out.as_ptr());
        // `arg_e` rows in f32-sized units, for the line arithmetic of the prefetch.
        let arg_row_floats = row_len * size_of::<I>() / size_of::<f32>();
        for (u, acc) in self.rows.zip(self.grad.chunks_exact_mut(row_len)) {
            acc.fill(0.0);
            for k in csr.row_range(u) {
                if prefetch > 0
                    && let Some(w) = dsts.get(k + prefetch)
                {
                    let w = w.to_usize();
                    prefetch_rows(s, &[arg_ptr], w * arg_row_floats, arg_row_floats);
                    prefetch_rows(s, &[g_ptr], w * row_len, row_len);
                }
                let (v, e) = (dsts[k].to_usize(), eids[k]);
                let arg = &arg_e[v * row_len..(v + 1) * row_len];
                let g = &grad_out[v * row_len..(v + 1) * row_len];
                for ((a, &won), &gj) in acc.iter_mut().zip(arg).zip(g) {
                    *a += c * if won == e { gj } else { 0.0 };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{IsaLevel, with_level};

    /// Out-CSR of 3 sources → 2 destinations, edges (u, v, e):
    /// (0,0,0) (0,1,1) (1,0,2) (2,1,3) (2,1,4) — a parallel pair into 1.
    fn graph() -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        (vec![0, 2, 3, 5], vec![0, 1, 0, 1, 1], vec![0, 1, 2, 3, 4])
    }

    #[test]
    fn pulls_each_winner_to_its_source_at_every_level() {
        let (indptr, dsts, eids) = graph();
        // SAFETY: sorted rows, ids in bounds, eids a permutation.
        let csr = unsafe { CsrView::new_unchecked(&indptr, &dsts, &eids, 2) };
        // Destination 0: lane 0 won by edge 0 (source 0), lane 1 by edge 2
        // (source 1); destination 1: lane 0 by edge 4 (source 2, the second
        // of the parallel pair), lane 1 by edge 1 (source 0).
        let arg_e = [0i64, 2, 4, 1];
        let g = [1.0f32, 2.0, 3.0, 4.0];
        for level in IsaLevel::tested() {
            let mut grad = [f32::NAN; 6];
            with_level(level, || arg_pull(csr, &arg_e, &g, 2, -1.0, &mut grad)).unwrap().unwrap();
            assert_eq!(grad, [-1.0, -4.0, 0.0, -2.0, -3.0, 0.0], "{level:?}");
        }
    }

    #[test]
    fn wrong_lengths_are_typed_errors() {
        let (indptr, dsts, eids) = graph();
        // SAFETY: as above.
        let csr = unsafe { CsrView::new_unchecked(&indptr, &dsts, &eids, 2) };
        let mut grad = [0.0f32; 6];
        let err = arg_pull(csr, &[0i64; 3], &[0.0; 4], 2, 1.0, &mut grad).unwrap_err();
        assert_eq!((err.expected, err.actual), (4, 3));
        let err = arg_pull(csr, &[0i64; 4], &[0.0; 4], 2, 1.0, &mut grad[..5]).unwrap_err();
        assert_eq!((err.expected, err.actual), (6, 5));
    }
}
