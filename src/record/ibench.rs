//! The Insert Benchmark's derived metrics as a run records them with each
//! step (`steps.metrics_json`): rates, SLA and fairness, one definition each
//! for the suite that derives them and the report that reads them.

use serde::{Deserialize, Serialize};

/// Below this fraction of its target, a background insert rate is an SLA
/// failure (the reference's red cells).
pub const SLA_FRACTION: f64 = 0.95;

/// The derived metrics of one step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IbenchMetrics {
    /// Step time T: start to the last client's finish, seconds.
    pub secs: f64,
    /// Rows inserted per second (l.x: rows indexed per second).
    pub ips: f64,
    /// Rows deleted per second.
    pub dps: f64,
    /// Queries per second.
    pub qps: f64,
    /// The step's headline number: `ips` in load steps, `qps` in q steps.
    pub rate: f64,
    /// `ips` or `qps`.
    pub rate_unit: String,
    /// Largest response time of the primary role, seconds.
    pub maxop_secs: f64,
    /// Client 1's per-second rate met or exceeded in 50% / 99% of seconds.
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    /// The same percentiles for every client.
    pub rate_percentiles: Vec<ClientRates>,
    /// Client thread CPU (user + system) over the step, seconds.
    pub client_cpu_secs: f64,
    /// Client thread CPU per operation (row inserted, or query), µs.
    pub client_cpu_us_per_op: Option<f64>,
    /// CPU of the whole tidemark process over the step, seconds.
    pub process_cpu_secs: Option<f64>,
    /// Process CPU per operation, µs.
    pub process_cpu_us_per_op: Option<f64>,
    /// Background insert rate against its target (q steps).
    pub sla: Option<Sla>,
    /// Time to finish per client (steps with fixed work per client).
    pub fairness: Option<Fairness>,
}

/// Percentiles of one client's per-second rates (descending order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientRates {
    /// 1-based, as the tables are named.
    pub client: u32,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
}

/// The background insert rate of a q step against its target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sla {
    /// Clients × rate per client, rows per second.
    pub target_ips: f64,
    pub achieved_ips: f64,
    /// achieved / target.
    pub ratio: f64,
    /// ratio below [`SLA_FRACTION`].
    pub failed: bool,
    /// Full seconds in which all clients together inserted less than 95% of
    /// the target, and the number of full seconds.
    pub secs_below: u32,
    pub secs_measured: u32,
    pub fraction_secs_below: f64,
    /// The furthest any inserter fell behind its schedule, milliseconds.
    pub max_behind_ms: f64,
}

/// Per client time to finish a fixed-work step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// (client, 1-based; seconds to finish).
    pub clients: Vec<(u32, f64)>,
    pub min_time: f64,
    pub max_time: f64,
    pub diff: f64,
    /// diff / min_time × 100.
    pub pct: f64,
}

/// Whether an achieved background insert rate misses its `target`: below
/// [`SLA_FRACTION`] of a positive target.
pub fn sla_failed(achieved: f64, target: f64) -> bool {
    target > 0.0 && achieved < SLA_FRACTION * target
}

/// Fairness of per-client finish times, (client, seconds); `None` without
/// a finite, positive shortest time (a client that finished at zero did no
/// work, so the spread would mean nothing). Non-finite times are skipped.
pub fn fairness(clients: &[(u32, f64)]) -> Option<Fairness> {
    let clients: Vec<(u32, f64)> = clients
        .iter()
        .copied()
        .filter(|c| c.1.is_finite())
        .collect();
    let min_time = clients.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
    let max_time = clients
        .iter()
        .map(|c| c.1)
        .fold(f64::NEG_INFINITY, f64::max);
    if clients.is_empty() || min_time <= 0.0 {
        return None;
    }
    let diff = max_time - min_time;
    Some(Fairness {
        clients,
        min_time,
        max_time,
        diff,
        pct: diff / min_time * 100.0,
    })
}
