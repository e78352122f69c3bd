//! Runs a suite: loads each graph once and times its cases one by one. With
//! `--peers`, gnnkern and every peer prepare a case and then take turns
//! timing slices of its calls. The run file is saved after every case, so
//! an interrupted run keeps what it measured and `--resume` picks up where
//! it stopped.

use super::def::{Case, GraphDef, SuiteDef};
use crate::error::{BenchError, Result};
use crate::graphs::BenchGraph;
use crate::machine::{Machine, git_rev, repo_root, unix_now, utc_date_time};
use crate::opspec::{BenchOp, shapes};
use crate::runfile::{OpResult, RunFile, SCHEMA_VERSION, Skipped, read_json, write_json_atomic};
use crate::runner::{OpRequest, PreparedOp, Warm};
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
    let script = repo.join("bench-suite").join("peers").join("peer_op.py");
    let max_threads = cases.iter().map(|c| c.threads).max().unwrap_or(1);
    let mut peers: Vec<Peer> = peer_names.iter().map(|name| Peer::new(name)).collect();
    let mut graph_order: Vec<&str> = Vec::new();
    for c in &cases {
        if !graph_order.contains(&c.graph.as_str()) {
            graph_order.push(&c.graph);
        }
    }
    for gname in graph_order {
        let gcases: Vec<&Case> = cases.iter().filter(|c| c.graph == gname).collect();
        let tools = || std::iter::once("gnnkern").chain(peer_names.iter().map(String::as_str));
        if gcases.iter().all(|c| tools().all(|t| is_done(&run, c, t))) {
            continue;
        }
        bar.set_message(format!("loading {gname}"));
        let graph = match load_graph(&repo, def, gname) {
            Ok(g) => g,
            Err(e) => {
                skip_pending(&mut run, &gcases, tools(), &e, &bar);
                write_json_atomic(&path, &run)?;
                continue;
            }
        };
        // The peers read the graph from disk, in gnnkern's dataset format.
        let peers_pending = gcases.iter().any(|c| peer_names.iter().any(|p| !is_done(&run, c, p)));
        let dir = match &python {
            Some(_) if peers_pending => match graph.materialize(&cache) {
                Ok(dir) => Some(dir),
                Err(e) => {
                    skip_pending(&mut run, &gcases, peer_names.iter().map(String::as_str), &e, &bar);
                    None
                }
            },
            _ => None,
        };
        // Case by case, and within a case slice by slice: gnnkern and every
        // peer prepare the case, then take turns timing a slice of its calls.
        // Timing a tool's whole case and then the peers' (runs up to
        // 2ffab2f) left the VM's fast and slow stretches, which last a
        // hundred to a thousand calls, free to fall on one tool's calls and
        // not the other's: docs/BENCHMARKS.md, "Peers".
        for c in gcases {
            let mut tools = Vec::new();
            if !is_done(&run, c, "gnnkern") {
                bar.set_message(c.key());
                match prepare_case(&graph, c, pinning) {
                    Ok(op) => tools.push(Contender::Ours(Box::new(op))),
                    Err(reason) => {
                        run.skipped.push(Skipped { case: c.key(), tool: "gnnkern".into(), reason });
                        bar.inc(1);
                    }
                }
            }
            if let (Some(python), Some(dir)) = (&python, &dir) {
                for (i, peer) in peers.iter_mut().enumerate() {
                    if is_done(&run, c, &peer.name) {
                        continue;
                    }
                    bar.set_message(format!("{} {}", peer.name, c.key()));
                    match peer.prepare(python, &script, max_threads, dir, c) {
                        Ok(()) => tools.push(Contender::Peer(i)),
                        Err(skip) => {
                            run.skipped.push(skip);
                            bar.inc(1);
                        }
                    }
                    std::thread::sleep(PEER_SETTLE);
                }
            }
            // Alone, a tool times its calls in one slice, as `op` does.
            let alternate = tools.len() > 1;
            let slices = if alternate { slices(c.reps, c.rounds) } else { vec![c.reps] };
            let warm = if alternate { SLICE_WARM } else { Warm::default() };
            for (round, &timed) in slices.iter().enumerate() {
                bar.set_message(format!("{} (slice {} of {})", c.key(), round + 1, slices.len()));
                let mut kept = Vec::with_capacity(tools.len());
                for mut tool in tools.drain(..) {
                    let failed = match &mut tool {
                        Contender::Ours(op) => op.time_slice(warm, timed).err().map(|e| Skipped {
                            case: c.key(),
                            tool: "gnnkern".into(),
                            reason: e.to_string(),
                        }),
                        Contender::Peer(i) => {
                            let failed = peers[*i].calls(c, warm, timed).err();
                            std::thread::sleep(PEER_SETTLE);
                            failed
                        }
                    };
                    match failed {
                        Some(skip) => {
                            run.skipped.push(skip);
                            bar.inc(1);
                        }
                        None => kept.push(tool),
                    }
                }
                tools = kept;
            }
            for tool in tools {
                match tool {
                    Contender::Ours(op) => match op.finish(&machine, Some(&triad)) {
                        Ok(outcome) => {
                            let mut r = outcome.result;
                            r.graph = c.graph.clone();
                            run.results.push(r);
                        }
                        Err(e) => {
                            run.skipped.push(Skipped { case: c.key(), tool: "gnnkern".into(), reason: e.to_string() })
                        }
                    },
                    Contender::Peer(i) => match peers[i].finish(c) {
                        Ok(r) => run.results.push(with_our_model(r, &graph, &triad)),
                        Err(skip) => run.skipped.push(skip),
                    },
                }
                bar.inc(1);
            }
            write_json_atomic(&path, &run)?;
        }
    }
    drop(peers);
    bar.set_message("calibration triad");
    run.calibration_gbps.push(triad::measure(machine.cores, def.calibration_mib, 5)?);
    run.finished = Some(utc_date_time(unix_now()).1);
    write_json_atomic(&path, &run)?;
    bar.finish_and_clear();
    Ok((run, path))
}

/// How long the suite waits after a peer prepared a case or timed a slice
/// of it, before the next tool's calls. The peers' OpenMP workers spin for a
/// while after a parallel region before they sleep (libgomp, which torch and
/// DGL both link: 300,000 spins unless `GOMP_SPINCOUNT` says otherwise,
/// milliseconds); on a 2-core machine a spinning worker would take a core
/// from the next tool's calls, gnnkern's trials and slices among them.
const PEER_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// The untimed calls that start a slice after another tool's: at least
/// one, which pays for the caches the other tool filled, and more until
/// 100 ms have passed. One call was not enough on the Zen 4 VM: alternating
/// with the peers, gnnkern's 2 ms RMAT 2^20 copy_u_sum d = 32 took 4.5 ms
/// (alone: 2.0-2.6 ms; peers' OpenMP waits passive, so not their spinning),
/// perf-reports/ablation/2026-11-30_zen4_slice-warmup.tsv.
const SLICE_WARM: Warm = Warm { calls: 1, ms: 100.0 };

/// A tool taking part in a case: gnnkern's prepared op, or a peer (an
/// index into the suite's peers) with the case prepared.
enum Contender<'g> {
    Ours(Box<PreparedOp<'g>>),
    Peer(usize),
}

/// How `reps` timed calls split into `rounds` slices (1 <= rounds <= reps):
/// as evenly as possible, the longer slices first.
fn slices(reps: usize, rounds: usize) -> Vec<usize> {
    let rounds = rounds.clamp(1, reps.max(1));
    (0..rounds).map(|i| reps / rounds + usize::from(i < reps % rounds)).collect()
}

/// A peer and its server process, started at its first case and restarted
/// after a failure (the failed case is recorded as skipped with the error),
/// up to [`PEER_FAILURES_IN_A_ROW`] failures in a row.
struct Peer {
    name: String,
    server: Option<peers::PeerServer>,
    /// Failures since the last answer.
    failures: usize,
    /// The last failure, once the peer has failed too often in a row.
    given_up: Option<String>,
    /// The prepared case's slice medians (ms).
    slice_medians: Vec<f64>,
}

/// Failures in a row after which the suite stops restarting a peer and
/// records its remaining cases as skipped: a broken install (an import
/// error) would otherwise cost a Python start per case, while one case
/// that kills the process (out of memory) costs one restart.
const PEER_FAILURES_IN_A_ROW: usize = 3;

impl Peer {
    fn new(name: &str) -> Peer {
        Peer { name: name.to_string(), server: None, failures: 0, given_up: None, slice_medians: Vec::new() }
    }

    /// Prepares `case` on this peer, starting its process if none runs.
    fn prepare(
        &mut self,
        python: &Path,
        script: &Path,
        max_threads: usize,
        dir: &Path,
        case: &Case,
    ) -> std::result::Result<(), Skipped> {
        if let Some(last) = &self.given_up {
            return Err(self.skipped(
                case,
                format!("not run: the peer failed {PEER_FAILURES_IN_A_ROW} times in a row; last: {last}"),
            ));
        }
        self.slice_medians.clear();
        if self.server.is_none() {
            match peers::PeerServer::start(python, script, &self.name, max_threads) {
                Ok(s) => self.server = Some(s),
                Err(e) => return Err(self.failure(case, e)),
            }
        }
        self.exchange(case, |s| s.prepare(dir, case))
    }

    /// Times a slice of the prepared case's calls.
    fn calls(&mut self, case: &Case, warm: Warm, timed: usize) -> std::result::Result<(), Skipped> {
        let times = self.exchange(case, |s| s.calls(warm, timed))?;
        self.slice_medians.push(crate::runner::median(&times));
        Ok(())
    }

    /// The prepared case's result, with its slice medians when it had more than one slice.
    fn finish(&mut self, case: &Case) -> std::result::Result<OpResult, Skipped> {
        let mut r = self.exchange(case, peers::PeerServer::finish)?;
        if self.slice_medians.len() > 1 {
            r.slice_medians_ms = Some(std::mem::take(&mut self.slice_medians));
        }
        Ok(r)
    }

    /// One exchange with the running server: its answer or its skip; a
    /// failed process is dropped (restarted at the next case) and counted.
    fn exchange<T>(
        &mut self,
        case: &Case,
        f: impl FnOnce(&mut peers::PeerServer) -> Result<peers::Answer<T>>,
    ) -> std::result::Result<T, Skipped> {
        let Some(server) = self.server.as_mut() else {
            return Err(self.skipped(case, "the peer's process is not running".into()));
        };
        match f(server) {
            Ok(answer) => {
                self.failures = 0;
                answer
            }
            Err(e) => Err(self.failure(case, e)),
        }
    }

    fn failure(&mut self, case: &Case, e: BenchError) -> Skipped {
        self.server = None;
        self.failures += 1;
        if self.failures >= PEER_FAILURES_IN_A_ROW {
            self.given_up = Some(e.to_string());
        }
        self.skipped(case, e.to_string())
    }

    fn skipped(&self, case: &Case, reason: String) -> Skipped {
        Skipped { case: case.key(), tool: self.name.clone(), reason }
    }
}

/// Records every pending case of `tools` in `cases` as skipped for `error`.
fn skip_pending<'t>(
    run: &mut RunFile,
    cases: &[&Case],
    tools: impl Iterator<Item = &'t str> + Clone,
    error: &BenchError,
    bar: &ProgressBar,
) {
    for c in cases {
        for tool in tools.clone() {
            if !is_done(run, c, tool) {
                run.skipped.push(Skipped { case: c.key(), tool: tool.into(), reason: error.to_string() });
                bar.inc(1);
            }
        }
    }
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

/// Prepares `c` on gnnkern, or says why it cannot run.
fn prepare_case<'g>(graph: &'g BenchGraph, c: &Case, pinning: Pinning) -> std::result::Result<PreparedOp<'g>, String> {
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
    PreparedOp::new(graph, &req).map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::slices;

    #[test]
    fn slices_split_the_reps_evenly_longer_first() {
        assert_eq!(slices(5, 5), [1, 1, 1, 1, 1]);
        assert_eq!(slices(4, 3), [2, 1, 1]);
        assert_eq!(slices(2000, 20), [100; 20]);
        assert_eq!(slices(7, 1), [7]);
        // More rounds than calls: one call per slice.
        assert_eq!(slices(2, 5), [1, 1]);
    }
}
