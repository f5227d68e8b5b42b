//! The Insert Benchmark section, as the reference's report lays it out
//! (workloads.md C.1, C.2): throughput by target × step, throughput relative
//! to the base, the background insert rate of each query step against its
//! target (SLA), the per-step metrics row, the fairness table, response
//! times per role and per-second series for the charts.
//!
//! The section is built from [`IbenchStepInput`]s, a plain description of
//! what one step measured, so every rule here (colours, SLA, fairness) is a
//! pure function tested on small hand-made inputs; `ibench_input` turns a
//! stored step into one.

use serde::Serialize;

use super::basis::{Band, Bands, Column, relative};
use super::cost::{StepHostMetrics, per_what};
pub use super::ibench_input::{
    IbenchSecond, IbenchStepInput, LATENCY_BUCKETS, RoleLatency, input_from_step, is_query_step,
    per_client_insert_rate,
};
use super::sysbench::Comparison;
use crate::record::{self, BASIS_QUERIES, StepStatus, SuiteName};
use crate::stats::Interval;

/// The steps in the reference's order.
pub const IBENCH_STEPS: [&str; 10] = [
    "l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100", "qr500", "qp500", "qr1000", "qp1000",
];

pub use crate::record::ibench::{SLA_FRACTION, sla_failed};

/// The per-step metrics row's columns (reference C.1): `dbgb1` the
/// database's size and `dbgb2` the whole data directory's, in GB; `rss` the
/// server's resident memory in GB; `maxop` the largest response time of the
/// step's main operation in seconds; `p50`/`p99` client 1's per-second rate
/// that 50 % / 99 % of its seconds met or exceeded.
pub const METRIC_COLUMNS: [&str; 20] = [
    "ips", "qps", "rps", "rmbps", "wps", "wmbps", "rpq", "rkbpq", "wpi", "wkbpi", "csps", "cpups",
    "cspq", "cpupq", "dbgb1", "dbgb2", "rss", "maxop", "p50", "p99",
];

/// Colour of a throughput cell (reference C.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Shade {
    /// Within the lowest quarter of the column's range (red).
    Low,
    /// Within the highest quarter (green).
    High,
}

/// Shades of one throughput column (reference C.2): the range runs from the
/// minimum to the maximum of the steps that met their SLA; cells in its
/// top quarter are high, in its bottom quarter low, unless the minimum is at
/// least 0.8 × the maximum. SLA failures get no shade (they are greyed).
pub fn throughput_shades(values: &[Option<f64>], failed: &[bool]) -> Vec<Option<Shade>> {
    let mut shades = vec![None; values.len()];
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    let max = values
        .iter()
        .zip(failed)
        .filter(|(_, f)| !**f)
        .filter_map(|(v, _)| *v)
        .fold(f64::NAN, f64::max);
    let min = present.iter().copied().fold(f64::NAN, f64::min);
    if present.len() < 2 || max.is_nan() || max <= min {
        return shades;
    }
    let quarter = (max - min) / 4.0;
    let red_allowed = min < 0.8 * max;
    for ((shade, v), f) in shades.iter_mut().zip(values).zip(failed) {
        let Some(v) = *v else { continue };
        if *f {
            continue;
        }
        if v >= max - quarter {
            *shade = Some(Shade::High);
        } else if red_allowed && v <= min + quarter {
            *shade = Some(Shade::Low);
        }
    }
    shades
}

/// How evenly the clients of a fixed-work step finished (the seeds'
/// fairness table): a row of [`record::ibench::Fairness`] with the clients
/// counted.
///
/// [`record::ibench::Fairness`]: crate::record::ibench::Fairness
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FairnessRow {
    pub clients: usize,
    /// Seconds until the first client finished.
    pub min_time: f64,
    /// Seconds until the last client finished.
    pub max_time: f64,
    /// `max_time - min_time`.
    pub diff: f64,
    /// `diff / min_time × 100`.
    pub pct: f64,
}

/// Fairness from the clients' finish times (the one rule,
/// [`crate::record::ibench::fairness`]); `None` without a positive one.
pub fn fairness(finish_secs: &[f64]) -> Option<FairnessRow> {
    let clients: Vec<(u32, f64)> = (1..).zip(finish_secs.iter().copied()).collect();
    record::ibench::fairness(&clients).map(|f| FairnessRow {
        clients: f.clients.len(),
        min_time: f.min_time,
        max_time: f.max_time,
        diff: f.diff,
        pct: f.pct,
    })
}

/// Everything the report says about Insert Benchmark steps.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IbenchSection {
    /// Steps any target ran, in the reference's order (others after).
    pub steps: Vec<String>,
    /// One row per target: the rate of each step (ips for load steps,
    /// indexed rows/s for l.x, qps for query steps).
    pub throughput: Vec<IbenchRow>,
    /// The query steps among `steps`.
    pub query_steps: Vec<String>,
    /// One row per target: the background insert rate of each query step.
    pub background: Vec<BackgroundRow>,
    /// The target rate of each query step (the table's last row).
    pub background_targets: Vec<Option<f64>>,
    /// One table per step: the metrics row of each target.
    pub metrics: Vec<MetricsTable>,
    /// One table per step with at least two clients.
    pub fairness: Vec<FairnessTable>,
    /// Labels of the response-time buckets.
    pub latency_buckets: Vec<&'static str>,
    pub response_times: Vec<ResponseTable>,
    pub series: Vec<StepSeries>,
}

/// One target's throughput row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IbenchRow {
    pub target: String,
    /// Aligned with [`IbenchSection::steps`].
    pub cells: Vec<IbenchCell>,
}

/// One step on one target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IbenchCell {
    pub value: Option<f64>,
    pub relative: Option<f64>,
    pub band: Option<Band>,
    pub shade: Option<Shade>,
    /// A query step that missed its background insert rate: greyed.
    pub sla_failed: bool,
    /// The step's status when it is not `ok`.
    pub status: Option<&'static str>,
    /// Repetitions measured (see `super::ibench_verdicts`).
    pub n: u32,
    /// The 95 % interval on `relative`.
    pub interval: Option<Interval>,
    /// `faster`, `slower`, `no difference` or `unknown` (`None`: base).
    pub verdict: Option<&'static str>,
    /// Against the target before it (`--chain`; from the third target on,
    /// the second's comparison with the base being `relative`).
    pub vs_previous: Option<Comparison>,
}

/// One target's background insert rates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackgroundRow {
    pub target: String,
    /// Aligned with [`IbenchSection::query_steps`].
    pub cells: Vec<BackgroundCell>,
}

/// The background insert rate of one query step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BackgroundCell {
    pub achieved: Option<f64>,
    pub target: Option<f64>,
    pub sla_failed: bool,
}

/// The metrics rows of one step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricsTable {
    pub step: String,
    /// What the per-operation columns divide by (C.1), from the stored
    /// basis, e.g. "rpq, rkbpq, cspq, cpupq per query; wpi, wkbpi per
    /// inserted row"; empty when no step stored one.
    pub per: String,
    /// (target, values aligned with [`METRIC_COLUMNS`]).
    pub rows: Vec<(String, Vec<Option<f64>>)>,
}

/// The fairness of one step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FairnessTable {
    pub step: String,
    pub rows: Vec<(String, FairnessRow)>,
}

/// Response times of one step, per target and role.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResponseTable {
    pub step: String,
    pub rows: Vec<ResponseRow>,
}

/// One role's response times on one target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResponseRow {
    pub target: String,
    pub role: String,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    /// Percent of operations per [`LATENCY_BUCKETS`] bucket, when known.
    pub buckets_pct: Option<Vec<f64>>,
}

/// Per-second series of one step, one line per target.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepSeries {
    pub step: String,
    pub lines: Vec<SeriesLine>,
}

/// One target's per-second values: (second, value) points.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeriesLine {
    pub target: String,
    pub ips: Vec<[f64; 2]>,
    pub qps: Vec<[f64; 2]>,
    pub max_rt_ms: Vec<[f64; 2]>,
    /// Deletes per second (the reference's DPS).
    pub dps: Vec<[f64; 2]>,
    /// The largest insert, delete and query response time per second, ms.
    pub max_insert_ms: Vec<[f64; 2]>,
    pub max_delete_ms: Vec<[f64; 2]>,
    pub max_query_ms: Vec<[f64; 2]>,
}

/// Builds the section from the targets' stored `ibench` steps; `None` when
/// no target has one.
pub fn build(columns: &[Column<'_>], bands: Bands) -> Option<IbenchSection> {
    let inputs: Vec<(String, Vec<IbenchStepInput>)> = columns
        .iter()
        .map(|c| {
            let steps = c
                .target
                .steps
                .iter()
                .filter(|s| s.info.reported && s.info.suite_is(SuiteName::Ibench))
                .map(input_from_step)
                .collect();
            (c.label.to_string(), steps)
        })
        .collect();
    section(&inputs, bands)
}

/// The section for (target label, steps) pairs, base first; `None` when no
/// target has a step.
pub fn section(targets: &[(String, Vec<IbenchStepInput>)], bands: Bands) -> Option<IbenchSection> {
    let mut steps: Vec<String> = Vec::new();
    for known in IBENCH_STEPS {
        if targets
            .iter()
            .any(|(_, s)| s.iter().any(|x| x.step == known))
        {
            steps.push(known.to_string());
        }
    }
    for (_, s) in targets {
        for x in s {
            if !steps.contains(&x.step) {
                steps.push(x.step.clone());
            }
        }
    }
    if steps.is_empty() {
        return None;
    }
    let find = |t: usize, step: &str| targets[t].1.iter().find(|x| x.step == step);
    let query_steps: Vec<String> = steps.iter().filter(|s| is_query_step(s)).cloned().collect();

    // Background insert rates and SLA, first: the other tables grey by them.
    let background: Vec<BackgroundRow> = (0..targets.len())
        .map(|t| BackgroundRow {
            target: targets[t].0.clone(),
            cells: query_steps
                .iter()
                .map(|q| {
                    let x = find(t, q);
                    let achieved = x.and_then(|x| x.ips);
                    let target = x.and_then(|x| x.insert_target);
                    BackgroundCell {
                        achieved,
                        target,
                        sla_failed: matches!((achieved, target), (Some(a), Some(g)) if sla_failed(a, g)),
                    }
                })
                .collect(),
        })
        .collect();
    let background_targets = (0..query_steps.len())
        .map(|k| background.iter().find_map(|r| r.cells[k].target))
        .collect();
    let failed = |t: usize, step: &str| {
        query_steps
            .iter()
            .position(|q| q == step)
            .is_some_and(|k| background[t].cells[k].sla_failed)
    };

    let rate = |x: &IbenchStepInput| {
        if is_query_step(&x.step) { x.qps } else { x.ips }
    };
    let mut throughput: Vec<IbenchRow> = (0..targets.len())
        .map(|t| IbenchRow {
            target: targets[t].0.clone(),
            cells: steps
                .iter()
                .map(|s| {
                    let x = find(t, s);
                    let value = x.and_then(rate);
                    let base = find(0, s).and_then(rate);
                    let rel = match (t, value, base) {
                        (1.., Some(v), Some(b)) => relative(v, b),
                        _ => None,
                    };
                    IbenchCell {
                        value,
                        relative: rel,
                        band: rel.map(|r| bands.classify(r)),
                        shade: None,
                        sla_failed: failed(t, s),
                        status: x
                            .map(|x| x.status)
                            .filter(|st| *st != StepStatus::Ok)
                            .map(StepStatus::as_str),
                        n: u32::from(value.is_some()),
                        interval: None,
                        verdict: None,
                        vs_previous: None,
                    }
                })
                .collect(),
        })
        .collect();
    for k in 0..steps.len() {
        let values: Vec<Option<f64>> = throughput.iter().map(|r| r.cells[k].value).collect();
        let fails: Vec<bool> = throughput.iter().map(|r| r.cells[k].sla_failed).collect();
        for (row, shade) in throughput
            .iter_mut()
            .zip(throughput_shades(&values, &fails))
        {
            row.cells[k].shade = shade;
        }
    }

    let mut metrics = Vec::new();
    let mut fairness_tables = Vec::new();
    let mut response_times = Vec::new();
    let mut series = Vec::new();
    for s in &steps {
        let mut m = MetricsTable {
            step: s.clone(),
            per: String::new(),
            rows: Vec::new(),
        };
        let mut f = FairnessTable {
            step: s.clone(),
            rows: Vec::new(),
        };
        let mut r = ResponseTable {
            step: s.clone(),
            rows: Vec::new(),
        };
        let mut lines = Vec::new();
        for (t, (label, _)) in targets.iter().enumerate() {
            let Some(x) = find(t, s) else { continue };
            if let Some(basis) = x.host.basis.as_deref() {
                m.per = per_op_note(basis);
            }
            m.rows.push((label.clone(), metrics_row(x)));
            if x.client_finish_secs.len() >= 2
                && let Some(fair) = fairness(&x.client_finish_secs)
            {
                f.rows.push((label.clone(), fair));
            }
            for role in &x.roles {
                r.rows.push(ResponseRow {
                    target: label.clone(),
                    role: role.role.clone(),
                    p50_us: role.latency.p50,
                    p99_us: role.latency.p99,
                    p999_us: role.latency.p999,
                    max_us: role.latency.max,
                    buckets_pct: role.buckets_pct.clone(),
                });
            }
            let points = |f: &dyn Fn(&IbenchSecond) -> Option<f64>| {
                x.seconds
                    .iter()
                    .filter_map(|p| Some([f64::from(p.sec), f(p)?]))
                    .collect::<Vec<_>>()
            };
            lines.push(SeriesLine {
                target: label.clone(),
                ips: points(&|p| p.ips),
                qps: points(&|p| p.qps),
                max_rt_ms: points(&|p| p.max_rt_us.map(|u| u as f64 / 1000.0)),
                dps: points(&|p| p.dps),
                max_insert_ms: points(&|p| p.max_insert_us.map(|u| u as f64 / 1000.0)),
                max_delete_ms: points(&|p| p.max_delete_us.map(|u| u as f64 / 1000.0)),
                max_query_ms: points(&|p| p.max_query_us.map(|u| u as f64 / 1000.0)),
            });
        }
        metrics.push(m);
        if !f.rows.is_empty() {
            fairness_tables.push(f);
        }
        if !r.rows.is_empty() {
            response_times.push(r);
        }
        if lines.iter().any(|l| !l.ips.is_empty() || !l.qps.is_empty()) {
            series.push(StepSeries {
                step: s.clone(),
                lines,
            });
        }
    }
    Some(IbenchSection {
        steps,
        throughput,
        query_steps,
        background,
        background_targets,
        metrics,
        fairness: fairness_tables,
        latency_buckets: LATENCY_BUCKETS.iter().map(|b| b.0).collect(),
        response_times,
        series,
    })
}

/// Which rate the per-operation columns of the metrics row divide by.
pub fn per_op_note(basis: &str) -> String {
    let per = per_what(Some(basis));
    if basis == BASIS_QUERIES {
        format!("rpq, rkbpq, cspq, cpupq {per}; wpi, wkbpi per inserted row")
    } else {
        format!("rpq, rkbpq, wpi, wkbpi, cspq, cpupq {per}")
    }
}

/// The metrics row of one step, aligned with [`METRIC_COLUMNS`]: the host
/// columns from the stored hardware summary, `maxop`, `p50` and `p99` as
/// the step stored them (one definition: `workload::ibench::metrics`).
pub fn metrics_row(x: &IbenchStepInput) -> Vec<Option<f64>> {
    let h: &StepHostMetrics = &x.host;
    vec![
        x.ips,
        x.qps,
        h.rps,
        h.rmbps,
        h.wps,
        h.wmbps,
        h.rpq,
        h.rkbpq,
        h.wpi,
        h.wkbpi,
        h.csps,
        h.cpups,
        h.cspq,
        h.cpupq,
        h.dbgb,
        h.dbgb2,
        h.rss_gb,
        x.maxop_secs,
        x.p50,
        x.p99,
    ]
}

#[cfg(test)]
#[path = "ibench_tests.rs"]
mod tests;
