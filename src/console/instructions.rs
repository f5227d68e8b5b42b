//! The instruction-count summary `tidemark run --instructions` prints at
//! its end: the document's per-test table (the one the Markdown and HTML
//! show: each target's instructions per query, its ratio to the base with
//! its interval, the verdict, the background's instructions per query),
//! then each target's verdict count and any missing counts.

use std::fmt::Write as _;

use super::terminal::{label_width, name_width};
use crate::report::Report;
use crate::report::sections::instructions::per_test;

/// Formats the instruction section of `report`; empty without one.
pub fn summary(report: &Report) -> String {
    let mut out = String::new();
    let Some(s) = &report.instructions else {
        return out;
    };
    let _ = writeln!(
        out,
        "\ninstructions per query (client backends, under Valgrind)"
    );
    let table = per_test(report, s);
    let col = label_width(report.targets.iter().map(|t| t.label.as_str())).max(10);
    let mut widths = vec![name_width(s.tests.iter().map(|t| t.name.as_str()))];
    for i in 0..report.targets.len() {
        widths.push(col);
        if i > 0 {
            widths.extend([16, 13]);
        }
        widths.push(10);
    }
    super::table::write(&mut out, &table, &widths);
    for sum in &s.summaries {
        let _ = writeln!(out, "  {}: {}", sum.label, sum.text);
    }
    if let Some(note) = &s.uncounted_note {
        let _ = writeln!(out, "  missing counts: {note}");
    }
    out
}
