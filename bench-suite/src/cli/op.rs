//! `gnnkern-bench op --graph DIR_OR_SPEC --op NAME --dim D [--heads H]
//! [--threads T] [--pin] [--backend B] [--reps R] [--lhs FILE] [--rhs FILE]
//! [--save-output FILE] --json`.

use crate::error::Result;
use crate::graphs::BenchGraph;
use crate::machine::{Machine, repo_root};
use crate::opspec::BenchOp;
use crate::runner::{OpRequest, read_f32_file, run_op, write_f32_file};
use crate::table::ms;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// A dataset directory or a generator spec such as `rmat:16:16:1`.
    #[arg(long)]
    pub graph: String,
    /// DGL op name (`copy_u_sum`, `u_mul_e_max`, `u_dot_v`, `edge_softmax`, `edge_softmax_backward`, ...).
    #[arg(long)]
    pub op: String,
    /// Feature size D (with `--heads H`: H heads of D/H).
    #[arg(long)]
    pub dim: usize,
    /// Attention heads: node features `[N, H, D/H]`, edge operands `[E, H, 1]`.
    #[arg(long)]
    pub heads: Option<usize>,
    /// Threads of the rayon pool the op runs in (default: all logical CPUs).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Pin worker i of the pool to the i-th CPU of this process (round robin; off by default).
    #[arg(long)]
    pub pin: bool,
    /// `auto` or a backend name (`reference`, `simd`, `mkl`, `gpu`).
    #[arg(long, default_value = "auto")]
    pub backend: String,
    /// Timed repetitions (after the warm-up).
    #[arg(long, default_value_t = 10)]
    pub reps: usize,
    /// Untimed warm-up runs.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Raw little-endian f32 lhs operand (default: seeded, see docs/BENCHMARKS.md).
    #[arg(long)]
    pub lhs: Option<PathBuf>,
    /// Raw little-endian f32 rhs operand.
    #[arg(long)]
    pub rhs: Option<PathBuf>,
    /// Write the output as raw little-endian f32.
    #[arg(long)]
    pub save_output: Option<PathBuf>,
    /// Print one JSON object (the result schema of docs/BENCHMARKS.md).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> Result<ExitCode> {
    let op = BenchOp::parse(&args.op)?;
    let machine = Machine::detect();
    let lhs = args.lhs.as_deref().map(read_f32_file).transpose()?;
    let rhs = args.rhs.as_deref().map(read_f32_file).transpose()?;
    let graph = BenchGraph::open(&args.graph)?;
    let triad = crate::triad::load(&repo_root(), &machine)?;
    let req = OpRequest {
        op,
        dim: args.dim,
        heads: args.heads,
        threads: args.threads.unwrap_or(machine.cores),
        pin: args.pin,
        backend: args.backend,
        warmup: args.warmup,
        reps: args.reps,
        lhs,
        rhs,
        keep_output: args.save_output.is_some(),
    };
    let outcome = run_op(&graph, &req, &machine, triad.as_ref())?;
    if let (Some(path), Some(out)) = (&args.save_output, &outcome.output) {
        write_f32_file(path, out)?;
    }
    let r = &outcome.result;
    if args.json {
        // The result schema plus `pinned` (the run file's case records carry
        // the command line instead, see `suite --pin`).
        let mut json = serde_json::to_value(r).expect("results always serialize");
        json["pinned"] = args.pin.into();
        println!("{json}");
    } else {
        println!(
            "{} on {} (N={}, E={}, d={}{}) [{} / {}, {} threads{}]: median {} ms (min {}, max {}), {:.2} GFLOP/s, {:.2} GB/s{}{}, checksum {:.6e}",
            r.op,
            r.graph,
            r.nodes,
            r.edges,
            r.dim,
            r.heads.map_or(String::new(), |h| format!(", {h} heads")),
            r.backend,
            r.isa,
            r.threads,
            if args.pin { ", pinned" } else { "" },
            ms(r.median_ms),
            ms(r.min_ms),
            ms(r.max_ms),
            r.gflops,
            r.gbps,
            r.pct_of_triad.map_or_else(
                || " (no triad cached: run `gnnkern-bench triad`)".to_string(),
                |p| format!(" ({p:.0}% of triad)")
            ),
            match (r.traversal_bytes, r.traversal_pct_of_triad) {
                (Some(b), Some(p)) => format!(", traversal {:.2} GB ({p:.0}% of triad)", b as f64 / 1e9),
                (Some(b), None) => format!(", traversal {:.2} GB", b as f64 / 1e9),
                _ => String::new(),
            },
            r.checksum
        );
    }
    Ok(ExitCode::SUCCESS)
}
