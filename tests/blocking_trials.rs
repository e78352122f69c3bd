//! The SIMD backend's blocking trials (`src/backend/simd/trials.rs`): when
//! the traffic model nominates a blocked pass, calls 1–6 run plain, plain,
//! blocked, blocked, plain, blocked, and every later call runs the pass the
//! timings chose; the result never depends on which pass ran. The same for
//! edge softmax's row-order and two-phase schemes (and, for rows too wide
//! for those, its plain and streamed stores), for g-SpMM's plain and
//! staged scalar edge weights (two signatures sharing a staging), and for
//! the max/min backward's pulled and scattered source gradient. g-SDDMM's
//! trials have three candidates and nine calls (`trials::schedule`): the
//! plain CSR walk, the streamed one (vector messages) or the staged one
//! (one-float messages), and the walk in edge-id order (regrouped by
//! destination range where the destination rows exceed the budget), whose
//! place the blocked pass takes where blocking is nominated for one-float
//! messages (plain, blocked, staged); so does g-SpMM's with a scalar edge
//! weight where blocking is nominated too (plain, blocked, staged). A mean
//! shares its sum's trial (the same traversal, scaled per row at the end).
//! A max with arg outputs at AVX2 whose rows hold 8 vectors times its chunks
//! of 8 against chunks of 4 (after the block plan where one is nominated);
//! narrower rows, and AVX-512, are not narrowed.
//!
//! The model only nominates blocking when the gathered rows exceed the
//! cache budget, so this binary shrinks the budget to 256 KiB with
//! `GNNKERN_LLC_BYTES` before the first kernel call (it holds one test so
//! nothing reads the budget earlier).

mod common;

use common::rng::Rng;
use gnnkern::backend::simd::{PassKind, cache_bytes, last_pass, staging_bytes};
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{BackendKind, Exec, Graph, SddmmIo, SddmmSpec, SpmmBackwardIo, SpmmIo, SpmmSpec, Tensor};
use gnnkern_simd::isa::{IsaLevel, with_level};

const BUDGET: usize = 256 << 10;

use gnnkern::backend::simd::trials::schedule;

/// Whether a pass is the nominee a trial's candidate stands for.
type IsNominee<'a> = &'a dyn Fn(&PassKind) -> bool;

#[test]
fn trials_time_both_passes_then_keep_one_and_results_never_change() {
    // SAFETY: the only test of this binary sets the variable before any
    // thread of the library reads the environment.
    unsafe { std::env::set_var("GNNKERN_LLC_BYTES", BUDGET.to_string()) };
    let mut rng = Rng::new(11);
    let (n, e, d) = (20_000, 320_000, 32);
    let src: Vec<i32> = (0..e).map(|_| rng.below(n) as i32).collect();
    let dst: Vec<i32> = (0..e).map(|_| rng.below(n) as i32).collect();
    let g = Graph::<i32>::from_coo(n, n, src, dst).unwrap();
    let x = Tensor::from_vec(rng.signed_vec(n * d, 0.1, 1.0), vec![n, d]).unwrap();
    let x2 = Tensor::from_vec(rng.signed_vec(n * 2, 0.1, 1.0), vec![n, 2]).unwrap();
    let simd = Exec::forced(BackendKind::Simd);

    let copy_u = |reduce| {
        let mut out = Tensor::zeros(&[n, d]).unwrap();
        let io = SpmmIo { lhs: Some(x.view()), rhs: None, out: out.view_mut(), arg_u: None, arg_e: None };
        simd.gspmm(&g, SpmmSpec::copy(Target::Src, reduce), io).unwrap();
        (out.into_vec(), last_pass().expect("the SIMD backend ran"))
    };
    let spmm = || copy_u(ReduceKind::Sum);
    // A 4-head dot: its [E, 4] rows are not staged (one-float rows are, below).
    let x_heads = Tensor::from_vec(x.data().to_vec(), vec![n, 4, d / 4]).unwrap();
    let sddmm = || {
        let mut out = Tensor::zeros(&[e, 4, 1]).unwrap();
        let io = SddmmIo { lhs: Some(x_heads.view()), rhs: Some(x_heads.view()), out: out.view_mut() };
        simd.gsddmm(&g, SddmmSpec::new(BinaryOpKind::Dot, Target::Src, Target::Dst), io).unwrap();
        (out.into_vec(), last_pass().expect("the SIMD backend ran"))
    };

    // Both signatures share the layout of one block size.
    let blocked =
        |p: &PassKind| matches!(p, PassKind::Blocked { block_sources, .. } if *block_sources == BUDGET / (4 * d));
    let mut any_kept = false;
    let mut sum_decision = None;
    for (name, run) in [("copy_u_sum", &spmm as &dyn Fn() -> (Vec<f32>, PassKind)), ("u_dot_v 4 heads", &sddmm)] {
        let calls: Vec<(Vec<f32>, PassKind)> = (0..9).map(|_| run()).collect();
        let passes = assert_trial(name, &calls, PassKind::Plain, blocked);
        sum_decision.get_or_insert(passes[6]);
        // A layout no decided signature uses is released.
        any_kept |= blocked(&passes[6]);
        assert_eq!(cache_bytes(&g) > 0, any_kept, "{name}: layout cached iff a signature kept it ({passes:?})");
    }
    // copy_u_mean is copy_u_sum's traversal with each row scaled at the
    // end, so it shares that trial: its first call already runs the pass
    // the sum kept, and so do later ones.
    let sum_decision = sum_decision.expect("copy_u_sum ran");
    let means: Vec<(Vec<f32>, PassKind)> = (0..3).map(|_| copy_u(ReduceKind::Mean)).collect();
    for (i, (out, pass)) in means.iter().enumerate() {
        assert_eq!(*pass, sum_decision, "copy_u_mean call {}: runs copy_u_sum's decision", i + 1);
        assert!(out.iter().zip(&means[0].0).all(|(a, b)| a.to_bits() == b.to_bits()), "copy_u_mean: same bits");
    }

    // g-SDDMM with vector messages: an [E, d] output (41 MB) above the
    // budget nominates streamed stores against plain ones, and no blocking
    // although the gathered source rows exceed the budget too.
    let u_add_v = || {
        let mut out = Tensor::zeros(&[e, d]).unwrap();
        let io = SddmmIo { lhs: Some(x.view()), rhs: Some(x.view()), out: out.view_mut() };
        simd.gsddmm(&g, SddmmSpec::new(BinaryOpKind::Add, Target::Src, Target::Dst), io).unwrap();
        (out.into_vec(), last_pass().expect("the SIMD backend ran"))
    };
    // Its destination rows (2.5 MB) exceed the budget too, so the edge
    // walk runs over the edges regrouped into ranges of budget / row
    // destinations, cached for the trial and kept only with the walk.
    let streamed = |p: &PassKind| *p == PassKind::Streamed;
    let edge_parts = |p: &PassKind| *p == PassKind::EdgeParts { num_parts: n.div_ceil(BUDGET / (4 * d)) };
    let before = cache_bytes(&g);
    let calls: Vec<(Vec<f32>, PassKind)> = (0..12).map(|_| u_add_v()).collect();
    let passes = assert_trials("u_add_v", &calls, PassKind::Plain, &[&streamed, &edge_parts]);
    let held = if edge_parts(&passes[11]) { 3 * e * 4 } else { 0 };
    assert_eq!(cache_bytes(&g) - before, held, "u_add_v: regrouped edges cached iff kept ({passes:?})");
    any_kept |= held > 0;

    // g-SDDMM with one float per edge: an [E, 1] output (1.3 MB) above the
    // budget, edge ids scattered along the walk (random COO order): staged
    // messages against plain stores. With source rows of 2 floats (160 KB,
    // below the budget) nothing is blocked and the edge walk is the third
    // candidate, over the edges regrouped into ranges of budget / 4 edge
    // ids (cached for the trial, kept only with the walk); with rows of 32
    // floats (2.5 MB) the model nominates blocking, whose first plan takes
    // the edge walk's place.
    let staged = |p: &PassKind| *p == PassKind::Staged;
    let edge_ranges = |p: &PassKind| *p == PassKind::EdgeRanges { num_parts: e.div_ceil(BUDGET / 4) };
    let mut records = 0;
    let cases: [(&Tensor, usize, [IsNominee; 2]); 2] =
        [(&x2, 2, [&staged, &edge_ranges]), (&x, d, [&blocked, &staged])];
    for (rows, width, nominees) in cases {
        let u_dot_v = || {
            let mut out = Tensor::zeros(&[e, 1]).unwrap();
            let io = SddmmIo { lhs: Some(rows.view()), rhs: Some(rows.view()), out: out.view_mut() };
            simd.gsddmm(&g, SddmmSpec::new(BinaryOpKind::Dot, Target::Src, Target::Dst), io).unwrap();
            (out.into_vec(), last_pass().expect("the SIMD backend ran"))
        };
        let name = format!("u_dot_v d = {width}");
        let before = cache_bytes(&g);
        let calls: Vec<(Vec<f32>, PassKind)> = (0..12).map(|_| u_dot_v()).collect();
        let passes = assert_trials(&name, &calls, PassKind::Plain, &nominees);
        if width == 2 {
            // The edge-range partition (three ids per edge) stays beside
            // whatever the graph held before only if the trial kept its walk.
            let held = if edge_ranges(&passes[11]) { 3 * e * 4 } else { 0 };
            assert_eq!(cache_bytes(&g) - before, held, "{name}: edge ranges cached iff kept ({passes:?})");
        }
        // The graph keeps the records (an edge id and a message per edge)
        // only while the last call staged (the signatures share one buffer;
        // any other pass frees it); the layout only while a signature runs
        // blocked.
        records = if passes[11] == PassKind::Staged { e * 2 * 4 } else { 0 };
        assert_eq!(staging_bytes(&g), records, "{name}: staging records held iff staged ({passes:?})");
        any_kept |= blocked(&passes[11]) || edge_ranges(&passes[11]);
        assert_eq!(cache_bytes(&g) > 0, any_kept, "{name}: layout cached iff a signature kept it ({passes:?})");
    }

    // g-SpMM with a scalar edge weight: [E, 1] weights (1.3 MB) above the
    // budget, read by edge ids scattered along the in-CSR, and source rows
    // of 2 floats (160 KB) below it, so no blocking: staged weights against
    // plain reads by edge id.
    let w = Tensor::from_vec(rng.signed_vec(e, 0.1, 1.0), vec![e, 1]).unwrap();
    let u_mul_e = |reduce| {
        let mut out = Tensor::zeros(&[n, 2]).unwrap();
        let io = SpmmIo { lhs: Some(x2.view()), rhs: Some(w.view()), out: out.view_mut(), arg_u: None, arg_e: None };
        simd.gspmm(&g, SpmmSpec::new(BinaryOpKind::Mul, Target::Src, Target::Edge, reduce), io).unwrap();
        (out.into_vec(), last_pass().expect("the SIMD backend ran"))
    };
    let calls: Vec<(Vec<f32>, PassKind)> = (0..9).map(|_| u_mul_e(ReduceKind::Sum)).collect();
    let passes = assert_trial("u_mul_e_sum", &calls, PassKind::Plain, |p| *p == PassKind::Staged);
    // The graph keeps the staged weights and their plan (two words per
    // edge) only while the decision is to stage.
    let held = staging_bytes(&g) - records;
    if passes[8] == PassKind::Staged {
        assert!(held >= e * 3 * 4, "u_mul_e_sum: {held} bytes held for {e} staged weights");
    } else {
        assert_eq!(held, 0, "u_mul_e_sum: nothing held after the trial kept plain ({passes:?})");
    }
    // A second signature with staged weights on the same graph shares the
    // staging: whatever its own trial decides, the staging stays held while
    // either signature runs staged.
    let calls: Vec<(Vec<f32>, PassKind)> = (0..9).map(|_| u_mul_e(ReduceKind::Max)).collect();
    let max_passes = assert_trial("u_mul_e_max", &calls, PassKind::Plain, |p| *p == PassKind::Staged);
    let any_staged = passes[8] == PassKind::Staged || max_passes[8] == PassKind::Staged;
    assert_eq!(
        staging_bytes(&g) > records,
        any_staged,
        "staged weights held iff a signature runs staged (u_mul_e_sum {passes:?}, u_mul_e_max {max_passes:?})"
    );

    // g-SpMM with a scalar edge weight whose source rows of 32 floats
    // (2.5 MB) exceed the budget too: the model nominates blocking as for
    // copy_u_sum, and since staging and blocking are exclusive one trial
    // takes plain, blocked (first) and staged. The layout stays cached iff
    // a signature kept it.
    let u_mul_e_wide = || {
        let mut out = Tensor::zeros(&[n, d]).unwrap();
        let io = SpmmIo { lhs: Some(x.view()), rhs: Some(w.view()), out: out.view_mut(), arg_u: None, arg_e: None };
        simd.gspmm(&g, SpmmSpec::new(BinaryOpKind::Mul, Target::Src, Target::Edge, ReduceKind::Sum), io).unwrap();
        (out.into_vec(), last_pass().expect("the SIMD backend ran"))
    };
    let staged_pass = |p: &PassKind| *p == PassKind::Staged;
    let calls: Vec<(Vec<f32>, PassKind)> = (0..12).map(|_| u_mul_e_wide()).collect();
    let wide_passes = assert_trials("u_mul_e_sum d = 32", &calls, PassKind::Plain, &[&blocked, &staged_pass]);
    any_kept |= blocked(&wide_passes[11]);
    assert_eq!(cache_bytes(&g) > 0, any_kept, "layout cached iff a signature kept it ({wide_passes:?})");

    // The max/min backward's source gradient of copy_u: with a 16-float
    // column stripe per worker (d = 32 on two threads) the scatter is
    // nominated against the pull, whatever the budget.
    let mut out = Tensor::zeros(&[n, d]).unwrap();
    let mut arg_e = vec![0i32; n * d];
    let io = SpmmIo { lhs: Some(x.view()), rhs: None, out: out.view_mut(), arg_u: None, arg_e: Some(&mut arg_e) };
    let copy_u_max = SpmmSpec::copy(Target::Src, ReduceKind::Max);
    simd.gspmm(&g, copy_u_max, io).unwrap();
    let grad_out = Tensor::from_vec(rng.signed_vec(n * d, 0.1, 1.0), vec![n, d]).unwrap();
    let two_threads = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let copy_u_max_backward = || {
        two_threads.install(|| {
            let mut grad = Tensor::zeros(&[n, d]).unwrap();
            let io = SpmmBackwardIo {
                lhs: Some(x.view()),
                rhs: None,
                grad_out: grad_out.view(),
                arg_e: Some(&arg_e),
                grad_lhs: Some(grad.view_mut()),
                grad_rhs: None,
            };
            simd.gspmm_backward(&g, copy_u_max, io).unwrap();
            (grad.into_vec(), last_pass().expect("the max/min backward reports its source gradient's kernel"))
        })
    };
    let calls: Vec<(Vec<f32>, PassKind)> = (0..9).map(|_| copy_u_max_backward()).collect();
    assert_trial("copy_u_max_backward", &calls, PassKind::Pulled, |p| *p == PassKind::Scattered);

    // Edge softmax: [E, 4] logits (5 MiB) exceed the budget, so the model
    // nominates the two-phase scheme; calls 1-6 follow the trial schedule,
    // and the outputs are bitwise the same throughout.
    let heads = 4;
    let logits = Tensor::from_vec(rng.signed_vec(e * heads, 0.1, 8.0), vec![e, heads]).unwrap();
    let grad = Tensor::from_vec(rng.signed_vec(e * heads, 0.1, 1.0), vec![e, heads]).unwrap();
    let forward = || {
        let mut out = Tensor::zeros(&[e, heads]).unwrap();
        simd.edge_softmax(&g, logits.view(), out.view_mut()).unwrap();
        (out.into_vec(), last_pass().expect("the SIMD backend ran"))
    };
    let before = cache_bytes(&g);
    let first = forward();
    let y = Tensor::from_vec(first.0.clone(), vec![e, heads]).unwrap();
    let backward = || {
        let mut out = Tensor::zeros(&[e, heads]).unwrap();
        simd.edge_softmax_backward(&g, y.view(), grad.view(), out.view_mut()).unwrap();
        (out.into_vec(), last_pass().expect("the SIMD backend ran"))
    };
    let mut forward_calls = vec![first];
    forward_calls.extend((0..11).map(|_| forward()));
    let two_phase = |p: &PassKind| *p == PassKind::TwoPhase;
    let ranges = |p: &PassKind| matches!(p, PassKind::Ranges { num_ranges } if *num_ranges > 1);
    let passes = assert_trials("edge_softmax", &forward_calls, PassKind::RowOrder, &[&two_phase, &ranges]);
    // The rows by edge id stay cached (every scheme of the trial runs on
    // them: the random graph's in-CSR rows are not in edge-id order); the
    // range scheme's walk order stays only if the trial kept that scheme.
    let rows_by_id = 2 * e * 4;
    let (rows, chunk) = gnnkern_simd::kernels::softmax_ranges_shape(heads, e, g.num_dst());
    let walk = gnnkern_simd::kernels::RangeChunks::build(g.edge_dst(), rows, chunk).bytes();
    let held = if ranges(&passes[passes.len() - 1]) { walk } else { 0 };
    assert_eq!(
        cache_bytes(&g) - before,
        rows_by_id + held,
        "edge_softmax: rows by edge id, walk iff kept ({passes:?})"
    );
    let backward_calls: Vec<(Vec<f32>, PassKind)> = (0..9).map(|_| backward()).collect();
    assert_trial("edge_softmax_backward", &backward_calls, PassKind::RowOrder, two_phase);

    // Edge softmax over [E, 16] logits: a node table of 128 bytes per node
    // is not nominated, but the 20 MiB output, whole 64-byte rows, exceeds
    // the budget, so the trial is row order with plain stores against
    // streamed ones, and both give the same bits.
    let wide = 16;
    let logits = Tensor::from_vec(rng.signed_vec(e * wide, 0.1, 8.0), vec![e, wide]).unwrap();
    let before = cache_bytes(&g);
    let forward_wide = || {
        let mut out = Tensor::zeros(&[e, wide]).unwrap();
        simd.edge_softmax(&g, logits.view(), out.view_mut()).unwrap();
        (out.into_vec(), last_pass().expect("the SIMD backend ran"))
    };
    let calls: Vec<(Vec<f32>, PassKind)> = (0..9).map(|_| forward_wide()).collect();
    assert_trial("edge_softmax [E, 16]", &calls, PassKind::RowOrder, |p| *p == PassKind::RowOrderStreamed);
    assert_eq!(cache_bytes(&g), before, "edge_softmax [E, 16]: row order over the in-CSR builds nothing");

    // g-SpMM max with arg outputs at AVX2 and rows of 64 floats (8 ymm): a
    // chunk's values, winner ordinals and NaN probe would take 17 of the 16
    // ymm registers, so the plain pass with chunks of 4 is a nominee, after
    // the model's block plan where it nominates one. Rows of 32 floats (4
    // ymm) fit, and so do 128 floats at AVX-512 (8 of 32 zmm): no narrowing.
    let copy_u_max_args = |feats: &Tensor| {
        let width = feats.shape()[1];
        let mut out = Tensor::zeros(&[n, width]).unwrap();
        let mut arg_e = vec![0i32; n * width];
        let io =
            SpmmIo { lhs: Some(feats.view()), rhs: None, out: out.view_mut(), arg_u: None, arg_e: Some(&mut arg_e) };
        simd.gspmm(&g, SpmmSpec::copy(Target::Src, ReduceKind::Max), io).unwrap();
        let mut bits = out.into_vec();
        bits.extend(arg_e.iter().map(|&a| f32::from_bits(a as u32)));
        (bits, last_pass().expect("the SIMD backend ran"))
    };
    let mut feats = |width: usize| Tensor::from_vec(rng.signed_vec(n * width, 0.1, 1.0), vec![n, width]).unwrap();
    let (x64, x128) = (feats(64), feats(128));
    let narrow = |p: &PassKind| *p == PassKind::PlainNarrow;
    let any_blocked = |p: &PassKind| matches!(p, PassKind::Blocked { .. });
    let never_narrow = |name: &str, calls: &[(Vec<f32>, PassKind)]| {
        assert!(calls.iter().all(|c| !narrow(&c.1)), "{name}: not narrowed ({:?})", calls.iter().map(|c| c.1));
    };
    if IsaLevel::Avx2.is_supported() {
        with_level(IsaLevel::Avx2, || {
            // Call 3 runs the first nominee: the block plan if there is one.
            let mut calls: Vec<(Vec<f32>, PassKind)> = (0..3).map(|_| copy_u_max_args(&x64)).collect();
            let nominees: Vec<IsNominee> =
                if any_blocked(&calls[2].1) { vec![&any_blocked, &narrow] } else { vec![&narrow] };
            calls.extend((3..3 * (1 + nominees.len()) + 3).map(|_| copy_u_max_args(&x64)));
            assert_trials("copy_u_max d = 64 at avx2", &calls, PassKind::Plain, &nominees);
            let x32 = Tensor::from_vec(x.data().to_vec(), vec![n, d]).unwrap();
            never_narrow("copy_u_max d = 32 at avx2", &(0..9).map(|_| copy_u_max_args(&x32)).collect::<Vec<_>>());
        })
        .unwrap();
    }
    if IsaLevel::Avx512.is_supported() {
        let calls: Vec<(Vec<f32>, PassKind)> =
            with_level(IsaLevel::Avx512, || (0..9).map(|_| copy_u_max_args(&x128)).collect()).unwrap();
        never_narrow("copy_u_max d = 128 at avx512", &calls);
    }
}

/// Checks the calls of one signature against a trial between `plain` and
/// one nominee (the pass matching `nominee`): see [`assert_trials`].
fn assert_trial(
    name: &str,
    calls: &[(Vec<f32>, PassKind)],
    plain: PassKind,
    nominee: impl Fn(&PassKind) -> bool,
) -> Vec<PassKind> {
    assert_trials(name, calls, plain, &[&nominee])
}

/// Checks the calls of one signature (three per candidate, then three
/// more): the first calls run `plain` or the nominees (the passes matching
/// `nominees[i]`) as `trials::schedule` says, later calls keep one
/// decision, and every output is bitwise the same as call 1's. Returns the
/// passes.
fn assert_trials(name: &str, calls: &[(Vec<f32>, PassKind)], plain: PassKind, nominees: &[IsNominee]) -> Vec<PassKind> {
    let k = 1 + nominees.len();
    let trial_calls = 3 * k;
    assert_eq!(calls.len(), trial_calls + 3, "{name}: the test makes three calls after the trial");
    let passes: Vec<PassKind> = calls.iter().map(|c| c.1).collect();
    let candidate = |p: &PassKind| {
        if *p == plain { Some(0) } else { nominees.iter().position(|n| n(p)).map(|i| i + 1) }
    };
    let ran: Vec<Option<usize>> = passes[..trial_calls].iter().map(candidate).collect();
    let scheduled: Vec<Option<usize>> = (0..trial_calls).map(|c| Some(schedule(c, k).0)).collect();
    assert_eq!(ran, scheduled, "{name}: calls 1-{trial_calls} follow the trial schedule ({passes:?})");
    let decided = &passes[trial_calls..];
    assert!(candidate(&decided[0]).is_some(), "{name}: the decision is a candidate ({passes:?})");
    assert!(decided.iter().all(|p| *p == decided[0]), "{name}: the decision sticks ({passes:?})");
    for (i, c) in calls.iter().enumerate() {
        assert!(
            c.0.iter().zip(&calls[0].0).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{name}: call {} ({:?}) differs from call 1 ({plain:?})",
            i + 1,
            c.1
        );
    }
    passes
}
