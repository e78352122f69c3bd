//! Archived probe (not built): copy to simd/examples/scratch_block.rs to run. The sampled block's
//! copy_u_sum at d = 128 called directly, 3000 times: `scratch_block install 0` (2-thread pool, as the
//! bench CLI runs it) prints 100-call window medians; `scratch_block plain GAP` sleeps GAP us before each
//! call. Data: perf-reports/ablation/2026-11-30_zen4_block-reps.tsv, sections B and C.
use gnnkern_simd::buffer::aligned_filled;
use gnnkern_simd::kernels::{SpmmArgs, spmm};
use gnnkern_simd::layout::{BroadcastPlan, CsrView, OperandShape};
use gnnkern_simd::op::{self, Target};
use std::time::Instant;

fn read(p: &str) -> Vec<i32> {
    std::fs::read(p).unwrap().chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn main() {
    let dir = "target/bench-graphs/block_1024x25";
    let (src, dst) = (read(&format!("{dir}/src.bin")), read(&format!("{dir}/dst.bin")));
    let (nd, ns) = (1024usize, 17167usize);
    let mut ptr = vec![0i32; nd + 1];
    for &v in &dst { ptr[v as usize + 1] += 1; }
    for i in 0..nd { ptr[i + 1] += ptr[i]; }
    let mut next: Vec<usize> = ptr.iter().map(|&p| p as usize).collect();
    let (mut idx, mut eids) = (vec![0i32; src.len()], vec![0i32; src.len()]);
    for (e, (&u, &v)) in src.iter().zip(&dst).enumerate() {
        let k = next[v as usize]; idx[k] = u; eids[k] = e as i32; next[v as usize] += 1;
    }
    for v in 0..nd {
        let r = ptr[v] as usize..ptr[v + 1] as usize;
        let mut pairs: Vec<(i32, i32)> = idx[r.clone()].iter().copied().zip(eids[r.clone()].iter().copied()).collect();
        pairs.sort();
        for (k, (a, b)) in r.zip(pairs) { idx[k] = a; eids[k] = b; }
    }
    // SAFETY: built above: sorted rows, ids in range.
    let csr = unsafe { CsrView::new_unchecked(&ptr, &idx, &eids, ns) };
    let d = 128;
    let x = aligned_filled(ns * d, 1.0f32);
    let plan = BroadcastPlan::new(OperandShape::of::<op::CopyLhs>(), &[d], &[]).unwrap();
    let mut out = aligned_filled(nd * d, 0f32);
    let mode = std::env::args().nth(1).unwrap_or_default();
    let gap_us: u64 = std::env::args().nth(2).map(|s| s.parse().unwrap()).unwrap_or(0);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let mut body = || {
    let mut t = Vec::new();
    for _ in 0..3000 {
        if gap_us > 0 { std::thread::sleep(std::time::Duration::from_micros(gap_us)); }
        if mode == "wake" { rayon::broadcast(|_| ()); }
        let s = Instant::now();
        let args = SpmmArgs { csr, lhs_target: Target::Src, rhs_target: Target::Edge, plan: &plan, lhs: &x, rhs: &[], out: &mut out, arg_u: None, arg_e: None };
        spmm::<op::CopyLhs, op::Sum, i32>(args, None).unwrap();
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    t };
    let t = if mode == "install" { pool.install(&mut body) } else { body() };
    let win: Vec<String> = t.chunks(100).map(|c| { let mut c = c.to_vec(); c.sort_by(f64::total_cmp); format!("{:.3}", c[50]) }).collect();
    println!("{}", win.join(" "));
    let mut s = t[20..].to_vec();
    s.sort_by(f64::total_cmp);
    let q = |p: f64| s[((s.len() - 1) as f64 * p) as usize];
    let hist = [0.1, 0.15, 0.2, 0.25, 0.3, 1e9].iter().scan(0.0, |lo, &hi| { let c = s.iter().filter(|&&v| v >= *lo && v < hi).count(); *lo = hi; Some(c) }).collect::<Vec<_>>();
    println!("{mode:>6} gap {gap_us:>5}us  p10 {:.3} p50 {:.3} p90 {:.3}  hist(<.1,<.15,<.2,<.25,<.3,rest) {:?}", q(0.1), q(0.5), q(0.9), hist);
}
