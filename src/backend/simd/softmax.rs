//! Edge softmax's schemes on the SIMD backend: row order (plain or
//! streamed stores), two phases, and destination ranges, chosen by the
//! timed trials.
//!
//! The three schemes are bitwise identical only if every destination sees
//! its edges in the same order. The range scheme visits them in ascending
//! edge id (`gnnkern_simd::kernels::edge_softmax_ranges`), while this
//! crate's in-CSR sorts each row by (source, edge id). So where the model
//! nominates the other schemes (`prefers_edge_order`: graphs larger than
//! the cache), all of them run over [`EdgeOrderedRows`], the in-CSR's rows
//! with their edges in ascending id, and the trials may choose by timing.
//! Where the model nominates neither (smaller graphs, and rows too wide for
//! a node table), row order runs over the in-CSR, building nothing; if its
//! output exceeds the cache in whole lines, a trial times it with plain
//! against streamed stores (`SoftmaxNominee::Streamed`), otherwise untried.

use super::trials::{self, Signature, SoftmaxNominee};
use super::{LAST_PASS, PassKind, lock};
use crate::graph::Graph;
use crate::op::Target;
use crate::{Error, Index, Result};
use gnnkern_simd::kernels::{self, RangeChunks};
use gnnkern_simd::layout::{CsrView, EdgeDst};
use gnnkern_simd::tuning::{Streaming, Tuning, active_tuning, cache_budget, with_tuning};
use std::any::TypeId;
use std::sync::{Arc, Mutex};

/// The in-CSR's rows with their edges in ascending edge id (`None`: the
/// in-CSR's rows are in that order already). Cached per graph orientation;
/// `2E` indices plus the row offsets.
pub(super) struct EdgeOrderedRows<I: Index>(Option<(Vec<I>, Vec<I>)>);

impl<I: Index> EdgeOrderedRows<I> {
    fn build(graph: &Graph<I>) -> Self {
        Self(graph.in_csr().rows_by_edge_id())
    }

    /// The rows as the kernels' view.
    fn view<'g>(&'g self, graph: &'g Graph<I>) -> CsrView<'g, I> {
        let csr = graph.in_csr();
        match &self.0 {
            None => csr.view(),
            // SAFETY: `Csr::rows_by_edge_id` permuted the (column, edge id)
            // pairs within each row of the validated in-CSR: the offsets are its own, every
            // column is still below `num_cols`, and the edge ids are still a
            // permutation.
            Some((indices, eids)) => unsafe { CsrView::new_unchecked(csr.indptr(), indices, eids, csr.num_cols()) },
        }
    }

    /// Heap bytes (0 where the in-CSR serves).
    pub(super) fn bytes(&self) -> usize {
        self.0.as_ref().map_or(0, |(i, e)| (i.len() + e.len()) * std::mem::size_of::<I>())
    }
}

/// The range scheme's walk orders of one graph orientation, one per row
/// length it ran with (the shape follows the row length); dropped when no
/// trial keeps or times the scheme.
#[derive(Default)]
pub(super) struct RangeCache(pub(super) Mutex<Vec<(usize, Arc<RangeChunks>)>>);

/// The cached walk order for rows of `row_len` floats.
fn range_chunks<I: Index>(graph: &Graph<I>, row_len: usize) -> Result<Arc<RangeChunks>> {
    let cache = graph.cached(|| Ok(RangeCache::default()))?;
    let (_, w) = super::cached_entry(
        &cache.0,
        |(len, _)| *len == row_len,
        || {
            let (rows, chunk) = kernels::softmax_ranges_shape(row_len, graph.num_edges(), graph.num_dst());
            let w = Arc::new(RangeChunks::build(graph.edge_dst(), rows, chunk));
            log::debug!(
                "built softmax ranges: {} ranges of {rows} destinations, chunks of {chunk}, {} bytes",
                w.num_ranges(),
                w.bytes()
            );
            (row_len, w)
        },
    );
    Ok(w)
}

/// Marks edge softmax's forward and backward in trial signatures.
struct Forward;
struct Backward;

fn signature<K: 'static>(d: usize) -> Signature {
    Signature {
        kernel: TypeId::of::<K>(),
        lhs: Target::Edge,
        rhs: Target::Edge,
        lhs_len: d,
        rhs_len: d,
        out_len: d,
        args: false,
    }
}

/// `out = edge_softmax(logits)`: row order on graphs within the cache,
/// else the scheme the trial keeps among row order, two phases and
/// destination ranges. Where those two are not nominated (wide rows) but
/// the output exceeds the cache in whole lines, the trial is row order with
/// plain stores against row order with its output streamed.
pub(super) fn forward<I: Index>(graph: &Graph<I>, logits: &[f32], d: usize, out: &mut [f32]) -> Result<()> {
    let tuning = active_tuning();
    let edge_order = kernels::prefers_edge_order(graph.num_dst(), graph.num_edges(), d, 2 * d);
    let streamed = !edge_order
        && tuning.streaming == Streaming::Auto
        && out.len().saturating_mul(4) > cache_budget()
        && kernels::softmax_may_stream(d, out);
    let nominees: &[SoftmaxNominee] = match (edge_order, streamed) {
        (true, _) => &[SoftmaxNominee::TwoPhase, SoftmaxNominee::Ranges],
        (false, true) => &[SoftmaxNominee::Streamed],
        (false, false) => &[],
    };
    // Row order's stores when it runs as the plain candidate of a trial of
    // streamed ones: plain; otherwise as the caller's tuning says.
    let row_order_stores = if streamed { Streaming::Off } else { tuning.streaming };
    let row_order_pass = if row_order_stores == Streaming::On && kernels::softmax_may_stream(d, out) {
        PassKind::RowOrderStreamed
    } else {
        PassKind::RowOrder
    };
    let rows = if edge_order { Some(graph.cached(|| Ok(EdgeOrderedRows::build(graph)))?) } else { None };
    let csr = rows.as_ref().map_or_else(|| graph.in_csr().view(), |rows| rows.view(graph));
    let decided = trials::run_nominees(graph, signature::<Forward>(d), nominees, &mut |choice| match choice {
        None | Some(SoftmaxNominee::Streamed) => {
            let (pass, streaming) = match choice {
                None => (row_order_pass, row_order_stores),
                Some(_) => (PassKind::RowOrderStreamed, Streaming::On),
            };
            LAST_PASS.with(|c| c.set(Some(pass)));
            with_tuning(Tuning { streaming, ..tuning }, || kernels::edge_softmax(csr, None, logits, d, out))
                .map_err(Error::from)
        }
        Some(SoftmaxNominee::TwoPhase) => {
            // The COO is built only when a scheme that reads it runs.
            LAST_PASS.with(|c| c.set(Some(PassKind::TwoPhase)));
            kernels::edge_softmax(csr, Some(graph.edge_dst()), logits, d, out).map_err(Error::from)
        }
        Some(SoftmaxNominee::Ranges) => {
            let walk = range_chunks(graph, d)?;
            LAST_PASS.with(|c| c.set(Some(PassKind::Ranges { num_ranges: walk.num_ranges() })));
            kernels::edge_softmax_ranges(&walk, logits, d, out).map_err(Error::from)
        }
    })?;
    if edge_order
        && decided.is_some()
        && !trials::nominee_in_use::<I, SoftmaxNominee>(graph, |p| *p == SoftmaxNominee::Ranges)
        && let Some(cache) = graph.cached_if_built::<RangeCache>()
    {
        lock(&cache.0).clear();
    }
    Ok(())
}

/// `grad_logits` of edge softmax: row order on graphs within the cache,
/// else row order or two phases as the trial decides. Both sum in the
/// in-CSR's order, so the backward needs no other rows.
pub(super) fn backward<I: Index>(
    graph: &Graph<I>,
    (y, g): (&[f32], &[f32]),
    d: usize,
    grad_logits: &mut [f32],
) -> Result<()> {
    let nominees: &[SoftmaxNominee] = if kernels::prefers_edge_order(graph.num_dst(), graph.num_edges(), d, d) {
        &[SoftmaxNominee::TwoPhase]
    } else {
        &[]
    };
    trials::run_nominees(graph, signature::<Backward>(d), nominees, &mut |choice| {
        let dst: Option<EdgeDst<'_, I>> = choice.map(|_| graph.edge_dst());
        LAST_PASS.with(|c| c.set(Some(if dst.is_some() { PassKind::TwoPhase } else { PassKind::RowOrder })));
        kernels::edge_softmax_backward(graph.in_csr().view(), dst, y, g, d, grad_logits).map_err(Error::from)
    })
    .map(drop)
}
