//! What each report section shows, as a format-neutral
//! [`crate::report::document`]: one file per section, each building its
//! headings, prose, typed tables and charts once for every format.
//! `render::markdown` and `render::html` place the sections on their page;
//! the terminal prints the `verdict_table`s of [`sysbench`] and [`ibench`].
//!
//! A new table is a function returning a [`crate::report::document::Table`]
//! in its section's file, pushed as a `Block::Table` among the section's
//! blocks; a new column is one `Column` and one cell per row in that
//! function.

pub mod chain;
pub mod context;
pub mod ibench;
pub mod instructions;
pub mod plans;
pub mod server;
pub mod shards;
pub mod summary;
pub mod sweep;
pub mod sysbench;
pub mod sysbench_cost;
