//! A screen of a max/min g-SpMM's `arg_e` before a gradient pass trusts it:
//! every element of destination `v`'s row must be an in-edge of `v`, or
//! `-1` exactly where `v` has no in-edges.
//!
//! The check is one random `edge_dst[e]` lookup per element (8 M at 2^16
//! destinations × 128), so what decides its speed is how many lookups are
//! in flight. An element-by-element scan, whose branches hang on each
//! loaded destination, took a quarter of copy_u_max_backward's time on
//! RMAT 2^16 / 2^20 at d = 128 on the Zen 4 VM; with `i32` ids this screen
//! checks and looks up a vector of ids at once ([`Simd::edge_offsets`]: one
//! `vpgatherdd` per 16 lanes on AVX-512): 7.9–9.3 against 5.3 ms in a
//! probe, and the op 1.11× (RMAT) and 1.30× (uniform) faster end to end
//! (docs/PERFORMANCE.md, "Max/min backward: scatter or pull"). It only
//! names the first bad row; the caller words the error from its own
//! element-by-element check of that row.

use crate::Index;
use crate::error::KernelError;
use crate::isa::{Simd, Task};

/// Lane offsets per vector in the screen: `edge_offsets` with rows of
/// this many ids maps lane `l` of an in-edge of `v` to `v · 16 + l`.
const ROW_STRIDE: usize = 16;

/// The first destination in `rows` whose row of `arg_e` (`row_len` ids,
/// row `v` at `v · row_len`) is not valid, or `None`: a destination with
/// in-edges (`has_in_edges(v)`) must name one of them (`edge_dst[e] == v`)
/// in every element, one without must hold `-1` in every element.
/// `edge_dst[e]` is the destination of edge `e`, below `num_dst`.
///
/// Runs on the calling thread at the active ISA level; callers split the
/// rows among workers. A row of `rows` past the end of `arg_e` is a typed
/// error.
pub fn first_bad_arg_row<I: Index>(
    edge_dst: &[I],
    num_dst: usize,
    arg_e: &[I],
    row_len: usize,
    rows: std::ops::Range<usize>,
    has_in_edges: impl Fn(usize) -> bool,
) -> Result<Option<usize>, KernelError> {
    let needed = rows.end.saturating_mul(row_len);
    if needed > arg_e.len() {
        return Err(KernelError { what: "arg_e ids (the rows screened)", expected: needed, actual: arg_e.len() });
    }
    let screen = Screen { edge_dst, num_dst, arg_e, row_len, rows, has_in_edges };
    Ok(crate::isa::with_token(crate::isa::active_level(), Enter(screen)))
}

struct Screen<'a, I: Index, F> {
    edge_dst: &'a [I],
    num_dst: usize,
    arg_e: &'a [I],
    row_len: usize,
    rows: std::ops::Range<usize>,
    has_in_edges: F,
}

struct Enter<'a, I: Index, F>(Screen<'a, I, F>);

impl<I: Index, F: Fn(usize) -> bool> Task for Enter<'_, I, F> {
    type Output = Option<usize>;
    fn run<S: Simd>(self, s: S) -> Option<usize> {
        s.vectorize(self.0)
    }
}

/// A vector's lane offsets, aligned for one vector load.
#[repr(align(64))]
struct Offsets([i32; ROW_STRIDE]);

impl<I: Index, F: Fn(usize) -> bool> Task for Screen<'_, I, F> {
    type Output = Option<usize>;
    #[inline(always)]
    fn run<S: Simd>(self, s: S) -> Option<usize> {
        let Self { edge_dst, num_dst, arg_e, row_len, rows, has_in_edges } = self;
        let vector_ids = (I::as_i32s(arg_e), I::as_i32s(edge_dst));
        let mut at = Offsets([-1; ROW_STRIDE]);
        rows.into_iter().find(|&v| {
            let row = &arg_e[v * row_len..(v + 1) * row_len];
            if !has_in_edges(v) {
                return row.iter().any(|&e| e != I::NONE);
            }
            match vector_ids {
                // `v · 16 + 15` fits `i32` for every destination.
                (Some(ids), Some(dst)) if num_dst <= (i32::MAX as usize) / ROW_STRIDE => {
                    let ids = &ids[v * row_len..(v + 1) * row_len];
                    let first = (v * ROW_STRIDE) as i32;
                    ids.chunks(S::LANES).any(|chunk| {
                        // SAFETY: `chunk` holds `n <= LANES <= 16` readable
                        // ids and `at` 16 ints; `col + n = n <= 16 =
                        // row_len`, and `num_dst · 16 <= i32::MAX` (above).
                        unsafe {
                            s.edge_offsets(
                                chunk.as_ptr(),
                                chunk.len(),
                                dst,
                                (num_dst, ROW_STRIDE, 0),
                                at.0.as_mut_ptr(),
                            )
                        };
                        // Lane `l` of an in-edge of `v` is `v · 16 + l`;
                        // anything else (another destination's edge, not an
                        // edge, `-1`) differs.
                        at.0[..chunk.len()].iter().zip(first..).any(|(&got, want)| got != want)
                    })
                }
                _ => row.iter().any(|&e| edge_dst.get(e.to_usize()).is_none_or(|d| d.to_usize() != v)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::{IsaLevel, with_level};

    /// Row `v` valid by the module's rule, element by element (the oracle).
    fn valid(edge_dst: &[i64], row: &[i64], v: usize) -> bool {
        let has_in_edges = edge_dst.iter().any(|&d| d as usize == v);
        row.iter().all(|&e| {
            if has_in_edges {
                usize::try_from(e).ok().and_then(|e| edge_dst.get(e)) == Some(&(v as i64))
            } else {
                e == -1
            }
        })
    }

    /// Every kind of bad element, at every lane position of rows longer and
    /// shorter than a vector, both id types, every level: the screen names
    /// exactly the oracle's first bad row.
    #[test]
    fn the_screen_names_the_oracles_first_bad_row_at_every_level() {
        let num_dst = 9;
        // Destinations 0..9; 4 and 7 have no in-edges; 23 edges.
        let edge_dst: Vec<i64> = (0..23).map(|e| [0, 1, 2, 3, 5, 6, 8][e * 5 % 7]).collect();
        let in_edges = |v: usize| (0..23).filter(|&e| edge_dst[e] as usize == v).collect::<Vec<_>>();
        for row_len in [1, 3, 16, 21, 40] {
            let good: Vec<i64> = (0..num_dst)
                .flat_map(|v| {
                    let ins = in_edges(v);
                    (0..row_len).map(move |j| if ins.is_empty() { -1 } else { ins[j % ins.len()] as i64 })
                })
                .collect();
            let mut cases = vec![good.clone()];
            for (v, j, bad) in [
                (2, row_len - 1, -1),                              // -1 where there are in-edges
                (4, row_len / 2, 0),                               // an edge where there are none
                (5, 0, 23),                                        // not an edge
                (6, row_len - 1, -7),                              // negative, not -1
                (1, row_len / 2, in_edges(3)[0] as i64),           // another destination's edge
                (8, (row_len + 3) % row_len, i64::from(i32::MAX)), // far out of range
            ] {
                let mut c = good.clone();
                c[v * row_len + j] = bad;
                cases.push(c);
                // And an earlier bad row too: -1 where destination 0 has in-edges.
                let mut two = cases.last().unwrap().clone();
                two[0] = -1;
                cases.push(two);
            }
            for arg_e in &cases {
                let dst32: Vec<i32> = edge_dst.iter().map(|&d| d as i32).collect();
                let arg32: Vec<i32> = arg_e.iter().map(|&e| e as i32).collect();
                let has = |v: usize| !in_edges(v).is_empty();
                for rows in [0..num_dst, 3..num_dst, 0..0] {
                    let want = rows.clone().find(|&v| !valid(&edge_dst, &arg_e[v * row_len..(v + 1) * row_len], v));
                    for level in IsaLevel::tested() {
                        let got64 = with_level(level, || {
                            first_bad_arg_row(&edge_dst, num_dst, arg_e, row_len, rows.clone(), has)
                        });
                        let got32 = with_level(level, || {
                            first_bad_arg_row(&dst32, num_dst, &arg32, row_len, rows.clone(), has)
                        });
                        let what = format!("row_len {row_len}, rows {rows:?}, {level:?}");
                        assert_eq!(got64.unwrap().unwrap(), want, "i64, {what}");
                        assert_eq!(got32.unwrap().unwrap(), want, "i32, {what}");
                    }
                }
                // Rows past the end of `arg_e`: a typed error, not a panic.
                let past = first_bad_arg_row(&edge_dst, num_dst, arg_e, row_len, 0..num_dst + 1, |_| true);
                assert_eq!(past.unwrap_err().expected, (num_dst + 1) * row_len);
            }
        }
    }
}
