//! `gnnkern-bench suite [--quick | --full] [--out FILE] [--peers] [--pin]`.

use crate::error::Result;
use crate::suite::run::{SuiteOptions, default_suites_file, run_suite_with};
use crate::suite::summary::summary_table;
use gnnkern::threads::Pinning;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The quick suite (the default): generated graphs, a handful of ops, under 3 minutes.
    #[arg(long, conflicts_with_all = ["full", "name"])]
    pub quick: bool,
    /// The full comparison suite (large graphs; tens of minutes).
    #[arg(long, conflicts_with = "name")]
    pub full: bool,
    /// Any other suite defined in the suites file.
    #[arg(long)]
    pub name: Option<String>,
    /// Run-file path (default: `perf-reports/runs/<date>_<machine>_<gitrev>.json`).
    #[arg(long, conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Continue an interrupted run file, skipping the cases it holds.
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Also run the suite's peers (DGL, PyG, torch.sparse) from bench-suite/peers/.
    #[arg(long)]
    pub peers: bool,
    /// Only the cases whose key (`graph|op|dD|hH|tT`) contains this string.
    #[arg(long)]
    pub filter: Option<String>,
    /// The suites file (default: bench-suite/suites.toml).
    #[arg(long)]
    pub suites: Option<PathBuf>,
    /// Pin worker i of every case's pool to the i-th CPU of this process (round robin; off by
    /// default). Recorded in the run file's `command`.
    #[arg(long)]
    pub pin: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let suite = match (args.full, args.name) {
        (true, _) => "full".to_string(),
        (false, Some(n)) => n,
        (false, None) => "quick".to_string(),
    };
    let opts = SuiteOptions {
        suite,
        suites_file: args.suites.unwrap_or_else(default_suites_file),
        out: args.out,
        resume: args.resume,
        peers: args.peers,
        filter: args.filter,
        command: crate::cli::command_line(),
    };
    let pinning = if args.pin { Pinning::PerCore } else { Pinning::Off };
    let (run, path) = run_suite_with(&opts, pinning)?;
    print!("{}", summary_table(&run));
    println!("\nwrote {}", path.display());
    Ok(ExitCode::SUCCESS)
}
