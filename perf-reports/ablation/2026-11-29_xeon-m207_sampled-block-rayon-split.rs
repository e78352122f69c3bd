//! Section G of `2026-11-29_xeon-m207_sampled-block-first-case.tsv`: the
//! sampled block's gather (24,038 random rows of 128 floats out of 17,167,
//! like block_1024x25's copy_u_sum at d = 128) in plain Rust, summed in two
//! halves by rayon, with the worker that ran each half recorded. A timing
//! experiment, not part of any crate: build it as a binary crate depending
//! on `rayon = "1.12"` with `RUSTFLAGS="-C target-cpu=native"`, run it with
//! the thread count as its one argument.
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
fn main() {
    let threads: usize = std::env::args().nth(1).unwrap().parse().unwrap();
    let rows: usize = 17167; let d = 128;
    let feat: Vec<f32> = (0..rows * d).map(|i| (i % 7) as f32).collect();
    let mut s: u64 = 1;
    let idx: Vec<usize> = (0..24038).map(|_| { s ^= s << 13; s ^= s >> 7; s ^= s << 17; (s % rows as u64) as usize }).collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| {
        let mut res = vec![];
        for _rep in 0..1000 {
            let who = [AtomicUsize::new(9), AtomicUsize::new(9)];
            let t0 = Instant::now();
            let sums: Vec<f32> = (0..2usize).into_par_iter().map(|p| {
                who[p].store(rayon::current_thread_index().unwrap(), Ordering::Relaxed);
                let mut acc = vec![0f32; d];
                for &u in &idx[p * 12019..(p + 1) * 12019] { let r = &feat[u * d..u * d + d]; for j in 0..d { acc[j] += r[j]; } }
                acc.iter().sum()
            }).collect();
            let el = t0.elapsed().as_secs_f64() * 1e3;
            std::hint::black_box(sums);
            res.push((el, who[0].load(Ordering::Relaxed) == who[1].load(Ordering::Relaxed)));
        }
        let res = &res[20..];
        let mut all: Vec<f64> = res.iter().map(|r| r.0).collect(); all.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let split = res.iter().filter(|r| !r.1).count();
        println!("threads {threads}: median {:.3} min {:.3} p10 {:.3} p90 {:.3}; split in {split}/{} reps", all[all.len()/2], all[0], all[all.len()/10], all[all.len()*9/10], res.len());
    });
}
