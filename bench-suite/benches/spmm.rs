//! g-SpMM micro-benchmarks: copy/mul messages, each reducer, d = 16 and 128.

mod common;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gnnkern::{Exec, SpmmIo, SpmmSpec, TensorMut, TensorRef};

fn spmm(c: &mut Criterion) {
    let exec = Exec::default();
    for (label, g) in common::graphs() {
        let mut group = c.benchmark_group(format!("spmm/{label}"));
        group.throughput(Throughput::Elements(g.num_edges() as u64));
        for dim in [16usize, 128] {
            let x = common::values(1, g.num_src() * dim);
            let w = common::values(2, g.num_edges());
            let x_shape = [g.num_src(), dim];
            let w_shape = [g.num_edges(), 1];
            let out_shape = [g.num_dst(), dim];
            let mut out = vec![0.0f32; g.num_dst() * dim];
            for name in ["copy_u_sum", "copy_u_mean", "copy_u_max", "u_mul_e_sum", "u_mul_e_max"] {
                let spec = SpmmSpec::from_name(name).expect("valid op name");
                let uses_edge = name.contains("_e_");
                group.bench_function(BenchmarkId::new(name, dim), |b| {
                    b.iter(|| {
                        let lhs = TensorRef::new(&x, &x_shape).expect("shape matches");
                        let rhs = uses_edge.then(|| TensorRef::new(&w, &w_shape).expect("shape matches"));
                        let out = TensorMut::new(&mut out, &out_shape).expect("shape matches");
                        exec.gspmm(&g, spec, SpmmIo::new(Some(lhs), rhs, out)).expect("op runs")
                    })
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, spmm);
criterion_main!(benches);
