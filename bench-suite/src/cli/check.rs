//! `gnnkern-bench check --baseline FILE [--current FILE] [--threshold 0.15]`.

use crate::check::{Normalize, compare};
use crate::error::Result;
use crate::runfile::{RunFile, read_json};
use crate::suite::run::{SuiteOptions, default_suites_file, run_suite};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The baseline run file.
    #[arg(long)]
    pub baseline: PathBuf,
    /// The run to check; default: re-run the baseline's suite now (into a temporary file).
    #[arg(long)]
    pub current: Option<PathBuf>,
    /// Allowed slow-down of a case's normalised time (0.15 = 15%).
    #[arg(long, default_value_t = 0.15)]
    pub threshold: f64,
    /// How times are made comparable across runs.
    #[arg(long, value_enum, default_value_t = Normalize::Calibration)]
    pub normalize: Normalize,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let baseline: RunFile = read_json(&args.baseline)?;
    let current: RunFile = match &args.current {
        Some(p) => read_json(p)?,
        None => {
            let out = std::env::temp_dir().join(format!("gnnkern-check-{}.json", std::process::id()));
            eprintln!("re-running suite `{}` into {}", baseline.suite, out.display());
            let opts = SuiteOptions {
                suite: baseline.suite.clone(),
                suites_file: default_suites_file(),
                out: Some(out),
                resume: None,
                peers: false,
                filter: None,
                command: crate::cli::command_line(),
            };
            run_suite(&opts)?.0
        }
    };
    let report = compare(&baseline, &current, args.threshold, args.normalize);
    let mode = match report.normalize {
        Some(Normalize::Calibration) => "calibration triad",
        _ => "geometric mean of the run",
    };
    println!(
        "compared {} case(s) (normalised by the {mode}; threshold {:.0}%): {} regressed, {} improved, {} missing",
        report.compared.len(),
        args.threshold * 100.0,
        report.regressed.len(),
        report.improved.len(),
        report.missing.len()
    );
    for c in &report.improved {
        println!("improved   {}: {:.3} -> {:.3} ms (x{:.2} normalised)", c.case, c.baseline_ms, c.current_ms, c.ratio);
    }
    for m in &report.missing {
        println!("missing    {m}");
    }
    for c in &report.regressed {
        println!("REGRESSED  {}: {:.3} -> {:.3} ms (x{:.2} normalised)", c.case, c.baseline_ms, c.current_ms, c.ratio);
    }
    Ok(if report.regressed.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
