//! The exact merge of a sharded step: counts and per-second samples are
//! summed, latency histograms added (the union of every recorded event),
//! never an average of the shards' percentiles. The step keeps a `shards`
//! list (host, threads, events, statements, errors, rate, clock offset and
//! start lag) in its metrics, so an overloaded client host stays visible.

use hdrhistogram::Histogram;
use serde_json::json;

use crate::record::step::{RoleResult, SecondSample, StepResult, StepStatus, keep_error_sample};
use crate::store::shards::ShardReport;

/// One finished shard as the coordinator read it from the board.
#[derive(Clone, Debug)]
pub struct MergedShard {
    pub shard: u32,
    pub host: String,
    pub clock_offset_ms: Option<f64>,
    pub start_lag_ms: Option<f64>,
    pub report: ShardReport,
    pub histogram: Histogram<u64>,
    /// Its roles ([`ShardReport::roles`] decoded); empty for a sysbench step.
    pub roles: Vec<RoleResult>,
}

/// The step's result from its shards' (a step of `threads` clients).
pub fn merge(shards: &[MergedShard], threads: u32) -> StepResult {
    let mut step = StepResult::empty(threads);
    let mut list = Vec::with_capacity(shards.len());
    for s in shards {
        merge_roles(&mut step.roles, &s.roles);
        let r = &s.report;
        let _ = step.histogram.add(&s.histogram);
        step.counts.add(&r.counts);
        for sample in &r.per_second {
            let i = sample.sec as usize;
            while step.per_second.len() <= i {
                step.per_second.push(SecondSample {
                    sec: step.per_second.len() as u32,
                    ..Default::default()
                });
            }
            let slot = &mut step.per_second[i];
            slot.counts.add(&sample.counts);
            slot.max_latency_us = slot.max_latency_us.max(sample.max_latency_us);
        }
        step.clients.extend(r.clients.iter().cloned());
        for e in &r.error_samples {
            keep_error_sample(&mut step.error_samples, e);
        }
        step.client_cpu_secs += r.client_cpu_secs;
        step.secs = step.secs.max(r.secs);
        let worse = r.step_status().severity() > step.status.severity();
        if worse {
            step.status = r.step_status();
            step.failure = r
                .failure
                .as_ref()
                .map(|f| format!("shard {} on {}: {f}", s.shard, s.host));
        }
        list.push(json!({
            "shard": s.shard,
            "host": s.host,
            "threads": r.threads,
            "events": r.counts.events,
            "statements": r.counts.statements,
            "errors": r.counts.errors,
            "qps": if r.secs > 0.0 { r.counts.statements as f64 / r.secs } else { 0.0 },
            "client_cpu_secs": r.client_cpu_secs,
            "clock_offset_ms": s.clock_offset_ms,
            "start_lag_ms": s.start_lag_ms,
        }));
    }
    step.clients.sort_by_key(|c| c.client);
    for r in &mut step.roles {
        r.clients.sort_by_key(|c| c.client);
        r.per_second.sort_by_key(|p| (p.sec, p.client));
    }
    if step.status == StepStatus::Ok && step.counts.errors > 0 {
        step.status = StepStatus::Errors;
    }
    step.metrics = Some(json!({ "shards": list }));
    step
}

/// Adds a shard's roles to the merged ones (the same roles in the same
/// order on every shard): counts and CPU summed, histograms added,
/// clients and per-client seconds gathered.
fn merge_roles(merged: &mut Vec<RoleResult>, shard: &[RoleResult]) {
    for r in shard {
        let Some(m) = merged.iter_mut().find(|m| m.role == r.role) else {
            merged.push(r.clone());
            continue;
        };
        m.threads += r.threads;
        m.counts.add(&r.counts);
        let _ = m.histogram.add(&r.histogram);
        m.intended = match (m.intended.take(), &r.intended) {
            (Some(mut a), Some(b)) => {
                let _ = a.add(b);
                Some(a)
            }
            (a, b) => a.or_else(|| b.clone()),
        };
        m.cpu_secs += r.cpu_secs;
        m.clients.extend(r.clients.iter().cloned());
        m.per_second.extend(r.per_second.iter().cloned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::step::ClientResult;
    use crate::record::step::{Counts, new_histogram};

    fn shard(n: u32, latencies: &[u64], seconds: &[(u64, u64)]) -> MergedShard {
        let mut h = new_histogram();
        for &l in latencies {
            h.record(l).unwrap();
        }
        let per_second: Vec<SecondSample> = seconds
            .iter()
            .enumerate()
            .map(|(i, &(events, max))| SecondSample {
                sec: i as u32,
                counts: Counts {
                    events,
                    statements: events * 2,
                    ..Default::default()
                },
                max_latency_us: max,
            })
            .collect();
        let events: u64 = seconds.iter().map(|s| s.0).sum();
        MergedShard {
            shard: n,
            host: "local".into(),
            clock_offset_ms: Some(0.1),
            start_lag_ms: Some(0.2),
            report: ShardReport {
                status: "ok".into(),
                secs: seconds.len() as f64,
                threads: 1,
                counts: Counts {
                    events,
                    statements: events * 2,
                    ..Default::default()
                },
                per_second,
                clients: vec![ClientResult {
                    client: n,
                    events,
                    ..Default::default()
                }],
                ..Default::default()
            },
            histogram: h,
            roles: Vec::new(),
        }
    }

    #[test]
    fn sums_seconds_and_unions_histograms() {
        let a = shard(1, &[100, 200, 300], &[(2, 300), (1, 100)]);
        let b = shard(0, &[10_000], &[(1, 10_000)]);
        let m = merge(&[a.clone(), b.clone()], 2);
        assert_eq!(m.counts.events, 4);
        assert_eq!(m.counts.statements, 8);
        assert_eq!(m.per_second.len(), 2);
        assert_eq!(m.per_second[0].counts.events, 3);
        assert_eq!(m.per_second[0].max_latency_us, 10_000);
        assert_eq!(m.per_second[1].counts.events, 1);
        assert_eq!(m.histogram.len(), 4);
        // The union's p50 is an event's latency, not the mean of the
        // shards' p50s (200 and 10 000).
        assert!(m.histogram.value_at_quantile(0.5) <= 201);
        assert_eq!(m.histogram.max(), a.histogram.max().max(b.histogram.max()));
        assert_eq!(
            m.clients.iter().map(|c| c.client).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(m.status, StepStatus::Ok);
        let list = m.metrics.unwrap()["shards"].as_array().unwrap().clone();
        assert_eq!(list.len(), 2);
        assert_eq!(list[1]["events"], 1);
    }

    #[test]
    fn the_worst_shard_status_wins() {
        let a = shard(0, &[1], &[(1, 1)]);
        let mut b = shard(1, &[1], &[(1, 1)]);
        b.report.status = "failed".into();
        b.report.failure = Some("server gone".into());
        let m = merge(&[a, b], 2);
        assert_eq!(m.status, StepStatus::Failed);
        assert_eq!(m.failure.as_deref(), Some("shard 1 on local: server gone"));
    }
}
