//! No op allocates an `E × d` message tensor: a counting global allocator
//! measures the peak extra heap of each call on a graph with many more edges
//! than nodes, and every call must stay below half of one `[E, message]` f32
//! tensor. (Node-sized scratch is allowed: here it is 100× smaller than the
//! bound.) Checked for the backward passes on the reference backend, and for
//! every forward and backward op, edge softmax included, on the SIMD
//! backend at each ISA level the CPU has (outputs are allocated outside the
//! measured call). One test per binary, so no other test's allocations
//! interfere.

mod common;

use common::backends::{Candidate, candidates, declined};
use common::cases::{GraphCase, GraphKind, Operands, Values, shape_families, shapes};
use common::rng::Rng;
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{
    BackendKind, Error, Exec, Graph, SddmmBackwardIo, SddmmIo, SddmmSpec, SpmmBackwardIo, SpmmIo, SpmmSpec, Tensor,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to the system allocator with the caller's
// arguments unchanged; the counters are only statistics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: same contract as this method's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as this method's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Peak heap growth while `f` runs.
fn peak_extra(f: impl FnOnce()) -> usize {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed).saturating_sub(base)
}

/// 20 nodes, 2000 edges.
fn dense_graph() -> GraphCase<i32> {
    let mut rng = Rng::new(3);
    let n = 20;
    let src: Vec<usize> = (0..2000).map(|_| rng.below(n)).collect();
    let dst: Vec<usize> = (0..2000).map(|_| rng.below(n)).collect();
    let ids = |v: &[usize]| v.iter().map(|&x| x as i32).collect::<Vec<_>>();
    let graph = Graph::from_coo(n, n, ids(&src), ids(&dst)).unwrap();
    // Build every format up front: they are O(E) ids, cached for the graph's life.
    let _ = (graph.in_csr(), graph.out_csr(), graph.coo(), graph.reverse().in_csr());
    GraphCase { kind: GraphKind::Random, graph, num_src: n, num_dst: n, src, dst }
}

fn zeros_like(t: &Option<(Vec<f32>, Vec<usize>)>) -> Option<Tensor> {
    t.as_ref().map(|(_, s)| Tensor::zeros(s).unwrap())
}

/// Fails the test if the call `what` failed or its `extra` bytes reached
/// `bound`; false when the backend declined the call (nothing to check).
fn within<T>(what: &str, r: Result<T, Error>, extra: usize, bound: usize, who: &Candidate) -> bool {
    if declined(who, &r) {
        return false;
    }
    r.unwrap_or_else(|e| panic!("{}: {what}: {e}", who.label()));
    assert!(extra < bound, "{}: {what}: {extra} bytes during the call, bound {bound}", who.label());
    true
}

#[test]
fn no_op_allocates_an_edge_message_tensor() {
    let g = dense_graph();
    let reference = Candidate { kind: BackendKind::Reference, isa: None };
    let mut checked = backward_passes(&g, &reference.exec(), &reference);
    let simd: Vec<Candidate> = candidates().iter().copied().filter(|c| c.kind == BackendKind::Simd).collect();
    for c in &simd {
        // Warm up: the first parallel call builds rayon's pool.
        c.run(|exec| exec.edge_softmax_alloc(&g.graph, logits(&g, 4).view()).unwrap());
        checked += c.run(|exec| forward_ops(&g, &exec, c) + softmax(&g, &exec, c) + backward_passes(&g, &exec, c));
    }
    let per_candidate = if simd.is_empty() { 100 } else { 100 * (1 + simd.len()) };
    assert!(checked > per_candidate, "{checked} calls checked");
}

fn logits(g: &GraphCase<i32>, heads: usize) -> Tensor {
    let mut rng = Rng::new(heads as u64);
    let e = g.graph.num_edges();
    Tensor::from_vec(rng.vec(e * heads, -4.0, 4.0), vec![e, heads]).unwrap()
}

/// Edge softmax and its backward, 1-8 heads.
fn softmax(g: &GraphCase<i32>, exec: &Exec, who: &Candidate) -> usize {
    let mut checked = 0;
    for heads in [1, 4, 8] {
        let x = logits(g, heads);
        let bound = g.graph.num_edges() * heads * 4 / 2;
        let mut y = Tensor::zeros(x.shape()).unwrap();
        let mut r = Ok(BackendKind::Reference);
        let extra = peak_extra(|| r = exec.edge_softmax(&g.graph, x.view(), y.view_mut()));
        checked += usize::from(within(&format!("edge_softmax [E, {heads}]"), r, extra, bound, who));
        let mut grad = Tensor::zeros(x.shape()).unwrap();
        let mut r = Ok(BackendKind::Reference);
        let extra = peak_extra(|| r = exec.edge_softmax_backward(&g.graph, y.view(), x.view(), grad.view_mut()));
        checked += usize::from(within(&format!("edge_softmax_backward [E, {heads}]"), r, extra, bound, who));
    }
    checked
}

/// Every g-SpMM (sum, mean, max with arg outputs) and g-SDDMM forward, over
/// the operator × target × broadcast-family grid of the backward passes.
fn forward_ops(g: &GraphCase<i32>, exec: &Exec, who: &Candidate) -> usize {
    let mut checked = 0;
    for_each_case(g, 8, |(op, l, r), o, bound, shapes| {
        for reduce in [ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max] {
            let spec = SpmmSpec::new(op, l, r, reduce);
            // Shapes from a reference call, outside the measured one.
            let shaped = common::backends::reference().gspmm_alloc(&g.graph, spec, o.lhs(), o.rhs()).unwrap();
            let mut out = Tensor::zeros(shaped.out.shape()).unwrap();
            let n = out.data().len();
            let (mut arg_u, mut arg_e) =
                if reduce.has_arg() { (Some(vec![0; n]), Some(vec![0; n])) } else { (None, None) };
            let mut res = Ok(BackendKind::Reference);
            let extra = peak_extra(|| {
                let io = SpmmIo {
                    lhs: o.lhs(),
                    rhs: o.rhs(),
                    out: out.view_mut(),
                    arg_u: arg_u.as_deref_mut(),
                    arg_e: arg_e.as_deref_mut(),
                };
                res = exec.gspmm(&g.graph, spec, io);
            });
            checked += usize::from(within(&format!("{} {shapes}", spec.name()), res, extra, bound, who));
        }
        let spec = SddmmSpec::new(op, l, r);
        let shaped = common::backends::reference().gsddmm_alloc(&g.graph, spec, o.lhs(), o.rhs()).unwrap();
        let mut out = Tensor::zeros(shaped.shape()).unwrap();
        let mut res = Ok(BackendKind::Reference);
        let extra = peak_extra(|| {
            res = exec.gsddmm(&g.graph, spec, SddmmIo { lhs: o.lhs(), rhs: o.rhs(), out: out.view_mut() })
        });
        checked += usize::from(within(&format!("{} {shapes}", spec.name()), res, extra, bound, who));
    });
    checked
}

/// The operator × target pair × broadcast family grid: `f((op, lhs target,
/// rhs target), operands, bound, shapes)` with half an `[E, message]` f32
/// tensor as the bound.
fn for_each_case(
    g: &GraphCase<i32>,
    d: usize,
    mut f: impl FnMut((BinaryOpKind, Target, Target), &Operands, usize, &str),
) {
    let targets = [(Target::Src, Target::Edge), (Target::Edge, Target::Src), (Target::Src, Target::Dst)];
    let ops = [BinaryOpKind::Add, BinaryOpKind::Sub, BinaryOpKind::Mul, BinaryOpKind::Div, BinaryOpKind::Dot];
    for (i, op) in ops.into_iter().enumerate() {
        for (j, &(l, r)) in targets.iter().enumerate() {
            for family in 0..shape_families(op) {
                let sh = shapes(op, family, d);
                let mut rng = Rng::new((i * 100 + j * 10 + family) as u64);
                let o = Operands::draw(g, op, (l, r), &sh, Values::Finite, &mut rng);
                let msg_len = sh.lhs.iter().product::<usize>().max(sh.rhs.iter().product());
                f((op, l, r), &o, g.num_edges() * msg_len * 4 / 2, &format!("{:?}×{:?}", sh.lhs, sh.rhs));
            }
        }
    }
}

/// Every g-SpMM (sum, mean, max) and g-SDDMM backward of the grid.
fn backward_passes(g: &GraphCase<i32>, exec: &Exec, who: &Candidate) -> usize {
    let mut checked = 0;
    for_each_case(g, 8, |(op, l, r), o, bound, shapes| {
        for reduce in [ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max] {
            let spec = SpmmSpec::new(op, l, r, reduce);
            let fwd = exec.gspmm_alloc(&g.graph, spec, o.lhs(), o.rhs());
            if declined(who, &fwd) {
                continue;
            }
            let fwd = fwd.unwrap_or_else(|e| panic!("{}: {}: {e}", who.label(), spec.name()));
            let grad_out = Tensor::from_vec(vec![1.0; fwd.out.data().len()], fwd.out.shape().to_vec()).unwrap();
            let (mut gl, mut gr) = (zeros_like(&o.lhs), zeros_like(&o.rhs));
            let mut res = Ok(());
            let extra = peak_extra(|| {
                let io = SpmmBackwardIo {
                    lhs: o.lhs(),
                    rhs: o.rhs(),
                    grad_out: grad_out.view(),
                    arg_e: fwd.arg_e.as_deref(),
                    grad_lhs: gl.as_mut().map(Tensor::view_mut),
                    grad_rhs: gr.as_mut().map(Tensor::view_mut),
                };
                res = exec.gspmm_backward(&g.graph, spec, io);
            });
            checked += usize::from(within(&format!("{} backward {shapes}", spec.name()), res, extra, bound, who));
        }
        let spec = SddmmSpec::new(op, l, r);
        let out = common::backends::reference().gsddmm_alloc(&g.graph, spec, o.lhs(), o.rhs()).unwrap();
        let (mut gl, mut gr) = (zeros_like(&o.lhs), zeros_like(&o.rhs));
        let mut res = Ok(());
        let extra = peak_extra(|| {
            let io = SddmmBackwardIo {
                lhs: o.lhs(),
                rhs: o.rhs(),
                grad_out: out.view(),
                grad_lhs: gl.as_mut().map(Tensor::view_mut),
                grad_rhs: gr.as_mut().map(Tensor::view_mut),
            };
            res = exec.gsddmm_backward(&g.graph, spec, io);
        });
        checked += usize::from(within(&format!("{} backward {shapes}", spec.name()), res, extra, bound, who));
    });
    checked
}
