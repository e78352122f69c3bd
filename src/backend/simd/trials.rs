//! Timed trials that confirm the traffic model's blocking choice (and edge
//! softmax's choice of scheme, below).
//!
//! The model (`gnnkern_simd::tuning`) nominates a source-blocked pass when
//! blocking is plausible; its line costs are ratios measured on one
//! machine, and the choice turns on effects it does not model (random
//! edge-indexed traffic evicting the block from the LLC, sparse re-streamed
//! rows, arg bookkeeping per entry). So the first calls of each op
//! signature on a graph measure instead of predict:
//!
//! ```text
//! call 1: plain pass, untimed (first-touch page faults of the output, cold caches)
//! call 2: plain pass, timed
//! call 3: blocked pass, untimed (the layout is built first)
//! call 4: blocked pass, timed
//! call 5: plain pass, timed
//! call 6: blocked pass, timed
//! later:  blocked if min(t_blocked) < TRIAL_MARGIN · min(t_plain), else plain
//! ```
//!
//! A mean reducer shares its sum's signature (the same traversal with each
//! row scaled at the end): whichever of the two runs first decides both.
//!
//! With two nominees (g-SDDMM's streamed or staged CSR walk and its edge
//! walk, below; or two block sizes, below) each candidate in turn runs
//! untimed then timed, then each once more, timed: nine calls
//! ([`schedule`]); in order, a candidate displaces the one kept so far only
//! below the margin (`preferred`).
//!
//! Two block sizes are nominated where the L3 is reported but not credible
//! (a VM seeing its host's L3; `gnnkern_simd::tuning::blocking_budgets`):
//! the guest's share of it is unknown, so the model is asked at a half and
//! a quarter of it and the trial times what it nominates, fewest blocks
//! first. Once decided, the layouts not kept are dropped.
//!
//! Each pass is timed only from its second run: a first blocked run right
//! after building the layout measured 280 ms where warm runs take 209 ms
//! (u_dot_v, d = 32, 2^24 edges), enough to flip the choice. Each is timed
//! twice, interleaved, and the faster run counts: with one run each, a
//! transient slowdown of this shared VM during the plain run once kept
//! edge softmax's two-phase scheme at 329 ms where row order takes 241 ms
//! (uniform 2^20 / 2^24, 4 heads; suite runs 6eeda56 and c6eaab7 in
//! perf-reports/runs/, 2026-11-25).
//!
//! Every call returns the correct result: for each output element the
//! blocked pass performs the same floating-point operations in the same
//! order as the plain pass (a row's edges are visited in row order either
//! way, and the partial row is stored and reloaded exactly), so results are
//! bitwise identical whichever pass runs (tested) and the trials cannot make
//! a result depend on timing. A rejected layout is dropped from the cache
//! unless another signature uses it. Forced tunings (`with_tuning`) skip the
//! trials.
//!
//! Edge softmax runs the same calls with the row-order scheme as the plain
//! pass and two nominees, the two-phase scheme and destination ranges
//! ([`SoftmaxNominee`]), which its model (`prefers_edge_order`) nominates
//! on graphs larger than the cache (the backward: two phases only). That
//! model flips between machines: two phases won by 5–16 % on the Zen 4 VM
//! and lost by 30–100 % on the Zen 5 VM (uniform 2^20 / 2^24, 1 and 4
//! heads; docs/PERFORMANCE.md). The schemes are bitwise identical too
//! (tested; the forward runs them over rows in ascending edge id), so the
//! choice is free to follow the clock.
//!
//! g-SDDMM with vector messages larger than the cache runs them with plain
//! stores against non-temporal ones ([`SddmmNominee::Streamed`]) instead
//! of a blocking trial: streaming made u_add_v 1.4–2× faster on an Intel
//! Xeon VM and 1.6× slower on the Zen 4 VM (docs/PERFORMANCE.md, "Streamed
//! output rows").
//!
//! g-SDDMM with one float per edge, a large output and edge ids scattered
//! along the walk times the plain pass against one that stages its
//! messages by edge-id window ([`SddmmNominee::Staged`]): staging replaces
//! random read-for-ownership writes by sequential record streams
//! (docs/PERFORMANCE.md, "Staged narrow messages").
//!
//! Both of these g-SDDMM trials also time a walk over the edges in id
//! order ([`SddmmNominee::EdgeOrder`]), which writes the output
//! sequentially but gathers both operand rows: it won u_add_v on RMAT and
//! lost on uniform graphs (docs/PERFORMANCE.md, "g-SDDMM in edge order").
//! For one-float messages the walk runs over edge-id ranges, each in CSR
//! row order, which keeps the writes in a cache-sized slice of the output:
//! it won u_dot_v d = 32 on RMAT ("Edge-id ranges"). Where the traffic model
//! nominates blocking for a one-float message, its first block plan takes
//! the edge walk's place ([`SddmmNominee::Blocked`]): blocking, which keeps
//! the gathered rows cached, won uniform u_dot_v at d = 128 on an Intel
//! Xeon VM whose L3 sizes the blocks.
//!
//! g-SpMM with a large one-float edge operand read by
//! scattered edge ids likewise times the plain pass against one that first
//! stages the operand by slot window ([`SpmmNominee::Staged`]; "Staged edge
//! operands"), and against the model's first block plan where it nominates
//! one (staging and blocking are exclusive, so one trial of three decides).
//!
//! g-SpMM max/min with arg outputs whose chunk of 8 output vectors would
//! spill the ISA's registers (AVX2: values, ordinals and probe are 17 of 16
//! ymm) times the plain pass against itself with chunks of 4
//! ([`ChunkNominee::Narrow`]), and against the model's first block plan
//! where it nominates one: at kernel level on the Zen 3 VM narrow chunks
//! won on a uniform graph, and lost or won on RMAT with the VM's phase
//! (docs/PERFORMANCE.md, "Narrow chunks at AVX2").
//! Where a scalar edge weight is staged (above), that trial runs instead.
//!
//! The max/min backward's source gradient of a copy-like message times the
//! pull over the out-CSR against a scatter by column stripes
//! ([`Scattered`]): per 16 lanes the scatter looks up the winning edges'
//! sources with one AVX-512 gather and issues the read-modify-writes as a
//! gather/scatter pair, which won on RMAT graphs on an Intel Xeon
//! VM (family 6 model 207), where the pull had won against the scalar
//! scatter on the Zen 5 VM
//! (docs/PERFORMANCE.md, "Max/min backward: scatter or pull").

use super::BlockCache;
use crate::graph::Graph;
use crate::op::Target;
use crate::{Index, Result};
use gnnkern_simd::kernels::{BlockedCsr, Grouping};
use gnnkern_simd::tuning::{BlockPlan, Blocking, active_tuning};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most passes one trial compares: the plain pass and two nominees
/// (g-SDDMM's streamed or staged CSR walk and its edge walk).
pub const MAX_CANDIDATES: usize = 3;

/// Calls of one signature on one graph until the pass is decided, at most
/// (three per candidate: [`schedule`]); from the next call on, every call
/// runs the chosen pass. Benchmarks warm up at least this many calls.
pub const CALLS_TO_DECIDE: usize = 3 * MAX_CANDIDATES;

/// Which candidate call `call` (from 0) of a trial among `candidates`
/// passes runs (0 = plain, `i` = nominee `i - 1`) and whether it is timed:
/// each candidate in turn twice, untimed then timed, then each once more,
/// timed. For one nominee: plain, plain, nominee, nominee, plain, nominee.
pub fn schedule(call: usize, candidates: usize) -> (usize, bool) {
    if call < 2 * candidates { (call / 2, call % 2 == 1) } else { (call - 2 * candidates, true) }
}

/// A nominee must take less than this fraction of the plain pass's time
/// to be kept (the plain pass needs no layout or staging memory).
pub const TRIAL_MARGIN: f64 = 0.9;

/// What identifies a call for the trials: the kernel instantiation, where
/// its operands live and how long their rows are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    /// `TypeId` of the (operator, reducer) pair, or of the operator (g-SDDMM).
    pub kernel: TypeId,
    pub lhs: Target,
    pub rhs: Target,
    pub lhs_len: usize,
    pub rhs_len: usize,
    pub out_len: usize,
    /// Arg outputs requested (max/min).
    pub args: bool,
}

#[derive(Clone, Copy, Debug)]
enum Trial<P> {
    /// `calls` of the [`schedule`] ran; the fastest timed run of each
    /// candidate so far (0 = plain).
    Running { calls: usize, best: [Duration; MAX_CANDIDATES] },
    /// Decided: the pass to run, `None` = plain.
    Decided(Option<P>),
}

/// The trials of one graph orientation, for nominees of type `P` (a
/// [`BlockPlan`] for g-SpMM/g-SDDMM, [`SoftmaxNominee`] for edge softmax).
pub struct Trials<P = BlockPlan>(Mutex<HashMap<Signature, Trial<P>>>);

impl<P> Default for Trials<P> {
    fn default() -> Self {
        Self(Mutex::new(HashMap::new()))
    }
}

/// A pass over the graph, plain (`None`) or blocked (layout, tile bytes).
pub type Pass<'p, I> = dyn FnMut(Option<(&BlockedCsr<I>, usize)>) -> Result<()> + 'p;

/// Runs `pass` plain, or blocked with the layout of one of `plans`, as the
/// trials of `sig` on `graph` decide (see the module docs). `plans` are the
/// model's nominations, fewest blocks first (`MAX_CANDIDATES - 1` at most;
/// none: plain, no trial); a forced blocking runs its one plan untried.
/// When the trial decides, the layouts of the plans it did not keep are
/// dropped unless another signature runs on them.
pub fn run<I: Index>(graph: &Graph<I>, sig: Signature, plans: &[BlockPlan], pass: &mut Pass<'_, I>) -> Result<()> {
    let Some(&first) = plans.first() else { return pass(None) };
    if !matches!(active_tuning().blocking, Blocking::Auto) {
        let layout = super::blocked_layout(graph, first.block_sources)?;
        return pass(Some((&layout, first.tile_bytes)));
    }
    let decided = run_nominees(graph, sig, plans, &mut |choice| match choice {
        None => pass(None),
        Some(plan) => {
            let layout = super::blocked_layout(graph, plan.block_sources)?;
            pass(Some((&layout, plan.tile_bytes)))
        }
    })?;
    if let Some(kept) = decided {
        for plan in plans.iter().filter(|p| kept != Some(**p)) {
            release_layout(graph, plan.block_sources);
        }
    }
    Ok(())
}

/// Edge softmax's nominees beside row order: the first two nominated by
/// `gnnkern_simd::kernels::prefers_edge_order` (the backward has only the
/// first; over rows whose edges are in ascending id, all three schemes give
/// bitwise identical results, so timing may choose), the third otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftmaxNominee {
    /// Two phases: rows into a node table, then edges in id order
    /// (`gnnkern_simd::kernels::edge_softmax` with the edge destinations).
    TwoPhase,
    /// Destination ranges, the logits moved by chunk of edge ids
    /// (`gnnkern_simd::kernels::edge_softmax_ranges`): no random line per
    /// edge. On the Intel Xeon VM of family 6 model 167 (2^20 nodes / 2^24
    /// edges, 4 heads, end to end) 194-211 ms against two phases' 230-261 ms
    /// (docs/PERFORMANCE.md, "Edge softmax over destination ranges").
    Ranges,
    /// Where neither of those is nominated (rows too wide for a node
    /// table) and the output exceeds the cache in whole 64-byte lines
    /// (`gnnkern_simd::kernels::softmax_may_stream`): row order with its
    /// output written once by non-temporal stores, the exponential computed
    /// again instead of the output row reread. Same operations, so bitwise
    /// the same results. On the Intel Xeon VM of family 6 model 207 (`[E,
    /// 32]`, 2^20 nodes / 2^24 edges, kernel level) 1.13-1.34x faster
    /// (docs/PERFORMANCE.md, "Streamed wide softmax rows").
    Streamed,
}

/// g-SDDMM's nominees when its output exceeds the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SddmmNominee {
    /// For vector messages: the plain pass with its messages streamed
    /// (`Streaming::On`), nominated by
    /// `gnnkern_simd::kernels::sddmm_may_stream`. Only the store
    /// instruction differs, so the results are bitwise identical.
    Streamed,
    /// For one-float messages (single-head dots) on a walk whose edge ids
    /// are scattered: the plain pass with its messages staged by edge-id
    /// window (`Staging::On`), nominated by
    /// `gnnkern_simd::kernels::sddmm_may_stage` and `edge_ids_scattered`.
    /// Each message is computed by the same code and only copied, so the
    /// results are bitwise identical.
    Staged,
    /// Beside either: the walk over the COO in edge-id order
    /// (`gnnkern_simd::kernels::sddmm_edge_order`), streamed where the
    /// messages may stream, or over the edges regrouped as the grouping
    /// says (`gnnkern_simd::kernels::sddmm_edge_parts`): by edge-id range,
    /// each in the CSR's row order, for one-float messages; else by
    /// destination range, each in id order, where the destination rows
    /// exceed the cache. Its messages come from the CSR walks' code, so the
    /// results are bitwise identical. Beside staging only where the traffic
    /// model nominates no block plan (below).
    EdgeOrder(Option<Grouping>),
    /// Beside staging, where the traffic model nominates blocking: the
    /// blocked pass with its first block plan, which writes `out[eid]`
    /// directly as the plain pass does (bitwise identical, as every
    /// blocked pass). It takes the edge walk's place in the trial: in the
    /// five full runs since the edge walk was a candidate (2026-11-27/28,
    /// Intel Xeon VMs) it was kept for vector messages only, never for a
    /// one-float one, while blocking took uniform u_dot_v d = 128 from
    /// 641-648 to 563-565 ms on the model-167 VM
    /// (`perf-reports/ablation/2026-11-28_xeon-m167_sddmm-blocked-staging-trial.tsv`).
    Blocked(BlockPlan),
}

/// Nominees that may run on a cached blocked layout: [`release_layout`]
/// keeps a layout that a decided trial of any of them runs on.
pub trait LayoutNominee: Copy + Send + 'static {
    /// The block size of the layout this nominee runs on (`None`: none).
    fn block_sources(&self) -> Option<usize>;
}

impl LayoutNominee for BlockPlan {
    fn block_sources(&self) -> Option<usize> {
        Some(self.block_sources)
    }
}

impl LayoutNominee for SddmmNominee {
    fn block_sources(&self) -> Option<usize> {
        match self {
            Self::Blocked(plan) => Some(plan.block_sources),
            Self::Streamed | Self::Staged | Self::EdgeOrder(_) => None,
        }
    }
}

impl LayoutNominee for ChunkNominee {
    fn block_sources(&self) -> Option<usize> {
        match self {
            Self::Blocked(plan) => Some(plan.block_sources),
            Self::Narrow => None,
        }
    }
}

impl LayoutNominee for SpmmNominee {
    fn block_sources(&self) -> Option<usize> {
        match self {
            Self::Blocked(plan) => Some(plan.block_sources),
            Self::Staged => None,
        }
    }
}

/// g-SpMM's nominees for one-float edge operands (scalar edge weights)
/// larger than the cache, read by scattered in-CSR edge ids
/// (`gnnkern_simd::kernels::spmm_may_stage` and `edge_ids_scattered`). A
/// type of its own (not [`SddmmNominee`]), so that [`nominee_in_use`] sees
/// g-SpMM signatures only: they share one staging per graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpmmNominee {
    /// The traffic model's first block plan, where it nominates one: the
    /// blocked pass reads the operand by edge id as the plain pass does,
    /// and staging and blocking are exclusive, so both go to one trial
    /// (blocked first). Bitwise identical, as every blocked pass.
    Blocked(BlockPlan),
    /// The plain pass after the operand is staged by slot window
    /// (`Staging::On`). The walk reads the same values in the same order,
    /// so the results are bitwise identical.
    Staged,
}

/// g-SpMM's nominees for max/min with arg outputs where a chunk of 8
/// output vectors' state exceeds the ISA's registers
/// (`gnnkern_simd::kernels::spmm_may_narrow`: AVX2). A type of its own
/// (not [`SpmmNominee`]), so that a narrowing trial still running does not
/// keep the staged edge weights alive ([`nominee_in_use`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkNominee {
    /// The traffic model's first block plan, where it nominates one.
    /// Bitwise identical, as every blocked pass.
    Blocked(BlockPlan),
    /// The plain pass with chunks of at most 4 output vectors
    /// (`Chunking::Narrow`): each lane takes the same steps over the same
    /// edges in the same order, so the results and arg outputs are bitwise
    /// identical. On the Zen 3 VM it took copy_u_max d = 128 0.70-0.85x the
    /// plain pass's time on a uniform 2^20 / 2^24 graph and 1.16-1.50x on
    /// RMAT (`perf-reports/ablation/2026-12-01_zen3_avx2-max-chunk4.tsv`);
    /// its first end-to-end trials there kept the plain pass on all five
    /// suite graphs (0.91-1.18x;
    /// `perf-reports/ablation/2026-12-02_zen3_copy-u-max-d128-narrow-trial.json`).
    Narrow,
}

/// The max/min backward's nominee for the source gradient of a copy-like
/// message: the column-stripe scatter (`gnnkern_simd::kernels::arg_scatter`)
/// against the pull over the out-CSR (`arg_pull`), nominated by
/// `arg_scatter_may_help`. Both add each element's terms in ascending
/// destination order, so the results are bitwise identical.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scattered;

/// Runs `pass` with the default scheme (`false`) or the nominee `P`
/// (`true`: two phases for edge softmax, a staged edge operand for g-SpMM,
/// the scatter for the max/min backward), as the trials of `sig` on
/// `graph` decide; `nominated` is the model's choice (`false`: the default,
/// no trial). Returns whether this call rejected the nominee (the caller
/// may then free what only the nominee uses).
pub fn run_scheme<I: Index, P: Copy + Default + std::fmt::Debug + Send + 'static>(
    graph: &Graph<I>,
    sig: Signature,
    nominated: bool,
    pass: &mut dyn FnMut(bool) -> Result<()>,
) -> Result<bool> {
    let nominees: &[P] = if nominated { &[P::default()] } else { &[] };
    run_schemes(graph, sig, nominees, &mut |choice| pass(choice.is_some()))
}

/// [`run_scheme`] among several nominees of type `P` (at most
/// `MAX_CANDIDATES - 1`, in order of preference; none: the plain pass, no
/// trial): `pass` gets the nominee to run, `None` for the plain pass. A
/// nominee is kept if it beats the plain pass and every nominee kept before
/// it by [`TRIAL_MARGIN`] (`preferred`). Returns whether this call
/// decided for the plain pass.
pub fn run_schemes<I: Index, P: Copy + std::fmt::Debug + Send + 'static>(
    graph: &Graph<I>,
    sig: Signature,
    nominees: &[P],
    pass: &mut dyn FnMut(Option<P>) -> Result<()>,
) -> Result<bool> {
    run_nominees(graph, sig, nominees, pass).map(|decided| matches!(decided, Some(None)))
}

/// [`run_schemes`], returning the decision if this call made it
/// (`Some(None)`: the plain pass is kept), so that the caller may free
/// what only the rejected nominees use.
pub fn run_nominees<I: Index, P: Copy + std::fmt::Debug + Send + 'static>(
    graph: &Graph<I>,
    sig: Signature,
    nominees: &[P],
    pass: &mut dyn FnMut(Option<P>) -> Result<()>,
) -> Result<Option<Option<P>>> {
    if nominees.is_empty() {
        return pass(None).map(|()| None);
    }
    let trials = graph.cached(|| Ok(Trials::<P>::default()))?;
    step(&trials, sig, nominees, pass)
}

/// One call of `sig` under the module docs' state machine: runs the plain
/// pass (`None`) or one of `nominees` (1 to `MAX_CANDIDATES - 1`), records
/// what it learned, and returns the decision if this call made it
/// (`Some(None)`: the plain pass is kept).
fn step<P: Copy + std::fmt::Debug>(
    trials: &Trials<P>,
    sig: Signature,
    nominees: &[P],
    pass: &mut dyn FnMut(Option<P>) -> Result<()>,
) -> Result<Option<Option<P>>> {
    debug_assert!((1..MAX_CANDIDATES).contains(&nominees.len()), "a trial takes 1 to {} nominees", MAX_CANDIDATES - 1);
    let candidates = (1 + nominees.len()).min(MAX_CANDIDATES);
    let state = super::lock(&trials.0).get(&sig).copied();
    let (calls, mut best) = match state {
        Some(Trial::Decided(choice)) => return pass(choice).map(|()| None),
        Some(Trial::Running { calls, best }) => (calls, best),
        None => (0, [Duration::MAX; MAX_CANDIDATES]),
    };
    let (candidate, timed) = schedule(calls, candidates);
    let start = Instant::now();
    pass(candidate.checked_sub(1).map(|i| nominees[i]))?;
    if timed {
        best[candidate] = best[candidate].min(start.elapsed());
    }
    let next = if calls + 1 < 3 * candidates {
        Trial::Running { calls: calls + 1, best }
    } else {
        let kept = preferred(&best[..candidates]);
        log::debug!(
            "trial {sig:?}: plain {:?}, {:?} {:?} (fastest of two runs each) -> {:?}",
            best[0],
            &nominees[..candidates - 1],
            &best[1..candidates],
            kept.map(|i| nominees[i - 1])
        );
        Trial::Decided(kept.map(|i| nominees[i - 1]))
    };
    super::lock(&trials.0).insert(sig, next);
    Ok(match next {
        Trial::Decided(kept) => Some(kept),
        Trial::Running { .. } => None,
    })
}

/// The candidate a trial keeps from the fastest timed run of each (0 = the
/// plain pass, then the nominees in order of preference): a candidate
/// displaces the one kept so far only below [`TRIAL_MARGIN`] of its time.
/// `None` keeps the plain pass.
///
/// Why in order, not the fastest: two nominees of about the same speed
/// would otherwise be picked by noise. u_add_v at d = 128 on uniform 2^16 /
/// 2^20 kept the edge walk in a full suite run (56.5 ms there, against the
/// streamed CSR walk's 31.6 ms in the run before), and standalone the two
/// took 28-35 ms either way (`perf-reports/ablation/2026-11-27_xeon_sddmm-edge-order.tsv`,
/// section 5).
fn preferred(best: &[Duration]) -> Option<usize> {
    let mut kept = 0;
    for i in 1..best.len() {
        if best[i].as_secs_f64() < TRIAL_MARGIN * best[kept].as_secs_f64() {
            kept = i;
        }
    }
    (kept > 0).then_some(kept)
}

/// Drops the cached layout with `block_sources` unless a decided signature
/// runs on it (a blocking trial's or a staging trial's, of g-SpMM or
/// g-SDDMM: both share the in-CSR's layouts).
pub fn release_layout<I: Index>(graph: &Graph<I>, block_sources: usize) {
    let in_use = layout_kept::<I, BlockPlan>(graph, block_sources)
        || layout_kept::<I, SpmmNominee>(graph, block_sources)
        || layout_kept::<I, ChunkNominee>(graph, block_sources)
        || layout_kept::<I, SddmmNominee>(graph, block_sources);
    if let (false, Some(cache)) = (in_use, graph.cached_if_built::<BlockCache<I>>()) {
        super::lock(&cache.layouts).retain(|l| l.block_sources() != block_sources);
    }
}

/// Whether a decided trial of nominees `P` on `graph` runs on the layout
/// with `block_sources`.
fn layout_kept<I: Index, P: LayoutNominee>(graph: &Graph<I>, block_sources: usize) -> bool {
    let runs_on = |t: &Trial<P>| matches!(t, Trial::Decided(Some(p)) if p.block_sources() == Some(block_sources));
    graph.cached_if_built::<Trials<P>>().is_some_and(|t| super::lock(&t.0).values().any(runs_on))
}

/// Whether some signature on `graph` runs a nominee of type `P` for which
/// `is` holds, or may still run it (its trial is undecided): what only
/// those nominees use must then be kept.
pub fn nominee_in_use<I: Index, P: Send + 'static>(graph: &Graph<I>, is: impl Fn(&P) -> bool) -> bool {
    graph.cached_if_built::<Trials<P>>().is_some_and(|trials| {
        super::lock(&trials.0).values().any(|t| match t {
            Trial::Decided(Some(p)) => is(p),
            Trial::Decided(None) => false,
            Trial::Running { .. } => true,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::simd::BlockCache;

    fn sig(out_len: usize) -> Signature {
        Signature {
            kernel: TypeId::of::<SpmmNominee>(),
            lhs: Target::Src,
            rhs: Target::Edge,
            lhs_len: out_len,
            rhs_len: 1,
            out_len,
            args: false,
        }
    }

    #[test]
    fn the_schedule_times_every_candidate_twice_after_an_untimed_run() {
        let calls = |k: usize| (0..3 * k).map(|c| schedule(c, k)).collect::<Vec<_>>();
        let (u, t) = (false, true);
        // One nominee: the blocking trials' six calls.
        assert_eq!(calls(2), [(0, u), (0, t), (1, u), (1, t), (0, t), (1, t)]);
        assert_eq!(calls(3), [(0, u), (0, t), (1, u), (1, t), (2, u), (2, t), (0, t), (1, t), (2, t)]);
        assert_eq!(CALLS_TO_DECIDE, 9, "benchmarks warm up past the longest trial");
    }

    #[test]
    fn a_nominee_displaces_the_kept_pass_only_by_the_margin() {
        let ms = |t: &[u64]| t.iter().map(|&t| Duration::from_millis(t)).collect::<Vec<_>>();
        assert_eq!(preferred(&ms(&[100, 95])), None, "within the margin of plain");
        assert_eq!(preferred(&ms(&[100, 80])), Some(1));
        assert_eq!(preferred(&ms(&[100, 80, 75])), Some(1), "the second nominee is within the margin of the first");
        assert_eq!(preferred(&ms(&[100, 80, 70])), Some(2));
        assert_eq!(preferred(&ms(&[100, 95, 85])), Some(2), "the first nominee was not kept");
        assert_eq!(preferred(&ms(&[100, 120, 95])), None);
    }

    /// Two block sizes on trial (an L3 that is not credible): the one kept
    /// keeps its layout, the other's is dropped; a trial that keeps the
    /// plain pass drops both. Passes are sleeps, so the timings decide.
    #[test]
    fn a_trial_of_two_block_sizes_keeps_one_layout() {
        let plans = [BlockPlan { block_sources: 2, tile_bytes: 4 }, BlockPlan { block_sources: 1, tile_bytes: 4 }];
        let layouts = |g: &Graph<i32>| {
            let cache = g.cached_if_built::<BlockCache<i32>>().expect("a blocked pass ran");
            let mut sizes: Vec<usize> = super::super::lock(&cache.layouts).iter().map(|l| l.block_sources()).collect();
            sizes.sort_unstable();
            sizes
        };
        // Sleeps per candidate (plain, fewer blocks, more blocks) and the
        // layouts left once the trial has decided.
        let cases: [([u64; 3], Vec<usize>); 3] =
            [([60, 60, 2], vec![1]), ([60, 2, 60], vec![2]), ([2, 60, 60], vec![])];
        for (ms, kept) in cases {
            // A graph per case: a layout another signature runs on is kept.
            let g = Graph::<i32>::from_coo(4, 4, vec![0, 1, 2, 3, 0], vec![1, 2, 3, 0, 2]).unwrap();
            let mut ran = Vec::new();
            for call in 0..CALLS_TO_DECIDE + 2 {
                run(&g, sig(1), &plans, &mut |layout| {
                    let candidate = match layout.map(|(l, _)| l.block_sources()) {
                        None => 0,
                        Some(2) => 1,
                        Some(_) => 2,
                    };
                    ran.push(candidate);
                    std::thread::sleep(Duration::from_millis(ms[candidate]));
                    Ok(())
                })
                .unwrap();
                if call + 1 == CALLS_TO_DECIDE {
                    assert_eq!(layouts(&g), kept, "{ms:?}: the layouts once decided");
                }
            }
            assert_eq!(ran[..CALLS_TO_DECIDE], [0, 0, 1, 1, 2, 2, 0, 1, 2], "{ms:?}: the nine-call schedule");
            let winner = kept.first().map_or(0, |&b| if b == 2 { 1 } else { 2 });
            assert_eq!(ran[CALLS_TO_DECIDE..], [winner, winner], "{ms:?}: later calls run the kept pass");
        }
    }

    /// g-SpMM and g-SDDMM share the in-CSR's layouts: a layout stays
    /// cached while a decided trial of any nominee type runs on it.
    #[test]
    fn a_layout_is_released_once_no_decided_trial_runs_on_it() {
        fn check<P: LayoutNominee + std::fmt::Debug>(nominee: P) {
            let g = Graph::<i32>::from_coo(4, 4, vec![0, 1, 2, 3, 0], vec![1, 2, 3, 0, 2]).unwrap();
            let block_sources = nominee.block_sources().expect("a nominee that runs on a layout");
            super::super::blocked_layout(&g, block_sources).unwrap();
            let trials = g.cached(|| Ok(Trials::<P>::default())).unwrap();
            let set = |t| {
                super::super::lock(&trials.0).insert(sig(1), t);
            };
            set(Trial::Decided(Some(nominee)));
            release_layout(&g, block_sources);
            assert!(super::super::cache_bytes(&g) > 0, "{nominee:?}: a decided signature runs on the layout");
            set(Trial::Decided(None));
            release_layout(&g, block_sources);
            assert_eq!(super::super::cache_bytes(&g), 0, "{nominee:?}: no signature runs on the layout");
        }
        let plan = BlockPlan { block_sources: 2, tile_bytes: 0 };
        check(plan);
        check(SpmmNominee::Blocked(plan));
        check(SddmmNominee::Blocked(plan));
        assert_eq!(SddmmNominee::Staged.block_sources(), None);
        assert_eq!(SpmmNominee::Staged.block_sources(), None);
    }

    #[test]
    fn a_nominee_is_in_use_while_any_signature_runs_or_may_run_it() {
        let g = Graph::<i32>::from_coo(2, 2, vec![0, 1], vec![1, 0]).unwrap();
        let staged = |p: &SpmmNominee| *p == SpmmNominee::Staged;
        assert!(!nominee_in_use::<i32, SpmmNominee>(&g, staged), "no trials yet");
        let trials = g.cached(|| Ok(Trials::<SpmmNominee>::default())).unwrap();
        let set = |out_len, t| {
            super::super::lock(&trials.0).insert(sig(out_len), t);
        };
        set(1, Trial::Decided(None));
        assert!(!nominee_in_use::<i32, SpmmNominee>(&g, staged), "the only signature rejected it");
        let running = Trial::Running { calls: 2, best: [Duration::MAX; MAX_CANDIDATES] };
        set(2, running);
        assert!(nominee_in_use::<i32, SpmmNominee>(&g, staged), "a trial still running may stage");
        set(2, Trial::Decided(Some(SpmmNominee::Staged)));
        assert!(nominee_in_use::<i32, SpmmNominee>(&g, staged), "a signature kept it");
        set(2, Trial::Decided(Some(SpmmNominee::Blocked(BlockPlan { block_sources: 1, tile_bytes: 4 }))));
        assert!(!nominee_in_use::<i32, SpmmNominee>(&g, staged), "a signature kept another nominee");
        set(2, Trial::Decided(None));
        assert!(!nominee_in_use::<i32, SpmmNominee>(&g, staged), "every signature rejected it");
        assert!(!nominee_in_use::<i32, SddmmNominee>(&g, |_| true), "other nominees' trials are separate");
        assert!(!nominee_in_use::<i32, SpmmNominee>(&g.reverse(), |_| true), "and so are orientations");
    }
}
