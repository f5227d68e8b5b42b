//! The sections that explain a number, as a document: the server's own
//! counters per step (with per-second charts of the few that explain
//! most), the storage detail (iostat and the data directory's size) and
//! the CPU profiles' top functions (drawn by [`super::profiles`]); each a
//! table with a row per counter, each target's value and its ratio to the
//! base.

use crate::report::cpu_profile::ProfileStep;
use crate::report::document::{Block, Cell, Chart, Column, Row, Table};
use crate::report::model::Report;
use crate::report::render::svg::esc;
use crate::report::server_counters::{ServerRow, ServerSection};
use crate::report::storage::StorageStep;

/// The server counters (`## Server counters`, `<section id="server-counters">`).
pub fn counters(r: &Report, s: &ServerSection) -> Block {
    let mut blocks = vec![Block::Legend(
        "What the server itself counted during each step, read from its statistics views \
         once a second on a connection of its own: per operation over the measured interval, \
         as counts in it, or as the level the step left behind. Ratios are target ÷ base."
            .into(),
    )];
    blocks.extend(missing(r, &s.missing, ""));
    let slowest: Vec<String> = r
        .targets
        .iter()
        .zip(&s.read_ms_max)
        .filter_map(|(t, ms)| Some(format!("{} {:.1} ms", t.label, (*ms)?)))
        .collect();
    if !slowest.is_empty() {
        blocks.push(Block::Markdown(format!(
            "Slowest reading of the counters: {}.\n\n",
            slowest.join(", ")
        )));
    }
    for step in &s.steps {
        blocks.push(Block::Markdown(format!(
            "### Server counters of {}\n\n",
            step.name
        )));
        blocks.push(Block::Html(summary(&step.name)));
        blocks.push(Block::Table(rows_table(r, "counter", &step.rows, false)));
        for chart in &step.charts {
            let series = r.targets.iter().zip(&chart.series).map(|(t, points)| {
                let points = points.iter().map(|p| [p.0 as f64, p.1]).collect();
                (t.label.clone(), points)
            });
            let y = match chart.title.ends_with("per second") {
                true => "per second",
                false => "level",
            };
            let title = format!("{}: {}", step.name, chart.title);
            blocks.push(Block::Chart(Chart::lines(
                title,
                "second",
                y,
                series.collect(),
            )));
        }
        blocks.push(Block::Html("</details>\n".into()));
    }
    Block::section("server-counters", "Server counters", blocks)
}

/// A step's fold on the page, open.
fn summary(name: &str) -> String {
    format!("<details open><summary><b>{}</b></summary>\n", esc(name))
}

/// Why a target has no counters or profile: a Markdown list, a line each
/// on the page.
pub(super) fn missing(r: &Report, why: &[Option<String>], what: &str) -> Vec<Block> {
    let mut md = String::new();
    let mut html = String::new();
    for (t, why) in r.targets.iter().zip(why) {
        if let Some(why) = why {
            md.push_str(&format!("- {}: {what}{why}\n", t.label));
            html.push_str(&format!(
                "<p class=\"meta\">{}: {what}{}</p>\n",
                esc(&t.label),
                esc(why)
            ));
        }
    }
    vec![Block::Markdown(md), Block::Html(html)]
}

/// The storage detail (`## Storage detail`, `<section id="storage">`): per
/// step iostat's waits, queue, utilisation, flushes and discards, and
/// `dbgb2`, relative to the base.
pub fn storage(r: &Report, steps: &[StorageStep]) -> Block {
    let mut blocks = vec![Block::Legend(
        "iostat -x over the watched devices, averaged over each step's measured interval, and \
         the data directory's size after it. Ratios are target ÷ base."
            .into(),
    )];
    for step in steps {
        blocks.push(Block::Markdown(format!(
            "### Storage during {}\n\n",
            step.name
        )));
        blocks.push(Block::Html(summary(&step.name)));
        blocks.push(Block::Table(rows_table(r, "metric", &step.rows, false)));
        blocks.push(Block::Html("</details>\n".into()));
    }
    Block::section("storage", "Storage detail", blocks)
}

/// A step's top functions: self CPU µs per operation on each target and
/// its ratio to the base; the first column titled `first`.
pub fn top_functions(r: &Report, step: &ProfileStep, first: &str) -> Table {
    let rows: Vec<ServerRow> = step.top.iter().map(|f| f.as_row()).collect();
    rows_table(r, first, &rows, true)
}

/// A table of `rows`: the label (as code with `code`), then each target's
/// value and (after the base) its ratio to the base.
fn rows_table(r: &Report, what: &str, rows: &[ServerRow], code: bool) -> Table {
    let mut columns = vec![Column::text(what)];
    for (i, t) in r.targets.iter().enumerate() {
        columns.push(Column::num(&t.label));
        if i > 0 {
            columns.push(Column::num(format!("{}/{}", t.column, r.targets[0].column)));
        }
    }
    let rows = rows
        .iter()
        .map(|row| {
            let label = if code {
                Cell::code(&row.label)
            } else {
                Cell::text(&row.label)
            };
            let mut cells = vec![label];
            for (i, v) in row.values.iter().enumerate() {
                cells.push(Cell::opt_amount(*v));
                if i > 0 {
                    cells.push(Cell::num(
                        row.relative[i]
                            .map(crate::report::format::rel)
                            .unwrap_or_default(),
                    ));
                }
            }
            Row::new(cells)
        })
        .collect();
    Table::new("counters", columns, rows)
}
