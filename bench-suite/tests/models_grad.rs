//! Every layer's backward against central finite differences on tiny
//! graphs: a plain graph with a self-loop, a duplicate edge and a node
//! without in-edges, and a bipartite sampled-style block. The loss is
//! `Σ out ⊙ R` for a fixed random `R`, so `R` is the output gradient.

use gnnkern::Exec;
use gnnkern_bench::models::batch_norm::BatchNorm;
use gnnkern_bench::models::conv::{Conv, GatConv, GraphConv, SageAggregator, SageConv};
use gnnkern_bench::models::data::{Task, with_self_loops};
use gnnkern_bench::models::nets::{Net, NetConfig};
use gnnkern_bench::models::nn::cross_entropy;
use gnnkern_bench::models::rng::Rng;
use gnnkern_bench::models::sparse::G;
use gnnkern_bench::models::{Ctx, Mat};

fn random_mat(rows: usize, cols: usize, rng: &mut Rng) -> Mat {
    Mat::from_values(rows, cols, (0..rows * cols).map(|_| rng.normal()))
}

/// 6 nodes: self-loop on 1, duplicate edge 0->2, node 5 has no in-edges.
fn tiny_graph() -> G {
    let src = vec![0, 0, 1, 2, 3, 4, 0, 1, 3, 5, 2];
    let dst = vec![2, 2, 1, 3, 4, 0, 1, 4, 2, 3, 0];
    G::from_coo(6, 6, src, dst).unwrap()
}

/// A block: 7 sources, 4 destinations (the first 4 sources); destination 3
/// has no sampled edges.
fn tiny_block() -> G {
    let src = vec![4, 5, 6, 0, 1, 2, 6, 5];
    let dst = vec![0, 0, 1, 1, 2, 2, 2, 0];
    G::from_coo(7, 4, src, dst).unwrap()
}

fn loss_of(layer: &mut dyn Conv, g: &G, x: &Mat, r: &Mat) -> f64 {
    let mut ctx = Ctx::new(Exec::default(), 11);
    let out = layer.forward(&mut ctx, g, x).unwrap();
    out.data.iter().zip(r.data.iter()).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum()
}

fn close(analytic: f32, numeric: f64, what: &str) {
    let tol = 2e-2 * numeric.abs().max(0.5);
    assert!((f64::from(analytic) - numeric).abs() <= tol, "{what}: analytic {analytic} vs finite difference {numeric}");
}

/// Checks input and parameter gradients of `layer` on `g`.
fn check_conv(mut layer: Box<dyn Conv>, g: &G, in_dim: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    let x = random_mat(g.num_src(), in_dim, &mut rng);
    let mut ctx = Ctx::new(Exec::default(), 11);
    let out = layer.forward(&mut ctx, g, &x).unwrap();
    assert_eq!(out.rows, g.num_dst());
    let r = random_mat(out.rows, out.cols, &mut rng);
    layer.params().into_iter().for_each(|p| p.zero_grad());
    let dx = layer.backward(&mut ctx, g, &x, &r, true).unwrap().unwrap();
    assert_eq!((dx.rows, dx.cols), (x.rows, x.cols));
    // Small steps: max pooling and LeakyReLU have kinks, and a step that
    // crosses one (two neighbours within eps of each other) is not a
    // derivative. f32 rounding of the loss (~1e-6) stays far below the
    // tolerance at this step.
    let eps = 1e-3f32;
    for i in 0..x.data.len() {
        let mut xp = x.clone();
        xp.data[i] += eps;
        let lp = loss_of(layer.as_mut(), g, &xp, &r);
        xp.data[i] -= 2.0 * eps;
        let lm = loss_of(layer.as_mut(), g, &xp, &r);
        close(dx.data[i], (lp - lm) / (2.0 * f64::from(eps)), &format!("dx[{i}]"));
    }
    let grads: Vec<Vec<f32>> = layer.params().iter().map(|p| p.grad.data.to_vec()).collect();
    let mut checked = 0;
    for (pi, grad) in grads.iter().enumerate() {
        for (i, &gv) in grad.iter().enumerate() {
            let orig = layer.params()[pi].value.data[i];
            layer.params()[pi].value.data[i] = orig + eps;
            let lp = loss_of(layer.as_mut(), g, &x, &r);
            layer.params()[pi].value.data[i] = orig - eps;
            let lm = loss_of(layer.as_mut(), g, &x, &r);
            layer.params()[pi].value.data[i] = orig;
            close(gv, (lp - lm) / (2.0 * f64::from(eps)), &format!("param {pi}[{i}]"));
            checked += 1;
        }
    }
    assert!(checked > 0);
}

#[test]
fn graph_conv_gradients() {
    let g = with_self_loops(&tiny_graph()).unwrap();
    let mut rng = Rng::new(1);
    // in > out (GEMM before aggregation) and in <= out (aggregation first).
    check_conv(Box::new(GraphConv::new(5, 3, &mut rng)), &g, 5, 2);
    check_conv(Box::new(GraphConv::new(3, 4, &mut rng)), &g, 3, 3);
    check_conv(Box::new(GraphConv::new(4, 2, &mut rng)), &tiny_block(), 4, 4);
}

#[test]
fn sage_conv_gradients() {
    let mut rng = Rng::new(5);
    for g in [tiny_graph(), tiny_block()] {
        check_conv(Box::new(SageConv::new(5, 3, SageAggregator::Mean, &mut rng)), &g, 5, 6);
        check_conv(Box::new(SageConv::new(3, 4, SageAggregator::Mean, &mut rng)), &g, 3, 7);
        check_conv(Box::new(SageConv::new(4, 3, SageAggregator::Pool, &mut rng)), &g, 4, 8);
    }
}

#[test]
fn gat_conv_gradients() {
    let mut rng = Rng::new(9);
    let g = with_self_loops(&tiny_graph()).unwrap();
    check_conv(Box::new(GatConv::new(4, 3, 2, 0.0, 1, &mut rng)), &g, 4, 10);
    // Attention dropout: the mask is fixed by (seed, step, salt), so the
    // finite differences see the same mask as backward.
    check_conv(Box::new(GatConv::new(4, 2, 3, 0.4, 2, &mut rng)), &g, 4, 11);
    check_conv(Box::new(GatConv::new(3, 2, 2, 0.0, 3, &mut rng)), &tiny_block(), 3, 12);
}

/// Whole two-layer models with activations, dropout and the masked
/// cross-entropy: parameter gradients against finite differences.
#[test]
fn model_gradients() {
    let g = tiny_graph();
    let gl = with_self_loops(&g).unwrap();
    let mut rng = Rng::new(21);
    let x = random_mat(6, 5, &mut rng);
    let labels = vec![0, 1, 2, 1, 0, 2];
    let rows = vec![0, 2, 3, 5];
    let c = NetConfig { in_dim: 5, hidden: 4, classes: 3, layers: 2, dropout: 0.3, heads: 2, attn_drop: 0.2 };
    let nets: Vec<(Net, &G)> = vec![
        (Net::gcn(&c, &mut rng), &gl),
        (Net::sage(&c, SageAggregator::Mean, &mut rng), &g),
        (Net::sage(&c, SageAggregator::Pool, &mut rng), &g),
        (Net::gat(&c, &mut rng), &gl),
    ];
    for (mut net, graph) in nets {
        let graphs = [graph, graph];
        let loss = |net: &mut Net| {
            let mut ctx = Ctx::new(Exec::default(), 3);
            let logits = net.forward(&mut ctx, &graphs, &x).unwrap();
            f64::from(cross_entropy(&logits, &labels, &rows).0)
        };
        let mut ctx = Ctx::new(Exec::default(), 3);
        let logits = net.forward(&mut ctx, &graphs, &x).unwrap();
        let (_, grad) = cross_entropy(&logits, &labels, &rows);
        net.params().into_iter().for_each(|p| p.zero_grad());
        net.backward(&mut ctx, &graphs, &x, grad).unwrap();
        let grads: Vec<Vec<f32>> = net.params().iter().map(|p| p.grad.data.to_vec()).collect();
        let eps = 2e-3f32;
        for (pi, grad) in grads.iter().enumerate() {
            for (i, &gv) in grad.iter().enumerate() {
                let orig = net.params()[pi].value.data[i];
                net.params()[pi].value.data[i] = orig + eps;
                let lp = loss(&mut net);
                net.params()[pi].value.data[i] = orig - eps;
                let lm = loss(&mut net);
                net.params()[pi].value.data[i] = orig;
                let fd = (lp - lm) / (2.0 * f64::from(eps));
                assert!((f64::from(gv) - fd).abs() <= 1e-2 * fd.abs().max(0.1), "param {pi}[{i}]: {gv} vs {fd}");
            }
        }
    }
}

/// Batch norm in training mode (gradients through the batch statistics)
/// and in evaluation mode (running statistics are constants).
#[test]
fn batch_norm_gradients() {
    let mut rng = Rng::new(31);
    let x = random_mat(7, 3, &mut rng);
    let r = random_mat(7, 3, &mut rng);
    for training in [true, false] {
        let mut bn = BatchNorm::new(3);
        bn.gamma.value = Mat::from_slice(1, 3, &[1.2, 0.7, -0.4]);
        bn.beta.value = Mat::from_slice(1, 3, &[0.1, -0.2, 0.3]);
        bn.running_mean = vec![0.3, -0.1, 0.2];
        bn.running_var = vec![0.5, 2.0, 1.5];
        let loss = |bn: &BatchNorm, x: &Mat| -> f64 {
            // A clone, so the probe does not move the running statistics.
            let y = bn.clone().forward(x, training);
            y.data.iter().zip(r.data.iter()).map(|(&a, &b)| f64::from(a) * f64::from(b)).sum()
        };
        let mut probe = bn.clone();
        probe.forward(&x, training);
        let dx = probe.backward(&r);
        let eps = 1e-2;
        for i in 0..x.data.len() {
            let mut xp = x.clone();
            xp.data[i] += eps;
            let lp = loss(&bn, &xp);
            xp.data[i] -= 2.0 * eps;
            let lm = loss(&bn, &xp);
            close(dx.data[i], (lp - lm) / (2.0 * f64::from(eps)), &format!("bn (training {training}) dx[{i}]"));
        }
        for j in 0..3 {
            let mut bp = bn.clone();
            bp.gamma.value.data[j] += eps;
            let lp = loss(&bp, &x);
            bp.gamma.value.data[j] -= 2.0 * eps;
            let lm = loss(&bp, &x);
            close(probe.gamma.grad.data[j], (lp - lm) / (2.0 * f64::from(eps)), "bn dgamma");
            let sum_r: f64 = (0..7).map(|rr| f64::from(r.row(rr)[j])).sum();
            close(probe.beta.grad.data[j], sum_r, "bn dbeta");
        }
    }
}

/// Running statistics: training mode moves them by `momentum` towards the
/// batch mean and unbiased variance (torch `BatchNorm1d`) and normalises
/// with the batch's own statistics; evaluation mode uses them and leaves
/// them alone.
#[test]
fn batch_norm_running_statistics() {
    // Column 0: 1, 2, 3, 6 (mean 3, biased variance 3.5, unbiased 14/3);
    // column 1 constant 5 (variance 0).
    let x = Mat::from_slice(4, 2, &[1.0, 5.0, 2.0, 5.0, 3.0, 5.0, 6.0, 5.0]);
    let mut bn = BatchNorm::new(2);
    let y = bn.forward(&x, true);
    let approx = |a: f32, b: f64, what: &str| assert!((f64::from(a) - b).abs() < 1e-5, "{what}: {a} vs {b}");
    approx(bn.running_mean[0], 0.1 * 3.0, "running mean 0");
    approx(bn.running_mean[1], 0.1 * 5.0, "running mean 1");
    approx(bn.running_var[0], 0.9 + 0.1 * 14.0 / 3.0, "running var 0");
    approx(bn.running_var[1], 0.9, "running var 1");
    // Training output uses the batch statistics: (1 - 3)/sqrt(3.5 + 1e-5).
    approx(y.row(0)[0], -2.0 / (3.5f64 + 1e-5).sqrt(), "training output");
    approx(y.row(2)[1], 0.0, "constant column");
    // A second training batch moves the statistics again.
    bn.forward(&x, true);
    approx(bn.running_mean[0], 0.9 * 0.3 + 0.1 * 3.0, "running mean after two steps");
    // Evaluation: normalise with the running statistics, which stay put.
    let (rm, rv) = (bn.running_mean.clone(), bn.running_var.clone());
    let single = Mat::from_slice(1, 2, &[4.0, 5.0]);
    let y = bn.forward(&single, false);
    assert_eq!((bn.running_mean.clone(), bn.running_var.clone()), (rm.clone(), rv.clone()));
    approx(y.row(0)[0], (4.0 - f64::from(rm[0])) / (f64::from(rv[0]) + 1e-5).sqrt(), "eval output 0");
    approx(y.row(0)[1], (5.0 - f64::from(rm[1])) / (f64::from(rv[1]) + 1e-5).sqrt(), "eval output 1");
    // In evaluation mode a row's output does not depend on its batch.
    let batch = Mat::from_slice(2, 2, &[4.0, 5.0, -7.0, 1.0]);
    assert_eq!(bn.forward(&batch, false).row(0), y.row(0));
}

/// The task builder gives generated graphs features, labels and a split.
#[test]
fn generated_task_has_everything() {
    let ds = gnnkern_datasets::open("sbm:60:3:0.3:0.02:4").unwrap();
    let t = Task::from_dataset(&ds, 1, true).unwrap();
    assert_eq!((t.features.rows, t.features.cols), (60, 128));
    assert!(!t.real_labels);
    assert_eq!(t.train.len() + t.val.len() + t.test.len(), 60);
}

/// The LGNN layer (both sides, powers of the adjacency, incidence fusion,
/// half-ReLU, batch norm) and the permutation-invariant loss of the whole
/// model, against finite differences on a tiny symmetric graph.
#[test]
fn lgnn_gradients() {
    use gnnkern_bench::models::conv::{LgnnGraphs, LgnnLayer};
    use gnnkern_bench::models::lgnn::{Lgnn, LgnnConfig, permutation_loss};
    // An undirected 6-cycle with a chord, both directions stored.
    let und = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (0, 3)];
    let (src, dst): (Vec<i32>, Vec<i32>) = und.iter().flat_map(|&(a, b)| [(a, b), (b, a)]).unzip();
    let gs = LgnnGraphs::new(G::from_coo(6, 6, src, dst).unwrap()).unwrap();
    // Non-backtracking: edge (0→1) continues to (1→2) only.
    assert_eq!(gs.lg.num_src(), 14);
    assert_eq!(gs.deg_lg.data.iter().sum::<f32>() as usize, gs.lg.num_edges());
    let mut rng = Rng::new(41);
    let mut layer = LgnnLayer::new(3, 4, 3, &mut rng);
    let x = random_mat(6, 3, &mut rng);
    let y = random_mat(14, 3, &mut rng);
    let (rx, ry) = (random_mat(6, 4, &mut rng), random_mat(14, 4, &mut rng));
    let loss = |layer: &mut LgnnLayer, x: &Mat, y: &Mat| -> f64 {
        let mut ctx = Ctx::new(Exec::default(), 1);
        let (ox, oy) = layer.forward(&mut ctx, &gs, x, y).unwrap();
        let dot = |a: &Mat, b: &Mat| {
            a.data.iter().zip(b.data.iter()).map(|(&p, &q)| f64::from(p) * f64::from(q)).sum::<f64>()
        };
        dot(&ox, &rx) + dot(&oy, &ry)
    };
    let mut ctx = Ctx::new(Exec::default(), 1);
    layer.forward(&mut ctx, &gs, &x, &y).unwrap();
    layer.params().into_iter().for_each(|p| p.zero_grad());
    let (dx, dy) = layer.backward(&mut ctx, &gs, &x, &y, &rx, &ry).unwrap();
    let eps = 1e-3f32;
    for (which, grad) in [(0, &dx), (1, &dy)] {
        for i in 0..grad.data.len() {
            let (mut xp, mut yp) = (x.clone(), y.clone());
            let t = if which == 0 { &mut xp } else { &mut yp };
            t.data[i] += eps;
            let lp = loss(&mut layer, &xp, &yp);
            let t = if which == 0 { &mut xp } else { &mut yp };
            t.data[i] -= 2.0 * eps;
            let lm = loss(&mut layer, &xp, &yp);
            close(grad.data[i], (lp - lm) / (2.0 * f64::from(eps)), &format!("lgnn d{}[{i}]", ["x", "y"][which]));
        }
    }
    let grads: Vec<Vec<f32>> = layer.params().iter().map(|p| p.grad.data.to_vec()).collect();
    for (pi, grad) in grads.iter().enumerate() {
        for (i, &gv) in grad.iter().enumerate() {
            let orig = layer.params()[pi].value.data[i];
            layer.params()[pi].value.data[i] = orig + eps;
            let lp = loss(&mut layer, &x, &y);
            layer.params()[pi].value.data[i] = orig - eps;
            let lm = loss(&mut layer, &x, &y);
            layer.params()[pi].value.data[i] = orig;
            close(gv, (lp - lm) / (2.0 * f64::from(eps)), &format!("lgnn param {pi}[{i}]"));
        }
    }
    // The whole model with the permutation-invariant loss.
    let cfg = LgnnConfig { layers: 2, feats: 4, radius: 2, ..LgnnConfig::default() };
    let mut model = Lgnn::new(&cfg);
    let labels = vec![0, 0, 0, 1, 1, 1];
    let model_loss = |m: &mut Lgnn| {
        let mut ctx = Ctx::new(Exec::default(), 1);
        let logits = m.forward(&mut ctx, &gs).unwrap();
        f64::from(permutation_loss(&logits, &labels, 2).0)
    };
    let mut ctx = Ctx::new(Exec::default(), 1);
    let logits = model.forward(&mut ctx, &gs).unwrap();
    let (_, grad) = permutation_loss(&logits, &labels, 2);
    model.params().into_iter().for_each(|p| p.zero_grad());
    model.backward(&mut ctx, &gs, &grad).unwrap();
    let grads: Vec<Vec<f32>> = model.params().iter().map(|p| p.grad.data.to_vec()).collect();
    for (pi, grad) in grads.iter().enumerate().step_by(3) {
        for (i, &gv) in grad.iter().enumerate().take(4) {
            let orig = model.params()[pi].value.data[i];
            model.params()[pi].value.data[i] = orig + eps;
            let lp = model_loss(&mut model);
            model.params()[pi].value.data[i] = orig - eps;
            let lm = model_loss(&mut model);
            model.params()[pi].value.data[i] = orig;
            let fd = (lp - lm) / (2.0 * f64::from(eps));
            assert!(
                (f64::from(gv) - fd).abs() <= 2e-2 * fd.abs().max(0.05),
                "lgnn model param {pi}[{i}]: {gv} vs {fd}"
            );
        }
    }
}
