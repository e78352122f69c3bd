//! Every gradient against central finite differences through the reference
//! forward pass: every g-SpMM spec (op × lhs/rhs target × reducer) w.r.t.
//! each operand in every broadcast shape family, every g-SDDMM spec,
//! edge softmax and the segment reductions.
//!
//! Loss: `L = Σ_i w_i · out_i` with random weights `w` (which are then the
//! upstream gradient). Each input element `x_j` is moved to the f32 values
//! `x_j ± h` (h = 1e-2) and `(L(x⁺) − L(x⁻)) / (x⁺ − x⁻)`, evaluated in f64,
//! is compared with the analytic gradient.
//!
//! Tolerance `|fd − analytic| <= 2e-3 · (1 + |analytic|)`, from:
//! - rounding: the forward outputs are f32 (relative error 2^-24 each). With
//!   operands of magnitude <= 2 and at most ~10 outputs depending on one
//!   input, the loss changes carry an error of about 10 · 2^-24 · 16 ≈ 1e-5,
//!   divided by 2h = 0.02 that is <= 5e-4 in the quotient;
//! - truncation: add/sub/mul/dot/copy are (bi)linear in each input, so the
//!   central difference is exact; for div, `h²/6 · |∂³(1/y)/∂y³| · |x w|`
//!   is <= 1e-4 · 2 · 2 with divisors kept in ±[1, 2];
//! - max/min: inputs are redrawn until, in every output element, the best
//!   message beats the runner-up by > 0.1, while one perturbation moves any
//!   message by at most h · 2 = 0.02, so the winner never changes.

mod common;

use common::cases::{GraphCase, GraphKind, all_sddmm_specs, all_spmm_specs, shape_families, shapes};
use common::oracle::Messages;
use common::rng::Rng;
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{Exec, Graph, SddmmSpec, SpmmGradInputs, SpmmSpec, Tensor, TensorRef, Wanted, segment};

const H: f32 = 1e-2;
const TOL: f64 = 2e-3;
const GAP: f64 = 0.1;

fn exec() -> Exec {
    common::backends::reference()
}

/// A bipartite graph (5 sources, 4 destinations; destination 3 has no
/// in-edges; sources 0 and 3 have two out-edges), edge ids not in
/// destination order. `duplicate` adds a second edge 1 -> 1 (sum/mean only:
/// parallel edges tie exactly under max/min).
fn fd_graph(duplicate: bool) -> GraphCase<i32> {
    let mut src = vec![3, 0, 1, 4, 0, 2, 3];
    let mut dst = vec![0, 0, 1, 1, 1, 2, 2];
    if duplicate {
        src.push(1);
        dst.push(1);
    }
    let ids = |v: &[usize]| v.iter().map(|&x| x as i32).collect::<Vec<_>>();
    GraphCase {
        kind: GraphKind::Duplicates,
        graph: Graph::from_coo(5, 4, ids(&src), ids(&dst)).unwrap(),
        num_src: 5,
        num_dst: 4,
        src,
        dst,
    }
}

fn loss(out: &[f32], w: &[f32]) -> f64 {
    out.iter().zip(w).map(|(&o, &w)| f64::from(o) * f64::from(w)).sum()
}

fn shape_with_rows(rows: usize, feat: &[usize]) -> Vec<usize> {
    let mut s = vec![rows];
    s.extend_from_slice(feat);
    s
}

/// Compares `analytic` with the central difference of `forward` w.r.t. each element of `x`.
fn check_fd(
    what: &str,
    x: &[f32],
    analytic: &[f32],
    w: &[f32],
    mut forward: impl FnMut(&[f32]) -> Vec<f32>,
) -> Result<(), String> {
    if x.len() != analytic.len() {
        return Err(format!("{what}: gradient length {} != input length {}", analytic.len(), x.len()));
    }
    let mut xp = x.to_vec();
    for j in 0..x.len() {
        let (plus, minus) = (x[j] + H, x[j] - H);
        xp[j] = plus;
        let lp = loss(&forward(&xp), w);
        xp[j] = minus;
        let lm = loss(&forward(&xp), w);
        xp[j] = x[j];
        let fd = (lp - lm) / (f64::from(plus) - f64::from(minus));
        let an = f64::from(analytic[j]);
        if (fd - an).abs() > TOL * (1.0 + an.abs()) {
            return Err(format!("{what}: element {j}: analytic {an}, finite difference {fd}"));
        }
    }
    Ok(())
}

/// Whether every max/min output element has a clear winner (see the module
/// docs). Messages reading the same operand rows (e.g. `copy_v`, or `u_mul_v`
/// on parallel edges) tie exactly and move together under any perturbation,
/// so only messages reading other rows must be separated from the winner.
fn separated(g: &GraphCase<i32>, m: &Messages<'_>, reduce: ReduceKind) -> bool {
    let row = |t: Target, used: bool, e: usize| match t {
        _ if !used => 0,
        Target::Src => g.src[e],
        Target::Edge => e,
        Target::Dst => g.dst[e],
    };
    for (v, edges) in common::oracle::in_edges(g).iter().enumerate() {
        for o in 0..m.out_len() {
            let sign = if reduce == ReduceKind::Max { 1.0 } else { -1.0 };
            let vals: Vec<((usize, usize), f64)> = edges
                .iter()
                .map(|&e| {
                    (
                        (row(m.lhs.0, m.op.uses_lhs(), e), row(m.rhs.0, m.op.uses_rhs(), e)),
                        sign * f64::from(m.eval(g.src[e], e, v, o).0 as f32),
                    )
                })
                .collect();
            let Some(&(key, best)) = vals.iter().max_by(|a, b| a.1.partial_cmp(&b.1).unwrap()) else { continue };
            if vals.iter().any(|&(k, x)| k != key && best - x <= GAP) {
                return false;
            }
        }
    }
    true
}

struct Drawn {
    lhs: Option<(Vec<f32>, Vec<usize>)>,
    rhs: Option<(Vec<f32>, Vec<usize>)>,
}

fn draw(g: &GraphCase<i32>, op: BinaryOpKind, (l, r): (Target, Target), family: usize, rng: &mut Rng) -> Drawn {
    let sh = shapes(op, family, 2);
    let mk = |rng: &mut Rng, t: Target, feat: &[usize], lo: f32| {
        let n = g.rows(t) * feat.iter().product::<usize>();
        (rng.signed_vec(n, lo, 2.0), shape_with_rows(g.rows(t), feat))
    };
    Drawn {
        lhs: op.uses_lhs().then(|| mk(rng, l, &sh.lhs, 0.5)),
        rhs: op.uses_rhs().then(|| mk(rng, r, &sh.rhs, if op == BinaryOpKind::Div { 1.0 } else { 0.5 })),
    }
}

fn tref(t: &Option<(Vec<f32>, Vec<usize>)>) -> Option<TensorRef<'_>> {
    t.as_ref().map(|(d, s)| TensorRef::new(d, s).unwrap())
}

fn feat(t: &Option<(Vec<f32>, Vec<usize>)>) -> &[usize] {
    t.as_ref().map_or(&[], |(_, s)| &s[1..])
}

fn data(t: &Option<(Vec<f32>, Vec<usize>)>) -> &[f32] {
    t.as_ref().map_or(&[], |(d, _)| d)
}

fn check_spmm(spec: SpmmSpec, family: usize, seed: u64) -> Result<(), String> {
    let g = fd_graph(!spec.reduce.has_arg());
    let mut rng = Rng::new(seed);
    let mut tries = 0;
    let ops = loop {
        let d = draw(&g, spec.op, (spec.lhs, spec.rhs), family, &mut rng);
        let m = Messages::new(spec.op, (spec.lhs, data(&d.lhs), feat(&d.lhs)), (spec.rhs, data(&d.rhs), feat(&d.rhs)));
        if !spec.reduce.has_arg() || separated(&g, &m, spec.reduce) {
            break d;
        }
        tries += 1;
        assert!(tries < 2000, "{}: could not draw well-separated inputs", spec.name());
    };
    let what = format!("{} family {family} shapes {:?} {:?}", spec.name(), feat(&ops.lhs), feat(&ops.rhs));
    let fwd = exec().gspmm_alloc(&g.graph, spec, tref(&ops.lhs), tref(&ops.rhs)).map_err(|e| format!("{what}: {e}"))?;
    let w = rng.signed_vec(fwd.out.data().len(), 0.5, 1.5);
    let wt = Tensor::from_vec(w.clone(), fwd.out.shape().to_vec()).unwrap();
    let inputs =
        SpmmGradInputs { lhs: tref(&ops.lhs), rhs: tref(&ops.rhs), grad_out: wt.view(), arg_e: fwd.arg_e.as_deref() };
    let grads =
        exec().gspmm_backward_alloc(&g.graph, spec, inputs, Wanted::BOTH).map_err(|e| format!("{what}: {e}"))?;
    assert_eq!(grads.lhs.is_some(), spec.op.uses_lhs(), "{what}: lhs gradient presence");
    assert_eq!(grads.rhs.is_some(), spec.op.uses_rhs(), "{what}: rhs gradient presence");
    let forward = |lhs: &Option<(Vec<f32>, Vec<usize>)>, rhs: &Option<(Vec<f32>, Vec<usize>)>| {
        exec().gspmm_alloc(&g.graph, spec, tref(lhs), tref(rhs)).unwrap().out.into_vec()
    };
    if let (Some(gl), Some((x, s))) = (&grads.lhs, &ops.lhs) {
        check_fd(&format!("{what} d/dlhs"), x, gl.data(), &w, |xp| forward(&Some((xp.to_vec(), s.clone())), &ops.rhs))?;
    }
    if let (Some(gr), Some((x, s))) = (&grads.rhs, &ops.rhs) {
        check_fd(&format!("{what} d/drhs"), x, gr.data(), &w, |xp| forward(&ops.lhs, &Some((xp.to_vec(), s.clone()))))?;
    }
    Ok(())
}

fn check_sddmm(spec: SddmmSpec, family: usize, seed: u64) -> Result<(), String> {
    let g = fd_graph(true);
    let mut rng = Rng::new(seed);
    let ops = draw(&g, spec.op, (spec.lhs, spec.rhs), family, &mut rng);
    let what = format!("{} family {family} shapes {:?} {:?}", spec.name(), feat(&ops.lhs), feat(&ops.rhs));
    let out =
        exec().gsddmm_alloc(&g.graph, spec, tref(&ops.lhs), tref(&ops.rhs)).map_err(|e| format!("{what}: {e}"))?;
    let w = rng.signed_vec(out.data().len(), 0.5, 1.5);
    let wt = Tensor::from_vec(w.clone(), out.shape().to_vec()).unwrap();
    let grads = exec()
        .gsddmm_backward_alloc(&g.graph, spec, tref(&ops.lhs), tref(&ops.rhs), wt.view(), Wanted::BOTH)
        .map_err(|e| format!("{what}: {e}"))?;
    let forward = |lhs: &Option<(Vec<f32>, Vec<usize>)>, rhs: &Option<(Vec<f32>, Vec<usize>)>| {
        exec().gsddmm_alloc(&g.graph, spec, tref(lhs), tref(rhs)).unwrap().into_vec()
    };
    if let (Some(gl), Some((x, s))) = (&grads.lhs, &ops.lhs) {
        check_fd(&format!("{what} d/dlhs"), x, gl.data(), &w, |xp| forward(&Some((xp.to_vec(), s.clone())), &ops.rhs))?;
    }
    if let (Some(gr), Some((x, s))) = (&grads.rhs, &ops.rhs) {
        check_fd(&format!("{what} d/drhs"), x, gr.data(), &w, |xp| forward(&ops.lhs, &Some((xp.to_vec(), s.clone()))))?;
    }
    Ok(())
}

fn report(failures: Vec<String>, runs: usize) {
    assert!(failures.is_empty(), "{} of {runs} gradient checks failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn spmm_gradients_match_finite_differences() {
    let (mut failures, mut runs) = (Vec::new(), 0);
    for (k, spec) in all_spmm_specs().into_iter().enumerate() {
        // Sum walks every broadcast family; the others two families each
        // (cycling, so each op and target pair meets every family).
        let families = shape_families(spec.op);
        let list: Vec<usize> = if spec.reduce == ReduceKind::Sum {
            (0..families).collect()
        } else {
            vec![k % families, (k + 3) % families]
        };
        for family in list {
            runs += 1;
            if let Err(e) = check_spmm(spec, family, k as u64 * 31 + family as u64) {
                failures.push(e);
            }
        }
    }
    report(failures, runs);
}

#[test]
fn sddmm_gradients_match_finite_differences() {
    let (mut failures, mut runs) = (Vec::new(), 0);
    for (k, spec) in all_sddmm_specs().into_iter().enumerate() {
        for family in 0..shape_families(spec.op) {
            runs += 1;
            if let Err(e) = check_sddmm(spec, family, k as u64 * 17 + family as u64) {
                failures.push(e);
            }
        }
    }
    report(failures, runs);
}

#[test]
fn edge_softmax_gradient_matches_finite_differences() {
    for (k, d) in [1usize, 3].into_iter().enumerate() {
        let g = fd_graph(true);
        let mut rng = Rng::new(40 + k as u64);
        let shape = vec![g.num_edges(), d];
        let logits = rng.signed_vec(g.num_edges() * d, 0.0, 2.0);
        let lt = Tensor::from_vec(logits.clone(), shape.clone()).unwrap();
        let y = exec().edge_softmax_alloc(&g.graph, lt.view()).unwrap();
        let w = rng.signed_vec(y.data().len(), 0.5, 1.5);
        let wt = Tensor::from_vec(w.clone(), shape.clone()).unwrap();
        let grad = exec().edge_softmax_backward_alloc(&g.graph, y.view(), wt.view()).unwrap();
        check_fd(&format!("edge_softmax d={d}"), &logits, grad.data(), &w, |xp| {
            let t = Tensor::from_vec(xp.to_vec(), shape.clone()).unwrap();
            exec().edge_softmax_alloc(&g.graph, t.view()).unwrap().into_vec()
        })
        .unwrap();
        // Over the reverse graph too (normalising each source's out-edges).
        let r = g.graph.reverse();
        let y = exec().edge_softmax_alloc(&r, lt.view()).unwrap();
        let grad = exec().edge_softmax_backward_alloc(&r, y.view(), wt.view()).unwrap();
        check_fd(&format!("edge_softmax (reverse) d={d}"), &logits, grad.data(), &w, |xp| {
            let t = Tensor::from_vec(xp.to_vec(), shape.clone()).unwrap();
            exec().edge_softmax_alloc(&r, t.view()).unwrap().into_vec()
        })
        .unwrap();
    }
}

#[test]
fn segment_gradients_match_finite_differences() {
    let offsets: Vec<i64> = vec![0, 3, 3, 4, 8];
    let (n, d) = (8, 3);
    for reduce in ReduceKind::ALL {
        let mut rng = Rng::new(7);
        // Values on a shuffled grid 0.25 apart: max/min winners are separated.
        let mut x: Vec<f32> = (0..n * d).map(|i| i as f32 * 0.25 - 3.0).collect();
        for i in (1..x.len()).rev() {
            x.swap(i, rng.below(i + 1));
        }
        let xt = Tensor::from_vec(x.clone(), vec![n, d]).unwrap();
        let (out, arg) = segment::segment_reduce_alloc(reduce, &offsets, xt.view()).unwrap();
        let w = rng.signed_vec(out.data().len(), 0.5, 1.5);
        let wt = Tensor::from_vec(w.clone(), out.shape().to_vec()).unwrap();
        let grad = segment::segment_reduce_backward_alloc(reduce, &offsets, wt.view(), arg.as_deref()).unwrap();
        check_fd(&format!("segment {reduce:?}"), &x, grad.data(), &w, |xp| {
            let t = Tensor::from_vec(xp.to_vec(), vec![n, d]).unwrap();
            segment::segment_reduce_alloc(reduce, &offsets, t.view()).unwrap().0.into_vec()
        })
        .unwrap();
    }
}

/// `(∂φ/∂a, ∂φ/∂b)` of one message term, written out for the oracle below.
fn term_partials(op: BinaryOpKind, a: f64, b: f64) -> (f64, f64) {
    match op {
        BinaryOpKind::Add => (1.0, 1.0),
        BinaryOpKind::Sub => (1.0, -1.0),
        BinaryOpKind::Mul | BinaryOpKind::Dot => (b, a),
        BinaryOpKind::Div => (1.0 / b, -a / (b * b)),
        BinaryOpKind::CopyLhs => (1.0, 0.0),
        BinaryOpKind::CopyRhs => (0.0, 1.0),
    }
}

/// The max/min backward on rows wide enough to be split into several
/// 64-byte column stripes (d = 40 → up to 3 × 40 columns), on graphs with a
/// hub, parallel edges, empty rows and `num_src != num_dst`, in pools of 1 to
/// 4 threads (4 > 3 lines: stripes narrower than a line): bitwise the same for every thread count, and equal to a
/// direct f64 scatter through `arg_e` within `4 · 2^-24 · Σ|terms|` per element
/// (f32 accumulation of at most out-degree terms).
#[test]
fn max_min_backward_is_thread_count_invariant_and_matches_direct_scatter() {
    use common::cases::{GraphKind, Operands, Scale, Values, graph_case};
    const D: usize = 40;
    let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
    let pools = [pool(1), pool(2), pool(3), pool(4)];
    let mut runs = 0;
    for (k, spec) in all_spmm_specs().into_iter().filter(|s| s.reduce.has_arg()).enumerate() {
        let kind = [GraphKind::Hub, GraphKind::Duplicates, GraphKind::EmptyRows, GraphKind::Bipartite][k % 4];
        let g = graph_case::<i32>(kind, Scale::Full, k as u64);
        let family = k % shape_families(spec.op);
        let sh = shapes(spec.op, family, D);
        let ops = Operands::draw(&g, spec.op, (spec.lhs, spec.rhs), &sh, Values::Finite, &mut Rng::new(k as u64));
        let what = format!("{} on {kind:?}, shapes {:?} {:?}", spec.name(), sh.lhs, sh.rhs);
        let fwd = exec().gspmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()).unwrap();
        let arg_e = fwd.arg_e.as_deref().unwrap();
        let w = Rng::new(k as u64 + 99).signed_vec(fwd.out.data().len(), 0.5, 1.5);
        let wt = Tensor::from_vec(w.clone(), fwd.out.shape().to_vec()).unwrap();
        let grads: Vec<_> = pools
            .iter()
            .map(|p| {
                p.install(|| {
                    let inputs =
                        SpmmGradInputs { lhs: ops.lhs(), rhs: ops.rhs(), grad_out: wt.view(), arg_e: Some(arg_e) };
                    exec().gspmm_backward_alloc(&g.graph, spec, inputs, Wanted::BOTH).unwrap()
                })
            })
            .collect();
        for other in &grads[1..] {
            assert_eq!(other.lhs.as_ref().map(|t| t.data()), grads[0].lhs.as_ref().map(|t| t.data()), "{what}: lhs");
            assert_eq!(other.rhs.as_ref().map(|t| t.data()), grads[0].rhs.as_ref().map(|t| t.data()), "{what}: rhs");
        }

        // Direct scatter in f64: (sum, Σ|terms|) per element of each operand.
        let m = Messages::new(
            spec.op,
            (spec.lhs, data(&ops.lhs), feat(&ops.lhs)),
            (spec.rhs, data(&ops.rhs), feat(&ops.rhs)),
        );
        let len = |o: &Option<(Vec<f32>, Vec<usize>)>| o.as_ref().map_or(0, |(_, s)| s[1..].iter().product::<usize>());
        let (ll, rl) = (len(&ops.lhs), len(&ops.rhs));
        let mut want_l = vec![(0f64, 0f64); data(&ops.lhs).len()];
        let mut want_r = vec![(0f64, 0f64); data(&ops.rhs).len()];
        let out_len = m.out_len();
        for v in 0..g.num_dst {
            for o in 0..out_len {
                let e = arg_e[v * out_len + o];
                if e < 0 {
                    continue;
                }
                let e = e as usize;
                let row = |t: Target| match t {
                    Target::Src => g.src[e],
                    Target::Edge => e,
                    Target::Dst => v,
                };
                let (lo, ro) = m.b.pairs[o];
                for t in 0..m.b.k {
                    let (li, ri) = (row(spec.lhs) * ll + lo + t, row(spec.rhs) * rl + ro + t);
                    let a = if ll == 0 { 0.0 } else { f64::from(data(&ops.lhs)[li]) };
                    let b = if rl == 0 { 0.0 } else { f64::from(data(&ops.rhs)[ri]) };
                    let (da, db) = term_partials(spec.op, a, b);
                    let gv = f64::from(w[v * out_len + o]);
                    if ll > 0 {
                        want_l[li].0 += da * gv;
                        want_l[li].1 += (da * gv).abs();
                    }
                    if rl > 0 {
                        want_r[ri].0 += db * gv;
                        want_r[ri].1 += (db * gv).abs();
                    }
                }
            }
        }
        for (name, got, want) in [("lhs", &grads[0].lhs, &want_l), ("rhs", &grads[0].rhs, &want_r)] {
            let Some(got) = got else { continue };
            for (j, (&y, &(s, mag))) in got.data().iter().zip(want.iter()).enumerate() {
                let err = (f64::from(y) - s).abs();
                assert!(
                    err <= 4.0 * f64::from(f32::EPSILON) * (mag + 1e-30),
                    "{what}: grad_{name}[{j}] = {y}, want {s}"
                );
            }
        }
        runs += 1;
    }
    assert!(runs >= 30, "only {runs} max/min specs ran");
}
