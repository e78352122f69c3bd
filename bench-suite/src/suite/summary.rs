//! The table printed at the end of a suite run.

use crate::compare::{PEERS, rows};
use crate::runfile::RunFile;
use crate::table::{ms, render};

/// The end-of-run table: one line per case with gnnkern's time and rates,
/// each peer's time and the speedup over DGL.
pub fn summary_table(run: &RunFile) -> String {
    let rows = rows(run);
    let peers: Vec<&str> = PEERS.iter().copied().filter(|p| rows.iter().any(|r| r.peers.contains_key(p))).collect();
    let mut headers: Vec<String> =
        ["case", "backend", "ms", "GFLOP/s", "GB/s", "%triad"].iter().map(|s| s.to_string()).collect();
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
            match row.ours {
                Some(o) => cells.extend([
                    o.backend.clone(),
                    ms(o.median_ms),
                    format!("{:.2}", o.gflops),
                    format!("{:.2}", o.gbps),
                    o.pct_of_triad.map_or("-".into(), |p| format!("{p:.0}%")),
                ]),
                None => cells.extend(["-", "-", "-", "-", "-"].map(String::from)),
            }
            for p in &peers {
                cells.push(row.peers.get(p).map_or("-".into(), |r| ms(r.median_ms)));
            }
            if peers.contains(&"dgl") {
                cells.push(row.speedup_vs("dgl").map_or("-".into(), |s| format!("{s:.2}x")));
            }
            if !peers.is_empty() {
                cells.push(match row.checksums_agree() {
                    Some(true) => "ok".into(),
                    Some(false) => "DIFFERS".into(),
                    None => "-".into(),
                });
            }
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
