//! Random-row gather bandwidth: the roofline of a pull kernel on a graph
//! without locality.
//!
//! Triad streams; a g-SpMM over a uniform random graph whose feature table
//! dwarfs the LLC instead fetches one random row per edge. On the Zen 5 VM
//! those two rates differ by 2x or more (triad 72 GB/s, 512-byte rows ~32 GB/s
//! in its slow memory mode), so `pct_of_triad` alone cannot say whether such a
//! case is still improvable. This probe measures the random rate with the
//! least work per row that still brings in every line: `gathers` row ids
//! drawn uniformly from a `table_mib` table (generated before the clock
//! starts), one `f32` load per 64-byte line of each row, software prefetch
//! as far ahead as the kernels use (`Tuning::prefetch_slots`), rows split
//! across the threads in chunks. Bytes count whole rows (`gathers ·
//! row_bytes`); the result is the best of `reps` passes, as for triad.
//!
//! Suite runs record it for 128- and 512-byte rows (f32 rows at d = 32 and
//! 128) next to each calibration triad, because the VM's random rate moves
//! from run to run with its memory mode; `gnnkern-bench gather` measures it
//! alone.

use crate::error::{BenchError, Result};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Table size of the suite's calibration gathers: the size of the 2^20-node,
/// d = 128 feature table of the full suite, 16x the Zen 5 VM's L3.
pub const CALIBRATION_TABLE_MIB: usize = 512;
/// Row lengths of the suite's calibration gathers: f32 rows at d = 32, 128.
pub const CALIBRATION_ROW_BYTES: [usize; 2] = [128, 512];
/// Rows gathered per calibration pass: 16 per table row (the suite graphs'
/// mean degree), at most the edges of the full suite's graphs.
pub const CALIBRATION_MAX_GATHERS: usize = 1 << 24;

/// Gather bandwidth for one row length.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GatherPoint {
    pub row_bytes: usize,
    pub gbps: f64,
}

/// One cache line, in `f32`s: the probe loads the first `f32` of each.
const LINE_F32: usize = 16;

/// Best-of-`reps` GB/s (1e9 bytes/s) of gathering `gathers` uniformly random
/// rows of `row_bytes` bytes out of a `table_mib` MiB table on `threads`
/// threads.
pub fn measure(threads: usize, table_mib: usize, row_bytes: usize, gathers: usize, reps: usize) -> Result<f64> {
    if row_bytes == 0 || !row_bytes.is_multiple_of(4) {
        return Err(BenchError::input(
            "--row-bytes",
            format!("{row_bytes} is not a positive multiple of 4 (f32 rows)"),
        ));
    }
    let table_len = table_mib.saturating_mul(1 << 20) / 4;
    let row = row_bytes / 4;
    let rows = table_len / row;
    if rows == 0 {
        return Err(BenchError::input("--mib", format!("a {table_mib} MiB table holds no row of {row_bytes} bytes")));
    }
    if rows > u32::MAX as usize {
        return Err(BenchError::input("--mib", format!("{rows} rows of {row_bytes} bytes exceed u32 row ids")));
    }
    if gathers == 0 {
        return Err(BenchError::input("--gathers", "must be at least 1"));
    }
    let ahead = gnnkern_simd::tuning::Tuning::DEFAULT.prefetch_slots(row_bytes);
    let pool = crate::triad::pool(threads)?;
    pool.install(|| {
        const CHUNK: usize = 1 << 14;
        let mut table = gnnkern_simd::huge_pages::zeroed_f32(rows * row);
        // First touch in parallel, as the kernels' operands are.
        table.par_chunks_mut(1 << 16).enumerate().for_each(|(c, t)| t.iter_mut().for_each(|x| *x = c as f32));
        let ids: Vec<u32> =
            (0..gathers as u64).into_par_iter().map(|i| (crate::rng::mix(!i) % rows as u64) as u32).collect();
        let pass = || -> f32 {
            ids.par_chunks(CHUNK)
                .map(|chunk| {
                    let mut acc = [0f32; 4];
                    for (k, &r) in chunk.iter().enumerate() {
                        if let Some(&next) = chunk.get(k + ahead) {
                            prefetch_row(&table[next as usize * row..][..row]);
                        }
                        let at = &table[r as usize * row..][..row];
                        for (l, line) in at.iter().step_by(LINE_F32).enumerate() {
                            acc[l % 4] += line;
                        }
                    }
                    acc.iter().sum::<f32>()
                })
                .sum()
        };
        let mut best = f64::INFINITY;
        let mut total = 0.0;
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            total = std::hint::black_box(pass());
            best = best.min(t.elapsed().as_secs_f64());
        }
        // The passes' sum is observable, so they cannot be elided.
        if !total.is_finite() {
            return Err(BenchError::input("--gathers", "the probe's sum overflowed"));
        }
        Ok((gathers * row_bytes) as f64 / best / 1e9)
    })
}

/// Prefetches every line of `row` into L1 (a no-op off x86-64).
#[inline(always)]
fn prefetch_row(row: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    for line in row.iter().step_by(LINE_F32) {
        // SAFETY: `prefetcht0` (SSE, part of the x86-64 baseline) is a hint
        // that never faults; the address is an element of `row`.
        unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>((line as *const f32).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

/// The suite's calibration: every row length of [`CALIBRATION_ROW_BYTES`]
/// on `threads` threads out of a `table_mib` table.
pub fn calibrate(threads: usize, table_mib: usize) -> Result<Vec<GatherPoint>> {
    CALIBRATION_ROW_BYTES
        .iter()
        .map(|&row_bytes| {
            let gathers = (16 * (table_mib << 20) / row_bytes).clamp(1, CALIBRATION_MAX_GATHERS);
            let gbps = measure(threads, table_mib, row_bytes, gathers, 3)?;
            Ok(GatherPoint { row_bytes, gbps })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_gathers_are_positive_and_bad_shapes_are_named() {
        let g = measure(1, 4, 512, 1 << 14, 2).unwrap();
        assert!(g.is_finite() && g > 0.0);
        let e = measure(1, 4, 6, 16, 1).unwrap_err().to_string();
        assert!(e.contains("--row-bytes") && e.contains('6'), "{e}");
        let e = measure(1, 0, 512, 16, 1).unwrap_err().to_string();
        assert!(e.contains("--mib"), "{e}");
        let e = measure(1, 4, 512, 0, 1).unwrap_err().to_string();
        assert!(e.contains("--gathers"), "{e}");
        assert!(measure(0, 4, 512, 16, 1).is_err(), "no threads");
    }
}
