//! The dashboard page: inline SVG charts and tables, no scripts, no
//! external assets — it renders from a file:// URL or a CI artifact alike.

use super::LoadedRun;
use super::svg::{LogScale, Svg, esc, tick_label};
use crate::compare::{PEERS, geomean, rows};
use crate::runfile::{OpResult, RunFile};
use crate::table::ms;
use std::fmt::Write;

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:24px 32px;color:#1f2937;max-width:1320px}\
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}\
p.note{color:#4b5563;font-size:13px;margin:4px 0 8px}.meta{font-size:13px;color:#374151;line-height:1.6}\
.meta code,td code{background:#f3f4f6;padding:1px 4px;border-radius:3px}\
table{border-collapse:collapse;font-size:12px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right}\
th{background:#f9fafb;position:sticky;top:0}td:first-child,th:first-child{text-align:left}\
.legend span{display:inline-block;margin-right:16px;font-size:13px}.legend i{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px;border-radius:2px}\
.bad{color:#b91c1c;font-weight:600}.good{color:#15803d}.row{display:flex;gap:24px;flex-wrap:wrap}";

/// Colour of a series.
fn color(series: &str) -> &'static str {
    match series {
        "dgl" => "#f97316",
        "pyg" => "#16a34a",
        "torch_sparse" => "#9333ea",
        s if s.starts_with("gnnkern-reference") => "#93c5fd",
        s if s.starts_with("gnnkern") => "#2563eb",
        _ => "#6b7280",
    }
}

/// Distinct case keys of a run, in result order.
fn case_keys(run: &RunFile) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for r in &run.results {
        let k = r.case_key();
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

/// Series present in a run: gnnkern backends first, then peers in report order.
fn series(run: &RunFile) -> Vec<String> {
    let mut ours: Vec<String> = run.results.iter().filter(|r| r.tool == "gnnkern").map(OpResult::series).collect();
    ours.sort();
    ours.dedup();
    ours.extend(PEERS.iter().filter(|p| run.results.iter().any(|r| r.tool == **p)).map(|p| p.to_string()));
    ours
}

/// The whole page.
/// `models`: the model suite's section, already rendered (may be empty).
pub fn page(latest: &LoadedRun, history: &[&LoadedRun], all: &[LoadedRun], models: &str) -> String {
    let run = &latest.run;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gnnkern benchmarks</title><style>{CSS}</style></head><body>"
    );
    h.push_str("<h1>gnnkern benchmark dashboard</h1>");
    let triad: Vec<String> = run.triad_gbps.iter().map(|t| format!("{:.1} GB/s @ {}T", t.gbps, t.threads)).collect();
    let _ = write!(
        h,
        "<div class=\"meta\">Latest run <code>{}</code> &middot; suite <b>{}</b> &middot; git <code>{}</code> &middot; started {}<br>\
         Machine: {} ({}, {} logical CPUs) &middot; triad {} &middot; {} results, {} not timed<br>Reproduce: <code>{}</code></div>",
        esc(&latest.file_name()),
        esc(&run.suite),
        esc(&run.git_rev),
        esc(&run.started),
        esc(&run.machine.cpu),
        esc(&run.machine.vendor),
        run.machine.cores,
        esc(&triad.join(", ")),
        run.results.len(),
        run.skipped.len(),
        esc(&run.command)
    );
    let names = series(run);
    h.push_str("<p class=\"legend\">");
    for s in &names {
        let _ = write!(h, "<span><i style=\"background:{}\"></i>{}</span>", color(s), esc(s));
    }
    h.push_str("</p>");

    h.push_str("<h2>Time per case</h2><p class=\"note\">Median of the timed repetitions, log scale; shorter is faster. Hover a bar for its value.</p>");
    h.push_str(&time_chart(run, &names));

    if run.results.iter().any(|r| r.tool == "dgl") {
        h.push_str("<h2>Speedup over DGL 2.1</h2><p class=\"note\">DGL time / gnnkern time per case, log scale; right of 1&times; (green) gnnkern is faster.</p>");
        h.push_str(&speedup_chart(run));
    }

    h.push_str("<h2>History across revisions</h2>");
    let _ = write!(
        h,
        "<p class=\"note\">The {} run(s) of suite <b>{}</b> on this machine, oldest first. Left: geometric mean over the latest run's cases of \
         gnnkern's time relative to the latest run (below 1 = faster than then). Right: geometric-mean speedup over each peer.</p>",
        history.len(),
        esc(&run.suite)
    );
    h.push_str("<div class=\"row\">");
    h.push_str(&history_chart(history));
    h.push_str(&peer_history_chart(history));
    h.push_str("</div>");

    h.push_str("<h2>All cases of the latest run</h2>");
    h.push_str(&case_table(latest, history));

    if !run.skipped.is_empty() {
        h.push_str("<h2>Not timed</h2><ul class=\"note\">");
        for s in &run.skipped {
            let _ = write!(h, "<li><code>{}</code> [{}]: {}</li>", esc(&s.case), esc(&s.tool), esc(&s.reason));
        }
        h.push_str("</ul>");
    }
    h.push_str(models);
    h.push_str("<h2>Run files</h2><ul class=\"note\">");
    for r in all.iter().rev() {
        let _ = write!(
            h,
            "<li><code>runs/{}</code> &middot; {} &middot; {} &middot; git {} &middot; {} results</li>",
            esc(&r.file_name()),
            esc(&r.run.suite),
            esc(&r.run.machine.slug),
            esc(&r.run.git_rev),
            r.run.results.len()
        );
    }
    h.push_str("</ul><p class=\"note\">Generated by <code>gnnkern-bench report</code>. Formulas and traffic models: docs/BENCHMARKS.md.</p></body></html>\n");
    h
}

const LABEL_W: f64 = 300.0;
const CHART_W: f64 = 1240.0;

fn time_chart(run: &RunFile, names: &[String]) -> String {
    let keys = case_keys(run);
    let bar_h = 7.0;
    let group_h = bar_h * names.len() as f64 + 8.0;
    let top = 24.0;
    let height = top + group_h * keys.len() as f64 + 8.0;
    let scale = LogScale::covering(run.results.iter().map(|r| r.median_ms), LABEL_W, CHART_W - 70.0);
    let mut svg = Svg::new(CHART_W, height);
    for t in scale.ticks() {
        let x = scale.at(t);
        svg.line(x, top - 4.0, x, height - 6.0, "#e5e7eb", 1.0);
        svg.text(x, top - 8.0, &format!("{} ms", tick_label(t)), "middle", 11.0, "#6b7280");
    }
    for (i, key) in keys.iter().enumerate() {
        let y0 = top + group_h * i as f64;
        if i % 2 == 1 {
            svg.rect(0.0, y0, CHART_W, group_h, "#f9fafb", "");
        }
        svg.text(LABEL_W - 8.0, y0 + group_h / 2.0 + 4.0, key, "end", 12.0, "#111827");
        for (j, s) in names.iter().enumerate() {
            let Some(r) = run.results.iter().find(|r| &r.case_key() == key && &r.series() == s) else { continue };
            let y = y0 + 4.0 + bar_h * j as f64;
            let x1 = scale.at(r.median_ms);
            svg.rect(LABEL_W, y, x1 - LABEL_W, bar_h - 1.0, color(s), &format!("{s}: {} ms", ms(r.median_ms)));
            svg.text(x1 + 4.0, y + bar_h - 1.5, &ms(r.median_ms), "start", 8.0, "#374151");
        }
    }
    svg.line(LABEL_W, top - 4.0, LABEL_W, height - 6.0, "#9ca3af", 1.0);
    svg.finish()
}

fn speedup_chart(run: &RunFile) -> String {
    let rows: Vec<_> = rows(run).into_iter().filter_map(|r| r.speedup_vs("dgl").map(|s| (r, s))).collect();
    let row_h = 16.0;
    let top = 24.0;
    let height = top + row_h * rows.len() as f64 + 10.0;
    let extreme = rows.iter().map(|(_, s)| s.log2().abs()).fold(2.0f64, f64::max).ceil();
    let (x0, x1) = (LABEL_W, CHART_W - 70.0);
    let at = |s: f64| x0 + (s.log2() + extreme) / (2.0 * extreme) * (x1 - x0);
    let mut svg = Svg::new(CHART_W, height);
    let mut e = -extreme;
    while e <= extreme {
        let x = at(2f64.powf(e));
        svg.line(x, top - 4.0, x, height - 6.0, if e == 0.0 { "#6b7280" } else { "#e5e7eb" }, 1.0);
        let label = if e >= 0.0 { format!("{}x", 2f64.powf(e)) } else { format!("1/{}x", 2f64.powf(-e)) };
        svg.text(x, top - 8.0, &label, "middle", 11.0, "#6b7280");
        e += 1.0;
    }
    for (i, (row, s)) in rows.iter().enumerate() {
        let y = top + row_h * i as f64;
        svg.text(x0 - 8.0, y + row_h / 2.0 + 4.0, &row.key, "end", 12.0, "#111827");
        let (a, b) = (at(1.0), at(*s));
        let fill = if *s >= 1.0 { "#22c55e" } else { "#ef4444" };
        svg.rect(a.min(b), y + 3.0, (b - a).abs(), row_h - 5.0, fill, &format!("{s:.2}x"));
        let (tx, anchor) = if *s >= 1.0 { (b + 4.0, "start") } else { (b - 4.0, "end") };
        svg.text(tx, y + row_h / 2.0 + 4.0, &format!("{s:.2}x"), anchor, 11.0, "#111827");
    }
    svg.finish()
}

/// Small line chart of `points` (x index, y value) with a log y axis.
fn line_chart(title: &str, labels: &[String], lines: &[(String, &'static str, Vec<Option<f64>>)]) -> String {
    let (w, hgt) = (600.0, 260.0);
    let (l, r, t, b) = (56.0, 16.0, 28.0, 56.0);
    let values = lines.iter().flat_map(|(_, _, v)| v.iter().flatten().copied());
    let scale = LogScale::covering(values, hgt - b, t);
    let mut svg = Svg::new(w, hgt);
    svg.text(l, 16.0, title, "start", 13.0, "#111827");
    for tick in scale.ticks() {
        let y = scale.at(tick);
        svg.line(l, y, w - r, y, "#e5e7eb", 1.0);
        svg.text(l - 6.0, y + 4.0, &tick_label(tick), "end", 11.0, "#6b7280");
    }
    let n = labels.len().max(1);
    let xat = |i: usize| if n == 1 { (l + w - r) / 2.0 } else { l + (w - r - l) * i as f64 / (n - 1) as f64 };
    for (i, label) in labels.iter().enumerate() {
        svg.text(xat(i), hgt - b + 16.0, label, "middle", 10.0, "#374151");
    }
    for (k, (name, col, v)) in lines.iter().enumerate() {
        let pts: Vec<(f64, f64)> = v.iter().enumerate().filter_map(|(i, y)| y.map(|y| (xat(i), scale.at(y)))).collect();
        if pts.len() > 1 {
            svg.polyline(&pts, col, 2.0);
        }
        for (i, y) in v.iter().enumerate() {
            if let Some(y) = y {
                svg.circle(xat(i), scale.at(*y), 3.5, col, &format!("{name}: {y:.3}"));
            }
        }
        svg.rect(l + 150.0 * k as f64, hgt - 18.0, 10.0, 10.0, col, "");
        svg.text(l + 14.0 + 150.0 * k as f64, hgt - 9.0, name, "start", 11.0, "#374151");
    }
    svg.finish()
}

fn run_label(r: &LoadedRun) -> String {
    format!("{} {}", r.run.git_rev.chars().take(13).collect::<String>(), r.run.started.get(5..10).unwrap_or(""))
}

fn history_chart(history: &[&LoadedRun]) -> String {
    let Some(latest) = history.last() else { return String::new() };
    let ours = |run: &RunFile| -> Vec<(String, f64)> {
        run.results
            .iter()
            .filter(|r| r.tool == "gnnkern")
            .map(|r| (format!("{}{}", r.case_key(), r.series()), r.median_ms))
            .collect()
    };
    let reference = ours(&latest.run);
    let rel: Vec<Option<f64>> = history
        .iter()
        .map(|h| {
            let theirs = ours(&h.run);
            geomean(reference.iter().filter_map(|(k, t)| theirs.iter().find(|(k2, _)| k2 == k).map(|(_, t2)| t2 / t)))
        })
        .collect();
    let labels: Vec<String> = history.iter().map(|r| run_label(r)).collect();
    line_chart("gnnkern time relative to the latest run", &labels, &[("gnnkern".into(), "#2563eb", rel)])
}

fn peer_history_chart(history: &[&LoadedRun]) -> String {
    let labels: Vec<String> = history.iter().map(|r| run_label(r)).collect();
    let lines: Vec<(String, &'static str, Vec<Option<f64>>)> = PEERS
        .iter()
        .map(|p| {
            let v = history.iter().map(|h| geomean(rows(&h.run).iter().filter_map(|r| r.speedup_vs(p)))).collect();
            (format!("vs {p}"), color(p), v)
        })
        .filter(|(_, _, v): &(String, &str, Vec<Option<f64>>)| v.iter().any(Option::is_some))
        .collect();
    if lines.is_empty() {
        return "<p class=\"note\">No peer results yet: run <code>gnnkern-bench suite --quick --peers</code>.</p>"
            .into();
    }
    line_chart("geometric-mean speedup of gnnkern over peers", &labels, &lines)
}

fn sparkline(values: &[Option<f64>]) -> String {
    let pts: Vec<(usize, f64)> = values.iter().enumerate().filter_map(|(i, v)| v.map(|v| (i, v))).collect();
    if pts.len() < 2 {
        return String::new();
    }
    let (w, h) = (110.0, 20.0);
    let lo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = pts.iter().map(|p| p.1).fold(0.0, f64::max);
    let n = values.len().max(2) - 1;
    let at = |(i, v): (usize, f64)| {
        let y = if hi > lo { h - 3.0 - (v - lo) / (hi - lo) * (h - 6.0) } else { h / 2.0 };
        (3.0 + (w - 6.0) * i as f64 / n as f64, y)
    };
    let mut svg = Svg::new(w, h);
    let xy: Vec<(f64, f64)> = pts.iter().copied().map(at).collect();
    svg.polyline(&xy, "#2563eb", 1.5);
    if let Some(&(x, y)) = xy.last() {
        svg.circle(x, y, 2.5, "#2563eb", "");
    }
    svg.finish()
}

fn case_table(latest: &LoadedRun, history: &[&LoadedRun]) -> String {
    let run = &latest.run;
    let rows = rows(run);
    let peers: Vec<&str> = PEERS.iter().copied().filter(|p| rows.iter().any(|r| r.peers.contains_key(p))).collect();
    let mut h = String::from(
        "<table><tr><th>case</th><th>backend</th><th>isa</th><th>ms</th><th>GFLOP/s</th><th>GB/s</th><th>%triad</th><th>%triad traversal</th><th>RSS MiB</th>",
    );
    for p in &peers {
        let _ = write!(h, "<th>{p} ms</th>");
    }
    if peers.contains(&"dgl") {
        h.push_str("<th>vs DGL</th>");
    }
    if !peers.is_empty() {
        h.push_str("<th>checksums</th>");
    }
    h.push_str("<th>history (ms)</th></tr>");
    for row in &rows {
        let _ = write!(h, "<tr><td><code>{}</code></td>", esc(&row.key));
        match row.ours {
            Some(o) => {
                let _ = write!(
                    h,
                    "<td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td>",
                    esc(&o.backend),
                    esc(&o.isa),
                    ms(o.median_ms),
                    o.gflops,
                    o.gbps,
                    o.pct_of_triad.map_or("-".into(), |p| format!("{p:.0}%")),
                    o.traversal_pct_of_triad.map_or("-".into(), |p| format!("{p:.0}%")),
                    o.peak_rss_mb.map_or("-".into(), |m| format!("{m:.0}"))
                );
            }
            None => h.push_str(&"<td>-</td>".repeat(8)),
        }
        for p in &peers {
            let _ = write!(h, "<td>{}</td>", row.peers.get(p).map_or("-".into(), |r| ms(r.median_ms)));
        }
        if peers.contains(&"dgl") {
            let _ = match row.speedup_vs("dgl") {
                Some(s) => write!(h, "<td class=\"{}\">{s:.2}x</td>", if s >= 1.0 { "good" } else { "bad" }),
                None => write!(h, "<td>-</td>"),
            };
        }
        if !peers.is_empty() {
            h.push_str(match row.checksums_agree() {
                Some(true) => "<td class=\"good\">agree</td>",
                Some(false) => "<td class=\"bad\">DIFFER</td>",
                None => "<td>-</td>",
            });
        }
        let series = row.ours.map(OpResult::series);
        let values: Vec<Option<f64>> = history
            .iter()
            .map(|hr| {
                hr.run
                    .results
                    .iter()
                    .find(|r| r.tool == "gnnkern" && r.case_key() == row.key && Some(r.series()) == series)
                    .map(|r| r.median_ms)
            })
            .collect();
        let _ = write!(h, "<td>{}</td></tr>", sparkline(&values));
    }
    h.push_str("</table>");
    h
}
