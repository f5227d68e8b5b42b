//! What a user sees while `tidemark run` works and when it ends: the live
//! progress line ([`progress`]) and the terminal summaries ([`terminal`] for
//! sysbench tests, [`ibench_terminal`] for the Insert Benchmark's steps).
//!
//! At the end of a run the relative numbers are drawn from the report model
//! whenever the run can be reported, with their intervals and verdicts:
//! [`verdicts`] for the sysbench groups, [`ibench_verdicts`] for the Insert
//! Benchmark's throughput table (medians over repetitions, one column per
//! target). [`terminal`] and the stored-rate table in [`ibench_terminal`]
//! are the fallbacks for a run with nothing reportable yet; the Insert
//! Benchmark's background-rate and fairness tables list every stored
//! repetition as it ran.
//!
//! Only [`crate::orchestrate`] uses this module. The summaries print the
//! same relative values, with the same rounding, as the report's Markdown
//! and HTML ([`crate::report::model::relative`], [`crate::report::format`]).

pub mod ibench_terminal;
pub mod ibench_verdicts;
pub mod instructions;
pub mod progress;
pub mod table;
pub mod terminal;
pub mod verdicts;
