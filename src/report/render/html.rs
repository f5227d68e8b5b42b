//! The report as one self-contained HTML file: inline CSS, inline SVG
//! charts, no fonts, images or scripts from the network (one small inline
//! script filters groups and tests; the page reads the same without it).
//! It opens from a file, a mail attachment or a static web server, and
//! prints well. The first screen is the summary ([`super::html_overview`]);
//! sysbench groups are drawn by [`super::html_sysbench`].

use std::fmt::Write as _;

use anyhow::Result;

use super::Renderer;

use super::svg::esc;
use crate::report::context::{
    common_by_family, no_differences, setting_cell, settings_legend, shared_by,
};
use crate::report::format::{bp, host_line, rel, secs};
use crate::report::model::{Band, Report};
use crate::report::plans::word_diff;
use crate::report::sysbench::basis_points;

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
         <title>{t}</title><style>{STYLE}{NAV}</style></head><body>\n<h1{h}>{t}</h1>\n",
        h = if r.targets.len() > 3 {
            " class=\"many\""
        } else {
            ""
        },
        v = esc(&r.tidemark_version),
        t = esc(&title),
        NAV = super::html_nav::STYLE
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
    super::html_nav::toc(&mut o, r);
    super::html_overview::section(&mut o, r);
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
        super::html_sysbench::section(&mut o, r, s);
    }
    if let Some(s) = &r.instructions {
        super::html_instructions::section(&mut o, r, s);
    }
    super::chain::html(&mut o, r);
    if let Some(s) = &r.ibench {
        super::html_ibench::section(&mut o, r, s);
    }
    if let Some(s) = &r.server {
        super::html_server::section(&mut o, r, s);
    }
    if let Some(s) = &r.profiles {
        super::html_profile::section(&mut o, r, s);
    }
    if !r.storage.is_empty() {
        super::html_server::storage(&mut o, r, &r.storage);
    }
    crate::report::shards::html(&mut o, &r.shards);
    plans(&mut o, r);
    o.push_str(super::html_nav::SCRIPT);
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
    table_tagged(o, class, header, rows, &[]);
}

/// [`table`] with a `data-test` tag per row (the filter's hook); `tags`
/// may be shorter than `rows`.
pub(super) fn table_tagged(
    o: &mut String,
    class: &str,
    header: &[String],
    rows: &[Vec<(String, String)>],
    tags: &[String],
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
    for (i, row) in rows.iter().enumerate() {
        match tags.get(i) {
            Some(t) => _ = write!(o, "<tr data-test=\"{}\">", esc(t)),
            None => o.push_str("<tr>"),
        }
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
    for (t, x) in r.targets.iter().zip(&c.targets) {
        if let Some(build) = &x.build {
            let _ = writeln!(
                o,
                "<p>Build of {} ({}): {}</p>",
                esc(&t.column),
                esc(&t.label),
                esc(build)
            );
        }
    }
    for (t, x) in r.targets.iter().zip(&c.targets) {
        if !x.config_text.trim().is_empty() {
            let _ = writeln!(
                o,
                "<details><summary>Configuration file of {} ({})</summary><pre>{}</pre></details>",
                esc(&t.column),
                esc(&t.label),
                esc(x.config_text.trim_end())
            );
        }
    }
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
