//! The model suite's epoch times on the dashboard: the newest gnnkern and
//! DGL result of every (model, graph, threads) in `perf-reports/models/*.jsonl`
//! (one JSON object per line, as `gnnkern-bench train --json`,
//! `train_dgl.py --json` and `run_epoch_compare.sh` write them).

use crate::error::{BenchError, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The fields of one `train --json` line the dashboard shows.
#[derive(Clone, Debug, Deserialize)]
pub struct ModelLine {
    /// `gnnkern` or `dgl`.
    pub framework: String,
    pub model: String,
    pub graph: String,
    pub threads: usize,
    pub epoch_ms: f64,
    pub infer_ms: f64,
    pub sparse_ms: Option<f64>,
    pub dense_ms: Option<f64>,
    pub other_ms: Option<f64>,
    #[serde(default)]
    pub machine: Option<String>,
    #[serde(default)]
    pub date: Option<String>,
}

/// gnnkern's and DGL's newest line for one (model, graph, threads).
#[derive(Debug, Default)]
pub struct ModelRow {
    pub gnnkern: Option<ModelLine>,
    pub dgl: Option<ModelLine>,
}

/// Reads every `*.jsonl` of `dir` (a missing folder is no results), files
/// in name order (dated names), and keeps the last line per key and framework.
pub fn load(dir: &Path) -> Result<BTreeMap<(String, String, usize), ModelRow>> {
    let mut rows: BTreeMap<(String, String, usize), ModelRow> = BTreeMap::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(rows),
        Err(e) => return Err(BenchError::io(dir, e)),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| BenchError::io(dir, e))?.path();
        if path.extension().is_some_and(|x| x == "jsonl") {
            files.push(path);
        }
    }
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| BenchError::io(&file, e))?;
        for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let m: ModelLine = serde_json::from_str(line)
                .map_err(|e| BenchError::format(&file, format!("line {}: not a train result: {e}", i + 1)))?;
            let row = rows.entry((m.model.clone(), m.graph.clone(), m.threads)).or_default();
            match m.framework.as_str() {
                "gnnkern" => row.gnnkern = Some(m),
                "dgl" => row.dgl = Some(m),
                _ => {}
            }
        }
    }
    Ok(rows)
}

fn ms(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), |v| format!("{v:.0}"))
}

fn split(m: &Option<ModelLine>) -> String {
    m.as_ref().map_or_else(|| "-".into(), |m| format!("{} / {} / {}", ms(m.sparse_ms), ms(m.dense_ms), ms(m.other_ms)))
}

/// One table row's cells: model, graph, threads, epoch ms (ours, DGL),
/// speed-up, inference ms (ours, DGL), splits (ours, DGL), date and machine
/// of our line.
fn cells((model, graph, threads): &(String, String, usize), r: &ModelRow) -> Vec<String> {
    let (g, d) = (r.gnnkern.as_ref(), r.dgl.as_ref());
    let speedup = match (g, d) {
        (Some(g), Some(d)) if g.epoch_ms > 0.0 => format!("{:.2}x", d.epoch_ms / g.epoch_ms),
        _ => "-".into(),
    };
    let when = g.or(d).map_or_else(String::new, |m| {
        format!("{} {}", m.date.as_deref().unwrap_or(""), m.machine.as_deref().unwrap_or("")).trim().to_string()
    });
    vec![
        model.clone(),
        graph.clone(),
        threads.to_string(),
        ms(g.map(|m| m.epoch_ms)),
        ms(d.map(|m| m.epoch_ms)),
        speedup,
        ms(g.map(|m| m.infer_ms)),
        ms(d.map(|m| m.infer_ms)),
        split(&r.gnnkern),
        split(&r.dgl),
        when,
    ]
}

const HEADER: [&str; 11] = [
    "model",
    "graph",
    "threads",
    "gnnkern epoch ms",
    "DGL epoch ms",
    "vs DGL",
    "gnnkern infer ms",
    "DGL infer ms",
    "gnnkern sparse / dense / other",
    "DGL sparse / dense / other",
    "date, machine",
];

const NOTE: &str = "Median epoch time of each model's newest result per framework in perf-reports/models/*.jsonl \
    (gnnkern-bench train --json, bench-suite/peers/models/train_dgl.py --json); vs DGL = DGL epoch / gnnkern epoch. \
    Commands and conditions: perf-reports/models/README.md.";

/// The markdown section (empty without results).
pub fn markdown(rows: &BTreeMap<(String, String, usize), ModelRow>) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut s = format!("\n## Model suite: epoch time vs DGL\n\n{NOTE}\n\n| {} |\n", HEADER.join(" | "));
    s.push_str(&format!("|{}\n", "---|".repeat(HEADER.len())));
    for (k, r) in rows {
        s.push_str(&format!("| {} |\n", cells(k, r).join(" | ")));
    }
    s
}

/// The HTML section (empty without results); `esc` escapes text.
pub fn html(rows: &BTreeMap<(String, String, usize), ModelRow>, esc: impl Fn(&str) -> String) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut h = format!("<h2>Model suite: epoch time vs DGL</h2><p class=\"note\">{}</p><table><tr>", esc(NOTE));
    for c in HEADER {
        let _ = write!(h, "<th>{}</th>", esc(c));
    }
    h.push_str("</tr>");
    for (k, r) in rows {
        h.push_str("<tr>");
        for c in cells(k, r) {
            let _ = write!(h, "<td>{}</td>", esc(&c));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newest_line_per_framework_wins_and_speedup_is_dgl_over_ours() {
        let dir = std::env::temp_dir().join(format!("gnnkern-models-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let line = |fw: &str, epoch: f64| {
            format!(
                r#"{{"framework":"{fw}","model":"gcn","graph":"rmat:20:16:1","threads":2,"epoch_ms":{epoch},"infer_ms":10.0,"sparse_ms":1.0,"dense_ms":2.0,"other_ms":3.0,"date":"2026-11-25"}}"#
            )
        };
        std::fs::write(dir.join("2026-11-23-a.jsonl"), format!("{}\n{}\n", line("gnnkern", 500.0), line("dgl", 900.0)))
            .unwrap();
        std::fs::write(dir.join("2026-11-25-a.jsonl"), format!("{}\n\n", line("gnnkern", 300.0))).unwrap();
        let rows = load(&dir).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[&("gcn".to_string(), "rmat:20:16:1".to_string(), 2)];
        assert_eq!(r.gnnkern.as_ref().unwrap().epoch_ms, 300.0);
        assert_eq!(r.dgl.as_ref().unwrap().epoch_ms, 900.0);
        let md = markdown(&rows);
        assert!(md.contains("| gcn | rmat:20:16:1 | 2 | 300 | 900 | 3.00x |"), "{md}");
        std::fs::write(dir.join("2026-11-26-bad.jsonl"), "{\"framework\": 1}\n").unwrap();
        let err = load(&dir).unwrap_err().to_string();
        assert!(err.contains("2026-11-26-bad.jsonl") && err.contains("line 1"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
