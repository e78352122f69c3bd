//! Buffer recycling: layers and models take their outputs from the
//! context's pool unzeroed, so every op must overwrite every element it
//! hands on. A pool seeded with NaN-filled buffers of every size the pass
//! needs must give bit-identical logits and gradients to a fresh pool, on
//! the second pass as on the first (layer caches are replaced then).

use gnnkern::Exec;
use gnnkern_bench::models::conv::SageAggregator;
use gnnkern_bench::models::data::with_self_loops;
use gnnkern_bench::models::nets::{Net, NetConfig};
use gnnkern_bench::models::nn::cross_entropy;
use gnnkern_bench::models::rng::Rng;
use gnnkern_bench::models::sparse::G;
use gnnkern_bench::models::{Ctx, Mat};

fn random_mat(rows: usize, cols: usize, rng: &mut Rng) -> Mat {
    Mat::from_values(rows, cols, (0..rows * cols).map(|_| rng.normal()))
}

/// 40 nodes, a ring plus seeded random edges (duplicates and self-loops
/// possible), node 39 without in-edges.
fn graph() -> G {
    let mut rng = Rng::new(5);
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for v in 0..39i32 {
        src.push((v + 1) % 39);
        dst.push(v);
        for _ in 0..3 {
            src.push(rng.below(40) as i32);
            dst.push(v);
        }
    }
    G::from_coo(40, 40, src, dst).unwrap()
}

/// Builds a model from an initialisation stream.
type NetBuilder<'a> = Box<dyn Fn(&mut Rng) -> Net + 'a>;

/// Logits and parameter gradients of one training pass.
fn pass(net: &mut Net, ctx: &mut Ctx, graphs: &[&G], x: &Mat, labels: &[i32]) -> (Vec<f32>, Vec<Vec<f32>>) {
    let rows: Vec<usize> = (0..graphs[graphs.len() - 1].num_dst()).step_by(2).collect();
    net.params().into_iter().for_each(|p| p.zero_grad());
    let logits = net.forward(ctx, graphs, x).unwrap();
    let (_, grad) = cross_entropy(&logits, labels, &rows);
    let out = logits.data.to_vec();
    ctx.recycle(logits);
    net.backward(ctx, graphs, x, grad).unwrap();
    (out, net.params().iter().map(|p| p.grad.data.to_vec()).collect())
}

/// A context whose pool holds NaN buffers of every length up to `max_len`
/// in steps, so any unwritten element of a pooled output shows up.
fn poisoned_ctx(max_len: usize) -> Ctx {
    let mut ctx = Ctx::new(Exec::default(), 3);
    for len in (1..=max_len).step_by(7) {
        ctx.recycle_buf(gnnkern::aligned_filled(len, f32::NAN));
    }
    ctx
}

#[test]
fn recycled_buffers_give_the_results_of_fresh_ones() {
    let g = graph();
    let gl = with_self_loops(&g).unwrap();
    let mut rng = Rng::new(8);
    let x = random_mat(40, 6, &mut rng);
    let labels: Vec<i32> = (0..40).map(|i| i % 3).collect();
    // in (6) > hidden (5): weight-first orders; hidden > classes too.
    let c = NetConfig { in_dim: 6, hidden: 5, classes: 3, layers: 2, dropout: 0.4, heads: 2, attn_drop: 0.3 };
    let nets: Vec<(&str, NetBuilder<'_>, &G)> = vec![
        ("gcn", Box::new(|r: &mut Rng| Net::gcn(&c, r)), &gl),
        ("sage", Box::new(|r: &mut Rng| Net::sage(&c, SageAggregator::Mean, r)), &g),
        ("sage-pool", Box::new(|r: &mut Rng| Net::sage(&c, SageAggregator::Pool, r)), &g),
        ("gat", Box::new(|r: &mut Rng| Net::gat(&c, r)), &gl),
    ];
    for (name, build, graph) in nets {
        let graphs = [graph, graph];
        let mut fresh_net = build(&mut Rng::new(1));
        let expected = pass(&mut fresh_net, &mut Ctx::new(Exec::default(), 3), &graphs, &x, &labels);
        assert!(expected.0.iter().all(|v| v.is_finite()), "{name}: fresh logits finite");
        let mut net = build(&mut Rng::new(1));
        let mut ctx = poisoned_ctx(40 * 40 * 2);
        for round in 0..3 {
            let got = pass(&mut net, &mut ctx, &graphs, &x, &labels);
            assert_eq!(got.0, expected.0, "{name}: logits, round {round}");
            assert_eq!(got.1, expected.1, "{name}: gradients, round {round}");
        }
    }
}
