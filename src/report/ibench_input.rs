//! What one Insert Benchmark step measured, as the report needs it, and how
//! it is read from a stored step.
//!
//! [`input_from_step`] is the one place that knows how the Insert Benchmark
//! suite stores a step: its roles (`step_roles`, `step_role_seconds`) and
//! the metrics it derived (`steps.metrics_json`), with a fallback to the
//! generic columns for steps stored without them.

use hdrhistogram::Histogram;
use serde::Serialize;

use super::cost::{StepHostMetrics, host_metrics_of};
use crate::record::{LatencySummary, StepStatus};
use crate::store::StoredStep;

/// Whether `step` is one of the query steps (qr*, qp*), which run with
/// background inserts at a fixed rate.
pub fn is_query_step(step: &str) -> bool {
    (step.starts_with("qr") || step.starts_with("qp")) && per_client_insert_rate(step).is_some()
}

/// The background insert rate per client a query step is held to (100 for
/// `qr100`).
pub fn per_client_insert_rate(step: &str) -> Option<f64> {
    step.get(2..)?.parse::<u32>().ok().map(f64::from)
}

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
    /// The stored metrics row's `maxop`, `p50` and `p99` (reference C.1:
    /// the primary role's largest response time in seconds; client 1's
    /// per-second rates at 50 % and 99 %, sorted in descending order), as
    /// the step derived them; `None` for steps stored without them.
    pub maxop_secs: Option<f64>,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
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
    /// Rows deleted that second (steps with a delete role).
    pub dps: Option<f64>,
    /// The largest insert, delete and query response time that second,
    /// µs (`None`: the step has no such role).
    pub max_insert_us: Option<u64>,
    pub max_delete_us: Option<u64>,
    pub max_query_us: Option<u64>,
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

/// Reads a stored `ibench` step. Steps the suite stored (with roles and
/// `metrics`, see `workload::ibench::metrics`) give:
/// - `ips`: `metrics.ips` (inserts/s; l.x: rows indexed/s; query steps:
///   the achieved background insert rate), `qps`: `metrics.qps` in query
///   steps, `insert_target`: `metrics.sla.target_ips`;
/// - response times per role (`insert`, `delete`, `query`, l.x's
///   `create index`) from the roles' histograms, from the actual start;
/// - per second: rows inserted and queries over all clients, and the
///   largest response time of the step's primary role (queries in query
///   steps, inserts otherwise).
///
/// A step without roles (from before the suite stored them) is read from
/// the generic columns: `rows_per_sec` as ips, `tps` as qps, the step
/// histogram as the primary role's.
pub fn input_from_step(s: &StoredStep) -> IbenchStepInput {
    if s.roles.is_empty() {
        return input_from_generic_step(s);
    }
    let query = is_query_step(&s.info.name);
    let metrics = s.ibench_metrics();
    let insert_target = metrics
        .as_ref()
        .and_then(|m| Some(m.sla.as_ref()?.target_ips))
        .or_else(|| generic_insert_target(s));
    // The reference's three histograms (and l.x's); the id reads are not one.
    let roles = s
        .roles
        .iter()
        .filter(|r| r.role != "ids")
        .map(|r| RoleLatency {
            role: if r.role == "index" {
                "create index".to_string()
            } else {
                r.role.clone()
            },
            latency: r.latency_us,
            buckets_pct: r.histogram().ok().and_then(|h| bucket_percentages(&h)),
        })
        .collect();
    let primary = if query {
        "query"
    } else if s.info.name == "l.x" {
        "index"
    } else {
        "insert"
    };
    let role = |name: &str| s.roles.iter().find(|r| r.role == name);
    let last_sec = s
        .roles
        .iter()
        .flat_map(|r| r.per_second.iter().map(|p| p.sec))
        .max();
    let seconds = match last_sec {
        None => Vec::new(),
        Some(last) => {
            let mut out: Vec<IbenchSecond> = (0..=last)
                .map(|sec| IbenchSecond {
                    sec,
                    ips: role("insert").map(|_| 0.0),
                    qps: role("query").filter(|_| query).map(|_| 0.0),
                    max_rt_us: role(primary).map(|_| 0),
                    dps: role("delete").map(|_| 0.0),
                    max_insert_us: role("insert").map(|_| 0),
                    max_delete_us: role("delete").map(|_| 0),
                    max_query_us: role("query").filter(|_| query).map(|_| 0),
                })
                .collect();
            if let Some(r) = role("delete") {
                for p in &r.per_second {
                    if let Some(x) = out[p.sec as usize].dps.as_mut() {
                        *x += p.rows as f64;
                    }
                }
            }
            type Slot = fn(&mut IbenchSecond) -> &mut Option<u64>;
            let maxes: [(&str, Slot); 3] = [
                ("insert", |s| &mut s.max_insert_us),
                ("delete", |s| &mut s.max_delete_us),
                ("query", |s| &mut s.max_query_us),
            ];
            for (name, slot) in maxes {
                let Some(r) = role(name) else { continue };
                for p in &r.per_second {
                    if let Some(m) = slot(&mut out[p.sec as usize]).as_mut() {
                        *m = (*m).max(p.max_latency_us);
                    }
                }
            }
            for (name, is_rows) in [("insert", true), ("query", false)] {
                let Some(r) = role(name) else { continue };
                for p in &r.per_second {
                    let slot = &mut out[p.sec as usize];
                    let v = if is_rows { p.rows } else { p.events } as f64;
                    let field = if is_rows {
                        &mut slot.ips
                    } else {
                        &mut slot.qps
                    };
                    if let Some(x) = field.as_mut() {
                        *x += v;
                    }
                }
            }
            if let Some(r) = role(primary) {
                for p in &r.per_second {
                    let m = out[p.sec as usize].max_rt_us.get_or_insert(0);
                    *m = (*m).max(p.max_latency_us);
                }
            }
            out
        }
    };
    IbenchStepInput {
        step: s.info.name.clone(),
        status: s.status,
        ips: metrics.as_ref().map(|m| m.ips),
        qps: metrics.as_ref().filter(|_| query).map(|m| m.qps),
        insert_target: if query { insert_target } else { None },
        client_finish_secs: s.clients.iter().map(|c| c.finish_secs).collect(),
        roles,
        seconds,
        host: host_metrics_of(s),
        maxop_secs: metrics.as_ref().map(|m| m.maxop_secs),
        p50: metrics.as_ref().and_then(|m| m.p50),
        p99: metrics.as_ref().and_then(|m| m.p99),
    }
}

/// A query step's target from its name and client count.
fn generic_insert_target(s: &StoredStep) -> Option<f64> {
    let param = |k: &str| s.info.params.get(k).and_then(|v| v.as_f64());
    let clients = param("clients").unwrap_or(s.clients.len() as f64);
    param("insert_rate_target").or_else(|| {
        per_client_insert_rate(&s.info.name)
            .filter(|_| clients > 0.0)
            .map(|r| r * clients)
    })
}

/// A step stored without roles, read from the generic columns:
/// - load steps (`l.i0`, `l.i1`, `l.i2`): `rows_per_sec` is inserts/s and
///   the histogram is the insert response time; `l.x`: `rows_per_sec` is
///   indexed rows/s;
/// - query steps: one event is one query (`tps` is queries/s) and the
///   histogram is the query response time; `params.background_ips` is the
///   achieved background insert rate, `params.insert_rate_target` its
///   target (default: the step's per-client rate × `params.clients`, or ×
///   the number of clients stored);
/// - `clients[].finish_secs` are the clients' finish times.
fn input_from_generic_step(s: &StoredStep) -> IbenchStepInput {
    let query = is_query_step(&s.info.name);
    let param = |k: &str| s.info.params.get(k).and_then(|v| v.as_f64());
    let insert_target = if query {
        generic_insert_target(s)
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
                ips: (!query).then_some(p.counts.rows as f64),
                qps: query.then_some(p.counts.events as f64),
                max_rt_us: Some(p.max_latency_us),
                dps: None,
                max_insert_us: None,
                max_delete_us: None,
                max_query_us: None,
            })
            .collect(),
        host: host_metrics_of(s),
        // Its one histogram is the primary role's; its seconds are every
        // client's, not client 1's, so the rate percentiles are not known.
        maxop_secs: Some(s.latency.max as f64 / 1e6),
        p50: None,
        p99: None,
    }
}
