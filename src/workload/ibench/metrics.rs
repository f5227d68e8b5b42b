//! What the reference derives from an Insert Benchmark step (C.1, C.2, B.7
//! and the fairness table of the seed post on Postgres 16 beta3), computed
//! from the runner's measurements and stored with the step as JSON:
//!
//! - `ips`, `dps`, `qps`: rows inserted, rows deleted, queries per second of
//!   step time T (the slowest client's finish); for l.x `ips` counts the
//!   rows indexed, `(nr1 + 100) / T`;
//! - `maxop`: the largest response time, in seconds, of the step's primary
//!   role (inserts in load steps, queries in q steps);
//! - `p50`/`p99`: client 1's per-second rates of that role, sorted in
//!   descending order, taking position round(x% · n): the rate that x% of
//!   its seconds met or exceeded (for every client in `rate_percentiles`);
//! - the SLA of q steps: the achieved background insert rate against the
//!   target, a failure below 95%, and the fraction of seconds below 95%;
//! - fairness: each client's time to finish its fixed work, min, max,
//!   diff = max − min and pct = diff / min × 100.
//!
//! The types and the SLA and fairness rules are the record's
//! ([`crate::record::ibench`]); this file derives them from a result.

use super::{StepDef, StepKind};
use crate::metrics::summary::OpRates;
pub use crate::record::ibench::{
    ClientRates, Fairness, IbenchMetrics, SLA_FRACTION, Sla, fairness,
};
use crate::runner::{RoleResult, StepResult, StepStatus};

/// Seconds at the end of a step shorter than this are not a full second.
const PARTIAL_SECOND_SLACK: f64 = 0.05;

/// The value `pct`% of `rates` met or exceeded: sorted in descending
/// order, the one at (1-based) position round(pct/100 × n). `None` with
/// fewer than 10 values, as the reference prints NA then.
pub fn descending_percentile(rates: &[f64], pct: f64) -> Option<f64> {
    let n = rates.len();
    if n < 10 {
        return None;
    }
    let mut v = rates.to_vec();
    v.sort_by(|a, b| b.total_cmp(a));
    let pos = ((pct / 100.0) * n as f64).round() as usize;
    Some(v[pos.clamp(1, n) - 1])
}

/// Per-second values of role `r` for `client` over the full seconds of a
/// step of `secs`: rows (`by_rows`) or events.
fn client_seconds(r: &RoleResult, client: u32, secs: f64, by_rows: bool) -> Vec<f64> {
    r.per_second
        .iter()
        .filter(|s| s.client == client && f64::from(s.sec + 1) <= secs + PARTIAL_SECOND_SLACK)
        .map(|s| (if by_rows { s.rows } else { s.events }) as f64)
        .collect()
}

fn per_sec(n: f64, secs: f64) -> f64 {
    if secs > 0.0 { n / secs } else { 0.0 }
}

/// Derives the metrics of `step` from what it measured. `rows_loaded` is
/// nr1 (rows in all tables after l.i0), `clients` the run's client count,
/// `process_cpu_secs` the tidemark process's CPU over the step if measured.
pub fn derive(
    step: &StepDef,
    r: &StepResult,
    rows_loaded: u64,
    clients: u32,
    process_cpu_secs: Option<f64>,
) -> IbenchMetrics {
    let secs = r.secs;
    let rows_of = |role: &str| r.role(role).map_or(0, |x| x.counts.rows);
    let inserted = rows_of("insert");
    let ips = match step.kind {
        // Rows indexed: what was loaded plus the rows l.x inserts.
        StepKind::CreateIndexes => per_sec(
            (rows_loaded + r.role("index").map_or(0, |x| x.counts.rows)) as f64,
            secs,
        ),
        _ => per_sec(inserted as f64, secs),
    };
    let queries = r.role("query").map_or(0, |x| x.counts.events);
    let qps = per_sec(queries as f64, secs);
    let is_query = matches!(step.kind, StepKind::Query(_));
    let (rate, unit, ops) = if is_query {
        (qps, "qps", queries as f64)
    } else {
        (ips, "ips", ips * secs)
    };
    let primary = r.role(step.primary_role());
    let maxop_secs = primary.map_or(0.0, |p| p.histogram.max() as f64 / 1e6);
    let mut rate_percentiles = Vec::new();
    if let Some(p) = primary.filter(|_| step.kind != StepKind::CreateIndexes) {
        for c in &p.clients {
            let v = client_seconds(p, c.client, secs, !is_query);
            let at = |x| descending_percentile(&v, x);
            if let (Some(p50), Some(p75), Some(p90), Some(p95), Some(p99)) =
                (at(50.0), at(75.0), at(90.0), at(95.0), at(99.0))
            {
                rate_percentiles.push(ClientRates {
                    client: c.client + 1,
                    p50,
                    p75,
                    p90,
                    p95,
                    p99,
                });
            }
        }
    }
    let first = rate_percentiles.iter().find(|c| c.client == 1);
    let per_op = |cpu: f64| (ops > 0.0).then(|| cpu * 1e6 / ops);
    // A step that stopped early has partial rates: no SLA or fairness verdict.
    let complete = matches!(r.status, StepStatus::Ok | StepStatus::Errors);
    let sla = match (step.rate, r.role("insert")) {
        (Some(rate), Some(ins)) if is_query && complete => {
            let target = f64::from(rate) * f64::from(clients);
            let full = (secs + PARTIAL_SECOND_SLACK).floor().max(0.0) as u32;
            let mut per_second = vec![0u64; full as usize];
            for s in &ins.per_second {
                if let Some(slot) = per_second.get_mut(s.sec as usize) {
                    *slot += s.rows;
                }
            }
            let below = per_second
                .iter()
                .filter(|&&v| (v as f64) < SLA_FRACTION * target)
                .count() as u32;
            let ratio = if target > 0.0 { ips / target } else { 0.0 };
            Some(Sla {
                target_ips: target,
                achieved_ips: ips,
                ratio,
                failed: ratio < SLA_FRACTION,
                secs_below: below,
                secs_measured: full,
                fraction_secs_below: if full > 0 {
                    f64::from(below) / f64::from(full)
                } else {
                    0.0
                },
                max_behind_ms: ins
                    .clients
                    .iter()
                    .map(|c| c.max_behind_us as f64 / 1e3)
                    .fold(0.0, f64::max),
            })
        }
        _ => None,
    };
    let finish: Vec<(u32, f64)> = r
        .clients
        .iter()
        .map(|c| (c.client + 1, c.finish_secs))
        .collect();
    IbenchMetrics {
        secs,
        ips,
        dps: per_sec(rows_of("delete") as f64, secs),
        qps,
        rate,
        rate_unit: unit.to_string(),
        maxop_secs,
        p50: first.map(|c| c.p50),
        p99: first.map(|c| c.p99),
        rate_percentiles,
        client_cpu_secs: r.client_cpu_secs,
        client_cpu_us_per_op: per_op(r.client_cpu_secs),
        process_cpu_secs,
        process_cpu_us_per_op: process_cpu_secs.and_then(per_op),
        sla,
        fairness: if complete { fairness(&finish) } else { None },
    }
}

impl IbenchMetrics {
    /// What the step's hardware cost is divided by (C.1): per inserted row
    /// in l.i0, l.i1 and l.i2, per indexed row in l.x, per query in q
    /// steps; writes (`wpi`, `wkbpi`) always by the insert rate (for l.x
    /// the indexed rows, as the reference's `ips` column holds them).
    pub fn op_rates(&self, kind: StepKind) -> OpRates {
        rates_of_kind(kind, self.ips, self.qps)
    }
}

fn rates_of_kind(kind: StepKind, ips: f64, qps: f64) -> OpRates {
    match kind {
        StepKind::Load | StepKind::InsertDelete => OpRates::inserts(ips),
        StepKind::CreateIndexes => OpRates::indexed_rows(ips),
        StepKind::Query(_) => OpRates::queries_with_inserts(qps, ips),
    }
}

/// [`IbenchMetrics::op_rates`] of a step's result; a result without derived
/// metrics (its clients never started) has rate zero, so its per-operation
/// cost is stored as missing, never as a number.
pub fn op_rates_of(kind: StepKind, r: &StepResult) -> OpRates {
    r.metrics
        .clone()
        .and_then(|v| serde_json::from_value::<IbenchMetrics>(v).ok())
        .map_or_else(|| rates_of_kind(kind, 0.0, 0.0), |m| m.op_rates(kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Counts, new_histogram};
    use crate::runner::{ClientResult, RoleClient, RoleSecond};
    use crate::workload::ibench::client::QueryKind;

    #[test]
    fn percentiles_count_from_the_top() {
        let rates: Vec<f64> = (1..=100).map(f64::from).collect();
        // 99% of seconds had a rate of at least 2; half had at least 51.
        assert_eq!(descending_percentile(&rates, 99.0), Some(2.0));
        assert_eq!(descending_percentile(&rates, 50.0), Some(51.0));
        assert_eq!(descending_percentile(&rates, 1.0), Some(100.0));
        assert_eq!(descending_percentile(&rates[..9], 50.0), None);
        let ten: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(descending_percentile(&ten, 99.0), Some(1.0));
        assert_eq!(descending_percentile(&ten, 0.0), Some(10.0));
    }

    #[test]
    fn fairness_is_the_seed_posts_table() {
        let f = fairness(&[(1, 100.0), (2, 150.0), (3, 120.0)]).unwrap();
        assert_eq!((f.min_time, f.max_time, f.diff), (100.0, 150.0, 50.0));
        assert_eq!(f.pct, 50.0);
        assert!(fairness(&[]).is_none());
    }

    fn role(
        name: &str,
        events: u64,
        rows: u64,
        seconds: Vec<RoleSecond>,
        max_us: u64,
    ) -> RoleResult {
        let mut h = new_histogram();
        h.record(max_us).unwrap();
        RoleResult {
            role: name.into(),
            threads: 2,
            counts: Counts {
                events,
                statements: events,
                rows,
                errors: 0,
                retries: 0,
            },
            target_rate: None,
            histogram: h,
            intended: None,
            cpu_secs: 0.0,
            clients: (0..2)
                .map(|c| RoleClient {
                    client: c,
                    max_behind_us: 2_500 * u64::from(c),
                    ..Default::default()
                })
                .collect(),
            per_second: seconds,
        }
    }

    fn sec(client: u32, sec: u32, events: u64, rows: u64) -> RoleSecond {
        RoleSecond {
            client,
            sec,
            events,
            rows,
            ..Default::default()
        }
    }

    #[test]
    fn a_query_step_reports_qps_sla_and_fairness() {
        let step = StepDef {
            name: "qr100".into(),
            kind: StepKind::Query(QueryKind::Range),
            rows_per_client: 1_000,
            rows_per_commit: 50,
            rate: Some(100),
        };
        // 2 clients × 100 rows/s for 10 s, except second 3 of client 1 is a
        // stall caught up in second 4; a partial 11th second.
        let mut ins = Vec::new();
        let mut q = Vec::new();
        for s in 0..11 {
            for c in 0..2 {
                let rows = match (c, s) {
                    (_, 10) => 0,
                    (0, 3) => 0,
                    (0, 4) => 200,
                    _ => 100,
                };
                ins.push(sec(c, s, rows / 50, rows));
                q.push(sec(c, s, 1_000 + u64::from(s), 10_000));
            }
        }
        let mut r = StepResult::failed(8, "x");
        r.status = StepStatus::Ok;
        r.failure = None;
        r.secs = 10.01;
        r.client_cpu_secs = 2.0;
        r.clients = vec![
            ClientResult {
                client: 0,
                finish_secs: 10.01,
                ..Default::default()
            },
            ClientResult {
                client: 1,
                finish_secs: 10.0,
                ..Default::default()
            },
        ];
        r.roles = vec![
            role("insert", 40, 2_000, ins, 3_000),
            role("query", 20_090, 200_900, q, 1_500_000),
        ];
        let m = derive(&step, &r, 400_000, 2, Some(3.0));
        assert_eq!(m.rate_unit, "qps");
        assert!((m.qps - 20_090.0 / 10.01).abs() < 1e-9);
        assert_eq!(m.rate, m.qps);
        assert!((m.ips - 2_000.0 / 10.01).abs() < 1e-9);
        assert!((m.maxop_secs - 1.5).abs() < 0.002, "{}", m.maxop_secs);
        let sla = m.sla.unwrap();
        assert_eq!(sla.target_ips, 200.0);
        assert!(!sla.failed && sla.ratio > 0.99);
        assert_eq!((sla.secs_below, sla.secs_measured), (1, 10));
        assert_eq!(sla.max_behind_ms, 2.5);
        // Client 1's query rates 1000..1009 per second, descending.
        assert_eq!(m.p50, Some(1_005.0));
        assert_eq!(m.p99, Some(1_000.0));
        assert_eq!(m.rate_percentiles.len(), 2);
        let f = m.fairness.unwrap();
        assert_eq!(f.clients, [(1, 10.01), (2, 10.0)]);
        assert!((f.pct - 0.1).abs() < 1e-9);
        assert!((m.client_cpu_us_per_op.unwrap() - 2e6 / 20_090.0).abs() < 1e-6);
        assert!((m.process_cpu_us_per_op.unwrap() - 3e6 / 20_090.0).abs() < 1e-6);
    }

    #[test]
    fn a_slow_background_writer_fails_the_sla() {
        let step = StepDef {
            name: "qp1000".into(),
            kind: StepKind::Query(QueryKind::Point),
            rows_per_client: 10_000,
            rows_per_commit: 50,
            rate: Some(1000),
        };
        let mut r = StepResult::failed(8, "x");
        r.status = StepStatus::Ok;
        r.secs = 20.0;
        r.roles = vec![
            role("insert", 400, 20_000, vec![], 10),
            role("query", 10, 10, vec![], 10),
        ];
        let sla = derive(&step, &r, 0, 2, None).sla.unwrap();
        assert_eq!(sla.ratio, 0.5);
        assert!(sla.failed);
        // A step cut short gives no verdict on its partial rates.
        r.status = StepStatus::Failed;
        let m = derive(&step, &r, 0, 2, None);
        assert!(m.sla.is_none() && m.fairness.is_none());
    }

    #[test]
    fn l_x_counts_rows_indexed() {
        let step = StepDef {
            name: "l.x".into(),
            kind: StepKind::CreateIndexes,
            rows_per_client: 50,
            rows_per_commit: 100,
            rate: None,
        };
        let mut r = StepResult::failed(2, "x");
        r.status = StepStatus::Ok;
        r.secs = 2.0;
        r.roles = vec![role("index", 2, 100, vec![], 1_900_000)];
        let m = derive(&step, &r, 400_000, 2, None);
        assert_eq!(m.ips, 200_050.0);
        assert_eq!(m.rate_unit, "ips");
        assert!(m.sla.is_none() && m.rate_percentiles.is_empty());
    }

    #[test]
    fn the_cost_basis_follows_the_step() {
        use crate::metrics::summary::{BASIS_INDEXED_ROWS, BASIS_INSERTS, BASIS_QUERIES};
        let load = StepDef {
            name: "l.i0".into(),
            kind: StepKind::Load,
            rows_per_client: 1_000,
            rows_per_commit: 100,
            rate: None,
        };
        let mut r = StepResult::failed(2, "x");
        r.status = StepStatus::Ok;
        r.secs = 4.0;
        r.roles = vec![role("insert", 20, 2_000, vec![], 10)];
        // No derived metrics yet: the rate is zero, so nothing is per op.
        let none = op_rates_of(StepKind::Load, &r);
        assert_eq!((none.basis.as_str(), none.rate), (BASIS_INSERTS, 0.0));
        r.metrics = serde_json::to_value(derive(&load, &r, 0, 2, None)).ok();
        let rates = op_rates_of(StepKind::Load, &r);
        assert_eq!(rates.basis, BASIS_INSERTS);
        assert_eq!((rates.rate, rates.insert_rate), (500.0, Some(500.0)));
        // l.x: rows indexed per second, writes divided by the same rate.
        let m = IbenchMetrics {
            ips: 200_050.0,
            qps: 0.0,
            ..derive(&load, &r, 0, 2, None)
        };
        let lx = m.op_rates(StepKind::CreateIndexes);
        assert_eq!(lx.basis, BASIS_INDEXED_ROWS);
        assert_eq!((lx.rate, lx.insert_rate), (200_050.0, Some(200_050.0)));
        // q steps: per query, writes per background insert.
        let m = IbenchMetrics {
            qps: 9_000.0,
            ips: 200.0,
            ..m
        };
        let q = m.op_rates(StepKind::Query(QueryKind::Point));
        assert_eq!(q.basis, BASIS_QUERIES);
        assert_eq!((q.rate, q.insert_rate), (9_000.0, Some(200.0)));
        assert_eq!(m.op_rates(StepKind::InsertDelete).rate, 200.0);
    }
}
