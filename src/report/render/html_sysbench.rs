//! The sysbench section of the HTML report: per group the verdict
//! summary, the relative-QPS bar chart with interval whiskers, the QPS
//! table, the seeds' wide per-operation cost table (rows = tests, one
//! sub-row per target, absolute and relative columns) and the latency
//! percentiles, each group in a `div.grp` the filter can hide.

use std::fmt::Write as _;

use super::html::{band_class, l, n, table_tagged};
use super::svg::{self, BarSeries, color, esc};
use crate::report::cost::{seed_column_name, seed_columns};
use crate::report::format::{amount, interval_text, opt_amount, rel, rel_pm};
use crate::report::model::Report;
use crate::report::overview::group_anchor;
use crate::report::sysbench::{Cell, GroupSection, SysbenchSection};

pub(super) fn section(o: &mut String, r: &Report, s: &SysbenchSection) {
    o.push_str("<section id=\"sysbench\"><h2>Sysbench</h2>\n");
    if r.targets.len() > 1 {
        let _ = writeln!(
            o,
            "<p class=\"legend\">Relative QPS (rQPS) = QPS(target) / QPS(base {}); ± is half its \
             95 % interval (whiskers on the charts; hover a cell for its ends and method). \
             Green: faster, red: slower — the whole interval past 1 and the change at least {}%; \
             grey: no difference. One basis point is a change of 0.01 in rQPS. \
             Charts start at {:.2}.{}</p>",
            esc(&r.base),
            amount(r.min_effect * 100.0).trim_end_matches(".00"),
            r.chart_floor,
            r.interval_method
                .as_ref()
                .map(|m| format!(" Intervals: {}.", esc(m)))
                .unwrap_or_default()
        );
    }
    for g in &s.groups {
        group(o, r, s, g);
    }
    o.push_str("</section>\n");
}

fn group(o: &mut String, r: &Report, s: &SysbenchSection, g: &GroupSection) {
    let _ = writeln!(
        o,
        "<div class=\"grp\" data-group=\"{g}\"><h3 id=\"{a}\">{t}</h3>",
        g = g.group,
        a = group_anchor(g.group),
        t = esc(g.title)
    );
    if !g.summaries.is_empty() {
        o.push_str("<ul class=\"summary\">");
        for sum in &g.summaries {
            let _ = write!(
                o,
                "<li><b>{} ({})</b>: {}</li>",
                esc(&sum.column),
                esc(&sum.target),
                esc(&sum.text)
            );
        }
        o.push_str("</ul>\n");
        let categories: Vec<String> = g.tests.iter().map(|t| t.label.clone()).collect();
        let series: Vec<BarSeries> = r.targets[1..]
            .iter()
            .enumerate()
            .map(|(i, t)| BarSeries {
                name: format!("{} {}", t.column, t.label),
                color: color(i),
                values: g
                    .tests
                    .iter()
                    .map(|x| x.cells[i + 1].as_ref().and_then(|c| c.relative))
                    .collect(),
                intervals: g
                    .tests
                    .iter()
                    .map(|x| {
                        let iv = x.cells[i + 1].as_ref()?.interval?;
                        Some((iv.lo, iv.hi))
                    })
                    .collect(),
            })
            .collect();
        o.push_str(&svg::relative_bars(
            &format!("{}: relative QPS", g.title),
            &categories,
            &series,
            r.chart_floor,
            r.bands,
        ));
        o.push('\n');
    }
    let mut header = vec!["test".to_string(), format!("{} QPS", esc(&r.base))];
    for t in &r.targets[1..] {
        header.push(format!("{} QPS", esc(&t.label)));
        header.push(format!("{} rQPS", esc(&t.column)));
    }
    let rows: Vec<Vec<(String, String)>> = g
        .tests
        .iter()
        .map(|t| {
            let mut v = vec![l(&t.label)];
            for (i, c) in t.cells.iter().enumerate() {
                v.push(match c {
                    Some(c) if c.flagged() => (
                        "flag".into(),
                        format!("{} ! <small>{}</small>", amount(c.qps), c.status),
                    ),
                    Some(c) => n(amount(c.qps)),
                    None => n("-".into()),
                });
                if i > 0 {
                    v.push(match c.as_ref().and_then(|c| Some((c.relative?, c))) {
                        Some((x, c)) => (
                            band_class(c.band).into(),
                            match &c.interval {
                                Some(iv) => format!(
                                    "<span title=\"{}: {}\">{}</span>",
                                    c.verdict.unwrap_or("unknown"),
                                    esc(&interval_text(iv)),
                                    esc(&rel_pm(x, Some(iv)))
                                ),
                                None => format!(
                                    "<span title=\"{}\">{}</span>",
                                    c.verdict.unwrap_or("unknown"),
                                    rel(x)
                                ),
                            },
                        ),
                        None => n("-".into()),
                    });
                }
            }
            v
        })
        .collect();
    let tags: Vec<String> = g.tests.iter().map(|t| t.label.clone()).collect();
    table_tagged(o, "qps", &header, &rows, &tags);
    cost_table(o, r, s, g);
    latency_table(o, r, g);
    workload_table(o, r, g);
    statement_table(o, r, g);
    o.push_str("</div>\n");
}

/// The seeds' per-operation table: one row per test and target, the
/// absolute columns then each relative to the base.
fn cost_table(o: &mut String, r: &Report, s: &SysbenchSection, g: &GroupSection) {
    let (shown, absent) = s.cost_split();
    if !shown.is_empty() {
        let keys: Vec<&str> = shown.iter().map(|&k| s.cost_columns[k].key).collect();
        // Open, so it prints and reads as before; a reader can fold it away.
        let _ = writeln!(
            o,
            "<details class=\"cost\" open><summary>Cost per query: {}</summary>",
            keys.join(", ")
        );
        let order = seed_columns(&s.cost_columns, &s.cost_present);
        let names: Vec<&str> = order
            .iter()
            .map(|c| seed_column_name(&s.cost_columns, *c))
            .collect();
        let _ = write!(
            o,
            "<table class=\"cost\"><thead><tr><th class=\"l\" rowspan=\"2\">test</th><th class=\"l\" rowspan=\"2\">target</th><th colspan=\"{w}\">absolute</th>",
            w = names.len()
        );
        if r.targets.len() > 1 {
            let _ = write!(
                o,
                "<th colspan=\"{}\">relative to {}</th>",
                names.len(),
                esc(&r.base)
            );
        }
        o.push_str("</tr><tr>");
        let reps = if r.targets.len() > 1 { 2 } else { 1 };
        for _ in 0..reps {
            for name in &names {
                let _ = write!(o, "<th>{}</th>", esc(name));
            }
        }
        o.push_str("</tr></thead>");
        for t in &g.tests {
            let _ = write!(o, "<tbody class=\"t\" data-test=\"{}\">", esc(&t.label));
            for (i, c) in t.cells.iter().enumerate() {
                let _ = write!(
                    o,
                    "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td>",
                    if i == 0 { esc(&t.label) } else { String::new() },
                    esc(&r.targets[i].label)
                );
                let Some(c) = c else {
                    let _ = write!(
                        o,
                        "<td colspan=\"{}\">not run</td></tr>",
                        names.len() * reps
                    );
                    continue;
                };
                for k in &order {
                    let _ = write!(
                        o,
                        "<td>{}</td>",
                        k.map_or_else(|| amount(c.qps), |k| opt_amount(c.cost[k]))
                    );
                }
                if reps == 2 {
                    for k in &order {
                        o.push_str(&relative_cost_cell(i, c, *k));
                    }
                }
                o.push_str("</tr>");
            }
            o.push_str("</tbody>");
        }
        o.push_str("</table>\n<p class=\"legend\">cpu/o: host CPU µs per query (vmstat us+sy, client included); cs/o: context switches per query; r/o: storage reads per query; rKB/o, wKB/o: KB read, written per query; o/s: queries per second; srv/o, cli/o: server and client CPU µs per query. Relative cells: red = the cost is higher than the base's beyond its interval, green = lower.</p>\n</details>\n");
    }
    if !absent.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"legend\">Not stored for these runs (n/a): {}.</p>",
            absent.join(", ")
        );
    }
}

/// A relative cell of the cost table: `k` a cost column (red/green when
/// its interval says higher/lower) or `None` for the rate; empty for the
/// base (`i == 0`).
fn relative_cost_cell(i: usize, c: &Cell, k: Option<usize>) -> String {
    if i == 0 {
        return "<td></td>".into();
    }
    let Some(k) = k else {
        let text = c.relative.map_or("-".into(), rel);
        return format!("<td class=\"{}\">{text}</td>", band_class(c.band));
    };
    let cls = match c.cost_verdict[k] {
        Some("higher") => " class=\"slower\"",
        Some("lower") => " class=\"faster\"",
        _ => "",
    };
    let text = c.cost_relative[k].map_or("n/a".into(), rel);
    match (&c.cost_interval[k], c.cost_verdict[k]) {
        (Some(iv), Some(v)) => format!(
            "<td{cls} title=\"{v}: {}\">{text}</td>",
            esc(&interval_text(iv))
        ),
        _ => format!("<td{cls}>{text}</td>"),
    }
}

/// Event latency per test and target: p50, p95, p99 and max, µs.
fn latency_table(o: &mut String, r: &Report, g: &GroupSection) {
    o.push_str(
        "<details class=\"lat\"><summary>Latency per test (µs): p50, p95, p99, max</summary>",
    );
    let mut header = vec!["test".to_string()];
    for t in &r.targets {
        for p in ["p50", "p95", "p99", "max"] {
            header.push(format!("{} {p}", esc(&t.column)));
        }
    }
    let rows: Vec<Vec<(String, String)>> = g
        .tests
        .iter()
        .map(|t| {
            let mut v = vec![l(&t.label)];
            for c in &t.cells {
                match c {
                    Some(c) => {
                        v.extend([c.p50_us, c.p95_us, c.p99_us, c.max_us].map(|x| n(x.to_string())))
                    }
                    None => v.extend((0..4).map(|_| n("-".into()))),
                }
            }
            v
        })
        .collect();
    let tags: Vec<String> = g.tests.iter().map(|t| t.label.clone()).collect();
    table_tagged(o, "lat", &header, &rows, &tags);
    o.push_str("</details>\n");
}

/// A workload file's transactions by name, retries and failures by error
/// class per target; nothing for sysbench groups.
fn workload_table(o: &mut String, r: &Report, g: &GroupSection) {
    let mut rows = Vec::new();
    let mut tags = Vec::new();
    for t in &g.tests {
        for (c, target) in t.cells.iter().zip(&r.targets) {
            if let Some(counts) = c.as_ref().and_then(|c| c.workload.as_ref()) {
                rows.push(vec![
                    l(&t.label),
                    l(&target.label),
                    l(&crate::report::workload::summary(counts)),
                ]);
                tags.push(t.label.clone());
            }
        }
    }
    if rows.is_empty() {
        return;
    }
    o.push_str("<p>Transactions (measured interval; retries and failures by error class):</p>\n");
    let header = ["workload", "target", "transactions"].map(String::from);
    table_tagged(o, "wl", &header, &rows, &tags);
}

/// A workload file's statements and each target's mean latency per
/// execution; nothing for sysbench groups.
fn statement_table(o: &mut String, r: &Report, g: &GroupSection) {
    let mut rows = Vec::new();
    let mut tags = Vec::new();
    for t in &g.tests {
        for s in crate::report::workload::statement_rows(&t.workload_counts()) {
            let mut row = vec![
                l(&t.label),
                l(&s.key),
                (
                    "l".to_string(),
                    format!(
                        "<code title=\"{}\">{}</code>",
                        esc(&s.sql),
                        esc(&crate::report::workload::sql_excerpt(&s.sql, 60))
                    ),
                ),
            ];
            row.extend(s.mean_ms.iter().map(|m| n(opt_amount(*m))));
            rows.push(row);
            tags.push(t.label.clone());
        }
    }
    if rows.is_empty() {
        return;
    }
    o.push_str("<p>Statement latencies (mean ms per execution, measured interval):</p>\n");
    let mut header: Vec<String> = ["workload", "statement", "SQL"].map(String::from).to_vec();
    header.extend(r.targets.iter().map(|t| esc(&t.label)));
    table_tagged(o, "stmt", &header, &rows, &tags);
}
