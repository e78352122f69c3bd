//! Probe: u_add_v at d = 32 (`out[e] = x[src[e]] + y[dst[e]]`, streamed)
//! walked over edges grouped into P destination ranges, each range in
//! edge-id order. P = 1 is the edge walk (sequential output, two random
//! gathers per edge); large P approaches the in-CSR walk (one gather, `y`
//! from a small slice, scattered output rows).
//!
//! Archived probe (2026-11-28, the data in `2026-11-28_xeon-m167_sddmm-edge-parts.tsv` beside it). To rerun, copy
//! it to `simd/examples/dst_partition_probe.rs`, then
//! cargo run --release -p gnnkern-simd --example dst_partition_probe -- --graph uniform --parts 1,4,16,64,1024 --rounds 3 [--op dot]

use gnnkern_simd::buffer::aligned_filled;
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
}

const D: usize = 32;
const AHEAD: usize = 64;

/// The walk: `(eid, src, dst)` triples in walk order.
struct Walk {
    eid: Vec<u32>,
    src: Vec<u32>,
    dst: Vec<u32>,
}

fn partition(src: &[u32], dst: &[u32], scale: u32, parts: usize) -> Walk {
    let shift = scale - parts.trailing_zeros();
    let mut count = vec![0usize; parts + 1];
    dst.iter().for_each(|&v| count[(v >> shift) as usize + 1] += 1);
    for p in 0..parts {
        count[p + 1] += count[p];
    }
    let e = src.len();
    let (mut we, mut ws, mut wd) = (vec![0u32; e], vec![0u32; e], vec![0u32; e]);
    for i in 0..e {
        let p = (dst[i] >> shift) as usize;
        let k = count[p];
        count[p] += 1;
        we[k] = i as u32;
        ws[k] = src[i];
        wd[k] = dst[i];
    }
    Walk { eid: we, src: ws, dst: wd }
}

#[target_feature(enable = "avx512f")]
unsafe fn run_dot(w: &Walk, range: std::ops::Range<usize>, x: *const f32, y: *const f32, out: *mut f32) {
    unsafe {
        for k in range.clone() {
            let kp = k + AHEAD;
            if kp < range.end {
                let xu = x.add(*w.src.get_unchecked(kp) as usize * D);
                let yv = y.add(*w.dst.get_unchecked(kp) as usize * D);
                _mm_prefetch::<_MM_HINT_T0>(xu.cast());
                _mm_prefetch::<_MM_HINT_T0>(xu.add(16).cast());
                _mm_prefetch::<_MM_HINT_T0>(yv.cast());
                _mm_prefetch::<_MM_HINT_T0>(yv.add(16).cast());
            }
            let xu = x.add(*w.src.get_unchecked(k) as usize * D);
            let yv = y.add(*w.dst.get_unchecked(k) as usize * D);
            let p = _mm512_fmadd_ps(
                _mm512_load_ps(xu.add(16)),
                _mm512_load_ps(yv.add(16)),
                _mm512_mul_ps(_mm512_load_ps(xu), _mm512_load_ps(yv)),
            );
            *out.add(*w.eid.get_unchecked(k) as usize) = _mm512_reduce_add_ps(p);
        }
    }
}

#[target_feature(enable = "avx512f")]
unsafe fn run_range(w: &Walk, range: std::ops::Range<usize>, x: *const f32, y: *const f32, out: *mut f32) {
    unsafe {
        for k in range.clone() {
            let kp = k + AHEAD;
            if kp < range.end {
                let xu = x.add(*w.src.get_unchecked(kp) as usize * D);
                let yv = y.add(*w.dst.get_unchecked(kp) as usize * D);
                _mm_prefetch::<_MM_HINT_T0>(xu.cast());
                _mm_prefetch::<_MM_HINT_T0>(xu.add(16).cast());
                _mm_prefetch::<_MM_HINT_T0>(yv.cast());
                _mm_prefetch::<_MM_HINT_T0>(yv.add(16).cast());
            }
            let xu = x.add(*w.src.get_unchecked(k) as usize * D);
            let yv = y.add(*w.dst.get_unchecked(k) as usize * D);
            let o = out.add(*w.eid.get_unchecked(k) as usize * D);
            _mm512_stream_ps(o, _mm512_add_ps(_mm512_load_ps(xu), _mm512_load_ps(yv)));
            _mm512_stream_ps(o.add(16), _mm512_add_ps(_mm512_load_ps(xu.add(16)), _mm512_load_ps(yv.add(16))));
        }
        _mm_sfence();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let get = |name: &str, default: &str| {
        args.iter().position(|a| a == name).map_or(default.to_string(), |i| args[i + 1].clone())
    };
    let kind = get("--graph", "uniform");
    let scale: u32 = 20;
    let n = 1usize << scale;
    let e = 16 * n;
    let parts: Vec<usize> = get("--parts", "1,4,16,64,1024").split(',').map(|s| s.parse().unwrap()).collect();
    let rounds: usize = get("--rounds", "3").parse().unwrap();
    let dot = get("--op", "add") == "dot";
    let mut rng = Rng(42);
    let (mut src, mut dst) = (Vec::with_capacity(e), Vec::with_capacity(e));
    for _ in 0..e {
        let (mut u, mut v) = (0u32, 0u32);
        if kind == "rmat" {
            for bit in (0..scale).rev() {
                let r = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
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
            u = (rng.next() % n as u64) as u32;
            v = (rng.next() % n as u64) as u32;
        }
        src.push(u);
        dst.push(v);
    }
    let mut x = aligned_filled(n * D, 0f32);
    let mut y = aligned_filled(n * D, 0f32);
    x.iter_mut().enumerate().for_each(|(i, v)| *v = (i % 97) as f32 * 0.01);
    y.iter_mut().enumerate().for_each(|(i, v)| *v = (i % 89) as f32 * 0.02);
    let mut out = aligned_filled(e * D, 0f32);
    let walks: Vec<(usize, Walk)> = parts.iter().map(|&p| (p, partition(&src, &dst, scale, p))).collect();
    let threads = rayon::current_num_threads();
    println!("graph\tparts\tround\tmedian_ms\tchecksum");
    for round in 0..rounds {
        for (p, w) in &walks {
            let mut times = Vec::new();
            for _ in 0..5 {
                let (xp, yp, op) = (x.as_ptr() as usize, y.as_ptr() as usize, out.as_mut_ptr() as usize);
                let t = Instant::now();
                (0..threads).into_par_iter().for_each(|t| {
                    let r = e * t / threads..e * (t + 1) / threads;
                    // SAFETY: AVX-512F is present on the probe's machines; ids are in range; each thread writes
                    // the output rows of its own edges.
                    unsafe {
                        if dot {
                            run_dot(w, r, xp as *const f32, yp as *const f32, op as *mut f32)
                        } else {
                            run_range(w, r, xp as *const f32, yp as *const f32, op as *mut f32)
                        }
                    }
                });
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times.sort_by(f64::total_cmp);
            let sum: f64 = out.iter().step_by(4099).map(|&v| f64::from(v)).sum();
            println!("{kind}\t{p}\t{round}\t{:.1}\t{sum:.6e}", times[2]);
        }
    }
}
