//! Runs the Python peers (`bench-suite/peers/peer_op.py`: DGL, PyG-style
//! gather-scatter, torch.sparse) case by case, beside gnnkern's own.
//!
//! Each peer is one long-lived Python process (`--serve`) for the whole
//! suite. It reads one JSON request per line on stdin and answers each with
//! one JSON line: `prepare` a case (inputs made, warm-up calls run), time a
//! slice of its `calls`, `finish` it (the [`OpResult`] over every timed
//! call); any of them may be answered `{"case": KEY, "skipped": REASON}`,
//! for an op the peer has no form of or an error inside torch. Starting
//! Python and importing torch costs seconds, and loading a 2^24-edge graph
//! more, so the process and its last graph stay loaded between cases; the
//! suite alternates slices of one case's calls between gnnkern and the
//! peers (`suite::run`).

use crate::error::{BenchError, Result};
use crate::runfile::{OpResult, Skipped};
use crate::runner::Warm;
use crate::suite::def::Case;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::thread::JoinHandle;

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

/// A request: a case to prepare, a slice of its calls, or its summary.
#[derive(Serialize)]
#[serde(untagged)]
enum Request<'a> {
    Prepare { prepare: PeerCase<'a> },
    Calls { calls: usize, untimed: usize, warm_ms: f64 },
    Finish { finish: bool },
}

/// A line of the peer's output.
#[derive(Deserialize)]
#[serde(untagged)]
enum PeerLine {
    Skipped { case: String, skipped: String },
    Prepared { prepared: String },
    Times { times_ms: Vec<f64> },
    Result(Box<OpResult>),
}

/// A peer's answer: what was asked for, or the skip it reported instead
/// (an op it has no form of, an error inside torch such as out of memory).
pub type Answer<T> = std::result::Result<T, Skipped>;

/// How many of a dead peer's last stderr lines an error quotes.
const STDERR_TAIL_LINES: usize = 8;

/// A running `peer_op.py --serve` process.
pub struct PeerServer {
    peer: String,
    /// `python script --peer NAME`, for error messages.
    program: String,
    child: Child,
    /// `None` once closed (the process then exits at end of input).
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Drains stderr so the pipe never fills; yields everything it read.
    stderr: Option<JoinHandle<String>>,
}

impl PeerServer {
    /// Starts `script --peer peer --serve` under `python`. `max_threads`
    /// sets `OMP_NUM_THREADS`, which OpenMP reads once, when torch loads;
    /// each case then asks for its own count with `torch.set_num_threads`.
    pub fn start(python: &Path, script: &Path, peer: &str, max_threads: usize) -> Result<PeerServer> {
        let program = format!("{} {} --peer {peer}", python.display(), script.display());
        let mut command = Command::new(python);
        command.arg(script).args(["--peer", peer, "--serve", "--threads"]).arg(max_threads.to_string());
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
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| BenchError::External { program: program.clone(), message: e.to_string() })?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout was piped"));
        let stderr = child.stderr.take().expect("stderr was piped");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut BufReader::new(stderr), &mut s);
            s
        });
        Ok(PeerServer { peer: peer.to_string(), program, child, stdin: Some(stdin), stdout, stderr: Some(stderr) })
    }

    /// Prepares `case` on the graph stored at `dir`: inputs made, warm-up
    /// calls run. An `Err` means the process failed (it quoted its last
    /// stderr lines) and must be restarted for the next case.
    pub fn prepare(&mut self, dir: &Path, case: &Case) -> Result<Answer<()>> {
        let prepare = PeerCase {
            graph: dir,
            graph_name: &case.graph,
            op: &case.op,
            dim: case.dim,
            heads: case.heads,
            threads: case.threads,
            reps: case.reps,
            warmup: case.warmup,
        };
        match self.request(&Request::Prepare { prepare })? {
            PeerLine::Prepared { prepared } if prepared == case.key() => Ok(Ok(())),
            PeerLine::Skipped { case, skipped } => Ok(Err(self.skip(case, skipped))),
            _ => Err(self.failed(format!("did not answer that it prepared {}", case.key()))),
        }
    }

    /// Runs the `warm` calls of the prepared case, then `timed` timed ones;
    /// returns their times (ms).
    pub fn calls(&mut self, warm: Warm, timed: usize) -> Result<Answer<Vec<f64>>> {
        match self.request(&Request::Calls { calls: timed, untimed: warm.calls, warm_ms: warm.ms })? {
            PeerLine::Times { times_ms } if times_ms.len() == timed => Ok(Ok(times_ms)),
            PeerLine::Skipped { case, skipped } => Ok(Err(self.skip(case, skipped))),
            _ => Err(self.failed(format!("did not answer {timed} call times"))),
        }
    }

    /// The prepared case's result over every timed call; the peer drops the case.
    pub fn finish(&mut self) -> Result<Answer<OpResult>> {
        match self.request(&Request::Finish { finish: true })? {
            PeerLine::Result(r) => Ok(Ok(*r)),
            PeerLine::Skipped { case, skipped } => Ok(Err(self.skip(case, skipped))),
            _ => Err(self.failed("answered a finish with something else".into())),
        }
    }

    fn skip(&self, case: String, reason: String) -> Skipped {
        Skipped { case, tool: self.peer.clone(), reason }
    }

    /// Sends one request line and reads the answer line.
    fn request(&mut self, request: &Request<'_>) -> Result<PeerLine> {
        let mut text = serde_json::to_string(request).map_err(|e| self.failed(format!("request: {e}")))?;
        text.push('\n');
        let sent = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(text.as_bytes()).and_then(|()| stdin.flush()),
            None => Err(std::io::Error::other("its input is closed")),
        };
        if let Err(e) = sent {
            // A process that died before reading (a failed import) closed
            // its input: say that, not the broken pipe it left.
            let exited = e.kind() == std::io::ErrorKind::BrokenPipe || matches!(self.child.try_wait(), Ok(Some(_)));
            let what = if exited { "exited before answering".into() } else { format!("sending the request: {e}") };
            return Err(self.failed(what));
        }
        let mut line = String::new();
        loop {
            line.clear();
            match self.stdout.read_line(&mut line) {
                Ok(0) => return Err(self.failed("exited before answering".into())),
                Ok(_) if line.trim().is_empty() => continue,
                Ok(_) => break,
                Err(e) => return Err(self.failed(format!("reading its answer: {e}"))),
            }
        }
        serde_json::from_str::<PeerLine>(line.trim_end())
            .map_err(|e| self.failed(format!("unreadable answer ({e}): {}", line.trim_end())))
    }

    /// Stops the process and returns an error quoting `what` and its last
    /// stderr lines.
    fn failed(&mut self, what: String) -> BenchError {
        let (status, stderr) = self.stop();
        let tail: Vec<&str> = stderr.lines().rev().take(STDERR_TAIL_LINES).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        let status = status.map_or_else(|| "status unknown".to_string(), |s| s.to_string());
        BenchError::External {
            program: self.program.clone(),
            message: format!("{what} ({status}): {}", tail.join("\n")),
        }
    }

    /// Closes the process's input (a server exits at end of input), kills it
    /// if it is still running after that (a failed exchange leaves it in an
    /// unknown state), and collects its exit status and stderr.
    fn stop(&mut self) -> (Option<std::process::ExitStatus>, String) {
        drop(self.stdin.take());
        let status = match self.child.try_wait() {
            Ok(Some(s)) => Some(s),
            _ => {
                let _ = self.child.kill();
                self.child.wait().ok()
            }
        };
        let stderr = self.stderr.take().and_then(|h| h.join().ok()).unwrap_or_default();
        (status, stderr)
    }
}

impl Drop for PeerServer {
    /// A server that answered every case exits at end of input; wait for it
    /// so no peer process outlives the suite.
    fn drop(&mut self) {
        if self.stderr.is_none() {
            return; // already stopped by `failed`
        }
        drop(self.stdin.take());
        let _ = self.child.wait();
        if let Some(h) = self.stderr.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in interpreter: ignores the script and flags, answers each
    /// request line as `answer` says (a shell fragment reading `$line`).
    fn fake_python(dir: &Path, name: &str, answer: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        let body = format!("#!/bin/sh\necho \"started $*\" >&2\nwhile IFS= read -r line; do\n{answer}\ndone\n");
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn case(op: &str) -> Case {
        Case {
            graph: "g".into(),
            op: op.into(),
            dim: 8,
            heads: None,
            threads: 2,
            backend: "auto".into(),
            reps: 1,
            warmup: 0,
            rounds: 1,
        }
    }

    #[test]
    fn a_server_answers_case_after_case() {
        let dir = tempfile::tempdir().unwrap();
        let python = fake_python(
            dir.path(),
            "py",
            r#"op=$(echo "$line" | sed 's/.*"op":"\([^"]*\)".*/\1/'); echo "{\"case\": \"g|$op\", \"skipped\": \"no $op here\"}""#,
        );
        let mut server = PeerServer::start(&python, Path::new("peer_op.py"), "dgl", 2).unwrap();
        for op in ["copy_u_sum", "u_dot_v", "edge_softmax"] {
            let skipped = server.prepare(Path::new("/graph"), &case(op)).unwrap().unwrap_err();
            assert_eq!(
                skipped,
                Skipped { case: format!("g|{op}"), tool: "dgl".into(), reason: format!("no {op} here") }
            );
        }
    }

    /// Prepare, slices of calls, finish: the answers the suite reads, and a
    /// wrong count of call times is an error.
    #[test]
    fn a_server_times_slices_of_its_prepared_case() {
        let dir = tempfile::tempdir().unwrap();
        let python = fake_python(
            dir.path(),
            "py",
            r#"case "$line" in
  *'"prepare"'*) echo '{"prepared": "g|copy_u_sum|d8|h0|t2"}' ;;
  *'"calls":2'*) echo '{"times_ms": [1.5, 2.5]}' ;;
  *'"calls":'*) echo '{"times_ms": [1.5]}' ;;
  *'"finish"'*) echo '{"case": "g|copy_u_sum|d8|h0|t2", "skipped": "RuntimeError: out of memory"}' ;;
esac"#,
        );
        let mut server = PeerServer::start(&python, Path::new("peer_op.py"), "dgl", 2).unwrap();
        server.prepare(Path::new("/graph"), &case("copy_u_sum")).unwrap().unwrap();
        assert_eq!(server.calls(Warm { calls: 1, ms: 50.0 }, 2).unwrap().unwrap(), [1.5, 2.5]);
        let skipped = server.finish().unwrap().unwrap_err();
        assert_eq!(skipped.reason, "RuntimeError: out of memory");
        let err = server.calls(Warm::default(), 3).unwrap_err().to_string();
        assert!(err.contains("did not answer 3 call times"), "{err}");

        let mut server = PeerServer::start(&python, Path::new("peer_op.py"), "dgl", 2).unwrap();
        let err = server.prepare(Path::new("/graph"), &case("u_dot_v")).unwrap_err().to_string();
        assert!(err.contains("did not answer that it prepared g|u_dot_v|d8|h0|t2"), "{err}");
    }

    #[test]
    fn a_dead_server_is_an_error_that_quotes_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let python = fake_python(dir.path(), "py", "echo 'ImportError: no module named dgl' >&2; exit 1");
        let mut server = PeerServer::start(&python, Path::new("peer_op.py"), "dgl", 2).unwrap();
        let err = server.prepare(Path::new("/graph"), &case("copy_u_sum")).unwrap_err().to_string();
        assert!(err.contains("--peer dgl"), "names the peer: {err}");
        assert!(err.contains("exited before answering"), "says what happened: {err}");
        assert!(err.contains("ImportError: no module named dgl"), "quotes stderr: {err}");
        assert!(err.contains("--serve --threads 2"), "stderr shows the flags it was started with: {err}");
    }

    #[test]
    fn an_unreadable_answer_is_an_error_that_quotes_it() {
        let dir = tempfile::tempdir().unwrap();
        let python = fake_python(dir.path(), "py", "echo 'Traceback (most recent call last):'");
        let mut server = PeerServer::start(&python, Path::new("peer_op.py"), "torch_sparse", 1).unwrap();
        let err = server.prepare(Path::new("/graph"), &case("copy_u_sum")).unwrap_err().to_string();
        assert!(err.contains("unreadable answer") && err.contains("Traceback"), "{err}");
    }
}
