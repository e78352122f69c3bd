//! The backward passes never allocate an `E × d` message tensor: a counting
//! global allocator measures the peak extra heap of each call on a graph
//! with many more edges than nodes, and every call must stay below half of
//! one `[E, message]` f32 tensor. (Node-sized scratch is allowed: here it is
//! 100× smaller than the bound.) One test per binary, so no other test's
//! allocations interfere.

mod common;

use common::cases::{GraphCase, GraphKind, Operands, Values, shape_families, shapes};
use common::rng::Rng;
use gnnkern::op::{BinaryOpKind, ReduceKind, Target};
use gnnkern::{Graph, SddmmBackwardIo, SddmmSpec, SpmmBackwardIo, SpmmSpec, Tensor};
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

#[test]
fn backward_passes_allocate_no_edge_message_tensor() {
    let g = dense_graph();
    let exec = common::backends::reference();
    let d = 8;
    let targets = [(Target::Src, Target::Edge), (Target::Edge, Target::Src), (Target::Src, Target::Dst)];
    let ops = [BinaryOpKind::Add, BinaryOpKind::Sub, BinaryOpKind::Mul, BinaryOpKind::Div, BinaryOpKind::Dot];
    let mut checked = 0;
    for (i, op) in ops.into_iter().enumerate() {
        for (j, &(l, r)) in targets.iter().enumerate() {
            for family in 0..shape_families(op) {
                let sh = shapes(op, family, d);
                let mut rng = Rng::new((i * 100 + j * 10 + family) as u64);
                let o = Operands::draw(&g, op, (l, r), &sh, Values::Finite, &mut rng);
                let msg_len = sh.lhs.iter().product::<usize>().max(sh.rhs.iter().product());
                let bound = g.num_edges() * msg_len * 4 / 2;
                for reduce in [ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max] {
                    let spec = SpmmSpec::new(op, l, r, reduce);
                    let fwd = exec.gspmm_alloc(&g.graph, spec, o.lhs(), o.rhs()).unwrap();
                    let grad_out = Tensor::from_vec(vec![1.0; fwd.out.data().len()], fwd.out.shape().to_vec()).unwrap();
                    let (mut gl, mut gr) = (zeros_like(&o.lhs), zeros_like(&o.rhs));
                    let extra = peak_extra(|| {
                        let io = SpmmBackwardIo {
                            lhs: o.lhs(),
                            rhs: o.rhs(),
                            grad_out: grad_out.view(),
                            arg_e: fwd.arg_e.as_deref(),
                            grad_lhs: gl.as_mut().map(Tensor::view_mut),
                            grad_rhs: gr.as_mut().map(Tensor::view_mut),
                        };
                        exec.gspmm_backward(&g.graph, spec, io).unwrap();
                    });
                    assert!(
                        extra < bound,
                        "{} {:?}×{:?}: {extra} bytes during backward, bound {bound}",
                        spec.name(),
                        sh.lhs,
                        sh.rhs
                    );
                    checked += 1;
                }
                let spec = SddmmSpec::new(op, l, r);
                let out = exec.gsddmm_alloc(&g.graph, spec, o.lhs(), o.rhs()).unwrap();
                let (mut gl, mut gr) = (zeros_like(&o.lhs), zeros_like(&o.rhs));
                let extra = peak_extra(|| {
                    let io = SddmmBackwardIo {
                        lhs: o.lhs(),
                        rhs: o.rhs(),
                        grad_out: out.view(),
                        grad_lhs: gl.as_mut().map(Tensor::view_mut),
                        grad_rhs: gr.as_mut().map(Tensor::view_mut),
                    };
                    exec.gsddmm_backward(&g.graph, spec, io).unwrap();
                });
                assert!(
                    extra < bound,
                    "{} {:?}×{:?}: {extra} bytes during backward, bound {bound}",
                    spec.name(),
                    sh.lhs,
                    sh.rhs
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 100);
}
