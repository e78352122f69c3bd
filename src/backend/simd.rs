//! The hand-tuned CPU backend: `gnnkern-simd`'s kernel templates behind
//! [`Backend`].
//!
//! This adapter only maps validated calls onto the kernels and owns the
//! per-graph caches the kernels need, stored with [`Graph::cached`]:
//! - the source-blocked layout ([`BlockedCsr`]) for each block size the
//!   traffic model picked, built on first use (DGL rebuilds its blocks on
//!   every call); its memory is reported by [`cache_bytes`];
//! - the CSR that g-SDDMM walks ([`SddmmOrder`]), decided once per graph.
//!
//! The ISA level is read by the kernels on the calling thread
//! (`GNNKERN_ISA`, [`gnnkern_simd::isa::with_level`]); blocking and tiling
//! follow [`gnnkern_simd::tuning::with_tuning`].

use super::{Backend, BackendKind, EdgeSoftmaxBackwardCall, EdgeSoftmaxCall, SddmmCall, SpmmCall};
use crate::graph::Graph;
use crate::{Error, Index, Result};
use gnnkern_simd::KernelError;
use gnnkern_simd::kernels::{self, BlockedCsr, SddmmArgs, SddmmOrder, SpmmArgs};
use gnnkern_simd::op::{BinaryOp, Reducer};
use std::sync::{Arc, Mutex};

/// The SIMD backend (AVX-512 / AVX2 / portable, chosen per call).
#[derive(Clone, Copy, Debug, Default)]
pub struct Simd;

/// Blocked layouts of one graph orientation, one per block size used.
struct BlockCache<I: Index> {
    layouts: Mutex<Vec<Arc<BlockedCsr<I>>>>,
}

/// The CSR g-SDDMM walks on one graph orientation.
struct SddmmOrderCache(SddmmOrder);

/// Heap bytes of the blocked layouts this backend has cached for `graph`
/// (its orientation), 0 if none was built.
pub fn cache_bytes<I: Index>(graph: &Graph<I>) -> usize {
    graph
        .cached(|| Ok(BlockCache::<I> { layouts: Mutex::new(Vec::new()) }))
        .map(|c| lock(&c.layouts).iter().map(|l| l.bytes()).sum())
        .unwrap_or(0)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The cached layout of `graph`'s in-CSR with `block_sources` per block.
fn blocked_layout<I: Index>(graph: &Graph<I>, block_sources: usize) -> Result<Arc<BlockedCsr<I>>> {
    let cache = graph.cached(|| Ok(BlockCache::<I> { layouts: Mutex::new(Vec::new()) }))?;
    let mut layouts = lock(&cache.layouts);
    if let Some(l) = layouts.iter().find(|l| l.block_sources() == block_sources) {
        return Ok(Arc::clone(l));
    }
    let layout = Arc::new(BlockedCsr::build(&graph.in_csr().view(), block_sources));
    log::debug!(
        "built blocked layout: {} blocks of {} sources, {} bytes",
        layout.num_blocks(),
        block_sources,
        layout.bytes()
    );
    layouts.push(Arc::clone(&layout));
    Ok(layout)
}

/// A kernel argument error: validation upstream should make this unreachable.
fn kernel_error(e: KernelError) -> Error {
    Error::LengthMismatch { what: e.what, expected: e.expected, actual: e.actual }
}

impl Backend for Simd {
    const KIND: BackendKind = BackendKind::Simd;

    fn gspmm<O: BinaryOp, R: Reducer, I: Index>(&self, call: SpmmCall<'_, I>) -> Result<()> {
        let SpmmCall { graph, lhs_target, rhs_target, plan, lhs, rhs, out, arg_u, arg_e } = call;
        let args = SpmmArgs { csr: graph.in_csr().view(), lhs_target, rhs_target, plan, lhs, rhs, out, arg_u, arg_e };
        let layout = match kernels::spmm_blocking::<O, I>(&args) {
            Some(p) => Some((blocked_layout(graph, p.block_sources)?, p.tile_bytes)),
            None => None,
        };
        kernels::spmm::<O, R, I>(args, layout.as_ref().map(|(l, tile)| (&**l, *tile))).map_err(kernel_error)
    }

    fn gsddmm<O: BinaryOp, I: Index>(&self, call: SddmmCall<'_, I>) -> Result<()> {
        let SddmmCall { graph, lhs_target, rhs_target, plan, lhs, rhs, out } = call;
        let order = graph
            .cached(|| Ok(SddmmOrderCache(kernels::sddmm_order(&graph.in_csr().view(), &graph.out_csr().view()))))?
            .0;
        let csr = match order {
            SddmmOrder::InCsr => graph.in_csr().view(),
            SddmmOrder::OutCsr => graph.out_csr().view(),
        };
        kernels::sddmm::<O, I>(SddmmArgs { csr, order, lhs_target, rhs_target, plan, lhs, rhs, out })
            .map_err(kernel_error)
    }

    fn edge_softmax<I: Index>(&self, call: EdgeSoftmaxCall<'_, I>) -> Result<()> {
        let EdgeSoftmaxCall { graph, logits, row_len, out } = call;
        kernels::edge_softmax(graph.in_csr().view(), logits, row_len, out).map_err(kernel_error)
    }

    fn edge_softmax_backward<I: Index>(&self, call: EdgeSoftmaxBackwardCall<'_, I>) -> Result<()> {
        let EdgeSoftmaxBackwardCall { graph, out, grad_out, row_len, grad_logits } = call;
        kernels::edge_softmax_backward(graph.in_csr().view(), out, grad_out, row_len, grad_logits).map_err(kernel_error)
    }
}
