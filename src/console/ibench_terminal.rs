//! The Insert Benchmark part of the summary `tidemark run` prints, read
//! back from the store: the seeds' three summary tables (throughput per
//! step, relative to the first target; the background insert rate of the
//! query steps against its target; the fairness of fixed-work steps).

use std::fmt::Write as _;

use crate::record::{IbenchMetrics, SuiteName};
use crate::report::document::{Cell, Column as DocColumn, Row, Table};
use crate::report::format::rel;
use crate::report::model::relative;
use crate::store::{StoredRun, StoredStep};

/// One target's ibench steps: (step name, its metrics, its status).
type Column<'a> = (String, Vec<(&'a str, IbenchMetrics, &'a str)>);

fn columns(run: &StoredRun) -> Vec<Column<'_>> {
    run.targets
        .iter()
        .map(|t| {
            let steps = t
                .steps
                .iter()
                .filter(|s| s.info.suite_is(SuiteName::Ibench))
                .filter_map(|s: &StoredStep| {
                    let m = s.ibench_metrics()?;
                    Some((s.info.name.as_str(), m, s.status.as_str()))
                })
                .collect();
            (t.info.label.clone(), steps)
        })
        .collect()
}

/// The tables for the ibench steps of `run`; empty if it has none. With
/// the run's report model, the throughput table is the model's (medians,
/// ratios with their intervals and verdicts:
/// [`super::ibench_verdicts`]); without one (nothing reportable yet), it is
/// built from the stored rates with bare ratios.
pub fn summary(run: &StoredRun, model: Option<&crate::report::Report>) -> String {
    let cols = columns(run);
    let mut names: Vec<&str> = Vec::new();
    for (_, steps) in &cols {
        for (n, _, _) in steps {
            if !names.contains(n) {
                names.push(n);
            }
        }
    }
    if names.is_empty() {
        return String::new();
    }
    let find = |c: usize, n: &str| find(&cols, c, n);
    let mut out = String::new();
    let from_model = model
        .map(super::ibench_verdicts::throughput_summary)
        .filter(|t| !t.is_empty());
    if let Some(table) = from_model {
        out.push_str(&table);
    } else {
        throughput_table(&mut out, &cols, &names);
    }
    let q: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| n.starts_with('q'))
        .collect();
    if !q.is_empty() {
        let _ = writeln!(
            out,
            "\nbackground insert rate of the query steps (rows/s); * = below 95% of the target"
        );
        let rows = q.iter().map(|n| {
            let sla: Vec<_> = (0..cols.len())
                .map(|c| find(c, n).and_then(|(_, m, _)| m.sla.as_ref()))
                .collect();
            let mut v: Vec<Cell> =
                sla.iter()
                    .map(|s| match s {
                        Some(s) => Cell::num(format!("{:.0}", s.achieved_ips))
                            .marked(if s.failed { "*" } else { " " }),
                        None => Cell::num("-"),
                    })
                    .collect();
            let target = sla.iter().flatten().last().map(|s| s.target_ips);
            v.push(target.map_or_else(|| Cell::num("-"), |t| Cell::num(format!("{t:.0}"))));
            (n.to_string(), v)
        });
        draw(&mut out, &cols, false, Some("target"), rows);
    }

    let _ = writeln!(
        out,
        "\nfairness: max - min time for a client to finish its work, seconds (and % of the min)"
    );
    let rows = names.iter().map(|n| {
        let v = (0..cols.len())
            .map(
                |c| match find(c, n).and_then(|(_, m, _)| m.fairness.as_ref()) {
                    Some(f) => Cell::num(format!("{:.1} ({:.1}%)", f.diff, f.pct)),
                    None => Cell::num("-"),
                },
            )
            .collect();
        (n.to_string(), v)
    });
    draw(&mut out, &cols, false, None, rows);
    out
}

/// Step `n` of column `c`.
fn find<'a, 'b>(
    cols: &'b [Column<'a>],
    c: usize,
    n: &str,
) -> Option<&'b (&'a str, IbenchMetrics, &'a str)> {
    cols[c].1.iter().find(|(name, _, _)| *name == n)
}

/// A table of steps: `step`, the targets 14 wide (with a `rel` column
/// after each but the first when `rel`), an optional `last` column; each
/// row a step's name and its cells in that order.
fn draw(
    out: &mut String,
    cols: &[Column<'_>],
    rel: bool,
    last: Option<&str>,
    rows: impl Iterator<Item = (String, Vec<Cell>)>,
) {
    let mut columns = vec![DocColumn::text("step")];
    let mut widths = vec![8];
    for (i, (label, _)) in cols.iter().enumerate() {
        columns.push(DocColumn::num(label));
        widths.push(14);
        if rel && i > 0 {
            columns.push(DocColumn::num("rel"));
            widths.push(6);
        }
    }
    if let Some(l) = last {
        columns.push(DocColumn::num(l));
        widths.push(10);
    }
    let rows = rows
        .map(|(name, cells)| {
            let mut v = vec![Cell::text(name)];
            v.extend(cells);
            Row::new(v)
        })
        .collect();
    let t = Table::new("ibench", columns, rows);
    super::table::write(out, &t, &widths);
}

/// The throughput table from the stored rates, with bare ratios to the
/// first target (used when the run has no report model yet).
fn throughput_table(out: &mut String, cols: &[Column<'_>], names: &[&str]) {
    let find = |c: usize, n: &str| find(cols, c, n);
    let _ = writeln!(
        out,
        "\nInsert Benchmark: inserts/s (l.*, l.x: rows indexed/s) and queries/s (q*); * = SLA failure, ! = step not ok"
    );
    let rows = names.iter().map(|n| {
        let base = find(0, n).map(|s| s.1.rate);
        let mut v = Vec::new();
        for c in 0..cols.len() {
            match find(c, n) {
                Some((_, m, status)) => {
                    let mark = if *status != "ok" {
                        "!"
                    } else if m.sla.as_ref().is_some_and(|s| s.failed) {
                        "*"
                    } else {
                        " "
                    };
                    v.push(Cell::num(format!("{:.0}", m.rate)).marked(mark));
                    if c > 0 {
                        let cell = base.and_then(|b| relative(m.rate, b)).map(rel);
                        v.push(Cell::num(cell.unwrap_or_else(|| "-".into())));
                    }
                }
                None => {
                    v.push(Cell::num("-"));
                    if c > 0 {
                        v.push(Cell::num("-"));
                    }
                }
            }
        }
        (n.to_string(), v)
    });
    draw(out, cols, true, None, rows);
}
