//! Regression check: compares a run against a baseline run case by case,
//! each time first normalised within its own run, so a noisy or different
//! machine does not read as a regression.
//!
//! Normalisations:
//! - `calibration` (default): `median_ms × calibration GB/s` of the run —
//!   time in units of the memory system's speed measured in the same run
//!   (triads at its start and end). Catches uniform regressions too.
//! - `geomean`: `median_ms / geomean(all gnnkern medians of the run)` —
//!   immune to machine speed altogether, but blind to a regression that
//!   slows every case equally.
//!
//! A case regresses when `normalised_current / normalised_baseline > 1 +
//! threshold`. The default threshold, 0.15, is above the run-to-run spread
//! of the quick suite measured on the development VM (docs/BENCHMARKS.md).

use crate::compare::geomean;
use crate::runfile::{OpResult, RunFile};
use std::collections::BTreeMap;

/// How times are normalised within a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Normalize {
    Calibration,
    Geomean,
}

/// One compared case.
#[derive(Clone, Debug, PartialEq)]
pub struct Compared {
    /// `case key [gnnkern-<backend>]`.
    pub case: String,
    pub baseline_ms: f64,
    pub current_ms: f64,
    /// Normalised current / normalised baseline.
    pub ratio: f64,
}

/// The outcome of a check.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    pub compared: Vec<Compared>,
    pub regressed: Vec<Compared>,
    pub improved: Vec<Compared>,
    /// Baseline cases the current run lacks.
    pub missing: Vec<String>,
    /// The normalisation actually used (calibration falls back to geomean
    /// when either run has no calibration triad).
    pub normalize: Option<Normalize>,
}

fn ours(run: &RunFile) -> BTreeMap<String, &OpResult> {
    run.results
        .iter()
        .filter(|r| r.tool == "gnnkern")
        .map(|r| (format!("{} [{}]", r.case_key(), r.series()), r))
        .collect()
}

/// Compares `current` against `baseline`.
pub fn compare(baseline: &RunFile, current: &RunFile, threshold: f64, normalize: Normalize) -> CheckReport {
    let (b, c) = (ours(baseline), ours(current));
    let mode = match (normalize, baseline.calibration(), current.calibration()) {
        (Normalize::Calibration, Some(_), Some(_)) => Normalize::Calibration,
        _ => Normalize::Geomean,
    };
    let scale = |run: &RunFile, set: &BTreeMap<String, &OpResult>| -> f64 {
        match mode {
            Normalize::Calibration => run.calibration().unwrap_or(1.0),
            Normalize::Geomean => 1.0 / geomean(set.values().map(|r| r.median_ms)).unwrap_or(1.0),
        }
    };
    let (sb, sc) = (scale(baseline, &b), scale(current, &c));
    let mut report = CheckReport { normalize: Some(mode), ..Default::default() };
    for (key, rb) in &b {
        let Some(rc) = c.get(key) else {
            report.missing.push(key.clone());
            continue;
        };
        let ratio = (rc.median_ms * sc) / (rb.median_ms * sb);
        let cmp = Compared { case: key.clone(), baseline_ms: rb.median_ms, current_ms: rc.median_ms, ratio };
        if ratio > 1.0 + threshold {
            report.regressed.push(cmp.clone());
        } else if ratio < 1.0 / (1.0 + threshold) {
            report.improved.push(cmp.clone());
        }
        report.compared.push(cmp);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::runfile::{MachineBrief, SCHEMA_VERSION};

    fn result(op: &str, ms: f64) -> OpResult {
        OpResult {
            tool: "gnnkern".into(),
            op: op.into(),
            graph: "g".into(),
            nodes: 1,
            dst_nodes: 1,
            edges: 1,
            dim: 8,
            heads: None,
            threads: 1,
            backend: "simd".into(),
            pass: None,
            isa: "avx512".into(),
            reps: 1,
            slice_medians_ms: None,
            median_ms: ms,
            min_ms: ms,
            max_ms: ms,
            flops: 1,
            gflops: 1.0,
            model_bytes: 1,
            gbps: 1.0,
            pct_of_triad: None,
            traversal_bytes: None,
            traversal_pct_of_triad: None,
            peak_rss_mb: None,
            out_shape: vec![1, 8],
            checksum: 0.0,
            checksum_abs: 0.0,
            machine: MachineBrief { cpu: "x".into(), vendor: "y".into(), cores: 1 },
        }
    }

    fn run(times: &[(&str, f64)], calibration: f64) -> RunFile {
        RunFile {
            schema: SCHEMA_VERSION,
            suite: "quick".into(),
            command: String::new(),
            started: String::new(),
            finished: None,
            git_rev: "r".into(),
            machine: Machine {
                cpu: "x".into(),
                vendor: "y".into(),
                cores: 1,
                family: None,
                model: None,
                slug: "x-1c".into(),
                huge_pages: None,
            },
            triad_gbps: vec![],
            calibration_gbps: vec![calibration],
            results: times.iter().map(|(op, ms)| result(op, *ms)).collect(),
            skipped: vec![],
        }
    }

    #[test]
    fn a_slower_machine_is_not_a_regression_but_a_slower_case_is() {
        let base = run(&[("copy_u_sum", 10.0), ("u_dot_v", 20.0)], 10.0);
        // Everything 2x slower on a machine with half the bandwidth: no regression.
        let slow_machine = run(&[("copy_u_sum", 20.0), ("u_dot_v", 40.0)], 5.0);
        let r = compare(&base, &slow_machine, 0.15, Normalize::Calibration);
        assert!(r.regressed.is_empty(), "{r:?}");
        assert_eq!(r.compared.len(), 2);
        // One case 1.5x slower at the same bandwidth: named.
        let slower_case = run(&[("copy_u_sum", 15.0), ("u_dot_v", 20.0)], 10.0);
        let r = compare(&base, &slower_case, 0.15, Normalize::Calibration);
        assert_eq!(r.regressed.len(), 1);
        assert!(r.regressed[0].case.contains("copy_u_sum"));
        // Geomean normalisation also names it (relative to the other case).
        let r = compare(&base, &slower_case, 0.15, Normalize::Geomean);
        assert_eq!(r.regressed.len(), 1);
        // A missing case is reported.
        let fewer = run(&[("copy_u_sum", 10.0)], 10.0);
        assert_eq!(compare(&base, &fewer, 0.15, Normalize::Calibration).missing.len(), 1);
    }
}
