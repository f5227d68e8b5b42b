//! What each report section shows, as a format-neutral
//! [`crate::report::document`]: one file per section, each building its
//! headings, prose, typed tables and charts once for every format.

pub mod chain;
pub mod context;
pub mod ibench;
pub mod plans;
pub mod server;
pub mod shards;
pub mod sweep;
pub mod sysbench;
