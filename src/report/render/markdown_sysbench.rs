//! The sysbench part of the Markdown report, one section per group so
//! each pastes into a post alone: the group's summary, the seeds' legend
//! and `col-1 col-2 … test` table (as a pipe table with intervals, and as
//! the plain text block the posts print), absolute QPS, the seeds' wide
//! per-operation cost table and the latency percentiles.

use std::fmt::Write as _;

use super::markdown::table;
use crate::report::cost::{seed_column_name, seed_columns};
use crate::report::format::{amount, opt_amount, rel, rel_pm};
use crate::report::model::{Band, Report};
use crate::report::sysbench::{Cell, GroupSection, SysbenchSection};

/// The sysbench sections: `sysbench` (what the numbers mean), then
/// `sysbench-<group>` per group.
pub(super) fn sections(r: &Report, s: &SysbenchSection) -> Vec<(String, String)> {
    let mut o = String::from("## Sysbench\n\n");
    if r.targets.len() > 1 {
        let _ = writeln!(
            o,
            "Relative QPS (rQPS) is QPS(target) / QPS(base): above 1 the target is faster; \
             ± is half its 95 % interval. **Bold**: faster, _italic_: slower — the whole \
             interval past 1 and the change at least {m}%; plain: no difference (within \
             noise or under {m}%). One basis point is a change of 0.01 in rQPS.\n",
            m = amount(r.min_effect * 100.0).trim_end_matches(".00"),
        );
        if let Some(m) = &r.interval_method {
            let _ = writeln!(o, "Intervals: {m}.\n");
        }
    }
    let mut out = vec![("sysbench".to_string(), o)];
    for g in &s.groups {
        let mut o = String::new();
        group(&mut o, r, s, g);
        out.push((format!("sysbench-{}", g.group), o));
    }
    out
}

/// The seeds' legend: the base and what each `col-N` is.
fn legend(o: &mut String, r: &Report) {
    let _ = writeln!(o, "Relative to: {}  ", r.base);
    for t in &r.targets[1..] {
        let _ = writeln!(o, "{} : {}  ", t.column, t.label);
    }
    o.push('\n');
}

/// A relative value as a Markdown cell: bold when faster, italic when
/// slower, `-` when there is none.
fn rel_cell(c: Option<&Cell>) -> String {
    match c.and_then(|c| Some((c.relative?, c.band?, c.interval))) {
        Some((v, Band::Faster, iv)) => format!("**{}**", rel_pm(v, iv.as_ref())),
        Some((v, Band::Slower, iv)) => format!("_{}_", rel_pm(v, iv.as_ref())),
        Some((v, Band::Similar, iv)) => rel_pm(v, iv.as_ref()),
        None => "-".into(),
    }
}

/// The group's rQPS as the seeds' posts print it: a plain-text block,
/// columns 8 wide, `col-1   col-2   <group>` then one line per test with
/// the test last.
fn seeds_block(o: &mut String, r: &Report, g: &GroupSection) {
    o.push_str("As the seeds print it:\n\n```text\n");
    let mut line = String::new();
    for t in &r.targets[1..] {
        let _ = write!(line, "{:<8}", t.column);
    }
    let _ = writeln!(o, "{line}{}", g.title);
    for t in &g.tests {
        let mut line = String::new();
        for c in &t.cells[1..] {
            let v = c.as_ref().and_then(|c| c.relative).map_or("-".into(), rel);
            let _ = write!(line, "{v:<8}");
        }
        let _ = writeln!(o, "{line}{}", t.label);
    }
    o.push_str("```\n\n");
}

fn group(o: &mut String, r: &Report, s: &SysbenchSection, g: &GroupSection) {
    let _ = writeln!(o, "### {}\n", g.title);
    if !g.summaries.is_empty() {
        for sum in &g.summaries {
            let _ = writeln!(o, "- {} ({}): {}", sum.column, sum.target, sum.text);
        }
        o.push('\n');
        legend(o, r);
        let mut header: Vec<String> = r.targets[1..].iter().map(|t| t.column.clone()).collect();
        header.push(g.title.to_string());
        let mut right = vec![true; header.len()];
        *right.last_mut().unwrap() = false;
        let rows: Vec<Vec<String>> = g
            .tests
            .iter()
            .map(|t| {
                let mut v: Vec<String> =
                    t.cells[1..].iter().map(|c| rel_cell(c.as_ref())).collect();
                v.push(t.label.clone());
                v
            })
            .collect();
        table(o, &header, &right, &rows);
        seeds_block(o, r, g);
    }
    o.push_str("Absolute QPS:\n\n");
    let mut header = vec!["test".to_string()];
    header.extend(r.targets.iter().map(|t| t.label.clone()));
    let mut right = vec![true; header.len()];
    right[0] = false;
    let mut flagged = false;
    let rows: Vec<Vec<String>> = g
        .tests
        .iter()
        .map(|t| {
            let mut v = vec![t.label.clone()];
            for c in &t.cells {
                v.push(match c {
                    Some(c) if c.flagged() => {
                        flagged = true;
                        format!("{} !", amount(c.qps))
                    }
                    Some(c) => amount(c.qps),
                    None => "-".into(),
                });
            }
            v
        })
        .collect();
    table(o, &header, &right, &rows);
    if flagged {
        o.push_str("! = the step had errors or did not run to its end.\n\n");
    }
    workload_counts(o, r, g);
    statement_latencies(o, r, g);
    writes_block(o, r, g);
    cost_table(o, r, s, g);
    latency_table(o, r, g);
}

/// A workload file's transactions, retries and failures per target
/// (measured interval, summed over repetitions); nothing for sysbench.
fn workload_counts(o: &mut String, r: &Report, g: &GroupSection) {
    let rows: Vec<Vec<String>> = g
        .tests
        .iter()
        .flat_map(|t| {
            t.cells.iter().zip(&r.targets).filter_map(|(c, target)| {
                let counts = c.as_ref()?.workload.as_ref()?;
                Some(vec![
                    t.label.clone(),
                    target.label.clone(),
                    crate::report::workload::summary(counts),
                ])
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    o.push_str("Transactions (measured interval; retries and failures by error class):\n\n");
    let header = ["workload", "target", "transactions"].map(String::from);
    table(o, &header, &[false, false, false], &rows);
}

/// A workload file's statements and each target's mean latency per
/// execution (pgbench -r's per-statement report); nothing for sysbench.
fn statement_latencies(o: &mut String, r: &Report, g: &GroupSection) {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for t in &g.tests {
        for s in crate::report::workload::statement_rows(&t.workload_counts()) {
            let mut row = vec![
                t.label.clone(),
                s.key.clone(),
                format!(
                    "`{}`",
                    crate::report::workload::sql_excerpt(&s.sql, 60).replace('`', "'")
                ),
            ];
            row.extend(s.mean_ms.iter().map(|m| opt_amount(*m)));
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return;
    }
    o.push_str("Statement latencies (mean ms per execution, measured interval):\n\n");
    let mut header: Vec<String> = ["workload", "statement", "SQL"].map(String::from).to_vec();
    header.extend(r.targets.iter().map(|t| t.label.clone()));
    let right: Vec<bool> = (0..header.len()).map(|i| i >= 3).collect();
    table(o, &header, &right, &rows);
}

/// The seeds' config-comparison block (the 2024 fsync/binlog post):
/// absolute QPS of insert, update-index and update-nonindex, one line per
/// target, the target last. Only for a group that has all three.
fn writes_block(o: &mut String, r: &Report, g: &GroupSection) {
    let cols = [
        ("insert", "ins"),
        ("update-index", "upd-ix"),
        ("update-nonindex", "upd-nix"),
    ];
    let rows: Option<Vec<_>> = cols
        .iter()
        .map(|(name, _)| g.tests.iter().find(|t| t.label == *name))
        .collect();
    let Some(rows) = rows else { return };
    o.push_str("Absolute QPS of the three write tests, one line per target, as the seeds print it:\n\n```text\n");
    for (_, short) in &cols {
        let _ = write!(o, "{short:<8}");
    }
    o.push_str("dbms\n");
    for (i, t) in r.targets.iter().enumerate() {
        for row in &rows {
            let v = row.cells[i]
                .as_ref()
                .map_or("-".into(), |c| format!("{:.0}", c.qps));
            let _ = write!(o, "{v:>6}  ");
        }
        let _ = writeln!(o, "{}", t.label);
    }
    o.push_str("```\n\n");
}

/// The seeds' wide per-operation table: one row per test and target,
/// `cpu/o cs/o r/o rKB/o wKB/o o/s` and server and client CPU, then the
/// same relative to the base.
fn cost_table(o: &mut String, r: &Report, s: &SysbenchSection, g: &GroupSection) {
    let (shown, absent) = s.cost_split();
    if !shown.is_empty() {
        let order = seed_columns(&s.cost_columns, &s.cost_present);
        let name = |c: &Option<usize>| seed_column_name(&s.cost_columns, *c);
        let compared = r.targets.len() > 1;
        let mut header = vec!["test".to_string(), "target".to_string()];
        header.extend(order.iter().map(|c| name(c).to_string()));
        if compared {
            header.extend(order.iter().map(|c| format!("{} rel", name(c))));
        }
        let mut right = vec![true; header.len()];
        right[0] = false;
        right[1] = false;
        let mut rows = Vec::new();
        for t in &g.tests {
            for (i, c) in t.cells.iter().enumerate() {
                let mut v = vec![t.label.clone(), r.targets[i].label.clone()];
                let Some(c) = c else {
                    v.extend(header[2..].iter().map(|_| "-".to_string()));
                    rows.push(v);
                    continue;
                };
                v.extend(order.iter().map(|k| match k {
                    Some(k) => opt_amount(c.cost[*k]),
                    None => amount(c.qps),
                }));
                if compared {
                    v.extend(order.iter().map(|k| {
                        if i == 0 {
                            return String::new();
                        }
                        match k {
                            Some(k) => c.cost_relative[*k].map_or("n/a".into(), rel),
                            None => c.relative.map_or("-".into(), rel),
                        }
                    }));
                }
                rows.push(v);
            }
        }
        o.push_str("Cost per query (cpu/o: host CPU µs, client included; cs/o: context switches; r/o: storage reads; rKB/o, wKB/o: KB read, written; o/s: queries per second; srv/o, cli/o: server and client CPU µs; rel: target / base):\n\n");
        table(o, &header, &right, &rows);
    }
    if !absent.is_empty() {
        let _ = writeln!(
            o,
            "Not stored for these runs (n/a): {}.\n",
            absent.join(", ")
        );
    }
}

/// Event latency per test and target, µs.
fn latency_table(o: &mut String, r: &Report, g: &GroupSection) {
    let header: Vec<String> = ["test", "target", "p50", "p95", "p99", "max"]
        .map(String::from)
        .to_vec();
    let mut rows = Vec::new();
    for t in &g.tests {
        for (i, c) in t.cells.iter().enumerate() {
            let mut v = vec![t.label.clone(), r.targets[i].label.clone()];
            match c {
                Some(c) => {
                    v.extend([c.p50_us, c.p95_us, c.p99_us, c.max_us].map(|x| x.to_string()))
                }
                None => v.extend((0..4).map(|_| "-".to_string())),
            }
            rows.push(v);
        }
    }
    o.push_str("Latency per event (µs):\n\n");
    table(o, &header, &[false, false, true, true, true, true], &rows);
}
