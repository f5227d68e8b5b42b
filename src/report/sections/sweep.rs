//! The concurrency sweep (`--threads 1,4,64`) as a document: each test's
//! peak and knee per target, then per test a table of QPS, p99 and
//! relative QPS against client connections and (on the page) two charts
//! with a log-scale connections axis, one line per target.

use crate::report::document::{Block, Cell, Column, Row, Table};
use crate::report::render::svg::color;
use crate::report::render::sweep::{Series, log_x_chart};
use crate::report::sweep::{SweepPoint, SweepSection, SweepTest};

/// The section (`## Concurrency sweep`, `<section id="sweep">`).
pub fn section(s: &SweepSection) -> Block {
    let mut blocks = vec![Block::List(s.summary.clone())];
    for t in &s.tests {
        blocks.push(Block::Heading(format!("{} against connections", t.name)));
        let series = |f: &dyn Fn(&SweepPoint) -> f64| -> Vec<Series> {
            t.lines
                .iter()
                .enumerate()
                .map(|(i, l)| Series {
                    name: l.target.clone(),
                    color: color(i),
                    values: l.points.iter().map(|p| p.as_ref().map(f)).collect(),
                })
                .collect()
        };
        blocks.push(Block::Html(format!(
            "<div class=\"charts\" style=\"display:flex;flex-wrap:wrap;gap:8px\">{}{}</div>\n",
            log_x_chart(
                &format!("{}: QPS", t.name),
                "QPS",
                &t.counts,
                &series(&|p| p.qps)
            ),
            log_x_chart(
                &format!("{}: p99 latency", t.name),
                "p99 µs",
                &t.counts,
                &series(&|p| p.p99_us as f64)
            )
        )));
        blocks.push(Block::Table(table(t)));
    }
    Block::section("sweep", "Concurrency sweep", blocks)
}

/// Connections, then per target QPS and p99 (and for the others QPS
/// relative to the base at the same count).
fn table(t: &SweepTest) -> Table {
    let mut columns = vec![Column::text("connections")];
    for (i, l) in t.lines.iter().enumerate() {
        columns.push(Column::num(format!("{} QPS", l.target)));
        columns.push(Column::num(format!("{} p99 µs", l.target)));
        if i > 0 {
            columns.push(Column::num(format!("{} rel", l.target)));
        }
    }
    let na = || Cell::num("n/a");
    let rows = t
        .counts
        .iter()
        .enumerate()
        .map(|(k, n)| {
            let mut row = vec![Cell::count(n)];
            for (i, l) in t.lines.iter().enumerate() {
                let p = l.points[k].as_ref();
                row.push(p.map_or_else(na, |p| Cell::amount(p.qps)));
                row.push(p.map_or_else(na, |p| Cell::count(p.p99_us)));
                if i > 0 {
                    row.push(p.and_then(|p| p.relative).map_or_else(na, Cell::rel));
                }
            }
            Row::new(row)
        })
        .collect();
    Table::new("sweep", columns, rows)
}
