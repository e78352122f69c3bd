//! The JSON schema of one op result (printed by `op --json`, written by the
//! peers) and of a suite run file (`perf-reports/runs/*.json`).

use crate::error::{BenchError, Result};
use crate::machine::Machine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Version of the run-file schema; bumped on incompatible changes.
pub const SCHEMA_VERSION: u32 = 1;

/// The machine fields printed with every op result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineBrief {
    pub cpu: String,
    pub vendor: String,
    pub cores: usize,
}

impl From<&Machine> for MachineBrief {
    fn from(m: &Machine) -> Self {
        Self { cpu: m.cpu.clone(), vendor: m.vendor.clone(), cores: m.cores }
    }
}

/// One timed op: the object `gnnkern-bench op --json` prints and each
/// `peers/peer_op.py` line carries (docs/BENCHMARKS.md lists every field).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpResult {
    /// `gnnkern`, `dgl`, `pyg` or `torch_sparse`.
    pub tool: String,
    pub op: String,
    /// The graph's name (spec string or directory name).
    pub graph: String,
    /// Source nodes (all nodes of a homogeneous graph).
    pub nodes: usize,
    /// Destination nodes (equal to `nodes` except for sampled blocks).
    pub dst_nodes: usize,
    pub edges: usize,
    pub dim: usize,
    /// Heads (`null`: plain `[N, D]` features).
    pub heads: Option<usize>,
    pub threads: usize,
    /// The backend that ran (for gnnkern: what `auto` resolved to).
    pub backend: String,
    /// gnnkern's SIMD backend: the pass the timed runs ended on, `plain` or
    /// `blocked:<blocks>x<sources>` (the first calls time both, see
    /// `gnnkern::backend::simd::trials`); absent for other tools and ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    /// ISA level in force (gnnkern) or the peer's library version string.
    pub isa: String,
    pub reps: usize,
    /// `suite --peers`: the median of each slice of calls, in order, when the
    /// case's calls alternated with the peers' in slices (`suite::run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_medians_ms: Option<Vec<f64>>,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// FLOPs of one execution (see `model.rs`).
    pub flops: u64,
    pub gflops: f64,
    /// Minimum-traffic model bytes of one execution.
    pub model_bytes: u64,
    pub gbps: f64,
    /// `gbps` as a percentage of the machine's triad bandwidth at `threads` threads.
    pub pct_of_triad: Option<f64>,
    /// gnnkern's SIMD plain / row-order passes: the bytes their own
    /// traversal moves through a cache of the machine's size (`traversal.rs`);
    /// absent for peers, blocked passes, gradient ops and older run files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traversal_bytes: Option<u64>,
    /// `traversal_bytes` per median time, as a percentage of the triad.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traversal_pct_of_triad: Option<f64>,
    pub peak_rss_mb: Option<f64>,
    /// Output shape.
    pub out_shape: Vec<usize>,
    /// Σ out (f64): compare across tools with a relative tolerance.
    pub checksum: f64,
    /// Σ |out| (f64).
    pub checksum_abs: f64,
    pub machine: MachineBrief,
}

impl OpResult {
    /// The case key that matches the same work across tools and runs:
    /// `graph|op|d<dim>|h<heads>|t<threads>`.
    pub fn case_key(&self) -> String {
        case_key(&self.graph, &self.op, self.dim, self.heads, self.threads)
    }

    /// Series name in reports: `gnnkern-<backend>` or the peer's name.
    pub fn series(&self) -> String {
        if self.tool == "gnnkern" { format!("gnnkern-{}", self.backend) } else { self.tool.clone() }
    }
}

/// See [`OpResult::case_key`].
pub fn case_key(graph: &str, op: &str, dim: usize, heads: Option<usize>, threads: usize) -> String {
    format!("{graph}|{op}|d{dim}|h{}|t{threads}", heads.unwrap_or(0))
}

/// A case a run did not time, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub case: String,
    pub tool: String,
    pub reason: String,
}

/// One suite run: `perf-reports/runs/<date>_<machine>_<rev>.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunFile {
    pub schema: u32,
    /// Suite name in suites.toml (`quick`, `full`).
    pub suite: String,
    /// The command line that produced the run.
    pub command: String,
    pub started: String,
    pub finished: Option<String>,
    pub git_rev: String,
    pub machine: Machine,
    /// Cached triad GB/s at the run's thread counts (from the machine file).
    pub triad_gbps: Vec<crate::triad::TriadPoint>,
    /// Quick all-thread triads measured at the start and end of this run —
    /// the within-run yardstick `check` normalises by.
    pub calibration_gbps: Vec<f64>,
    pub results: Vec<OpResult>,
    pub skipped: Vec<Skipped>,
}

impl RunFile {
    /// Mean of the calibration triads (None if there are none).
    pub fn calibration(&self) -> Option<f64> {
        (!self.calibration_gbps.is_empty())
            .then(|| self.calibration_gbps.iter().sum::<f64>() / self.calibration_gbps.len() as f64)
    }
}

/// Reads and parses a JSON file.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| BenchError::format(path, e.to_string()))
}

/// Writes `value` as pretty JSON via a temporary file and a rename, so a
/// reader (or a crash) never sees a half-written file.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|e| BenchError::format(path, e.to_string()))?;
    write_atomic(path, text.as_bytes())
}

/// Writes bytes via a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir, e))?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(|e| BenchError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| BenchError::io(path, e))
}
