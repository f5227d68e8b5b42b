//! Measurements of the machine under a run, as opposed to the workload's own
//! counters (those are in [`crate::runner`]).
//!
//! [`host`] records what the host is, once per run. The per-second samplers
//! (host CPU, I/O and memory, and the server process's share of them) will
//! live here too, so a report can explain a throughput dip with what the
//! machine was doing at that second.

pub mod host;
