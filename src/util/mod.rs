//! Small helpers shared by several modules that belong to none of them.

pub mod cpus;
pub mod redact;
pub mod time;
