//! The `gnnkern-bench` command line (clap derive). Each subcommand lives in
//! its own file with an `Args` struct and a `run(args) -> Result<ExitCode>`;
//! adding one is a `mod` line, a [`Command`] variant and a [`dispatch`] arm.

mod check;
mod generate;
mod op;
mod report;
mod suite;
mod train;
mod triad;

use crate::error::Result;
use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Benchmarks, peer comparisons and the performance dashboard of gnnkern.
#[derive(Debug, Parser)]
#[command(name = "gnnkern-bench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a generated graph (`rmat:16:16:1`, `uniform:N:M:SEED`, ...) in the dataset directory format.
    Gen(generate::Args),
    /// Time one op on one graph and print the result.
    Op(op::Args),
    /// Run a standard suite from bench-suite/suites.toml and write a dated run file.
    Suite(suite::Args),
    /// Measure (and cache) this machine's STREAM-triad bandwidth.
    Triad(triad::Args),
    /// Regenerate perf-reports/index.html and perf-reports/LATEST.md from the run files.
    Report(report::Args),
    /// Compare a run against a baseline; exit 1 naming the cases that regressed.
    Check(check::Args),
    /// Train a model (gcn, sage, sage-pool, sage-minibatch, gat, lgnn) and print its timing/accuracy JSON.
    Train(train::Args),
}

/// Runs a parsed command line.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Gen(a) => generate::run(a),
        Command::Op(a) => op::run(a),
        Command::Suite(a) => suite::run(a),
        Command::Triad(a) => triad::run(a),
        Command::Report(a) => report::run(a),
        Command::Check(a) => check::run(a),
        Command::Train(a) => train::run(a),
    }
}

/// Parses `std::env::args`, runs, and maps errors to exit status 2 (1 is
/// reserved for "ran, and found regressions").
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// The process's command line as one string, for run files.
pub fn command_line() -> String {
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.first_mut()
        && let Some(name) = std::path::Path::new(first.as_str()).file_name()
    {
        *first = name.to_string_lossy().into_owned();
    }
    args.join(" ")
}
