//! What a user reads: the comparison report (`tidemark report`, and at the
//! end of `tidemark run`). The live progress and the terminal summaries are
//! in [`crate::console`].
//!
//! The report reads only the store: [`select`] picks targets from stored
//! runs, [`model`] computes the comparison once, and the renderers draw it
//! as Markdown ([`markdown`]), one self-contained HTML file ([`html`] with
//! [`svg`] charts), JSON and CSV ([`export`]); [`files`] writes them.

pub mod context;
pub mod cost;
pub mod export;
pub mod files;
pub mod format;
pub mod html;
pub mod html_ibench;
pub mod ibench;
pub mod ibench_input;
pub mod markdown;
pub mod model;
pub mod plans;
pub mod select;
pub mod svg;
pub mod sysbench;

pub use files::{default_dir, generate, write_for_run, write_report};
pub use model::{Bands, Report, ReportOptions};
