// Probe: three forms of the max/min backward's arg_e check (every element
// must name an in-edge of its destination): the current early-exit scan,
// a branch-free fold, and an AVX-512 gather form. Same data, alternated.
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

const ROWS: usize = 64;

fn scan(dst: &[i32], indptr: &[usize], arg: &[i32], d: usize) -> Option<usize> {
    let ne = dst.len();
    arg.par_chunks(ROWS * d).enumerate().find_map_first(|(t, rows)| {
        rows.chunks(d).enumerate().find_map(|(i, row)| {
            let v = t * ROWS + i;
            let empty = indptr[v] == indptr[v + 1];
            row.iter().enumerate().find_map(|(o, &e)| {
                let p = v * d + o;
                if e == -1 {
                    (!empty).then_some(p)
                } else if usize::try_from(e).unwrap_or(usize::MAX) >= ne {
                    Some(p)
                } else if dst[e as usize] as usize != v {
                    Some(p)
                } else {
                    None
                }
            })
        })
    })
}

fn fold(dst: &[i32], indptr: &[usize], arg: &[i32], d: usize) -> Option<usize> {
    let ne = dst.len();
    arg.par_chunks(ROWS * d).enumerate().find_map_first(|(t, rows)| {
        rows.chunks(d).enumerate().find_map(|(i, row)| {
            let v = t * ROWS + i;
            let empty = indptr[v] == indptr[v + 1];
            let ok = row.iter().fold(true, |ok, &e| {
                let u = e as u32 as usize;
                let good = if u < ne { dst[u] as usize == v } else { e == -1 && empty };
                ok & good
            });
            (!ok).then_some(v * d)
        })
    })
}

#[target_feature(enable = "avx512f")]
unsafe fn row_ok_avx512(dst: &[i32], row: &[i32], v: usize, empty: bool) -> bool {
    unsafe {
        let ne = _mm512_set1_epi32(dst.len().min(1 << 31) as u32 as i32);
        let vv = _mm512_set1_epi32(v as i32);
        let none = _mm512_set1_epi32(-1);
        let mut bad: __mmask16 = 0;
        for c in row.chunks(16) {
            let m: __mmask16 = if c.len() == 16 { 0xffff } else { ((1u32 << c.len()) - 1) as u16 };
            let e = _mm512_maskz_loadu_epi32(m, c.as_ptr());
            let is_edge = _mm512_mask_cmplt_epu32_mask(m, e, ne);
            let got = _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), is_edge, e, dst.as_ptr());
            let hit = _mm512_mask_cmpeq_epi32_mask(is_edge, got, vv);
            let nones = if empty { _mm512_mask_cmpeq_epi32_mask(m, e, none) } else { 0 };
            bad |= m & !(hit | nones);
        }
        bad == 0
    }
}

fn gather(dst: &[i32], indptr: &[usize], arg: &[i32], d: usize) -> Option<usize> {
    arg.par_chunks(ROWS * d).enumerate().find_map_first(|(t, rows)| {
        rows.chunks(d).enumerate().find_map(|(i, row)| {
            let v = t * ROWS + i;
            let empty = indptr[v] == indptr[v + 1];
            (!unsafe { row_ok_avx512(dst, row, v, empty) }).then_some(v * d)
        })
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scale: u32 = args.get(1).map_or(16, |s| s.parse().unwrap());
    let d: usize = args.get(2).map_or(128, |s| s.parse().unwrap());
    let rmat = args.get(3).map_or(true, |s| s == "rmat");
    let n = 1usize << scale;
    let e = 16 * n;
    let mut rng = Rng(42);
    let mut dst = vec![0i32; e];
    for x in dst.iter_mut() {
        let v = if rmat {
            let mut v = 0usize;
            for bit in (0..scale).rev() {
                let r = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
                if r >= 0.57 && r < 0.76 || r >= 0.95 { v |= 1 << bit; }
            }
            v
        } else {
            (rng.next() % n as u64) as usize
        };
        *x = v as i32;
    }
    // in-edges per destination (edge ids in random order, as generated)
    let mut indptr = vec![0usize; n + 1];
    for &v in &dst { indptr[v as usize + 1] += 1; }
    for i in 0..n { indptr[i + 1] += indptr[i]; }
    let mut fill = indptr.clone();
    let mut eids = vec![0i32; e];
    for (id, &v) in dst.iter().enumerate() { eids[fill[v as usize]] = id as i32; fill[v as usize] += 1; }
    let mut arg = vec![-1i32; n * d];
    for v in 0..n {
        let (a, b) = (indptr[v], indptr[v + 1]);
        if a == b { continue; }
        for j in 0..d { arg[v * d + j] = eids[a + (rng.next() as usize) % (b - a)]; }
    }
    let forms: [(&str, fn(&[i32], &[usize], &[i32], usize) -> Option<usize>); 3] =
        [("scan", scan), ("fold", fold), ("gather", gather)];
    for (_, f) in forms { assert_eq!(f(&dst, &indptr, &arg, d), None); }
    let mut bad = arg.clone();
    bad[n / 2 * d + 3] = dst.iter().position(|&x| x as usize != n / 2).unwrap() as i32;
    for (_, f) in forms { assert_eq!(f(&dst, &indptr, &bad, d).map(|p| p / d), Some(n / 2)); }
    let mut times = vec![vec![]; 3];
    for _ in 0..15 {
        for (k, (_, f)) in forms.iter().enumerate() {
            let t = Instant::now();
            std::hint::black_box(f(&dst, &indptr, &arg, d));
            times[k].push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    for (k, (name, _)) in forms.iter().enumerate() {
        let mut t = times[k].clone();
        t.sort_by(f64::total_cmp);
        println!("{}\tscale {scale}\td {d}\t{name}\tmedian {:.2} ms\tmin {:.2}\tmax {:.2}", if rmat { "rmat" } else { "uniform" }, t[t.len() / 2], t[0], t[t.len() - 1]);
    }
}
