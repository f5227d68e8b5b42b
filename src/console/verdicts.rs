//! The sysbench summary `tidemark run` prints at its end, drawn from the
//! report model (the same numbers, intervals and verdicts as the Markdown
//! and HTML): per group, each test's QPS on each target (medians over
//! repetitions), its rQPS with half its 95 % interval and the verdict, and
//! the group's verdict count.

use std::fmt::Write as _;

use super::terminal::{label_width, name_width};
use crate::record::SuiteName;
use crate::report::Report;
use crate::report::sections::sysbench::verdict_table;
use crate::report::sysbench::Cell;

/// Formats the sysbench part of `report` for the terminal; empty when it
/// has no sysbench section.
pub fn sysbench_summary(report: &Report) -> String {
    let mut out = String::new();
    let Some(s) = &report.sysbench else {
        return out;
    };
    let labels: Vec<&str> = report.targets.iter().map(|t| t.label.as_str()).collect();
    let width = name_width(
        s.groups
            .iter()
            .flat_map(|g| &g.tests)
            .map(|t| t.name.as_str()),
    );
    let col = label_width(labels.iter().copied());
    let repeats = s
        .groups
        .iter()
        .flat_map(|g| &g.tests)
        .flat_map(|t| t.cells.iter().flatten())
        .map(|c| c.n)
        .max()
        .unwrap_or(1);
    if repeats > 1 {
        let _ = writeln!(out, "\nmedian QPS over {repeats} repetitions");
    }
    let mut widths = vec![width, col];
    widths.extend((1..labels.len()).flat_map(|_| [col, 12, 13]));
    widths.push(10);
    let overview = crate::report::overview::build(report);
    for g in &s.groups {
        let _ = writeln!(out, "\n{}", g.title);
        super::table::write(&mut out, &verdict_table(report, g), &widths);
        let seen = overview
            .groups
            .iter()
            .find(|o| o.suite == SuiteName::Sysbench.as_str() && o.title == g.title);
        for (i, sum) in g.summaries.iter().enumerate() {
            let sees = seen
                .and_then(|o| crate::report::overview::sees(*o.detectable.get(i)?))
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {}: {}{sees}",
                sum.target,
                sum.verdicts.phrase_for_rate()
            );
        }
    }
    if let Some(m) = &report.interval_method {
        let _ = writeln!(out, "\n{}", intervals_line(m, report.min_effect));
    }
    if s.groups
        .iter()
        .flat_map(|g| &g.tests)
        .flat_map(|t| t.cells.iter().flatten())
        .any(Cell::flagged)
    {
        let _ = writeln!(
            out,
            "\n! = the step had errors or did not finish; `tidemark export` shows why"
        );
    }
    out
}

/// The legend line under a table of ratios: the interval method and the
/// rule a verdict follows.
pub(super) fn intervals_line(method: &str, min_effect: f64) -> String {
    format!(
        "intervals: {method}; verdicts need the whole interval past 1 and a change of at least {}%",
        crate::report::format::amount(min_effect * 100.0).trim_end_matches(".00")
    )
}
/// The concurrency sweep's lines (each test's peak and knee per target);
/// empty when the report has no sweep.
pub fn sweep_summary(report: &Report) -> String {
    let mut out = String::new();
    if let Some(s) = &report.sweep {
        out.push_str("\nconcurrency sweep\n");
        for line in &s.summary {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}
