//! Unit tests of the g-SDDMM walks and message forms, on small graphs
//! with scrambled edge ids and exact small-integer features.

use super::*;
use crate::buffer::aligned_filled;
use crate::isa::{IsaLevel, with_level};
use crate::kernels::EdgePartition;
use crate::layout::OperandShape;
use crate::op::Dot;
use crate::tuning::{Tuning, with_tuning};

/// In-CSR of 4 sources -> 3 destinations, edges (u, v, e) with scrambled
/// ids: (0,0,4) (2,0,1) (1,1,5) (3,1,0) (0,2,3) (3,2,2).
fn in_csr() -> (Vec<i32>, Vec<i32>, Vec<i32>) {
    (vec![0, 2, 4, 6], vec![0, 2, 1, 3, 0, 3], vec![4, 1, 5, 0, 3, 2])
}

/// Small integers, so every dot below is exact in f32.
fn features(rows: usize, d: usize, seed: usize) -> Vec<f32> {
    (0..rows * d).map(|i| ((i * 7 + seed * 3) % 5) as f32 - 2.0).collect()
}

#[test]
fn dots_are_exact_at_every_level_both_ways_round_and_staged() {
    let (indptr, cols, eids) = in_csr();
    // SAFETY: rows sorted by column, ids in bounds, eids a permutation.
    let csr = unsafe { CsrView::new_unchecked(&indptr, &cols, &eids, 4) };
    let edges = [(0, 0, 4), (2, 0, 1), (1, 1, 5), (3, 1, 0), (0, 2, 3), (3, 2, 2)];
    // Heads of whole vectors at every level (dense walk) and of 48 = 3
    // AVX-512 vectors (general loop), written directly and staged.
    for heads in [1, 3] {
        for d in [8, 16, 32, 48, 128] {
            let hd = heads * d;
            let (x, y) = (features(4, hd, 1), features(3, hd, 2));
            let plan = BroadcastPlan::new(OperandShape::of::<Dot>(), &[heads, d], &[heads, d]).unwrap();
            for src_is_lhs in [true, false] {
                let (lhs, rhs, lt, rt) =
                    if src_is_lhs { (&x, &y, Target::Src, Target::Dst) } else { (&y, &x, Target::Dst, Target::Src) };
                let mut want = vec![0f32; 6 * heads];
                for (u, v, e) in edges {
                    for h in 0..heads {
                        let at = |row: usize, j: usize| row * hd + h * d + j;
                        let dot: f64 = (0..d).map(|j| f64::from(x[at(u, j)]) * f64::from(y[at(v, j)])).sum();
                        want[e * heads + h] = dot as f32;
                    }
                }
                for level in IsaLevel::tested() {
                    for staging in [Staging::Off, Staging::Windows(2)] {
                        let mut out = vec![f32::NAN; 6 * heads];
                        let args = SddmmArgs {
                            csr,
                            order: SddmmOrder::InCsr,
                            lhs_target: lt,
                            rhs_target: rt,
                            plan: &plan,
                            lhs,
                            rhs,
                            out: &mut out,
                        };
                        let tuning = Tuning { staging, ..Tuning::DEFAULT };
                        with_level(level, || with_tuning(tuning, || sddmm::<Dot, i32>(args, None))).unwrap().unwrap();
                        let what = format!("{heads} x {d}, src lhs {src_is_lhs}, {level:?}, {staging:?}");
                        assert_eq!(out, want, "{what}");
                    }
                }
            }
        }
    }
}

/// A random multigraph (sources 0..37 → destinations 0..23, a hub
/// destination, edges in random id order) as `(src, dst)` by edge id,
/// its in-CSR and its out-CSR, rows sorted by (column, edge id).
#[allow(clippy::type_complexity)]
fn random_graph<I: Index + TryFrom<usize>>() -> (usize, usize, Vec<I>, Vec<I>, [(Vec<I>, Vec<I>, Vec<I>); 2]) {
    let mut next = crate::kernels::common::xorshift(0x2545_f491_4f6c_dd1du64);
    let (num_src, num_dst, e) = (37, 23, 400);
    let src: Vec<usize> = (0..e).map(|_| next(num_src)).collect();
    let dst: Vec<usize> = (0..e).map(|_| if next(3) == 0 { 5 } else { next(num_dst) }).collect();
    let id = |x: usize| I::try_from(x).ok().unwrap();
    let csr = |rows: &[usize], cols: &[usize], n: usize| {
        let mut order: Vec<usize> = (0..e).collect();
        order.sort_by_key(|&k| (rows[k], cols[k], k));
        let mut indptr = vec![0usize; n + 1];
        rows.iter().for_each(|&r| indptr[r + 1] += 1);
        (0..n).for_each(|r| indptr[r + 1] += indptr[r]);
        (
            indptr.into_iter().map(id).collect(),
            order.iter().map(|&k| id(cols[k])).collect(),
            order.iter().map(|&k| id(k)).collect(),
        )
    };
    let csrs = [csr(&dst, &src, num_dst), csr(&src, &dst, num_src)];
    (num_src, num_dst, src.iter().map(|&u| id(u)).collect(), dst.iter().map(|&v| id(v)).collect(), csrs)
}

/// `O` over the edge walk against both CSR walks, bitwise, at every
/// level, streamed and not, for operand `shape`s on `targets`.
fn edge_walk_matches<O: BinaryOp, I: Index + TryFrom<usize>>(shapes: (&[usize], &[usize]), targets: (Target, Target)) {
    let (num_src, num_dst, src, dst, [in_csr, out_csr]) = random_graph::<I>();
    let e = src.len();
    // SAFETY: `random_graph` builds valid CSRs and an edge list of the same edges.
    let (in_view, out_view, list) = unsafe {
        (
            CsrView::new_unchecked(&in_csr.0, &in_csr.1, &in_csr.2, num_src),
            CsrView::new_unchecked(&out_csr.0, &out_csr.1, &out_csr.2, num_dst),
            EdgeList::new_unchecked(&src, &dst, num_src, num_dst),
        )
    };
    let plan = BroadcastPlan::new(OperandShape::of::<O>(), shapes.0, shapes.1).unwrap();
    let rows = |t: Target| match t {
        Target::Src => num_src,
        Target::Dst => num_dst,
        Target::Edge => e,
    };
    let (lhs, rhs) = (features(rows(targets.0), plan.lhs_len, 1), features(rows(targets.1), plan.rhs_len, 2));
    let lhs: Vec<f32> = lhs.iter().enumerate().map(|(i, x)| x + (i % 11) as f32 / 7.0).collect();
    let what = format!("{} {shapes:?} {targets:?} {}", O::NAME, I::NAME);
    for level in IsaLevel::tested() {
        for streaming in [Streaming::Off, Streaming::On] {
            let run = |walk: Option<SddmmOrder>, list: EdgeList<'_, I>| {
                let mut out = aligned_filled(e * plan.out_len, f32::NAN);
                let (csr, order) = match walk {
                    Some(SddmmOrder::OutCsr) => (out_view, SddmmOrder::OutCsr),
                    _ => (in_view, SddmmOrder::InCsr),
                };
                let args = SddmmArgs {
                    csr,
                    order,
                    lhs_target: targets.0,
                    rhs_target: targets.1,
                    plan: &plan,
                    lhs: &lhs,
                    rhs: &rhs,
                    out: &mut out,
                };
                let tuning = Tuning { streaming, ..Tuning::DEFAULT };
                with_level(level, || {
                    with_tuning(tuning, || match walk {
                        Some(_) => sddmm::<O, I>(args, None),
                        None => sddmm_edge_order::<O, I>(args, list),
                    })
                })
                .unwrap()
                .unwrap();
                out.iter().map(|x| x.to_bits()).collect::<Vec<u32>>()
            };
            let edges = run(None, list);
            assert!(edges.iter().all(|&b| !f32::from_bits(b).is_nan()), "{what}: every message written");
            for walk in [SddmmOrder::InCsr, SddmmOrder::OutCsr] {
                assert_eq!(run(Some(walk), list), edges, "{what}: {walk:?} at {level:?}, {streaming:?}");
            }
            // Regrouped by destination range: 23, 5 and 1 parts, and by
            // edge-id range from either CSR: 1, a few and E parts (one
            // each under Miri, which interprets every lane of every walk).
            let (rows, edge_parts): (&[usize], &[usize]) =
                if cfg!(miri) { (&[5], &[7]) } else { (&[1, 5, num_dst], &[1, 7, e]) };
            let by_rows = rows.iter().map(|&r| EdgePartition::by_destination_range(&list, r));
            let by_edges = edge_parts.iter().flat_map(|&per| {
                [EdgePartition::by_edge_range(&in_view, true, per), EdgePartition::by_edge_range(&out_view, false, per)]
            });
            for parts in by_rows.chain(by_edges) {
                let got = run(None, parts.list());
                assert_eq!(
                    got,
                    edges,
                    "{what}: {:?} ({} parts) at {level:?}, {streaming:?}",
                    parts.grouping(),
                    parts.num_parts()
                );
            }
        }
    }
}

#[test]
fn the_edge_walk_is_bitwise_the_csr_walks_at_every_level() {
    use crate::op::{Add, Mul, Sub};
    let (src_dst, dst_src, src_edge) =
        ((Target::Src, Target::Dst), (Target::Dst, Target::Src), (Target::Src, Target::Edge));
    // Dense dots of 1, 2, 4 and 8 AVX-512 vectors (128 is 16 at AVX2, 64
    // is 16 at 128-bit vectors), several heads, and lengths the dense loop
    // does not take (48 = 3 vectors, 5; 128 at 128-bit vectors). Under
    // Miri, which interprets every lane, the rows of at most two
    // vectors (the dense path, a partial vector, heads).
    let dots: &[[usize; 2]] = if cfg!(miri) {
        &[[1, 32], [3, 16], [2, 5]]
    } else {
        &[[1, 16], [1, 32], [2, 64], [1, 128], [3, 16], [1, 48], [2, 5], [1, 8]]
    };
    for heads_d in dots {
        edge_walk_matches::<Dot, i32>((heads_d, heads_d), src_dst);
        edge_walk_matches::<Dot, i64>((heads_d, heads_d), dst_src);
    }
    // Dense elementwise rows, rows with a partial vector, a broadcast
    // operand, and an edge operand (the general loop).
    for &d in if cfg!(miri) { &[32, 5][..] } else { &[16, 32, 64, 128, 5, 40] } {
        edge_walk_matches::<Add, i32>((&[d], &[d]), src_dst);
        edge_walk_matches::<Sub, i64>((&[d], &[d]), dst_src);
        edge_walk_matches::<Mul, i32>((&[d], &[1]), src_edge);
    }
    edge_walk_matches::<Add, i32>((&[4, 16], &[1, 16]), src_dst);
}

#[test]
fn an_edge_list_of_another_graph_is_a_typed_error() {
    let (num_src, num_dst, src, dst, [in_csr, _]) = random_graph::<i32>();
    // SAFETY: as in `edge_walk_matches`.
    let csr = unsafe { CsrView::new_unchecked(&in_csr.0, &in_csr.1, &in_csr.2, num_src) };
    let plan = BroadcastPlan::new(OperandShape::of::<Dot>(), &[16], &[16]).unwrap();
    let (x, y) = (features(num_src, 16, 1), features(num_dst, 16, 2));
    // SAFETY: every id is within the (equal or larger) bounds given.
    let lists = unsafe {
        [
            (EdgeList::new_unchecked(&src[1..], &dst[1..], num_src, num_dst), "edge list edges"),
            (EdgeList::new_unchecked(&src, &dst, num_src + 1, num_dst), "edge list source nodes"),
            (EdgeList::new_unchecked(&src, &dst, num_src, num_dst + 2), "edge list destination nodes"),
        ]
    };
    for (list, what) in lists {
        let mut out = vec![7f32; src.len()];
        let args = SddmmArgs {
            csr,
            order: SddmmOrder::InCsr,
            lhs_target: Target::Src,
            rhs_target: Target::Dst,
            plan: &plan,
            lhs: &x,
            rhs: &y,
            out: &mut out,
        };
        let err = sddmm_edge_order::<Dot, i32>(args, list).unwrap_err();
        assert!(err.what.starts_with(what), "{what}: {err:?}");
        assert!(out.iter().all(|&v| v == 7.0), "{what}: nothing written");
    }
}
