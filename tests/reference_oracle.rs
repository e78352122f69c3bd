//! The reference backend against independent brute-force f64 formulas on
//! small graphs: every g-SpMM and g-SDDMM spec on every graph case, every
//! feature size, finite and NaN/±inf inputs; the classic special cases
//! against dense adjacency algebra; edge softmax; segment reductions.

mod common;

use common::cases::{
    FEATURE_SIZES, GraphCase, GraphKind, Operands, Scale, Values, all_sddmm_specs, all_spmm_specs, graph_case,
    shape_families, shapes,
};
use common::compare::{args_equal, exact};
use common::oracle::{self, Messages};
use common::rng::Rng;
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{Index, SddmmSpec, SpmmSpec, Tensor, TensorRef, segment};

/// Reference and oracle both accumulate in f64 and round once, so they may
/// differ by the two roundings (2 ε |x|) plus the f64 reordering error
/// (n · 2^-52 · Σ|terms|, bounded here by 1e-13 · Σ|terms| · n).
fn f64_close(what: &str, got: &[f32], want: &[f32], magnitude: &[f32], terms: usize) -> Result<(), String> {
    for (i, ((&a, &b), &m)) in got.iter().zip(want).zip(magnitude).enumerate() {
        let ok = if !b.is_finite() || !a.is_finite() {
            common::compare::same_bits(a, b)
        } else {
            let tol = 2.0 * f64::from(f32::EPSILON) * f64::from(b.abs()) + 1e-13 * f64::from(m) * terms as f64;
            (f64::from(a) - f64::from(b)).abs() <= tol
        };
        if !ok {
            return Err(format!("{what}: element {i}: reference {a:?}, oracle {b:?} (magnitude {m})"));
        }
    }
    if got.len() != want.len() {
        return Err(format!("{what}: length {} != {}", got.len(), want.len()));
    }
    Ok(())
}

fn widen<I: Index>(v: &[I]) -> Vec<i64> {
    v.iter().map(|x| x.to_i64()).collect()
}

/// Picks the feature size, shape family, index type and value kind of run
/// `k` so that every feature size meets every op family and graph case.
fn variant(k: usize, op: BinaryOpKind) -> (usize, usize, Values) {
    let d = FEATURE_SIZES[k % FEATURE_SIZES.len()];
    let family = (k / FEATURE_SIZES.len() + k) % shape_families(op);
    let values = if k % 5 == 4 { Values::Specials } else { Values::Finite };
    (d, family, values)
}

fn check_spmm<I: Index>(g: &GraphCase<I>, spec: SpmmSpec, k: usize) -> Result<(), String> {
    let (d, family, values) = variant(k, spec.op);
    let mut rng = Rng::new(k as u64);
    let sh = shapes(spec.op, family, d);
    let ops = Operands::draw(g, spec.op, (spec.lhs, spec.rhs), &sh, values, &mut rng);
    let name = format!("{} on {:?}/{} shapes {:?} {:?} ({values:?})", spec.name(), g.kind, I::NAME, sh.lhs, sh.rhs);
    let got = common::backends::reference()
        .gspmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs())
        .map_err(|e| format!("{name}: {e}"))?;
    let empty: (Vec<f32>, Vec<usize>) = (Vec::new(), Vec::new());
    let l = ops.lhs.as_ref().unwrap_or(&empty);
    let r = ops.rhs.as_ref().unwrap_or(&empty);
    let m = Messages::new(
        spec.op,
        (spec.lhs, &l.0, if l.1.is_empty() { &[] } else { &l.1[1..] }),
        (spec.rhs, &r.0, if r.1.is_empty() { &[] } else { &r.1[1..] }),
    );
    let want = oracle::spmm(g, &m, spec.reduce);
    let mut shape = vec![g.num_dst];
    shape.extend_from_slice(&m.b.out_shape);
    if got.out.shape() != shape.as_slice() {
        return Err(format!("{name}: output shape {:?}, oracle {:?}", got.out.shape(), shape));
    }
    if spec.reduce.has_arg() {
        exact(&name, got.out.data(), &want.out)?;
        args_equal(&format!("{name} arg_u"), &widen(got.arg_u.as_ref().unwrap()), &want.arg_u)?;
        args_equal(&format!("{name} arg_e"), &widen(got.arg_e.as_ref().unwrap()), &want.arg_e)?;
    } else {
        f64_close(&name, got.out.data(), &want.out, &want.magnitude, want.terms)?;
    }
    Ok(())
}

fn check_sddmm<I: Index>(g: &GraphCase<I>, spec: SddmmSpec, k: usize) -> Result<(), String> {
    let (d, family, values) = variant(k, spec.op);
    let mut rng = Rng::new(1000 + k as u64);
    let sh = shapes(spec.op, family, d);
    let ops = Operands::draw(g, spec.op, (spec.lhs, spec.rhs), &sh, values, &mut rng);
    let name = format!("{} on {:?}/{} shapes {:?} {:?} ({values:?})", spec.name(), g.kind, I::NAME, sh.lhs, sh.rhs);
    let got = common::backends::reference()
        .gsddmm_alloc(&g.graph, spec, ops.lhs(), ops.rhs())
        .map_err(|e| format!("{name}: {e}"))?;
    let empty: (Vec<f32>, Vec<usize>) = (Vec::new(), Vec::new());
    let l = ops.lhs.as_ref().unwrap_or(&empty);
    let r = ops.rhs.as_ref().unwrap_or(&empty);
    let m = Messages::new(
        spec.op,
        (spec.lhs, &l.0, if l.1.is_empty() { &[] } else { &l.1[1..] }),
        (spec.rhs, &r.0, if r.1.is_empty() { &[] } else { &r.1[1..] }),
    );
    let (want, _) = oracle::sddmm(g, &m);
    // One message per element, summed in the same k order: bit-identical.
    exact(&name, got.data(), &want)
}

#[test]
fn every_spmm_spec_matches_the_brute_force_oracle_on_every_graph_case() {
    let mut k = 0;
    let mut failures = Vec::new();
    for spec in all_spmm_specs() {
        for kind in GraphKind::ALL {
            let r = if k % 2 == 0 {
                check_spmm(&graph_case::<i32>(kind, Scale::Small, k as u64), spec, k)
            } else {
                check_spmm(&graph_case::<i64>(kind, Scale::Small, k as u64), spec, k)
            };
            if let Err(e) = r {
                failures.push(e);
            }
            k += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {k} runs failed; first: {}", failures.len(), failures[0]);
}

#[test]
fn every_sddmm_spec_matches_the_brute_force_oracle_on_every_graph_case() {
    let mut k = 0;
    let mut failures = Vec::new();
    for spec in all_sddmm_specs() {
        for kind in GraphKind::ALL {
            // Every spec meets every feature size across the graph cases.
            for _ in 0..2 {
                let r = if k % 2 == 0 {
                    check_sddmm(&graph_case::<i32>(kind, Scale::Small, k as u64), spec, k)
                } else {
                    check_sddmm(&graph_case::<i64>(kind, Scale::Small, k as u64), spec, k)
                };
                if let Err(e) = r {
                    failures.push(e);
                }
                k += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{} of {k} runs failed; first: {}", failures.len(), failures[0]);
}

#[test]
fn classic_ops_match_dense_adjacency_algebra() {
    let exec = common::backends::reference();
    for (k, kind) in GraphKind::ALL.into_iter().enumerate() {
        let g = graph_case::<i64>(kind, Scale::Small, 77 + k as u64);
        let d = FEATURE_SIZES[k * 2];
        let mut rng = Rng::new(k as u64);
        let x = rng.signed_vec(g.num_src * d, 0.25, 2.0);
        let w = rng.signed_vec(g.num_edges(), 0.25, 2.0);
        let y = rng.signed_vec(g.num_dst * d, 0.25, 2.0);
        let (xs, ws, ys) = ([g.num_src, d], [g.num_edges(), 1], [g.num_dst, d]);
        let (xt, wt, yt) =
            (TensorRef::new(&x, &xs).unwrap(), TensorRef::new(&w, &ws).unwrap(), TensorRef::new(&y, &ys).unwrap());
        // copy_u_sum = Aᵀ X, with A counting duplicate edges.
        let a = oracle::dense_adjacency(&g, None);
        let want = oracle::at_x(&g, &a, &x, d);
        let got = exec.gspmm_alloc(&g.graph, SpmmSpec::from_name("copy_u_sum").unwrap(), Some(xt), None).unwrap();
        for (i, (&gv, &wv)) in got.out.data().iter().zip(&want).enumerate() {
            assert!((f64::from(gv) - wv).abs() <= 1e-5 * (1.0 + wv.abs()), "{kind:?} copy_u_sum [{i}]: {gv} vs {wv}");
        }
        // u_mul_e_sum with scalar edge weights = Wᵀ X, W the weighted adjacency.
        let wa = oracle::dense_adjacency(&g, Some(&w));
        let want = oracle::at_x(&g, &wa, &x, d);
        let got = exec.gspmm_alloc(&g.graph, SpmmSpec::from_name("u_mul_e_sum").unwrap(), Some(xt), Some(wt)).unwrap();
        for (i, (&gv, &wv)) in got.out.data().iter().zip(&want).enumerate() {
            assert!((f64::from(gv) - wv).abs() <= 1e-5 * (1.0 + wv.abs()), "{kind:?} u_mul_e_sum [{i}]: {gv} vs {wv}");
        }
        // u_dot_v = (X Yᵀ)[src, dst].
        let got = exec.gsddmm_alloc(&g.graph, SddmmSpec::from_name("u_dot_v").unwrap(), Some(xt), Some(yt)).unwrap();
        assert_eq!(got.shape(), &[g.num_edges(), 1]);
        for e in 0..g.num_edges() {
            let want: f64 =
                (0..d).map(|j| f64::from(x[g.src[e] * d + j]) * f64::from(y[g.dst[e] * d + j])).sum::<f64>();
            let gv = f64::from(got.data()[e]);
            assert!((gv - want).abs() <= 1e-5 * (1.0 + want.abs()), "{kind:?} u_dot_v [{e}]: {gv} vs {want}");
        }
    }
}

#[test]
fn empty_rows_give_zero_and_minus_one_for_every_reducer() {
    let g = graph_case::<i32>(GraphKind::EmptyRows, Scale::Small, 3);
    let x = Tensor::from_vec(vec![f32::NEG_INFINITY; g.num_src * 2], vec![g.num_src, 2]).unwrap();
    let lists = oracle::in_edges(&g);
    assert!(lists.iter().any(Vec::is_empty), "the case must have empty rows");
    for reduce in ReduceKind::ALL {
        let spec = SpmmSpec::copy(Target::Src, reduce);
        let got = common::backends::reference().gspmm_alloc(&g.graph, spec, Some(x.view()), None).unwrap();
        for (v, l) in lists.iter().enumerate() {
            if l.is_empty() {
                assert_eq!(&got.out.data()[2 * v..2 * v + 2], &[0.0, 0.0], "{reduce:?} row {v}");
                if let Some(a) = &got.arg_e {
                    assert_eq!(&a[2 * v..2 * v + 2], &[-1, -1]);
                }
            }
        }
    }
}

#[test]
fn edge_softmax_matches_the_oracle() {
    for (k, kind) in GraphKind::ALL.into_iter().enumerate() {
        let g = graph_case::<i32>(kind, Scale::Small, 5 + k as u64);
        let d = FEATURE_SIZES[(3 * k) % FEATURE_SIZES.len()];
        let mut rng = Rng::new(k as u64);
        let logits = rng.signed_vec(g.num_edges() * d, 0.0, 8.0);
        let lt = Tensor::from_vec(logits.clone(), vec![g.num_edges(), d]).unwrap();
        let got = common::backends::reference().edge_softmax_alloc(&g.graph, lt.view()).unwrap();
        let want = oracle::edge_softmax(&g, &logits, d);
        for (i, (&a, &b)) in got.data().iter().zip(&want).enumerate() {
            // One f64 evaluation rounded once to f32.
            assert!((f64::from(a) - b).abs() <= f64::from(f32::EPSILON) * b.abs(), "{kind:?} [{i}]: {a} vs {b}");
        }
    }
}

#[test]
fn segment_reductions_match_the_oracle() {
    let mut rng = Rng::new(11);
    for (k, &d) in FEATURE_SIZES.iter().enumerate() {
        // Segment lengths 0..5, some empty, some long.
        let lengths: Vec<i64> = (0..6 + k % 4).map(|i| if i % 3 == 1 { 0 } else { rng.below(6) as i64 }).collect();
        let offsets = segment::offsets_from_lengths(&lengths).unwrap();
        let offs: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
        let n = *offs.last().unwrap();
        let values = if k % 3 == 2 { Values::Specials } else { Values::Finite };
        let x = common::cases::operand_data(&mut rng, n, &[d], values, false);
        let xt = Tensor::from_vec(x.clone(), vec![n, d]).unwrap();
        for reduce in ReduceKind::ALL {
            let (out, arg) = segment::segment_reduce_alloc(reduce, &offsets, xt.view()).unwrap();
            let (want, want_arg, mag) = oracle::segment(reduce, &offs, &x, d);
            let what = format!("segment {reduce:?} d={d} {values:?}");
            if reduce.has_arg() {
                exact(&what, out.data(), &want).unwrap();
                args_equal(&what, arg.as_ref().unwrap(), &want_arg).unwrap();
            } else {
                f64_close(&what, out.data(), &want, &mag, 6).unwrap();
                assert!(arg.is_none());
            }
        }
    }
}
