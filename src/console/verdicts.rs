//! The sysbench summary `tidemark run` prints at its end, drawn from the
//! report model (the same numbers, intervals and verdicts as the Markdown
//! and HTML): per group, each test's QPS on each target (medians over
//! repetitions), its rQPS with half its 95 % interval and the verdict, and
//! the group's verdict count.

use std::fmt::Write as _;

use super::terminal::{label_width, name_width, truncate};
use crate::report::Report;
use crate::report::format::rel_pm;
use crate::report::sysbench::Cell;
use crate::stats::Interval;

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
    for g in &s.groups {
        let _ = writeln!(out, "\n{}", g.title);
        let _ = write!(out, "  {:<width$}", "test");
        for (i, l) in labels.iter().enumerate() {
            let _ = write!(out, " {:>col$}", truncate(l, col));
            if i > 0 {
                let _ = write!(out, " {:>12} {:<13}", "rel ±95%", "verdict");
            }
        }
        let _ = writeln!(out, " {:>10}", "p99 µs");
        for t in &g.tests {
            let _ = write!(out, "  {:<width$}", t.name);
            let mut p99 = 0;
            for (i, c) in t.cells.iter().enumerate() {
                match c {
                    Some(c) => {
                        let mark = if c.flagged() { "!" } else { " " };
                        let _ = write!(out, " {:>w$.0}{mark}", c.qps, w = col - 1);
                        if i > 0 {
                            let _ = write!(
                                out,
                                " {:>12} {:<13}",
                                rel_text(c.relative, c.interval.as_ref()),
                                c.verdict.unwrap_or("-")
                            );
                        }
                        p99 = c.p99_us;
                    }
                    None => {
                        let _ = write!(out, " {:>col$}", "-");
                        if i > 0 {
                            let _ = write!(out, " {:>12} {:<13}", "-", "");
                        }
                    }
                }
            }
            let _ = writeln!(out, " {p99:>10}");
        }
        for sum in &g.summaries {
            let _ = writeln!(out, "  {}: {}", sum.target, sum.verdicts.phrase_for_rate());
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

/// A ratio with its interval where it has one (`0.94 ±0.03`), `-` without
/// a ratio; shared by the sysbench and Insert Benchmark tables.
pub(super) fn rel_text(relative: Option<f64>, interval: Option<&Interval>) -> String {
    relative.map_or_else(|| "-".into(), |x| rel_pm(x, interval))
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
