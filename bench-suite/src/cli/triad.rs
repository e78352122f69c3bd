//! `gnnkern-bench triad`: (re-)measure the STREAM-triad bandwidth at every
//! thread count and cache it in `perf-reports/machines/<machine>.json`.

use crate::error::Result;
use crate::machine::{Machine, repo_root};
use crate::triad::{DEFAULT_ARRAY_MIB, machine_file_path, measure_and_save};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Size of each of the three arrays in MiB.
    #[arg(long, default_value_t = DEFAULT_ARRAY_MIB)]
    pub mib: usize,
    /// Passes per thread count (the best is kept).
    #[arg(long, default_value_t = 10)]
    pub reps: usize,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let repo = repo_root();
    let machine = Machine::detect();
    let file = measure_and_save(&repo, &machine, args.mib, args.reps)?;
    for p in &file.triad {
        println!("triad {:>3} threads: {:.2} GB/s", p.threads, p.gbps);
    }
    println!("cached in {}", machine_file_path(&repo, &machine).display());
    Ok(ExitCode::SUCCESS)
}
