//! The context section as a document: which target is which column, each
//! target's version, config, profile and workload, the runs behind them
//! (host, status, suite, command), the settings that differ between
//! targets and each family's shared non-default settings.

use crate::report::context::{
    common_by_family, no_differences, setting_cell, settings_legend, shared_by,
};
use crate::report::document::{Block, Cell, Column, Row, Table};
use crate::report::format::{host_line, secs};
use crate::report::model::Report;
use crate::report::render::svg::esc;

/// The section (`## Context`, `<section id="context">`).
pub fn section(r: &Report) -> Block {
    let c = &r.context;
    let mut blocks = vec![Block::Table(targets(r))];
    for (t, x) in r.targets.iter().zip(&c.targets) {
        if let Some(build) = &x.build {
            blocks.push(Block::Para(format!(
                "Build of {} ({}): {build}",
                t.column, t.label
            )));
        }
    }
    if c.targets.iter().any(|x| !x.config_text.trim().is_empty()) {
        blocks.push(Block::Markdown("The configuration files the servers read are under \"Configuration files\" at the end.\n\n".into()));
    }
    for (t, x) in r.targets.iter().zip(&c.targets) {
        if !x.config_text.trim().is_empty() {
            blocks.push(Block::Html(format!(
                "<details><summary>Configuration file of {} ({})</summary><pre>{}</pre></details>\n",
                esc(&t.column),
                esc(&t.label),
                esc(x.config_text.trim_end())
            )));
        }
    }
    if c.same_host
        && let Some(run) = c.runs.first()
    {
        blocks.push(Block::Para(format!("Host: {}", host_line(&run.host, true))));
    }
    blocks.push(Block::Table(runs(r)));
    if c.settings_differ.is_empty() {
        blocks.push(Block::Para(no_differences(c)));
    } else {
        let legend = settings_legend(c);
        blocks.push(Block::Markdown(format!(
            "Settings that differ between targets ({legend}):\n\n"
        )));
        blocks.push(Block::Html(format!(
            "<h3>Settings that differ between targets</h3><p class=\"legend\">{}.</p>\n",
            esc(&capitalised(legend))
        )));
        blocks.push(Block::Table(settings(r)));
    }
    for (family, shared) in common_by_family(c) {
        let lines: Vec<String> = shared
            .iter()
            .map(|s| format!("{} = {}\n", s.name, s.value))
            .collect();
        blocks.push(Block::Markdown(format!(
            "Non-default settings {} ({}):\n\n```text\n{}```\n\n",
            shared_by(c, family),
            shared.len(),
            lines.concat()
        )));
        blocks.push(Block::Html(format!(
            "<details><summary>{} non-default settings {}</summary><pre>{}</pre></details>\n",
            shared.len(),
            esc(&shared_by(c, family)),
            esc(&lines.concat())
        )));
    }
    Block::section("context", "Context", blocks)
}

/// One row per target: its column, label, run, version, config, profile,
/// workload, reported steps and measured time.
fn targets(r: &Report) -> Table {
    let rows = r
        .targets
        .iter()
        .zip(&r.context.targets)
        .map(|(t, x)| {
            Row::new(vec![
                Cell::text(&t.column),
                Cell::text(&t.label),
                Cell::count(t.run_id),
                Cell::text(&x.version),
                Cell::text(x.config_name.as_deref().unwrap_or("-")),
                Cell::text(&x.profile),
                Cell::text(&x.workload),
                Cell::count(x.reported_steps),
                Cell::num(secs(x.measured_secs)),
            ])
        })
        .collect();
    let mut columns: Vec<Column> = [
        "column", "target", "run", "version", "config", "profile", "workload",
    ]
    .map(Column::text)
    .to_vec();
    columns[2].right = true;
    columns.extend(["steps", "measured"].map(Column::num));
    Table::new("targets", columns, rows)
}

/// One row per stored run: id, host (when the runs ran on different
/// hosts), start, wall time, status, suite, tidemark version, command.
fn runs(r: &Report) -> Table {
    let c = &r.context;
    let rows = c
        .runs
        .iter()
        .map(|x| {
            let mut v = vec![
                Cell::count(x.id),
                Cell::text(&x.started_at),
                Cell::num(x.wall_secs.map(secs).unwrap_or_else(|| "-".into())),
                Cell::text(&x.status),
                Cell::text(&x.suite),
                Cell::text(&x.tidemark_version),
                Cell::code(&x.command_line),
            ];
            if !c.same_host {
                v.insert(1, Cell::text(host_line(&x.host, true)));
            }
            Row::new(v)
        })
        .collect();
    let mut columns = vec![Column::num("run")];
    if !c.same_host {
        columns.push(Column::text("host"));
    }
    columns.extend(
        [
            "started",
            "wall time",
            "status",
            "suite",
            "tidemark",
            "command",
        ]
        .map(Column::text),
    );
    Table::new("runs", columns, rows)
}

/// The settings whose values differ: one row per setting, a column per
/// target.
fn settings(r: &Report) -> Table {
    let c = &r.context;
    let mut columns = vec![Column::text("setting")];
    columns.extend(r.targets.iter().map(|t| Column::text(&t.label)));
    let rows = c
        .settings_differ
        .iter()
        .map(|d| {
            let mut v = vec![Cell::text(&d.name)];
            v.extend(
                d.values
                    .iter()
                    .zip(&c.targets)
                    .map(|(x, t)| Cell::text(setting_cell(x, t, d))),
            );
            Row::new(v)
        })
        .collect();
    Table::new("settings", columns, rows)
}

/// `text` with its first letter in upper case.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|f| f.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Each managed target's configuration file as the server read it, in a
/// fenced block (fenced longer than any backtick run inside it): Markdown
/// only. `None` when no target has one.
pub fn config_files(r: &Report) -> Option<Block> {
    let files: Vec<_> = r
        .targets
        .iter()
        .zip(&r.context.targets)
        .filter(|(_, x)| !x.config_text.trim().is_empty())
        .collect();
    if files.is_empty() {
        return None;
    }
    let mut o = String::from("## Configuration files\n\n");
    for (t, x) in files {
        let text = x.config_text.trim_end();
        let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat((longest + 1).max(3));
        o.push_str(&format!(
            "### {} ({})\n\n{fence}\n{text}\n{fence}\n\n",
            t.column, t.label
        ));
    }
    Some(Block::Markdown(o))
}
