//! `gnnkern-bench report`: the dashboard `perf-reports/index.html` (one
//! self-contained page of inline SVG: no scripts, no external assets) and
//! `perf-reports/LATEST.md`, both from the run files in `perf-reports/runs/`
//! and the model suite's results in `perf-reports/models/*.jsonl`.

mod html;
mod markdown;
mod models;
mod svg;

use crate::error::{BenchError, Result};
use crate::runfile::{RunFile, read_json};
use std::path::{Path, PathBuf};

/// A run file and where it was read from.
pub struct LoadedRun {
    pub path: PathBuf,
    pub run: RunFile,
}

impl LoadedRun {
    /// The file name, for links and captions.
    pub fn file_name(&self) -> String {
        self.path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    }
}

/// Every `*.json` run in `dir`, oldest first (by start time, then name).
pub fn load_runs(dir: &Path) -> Result<Vec<LoadedRun>> {
    let entries = std::fs::read_dir(dir).map_err(|e| BenchError::io(dir, e))?;
    let mut runs = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| BenchError::io(dir, e))?.path();
        if path.extension().is_some_and(|x| x == "json") {
            runs.push(LoadedRun { run: read_json(&path)?, path });
        }
    }
    runs.sort_by(|a, b| (&a.run.started, a.file_name()).cmp(&(&b.run.started, b.file_name())));
    Ok(runs)
}

/// What `report` wrote.
pub struct Written {
    pub html: PathBuf,
    pub markdown: PathBuf,
    pub latest: PathBuf,
    pub runs: usize,
}

/// Regenerates `index.html` and `LATEST.md` in `reports` from `reports/runs/`
/// and `reports/models/`.
pub fn generate(reports: &Path) -> Result<Written> {
    let runs_dir = reports.join("runs");
    let runs = load_runs(&runs_dir)?;
    let latest = runs
        .last()
        .ok_or_else(|| BenchError::format(&runs_dir, "holds no run files (*.json); run `gnnkern-bench suite` first"))?;
    // History: runs of the same suite on the same machine as the newest one.
    let history: Vec<&LoadedRun> = runs
        .iter()
        .filter(|r| r.run.suite == latest.run.suite && r.run.machine.slug == latest.run.machine.slug)
        .collect();
    let html = reports.join("index.html");
    let markdown = reports.join("LATEST.md");
    let model_rows = models::load(&reports.join("models"))?;
    let page = html::page(latest, &history, &runs, &models::html(&model_rows, svg::esc));
    crate::runfile::write_atomic(&html, page.as_bytes())?;
    let md = markdown::latest(latest) + &models::markdown(&model_rows);
    crate::runfile::write_atomic(&markdown, md.as_bytes())?;
    Ok(Written { html, markdown, latest: latest.path.clone(), runs: runs.len() })
}
