//! The renderers of a report, one file per format, all behind one small
//! trait: each draws the same [`Report`] model, so a table means the same in
//! every format. A new output format is a new file here implementing
//! [`Renderer`], added to [`ALL`] with its file name.
//!
//! [`markdown`] (paste into a post) and [`html`] (one self-contained page,
//! with [`svg`] charts) lay out the parts of [`crate::report::sections`],
//! which hold the tables once as a [`crate::report::document`]; [`json`] (the whole model) and [`csv`]
//! (one row per test and target) write the model itself.

pub mod csv;
pub mod html;
pub mod html_nav;
pub mod json;
pub mod markdown;
pub mod svg;
pub mod sweep;

use anyhow::Result;

use super::model::Report;

/// One output format of a report.
pub trait Renderer {
    /// The whole report in this format.
    fn render(&self, report: &Report) -> Result<String>;
}

/// A report directory's files: (file name, its renderer), in the order
/// they are written.
pub const ALL: [(&str, &dyn Renderer); 4] = [
    ("index.html", &html::Html),
    ("report.md", &markdown::Markdown),
    ("report.json", &json::Json),
    ("report.csv", &csv::Csv),
];
