//! The MKL backend against the reference backend (run with `--features mkl`).
//!
//! Every supported call (copy_u sum/mean, u_mul_e/e_mul_u sum with a scalar
//! edge weight) on random graphs with the edge cases (no edges, empty rows,
//! a hub row, duplicate edges, self-loops, bipartite shapes) and feature
//! widths straddling the vector lanes; both index types; outputs prefilled
//! with NaN so a row MKL fails to overwrite is caught. Unsupported calls must
//! be `Unsupported` and leave the output untouched.
#![cfg(feature = "mkl")]

mod common;

use common::rng::Rng;
use gnnkern::{BackendKind, Error, Exec, Graph, Index, SpmmIo, SpmmSpec, Tensor};

/// Edge lists covering the cases the kernels special-case.
fn graphs(rng: &mut Rng) -> Vec<(usize, usize, Vec<usize>, Vec<usize>)> {
    let mut out = vec![(5, 4, vec![], vec![])];
    // Random with empty rows, duplicates and self-loops.
    let (n, e) = (60, 400);
    let (s, d): (Vec<_>, Vec<_>) = (0..e).map(|_| (rng.below(n), rng.below(n / 2))).unzip();
    out.push((n, n, s, d));
    // One hub row with thousands of in-edges plus a few others.
    let mut s: Vec<_> = (0..3000).map(|i| i % 50).collect();
    let mut d = vec![7; 3000];
    s.extend([1, 2, 2, 3]);
    d.extend([0, 0, 0, 9]);
    out.push((50, 12, s, d));
    // Bipartite: more destinations than sources.
    let (s, d): (Vec<_>, Vec<_>) = (0..500).map(|_| (rng.below(20), rng.below(300))).unzip();
    out.push((20, 300, s, d));
    out
}

fn to_graph<I: Index>(g: &(usize, usize, Vec<usize>, Vec<usize>)) -> Graph<I> {
    let conv = |v: &[usize]| v.iter().map(|&x| I::from_usize(x)).collect::<Vec<I>>();
    Graph::from_coo(g.0, g.1, conv(&g.2), conv(&g.3)).unwrap()
}

/// Runs `name` on MKL and the reference and compares within the bound of
/// f32 recursive summation, `degree · eps · Σ|terms|` (the magnitude comes
/// from the reference on `|x|`, `|w|`).
fn compare<I: Index>(graph: &Graph<I>, name: &str, x: &Tensor, w: Option<&Tensor>) {
    let spec = SpmmSpec::from_name(name).unwrap();
    let d = x.shape()[1..].iter().product::<usize>();
    let run = |kind, x: &Tensor, w: Option<&Tensor>| {
        let shape: Vec<usize> = std::iter::once(graph.num_dst()).chain(x.shape()[1..].iter().copied()).collect();
        let mut out = Tensor::from_vec(vec![f32::NAN; graph.num_dst() * d], shape).unwrap();
        let (lhs, rhs) = if name.starts_with("e_") {
            (w.map(Tensor::view), Some(x.view()))
        } else {
            (Some(x.view()), w.map(Tensor::view))
        };
        let ran = Exec::forced(kind).gspmm(graph, spec, SpmmIo::new(lhs, rhs, out.view_mut())).unwrap();
        assert_eq!(ran, kind);
        out
    };
    let abs = |t: &Tensor| Tensor::from_vec(t.data().iter().map(|v| v.abs()).collect(), t.shape().to_vec()).unwrap();
    let mkl = run(BackendKind::Mkl, x, w);
    let reference = run(BackendKind::Reference, x, w);
    let magnitude = run(BackendKind::Reference, &abs(x), w.map(abs).as_ref());
    let degrees = graph.in_degrees();
    for (i, (a, b)) in mkl.data().iter().zip(reference.data()).enumerate() {
        let deg = degrees[i / d.max(1)] as f32;
        let tol = 2.0 * f32::EPSILON * deg.max(1.0) * magnitude.data()[i];
        assert!((a - b).abs() <= tol, "{name} ({}): out[{i}] mkl {a} vs reference {b} (tol {tol})", I::NAME);
    }
}

fn all_supported_calls<I: Index>() {
    let mut rng = Rng::new(7);
    for g in graphs(&mut rng) {
        let graph = to_graph::<I>(&g);
        for d in [1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 257] {
            let x = Tensor::from_vec(rng.vec(graph.num_src() * d, -1.0, 1.0), vec![graph.num_src(), d]).unwrap();
            let w = Tensor::from_vec(rng.vec(graph.num_edges(), -1.0, 1.0), vec![graph.num_edges(), 1]).unwrap();
            compare(&graph, "copy_u_sum", &x, None);
            compare(&graph, "copy_u_mean", &x, None);
            compare(&graph, "u_mul_e_sum", &x, Some(&w));
            compare(&graph, "e_mul_u_sum", &x, Some(&w));
        }
        // A multi-dimensional feature shape is one flat row for MKL.
        let x = Tensor::from_vec(rng.vec(graph.num_src() * 12, -1.0, 1.0), vec![graph.num_src(), 3, 4]).unwrap();
        compare(&graph, "copy_u_sum", &x, None);
        // The reverse graph has its own cached handles.
        let r = graph.reverse();
        let x = Tensor::from_vec(rng.vec(r.num_src() * 5, -1.0, 1.0), vec![r.num_src(), 5]).unwrap();
        compare(&r, "copy_u_mean", &x, None);
        compare(
            &graph,
            "copy_u_mean",
            &Tensor::from_vec(rng.vec(graph.num_src() * 5, -1.0, 1.0), vec![graph.num_src(), 5]).unwrap(),
            None,
        );
    }
}

#[test]
fn mkl_matches_reference_i32() {
    all_supported_calls::<i32>();
}

#[test]
fn mkl_matches_reference_i64() {
    all_supported_calls::<i64>();
}

#[test]
fn unsupported_calls_write_nothing() {
    let graph = Graph::<i32>::from_coo(3, 3, vec![0, 1, 2], vec![1, 2, 0]).unwrap();
    let x = Tensor::from_vec(vec![1.0; 6], vec![3, 2]).unwrap();
    let w2 = Tensor::from_vec(vec![1.0; 6], vec![3, 2]).unwrap();
    let cases: [(&str, Option<&Tensor>, Option<&Tensor>); 4] = [
        ("copy_u_max", Some(&x), None),
        ("u_add_e_sum", Some(&x), Some(&w2)),
        ("u_mul_e_sum", Some(&x), Some(&w2)),
        ("copy_e_sum", Some(&w2), None),
    ];
    for (name, lhs, rhs) in cases {
        let mut out = Tensor::from_vec(vec![-3.0; 6], vec![3, 2]).unwrap();
        let spec = SpmmSpec::from_name(name).unwrap();
        let io = SpmmIo::new(lhs.map(Tensor::view), rhs.map(Tensor::view), out.view_mut());
        let err = Exec::forced(BackendKind::Mkl).gspmm(&graph, spec, io).unwrap_err();
        assert!(matches!(err, Error::Unsupported { backend: "mkl", .. }), "{name}: {err}");
        assert!(out.data().iter().all(|&v| v == -3.0), "{name} wrote to its output");
    }
}

/// `auto` offers MKL the narrow rows where the crossover measured it faster
/// (`AUTO_MAX_WIDTH`) and keeps the SIMD kernels above that and for calls
/// MKL does not run.
#[test]
fn auto_uses_mkl_only_in_its_measured_region() {
    let mut rng = Rng::new(11);
    let n = 64;
    let src: Vec<i32> = (0..512).map(|i| ((i * 7 + 3) % n) as i32).collect();
    let dst: Vec<i32> = (0..512).map(|i| ((i * 13 + 5) % n) as i32).collect();
    let graph = Graph::<i32>::from_coo(n, n, src, dst).unwrap();
    let run = |name: &str, d: usize, rng: &mut Rng| {
        let x = Tensor::from_vec(rng.vec(n * d, -1.0, 1.0), vec![n, d]).unwrap();
        let mut out = Tensor::from_vec(vec![0.0; n * d], vec![n, d]).unwrap();
        let spec = SpmmSpec::from_name(name).unwrap();
        Exec::default().gspmm(&graph, spec, SpmmIo::new(Some(x.view()), None, out.view_mut())).unwrap()
    };
    assert_eq!(run("copy_u_sum", 4, &mut rng), BackendKind::Mkl);
    assert_eq!(run("copy_u_mean", gnnkern::backend::mkl::AUTO_MAX_WIDTH, &mut rng), BackendKind::Mkl);
    assert_eq!(run("copy_u_sum", 32, &mut rng), BackendKind::Simd);
    assert_eq!(run("copy_u_max", 4, &mut rng), BackendKind::Simd);
}
