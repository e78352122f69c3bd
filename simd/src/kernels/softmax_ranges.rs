//! Edge softmax over destination ranges, moving the logits by chunk.
//!
//! The row-order and two-phase schemes (`softmax.rs`) read every logits
//! row at a random line: edge ids are scattered along the in-CSR. This
//! scheme never does:
//!
//! ```text
//! chunks of C consecutive edge ids (C·row bytes ≤ half the cache budget),
//! ranges of R consecutive destinations (R·2·row bytes ≤ half the budget);
//! walk order: chunk by chunk, within a chunk range by range, within a
//! (chunk, range) segment ascending edge id.
//!   gather:  copy[i] = x[chunk start + local[i]], then the chunk's walk rows of out = copy,
//!            streamed                                      (per chunk: x read once, in cache)
//!   ranges:  per range, over its segments of every chunk:
//!              (v = the range's first destination + row[i], a u16)
//!              m[v] = max(m[v], out[i]);  then  out[i] = exp(out[i] − m[v]), s[v] += out[i]
//!              (per segment: subtract, exp over its contiguous floats on the widest vector, sum);
//!              then out[i] = out[i] / s[v]                   (the range's [m | s] table in cache)
//!   scatter: per chunk, copy its walk-ordered rows aside, out[start + local[i]] = copy[i]
//! ```
//!
//! `out` itself holds the walk-ordered rows, so the only temporaries are a
//! range's table and a chunk's copy per worker (both within the budget).
//! Every access is sequential or inside a cached chunk or table, except the
//! ranges' segments, which are `E / (chunks · ranges)` rows long (~512
//! four-head rows, 8 KiB, on 2^24 edges). Two things keep the bytes down:
//! the gathered chunk reaches `out` by non-temporal stores, so `out`'s lines
//! are not read for ownership first, and the walk order holds each
//! position's destination as a 16-bit offset in its range, so the three
//! loops over a range read 2 bytes per position beside its row instead of
//! `sizeof(I)`.
//!
//! Each destination sees its edges in ascending edge id, so the result is
//! bitwise the row-order scheme's over an in-CSR whose rows list their edge
//! ids in ascending order (the max and the exp-sum per vector in that
//! order, then `exp(x − m)` divided by the sum); the backend runs all three
//! schemes on such rows so that timing may choose.
//!
//! Measured on the Intel Xeon VM of family 6 model 167 (2^20 nodes / 2^24
//! edges, 4 heads, `kernel_bench`, the schemes back to back): 201-214 ms
//! uniform and 211-213 ms RMAT, against 239-242 and 263-272 ms for two
//! phases and 278-367 ms for row order
//! (`perf-reports/ablation/2026-11-28_xeon-m167_softmax-ranges.tsv`); the
//! streamed gather and 16-bit destinations are measured in
//! `perf-reports/ablation/2026-11-28_xeon-m167_softmax-ranges-bytes.tsv`,
//! the row lengths fixed at compile time in
//! `perf-reports/ablation/2026-11-28_xeon-m167_softmax-ranges-const-rows.tsv`
//! (docs/PERFORMANCE.md, "Edge softmax over destination ranges").

use super::common::{SharedMut, balanced_bounds, load, num_parts, prefetch_rows, store};
use crate::Index;
use crate::buffer::aligned_filled;
use crate::error::{KernelError, check_len};
use crate::isa::{Simd, Task};
use crate::layout::EdgeDst;
use crate::math::exp_nonpositive;
use crate::tuning::{CacheInfo, cache_budget};
use rayon::prelude::*;

/// The most edges one chunk holds: chunk-local edge ids are `u16`.
pub const MAX_CHUNK_EDGES: usize = 1 << 16;

/// The most destinations one range holds: range-local destinations are `u16`.
pub const MAX_RANGE_ROWS: usize = 1 << 16;

/// The walk order of one graph's edges for [`edge_softmax_ranges`]: see the
/// module docs. Built once per graph and shape; it costs `4 E` bytes plus
/// 4 bytes per (chunk, range) pair.
#[derive(Debug)]
pub struct RangeChunks {
    range_shift: u32,
    num_ranges: usize,
    chunk_edges: usize,
    num_dst: usize,
    /// Per chunk, `num_ranges + 1` chunk-relative starts of its segments.
    starts: Vec<u32>,
    /// Edges per range, as a prefix sum (`num_ranges + 1`).
    range_edges: Vec<usize>,
    /// Destination of each walk position, less its range's first.
    row: Vec<u16>,
    /// Edge id of each walk position, less its chunk's first id.
    local: Vec<u16>,
}

/// The shortest segment (rows of one chunk in one range, at the mean
/// in-degree) that [`softmax_ranges_shape`] cuts ranges down to for the L2.
/// Each segment pays its loops' set-up three times: on the Zen 4 VM 64-row
/// segments were 5-6 % slower than 128- and 256-row ones
/// (`perf-reports/ablation/2026-11-30_zen4_softmax-range-rows.tsv`), and on
/// the model-167 Xeon VM 128-row segments (ranges of 4,096 destinations,
/// chunks of 32,768) made the uniform graph's range pass 124 ms against
/// 107-108 (docs/PERFORMANCE.md, "Edge softmax over destination ranges").
pub const MIN_SEGMENT_ROWS: usize = 256;

/// The shape [`edge_softmax_ranges`] is built for with `row_len` floats per
/// edge on a graph of `num_edges` edges into `num_dst` destinations:
/// `(rows per range, edges per chunk)`.
///
/// - A chunk, and a range's `[max | sum]` table slice, within half the cache
///   budget each.
/// - A range's rows within one core's L2: the range pass reads every row of
///   its range three times (max, exp-sum, divide), `deg · R` rows of
///   `4·row_len + 2` bytes (the row and its 16-bit destination) at the mean
///   in-degree `deg`. With a 32 MiB L3 trusted the table rule alone gave
///   ranges of 65,536 destinations: 18 MiB of 4-head rows and destinations
///   per range, a range per worker, more than the L3 holds; on the Zen 4 VM ranges of
///   2,048-4,096 destinations were 1.13-1.15x faster on the uniform 2^24-edge
///   graph and level on RMAT (same file).
/// - But no shorter than [`MIN_SEGMENT_ROWS`] rows per segment at the mean:
///   `chunk · R / num_dst` rows of a chunk fall in one range.
///
/// Rows per range are a power of two of at most [`MAX_RANGE_ROWS`].
pub fn softmax_ranges_shape(row_len: usize, num_edges: usize, num_dst: usize) -> (usize, usize) {
    let floor_pow2 = |x: usize| 1usize << x.max(1).ilog2();
    let half = cache_budget() / 2;
    let row_bytes = 4 * row_len.max(1);
    let chunk = (half / row_bytes).clamp(1, MAX_CHUNK_EDGES);
    let table_rows = floor_pow2((half / (2 * row_bytes)).min(MAX_RANGE_ROWS));
    let mean_degree = num_edges as f64 / num_dst.max(1) as f64;
    // `as usize` saturates: without edges the L2 sets no limit.
    let l2_rows = floor_pow2((CacheInfo::get().l2 as f64 / (mean_degree * (row_bytes + 2) as f64)) as usize);
    let segment_floor = (MIN_SEGMENT_ROWS * num_dst).div_ceil(chunk).min(MAX_RANGE_ROWS).next_power_of_two();
    (table_rows.min(l2_rows.max(segment_floor)), chunk)
}

impl RangeChunks {
    /// Orders the edges of `dst` by chunks of `chunk_edges` ids (clamped to
    /// `1 ..= MAX_CHUNK_EDGES`) and ranges of `rows_per_range` destinations
    /// (clamped to `1 ..= MAX_RANGE_ROWS`, rounded up to a power of two).
    pub fn build<I: Index>(dst: EdgeDst<'_, I>, rows_per_range: usize, chunk_edges: usize) -> Self {
        let ids = dst.ids();
        let (e, num_dst) = (ids.len(), dst.num_dst());
        let rows = rows_per_range.clamp(1, MAX_RANGE_ROWS).next_power_of_two();
        let shift = rows.trailing_zeros();
        let ranges = num_dst.div_ceil(rows).max(1);
        let chunk_edges = chunk_edges.clamp(1, MAX_CHUNK_EDGES);
        let mut starts = vec![0u32; e.div_ceil(chunk_edges) * (ranges + 1)];
        let (mut row, mut local) = (vec![0u16; e], vec![0u16; e]);
        starts
            .par_chunks_mut(ranges + 1)
            .zip(row.par_chunks_mut(chunk_edges).zip(local.par_chunks_mut(chunk_edges)))
            .zip(ids.par_chunks(chunk_edges))
            .for_each(|((start, (row, local)), ids)| {
                ids.iter().for_each(|v| start[(v.to_usize() >> shift) + 1] += 1);
                for r in 0..ranges {
                    start[r + 1] += start[r];
                }
                let mut next: Vec<u32> = start[..ranges].to_vec();
                for (k, &v) in ids.iter().enumerate() {
                    let at = &mut next[v.to_usize() >> shift];
                    // `v mod rows < rows <= 2^16` and `k < chunk_edges <= 2^16`.
                    row[*at as usize] = (v.to_usize() & (rows - 1)) as u16;
                    local[*at as usize] = k as u16;
                    *at += 1;
                }
            });
        let mut range_edges = vec![0usize; ranges + 1];
        for start in starts.chunks(ranges + 1) {
            for r in 0..ranges {
                range_edges[r + 1] += (start[r + 1] - start[r]) as usize;
            }
        }
        for r in 0..ranges {
            range_edges[r + 1] += range_edges[r];
        }
        Self { range_shift: shift, num_ranges: ranges, chunk_edges, num_dst, starts, range_edges, row, local }
    }

    /// Destinations per range.
    pub fn rows_per_range(&self) -> usize {
        1 << self.range_shift
    }

    /// Number of destination ranges.
    pub fn num_ranges(&self) -> usize {
        self.num_ranges
    }

    /// Edge ids per chunk.
    pub fn chunk_edges(&self) -> usize {
        self.chunk_edges
    }

    /// Number of edges.
    pub fn num_edges(&self) -> usize {
        self.row.len()
    }

    /// Heap bytes of the walk order.
    pub fn bytes(&self) -> usize {
        self.row.len() * 4 + self.starts.len() * 4 + self.range_edges.len() * 8
    }

    fn num_chunks(&self) -> usize {
        self.num_edges().div_ceil(self.chunk_edges)
    }

    /// Edge ids (and walk positions) of chunk `k`.
    fn chunk(&self, k: usize) -> std::ops::Range<usize> {
        let first = k * self.chunk_edges;
        first..(first + self.chunk_edges).min(self.num_edges())
    }

    /// Walk positions of chunk `c`'s segment of range `r`.
    fn segment(&self, c: usize, r: usize) -> std::ops::Range<usize> {
        let at = c * (self.num_ranges + 1) + r;
        let first = c * self.chunk_edges;
        first + self.starts[at] as usize..first + self.starts[at + 1] as usize
    }
}

/// `out = edge_softmax(logits)` over each destination's in-edges, with
/// `row_len` floats per edge, in the walk order `chunks` of the graph's
/// edge destinations (see the module docs).
pub fn edge_softmax_ranges(
    chunks: &RangeChunks,
    logits: &[f32],
    row_len: usize,
    out: &mut [f32],
) -> Result<(), KernelError> {
    let (e, d) = (chunks.num_edges(), row_len);
    check_len("edge_softmax logits elements", e * d, logits.len())?;
    check_len("edge_softmax output elements", e * d, out.len())?;
    if e == 0 || d == 0 {
        return Ok(());
    }
    let out = SharedMut::new(out);
    let level = crate::isa::active_level();
    crate::isa::with_token(level, WithWide { p: Passes { chunks, x: logits, d, out }, level });
    Ok(())
}

/// Takes the level's own (widest) token, then runs the passes on the
/// narrowest one covering a row ([`crate::isa::with_row_token`]), keeping
/// the wide one for the exponentials of whole segments (`Ranges`).
struct WithWide<'a> {
    p: Passes<'a>,
    level: crate::isa::IsaLevel,
}

impl Task for WithWide<'_> {
    type Output = ();
    fn run<W: Simd>(self, wide: W) {
        crate::isa::with_row_token(self.level, self.p.d, Narrow { p: self.p, wide });
    }
}

/// The passes with the level's wide token `W`, run on the row token.
struct Narrow<'a, W> {
    p: Passes<'a>,
    wide: W,
}

#[derive(Clone, Copy)]
struct Passes<'a> {
    chunks: &'a RangeChunks,
    x: &'a [f32],
    d: usize,
    out: SharedMut<f32>,
}

impl<W: Simd> Task for Narrow<'_, W> {
    type Output = ();
    fn run<S: Simd>(self, s: S) {
        let (p, w) = (self.p, self.wide);
        // A row length known at compile time (the usual head counts) takes
        // the per-row vector loop, its length checks and the table-row
        // multiply out of the three passes, which do a few instructions per
        // row: on the model-167 Xeon VM, 2^20 / 2^24, `[E, 1]` 1.33–1.43×
        // and `[E, 4]` 1.22–1.38× faster at kernel level, `[E, 4]` 1.16–1.26×
        // end to end (perf-reports/ablation/2026-11-28_xeon-m167_softmax-ranges-const-rows.tsv).
        match p.d {
            1 => p.passes::<S, W, 1>(s, w),
            2 => p.passes::<S, W, 2>(s, w),
            4 => p.passes::<S, W, 4>(s, w),
            8 => p.passes::<S, W, 8>(s, w),
            16 => p.passes::<S, W, 16>(s, w),
            _ => p.passes::<S, W, RUN_TIME>(s, w),
        }
    }
}

/// The `D` of a pass whose row length is `Passes::d`, known at run time only.
const RUN_TIME: usize = 0;

impl Passes<'_> {
    /// The row length: `D`, or `self.d` where `D` is [`RUN_TIME`].
    #[inline(always)]
    fn row_len<const D: usize>(&self) -> usize {
        if D == RUN_TIME { self.d } else { D }
    }

    fn passes<S: Simd, W: Simd, const D: usize>(self, s: S, wide: W) {
        let c = self.chunks;
        let copy = || aligned_filled(c.chunk_edges * self.d, 0f32);
        (0..c.num_chunks())
            .into_par_iter()
            .for_each_init(copy, |copy, k| s.vectorize(Gather::<D> { p: self, chunk: k, copy: SharedMut::new(copy) }));
        let bounds = balanced_bounds(c.num_ranges, num_parts(c.num_edges() * self.d), |r| c.range_edges[r]);
        bounds.par_windows(2).for_each(|w| s.vectorize(Ranges::<W, D> { p: self, wide, ranges: w[0]..w[1] }));
        (0..c.num_chunks())
            .into_par_iter()
            .for_each_init(copy, |copy, k| s.vectorize(Scatter::<D> { p: self, chunk: k, copy: SharedMut::new(copy) }));
    }
}

/// Copies `d` floats from `from` to `to` by vectors.
///
/// # Safety
/// `from` readable and `to` writable for `d` floats.
#[inline(always)]
unsafe fn copy_row<S: Simd>(s: S, from: *const f32, to: *mut f32, d: usize) {
    let mut j = 0;
    while j < d {
        let len = S::LANES.min(d - j);
        // SAFETY: `j + len <= d`, forwarded from the caller.
        unsafe { store(s, to.add(j), load(s, from.add(j), len), len) };
        j += len;
    }
}

struct Gather<'a, const D: usize> {
    p: Passes<'a>,
    chunk: usize,
    /// This worker's `chunk_edges × d` floats.
    copy: SharedMut<f32>,
}

impl<const D: usize> Task for Gather<'_, D> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let (c, d, x) = (self.p.chunks, self.p.row_len::<D>(), self.p.x.as_ptr());
        let std::ops::Range { start: first, end } = c.chunk(self.chunk);
        // The copy below reads the chunk's rows in walk order, which on
        // the uniform graph sweeps the chunk once per range at a ~1 KiB
        // stride: an order the hardware prefetchers do not follow from
        // DRAM. Asking for every line first, in address order, lets the
        // chunk (half the cache budget) stream in. On the model-167 Xeon
        // VM, 2^20 / 2^24 with 4 heads, end to end: uniform 164–170 →
        // 153–157 ms, RMAT 149–152 → 145–147; `[E, 1]` level at kernel
        // level (perf-reports/ablation/2026-11-28_xeon-m167_softmax-ranges-const-rows.tsv,
        // sections D and E).
        prefetch_rows(s, &[x], first * d, (end - first) * d);
        // SAFETY: `build` gave each position `i` of this chunk a local id
        // below the chunk's length, so `first + local < E` and the logits row
        // is inside the checked `E·d`; the worker's copy holds the chunk's
        // `(end − first)·d <= chunk_edges·d` floats; the chunk's rows
        // `first·d .. end·d` of `out` belong to this task (chunks are disjoint).
        unsafe {
            for i in first..end {
                let from = x.add((first + *c.local.get_unchecked(i) as usize) * d);
                copy_row(s, from, self.copy.at((i - first) * d), d);
            }
            stream_floats(s, self.copy.at(0), self.p.out.at(first * d), (end - first) * d);
        }
    }
}

/// Copies `n` floats from `from` to `to`, the whole vectors at aligned
/// addresses by non-temporal stores: the gathered chunk goes to `out`
/// without `out`'s lines being read for ownership first (on the model-167
/// Xeon VM the uniform graph's gather took 51–57 ms instead of 73, RMAT's
/// was level; docs/PERFORMANCE.md, "Edge softmax over destination ranges").
///
/// # Safety
/// `from` readable and `to` writable for `n` floats, not overlapping.
#[inline(always)]
unsafe fn stream_floats<S: Simd>(s: S, from: *const f32, to: *mut f32, n: usize) {
    let lanes = S::LANES;
    // `to` is a float pointer, so fewer than LANES floats reach alignment.
    let head = (0..lanes.min(n)).find(|&j| (to.wrapping_add(j) as usize).is_multiple_of(4 * lanes)).unwrap_or(n);
    let body = head + (n - head) / lanes * lanes;
    // SAFETY: every index is below `n`, forwarded from the caller; the
    // streamed vectors start at `head`, aligned to `4·LANES` bytes, and
    // step by whole vectors.
    unsafe {
        for j in (0..head).chain(body..n) {
            *to.add(j) = *from.add(j);
        }
        for j in (head..body).step_by(lanes) {
            s.stream(to.add(j), s.load(from.add(j)));
        }
    }
    s.store_fence();
}

struct Ranges<'a, W, const D: usize> {
    p: Passes<'a>,
    wide: W,
    ranges: std::ops::Range<usize>,
}

impl<W: Simd, const D: usize> Task for Ranges<'_, W, D> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let (c, d) = (self.p.chunks, self.p.row_len::<D>());
        let rows = c.rows_per_range();
        let mut table = aligned_filled(rows * 2 * d, 0f32);
        for r in self.ranges {
            let base = r * rows;
            let live = rows.min(c.num_dst - base);
            table[..live * 2 * d].chunks_exact_mut(2 * d).for_each(|row| {
                row[..d].fill(f32::NEG_INFINITY);
                row[d..].fill(0.0);
            });
            let t = table.as_mut_ptr();
            // SAFETY: walk positions `i` of range `r` are below E, so rows
            // `i·d .. i·d + d` are inside the checked `out`, and only this
            // task touches range `r`'s positions; their destinations lie in
            // `base .. base + live` (`build` put them in range `r`, and they
            // are below `num_dst`), so their offsets `row[i] = v − base` are
            // below `live` and table rows `row[i]·2d` of `2d` floats are
            // inside `table`.
            unsafe {
                let row_of = |i: usize| t.add(*c.row.get_unchecked(i) as usize * 2 * d);
                each_position(c, r, |i| {
                    let (m, o) = (row_of(i), self.p.out.at(i * d));
                    each_vector::<S>(d, |j, len| {
                        store(s, m.add(j), s.max(load(s, m.add(j), len), load(s, o.add(j), len)), len);
                    });
                });
                if W::LANES > S::LANES {
                    // Rows narrower than the level's widest vector: a
                    // segment's rows are contiguous in `out`, so its
                    // exponentials (~20 operations a vector) run on whole
                    // wide vectors, between a subtract and a sum on the row
                    // vector; the segment (~8 KiB at 4 heads on 2^24 edges)
                    // stays in L1 for the three.
                    // Bitwise the same per lane. On the model-167 Xeon VM,
                    // 2^20 / 2^24: `[E, 1]` 1.15–1.30× and `[E, 4]`
                    // 1.03–1.14× faster at kernel level, `[E, 4]` 1.01–1.09×
                    // end to end
                    // (perf-reports/ablation/2026-11-28_xeon-m167_softmax-ranges-wide-exp.tsv).
                    for k in 0..c.num_chunks() {
                        let seg = c.segment(k, r);
                        for i in seg.clone() {
                            let (m, o) = (row_of(i), self.p.out.at(i * d));
                            each_vector::<S>(d, |j, len| {
                                store(s, o.add(j), s.sub(load(s, o.add(j), len), load(s, m.add(j), len)), len);
                            });
                        }
                        let floats = self.p.out.at(seg.start * d);
                        self.wide.vectorize(ExpInPlace { floats, len: seg.len() * d });
                        for i in seg {
                            let (m, o) = (row_of(i), self.p.out.at(i * d));
                            each_vector::<S>(d, |j, len| {
                                store(s, m.add(d + j), s.add(load(s, m.add(d + j), len), load(s, o.add(j), len)), len);
                            });
                        }
                    }
                } else {
                    each_position(c, r, |i| {
                        let (m, o) = (row_of(i), self.p.out.at(i * d));
                        each_vector::<S>(d, |j, len| {
                            let ex = exp_nonpositive(s, s.sub(load(s, o.add(j), len), load(s, m.add(j), len)));
                            store(s, o.add(j), ex, len);
                            store(s, m.add(d + j), s.add(load(s, m.add(d + j), len), ex), len);
                        });
                    });
                }
                each_position(c, r, |i| {
                    let (m, o) = (row_of(i), self.p.out.at(i * d));
                    each_vector::<S>(d, |j, len| {
                        store(s, o.add(j), s.div(load(s, o.add(j), len), load(s, m.add(d + j), len)), len);
                    });
                });
            }
        }
    }
}

/// `x = exp(x)` for the `len` floats at `floats`, all `<= 0`
/// ([`exp_nonpositive`]), by whole vectors and a partial last one.
///
/// Invariant (only `Ranges` builds one): `floats` is writable for `len`
/// floats that no other thread touches while the task runs.
struct ExpInPlace {
    floats: *mut f32,
    len: usize,
}

impl Task for ExpInPlace {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        // SAFETY: every vector lies in `0..len` (`each_vector`), writable
        // and this task's alone by the type's invariant: `Ranges` hands one
        // segment's rows of `out`, which only its range's task touches.
        each_vector::<S>(self.len, |j, len| unsafe {
            let at = self.floats.add(j);
            store(s, at, exp_nonpositive(s, load(s, at, len)), len);
        });
    }
}

/// Calls `f(i)` for every walk position `i` of range `r`, segment by segment.
#[inline(always)]
fn each_position(c: &RangeChunks, r: usize, mut f: impl FnMut(usize)) {
    for k in 0..c.num_chunks() {
        for i in c.segment(k, r) {
            f(i);
        }
    }
}

/// Calls `f(j, len)` for the vectors `j .. j + len` of a `d`-float row.
#[inline(always)]
fn each_vector<S: Simd>(d: usize, mut f: impl FnMut(usize, usize)) {
    let mut j = 0;
    while j < d {
        let len = S::LANES.min(d - j);
        f(j, len);
        j += len;
    }
}

struct Scatter<'a, const D: usize> {
    p: Passes<'a>,
    chunk: usize,
    /// This worker's `chunk_edges × d` floats.
    copy: SharedMut<f32>,
}

impl<const D: usize> Task for Scatter<'_, D> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let (c, d) = (self.p.chunks, self.p.row_len::<D>());
        let std::ops::Range { start: first, end } = c.chunk(self.chunk);
        // SAFETY: the chunk's rows `first·d .. end·d` of `out` belong to this
        // task (chunks are disjoint) and fit the worker's copy of
        // `chunk_edges·d` floats; `first + local < end` for each position
        // (`build`), so every write stays inside the chunk.
        unsafe {
            std::ptr::copy_nonoverlapping(self.p.out.at(first * d), self.copy.at(0), (end - first) * d);
            for i in first..end {
                let to = self.p.out.at((first + *c.local.get_unchecked(i) as usize) * d);
                copy_row(s, self.copy.at((i - first) * d), to, d);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_hold_every_edge_once_by_range_in_id_order() {
        let e = 5_000usize;
        // The last shape asks for more destinations per range than a `u16`
        // offset holds: it gets `MAX_RANGE_ROWS`, so 70,000 destinations make two
        // ranges, and offsets up to 2^16 − 1 are stored.
        for (n, rows, chunk) in [
            (37, 1, 7),
            (37, 4, 64),
            (37, 8, 1000),
            (37, 64, 5_000),
            (37, 3, MAX_CHUNK_EDGES + 9),
            (70_000, 1 << 20, 512),
        ] {
            let ids: Vec<i32> = (0..e).map(|i| ((i * 2_654_435_761usize) % n) as i32).collect();
            // SAFETY: every id is below `n`.
            let dst = unsafe { EdgeDst::new_unchecked(&ids, n) };
            let w = RangeChunks::build(dst, rows, chunk);
            assert_eq!(w.rows_per_range(), rows.min(MAX_RANGE_ROWS).next_power_of_two());
            assert_eq!(w.num_ranges(), n.div_ceil(w.rows_per_range()));
            assert_eq!(w.chunk_edges(), chunk.min(MAX_CHUNK_EDGES));
            let mut seen = vec![false; e];
            for r in 0..w.num_ranges() {
                let mut prev = None;
                let mut count = 0;
                for k in 0..w.num_chunks() {
                    for i in w.segment(k, r) {
                        let id = k * w.chunk_edges() + w.local[i] as usize;
                        assert!(!seen[id], "edge {id} twice");
                        seen[id] = true;
                        let v = r * w.rows_per_range() + w.row[i] as usize;
                        assert_eq!(v, ids[id] as usize, "destination of edge {id}");
                        assert!(prev < Some(id), "range {r} in ascending edge id");
                        prev = Some(id);
                        count += 1;
                    }
                }
                assert_eq!(w.range_edges[r + 1] - w.range_edges[r], count, "edges of range {r}");
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn shape_keeps_a_range_in_l2_down_to_the_shortest_segment() {
        let half = cache_budget() / 2;
        let l2 = CacheInfo::get().l2;
        for row_len in [1, 4, 16] {
            let row_bytes = 4 * row_len;
            for (num_edges, num_dst) in [(1 << 24, 1 << 20), (1 << 20, 1 << 20), (1 << 24, 1 << 10), (0, 1 << 20)] {
                let (rows, chunk) = softmax_ranges_shape(row_len, num_edges, num_dst);
                let case = format!("{row_len} floats, {num_edges} edges into {num_dst}: {rows} x {chunk}");
                assert!(rows.is_power_of_two() && rows <= MAX_RANGE_ROWS, "{case}");
                assert_eq!(chunk, (half / row_bytes).clamp(1, MAX_CHUNK_EDGES), "{case}");
                assert!(rows == 1 || rows * 2 * row_bytes <= half, "table slice within half the budget: {case}");
                // Doubling the range would break one of the three caps:
                // the table, the L2 (above the shortest segment), 2^16.
                let next = 2 * rows;
                let range_bytes = |r: usize| num_edges as f64 / num_dst as f64 * r as f64 * (row_bytes + 2) as f64;
                let short_segments = |r: usize| chunk * r < MIN_SEGMENT_ROWS * num_dst;
                let l2_bound = range_bytes(next) > l2 as f64 && !short_segments(rows);
                assert!(
                    next * 2 * row_bytes > half || next > MAX_RANGE_ROWS || l2_bound,
                    "a range of {next} destinations would fit: {case}"
                );
                if range_bytes(rows) > l2 as f64 {
                    assert!(rows == 1 || short_segments(rows / 2), "a range past the L2 above the floor: {case}");
                }
            }
        }
    }
}
