//! The report as Markdown, laid out like the seeds' posts so a user can
//! paste a section into a post unchanged: a legend naming the base and
//! `col-1`, `col-2`…, then one table per group with the relative QPS
//! columns first and the test last, and a one-line summary per group.

use std::fmt::Write as _;

use anyhow::Result;

use super::Renderer;

use crate::report::model::Report;
use crate::report::sections::{server, summary};

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
    crate::report::document::markdown::write(&mut o, &[summary::section(r)]);
    if !r.notes.is_empty() {
        o.push_str("**Read first:**\n\n");
        for n in &r.notes {
            let _ = writeln!(o, "- {n}");
        }
        o.push('\n');
    }
    out.push(("summary".to_string(), o));
    let mut o = String::new();
    crate::report::document::markdown::write(
        &mut o,
        &[crate::report::sections::context::section(r)],
    );
    out.push(("context".to_string(), o));
    if let Some(s) = &r.sweep {
        let blocks = [crate::report::sections::sweep::section(s)];
        out.push((
            "sweep".to_string(),
            crate::report::document::markdown::render(&blocks),
        ));
    }
    if let Some(s) = &r.sysbench {
        use crate::report::sections::sysbench;
        let md = crate::report::document::markdown::render;
        let intro = format!("## Sysbench\n\n{}", md(&sysbench::intro(r)));
        out.push(("sysbench".to_string(), intro));
        for g in &s.groups {
            out.push((
                format!("sysbench-{}", g.group),
                md(&sysbench::group(r, s, g)),
            ));
        }
    }
    if let Some(s) = crate::report::sections::instructions::section(r) {
        out.push((
            "instructions".to_string(),
            crate::report::document::markdown::render(&[s]),
        ));
    }
    if let Some(chain) = crate::report::sections::chain::section(r) {
        out.push((
            "chain".to_string(),
            crate::report::document::markdown::render(&[chain]),
        ));
    }
    if let Some(s) = &r.ibench {
        let mut o = String::new();
        crate::report::document::markdown::write(
            &mut o,
            &[crate::report::sections::ibench::section(r, s)],
        );
        out.push(("ibench".to_string(), o));
    }
    let mut blocks = Vec::new();
    if let Some(s) = &r.server {
        blocks.push(server::counters(r, s));
    }
    if let Some(s) = &r.profiles {
        blocks.extend(server::profiles_markdown(r, s));
    }
    if !r.storage.is_empty() {
        blocks.push(server::storage(r, &r.storage));
    }
    let o = crate::report::document::markdown::render(&blocks);
    if !o.is_empty() {
        out.push(("server".to_string(), o));
    }
    if let Some(shards) = crate::report::sections::shards::section(&r.shards) {
        out.push((
            "shards".to_string(),
            crate::report::document::markdown::render(&[shards]),
        ));
    }
    if let Some(plans) = crate::report::sections::plans::section(r) {
        out.push((
            "plans".to_string(),
            crate::report::document::markdown::render(&[plans]),
        ));
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
