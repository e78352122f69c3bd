//! STREAM triad (`a[i] = b[i] + s·c[i]`) in Rust with rayon: the sustainable
//! memory bandwidth `pct_of_triad` is relative to.
//!
//! Bytes per pass are counted as STREAM does: `3 · 8 · n` (two f64 reads,
//! one f64 write; the write-allocate read is not counted), the same
//! convention as the minimum-traffic model in [`crate::model`]. The arrays
//! are first touched by the threads that later stream them, and each
//! measurement is the best of `reps` passes. Results are cached per machine
//! in `perf-reports/machines/<slug>.json` (see [`MachineFile`]).

use crate::error::{BenchError, Result};
use crate::machine::{Machine, unix_now, utc_date_time};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Default size of each of the three arrays: 1 GiB, several times any
/// plausible last-level cache (this VM reports 480 MiB of L3).
pub const DEFAULT_ARRAY_MIB: usize = 1024;
/// Array size of the quick calibration triad a suite run records.
pub const CALIBRATION_ARRAY_MIB: usize = 256;

/// Bandwidth at one thread count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TriadPoint {
    pub threads: usize,
    pub gbps: f64,
}

/// Best-of-`reps` triad bandwidth in GB/s (1e9 bytes/s) on `threads`
/// threads with three arrays of `array_mib` MiB each.
pub fn measure(threads: usize, array_mib: usize, reps: usize) -> Result<f64> {
    let n = array_mib * (1 << 20) / 8;
    let pool = pool(threads)?;
    pool.install(|| {
        const CHUNK: usize = 1 << 16;
        let mut a = Vec::<f64>::with_capacity(n);
        let mut b = Vec::<f64>::with_capacity(n);
        let mut c = Vec::<f64>::with_capacity(n);
        // First touch in parallel so pages land near the threads that use them.
        a.par_extend((0..n).into_par_iter().map(|_| 0.0));
        b.par_extend((0..n).into_par_iter().map(|i| i as f64));
        c.par_extend((0..n).into_par_iter().map(|i| (n - i) as f64));
        let s = 3.0f64;
        let mut best = f64::INFINITY;
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            a.par_chunks_mut(CHUNK).zip(b.par_chunks(CHUNK)).zip(c.par_chunks(CHUNK)).for_each(|((a, b), c)| {
                for ((a, b), c) in a.iter_mut().zip(b).zip(c) {
                    *a = b + s * c;
                }
            });
            best = best.min(t.elapsed().as_secs_f64());
        }
        // Keep the result observable so the passes cannot be elided.
        assert_eq!(a[n / 2], b[n / 2] + s * c[n / 2]);
        Ok((3 * 8 * n) as f64 / best / 1e9)
    })
}

/// A rayon pool of exactly `threads` threads.
pub fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    if threads == 0 {
        return Err(BenchError::input("--threads", "must be at least 1"));
    }
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| BenchError::input("--threads", format!("cannot start {threads} threads: {e}")))
}

/// The cached triad measurements of one machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineFile {
    pub machine: Machine,
    pub triad: Vec<TriadPoint>,
    pub array_mib: usize,
    pub reps: usize,
    pub measured_at: String,
    pub command: String,
}

impl MachineFile {
    /// Bandwidth at `threads` threads: the exact point, else the closest
    /// measured thread count.
    pub fn gbps(&self, threads: usize) -> Option<f64> {
        self.triad.iter().min_by_key(|p| p.threads.abs_diff(threads)).map(|p| p.gbps)
    }
}

/// `perf-reports/machines/<slug>.json` under `repo`.
pub fn machine_file_path(repo: &Path, machine: &Machine) -> PathBuf {
    repo.join("perf-reports").join("machines").join(format!("{}.json", machine.slug))
}

/// Measures 1..=cores threads and writes the machine file.
pub fn measure_and_save(repo: &Path, machine: &Machine, array_mib: usize, reps: usize) -> Result<MachineFile> {
    let mut triad = Vec::new();
    for threads in 1..=machine.cores {
        triad.push(TriadPoint { threads, gbps: measure(threads, array_mib, reps)? });
    }
    let file = MachineFile {
        machine: machine.clone(),
        triad,
        array_mib,
        reps,
        measured_at: utc_date_time(unix_now()).1,
        command: format!("gnnkern-bench triad --mib {array_mib} --reps {reps}"),
    };
    let path = machine_file_path(repo, machine);
    crate::runfile::write_json_atomic(&path, &file)?;
    Ok(file)
}

/// The cached machine file, if present and for this machine.
pub fn load(repo: &Path, machine: &Machine) -> Result<Option<MachineFile>> {
    let path = machine_file_path(repo, machine);
    if !path.exists() {
        return Ok(None);
    }
    let file: MachineFile = crate::runfile::read_json(&path)?;
    Ok(Some(file))
}

/// The cached machine file, measuring (and caching) it first if missing.
pub fn load_or_measure(repo: &Path, machine: &Machine) -> Result<MachineFile> {
    match load(repo, machine)? {
        Some(f) => Ok(f),
        None => {
            eprintln!("no triad bandwidth cached for {} yet; measuring it once (a few seconds)", machine.slug);
            measure_and_save(repo, machine, DEFAULT_ARRAY_MIB, 10)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_triad_is_positive_and_lookup_picks_nearest() {
        let g = measure(1, 8, 2).unwrap();
        assert!(g.is_finite() && g > 0.0);
        let m = Machine::detect();
        let f = MachineFile {
            machine: m,
            triad: vec![TriadPoint { threads: 1, gbps: 10.0 }, TriadPoint { threads: 4, gbps: 30.0 }],
            array_mib: 8,
            reps: 1,
            measured_at: String::new(),
            command: String::new(),
        };
        assert_eq!(f.gbps(1), Some(10.0));
        assert_eq!(f.gbps(3), Some(30.0));
        assert_eq!(f.gbps(64), Some(30.0));
        assert!(pool(0).is_err());
    }
}
