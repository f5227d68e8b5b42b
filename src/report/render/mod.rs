//! The renderers of a report, one file per format, all behind one small
//! trait: each draws the same [`Report`] model, so a table means the same in
//! every format. A new output format is a new file here implementing
//! [`Renderer`], added to [`ALL`].
//!
//! [`markdown`] (paste into a post), [`html`] (one self-contained page,
//! with [`html_ibench`] and [`svg`] charts), [`json`] (the whole model) and
//! [`csv`] (one row per test and target).

pub mod csv;
pub mod html;
pub mod html_ibench;
pub mod json;
pub mod markdown;
pub mod svg;

use anyhow::Result;

use super::model::Report;

/// One output format of a report.
pub trait Renderer {
    /// The file it is written to in a report directory.
    fn file_name(&self) -> &'static str;
    /// The whole report in this format.
    fn render(&self, report: &Report) -> Result<String>;
}

/// Every format, in the order a report directory's files are written.
pub const ALL: [&dyn Renderer; 4] = [&html::Html, &markdown::Markdown, &json::Json, &csv::Csv];
