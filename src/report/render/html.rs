//! The report as one self-contained HTML file: inline CSS, inline SVG
//! charts, no fonts, images or scripts from the network (one small inline
//! script filters groups and tests; the page reads the same without it).
//! It opens from a file, a mail attachment or a static web server, and
//! prints well. It lays out [`crate::report::sections::parts`] in order;
//! the first screen is the summary
//! ([`crate::report::sections::summary`]), right under the title.

use std::fmt::Write as _;

use anyhow::Result;

use super::Renderer;

use super::svg::esc;
use crate::report::model::Report;

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
    for part in crate::report::sections::parts(r) {
        crate::report::document::html::write(&mut o, &part.on_page());
    }
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
