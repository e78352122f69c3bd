//! `gnnkern-bench gather`: the random-row gather bandwidth (the roofline of
//! a pull kernel on a graph without locality; see `crate::gather`).

use crate::error::Result;
use crate::gather::{CALIBRATION_MAX_GATHERS, CALIBRATION_TABLE_MIB, measure};
use crate::machine::Machine;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Row lengths in bytes (f32 rows: 4 · d), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [128usize, 512])]
    pub row_bytes: Vec<usize>,
    /// Size of the gathered table in MiB.
    #[arg(long, default_value_t = CALIBRATION_TABLE_MIB)]
    pub mib: usize,
    /// Rows gathered per pass.
    #[arg(long, default_value_t = CALIBRATION_MAX_GATHERS)]
    pub gathers: usize,
    /// Threads (default: every logical CPU).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Passes per row length (the best is kept).
    #[arg(long, default_value_t = 5)]
    pub reps: usize,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let threads = args.threads.unwrap_or_else(|| Machine::detect().cores);
    for &row_bytes in &args.row_bytes {
        let gbps = measure(threads, args.mib, row_bytes, args.gathers, args.reps)?;
        let ms = (args.gathers * row_bytes) as f64 / gbps / 1e6;
        println!(
            "gather {row_bytes:>5} B rows, {} MiB table, {threads} threads: {gbps:.2} GB/s ({ms:.1} ms for {} rows)",
            args.mib, args.gathers
        );
    }
    Ok(ExitCode::SUCCESS)
}
