//! The sections that explain a number, in Markdown: the server's counters
//! and the storage detail (per step, one table with a row per counter, each
//! target's value and its ratio to the base), and the CPU profiles' top
//! functions.

use std::fmt::Write as _;

use crate::report::cpu_profile::ProfileSection;
use crate::report::format::{opt_amount, rel};
use crate::report::model::Report;
use crate::report::server_counters::{ServerRow, ServerSection};

/// Appends the section to `o`.
pub fn section(o: &mut String, r: &Report, s: &ServerSection) {
    o.push_str("## Server counters\n\n");
    o.push_str(
        "What the server itself counted during each step, read from its statistics views \
         once a second on a connection of its own: per operation over the measured interval, \
         as counts in it, or as the level the step left behind. Ratios are target ÷ base.\n\n",
    );
    for (t, why) in r.targets.iter().zip(&s.missing) {
        if let Some(why) = why {
            let _ = writeln!(o, "- {}: {why}", t.label);
        }
    }
    let slowest: Vec<String> = r
        .targets
        .iter()
        .zip(&s.read_ms_max)
        .filter_map(|(t, ms)| Some(format!("{} {:.1} ms", t.label, (*ms)?)))
        .collect();
    if !slowest.is_empty() {
        let _ = writeln!(
            o,
            "Slowest reading of the counters: {}.\n",
            slowest.join(", ")
        );
    }
    for step in &s.steps {
        let _ = writeln!(o, "### Server counters of {}\n", step.name);
        rows_table(o, r, "counter", &step.rows);
    }
}

/// Appends the storage detail: per step iostat's waits, queue, utilisation,
/// flushes and discards, and `dbgb2`, relative to the base.
pub fn storage(o: &mut String, r: &Report, steps: &[crate::report::storage::StorageStep]) {
    o.push_str(
        "## Storage detail

",
    );
    o.push_str(
        "iostat -x over the watched devices, averaged over each step's measured interval, and \
         the data directory's size after it. Ratios are target ÷ base.\n\n",
    );
    for step in steps {
        let _ = writeln!(o, "### Storage during {}\n", step.name);
        rows_table(o, r, "metric", &step.rows);
    }
}

/// A table of `rows`: the label, then each target's value and (after the
/// base) its ratio to the base.
fn rows_table(o: &mut String, r: &Report, what: &str, rows: &[ServerRow]) {
    let mut header = vec![what.to_string()];
    let mut right = vec![false];
    for (i, t) in r.targets.iter().enumerate() {
        header.push(t.label.clone());
        right.push(true);
        if i > 0 {
            header.push(format!("{}/{}", t.column, r.targets[0].column));
            right.push(true);
        }
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.label.clone()];
            for (i, v) in row.values.iter().enumerate() {
                cells.push(opt_amount(*v));
                if i > 0 {
                    cells.push(row.relative[i].map(rel).unwrap_or_default());
                }
            }
            cells
        })
        .collect();
    super::markdown::table(o, &header, &right, &cells);
}

/// Appends the CPU-profile section to `o`: per step the top functions by
/// self CPU µs per operation (the flamegraphs are in the HTML report).
pub fn profiles(o: &mut String, r: &Report, s: &ProfileSection) {
    o.push_str("## CPU profiles\n\n");
    o.push_str(
        "The server's processes sampled with `perf record -e cpu-clock -g` during the measured \
         interval; self CPU µs per operation of the top functions (flamegraphs in the HTML \
         report).\n\n",
    );
    for (t, why) in r.targets.iter().zip(&s.missing) {
        if let Some(why) = why {
            let _ = writeln!(o, "- {}: no profile: {why}", t.label);
        }
    }
    o.push('\n');
    for step in &s.steps {
        let _ = writeln!(o, "### Top functions of {} ({})\n", step.name, step.per);
        let rows: Vec<ServerRow> = step
            .top
            .iter()
            .map(|f| ServerRow {
                label: format!("`{}`", f.function),
                ..f.as_row()
            })
            .collect();
        rows_table(o, r, "function", &rows);
    }
}
