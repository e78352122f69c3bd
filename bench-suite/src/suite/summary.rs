//! The table printed at the end of a suite run.

use crate::compare::{OUR_COLUMNS, PEERS, rows};
use crate::runfile::RunFile;
use crate::table::render;

/// The end-of-run table: one line per case with gnnkern's time and rates,
/// each peer's time and the speedup over DGL.
pub fn summary_table(run: &RunFile) -> String {
    let rows = rows(run);
    let peers: Vec<&str> = PEERS.iter().copied().filter(|p| rows.iter().any(|r| r.peers.contains_key(p))).collect();
    let mut headers: Vec<String> = std::iter::once("case").chain(OUR_COLUMNS).map(String::from).collect();
    headers.extend(peers.iter().map(|p| format!("{p} ms")));
    if peers.contains(&"dgl") {
        headers.push("vs dgl".into());
    }
    if !peers.is_empty() {
        headers.push("check".into());
    }
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.key.clone()];
            cells.extend(row.cells(&peers, "DIFFERS"));
            cells
        })
        .collect();
    let mut out = render(&headers, &body);
    if !run.skipped.is_empty() {
        out.push_str(&format!("\n{} case(s) skipped:\n", run.skipped.len()));
        for s in &run.skipped {
            out.push_str(&format!("  {} [{}]: {}\n", s.case, s.tool, s.reason));
        }
    }
    out
}
