//! Where MKL's `mkl_sparse_s_mm` beats gnnkern's SIMD kernels: times the
//! aggregations the MKL backend supports (copy_u_sum, copy_u_mean,
//! u_mul_e_sum with a scalar edge weight) on both backends, forced, over
//! graphs × feature widths, and prints a Markdown table of medians and the
//! SIMD/MKL time ratio (> 1: MKL faster). Every timed output is checked
//! against the other backend's, so a run is also a correctness run.
//!
//! ```text
//! MKLROOT=/work/venvs/mkl cargo run --release --features mkl --example mkl_crossover -- [reps] [datasets-dir]
//! ```
//!
//! The MKL timings include the one-off inspector work (`optimize`) only in
//! the warm-up call, as a training loop amortises it over its epochs.

use gnnkern::{BackendKind, Exec, Graph, SpmmIo, SpmmSpec, Tensor};
use std::time::Instant;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn floats(&mut self, n: usize) -> Vec<f32> {
        (0..n).map(|_| ((self.next() >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0).collect()
    }
}

fn uniform(rng: &mut Rng, n: usize, avg_degree: usize) -> Graph<i32> {
    let e = n * avg_degree;
    let (s, d): (Vec<i32>, Vec<i32>) = (0..e).map(|_| (rng.below(n) as i32, rng.below(n) as i32)).unzip();
    Graph::from_coo(n, n, s, d).expect("valid graph")
}

/// A shared real graph (`src.bin`/`dst.bin`, int32 little-endian), if present.
fn real(dir: &std::path::Path, name: &str) -> Option<Graph<i32>> {
    let read = |f: &str| -> Option<Vec<i32>> {
        let bytes = std::fs::read(dir.join(name).join(f)).ok()?;
        Some(bytes.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
    };
    let (s, d) = (read("src.bin")?, read("dst.bin")?);
    let n = s.iter().chain(&d).copied().max().map_or(0, |m| m as usize + 1);
    Graph::from_coo(n, n, s, d).ok()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median milliseconds of `reps` timed calls after one warm-up; the output.
fn time(exec: Exec, g: &Graph<i32>, name: &str, x: &Tensor, w: &Tensor, reps: usize) -> (f64, Tensor) {
    let spec = SpmmSpec::from_name(name).expect("op name");
    let mut out = Tensor::zeros(&[g.num_dst(), x.shape()[1]]).expect("shape");
    let rhs = if name == "u_mul_e_sum" { Some(w.view()) } else { None };
    let call = |out: &mut Tensor| {
        exec.gspmm(g, spec, SpmmIo::new(Some(x.view()), rhs, out.view_mut())).expect("forced backend runs the call");
    };
    call(&mut out);
    let times = (0..reps)
        .map(|_| {
            let t = Instant::now();
            call(&mut out);
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    (median(times), out)
}

fn cpu_vendor() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            let field = |k: &str| s.lines().find(|l| l.starts_with(k)).and_then(|l| l.split(':').nth(1)).map(str::trim);
            Some(format!("{} / {}", field("vendor_id")?, field("model name")?))
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let reps: usize = args.next().map_or(7, |a| a.parse().expect("reps"));
    let data = std::path::PathBuf::from(args.next().unwrap_or_else(|| "../shared/datasets".into()));
    let simd = Exec::forced(BackendKind::from_name("simd").expect("gnnkern has a simd backend"));
    let mkl = Exec::forced(BackendKind::Mkl);
    let mut rng = Rng(42);
    let mut graphs: Vec<(String, Graph<i32>)> = Vec::new();
    for name in ["cora", "web-NotreDame"] {
        match real(&data, name) {
            Some(g) => graphs.push((name.to_string(), g)),
            None => eprintln!("note: {name} not found under {}; skipped", data.display()),
        }
    }
    for (n, deg) in [(10_000, 8), (100_000, 16), (20_000, 100)] {
        graphs.push((format!("uniform n={n} deg={deg}"), uniform(&mut rng, n, deg)));
    }
    println!("CPU: {}; rayon threads: {}; reps: {reps} (median)\n", cpu_vendor(), rayon::current_num_threads());
    println!("| graph | nodes | edges | op | d | simd ms | mkl ms | simd/mkl |");
    println!("|---|---|---|---|---|---|---|---|");
    for (gname, g) in &graphs {
        let w = Tensor::from_vec(rng.floats(g.num_edges()), vec![g.num_edges(), 1]).expect("w");
        for d in [4, 16, 32, 64, 128, 256] {
            let x = Tensor::from_vec(rng.floats(g.num_src() * d), vec![g.num_src(), d]).expect("x");
            for op in ["copy_u_sum", "copy_u_mean", "u_mul_e_sum"] {
                let (ts, out_s) = time(simd, g, op, &x, &w, reps);
                let (tm, out_m) = time(mkl, g, op, &x, &w, reps);
                let worst = out_s.data().iter().zip(out_m.data()).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
                let scale = out_s.data().iter().fold(1.0f32, |m, v| m.max(v.abs()));
                assert!(worst <= 1e-3 * scale, "{gname} {op} d={d}: backends differ by {worst}");
                println!(
                    "| {gname} | {} | {} | {op} | {d} | {ts:.3} | {tm:.3} | {:.2} |",
                    g.num_dst(),
                    g.num_edges(),
                    ts / tm
                );
            }
        }
    }
}
