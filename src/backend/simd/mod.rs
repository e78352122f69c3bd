//! The hand-tuned CPU backend: `gnnkern-simd`'s kernel templates behind
//! [`Backend`].
//!
//! This adapter only maps validated calls onto the kernels and owns the
//! per-graph caches the kernels need, stored with [`Graph::cached`]:
//! - the source-occurrence profile ([`SourceProfile`]) the traffic model
//!   reads, built the first time a call on the graph is large enough for
//!   blocking to be a candidate;
//! - the source-blocked layout ([`BlockedCsr`]) for each block size the
//!   traffic model picked, built on first use (DGL rebuilds its blocks on
//!   every call) and shared by g-SpMM and g-SDDMM; its memory is reported
//!   by [`cache_bytes`];
//! - the edges regrouped ([`EdgePartition`]) for g-SDDMM's edge walk, by
//!   edge-id range when its one-float messages exceed the cache, else by
//!   destination range when the destination rows do, built for its trial
//!   and dropped when no trial keeps the edge walk over that grouping;
//!   reported by [`cache_bytes`] too;
//! - for edge softmax on graphs larger than the cache, the in-CSR's rows
//!   with their edges in ascending id (where they are not already) and the
//!   range scheme's walk order ([`kernels::RangeChunks`], dropped when no
//!   trial keeps it); both reported by [`cache_bytes`];
//! - the timed trials that confirm each blocking choice, edge softmax's
//!   scheme, whether g-SDDMM streams its vector messages or stages its
//!   one-float ones or walks its edges in id order, whether g-SpMM
//!   stages its edge weights, and whether a max/min g-SpMM narrows its
//!   chunks where the ISA's registers are short ([`trials`]);
//! - the CSR that g-SDDMM walks ([`SddmmOrder`]) and whether its edge ids
//!   are scattered along it, decided once per graph;
//! - the records buffer of staged one-float g-SDDMM messages
//!   ([`kernels::StagingBuffer`]), held while the graph's trial keeps the
//!   staged pass, and g-SpMM's staged edge weights with their plan
//!   ([`kernels::EdgeStaging`]), built for the trial and dropped if it
//!   keeps the plain pass; their memory is reported by [`staging_bytes`];
//! - whether the in-CSR's edge ids are scattered along it (g-SpMM's edge
//!   operands are read by edge id), decided once per graph.
//!
//! [`last_pass`] tells which pass the last op on this thread ran.
//!
//! The ISA level is read by the kernels on the calling thread
//! (`GNNKERN_ISA`, [`gnnkern_simd::isa::with_level`]); blocking and tiling
//! follow [`gnnkern_simd::tuning::with_tuning`].

use super::{Backend, BackendKind, EdgeSoftmaxBackwardCall, EdgeSoftmaxCall, SddmmCall, SpmmCall};
use crate::graph::Graph;
use crate::{Error, Index, Result};
use gnnkern_simd::kernels::{self, BlockedCsr, EdgePartition, Grouping, SddmmArgs, SddmmOrder, SpmmArgs};
use gnnkern_simd::layout::CsrView;
use gnnkern_simd::op::{BinaryOp, Reducer};
use gnnkern_simd::tuning::{
    BlockPlan, Blocking, Chunking, SourceProfile, Staging, Streaming, Tuning, active_tuning, with_tuning,
};
use std::any::TypeId;
use std::cell::Cell;
use std::sync::{Arc, Mutex};
use trials::Signature;

mod softmax;
pub mod trials;

/// The SIMD backend (AVX-512 / AVX2 / portable, chosen per call).
#[derive(Clone, Copy, Debug, Default)]
pub struct Simd;

/// Blocked layouts of one graph orientation, one per block size used.
struct BlockCache<I: Index> {
    layouts: Mutex<Vec<Arc<BlockedCsr<I>>>>,
}

impl<I: Index> Default for BlockCache<I> {
    fn default() -> Self {
        Self { layouts: Mutex::new(Vec::new()) }
    }
}

/// g-SDDMM's regrouped edge lists of one graph, one per grouping used.
struct PartitionCache<I: Index> {
    parts: Mutex<Vec<Arc<EdgePartition<I>>>>,
}

impl<I: Index> Default for PartitionCache<I> {
    fn default() -> Self {
        Self { parts: Mutex::new(Vec::new()) }
    }
}

/// Which pass a g-SpMM or g-SDDMM ran, or which scheme an edge softmax ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassKind {
    /// One pass over the CSR.
    Plain,
    /// g-SDDMM: one pass over the CSR, its vector messages written with
    /// non-temporal stores (see [`trials::SddmmNominee::Streamed`]).
    Streamed,
    /// g-SDDMM: one pass over the CSR, its one-float messages staged by
    /// edge-id window; g-SpMM: one pass over the in-CSR after staging its
    /// one-float edge operand by slot window (see [`trials::SddmmNominee::Staged`],
    /// [`trials::SpmmNominee::Staged`]).
    Staged,
    /// Over source blocks of this many sources (see `docs/PERFORMANCE.md`).
    Blocked { block_sources: usize, num_blocks: usize },
    /// g-SpMM max/min: one pass over the CSR with chunks of at most 4
    /// output vectors (see [`trials::ChunkNominee::Narrow`]).
    PlainNarrow,
    /// Edge softmax (or its backward) row by row over the in-CSR.
    RowOrder,
    /// Edge softmax row by row, its output written with non-temporal
    /// stores (see [`trials::SoftmaxNominee::Streamed`]).
    RowOrderStreamed,
    /// Edge softmax (or its backward) in two phases: rows into a node
    /// table, then edges in id order.
    TwoPhase,
    /// Edge softmax over `num_ranges` destination ranges, the logits moved
    /// by chunk of edge ids (see [`trials::SoftmaxNominee::Ranges`]).
    Ranges { num_ranges: usize },
    /// g-SDDMM: one pass over the edges in id order (the COO), its output
    /// written sequentially (see [`trials::SddmmNominee::EdgeOrder`]).
    EdgeOrder,
    /// g-SDDMM: the edge walk over `num_parts` destination ranges, each in
    /// edge-id order ([`Grouping::DestinationRanges`]): the walk
    /// [`trials::SddmmNominee::EdgeOrder`] runs when the destination rows
    /// exceed the cache.
    EdgeParts { num_parts: usize },
    /// g-SDDMM: the edge walk over `num_parts` edge-id ranges, each in the
    /// CSR's row order ([`Grouping::EdgeRanges`]): the walk
    /// [`trials::SddmmNominee::EdgeOrder`] runs when its one-float messages
    /// exceed the cache.
    EdgeRanges { num_parts: usize },
    /// Max/min backward, source gradient of a copy-like message: pulled
    /// over the out-CSR (`gnnkern_simd::kernels::arg_pull`).
    Pulled,
    /// Max/min backward, source gradient of a copy-like message: scattered
    /// by column stripes (`gnnkern_simd::kernels::arg_scatter`, see
    /// [`trials::Scattered`]).
    Scattered,
}

thread_local! {
    static LAST_PASS: Cell<Option<PassKind>> = const { Cell::new(None) };
}

/// The pass the last g-SpMM, g-SDDMM or edge softmax of this thread ran on
/// the SIMD backend, or the last max/min backward's source gradient of a
/// copy-like message (`None` before any).
pub fn last_pass() -> Option<PassKind> {
    LAST_PASS.with(Cell::get)
}

/// Sets this thread's [`last_pass`] from outside this module: the max/min
/// backward in `crate::ops::grad` clears it (`None`) and records the source
/// gradient's kernel.
pub(crate) fn note_pass_kind(kind: Option<PassKind>) {
    LAST_PASS.with(|c| c.set(kind));
}

fn note_pass<I: Index>(layout: Option<(&BlockedCsr<I>, usize)>) {
    let kind = match layout {
        None => PassKind::Plain,
        Some((l, _)) => PassKind::Blocked { block_sources: l.block_sources(), num_blocks: l.num_blocks() },
    };
    LAST_PASS.with(|c| c.set(Some(kind)));
}

/// g-SpMM's blocked pass over `graph`'s cached layout for `plan`.
fn spmm_blocked<O: BinaryOp, R: Reducer, I: Index>(
    graph: &Graph<I>,
    call: SpmmCall<'_, I>,
    plan: BlockPlan,
) -> Result<()> {
    let layout = blocked_layout(graph, plan.block_sources)?;
    note_pass(Some((&layout, plan.tile_bytes)));
    let args = spmm_args(graph.in_csr().view(), call);
    kernels::spmm::<O, R, I>(args, Some((&layout, plan.tile_bytes))).map_err(Error::from)
}

/// The CSR g-SDDMM walks on one graph orientation, and whether its edge
/// ids are scattered along that walk.
struct SddmmWalkCache(SddmmOrder, bool);

/// The staged g-SDDMM's records buffer of one graph, kept between calls
/// (`E × (1 + h)` floats: 128 MiB for one-float messages on 2^24 edges),
/// freed with the graph.
#[derive(Default)]
struct StagingCache(std::sync::Mutex<kernels::StagingBuffer>);

/// g-SpMM's staged edge operand of one graph and its plans, kept between
/// calls (for one-float rows on 2^24 edges: 128 MiB of plan, 64 MiB of
/// rows), freed with the graph or when a trial keeps the plain pass.
#[derive(Default)]
struct EdgeStagingCache(std::sync::Mutex<kernels::EdgeStaging>);

/// Whether the in-CSR's edge ids are scattered along it
/// ([`kernels::edge_ids_scattered`]).
struct InCsrScattered(bool);

/// How often each source occurs in one orientation's in-CSR.
struct ProfileCache(SourceProfile);

/// `hot(k)` for the traffic model: the fraction of `graph`'s edges whose
/// source is among the `k` most frequent, from the cached profile. A
/// failure to build the profile (it only reads the in-CSR) counts as "no
/// source is hot", which can only favour blocking's cache-friendly pass.
fn hot_fraction<I: Index>(graph: &Graph<I>) -> impl Fn(usize) -> f64 + '_ {
    move |k| {
        graph
            .cached(|| Ok(ProfileCache(SourceProfile::of(&graph.in_csr().view()))))
            .map_or(0.0, |p| p.0.hot_fraction(k))
    }
}
/// Heap bytes of the layouts this backend has cached for `graph` (its
/// orientation): blocked CSRs, regrouped edge lists, and edge softmax's
/// edge-ordered rows and range walk; 0 if none was built.
pub fn cache_bytes<I: Index>(graph: &Graph<I>) -> usize {
    let blocked =
        graph.cached_if_built::<BlockCache<I>>().map_or(0, |c| lock(&c.layouts).iter().map(|l| l.bytes()).sum());
    let parts =
        graph.cached_if_built::<PartitionCache<I>>().map_or(0, |c| lock(&c.parts).iter().map(|p| p.bytes()).sum());
    let rows = graph.cached_if_built::<softmax::EdgeOrderedRows<I>>().map_or(0, |r| r.bytes());
    let ranges =
        graph.cached_if_built::<softmax::RangeCache>().map_or(0, |c| lock(&c.0).iter().map(|(_, w)| w.bytes()).sum());
    blocked + parts + rows + ranges
}

/// Heap bytes of the staging this backend keeps for `graph`: the staged
/// g-SDDMM records (`E × 2` floats while a one-float signature runs staged)
/// and g-SpMM's staged edge weights with their plans (`E × 3` words while
/// a signature with one-float edge weights runs staged); 0 if none.
/// Separate from [`cache_bytes`]: these are working storage, not a layout.
pub fn staging_bytes<I: Index>(graph: &Graph<I>) -> usize {
    let records = graph.cached_if_built::<StagingCache>().map_or(0, |c| lock(&c.0).bytes());
    let edges = graph.cached_if_built::<EdgeStagingCache>().map_or(0, |c| lock(&c.0).bytes());
    records + edges
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The entry of `entries` that `matches`, else the one `build` makes, kept.
/// Builds with the list unlocked, for the reason `gnnkern::graph::built_once`
/// gives (a build runs rayon jobs); of two racing builds the first kept wins.
pub(super) fn cached_entry<T: Clone>(
    entries: &Mutex<Vec<T>>,
    matches: impl Fn(&T) -> bool,
    build: impl FnOnce() -> T,
) -> T {
    if let Some(e) = lock(entries).iter().find(|e| matches(e)) {
        return e.clone();
    }
    let built = build();
    let mut entries = lock(entries);
    if let Some(e) = entries.iter().find(|e| matches(e)) {
        return e.clone();
    }
    entries.push(built.clone());
    built
}

/// The cached layout of `graph`'s in-CSR with `block_sources` per block.
fn blocked_layout<I: Index>(graph: &Graph<I>, block_sources: usize) -> Result<Arc<BlockedCsr<I>>> {
    let cache = graph.cached(|| Ok(BlockCache::<I>::default()))?;
    Ok(cached_entry(
        &cache.layouts,
        |l| l.block_sources() == block_sources,
        || {
            let layout = Arc::new(BlockedCsr::build(&graph.in_csr().view(), block_sources));
            log::debug!(
                "built blocked layout: {} blocks of {} sources, {} bytes",
                layout.num_blocks(),
                block_sources,
                layout.bytes()
            );
            layout
        },
    ))
}

/// The cached edges of `graph` regrouped as `grouping` says; by edge-id
/// range, in the row order of the CSR of `order`.
fn edge_partition<I: Index>(graph: &Graph<I>, grouping: Grouping, order: SddmmOrder) -> Result<Arc<EdgePartition<I>>> {
    let cache = graph.cached(|| Ok(PartitionCache::<I>::default()))?;
    Ok(cached_entry(
        &cache.parts,
        |p| p.grouping() == grouping,
        || {
            let p = Arc::new(match grouping {
                Grouping::DestinationRanges(rows) => EdgePartition::by_destination_range(&graph.edge_list(), rows),
                Grouping::EdgeRanges(edges) => match order {
                    SddmmOrder::InCsr => EdgePartition::by_edge_range(&graph.in_csr().view(), true, edges),
                    SddmmOrder::OutCsr => EdgePartition::by_edge_range(&graph.out_csr().view(), false, edges),
                },
            });
            log::debug!("built edge partition: {} parts, {grouping:?}, {} bytes", p.num_parts(), p.bytes());
            p
        },
    ))
}

fn spmm_args<'a, I: Index>(csr: CsrView<'a, I>, c: SpmmCall<'a, I>) -> SpmmArgs<'a, I> {
    let SpmmCall { lhs_target, rhs_target, plan, lhs, rhs, out, arg_u, arg_e, .. } = c;
    SpmmArgs { csr, lhs_target, rhs_target, plan, lhs, rhs, out, arg_u, arg_e }
}

fn sddmm_args<'a, I: Index>(csr: CsrView<'a, I>, order: SddmmOrder, c: SddmmCall<'a, I>) -> SddmmArgs<'a, I> {
    let SddmmCall { lhs_target, rhs_target, plan, lhs, rhs, out, .. } = c;
    SddmmArgs { csr, order, lhs_target, rhs_target, plan, lhs, rhs, out }
}

/// The trial identity of a g-SpMM instantiation: a mean shares its sum's,
/// since it is the sum's traversal with each row scaled once at the end
/// (the same bytes move in the same order), so one trial decides both and
/// the second op neither repeats the calls nor picks differently in a noisy
/// stretch (uniform 2^20 / 2^24, d = 128, Intel Xeon VM, 25th full run:
/// the sum's trial kept 4 blocks, 364.9 ms; the mean's, minutes later,
/// plain, 462.6 ms).
fn spmm_trial_kernel<O: BinaryOp, R: Reducer>() -> TypeId {
    if R::DIVIDES_BY_DEGREE { TypeId::of::<(O, gnnkern_simd::op::Sum)>() } else { TypeId::of::<(O, R)>() }
}

impl Backend for Simd {
    const KIND: BackendKind = BackendKind::Simd;

    fn gspmm<O: BinaryOp, R: Reducer, I: Index>(&self, mut call: SpmmCall<'_, I>) -> Result<()> {
        let graph = call.graph;
        let csr = graph.in_csr().view();
        let sig = Signature {
            kernel: spmm_trial_kernel::<O, R>(),
            lhs: call.lhs_target,
            rhs: call.rhs_target,
            lhs_len: call.plan.lhs_len,
            rhs_len: call.plan.rhs_len,
            out_len: call.plan.out_len,
            args: call.arg_u.is_some() || call.arg_e.is_some(),
        };
        let plans = kernels::spmm_blocking::<O, I>(&spmm_args(csr, call.reborrow()), hot_fraction(graph));
        let tuning = active_tuning();
        // One-float edge weights read by scattered edge ids: a random line
        // per edge beside the source rows, which staging them by slot
        // window turns into streamed bytes. The trial is plain against
        // staged, and against the model's first block plan where it
        // nominates one (staging and blocking are exclusive).
        if tuning.staging == Staging::Auto
            && !matches!(tuning.blocking, Blocking::Sources(_))
            && kernels::spmm_may_stage::<O, I>(&spmm_args(csr, call.reborrow()))
            && graph.cached(|| Ok(InCsrScattered(kernels::edge_ids_scattered(&csr))))?.0
        {
            use trials::SpmmNominee;
            let staged = Tuning { staging: Staging::On, ..tuning };
            let staging = graph.cached(|| Ok(EdgeStagingCache::default()))?;
            let nominees: Vec<SpmmNominee> =
                plans.first().map(|&p| SpmmNominee::Blocked(p)).into_iter().chain([SpmmNominee::Staged]).collect();
            let decided = trials::run_nominees::<I, SpmmNominee>(graph, sig, &nominees, &mut |choice| {
                if let Some(SpmmNominee::Blocked(plan)) = choice {
                    return spmm_blocked::<O, R, I>(graph, call.reborrow(), plan);
                }
                let staging_on = choice == Some(SpmmNominee::Staged);
                LAST_PASS.with(|c| c.set(Some(if staging_on { PassKind::Staged } else { PassKind::Plain })));
                with_tuning(if staging_on { staged } else { tuning }, || {
                    let args = spmm_args(csr, call.reborrow());
                    // A concurrent call on this graph holds the staging (or a
                    // panic in one poisoned it): stage in a fresh one.
                    match staging.0.try_lock() {
                        Ok(mut kept) => kernels::spmm_staging_into::<O, R, I>(args, &mut kept),
                        Err(_) => kernels::spmm::<O, R, I>(args, None),
                    }
                    .map_err(Error::from)
                })
            })?;
            if let Some(kept) = decided {
                // Another signature on this graph may run staged (or still
                // be on trial) with the same staging: it keeps the plans then.
                let is_staged = |p: &SpmmNominee| *p == SpmmNominee::Staged;
                if kept != Some(SpmmNominee::Staged) && !trials::nominee_in_use::<I, SpmmNominee>(graph, is_staged) {
                    *lock(&staging.0) = kernels::EdgeStaging::default();
                }
                if let Some(&plan) = plans.first()
                    && kept != Some(SpmmNominee::Blocked(plan))
                {
                    trials::release_layout(graph, plan.block_sources);
                }
            }
            return Ok(());
        }
        // Max/min with arg outputs whose chunk state would spill at this
        // ISA level (AVX2; `spmm_may_narrow` also requires `Chunking::Auto`):
        // the plain pass with narrow chunks is a nominee beside the model's
        // first block plan. (A second plan, nominated where the L3 is not
        // credible, gives it its place: blocked copy_u_max at d = 128 took
        // 1.3-1.4x the plain pass's time on the model-207 Xeon VM and
        // 1.9-5.0x on the Zen 3 VM,
        // perf-reports/ablation/2026-12-01_xeon-m207_blocked-vs-plain-d128.tsv
        // and 2026-12-01_zen3_avx2-max-chunk4.tsv.)
        if matches!(tuning.blocking, Blocking::Auto)
            && kernels::spmm_may_narrow::<O, R, I>(&spmm_args(csr, call.reborrow()))
        {
            use trials::ChunkNominee;
            let narrow = Tuning { chunking: Chunking::Narrow, ..tuning };
            let nominees: Vec<ChunkNominee> =
                plans.first().map(|&p| ChunkNominee::Blocked(p)).into_iter().chain([ChunkNominee::Narrow]).collect();
            let decided = trials::run_nominees::<I, ChunkNominee>(graph, sig, &nominees, &mut |choice| match choice {
                Some(ChunkNominee::Blocked(plan)) => spmm_blocked::<O, R, I>(graph, call.reborrow(), plan),
                Some(ChunkNominee::Narrow) => {
                    LAST_PASS.with(|c| c.set(Some(PassKind::PlainNarrow)));
                    let args = spmm_args(csr, call.reborrow());
                    with_tuning(narrow, || kernels::spmm::<O, R, I>(args, None)).map_err(Error::from)
                }
                None => {
                    note_pass::<I>(None);
                    kernels::spmm::<O, R, I>(spmm_args(csr, call.reborrow()), None).map_err(Error::from)
                }
            })?;
            if let (Some(kept), Some(&plan)) = (decided, plans.first())
                && kept != Some(ChunkNominee::Blocked(plan))
            {
                trials::release_layout(graph, plan.block_sources);
            }
            return Ok(());
        }
        trials::run(graph, sig, &plans, &mut |layout| {
            note_pass(layout);
            kernels::spmm::<O, R, I>(spmm_args(csr, call.reborrow()), layout).map_err(Error::from)
        })
    }

    fn gsddmm<O: BinaryOp, I: Index>(&self, mut call: SddmmCall<'_, I>) -> Result<()> {
        let graph = call.graph;
        let csr_of = |order| match order {
            SddmmOrder::InCsr => graph.in_csr().view(),
            SddmmOrder::OutCsr => graph.out_csr().view(),
        };
        let walk = graph.cached(|| {
            let order = kernels::sddmm_order(&graph.in_csr().view(), &graph.out_csr().view());
            Ok(SddmmWalkCache(order, kernels::edge_ids_scattered(&csr_of(order))))
        })?;
        let (order, scattered) = (walk.0, walk.1);
        let csr = csr_of(order);
        let sig = Signature {
            kernel: TypeId::of::<O>(),
            lhs: call.lhs_target,
            rhs: call.rhs_target,
            lhs_len: call.plan.lhs_len,
            rhs_len: call.plan.rhs_len,
            out_len: call.plan.out_len,
            args: false,
        };
        let tuning = active_tuning();
        // Vector messages larger than the cache: the `[E, d]` output stream
        // outweighs the gathers that blocking would keep cached (u_add_v
        // d = 32, RMAT 2^20 / 2^24, Intel Xeon VM: blocked level with plain
        // under plain stores, 1.3-1.9x slower under streamed ones), so the
        // trial is plain against streamed stores instead of blocking.
        // One-float messages (single-head dots) scattered over a large
        // output: a random read for ownership per edge, which staging
        // turns into record streams, so the trial is plain against staged,
        // and against the model's first block plan where it nominates one
        // (staging and blocking are exclusive). Both trials also time the
        // walk in edge-id order, which writes the output sequentially,
        // unless the block plan took its place (`trials::SddmmNominee::Blocked`).
        let free = !matches!(tuning.blocking, Blocking::Sources(_));
        let stream = free
            && tuning.streaming == Streaming::Auto
            && kernels::sddmm_may_stream::<O, I>(&sddmm_args(csr, order, call.reborrow()));
        let stage = !stream
            && free
            && tuning.staging == Staging::Auto
            && scattered
            && kernels::sddmm_may_stage::<O, I>(&sddmm_args(csr, order, call.reborrow()));
        if stream || stage {
            use trials::SddmmNominee;
            let (nominee, csr_tuning) = if stream {
                (SddmmNominee::Streamed, Tuning { streaming: Streaming::On, ..tuning })
            } else {
                (SddmmNominee::Staged, Tuning { staging: Staging::On, ..tuning })
            };
            let staging = if stage { Some(graph.cached(|| Ok(StagingCache::default()))?) } else { None };
            let plan = if stage {
                kernels::sddmm_blocking::<O, I>(&sddmm_args(csr, order, call.reborrow()), hot_fraction(graph))
                    .first()
                    .copied()
            } else {
                None
            };
            // Staged records are only the CSR walk's: other passes free them.
            let drop_records = || {
                if let Some(Ok(mut buffer)) = staging.as_ref().map(|s| s.0.try_lock()) {
                    *buffer = kernels::StagingBuffer::default();
                }
            };
            // The CSR walk, plain or (under `csr_tuning`) streamed / staged.
            let csr_pass = |call: &mut SddmmCall<'_, I>| {
                let args = sddmm_args(csr, order, call.reborrow());
                // A concurrent call on this graph holds the buffer (or a
                // panic in one poisoned it): stage in a fresh one.
                match staging.as_ref().map(|s| s.0.try_lock()) {
                    Some(Ok(mut buffer)) => {
                        if active_tuning().staging == Staging::Auto {
                            // This call runs plain (timed by the trial, or
                            // chosen by it): the graph holds no records.
                            *buffer = kernels::StagingBuffer::default();
                        }
                        kernels::sddmm_staging_into::<O, I>(args, &mut buffer)
                    }
                    _ => kernels::sddmm::<O, I>(args, None),
                }
                .map_err(Error::from)
            };
            // One-float messages or destination rows beyond the cache: the
            // edge walk runs over the edges regrouped (`kernels::sddmm_edge_parts`).
            let grouping = kernels::sddmm_edge_parts::<O, I>(&sddmm_args(csr, order, call.reborrow()));
            let nominees = match plan {
                Some(plan) => [SddmmNominee::Blocked(plan), nominee],
                None => [nominee, SddmmNominee::EdgeOrder(grouping)],
            };
            let decided = trials::run_nominees::<I, SddmmNominee>(graph, sig, &nominees, &mut |choice| {
                let kind = match choice {
                    None => Some(PassKind::Plain),
                    Some(SddmmNominee::Streamed) => Some(PassKind::Streamed),
                    Some(SddmmNominee::Staged) => Some(PassKind::Staged),
                    // The walk names its partition, if any.
                    Some(SddmmNominee::EdgeOrder(_) | SddmmNominee::Blocked(_)) => None,
                };
                if kind.is_some() {
                    LAST_PASS.with(|c| c.set(kind));
                }
                match choice {
                    None => csr_pass(&mut call),
                    Some(SddmmNominee::EdgeOrder(grouping)) => {
                        drop_records();
                        let parts = grouping.map(|grouping| edge_partition(graph, grouping, order)).transpose()?;
                        LAST_PASS.with(|c| {
                            c.set(Some(parts.as_ref().map_or(PassKind::EdgeOrder, |p| match p.grouping() {
                                Grouping::DestinationRanges(_) => PassKind::EdgeParts { num_parts: p.num_parts() },
                                Grouping::EdgeRanges(_) => PassKind::EdgeRanges { num_parts: p.num_parts() },
                            })))
                        });
                        let list = parts.as_ref().map_or_else(|| graph.edge_list(), |p| p.list());
                        // The walk streams where the messages may stream.
                        let walk = Tuning { streaming: if stream { Streaming::On } else { Streaming::Off }, ..tuning };
                        with_tuning(walk, || {
                            let args = sddmm_args(csr, order, call.reborrow());
                            kernels::sddmm_edge_order::<O, I>(args, list).map_err(Error::from)
                        })
                    }
                    Some(SddmmNominee::Blocked(plan)) => {
                        drop_records();
                        let layout = blocked_layout(graph, plan.block_sources)?;
                        note_pass(Some((&layout, plan.tile_bytes)));
                        let args = sddmm_args(csr, order, call.reborrow());
                        kernels::sddmm::<O, I>(args, Some(&layout)).map_err(Error::from)
                    }
                    Some(SddmmNominee::Streamed | SddmmNominee::Staged) => {
                        with_tuning(csr_tuning, || csr_pass(&mut call))
                    }
                }
            })?;
            if let (Some(kept), Some(plan)) = (decided, plan)
                && kept != Some(SddmmNominee::Blocked(plan))
            {
                trials::release_layout(graph, plan.block_sources);
            }
            // Regrouped edges serve only the edge walk: each grouping is
            // dropped once no signature on this graph runs the walk over it
            // or is still timing.
            if decided.is_some()
                && let Some(cache) = graph.cached_if_built::<PartitionCache<I>>()
            {
                // (The two locks are never held together.)
                let cached: Vec<Grouping> = lock(&cache.parts).iter().map(|p| p.grouping()).collect();
                let unused: Vec<Grouping> = cached
                    .into_iter()
                    .filter(|&g| {
                        !trials::nominee_in_use::<I, SddmmNominee>(graph, |n| *n == SddmmNominee::EdgeOrder(Some(g)))
                    })
                    .collect();
                lock(&cache.parts).retain(|p| !unused.contains(&p.grouping()));
            }
            return Ok(());
        }
        // The in-CSR layouts are shared with g-SpMM (same block sizes).
        let plans = kernels::sddmm_blocking::<O, I>(&sddmm_args(csr, order, call.reborrow()), hot_fraction(graph));
        trials::run(graph, sig, &plans, &mut |layout| {
            note_pass(layout);
            kernels::sddmm::<O, I>(sddmm_args(csr, order, call.reborrow()), layout.map(|(l, _)| l)).map_err(Error::from)
        })
    }

    fn edge_softmax<I: Index>(&self, call: EdgeSoftmaxCall<'_, I>) -> Result<()> {
        let EdgeSoftmaxCall { graph, logits, row_len, out } = call;
        softmax::forward(graph, logits, row_len, out)
    }

    fn edge_softmax_backward<I: Index>(&self, call: EdgeSoftmaxBackwardCall<'_, I>) -> Result<()> {
        let EdgeSoftmaxBackwardCall { graph, out, grad_out, row_len, grad_logits } = call;
        softmax::backward(graph, (out, grad_out), row_len, grad_logits)
    }
}
