//! The SIMD backend against the reference oracle: every kernel × every ISA
//! level × i32/i64, plain and source-blocked (forced tiny blocks and
//! tiles), on graphs with empty rows, a hub, duplicates, self-loops,
//! bipartite shapes and no edges, at feature sizes straddling every lane
//! count, with multi-head broadcasting and NaN/±inf inputs.
//!
//! Exactness: elementwise messages are correctly rounded in f32 exactly as
//! the oracle's f64 result rounded to f32, so copy, max/min (values and
//! args) and non-dot g-SDDMM must match bit for bit (NaN == NaN). Sums,
//! means, dot products and softmax are compared within
//! `eps · magnitude · (degree + 1)`.
//!
//! ISA levels: all levels this CPU supports; `GNNKERN_TEST_ISA=avx512,avx2`
//! asks for specific ones and fails if the CPU lacks one.
//! `GNNKERN_TEST_GRAPHS=random,hub` runs the g-SpMM suite on the graphs whose
//! names contain one of the words (to split a Miri run across processes).

mod common;

use common::rng::Rng;
use gnnkern::backend::simd::cache_bytes;
use gnnkern::op::{BinaryOpKind as K, ReduceKind, Target};
use gnnkern::{BackendKind, Exec, Graph, Index, SddmmIo, SddmmSpec, SpmmIo, SpmmSpec, Tensor};
use gnnkern_simd::isa::{IsaLevel, with_level};
use gnnkern_simd::tuning::{Blocking, Chunking, Staging, Streaming, Tiling, Tuning, with_tuning};

const FEATS: &[usize] = &[1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 257];

/// Under Miri (`.ci/miri`), which interprets every load, the sizes that
/// straddle one vector of each level: a tail only, one AVX2 vector plus a
/// tail, one AVX-512 vector plus a tail. The code paths are the same.
const MIRI_FEATS: &[usize] = &[1, 9, 17];

fn feats() -> &'static [usize] {
    if cfg!(miri) { MIRI_FEATS } else { FEATS }
}

/// A feature value: mostly uniform in [-1, 1) (±[0.5, 2) for divisors), with
/// repeated values (ties for max/min) and signed zeros (`-0 == +0`: the
/// earlier edge must keep its bits).
fn value(rng: &mut Rng, divisor: bool) -> f32 {
    let x = match rng.below(16) {
        0 | 1 => 0.25,
        2 => 0.0,
        3 => -0.0,
        _ => rng.uniform(-1.0, 1.0),
    };
    if divisor { (x.abs() * 1.5 + 0.5).copysign(x) } else { x }
}

fn levels() -> Vec<IsaLevel> {
    match std::env::var("GNNKERN_TEST_ISA") {
        Ok(list) if !list.is_empty() => list
            .split(',')
            .map(|n| IsaLevel::from_name(n.trim()).unwrap_or_else(|| panic!("GNNKERN_TEST_ISA: unknown level {n}")))
            .collect(),
        _ => IsaLevel::ALL.into_iter().filter(|l| l.is_supported()).collect(),
    }
}

/// The g-SpMM suite's graph selection (`GNNKERN_TEST_GRAPHS`, words matched
/// against the graph names); all graphs when unset. Under Miri each graph
/// reports when it starts, since one graph takes minutes there.
fn selected(name: &str) -> bool {
    let keep = match std::env::var("GNNKERN_TEST_GRAPHS") {
        Ok(list) if !list.is_empty() => list.split(',').any(|w| name.contains(w.trim())),
        _ => true,
    };
    if keep && cfg!(miri) {
        eprintln!("g-SpMM suite: graph {name:?}");
    }
    keep
}

fn on_level<R>(level: IsaLevel, f: impl FnOnce() -> R) -> R {
    with_level(level, f).unwrap_or_else(|e| panic!("requested ISA level cannot run here: {e}"))
}

/// Plain (with and without streamed output stores, with g-SpMM's chunks
/// narrowed to 4 output vectors, and staged in windows of 4 edge ids:
/// g-SDDMM's one-float messages, g-SpMM's edge operands; many windows and
/// runs even on the small graphs), and source-blocked with tiny blocks
/// (with and without tiles, and with each row's first block's stores
/// streamed).
fn tunings() -> [(&'static str, Tuning); 7] {
    [
        ("plain", Tuning { blocking: Blocking::Off, tiling: Tiling::Off, ..Tuning::DEFAULT }),
        (
            "plain-narrow",
            Tuning { blocking: Blocking::Off, tiling: Tiling::Off, chunking: Chunking::Narrow, ..Tuning::DEFAULT },
        ),
        (
            "plain-streamed",
            Tuning { blocking: Blocking::Off, tiling: Tiling::Off, streaming: Streaming::On, ..Tuning::DEFAULT },
        ),
        (
            "plain-staged-4",
            Tuning { blocking: Blocking::Off, tiling: Tiling::Off, staging: Staging::Windows(4), ..Tuning::DEFAULT },
        ),
        (
            "blocked-3",
            Tuning { blocking: Blocking::Sources(3), tiling: Tiling::Off, prefetch_lines: 0, ..Tuning::DEFAULT },
        ),
        ("blocked-5-tiled", Tuning { blocking: Blocking::Sources(5), tiling: Tiling::Elements(16), ..Tuning::DEFAULT }),
        (
            "blocked-4-streamed",
            Tuning { blocking: Blocking::Sources(4), tiling: Tiling::Off, streaming: Streaming::On, ..Tuning::DEFAULT },
        ),
    ]
}

fn ids<I: Index>(v: Vec<usize>) -> Vec<I> {
    v.into_iter().map(I::from_usize).collect()
}

/// The test graphs: (name, graph).
fn graphs<I: Index>(seed: u64) -> Vec<(&'static str, Graph<I>)> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut coo = |name, ns: usize, nd: usize, edges: Vec<(usize, usize)>| {
        let (s, d): (Vec<usize>, Vec<usize>) = edges.into_iter().unzip();
        out.push((name, Graph::<I>::from_coo(ns, nd, ids(s), ids(d)).expect("valid graph")));
    };
    coo("no edges", 5, 4, vec![]);
    let random: Vec<_> = (0..160).map(|_| (rng.below(40), rng.below(40))).collect();
    coo("random", 40, 40, random);
    // Hub row 3 with 90 in-edges (incl. duplicates), empty rows, self-loops.
    let mut hub: Vec<_> = (0..90).map(|i| (i % 37, 3)).collect();
    hub.extend((0..20).map(|i| (i, i)));
    hub.extend([(5, 7), (5, 7), (5, 7), (36, 0)]);
    coo("hub+loops+dups", 37, 37, hub);
    let bip: Vec<_> = (0..70).map(|_| (rng.below(23), rng.below(11))).collect();
    coo("bipartite", 23, 11, bip);
    // Built from an in-CSR with a shuffled edge-id order.
    let n = 30;
    let mut src = Vec::new();
    let mut indptr = vec![0usize];
    for v in 0..n {
        for _ in 0..(v % 7) {
            src.push(rng.below(n));
        }
        indptr.push(src.len());
    }
    let e = src.len();
    let mut perm: Vec<usize> = (0..e).collect();
    for i in (1..e).rev() {
        perm.swap(i, rng.below(i + 1));
    }
    out.push(("csc-shuffled-eids", Graph::from_csc(n, n, ids(indptr), ids(src), Some(ids(perm))).expect("valid csc")));
    out
}

fn tensor(rng: &mut Rng, rows: usize, shape: &[usize], divisor: bool, specials: bool) -> Tensor {
    let len: usize = rows * shape.iter().product::<usize>();
    let mut data: Vec<f32> = (0..len).map(|_| value(rng, divisor)).collect();
    if specials && len > 0 {
        for _ in 0..len.div_ceil(40) {
            let i = rng.below(len);
            data[i] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY][rng.below(3)];
        }
    }
    let mut full = vec![rows];
    full.extend_from_slice(shape);
    Tensor::from_vec(data, full).expect("shape matches")
}

fn rows_of<I: Index>(g: &Graph<I>, t: Target) -> usize {
    match t {
        Target::Src => g.num_src(),
        Target::Edge => g.num_edges(),
        Target::Dst => g.num_dst(),
    }
}

/// Bitwise equality with NaN == NaN; the message names the first mismatch.
fn assert_exact(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()), "{what}: element {i}: got {a}, want {b}");
    }
}

/// `|got - want| <= tol[i]`, same NaN/inf pattern.
fn assert_close(what: &str, got: &[f32], want: &[f32], tol: impl Fn(usize) -> f32) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let ok = if a.is_finite() && b.is_finite() {
            (a - b).abs() <= tol(i)
        } else {
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
        };
        assert!(ok, "{what}: element {i}: got {a}, want {b} (tolerance {})", tol(i));
    }
}

struct SpmmResult<I> {
    out: Vec<f32>,
    arg_u: Vec<I>,
    arg_e: Vec<I>,
}

fn run_spmm<I: Index>(
    exec: Exec,
    g: &Graph<I>,
    spec: SpmmSpec,
    lhs: &Tensor,
    rhs: &Tensor,
    out_shape: &[usize],
) -> SpmmResult<I> {
    // Overwrite mode: every output starts stale, with a value the reducer
    // would keep (and args pointing at edge 7), so a pass that reads a row
    // before writing it fails the comparison.
    let has_arg = spec.reduce == ReduceKind::Max || spec.reduce == ReduceKind::Min;
    let stale = if spec.reduce == ReduceKind::Min { -1e30 } else { 1e30 };
    let mut out = Tensor::zeros(out_shape).expect("shape");
    out.data_mut().fill(stale);
    let n = out.data().len();
    let (mut arg_u, mut arg_e) = (vec![I::from_usize(7); n], vec![I::from_usize(7); n]);
    let io = SpmmIo {
        lhs: Some(lhs.view()).filter(|_| spec.op.uses_lhs()),
        rhs: Some(rhs.view()).filter(|_| spec.op.uses_rhs()),
        out: out.view_mut(),
        arg_u: has_arg.then_some(&mut arg_u[..]),
        arg_e: has_arg.then_some(&mut arg_e[..]),
    };
    exec.gspmm(g, spec, io).unwrap_or_else(|e| panic!("{}: {e}", spec.name()));
    SpmmResult { out: out.into_vec(), arg_u, arg_e }
}

/// One g-SpMM case on every level and tuning against the oracle.
fn check_spmm<I: Index>(name: &str, g: &Graph<I>, spec: SpmmSpec, shapes: (&[usize], &[usize]), rng: &mut Rng) {
    let specials = rng.below(4) == 0;
    let lhs = tensor(rng, rows_of(g, spec.lhs), shapes.0, false, specials);
    let rhs = tensor(rng, rows_of(g, spec.rhs), shapes.1, spec.op == K::Div, specials);
    // Output shape via the oracle's plan: run the reference first.
    let plan = gnnkern_simd::layout::BroadcastPlan::new(
        gnnkern_simd::layout::OperandShape {
            uses_lhs: spec.op.uses_lhs(),
            uses_rhs: spec.op.uses_rhs(),
            reduces_last_dim: spec.op == K::Dot,
        },
        if spec.op.uses_lhs() { shapes.0 } else { &[] },
        if spec.op.uses_rhs() { shapes.1 } else { &[] },
    )
    .expect("test shapes broadcast");
    let mut out_shape = vec![g.num_dst()];
    out_shape.extend_from_slice(&plan.out_shape);
    let want = run_spmm(Exec::forced(BackendKind::Reference), g, spec, &lhs, &rhs, &out_shape);
    let degrees = g.in_degrees();
    let max_abs = |t: &Tensor| t.data().iter().filter(|x| x.is_finite()).fold(0f32, |m, x| m.max(x.abs()));
    let (ml, mr) = (max_abs(&lhs), max_abs(&rhs));
    let magnitude = match spec.op {
        K::Add | K::Sub => ml + mr,
        K::Mul => ml * mr,
        K::Div => ml * 2.0,
        K::Dot => ml * mr * plan.reduce_len as f32,
        K::CopyLhs => ml,
        K::CopyRhs => mr,
    };
    let exact = matches!(spec.reduce, ReduceKind::Max | ReduceKind::Min) && spec.op != K::Dot;
    for level in levels() {
        let mut plain: Option<SpmmResult<I>> = None;
        for (tname, tuning) in tunings() {
            let got = on_level(level, || {
                with_tuning(tuning, || run_spmm(Exec::forced(BackendKind::Simd), g, spec, &lhs, &rhs, &out_shape))
            });
            let what = format!(
                "{} on {name} [{}] {:?}·{:?} {}/{tname}",
                spec.name(),
                I::NAME,
                shapes.0,
                shapes.1,
                level.name()
            );
            if exact {
                assert_exact(&what, &got.out, &want.out);
            } else {
                let len = plan.out_len.max(1);
                let dot_k = if spec.op == K::Dot { plan.reduce_len } else { 0 };
                let tol = |i: usize| 4.0 * f32::EPSILON * magnitude * (degrees[i / len] + dot_k + 1) as f32;
                assert_close(&what, &got.out, &want.out, tol);
            }
            if matches!(spec.reduce, ReduceKind::Max | ReduceKind::Min) && spec.op != K::Dot {
                assert_eq!(got.arg_u, want.arg_u, "{what}: arg_u");
                assert_eq!(got.arg_e, want.arg_e, "{what}: arg_e");
            }
            // The trials may switch passes between calls, so every pass must
            // give the plain pass's result bit for bit.
            match &plain {
                None => plain = Some(got),
                Some(p) => {
                    assert_exact(&format!("{what} vs plain"), &got.out, &p.out);
                    assert_eq!((&got.arg_u, &got.arg_e), (&p.arg_u, &p.arg_e), "{what}: args vs plain");
                }
            }
        }
    }
}

/// One message: (op, lhs target, rhs target, lhs shape, rhs shape).
type MessageCase = (K, Target, Target, Vec<usize>, Vec<usize>);

/// The message cases at feature size `d`.
fn message_cases(d: usize) -> Vec<MessageCase> {
    use Target::{Dst as V, Edge as E, Src as U};
    vec![
        (K::CopyLhs, U, E, vec![d], vec![]),
        (K::CopyLhs, E, E, vec![d], vec![]),
        (K::Mul, U, E, vec![d], vec![1]),
        (K::Add, U, V, vec![d], vec![d]),
        (K::Sub, E, V, vec![d], vec![d]),
        (K::Div, V, U, vec![d], vec![d]),
        (K::Mul, U, E, vec![3, d], vec![3, 1]),
        (K::Dot, U, V, vec![2, d], vec![2, d]),
    ]
}

/// The reducers of one g-SpMM case: all four natively; under Miri, which
/// runs for hours, sum and max or mean and min by the parity of `rotation`
/// (mean is sum's path plus a scale, min is max's with the other compare).
fn reducers(rotation: usize) -> Vec<ReduceKind> {
    match (cfg!(miri), rotation % 2) {
        (false, _) => ReduceKind::ALL.to_vec(),
        (true, 0) => vec![ReduceKind::Sum, ReduceKind::Max],
        (true, _) => vec![ReduceKind::Mean, ReduceKind::Min],
    }
}

fn spmm_suite<I: Index>(seed: u64) {
    let mut rng = Rng::new(seed);
    for (name, g) in graphs::<I>(seed).into_iter().filter(|(name, _)| selected(name)) {
        for (i, &d) in feats().iter().enumerate() {
            let cases = message_cases(d);
            for (c, (op, lt, rt, ls, rs)) in cases.into_iter().enumerate() {
                // Every size runs copy_u and the 4-head u_mul_e; the other
                // messages rotate through the sizes to bound the run time.
                // Miri's three sizes run every message instead, each with
                // one reducer of the sum path and one of the max/min path,
                // alternating so that every message meets all four reducers.
                if !cfg!(miri) && c != 0 && c != 6 && (i + c) % 4 != 0 {
                    continue;
                }
                for reduce in reducers(i + c) {
                    let spec = SpmmSpec::new(op, lt, rt, reduce);
                    check_spmm(name, &g, spec, (&ls, &rs), &mut rng);
                }
            }
        }
    }
}

#[test]
fn spmm_matches_reference_i32() {
    spmm_suite::<i32>(1);
}

#[test]
fn spmm_matches_reference_i64() {
    spmm_suite::<i64>(2);
}

#[test]
fn max_min_args_of_all_infinite_rows_are_the_first_edge() {
    // Every message is -inf (max) / +inf (min): the first edge wins, value ±inf;
    // also lane by lane across blocks.
    let g = Graph::<i32>::from_coo(3, 2, vec![2, 0, 1, 1], vec![0, 0, 0, 1]).unwrap();
    for (reduce, x) in [(ReduceKind::Max, f32::NEG_INFINITY), (ReduceKind::Min, f32::INFINITY)] {
        let lhs = Tensor::from_vec(vec![x; 3 * 20], vec![3, 20]).unwrap();
        // Lane l of row 0 (sources 0, 1, 2, one per block with blocks of
        // one source): l % 4 = 0 every message ±inf, 1 only source 2's
        // finite (won in the last block), 2 only source 1's (won in a
        // middle block and kept through the last, which has no winner: not
        // the first edge, so losing the kept winner shows), 3 all finite.
        let mixed: Vec<f32> = (0..3 * 20)
            .map(|i| {
                let (u, l) = (i / 20, i % 20);
                let finite = match l % 4 {
                    0 => false,
                    1 => u == 2,
                    2 => u == 1,
                    _ => true,
                };
                if finite { (i % 7) as f32 - 3.0 } else { x }
            })
            .collect();
        let mixed = Tensor::from_vec(mixed, vec![3, 20]).unwrap();
        let spec = SpmmSpec::copy(Target::Src, reduce);
        let one_source_blocks = [1, 2].map(|b| Tuning { blocking: Blocking::Sources(b), ..Tuning::DEFAULT });
        for (what, lhs) in [("all-infinite", &lhs), ("mixed lanes", &mixed)] {
            let want = run_spmm(Exec::forced(BackendKind::Reference), &g, spec, lhs, lhs, &[2, 20]);
            assert_eq!(want.arg_u[0], 0, "oracle: first edge of row 0 in (source, edge id) order");
            for level in levels() {
                for tuning in tunings().map(|(_, t)| t).into_iter().chain(one_source_blocks) {
                    let got = on_level(level, || {
                        with_tuning(tuning, || run_spmm(Exec::forced(BackendKind::Simd), &g, spec, lhs, lhs, &[2, 20]))
                    });
                    assert_exact(what, &got.out, &want.out);
                    assert_eq!((got.arg_u, got.arg_e), (want.arg_u.clone(), want.arg_e.clone()), "{what}, {tuning:?}");
                }
            }
        }
    }
}

/// A blocked max/min keeps each lane's winner between blocks as an ordinal
/// in its row, one, two or four bytes wide by the graph's largest degree:
/// hubs of 300 and 70,000 in-edges (from 400 sources, so in every block
/// of the tiny blocks) take the two wider forms; the other graphs the
/// narrowest. Each pass against the reference and the plain pass.
#[test]
#[cfg_attr(miri, ignore = "70,000-edge rows: hours under Miri")]
fn blocked_max_min_state_holds_wide_row_ordinals() {
    fn suite<I: Index>(seed: u64) {
        let mut rng = Rng::new(seed);
        for hub in [300, 70_000] {
            let (mut src, mut dst) = ((0..hub).map(|i| (i * 7) % 400).collect::<Vec<_>>(), vec![1; hub]);
            for _ in 0..600 {
                src.push(rng.below(400));
                dst.push(rng.below(5));
            }
            let g = Graph::<I>::from_coo(400, 5, ids(src), ids(dst)).expect("valid graph");
            for d in [1, 17] {
                for (op, lt, rt, ls, rs) in message_cases(d).into_iter().take(3) {
                    for reduce in [ReduceKind::Max, ReduceKind::Min] {
                        check_spmm(
                            &format!("hub of {hub}"),
                            &g,
                            SpmmSpec::new(op, lt, rt, reduce),
                            (&ls, &rs),
                            &mut rng,
                        );
                    }
                }
            }
        }
    }
    suite::<i32>(11);
    suite::<i64>(12);
}

#[test]
fn blocked_layout_is_built_once_and_reported() {
    let g = &graphs::<i32>(9)[1].1;
    let lhs = Tensor::from_vec(vec![1.0; 40 * 8], vec![40, 8]).unwrap();
    assert_eq!(cache_bytes(g), 0);
    let spec = SpmmSpec::copy(Target::Src, ReduceKind::Sum);
    let tuning = Tuning { blocking: Blocking::Sources(4), tiling: Tiling::Off, ..Tuning::DEFAULT };
    let run = || with_tuning(tuning, || run_spmm(Exec::forced(BackendKind::Simd), g, spec, &lhs, &lhs, &[40, 8]));
    let first = run();
    let bytes = cache_bytes(g);
    assert!(bytes > 0, "the blocked path ran and cached its layout");
    let second = run();
    assert_eq!(cache_bytes(g), bytes, "the layout is reused, not rebuilt");
    assert_exact("blocked rerun", &second.out, &first.out);
    assert_eq!(cache_bytes(&g.reverse()), 0, "orientations are cached separately");
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let mut rng = Rng::new(77);
    let n = 3000;
    let src: Vec<i32> = (0..40_000).map(|_| rng.below(n) as i32).collect();
    let dst: Vec<i32> = (0..40_000).map(|_| (rng.below(n) * rng.below(n) / n) as i32).collect();
    let g = Graph::<i32>::from_coo(n, n, src, dst).unwrap();
    let x = tensor(&mut rng, n, &[33], false, false);
    let spec = SpmmSpec::copy(Target::Src, ReduceKind::Sum);
    let runs: Vec<Vec<f32>> = [1, 2, 3, 2]
        .into_iter()
        .map(|t| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build().unwrap();
            pool.install(|| run_spmm(Exec::forced(BackendKind::Simd), &g, spec, &x, &x, &[n, 33]).out)
        })
        .collect();
    for r in &runs[1..] {
        assert_exact("thread counts", r, &runs[0]);
    }
}

fn run_sddmm<I: Index>(
    exec: Exec,
    g: &Graph<I>,
    spec: SddmmSpec,
    lhs: &Tensor,
    rhs: &Tensor,
    shape: &[usize],
) -> Vec<f32> {
    let mut out = Tensor::zeros(shape).expect("shape");
    let io = SddmmIo {
        lhs: Some(lhs.view()).filter(|_| spec.op.uses_lhs()),
        rhs: Some(rhs.view()).filter(|_| spec.op.uses_rhs()),
        out: out.view_mut(),
    };
    exec.gsddmm(g, spec, io).unwrap_or_else(|e| panic!("{}: {e}", spec.name()));
    out.into_vec()
}

fn sddmm_suite<I: Index>(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut gs = graphs::<I>(seed);
    // A source-sorted COO graph: its out-CSR has consecutive edge ids, so
    // the backend walks the out-CSR (the others walk the in-CSR).
    let (s, d): (Vec<usize>, Vec<usize>) = {
        let mut e: Vec<(usize, usize)> = (0..120).map(|_| (rng.below(25), rng.below(25))).collect();
        e.sort();
        e.into_iter().unzip()
    };
    gs.push(("src-sorted", Graph::from_coo(25, 25, ids(s), ids(d)).unwrap()));
    for (name, g) in &gs {
        for (i, &d) in feats().iter().enumerate() {
            // Plus single-head dots both ways round (the row operand as lhs
            // or rhs) and `message_cases`' 2-head dot with its operands
            // swapped: the dense dot walk takes them at whole vectors.
            let mut cases = message_cases(d);
            cases.push((K::Dot, Target::Src, Target::Dst, vec![d], vec![d]));
            cases.push((K::Dot, Target::Dst, Target::Src, vec![d], vec![d]));
            cases.push((K::Dot, Target::Dst, Target::Src, vec![2, d], vec![2, d]));
            for (c, (op, lt, rt, ls, rs)) in cases.into_iter().enumerate() {
                if c != 0 && c < 7 && (i + c) % 3 != 0 {
                    continue;
                }
                let spec = SddmmSpec::new(op, lt, rt);
                let specials = rng.below(4) == 0;
                let lhs = tensor(&mut rng, rows_of(g, lt), &ls, false, specials);
                let rhs = tensor(&mut rng, rows_of(g, rt), &rs, op == K::Div, specials);
                let mut shape = vec![g.num_edges()];
                if op == K::Dot {
                    shape.extend([&ls[..ls.len() - 1], &[1]].concat());
                } else if ls.len() == 2 {
                    shape.extend_from_slice(&ls);
                } else {
                    shape.push(d);
                }
                let want = run_sddmm(Exec::forced(BackendKind::Reference), g, spec, &lhs, &rhs, &shape);
                for (level, (tname, tuning)) in
                    levels().into_iter().flat_map(|l| tunings().into_iter().map(move |t| (l, t)))
                {
                    let got = on_level(level, || {
                        with_tuning(tuning, || run_sddmm(Exec::forced(BackendKind::Simd), g, spec, &lhs, &rhs, &shape))
                    });
                    let what = format!("{} on {name} [{}] d={d} {}/{tname}", spec.name(), I::NAME, level.name());
                    if tname != "plain" {
                        let plain = on_level(level, || {
                            with_tuning(tunings()[0].1, || {
                                run_sddmm(Exec::forced(BackendKind::Simd), g, spec, &lhs, &rhs, &shape)
                            })
                        });
                        assert_exact(&format!("{what} vs plain"), &got, &plain);
                    }
                    if op == K::Dot {
                        let m = lhs
                            .data()
                            .iter()
                            .chain(rhs.data())
                            .filter(|x| x.is_finite())
                            .fold(0f32, |m, x| m.max(x.abs()));
                        assert_close(&what, &got, &want, |_| 4.0 * f32::EPSILON * m * m * (d + 1) as f32);
                    } else {
                        assert_exact(&what, &got, &want);
                    }
                }
            }
        }
    }
}

#[test]
fn sddmm_matches_reference_i32() {
    sddmm_suite::<i32>(3);
}

#[test]
fn sddmm_matches_reference_i64() {
    sddmm_suite::<i64>(4);
}

#[test]
fn sddmm_walks_either_csr_with_the_same_result() {
    use gnnkern_simd::kernels::{SddmmArgs, SddmmOrder, sddmm};
    use gnnkern_simd::layout::{BroadcastPlan, OperandShape};
    let mut rng = Rng::new(5);
    let g = &graphs::<i64>(5)[2].1;
    let x = tensor(&mut rng, g.num_src(), &[4, 9], false, false);
    let y = tensor(&mut rng, g.num_dst(), &[4, 9], false, false);
    let dot = OperandShape { uses_lhs: true, uses_rhs: true, reduces_last_dim: true };
    let plan = BroadcastPlan::new(dot, &[4, 9], &[4, 9]).unwrap();
    let run = |order| {
        let csr = match order {
            SddmmOrder::InCsr => g.in_csr().view(),
            SddmmOrder::OutCsr => g.out_csr().view(),
        };
        let mut out = vec![0f32; g.num_edges() * 4];
        let args = SddmmArgs {
            csr,
            order,
            lhs_target: Target::Src,
            rhs_target: Target::Dst,
            plan: &plan,
            lhs: x.data(),
            rhs: y.data(),
            out: &mut out,
        };
        sddmm::<gnnkern::op::Dot, i64>(args, None).unwrap();
        out
    };
    assert_exact("in-CSR vs out-CSR walk", &run(SddmmOrder::InCsr), &run(SddmmOrder::OutCsr));
}

/// The in-CSR's rows of `g` with their edges in ascending id: (indices, edge ids).
fn rows_by_edge_id<I: Index>(g: &Graph<I>) -> (Vec<I>, Vec<I>) {
    let csr = g.in_csr();
    let (mut indices, mut eids) = (Vec::new(), Vec::new());
    for r in 0..csr.num_rows() {
        let mut pairs: Vec<(I, I)> = csr.row_range(r).map(|k| (csr.eids()[k], csr.indices()[k])).collect();
        pairs.sort_unstable();
        eids.extend(pairs.iter().map(|p| p.0));
        indices.extend(pairs.iter().map(|p| p.1));
    }
    (indices, eids)
}

fn softmax_suite<I: Index>(seed: u64) {
    use gnnkern_simd::buffer::aligned_filled;
    use gnnkern_simd::kernels::{
        RangeChunks, edge_softmax, edge_softmax_backward, edge_softmax_ranges, softmax_may_stream,
    };
    let mut rng = Rng::new(seed);
    for (name, g) in graphs::<I>(seed) {
        for &d in if cfg!(miri) { &[1, 17][..] } else { &[1, 2, 4, 8, 16, 17, 33] } {
            let specials = rng.below(3) == 0;
            let logits = tensor(&mut rng, g.num_edges(), &[d], false, specials);
            let scaled: Vec<f32> = logits.data().iter().map(|x| x * 30.0).collect();
            let logits = Tensor::from_vec(scaled, vec![g.num_edges(), d]).unwrap();
            let grad = tensor(&mut rng, g.num_edges(), &[d], false, false);
            let mut want = Tensor::zeros(&[g.num_edges(), d]).unwrap();
            Exec::forced(BackendKind::Reference).edge_softmax(&g, logits.view(), want.view_mut()).unwrap();
            let mut want_b = Tensor::zeros(&[g.num_edges(), d]).unwrap();
            Exec::forced(BackendKind::Reference)
                .edge_softmax_backward(&g, want.view(), grad.view(), want_b.view_mut())
                .unwrap();
            let deg_of_edge = {
                let (_, dst) = g.coo();
                let deg = g.in_degrees();
                dst.iter().map(|v| deg[v.to_usize()]).collect::<Vec<_>>()
            };
            // exp: 2 ulp, sum and division: degree ulp.
            let tol = |i: usize| 4.0 * f32::EPSILON * (deg_of_edge[i / d] + 2) as f32;
            for level in levels() {
                let what = format!("edge_softmax on {name} [{}] d={d} {}", I::NAME, level.name());
                let (got, got_b) = on_level(level, || {
                    let simd = Exec::forced(BackendKind::Simd);
                    let mut out = Tensor::zeros(&[g.num_edges(), d]).unwrap();
                    simd.edge_softmax(&g, logits.view(), out.view_mut()).unwrap();
                    let mut b = Tensor::zeros(&[g.num_edges(), d]).unwrap();
                    simd.edge_softmax_backward(&g, want.view(), grad.view(), b.view_mut()).unwrap();
                    (out.into_vec(), b.into_vec())
                });
                assert_close(&what, &got, want.data(), tol);
                assert_close(&format!("{what} backward"), &got_b, want_b.data(), |i| 2.0 * tol(i));
                // Both schemes, forced (the backend tries two-phase only on
                // graphs larger than the cache): close to the reference, and
                // bitwise equal to each other, which lets the backend choose
                // between them by timing.
                let schemes = [("row order", None), ("two-phase", Some(g.edge_dst()))].map(|(scheme, dst)| {
                    let (got, got_b) = on_level(level, || {
                        let (e, csr) = (g.num_edges(), g.in_csr().view());
                        let (mut out, mut b) = (vec![0f32; e * d], vec![0f32; e * d]);
                        edge_softmax(csr, dst, logits.data(), d, &mut out).unwrap();
                        edge_softmax_backward(csr, dst, want.data(), grad.data(), d, &mut b).unwrap();
                        (out, b)
                    });
                    assert_close(&format!("{what} {scheme}"), &got, want.data(), tol);
                    assert_close(&format!("{what} {scheme} backward"), &got_b, want_b.data(), |i| 2.0 * tol(i));
                    (got, got_b)
                });
                assert_exact(&format!("{what} two-phase vs row order"), &schemes[1].0, &schemes[0].0);
                // Row order with its output streamed, where rows are whole
                // aligned lines (d = 16 here): the same bits.
                let mut streamed = aligned_filled(g.num_edges() * d, f32::NAN);
                assert_eq!(softmax_may_stream(d, &streamed), d % 16 == 0, "{what}: streamable rows");
                if d % 16 == 0 {
                    on_level(level, || {
                        with_tuning(Tuning { streaming: Streaming::On, ..Tuning::DEFAULT }, || {
                            edge_softmax(g.in_csr().view(), None, logits.data(), d, &mut streamed).unwrap()
                        })
                    });
                    assert_exact(&format!("{what} row order streamed vs row order"), &streamed, &schemes[0].0);
                }
                assert_exact(&format!("{what} two-phase vs row order backward"), &schemes[1].1, &schemes[0].1);
                // Destination ranges visit each destination's edges in
                // ascending id: bitwise row order over rows in that order, at
                // shapes from one destination and one edge per chunk (many
                // segments) to one range and one chunk.
                let (indices, eids) = rows_by_edge_id(&g);
                let csr = g.in_csr();
                // SAFETY: `rows_by_edge_id` permuted (column, edge id) pairs
                // within the rows of the validated in-CSR.
                let by_id = unsafe {
                    gnnkern_simd::layout::CsrView::new_unchecked(csr.indptr(), &indices, &eids, csr.num_cols())
                };
                let row_order = on_level(level, || {
                    let mut out = vec![0f32; g.num_edges() * d];
                    edge_softmax(by_id, None, logits.data(), d, &mut out).unwrap();
                    out
                });
                let shapes: &[(usize, usize)] =
                    if cfg!(miri) { &[(2, 3)] } else { &[(1, 1), (2, 3), (4, 64), (64, 1 << 16)] };
                for &(rows, chunk) in shapes {
                    let walk = RangeChunks::build(g.edge_dst(), rows, chunk);
                    let got = on_level(level, || {
                        let mut out = vec![f32::NAN; g.num_edges() * d];
                        edge_softmax_ranges(&walk, logits.data(), d, &mut out).unwrap();
                        out
                    });
                    let scheme = format!("{what} ranges of {rows} destinations, chunks of {chunk} edges");
                    assert_close(&scheme, &got, want.data(), tol);
                    assert_exact(&format!("{scheme} vs row order by edge id"), &got, &row_order);
                }
            }
        }
    }
}

#[test]
fn edge_softmax_matches_reference_i32() {
    softmax_suite::<i32>(6);
}

#[test]
fn edge_softmax_matches_reference_i64() {
    softmax_suite::<i64>(7);
}
