//! Source gradient of a copy-like max/min g-SpMM, scattered by column
//! stripes with vector read-modify-writes: the alternative to
//! [`super::arg_pull`](mod@super::arg_pull) that the backend times against it.
//!
//! Both compute, for a message `c · x_u` (copy_u, u_add_*, u_sub_*),
//!
//! ```text
//! grad[u][j] = Σ_{v ascending, src(arg_e[v][j]) == u}  c · g[v][j]
//! ```
//!
//! The pull reads `E × d` arg/gradient pairs (every out-edge's destination
//! row); this pass reads the `num_dst × d` pairs once and adds each to its
//! source element, a random read-modify-write. Two random reads per element
//! (the winning edge's source in `edge_src`, then the gradient element), so
//! what decides the speed is how many are in flight: per 16 lanes, AVX-512
//! checks and looks up the ids with one `vpgatherdd`
//! ([`Simd::edge_offsets`]) and adds with a `vgatherdps` / `vscatterdps`
//! pair ([`Simd::scatter_add`]); `i64` ids compute their offsets lane by
//! lane. On an Intel Xeon VM (family 6 model 207), 2^16 nodes / 2^20
//! edges, it took 3.4 against the pull's 5.6 ms at d = 32 on RMAT and 11.6
//! against 20.9 ms at d = 128, but 7.1 against 6.1 ms at d = 32 on the
//! uniform graph (level at d = 128); the pull had beaten the scalar scatter
//! on the Zen 5 VM. So the backend's trial picks per signature and graph
//! (docs/PERFORMANCE.md, "Max/min backward: scatter or pull").
//!
//! # Parallel without atomics, in the pull's order
//! The columns are split among workers in stripes of 16 floats (one 64-byte
//! line, no false sharing); each worker walks every destination in
//! ascending order and writes only its own columns, so each element
//! receives its terms in ascending destination order, as in the pull, and
//! the two are bitwise identical (`c · g` rounded once, then one f32 add;
//! tested below) whatever the thread count. The lanes of one vector are
//! distinct columns, so a scatter never writes one element twice.
//!
//! # Any `arg_e` is memory-safe
//! A lane whose id is not an edge (`-1` for a row without in-edges, or out
//! of range), or whose edge's source is out of range, is inactive: it reads
//! and writes nothing. The pull adds only terms whose id is the out-edge it
//! walks, so for ids that are edges but not in-edges of their destination
//! the two differ; the backend validates `arg_e` first, and both agree on
//! every valid input.

use super::common::{SharedMut, load};
use crate::Index;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task};
use rayon::prelude::*;

/// Floats per column stripe: one 64-byte line.
const STRIPE: usize = 16;

/// Whether [`arg_scatter`] is worth a trial against the pull for rows of
/// `row_len` floats into a gradient of `grad_len` elements: it has a stripe
/// for every worker (the pull splits source rows and always has; at
/// d = 16 on two threads the scatter would run on one), and its 32-bit
/// lane offsets reach every element.
pub fn arg_scatter_may_help(row_len: usize, grad_len: usize) -> bool {
    row_len.div_ceil(STRIPE) >= rayon::current_num_threads() && grad_len <= i32::MAX as usize
}

/// `grad[u] = Σ c · g[v] · [src(arg_e[v]) == u]` elementwise (`row_len`
/// elements per row, `grad` overwritten), for the `num_src` rows of `grad`;
/// `edge_src[e]` is the source of edge `e`. See the module docs.
///
/// Lane offsets are 32-bit: `grad` may hold at most `i32::MAX` elements
/// (8 GiB), else a typed error.
pub fn arg_scatter<I: Index>(
    edge_src: &[I],
    arg_e: &[I],
    grad_out: &[f32],
    row_len: usize,
    c: f32,
    grad: &mut [f32],
) -> Result<(), KernelError> {
    check_len("arg_scatter grad_out elements (one per arg_e element)", arg_e.len(), grad_out.len())?;
    if row_len == 0 {
        return check_len("arg_scatter arg_e elements (rows of length 0)", 0, arg_e.len())
            .and_then(|()| check_len("arg_scatter gradient elements (rows of length 0)", 0, grad.len()));
    }
    check_len("arg_scatter arg_e elements (whole rows)", arg_e.len().next_multiple_of(row_len), arg_e.len())?;
    check_len("arg_scatter gradient elements (whole rows)", grad.len().next_multiple_of(row_len), grad.len())?;
    if grad.len() > i32::MAX as usize {
        return Err(KernelError {
            what: "arg_scatter gradient elements (at most i32::MAX: 32-bit lane offsets)",
            expected: i32::MAX as usize,
            actual: grad.len(),
        });
    }
    grad.par_iter_mut().for_each(|y| *y = 0.0);
    let pass =
        Pass { edge_src, num_src: grad.len() / row_len, arg_e, grad_out, row_len, c, grad: SharedMut::new(grad) };
    crate::isa::with_token(crate::isa::active_level(), Dispatch(pass));
    Ok(())
}

/// The validated arguments, shared by every worker.
#[derive(Clone, Copy)]
struct Pass<'a, I: Index> {
    edge_src: &'a [I],
    num_src: usize,
    arg_e: &'a [I],
    grad_out: &'a [f32],
    row_len: usize,
    c: f32,
    grad: SharedMut<f32>,
}

struct Dispatch<'a, I: Index>(Pass<'a, I>);

impl<I: Index> Task for Dispatch<'_, I> {
    type Output = ();
    fn run<S: Simd>(self, s: S) {
        let pass = self.0;
        let stripes = pass.row_len.div_ceil(STRIPE);
        let parts = stripes.min(rayon::current_num_threads());
        (0..parts).into_par_iter().for_each(|p| {
            let columns = (stripes * p / parts * STRIPE)..(stripes * (p + 1) / parts * STRIPE).min(pass.row_len);
            s.vectorize(Columns { pass, columns });
        });
    }
}

/// One worker's columns, whole stripes (the last may be partial).
struct Columns<'a, I: Index> {
    pass: Pass<'a, I>,
    columns: std::ops::Range<usize>,
}

/// A vector's lane offsets (`-1`: inactive), aligned for one vector load.
#[repr(align(64))]
struct Offsets([i32; STRIPE]);

impl<I: Index> Task for Columns<'_, I> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let Pass { edge_src, num_src, arg_e, row_len, .. } = self.pass;
        match (I::as_i32s(arg_e), I::as_i32s(edge_src)) {
            // `i32` ids: the vocabulary checks and looks up a vector of them.
            (Some(arg_e), Some(edge_src)) => self.sweep(s, |v, j, n, at| {
                // SAFETY: `j + n <= row_len` ids of row `v`, `at` holds
                // `STRIPE >= LANES` ints, and `num_src · row_len` fits `i32`
                // (checked by `arg_scatter`).
                unsafe { s.edge_offsets(arg_e[v * row_len + j..].as_ptr(), n, edge_src, (num_src, row_len, j), at) }
            }),
            // `i64` ids, lane by lane; lane `l` of `at` is element
            // `(src(e), j + l)`, or -1 for the module docs' inactive lanes.
            _ => self.sweep(s, |v, j, n, at| {
                for l in 0..S::LANES {
                    let e = if l < n { arg_e[v * row_len + j + l].to_usize() } else { usize::MAX };
                    let u = edge_src.get(e).map_or(usize::MAX, |u| u.to_usize());
                    let offset = if u < num_src { (u * row_len + j + l) as i32 } else { -1 };
                    // SAFETY: `at` holds `STRIPE >= LANES` ints.
                    unsafe { *at.add(l) = offset };
                }
            }),
        }
    }
}

impl<I: Index> Columns<'_, I> {
    /// Every destination in order, each vector of this worker's columns:
    /// `offsets(v, j, n, at)` writes the lane offsets of the `n` columns
    /// from `j` into `at`, then `c · g[v][j..j + n]` is added there.
    #[inline(always)]
    fn sweep<S: Simd>(self, s: S, offsets: impl Fn(usize, usize, usize, *mut i32)) {
        let Pass { grad_out, row_len, c, grad, .. } = self.pass;
        let mut at = Offsets([-1; STRIPE]);
        let cv = s.splat(c);
        for (v, g) in grad_out.chunks_exact(row_len).enumerate() {
            let mut j = self.columns.start;
            while j < self.columns.end {
                let n = (self.columns.end - j).min(S::LANES);
                offsets(v, j, n, at.0.as_mut_ptr());
                let g = g[j..j + n].as_ptr();
                // SAFETY: `g` points at `n` readable floats.
                let x = unsafe { load(s, g, n) };
                // SAFETY: `at` holds `LANES <= 16` offsets; an active one is
                // `u · row_len + j + l` with `u < num_src` and
                // `j + l < row_len`, inside `grad` (`num_src · row_len`
                // elements, at most `i32::MAX`, so it is exact), distinct
                // across the lanes (distinct columns), and in this worker's
                // columns, which no other worker touches.
                unsafe { s.scatter_add(grad.at(0), at.0.as_ptr(), s.mul(cv, x)) };
                j += n;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{IsaLevel, with_level};
    use crate::kernels::arg_pull;
    use crate::layout::CsrView;

    /// A random multigraph (sources 0..41 → destinations 0..29, hub source
    /// 3, parallel edges, destinations `v % 7 == 5` without in-edges), its
    /// out-CSR rows sorted by (destination, edge id), and an `arg_e` naming
    /// a random in-edge per element (`-1` for empty rows).
    #[allow(clippy::type_complexity)]
    fn case(d: usize) -> (Vec<i64>, (Vec<i64>, Vec<i64>, Vec<i64>), Vec<i64>, Vec<f32>) {
        let mut next = crate::kernels::common::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let (num_src, num_dst) = (41, 29);
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for _ in 0..600 {
            let u = if next(4) == 0 { 3 } else { next(num_src) };
            let v = loop {
                let v = next(num_dst);
                if v % 7 != 5 {
                    break v;
                }
            };
            for _ in 0..1 + usize::from(next(8) == 0) {
                src.push(u as i64);
                dst.push(v as i64);
            }
        }
        let mut order: Vec<usize> = (0..src.len()).collect();
        order.sort_by_key(|&e| (src[e], dst[e], e));
        let mut indptr = vec![0i64; num_src + 1];
        order.iter().for_each(|&e| indptr[src[e] as usize + 1] += 1);
        (0..num_src).for_each(|u| indptr[u + 1] += indptr[u]);
        let out = (indptr, order.iter().map(|&e| dst[e]).collect(), order.iter().map(|&e| e as i64).collect());
        let mut arg_e = Vec::with_capacity(num_dst * d);
        for v in 0..num_dst {
            let into: Vec<i64> = (0..src.len() as i64).filter(|&e| dst[e as usize] == v as i64).collect();
            arg_e.extend((0..d).map(|_| if into.is_empty() { -1 } else { into[next(into.len())] }));
        }
        let g = (0..num_dst * d).map(|_| (next(2001) as f32 - 1000.0) / 997.0).collect();
        (src, out, arg_e, g)
    }

    /// Bitwise the pull at every level, for rows shorter than a vector,
    /// with a partial stripe, and of several stripes; `i32` and `i64` ids.
    #[test]
    fn the_scatter_is_bitwise_the_pull_at_every_level() {
        for d in [1, 5, 16, 40, 67] {
            let (src, (indptr, dsts, eids), arg_e, g) = case(d);
            let num_src = indptr.len() - 1;
            // SAFETY: `case` builds a valid CSR, rows sorted by (column, edge id).
            let csr = unsafe { CsrView::new_unchecked(&indptr, &dsts, &eids, arg_e.len() / d) };
            let mut pulled = vec![0f32; num_src * d];
            arg_pull(csr, &arg_e, &g, d, -1.0, &mut pulled).unwrap();
            assert!(pulled.iter().any(|&y| y != 0.0));
            let narrow = |v: &[i64]| v.iter().map(|&x| x as i32).collect::<Vec<_>>();
            let (src32, arg32) = (narrow(&src), narrow(&arg_e));
            for level in IsaLevel::tested() {
                let mut wide = vec![f32::NAN; num_src * d];
                let mut thin = vec![f32::NAN; num_src * d];
                with_level(level, || {
                    arg_scatter(&src, &arg_e, &g, d, -1.0, &mut wide).unwrap();
                    arg_scatter(&src32, &arg32, &g, d, -1.0, &mut thin).unwrap();
                })
                .unwrap();
                let bits = |x: &[f32]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&wide), bits(&pulled), "{level:?}, d = {d}");
                assert_eq!(bits(&thin), bits(&pulled), "{level:?}, d = {d}, i32");
            }
        }
    }

    /// Ids that name no edge, and edges whose source is out of range, are
    /// skipped, whatever the level.
    #[test]
    fn out_of_range_ids_touch_nothing() {
        // Edges 0 → source 1, 1 → source 7 (out of range for 2 sources).
        let edge_src = [1i32, 7];
        let arg_e = [0, -1, 2, 1, i32::MAX, 0];
        let g = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        for level in IsaLevel::tested() {
            let mut grad = [f32::NAN; 6];
            with_level(level, || arg_scatter(&edge_src, &arg_e, &g, 3, 2.0, &mut grad).unwrap()).unwrap();
            assert_eq!(grad, [0.0, 0.0, 0.0, 2.0, 0.0, 12.0], "{level:?}");
        }
    }

    #[test]
    fn wrong_lengths_are_typed_errors() {
        let edge_src = [0i32, 1];
        let mut grad = [0.0f32; 4];
        let err = arg_scatter(&edge_src, &[0; 4], &[0.0; 3], 2, 1.0, &mut grad).unwrap_err();
        assert_eq!((err.expected, err.actual), (4, 3));
        let err = arg_scatter(&edge_src, &[0; 3], &[0.0; 3], 2, 1.0, &mut grad).unwrap_err();
        assert_eq!((err.expected, err.actual), (4, 3));
        let err = arg_scatter(&edge_src, &[0; 4], &[0.0; 4], 2, 1.0, &mut grad[..3]).unwrap_err();
        assert_eq!((err.expected, err.actual), (4, 3));
        let err = arg_scatter(&edge_src, &[0; 4], &[0.0; 4], 0, 1.0, &mut grad).unwrap_err();
        assert_eq!((err.expected, err.actual), (0, 4));
        assert_eq!(grad, [0.0; 4], "an error writes nothing");
    }
}
