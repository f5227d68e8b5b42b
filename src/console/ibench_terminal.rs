//! The Insert Benchmark part of the summary `tidemark run` prints, read
//! back from the store: the seeds' three summary tables (throughput per
//! step, relative to the first target; the background insert rate of the
//! query steps against its target; the fairness of fixed-work steps).

use std::fmt::Write as _;

use crate::record::IbenchMetrics;
use crate::report::format::rel;
use crate::report::model::relative;
use crate::store::{RunRecord, StepRecord};

/// One target's ibench steps: (step name, its metrics, its status).
type Column<'a> = (String, Vec<(&'a str, IbenchMetrics, &'a str)>);

fn columns(run: &RunRecord) -> Vec<Column<'_>> {
    run.targets
        .iter()
        .map(|t| {
            let steps = t
                .steps
                .iter()
                .filter(|s| s.info.suite == "ibench")
                .filter_map(|s: &StepRecord| {
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
pub fn summary(run: &RunRecord, model: Option<&crate::report::Report>) -> String {
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
    let head = |out: &mut String, first: &str, rel: bool, last: Option<&str>| {
        head(out, &cols, first, rel, last)
    };

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
        head(&mut out, "step", false, Some("target"));
        for n in q {
            let _ = write!(out, "  {n:<8}");
            let mut target = None;
            for c in 0..cols.len() {
                match find(c, n).and_then(|(_, m, _)| m.sla.as_ref()) {
                    Some(s) => {
                        target = Some(s.target_ips);
                        let mark = if s.failed { "*" } else { " " };
                        let _ = write!(out, " {:>13.0}{mark}", s.achieved_ips);
                    }
                    None => {
                        let _ = write!(out, " {:>14}", "-");
                    }
                }
            }
            let _ = match target {
                Some(t) => writeln!(out, " {t:>10.0}"),
                None => writeln!(out, " {:>10}", "-"),
            };
        }
    }

    let _ = writeln!(
        out,
        "\nfairness: max - min time for a client to finish its work, seconds (and % of the min)"
    );
    head(&mut out, "step", false, None);
    for n in &names {
        let _ = write!(out, "  {n:<8}");
        for c in 0..cols.len() {
            match find(c, n).and_then(|(_, m, _)| m.fairness.as_ref()) {
                Some(f) => {
                    let cell = format!("{:.1} ({:.1}%)", f.diff, f.pct);
                    let _ = write!(out, " {cell:>14}");
                }
                None => {
                    let _ = write!(out, " {:>14}", "-");
                }
            }
        }
        out.push('\n');
    }
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

/// A table's header line: the first column's title, the targets (with a
/// `rel` column after each but the first when `rel`), an optional last.
fn head(out: &mut String, cols: &[Column<'_>], first: &str, rel: bool, last: Option<&str>) {
    let _ = write!(out, "  {first:<8}");
    for (i, (label, _)) in cols.iter().enumerate() {
        let _ = write!(out, " {:>14}", truncate(label, 14));
        if rel && i > 0 {
            let _ = write!(out, " {:>6}", "rel");
        }
    }
    if let Some(l) = last {
        let _ = write!(out, " {l:>10}");
    }
    out.push('\n');
}

/// The throughput table from the stored rates, with bare ratios to the
/// first target (used when the run has no report model yet).
fn throughput_table(out: &mut String, cols: &[Column<'_>], names: &[&str]) {
    let find = |c: usize, n: &str| find(cols, c, n);
    let _ = writeln!(
        out,
        "\nInsert Benchmark: inserts/s (l.*, l.x: rows indexed/s) and queries/s (q*); * = SLA failure, ! = step not ok"
    );
    head(out, cols, "step", true, None);
    for n in names {
        let _ = write!(out, "  {n:<8}");
        let base = find(0, n).map(|s| s.1.rate);
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
                    let _ = write!(out, " {:>13.0}{mark}", m.rate);
                    if c > 0 {
                        let cell = base.and_then(|b| relative(m.rate, b)).map(rel);
                        let _ = write!(out, " {:>6}", cell.as_deref().unwrap_or("-"));
                    }
                }
                None => {
                    let _ = write!(out, " {:>14}", "-");
                    if c > 0 {
                        let _ = write!(out, " {:>6}", "-");
                    }
                }
            }
        }
        out.push('\n');
    }
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
