//! Runs a suite: loads each graph once, times every gnnkern case, then (with
//! `--peers`) the peers on the same graph, saving the run file after every
//! case so an interrupted run keeps what it measured and `--resume` picks
//! up where it stopped.

use super::def::{Case, GraphDef, SuiteDef};
use crate::error::{BenchError, Result};
use crate::graphs::BenchGraph;
use crate::machine::{Machine, git_rev, repo_root, unix_now, utc_date_time};
use crate::opspec::{BenchOp, shapes};
use crate::runfile::{RunFile, SCHEMA_VERSION, Skipped, read_json, write_json_atomic};
use crate::runner::{OpRequest, run_op};
use crate::triad::{self, MachineFile};
use crate::{model, peers};
use gnnkern::threads::Pinning;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};

/// How to run a suite.
#[derive(Clone, Debug)]
pub struct SuiteOptions {
    /// Suite name in the suites file (`quick`, `full`).
    pub suite: String,
    pub suites_file: PathBuf,
    /// Run-file path; default `perf-reports/runs/<date>_<machine>_<rev>.json`.
    pub out: Option<PathBuf>,
    /// Continue this run file, skipping the cases it already holds.
    pub resume: Option<PathBuf>,
    /// Also run the suite's peers.
    pub peers: bool,
    /// Only cases whose key contains this string.
    pub filter: Option<String>,
    /// The command line, recorded in the run file.
    pub command: String,
}

/// Default suites file: `bench-suite/suites.toml` in the repository.
pub fn default_suites_file() -> PathBuf {
    repo_root().join("bench-suite").join("suites.toml")
}

/// Where generated graphs are written for the peers.
pub fn graph_cache() -> PathBuf {
    std::env::var_os("GNNKERN_BENCH_CACHE")
        .filter(|v| !v.is_empty())
        .map_or_else(|| repo_root().join("target").join("bench-graphs"), PathBuf::from)
}

/// Runs the suite with unpinned pools; returns the run and the path it was
/// written to.
pub fn run_suite(opts: &SuiteOptions) -> Result<(RunFile, PathBuf)> {
    run_suite_with(opts, Pinning::Off)
}

/// [`run_suite`] with every case's pool pinned as `pinning` says.
pub fn run_suite_with(opts: &SuiteOptions, pinning: Pinning) -> Result<(RunFile, PathBuf)> {
    let repo = repo_root();
    let suites = super::def::load(&opts.suites_file)?;
    let def = suites.get(&opts.suite).ok_or_else(|| {
        BenchError::format(
            &opts.suites_file,
            format!("no suite `{}` (defined: {})", opts.suite, suites.keys().cloned().collect::<Vec<_>>().join(", ")),
        )
    })?;
    let mut cases = def.expand().map_err(|m| BenchError::format(&opts.suites_file, m))?;
    if let Some(f) = &opts.filter {
        cases.retain(|c| c.key().contains(f.as_str()));
    }
    let machine = Machine::detect();
    let triad = triad::load_or_measure(&repo, &machine)?;
    let python = if opts.peers {
        let p = peers::python().ok_or_else(|| BenchError::External {
            program: "peers".into(),
            message: format!(
                "no Python at GNNKERN_PEERS_PYTHON or {}; create the venv with bench-suite/peers/setup.sh",
                peers::DEFAULT_PYTHON
            ),
        })?;
        Some(p)
    } else {
        None
    };
    let peer_names: Vec<String> = if opts.peers { def.peers.clone() } else { Vec::new() };

    let (mut run, path) = match &opts.resume {
        Some(p) => {
            let run: RunFile = read_json(p)?;
            if run.suite != opts.suite {
                return Err(BenchError::format(p, format!("is a `{}` run, not `{}`", run.suite, opts.suite)));
            }
            (run, p.clone())
        }
        None => {
            let rev = git_rev(&repo);
            let (date, time) = utc_date_time(unix_now());
            let path = match &opts.out {
                Some(p) => p.clone(),
                None => free_path(&repo.join("perf-reports").join("runs"), &format!("{date}_{}_{rev}", machine.slug)),
            };
            let mut threads: Vec<usize> = cases.iter().map(|c| c.threads).collect();
            threads.sort_unstable();
            threads.dedup();
            let triad_gbps = threads
                .iter()
                .filter_map(|&t| triad.gbps(t).map(|gbps| triad::TriadPoint { threads: t, gbps }))
                .collect();
            let run = RunFile {
                schema: SCHEMA_VERSION,
                suite: opts.suite.clone(),
                command: opts.command.clone(),
                started: time,
                finished: None,
                git_rev: rev,
                machine: machine.clone(),
                triad_gbps,
                calibration_gbps: Vec::new(),
                results: Vec::new(),
                skipped: Vec::new(),
            };
            (run, path)
        }
    };

    let total = cases.len() * (1 + peer_names.len());
    let done_before = cases.iter().filter(|c| is_done(&run, c, "gnnkern")).count()
        + peer_names.iter().map(|p| cases.iter().filter(|c| is_done(&run, c, p)).count()).sum::<usize>();
    let bar = ProgressBar::new(total as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}")
            .expect("the template is valid"),
    );
    bar.set_position(done_before as u64);

    bar.set_message("calibration triad");
    run.calibration_gbps.push(triad::measure(machine.cores, def.calibration_mib, 5)?);
    write_json_atomic(&path, &run)?;

    let cache = graph_cache();
    let scratch = std::env::temp_dir();
    let mut graph_order: Vec<&str> = Vec::new();
    for c in &cases {
        if !graph_order.contains(&c.graph.as_str()) {
            graph_order.push(&c.graph);
        }
    }
    for gname in graph_order {
        let gcases: Vec<&Case> = cases.iter().filter(|c| c.graph == gname).collect();
        let pending_ours: Vec<&Case> = gcases.iter().copied().filter(|c| !is_done(&run, c, "gnnkern")).collect();
        let pending_peers: Vec<(&String, Vec<Case>)> = peer_names
            .iter()
            .map(|p| (p, gcases.iter().filter(|c| !is_done(&run, c, p)).map(|c| (*c).clone()).collect::<Vec<_>>()))
            .filter(|(_, v)| !v.is_empty())
            .collect();
        if pending_ours.is_empty() && pending_peers.is_empty() {
            continue;
        }
        bar.set_message(format!("loading {gname}"));
        let graph = match load_graph(&repo, def, gname) {
            Ok(g) => g,
            Err(e) => {
                for c in &gcases {
                    for tool in std::iter::once("gnnkern").chain(peer_names.iter().map(String::as_str)) {
                        if !is_done(&run, c, tool) {
                            run.skipped.push(Skipped { case: c.key(), tool: tool.into(), reason: e.to_string() });
                            bar.inc(1);
                        }
                    }
                }
                write_json_atomic(&path, &run)?;
                continue;
            }
        };
        for c in pending_ours {
            bar.set_message(c.key());
            match run_case(&graph, c, &machine, &triad, pinning) {
                Ok(mut r) => {
                    r.graph = c.graph.clone();
                    run.results.push(r);
                }
                Err(reason) => run.skipped.push(Skipped { case: c.key(), tool: "gnnkern".into(), reason }),
            }
            write_json_atomic(&path, &run)?;
            bar.inc(1);
        }
        if let Some(python) = &python {
            let dir = graph.materialize(&cache)?;
            let script = repo.join("bench-suite").join("peers").join("peer_op.py");
            for (peer, pcases) in pending_peers {
                bar.set_message(format!("{peer} on {gname}"));
                let mut lines = Vec::new();
                let outcome = peers::run_batch(python, &script, peer, &dir, &pcases, &scratch, |line| {
                    bar.inc(1);
                    lines.push(line);
                });
                let seen = lines.len();
                for line in lines {
                    match line {
                        Ok(r) => run.results.push(with_our_model(r, &graph, &triad)),
                        Err(s) => run.skipped.push(s),
                    }
                }
                if let Err(e) = outcome {
                    for c in &pcases[seen.min(pcases.len())..] {
                        run.skipped.push(Skipped { case: c.key(), tool: peer.clone(), reason: e.to_string() });
                        bar.inc(1);
                    }
                }
                write_json_atomic(&path, &run)?;
            }
        }
    }
    bar.set_message("calibration triad");
    run.calibration_gbps.push(triad::measure(machine.cores, def.calibration_mib, 5)?);
    run.finished = Some(utc_date_time(unix_now()).1);
    write_json_atomic(&path, &run)?;
    bar.finish_and_clear();
    Ok((run, path))
}

/// `dir/stem.json`, or `dir/stem_2.json`, ... if taken.
fn free_path(dir: &Path, stem: &str) -> PathBuf {
    let first = dir.join(format!("{stem}.json"));
    if !first.exists() {
        return first;
    }
    (2..).map(|i| dir.join(format!("{stem}_{i}.json"))).find(|p| !p.exists()).expect("some suffix is free")
}

/// Whether `run` already holds a result (or a recorded skip) of `case` for `tool`.
fn is_done(run: &RunFile, case: &Case, tool: &str) -> bool {
    let key = case.key();
    let ours = tool == "gnnkern";
    run.results.iter().any(|r| {
        r.tool == tool && r.case_key() == key && (!ours || case.backend == "auto" || r.backend == case.backend)
    }) || run.skipped.iter().any(|s| s.tool == tool && s.case == key)
}

fn load_graph(repo: &Path, def: &SuiteDef, name: &str) -> Result<BenchGraph> {
    match &def.graphs[name] {
        GraphDef::Spec(s) => {
            let local = repo.join(s);
            let source = if !Path::new(s).is_absolute() && local.is_dir() {
                local.to_string_lossy().into_owned()
            } else {
                s.clone()
            };
            let mut g = BenchGraph::open(&source)?;
            g.name = name.to_string();
            Ok(g)
        }
        GraphDef::Block { from, seeds, fanout, seed } => {
            BenchGraph::sampled_block(name.to_string(), from, *seeds, *fanout, *seed)
        }
    }
}

/// Fraction of MemAvailable a case may plan to use before it is skipped.
const MEMORY_SHARE: f64 = 0.6;

fn mem_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    line.split_whitespace().nth(1)?.parse::<u64>().ok().map(|kib| kib * 1024)
}

fn run_case(
    graph: &BenchGraph,
    c: &Case,
    machine: &Machine,
    triad: &MachineFile,
    pinning: Pinning,
) -> std::result::Result<crate::runfile::OpResult, String> {
    let op = BenchOp::parse(&c.op).map_err(|e| e.to_string())?;
    let s = shapes(&op, graph.dims(), c.dim, c.heads).map_err(|e| e.to_string())?;
    let tensor_bytes = 4
        * (s.lhs.as_ref().map_or(0, |o| o.len())
            + s.rhs.as_ref().map_or(0, |o| o.len())
            + s.out.iter().product::<usize>()) as u64;
    if let Some(avail) = mem_available()
        && tensor_bytes as f64 > MEMORY_SHARE * avail as f64
    {
        return Err(format!(
            "needs {:.1} GiB of operands and output, more than {:.0}% of the {:.1} GiB available",
            tensor_bytes as f64 / (1u64 << 30) as f64,
            MEMORY_SHARE * 100.0,
            avail as f64 / (1u64 << 30) as f64
        ));
    }
    let req = OpRequest {
        op,
        dim: c.dim,
        heads: c.heads,
        threads: c.threads,
        pin: pinning == Pinning::PerCore,
        backend: c.backend.clone(),
        warmup: c.warmup,
        reps: c.reps,
        lhs: None,
        rhs: None,
        keep_output: false,
    };
    run_op(graph, &req, machine, Some(triad)).map(|o| o.result).map_err(|e| e.to_string())
}

/// Recomputes a peer result's FLOPs, model bytes and rates with the Rust
/// model (the single source of truth), so every tool's GB/s is the same
/// work divided by its time.
fn with_our_model(
    mut r: crate::runfile::OpResult,
    graph: &BenchGraph,
    triad: &MachineFile,
) -> crate::runfile::OpResult {
    let Ok(op) = BenchOp::parse(&r.op) else { return r };
    let dims = graph.dims();
    let Ok(s) = shapes(&op, dims, r.dim, r.heads) else { return r };
    let cost = model::cost(&op, dims, &s, graph.kernel.index_bytes());
    let secs = r.median_ms / 1e3;
    r.flops = cost.flops;
    r.model_bytes = cost.bytes;
    r.gflops = cost.flops as f64 / secs / 1e9;
    r.gbps = cost.bytes as f64 / secs / 1e9;
    r.pct_of_triad = triad.gbps(r.threads).map(|t| 100.0 * r.gbps / t);
    r
}
