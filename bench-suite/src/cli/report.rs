//! `gnnkern-bench report`: regenerate perf-reports/index.html and LATEST.md.

use crate::error::Result;
use crate::machine::repo_root;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The reports folder (holding `runs/`); default: perf-reports/ of the repository.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let dir = args.dir.unwrap_or_else(|| repo_root().join("perf-reports"));
    let w = crate::report::generate(&dir)?;
    println!("{} run(s); latest {}", w.runs, w.latest.display());
    println!("wrote {} and {}", w.html.display(), w.markdown.display());
    Ok(ExitCode::SUCCESS)
}
