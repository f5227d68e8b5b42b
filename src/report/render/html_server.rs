//! The server-counters section of the HTML report: per step a table of the
//! counters (each target's value and its ratio to the base) and per-second
//! charts of the few that explain most (WAL or redo bytes, dead tuples or
//! history length, dirty pages, reads into the buffer pool); and the
//! storage detail (iostat's waits, queue, utilisation, flushes, discards).

use std::fmt::Write as _;

use super::svg::{self, LineSeries, color, esc};
use crate::report::format::{opt_amount, rel};
use crate::report::model::Report;
use crate::report::server_counters::{ServerRow, ServerSection};
use crate::report::storage::StorageStep;

/// Appends the section to `o`.
pub(super) fn section(o: &mut String, r: &Report, s: &ServerSection) {
    o.push_str("<section id=\"server-counters\"><h2>Server counters</h2>\n");
    o.push_str(
        "<p class=\"legend\">What the server itself counted during each step, read from its \
         statistics views once a second on a connection of its own: per operation over the \
         measured interval, as counts in it, or as the level the step left behind. Ratios are \
         target ÷ base.</p>\n",
    );
    for (t, why) in r.targets.iter().zip(&s.missing) {
        if let Some(why) = why {
            let _ = writeln!(o, "<p class=\"meta\">{}: {}</p>", esc(&t.label), esc(why));
        }
    }
    for step in &s.steps {
        let _ = write!(
            o,
            "<details open><summary><b>{}</b></summary>\n<table>",
            esc(&step.name)
        );
        header(o, r, "counter");
        o.push_str("</tr>\n");
        rows(o, &step.rows);
        o.push_str("</table>\n");
        for chart in &step.charts {
            let lines: Vec<LineSeries> = r
                .targets
                .iter()
                .zip(&chart.series)
                .enumerate()
                .map(|(i, (t, points))| LineSeries {
                    name: t.label.clone(),
                    color: color(i),
                    points: points.iter().map(|p| [p.0 as f64, p.1]).collect(),
                })
                .collect();
            o.push_str(&svg::lines(
                &format!("{}: {}", step.name, chart.title),
                "second",
                if chart.title.ends_with("per second") {
                    "per second"
                } else {
                    "level"
                },
                &lines,
            ));
            o.push('\n');
        }
        o.push_str("</details>\n");
    }
    o.push_str("</section>\n");
}

/// Appends the storage detail: per step iostat's waits, queue size,
/// utilisation, flushes and discards, and `dbgb2`, relative to the base.
pub(super) fn storage(o: &mut String, r: &Report, steps: &[StorageStep]) {
    o.push_str("<section id=\"storage\"><h2>Storage detail</h2>\n");
    o.push_str(
        "<p class=\"legend\">iostat -x over the watched devices, averaged over each step's \
         measured interval, and the data directory's size after it. Ratios are target ÷ base.</p>\n",
    );
    for step in steps {
        let _ = write!(
            o,
            "<details open><summary><b>{}</b></summary>\n<table>",
            esc(&step.name)
        );
        header(o, r, "metric");
        o.push_str("</tr>\n");
        rows(o, &step.rows);
        o.push_str("</table></details>\n");
    }
    o.push_str("</section>\n");
}

/// The header row (left open for callers to close) of a rows table.
pub(super) fn header(o: &mut String, r: &Report, what: &str) {
    let _ = write!(o, "<tr><th class=\"l\">{}</th>", esc(what));
    for (i, t) in r.targets.iter().enumerate() {
        let _ = write!(o, "<th>{}</th>", esc(&t.label));
        if i > 0 {
            let _ = write!(
                o,
                "<th>{}/{}</th>",
                esc(&t.column),
                esc(&r.targets[0].column)
            );
        }
    }
}

/// One table row per entry: the label, each target's value and (after
/// the base) its ratio to the base.
pub(super) fn rows(o: &mut String, rows: &[ServerRow]) {
    for row in rows {
        let _ = write!(o, "<tr><td class=\"l\">{}</td>", esc(&row.label));
        for (i, v) in row.values.iter().enumerate() {
            let _ = write!(o, "<td>{}</td>", opt_amount(*v));
            if i > 0 {
                let _ = write!(
                    o,
                    "<td>{}</td>",
                    row.relative[i].map(rel).unwrap_or_default()
                );
            }
        }
        o.push_str("</tr>\n");
    }
}
