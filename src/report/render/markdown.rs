//! The report as Markdown, laid out like the seeds' posts so a user can
//! paste a section into a post unchanged: a legend naming the base and
//! `col-1`, `col-2`…, then one table per group with the relative QPS
//! columns first and the test last, and a one-line summary per group.

use std::fmt::Write as _;

use anyhow::Result;

use super::Renderer;

use crate::report::document;
use crate::report::model::Report;

/// Renders the whole report: the title, then every part of [`sections`]
/// in order.
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

/// The report as (file stem, Markdown) parts, in the order the whole
/// report lists them ([`crate::report::sections::parts`]): `tidemark
/// report` writes each as `sections/<stem>.md` besides `report.md`.
pub fn sections(r: &Report) -> Vec<(String, String)> {
    let parts = crate::report::sections::parts(r);
    parts
        .iter()
        .flat_map(|p| p.files())
        .map(|(stem, blocks)| (stem.to_string(), document::markdown::render(blocks)))
        .collect()
}

/// The Markdown renderer (`report.md` in a report directory).
pub struct Markdown;

impl Renderer for Markdown {
    fn render(&self, report: &Report) -> Result<String> {
        Ok(render(report))
    }
}
