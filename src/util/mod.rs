//! Small helpers shared by several modules that belong to none of them.

pub mod time;
