//! edge_softmax forward and backward micro-benchmarks (1 and 8 heads).

mod common;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gnnkern::{Exec, TensorMut, TensorRef};

fn edge_softmax(c: &mut Criterion) {
    let exec = Exec::default();
    for (label, g) in common::graphs() {
        let mut group = c.benchmark_group(format!("edge_softmax/{label}"));
        group.throughput(Throughput::Elements(g.num_edges() as u64));
        for heads in [1usize, 8] {
            let shape = [g.num_edges(), heads, 1];
            let logits = common::values(1, g.num_edges() * heads);
            let grad = common::values(2, g.num_edges() * heads);
            let mut out = vec![0.0f32; g.num_edges() * heads];
            let mut grad_in = vec![0.0f32; g.num_edges() * heads];
            group.bench_function(BenchmarkId::new("forward", heads), |b| {
                b.iter(|| {
                    let x = TensorRef::new(&logits, &shape).expect("shape matches");
                    let y = TensorMut::new(&mut out, &shape).expect("shape matches");
                    exec.edge_softmax(&g, x, y).expect("op runs")
                })
            });
            group.bench_function(BenchmarkId::new("backward", heads), |b| {
                b.iter(|| {
                    let y = TensorRef::new(&out, &shape).expect("shape matches");
                    let dy = TensorRef::new(&grad, &shape).expect("shape matches");
                    let dx = TensorMut::new(&mut grad_in, &shape).expect("shape matches");
                    exec.edge_softmax_backward(&g, y, dy, dx).expect("op runs")
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, edge_softmax);
criterion_main!(benches);
