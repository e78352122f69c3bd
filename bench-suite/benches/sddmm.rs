//! g-SDDMM micro-benchmarks: u_dot_v (plain and 4 heads), u_add_v, copy_u.

mod common;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gnnkern::{Exec, SddmmIo, SddmmSpec, TensorMut, TensorRef};

fn sddmm(c: &mut Criterion) {
    let exec = Exec::default();
    for (label, g) in common::graphs() {
        let mut group = c.benchmark_group(format!("sddmm/{label}"));
        group.throughput(Throughput::Elements(g.num_edges() as u64));
        let dim = 64usize;
        let n = g.num_src();
        let x = common::values(1, n * dim);
        let y = common::values(2, n * dim);
        // (name, node feature shape, output feature shape)
        let cases: [(&str, &str, Vec<usize>, Vec<usize>); 4] = [
            ("u_dot_v", "d64", vec![dim], vec![1]),
            ("u_dot_v", "4x16", vec![4, 16], vec![4, 1]),
            ("u_add_v", "d64", vec![dim], vec![dim]),
            ("copy_u", "d64", vec![dim], vec![dim]),
        ];
        for (name, param, feat, out_feat) in cases {
            let spec = SddmmSpec::from_name(name).expect("valid op name");
            let x_shape: Vec<usize> = std::iter::once(n).chain(feat.iter().copied()).collect();
            let out_shape: Vec<usize> = std::iter::once(g.num_edges()).chain(out_feat.iter().copied()).collect();
            let mut out = vec![0.0f32; out_shape.iter().product()];
            let reads_rhs = name != "copy_u";
            group.bench_function(BenchmarkId::new(name, param), |b| {
                b.iter(|| {
                    let lhs = TensorRef::new(&x, &x_shape).expect("shape matches");
                    let rhs = reads_rhs.then(|| TensorRef::new(&y, &x_shape).expect("shape matches"));
                    let out = TensorMut::new(&mut out, &out_shape).expect("shape matches");
                    exec.gsddmm(&g, spec, SddmmIo { lhs: Some(lhs), rhs, out }).expect("op runs")
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, sddmm);
criterion_main!(benches);
