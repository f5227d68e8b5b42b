//! What a user sees while `tidemark run` works and when it ends: the live
//! progress line ([`progress`]) and the terminal summaries ([`terminal`] for
//! sysbench tests, [`ibench_terminal`] for the Insert Benchmark's steps).
//!
//! At the end of a run the sysbench summary is drawn from the report model
//! ([`verdicts`]: medians, rQPS with its interval, verdicts) whenever the run
//! can be reported; [`terminal`] is the fallback built from the rows
//! collected in memory (a run with nothing reportable yet).
//!
//! Only [`crate::orchestrate`] uses this module. The summaries print the
//! same relative values, with the same rounding, as the report's Markdown
//! and HTML ([`crate::report::model::relative`], [`crate::report::format`]).
//! They are not drawn from a whole [`crate::report::Report`]: the sysbench
//! summary is collected in memory as steps finish (medians over
//! repetitions, resumed cells), and the Insert Benchmark one lists every
//! stored step and target of the run as stored, which the report's
//! selection would reorder and relabel.

pub mod ibench_terminal;
pub mod progress;
pub mod terminal;
pub mod verdicts;
