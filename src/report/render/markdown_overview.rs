//! The first section of the Markdown report: the verdict counts per suite
//! and group and the largest real changes (or, for one target, its
//! headline numbers and the command to compare next), from
//! [`crate::report::overview`], as document tables.

use std::fmt::Write as _;

use crate::report::document::{Cell, Column, Row, Table, markdown};
use crate::report::format::amount;
use crate::report::model::{Band, Report};
use crate::report::overview::{RealChange, build, count_word};
use crate::stats::VerdictCounts;

fn counts(c: &VerdictCounts) -> String {
    let parts: Vec<String> = c
        .nonzero_for_rate()
        .map(|(v, n)| format!("{n} {}", count_word(v)))
        .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// The changes: target, test, rQPS (bold when faster, italic when
/// slower) and the costs that moved with it.
fn changes(list: &[RealChange]) -> Table {
    let rows = list
        .iter()
        .map(|c| {
            let band = match c.verdict {
                "faster" => Some(Band::Faster),
                "slower" => Some(Band::Slower),
                _ => None,
            };
            Row::new(vec![
                Cell::text(format!("{} ({})", c.column, c.target)),
                Cell::text(format!("{} ({})", c.test, c.title)),
                Cell::ratio(c.relative, c.interval, Some(c.verdict), band),
                Cell::text(match c.moved.is_empty() {
                    true => "-".into(),
                    false => c.moved.join(", "),
                }),
            ])
        })
        .collect();
    let mut columns = ["target", "test", "rQPS", "moved with it"].map(Column::text);
    columns[2].right = true;
    Table::new("changes", columns.to_vec(), rows)
}

/// Writes the `## Summary` section.
pub(super) fn summary(o: &mut String, r: &Report) {
    let ov = build(r);
    o.push_str("## Summary\n\n");
    let min = amount(r.min_effect * 100.0)
        .trim_end_matches(".00")
        .to_string();
    let table = |o: &mut String, t: Table| markdown::table(o, &t);
    if let Some(h) = &ov.headline {
        let _ = writeln!(
            o,
            "One target, {}: nothing to compare yet. Its numbers, median over each group's tests:\n",
            r.base
        );
        let cell = |x: Option<f64>| x.map_or_else(|| Cell::num("-"), Cell::amount);
        let rows = h.rows.iter().map(|x| {
            Row::new(vec![
                Cell::text(&x.title),
                Cell::count(x.tests),
                cell(x.median_qps),
                cell(x.median_p99_us),
                cell(x.median_cpu_us),
            ])
        });
        let mut columns = vec![Column::text("group")];
        columns.extend(
            [
                "tests",
                "median QPS",
                "median p99 µs",
                "median host CPU µs/query",
            ]
            .map(Column::num),
        );
        table(o, Table::new("headline", columns, rows.collect()));
        o.push_str(
            "Compare next (OTHER: another target spec; RUN: another stored run):\n\n```sh\n",
        );
        for c in &h.next {
            let _ = writeln!(o, "{c}");
        }
        o.push_str("```\n\n");
        return;
    }
    let mut columns = vec![Column::text("suite: group"), Column::num("tests")];
    columns.extend(
        r.targets[1..]
            .iter()
            .map(|t| Column::text(format!("{} ({})", t.column, t.label))),
    );
    let rows = ov.groups.iter().map(|g| {
        let mut v = vec![
            Cell::text(format!("{}: {}", g.suite, g.title)),
            Cell::count(g.tests),
        ];
        v.extend(g.counts.iter().zip(&g.detectable).map(|(c, d)| {
            Cell::text(match crate::report::overview::sees(*d) {
                Some(sees) => format!("{} ({sees})", counts(c)),
                None => counts(c),
            })
        }));
        Row::new(v)
    });
    table(o, Table::new("verdicts", columns, rows.collect()));
    let _ = writeln!(
        o,
        "Versus base {}: slower/faster = the 95 % interval of rQPS lies wholly below/above 1 and the change is at least {min}%; same = no difference; sees ±x% = the median half-width of the group's intervals, the smallest change this run could call real there; unknown = no interval (too few seconds or repetitions); not verified = one measurement per side, whose interval cannot see drift between servers or over time (repeat with `--repeat 3`).\n",
        r.base
    );
    if !ov.changes.is_empty() {
        o.push_str("Largest real changes:\n\n");
        table(o, changes(&ov.changes));
        if ov
            .changes
            .iter()
            .any(|c| c.moved.iter().any(|m| m.starts_with('~')))
        {
            o.push_str("~: the cost's point estimate; a cost gets an interval only from repetitions (`--repeat 3`).\n\n");
        }
        if ov.more_changes > 0 {
            let _ = writeln!(o, "{} more in the tables below.\n", ov.more_changes);
        }
    } else if !ov.unverified.is_empty() {
        let _ = writeln!(
            o,
            "No real change yet: no interval lies wholly beyond ±{min}%. The largest changes below have no verdict (one measurement per side, or too few seconds); measure again with `--repeat 3` before believing them (~: a cost's point estimate, no interval).\n"
        );
        table(o, changes(&ov.unverified));
    } else {
        let _ = write!(
            o,
            "No real change: no test's interval lies wholly beyond ±{min}%."
        );
        if !ov.within_noise.is_empty() {
            let list: Vec<String> = ov
                .within_noise
                .iter()
                .map(|c| format!("{} {} {}", c.column, c.test, c.rqps()))
                .collect();
            let _ = write!(o, " Largest, within noise: {}.", list.join("; "));
        }
        o.push_str("\n\n");
    }
}
