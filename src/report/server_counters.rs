//! The server's own counters in the report: per step and target, what the
//! DBMS did per operation (WAL bytes per query, buffers written by
//! backends per query, redo bytes per query…), how many checkpoints and
//! autovacuum runs fell in the measured interval, the debt the step left
//! (dead tuples, history list length, dirty pages), and per-second series
//! for charts; each relative to the base, like the other cost tables.
//!
//! Built from `record::server_counters` readings only, so it reads the
//! same from any stored run; a target whose steps carry no readings shows
//! "n/a" with the stored reason.

use serde::Serialize;

use super::basis::{Column, relative};
use super::cost::per_what;
use crate::record::server_counters::{COUNTERS, CounterDef, CounterKind};
use crate::record::{Phase, ServerCounters};
use crate::store::StoredStep;

/// The server-counters section: one entry per step any target sampled.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ServerSection {
    pub steps: Vec<ServerStep>,
    /// Per target: why it has no readings (the first reason stored), if so.
    pub missing: Vec<Option<String>>,
    /// The slowest reading of the sampler over all steps, ms, per target.
    pub read_ms_max: Vec<Option<f64>>,
}

/// One step's counters, targets side by side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerStep {
    pub name: String,
    pub rows: Vec<ServerRow>,
    pub charts: Vec<ServerChart>,
}

/// How a row's values are meant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// Growth over the measured interval ÷ operations in it.
    PerOp,
    /// Growth over the measured interval (rare events: checkpoints).
    During,
    /// The level at the end of the step (debt left behind).
    AtEnd,
    /// The average over the measured interval (iostat's columns).
    Average,
}

/// One counter of one step across the targets.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerRow {
    pub name: String,
    /// What the value is, with its unit ("WAL bytes per query").
    pub label: String,
    pub shown: Shown,
    /// Per target, base first.
    pub values: Vec<Option<f64>>,
    /// Per target: value ÷ base (`None` for the base and where it means
    /// nothing).
    pub relative: Vec<Option<f64>>,
}

/// A per-second series of one counter, one line per target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerChart {
    pub name: String,
    pub title: String,
    /// Per target: (measured second, value).
    pub series: Vec<Vec<(i64, f64)>>,
}

/// Counters shown as counts over the interval, not per operation.
const COUNTED: &[&str] = &[
    "checkpoints_timed",
    "checkpoints_req",
    "autovacuum_count",
    "autoanalyze_count",
];

/// Values that explain the sampler, not the server: not shown as rows.
const NOT_SHOWN: &[&str] = &["read_ms", "pages_total"];

/// Counters charted per second, when a step has them.
const CHARTED: &[&str] = &[
    "wal_bytes",
    "buffers_backend",
    "blks_read",
    "n_dead_tup",
    "log_bytes_written",
    "history_list_length",
    "dirty_pct",
    "pool_reads",
];

/// Values above this are told apart from nothing (`0.000` vs `0.000` is no
/// ratio).
const FLOOR: f64 = 1e-6;

/// The section for `columns`; `None` when no step of any target has
/// server counters.
pub fn build(columns: &[Column<'_>]) -> Option<ServerSection> {
    let mut names: Vec<&str> = Vec::new();
    for c in columns {
        for s in c.target.steps.iter().filter(|s| s.info.reported) {
            if counters(s).is_some() && !names.contains(&s.info.name.as_str()) {
                names.push(&s.info.name);
            }
        }
    }
    if names.is_empty() {
        return None;
    }
    let steps = names
        .iter()
        .map(|name| {
            let per_target: Vec<Option<&StoredStep>> =
                columns.iter().map(|c| c.step(name)).collect();
            step(name, &per_target)
        })
        .collect();
    let missing = columns
        .iter()
        .map(|c| {
            c.target.steps.iter().find_map(|s| {
                s.host
                    .as_ref()?
                    .metrics
                    .missing
                    .get("server_counters")
                    .cloned()
            })
        })
        .collect();
    let read_ms_max = columns
        .iter()
        .map(|c| {
            c.target
                .steps
                .iter()
                .filter_map(counters)
                .flat_map(|k| k.readings.iter().filter_map(|r| r.values.get("read_ms")))
                .copied()
                .reduce(f64::max)
        })
        .collect();
    Some(ServerSection {
        steps,
        missing,
        read_ms_max,
    })
}

fn counters(s: &StoredStep) -> Option<&ServerCounters> {
    s.host
        .as_ref()?
        .server_counters
        .as_ref()
        .filter(|c| c.readings.len() > 1)
}

/// Operations per second the step's host summary divides by.
fn op_rate(s: &StoredStep) -> Option<(f64, Option<String>)> {
    let rates = s.host.as_ref()?.metrics.rates.as_ref()?;
    (rates.rate > 0.0).then(|| (rates.rate, Some(rates.basis.clone())))
}

fn step(name: &str, steps: &[Option<&StoredStep>]) -> ServerStep {
    let sampled: Vec<Option<&ServerCounters>> =
        steps.iter().map(|s| s.and_then(counters)).collect();
    let basis = steps
        .iter()
        .flatten()
        .find_map(|s| op_rate(s).and_then(|r| r.1));
    let per = per_what(basis.as_deref());
    let mut rows = Vec::new();
    for d in COUNTERS.iter().filter(|d| !NOT_SHOWN.contains(&d.name)) {
        if !sampled
            .iter()
            .flatten()
            .any(|c| c.names().contains(&d.name))
        {
            continue;
        }
        let (shown, label) = match d.kind {
            CounterKind::Gauge => (Shown::AtEnd, format!("{} at the end", d.title)),
            CounterKind::Counter if COUNTED.contains(&d.name) => (
                Shown::During,
                format!("{} in the measured interval", d.title),
            ),
            CounterKind::Counter => (Shown::PerOp, format!("{} {per}", d.title)),
        };
        let values: Vec<Option<f64>> = steps
            .iter()
            .zip(&sampled)
            .map(|(s, c)| value(d, shown, (*s)?, (*c)?))
            .collect();
        rows.push(row(d.name, label, shown, values));
    }
    if let Some(values) = dirty_pct_at_end(&sampled) {
        rows.push(row(
            "dirty_pct",
            "dirty pages, % of the buffer pool, at the end".into(),
            Shown::AtEnd,
            values,
        ));
    }
    let charts = CHARTED.iter().filter_map(|n| chart(n, &sampled)).collect();
    ServerStep {
        name: name.to_string(),
        rows,
        charts,
    }
}

/// A row of `values` (base first) with each one's ratio to the base.
pub(super) fn row(name: &str, label: String, shown: Shown, values: Vec<Option<f64>>) -> ServerRow {
    let base = values.first().copied().flatten();
    let relative = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if i == 0 {
                return None;
            }
            let (v, b) = (*v).zip(base)?;
            (v.abs() > FLOOR || b.abs() > FLOOR).then(|| relative(v, b))?
        })
        .collect();
    ServerRow {
        name: name.to_string(),
        label,
        shown,
        values,
        relative,
    }
}

fn value(d: &CounterDef, shown: Shown, s: &StoredStep, c: &ServerCounters) -> Option<f64> {
    match shown {
        Shown::AtEnd => c.readings.last()?.values.get(d.name).copied(),
        Shown::During => c.measured_growth(d.name).map(|g| g.0),
        Shown::Average => {
            let (growth, secs) = c.measured_growth(d.name)?;
            (secs > 0.0).then(|| growth / secs)
        }
        Shown::PerOp => {
            let (growth, secs) = c.measured_growth(d.name)?;
            let (rate, _) = op_rate(s)?;
            (secs > 0.0).then(|| growth / (rate * secs))
        }
    }
}

/// InnoDB's dirty pages as a share of the pool at the end of each step.
fn dirty_pct_at_end(sampled: &[Option<&ServerCounters>]) -> Option<Vec<Option<f64>>> {
    let values: Vec<Option<f64>> = sampled
        .iter()
        .map(|c| dirty_pct(&(*c)?.readings.last()?.values))
        .collect();
    values.iter().any(Option::is_some).then_some(values)
}

fn dirty_pct(values: &std::collections::BTreeMap<String, f64>) -> Option<f64> {
    let total = *values.get("pages_total")?;
    (total > 0.0).then(|| values.get("pages_dirty").map(|d| d / total * 100.0))?
}

fn chart(name: &str, sampled: &[Option<&ServerCounters>]) -> Option<ServerChart> {
    let (kind, title) = if name == "dirty_pct" {
        (
            CounterKind::Gauge,
            "dirty pages, % of the buffer pool".to_string(),
        )
    } else {
        let d = COUNTERS.iter().find(|d| d.name == name)?;
        match d.kind {
            CounterKind::Counter => (d.kind, format!("{} per second", d.title)),
            CounterKind::Gauge => (d.kind, d.title.to_string()),
        }
    };
    let series: Vec<Vec<(i64, f64)>> = sampled
        .iter()
        .map(|c| {
            let Some(c) = c else { return Vec::new() };
            let points = if name == "dirty_pct" {
                c.readings
                    .iter()
                    .skip(1)
                    .filter_map(|r| Some((r.sec, r.phase, dirty_pct(&r.values)?)))
                    .collect()
            } else {
                c.series(name, kind)
            };
            points
                .into_iter()
                .filter(|p| p.1 == Phase::Measured)
                .map(|p| (p.0, p.2))
                .collect()
        })
        .collect();
    // A flat zero line (no WAL in a read-only step) says nothing.
    series
        .iter()
        .flatten()
        .any(|p| p.1 > 0.0)
        .then(|| ServerChart {
            name: name.to_string(),
            title,
            series,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_values_need_a_base_and_something_to_compare() {
        let r = row(
            "x",
            "x".into(),
            Shown::PerOp,
            vec![Some(2.0), Some(3.0), None],
        );
        assert_eq!(r.relative, [None, Some(1.5), None]);
        let r = row("x", "x".into(), Shown::PerOp, vec![Some(0.0), Some(0.0)]);
        assert_eq!(r.relative, [None, None], "0 vs 0 is no ratio");
    }

    #[test]
    fn dirty_share_is_of_the_pool() {
        let v = [("pages_dirty", 25.0), ("pages_total", 200.0)]
            .map(|(n, x)| (n.to_string(), x))
            .into();
        assert_eq!(dirty_pct(&v), Some(12.5));
    }
}
