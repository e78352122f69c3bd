//! Cache sizes read at run time, the tuning knobs, and the traffic model
//! that decides source blocking.
//!
//! # Cache sizes
//! Read once from `/sys/devices/system/cpu/cpu0/cache/index*` (level, type,
//! size, `shared_cpu_list`), falling back to CPUID leaf 4 when sysfs is
//! absent. Virtual machines sometimes report a host-sized last-level cache
//! (an Intel VM this was developed on reported a 480 MiB L3 for 2 vCPUs): an
//! L3 is trusted only when it is at most [`MAX_CREDIBLE_L3_PER_CPU`] per CPU
//! sharing it. The model's cache budget is half the trusted L3 (the other
//! half holds the streams that pass through it), else half of one core's L2;
//! `GNNKERN_LLC_BYTES` overrides it (deterministically, unlike a probe).
//!
//! Source blocking asks the model at [`blocking_budgets`]: the cache budget,
//! except where the L3 is reported but not credible. Such an L3 is the
//! host's, shared with other guests, and the share a guest's gathers keep
//! is unknown, but it is not nothing: on an Intel Xeon VM reporting 480 MiB
//! for 2 vCPUs, random 512-byte rows came from working sets up to 128 MiB
//! at 2-2.5x their rate from 1 GiB, and blocks of 64-128 MiB made the uniform
//! 2^24-edge ops at d = 128 1.16-1.28x faster where the half-L2 budget's
//! blocks (1 MiB) were 1.8-6.1x slower than the plain pass
//! (`perf-reports/ablation/2026-11-27_xeon-m167_vm-l3-blocking.tsv`). So the
//! model is asked at a half and a quarter of that L3
//! ([`UNTRUSTED_L3_BLOCK_DIVISORS`]), and the timed trials keep the faster
//! nomination, or the plain pass. (Until 2026-11-29 a quarter and an eighth:
//! on a VM reporting 260 MiB, the eighth's blocks were never kept in six full
//! runs, and blocks of a half, 130 MiB, beat the quarter's and the plain
//! pass at d = 128, `perf-reports/ablation/2026-11-29_xeon-m207_vm-l3-half.tsv`.)
//!
//! # The traffic model (cost of one pass, in streamed-line units)
//! With `E` edges, gathered rows of `b` bytes (`L = ⌈b/64⌉` lines, rows
//! cache-line aligned), destination rows of `L_d` lines, a budget `C` and
//! `h(k)` = the fraction of edges whose source is among the `k` most
//! frequent ([`SourceProfile`]):
//!
//! - **plain pass** (pull, one pass over the CSR): the `C/b` hottest sources
//!   stay cached, the rest are random DRAM lines:
//!   `E·L·(h·LINE_CACHED + (1−h)·LINE_RANDOM)`;
//! - **blocked pass** (`nb = ⌈Ns·b/C⌉` blocks of `C/b` sources): every
//!   gather hits the cache, `E·L·LINE_CACHED`, but each block streams
//!   destination rows again (g-SpMM's output rows, read and written;
//!   g-SDDMM's destination operand rows, read; with max/min arg outputs
//!   the row's winning ordinals too, counted in `L_d`):
//!   `(read + written)·L_d·LINE_STREAMED`, where the
//!   `touched ≈ Nd·nb·(1 − (1 − 1/nb)^deg)` rows are read and (g-SpMM)
//!   written, or all `Nd·nb` are read where the touched rows lie less than
//!   [`PREFETCH_SPAN_BYTES`] apart (the prefetchers stream the rows between
//!   them too); plus the layout's entries.
//!
//! Both add the index streams. The model *nominates* blocking when the
//! blocked cost is below [`NOMINATION_MARGIN`] of the plain one; the SIMD
//! backend then times both passes on the first calls and keeps the faster
//! (`gnnkern::backend::simd::trials`), because the choice also turns on
//! effects the model leaves out (random edge-indexed reads evicting the
//! block, arg bookkeeping per entry). The line costs are ratios of
//! throughputs measured on the AMD EPYC Zen 4 VM (`docs/PERFORMANCE.md`,
//! "Source blocking"): triad 27 GB/s (streamed), random 64-byte lines from
//! 128 MiB 11.6 GB/s (2.4× a streamed line), random lines from an 8 MiB
//! working set 48 GB/s (0.6×). On 2^24-edge graphs at d = 32 it nominates
//! the uniform graph (blocked measured 0.63–0.69× the plain time) and not
//! RMAT, whose 128 Ki hottest sources take 91% of the edges (blocked
//! measured 1.1×).
//!
//! Feature (N-dimension) tiling: a blocked pass over feature tiles of `t`
//! bytes is supported and tested ([`Tiling::Elements`]), but [`Tiling::Auto`]
//! never tiles: every tiled variant measured on three machines was slower
//! than the best untiled choice (a tile's gathered slices are spread over
//! `b/t` times the address range, so TLB reach and DRAM page locality drop).

use std::cell::Cell;
use std::sync::OnceLock;

/// Larger L3s per sharing CPU are taken as virtualised: the host's, not
/// this machine's (see the module docs).
pub const MAX_CREDIBLE_L3_PER_CPU: usize = 32 << 20;
/// Source blocking is nominated at these fractions (1/k) of an L3 that is
/// reported but not credible, fewest blocks first (see the module docs).
pub const UNTRUSTED_L3_BLOCK_DIVISORS: [usize; 2] = [2, 4];
/// Cost of a streamed 64-byte line (the unit).
pub const LINE_STREAMED: f64 = 1.0;
/// Cost of a randomly gathered 64-byte line from DRAM.
pub const LINE_RANDOM: f64 = 2.4;
/// Cost of a randomly gathered 64-byte line that hits the LLC.
pub const LINE_CACHED: f64 = 0.6;
/// Blocking is nominated when modelled below this fraction of the plain pass.
pub const NOMINATION_MARGIN: f64 = 1.0;
/// Mean gap between the destination rows a block touches below which the
/// blocked pass is modelled as reading all of them (the prefetchers run
/// ahead within a 4 KiB page). On the Zen 4 VM 32 blocks at d = 128 (rows
/// ~1.3 KiB apart) took 1.36-1.48 s against the plain pass's 0.52-0.56 s,
/// which counting only the touched rows put at break-even
/// (`perf-reports/ablation/2026-11-30_zen4_after-run.tsv`, section D).
pub const PREFETCH_SPAN_BYTES: usize = 4096;
/// Environment variable overriding the model's cache budget (bytes).
pub const LLC_ENV: &str = "GNNKERN_LLC_BYTES";

/// The data cache hierarchy of CPU 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheInfo {
    /// L1 data cache bytes (per core).
    pub l1d: usize,
    /// L2 bytes (per core on current x86).
    pub l2: usize,
    /// L3 bytes as reported (0 if none).
    pub l3: usize,
    /// CPUs sharing the L3.
    pub l3_shared_by: usize,
    /// Whether the L3 passed the credibility check.
    pub l3_trusted: bool,
}

impl CacheInfo {
    /// The cache hierarchy, read once.
    pub fn get() -> &'static CacheInfo {
        static INFO: OnceLock<CacheInfo> = OnceLock::new();
        INFO.get_or_init(|| {
            let info = read_sysfs().or_else(read_cpuid).unwrap_or(CacheInfo {
                l1d: 32 << 10,
                l2: 1 << 20,
                l3: 0,
                l3_shared_by: 1,
                l3_trusted: false,
            });
            log::debug!("cache hierarchy: {info:?}");
            info
        })
    }

    /// Bytes of gathered feature rows the model assumes stay cached: half
    /// of a trusted L3 (the rest holds the streams passing through it),
    /// else half of one core's L2 (every worker gathers from the same block).
    pub fn budget(&self) -> usize {
        if self.l3_trusted { self.l3 / 2 } else { self.l2 / 2 }
    }

    /// The budgets source blocking is nominated at, fewest blocks first:
    /// [`CacheInfo::budget`], or for an L3 reported but not credible its
    /// [`UNTRUSTED_L3_BLOCK_DIVISORS`] fractions (never below that budget).
    pub fn blocking_budgets(&self) -> Vec<usize> {
        let budget = self.budget();
        if self.l3_trusted || self.l3 == 0 {
            return vec![budget];
        }
        let mut budgets: Vec<usize> = UNTRUSTED_L3_BLOCK_DIVISORS.iter().map(|k| (self.l3 / k).max(budget)).collect();
        budgets.dedup();
        budgets
    }

    fn finish(l1d: usize, l2: usize, l3: usize, l3_shared_by: usize) -> CacheInfo {
        let l3_trusted = l3 > 0 && l3 / l3_shared_by.max(1) <= MAX_CREDIBLE_L3_PER_CPU;
        CacheInfo { l1d, l2, l3, l3_shared_by, l3_trusted }
    }
}

fn read_sysfs() -> Option<CacheInfo> {
    let base = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let (mut l1d, mut l2, mut l3, mut l3_shared) = (0, 0, 0, 1);
    for entry in std::fs::read_dir(base).ok()? {
        let dir = entry.ok()?.path();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok().map(|s| s.trim().to_string());
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size")) else {
            continue;
        };
        if kind == "Instruction" {
            continue;
        }
        let bytes = parse_size(&size)?;
        match level.as_str() {
            "1" => l1d = bytes,
            "2" => l2 = bytes,
            "3" => {
                l3 = bytes;
                l3_shared = read("shared_cpu_list").map_or(1, |l| count_cpus(&l));
            }
            _ => {}
        }
    }
    (l2 > 0).then(|| CacheInfo::finish(l1d, l2, l3, l3_shared))
}

/// `"2048K"` -> 2 MiB.
fn parse_size(s: &str) -> Option<usize> {
    let (num, mult) = match s.as_bytes().last()? {
        b'K' => (&s[..s.len() - 1], 1 << 10),
        b'M' => (&s[..s.len() - 1], 1 << 20),
        b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok().map(|n| n * mult)
}

/// Number of CPUs in a list such as `"0-3,8"`.
fn count_cpus(list: &str) -> usize {
    list.split(',')
        .filter_map(|part| match part.split_once('-') {
            Some((a, b)) => Some(b.parse::<usize>().ok()? + 1 - a.parse::<usize>().ok()?),
            None => part.parse::<usize>().ok().map(|_| 1),
        })
        .sum::<usize>()
        .max(1)
}

#[cfg(target_arch = "x86_64")]
fn read_cpuid() -> Option<CacheInfo> {
    use std::arch::x86_64::__cpuid_count;
    let (mut l1d, mut l2, mut l3, mut l3_shared) = (0, 0, 0, 1);
    for sub in 0..16 {
        // CPUID leaf 4 is the deterministic cache parameters leaf (type 0 ends the list).
        let r = __cpuid_count(4, sub);
        let kind = r.eax & 0x1f;
        if kind == 0 {
            break;
        }
        if kind == 2 {
            continue;
        }
        let level = (r.eax >> 5) & 0x7;
        let ways = ((r.ebx >> 22) & 0x3ff) as usize + 1;
        let parts = ((r.ebx >> 12) & 0x3ff) as usize + 1;
        let line = (r.ebx & 0xfff) as usize + 1;
        let sets = r.ecx as usize + 1;
        let bytes = ways * parts * line * sets;
        match level {
            1 => l1d = bytes,
            2 => l2 = bytes,
            3 => {
                l3 = bytes;
                l3_shared = ((r.eax >> 14) & 0xfff) as usize + 1;
            }
            _ => {}
        }
    }
    (l2 > 0).then(|| CacheInfo::finish(l1d, l2, l3, l3_shared))
}

#[cfg(not(target_arch = "x86_64"))]
fn read_cpuid() -> Option<CacheInfo> {
    None
}

/// `GNNKERN_LLC_BYTES` when set to a positive number (read once; a
/// malformed value is logged and ignored).
fn budget_override() -> Option<usize> {
    static OVERRIDE: OnceLock<Option<usize>> = OnceLock::new();
    *OVERRIDE.get_or_init(|| {
        std::env::var(LLC_ENV).ok().and_then(|v| match v.trim().parse::<usize>() {
            Ok(n) if n > 0 => Some(n),
            _ => {
                log::warn!("{LLC_ENV}={v:?} is not a positive byte count; using the cache hierarchy");
                None
            }
        })
    })
}

/// The model's cache budget: `GNNKERN_LLC_BYTES` when set, else
/// [`CacheInfo::budget`].
pub fn cache_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let budget = budget_override().unwrap_or_else(|| CacheInfo::get().budget());
        log::debug!("traffic-model cache budget: {budget} bytes");
        budget
    })
}

/// The budgets source blocking is nominated at, fewest blocks first: the
/// one `GNNKERN_LLC_BYTES` sets, else [`CacheInfo::blocking_budgets`].
pub fn blocking_budgets() -> &'static [usize] {
    static BUDGETS: OnceLock<Vec<usize>> = OnceLock::new();
    BUDGETS.get_or_init(|| {
        let budgets = budget_override().map_or_else(|| CacheInfo::get().blocking_budgets(), |b| vec![b]);
        log::debug!("source blocking budgets: {budgets:?} bytes");
        budgets
    })
}

/// Source blocking of g-SpMM and g-SDDMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Blocking {
    /// The traffic model decides (the default).
    #[default]
    Auto,
    /// Never block.
    Off,
    /// Blocks of exactly this many source nodes (at least 1).
    Sources(usize),
}

/// Feature (N-dimension) tiling of blocked g-SpMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Tiling {
    /// Whole rows (the default: no measured case won with tiles, see the
    /// module docs).
    #[default]
    Auto,
    /// One tile spanning the whole feature row.
    Off,
    /// Tiles of about this many output elements (rounded to whole vectors).
    Elements(usize),
}

/// Whether g-SDDMM's plain pass stages its messages by edge-id window
/// before copying them to `out[eid]` (`crate::kernels::sddmm_may_stage`),
/// and g-SpMM's plain pass stages its edge operand by slot window before
/// the walk reads it (`crate::kernels::spmm_may_stage`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Staging {
    /// Never in the kernel: staging pays only when edge ids are scattered
    /// along the walk, which the kernel does not scan for; the SIMD backend
    /// knows it per graph and times both.
    #[default]
    Auto,
    /// Windows sized from [`cache_budget`].
    On,
    /// Windows of this many edge ids (rounded down to a power of two; tests
    /// run many windows on small graphs).
    Windows(usize),
    /// Never.
    Off,
}

/// Non-temporal stores of the plain g-SpMM pass's output rows, of
/// g-SDDMM's vector messages and of the row-order edge softmax's output
/// rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Streaming {
    /// g-SpMM: when the output exceeds [`cache_budget`] (its lines would be
    /// read for ownership only to be evicted before anyone reads them).
    /// g-SDDMM: never in the kernel: whether streaming its scattered
    /// `out[eid]` rows pays flips between machines, so the SIMD backend
    /// times both (`crate::kernels::sddmm_may_stream`). Edge softmax: never
    /// in the kernel either; the backend times both for rows of whole lines
    /// (`crate::kernels::softmax_may_stream`).
    #[default]
    Auto,
    /// Always (full, aligned vectors; tests run the path on small graphs).
    On,
    /// Never.
    Off,
}

/// How many output vectors one chunk of a g-SpMM row keeps in registers
/// while it walks the row's edges (`crate::kernels::spmm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Chunking {
    /// Up to 8. The SIMD backend times [`Chunking::Narrow`] against it for
    /// max/min with arg outputs where the state of a chunk of 8 would not
    /// fit the ISA's vector registers (`crate::kernels::spmm_may_narrow`).
    #[default]
    Auto,
    /// Up to 4: a max/min chunk's values, winner ordinals and NaN probe fit
    /// 16 ymm registers, at the price of walking each row's edges twice as
    /// often for wide rows.
    Narrow,
    /// Up to 8, and no trial.
    Wide,
}

/// Knobs of the CPU kernels; [`Tuning::default`] is what production uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    pub blocking: Blocking,
    pub tiling: Tiling,
    /// Cache lines of upcoming gathered rows that g-SpMM, g-SDDMM and the
    /// edge softmax keep in flight with software prefetches (0: off); each
    /// kernel turns it into a distance in edge slots with
    /// [`Tuning::prefetch_slots`].
    pub prefetch_lines: usize,
    pub streaming: Streaming,
    pub staging: Staging,
    pub chunking: Chunking,
}

/// The farthest a kernel prefetches, in edge slots (see [`Tuning::prefetch_slots`]).
pub const MAX_PREFETCH_SLOTS: usize = 64;

impl Tuning {
    /// The production defaults.
    pub const DEFAULT: Tuning = Tuning {
        blocking: Blocking::Auto,
        tiling: Tiling::Auto,
        prefetch_lines: 128,
        streaming: Streaming::Auto,
        staging: Staging::Auto,
        chunking: Chunking::Auto,
    };

    /// How many edge slots ahead a kernel whose widest gathered row is
    /// `row_bytes` long prefetches: `prefetch_lines` lines of such rows, at
    /// least 1 and at most [`MAX_PREFETCH_SLOTS`] (0 when prefetch is off).
    ///
    /// Why lines: a prefetch helps only if it is issued a full miss latency
    /// before the load, and a slot's time grows with the lines it gathers.
    /// On the Zen 5 VM the dense copy_u_sum loop takes ~5 ns per edge and
    /// thread at d = 32 (two lines per row): 16 slots led by ~80 ns, less
    /// than one random DRAM access in a VM (~100-150 ns with the nested page
    /// walk), and 64 slots (128 lines) took d = 32 copy-reduce and
    /// u_mul_e_sum 1.5-2.2x faster and the 4-head edge softmax 1.2-1.3x. At
    /// d = 128 (eight lines, ~14 ns per slot) 16 slots (128 lines) already
    /// covered the latency; farther (32-64 slots) was within ±2 % for
    /// copy-reduce when interleaved in one process (4-8 % faster in a
    /// per-process sweep, inside this VM's run-to-run noise) and up to 1.5x
    /// slower for u_dot_v (likely because its prefetched lines then outrun
    /// L1: 512 lines = 32 KiB of a 48 KiB L1d; the VM has no perf counters
    /// to confirm it). Beyond 64 slots the
    /// d = 32 cases gained nothing consistent. Data:
    /// `perf-reports/ablation/2026-11-25_zen5_prefetch-distance.tsv` and
    /// `perf-reports/ablation/2026-11-25_zen5_prefetch-hint-d128.tsv`.
    pub fn prefetch_slots(&self, row_bytes: usize) -> usize {
        if self.prefetch_lines == 0 {
            return 0;
        }
        (self.prefetch_lines / row_bytes.div_ceil(64).max(1)).clamp(1, MAX_PREFETCH_SLOTS)
    }
}

impl Default for Tuning {
    fn default() -> Self {
        Self::DEFAULT
    }
}

thread_local! {
    static TUNING: Cell<Tuning> = const { Cell::new(Tuning::DEFAULT) };
}

/// The tuning kernels called from this thread use.
pub fn active_tuning() -> Tuning {
    TUNING.with(Cell::get)
}

/// Runs `f` with kernels called from this thread using `tuning` (tests use
/// it to force tiny blocks; benchmarks for ablations).
pub fn with_tuning<R>(tuning: Tuning, f: impl FnOnce() -> R) -> R {
    struct Restore(Tuning);
    impl Drop for Restore {
        fn drop(&mut self) {
            TUNING.with(|t| t.set(self.0));
        }
    }
    let _restore = Restore(TUNING.with(|t| t.replace(tuning)));
    f()
}

/// What the model sees of one pass that gathers source rows.
#[derive(Clone, Copy, Debug)]
pub struct GatherShape {
    pub num_src: usize,
    pub num_dst: usize,
    pub num_edges: usize,
    /// Bytes gathered per edge from source rows (0: nothing to block).
    pub gathered_row_bytes: usize,
    /// Bytes of the destination row a blocked pass re-streams per entry
    /// (g-SpMM: the output row; g-SDDMM: the destination operand row).
    pub dst_row_bytes: usize,
    /// Bytes of the max/min state a blocked pass keeps beside that row and
    /// re-streams with it (one winning ordinal of 1, 2 or 4 bytes per output
    /// element, when arg outputs are wanted; else 0).
    pub winner_row_bytes: usize,
    /// Whether that row is also written back (g-SpMM accumulates into it).
    pub dst_rows_written: bool,
    /// Bytes of one index (4 or 8).
    pub index_bytes: usize,
}

/// A blocking decision: `None` = the plain single pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockPlan {
    /// Source nodes per block.
    pub block_sources: usize,
    /// Output bytes per feature tile (a multiple of the vector width; the
    /// whole row unless tiling was forced).
    pub tile_bytes: usize,
}

fn lines(bytes: usize) -> f64 {
    bytes.div_ceil(64) as f64
}

impl GatherShape {
    /// Lines of a destination row and its winning slots.
    fn restreamed_lines(&self) -> f64 {
        lines(self.dst_row_bytes) + lines(self.winner_row_bytes)
    }
}

/// Modelled cost of the plain pass; `hot` is the fraction of edges whose
/// source row is cached.
pub fn plain_cost(sh: &GatherShape, hot: f64) -> f64 {
    let e = sh.num_edges as f64;
    let gathers = e * lines(sh.gathered_row_bytes) * (hot * LINE_CACHED + (1.0 - hot) * LINE_RANDOM);
    let streams = (e * sh.index_bytes as f64 / 64.0 + sh.num_dst as f64 * sh.restreamed_lines()) * LINE_STREAMED;
    gathers + streams
}

/// Modelled cost of the blocked pass with `nb` blocks.
pub fn blocked_cost(sh: &GatherShape, nb: usize) -> f64 {
    let (e, nd, nb) = (sh.num_edges as f64, sh.num_dst as f64, nb as f64);
    let deg = if nd == 0.0 { 0.0 } else { e / nd };
    let touched = (nd * nb * (1.0 - (1.0 - 1.0 / nb).powf(deg))).min(e);
    let row_lines = sh.restreamed_lines();
    // A block visits its touched rows in ascending order. Less than a page
    // apart on average, the hardware prefetchers stream the whole range
    // between them, so the block reads every destination row, touched or not.
    let gap_bytes = if touched == 0.0 { f64::INFINITY } else { nd * nb / touched * row_lines * 64.0 };
    let read_rows = if gap_bytes < PREFETCH_SPAN_BYTES as f64 { nd * nb } else { touched };
    let written_rows = if sh.dst_rows_written { touched } else { 0.0 };
    let index_lines = (e + 2.0 * touched) * sh.index_bytes as f64 / 64.0;
    // Filling the rows with the identity and finishing them (g-SpMM).
    let fill = if sh.dst_rows_written { 2.0 * nd * row_lines } else { 0.0 };
    let restreamed = (read_rows + written_rows) * row_lines;
    e * lines(sh.gathered_row_bytes) * LINE_CACHED + (restreamed + index_lines + fill) * LINE_STREAMED
}

/// Nominates blocking for one pass under `tuning` (a forced setting is
/// returned as it is), at each of [`blocking_budgets`]: the nominations in
/// order, fewest blocks first, none for the plain pass alone. `hot(k)` =
/// fraction of edges whose source is among the `k` most frequent; it is
/// called only when blocking is a candidate (the gathered rows exceed a
/// budget).
pub fn plan_blocking(sh: &GatherShape, tuning: Tuning, hot: impl Fn(usize) -> f64) -> Vec<BlockPlan> {
    plan_blocking_among(sh, tuning, blocking_budgets(), hot)
}

/// [`plan_blocking`] at explicit budgets (duplicates dropped).
pub fn plan_blocking_among(
    sh: &GatherShape,
    tuning: Tuning,
    budgets: &[usize],
    hot: impl Fn(usize) -> f64,
) -> Vec<BlockPlan> {
    let mut plans = Vec::with_capacity(budgets.len());
    for &budget in budgets {
        if let Some(plan) = plan_blocking_with(sh, tuning, budget, &hot)
            && !plans.contains(&plan)
        {
            plans.push(plan);
        }
    }
    plans
}

/// [`plan_blocking`] with an explicit cache budget.
pub fn plan_blocking_with(
    sh: &GatherShape,
    tuning: Tuning,
    budget: usize,
    hot: impl FnOnce(usize) -> f64,
) -> Option<BlockPlan> {
    const LANE_BYTES: usize = 64;
    let full_tile = sh.dst_row_bytes.max(4);
    let tile = match tuning.tiling {
        Tiling::Off | Tiling::Auto => full_tile,
        Tiling::Elements(n) => (n * 4).div_ceil(LANE_BYTES).max(1) * LANE_BYTES,
    };
    match tuning.blocking {
        Blocking::Off => None,
        Blocking::Sources(n) => Some(BlockPlan { block_sources: n.max(1), tile_bytes: tile }),
        Blocking::Auto => {
            let b = sh.gathered_row_bytes;
            // Everything gathered fits the budget (sampled mini-batch blocks,
            // small graphs): the plain pass already hits the cache.
            if b == 0 || sh.num_src.saturating_mul(b) <= budget {
                return None;
            }
            let block_sources = (budget / b).max(1);
            let nb = sh.num_src.div_ceil(block_sources);
            let plain = plain_cost(sh, hot(block_sources).clamp(0.0, 1.0));
            let blocked = blocked_cost(sh, nb);
            let plan = BlockPlan { block_sources, tile_bytes: tile };
            log::debug!("traffic model: plain {plain:.3e}, blocked {blocked:.3e} with {plan:?} ({sh:?})");
            (blocked < NOMINATION_MARGIN * plain).then_some(plan)
        }
    }
}

/// How often each source id occurs among the edges, summarised for the
/// model: the occurrence counts in descending order, run-length encoded.
/// Built once per graph orientation in O(E + N) (the backend caches it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceProfile {
    /// `(count, number of sources with that count)`, counts descending, no zero count.
    runs: Vec<(usize, usize)>,
    num_edges: usize,
}

impl SourceProfile {
    /// Counts the source ids of `csr` (columns of an in-CSR).
    pub fn of<I: crate::Index>(csr: &crate::layout::CsrView<'_, I>) -> Self {
        use rayon::prelude::*;
        let n = csr.num_cols();
        let chunk = csr.num_edges().div_ceil(rayon::current_num_threads().max(1)).max(1 << 16);
        let counts = csr
            .indices()
            .par_chunks(chunk)
            .map(|ids| {
                let mut c = vec![0u32; n];
                for &u in ids {
                    c[u.to_usize()] += 1;
                }
                c
            })
            .reduce_with(|mut a, b| {
                a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                a
            })
            .unwrap_or_default();
        // Histogram of counts, then runs in descending count order.
        let max = counts.iter().copied().max().unwrap_or(0) as usize;
        let mut hist = vec![0usize; max + 1];
        for &c in &counts {
            hist[c as usize] += 1;
        }
        let runs = (1..=max).rev().filter(|&c| hist[c] > 0).map(|c| (c, hist[c])).collect();
        Self { runs, num_edges: csr.num_edges() }
    }

    /// Fraction of edges whose source is among the `k` most frequent.
    pub fn hot_fraction(&self, k: usize) -> f64 {
        let (mut left, mut edges) = (k, 0usize);
        for &(count, sources) in &self.runs {
            let take = sources.min(left);
            edges += take * count;
            left -= take;
            if left == 0 {
                break;
            }
        }
        if self.num_edges == 0 { 1.0 } else { edges as f64 / self.num_edges as f64 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distances the sweep behind `prefetch_slots` measured best.
    #[test]
    fn prefetch_distance_follows_the_gathered_lines() {
        let t = Tuning::DEFAULT;
        assert_eq!(t.prefetch_slots(4 * 32), 64, "d = 32: two lines per row");
        assert_eq!(t.prefetch_slots(4 * 128), 16, "d = 128: eight lines per row, as before");
        assert_eq!(t.prefetch_slots(16), MAX_PREFETCH_SLOTS, "4-head softmax rows: capped");
        assert_eq!(t.prefetch_slots(0), MAX_PREFETCH_SLOTS, "no gathered row: capped");
        assert_eq!(t.prefetch_slots(4 * 4096), 1, "rows wider than the budget still prefetch the next edge");
        assert_eq!(Tuning { prefetch_lines: 0, ..t }.prefetch_slots(4 * 32), 0, "0 turns prefetch off");
    }

    #[test]
    fn sizes_and_cpu_lists_parse() {
        assert_eq!(parse_size("2048K"), Some(2 << 20));
        assert_eq!(parse_size("480M"), Some(480 << 20));
        assert_eq!(count_cpus("0-1"), 2);
        assert_eq!(count_cpus("0-3,8,10-11"), 7);
        let virt = CacheInfo::finish(48 << 10, 2 << 20, 480 << 20, 2);
        assert!(!virt.l3_trusted, "a 240 MiB-per-CPU L3 is not credible");
        assert_eq!(virt.budget(), 1 << 20);
        let vm = CacheInfo::finish(32 << 10, 1 << 20, 32 << 20, 2);
        assert!(vm.l3_trusted, "one Zen 4 CCD's 32 MiB L3 seen by 2 vCPUs");
        assert_eq!(vm.budget(), 16 << 20);
    }

    #[test]
    fn blocking_is_nominated_at_fractions_of_an_l3_that_is_not_credible() {
        let virt = CacheInfo::finish(48 << 10, 2 << 20, 480 << 20, 2);
        assert_eq!(virt.blocking_budgets(), [240 << 20, 120 << 20], "a half and a quarter of the host's L3");
        let small = CacheInfo::finish(48 << 10, 2 << 20, 72 << 20, 2);
        assert!(!small.l3_trusted);
        assert_eq!(small.blocking_budgets(), [36 << 20, 18 << 20]);
        let floor = CacheInfo::finish(48 << 10, 64 << 20, 72 << 20, 2);
        assert_eq!(floor.blocking_budgets(), [36 << 20, 32 << 20], "never below half an L2");
        let same = CacheInfo::finish(48 << 10, 128 << 20, 72 << 20, 2);
        assert_eq!(same.blocking_budgets(), [64 << 20], "equal budgets are asked once");
        let vm = CacheInfo::finish(32 << 10, 1 << 20, 32 << 20, 2);
        assert_eq!(vm.blocking_budgets(), [vm.budget()], "a credible L3: the cache budget");
        let none = CacheInfo::finish(32 << 10, 1 << 20, 0, 1);
        assert_eq!(none.blocking_budgets(), [512 << 10], "no L3: half an L2");
    }

    /// The Intel Xeon VMs' case (2^20 nodes, 2^24 edges, d = 128): on the
    /// uniform graph (a block's worth of the hottest sources, a half or a
    /// quarter of them, takes little more than its share of the edges) both
    /// fractions of a 480 MiB and of a 260 MiB L3 are nominated, fewest
    /// blocks first; on RMAT (most edges from the hottest sources) neither;
    /// a forced setting is asked once.
    #[test]
    fn every_budget_the_model_accepts_is_a_nomination() {
        let sh = GatherShape {
            num_src: 1 << 20,
            num_dst: 1 << 20,
            num_edges: 1 << 24,
            gathered_row_bytes: 512,
            dst_row_bytes: 512,
            winner_row_bytes: 0,
            dst_rows_written: true,
            index_bytes: 4,
        };
        let uniform = |k: usize| (k as f64 / (1 << 20) as f64 * 1.2).min(1.0);
        for (l3_mib, expected) in [(480, [491_520, 245_760]), (260, [266_240, 133_120])] {
            let budgets = CacheInfo::finish(48 << 10, 2 << 20, l3_mib << 20, 2).blocking_budgets();
            let plans = plan_blocking_among(&sh, Tuning::default(), &budgets, uniform);
            let sources: Vec<usize> = plans.iter().map(|p| p.block_sources).collect();
            assert_eq!(sources, expected, "L3 of {l3_mib} MiB");
        }
        // Max/min with arg outputs re-stream each row's winning ordinals
        // too: with 4-byte ones (as many bytes again) a row in ~7 of 8
        // blocks no longer pays, 4 blocks still might (the trial decides).
        let with_args = GatherShape { winner_row_bytes: 512, ..sh };
        let budgets = CacheInfo::finish(48 << 10, 2 << 20, 260 << 20, 2).blocking_budgets();
        let plans = plan_blocking_among(&with_args, Tuning::default(), &budgets, uniform);
        assert_eq!(plans, [BlockPlan { block_sources: 266_240, tile_bytes: 512 }]);
        // One-byte ordinals (degrees up to 256) cost a quarter of that, and
        // 8 blocks are nominated again.
        let narrow = GatherShape { winner_row_bytes: 128, ..sh };
        let sources: Vec<usize> = plan_blocking_among(&narrow, Tuning::default(), &budgets, uniform)
            .iter()
            .map(|p| p.block_sources)
            .collect();
        assert_eq!(sources, [266_240, 133_120]);
        let budgets = [120 << 20, 60 << 20];
        let rmat = plan_blocking_among(&sh, Tuning::default(), &budgets, |_| 0.91);
        assert!(rmat.is_empty(), "hot sources stay cached in the plain pass: {rmat:?}");
        let forced = Tuning { blocking: Blocking::Sources(7), ..Tuning::DEFAULT };
        assert_eq!(
            plan_blocking_among(&sh, forced, &budgets, |_| 0.0),
            [BlockPlan { block_sources: 7, tile_bytes: 512 }]
        );
        let off = Tuning { blocking: Blocking::Off, ..Tuning::DEFAULT };
        assert!(plan_blocking_among(&sh, off, &budgets, |_| 0.0).is_empty());
        assert!(plan_blocking_among(&sh, Tuning::default(), &[], |_| 0.0).is_empty());
    }

    /// The measured cases of the module docs (AMD EPYC Zen 4 VM, 16 MiB
    /// budget, 2^20 nodes, 2^24 edges): hot fractions from the generated
    /// graphs' source counts.
    #[test]
    fn model_nominates_where_blocking_measured_faster() {
        const BUDGET: usize = 16 << 20;
        let spmm = |b: usize| GatherShape {
            num_src: 1 << 20,
            num_dst: 1 << 20,
            num_edges: 1 << 24,
            gathered_row_bytes: b,
            dst_row_bytes: b,
            winner_row_bytes: 0,
            dst_rows_written: true,
            index_bytes: 4,
        };
        let plan = |sh: GatherShape, hot: f64| plan_blocking_with(&sh, Tuning::default(), BUDGET, |_| hot);
        // d = 32: uniform (128 Ki hottest sources: 18% of edges) is
        // nominated, RMAT (91%) is not.
        assert_eq!(plan(spmm(128), 0.18), Some(BlockPlan { block_sources: 1 << 17, tile_bytes: 128 }));
        assert_eq!(plan(spmm(128), 0.91), None);
        // u_dot_v d = 32 (g-SDDMM re-reads destination rows): the same.
        let sddmm = GatherShape { dst_rows_written: false, ..spmm(128) };
        assert!(plan(sddmm, 0.18).is_some());
        assert_eq!(plan(sddmm, 0.91), None);
        // Ratios behind the choices: uniform d = 32 clearly below 1, RMAT
        // well above. Uniform d = 128 (32 blocks: a block touches ~40 % of
        // the rows, ~1.3 KiB apart) above 1: measured 2.4-2.7x the plain
        // time (perf-reports/ablation/2026-11-30_zen4_after-run.tsv, section
        // D); counting only the touched rows put it at 0.98, nominated.
        let ratio = |sh: GatherShape, hot: f64, nb| blocked_cost(&sh, nb) / plain_cost(&sh, hot);
        assert!(ratio(spmm(128), 0.18, 8) < 0.8);
        assert!(ratio(spmm(128), 0.91, 8) > 1.5);
        assert!(ratio(spmm(512), 0.05, 32) > 1.3, "{}", ratio(spmm(512), 0.05, 32));
        assert_eq!(plan(spmm(512), 0.05), None);
        assert_eq!(plan(GatherShape { dst_rows_written: false, ..spmm(512) }, 0.05), None);
        // A sampled block (1,024 destinations, fanout 25, d = 128) fits the
        // budget: the plain path, without asking for the profile.
        let block = GatherShape { num_src: 25_600, num_dst: 1024, num_edges: 25_600, ..spmm(512) };
        assert_eq!(plan_blocking_with(&block, Tuning::default(), BUDGET, |_| unreachable!()), None);
        let forced = Tuning { blocking: Blocking::Sources(7), tiling: Tiling::Elements(20), ..Tuning::DEFAULT };
        assert_eq!(
            plan_blocking_with(&block, forced, BUDGET, |_| 0.0),
            Some(BlockPlan { block_sources: 7, tile_bytes: 128 })
        );
    }

    #[test]
    fn source_profile_counts_the_hottest_sources() {
        // Sources: 0 x3, 2 x2, 1 x1, 3 x0 over 6 edges (one row per edge).
        let indptr: Vec<i32> = (0..=6).collect();
        let indices = [0i32, 2, 0, 1, 2, 0];
        let eids: Vec<i32> = (0..6).collect();
        // SAFETY: one edge per row (sorted trivially), ids < 4, eids a permutation.
        let csr = unsafe { crate::layout::CsrView::new_unchecked(&indptr, &indices, &eids, 4) };
        let p = SourceProfile::of(&csr);
        assert_eq!(p.runs, vec![(3, 1), (2, 1), (1, 1)]);
        for (k, want) in [(0, 0.0), (1, 0.5), (2, 5.0 / 6.0), (3, 1.0), (10, 1.0)] {
            assert!((p.hot_fraction(k) - want).abs() < 1e-12, "k = {k}");
        }
    }
}
