//! Timed trials that confirm the traffic model's blocking choice.
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
//! call 2: plain pass, timed                                  -> t_plain
//! call 3: blocked pass, untimed (the layout is built first)
//! call 4: blocked pass, timed                                -> t_blocked
//! later:  blocked if t_blocked < TRIAL_MARGIN · t_plain, else plain
//! ```
//!
//! Each pass is timed on its second run: a first blocked run right after
//! building the layout measured 280 ms where warm runs take 209 ms (u_dot_v,
//! d = 32, 2^24 edges), enough to flip the choice.
//!
//! Every call returns the correct result: for each output element the
//! blocked pass performs the same floating-point operations in the same
//! order as the plain pass (a row's edges are visited in row order either
//! way, and the partial row is stored and reloaded exactly), so results are
//! bitwise identical whichever pass runs (tested) and the trials cannot make
//! a result depend on timing. A rejected layout is dropped from the cache
//! unless another signature uses it. Forced tunings (`with_tuning`) skip the
//! trials.

use super::BlockCache;
use crate::graph::Graph;
use crate::op::Target;
use crate::{Index, Result};
use gnnkern_simd::kernels::BlockedCsr;
use gnnkern_simd::tuning::{BlockPlan, Blocking, active_tuning};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Calls of one signature on one graph until the pass is decided (two
/// plain, two blocked); from call `CALLS_TO_DECIDE + 1` on, every call runs
/// the chosen pass. Benchmarks warm up at least this many calls.
pub const CALLS_TO_DECIDE: usize = 4;

/// A blocked pass must take less than this fraction of the plain pass's
/// time to be kept (the plain pass needs no layout memory).
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
enum Trial {
    /// The plain pass ran once (untimed).
    Warm,
    /// The plain pass took this long.
    Plain(Duration),
    /// ... and the blocked pass ran once (untimed).
    BlockedWarm(Duration),
    /// Decided: the plan to run, `None` = plain.
    Decided(Option<BlockPlan>),
}

/// The trials of one graph orientation.
#[derive(Default)]
pub struct Trials(Mutex<HashMap<Signature, Trial>>);

/// A pass over the graph, plain (`None`) or blocked (layout, tile bytes).
pub type Pass<'p, I> = dyn FnMut(Option<(&BlockedCsr<I>, usize)>) -> Result<()> + 'p;

/// Runs `pass` plain, or blocked with `plan`'s layout, as the trials of
/// `sig` on `graph` decide (see the module docs). `plan` is the model's
/// nomination (`None`: plain, no trial).
pub fn run<I: Index>(graph: &Graph<I>, sig: Signature, plan: Option<BlockPlan>, pass: &mut Pass<'_, I>) -> Result<()> {
    let Some(plan) = plan else { return pass(None) };
    if !matches!(active_tuning().blocking, Blocking::Auto) {
        let layout = super::blocked_layout(graph, plan.block_sources)?;
        return pass(Some((&layout, plan.tile_bytes)));
    }
    let trials = graph.cached(|| Ok(Trials::default()))?;
    let state = super::lock(&trials.0).get(&sig).copied();
    let record = |t: Trial| super::lock(&trials.0).insert(sig, t);
    match state {
        None => {
            pass(None)?;
            record(Trial::Warm);
        }
        Some(Trial::Warm) => {
            let start = Instant::now();
            pass(None)?;
            record(Trial::Plain(start.elapsed()));
        }
        Some(Trial::Plain(plain)) => {
            let layout = super::blocked_layout(graph, plan.block_sources)?;
            pass(Some((&layout, plan.tile_bytes)))?;
            record(Trial::BlockedWarm(plain));
        }
        Some(Trial::BlockedWarm(plain)) => {
            let layout = super::blocked_layout(graph, plan.block_sources)?;
            let start = Instant::now();
            pass(Some((&layout, plan.tile_bytes)))?;
            let blocked = start.elapsed();
            let keep = blocked.as_secs_f64() < TRIAL_MARGIN * plain.as_secs_f64();
            log::debug!(
                "blocking trial {sig:?}: plain {plain:?}, blocked {blocked:?} with {plan:?} -> {}",
                if keep { "blocked" } else { "plain" }
            );
            record(Trial::Decided(keep.then_some(plan)));
            if !keep {
                drop(layout);
                release_unused(graph, &trials, plan.block_sources)?;
            }
        }
        Some(Trial::Decided(Some(plan))) => {
            let layout = super::blocked_layout(graph, plan.block_sources)?;
            pass(Some((&layout, plan.tile_bytes)))?;
        }
        Some(Trial::Decided(None)) => pass(None)?,
    }
    Ok(())
}

/// Drops the cached layout with `block_sources` unless a decided signature
/// runs on it.
fn release_unused<I: Index>(graph: &Graph<I>, trials: &Trials, block_sources: usize) -> Result<()> {
    let in_use = super::lock(&trials.0)
        .values()
        .any(|t| matches!(t, Trial::Decided(Some(p)) if p.block_sources == block_sources));
    if !in_use {
        let cache = graph.cached(|| Ok(BlockCache::<I>::default()))?;
        super::lock(&cache.layouts).retain(|l| l.block_sources() != block_sources);
    }
    Ok(())
}
