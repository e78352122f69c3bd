// Probe: 4-head edge softmax phase costs; two-phase (row-order phase 1) vs scatter phase 1.
use rayon::prelude::*;
use std::time::Instant;
const H: usize = 4;
type V = [f32; H];
#[derive(Clone, Copy)] struct P<T>(*mut T); unsafe impl<T> Send for P<T> {} unsafe impl<T> Sync for P<T> {}
impl<T> P<T> { #[inline(always)] fn at(self, i: usize) -> *mut T { unsafe { self.0.add(i) } } }
#[inline(always)] fn expn(x: f32) -> f32 { // cheap exp for x<=0
    let x = x.max(-87.0); let n = (x * std::f32::consts::LOG2_E).round_ties_even(); let r = x - n * 0.693_147_2;
    let p = 1.0 + r * (1.0 + r * (0.5 + r * (0.166_666_7 + r * (0.041_666_7 + r * 0.008_333_3))));
    p * f32::from_bits(((n as i32 + 127) << 23) as u32)
}
use std::arch::x86_64::*;
#[inline(always)] fn ld(v: &V) -> __m128 { unsafe { _mm_loadu_ps(v.as_ptr()) } }
#[inline(always)] fn st(v: &mut V, x: __m128) { unsafe { _mm_storeu_ps(v.as_mut_ptr(), x) } }
#[inline(always)] fn vexp(x: __m128) -> __m128 { unsafe {
    let x = _mm_max_ps(x, _mm_set1_ps(-87.0));
    let n = _mm_round_ps::<{_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC}>(_mm_mul_ps(x, _mm_set1_ps(std::f32::consts::LOG2_E)));
    let r = _mm_fmadd_ps(n, _mm_set1_ps(-0.693_147_2), x);
    let mut p = _mm_set1_ps(0.008_333_3);
    p = _mm_fmadd_ps(p, r, _mm_set1_ps(0.041_666_7)); p = _mm_fmadd_ps(p, r, _mm_set1_ps(0.166_666_7));
    p = _mm_fmadd_ps(p, r, _mm_set1_ps(0.5)); p = _mm_fmadd_ps(p, r, _mm_set1_ps(1.0)); p = _mm_fmadd_ps(p, r, _mm_set1_ps(1.0));
    let e = _mm_slli_epi32::<23>(_mm_add_epi32(_mm_cvtps_epi32(n), _mm_set1_epi32(127)));
    _mm_mul_ps(p, _mm_castsi128_ps(e)) } }
#[inline(always)] fn pf<T>(p: *const T) { unsafe { std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0) } }
fn rng(s: &mut u64) -> u64 { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; *s }
fn med(mut v: Vec<f64>) -> f64 { v.sort_by(|a, b| a.partial_cmp(b).unwrap()); v[v.len() / 2] }
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map(|s| s.as_str()).unwrap_or("uniform");
    let rows_per_part: usize = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(32768);
    let n = 1usize << 20; let e = 16usize << 20;
    let mut s = 0x9E3779B97F4A7C15u64;
    let (mut src, mut dst) = (vec![0u32; e], vec![0u32; e]);
    for i in 0..e {
        if kind == "rmat" {
            let (mut u, mut v) = (0u32, 0u32);
            for _ in 0..20 { let r = (rng(&mut s) % 100) as u32; let (a, b) = if r < 57 {(0,0)} else if r < 76 {(0,1)} else if r < 95 {(1,0)} else {(1,1)}; u = u*2+a; v = v*2+b; }
            src[i] = u; dst[i] = v;
        } else { src[i] = (rng(&mut s) % n as u64) as u32; dst[i] = (rng(&mut s) % n as u64) as u32; }
    }
    // in-CSR, stable: eids ascending within rows
    let mut indptr = vec![0usize; n + 1];
    for &v in &dst { indptr[v as usize + 1] += 1; }
    for i in 0..n { indptr[i + 1] += indptr[i]; }
    let mut eids = vec![0u32; e]; let mut cur = indptr.clone();
    for (i, &v) in dst.iter().enumerate() { eids[cur[v as usize]] = i as u32; cur[v as usize] += 1; }
    let x: Vec<V> = (0..e).map(|_| { let mut a = [0f32; H]; for k in 0..H { a[k] = (rng(&mut s) % 8000) as f32 / 1000.0; } a }).collect();
    let mut out: Vec<V> = vec![[0.0; H]; e];
    let mut out2: Vec<V> = vec![[0.0; H]; e];
    let mut table: Vec<[V; 2]> = vec![[[0.0; H]; 2]; n];
    // row bounds: 2 * threads parts by nnz
    let nparts = 64;
    let bounds: Vec<usize> = (0..=nparts).map(|c| indptr.partition_point(|&p| p < e * c / nparts).min(n)).collect();
    let mut bounds = bounds; bounds[nparts] = n; bounds[0] = 0;
    let pfd: usize = std::env::var("PF").map(|v| v.parse().unwrap()).unwrap_or(16); let PF = pfd;
    let phase1 = |table: &mut Vec<[V; 2]>| {
        let t = P(table.as_mut_ptr());
        bounds.par_windows(2).for_each(|w| {
            for v in w[0]..w[1] {
                let (a, b) = (indptr[v], indptr[v + 1]);
                unsafe {
                let mut m = _mm_set1_ps(f32::NEG_INFINITY);
                for k in a..b { if k + PF < e { pf(&x[*eids.get_unchecked(k + PF) as usize]); } m = _mm_max_ps(m, ld(x.get_unchecked(*eids.get_unchecked(k) as usize))); }
                let mut sm = _mm_setzero_ps();
                for k in a..b { sm = _mm_add_ps(sm, vexp(_mm_sub_ps(ld(x.get_unchecked(*eids.get_unchecked(k) as usize)), m))); }
                let r = t.at(v); st(&mut (*r)[0], m); st(&mut (*r)[1], sm); }
            }
        });
    };
    let phase2 = |table: &Vec<[V; 2]>, out: &mut Vec<V>| {
        let o = P(out.as_mut_ptr());
        (0..nparts).into_par_iter().for_each(|c| {
            for i in e * c / nparts..e * (c + 1) / nparts {
                if i + PF < e { pf(&table[dst[i + PF] as usize]); }
                unsafe { let tr = table.get_unchecked(*dst.get_unchecked(i) as usize);
                st(&mut *o.at(i), _mm_div_ps(vexp(_mm_sub_ps(ld(x.get_unchecked(i)), ld(&tr[0]))), ld(&tr[1]))); }
            }
        });
    };
    // partition: parts by dst range, chunks of eids
    let parts = n.div_ceil(rows_per_part); assert!(rows_per_part.is_power_of_two()); let rshift = rows_per_part.trailing_zeros();
    let chunks = 64;
    let cb: Vec<usize> = (0..=chunks).map(|c| e * c / chunks).collect();
    let counts: Vec<Vec<usize>> = cb.par_windows(2).map(|w| { let mut c = vec![0usize; parts]; for &v in &dst[w[0]..w[1]] { c[v as usize >> rshift] += 1; } c }).collect();
    let mut starts = vec![vec![0usize; parts]; chunks]; let mut pstart = vec![0usize; parts + 1]; let mut nx = 0;
    for p in 0..parts { pstart[p] = nx; for c in 0..chunks { starts[c][p] = nx; nx += counts[c][p]; } } pstart[parts] = e;
    let mut wdst = vec![0u32; e];
    { let wd = P(wdst.as_mut_ptr()); cb.par_windows(2).enumerate().for_each(|(c, w)| { let mut cu = starts[c].clone(); for i in w[0]..w[1] { let p = dst[i] as usize >> rshift; unsafe { *wd.at(cu[p]) = dst[i]; } cu[p] += 1; } }); }
    let scatter = |buf: &mut Vec<V>| {
        let b = P(buf.as_mut_ptr());
        cb.par_windows(2).enumerate().for_each(|(c, w)| { let mut cu = starts[c].clone(); for i in w[0]..w[1] { let p = dst[i] as usize >> rshift; unsafe { *b.at(cu[p]) = x[i]; } cu[p] += 1; } });
    };
    let range_maxsum = |buf: &Vec<V>, table: &mut Vec<[V; 2]>| {
        let t = P(table.as_mut_ptr());
        (0..parts).into_par_iter().for_each(|p| {
            let (a, b) = (pstart[p], pstart[p + 1]);
            for v in p * rows_per_part..((p + 1) * rows_per_part).min(n) { unsafe { *t.at(v) = [[f32::NEG_INFINITY; H], [0.0; H]]; } }
            unsafe {
            for i in a..b { let r = t.at(*wdst.get_unchecked(i) as usize); let v = _mm_max_ps(ld(&(*r)[0]), ld(buf.get_unchecked(i))); st(&mut (*r)[0], v); }
            for i in a..b { let r = t.at(*wdst.get_unchecked(i) as usize); let v = _mm_add_ps(ld(&(*r)[1]), vexp(_mm_sub_ps(ld(buf.get_unchecked(i)), ld(&(*r)[0])))); st(&mut (*r)[1], v); } }
        });
    };
    let range_norm = |buf: &mut Vec<V>, table: &Vec<[V; 2]>| {
        let bb = P(buf.as_mut_ptr());
        (0..parts).into_par_iter().for_each(|p| {
            for i in pstart[p]..pstart[p + 1] { unsafe { let tr = table.get_unchecked(*wdst.get_unchecked(i) as usize); let r = bb.at(i); let v = _mm_div_ps(vexp(_mm_sub_ps(ld(&*r), ld(&tr[0]))), ld(&tr[1])); st(&mut *r, v); } }
        });
    };
    let unscatter = |buf: &Vec<V>, out: &mut Vec<V>| {
        let o = P(out.as_mut_ptr());
        cb.par_windows(2).enumerate().for_each(|(c, w)| { let mut cu = starts[c].clone(); for i in w[0]..w[1] { let p = dst[i] as usize >> rshift; unsafe { *o.at(i) = buf[cu[p]]; } cu[p] += 1; } });
    };
    // chunk-local scheme
    let ce: usize = std::env::var("CE").map(|v| v.parse().unwrap()).unwrap_or(32768);
    let nch = e.div_ceil(ce);
    let mut coff = vec![0u32; nch * (parts + 1)];
    let mut cdst = vec![0u32; e];
    { let co = P(coff.as_mut_ptr()); let cd = P(cdst.as_mut_ptr());
      (0..nch).into_par_iter().for_each(|c| { let (a, b) = (c * ce, ((c + 1) * ce).min(e));
        let off = unsafe { std::slice::from_raw_parts_mut(co.at(c * (parts + 1)), parts + 1) };
        for &v in &dst[a..b] { off[(v as usize >> rshift) + 1] += 1; }
        for p in 0..parts { off[p + 1] += off[p]; }
        let mut cu: Vec<u32> = off[..parts].to_vec();
        for &v in &dst[a..b] { let p = v as usize >> rshift; unsafe { *cd.at(a + cu[p] as usize) = v; } cu[p] += 1; }
      }); }
    let mut clid = vec![0u16; e];
    { let cl = P(clid.as_mut_ptr()); (0..nch).into_par_iter().for_each(|c| { let (a, b) = (c * ce, ((c + 1) * ce).min(e));
        let mut cu: Vec<u32> = coff[c * (parts + 1)..c * (parts + 1) + parts].to_vec();
        for i in a..b { let p = dst[i] as usize >> rshift; unsafe { *cl.at(a + cu[p] as usize) = (i - a) as u16; } cu[p] += 1; } }); }
    let cbuf_sz = ce;
    let chunk_gather = |out: &mut Vec<V>| { let o = P(out.as_mut_ptr());
      (0..nch).into_par_iter().for_each(|c| { let (a, b) = (c * ce, ((c + 1) * ce).min(e));
        for i in a..b { unsafe { *o.at(i) = *x.get_unchecked(a + *clid.get_unchecked(i) as usize); } } }); };
    let chunk_ungather = |out: &mut Vec<V>| { let o = P(out.as_mut_ptr());
      (0..nch).into_par_iter().for_each_init(|| vec![[0f32; H]; cbuf_sz], |tmp, c| { let (a, b) = (c * ce, ((c + 1) * ce).min(e));
        unsafe { std::ptr::copy_nonoverlapping(o.at(a), tmp.as_mut_ptr(), b - a); }
        for i in a..b { unsafe { *o.at(a + *clid.get_unchecked(i) as usize) = *tmp.get_unchecked(i - a); } } }); };
    let chunk_scatter = |out: &mut Vec<V>| { let o = P(out.as_mut_ptr());
      (0..nch).into_par_iter().for_each(|c| { let (a, b) = (c * ce, ((c + 1) * ce).min(e));
        let mut cu: Vec<u32> = coff[c * (parts + 1)..c * (parts + 1) + parts].to_vec();
        for i in a..b { let p = dst[i] as usize >> rshift; unsafe { *o.at(a + cu[p] as usize) = *x.get_unchecked(i); } cu[p] += 1; } }); };
    let range_all = |out: &mut Vec<V>, table: &mut Vec<[V; 2]>| { let o = P(out.as_mut_ptr()); let t = P(table.as_mut_ptr());
      (0..parts).into_par_iter().for_each(|p| unsafe {
        for v in p * rows_per_part..((p + 1) * rows_per_part).min(n) { *t.at(v) = [[f32::NEG_INFINITY; H], [0.0; H]]; }
        for c in 0..nch { let a = c * ce; let (s0, s1) = (coff[c * (parts + 1) + p] as usize, coff[c * (parts + 1) + p + 1] as usize);
          for i in a + s0..a + s1 { let r = t.at(*cdst.get_unchecked(i) as usize); let v = _mm_max_ps(ld(&(*r)[0]), ld(&*o.at(i))); st(&mut (*r)[0], v); } }
        for c in 0..nch { let a = c * ce; let (s0, s1) = (coff[c * (parts + 1) + p] as usize, coff[c * (parts + 1) + p + 1] as usize);
          for i in a + s0..a + s1 { let r = t.at(*cdst.get_unchecked(i) as usize); let ex = vexp(_mm_sub_ps(ld(&*o.at(i)), ld(&(*r)[0]))); st(&mut *o.at(i), ex); let v = _mm_add_ps(ld(&(*r)[1]), ex); st(&mut (*r)[1], v); } }
        for c in 0..nch { let a = c * ce; let (s0, s1) = (coff[c * (parts + 1) + p] as usize, coff[c * (parts + 1) + p + 1] as usize);
          for i in a + s0..a + s1 { let r = t.at(*cdst.get_unchecked(i) as usize); let v = _mm_div_ps(ld(&*o.at(i)), ld(&(*r)[1])); st(&mut *o.at(i), v); } }
      }); };
    let chunk_unscatter = |out: &mut Vec<V>| { let o = P(out.as_mut_ptr());
      (0..nch).into_par_iter().for_each_init(|| vec![[0f32; H]; cbuf_sz], |tmp, c| { let (a, b) = (c * ce, ((c + 1) * ce).min(e));
        unsafe { std::ptr::copy_nonoverlapping(o.at(a), tmp.as_mut_ptr(), b - a); }
        let mut cu: Vec<u32> = coff[c * (parts + 1)..c * (parts + 1) + parts].to_vec();
        for i in a..b { let p = dst[i] as usize >> rshift; unsafe { *o.at(i) = *tmp.get_unchecked(cu[p] as usize); } cu[p] += 1; } }); };
    let mut out3: Vec<V> = vec![[0.0; H]; e];
    let mut table3 = table.clone();
    let rounds = 5;
    let mut tm: Vec<Vec<f64>> = vec![vec![]; 13];
    let mut table2 = table.clone();
    for _ in 0..rounds {
        let t0 = Instant::now(); phase1(&mut table); let t1 = Instant::now(); phase2(&table, &mut out); let t2 = Instant::now();
        tm[0].push((t1 - t0).as_secs_f64() * 1e3); tm[1].push((t2 - t1).as_secs_f64() * 1e3);
        let t0 = Instant::now(); scatter(&mut out2); let t1 = Instant::now(); range_maxsum(&out2, &mut table2); let t2 = Instant::now();
        phase2(&table2, &mut out); let t3 = Instant::now();
        tm[2].push((t1 - t0).as_secs_f64() * 1e3); tm[3].push((t2 - t1).as_secs_f64() * 1e3); tm[4].push((t3 - t2).as_secs_f64() * 1e3);
        let t0 = Instant::now(); range_norm(&mut out2, &table2); let t1 = Instant::now(); unscatter(&out2, &mut out); let t2 = Instant::now();
        tm[5].push((t1 - t0).as_secs_f64() * 1e3); tm[6].push((t2 - t1).as_secs_f64() * 1e3);
        let t0 = Instant::now(); chunk_scatter(&mut out3); let t1 = Instant::now(); range_all(&mut out3, &mut table3); let t2 = Instant::now(); chunk_unscatter(&mut out3); let t3 = Instant::now();
        tm[7].push((t1 - t0).as_secs_f64() * 1e3); tm[8].push((t2 - t1).as_secs_f64() * 1e3); tm[9].push((t3 - t2).as_secs_f64() * 1e3); tm[10].push((t3 - t0).as_secs_f64() * 1e3);
        let t0 = Instant::now(); chunk_gather(&mut out3); let t1 = Instant::now(); range_all(&mut out3, &mut table3); let t2 = Instant::now(); chunk_ungather(&mut out3); let t3 = Instant::now();
        tm[11].push((t1 - t0).as_secs_f64() * 1e3); tm[12].push((t3 - t2).as_secs_f64() * 1e3);
    }
    phase1(&mut table); phase2(&table, &mut out);
    let maxdiff = out.iter().zip(&out3).map(|(a, b)| (0..H).map(|h| (a[h] - b[h]).abs()).fold(0f32, f32::max)).fold(0f32, f32::max);
    let tb3 = table.iter().zip(&table3).all(|(a, b)| (0..H).all(|h| a[0][h].to_bits() == b[0][h].to_bits() && a[1][h].to_bits() == b[1][h].to_bits()));
    println!("chunk scheme: nch={nch} table bitwise={tb3} out maxdiff={maxdiff:e}");
    let bitsame = table.iter().zip(&table2).all(|(a, b)| (0..H).all(|h| a[0][h].to_bits() == b[0][h].to_bits() && a[1][h].to_bits() == b[1][h].to_bits()));
    let names = ["rowP1", "edgeP2", "scatter", "rangeMaxSum", "edgeP2(b)", "rangeNorm", "unscatter", "cScatter", "cRange", "cUnscatter", "cTotal", "gGather", "gUngather"];
    print!("{kind} rpp={rows_per_part} parts={parts} tables_bitwise={bitsame}:");
    for k in 0..13 { print!(" {}={:.1}", names[k], med(tm[k].clone())); }
    println!();
}
