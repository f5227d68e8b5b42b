//! The report as one self-contained HTML file: inline CSS, inline SVG
//! charts, no scripts, no fonts or images from the network. It opens from a
//! file, a mail attachment or a static web server and reads the same
//! everywhere, and prints well.

use std::fmt::Write as _;

use anyhow::Result;

use super::Renderer;

use super::svg::{self, BarSeries, color, esc};
use crate::report::context::{
    common_by_family, no_differences, setting_cell, settings_legend, shared_by,
};
use crate::report::cost::CostColumn;
use crate::report::format::{amount, bp, host_line, interval_text, opt_amount, rel, rel_pm, secs};
use crate::report::model::{Band, Report};
use crate::report::plans::word_diff;
use crate::report::sysbench::{GroupSection, SysbenchSection, basis_points};

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0 auto;max-width:1200px;padding:16px 24px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:32px}
h3{font-size:15px;margin:24px 0 8px}p.meta{color:#666;margin:0 0 12px}
nav a{margin-right:14px}.notes{background:#fff6d6;border:1px solid #e8d48a;padding:8px 14px;margin:12px 0}
table{border-collapse:collapse;margin:8px 0 16px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d8d8d8;padding:3px 8px;text-align:right;vertical-align:top}
th{background:#f4f4f4;font-weight:600}td.l,th.l{text-align:left}
td.slower{background:#f4c7c3}td.similar{background:#ececec}td.faster{background:#c6e7c6}
td.low{background:#f4c7c3}td.high{background:#c6e7c6}td.sla{background:#d0d0d0;color:#555}
td.flag{color:#a00}.summary li{margin:2px 0}code,pre{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
table.plan{width:100%;table-layout:fixed}
table.plan td{text-align:left;white-space:pre-wrap;overflow-wrap:anywhere;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;border:none;padding:0 12px 0 4px}
table.plan tr.chg td{background:#fff1c2}table.plan mark{background:#ffcf5a;font-weight:600}
table.plan th{text-align:left}.stmt{color:#444;margin:4px 0}
details{margin:6px 0 14px}svg.chart{display:block;margin:8px 0 18px;max-width:100%;height:auto}
svg .ctitle{font:600 13px sans-serif}svg .tick,svg .leg,svg .cat{font:11px sans-serif;fill:#333}svg .clip{font:10px sans-serif;fill:#a00}
.legend{color:#555;font-size:13px}
"#;

/// Renders the whole report.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let title = format!(
        "tidemark report: {}",
        r.targets
            .iter()
            .map(|t| t.label.as_str())
            .collect::<Vec<_>>()
            .join(" vs ")
    );
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"generator\" content=\"tidemark {v}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        v = esc(&r.tidemark_version),
        t = esc(&title)
    );
    let runs: Vec<String> = r.context.runs.iter().map(|x| x.id.to_string()).collect();
    let _ = writeln!(
        o,
        "<p class=\"meta\">Generated {} by tidemark {} from stored run{} {}. Base: <b>{}</b>.</p>",
        esc(&r.generated_at),
        esc(&r.tidemark_version),
        if runs.len() == 1 { "" } else { "s" },
        runs.join(", "),
        esc(&r.base)
    );
    o.push_str("<nav><a href=\"#context\">Context</a>");
    if r.sysbench.is_some() {
        o.push_str("<a href=\"#sysbench\">Sysbench</a>");
    }
    if r.sweep.is_some() {
        o.push_str("<a href=\"#sweep\">Concurrency sweep</a>");
    }
    if r.ibench.is_some() {
        o.push_str("<a href=\"#ibench\">Insert Benchmark</a>");
    }
    if !r.plan_changes.is_empty() {
        o.push_str("<a href=\"#plans\">Plan changes</a>");
    }
    o.push_str("</nav>\n");
    if !r.notes.is_empty() {
        o.push_str("<div class=\"notes\"><b>Read first:</b><ul>");
        for n in &r.notes {
            let _ = write!(o, "<li>{}</li>", esc(n));
        }
        o.push_str("</ul></div>\n");
    }
    context(&mut o, r);
    if let Some(s) = &r.sweep {
        super::sweep::html(&mut o, r, s);
    }
    if let Some(s) = &r.sysbench {
        sysbench(&mut o, r, s);
    }
    if let Some(s) = &r.ibench {
        super::html_ibench::section(&mut o, r, s);
    }
    plans(&mut o, r);
    o.push_str("</body></html>\n");
    o
}

/// The HTML renderer (`index.html` in a report directory).
pub struct Html;

impl Renderer for Html {
    fn render(&self, report: &Report) -> Result<String> {
        Ok(render(report))
    }
}

/// A table from a header and rows of (class, html) cells.
pub(super) fn table(
    o: &mut String,
    class: &str,
    header: &[String],
    rows: &[Vec<(String, String)>],
) {
    let _ = write!(o, "<table class=\"{class}\"><thead><tr>");
    for (i, h) in header.iter().enumerate() {
        // A header aligns like its column's text.
        let left = i == 0
            || rows
                .first()
                .and_then(|r| r.get(i))
                .is_some_and(|c| c.0 == "l");
        let _ = write!(
            o,
            "<th{}>{}</th>",
            if left { " class=\"l\"" } else { "" },
            h
        );
    }
    o.push_str("</tr></thead><tbody>");
    for row in rows {
        o.push_str("<tr>");
        for (class, text) in row {
            if class.is_empty() {
                let _ = write!(o, "<td>{text}</td>");
            } else {
                let _ = write!(o, "<td class=\"{class}\">{text}</td>");
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table>\n");
}

pub(super) fn l(text: &str) -> (String, String) {
    ("l".into(), esc(text))
}

pub(super) fn n(text: String) -> (String, String) {
    (String::new(), esc(&text))
}

fn context(o: &mut String, r: &Report) {
    let c = &r.context;
    o.push_str("<section id=\"context\"><h2>Context</h2>\n");
    let header: Vec<String> = [
        "column", "target", "run", "version", "config", "profile", "workload", "steps", "measured",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<(String, String)>> = r
        .targets
        .iter()
        .zip(&c.targets)
        .map(|(t, x)| {
            vec![
                l(&t.column),
                l(&t.label),
                n(t.run_id.to_string()),
                l(&x.version),
                l(x.config_name.as_deref().unwrap_or("-")),
                l(&x.profile),
                l(&x.workload),
                n(x.reported_steps.to_string()),
                n(secs(x.measured_secs)),
            ]
        })
        .collect();
    table(o, "targets", &header, &rows);
    let mut header: Vec<String> = [
        "run",
        "host",
        "started",
        "wall time",
        "status",
        "tidemark",
        "command",
    ]
    .map(String::from)
    .to_vec();
    if c.same_host {
        header.remove(1);
        if let Some(run) = c.runs.first() {
            let _ = writeln!(o, "<p>Host: {}</p>", esc(&host_line(&run.host, false)));
        }
    }
    let rows: Vec<Vec<(String, String)>> = c
        .runs
        .iter()
        .map(|x| {
            let mut v = vec![
                n(x.id.to_string()),
                l(&x.started_at),
                n(x.wall_secs.map(secs).unwrap_or_else(|| "-".into())),
                l(&x.status),
                l(&x.tidemark_version),
                ("l".into(), format!("<code>{}</code>", esc(&x.command_line))),
            ];
            if !c.same_host {
                v.insert(1, l(&host_line(&x.host, false)));
            }
            v
        })
        .collect();
    table(o, "runs", &header, &rows);
    if c.settings_differ.is_empty() {
        let _ = writeln!(o, "<p>{}</p>", esc(&no_differences(c)));
    } else {
        let _ = writeln!(
            o,
            "<h3>Settings that differ between targets</h3><p class=\"legend\">{}.</p>",
            esc(&capitalised(settings_legend(c)))
        );
        let mut header = vec!["setting".to_string()];
        header.extend(r.targets.iter().map(|t| esc(&t.label)));
        let rows: Vec<Vec<(String, String)>> = c
            .settings_differ
            .iter()
            .map(|d| {
                let mut v = vec![l(&d.name)];
                v.extend(
                    d.values
                        .iter()
                        .zip(&c.targets)
                        .map(|(x, t)| l(&setting_cell(x, t, d))),
                );
                v
            })
            .collect();
        table(o, "settings", &header, &rows);
    }
    for (family, shared) in common_by_family(c) {
        let _ = write!(
            o,
            "<details><summary>{} non-default settings {}</summary><pre>",
            shared.len(),
            esc(&shared_by(c, family))
        );
        for s in shared {
            let _ = writeln!(o, "{} = {}", esc(&s.name), esc(&s.value));
        }
        o.push_str("</pre></details>\n");
    }
    o.push_str("</section>\n");
}

pub(super) fn band_class(b: Option<Band>) -> &'static str {
    match b {
        Some(Band::Slower) => "slower",
        Some(Band::Similar) => "similar",
        Some(Band::Faster) => "faster",
        None => "",
    }
}

fn sysbench(o: &mut String, r: &Report, s: &SysbenchSection) {
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
    let _ = writeln!(o, "<h3 id=\"g-{}\">{}</h3>", g.group, esc(g.title));
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
        let categories: Vec<String> = g.tests.iter().map(|t| t.name.clone()).collect();
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
            let mut v = vec![l(&t.name)];
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
    table(o, "qps", &header, &rows);
    let (shown, absent): (Vec<&str>, Vec<&str>) = {
        let (shown, absent): (Vec<_>, Vec<_>) = s
            .cost_columns
            .iter()
            .zip(&s.cost_present)
            .partition(|(_, p)| **p);
        let keys = |v: Vec<(&CostColumn, &bool)>| v.into_iter().map(|(c, _)| c.key).collect();
        (keys(shown), keys(absent))
    };
    if !shown.is_empty() {
        // Open, so it prints and reads as before; a reader can fold it away.
        let _ = writeln!(
            o,
            "<details class=\"cost\" open><summary>Cost per query: {}</summary>",
            shown.join(", ")
        );
    }
    for (k, col) in s.cost_columns.iter().enumerate() {
        if !s.cost_present[k] {
            continue;
        }
        let mut header = vec![format!("{} ({})", esc(col.title), col.key)];
        header.extend(r.targets.iter().map(|t| esc(&t.label)));
        header.extend(
            r.targets[1..]
                .iter()
                .map(|t| format!("{} rel", esc(&t.column))),
        );
        let rows: Vec<Vec<(String, String)>> = g
            .tests
            .iter()
            .map(|t| {
                let mut v = vec![l(&t.name)];
                v.extend(
                    t.cells
                        .iter()
                        .map(|c| n(c.as_ref().map_or("-".into(), |c| opt_amount(c.cost[k])))),
                );
                v.extend(t.cells[1..].iter().map(|c| {
                    n(c.as_ref()
                        .and_then(|c| c.cost_relative[k])
                        .map_or("n/a".into(), rel))
                }));
                v
            })
            .collect();
        table(o, "cost", &header, &rows);
    }
    if !shown.is_empty() {
        o.push_str("</details>\n");
    }
    if !absent.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"legend\">Not stored for these runs (n/a): {}.</p>",
            absent.join(", ")
        );
    }
}

fn plans(o: &mut String, r: &Report) {
    if r.plan_changes.is_empty() {
        return;
    }
    o.push_str("<section id=\"plans\"><h2>Query plans that changed</h2>\n<p class=\"legend\">Plans are compared without cost estimates and literal numbers; changed lines are shaded and the changed words marked.</p>\n");
    for p in &r.plan_changes {
        let who: Vec<String> = p
            .targets
            .iter()
            .map(|t| {
                format!(
                    "<b>{}</b> ({}){}",
                    esc(&t.target),
                    esc(&t.column),
                    t.relative
                        .map(|x| format!(
                            ", rQPS {} ({} basis points)",
                            rel(x),
                            bp(basis_points(x))
                        ))
                        .unwrap_or_default()
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "<h3>{}</h3><p>{} (base) vs {}</p><p class=\"stmt\"><code>{}</code></p>",
            esc(&p.test),
            esc(&r.base),
            who.join("; "),
            esc(&p.statement)
        );
        let _ = write!(
            o,
            "<table class=\"plan\"><thead><tr><th>{} (base)</th><th>{}</th></tr></thead><tbody>",
            esc(&r.base),
            p.targets
                .iter()
                .map(|t| format!("{} ({})", esc(&t.target), esc(&t.column)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for row in &p.rows {
            let (a, b) = match (&row.base, &row.target, row.changed) {
                (Some(a), Some(b), true) => {
                    let (da, db) = word_diff(a, b);
                    (marked(&da), marked(&db))
                }
                (a, b, _) => (
                    a.as_deref().map(esc).unwrap_or_default(),
                    b.as_deref().map(esc).unwrap_or_default(),
                ),
            };
            let _ = write!(
                o,
                "<tr{}><td>{a}</td><td>{b}</td></tr>",
                if row.changed { " class=\"chg\"" } else { "" }
            );
        }
        o.push_str("</tbody></table>\n");
    }
    o.push_str("</section>\n");
}

/// Words with `true` wrapped in `<mark>`.
fn marked(tokens: &[(String, bool)]) -> String {
    tokens
        .iter()
        .map(|(t, m)| {
            if *m {
                format!("<mark>{}</mark>", esc(t))
            } else {
                esc(t)
            }
        })
        .collect()
}

/// `text` with its first letter in upper case.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|f| f.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
