//! The reduce step of one message into a chunk's accumulators ([`Acc`]):
//! sums accumulate, max/min take the ordered step, and a chunk whose probe
//! saw a NaN runs again with the exact one.

use super::gather::accumulate;
use super::{Acc, Ctx};
use crate::Index;
use crate::isa::Simd;
use crate::kernels::common::Slot;
use crate::op::{BinaryOp, ReduceKind, Reducer};

/// One message into accumulator `i`: `acc + φ(a, b)` for sum/mean; for
/// max/min the `replaces` test, keeping the winner's row ordinal `kk` when
/// arg outputs are wanted.
///
/// Max/min come in two flavours with the same result whenever no message
/// is NaN. The exact step tests `replaces` (strictly better, or the first
/// NaN): an ORD compare on `acc`, a masked compare and a blend, three
/// dependent instructions on the `acc` chain of every edge. The ordered
/// step (`ORDERED`) keeps one `maxps`/`minps` on that chain:
/// `maxps(m, acc)` is `m > acc ? m : acc`, which is
/// `replaces` for any non-NaN `m` (a NaN `acc` stays NaN and keeps its
/// ordinal, as in `replaces`); the ordinal's compare reads the old `acc`
/// off the chain. The edge loop adds the edge's messages into the chunk's
/// probe ([`fold_probe`]), whose NaN after the chunk (a NaN message, or
/// `+inf` and `-inf` among the sums) makes the caller rerun the chunk with
/// the exact step ([`reduce_chunk`]). Returns the message for max/min (the
/// sums' new accumulator otherwise, which `fold_probe` ignores).
#[inline(always)]
pub(super) fn reduce_step<O: BinaryOp, R: Reducer, S: Simd, const V: usize, const ARGS: bool, const ORDERED: bool>(
    s: S,
    (a, b): (S::F32, S::F32),
    kk: S::I32,
    acc: &mut Acc<S, V>,
    i: usize,
) -> S::F32 {
    if !R::HAS_ARG {
        acc.val[i] = O::accumulate_vec(s, a, b, acc.val[i]);
        return acc.val[i];
    }
    let (m, old) = (O::apply_vec(s, a, b), acc.val[i]);
    let min = R::KIND == ReduceKind::Min;
    let wins = if ORDERED {
        acc.val[i] = if min { s.min(m, old) } else { s.max(m, old) };
        if min { s.lt(m, old) } else { s.lt(old, m) }
    } else {
        let wins = if min { s.replaces_min(m, old) } else { s.replaces_max(m, old) };
        acc.val[i] = s.select(wins, m, old);
        wins
    };
    if ARGS {
        acc.ord[i] = s.select_i32(wins, kk, acc.ord[i]);
    }
    m
}

/// Adds one edge's `V` messages into the ordered max/min step's probe (a
/// no-op for other steps), as a tree: one add per edge on the loop-carried
/// chain and one probe register per chunk. A probe per vector held 8 zmm
/// registers at d = 128, where 8 values, 8 ordinals and the edge's 8 loads
/// already need 24 of the 32, and LLVM spilled three ordinal vectors per
/// edge; with one probe copy_u_max took 0.91× (RMAT 2^20 / 2^24) and 0.94×
/// (uniform) its time, paired, on the Zen 4 VM
/// (`perf-reports/ablation/2026-12-01_zen4_max-probe-per-chunk.tsv`).
///
/// The probe still turns NaN whenever a message is NaN; `+inf` and `-inf`
/// in different vectors already met in the chunk's final sum of the probes
/// before, so only a finite sum overflowing can add a (harmless) rerun.
///
/// No max of the ISA levels here is NaN whenever either input is: with a
/// NaN input `maxps` returns its second operand, and AVX-512DQ `vrangeps`
/// returns the number of a quiet NaN and a number (IEEE maxNum; probed on
/// the model-207 Xeon VM, 2026-12-01:
/// `perf-reports/ablation/2026-12-01_xeon-m207_vrangeps-nan.probe.rs`). So
/// the NaN check cannot ride on the value chain and needs these adds
/// (docs/PERFORMANCE.md, "What is left of copy_u_max's cost is its bytes").
#[inline(always)]
pub(super) fn fold_probe<R: Reducer, S: Simd, const V: usize, const ORDERED: bool>(
    s: S,
    acc: &mut Acc<S, V>,
    mut msgs: [S::F32; V],
) {
    if !(R::HAS_ARG && ORDERED) {
        return;
    }
    let mut n = V;
    while n > 1 {
        for i in 0..n / 2 {
            msgs[i] = s.add(msgs[i], msgs[n - 1 - i]);
        }
        n = n.div_ceil(2);
    }
    acc.probe = s.add(acc.probe, msgs[0]);
}

/// Runs a chunk's edges into `acc`. Sums take their one step; max/min take
/// the ordered step, and when its probe saw a NaN (or opposite infinities)
/// run again from the same start with the exact step, so the result is
/// always the exact one (see [`reduce_step`]).
///
/// # Safety
/// As for [`accumulate`].
#[inline(always)]
pub(super) unsafe fn reduce_chunk<O: BinaryOp, R: Reducer, I: Index, S: Simd, const V: usize, const ARGS: bool>(
    s: S,
    ctx: &Ctx<'_, I>,
    v: usize,
    edges: std::ops::Range<usize>,
    slots: &[Slot; V],
    acc: &mut Acc<S, V>,
) {
    if R::HAS_ARG {
        let start = *acc;
        // SAFETY: forwarded from the caller.
        *acc = unsafe { accumulate::<O, R, I, S, V, ARGS, true>(s, ctx, v, edges.clone(), slots, start) };
        if !s.reduce_sum(acc.probe).is_nan() {
            return;
        }
        *acc = start;
    }
    // SAFETY: forwarded from the caller.
    *acc = unsafe { accumulate::<O, R, I, S, V, ARGS, false>(s, ctx, v, edges, slots, *acc) };
}
