//! `gnnkern-bench gen SPEC --out DIR`.

use crate::error::{BenchError, Result};
use gnnkern_datasets::IndexWidth;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Generator spec: `rmat:SCALE:AVG_DEG:SEED`, `uniform:N:M:SEED`, `sbm:N:K:P_IN:P_OUT:SEED`, `chain:N`.
    pub spec: String,
    /// Output directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Write 64-bit ids (default: 32-bit when they fit).
    #[arg(long)]
    pub i64: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let ds = gnnkern_datasets::generate(&args.spec)
        .map_err(|e| BenchError::Graph { graph: args.spec.clone(), message: e.to_string() })?;
    let width = if args.i64 || ds.num_nodes > i32::MAX as usize { IndexWidth::I64 } else { IndexWidth::I32 };
    gnnkern_datasets::write_dir(&ds, &args.out, width)
        .map_err(|e| BenchError::Graph { graph: args.spec.clone(), message: e.to_string() })?;
    println!("{}: {} nodes, {} edges -> {}", args.spec, ds.num_nodes, ds.num_edges(), args.out.display());
    Ok(ExitCode::SUCCESS)
}
