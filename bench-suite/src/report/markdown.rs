//! `perf-reports/LATEST.md`: the newest run as a markdown table with the
//! peers side by side.

use super::LoadedRun;
use crate::compare::{OUR_COLUMNS, PEERS, geomean, rows};

/// The markdown page for `latest`.
pub fn latest(latest: &LoadedRun) -> String {
    let run = &latest.run;
    let rows = rows(run);
    let peers: Vec<&str> = PEERS.iter().copied().filter(|p| rows.iter().any(|r| r.peers.contains_key(p))).collect();
    let mut s = String::new();
    s.push_str("# Latest benchmark run\n\n");
    s.push_str(&format!(
        "- run file: `perf-reports/runs/{}` (suite `{}`, git `{}`, started {}{})\n",
        latest.file_name(),
        run.suite,
        run.git_rev,
        run.started,
        run.finished.as_ref().map_or_else(|| ", unfinished".to_string(), |f| format!(", finished {f}"))
    ));
    s.push_str(&format!(
        "- machine: {} ({}, {} logical CPUs)\n",
        run.machine.cpu, run.machine.vendor, run.machine.cores
    ));
    if let Some(policy) = &run.machine.huge_pages {
        s.push_str(&format!("- transparent huge pages: {policy} (gnnkern and peers alike)\n"));
    }
    let triad: Vec<String> =
        run.triad_gbps.iter().map(|t| format!("{:.1} GB/s at {} threads", t.gbps, t.threads)).collect();
    s.push_str(&format!(
        "- triad bandwidth: {}\n",
        if triad.is_empty() { "not measured".into() } else { triad.join(", ") }
    ));
    if !run.calibration_gbps.is_empty() {
        let series: Vec<String> = run.calibration_gbps.iter().map(|g| format!("{g:.1}")).collect();
        s.push_str(&format!(
            "- this run's calibration triads, start → end: {} GB/s (on a shared machine memory speed can move during a run)\n",
            series.join(" → ")
        ));
    }
    s.push_str(&format!("- reproduce: `{}`\n", run.command));
    s.push_str("- times are medians in ms; GB/s and %triad use the minimum-traffic model of docs/BENCHMARKS.md; ");
    s.push_str("`%triad trav.` uses the bytes gnnkern's own traversal moves through a cache of the machine's size ");
    s.push_str("(\"Two traffic models\" there); ");
    s.push_str("`peak MiB` = gnnkern's peak resident memory over the case (inputs included); ");
    s.push_str("`vs DGL` = DGL time / gnnkern time; `check` = output checksums of all tools agree\n\n");

    let mut header: Vec<&str> = std::iter::once("case").chain(OUR_COLUMNS).collect();
    let peer_headers: Vec<String> = peers.iter().map(|p| format!("{p} ms")).collect();
    header.extend(peer_headers.iter().map(String::as_str));
    if peers.contains(&"dgl") {
        header.push("vs DGL");
    }
    if !peers.is_empty() {
        header.push("check");
    }
    s.push_str(&format!("| {} |\n", header.join(" | ")));
    s.push_str(&format!(
        "|{}\n",
        header.iter().enumerate().map(|(i, _)| if i == 0 { "---|" } else { "---:|" }).collect::<String>()
    ));
    for row in &rows {
        let mut cells = vec![format!("`{}`", row.key)];
        cells.extend(row.cells(&peers, "**differs**"));
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s.push('\n');
    for p in &peers {
        if let Some(g) = geomean(rows.iter().filter_map(|r| r.speedup_vs(p))) {
            let n = rows.iter().filter(|r| r.speedup_vs(p).is_some()).count();
            s.push_str(&format!("Geometric-mean speedup of gnnkern over {p}: **{g:.2}x** ({n} cases).\n\n"));
        }
    }
    if !run.skipped.is_empty() {
        s.push_str("## Not timed\n\n");
        for sk in &run.skipped {
            s.push_str(&format!("- `{}` [{}]: {}\n", sk.case, sk.tool, sk.reason.replace('\n', " ")));
        }
        s.push('\n');
    }
    s.push_str("Regenerate with `gnnkern-bench report`; the dashboard is `perf-reports/index.html`.\n");
    s
}
