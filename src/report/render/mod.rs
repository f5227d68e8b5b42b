//! The renderers of a report, one file per format, all behind one small
//! trait: each draws the same [`Report`] model, so a table means the same in
//! every format. A new output format is a new file here implementing
//! [`Renderer`], added to [`ALL`] with its file name.
//!
//! [`markdown`] (paste into a post), [`html`] (one self-contained page,
//! with [`html_ibench`] and [`svg`] charts), [`json`] (the whole model) and
//! [`csv`] (one row per test and target); [`html_server`], [`html_profile`]
//! and [`md_server`] draw the server counters, CPU profiles and storage
//! detail; [`chain`] is the `--chain`
//! table the Markdown and HTML renderers add.

pub mod chain;
pub mod csv;
pub mod html;
pub mod html_ibench;
pub mod html_instructions;
pub mod html_nav;
pub mod html_overview;
pub mod html_profile;
pub mod html_server;
pub mod html_sysbench;
pub mod json;
pub mod markdown;
pub mod markdown_overview;
pub mod markdown_sysbench;
pub mod md_instructions;
pub mod md_server;
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
