//! A run's results arranged for comparison: one row per case and gnnkern
//! backend, with each peer's result of the same case beside it.

use crate::runfile::{OpResult, RunFile};
use crate::table::ms;
use std::collections::BTreeMap;

/// Peers in the order reports show them.
pub const PEERS: [&str; 3] = ["dgl", "pyg", "torch_sparse"];

/// Relative checksum difference under which two tools count as agreeing.
/// Sums of up to 1e7 f32 terms accumulated in different orders differ by
/// far less; a wrong kernel differs by orders of magnitude more.
pub const CHECKSUM_RTOL: f64 = 1e-3;

/// One case of a run.
#[derive(Clone, Debug)]
pub struct Row<'a> {
    pub key: String,
    pub ours: Option<&'a OpResult>,
    pub peers: BTreeMap<&'static str, &'a OpResult>,
}

impl Row<'_> {
    /// `t_peer / t_gnnkern` (> 1: gnnkern is faster).
    pub fn speedup_vs(&self, peer: &str) -> Option<f64> {
        Some(self.peers.get(peer)?.median_ms / self.ours?.median_ms)
    }

    /// Whether every peer's checksum agrees with gnnkern's (None: nothing to compare).
    pub fn checksums_agree(&self) -> Option<bool> {
        let ours = self.ours?;
        if self.peers.is_empty() {
            return None;
        }
        Some(self.peers.values().all(|p| checksum_agrees(ours, p)))
    }

    /// The table cells after the case column, shared by the terminal summary
    /// and `LATEST.md`: gnnkern's [`OUR_COLUMNS`], each of `peers`' ms, the
    /// speedup over DGL (if DGL is among them) and the checksum verdict
    /// (`differs` is how a disagreement is shown).
    pub fn cells(&self, peers: &[&str], differs: &str) -> Vec<String> {
        let mut cells = Vec::new();
        match self.ours {
            Some(o) => cells.extend([
                o.backend.clone(),
                ms(o.median_ms),
                format!("{:.2}", o.gflops),
                format!("{:.2}", o.gbps),
                o.pct_of_triad.map_or("-".into(), |p| format!("{p:.0}%")),
                o.traversal_pct_of_triad.map_or("-".into(), |p| format!("{p:.0}%")),
                o.peak_rss_mb.map_or("-".into(), |m| format!("{m:.0}")),
            ]),
            None => cells.extend(OUR_COLUMNS.map(|_| "-".to_string())),
        }
        for p in peers {
            cells.push(self.peers.get(p).map_or("-".into(), |r| ms(r.median_ms)));
        }
        if peers.contains(&"dgl") {
            cells.push(self.speedup_vs("dgl").map_or("-".into(), |x| format!("{x:.2}x")));
        }
        if !peers.is_empty() {
            cells.push(match self.checksums_agree() {
                Some(true) => "ok".into(),
                Some(false) => differs.into(),
                None => "-".into(),
            });
        }
        cells
    }
}

/// gnnkern's columns in [`Row::cells`], after the case column. `%triad` is
/// the minimum-traffic model's GB/s against the triad, `%triad trav.` the
/// traffic of gnnkern's own traversal through a cache of the machine's size
/// (`traversal_pct_of_triad`); `peak MiB` is the process's peak resident
/// memory over the case (inputs, outputs and any temporaries; `peak_rss_mb`
/// in docs/BENCHMARKS.md).
pub const OUR_COLUMNS: [&str; 7] = ["backend", "ms", "GFLOP/s", "GB/s", "%triad", "%triad trav.", "peak MiB"];

/// Whether `b`'s checksum matches `a`'s within [`CHECKSUM_RTOL`] of Σ|out|.
pub fn checksum_agrees(a: &OpResult, b: &OpResult) -> bool {
    let scale = a.checksum_abs.max(b.checksum_abs).max(1e-30);
    (a.checksum - b.checksum).abs() <= CHECKSUM_RTOL * scale
        && (a.checksum_abs - b.checksum_abs).abs() <= CHECKSUM_RTOL * scale
}

/// Rows of `run` in result order; a case gnnkern ran on several backends
/// gets one row per backend, each with the same peers.
pub fn rows(run: &RunFile) -> Vec<Row<'_>> {
    let mut rows: Vec<Row<'_>> = Vec::new();
    for r in run.results.iter().filter(|r| r.tool == "gnnkern") {
        rows.push(Row { key: r.case_key(), ours: Some(r), peers: BTreeMap::new() });
    }
    for r in run.results.iter().filter(|r| r.tool != "gnnkern") {
        let Some(peer) = PEERS.iter().copied().find(|p| *p == r.tool) else { continue };
        let key = r.case_key();
        let mut matched = false;
        for row in rows.iter_mut().filter(|row| row.key == key) {
            row.peers.insert(peer, r);
            matched = true;
        }
        if !matched {
            let mut peers = BTreeMap::new();
            peers.insert(peer, r);
            rows.push(Row { key, ours: None, peers });
        }
    }
    rows
}

/// Geometric mean of positive values (None if empty).
pub fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.into_iter().filter(|v| *v > 0.0).fold((0.0, 0usize), |(s, n), v| (s + v.ln(), n + 1));
    (n > 0).then(|| (sum / n as f64).exp())
}
