//! Times the model suite's dense ops on the shapes of a 2-layer,
//! hidden-128 model over `N` nodes with 128 input features and 16 classes
//! (docs/MODELS.md, "Dense ops"): the GEMMs of forward and backward, the
//! elementwise passes, the loss, and what allocating a fresh `N × 128`
//! buffer costs against reusing one.
//!
//! ```text
//! cargo run --release -p gnnkern-bench --example dense_ops -- [N] [THREADS]   # N = 2^20, 2 threads
//! ```
//!
//! Prints the median of 5 timed runs per op (after one warm-up), in ms and,
//! for GEMMs, GFLOP/s (`2·m·k·n` flops).

use gnnkern_bench::models::Mat;
use gnnkern_bench::models::dense::matmul_into;
use gnnkern_bench::models::dropout::Dropout;
use gnnkern_bench::models::nn::{Activation, activate_dropout, activate_dropout_backward, cross_entropy_into, relu};
use std::error::Error;
use std::time::Instant;

/// Timed runs per op.
const REPS: usize = 5;

/// Prints the median time of `f` (and GFLOP/s when `flop > 0`).
fn time<F: FnMut()>(name: &str, flop: f64, mut f: F) {
    f();
    let mut secs: Vec<f64> = (0..REPS)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    let m = secs[REPS / 2];
    if flop > 0.0 {
        println!("{name:34} {:9.1} ms  {:7.1} GFLOP/s", m * 1e3, flop / m / 1e9);
    } else {
        println!("{name:34} {:9.1} ms", m * 1e3);
    }
}

/// A deterministic `rows × cols` matrix of values in [0, 1).
fn filled(rows: usize, cols: usize) -> Mat {
    Mat::from_values(rows, cols, (0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 * 1e-3))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(1 << 20);
    let threads: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(2);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    println!("N = {n}, {threads} threads, median of {REPS}");
    pool.install(|| {
        let (x, g, w, w2, g16) = (filled(n, 128), filled(n, 128), filled(128, 128), filled(128, 16), filled(n, 16));
        let (mut out, mut out16) = (Mat::zeros(n, 128), Mat::zeros(n, 16));
        let (mut dw, mut dw2) = (Mat::zeros(128, 128), Mat::zeros(128, 16));
        let flop = |m: usize, k: usize, c: usize| 2.0 * (m * k * c) as f64;
        time("X·W (N×128·128×128)", flop(n, 128, 128), || matmul_into(&x, false, &w, false, &mut out, false));
        time("Xᵀ·G += (128×N·N×128)", flop(n, 128, 128), || matmul_into(&x, true, &g, false, &mut dw, true));
        time("G·Wᵀ (N×128·128×128)", flop(n, 128, 128), || matmul_into(&g, false, &w, true, &mut out, false));
        time("X·W2 (N×128·128×16)", flop(n, 128, 16), || matmul_into(&x, false, &w2, false, &mut out16, false));
        time("Xᵀ·G16 += (128×N·N×16)", flop(n, 128, 16), || matmul_into(&x, true, &g16, false, &mut dw2, true));
        time("G16·W2ᵀ (N×16·16×128)", flop(n, 128, 16), || matmul_into(&g16, false, &w2, true, &mut out, false));
        time("fresh Mat::zeros N×128", 0.0, || {
            std::hint::black_box(Mat::zeros(n, 128));
        });
        time("fresh clone N×128", 0.0, || {
            std::hint::black_box(x.clone());
        });
        let mut y = x.clone();
        time("copy into an existing N×128", 0.0, || y.data.copy_from_slice(&x.data));
        let d = Dropout::new(0.5, 7);
        if let Some(d) = d {
            time("dropout out of place", 0.0, || d.apply_into(&x.data, &mut y.data));
            time("dropout in place", 0.0, || d.apply(&mut y.data));
        }
        time("relu", 0.0, || relu(&mut y));
        time("relu + dropout (fused)", 0.0, || activate_dropout(Activation::Relu, &mut y.data, d));
        time("elu + dropout (fused)", 0.0, || activate_dropout(Activation::Elu, &mut y.data, d));
        let mut gy = g.clone();
        time("relu + dropout backward", 0.0, || activate_dropout_backward(Activation::Relu, &y.data, &mut gy.data, d));
        time("elu + dropout backward", 0.0, || activate_dropout_backward(Activation::Elu, &y.data, &mut gy.data, d));
        let s: Vec<f32> = (0..n).map(|i| 1.0 / (1 + i % 7) as f32).collect();
        time("assign_scaled_rows", 0.0, || y.assign_scaled_rows(&x, &s));
        time("scale_rows", 0.0, || y.scale_rows(&s));
        time("add_row (bias)", 0.0, || y.add_row(&w.data[..128]));
        let mut sums = vec![0f32; 128];
        time("col_sums_into (bias grad)", 0.0, || x.col_sums_into(&mut sums));
        let labels: Vec<i32> = (0..n).map(|i| (i % 16) as i32).collect();
        let rows: Vec<usize> = (0..n * 6 / 10).collect();
        let mut grad = Mat::zeros(n, 16);
        time("cross_entropy_into N×16", 0.0, || {
            std::hint::black_box(cross_entropy_into(&out16, &labels, &rows, &mut grad));
        });
    });
    Ok(())
}
