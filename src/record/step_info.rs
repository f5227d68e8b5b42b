//! How a run records which step it ran: the suite, the name, the sysbench
//! result group and the parameters.

use serde::{Deserialize, Serialize};

/// The suites a stored step can belong to: the one place their stored
/// names are spelled. [`StepInfo::suite`] holds [`SuiteName::as_str`], so
/// the store, the export and old runs keep the same text; readers ask
/// [`StepInfo::suite_is`] instead of comparing strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuiteName {
    /// The sysbench suite.
    Sysbench,
    /// The Insert Benchmark.
    Ibench,
    /// A workload file (`--workload`); stored and written `workload`.
    #[serde(rename = "workload")]
    WorkloadFile,
}

impl SuiteName {
    /// Every suite, in the order `--suite all` would run them.
    pub const ALL: [SuiteName; 3] = [
        SuiteName::Sysbench,
        SuiteName::Ibench,
        SuiteName::WorkloadFile,
    ];

    /// Stable identifier, as stored, exported and written after `--suite`.
    pub fn as_str(self) -> &'static str {
        match self {
            SuiteName::Sysbench => "sysbench",
            SuiteName::Ibench => "ibench",
            SuiteName::WorkloadFile => "workload",
        }
    }

    /// The suite stored as `s`, if it is one of these.
    pub fn parse(s: &str) -> Option<SuiteName> {
        SuiteName::ALL.into_iter().find(|n| n.as_str() == s)
    }
}

impl std::fmt::Display for SuiteName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The sysbench result groups, as the seeds' reports split them, and
/// the group of a workload file's steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Group {
    /// Point queries: names containing "point".
    Point,
    /// Range queries without aggregation (range-*, scan).
    #[serde(rename = "range-noagg")]
    RangeNoAgg,
    /// Range queries with aggregation (read-only*).
    RangeAgg,
    /// delete, insert, update-*, write-only, read-write.
    Write,
    /// The steps of a workload file (`--workload`): a group of their own,
    /// stored `workload`.
    #[serde(rename = "workload")]
    WorkloadFile,
}

impl Group {
    pub const ALL: [Group; 5] = [
        Group::Point,
        Group::RangeNoAgg,
        Group::RangeAgg,
        Group::Write,
        Group::WorkloadFile,
    ];

    /// Stable identifier, as stored and exported.
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Point => "point",
            Group::RangeNoAgg => "range-noagg",
            Group::RangeAgg => "range-agg",
            Group::Write => "write",
            Group::WorkloadFile => "workload",
        }
    }

    pub fn parse(s: &str) -> Option<Group> {
        Group::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// Heading used in summaries and reports.
    pub fn title(self) -> &'static str {
        match self {
            Group::Point => "point queries",
            Group::RangeNoAgg => "range queries without aggregation",
            Group::RangeAgg => "range queries with aggregation",
            Group::Write => "writes",
            Group::WorkloadFile => "workload file",
        }
    }
}

/// What the store keeps to identify a step and say what it was.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepInfo {
    /// The suite's stored name, [`SuiteName::as_str`] (`sysbench`,
    /// `ibench`, `workload`): text, so a store written by another version
    /// still reads.
    pub suite: String,
    /// Unique name within the run, as the seeds write it
    /// (`random-points_range=10`, `point-query.pre_range=100`, `l.i1`).
    pub name: String,
    /// The microbenchmark or step without decoration (`random-points`).
    pub test: String,
    /// sysbench's range parameter, where the test has one.
    pub range: Option<u32>,
    pub group: Option<Group>,
    /// Whether the step is one of the reported ones (not a warm-up or .pre).
    pub reported: bool,
    /// What the result means on this target when it differs from the
    /// reference (e.g. `scan` on SQLite).
    pub note: Option<String>,
    /// Parameters that shaped the step (threads, tables, rows, seconds…).
    pub params: serde_json::Value,
    /// The client count when the step is one point of a concurrency sweep
    /// (`--threads 1,4,64`); `None` in a single-count run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep_threads: Option<u32>,
}

impl StepInfo {
    /// Whether the step belongs to suite `suite`.
    pub fn suite_is(&self, suite: SuiteName) -> bool {
        self.suite == suite.as_str()
    }

    /// The step's suite, `None` for a name this version does not know.
    pub fn suite_name(&self) -> Option<SuiteName> {
        SuiteName::parse(&self.suite)
    }

    /// What identifies the step within its target and repetition: the
    /// name, and the client count of a sweep point (`point-select@64`).
    pub fn cell_key(&self) -> String {
        cell_key(&self.name, self.sweep_threads)
    }
}

/// [`StepInfo::cell_key`] of a step named `name` at sweep point `threads`.
pub fn cell_key(name: &str, sweep_threads: Option<u32>) -> String {
    match sweep_threads {
        Some(n) => format!("{name}@{n}"),
        None => name.to_string(),
    }
}
