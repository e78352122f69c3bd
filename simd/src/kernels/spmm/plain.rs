//! The plain pass: nnz-balanced row ranges per task, each row's chunks
//! reduced in registers and stored once (streamed when the output exceeds
//! the cache), arg ids looked up after the row.

use super::reduce::reduce_chunk;
use super::{Acc, Chunk, Chunks, Ctx, gather_ids};
use crate::Index;
use crate::isa::{Simd, Task};
use crate::kernels::common::{EdgeIds, Slot, balanced_bounds, dot, num_parts, split_opt, split_rows, store_or_stream};
use crate::op::{BinaryOp, Reducer};
use rayon::prelude::*;
use std::marker::PhantomData;

/// How far ahead (in CSR slots) the arg outputs' id lookup prefetches its
/// ids: 1 KiB of i32 ids (16 lines), ~16 rows of a degree-16 graph. 64, 128
/// and 256 slots measured within noise of each other
/// (`perf-reports/ablation/2026-11-25_zen5_max-ordered-step.tsv`).
const ARG_ID_PREFETCH: usize = 256;

/// Runs every row of `ctx.csr` in one pass: nnz-balanced row ranges, one
/// task each, entered through the ISA's `vectorize`.
pub(super) fn plain_pass<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    out: &mut [f32],
    arg_u: Option<&mut [I]>,
    arg_e: Option<&mut [I]>,
) {
    let csr = ctx.csr;
    let n = csr.num_rows();
    let indptr = csr.indptr();
    let bounds = balanced_bounds(n, num_parts(csr.num_edges() + n), |i| indptr[i].to_usize() + i);
    let outs = split_rows(out, &bounds, ctx.out_len);
    let us = split_opt(arg_u, &bounds, ctx.out_len);
    let es = split_opt(arg_e, &bounds, ctx.out_len);
    let tasks: Vec<_> = (0..outs.len())
        .zip(outs)
        .zip(us.into_iter().zip(es))
        .map(|((p, out), (arg_u, arg_e))| PlainRows::<O, R, I, ARGS> {
            ctx: *ctx,
            rows: bounds[p]..bounds[p + 1],
            out,
            arg_u,
            arg_e,
            _ops: PhantomData,
        })
        .collect();
    tasks.into_par_iter().for_each(|t| {
        s.vectorize(t);
    });
}

struct PlainRows<'a, 'b, O, R, I: Index, const ARGS: bool> {
    ctx: Ctx<'a, I>,
    rows: std::ops::Range<usize>,
    out: &'b mut [f32],
    arg_u: Option<&'b mut [I]>,
    arg_e: Option<&'b mut [I]>,
    _ops: PhantomData<(O, R)>,
}

impl<O: BinaryOp, R: Reducer, I: Index, const ARGS: bool> Task for PlainRows<'_, '_, O, R, I, ARGS> {
    type Output = ();
    #[inline(always)]
    fn run<S: Simd>(self, s: S) {
        let PlainRows { ctx, rows, out, mut arg_u, mut arg_e, .. } = self;
        let len = ctx.out_len;
        for v in rows.clone() {
            let edges = ctx.csr.row_range(v);
            let base = (v - rows.start) * len;
            let out_row = &mut out[base..base + len];
            let mut sink = ArgSink::<I> {
                ids: ctx.ids,
                arg_u: arg_u.as_deref_mut().map(|a| &mut a[base..base + len]),
                arg_e: arg_e.as_deref_mut().map(|a| &mut a[base..base + len]),
            };
            if R::HAS_ARG && edges.is_empty() {
                out_row.fill(0.0);
                sink.fill_none();
                continue;
            }
            if ARGS {
                // The edge ids the arg lookup of a later row reads: a copy_u
                // pass never touches `eids` otherwise, and a gather stalls on
                // a cold line (the source ids are read by every edge anyway).
                s.prefetch(ctx.ids.eids.as_ptr().wrapping_add(edges.start + ARG_ID_PREFETCH).cast());
            }
            if O::REDUCES_LAST_DIM {
                dot_row::<O, R, I, S, ARGS>(s, &ctx, v, edges, out_row, &mut sink);
            } else {
                for chunk in Chunks::of(&ctx) {
                    // SAFETY: `out_row` has `out_len` elements and every slot
                    // of the checked plan lies inside it; the edges are a row
                    // of the validated CSR.
                    unsafe { plain_chunk::<O, R, I, S, ARGS>(s, &ctx, v, edges.clone(), chunk, out_row, &mut sink) }
                }
            }
        }
        if ctx.stream_out {
            // The task's streamed rows are visible before it reports done.
            s.store_fence();
        }
    }
}

/// # Safety
/// As for [`super::gather::accumulate`]; `out_row` is the row's `out_len` outputs.
#[inline(always)]
unsafe fn plain_chunk<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    chunk: Chunk<'_>,
    out_row: &mut [f32],
    sink: &mut ArgSink<'_, I>,
) {
    macro_rules! run {
        ($v:literal) => {{
            let slots: &[Slot; $v] = chunk.0.try_into().expect("chunk sizes are 1, 2, 4 or 8");
            // A lane no message replaces (all were the identity, ±inf) is
            // won by the row's first edge, as in the reference: ordinal 0.
            let mut acc = Acc::<S, $v>::new(s, [s.splat(R::IDENTITY); $v], [s.splat_i32(0); $v], 0);
            // SAFETY: forwarded from the caller.
            unsafe { reduce_chunk::<O, R, I, S, $v, ARGS>(s, ctx, v, edges.clone(), slots, &mut acc) };
            let deg = edges.len();
            for i in 0..$v {
                let sl = slots[i];
                let mut val = acc.val[i];
                if R::DIVIDES_BY_DEGREE && deg > 0 {
                    val = s.div(val, s.splat(deg as f32));
                }
                // SAFETY: the slot lies inside `out_row` (checked plan).
                unsafe { store_or_stream(s, out_row.as_mut_ptr().add(sl.out), val, sl.len, ctx.stream_out) };
                if ARGS {
                    sink.set_run(s, sl.out, edges.start, acc.ord[i], sl.len);
                }
            }
        }};
    }
    match chunk.0.len() {
        8 => run!(8),
        4 => run!(4),
        2 => run!(2),
        _ => run!(1),
    }
}

/// A row of a reducing operator (dot): each output is a K-long dot product
/// per edge, reduced over the row in scalar form.
#[inline(always)]
fn dot_row<O: BinaryOp, R: Reducer, I: Index, S: Simd, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    out_row: &mut [f32],
    sink: &mut ArgSink<'_, I>,
) {
    let indices = ctx.ids.cols;
    for sl in ctx.slots {
        let mut acc = R::IDENTITY;
        let mut best: Option<usize> = None;
        for k in edges.clone() {
            // SAFETY: `k` is a slot of the row, hence of `ctx.ids`.
            let (u, e) = (indices[k].to_usize(), unsafe { ctx.edge_row(k) });
            // SAFETY: ids of `ctx.ids` index operand rows whose lengths
            // `plan_slots` checked; the K-long ranges lie inside them.
            let m =
                unsafe { dot::<O, S>(s, ctx.lhs.row(u, e, v).add(sl.lhs), ctx.rhs.row(u, e, v).add(sl.rhs), sl.len) };
            if R::HAS_ARG {
                if best.is_none() || R::replaces(m, acc) {
                    acc = m;
                    best = Some(k);
                }
            } else {
                acc += m;
            }
        }
        out_row[sl.out] = if R::DIVIDES_BY_DEGREE && !edges.is_empty() { acc / edges.len() as f32 } else { acc };
        if ARGS {
            sink.set(sl.out, best.unwrap_or(edges.start));
        }
    }
}

/// Writes arg outputs (max/min).
struct ArgSink<'a, I: Index> {
    ids: EdgeIds<'a, I>,
    arg_u: Option<&'a mut [I]>,
    arg_e: Option<&'a mut [I]>,
}

impl<I: Index> ArgSink<'_, I> {
    fn fill_none(&mut self) {
        for a in [&mut self.arg_u, &mut self.arg_e].into_iter().flatten() {
            a.fill(I::NONE);
        }
    }

    /// Elements `out .. out + len` were won by the slots `base + ord[l]`
    /// (`len <= LANES`; every `ord[l]` is an ordinal of the row starting
    /// at slot `base`).
    #[inline(always)]
    fn set_run<S: Simd>(&mut self, s: S, out: usize, base: usize, ord: S::I32, len: usize) {
        let (cols, eids) = (&self.ids.cols[base..], &self.ids.eids[base..]);
        for (arg, table) in [(self.arg_u.as_deref_mut(), cols), (self.arg_e.as_deref_mut(), eids)] {
            if let Some(a) = arg {
                // SAFETY: the ordinals index the row's slots, which `table`
                // (from the row's first slot on) holds.
                unsafe { gather_ids(s, table, ord, &mut a[out..out + len]) };
            }
        }
    }

    /// Element `o` was won by slot `k`.
    #[inline(always)]
    fn set(&mut self, o: usize, k: usize) {
        if let Some(a) = self.arg_u.as_deref_mut() {
            a[o] = self.ids.cols[k];
        }
        if let Some(a) = self.arg_e.as_deref_mut() {
            a[o] = self.ids.eids[k];
        }
    }
}
