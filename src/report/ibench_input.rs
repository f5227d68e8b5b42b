//! What one Insert Benchmark step measured, as the report needs it, and how
//! it is read from a stored step.
//!
//! The Insert Benchmark suite is being written alongside the report, so how
//! it stores its role-specific numbers (background insert rate, per-role
//! histograms) is not settled. [`input_from_step`] is the one place that
//! knows: it reads the generic columns every step has and the step's
//! `params` keys documented there. Change it, not the section, when the
//! suite's storage lands.

use hdrhistogram::Histogram;
use serde::Serialize;

use super::cost::{StepHostMetrics, host_metrics_of};
use super::ibench::{is_query_step, per_client_insert_rate};
use crate::runner::result::{LatencySummary, StepStatus};
use crate::store::StepRecord;

/// What one step measured.
#[derive(Clone, Debug, PartialEq)]
pub struct IbenchStepInput {
    /// `l.i0`, `l.x`, `l.i1`, `l.i2`, `qr100` … `qp1000`.
    pub step: String,
    pub status: StepStatus,
    /// Inserts/s (load steps), indexed rows/s (l.x), or the background
    /// insert rate achieved (query steps).
    pub ips: Option<f64>,
    /// Queries/s (query steps).
    pub qps: Option<f64>,
    /// The background insert rate a query step was held to, all clients.
    pub insert_target: Option<f64>,
    /// Seconds until each client finished its share.
    pub client_finish_secs: Vec<f64>,
    /// Response times per role (insert, delete, query).
    pub roles: Vec<RoleLatency>,
    pub seconds: Vec<IbenchSecond>,
    pub host: StepHostMetrics,
}

/// One role's response times in a step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoleLatency {
    pub role: String,
    pub latency: LatencySummary,
    /// Percent of operations per [`LATENCY_BUCKETS`] bucket.
    pub buckets_pct: Option<Vec<f64>>,
}

/// One second of a step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct IbenchSecond {
    pub sec: u32,
    pub ips: Option<f64>,
    pub qps: Option<f64>,
    /// The largest response time that second, µs.
    pub max_rt_us: Option<u64>,
}

/// The response-time buckets: label and upper bound in µs (the last has
/// none).
pub const LATENCY_BUCKETS: [(&str, Option<u64>); 6] = [
    ("≤100µs", Some(100)),
    ("≤1ms", Some(1_000)),
    ("≤10ms", Some(10_000)),
    ("≤100ms", Some(100_000)),
    ("≤1s", Some(1_000_000)),
    (">1s", None),
];

/// Percent of the recorded values in each [`LATENCY_BUCKETS`] bucket;
/// `None` for an empty histogram.
pub fn bucket_percentages(h: &Histogram<u64>) -> Option<Vec<f64>> {
    let total = h.len();
    if total == 0 {
        return None;
    }
    let mut counts = vec![0u64; LATENCY_BUCKETS.len()];
    for v in h.iter_recorded() {
        let value = h.highest_equivalent(v.value_iterated_to());
        let k = LATENCY_BUCKETS
            .iter()
            .position(|(_, hi)| hi.is_none_or(|hi| value <= hi))
            .unwrap_or(LATENCY_BUCKETS.len() - 1);
        counts[k] += v.count_at_value();
    }
    Some(
        counts
            .into_iter()
            .map(|c| c as f64 * 100.0 / total as f64)
            .collect(),
    )
}

/// EXTENSION POINT for the Insert Benchmark suite's storage: reads a stored
/// `ibench` step. Assumptions, until the suite settles them:
/// - load steps (`l.i0`, `l.i1`, `l.i2`): `rows_per_sec` is inserts/s and
///   the histogram is the insert response time; `l.x`: `rows_per_sec` is
///   indexed rows/s;
/// - query steps: one event is one query (`tps` is queries/s) and the
///   histogram is the query response time; `params.background_ips` is the
///   achieved background insert rate, `params.insert_rate_target` its
///   target (default: the step's per-client rate × `params.clients`, or ×
///   the number of clients stored);
/// - `clients[].finish_secs` are the clients' finish times.
pub fn input_from_step(s: &StepRecord) -> IbenchStepInput {
    let query = is_query_step(&s.info.name);
    let param = |k: &str| s.info.params.get(k).and_then(|v| v.as_f64());
    let clients = param("clients").unwrap_or(s.clients.len() as f64);
    let insert_target = if query {
        param("insert_rate_target").or_else(|| {
            per_client_insert_rate(&s.info.name)
                .filter(|_| clients > 0.0)
                .map(|r| r * clients)
        })
    } else {
        None
    };
    let role = match s.info.name.as_str() {
        "l.x" => "create index",
        _ if query => "query",
        _ => "insert",
    };
    let buckets = s.histogram().ok().and_then(|h| bucket_percentages(&h));
    IbenchStepInput {
        step: s.info.name.clone(),
        status: s.status,
        ips: if query {
            param("background_ips")
        } else {
            Some(s.rows_per_sec)
        },
        qps: query.then_some(s.tps),
        insert_target,
        client_finish_secs: s.clients.iter().map(|c| c.finish_secs).collect(),
        roles: vec![RoleLatency {
            role: role.to_string(),
            latency: s.latency,
            buckets_pct: buckets,
        }],
        seconds: s
            .per_second
            .iter()
            .map(|p| IbenchSecond {
                sec: p.sec,
                ips: (!query).then_some(p.rows as f64),
                qps: query.then_some(p.events as f64),
                max_rt_us: Some(p.max_latency_us),
            })
            .collect(),
        host: host_metrics_of(s),
    }
}
