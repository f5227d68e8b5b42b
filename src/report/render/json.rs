//! `report.json`: the whole report model, for scripts.

use anyhow::Result;

use super::Renderer;
use crate::report::model::Report;

/// The JSON renderer (`report.json`).
pub struct Json;

impl Renderer for Json {
    fn file_name(&self) -> &'static str {
        "report.json"
    }

    fn render(&self, report: &Report) -> Result<String> {
        render(report)
    }
}

/// The model as pretty-printed JSON (the shape is versioned by
/// [`crate::report::model::REPORT_FORMAT`]).
pub fn render(r: &Report) -> Result<String> {
    let mut s = serde_json::to_string_pretty(r)?;
    s.push('\n');
    Ok(s)
}
