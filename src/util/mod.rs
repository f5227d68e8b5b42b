//! Small helpers shared by several modules that belong to none of them.

pub mod cpus;
pub mod process_identity;
pub mod process_tree;
pub mod redact;
pub mod suggest;
pub mod time;
