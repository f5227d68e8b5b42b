//! `report.json`: the whole report model, for scripts.

use anyhow::Result;

use super::Renderer;
use crate::report::model::Report;

/// The model as pretty-printed JSON (the shape is versioned by
/// [`crate::report::model::REPORT_FORMAT`]).
pub fn render(r: &Report) -> Result<String> {
    let mut s = serde_json::to_string_pretty(r)?;
    s.push('\n');
    Ok(s)
}

/// The JSON renderer (`report.json` in a report directory).
pub struct Json;

impl Renderer for Json {
    fn render(&self, report: &Report) -> Result<String> {
        render(report)
    }
}
