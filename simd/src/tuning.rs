//! Cache sizes read at run time, the tuning knobs, and the traffic model
//! that decides source blocking and feature tiling.
//!
//! # Cache sizes
//! Read once from `/sys/devices/system/cpu/cpu0/cache/index*` (level, type,
//! size, `shared_cpu_list`), falling back to CPUID leaf 4 when sysfs is
//! absent. Virtual machines often report a host-sized last-level cache: the
//! machine this was developed on reports a 480 MiB L3 shared by its 2 vCPUs,
//! which no real socket has. An L3 is therefore trusted only when it is at
//! most [`MAX_CREDIBLE_L3_PER_CPU`] per CPU sharing it; otherwise the model
//! budgets with the private L2s alone (and says so at debug log level).
//!
//! # The traffic model (bytes moved per g-SpMM)
//! With `E` edges, `Ns` sources of `b = 4·d` gathered bytes, `Nd`
//! destinations of `o` output bytes, `i` index bytes per edge and a cache of
//! `C` bytes that can hold gathered rows:
//!
//! - **unblocked** (pull, one pass): `E·i + E·b·miss + Nd·o`, where
//!   `miss = max(0, 1 − C / (Ns·b))` is the chance that a uniformly random
//!   source row is not cached, and gathered bytes are weighted by
//!   [`RANDOM_PENALTY`] (a random 64-byte line costs more than a streamed one);
//! - **blocked** (`nb` source blocks of `C_blk / b_t` sources, feature tiles of
//!   `t` bytes, `nt = ⌈b/t⌉` tiles): every source row is read once,
//!   `Ns·b`, but each destination row touched in a block is read and
//!   written again: `2·t·Σ_blocks rows_touched`, with
//!   `rows_touched ≈ Nd·(1 − (1 − 1/nb)^deg)` per block, plus `nt·E·i`
//!   index bytes.
//!
//! Blocking is chosen when it moves less than [`BLOCKING_MARGIN`] of the
//! unblocked traffic. On sparse graphs with a per-core L2 budget (average
//! degree 16, 1M nodes) the re-written output dominates and the model keeps
//! the single pass; blocking wins for dense graphs (average degree in the
//! hundreds) and for large feature rows whose source set barely exceeds the
//! cache. `docs/PERFORMANCE.md` records the measurements behind the
//! constants.

use std::cell::Cell;
use std::sync::OnceLock;

/// Larger L3s per sharing CPU are taken as virtualised and ignored.
pub const MAX_CREDIBLE_L3_PER_CPU: usize = 8 << 20;
/// Cost of a randomly gathered byte relative to a streamed one.
pub const RANDOM_PENALTY: f64 = 2.0;
/// Blocking must move less than this fraction of the unblocked traffic.
pub const BLOCKING_MARGIN: f64 = 0.8;
/// Graphs gathering fewer bytes than this take the plain path unconditionally.
pub const SMALL_GRAPH_BYTES: usize = 4 << 20;

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

    /// Bytes of gathered feature rows one core can keep: its L2 plus its
    /// share of a trusted L3.
    pub fn per_core_budget(&self) -> usize {
        self.l2 + if self.l3_trusted { self.l3 / self.l3_shared_by.max(1) } else { 0 }
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

/// Source blocking of g-SpMM.
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
    /// The traffic model decides (the default).
    #[default]
    Auto,
    /// One tile spanning the whole feature row.
    Off,
    /// Tiles of about this many output elements (rounded to whole vectors).
    Elements(usize),
}

/// Knobs of the CPU kernels; [`Tuning::default`] is what production uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    pub blocking: Blocking,
    pub tiling: Tiling,
    /// g-SpMM prefetches the gathered rows of the edge this many slots
    /// ahead (0: off). Gathers are DRAM-latency bound; a row's ~30
    /// instructions per edge leave the out-of-order window too few
    /// independent misses, so explicit prefetch raises memory parallelism.
    pub prefetch_distance: usize,
}

impl Tuning {
    /// The production defaults.
    pub const DEFAULT: Tuning = Tuning { blocking: Blocking::Auto, tiling: Tiling::Auto, prefetch_distance: 16 };
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

/// What the model sees of one g-SpMM.
#[derive(Clone, Copy, Debug)]
pub struct SpmmShape {
    pub num_src: usize,
    pub num_dst: usize,
    pub num_edges: usize,
    /// Bytes gathered per edge from source rows (0: nothing to block).
    pub gathered_row_bytes: usize,
    /// Bytes of one output row.
    pub out_row_bytes: usize,
    /// Index bytes read per edge.
    pub index_bytes: usize,
    /// Worker threads.
    pub threads: usize,
}

/// A blocking decision: `None` = the plain single pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockPlan {
    /// Source nodes per block.
    pub block_sources: usize,
    /// Output bytes per feature tile (a multiple of the vector width).
    pub tile_bytes: usize,
}

/// Modelled traffic of the plain pass, in weighted bytes.
pub fn unblocked_traffic(sh: &SpmmShape, cache: usize) -> f64 {
    let (e, ns, b) = (sh.num_edges as f64, sh.num_src as f64, sh.gathered_row_bytes as f64);
    let miss = if ns * b == 0.0 { 0.0 } else { (1.0 - cache as f64 / (ns * b)).max(0.0) };
    e * sh.index_bytes as f64 + RANDOM_PENALTY * e * b * miss + sh.num_dst as f64 * sh.out_row_bytes as f64
}

/// Modelled traffic of the blocked pass with `nb` blocks and `nt` tiles.
pub fn blocked_traffic(sh: &SpmmShape, nb: usize, nt: usize) -> f64 {
    let (e, nd) = (sh.num_edges as f64, sh.num_dst as f64);
    let deg = if nd == 0.0 { 0.0 } else { e / nd };
    let touched = nd * (1.0 - (1.0 - 1.0 / nb as f64).powf(deg)) * nb as f64;
    let touched = touched.min(e);
    let out = sh.out_row_bytes as f64;
    nt as f64 * e * sh.index_bytes as f64
        + sh.num_src as f64 * sh.gathered_row_bytes as f64
        + 2.0 * out * touched
        + 2.0 * nd * out
}

/// Decides blocking and tiling for one call under `tuning`, for cores that
/// each keep `per_core` bytes of gathered rows ([`CacheInfo::per_core_budget`]).
pub fn plan_blocking(sh: &SpmmShape, tuning: Tuning, lanes_bytes: usize, per_core: usize) -> Option<BlockPlan> {
    let full_tile = sh.out_row_bytes.max(lanes_bytes);
    let tile_for = |tiling: Tiling| match tiling {
        Tiling::Off | Tiling::Auto => full_tile,
        Tiling::Elements(n) => (n * 4).div_ceil(lanes_bytes).max(1) * lanes_bytes,
    };
    match tuning.blocking {
        Blocking::Off => None,
        Blocking::Sources(n) => Some(BlockPlan { block_sources: n.max(1), tile_bytes: tile_for(tuning.tiling) }),
        Blocking::Auto => {
            let b = sh.gathered_row_bytes;
            if b == 0 || sh.num_edges * b < SMALL_GRAPH_BYTES {
                return None;
            }
            let plain = unblocked_traffic(sh, per_core * sh.threads.max(1));
            // Candidate tiles: the whole row, then halves down to one cache line.
            let mut best: Option<(f64, BlockPlan)> = None;
            let mut tile = match tuning.tiling {
                Tiling::Auto => full_tile,
                other => tile_for(other),
            };
            loop {
                // Every thread gathers from the same block into its own
                // cache: half of one core's budget holds the block's tile.
                let tile_row = tile.min(b);
                let block_sources = (per_core / 2 / tile_row).max(1);
                let nb = sh.num_src.div_ceil(block_sources).max(1);
                let nt = b.div_ceil(tile_row);
                let cost = blocked_traffic(&SpmmShape { out_row_bytes: tile_row, ..*sh }, nb, 1) * nt as f64;
                let plan = BlockPlan { block_sources, tile_bytes: tile_row };
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, plan));
                }
                if tuning.tiling != Tiling::Auto || tile <= 64 {
                    break;
                }
                tile /= 2;
            }
            let (cost, plan) = best?;
            log::debug!("g-SpMM traffic model: plain {plain:.3e} B, blocked {cost:.3e} B with {plan:?}");
            (cost < BLOCKING_MARGIN * plain).then_some(plan)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_cpu_lists_parse() {
        assert_eq!(parse_size("2048K"), Some(2 << 20));
        assert_eq!(parse_size("480M"), Some(480 << 20));
        assert_eq!(count_cpus("0-1"), 2);
        assert_eq!(count_cpus("0-3,8,10-11"), 7);
        let virt = CacheInfo::finish(48 << 10, 2 << 20, 480 << 20, 2);
        assert!(!virt.l3_trusted, "a 240 MiB-per-CPU L3 is not credible");
        assert_eq!(virt.per_core_budget(), 2 << 20);
        let real = CacheInfo::finish(48 << 10, 2 << 20, 60 << 20, 32);
        assert!(real.l3_trusted);
    }

    #[test]
    fn model_keeps_sparse_graphs_unblocked_and_blocks_dense_ones() {
        const L2: usize = 2 << 20;
        let sparse = SpmmShape {
            num_src: 1 << 20,
            num_dst: 1 << 20,
            num_edges: 1 << 24,
            gathered_row_bytes: 128,
            out_row_bytes: 128,
            index_bytes: 4,
            threads: 2,
        };
        assert_eq!(plan_blocking(&sparse, Tuning::default(), 64, L2), None);
        let dense = SpmmShape { num_src: 1 << 17, num_dst: 1 << 17, num_edges: 1 << 26, ..sparse };
        assert!(plan_blocking(&dense, Tuning::default(), 64, L2).is_some());
        let small = SpmmShape { num_src: 25_600, num_dst: 1024, num_edges: 25_600, gathered_row_bytes: 512, ..sparse };
        assert_eq!(plan_blocking(&small, Tuning::default(), 64, L2), None, "sampled blocks take the plain path");
        let forced = Tuning { blocking: Blocking::Sources(7), tiling: Tiling::Elements(20), ..Tuning::DEFAULT };
        assert_eq!(plan_blocking(&small, forced, 64, L2), Some(BlockPlan { block_sources: 7, tile_bytes: 128 }));
    }
}
