//! Throwaway timing experiment, 2026-11-26 (perf-reports/ablation/2026-11-26_zen5_softmax4-edge-order.tsv):
//! could the 4-head edge softmax (`[E, 4]`, uniform 2^20 nodes / 2^24 edges, edge ids a random
//! permutation of the in-CSR order) avoid its random logits and output lines by running in edge order?
//! Three passes over the edges in id order, each streaming `x` and `dst`: a max pass and an exp-sum
//! pass that update a per-node table `[m | s]` (each thread owns half the destinations and sends the
//! other half's updates to private dummy rows), then `out = exp(x − m) / s` with streaming stores.
//! The per-node sums run in ascending edge id, so the library would also have to sum its row-order
//! scheme in that order to keep the schemes bitwise identical. Not part of the build; to rerun:
//!   cargo new proto && cp THIS_FILE proto/src/main.rs && cd proto
//!   RUSTFLAGS="-C target-cpu=native" cargo build --release && ./target/release/proto 2
use std::arch::x86_64::*;
use std::time::Instant;

const N: usize = 1 << 20;
const E: usize = 1 << 24;
const H: usize = 4;
const PF: usize = 64;
const ROW: usize = 8;

struct P<T>(*mut T);
unsafe impl<T> Send for P<T> {}
unsafe impl<T> Sync for P<T> {}
impl<T> Clone for P<T> { fn clone(&self) -> Self { P(self.0) } }
impl<T> Copy for P<T> {}

#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,fma")]
fn exp512(x: __m512) -> __m512 {
    let zero = _mm512_setzero_ps();
    let x = _mm512_min_ps(zero, x);
    let under = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_set1_ps(-87.33));
    let x = _mm512_max_ps(_mm512_set1_ps(-87.33), x);
    let n = _mm512_roundscale_ps::<8>(_mm512_mul_ps(x, _mm512_set1_ps(std::f32::consts::LOG2_E)));
    let r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693_359_4), x);
    let r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.121_944_4e-4), r);
    let mut p = _mm512_set1_ps(1.987_569_1e-4);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.398_199_9e-3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.333_452e-3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.166_579_6e-2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.666_666_5e-1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5));
    let r2 = _mm512_mul_ps(r, r);
    let y = _mm512_add_ps(_mm512_fmadd_ps(p, r2, r), _mm512_set1_ps(1.0));
    let y = _mm512_scalef_ps(y, n);
    _mm512_mask_blend_ps(under, y, zero)
}

// pass A: m[v] = max over edges (dest partition, dummy rows)
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,fma")]
unsafe fn pass_max(dst: &[u32], x: &[f32], m: P<f32>, lo: u32, hi: u32, dummy: usize) {
    unsafe {
        let half = hi - lo;
        for e in 0..E {
            if e + PF < E { _mm_prefetch::<_MM_HINT_T0>(m.0.add(*dst.get_unchecked(e + PF) as usize * ROW) as *const i8); }
            let v = *dst.get_unchecked(e);
            let row = if v.wrapping_sub(lo) < half { v as usize } else { dummy + (e & 7) };
            let p = m.0.add(row * ROW);
            _mm_store_ps(p, _mm_max_ps(_mm_load_ps(p), _mm_load_ps(x.as_ptr().add(e * 4))));
        }
    }
}

// pass B: s[v] += exp(x - m[v]) , table rows [m|s]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,fma")]
unsafe fn pass_sum(dst: &[u32], x: &[f32], t: P<f32>, lo: u32, hi: u32, dummy: usize) {
    unsafe {
        let half = hi - lo;
        let mut e = 0;
        while e < E {
            if e + PF + 4 < E { for k in 0..4 { _mm_prefetch::<_MM_HINT_T0>(t.0.add(*dst.get_unchecked(e + PF + k) as usize * 8) as *const i8); } }
            let mut rows = [0usize; 4];
            for k in 0..4 {
                let v = *dst.get_unchecked(e + k);
                rows[k] = if v.wrapping_sub(lo) < half { v as usize } else { dummy + ((e + k) & 7) };
            }
            let mm = _mm512_insertf32x4::<1>(_mm512_castps128_ps512(_mm_load_ps(t.0.add(rows[0] * 8))), _mm_load_ps(t.0.add(rows[1] * 8)));
            let mm = _mm512_insertf32x4::<2>(mm, _mm_load_ps(t.0.add(rows[2] * 8)));
            let mm = _mm512_insertf32x4::<3>(mm, _mm_load_ps(t.0.add(rows[3] * 8)));
            let ex = exp512(_mm512_sub_ps(_mm512_load_ps(x.as_ptr().add(e * 4)), mm));
            let parts = [_mm512_castps512_ps128(ex), _mm512_extractf32x4_ps::<1>(ex), _mm512_extractf32x4_ps::<2>(ex), _mm512_extractf32x4_ps::<3>(ex)];
            for k in 0..4 {
                let p = t.0.add(rows[k] * 8 + 4);
                _mm_store_ps(p, _mm_add_ps(_mm_load_ps(p), parts[k]));
            }
            e += 4;
        }
    }
}

// pass C: out[e] = exp(x - m)/s, edge range
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,fma")]
unsafe fn pass_out(dst: &[u32], x: &[f32], t: *const f32, out: P<f32>, r: std::ops::Range<usize>, pf: usize) {
    unsafe {
        let mut e = r.start;
        while e < r.end {
            if pf > 0 && e + pf < E {
                for k in 0..4 { _mm_prefetch::<_MM_HINT_T0>(t.add(*dst.get_unchecked(e + pf + k) as usize * 8) as *const i8); }
            }
            let rows: [usize; 4] = std::array::from_fn(|k| *dst.get_unchecked(e + k) as usize * 8);
            let mm = _mm512_insertf32x4::<1>(_mm512_castps128_ps512(_mm_load_ps(t.add(rows[0]))), _mm_load_ps(t.add(rows[1])));
            let mm = _mm512_insertf32x4::<2>(mm, _mm_load_ps(t.add(rows[2])));
            let mm = _mm512_insertf32x4::<3>(mm, _mm_load_ps(t.add(rows[3])));
            let ss = _mm512_insertf32x4::<1>(_mm512_castps128_ps512(_mm_load_ps(t.add(rows[0] + 4))), _mm_load_ps(t.add(rows[1] + 4)));
            let ss = _mm512_insertf32x4::<2>(ss, _mm_load_ps(t.add(rows[2] + 4)));
            let ss = _mm512_insertf32x4::<3>(ss, _mm_load_ps(t.add(rows[3] + 4)));
            let ex = exp512(_mm512_sub_ps(_mm512_load_ps(x.as_ptr().add(e * 4)), mm));
            _mm512_stream_ps(out.0.add(e * 4), _mm512_div_ps(ex, ss));
            e += 4;
        }
        _mm_sfence();
    }
}

fn alloc(n: usize) -> &'static mut [f32] {
    let layout = std::alloc::Layout::from_size_align(n * 4, 2 << 20).unwrap();
    unsafe { std::slice::from_raw_parts_mut(std::alloc::alloc_zeroed(layout) as *mut f32, n) }
}

fn main() {
    let threads: usize = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(2);
    let mut seed = 0x9e3779b97f4a7c15u64;
    let mut rnd = || { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; seed };
    let dst: Vec<u32> = (0..E).map(|_| (rnd() % N as u64) as u32).collect();
    let mut x = alloc(E * H);
    for v in x.iter_mut() { *v = ((rnd() % 10000) as f32) / 1000.0 - 5.0; }
    let mut out = alloc(E * H);
    for v in out.iter_mut() { *v = 1.0; }
    let dummies = 8 * threads;
    let mut table = alloc((N + dummies) * 8);
    let outp = P(out.as_mut_ptr());
    let mut ta = Vec::new(); let mut tb = Vec::new(); let mut tc = Vec::new();
    for rep in 0..7 {
        let tp = P(table.as_mut_ptr());
        // init m = -inf, s = 0
        for i in 0..(N + dummies) { for k in 0..4 { table[i * 8 + k] = f32::NEG_INFINITY; table[i * 8 + 4 + k] = 0.0; } }
        let t0 = Instant::now();
        std::thread::scope(|sc| for t in 0..threads {
            let (dst, x) = (&dst, &x);
            sc.spawn(move || unsafe { pass_max(dst, x, tp, (t * N / threads) as u32, ((t + 1) * N / threads) as u32, N + 8 * t) });
        });
        let t1 = Instant::now();
        std::thread::scope(|sc| for t in 0..threads {
            let (dst, x) = (&dst, &x);
            sc.spawn(move || unsafe { pass_sum(dst, x, tp, (t * N / threads) as u32, ((t + 1) * N / threads) as u32, N + 8 * t) });
        });
        let t2 = Instant::now();
        std::thread::scope(|sc| for t in 0..threads {
            let (dst, x) = (&dst, &x);
            let tpc = P(tp.0);
            sc.spawn(move || unsafe { let tpc = tpc; pass_out(dst, x, tpc.0 as *const f32, outp, t * E / threads..(t + 1) * E / threads, 32) });
        });
        let t3 = Instant::now();
        if rep > 0 { ta.push((t1 - t0).as_secs_f64() * 1e3); tb.push((t2 - t1).as_secs_f64() * 1e3); tc.push((t3 - t2).as_secs_f64() * 1e3); }
    }
    let med = |v: &mut Vec<f64>| { v.sort_by(|a, b| a.partial_cmp(b).unwrap()); v[v.len() / 2] };
    let (a, b, c) = (med(&mut ta), med(&mut tb), med(&mut tc));
    // checksum: each destination's outputs sum to 1 per head
    let s: f64 = out.iter().map(|&v| v as f64).sum();
    println!("threads {threads}: max {a:.1} ms, sum {b:.1} ms, out {c:.1} ms, total {:.1} ms; checksum {s:.0} (nonempty dst*4)", a + b + c);
}
