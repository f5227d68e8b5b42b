//! tidemark: a database benchmark harness for finding performance differences
//! between DBMS versions and configurations.
//!
//! The modules follow the data flow: [`plan`] (what to run) → [`server`]
//! (provide the DBMS) → [`workload`] (what each step does) → [`runner`]
//! (threads, timing, counters) → [`metrics`] (host facts and samplers) →
//! [`store`] (the results database) → [`report`] (what a user reads).
//! [`db`] holds the client connections the workloads drive; [`knobs`] the
//! run-time knobs the command line, plan files, profiles and report share;
//! [`orchestrate`] carries out a plan and [`console`] shows it live and sums
//! it up.

pub mod cli;
pub mod console;
pub mod db;
pub mod knobs;
pub mod metrics;
pub mod orchestrate;
pub mod plan;
pub mod record;
pub mod report;
pub mod runner;
pub mod server;
pub mod stats;
pub mod store;
pub mod util;
pub mod workload;
