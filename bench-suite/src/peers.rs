//! Runs the Python peers (`bench-suite/peers/peer_op.py`: DGL, PyG-style
//! gather-scatter, torch.sparse) on the cases of a suite.
//!
//! One Python process per peer and graph receives all of that graph's cases
//! as a JSON list (`--batch FILE`) and prints one JSON object per line: an
//! [`OpResult`] or `{"case": KEY, "skipped": REASON}` for an op the peer has
//! no form of. Starting Python and importing torch costs seconds, so cases
//! are batched rather than run one process each.

use crate::error::{BenchError, Result};
use crate::runfile::{OpResult, Skipped};
use crate::suite::def::Case;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Default interpreter of the peers' venv (override: `GNNKERN_PEERS_PYTHON`).
pub const DEFAULT_PYTHON: &str = "/work/venvs/peers/bin/python";

/// The peers' Python interpreter, if it exists.
pub fn python() -> Option<PathBuf> {
    let p = std::env::var_os("GNNKERN_PEERS_PYTHON")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_PYTHON), PathBuf::from);
    p.exists().then_some(p)
}

/// One case as the peer script reads it.
#[derive(Serialize)]
struct PeerCase<'a> {
    graph: &'a Path,
    graph_name: &'a str,
    op: &'a str,
    dim: usize,
    heads: Option<usize>,
    threads: usize,
    reps: usize,
    warmup: usize,
}

/// A line of the peer's output.
#[derive(Deserialize)]
#[serde(untagged)]
enum PeerLine {
    Skipped { case: String, skipped: String },
    Result(Box<OpResult>),
}

/// Runs `peer` on `cases` of the graph stored at `dir`; calls `on_line`
/// after each case with its result or skip.
pub fn run_batch(
    python: &Path,
    script: &Path,
    peer: &str,
    dir: &Path,
    cases: &[Case],
    scratch: &Path,
    mut on_line: impl FnMut(std::result::Result<OpResult, Skipped>),
) -> Result<()> {
    let list: Vec<PeerCase<'_>> = cases
        .iter()
        .map(|c| PeerCase {
            graph: dir,
            graph_name: &c.graph,
            op: &c.op,
            dim: c.dim,
            heads: c.heads,
            threads: c.threads,
            reps: c.reps,
            warmup: c.warmup,
        })
        .collect();
    let batch = scratch.join(format!("peer-batch-{peer}-{}.json", std::process::id()));
    let text = serde_json::to_string(&list).map_err(|e| BenchError::format(&batch, e.to_string()))?;
    crate::runfile::write_atomic(&batch, text.as_bytes())?;
    let program = format!("{} {} --peer {peer}", python.display(), script.display());
    let mut command = Command::new(python);
    command.arg(script).args(["--peer", peer, "--batch"]).arg(&batch).arg("--json");
    // Same page policy on both sides: the peers' operands are NumPy arrays,
    // which NumPy advises for huge pages from 4 MiB on; torch (2.2+) does the
    // same for its own allocations, such as the peers' outputs, under
    // THP_MEM_ALLOC_ENABLE=1. gnnkern advises its buffers unless
    // GNNKERN_HUGE_PAGES=0 (gnnkern::huge_pages), and the peers follow.
    if gnnkern::huge_pages::enabled() {
        command.env("THP_MEM_ALLOC_ENABLE", "1");
    } else {
        command.env_remove("THP_MEM_ALLOC_ENABLE");
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| BenchError::External { program: program.clone(), message: e.to_string() })?;
    let stdout = child.stdout.take().expect("stdout was piped");
    let stderr = child.stderr.take().expect("stderr was piped");
    let err_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut s);
        s
    });
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| BenchError::External { program: program.clone(), message: e.to_string() })?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<PeerLine>(&line) {
            Ok(PeerLine::Result(r)) => on_line(Ok(*r)),
            Ok(PeerLine::Skipped { case, skipped }) => {
                on_line(Err(Skipped { case, tool: peer.to_string(), reason: skipped }))
            }
            Err(e) => {
                return Err(BenchError::External { program, message: format!("unreadable output line ({e}): {line}") });
            }
        }
    }
    let status = child.wait().map_err(|e| BenchError::External { program: program.clone(), message: e.to_string() })?;
    let stderr = err_thread.join().unwrap_or_default();
    let _ = std::fs::remove_file(&batch);
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(BenchError::External { program, message: format!("exited with {status}: {}", tail.join("\n")) });
    }
    Ok(())
}
