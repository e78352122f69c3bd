//! Every available backend (every ISA level of the SIMD backend) against the
//! reference: g-SpMM and g-SDDMM forward and backward, edge softmax and its
//! backward, on every graph case (including a hub of 3000 in-edges), every
//! feature size, broadcast families and NaN/±inf inputs, for i32 and i64 ids.
//!
//! Exact comparisons where the contract makes results bit-identical (copy,
//! max/min of elementwise messages, elementwise g-SDDMM, arg outputs, and
//! gradients computed by shared code from identical args); otherwise
//! `c · ε · Σ|terms| · n` with `Σ|terms|` from the reference run on absolute
//! values (see `common::compare`).

mod common;

use common::backends::{Candidate, candidates, declined, reference};
use common::cases::{
    FEATURE_SIZES, GraphCase, GraphKind, Operands, Scale, Values, all_sddmm_specs, all_spmm_specs, graph_case,
    shape_families, shapes,
};
use common::compare::{abs, args_equal, close, exact};
use common::rng::Rng;
use gnnkern::op::BinaryOpKind;
use gnnkern::{Index, SddmmSpec, SpmmGradInputs, SpmmSpec, Tensor, Wanted};
use proptest::prelude::*;

/// Slack over the classical summation bound (different blockings of the
/// same sum can each approach it from opposite sides).
const C: f32 = 4.0;

/// One case: which graph, op, feature size, broadcast family, values.
#[derive(Clone, Copy, Debug)]
struct Params {
    kind: GraphKind,
    spec: usize,
    size: usize,
    family: usize,
    values: Values,
    seed: u64,
    wide: bool,
}

/// Message elements of a case are capped so the debug-mode reference stays
/// fast; a case over the cap runs on the small version of its graph.
const MAX_MESSAGE_ELEMENTS: usize = 1 << 18;

fn graph_for<I: Index>(p: &Params, out_len: usize) -> GraphCase<I> {
    let g = graph_case::<I>(p.kind, Scale::Full, p.seed);
    if g.num_edges() * out_len > MAX_MESSAGE_ELEMENTS { graph_case::<I>(p.kind, Scale::Small, p.seed) } else { g }
}

/// The operator that sums the absolute values of the terms (`|a| + |b|` for add and sub).
fn magnitude_op(op: BinaryOpKind) -> BinaryOpKind {
    if op == BinaryOpKind::Sub { BinaryOpKind::Add } else { op }
}

fn abs_operands(o: &Operands) -> Operands {
    let f = |t: &Option<(Vec<f32>, Vec<usize>)>| t.as_ref().map(|(d, s)| (abs(d), s.clone()));
    Operands { lhs: f(&o.lhs), rhs: f(&o.rhs) }
}

fn widen<I: Index>(v: &Option<Vec<I>>) -> Vec<i64> {
    v.as_ref().map_or_else(Vec::new, |v| v.iter().map(|x| x.to_i64()).collect())
}

/// Runs `f` on every candidate, collecting the first failure with its label.
fn each_candidate(cands: &[Candidate], mut f: impl FnMut(&Candidate) -> Result<(), String>) -> Result<(), String> {
    for c in cands {
        f(c).map_err(|e| format!("[{}] {e}", c.label()))?;
    }
    Ok(())
}

fn spmm_case<I: Index>(p: &Params, cands: &[Candidate]) -> Result<(), String> {
    let spec: SpmmSpec = all_spmm_specs()[p.spec % 204];
    let d = FEATURE_SIZES[p.size % FEATURE_SIZES.len()];
    let sh = shapes(spec.op, p.family % shape_families(spec.op), d);
    let out_len = sh.lhs.iter().product::<usize>().max(sh.rhs.iter().product::<usize>());
    let g = graph_for::<I>(p, out_len);
    // Dot under max/min: integer inputs make every dot exact, so args must agree.
    let dot_arg = spec.op == BinaryOpKind::Dot && spec.reduce.has_arg();
    let values = if dot_arg { Values::Integers } else { p.values };
    let mut rng = Rng::new(p.seed);
    let ops = Operands::draw(&g, spec.op, (spec.lhs, spec.rhs), &sh, values, &mut rng);
    let what = format!("{} on {:?}/{} shapes {:?} {:?} {values:?}", spec.name(), g.kind, I::NAME, sh.lhs, sh.rhs);
    let fail = |e: gnnkern::Error| format!("{what}: {e}");

    let want = reference().gspmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()).map_err(fail)?;
    let w = common::cases::operand_data(&mut rng, g.num_dst, &want.out.shape()[1..], p.values, false);
    let wt = Tensor::from_vec(w.clone(), want.out.shape().to_vec()).unwrap();
    let inputs = SpmmGradInputs { lhs: ops.lhs(), rhs: ops.rhs(), grad_out: wt.view(), arg_e: want.arg_e.as_deref() };
    let want_grads = reference().gspmm_backward_alloc(&g.graph, spec, inputs, Wanted::BOTH).map_err(fail)?;
    if cands.is_empty() {
        return Ok(());
    }
    let abs_ops = abs_operands(&ops);
    let mag_spec = SpmmSpec { op: magnitude_op(spec.op), ..spec };
    let k = sh.lhs.last().copied().filter(|_| spec.op == BinaryOpKind::Dot).unwrap_or(1);
    let terms = g.max_degree() * k;
    let out_mag = if spec.reduce.has_arg() {
        abs(want.out.data())
    } else {
        reference().gspmm_alloc(&g.graph, mag_spec, abs_ops.lhs(), abs_ops.rhs()).map_err(fail)?.out.into_vec()
    };
    let abs_w = Tensor::from_vec(abs(&w), want.out.shape().to_vec()).unwrap();
    let mag_inputs =
        SpmmGradInputs { lhs: abs_ops.lhs(), rhs: abs_ops.rhs(), grad_out: abs_w.view(), arg_e: want.arg_e.as_deref() };
    let mag_grads = reference().gspmm_backward_alloc(&g.graph, mag_spec, mag_inputs, Wanted::BOTH).map_err(fail)?;
    let grad_terms = |operand: &Option<(Vec<f32>, Vec<usize>)>| {
        let op_len: usize = operand.as_ref().map_or(1, |(_, s)| s[1..].iter().product::<usize>().max(1));
        g.max_degree() * (out_len * k / op_len).max(1)
    };

    each_candidate(cands, |c| {
        let got = c.run(|ex| ex.gspmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()));
        if declined(c, &got) {
            return Ok(());
        }
        let got = got.map_err(fail)?;
        if spec.reduce.has_arg() {
            exact(&what, got.out.data(), want.out.data())?;
            args_equal(&format!("{what} arg_u"), &widen(&got.arg_u), &widen(&want.arg_u))?;
            args_equal(&format!("{what} arg_e"), &widen(&got.arg_e), &widen(&want.arg_e))?;
        } else if spec.op == BinaryOpKind::CopyLhs && g.max_degree() <= 1 {
            exact(&what, got.out.data(), want.out.data())?;
        } else {
            close(&what, got.out.data(), want.out.data(), &out_mag, terms, C)?;
        }
        let inputs =
            SpmmGradInputs { lhs: ops.lhs(), rhs: ops.rhs(), grad_out: wt.view(), arg_e: want.arg_e.as_deref() };
        let grads = c.run(|ex| ex.gspmm_backward_alloc(&g.graph, spec, inputs, Wanted::BOTH));
        if declined(c, &grads) {
            return Ok(());
        }
        let grads = grads.map_err(fail)?;
        for (side, got, want, mag, operand) in [
            ("lhs", &grads.lhs, &want_grads.lhs, &mag_grads.lhs, &ops.lhs),
            ("rhs", &grads.rhs, &want_grads.rhs, &mag_grads.rhs, &ops.rhs),
        ] {
            let w = format!("{what} grad_{side}");
            match (got, want, mag) {
                (None, None, _) => {}
                (Some(a), Some(b), Some(m)) => {
                    if spec.reduce.has_arg() {
                        exact(&w, a.data(), b.data())?;
                    } else {
                        close(&w, a.data(), b.data(), m.data(), grad_terms(operand), C)?;
                    }
                }
                _ => return Err(format!("{w}: presence differs from the reference")),
            }
        }
        Ok(())
    })
}

fn sddmm_case<I: Index>(p: &Params, cands: &[Candidate]) -> Result<(), String> {
    let spec: SddmmSpec = all_sddmm_specs()[p.spec % 51];
    let d = FEATURE_SIZES[p.size % FEATURE_SIZES.len()];
    let sh = shapes(spec.op, p.family % shape_families(spec.op), d);
    let out_len = sh.lhs.iter().product::<usize>().max(sh.rhs.iter().product::<usize>());
    let g = graph_for::<I>(p, out_len);
    let mut rng = Rng::new(p.seed);
    let ops = Operands::draw(&g, spec.op, (spec.lhs, spec.rhs), &sh, p.values, &mut rng);
    let what = format!("{} on {:?}/{} shapes {:?} {:?} {:?}", spec.name(), g.kind, I::NAME, sh.lhs, sh.rhs, p.values);
    let fail = |e: gnnkern::Error| format!("{what}: {e}");
    let dot = spec.op == BinaryOpKind::Dot;
    let k = sh.lhs.last().copied().filter(|_| dot).unwrap_or(1);

    let want = reference().gsddmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()).map_err(fail)?;
    let w = common::cases::operand_data(&mut rng, g.num_edges(), &want.shape()[1..], p.values, false);
    let wt = Tensor::from_vec(w.clone(), want.shape().to_vec()).unwrap();
    let want_grads = reference()
        .gsddmm_backward_alloc(&g.graph, spec, ops.lhs(), ops.rhs(), wt.view(), Wanted::BOTH)
        .map_err(fail)?;
    if cands.is_empty() {
        return Ok(());
    }
    let abs_ops = abs_operands(&ops);
    let mag_spec = SddmmSpec { op: magnitude_op(spec.op), ..spec };
    let out_mag = reference().gsddmm_alloc(&g.graph, mag_spec, abs_ops.lhs(), abs_ops.rhs()).map_err(fail)?;
    let abs_w = Tensor::from_vec(abs(&w), want.shape().to_vec()).unwrap();
    let mag_grads = reference()
        .gsddmm_backward_alloc(&g.graph, mag_spec, abs_ops.lhs(), abs_ops.rhs(), abs_w.view(), Wanted::BOTH)
        .map_err(fail)?;

    each_candidate(cands, |c| {
        let got = c.run(|ex| ex.gsddmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs()));
        if declined(c, &got) {
            return Ok(());
        }
        let got = got.map_err(fail)?;
        if dot {
            close(&what, got.data(), want.data(), out_mag.data(), k, C)?;
        } else {
            // One correctly rounded f32 operation per element.
            exact(&what, got.data(), want.data())?;
        }
        let grads = c.run(|ex| ex.gsddmm_backward_alloc(&g.graph, spec, ops.lhs(), ops.rhs(), wt.view(), Wanted::BOTH));
        if declined(c, &grads) {
            return Ok(());
        }
        let grads = grads.map_err(fail)?;
        for (side, got, want, mag, operand) in [
            ("lhs", &grads.lhs, &want_grads.lhs, &mag_grads.lhs, &ops.lhs),
            ("rhs", &grads.rhs, &want_grads.rhs, &mag_grads.rhs, &ops.rhs),
        ] {
            let w = format!("{what} grad_{side}");
            match (got, want, mag) {
                (None, None, _) => {}
                (Some(a), Some(b), Some(m)) => {
                    let op_len: usize = operand.as_ref().map_or(1, |(_, s)| s[1..].iter().product::<usize>().max(1));
                    close(&w, a.data(), b.data(), m.data(), g.max_degree() * (out_len * k / op_len).max(1), C)?;
                }
                _ => return Err(format!("{w}: presence differs from the reference")),
            }
        }
        Ok(())
    })
}

fn softmax_case<I: Index>(p: &Params, cands: &[Candidate]) -> Result<(), String> {
    let d = FEATURE_SIZES[p.size % FEATURE_SIZES.len()];
    let g = graph_for::<I>(p, d);
    let mut rng = Rng::new(p.seed);
    let shape = vec![g.num_edges(), d];
    let logits =
        Tensor::from_vec(common::cases::operand_data(&mut rng, g.num_edges(), &[d], p.values, false), shape.clone())
            .unwrap();
    let grad_out =
        Tensor::from_vec(common::cases::operand_data(&mut rng, g.num_edges(), &[d], p.values, false), shape.clone())
            .unwrap();
    let what = format!("edge_softmax on {:?}/{} d={d} {:?}", g.kind, I::NAME, p.values);
    let fail = |e: gnnkern::Error| format!("{what}: {e}");
    let want = reference().edge_softmax_alloc(&g.graph, logits.view()).map_err(fail)?;
    let want_grad = reference().edge_softmax_backward_alloc(&g.graph, want.view(), grad_out.view()).map_err(fail)?;
    if cands.is_empty() {
        return Ok(());
    }
    // Softmax outputs are in [0, 1]; the backward terms are bounded by
    // |y| (|g| + Σ |g y|), which is at most max|g| · 2.
    let gmax = grad_out.data().iter().filter(|x| x.is_finite()).fold(0f32, |m, x| m.max(x.abs()));
    let ones = vec![1.0; want.data().len()];
    let grad_mag = vec![2.0 * gmax; want.data().len()];
    let terms = g.max_degree();
    each_candidate(cands, |c| {
        let got = c.run(|ex| ex.edge_softmax_alloc(&g.graph, logits.view()));
        if declined(c, &got) {
            return Ok(());
        }
        close(&what, got.map_err(fail)?.data(), want.data(), &ones, terms, 2.0 * C)?;
        let got = c.run(|ex| ex.edge_softmax_backward_alloc(&g.graph, want.view(), grad_out.view()));
        if declined(c, &got) {
            return Ok(());
        }
        close(&format!("{what} backward"), got.map_err(fail)?.data(), want_grad.data(), &grad_mag, terms, 2.0 * C)
    })
}

type CaseFn = fn(&Params, &[Candidate]) -> Result<(), String>;

fn dispatch(p: &Params, f: CaseFn, g: CaseFn) {
    dispatch_on(p, f, g, candidates());
}

fn dispatch_on(p: &Params, f: CaseFn, g: CaseFn, cands: &[Candidate]) {
    let r = if p.wide { g(p, cands) } else { f(p, cands) };
    if let Err(e) = r {
        panic!("{e}\n(case {p:?})");
    }
}

fn params() -> impl Strategy<Value = Params> {
    (0..7usize, 0..204usize, 0..14usize, 0..7usize, 0..4usize, any::<u64>(), any::<bool>()).prop_map(
        |(kind, spec, size, family, values, seed, wide)| Params {
            kind: GraphKind::ALL[kind],
            spec,
            size,
            family,
            values: [Values::Finite, Values::Finite, Values::Integers, Values::Specials][values],
            seed,
            wide,
        },
    )
}

proptest! {
    #![proptest_config(common::proptest_config(40))]

    #[test]
    fn random_spmm_cases_match_the_reference(p in params()) {
        dispatch(&p, spmm_case::<i32>, spmm_case::<i64>);
    }

    #[test]
    fn random_sddmm_cases_match_the_reference(p in params()) {
        dispatch(&p, sddmm_case::<i32>, sddmm_case::<i64>);
    }

    #[test]
    fn random_edge_softmax_cases_match_the_reference(p in params()) {
        dispatch(&p, softmax_case::<i32>, softmax_case::<i64>);
    }
}

/// Every feature size on every graph case (the random cases above need not
/// hit every combination), specs and families cycling.
#[test]
fn every_feature_size_on_every_graph_case() {
    for (i, kind) in GraphKind::ALL.into_iter().enumerate() {
        for size in 0..FEATURE_SIZES.len() {
            let k = i * FEATURE_SIZES.len() + size;
            let p = Params {
                kind,
                spec: k * 37,
                size,
                family: k,
                values: if k % 6 == 5 { Values::Specials } else { Values::Finite },
                seed: k as u64,
                wide: k % 2 == 1,
            };
            dispatch(&p, spmm_case::<i32>, spmm_case::<i64>);
            dispatch(&Params { spec: k * 13, ..p }, sddmm_case::<i32>, sddmm_case::<i64>);
        }
    }
}

/// The multi-head layouts of the GNN layers, on the hub graph.
#[test]
fn gat_and_multi_head_layouts_on_the_hub() {
    let specs = all_spmm_specs();
    let find = |name: &str| specs.iter().position(|s| s.name() == name).unwrap();
    for (name, family) in [("u_mul_e_sum", 3), ("u_mul_e_max", 3), ("u_dot_v_sum", 1), ("e_mul_u_mean", 4)] {
        for size in [7, 12] {
            let p = Params {
                kind: GraphKind::Hub,
                spec: find(name),
                size,
                family,
                values: Values::Finite,
                seed: size as u64,
                wide: size == 12,
            };
            dispatch(&p, spmm_case::<i32>, spmm_case::<i64>);
        }
    }
}

/// The comparison machinery (magnitudes, tolerances, exactness rules) run
/// with the reference as the candidate: it must accept a deterministic
/// backend compared with itself, whatever backends this build has.
#[test]
fn the_reference_agrees_with_itself_through_the_harness() {
    let me = [Candidate { kind: gnnkern::BackendKind::Reference, isa: None }];
    for k in 0..24 {
        let p = Params {
            kind: GraphKind::ALL[k % 7],
            spec: k * 41 + 3,
            size: k % 9,
            family: k,
            values: [Values::Finite, Values::Integers, Values::Specials][k % 3],
            seed: 100 + k as u64,
            wide: k % 2 == 0,
        };
        dispatch_on(&p, spmm_case::<i32>, spmm_case::<i64>, &me);
        dispatch_on(&Params { spec: k * 5, ..p }, sddmm_case::<i32>, sddmm_case::<i64>, &me);
        dispatch_on(&p, softmax_case::<i32>, softmax_case::<i64>, &me);
    }
}

/// `GNNKERN_REQUIRE_BACKENDS` / `GNNKERN_REQUIRE_ISA` turn skips into
/// failures (checked inside `candidates()`); every listed backend then runs.
#[test]
fn required_backends_and_isa_levels_are_candidates() {
    let cands = candidates();
    for name in std::env::var("GNNKERN_REQUIRE_BACKENDS").unwrap_or_default().split(',').filter(|s| !s.is_empty()) {
        assert!(cands.iter().any(|c| c.kind.name() == name.trim()), "required backend {name} is not a candidate");
    }
    for c in cands {
        eprintln!("note: comparing backend {} with the reference", c.label());
    }
}

/// The harness itself: a comparison that must fail does fail.
#[test]
fn comparisons_detect_differences() {
    assert!(exact("x", &[1.0, f32::NAN], &[1.0, f32::NAN]).is_ok());
    assert!(exact("x", &[0.0], &[-0.0]).is_err(), "exact is bitwise");
    assert!(exact("x", &[1.0], &[1.0 + f32::EPSILON]).is_err());
    assert!(close("x", &[1.0 + f32::EPSILON], &[1.0], &[1.0], 1, 1.0).is_ok());
    assert!(close("x", &[1.0 + 4.0 * f32::EPSILON], &[1.0], &[1.0], 1, 1.0).is_err());
    assert!(close("x", &[f32::INFINITY], &[f32::NEG_INFINITY], &[1.0], 1, 1.0).is_err());
    assert!(close("x", &[0.0], &[f32::NAN], &[1.0], 1, 1.0).is_err());
    assert!(args_equal("a", &[1i64, -1], &[1, 0]).is_err());
}
