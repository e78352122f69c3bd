//! A screen of a max/min g-SpMM's `arg_e` before a gradient pass trusts it:
//! every element of destination `v`'s row must be an in-edge of `v`, or
//! `-1` exactly where `v` has no in-edges.
//!
//! Two ways to check an element, chosen per row by its in-degree and length:
//!
//! - **membership** (rows of several vectors and few in-edges,
//!   [`membership_max_degree`]):
//!   `v`'s in-edges are its in-CSR slots, `eids[indptr[v]..indptr[v+1]]`,
//!   one contiguous run that the screen reads in row order anyway. Each of
//!   them is compared with a whole vector of the row's ids (AVX-512: per
//!   16 ids one `vpcmpeqd` into a k-mask, or two `vpcmpeqq` for `i64`,
//!   ORed; at AVX2 a `vpxor` and a `vpminud` per 8 ids, [`all_near`];
//!   at the portable level `pcmpeqd` and `por` per 4 ids; below AVX-512
//!   `i64` ids narrowed to their low halves first, [`all_in_narrowed`]),
//!   and the row is good when every lane found its edge. That is `deg × row_len / 16`
//!   compares and no random load: at degree 16 and d = 128, 128 compares
//!   for the row against the lookup's 128 random loads.
//! - **lookup** (hubs, rows of one vector, and `i64` rows whose in-edges
//!   pass 2^32 at the level without a 64-bit compare,
//!   [`Simd::COMPARES_I64`]): one random `edge_dst[e]`
//!   load per element, 16 at a time with `i32` ids at AVX-512
//!   ([`Simd::edge_offsets`]: one `vpgatherdd` per 16 lanes), one by one
//!   otherwise, whose cost does not grow with the degree. Element by element,
//!   with a branch hanging on each load, it took a quarter of
//!   copy_u_max_backward's time on RMAT 2^16 / 2^20 at d = 128 on the Zen 4
//!   VM; vectorised, the op ran 1.11× (RMAT) and 1.30× (uniform) faster,
//!   and `perf` still put a fifth of the op in it (docs/PERFORMANCE.md,
//!   "Max/min backward: scatter or pull").
//!
//! The screen only names the first bad row; the caller words the error
//! from its own element-by-element check of that row.

use crate::Index;
use crate::error::KernelError;
use crate::isa::{Simd, Task};
use crate::layout::CsrView;

/// Lane offsets per vector in the lookup: `edge_offsets` with rows of
/// this many ids maps lane `l` of an in-edge of `v` to `v · 16 + l`.
const ROW_STRIDE: usize = 16;

/// Ids compared at once by the membership test: one 512-bit vector of
/// `i32`, two of `i64`; the compiler lowers the fixed-size loops to them
/// (`i64` only where the level compares them natively,
/// [`Simd::COMPARES_I64`]).
const WIDTH: usize = 16;

/// The largest in-degree that a row of `row_len` ids checks by membership.
///
/// Membership costs one compare per in-edge for every vector of the row,
/// the lookup a gather of the vector's lanes. A row of several vectors
/// compares each in-edge with up to 8 of them at once (about half a cycle
/// per vector) and gains up to 2 × 16 in-edges; a row of one vector (d ≤
/// 16) waits on one compare after another and keeps the lookup. Measured
/// on the model-167 Xeon VM, RMAT and uniform 2^16 / 2^20, `i32` ids
/// (`kernel_bench --ops argback`, the screen alone, medians of 3
/// processes): at d = 128 3.50 → 1.95 ms (RMAT) and 4.86 → 1.65 ms
/// (uniform); at d = 8 membership up to 8 in-edges took 1.14 against
/// 0.51 ms on RMAT (docs/PERFORMANCE.md, "Max/min backward: scatter or pull").
fn membership_max_degree(row_len: usize) -> usize {
    if row_len > WIDTH { MAX_MEMBERS } else { 0 }
}

/// The most in-edges a row checks by membership ([`membership_max_degree`]).
const MAX_MEMBERS: usize = 2 * WIDTH;

/// `i64` ids below this fit 32 bits: [`all_in_narrowed`] applies when
/// every in-edge does.
const NARROWED_IDS: usize = 1 << 32;

/// The first destination in `rows` whose row of `arg_e` (`row_len` ids,
/// row `v` at `v · row_len`) is not valid, or `None`: a destination with
/// in-edges (a non-empty row of `in_csr`) must name one of them in every
/// element, one without must hold `-1` in every element. `edge_dst[e]` is
/// the destination of edge `e`, `in_csr.num_edges()` long.
///
/// Runs on the calling thread at the active ISA level; callers split the
/// rows among workers. Rows past the end of `arg_e` or of `in_csr`, or an
/// `edge_dst` of the wrong length, are typed errors.
pub fn first_bad_arg_row<I: Index>(
    in_csr: CsrView<'_, I>,
    edge_dst: &[I],
    arg_e: &[I],
    row_len: usize,
    rows: std::ops::Range<usize>,
) -> Result<Option<usize>, KernelError> {
    let needed = rows.end.saturating_mul(row_len);
    if needed > arg_e.len() {
        return Err(KernelError { what: "arg_e ids (the rows screened)", expected: needed, actual: arg_e.len() });
    }
    if rows.end > in_csr.num_rows() {
        return Err(KernelError {
            what: "destinations (the rows screened)",
            expected: rows.end,
            actual: in_csr.num_rows(),
        });
    }
    crate::error::check_len("edge destinations (one per edge)", in_csr.num_edges(), edge_dst.len())?;
    let screen = Screen { in_csr, edge_dst, arg_e, row_len, rows };
    Ok(crate::isa::with_token(crate::isa::active_level(), Enter(screen)))
}

struct Screen<'a, I: Index> {
    in_csr: CsrView<'a, I>,
    edge_dst: &'a [I],
    arg_e: &'a [I],
    row_len: usize,
    rows: std::ops::Range<usize>,
}

struct Enter<'a, I: Index>(Screen<'a, I>);

impl<I: Index> Task for Enter<'_, I> {
    type Output = Option<usize>;
    fn run<S: Simd>(self, s: S) -> Option<usize> {
        s.vectorize(self.0)
    }
}

/// A vector's lane offsets, aligned for one vector load.
#[repr(align(64))]
struct Offsets([i32; ROW_STRIDE]);

impl<I: Index> Task for Screen<'_, I> {
    type Output = Option<usize>;
    #[inline(always)]
    fn run<S: Simd>(self, s: S) -> Option<usize> {
        let Self { in_csr, edge_dst, arg_e, row_len, rows } = self;
        let num_dst = in_csr.num_rows();
        let vector_ids = (I::as_i32s(arg_e), I::as_i32s(edge_dst));
        let mut at = Offsets([-1; ROW_STRIDE]);
        let max_degree = membership_max_degree(row_len);
        // In-edges are edge ids, `0..num_edges`: whether each fits 32 bits.
        let narrow_members = in_csr.num_edges() <= NARROWED_IDS;
        // Below AVX-512 (no k-masks) the `i32` test goes by distance where
        // `pminud` exists (AVX2, avx128). The portable level's compares
        // (SSE2 `pcmpeqd` and `por`: no masked store to lower the OR to)
        // beat its emulated minimum 2.0–5.0× on the uniform graph, level on
        // RMAT (2^16 / 2^20, d = 32 / 128, Zen 3 VM; docs/PERFORMANCE.md,
        // "The screen at AVX2").
        let by_distance = S::REGISTERS < 32 && S::MIN_U32;
        let all_in32 = |ids: &[i32], set: &[i32]| if by_distance { all_near(ids, set) } else { all_in(ids, set) };
        rows.into_iter().find(|&v| {
            let row = &arg_e[v * row_len..(v + 1) * row_len];
            let in_edges = &in_csr.eids()[in_csr.row_range(v)];
            if in_edges.is_empty() {
                return row.iter().any(|&e| e != I::NONE);
            }
            if in_edges.len() <= max_degree {
                if let (Some(ids), Some(set)) = (I::as_i32s(row), I::as_i32s(in_edges)) {
                    return !all_in32(ids, set);
                }
                if let (Some(ids), Some(set)) = (I::as_i64s(row), I::as_i64s(in_edges)) {
                    // Below AVX-512 the 64-bit compares cost masked stores
                    // (AVX2) or are emulated (SSE2): narrowed to 32 bits.
                    if S::REGISTERS < 32 && narrow_members {
                        return !all_in_narrowed(ids, set, all_in32);
                    }
                    if S::COMPARES_I64 {
                        return !all_in(ids, set);
                    }
                }
            }
            match vector_ids {
                // `v · 16 + 15` fits `i32` for every destination. Below
                // AVX-512 `edge_offsets` goes lane by lane, and the direct
                // loads of the last arm beat it: 1.3–1.7× on the lookup-bound
                // cases (d = 8, RMAT at d = 32 and 128; 2^16 / 2^20) on the
                // Zen 3 VM (docs/PERFORMANCE.md, "The screen at AVX2").
                (Some(ids), Some(dst)) if S::EDGE_OFFSETS_GATHER && num_dst <= (i32::MAX as usize) / ROW_STRIDE => {
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

/// An id the membership test compares a vector of at a time: `i32`, `i64`.
trait LaneId: Copy + PartialEq {
    /// All bits set, a found lane.
    const FOUND: Self;
    /// Zero, a lane not found yet.
    const NOT_FOUND: Self;
    /// `FOUND` where `eq`, else zero, ORed into `self`.
    fn or_found(self, eq: bool) -> Self;
}

macro_rules! impl_lane_id {
    ($($t:ty),*) => {$(
        impl LaneId for $t {
            const FOUND: Self = -1;
            const NOT_FOUND: Self = 0;
            #[inline(always)]
            fn or_found(self, eq: bool) -> Self {
                self | -<$t>::from(eq)
            }
        }
    )*};
}

impl_lane_id!(i32, i64);

/// Whether every id of `ids` is one of `set` (not empty). Whole vectors
/// of [`WIDTH`] ids go in groups of up to 8, so each member is compared
/// with 8 independent vectors; a short last vector is padded with
/// `set[0]`, which is found.
#[inline(always)]
fn all_in<T: LaneId>(ids: &[T], set: &[T]) -> bool {
    let (whole, tail) = ids.as_chunks::<WIDTH>();
    let mut rest = whole;
    while !rest.is_empty() {
        let ok = match rest.len() {
            8.. => group_in::<T, 8>(&mut rest, set),
            4.. => group_in::<T, 4>(&mut rest, set),
            2.. => group_in::<T, 2>(&mut rest, set),
            _ => group_in::<T, 1>(&mut rest, set),
        };
        if !ok {
            return false;
        }
    }
    let mut last = [[set[0]; WIDTH]];
    last[0][..tail.len()].copy_from_slice(tail);
    tail.is_empty() || group_in::<T, 1>(&mut &last[..], set)
}

/// Whether every lane of the first `G` vectors of `vectors` is one of
/// `set` (and moves `vectors` past them): per member one compare of each
/// vector (AVX-512: `vpcmpeqd` with a broadcast operand into a k-mask for
/// `i32`, two `vpcmpeqq` for `i64`), ORed into the lanes found.
#[inline(always)]
fn group_in<T: LaneId, const G: usize>(vectors: &mut &[[T; WIDTH]], set: &[T]) -> bool {
    let (group, rest) = vectors.split_at(G);
    *vectors = rest;
    let mut found = [[T::NOT_FOUND; WIDTH]; G];
    for &e in set {
        for (f, v) in found.iter_mut().zip(group) {
            for (f, &id) in f.iter_mut().zip(v) {
                *f = f.or_found(id == e);
            }
        }
    }
    found.iter().all(|f| *f == [T::FOUND; WIDTH])
}

/// [`all_in`] for `i32` ids at levels without mask registers (AVX2): each
/// lane keeps its smallest distance to a member, the unsigned minimum of
/// `id ^ member`, zero exactly when the id is one. [`all_in`]'s OR of
/// compare masks reads the same, but at AVX2 LLVM turns it into a masked
/// store of all-ones to found vectors on the stack (one `vpmaskmovd` per
/// vector and member), which Zen 3 runs at several cycles each; the
/// screen took 49–68 ms on uniform 2^16 / 2^20 at d = 128 there. Here a
/// member costs one `vpxor` and one `vpminud` per vector, and the
/// distances stay in registers (8 ymm at a group of 4 vectors of 16 ids;
/// the closing OR folds them without taking their address, which would
/// keep them on the stack): 2.8–3.7 ms (docs/PERFORMANCE.md, "The screen
/// at AVX2"). A short last vector is padded with
/// `set[0]`, which is found.
#[inline(always)]
fn all_near(ids: &[i32], set: &[i32]) -> bool {
    let (whole, tail) = ids.as_chunks::<WIDTH>();
    let mut rest = whole;
    while !rest.is_empty() {
        let ok = match rest.len() {
            4.. => group_near::<4>(&mut rest, set),
            2.. => group_near::<2>(&mut rest, set),
            _ => group_near::<1>(&mut rest, set),
        };
        if !ok {
            return false;
        }
    }
    let mut last = [[set[0]; WIDTH]];
    last[0][..tail.len()].copy_from_slice(tail);
    tail.is_empty() || group_near::<1>(&mut &last[..], set)
}

/// Whether every lane of the first `G` vectors of `vectors` is one of
/// `set` (and moves `vectors` past them), by distances ([`all_near`]).
#[inline(always)]
fn group_near<const G: usize>(vectors: &mut &[[i32; WIDTH]], set: &[i32]) -> bool {
    let (group, rest) = vectors.split_at(G);
    *vectors = rest;
    let mut nearest = [[u32::MAX; WIDTH]; G];
    for &member in set {
        for (n, v) in nearest.iter_mut().zip(group) {
            for (n, &id) in n.iter_mut().zip(v) {
                *n = (*n).min((id ^ member) as u32);
            }
        }
    }
    nearest.iter().flatten().fold(0, |any, &n| any | n) == 0
}

/// [`all_in`] for `i64` ids below AVX-512 when every member of `set` (at
/// most [`MAX_MEMBERS`]) is below 2^32: an id is one of them exactly when
/// its high half is zero and its low half is one of theirs, so the test is
/// `all_in32` ([`all_near`] at AVX2 and avx128, [`all_in`] at the portable
/// level) on the low halves plus one OR of the high halves.
///
/// In place of [`all_in`]'s OR of 64-bit compare masks. At AVX2 LLVM
/// lowered that to masked stores (one `vpmaskmovq` per vector of 4 ids and
/// member: the `i64` screen took 35–63 ms against the `i32` screen's
/// 2.6–4.3 ms, uniform 2^16, d = 128 on the Zen 3 VM), or to a walk
/// vectorised across the members once the found lanes stayed in
/// registers; SSE2 has no 64-bit compare at all. Narrowing 64 ids at a
/// time to a stack buffer costs one `vshufps` per 4 ids (the low halves of
/// two xmm) and a shift and an OR for the high halves, against 2
/// instructions per 8 ids and member in the test itself: 4.3–6.2 ms for
/// that screen (docs/PERFORMANCE.md, "The screen at AVX2").
#[inline(always)]
fn all_in_narrowed(ids: &[i64], set: &[i64], all_in32: impl Fn(&[i32], &[i32]) -> bool) -> bool {
    const CHUNK: usize = 4 * WIDTH;
    let mut low_set = [0i32; MAX_MEMBERS];
    let low_set = &mut low_set[..set.len()];
    for (low, &member) in low_set.iter_mut().zip(set) {
        *low = member as i32;
    }
    ids.chunks(CHUNK).all(|chunk| {
        let mut lows = [0i32; CHUNK];
        let mut high = 0u64;
        for (low, &id) in lows.iter_mut().zip(chunk) {
            // Truncation keeps the low half; the high half is checked apart.
            *low = id as i32;
            high |= (id as u64) >> 32;
        }
        high == 0 && all_in32(&lows[..chunk.len()], low_set)
    })
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

    /// The in-CSR of `edge_dst` (every source 0, so rows are sorted by edge id).
    fn in_csr_of(edge_dst: &[i64], num_dst: usize) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
        let mut eids: Vec<i64> = (0..edge_dst.len() as i64).collect();
        eids.sort_by_key(|&e| (edge_dst[e as usize], e));
        let indptr = (0..=num_dst).map(|v| edge_dst.iter().filter(|&&d| (d as usize) < v).count() as i64).collect();
        (indptr, vec![0; edge_dst.len()], eids)
    }

    /// Every kind of bad element, at every lane position of rows longer and
    /// shorter than a vector, in a row checked by membership and in a hub
    /// checked by lookup, both id types, every level: the screen names
    /// exactly the oracle's first bad row.
    #[test]
    fn the_screen_names_the_oracles_first_bad_row_at_every_level() {
        let num_dst = 9;
        // Destinations 0..9; 4 and 7 have no in-edges; 1 is a hub of 40
        // in-edges (the lookup), the others have 6 or 7 (membership).
        let edge_dst: Vec<i64> = (0..80).map(|e| if e % 2 == 0 { 1 } else { [0, 2, 3, 5, 6, 8][e / 2 % 6] }).collect();
        let in_edges = |v: usize| (0..80).filter(|&e| edge_dst[e] as usize == v).collect::<Vec<_>>();
        assert!(in_edges(1).len() > membership_max_degree(40) && in_edges(5).len() <= membership_max_degree(21));
        let (indptr, srcs, eids) = in_csr_of(&edge_dst, num_dst);
        let (indptr32, srcs32, eids32) =
            [&indptr, &srcs, &eids].map(|a| a.iter().map(|&x| x as i32).collect::<Vec<_>>()).into();
        // SAFETY: `in_csr_of` builds sorted rows, in-bound sources and a
        // permutation of the edge ids.
        let (csr64, csr32) = unsafe {
            (CsrView::new_unchecked(&indptr, &srcs, &eids, 1), CsrView::new_unchecked(&indptr32, &srcs32, &eids32, 1))
        };
        for row_len in [1, 3, 16, 21, 40] {
            let good: Vec<i64> = (0..num_dst)
                .flat_map(|v| {
                    let ins = in_edges(v);
                    (0..row_len).map(move |j| if ins.is_empty() { -1 } else { ins[(j * 7) % ins.len()] as i64 })
                })
                .collect();
            let mut cases = vec![good.clone()];
            let mut bad_elements = vec![(4, row_len / 2, 1)]; // an edge where there are none
            for v in [1, 5] {
                bad_elements.extend([
                    (v, row_len - 1, -1),                                // -1 where there are in-edges
                    (v, 0, 80),                                          // not an edge
                    (v, row_len / 2, -7),                                // negative, not -1
                    (v, (row_len + 3) % row_len, in_edges(3)[0] as i64), // another destination's edge
                    (v, row_len - 1, i64::from(i32::MAX)),               // far out of range
                    (v, row_len / 3, (1 << 32) | in_edges(v)[0] as i64), // an in-edge in its low half only
                ]);
            }
            for (v, j, bad) in bad_elements {
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
                // Narrowed to `i32`, the low-half-only edge is the edge itself.
                let arg32_wide: Vec<i64> = arg32.iter().map(|&e| e.into()).collect();
                for rows in [0..num_dst, 3..num_dst, 0..0] {
                    let first_bad = |arg_e: &[i64]| {
                        rows.clone().find(|&v| !valid(&edge_dst, &arg_e[v * row_len..(v + 1) * row_len], v))
                    };
                    let (want, want32) = (first_bad(arg_e), first_bad(&arg32_wide));
                    for level in IsaLevel::tested() {
                        let got64 =
                            with_level(level, || first_bad_arg_row(csr64, &edge_dst, arg_e, row_len, rows.clone()));
                        let got32 =
                            with_level(level, || first_bad_arg_row(csr32, &dst32, &arg32, row_len, rows.clone()));
                        let what = format!("row_len {row_len}, rows {rows:?}, {level:?}");
                        assert_eq!(got64.unwrap().unwrap(), want, "i64, {what}");
                        assert_eq!(got32.unwrap().unwrap(), want32, "i32, {what}");
                    }
                }
                // Rows past the end of `arg_e` or of the graph, and a short
                // `edge_dst`: typed errors, not panics.
                let past = first_bad_arg_row(csr64, &edge_dst, &arg_e[..arg_e.len() - 1], row_len, 0..num_dst);
                assert_eq!(past.unwrap_err().expected, num_dst * row_len);
                let mut longer = arg_e.clone();
                longer.extend(vec![-1; row_len]);
                let past = first_bad_arg_row(csr64, &edge_dst, &longer, row_len, 0..num_dst + 1);
                assert_eq!(past.unwrap_err().expected, num_dst + 1);
                let short = first_bad_arg_row(csr64, &edge_dst[1..], arg_e, row_len, 0..num_dst);
                assert_eq!(short.unwrap_err().expected, 80);
            }
        }
    }

    /// Every group size (8, 4, 2, 1 vectors), every form and the padded tail: a miss
    /// in any lane is found, and the padding is never one.
    #[test]
    fn all_in_checks_every_given_lane_and_only_those() {
        let set = [5i32, 9, 2];
        let set64 = set.map(i64::from);
        type Narrowed = fn(&[i64], &[i64]) -> bool;
        let narrowed_tests: [(&str, Narrowed); 2] = [
            ("by distance", |ids, set| all_in_narrowed(ids, set, all_near)),
            ("by compare", |ids, set| all_in_narrowed(ids, set, all_in::<i32>)),
        ];
        for n in [1, 5, 16, 17, 32, 48, 64, 100, 128, 143, 16 * 15 + 3] {
            let ids: Vec<i32> = (0..n).map(|l| set[l % 3]).collect();
            let ids64: Vec<i64> = ids.iter().map(|&e| e.into()).collect();
            assert!(all_in(&ids, &set) && all_in(&ids64, &set64) && all_near(&ids, &set), "{n} ids");
            for (name, narrowed) in narrowed_tests {
                assert!(narrowed(&ids64, &set64), "{n} i64 ids narrowed, {name}");
            }
            for miss in 0..n {
                let (mut bad, mut bad64) = (ids.clone(), ids64.clone());
                bad[miss] = 7;
                // Equal to a member in its low 32 bits only.
                bad64[miss] = (1 << 32) | 5;
                assert!(!all_in(&bad, &set), "{n} ids, miss at {miss}");
                assert!(!all_near(&bad, &set), "{n} ids by distance, miss at {miss}");
                assert!(!all_in(&bad64, &set64), "{n} i64 ids, miss at {miss}");
                for (name, narrowed) in narrowed_tests {
                    assert!(!narrowed(&bad64, &set64), "{n} i64 ids narrowed, {name}, miss at {miss}");
                }
                bad64[miss] = -1;
                for (name, narrowed) in narrowed_tests {
                    assert!(!narrowed(&bad64, &set64), "{n} i64 ids narrowed, {name}, -1 at {miss}");
                }
            }
        }
    }
}
