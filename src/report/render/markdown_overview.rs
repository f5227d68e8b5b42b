//! The first section of the Markdown report: the verdict counts per suite
//! and group and the largest real changes (or, for one target, its
//! headline numbers and the command to compare next), from
//! [`crate::report::overview`].

use std::fmt::Write as _;

use super::markdown::table;
use crate::report::format::amount;
use crate::report::model::Report;
use crate::report::overview::{RealChange, build};
use crate::stats::VerdictCounts;

fn counts(c: &VerdictCounts) -> String {
    let parts: Vec<String> = [
        (c.lower, "slower"),
        (c.higher, "faster"),
        (c.no_difference, "same"),
        (c.unknown, "unknown"),
        (c.unverified, "not verified"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

fn change_rows(list: &[RealChange]) -> Vec<Vec<String>> {
    list.iter()
        .map(|c| {
            vec![
                format!("{} ({})", c.column, c.target),
                format!("{} ({})", c.test, c.title),
                match c.verdict {
                    "faster" => format!("**{}**", c.rqps()),
                    "slower" => format!("_{}_", c.rqps()),
                    _ => c.rqps(),
                },
                if c.moved.is_empty() {
                    "-".into()
                } else {
                    c.moved.join(", ")
                },
            ]
        })
        .collect()
}

/// Writes the `## Summary` section.
pub(super) fn summary(o: &mut String, r: &Report) {
    let ov = build(r);
    o.push_str("## Summary\n\n");
    let min = amount(r.min_effect * 100.0)
        .trim_end_matches(".00")
        .to_string();
    if let Some(h) = &ov.headline {
        let _ = writeln!(
            o,
            "One target, {}: nothing to compare yet. Its numbers, median over each group's tests:\n",
            r.base
        );
        let header: Vec<String> = [
            "group",
            "tests",
            "median QPS",
            "median p99 µs",
            "median host CPU µs/query",
        ]
        .map(String::from)
        .to_vec();
        let cell = |x: Option<f64>| x.map_or("-".into(), amount);
        let rows: Vec<Vec<String>> = h
            .rows
            .iter()
            .map(|x| {
                vec![
                    x.title.clone(),
                    x.tests.to_string(),
                    cell(x.median_qps),
                    cell(x.median_p99_us),
                    cell(x.median_cpu_us),
                ]
            })
            .collect();
        table(o, &header, &[false, true, true, true, true], &rows);
        o.push_str(
            "Compare next (OTHER: another target spec; RUN: another stored run):\n\n```sh\n",
        );
        for c in &h.next {
            let _ = writeln!(o, "{c}");
        }
        o.push_str("```\n\n");
        return;
    }
    let mut header = vec!["suite: group".to_string(), "tests".to_string()];
    header.extend(
        r.targets[1..]
            .iter()
            .map(|t| format!("{} ({})", t.column, t.label)),
    );
    let rows: Vec<Vec<String>> = ov
        .groups
        .iter()
        .map(|g| {
            let mut v = vec![format!("{}: {}", g.suite, g.title), g.tests.to_string()];
            v.extend(g.counts.iter().map(counts));
            v
        })
        .collect();
    let mut right = vec![false; header.len()];
    right[1] = true;
    table(o, &header, &right, &rows);
    let _ = writeln!(
        o,
        "Versus base {}: slower/faster = the 95 % interval of rQPS lies wholly below/above 1 and the change is at least {min}%; same = no difference; unknown = no interval (too few seconds or repetitions); not verified = one measurement per side, whose interval cannot see drift between servers or over time (repeat with `--repeat 3`).\n",
        r.base
    );
    let header: Vec<String> = ["target", "test", "rQPS", "moved with it"]
        .map(String::from)
        .to_vec();
    let right = [false, false, true, false];
    if !ov.changes.is_empty() {
        o.push_str("Largest real changes:\n\n");
        table(o, &header, &right, &change_rows(&ov.changes));
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
        table(o, &header, &right, &change_rows(&ov.unverified));
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
