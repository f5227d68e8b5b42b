//! The version chain (`tidemark report --chain`): each target against the
//! one before it, test by test, as the seeds' "each release against the
//! previous" tables, for the sysbench tests and the Insert Benchmark's
//! steps; the comparison with the base stays in the group tables.

use std::fmt::Write as _;

use crate::report::format::rel_pm;
use crate::report::ibench::IbenchCell;
use crate::report::model::Report;
use crate::report::render::svg::esc;
use crate::report::sysbench::{Cell, Step, TestRow};
use crate::stats::Interval;

/// Per test or step: its name and each link's cell.
type Rows = Vec<(String, Vec<String>)>;

/// Link `i`'s cell: the comparison with the base for the first link
/// (`base`: ratio, interval, verdict), `vs_previous` for the others; `-`
/// where the cell has none.
fn link_text(
    i: usize,
    base: Option<(f64, Option<&Interval>, &str)>,
    previous: Option<&Step>,
) -> String {
    let found = if i == 1 {
        base
    } else {
        previous.map(|p| (p.relative, p.interval.as_ref(), p.verdict))
    };
    match found {
        Some((v, iv, verdict)) => format!("{} {verdict}", rel_pm(v, iv)),
        None => "-".into(),
    }
}

/// The sysbench rows: per test, each link's relative QPS and verdict (the
/// first link is the comparison with the base, the others `vs_previous`).
fn sysbench_rows(r: &Report) -> Option<Rows> {
    let s = r.sysbench.as_ref()?;
    let link = |c: Option<&Cell>, i: usize| {
        let base = c.and_then(|c| Some((c.relative?, c.interval.as_ref(), c.verdict?)));
        link_text(i, base, c.and_then(|c| c.vs_previous.as_ref()))
    };
    let row = |t: &TestRow| {
        let cells = (1..r.targets.len())
            .map(|i| link(t.cells.get(i).and_then(Option::as_ref), i))
            .collect();
        (t.name.clone(), cells)
    };
    Some(
        s.groups
            .iter()
            .flat_map(|g| g.tests.iter().map(row))
            .collect(),
    )
}

/// The Insert Benchmark rows: per step, each link's relative throughput
/// (inserts/s for load steps, queries/s for query steps) and verdict.
fn ibench_rows(r: &Report) -> Option<Rows> {
    let s = r.ibench.as_ref()?;
    let link = |c: Option<&IbenchCell>, i: usize| {
        let base = c.and_then(|c| Some((c.relative?, c.interval.as_ref(), c.verdict?)));
        link_text(i, base, c.and_then(|c| c.vs_previous.as_ref()))
    };
    Some(
        s.steps
            .iter()
            .enumerate()
            .map(|(k, step)| {
                let cells = (1..r.targets.len())
                    .map(|i| link(s.throughput.get(i).and_then(|row| row.cells.get(k)), i))
                    .collect();
                (step.clone(), cells)
            })
            .collect(),
    )
}

/// Captioned tables: (caption, rows).
type Tables = Vec<(&'static str, Rows)>;

/// The headers (`col-1 vs base`…) and the tables, each with its caption;
/// `None` when the report has no chain.
fn tables(r: &Report) -> Option<(Vec<String>, Tables)> {
    if !r.chain || r.targets.len() < 2 {
        return None;
    }
    let headers = r
        .targets
        .windows(2)
        .map(|w| format!("{} vs {}", w[1].label, w[0].label))
        .collect();
    let mut out = Vec::new();
    if let Some(rows) = sysbench_rows(r) {
        out.push(("sysbench: relative QPS", rows));
    }
    if let Some(rows) = ibench_rows(r) {
        out.push((
            "Insert Benchmark: relative throughput (rows/s for the load steps, queries/s for qr*, qp*)",
            rows,
        ));
    }
    (!out.is_empty()).then_some((headers, out))
}

const TITLE: &str = "Each target against the one before it";

/// The chain as a Markdown table (nothing without `--chain`).
pub fn markdown(o: &mut String, r: &Report) {
    let Some((headers, tables)) = tables(r) else {
        return;
    };
    let _ = writeln!(
        o,
        "## {TITLE}\n\nEach ratio with its 95 % interval and verdict.\n"
    );
    for (caption, rows) in tables {
        let _ = writeln!(o, "{caption}\n");
        let _ = writeln!(o, "| test | {} |", headers.join(" | "));
        let _ = writeln!(o, "|---|{}", "---:|".repeat(headers.len()));
        for (name, cells) in rows {
            let _ = writeln!(o, "| {name} | {} |", cells.join(" | "));
        }
        o.push('\n');
    }
}

/// The chain as an HTML table (nothing without `--chain`).
pub fn html(o: &mut String, r: &Report) {
    let Some((headers, tables)) = tables(r) else {
        return;
    };
    let _ = write!(o, "<section id=\"chain\"><h2>{TITLE}</h2>");
    for (caption, rows) in tables {
        let _ = write!(
            o,
            "<table><caption>{}</caption><tr><th>test</th>",
            esc(caption)
        );
        for h in &headers {
            let _ = write!(o, "<th>{}</th>", esc(h));
        }
        o.push_str("</tr>");
        for (name, cells) in rows {
            let _ = write!(o, "<tr><td>{}</td>", esc(&name));
            for c in cells {
                let _ = write!(o, "<td class=\"num\">{}</td>", esc(&c));
            }
            o.push_str("</tr>");
        }
        o.push_str("</table>");
    }
    o.push_str("</section>\n");
}
