//! Prototype behind perf-reports/ablation/2026-11-27_xeon_arg-scatter-backward.tsv (section 1):
//! the max/min backward's source gradient of copy_u_max, variants on one arg_e (checked bitwise
//! against arg_pull):
//!   pull    production `arg_pull`
//!   scalar  column stripes, scalar read-modify-writes (as the core crate's sweep: f64 product, f32 add)
//!   vec     column stripes, AVX-512: vector id load, `vpgatherdd` of the sources, gather/add/scatter
//!   vecpfN  `vec` plus prefetches of the gradient lines N destinations ahead
//!   vecb    column stripes, scalar offsets into a stack array, then gather/add/scatter
//!   real    `arg_scatter` as committed when run (the lane-offset form at first, see the TSV)
//!   check   the serial arg_e validation of the core crate at that time
//! Build: copy to simd/examples/argback_proto.rs, `cargo build --release -p gnnkern-simd --example argback_proto`.
//! Run:   RAYON_NUM_THREADS=2 target/release/examples/argback_proto rmat|uniform SCALE D REPS VARIANTS
//! (edge factor 16, seed 1; prints graph, d, variant, median wall ms, median CPU ms, checksum, bitwise?).
use gnnkern_simd::buffer::aligned_filled;
use gnnkern_simd::kernels::{SpmmArgs, arg_pull, arg_scatter, spmm};
use gnnkern_simd::layout::{BroadcastPlan, CsrView, OperandShape};
use gnnkern_simd::op::{self, Target};
use rayon::prelude::*;
use std::arch::x86_64::*;
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
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn edges(kind: &str, scale: u32, num_edges: usize, seed: u64) -> (usize, Vec<i32>, Vec<i32>) {
    let n = 1usize << scale;
    let mut rng = Rng(seed);
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for _ in 0..num_edges {
        let (mut u, mut v) = (0usize, 0usize);
        if kind == "rmat" {
            for bit in (0..scale).rev() {
                let r = rng.unit();
                let (du, dv) = if r < 0.57 {
                    (0, 0)
                } else if r < 0.76 {
                    (0, 1)
                } else if r < 0.95 {
                    (1, 0)
                } else {
                    (1, 1)
                };
                u |= du << bit;
                v |= dv << bit;
            }
        } else {
            u = (rng.next() % n as u64) as usize;
            v = (rng.next() % n as u64) as usize;
        }
        src.push(u as i32);
        dst.push(v as i32);
    }
    (n, src, dst)
}

fn csr(rows: &[i32], cols: &[i32], n: usize) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
    let count = |ids: &[i32]| {
        let mut c = vec![0usize; n + 1];
        for &i in ids {
            c[i as usize + 1] += 1;
        }
        for i in 0..n {
            c[i + 1] += c[i];
        }
        c
    };
    let mut next = count(cols);
    let mut by_col = vec![0i32; cols.len()];
    for (e, &c) in cols.iter().enumerate() {
        by_col[next[c as usize]] = e as i32;
        next[c as usize] += 1;
    }
    let ptr = count(rows);
    let mut next = ptr.clone();
    let (mut indices, mut eids) = (vec![0i32; rows.len()], vec![0i32; rows.len()]);
    for &e in &by_col {
        let r = rows[e as usize] as usize;
        indices[next[r]] = cols[e as usize];
        eids[next[r]] = e;
        next[r] += 1;
    }
    (ptr.into_iter().map(|p| p as i32).collect(), indices, eids)
}

fn cpu_ns() -> u64 {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
                .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0)
}

fn median_ms(reps: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let (mut wall, mut cpu): (Vec<f64>, Vec<f64>) = (0..reps)
        .map(|_| {
            let (s, c) = (Instant::now(), cpu_ns());
            f();
            (s.elapsed().as_secs_f64() * 1e3, (cpu_ns() - c) as f64 / 1e6)
        })
        .unzip();
    wall.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    (wall[wall.len() / 2], cpu[cpu.len() / 2])
}

#[derive(Clone, Copy)]
struct P(*mut f32);
unsafe impl Send for P {}
unsafe impl Sync for P {}

/// Stripes of 16 columns split among `parts` workers.
fn stripes(d: usize, parts: usize) -> Vec<(usize, usize)> {
    let s = d.div_ceil(16);
    (0..parts).map(|p| (s * p / parts, s * (p + 1) / parts)).filter(|(a, b)| a < b).collect()
}

fn sweep_scalar(src: &[i32], arg: &[i32], g: &[f32], d: usize, c: f32, grad: &mut [f32]) {
    grad.par_iter_mut().for_each(|y| *y = 0.0);
    let p = P(grad.as_mut_ptr());
    let nd = arg.len() / d;
    stripes(d, rayon::current_num_threads()).into_par_iter().for_each(|(s0, s1)| {
        let p = p;
        let (j0, j1) = (s0 * 16, (s1 * 16).min(d));
        for v in 0..nd {
            for j in j0..j1 {
                let e = arg[v * d + j];
                if e < 0 {
                    continue;
                }
                let u = src[e as usize] as usize;
                let x = (f64::from(c) * f64::from(g[v * d + j])) as f32;
                unsafe { *p.0.add(u * d + j) += x };
            }
        }
    });
}

#[target_feature(enable = "avx512f")]
unsafe fn vec_stripe(
    src: &[i32],
    arg: &[i32],
    g: &[f32],
    d: usize,
    c: f32,
    grad: *mut f32,
    s0: usize,
    s1: usize,
    pf: usize,
) {
    unsafe {
        let nd = arg.len() / d;
        let lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        let dv = _mm512_set1_epi32(d as i32);
        let cv = _mm512_set1_ps(c);
        let none = _mm512_set1_epi32(-1);
        for v in 0..nd {
            if pf > 0 && v + pf < nd {
                // prefetch the source ids of a later destination's winners
                for s in s0..s1 {
                    let j = s * 16;
                    let n = (d - j).min(16);
                    let k: __mmask16 = if n == 16 { 0xffff } else { (1u16 << n) - 1 };
                    let e = _mm512_maskz_loadu_epi32(k, arg.as_ptr().add((v + pf) * d + j));
                    let k2 = k & _mm512_cmpneq_epi32_mask(e, none);
                    let u = _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), k2, e, src.as_ptr());
                    let idx = _mm512_add_epi32(
                        _mm512_mullo_epi32(u, dv),
                        _mm512_add_epi32(lane, _mm512_set1_epi32(j as i32)),
                    );
                    let mut at = [0i32; 16];
                    _mm512_storeu_si512(at.as_mut_ptr().cast(), idx);
                    for l in 0..16 {
                        if k2 >> l & 1 == 1 {
                            _mm_prefetch::<_MM_HINT_T0>(grad.add(at[l] as usize) as *const i8);
                        }
                    }
                }
            }
            for s in s0..s1 {
                let j = s * 16;
                let n = (d - j).min(16);
                let k: __mmask16 = if n == 16 { 0xffff } else { (1u16 << n) - 1 };
                let e = _mm512_maskz_loadu_epi32(k, arg.as_ptr().add(v * d + j));
                let k2 = k & _mm512_cmpneq_epi32_mask(e, none);
                let u = _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), k2, e, src.as_ptr());
                let idx =
                    _mm512_add_epi32(_mm512_mullo_epi32(u, dv), _mm512_add_epi32(lane, _mm512_set1_epi32(j as i32)));
                let old = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), k2, idx, grad as *const f32);
                let gv = _mm512_maskz_loadu_ps(k2, g.as_ptr().add(v * d + j));
                let new = _mm512_add_ps(old, _mm512_mul_ps(cv, gv));
                _mm512_mask_i32scatter_ps::<4>(grad, k2, idx, new);
            }
        }
    }
}

#[target_feature(enable = "avx512f")]
unsafe fn vec_stripe_b(src: &[i32], arg: &[i32], g: &[f32], d: usize, c: f32, grad: *mut f32, s0: usize, s1: usize) {
    unsafe {
        let nd = arg.len() / d;
        let cv = _mm512_set1_ps(c);
        let ne = src.len();
        #[repr(align(64))]
        struct A([i32; 16]);
        let mut at = A([0; 16]);
        for v in 0..nd {
            for s in s0..s1 {
                let j = s * 16;
                let n = (d - j).min(16);
                let row = &arg[v * d + j..v * d + j + n];
                for l in 0..16 {
                    at.0[l] = -1;
                    if l < n {
                        let e = row[l];
                        if (e as u32 as usize) < ne {
                            at.0[l] = src[e as usize] * d as i32 + (j + l) as i32;
                        }
                    }
                }
                let idx = _mm512_load_si512(at.0.as_ptr().cast());
                let k2 = _mm512_cmpge_epi32_mask(idx, _mm512_setzero_si512());
                let old = _mm512_mask_i32gather_ps::<4>(_mm512_setzero_ps(), k2, idx, grad as *const f32);
                let gv = _mm512_maskz_loadu_ps(k2, g.as_ptr().add(v * d + j));
                let new = _mm512_add_ps(old, _mm512_mul_ps(cv, gv));
                _mm512_mask_i32scatter_ps::<4>(grad, k2, idx, new);
            }
        }
    }
}

fn sweep_vec_b(src: &[i32], arg: &[i32], g: &[f32], d: usize, c: f32, grad: &mut [f32]) {
    grad.par_iter_mut().for_each(|y| *y = 0.0);
    let p = P(grad.as_mut_ptr());
    stripes(d, rayon::current_num_threads()).into_par_iter().for_each(|(s0, s1)| {
        let p = p;
        unsafe { vec_stripe_b(src, arg, g, d, c, p.0, s0, s1) }
    });
}

fn sweep_vec(src: &[i32], arg: &[i32], g: &[f32], d: usize, c: f32, grad: &mut [f32], pf: usize) {
    grad.par_iter_mut().for_each(|y| *y = 0.0);
    let p = P(grad.as_mut_ptr());
    stripes(d, rayon::current_num_threads()).into_par_iter().for_each(|(s0, s1)| {
        let p = p;
        unsafe { vec_stripe(src, arg, g, d, c, p.0, s0, s1, pf) }
    });
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let kind = a.get(1).cloned().unwrap_or("rmat".into());
    let scale: u32 = a.get(2).map(|s| s.parse().unwrap()).unwrap_or(16);
    let d: usize = a.get(3).map(|s| s.parse().unwrap()).unwrap_or(128);
    let reps: usize = a.get(4).map(|s| s.parse().unwrap()).unwrap_or(10);
    let variants: Vec<String> =
        a.get(5).cloned().unwrap_or("pull,scalar,vec,vecpf4".into()).split(',').map(String::from).collect();
    let (n, src, dst) = edges(&kind, scale, 16 << scale, 1);
    let (ip, ii, ie) = csr(&dst, &src, n);
    let (op_, oi, oe) = csr(&src, &dst, n);
    let in_csr = unsafe { CsrView::new_unchecked(&ip, &ii, &ie, n) };
    let out_csr = unsafe { CsrView::new_unchecked(&op_, &oi, &oe, n) };
    let mut rng = Rng(7);
    let mut x = aligned_filled(n * d, 0f32);
    x.iter_mut().for_each(|v| *v = rng.unit() as f32 - 0.5);
    let mut g = aligned_filled(n * d, 0f32);
    g.iter_mut().for_each(|v| *v = rng.unit() as f32 - 0.5);
    let plan = BroadcastPlan::new(OperandShape::of::<op::CopyLhs>(), &[d], &[]).unwrap();
    let mut out = aligned_filled(n * d, 0f32);
    let mut arg = aligned_filled(n * d, 0i32);
    spmm::<op::CopyLhs, op::Max, i32>(
        SpmmArgs {
            csr: in_csr,
            lhs_target: Target::Src,
            rhs_target: Target::Edge,
            plan: &plan,
            lhs: &x,
            rhs: &[],
            out: &mut out,
            arg_u: None,
            arg_e: Some(&mut arg),
        },
        None,
    )
    .unwrap();
    let mut reference = aligned_filled(n * d, 0f32);
    arg_pull(out_csr, &arg, &g, d, 1.0, &mut reference).unwrap();
    for var in &variants {
        let mut grad = aligned_filled(n * d, 0f32);
        let t = match var.as_str() {
            "check" => median_ms(reps, || {
                let mut bad = 0usize;
                for (v, row) in arg.chunks(d).enumerate() {
                    let empty = ip[v] == ip[v + 1];
                    for &e in row {
                        if e == -1 {
                            bad += usize::from(!empty);
                        } else if e as usize >= dst.len() {
                            bad += 1;
                        } else if dst[e as usize] as usize != v {
                            bad += 1;
                        }
                    }
                }
                assert_eq!(std::hint::black_box(bad), 0);
            }),
            "pull" => median_ms(reps, || arg_pull(out_csr, &arg, &g, d, 1.0, &mut grad).unwrap()),
            "scalar" => median_ms(reps, || sweep_scalar(&src, &arg, &g, d, 1.0, &mut grad)),
            "real" => median_ms(reps, || arg_scatter(&src, &arg, &g, d, 1.0, &mut grad).unwrap()),
            "vecb" => median_ms(reps, || sweep_vec_b(&src, &arg, &g, d, 1.0, &mut grad)),
            "vec" => median_ms(reps, || sweep_vec(&src, &arg, &g, d, 1.0, &mut grad, 0)),
            s if s.starts_with("vecpf") => {
                let pf = s[5..].parse().unwrap();
                median_ms(reps, || sweep_vec(&src, &arg, &g, d, 1.0, &mut grad, pf))
            }
            _ => panic!("variant"),
        };
        let same = grad.iter().zip(reference.iter()).all(|(a, b)| a.to_bits() == b.to_bits());
        let sum: f64 = grad.iter().map(|&v| f64::from(v)).sum();
        println!(
            "{kind}-2^{scale}\t{d}\t{var}\t{:.2}\t{:.2}\t{sum:.6e}\t{}",
            t.0,
            t.1,
            if same { "bitwise" } else { "DIFFERS" }
        );
    }
}
