//! The report as Markdown, laid out like the seeds' posts so a user can
//! paste a section into a post unchanged: a legend naming the base and
//! `col-1`, `col-2`…, then one table per group with the relative QPS
//! columns first and the test last, and a one-line summary per group.

use std::fmt::Write as _;

use anyhow::Result;

use super::Renderer;

use crate::report::context::{
    common_by_family, no_differences, setting_cell, settings_legend, shared_by,
};
use crate::report::format::{amount, bp, host_line, opt_amount, rel, rel_pm, secs};
use crate::report::ibench::{IbenchSection, METRIC_COLUMNS};
use crate::report::model::{Band, Report};
use crate::report::sysbench::basis_points;

/// Renders the whole report: the title, then every section of
/// [`sections`] in order.
pub fn render(r: &Report) -> String {
    let mut o = title(r);
    for (_, text) in sections(r) {
        o.push_str(&text);
    }
    o
}

/// The title and the line saying where the report came from.
fn title(r: &Report) -> String {
    let mut o = String::new();
    let others: Vec<&str> = r.targets[1..].iter().map(|t| t.label.as_str()).collect();
    let _ = writeln!(
        o,
        "# tidemark report: {}{}\n",
        r.base,
        if others.is_empty() {
            String::new()
        } else {
            format!(" vs {}", others.join(", "))
        }
    );
    let runs: Vec<String> = r.context.runs.iter().map(|x| x.id.to_string()).collect();
    let _ = writeln!(
        o,
        "Generated {} by tidemark {} from stored run{} {}.\n",
        r.generated_at,
        r.tidemark_version,
        if runs.len() == 1 { "" } else { "s" },
        runs.join(", ")
    );
    o
}

/// The report as (file stem, Markdown) sections, in the order the whole
/// report lists them: `summary`, `context`, `sysbench-<group>` (each with
/// its own legend, so it pastes alone), `chain`, `ibench`, `server`
/// (server counters, CPU profiles, storage detail), `shards` (per-shard
/// throughput of `--client-hosts` steps), `plans`, `configs` (each managed
/// target's whole configuration file). `tidemark
/// report` writes each as `sections/<stem>.md` besides `report.md`.
pub fn sections(r: &Report) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut o = String::new();
    super::markdown_overview::summary(&mut o, r);
    if !r.notes.is_empty() {
        o.push_str("**Read first:**\n\n");
        for n in &r.notes {
            let _ = writeln!(o, "- {n}");
        }
        o.push('\n');
    }
    out.push(("summary".to_string(), o));
    let mut o = String::new();
    context(&mut o, r);
    out.push(("context".to_string(), o));
    if let Some(s) = &r.sweep {
        let mut o = String::new();
        super::sweep::markdown(&mut o, s);
        out.push(("sweep".to_string(), o));
    }
    if let Some(s) = &r.sysbench {
        out.extend(super::markdown_sysbench::sections(r, s));
    }
    if let Some(s) = &r.instructions {
        let mut o = String::new();
        super::md_instructions::section(&mut o, r, s);
        out.push(("instructions".to_string(), o));
    }
    let mut o = String::new();
    super::chain::markdown(&mut o, r);
    if !o.is_empty() {
        out.push(("chain".to_string(), o));
    }
    if let Some(s) = &r.ibench {
        let mut o = String::new();
        ibench(&mut o, r, s);
        out.push(("ibench".to_string(), o));
    }
    let mut o = String::new();
    if let Some(s) = &r.server {
        super::md_server::section(&mut o, r, s);
    }
    if let Some(s) = &r.profiles {
        super::md_server::profiles(&mut o, r, s);
    }
    if !r.storage.is_empty() {
        super::md_server::storage(&mut o, r, &r.storage);
    }
    if !o.is_empty() {
        out.push(("server".to_string(), o));
    }
    let mut o = String::new();
    crate::report::shards::markdown(&mut o, &r.shards);
    if !o.is_empty() {
        out.push(("shards".to_string(), o));
    }
    let mut o = String::new();
    plans(&mut o, r);
    if !o.is_empty() {
        out.push(("plans".to_string(), o));
    }
    let mut o = String::new();
    config_files(&mut o, r);
    if !o.is_empty() {
        out.push(("configs".to_string(), o));
    }
    out
}

/// Each managed target's configuration file as the server read it, in a
/// fenced block (fenced longer than any backtick run inside it).
fn config_files(o: &mut String, r: &Report) {
    let files: Vec<_> = r
        .targets
        .iter()
        .zip(&r.context.targets)
        .filter(|(_, x)| !x.config_text.trim().is_empty())
        .collect();
    if files.is_empty() {
        return;
    }
    o.push_str(
        "## Configuration files

",
    );
    for (t, x) in files {
        let text = x.config_text.trim_end();
        let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat((longest + 1).max(3));
        let _ = writeln!(
            o,
            "### {} ({})\n\n{fence}\n{text}\n{fence}\n",
            t.column, t.label
        );
    }
}

/// The Markdown renderer (`report.md` in a report directory).
pub struct Markdown;

impl Renderer for Markdown {
    fn render(&self, report: &Report) -> Result<String> {
        Ok(render(report))
    }
}

/// Escapes a table cell.
pub(super) fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A table row: `label`, then one cell per item of `cells`.
fn labelled_row<T>(label: &str, cells: &[T], cell: impl FnMut(&T) -> String) -> Vec<String> {
    let mut row = vec![label.to_string()];
    row.extend(cells.iter().map(cell));
    row
}

/// A pipe table: header, alignment row (`right` per column), rows.
pub(super) fn table(o: &mut String, header: &[String], right: &[bool], rows: &[Vec<String>]) {
    let line = |cells: &[String]| {
        format!(
            "| {} |",
            cells
                .iter()
                .map(|c| cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        )
    };
    let _ = writeln!(o, "{}", line(header));
    let align: Vec<String> = right
        .iter()
        .map(|&r| if r { "---:".into() } else { "---".into() })
        .collect();
    let _ = writeln!(o, "|{}|", align.join("|"));
    for row in rows {
        let _ = writeln!(o, "{}", line(row));
    }
    o.push('\n');
}

fn context(o: &mut String, r: &Report) {
    let c = &r.context;
    o.push_str("## Context\n\n");
    let header: Vec<String> = [
        "column", "target", "run", "version", "config", "profile", "workload", "steps", "measured",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = r
        .targets
        .iter()
        .zip(&c.targets)
        .map(|(t, x)| {
            vec![
                t.column.clone(),
                t.label.clone(),
                t.run_id.to_string(),
                x.version.clone(),
                x.config_name.clone().unwrap_or_else(|| "-".into()),
                x.profile.clone(),
                x.workload.clone(),
                x.reported_steps.to_string(),
                secs(x.measured_secs),
            ]
        })
        .collect();
    let mut right = vec![false; 9];
    right[2] = true;
    right[7] = true;
    right[8] = true;
    table(o, &header, &right, &rows);
    for (t, x) in r.targets.iter().zip(&c.targets) {
        if let Some(build) = &x.build {
            let _ = writeln!(o, "Build of {} ({}): {build}\n", t.column, t.label);
        }
    }
    if c.targets.iter().any(|x| !x.config_text.trim().is_empty()) {
        o.push_str("The configuration files the servers read are under \"Configuration files\" at the end.\n\n");
    }

    if c.same_host
        && let Some(run) = c.runs.first()
    {
        let _ = writeln!(o, "Host: {}\n", host_line(&run.host, true));
    }
    let rows: Vec<Vec<String>> = c
        .runs
        .iter()
        .map(|x| {
            let mut v = vec![
                x.id.to_string(),
                x.started_at.clone(),
                x.wall_secs.map(secs).unwrap_or_else(|| "-".into()),
                x.status.clone(),
                x.suite.clone(),
                x.tidemark_version.clone(),
                format!("`{}`", x.command_line.replace('`', "'")),
            ];
            if !c.same_host {
                v.insert(1, host_line(&x.host, true));
            }
            v
        })
        .collect();
    let mut header: Vec<String> = [
        "run",
        "started",
        "wall time",
        "status",
        "suite",
        "tidemark",
        "command",
    ]
    .map(String::from)
    .to_vec();
    if !c.same_host {
        header.insert(1, "host".into());
    }
    let mut right = vec![false; header.len()];
    right[0] = true;
    table(o, &header, &right, &rows);

    if c.settings_differ.is_empty() {
        let _ = writeln!(o, "{}\n", no_differences(c));
    } else {
        let _ = writeln!(
            o,
            "Settings that differ between targets ({}):\n",
            settings_legend(c)
        );
        let mut header = vec!["setting".to_string()];
        header.extend(r.targets.iter().map(|t| t.label.clone()));
        let rows: Vec<Vec<String>> = c
            .settings_differ
            .iter()
            .map(|d| {
                let mut v = vec![d.name.clone()];
                v.extend(
                    d.values
                        .iter()
                        .zip(&c.targets)
                        .map(|(x, t)| setting_cell(x, t, d)),
                );
                v
            })
            .collect();
        table(o, &header, &vec![false; header.len()], &rows);
    }
    for (family, shared) in common_by_family(c) {
        let _ = writeln!(
            o,
            "Non-default settings {} ({}):\n\n```text",
            shared_by(c, family),
            shared.len()
        );
        for s in shared {
            let _ = writeln!(o, "{} = {}", s.name, s.value);
        }
        o.push_str("```\n\n");
    }
}

fn ibench(o: &mut String, r: &Report, s: &IbenchSection) {
    o.push_str("## Insert Benchmark\n\n");
    let _ = writeln!(
        o,
        "Throughput is inserts/s for l.i0, l.i1, l.i2, indexed rows/s for l.x and queries/s for the \
         qr/qp steps. † = the step missed its background insert rate (below 95% of the target): \
         an SLA failure. Relative: **bold** ≥ {:.2}, _italic_ ≤ {:.2}.\n",
        r.ibench_bands.high, r.ibench_bands.low
    );
    let mut header = vec!["dbms".to_string()];
    header.extend(s.steps.iter().cloned());
    let mut right = vec![true; header.len()];
    right[0] = false;
    let mark = |failed: bool| if failed { " †" } else { "" };
    let abs: Vec<Vec<String>> = s
        .throughput
        .iter()
        .map(|row| {
            labelled_row(&row.target, &row.cells, |c| match c.value {
                Some(x) => format!("{}{}", amount(x), mark(c.sla_failed)),
                None => "-".into(),
            })
        })
        .collect();
    o.push_str("Throughput:\n\n");
    table(o, &header, &right, &abs);
    let relrows: Vec<Vec<String>> = s
        .throughput
        .iter()
        .enumerate()
        .map(|(i, row)| {
            labelled_row(&row.target, &row.cells, |c| {
                let text = match (i, c.value, c.relative, c.band) {
                    (0, Some(_), _, _) => "1.00".to_string(),
                    (_, _, Some(x), Some(Band::Faster)) => {
                        format!("**{}**", rel_pm(x, c.interval.as_ref()))
                    }
                    (_, _, Some(x), Some(Band::Slower)) => {
                        format!("_{}_", rel_pm(x, c.interval.as_ref()))
                    }
                    (_, _, Some(x), _) => rel_pm(x, c.interval.as_ref()),
                    _ => "-".into(),
                };
                format!("{text}{}", mark(c.sla_failed))
            })
        })
        .collect();
    o.push_str("Throughput relative to the first row:\n\n");
    table(o, &header, &right, &relrows);
    if !s.query_steps.is_empty() {
        let mut header = vec!["dbms".to_string()];
        header.extend(s.query_steps.iter().cloned());
        let mut rows: Vec<Vec<String>> = s
            .background
            .iter()
            .map(|row| {
                labelled_row(&row.target, &row.cells, |c| match c.achieved {
                    Some(x) => format!("{}{}", amount(x), mark(c.sla_failed)),
                    None => "n/a".into(),
                })
            })
            .collect();
        let mut last = vec!["target".to_string()];
        last.extend(s.background_targets.iter().map(|t| opt_amount(*t)));
        rows.push(last);
        o.push_str("Background insert rate (inserts/s) against its target:\n\n");
        table(o, &header, &vec![true; header.len()], &rows);
    }
    for m in &s.metrics {
        match m.per.as_str() {
            "" => _ = writeln!(o, "Metrics of {}:\n", m.step),
            per => _ = writeln!(o, "Metrics of {} ({per}):\n", m.step),
        }
        let mut header = vec!["dbms".to_string()];
        header.extend(METRIC_COLUMNS.iter().map(|c| c.to_string()));
        let rows: Vec<Vec<String>> = m
            .rows
            .iter()
            .map(|(t, vals)| {
                let mut v = vec![t.clone()];
                v.extend(vals.iter().map(|x| opt_amount(*x)));
                v
            })
            .collect();
        let mut right = vec![true; header.len()];
        right[0] = false;
        table(o, &header, &right, &rows);
    }
    for f in &s.fairness {
        let _ = writeln!(
            o,
            "Fairness of {} (seconds until each client finished; pct = diff / min_time × 100):\n",
            f.step
        );
        let header: Vec<String> = ["dbms", "clients", "min_time", "max_time", "diff", "pct"]
            .map(String::from)
            .to_vec();
        let rows: Vec<Vec<String>> = f
            .rows
            .iter()
            .map(|(t, x)| {
                vec![
                    t.clone(),
                    x.clients.to_string(),
                    amount(x.min_time),
                    amount(x.max_time),
                    amount(x.diff),
                    format!("{:.1}", x.pct),
                ]
            })
            .collect();
        let mut right = vec![true; 6];
        right[0] = false;
        table(o, &header, &right, &rows);
    }
    for t in &s.response_times {
        let _ = writeln!(
            o,
            "Response times of {} (µs; buckets in % of operations):\n",
            t.step
        );
        let mut header: Vec<String> = ["dbms", "role", "p50", "p99", "p99.9", "max"]
            .map(String::from)
            .to_vec();
        header.extend(s.latency_buckets.iter().map(|b| b.to_string()));
        let rows: Vec<Vec<String>> = t
            .rows
            .iter()
            .map(|x| {
                let mut v = vec![
                    x.target.clone(),
                    x.role.clone(),
                    x.p50_us.to_string(),
                    x.p99_us.to_string(),
                    x.p999_us.to_string(),
                    x.max_us.to_string(),
                ];
                match &x.buckets_pct {
                    Some(b) => v.extend(b.iter().map(|p| format!("{p:.1}"))),
                    None => v.extend(s.latency_buckets.iter().map(|_| "n/a".to_string())),
                }
                v
            })
            .collect();
        let mut right = vec![true; header.len()];
        right[0] = false;
        right[1] = false;
        table(o, &header, &right, &rows);
    }
}

fn plans(o: &mut String, r: &Report) {
    if r.plan_changes.is_empty() {
        return;
    }
    o.push_str("## Query plans that changed\n\n");
    o.push_str(
        "Plans are compared without cost estimates and literal numbers; `-` lines are the base's plan, `+` lines the target's.\n\n",
    );
    for p in &r.plan_changes {
        let who: Vec<String> = p
            .targets
            .iter()
            .map(|t| {
                format!(
                    "{} ({}){}",
                    t.target,
                    t.column,
                    t.relative
                        .map(|x| format!(
                            ", rQPS {} ({} basis points)",
                            rel(x),
                            bp(basis_points(x))
                        ))
                        .unwrap_or_default()
                )
            })
            .collect();
        let _ = writeln!(o, "### {}\n\n{} vs {}\n", p.test, r.base, who.join("; "));
        let _ = writeln!(o, "`{}`\n", p.statement.replace('`', "'"));
        o.push_str("```diff\n");
        let mut minus: Vec<&str> = Vec::new();
        let mut plus: Vec<&str> = Vec::new();
        let flush = |o: &mut String, minus: &mut Vec<&str>, plus: &mut Vec<&str>| {
            for l in minus.drain(..) {
                let _ = writeln!(o, "- {l}");
            }
            for l in plus.drain(..) {
                let _ = writeln!(o, "+ {l}");
            }
        };
        for row in &p.rows {
            if row.changed {
                minus.extend(row.base.as_deref());
                plus.extend(row.target.as_deref());
            } else {
                flush(o, &mut minus, &mut plus);
                let _ = writeln!(o, "  {}", row.base.as_deref().unwrap_or_default());
            }
        }
        flush(o, &mut minus, &mut plus);
        o.push_str("```\n\n");
    }
}
