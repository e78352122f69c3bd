// Standalone model of the partition step of the rejected radix-partitioned max/min backward
// (perf-reports/ablation/2026-11-27_xeon_arg-partition-backward.tsv, prototype in the .rs beside it).
// Synthetic uniform graph, 2^LG nodes, 16 * 2^LG edges; arg_e names a random in-edge per element.
// Build: a cargo package with `rayon = "1.12"` and this file as src/main.rs, `cargo build --release`.
// Run:   RAYON_NUM_THREADS=2 target/release/pb 16 128     (KEEP=1: reuse the buckets across calls, no page faults)
// Prints, per setting (block rows = 2^shift, destination chunks, reserved buckets), the median of 7 calls
// and its three steps.
use rayon::prelude::*;
use std::time::Instant;
#[derive(Clone, Copy)]
struct Entry { at: u32, x: f32 }
fn rng(s: &mut u64) -> u64 { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; *s }
fn run(keep: &mut Vec<Vec<Vec<Entry>>>, src: &[u32], arg: &[i32], g: &[f32], num_src: usize, d: usize, shift: u32, chunks: usize, reserve: bool, grad: &mut [f32]) -> (f64, f64, f64) {
    let num_dst = arg.len() / d;
    let rows = 1usize << shift;
    let block_len = rows * d;
    let nb = num_src.div_ceil(rows);
    let t0 = Instant::now();
    let mut buckets = if keep.len() == chunks && keep[0].len() == nb { std::mem::take(keep) } else { vec![vec![Vec::<Entry>::new(); nb]; chunks] };
    for c in &mut buckets { for b in c.iter_mut() { b.clear(); } }
    if reserve { let cap = num_dst * d / chunks / nb * 5 / 4; for c in &mut buckets { for b in c { b.reserve(cap); } } }
    grad.par_iter_mut().for_each(|y| *y = 0.0);
    let t1 = Instant::now();
    let chunk_len = num_dst.div_ceil(chunks);
    buckets.par_iter_mut().enumerate().for_each(|(c, chunk)| {
        let first = c * chunk_len;
        for v in first..(first + chunk_len).min(num_dst) {
            let ar = &arg[v * d..(v + 1) * d];
            let gr = &g[v * d..(v + 1) * d];
            for o in 0..d {
                let e = ar[o];
                if e == -1 { continue; }
                let u = src[e as usize] as usize;
                let x = (1.0f64 * f64::from(gr[o])) as f32;
                let at = (u & (rows - 1)) * d + o;
                chunk[u >> shift].push(Entry { at: at as u32, x });
            }
        }
    });
    let t2 = Instant::now();
    grad.par_chunks_mut(block_len).enumerate().for_each(|(b, block)| {
        for chunk in &buckets { for en in &chunk[b] { block[en.at as usize] += en.x; } }
    });
    let t3 = Instant::now();
    if std::env::var("KEEP").is_ok() { *keep = buckets; }
    ((t1 - t0).as_secs_f64() * 1e3, (t2 - t1).as_secs_f64() * 1e3, (t3 - t2).as_secs_f64() * 1e3)
}
fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let (lg, d) = (args[0], args[1]);
    let (num_src, e) = (1usize << lg, 16usize << lg);
    let mut s = 0x9e3779b97f4a7c15u64;
    let src: Vec<u32> = (0..e).map(|_| (rng(&mut s) % num_src as u64) as u32).collect();
    let dst: Vec<u32> = (0..e).map(|_| (rng(&mut s) % num_src as u64) as u32).collect();
    let mut ins = vec![vec![]; num_src];
    for i in 0..e { ins[dst[i] as usize].push(i as i32); }
    let mut arg = vec![-1i32; num_src * d];
    for v in 0..num_src { if ins[v].is_empty() { continue; } for k in 0..d { arg[v * d + k] = ins[v][(rng(&mut s) % ins[v].len() as u64) as usize]; } }
    let g: Vec<f32> = (0..num_src * d).map(|_| (rng(&mut s) % 1000) as f32 / 999.0).collect();
    let mut grad = vec![0f32; num_src * d];
    for (shift, chunks, reserve) in [(11u32, 8usize, false), (11, 8, true), (9, 8, true), (8, 8, true), (7, 8, true), (9, 2, true)] {
        let mut ts = vec![]; let mut keep = vec![];
        for _ in 0..7 { let t = Instant::now(); let p = run(&mut keep, &src, &arg, &g, num_src, d, shift, chunks, reserve, &mut grad); ts.push((t.elapsed().as_secs_f64() * 1e3, p)); }
        ts.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
        let (tot, (a, b, c)) = ts[3];
        println!("shift {shift} chunks {chunks} reserve {reserve}: total {tot:.1} ms (alloc+zero {a:.1}, partition {b:.1}, accumulate {c:.1}) {}", grad[5]);
    }
}
