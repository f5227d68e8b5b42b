//! `tidemark history`: every test's measurements across stored runs, per
//! target family, ordered by version (then date), with the change points
//! E-divisive means finds in them ([`crate::stats::changepoint`]).
//!
//! A point is one target of one run: the mean rate of its repetitions
//! (sysbench: statements per second; Insert Benchmark steps: the step's own
//! rate). A family is the DBMS and its named configuration (`postgres
//! base`, `sqlite wal`), so versions of one configuration line up in one
//! series, as the "each release against the previous" tables do.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Serialize;

use crate::stats::changepoint::{ChangePointOptions, e_divisive};
use crate::stats::{Interval, welch_ratio};
use crate::store::{Store, StoredRun, StoredStep, StoredTarget};

/// What `history` looks at and how it decides.
#[derive(Clone, Debug, Default)]
pub struct HistoryOptions {
    /// Only runs started at or after this (RFC 3339 or a date prefix).
    pub since: Option<String>,
    /// Only steps whose test or step name is one of these (empty: all).
    pub tests: Vec<String>,
    /// Only families whose name contains this.
    pub family: Option<String>,
    /// Order points by date only, not by version first.
    pub by_date: bool,
    /// What each point measures.
    pub metric: Metric,
    /// Smallest relative change reported as a change point.
    pub min_effect: f64,
    pub detect: ChangePointOptions,
}

/// What a series follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Metric {
    /// Throughput: statements per second (Insert Benchmark steps: the
    /// step's own rate). Falls when the machine is busy with other work.
    #[default]
    Rate,
    /// CPU µs per operation: tidemark's client threads plus the server's
    /// processes where sampled. What a setting that costs CPU changes, and
    /// steadier than throughput on a shared machine.
    Cpu,
    /// The server's instructions per statement counted under Valgrind
    /// (`run --instructions`): only steps counted so, and only they (the
    /// other metrics leave them out: their wall-clock numbers are that
    /// mode's).
    Instructions,
}

impl Metric {
    /// `rate`, `cpu` or `instructions`.
    pub fn parse(s: &str) -> Option<Metric> {
        match s {
            "rate" | "qps" => Some(Metric::Rate),
            "cpu" => Some(Metric::Cpu),
            "instructions" => Some(Metric::Instructions),
            _ => None,
        }
    }

    /// The unit and value this metric reads from a stored step.
    fn of(self, s: &StoredStep) -> Option<(String, f64)> {
        let counted = s.host.as_ref().and_then(|h| h.instructions.as_ref());
        let valgrind = s.host.as_ref().is_some_and(|h| h.under_valgrind());
        if valgrind != (self == Metric::Instructions) {
            return None;
        }
        let (unit, value) = match (self, s.ibench_metrics()) {
            (Metric::Instructions, _) => ("Ir/query".to_string(), counted?.per_statement()?),
            (Metric::Rate, Some(m)) => (m.rate_unit.clone(), m.rate),
            (Metric::Rate, None) => ("qps".to_string(), s.qps),
            (Metric::Cpu, _) => {
                let server = s.host.as_ref().and_then(|h| h.metrics.per_op.scpupq);
                let client = s.client_cpu_us_per_statement()?;
                ("CPU µs/op".to_string(), client + server.unwrap_or(0.0))
            }
        };
        (value.is_finite() && value > 0.0).then_some((unit, value))
    }
}

/// One measurement in a series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Point {
    pub run: i64,
    pub started_at: String,
    pub label: String,
    pub version: String,
    /// Rate per second, mean over the target's repetitions.
    pub value: f64,
    /// The repetitions' rates.
    #[serde(skip)]
    pub reps: Vec<f64>,
}

/// A change point with what it changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    /// Index of the first point after the change.
    pub index: usize,
    /// Mean after / mean before (between the neighbouring change points).
    pub ratio: f64,
    /// 95 % interval of the ratio (Welch t on the logs of the two
    /// segments' points).
    pub interval: Interval,
    pub p_value: f64,
    /// The last point before and the first after.
    pub before: Point,
    pub after: Point,
}

/// One test's series on one family.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub family: String,
    /// The step name (test and its range).
    pub test: String,
    /// What the values are (`qps`, or the Insert Benchmark step's unit).
    pub unit: String,
    pub points: Vec<Point>,
    pub changes: Vec<Change>,
}

/// The series of every (family, test) in `store` that `opts` selects, in
/// family and test order, with their change points.
pub fn history(store: &Store, opts: &HistoryOptions) -> Result<Vec<Series>> {
    let mut by_key: BTreeMap<(String, String), (String, Vec<Point>)> = BTreeMap::new();
    for id in store.run_ids()? {
        let run = store.load_run(id)?;
        if opts
            .since
            .as_deref()
            .is_some_and(|s| run.info.started_at.as_str() < s)
        {
            continue;
        }
        collect_run(&run, opts, &mut by_key);
    }
    let mut out = Vec::new();
    for ((family, test), (unit, mut points)) in by_key {
        points.sort_by(|a, b| {
            let by_version = if opts.by_date {
                std::cmp::Ordering::Equal
            } else {
                version_key(&a.version).cmp(&version_key(&b.version))
            };
            by_version.then_with(|| a.started_at.cmp(&b.started_at))
        });
        let changes = changes(&points, opts);
        out.push(Series {
            family,
            test,
            unit,
            points,
            changes,
        });
    }
    Ok(out)
}

type Keyed = BTreeMap<(String, String), (String, Vec<Point>)>;

/// Adds run `run`'s points: one per target position and step, over its
/// repetitions.
fn collect_run(run: &StoredRun, opts: &HistoryOptions, out: &mut Keyed) {
    let mut cells: BTreeMap<(u32, String), (String, &StoredTarget, Vec<f64>)> = BTreeMap::new();
    for t in &run.targets {
        let family = family_of(t);
        if opts.family.as_deref().is_some_and(|f| !family.contains(f)) {
            continue;
        }
        for s in &t.steps {
            let wanted = opts.tests.is_empty()
                || opts
                    .tests
                    .iter()
                    .any(|w| *w == s.info.test || *w == s.info.name);
            if !s.info.reported || !wanted || s.status.as_str() != "ok" {
                continue;
            }
            let Some((unit, value)) = opts.metric.of(s) else {
                continue;
            };
            cells
                .entry((t.position, s.info.name.clone()))
                .or_insert_with(|| (unit, t, Vec::new()))
                .2
                .push(value);
        }
    }
    for ((_, test), (unit, t, reps)) in cells {
        let point = Point {
            run: run.id,
            started_at: run.info.started_at.clone(),
            label: t.info.label.clone(),
            version: t.info.version_number.clone(),
            value: reps.iter().sum::<f64>() / reps.len() as f64,
            reps,
        };
        out.entry((family_of(t), test))
            .or_insert_with(|| (unit, Vec::new()))
            .1
            .push(point);
    }
}

/// The family of a target: its DBMS and named configuration.
pub fn family_of(t: &StoredTarget) -> String {
    match &t.info.config_name {
        Some(c) if !c.is_empty() => format!("{} {c}", t.info.dbms),
        _ => t.info.dbms.clone(),
    }
}

/// A version number as numbers to sort by (`15.18` < `16.2`); text parts
/// sort after numbers.
fn version_key(v: &str) -> Vec<(u64, String)> {
    v.split(['.', '-', '+'])
        .map(|part| match part.parse::<u64>() {
            Ok(n) => (n, String::new()),
            Err(_) => (u64::MAX, part.to_string()),
        })
        .collect()
}

/// The change points of a series that are at least `min_effect` large
/// and whose 95 % interval excludes "no change": the permutation test says
/// where the series most likely changed, the interval that the two sides
/// differ by more than their own scatter (the report's verdict rule).
fn changes(points: &[Point], opts: &HistoryOptions) -> Vec<Change> {
    let xs: Vec<f64> = points.iter().map(|p| p.value).collect();
    let found = e_divisive(&xs, &opts.detect);
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(found.iter().map(|c| c.index));
    bounds.push(xs.len());
    found
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let (before, after) = (&xs[bounds[i]..c.index], &xs[c.index..bounds[i + 2]]);
            let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
            let ratio = mean(after) / mean(before);
            let interval = welch_ratio(before, after)?;
            let large = ratio.ln().abs() >= (1.0 + opts.min_effect).ln();
            (large && !interval.covers(1.0)).then(|| Change {
                index: c.index,
                ratio,
                interval,
                p_value: c.p_value,
                before: points[c.index - 1].clone(),
                after: points[c.index].clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_numbers() {
        let mut v = vec!["16.2", "15.18", "9.6", "16.10", "17beta1"];
        v.sort_by_key(|s| version_key(s));
        assert_eq!(v, ["9.6", "15.18", "16.2", "16.10", "17beta1"]);
    }

    #[test]
    fn small_changes_are_not_reported() {
        let point = |value: f64| Point {
            run: 1,
            started_at: String::new(),
            label: String::new(),
            version: String::new(),
            value,
            reps: vec![value],
        };
        let mut values = vec![1000.0, 1001.0, 999.0, 1000.5];
        values.extend([980.0, 981.0, 979.0, 980.5, 980.2, 979.8]);
        let points: Vec<Point> = values.into_iter().map(point).collect();
        let mut opts = HistoryOptions {
            min_effect: 0.01,
            ..HistoryOptions::default()
        };
        assert_eq!(changes(&points, &opts).len(), 1, "a 2 % step");
        opts.min_effect = 0.05;
        assert!(changes(&points, &opts).is_empty(), "below 5 %");
    }
}
