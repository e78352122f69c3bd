//! `gnnkern-bench train`: train a model of the suite (src/models) on a
//! dataset directory or generated graph and print the timing/accuracy
//! report (docs/MODELS.md).

use crate::error::{BenchError, Result};
use crate::models::data::Task;
use crate::models::train::{ModelKind, TrainConfig, train};
use gnnkern::Exec;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// gcn, sage, sage-pool, sage-minibatch, gat or lgnn.
    #[arg(long)]
    pub model: String,
    /// A dataset directory (../shared/datasets/cora) or a generator spec (rmat:20:16:1).
    #[arg(long)]
    pub graph: String,
    #[arg(long, default_value_t = 10)]
    pub epochs: usize,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Use the papers' accuracy hyper-parameters (hidden 16, GAT 8x8)
    /// instead of the timing ones (hidden 128, GAT 4x32).
    #[arg(long)]
    pub accuracy: bool,
    /// lgnn only: write the training and test graphs to DIR/{train,test}/NNN
    /// (for the DGL peer's `--graphs DIR`).
    #[arg(long, value_name = "DIR")]
    pub save_graphs: Option<std::path::PathBuf>,
    /// Print one JSON object (otherwise pretty-printed JSON).
    #[arg(long)]
    pub json: bool,
}

fn input(message: String) -> BenchError {
    BenchError::Input { what: "train".into(), message }
}

pub fn run(args: Args) -> Result<ExitCode> {
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| input(e.to_string()))?;
    let value = pool.install(|| -> std::result::Result<serde_json::Value, crate::models::ModelError> {
        if args.model == "lgnn" {
            return crate::models::lgnn::run_cli(&args.graph, args.epochs, args.seed, args.save_graphs.as_deref());
        }
        if args.save_graphs.is_some() {
            return Err(crate::models::ModelError::Arg("--save-graphs applies to --model lgnn only".into()));
        }
        let model = ModelKind::from_name(&args.model)?;
        let ds = gnnkern_datasets::open(&args.graph)?;
        let task = Task::from_dataset(&ds, args.seed, true)?;
        let cfg = if args.accuracy {
            TrainConfig { epochs: args.epochs, ..TrainConfig::accuracy(model, args.seed) }
        } else {
            TrainConfig::timing(model, args.epochs, args.seed)
        };
        Ok(train(&task, &cfg, Exec::default())?.to_json())
    });
    let value = value.map_err(|e| input(e.to_string()))?;
    let text = if args.json { value.to_string() } else { serde_json::to_string_pretty(&value).unwrap_or_default() };
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}
