//! Measurements of the machine under a run, as opposed to the workload's own
//! counters (those are recorded in [`crate::record::step`]).
//!
//! [`host`] records what the host is, once per run. [`sampler`] watches the
//! host, its disks and the server's and client's processes once a second
//! while a step runs ([`procfs`] reads the counters, `process_tree` the
//! server's processes, [`devices`] finds the disks under the data
//! directory), and [`server_counters`] reads the DBMS's own statistics views on a
//! connection of its own, and [`summary`] turns the host samples into the step's hardware
//! cost per operation, so a report can explain a throughput change with
//! "CPU per query went up". [`sizes`] measures the database after each
//! step; [`cpu_profile`] samples the server's stacks with perf.

pub mod callgrind;
pub mod cpu_profile;
pub mod devices;
pub mod host;
pub mod instructions;
mod process_tree;
pub mod procfs;
pub mod sampler;
pub mod server_counters;
pub mod sizes;
pub mod summary;
