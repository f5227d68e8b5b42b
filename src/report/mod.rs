//! What a user reads: the comparison report (`tidemark report`, and at the
//! end of `tidemark run`). The live progress and the terminal summaries are
//! in [`crate::console`].
//!
//! The report reads only the store: [`select`] picks targets from stored
//! runs, [`model`] computes the comparison once, and the [`render`]ers draw
//! it as Markdown, one self-contained HTML file, JSON and CSV; [`files`]
//! writes them; [`gate`] finds the cells a CI rule fails on (`--fail-on`)
//! and [`ci_formats`] writes them for CI tools (JUnit XML, Bencher JSON).
//! [`history`] follows each test across runs and finds its
//! change points ([`history_render`] draws them).

pub mod basis;
pub mod ci_formats;
pub mod context;
pub mod cost;
pub mod cpu_profile;
pub mod document;
pub mod files;
pub mod format;
pub mod gate;
pub mod history;
pub mod history_render;
pub mod ibench;
pub mod ibench_input;
pub mod ibench_verdicts;
pub mod instructions;
pub mod model;
pub mod overview;
pub mod query_plans;
pub mod render;
pub mod sections;
pub mod select;
pub mod server_counters;
pub mod shards;
pub mod storage;
pub mod sweep;
pub mod sysbench;
pub mod sysbench_cell;
pub mod sysbench_summary;
pub mod test_names;
pub mod workload_file;

pub use files::{default_dir, generate, model_for_run, write_for_run, write_report};
pub use model::{Bands, Report, ReportOptions, TestOrder};
pub use render::{Renderer, html, markdown};
