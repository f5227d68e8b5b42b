//! One test on one target in the sysbench comparison ([`Cell`]) and one
//! target against another on a test ([`Comparison`]): the values every sysbench
//! table and summary reads. [`super::sysbench`] re-exports them.

use serde::Serialize;

use super::basis::Band;
use crate::stats::Interval;

/// One test on one target. With several repetitions the numbers are
/// medians over them and the relative values carry their interval.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub qps: f64,
    pub tps: f64,
    /// Repetitions measured (comparable ones: ran to their end).
    pub n: u32,
    /// The 95 % interval on `relative` (`None` for the base, or when it
    /// cannot be computed).
    pub interval: Option<Interval>,
    /// What the interval says: `faster`, `slower`, `no difference`,
    /// `unknown` (`None` for the base).
    pub verdict: Option<&'static str>,
    /// `ok`, `errors`, `interrupted` or `failed`.
    pub status: &'static str,
    pub errors: u64,
    /// Event latency percentiles, µs (medians over repetitions; `max_us`
    /// the largest of any repetition).
    pub p50_us: u64,
    pub p95_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// QPS / base QPS; `None` for the base and when either step did not
    /// run to its end.
    pub relative: Option<f64>,
    pub band: Option<Band>,
    /// Per-query costs, aligned with [`SysbenchSection::cost_columns`].
    pub cost: Vec<Option<f64>>,
    /// A workload file's transactions by name and its retries and
    /// failures by error class, summed over repetitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<serde_json::Value>,
    /// Each cost / the base's cost; `None` where both are too small to
    /// compare (below [`CostColumn::floor`]).
    pub cost_relative: Vec<Option<f64>>,
    /// With `--chain`: QPS against the target before this one (the
    /// previous column), as an interval and verdict; `None` for the first
    /// two columns (the second's previous is the base) and without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_previous: Option<Comparison>,
    /// The interval on each cost ratio (from repetitions).
    pub cost_interval: Vec<Option<Interval>>,
    /// What each cost interval says: `higher`, `lower`, `no difference`,
    /// `unknown`.
    pub cost_verdict: Vec<Option<&'static str>>,
}

/// One target against another on one test.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Its QPS over the other's.
    pub relative: f64,
    pub interval: Option<Interval>,
    pub verdict: &'static str,
}

impl Cell {
    /// Whether the cell needs a mark: errors, or the step did not finish.
    pub fn flagged(&self) -> bool {
        self.status != "ok" || self.errors > 0
    }
}
