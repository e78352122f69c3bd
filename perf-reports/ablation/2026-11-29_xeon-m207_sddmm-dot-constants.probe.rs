//! Archived probe (2026-11-29, Intel Xeon VM family 6 model 207; the data in
//! `2026-11-29_xeon-m207_sddmm-dot-constants.tsv` beside it). It extends the probe of
//! `2026-11-27_xeon_sddmm-edge-order.rs` with:
//!   csr-dot-{eid,seq,none}-pfN  hand-written AVX-512 in-CSR dot, output to out[eid] (the real
//!                               result), to out[slot] (sequential, wrong order: timing only) or
//!                               to no per-edge output (a row sum: timing only)
//!   stg-dot[-wc][-sS]-pfN       hand-written in-CSR dot staged as in `simd/src/kernels/staged.rs`
//!                               (16 tasks, windows of 2^S edge ids, 8-byte records, runs padded
//!                               to lines); -wc: records gathered in a line buffer per window and
//!                               written with one non-temporal 64-byte store; prints the plan
//!                               (including the records' allocation), walk and drain times
//! To rerun, copy it to `simd/examples/eo_proto.rs`, then
//! cargo build --release -p gnnkern-simd --example eo_proto
//! RAYON_NUM_THREADS=2 target/release/examples/eo_proto target/bench-graphs/rmat_16m REPS VARIANT,...
//!
//! Prototype behind perf-reports/ablation/2026-11-27_xeon_sddmm-edge-order.tsv (sections 1-2):
//! g-SDDMM walked in edge order (the COO, `out[e]` written sequentially) against the production
//! in-CSR walk, u_add_v and u_dot_v at d = 32, on a graph directory (src.bin / dst.bin, int32,
//! e.g. the suite's target/bench-graphs/rmat_16m).
//!   prod-add-stream / prod-dot[-plN]  production `sddmm` over the in-CSR (streamed stores / plain)
//!   eo-{add,dot}[-stream]-pfN   hand-written AVX-512 edge walk, chunks of 16K edges, both rows
//!                               prefetched N edges ahead
//!   real-{add,dot}[-stream][-plN]  production `sddmm_edge_order` (Tuning::prefetch_lines N)
//! Build: copy to simd/examples/eo_proto.rs, `cargo build --release -p gnnkern-simd --example eo_proto`.
//! Run:   RAYON_NUM_THREADS=2 target/release/examples/eo_proto DIR REPS VARIANT,VARIANT,...
//! (prints dir, variant, the CSR the production walk takes, median ms of REPS after one untimed
//! call, a checksum of every 7th output).
use gnnkern_simd::buffer::aligned_filled;
use gnnkern_simd::kernels::{SddmmArgs, SddmmOrder, sddmm, sddmm_edge_order, sddmm_order};
use gnnkern_simd::layout::EdgeList;
use gnnkern_simd::layout::{BroadcastPlan, CsrView, OperandShape};
use gnnkern_simd::op::{self, Target};
use gnnkern_simd::tuning::{Streaming, Tuning, active_tuning, with_tuning};
use rayon::prelude::*;
use std::arch::x86_64::*;
use std::time::Instant;

fn read_i32(path: &str) -> Vec<i32> {
    let b = std::fs::read(path).unwrap();
    b.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

fn csr(rows: &[i32], cols: &[i32], n: usize) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_unstable_by_key(|&e| (rows[e], cols[e], e));
    let mut indptr = vec![0i32; n + 1];
    for &r in rows {
        indptr[r as usize + 1] += 1;
    }
    for i in 0..n {
        indptr[i + 1] += indptr[i];
    }
    let idx = order.iter().map(|&e| cols[e]).collect();
    let eids = order.iter().map(|&e| e as i32).collect();
    (indptr, idx, eids)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

const D: usize = 32;

/// Edge order: out[e] = x[src e] + y[dst e] (add, streamed) or dot, chunks of edges per task.
#[target_feature(enable = "avx512f")]
unsafe fn edge_chunk(dot: bool, stream: bool, pf: usize, src: &[i32], dst: &[i32], x: &[f32], y: &[f32], e0: usize, out: *mut f32) {
    unsafe {
        let n = src.len();
        let (xp, yp) = (x.as_ptr(), y.as_ptr());
        for i in 0..n {
            if i + pf < n {
                let u = *src.get_unchecked(i + pf) as usize;
                let v = *dst.get_unchecked(i + pf) as usize;
                _mm_prefetch::<_MM_HINT_T0>(xp.add(u * D) as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(xp.add(u * D + 16) as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(yp.add(v * D) as *const i8);
                _mm_prefetch::<_MM_HINT_T0>(yp.add(v * D + 16) as *const i8);
            }
            let u = *src.get_unchecked(i) as usize;
            let v = *dst.get_unchecked(i) as usize;
            let a0 = _mm512_loadu_ps(xp.add(u * D));
            let a1 = _mm512_loadu_ps(xp.add(u * D + 16));
            let b0 = _mm512_loadu_ps(yp.add(v * D));
            let b1 = _mm512_loadu_ps(yp.add(v * D + 16));
            let e = e0 + i;
            if dot {
                let s = _mm512_fmadd_ps(a1, b1, _mm512_mul_ps(a0, b0));
                *out.add(e) = _mm512_reduce_add_ps(s);
            } else if stream {
                _mm512_stream_ps(out.add(e * D), _mm512_add_ps(a0, b0));
                _mm512_stream_ps(out.add(e * D + 16), _mm512_add_ps(a1, b1));
            } else {
                _mm512_storeu_ps(out.add(e * D), _mm512_add_ps(a0, b0));
                _mm512_storeu_ps(out.add(e * D + 16), _mm512_add_ps(a1, b1));
            }
        }
    }
}

/// In-CSR dot over rows `rows`: mode 0 out[eid], 1 out[slot], 2 no per-edge write (row sums to out[slot of row start]).
#[target_feature(enable = "avx512f")]
unsafe fn csr_rows(mode: u8, pf: usize, ip: &[i32], ii: &[i32], ie: &[i32], x: &[f32], y: &[f32], rows: std::ops::Range<usize>, out: *mut f32) {
    unsafe {
        let (xp, yp) = (x.as_ptr(), y.as_ptr());
        let n = ii.len();
        for v in rows {
            let (s0, s1) = (*ip.get_unchecked(v) as usize, *ip.get_unchecked(v + 1) as usize);
            let b0 = _mm512_loadu_ps(yp.add(v * D));
            let b1 = _mm512_loadu_ps(yp.add(v * D + 16));
            let mut acc = _mm512_setzero_ps();
            for k in s0..s1 {
                if k + pf < n {
                    let u = *ii.get_unchecked(k + pf) as usize;
                    _mm_prefetch::<_MM_HINT_T0>(xp.add(u * D) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(xp.add(u * D + 16) as *const i8);
                }
                let u = *ii.get_unchecked(k) as usize;
                let a0 = _mm512_loadu_ps(xp.add(u * D));
                let a1 = _mm512_loadu_ps(xp.add(u * D + 16));
                let s = _mm512_fmadd_ps(a1, b1, _mm512_mul_ps(a0, b0));
                match mode {
                    0 => *out.add(*ie.get_unchecked(k) as usize) = _mm512_reduce_add_ps(s),
                    1 => *out.add(k) = _mm512_reduce_add_ps(s),
                    _ => acc = _mm512_add_ps(acc, s),
                }
            }
            if mode == 2 && s1 > s0 {
                *out.add(s0) = _mm512_reduce_add_ps(acc);
            }
        }
    }
}

#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u64; 8]);

/// Staged plan: tasks (row ranges), per (task, window) run start (in records, line-padded) and count.
struct Stg {
    shift: u32,
    windows: usize,
    tasks: Vec<std::ops::Range<usize>>,
    starts: Vec<usize>,
    counts: Vec<usize>,
    records: Vec<Line>,
}

fn stg_plan(ip: &[i32], ie: &[i32], n: usize, ntasks: usize, shift: u32) -> Stg {
    let e = ie.len();
    let windows = e.div_ceil(1 << shift);
    let mut tasks = Vec::new();
    let mut r0 = 0;
    for t in 1..=ntasks {
        let target = e * t / ntasks;
        let mut r1 = r0;
        while r1 < n && (ip[r1] as usize) < target {
            r1 += 1;
        }
        if t == ntasks {
            r1 = n;
        }
        tasks.push(r0..r1);
        r0 = r1;
    }
    let counts: Vec<usize> = tasks
        .par_iter()
        .flat_map_iter(|rows| {
            let mut c = vec![0usize; windows];
            for &x in &ie[ip[rows.start] as usize..ip[rows.end] as usize] {
                c[x as usize >> shift] += 1;
            }
            c
        })
        .collect();
    let mut starts = vec![0usize; ntasks * windows];
    let mut next = 0;
    for w in 0..windows {
        for t in 0..ntasks {
            starts[t * windows + w] = next;
            next += counts[t * windows + w].div_ceil(8) * 8;
        }
    }
    Stg { shift, windows, tasks, starts, counts, records: vec![Line([0; 8]); next / 8] }
}

/// Phase 1 for one task: hand-written CSR dot, records (id in window | value << 32) via line buffers (wc) or direct stores.
#[target_feature(enable = "avx512f")]
unsafe fn stg_walk(wc: bool, pf: usize, ip: &[i32], ii: &[i32], ie: &[i32], x: &[f32], y: &[f32], rows: std::ops::Range<usize>, shift: u32, starts: &[usize], rec: *mut u64) {
    unsafe {
        let (xp, yp) = (x.as_ptr(), y.as_ptr());
        let n = ii.len();
        let windows = starts.len();
        let mut cursor: Vec<usize> = starts.to_vec();
        let mut bufs: Vec<Line> = vec![Line([0; 8]); windows];
        let mask = (1usize << shift) - 1;
        for v in rows {
            let (s0, s1) = (*ip.get_unchecked(v) as usize, *ip.get_unchecked(v + 1) as usize);
            let b0 = _mm512_loadu_ps(yp.add(v * D));
            let b1 = _mm512_loadu_ps(yp.add(v * D + 16));
            for k in s0..s1 {
                if k + pf < n {
                    let u = *ii.get_unchecked(k + pf) as usize;
                    _mm_prefetch::<_MM_HINT_T0>(xp.add(u * D) as *const i8);
                    _mm_prefetch::<_MM_HINT_T0>(xp.add(u * D + 16) as *const i8);
                }
                let u = *ii.get_unchecked(k) as usize;
                let a0 = _mm512_loadu_ps(xp.add(u * D));
                let a1 = _mm512_loadu_ps(xp.add(u * D + 16));
                let val = _mm512_reduce_add_ps(_mm512_fmadd_ps(a1, b1, _mm512_mul_ps(a0, b0)));
                let e = *ie.get_unchecked(k) as usize;
                let w = e >> shift;
                let r = (e & mask) as u64 | ((val.to_bits() as u64) << 32);
                let c = cursor.get_unchecked_mut(w);
                if wc {
                    let fill = *c & 7;
                    let line = bufs.get_unchecked_mut(w);
                    *line.0.get_unchecked_mut(fill) = r;
                    if fill == 7 {
                        _mm512_stream_si512(rec.add(*c - 7) as *mut _, _mm512_load_si512(line.0.as_ptr() as *const _));
                    }
                } else {
                    *rec.add(*c) = r;
                }
                *c += 1;
            }
        }
        if wc {
            for w in 0..windows {
                let c = cursor[w];
                for j in (c & !7)..c {
                    *rec.add(j) = bufs[w].0[j & 7];
                }
            }
            _mm_sfence();
        }
    }
}

struct P(*mut f32);
unsafe impl Send for P {}
unsafe impl Sync for P {}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let dir = &a[1];
    let reps: usize = a[2].parse().unwrap();
    let variants: Vec<&str> = a[3].split(',').collect();
    let src = read_i32(&format!("{dir}/src.bin"));
    let dst = read_i32(&format!("{dir}/dst.bin"));
    let n = 1 + *src.iter().chain(dst.iter()).max().unwrap() as usize;
    let e = src.len();
    let (ip, ii, ie) = csr(&dst, &src, n);
    let (op_, oi, oe) = csr(&src, &dst, n);
    let in_csr = unsafe { CsrView::new_unchecked(&ip, &ii, &ie, n) };
    let out_csr = unsafe { CsrView::new_unchecked(&op_, &oi, &oe, n) };
    let order = sddmm_order(&in_csr, &out_csr);
    let mut x = aligned_filled(n * D, 0f32);
    let mut y = aligned_filled(n * D, 0f32);
    for (i, v) in x.iter_mut().enumerate() {
        *v = ((i * 7919) % 1000) as f32 / 1000.0 - 0.5;
    }
    for (i, v) in y.iter_mut().enumerate() {
        *v = ((i * 104729) % 997) as f32 / 997.0 - 0.5;
    }
    for var in variants {
        let dot = var.contains("dot");
        let width = if dot { 1 } else { D };
        let mut out = aligned_filled(e * width, 0f32);
        let mut times = Vec::new();
        for _ in 0..reps + 1 {
            let t = Instant::now();
            if var.starts_with("real") {
                // production edge-order kernel
                let stream = if var.contains("stream") { Streaming::On } else { Streaming::Off };
                let pl: usize = var.split("pl").nth(1).map(|s| s.parse().unwrap()).unwrap_or(128);
                let tun = Tuning { streaming: stream, prefetch_lines: pl, ..active_tuning() };
                let list = unsafe { EdgeList::new_unchecked(&src, &dst, n, n) };
                let plan = if dot {
                    BroadcastPlan::new(OperandShape::of::<op::Dot>(), &[D], &[D]).unwrap()
                } else {
                    BroadcastPlan::new(OperandShape::of::<op::Add>(), &[D], &[D]).unwrap()
                };
                with_tuning(tun, || {
                    let args = SddmmArgs { csr: in_csr, order: SddmmOrder::InCsr, lhs_target: Target::Src, rhs_target: Target::Dst, plan: &plan, lhs: &x, rhs: &y, out: &mut out };
                    if dot {
                        sddmm_edge_order::<op::Dot, i32>(args, list).unwrap();
                    } else {
                        sddmm_edge_order::<op::Add, i32>(args, list).unwrap();
                    }
                });
            } else if var.starts_with("prod") {
                let stream = if var.contains("stream") { Streaming::On } else { Streaming::Off };
                let pl: usize = var.split("pl").nth(1).map(|s| s.parse().unwrap()).unwrap_or(128);
                let tun = Tuning { streaming: stream, prefetch_lines: pl, ..active_tuning() };
                let csr = if order == SddmmOrder::InCsr { in_csr } else { out_csr };
                let (lt, rt) = if order == SddmmOrder::InCsr { (Target::Src, Target::Dst) } else { (Target::Src, Target::Dst) };
                let plan = if dot {
                    BroadcastPlan::new(OperandShape::of::<op::Dot>(), &[D], &[D]).unwrap()
                } else {
                    BroadcastPlan::new(OperandShape::of::<op::Add>(), &[D], &[D]).unwrap()
                };
                with_tuning(tun, || {
                    let args = SddmmArgs { csr, order, lhs_target: lt, rhs_target: rt, plan: &plan, lhs: &x, rhs: &y, out: &mut out };
                    if dot {
                        sddmm::<op::Dot, i32>(args, None).unwrap();
                    } else {
                        sddmm::<op::Add, i32>(args, None).unwrap();
                    }
                });
            } else if var.starts_with("stg") {
                let pf: usize = var.split("pf").nth(1).map(|s| s.parse().unwrap()).unwrap_or(32);
                let wc = var.contains("wc");
                let t0 = Instant::now();
                let sh: u32 = var.split("-s").nth(1).and_then(|t| t.split('-').next()).map(|t| t.parse().unwrap()).unwrap_or(17);
                let mut st = stg_plan(&ip, &ie, n, 16, sh);
                let t_plan = t0.elapsed().as_secs_f64() * 1e3;
                let t1 = Instant::now();
                let rp = P(st.records.as_mut_ptr() as *mut f32);
                let rp = &rp;
                let w = st.windows;
                st.tasks.par_iter().enumerate().for_each(|(t, rows)| unsafe {
                    stg_walk(wc, pf, &ip, &ii, &ie, &x, &y, rows.clone(), st.shift, &st.starts[t * w..(t + 1) * w], rp.0 as *mut u64)
                });
                let t_walk = t1.elapsed().as_secs_f64() * 1e3;
                let t2 = Instant::now();
                let recs: &[u64] = unsafe { std::slice::from_raw_parts(st.records.as_ptr() as *const u64, st.records.len() * 8) };
                let nt = st.tasks.len();
                out.par_chunks_mut(1 << st.shift).enumerate().for_each(|(wi, slice)| {
                    for t in 0..nt {
                        let s0 = st.starts[t * w + wi];
                        for &r in &recs[s0..s0 + st.counts[t * w + wi]] {
                            unsafe { *slice.get_unchecked_mut((r & 0xffff_ffff) as usize) = f32::from_bits((r >> 32) as u32) };
                        }
                    }
                });
                let t_drain = t2.elapsed().as_secs_f64() * 1e3;
                eprintln!("{var} plan {t_plan:.1} walk {t_walk:.1} drain {t_drain:.1}");
            } else if var.starts_with("csr") {
                let pf: usize = var.split("pf").nth(1).map(|s| s.parse().unwrap()).unwrap_or(32);
                let mode = if var.contains("eid") { 0 } else if var.contains("seq") { 1 } else { 2 };
                let p = P(out.as_mut_ptr());
                let p = &p;
                let rows_per = 4096;
                (0..n.div_ceil(rows_per)).into_par_iter().for_each(|c| unsafe {
                    csr_rows(mode, pf, &ip, &ii, &ie, &x, &y, c * rows_per..((c + 1) * rows_per).min(n), p.0)
                });
            } else {
                let pf: usize = var.split("pf").nth(1).map(|s| s.parse().unwrap()).unwrap_or(32);
                let stream = var.contains("stream");
                let chunk = 1 << 14;
                let p = P(out.as_mut_ptr());
                let p = &p;
                src.par_chunks(chunk).zip(dst.par_chunks(chunk)).enumerate().for_each(|(c, (s, d))| unsafe {
                    edge_chunk(dot, stream, pf, s, d, &x, &y, c * chunk, p.0)
                });
            }
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.remove(0);
        let sum: f64 = out.iter().step_by(7).map(|&v| v as f64).sum();
        println!("{dir}\t{var}\t{:?}\t{:.2}\t{sum:.6e}", order, median(times));
        let _ = (&mut x, &mut y);
    }
}
