//! The Insert Benchmark's throughput table `tidemark run` prints at its
//! end, drawn from the report model like the sysbench summary: per step,
//! each target's rate (medians over repetitions; rows/s for the load
//! steps, queries/s for the query steps), and against the first target
//! the ratio with its 95 % interval and the verdict, so no relative number
//! reaches the terminal without its noise.

use std::fmt::Write as _;

use super::terminal::{label_width, truncate};
use super::verdicts::{intervals_line, rel_text};
use crate::report::Report;
use crate::report::ibench::IbenchCell;
use crate::report::sysbench::majority_method;

/// The throughput table of `report`'s Insert Benchmark section; empty when
/// it has none.
pub fn throughput_summary(report: &Report) -> String {
    let mut out = String::new();
    let Some(s) = &report.ibench else {
        return out;
    };
    if s.steps.is_empty() {
        return out;
    }
    let labels: Vec<&str> = s.throughput.iter().map(|r| r.target.as_str()).collect();
    let col = label_width(labels.iter().copied());
    let repeats = s
        .throughput
        .iter()
        .flat_map(|r| &r.cells)
        .map(|c| c.n)
        .max()
        .unwrap_or(1);
    let _ = writeln!(
        out,
        "\nInsert Benchmark: inserts/s (l.*, l.x: rows indexed/s) and queries/s (q*); * = SLA failure, ! = step not ok"
    );
    if repeats > 1 {
        let _ = writeln!(out, "median over {repeats} repetitions");
    }
    let _ = write!(out, "  {:<8}", "step");
    for (i, l) in labels.iter().enumerate() {
        let _ = write!(out, " {:>col$}", truncate(l, col));
        if i > 0 {
            let _ = write!(out, " {:>17} {:<13}", "rel ±95%", "verdict");
        }
    }
    out.push('\n');
    for (k, step) in s.steps.iter().enumerate() {
        let _ = write!(out, "  {step:<8}");
        for (i, row) in s.throughput.iter().enumerate() {
            let cell = row.cells.get(k);
            match cell.and_then(|c| c.value.map(|v| (c, v))) {
                Some((c, v)) => {
                    let _ = write!(out, " {:>w$.0}{}", v, mark(c), w = col - 1);
                }
                None => {
                    let _ = write!(out, " {:>col$}", "-");
                }
            }
            if i > 0 {
                let (r, verdict) = cell.map_or(("-".into(), "-"), |c| {
                    (
                        rel_text(c.relative, c.interval.as_ref()),
                        c.verdict.unwrap_or("-"),
                    )
                });
                let _ = write!(out, " {r:>17} {verdict:<13}");
            }
        }
        out.push('\n');
    }
    let method = majority_method(
        s.throughput
            .iter()
            .flat_map(|r| &r.cells)
            .filter_map(|c| c.interval.map(|i| i.method)),
    );
    if let Some(m) = method {
        let _ = writeln!(out, "{}", intervals_line(m.describe(), report.min_effect));
    }
    out
}

/// `!` for a step that did not end ok, `*` for a query step that missed its
/// background insert rate, else a space.
fn mark(c: &IbenchCell) -> &'static str {
    if c.status.is_some() {
        "!"
    } else if c.sla_failed {
        "*"
    } else {
        " "
    }
}
