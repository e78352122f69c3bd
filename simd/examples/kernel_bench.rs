//! Development benchmark of the CPU kernels on generated graphs, with the
//! ablations of `docs/PERFORMANCE.md` (ISA level, blocking/tiling, row order).
//!
//! ```text
//! cargo run --release -p gnnkern-simd --example kernel_bench -- \
//!     --graph rmat --scale 20 --edge-factor 16 --d 32,128 --reps 7 [--dump DIR] [--ablate] \
//!     [--ops spmm,sddmm,softmax,argback] [--softmax-rows 1,4] [--only copy_u_sum,u_dot_v] [--prefetch-lines 128] [--stage-window N]
//!     [--range-shapes RxC,...] [--block-sources N] [--narrow]
//! ```
//!
//! `--only` keeps the g-SpMM / g-SDDMM cases of the named ops;
//! `--prefetch-lines` sets `Tuning::prefetch_lines` for every case;
//! `--stage-window N` runs the staged g-SDDMM cases, and g-SpMM's cases
//! with a staged edge operand, with windows of `N` edge ids instead of the
//! cache-sized default; `--block-sources N` cuts the blocked cases' sources
//! into blocks of `N` instead of the model's cache budget; `--narrow` also
//! runs copy_u_max's plain pass with chunks of at most 4 output vectors
//! (`Chunking::Narrow`, the SIMD backend's nominee where 8 would spill).
//!
//! `--softmax-rows` lists the edge softmax row lengths (`[E, h]` logits);
//! `--range-shapes 16384x32768,4096x32768` times the range scheme at each
//! (destinations per range)x(edge ids per chunk) instead of the rule's shape.
//!
//! `--ops argback` (not in the default list) times copy_u_max's source
//! gradient with the max/min backward's two kernels, `arg_pull` and
//! `arg_scatter`, on the `arg_e` of one forward pass, and the `arg_e`
//! screen the backward runs first (`first_bad_arg_row`).
//!
//! Prints one TSV line per case: graph, op, d, variant, median ms, GB/s
//! against the minimum-traffic model of the case, checksum. `--dump DIR`
//! writes the graph (`src.bin`, `dst.bin`, int32) so the DGL script
//! (`perf-reports/ablation/dgl_side_by_side.py`) times the same edges.

use gnnkern_simd::Index;
use gnnkern_simd::buffer::aligned_filled;
use gnnkern_simd::isa::{IsaLevel, with_level};
use gnnkern_simd::kernels::{
    BlockedCsr, EdgeStaging, RangeChunks, SddmmArgs, SddmmOrder, SpmmArgs, StagingBuffer, arg_pull, arg_scatter,
    edge_softmax, edge_softmax_ranges, first_bad_arg_row, prefers_edge_order, sddmm, sddmm_staging_into,
    softmax_may_stream, softmax_ranges_shape, spmm, spmm_staging_into,
};
use gnnkern_simd::layout::{BroadcastPlan, CsrView, EdgeDst, OperandShape};
use gnnkern_simd::op::{self, BinaryOp, Reducer, Target};
use gnnkern_simd::tuning::{
    Blocking, CacheInfo, Chunking, Staging, Streaming, Tiling, Tuning, active_tuning, cache_budget, with_tuning,
};
use rayon::prelude::*;
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

/// Graph500 RMAT (a, b, c) = (0.57, 0.19, 0.19), or uniform random edges.
fn edges(kind: &str, scale: u32, num_edges: usize, seed: u64) -> (usize, Vec<i32>, Vec<i32>) {
    let n = 1usize << scale;
    let mut rng = Rng(seed);
    let (mut src, mut dst) = (Vec::with_capacity(num_edges), Vec::with_capacity(num_edges));
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

/// CSR with rows `rows[e]`, columns `cols[e]`, rows sorted by (column, edge id).
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

/// CPU time of all threads of this process, in ns (`/proc/self/task/*/schedstat`).
/// The development machine is shared and oversubscribed; CPU time is the
/// fairer measure of work (memory stalls count, waiting for a core does not).
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

/// Medians of (wall ms, CPU ms) over `reps` runs after one warm-up.
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

struct Bench<'a> {
    graph: &'a str,
    csr: CsrView<'a, i32>,
    out_csr: CsrView<'a, i32>,
    reps: usize,
    /// `--only`: the op names to run (all when empty).
    only: Vec<String>,
    /// `--stage-window N`: the windows of the staged g-SDDMM variants and of
    /// g-SpMM's staged edge operands (default: sized from the cache budget).
    staged: Staging,
    /// `--range-shapes ROWSxCHUNK,...`: the edge softmax range scheme's
    /// shapes (destinations per range, edge ids per chunk) instead of
    /// `softmax_ranges_shape`'s.
    range_shapes: Vec<(usize, usize)>,
}

impl Bench<'_> {
    fn selected(&self, op: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == op)
    }

    /// The staging variants of a pass: unstaged, then (where `may_stage`)
    /// staged with fresh storage per call and with storage kept across
    /// calls (`true`: as the backend keeps it per graph).
    fn stagings(&self, may_stage: bool) -> Vec<(Staging, bool)> {
        let mut all = vec![(Staging::Off, false)];
        if may_stage {
            all.extend([(self.staged, false), (self.staged, true)]);
        }
        all
    }

    fn report(&self, op: &str, d: usize, variant: &str, (ms, cpu): (f64, f64), bytes: f64, checksum: f64) {
        println!("{}\t{op}\t{d}\t{variant}\t{ms:.2}\t{cpu:.2}\t{:.2}\t{checksum:.6e}", self.graph, bytes / ms / 1e6);
    }

    /// g-SpMM `op` with lhs on sources and optional rhs on edges.
    #[allow(clippy::too_many_arguments)]
    fn spmm<O: BinaryOp, R: Reducer>(
        &self,
        name: &str,
        variant: &str,
        lhs_shape: &[usize],
        rhs_shape: &[usize],
        x: &[f32],
        w: &[f32],
        blocked: Option<(&BlockedCsr<i32>, usize)>,
    ) {
        if !self.selected(name) {
            return;
        }
        let plan = BroadcastPlan::new(OperandShape::of::<O>(), lhs_shape, rhs_shape).unwrap();
        let n = self.csr.num_rows();
        let mut out = aligned_filled(n * plan.out_len, 0f32);
        // Max/min write `arg_e`, the one arg output gnnkern's backward reads.
        let mut ae = aligned_filled(out.len(), 0i32);
        let e = self.csr.num_edges() as f64;
        // The plain pass also runs with its edge operand staged by slot
        // window where it may (rows narrower than a line).
        let mut kept = EdgeStaging::default();
        for (staging, reuse) in self.stagings(blocked.is_none() && O::USE_RHS && plan.rhs_len < 16) {
            let ms = with_tuning(Tuning { staging, ..active_tuning() }, || {
                median_ms(self.reps, || {
                    let args = SpmmArgs {
                        csr: self.csr,
                        lhs_target: Target::Src,
                        rhs_target: Target::Edge,
                        plan: &plan,
                        lhs: x,
                        rhs: if O::USE_RHS { w } else { &[] },
                        out: &mut out,
                        arg_u: None,
                        arg_e: R::HAS_ARG.then_some(&mut ae[..]),
                    };
                    if reuse {
                        spmm_staging_into::<O, R, i32>(args, &mut kept).unwrap();
                    } else {
                        spmm::<O, R, i32>(args, blocked).unwrap();
                    }
                })
            });
            // Minimum traffic: indices (+ eids when edge data or args are read),
            // every source row once, edge data once, outputs (+ arg_e) once.
            let idx = 4.0 * (e + n as f64) + if O::USE_RHS || R::HAS_ARG { 4.0 * e } else { 0.0 };
            let bytes = idx
                + 4.0 * (self.csr.num_cols() * plan.lhs_len) as f64
                + if O::USE_RHS { 4.0 * e * plan.rhs_len as f64 } else { 0.0 }
                + 4.0 * out.len() as f64 * if R::HAS_ARG { 2.0 } else { 1.0 };
            let sum: f64 = out.iter().map(|&v| f64::from(v)).filter(|v| v.is_finite()).sum();
            let staged = match (staging, reuse) {
                (Staging::Off, _) => "",
                (_, false) => ", staged",
                (_, true) => ", staged, kept plan",
            };
            self.report(name, lhs_shape.iter().product(), &format!("{variant}{staged}"), ms, bytes, sum);
        }
    }

    fn sddmm<O: BinaryOp>(
        &self,
        name: &str,
        shape: &[usize],
        (x, y): (&[f32], &[f32]),
        order: SddmmOrder,
        blocked: Option<&BlockedCsr<i32>>,
    ) {
        if !self.selected(name) {
            return;
        }
        let plan = BroadcastPlan::new(OperandShape::of::<O>(), shape, shape).unwrap();
        let e = self.csr.num_edges();
        let mut out = aligned_filled(e * plan.out_len, 0f32);
        let csr = if order == SddmmOrder::InCsr { self.csr } else { self.out_csr };
        // The plain pass also runs staged where it may (narrow rows).
        let mut kept = StagingBuffer::default();
        for (staging, reuse) in self.stagings(blocked.is_none() && plan.out_len < 16) {
            let ms = with_tuning(Tuning { staging, ..active_tuning() }, || {
                median_ms(self.reps, || {
                    let args = SddmmArgs {
                        csr,
                        order,
                        lhs_target: Target::Src,
                        rhs_target: Target::Dst,
                        plan: &plan,
                        lhs: x,
                        rhs: y,
                        out: &mut out,
                    };
                    if reuse {
                        sddmm_staging_into::<O, i32>(args, &mut kept).unwrap();
                    } else {
                        sddmm::<O, i32>(args, blocked).unwrap();
                    }
                })
            });
            let n = self.csr.num_rows() as f64;
            let bytes = 8.0 * e as f64 + 2.0 * 4.0 * n * plan.lhs_len as f64 + 4.0 * out.len() as f64;
            let sum: f64 = out.iter().map(|&v| f64::from(v)).sum();
            let reused = if reuse { ", kept buffer" } else { "" };
            let staged = match staging {
                Staging::Off => String::new(),
                Staging::Windows(n) => format!(", staged, windows of {n}{reused}"),
                _ => format!(", staged{reused}"),
            };
            let variant = match blocked {
                Some(l) => format!("{order:?}, {} blocks", l.num_blocks()),
                None => format!("{order:?}{staged}"),
            };
            self.report(name, shape.iter().product(), &variant, ms, bytes, sum);
        }
    }

    /// copy_u_max's source gradient, pulled over the out-CSR and scattered
    /// by column stripes (the two kernels the backend's trial times), on
    /// the `arg_e` of one forward pass over `x`, with `g` as the output
    /// gradient; the two results must be bitwise equal.
    fn arg_backward(&self, d: usize, x: &[f32], g: &[f32], (edge_src, edge_dst): (&[i32], &[i32])) {
        let plan = BroadcastPlan::new(OperandShape::of::<op::CopyLhs>(), &[d], &[]).unwrap();
        let (n, num_src) = (self.csr.num_rows(), self.csr.num_cols());
        let (mut out, mut arg_e) = (aligned_filled(n * d, 0f32), aligned_filled(n * d, 0i32));
        let args = SpmmArgs {
            csr: self.csr,
            lhs_target: Target::Src,
            rhs_target: Target::Edge,
            plan: &plan,
            lhs: x,
            rhs: &[],
            out: &mut out,
            arg_u: None,
            arg_e: Some(&mut arg_e),
        };
        spmm::<op::CopyLhs, op::Max, i32>(args, None).unwrap();
        let mut results = Vec::new();
        for (variant, scatter) in [("pulled", false), ("scattered", true)] {
            let mut grad = aligned_filled(num_src * d, 0f32);
            let ms = median_ms(self.reps, || {
                if scatter {
                    arg_scatter(edge_src, &arg_e, g, d, 1.0, &mut grad).unwrap();
                } else {
                    arg_pull(self.out_csr, &arg_e, g, d, 1.0, &mut grad).unwrap();
                }
            });
            // Minimum traffic: arg_e and g read once, the gradient written once.
            let bytes = 8.0 * (n * d) as f64 + 4.0 * grad.len() as f64;
            let sum: f64 = grad.iter().map(|&v| f64::from(v)).sum();
            self.report("copy_u_max_backward", d, variant, ms, bytes, sum);
            results.push(grad);
        }
        let bits = |x: &[f32]| x.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
        assert!(bits(&results[0]) == bits(&results[1]), "pulled and scattered gradients differ");
        // The screen the backward runs on `arg_e` first, with either id
        // type, split as the core crate splits it (tasks of 64 destinations).
        let wide = |ids: &[i32]| ids.iter().map(|&i| i64::from(i)).collect::<Vec<_>>();
        let (indptr, indices, eids) = (wide(self.csr.indptr()), wide(self.csr.indices()), wide(self.csr.eids()));
        // SAFETY: the same validated CSR, widened.
        let csr64 = unsafe { CsrView::new_unchecked(&indptr, &indices, &eids, num_src) };
        let (dst64, arg64) = (wide(edge_dst), wide(&arg_e));
        fn screen<I: Index>(csr: CsrView<'_, I>, edge_dst: &[I], arg_e: &[I], d: usize) {
            let n = csr.num_rows();
            let bad = (0..n.div_ceil(64))
                .into_par_iter()
                .find_map_first(|t| first_bad_arg_row(csr, edge_dst, arg_e, d, t * 64..n.min(t * 64 + 64)).unwrap());
            assert_eq!(bad, None, "the forward's arg_e failed the screen");
        }
        for (variant, id_bytes) in [("arg_e screen", 4), ("arg_e screen, i64 ids", 8)] {
            let ms = median_ms(self.reps, || match id_bytes {
                4 => screen(self.csr, edge_dst, &arg_e, d),
                _ => screen(csr64, &dst64, &arg64, d),
            });
            // arg_e and the in-CSR's edge ids read once.
            let bytes = (id_bytes * (n * d + self.csr.num_edges())) as f64;
            self.report("copy_u_max_backward", d, variant, ms, bytes, 0.0);
        }
    }

    /// Edge softmax over `[E, heads]` logits: row order, two phases, and
    /// destination ranges at the rule's shape or each `--range-shapes` shape.
    fn softmax(&self, heads: usize, logits: &[f32], dst: EdgeDst<'_, i32>) {
        let e = self.csr.num_edges();
        let mut out = aligned_filled(e * heads, 0f32);
        let prefers = prefers_edge_order(self.csr.num_rows(), e, heads, 2 * heads);
        // logits read once, out written once, indices + eids.
        let bytes = 8.0 * (e * heads) as f64 + 8.0 * e as f64;
        for (variant, dst) in [("row order", None), ("two-phase", Some(dst))] {
            let ms = median_ms(self.reps, || {
                edge_softmax(self.csr, dst, &logits[..e * heads], heads, &mut out).unwrap();
            });
            let sum: f64 = out.iter().map(|&v| f64::from(v)).sum();
            // The backend's trials time both schemes and keep two phases only
            // if faster by their margin: the model only nominates.
            let chosen = if prefers == dst.is_some() { ", the model's nominee" } else { "" };
            self.report("edge_softmax", heads, &format!("{variant}{chosen}"), ms, bytes, sum);
        }
        // Row order with its output streamed, where whole lines allow it.
        if softmax_may_stream(heads, &out) {
            let streamed = Tuning { streaming: Streaming::On, ..active_tuning() };
            let ms = with_tuning(streamed, || {
                median_ms(self.reps, || edge_softmax(self.csr, None, &logits[..e * heads], heads, &mut out).unwrap())
            });
            let sum: f64 = out.iter().map(|&v| f64::from(v)).sum();
            self.report("edge_softmax", heads, "row order streamed", ms, bytes, sum);
        }
        // Destination ranges: the walk order is built once per graph (the
        // backend caches it), so it is not timed.
        let shapes = if self.range_shapes.is_empty() {
            vec![softmax_ranges_shape(heads, e, dst.num_dst())]
        } else {
            self.range_shapes.clone()
        };
        for (rows, chunk) in shapes {
            let walk = RangeChunks::build(dst, rows, chunk);
            let ms = median_ms(self.reps, || {
                edge_softmax_ranges(&walk, &logits[..e * heads], heads, &mut out).unwrap();
            });
            let sum: f64 = out.iter().map(|&v| f64::from(v)).sum();
            let variant =
                format!("ranges {}x{}, chunks of {}", walk.num_ranges(), walk.rows_per_range(), walk.chunk_edges());
            self.report("edge_softmax", heads, &variant, ms, bytes, sum);
        }
    }
}

/// The value after `--name` on the command line, else `default`.
fn option(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.into())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let lines = option(&args, "--prefetch-lines", &Tuning::DEFAULT.prefetch_lines.to_string()).parse().unwrap();
    with_tuning(Tuning { prefetch_lines: lines, ..active_tuning() }, || run(&args));
}

fn run(args: &[String]) {
    let get = |name: &str, default: &str| option(args, name, default);
    let kind = get("--graph", "rmat");
    let scale: u32 = get("--scale", "20").parse().unwrap();
    let factor: usize = get("--edge-factor", "16").parse().unwrap();
    let reps: usize = get("--reps", "7").parse().unwrap();
    let ds: Vec<usize> = get("--d", "32,128").split(',').map(|s| s.parse().unwrap()).collect();
    let ops = get("--ops", "spmm,sddmm,softmax");
    let ablate = args.iter().any(|a| a == "--ablate");
    let narrow = args.iter().any(|a| a == "--narrow");
    let (n, src, dst) = edges(&kind, scale, factor << scale, 42);
    if let Some(i) = args.iter().position(|a| a == "--dump") {
        let dir = std::path::Path::new(&args[i + 1]);
        std::fs::create_dir_all(dir).unwrap();
        let bytes = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        std::fs::write(dir.join("src.bin"), bytes(&src)).unwrap();
        std::fs::write(dir.join("dst.bin"), bytes(&dst)).unwrap();
    }
    let (ip, ii, ie) = csr(&dst, &src, n);
    let (op_, oi, oe) = csr(&src, &dst, n);
    // SAFETY: `csr` builds valid CSRs with rows sorted by (column, edge id).
    let in_csr = unsafe { CsrView::new_unchecked(&ip, &ii, &ie, n) };
    // SAFETY: as above.
    let out_csr = unsafe { CsrView::new_unchecked(&op_, &oi, &oe, n) };
    let name = format!("{kind}-2^{scale}-{}M", (factor << scale) >> 20);
    let only = get("--only", "").split(',').filter(|s| !s.is_empty()).map(String::from).collect();
    let staged = match get("--stage-window", "").as_str() {
        "" => Staging::On,
        n => Staging::Windows(n.parse().unwrap()),
    };
    let range_shapes = get("--range-shapes", "")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (rows, chunk) = s.split_once('x').expect("--range-shapes ROWSxCHUNK,...");
            (rows.parse().unwrap(), chunk.parse().unwrap())
        })
        .collect();
    let b = Bench { graph: &name, csr: in_csr, out_csr, reps, only, staged, range_shapes };
    eprintln!(
        "cache: {:?}; model budget {} bytes; threads {}",
        CacheInfo::get(),
        cache_budget(),
        rayon::current_num_threads()
    );
    println!("graph\top\td\tvariant\twall_ms\tcpu_ms\tGB/s(wall)\tchecksum");
    let e = src.len();
    let mut rng = Rng(7);
    let dmax = *ds.iter().max().unwrap();
    let mut x = aligned_filled(n * dmax, 0f32);
    x.iter_mut().for_each(|v| *v = rng.unit() as f32 - 0.5);
    let mut w = aligned_filled(e * 4, 0f32);
    w.iter_mut().for_each(|v| *v = rng.unit() as f32);
    // The model's choice for the sources at d floats per row (None: plain).
    let budget = cache_budget();
    // `--block-sources N`: every d's layout cuts the sources into blocks of N
    // (the backend's plan on a VM whose L3 sizes the blocks, for example).
    let block_sources = |d: usize| match get("--block-sources", "").as_str() {
        "" => (budget / (4 * d)).max(1),
        n => n.parse().expect("--block-sources N"),
    };
    let layouts: std::collections::HashMap<usize, BlockedCsr<i32>> =
        ds.iter().map(|&d| (d, BlockedCsr::build(&in_csr, block_sources(d)))).collect();
    for &d in &ds {
        let x = &x[..n * d];
        if ops.contains("spmm") {
            // Plain pass, then blocked at the model's budget (whichever the
            // model picks runs in production; both are timed here).
            for blocked in [None, Some((&layouts[&d], 4 * d))] {
                let v = |label: &str| if blocked.is_some() { format!("{label} blocked") } else { label.to_string() };
                b.spmm::<op::CopyLhs, op::Sum>("copy_u_sum", &v("plain"), &[d], &[], x, &w, blocked);
                b.spmm::<op::CopyLhs, op::Mean>("copy_u_mean", &v("plain"), &[d], &[], x, &w, blocked);
                b.spmm::<op::CopyLhs, op::Max>("copy_u_max", &v("plain"), &[d], &[], x, &w, blocked);
                if narrow && blocked.is_none() {
                    with_tuning(Tuning { chunking: Chunking::Narrow, ..active_tuning() }, || {
                        b.spmm::<op::CopyLhs, op::Max>("copy_u_max", "plain narrow", &[d], &[], x, &w, None)
                    });
                }
                b.spmm::<op::Mul, op::Sum>("u_mul_e_sum", &v("w[E,1]"), &[d], &[1], x, &w[..e], blocked);
                let heads = &w[..4 * e];
                b.spmm::<op::Mul, op::Sum>("u_mul_e_sum", &v("4 heads"), &[4, d / 4], &[4, 1], x, heads, blocked);
            }
        }
        if ops.contains("sddmm") {
            let layout = Some(&layouts[&d]);
            b.sddmm::<op::Dot>("u_dot_v", &[d], (x, x), SddmmOrder::InCsr, None);
            b.sddmm::<op::Dot>("u_dot_v", &[d], (x, x), SddmmOrder::OutCsr, None);
            b.sddmm::<op::Dot>("u_dot_v", &[d], (x, x), SddmmOrder::InCsr, layout);
            b.sddmm::<op::Dot>("u_dot_v", &[4, d / 4], (x, x), SddmmOrder::InCsr, None);
            b.sddmm::<op::Dot>("u_dot_v", &[4, d / 4], (x, x), SddmmOrder::InCsr, layout);
            // GAT's attention logits: [E, 4] = el[u] + er[v].
            b.sddmm::<op::Add>("u_add_v", &[4], (&x[..4 * n], &x[..4 * n]), SddmmOrder::InCsr, None);
            if d <= 32 {
                // [E, d] output: 8 GB at d = 128 on 16M edges.
                b.sddmm::<op::Add>("u_add_v", &[d], (x, x), SddmmOrder::InCsr, None);
                b.sddmm::<op::Add>("u_add_v", &[d], (x, x), SddmmOrder::InCsr, layout);
            }
        }
        if ablate {
            if !IsaLevel::Avx512.is_supported() {
                eprintln!(
                    "note: ablation skips the ISA levels above {}, which this CPU lacks",
                    IsaLevel::detected().name()
                );
            }
            for level in IsaLevel::supported() {
                with_level(level, || {
                    b.spmm::<op::CopyLhs, op::Sum>(
                        "copy_u_sum",
                        &format!("isa={}", level.name()),
                        &[d],
                        &[],
                        x,
                        &w,
                        None,
                    )
                })
                .unwrap();
            }
            for pf in [0, 32, 64, 128, 256] {
                let t = Tuning { prefetch_lines: pf, ..active_tuning() };
                with_tuning(t, || {
                    b.spmm::<op::CopyLhs, op::Sum>(
                        "copy_u_sum",
                        &format!("prefetch {pf} lines"),
                        &[d],
                        &[],
                        x,
                        &w,
                        None,
                    )
                });
            }
            let mib = |m: usize| (m << 20) / (4 * d);
            for (label, bs, tile) in [
                ("blocked 1 MiB (L2), no tile", mib(1), 4 * d),
                ("blocked 4 MiB, no tile", mib(4), 4 * d),
                ("blocked 8 MiB, no tile", mib(8), 4 * d),
                ("blocked 12 MiB, no tile", mib(12), 4 * d),
                ("blocked 16 MiB, no tile", mib(16), 4 * d),
                ("blocked 32 MiB, no tile", mib(32), 4 * d),
                ("blocked 16 MiB of tiles, tile 128B", (16 << 20) / 128, 128),
                ("blocked 8 MiB of tiles, tile 64B", (8 << 20) / 64, 64),
                ("blocked 16 MiB of tiles, tile 64B", (16 << 20) / 64, 64),
                ("blocked 32 MiB of tiles, tile 64B", (32 << 20) / 64, 64),
                ("tile 64B, one block", n, 64),
                ("blocked 32 MiB of tiles, tile 128B", (32 << 20) / 128, 128),
                ("tile 128B, one block", n, 128),
            ] {
                let start = Instant::now();
                let layout = BlockedCsr::build(&in_csr, bs);
                eprintln!(
                    "{label}: {} blocks, {} entries, {:.1} MB, built in {:.0} ms",
                    layout.num_blocks(),
                    layout.num_entries(),
                    layout.bytes() as f64 / 1e6,
                    start.elapsed().as_secs_f64() * 1e3
                );
                let t = Tuning { blocking: Blocking::Sources(bs), tiling: Tiling::Off, ..active_tuning() };
                with_tuning(t, || {
                    b.spmm::<op::CopyLhs, op::Sum>("copy_u_sum", label, &[d], &[], x, &w, Some((&layout, tile)))
                });
            }
        }
    }
    if ops.contains("argback") {
        let mut g = aligned_filled(n * dmax, 0f32);
        g.iter_mut().for_each(|v| *v = rng.unit() as f32 - 0.5);
        for &d in &ds {
            b.arg_backward(d, &x[..n * d], &g[..n * d], (&src, &dst));
        }
    }
    if ops.contains("softmax") {
        let heads: Vec<usize> = get("--softmax-rows", "1,4").split(',').map(|s| s.parse().unwrap()).collect();
        let hmax = *heads.iter().max().unwrap();
        let mut logits = aligned_filled(e * hmax, 0f32);
        logits.iter_mut().for_each(|v| *v = rng.unit() as f32 * 8.0);
        // SAFETY: `edges` generated every destination below `n`; edge `e`
        // of `dst` is edge `e` of the CSRs built from the same arrays.
        let edge_dst = unsafe { EdgeDst::new_unchecked(&dst, n) };
        for &h in &heads {
            b.softmax(h, &logits, edge_dst);
        }
        if ablate {
            for pf in [0, 8, 32, 64, 128] {
                let t = Tuning { prefetch_lines: pf, ..active_tuning() };
                eprintln!("edge softmax with prefetch lines {pf}:");
                with_tuning(t, || b.softmax(4, &logits, edge_dst));
            }
        }
    }
}
