//! The instruction-count summary `tidemark run --instructions` prints at
//! its end, drawn from the report model: per test each target's client
//! instructions per query, its ratio to the base with half its 95 %
//! interval, and the verdict; then each target's verdict count.

use std::fmt::Write as _;

use super::terminal::{label_width, name_width, truncate};
use crate::report::Report;
use crate::report::instructions::ir_text;

/// Formats the instruction section of `report`; empty without one.
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    let Some(s) = &report.instructions else {
        return out;
    };
    let labels: Vec<&str> = report.targets.iter().map(|t| t.label.as_str()).collect();
    let width = name_width(s.tests.iter().map(|t| t.name.as_str()));
    let col = label_width(labels.iter().copied()).max(10);
    let _ = writeln!(
        out,
        "\ninstructions per query (client backends, under Valgrind)"
    );
    let _ = write!(out, "  {:<width$}", "test");
    for (i, l) in labels.iter().enumerate() {
        let _ = write!(out, " {:>col$}", truncate(l, col));
        if i > 0 {
            let _ = write!(out, " {:>16} {:<13}", "ratio ±95%", "verdict");
        }
    }
    out.push('\n');
    for t in &s.tests {
        let _ = write!(out, "  {:<width$}", t.name);
        for (i, c) in t.cells.iter().enumerate() {
            match c {
                Some(c) => {
                    let _ = write!(out, " {:>col$}", ir_text(c.per_query));
                    if i > 0 {
                        let _ = write!(
                            out,
                            " {:>16} {:<13}",
                            c.ratio_text(),
                            c.verdict.unwrap_or("")
                        );
                    }
                }
                None => {
                    let _ = write!(out, " {:>col$}", "n/a");
                    if i > 0 {
                        let _ = write!(out, " {:>16} {:<13}", "", "");
                    }
                }
            }
        }
        out.push('\n');
    }
    for sum in &s.summaries {
        let _ = writeln!(out, "  {}: {}", sum.label, sum.text);
    }
    if let Some(note) = &s.uncounted_note {
        let _ = writeln!(out, "  missing counts: {note}");
    }
    out
}
