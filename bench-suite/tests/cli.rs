//! Contract tests of the `gnnkern-bench` command line (issue 4): `gen`,
//! `op --json` (fields, `--lhs/--rhs/--save-output` round trip, errors),
//! `suite` on a tiny suites file, `report` and `check` on fixture runs.

use gnnkern_bench::machine::Machine;
use gnnkern_bench::runfile::{MachineBrief, OpResult, RunFile, SCHEMA_VERSION, Skipped};
use gnnkern_bench::triad::{MachineFile, TriadPoint};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gnnkern-bench"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("gnnkern-bench-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the binary runs")
}

fn ok(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn op_json(args: &[&str]) -> Value {
    let stdout = ok(bin().arg("op").args(args).arg("--json"));
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "op --json prints exactly one line: {stdout}");
    serde_json::from_str(lines[0]).unwrap()
}

fn read_ids(path: &Path) -> Vec<usize> {
    std::fs::read(path).unwrap().chunks_exact(4).map(|b| i32::from_le_bytes(b.try_into().unwrap()) as usize).collect()
}

fn write_f32(path: &Path, v: &[f32]) {
    std::fs::write(path, v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>()).unwrap();
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path).unwrap().chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect()
}

const FIELDS: [&str; 19] = [
    "op",
    "graph",
    "nodes",
    "edges",
    "dim",
    "heads",
    "threads",
    "backend",
    "isa",
    "median_ms",
    "min_ms",
    "max_ms",
    "gflops",
    "model_bytes",
    "gbps",
    "pct_of_triad",
    "peak_rss_mb",
    "checksum",
    "machine",
];

#[test]
fn gen_then_op_on_the_directory_and_on_the_spec_agree() {
    let dir = tmp("gen");
    let g = dir.join("g");
    ok(bin().args(["gen", "uniform:300:2000:5", "--out"]).arg(&g));
    assert_eq!(std::fs::metadata(g.join("src.bin")).unwrap().len(), 2000 * 4);
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(g.join("meta.json")).unwrap()).unwrap();
    assert_eq!((meta["num_nodes"].as_u64(), meta["num_edges"].as_u64()), (Some(300), Some(2000)));

    let a = op_json(&[
        "--graph",
        "uniform:300:2000:5",
        "--op",
        "copy_u_sum",
        "--dim",
        "16",
        "--threads",
        "1",
        "--reps",
        "2",
    ]);
    for f in FIELDS {
        assert!(a.get(f).is_some(), "field {f} missing in {a}");
    }
    assert_eq!(a["op"], "copy_u_sum");
    assert_eq!((a["nodes"].as_u64(), a["edges"].as_u64(), a["dim"].as_u64()), (Some(300), Some(2000), Some(16)));
    assert_eq!(a["threads"].as_u64(), Some(1));
    assert_eq!(a["reps"].as_u64(), Some(2));
    assert!(a["median_ms"].as_f64().unwrap() > 0.0);
    assert!(a["min_ms"].as_f64().unwrap() <= a["median_ms"].as_f64().unwrap());
    assert!(a["max_ms"].as_f64().unwrap() >= a["median_ms"].as_f64().unwrap());
    // copy_u_sum: E·d FLOPs and (N+1+E)·4 + 2·N·d·4 bytes (docs/BENCHMARKS.md).
    assert_eq!(a["model_bytes"].as_u64(), Some((301 + 2000) * 4 + 2 * 300 * 16 * 4));
    assert!(a["machine"]["cores"].as_u64().unwrap() >= 1);

    let b = op_json(&[
        "--graph",
        g.to_str().unwrap(),
        "--op",
        "copy_u_sum",
        "--dim",
        "16",
        "--threads",
        "1",
        "--reps",
        "1",
    ]);
    assert_eq!(a["checksum"], b["checksum"], "same graph and seeded inputs give the same output");
    assert_eq!(b["graph"], "g");
}

#[test]
fn heads_layout_and_every_family_run() {
    let h = op_json(&["--graph", "rmat:8:4:1", "--op", "u_dot_v", "--dim", "32", "--heads", "4", "--reps", "1"]);
    assert_eq!(h["heads"].as_u64(), Some(4));
    assert_eq!(h["out_shape"], serde_json::json!([h["edges"], 4, 1]));
    for op in
        ["copy_u_max", "u_mul_e_mean", "e_add_v", "u_sub_e_min", "copy_e_sum", "edge_softmax", "edge_softmax_backward"]
    {
        let r = op_json(&["--graph", "rmat:7:4:2", "--op", op, "--dim", "8", "--reps", "1"]);
        assert!(r["checksum_abs"].as_f64().unwrap() > 0.0, "{op}: output is all zero");
    }
}

#[test]
fn save_output_matches_a_hand_computed_result_from_given_inputs() {
    let dir = tmp("roundtrip");
    let g = dir.join("g");
    ok(bin().args(["gen", "uniform:50:300:9", "--out"]).arg(&g));
    let (src, dst) = (read_ids(&g.join("src.bin")), read_ids(&g.join("dst.bin")));
    let d = 3;
    let x: Vec<f32> = (0..50 * d).map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0).collect();
    let w: Vec<f32> = (0..300).map(|i| ((i * 13 % 17) as f32 - 8.0) / 4.0).collect();
    write_f32(&dir.join("x.bin"), &x);
    write_f32(&dir.join("w.bin"), &w);
    let out = dir.join("out.bin");
    let mut cmd = bin();
    cmd.args(["op", "--graph"]).arg(&g).args(["--op", "u_mul_e_sum", "--dim", "3", "--reps", "1", "--json", "--lhs"]);
    cmd.arg(dir.join("x.bin")).arg("--rhs").arg(dir.join("w.bin")).arg("--save-output").arg(&out);
    let r: Value = serde_json::from_str(ok(&mut cmd).trim()).unwrap();
    let got = read_f32(&out);
    let mut want = vec![0.0f64; 50 * d];
    for e in 0..300 {
        for k in 0..d {
            want[dst[e] * d + k] += f64::from(x[src[e] * d + k]) * f64::from(w[e]);
        }
    }
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((f64::from(*g) - w).abs() < 1e-4 * (1.0 + w.abs()), "element {i}: {g} vs {w}");
    }
    let sum: f64 = got.iter().map(|&v| f64::from(v)).sum();
    assert!((r["checksum"].as_f64().unwrap() - sum).abs() < 1e-6 * (1.0 + sum.abs()));

    // A wrong-sized input is a clear error (exit 2), and nothing is written.
    write_f32(&dir.join("short.bin"), &x[..10]);
    let bad = dir.join("bad.bin");
    let o = run(bin()
        .args(["op", "--graph"])
        .arg(&g)
        .args(["--op", "copy_u_sum", "--dim", "3", "--lhs"])
        .arg(dir.join("short.bin"))
        .arg("--save-output")
        .arg(&bad));
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--lhs") && err.contains("150"), "{err}");
    assert!(!bad.exists());
}

#[test]
fn bad_invocations_fail_with_a_message() {
    for (args, needle) in [
        (vec!["--graph", "chain:5", "--op", "u_pow_v", "--dim", "4"], "u_pow_v"),
        (vec!["--graph", "nosuch:1", "--op", "copy_u_sum", "--dim", "4"], "nosuch:1"),
        (vec!["--graph", "chain:5", "--op", "copy_u_sum", "--dim", "6", "--heads", "4"], "--heads"),
        (vec!["--graph", "chain:5", "--op", "copy_u_sum", "--dim", "4", "--backend", "quantum"], "quantum"),
    ] {
        let o = run(bin().arg("op").args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(needle),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

#[test]
fn op_runs_on_the_shared_cora_dataset() {
    let cora = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets/cora");
    if !cora.join("meta.json").exists() {
        eprintln!("skipping: {} is absent", cora.display());
        return;
    }
    let r = op_json(&[
        "--graph",
        cora.to_str().unwrap(),
        "--op",
        "u_mul_e_sum",
        "--dim",
        "64",
        "--heads",
        "4",
        "--reps",
        "2",
    ]);
    assert_eq!(
        (r["graph"].as_str(), r["nodes"].as_u64(), r["edges"].as_u64()),
        (Some("cora"), Some(2708), Some(10556))
    );
}

fn result(graph: &str, op: &str, tool: &str, ms: f64, checksum: f64) -> OpResult {
    OpResult {
        tool: tool.into(),
        op: op.into(),
        graph: graph.into(),
        nodes: 100,
        dst_nodes: 100,
        edges: 1000,
        dim: 32,
        heads: None,
        threads: 2,
        backend: if tool == "gnnkern" { "simd".into() } else { tool.into() },
        pass: None,
        isa: "avx512".into(),
        reps: 5,
        slice_medians_ms: None,
        median_ms: ms,
        min_ms: ms * 0.9,
        max_ms: ms * 1.2,
        flops: 32_000,
        gflops: 32_000.0 / ms / 1e6,
        model_bytes: 100_000,
        gbps: 100_000.0 / ms / 1e6,
        pct_of_triad: Some(12.5),
        traversal_bytes: (tool == "gnnkern").then_some(400_000),
        traversal_pct_of_triad: (tool == "gnnkern").then_some(50.0),
        peak_rss_mb: Some(40.0),
        out_shape: vec![100, 32],
        checksum,
        checksum_abs: 1000.0,
        machine: MachineBrief { cpu: "Test CPU".into(), vendor: "GenuineIntel".into(), cores: 2 },
    }
}

fn fixture_run(rev: &str, started: &str, slow: f64) -> RunFile {
    let mut results = vec![];
    for (op, base) in [("copy_u_sum", 1.0), ("u_dot_v", 2.0), ("edge_softmax", 3.0)] {
        let factor = if op == "u_dot_v" { slow } else { 1.0 };
        results.push(result("rmat16", op, "gnnkern", base * factor, 5.0));
        results.push(result("rmat16", op, "dgl", base * 2.0, 5.0001));
        results.push(result("rmat16", op, "pyg", base * 5.0, if op == "edge_softmax" { 9.0 } else { 5.0 }));
    }
    RunFile {
        schema: SCHEMA_VERSION,
        suite: "quick".into(),
        command: "gnnkern-bench suite --quick --peers".into(),
        started: started.into(),
        finished: Some(started.into()),
        git_rev: rev.into(),
        machine: Machine {
            cpu: "Test CPU".into(),
            vendor: "GenuineIntel".into(),
            cores: 2,
            family: None,
            model: None,
            slug: "test-cpu-2c".into(),
            huge_pages: None,
        },
        triad_gbps: vec![TriadPoint { threads: 2, gbps: 10.0 }],
        calibration_gbps: vec![10.0, 10.0],
        results,
        skipped: vec![Skipped {
            case: "rmat16|u_dot_v|d32|h0|t2".into(),
            tool: "torch_sparse".into(),
            reason: "no form".into(),
        }],
    }
}

fn write_run(path: &Path, run: &RunFile) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_string_pretty(run).unwrap()).unwrap();
}

#[test]
fn report_renders_the_dashboard_and_latest_md() {
    let dir = tmp("report");
    write_run(&dir.join("runs/2026-01-01_test-cpu-2c_aaa.json"), &fixture_run("aaa", "2026-01-01T00:00:00Z", 1.0));
    write_run(&dir.join("runs/2026-01-02_test-cpu-2c_bbb.json"), &fixture_run("bbb", "2026-01-02T00:00:00Z", 0.8));
    ok(bin().arg("report").arg("--dir").arg(&dir));
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(html.starts_with("<!doctype html>") && html.trim_end().ends_with("</html>"));
    assert!(html.contains("<svg") && html.contains("Speedup over DGL") && html.contains("History across revisions"));
    assert!(html.contains("rmat16|u_dot_v|d32|h0|t2"));
    assert!(
        !html.contains("http://")
            || html.matches("http://").count() == html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(),
        "no external assets"
    );
    assert!(!html.contains("<script"), "the page is static");
    let md = std::fs::read_to_string(dir.join("LATEST.md")).unwrap();
    assert!(md.contains("2026-01-02_test-cpu-2c_bbb.json"), "LATEST.md describes the newest run");
    assert!(md.contains("calibration triads, start → end: 10.0 → 10.0 GB/s"), "{md}");
    assert!(md.contains("| case |") && md.contains("dgl ms") && md.contains("vs DGL"));
    // The traversal model's %triad and gnnkern's peak memory per case (50 %
    // and 40 MiB in the fixture), after the minimum model's %triad.
    assert!(md.contains("| %triad | %triad trav. | peak MiB |") && md.contains("| 12% | 50% | 40 |"), "{md}");
    assert!(html.contains("<th>%triad traversal</th>") && html.contains("<td>50%</td>"), "{html}");
    // u_dot_v: 1.6 ms ours vs 4 ms DGL.
    assert!(md.contains("2.50x"), "{md}");
    // pyg's edge_softmax checksum differs: flagged.
    assert!(md.contains("**differs**"));

    let empty = tmp("report-empty");
    std::fs::create_dir_all(empty.join("runs")).unwrap();
    let o = run(bin().arg("report").arg("--dir").arg(&empty));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn check_exits_nonzero_naming_regressed_cases() {
    let dir = tmp("check");
    let base = dir.join("base.json");
    let same = dir.join("same.json");
    let slow = dir.join("slow.json");
    write_run(&base, &fixture_run("aaa", "2026-01-01T00:00:00Z", 1.0));
    write_run(&same, &fixture_run("bbb", "2026-01-02T00:00:00Z", 1.05));
    write_run(&slow, &fixture_run("ccc", "2026-01-03T00:00:00Z", 1.5));
    let o = run(bin().args(["check", "--baseline"]).arg(&base).arg("--current").arg(&same));
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stdout));
    let o = run(bin().args(["check", "--baseline"]).arg(&base).arg("--current").arg(&slow));
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("REGRESSED") && text.contains("u_dot_v") && !text.contains("REGRESSED  rmat16|copy_u_sum"),
        "{text}"
    );
    // A looser threshold accepts it.
    let o = run(bin().args(["check", "--threshold", "0.6", "--baseline"]).arg(&base).arg("--current").arg(&slow));
    assert_eq!(o.status.code(), Some(0));
    let o = run(bin().args(["check", "--baseline"]).arg(dir.join("missing.json")).arg("--current").arg(&slow));
    assert_eq!(o.status.code(), Some(2));
}

/// A scratch repository for `suite` runs: this machine's file with a made-up
/// triad (so no triad is measured) and the suites file `suites_toml`.
fn suite_repo(name: &str, suites_toml: &str) -> (PathBuf, PathBuf) {
    let repo = tmp(name);
    let machine = Machine::detect();
    let mf = MachineFile {
        machine: machine.clone(),
        triad: vec![TriadPoint { threads: 1, gbps: 5.0 }],
        array_mib: 8,
        reps: 1,
        measured_at: "test".into(),
        command: "test".into(),
    };
    let mpath = repo.join("perf-reports/machines").join(format!("{}.json", machine.slug));
    std::fs::create_dir_all(mpath.parent().unwrap()).unwrap();
    std::fs::write(&mpath, serde_json::to_string(&mf).unwrap()).unwrap();
    let suites = repo.join("suites.toml");
    std::fs::write(&suites, suites_toml).unwrap();
    (repo, suites)
}

#[test]
fn suite_runs_a_suites_file_and_writes_a_run_file() {
    let (repo, suites) = suite_repo(
        "suite",
        r#"
[tiny]
description = "test"
reps = 2
threads = [1]
backends = ["auto"]
calibration_mib = 4
[tiny.graphs]
u = "uniform:200:1500:1"
blk = { from = "rmat:9:8:1", seeds = 16, fanout = 5, seed = 3 }
[[tiny.cases]]
graphs = ["u", "blk"]
ops = ["copy_u_sum", "u_dot_v"]
dims = [8]
"#,
    );
    let out = repo.join("run.json");
    let stdout = ok(bin()
        .env("GNNKERN_REPO", &repo)
        .args(["suite", "--name", "tiny", "--suites"])
        .arg(&suites)
        .arg("--out")
        .arg(&out));
    assert!(stdout.contains("u|copy_u_sum|d8|h0|t1") && stdout.contains("wrote"), "{stdout}");
    let run: RunFile = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(run.suite, "tiny");
    assert_eq!(run.results.len(), 4, "{:?}", run.skipped);
    assert!(run.finished.is_some() && run.calibration_gbps.len() == 2);
    let block = run.results.iter().find(|r| r.graph == "blk").unwrap();
    assert_eq!(block.dst_nodes, 16);
    assert!(block.edges <= 16 * 5 && block.nodes > 16);
    assert!(run.results.iter().all(|r| r.pct_of_triad.is_some()));

    // Resuming a finished run re-times nothing.
    let stdout = ok(bin()
        .env("GNNKERN_REPO", &repo)
        .args(["suite", "--name", "tiny", "--suites"])
        .arg(&suites)
        .arg("--resume")
        .arg(&out));
    assert!(stdout.contains("wrote"));
    let again: RunFile = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(again.results, run.results);
}

/// A `suite --peers` set-up on one small graph whose peers are a stand-in
/// interpreter: a shell script called as `python peer_op.py --peer NAME
/// --serve --threads T`, with `FAKE_PEER_LOG` (a file it may log to) and
/// `FAKE_PEER_RUN` (the run file) in its environment.
struct FakePeerSuite {
    repo: PathBuf,
    suites: PathBuf,
    python: PathBuf,
    log: PathBuf,
    out: PathBuf,
}

impl FakePeerSuite {
    /// `peers`, `ops` and `dims` are TOML arrays.
    fn new(name: &str, peers: &str, ops: &str, dims: &str, python_sh: &str) -> FakePeerSuite {
        use std::os::unix::fs::PermissionsExt;
        let (repo, suites) = suite_repo(
            name,
            &format!(
                "[tiny]\ndescription = \"test\"\nreps = 1\nthreads = [1]\nbackends = [\"auto\"]\ncalibration_mib = 4\n\
                 peers = {peers}\n[tiny.graphs]\nu = \"uniform:200:1500:1\"\n\
                 [[tiny.cases]]\ngraphs = [\"u\"]\nops = {ops}\ndims = {dims}\n"
            ),
        );
        let python = repo.join("python");
        std::fs::write(&python, python_sh).unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        FakePeerSuite { log: repo.join("starts.log"), out: repo.join("run.json"), repo, suites, python }
    }

    /// Runs the suite with `--out` or `--resume` on the run file; returns the run.
    fn run(&self, out_flag: &str) -> RunFile {
        ok(bin()
            .env("GNNKERN_REPO", &self.repo)
            .env("GNNKERN_PEERS_PYTHON", &self.python)
            .env("GNNKERN_BENCH_CACHE", self.repo.join("graphs"))
            .env("FAKE_PEER_LOG", &self.log)
            .env("FAKE_PEER_RUN", &self.out)
            .args(["suite", "--name", "tiny", "--peers", "--suites"])
            .arg(&self.suites)
            .arg(out_flag)
            .arg(&self.out));
        serde_json::from_str(&std::fs::read_to_string(&self.out).unwrap()).unwrap()
    }

    /// The lines the stand-in logged.
    fn log_lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log).map_or_else(|_| Vec::new(), |s| s.lines().map(String::from).collect())
    }
}

/// With `--peers`, each case is prepared on gnnkern and on every peer
/// before the next case starts, and each peer is one process for the whole
/// run. The stand-in interpreter answers every case with a skip whose reason
/// counts the gnnkern results the run file held when the case reached it:
/// the earlier cases', not yet this one's (gnnkern times it after the peers
/// have prepared it).
#[test]
fn suite_prepares_each_case_on_the_peers_with_gnnkern() {
    let suite = FakePeerSuite::new(
        "suite-peers",
        r#"["dgl", "torch_sparse"]"#,
        r#"["copy_u_sum", "u_dot_v"]"#,
        "[8, 16]",
        r#"#!/bin/sh
echo "$3" >> "$FAKE_PEER_LOG"
while IFS= read -r line; do
  op=$(echo "$line" | sed 's/.*"op":"\([^"]*\)".*/\1/')
  dim=$(echo "$line" | sed 's/.*"dim":\([0-9]*\).*/\1/')
  n=$(grep -o '"tool": *"gnnkern"' "$FAKE_PEER_RUN" | wc -l | tr -d ' ')
  echo "{\"case\": \"u|$op|d$dim|h0|t1\", \"skipped\": \"after $n gnnkern results\"}"
done
"#,
    );
    let run = suite.run("--out");
    let ours: Vec<String> = run.results.iter().filter(|r| r.tool == "gnnkern").map(|r| r.case_key()).collect();
    assert_eq!(ours.len(), 4, "{:?}", run.skipped);
    for peer in ["dgl", "torch_sparse"] {
        let reasons: Vec<(String, String)> =
            run.skipped.iter().filter(|s| s.tool == peer).map(|s| (s.case.clone(), s.reason.clone())).collect();
        let expected: Vec<(String, String)> =
            ours.iter().enumerate().map(|(i, key)| (key.clone(), format!("after {i} gnnkern results"))).collect();
        assert_eq!(reasons, expected, "{peer} prepared each case with gnnkern");
    }
    assert_eq!(suite.log_lines(), ["dgl", "torch_sparse"], "one process per peer");

    // Resuming re-times nothing: the peers' skips count as done.
    std::fs::remove_file(&suite.log).unwrap();
    suite.run("--resume");
    assert!(suite.log_lines().is_empty(), "no peer process was started");
}

/// With peers that take part, a case's calls alternate in slices: every
/// tool prepares the case, then each times one slice in turn (after its
/// untimed calls: at least one, `1+` in the log), `rounds` times, then each
/// reports; the run file keeps each tool's slice medians.
#[test]
fn suite_alternates_slices_of_a_case_between_gnnkern_and_the_peers() {
    let suite = FakePeerSuite::new(
        "suite-slices",
        r#"["dgl", "torch_sparse"]"#,
        r#"["copy_u_sum", "u_dot_v"]"#,
        "[8]",
        r#"#!/bin/sh
name=$3
while IFS= read -r line; do
  case "$line" in
    *'"prepare"'*)
      op=$(echo "$line" | sed 's/.*"op":"\([^"]*\)".*/\1/')
      dim=$(echo "$line" | sed 's/.*"dim":\([0-9]*\).*/\1/')
      echo "$name prepare $op" >> "$FAKE_PEER_LOG"
      echo "{\"prepared\": \"u|$op|d$dim|h0|t1\"}" ;;
    *'"calls"'*)
      n=$(echo "$line" | sed 's/.*"calls":\([0-9]*\).*/\1/')
      u=$(echo "$line" | sed 's/.*"untimed":\([0-9]*\).*/\1/')
      echo "$name calls $u+$n" >> "$FAKE_PEER_LOG"
      t=""; i=0; while [ $i -lt $n ]; do t="$t${t:+, }2.0"; i=$((i+1)); done
      echo "{\"times_ms\": [$t]}" ;;
    *'"finish"'*)
      echo "$name finish" >> "$FAKE_PEER_LOG"
      echo "{\"tool\": \"$name\", \"op\": \"$op\", \"graph\": \"u\", \"nodes\": 200, \"dst_nodes\": 200, \"edges\": 1500, \"dim\": $dim, \"heads\": null, \"threads\": 1, \"backend\": \"$name\", \"isa\": \"fake\", \"reps\": 4, \"median_ms\": 2.0, \"min_ms\": 2.0, \"max_ms\": 2.0, \"flops\": 1, \"gflops\": 1.0, \"model_bytes\": 1, \"gbps\": 1.0, \"pct_of_triad\": null, \"peak_rss_mb\": null, \"out_shape\": [200, $dim], \"checksum\": 0.0, \"checksum_abs\": 0.0, \"machine\": {\"cpu\": \"fake\", \"vendor\": \"fake\", \"cores\": 2}}" ;;
  esac
done
"#,
    );
    let text = std::fs::read_to_string(&suite.suites).unwrap().replace("reps = 1\n", "reps = 4\nrounds = 3\n");
    std::fs::write(&suite.suites, text).unwrap();
    let run = suite.run("--out");
    assert!(run.skipped.is_empty(), "{:?}", run.skipped);
    let mut expected = Vec::new();
    for op in ["copy_u_sum", "u_dot_v"] {
        expected.extend([format!("dgl prepare {op}"), format!("torch_sparse prepare {op}")]);
        for n in [2, 1, 1] {
            expected.extend([format!("dgl calls 1+{n}"), format!("torch_sparse calls 1+{n}")]);
        }
        expected.extend(["dgl finish".to_string(), "torch_sparse finish".to_string()]);
    }
    assert_eq!(suite.log_lines(), expected);
    assert_eq!(run.results.len(), 6);
    for r in &run.results {
        let slices = r.slice_medians_ms.as_ref().unwrap_or_else(|| panic!("{} {}: no slices", r.tool, r.op));
        assert_eq!(slices.len(), 3, "{} {}", r.tool, r.op);
        if r.tool == "gnnkern" {
            assert_eq!(r.reps, 4);
            assert!(slices.iter().all(|&ms| ms > 0.0 && ms <= r.max_ms));
        } else {
            assert_eq!(slices, &[2.0, 2.0, 2.0]);
        }
    }
}

/// A peer that dies at every case is restarted twice, then given up: its
/// remaining cases are skipped naming the last failure, without a restart.
#[test]
fn suite_gives_up_on_a_peer_that_keeps_failing() {
    let suite = FakePeerSuite::new(
        "suite-broken-peer",
        r#"["dgl"]"#,
        r#"["copy_u_sum", "copy_u_max", "u_dot_v", "u_add_v"]"#,
        "[8]",
        "#!/bin/sh\necho start >> \"$FAKE_PEER_LOG\"\necho 'ModuleNotFoundError: dgl' >&2\nexit 1\n",
    );
    let run = suite.run("--out");
    assert_eq!(suite.log_lines().len(), 3, "two restarts, then none");
    assert_eq!(run.results.iter().filter(|r| r.tool == "gnnkern").count(), 4);
    let reasons: Vec<&str> = run.skipped.iter().filter(|s| s.tool == "dgl").map(|s| s.reason.as_str()).collect();
    assert_eq!(reasons.len(), 4, "{reasons:?}");
    assert!(reasons[..3].iter().all(|r| r.contains("ModuleNotFoundError: dgl")), "{reasons:?}");
    assert!(
        reasons[3].starts_with("not run: the peer failed 3 times in a row")
            && reasons[3].contains("ModuleNotFoundError")
    );
}
