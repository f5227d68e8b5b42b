//! Workload definitions: what each step runs (schema, load, per-client loop
//! bodies, durations), independent of threads and timing, which belong to the
//! runner.

pub mod file;
pub mod ibench;
pub mod keys;
pub mod owned_tables;
pub mod sysbench;

pub use crate::record::{Group, StepInfo};
