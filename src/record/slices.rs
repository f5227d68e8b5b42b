//! A step measured in slices (`--slices N`): its targets take turns in
//! short slices (A B B A …) while every server stays up, and the slices of
//! one target add up to its step. Each slice's own counts are kept in the
//! step's metrics (`slices`), in the order measured, so the report can pair
//! the slices of two targets that ran one right after the other.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::host_cost::{HostSecond, OpRates, Phase, averages, per_op};
use super::step::{ClientResult, SecondSample, StepResult};

/// One slice of a step: when it started, how long it measured, what it
/// counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    /// Its place in the step (0-based), the same on every target.
    pub index: u32,
    /// When its measured interval began, as RFC 3339 (the order the
    /// targets took turns in, from the clock).
    pub started_at: String,
    /// Length of its measured interval, seconds.
    pub secs: f64,
    pub events: u64,
    pub statements: u64,
    pub errors: u64,
    /// When the targets took short turns inside the slice (`--turn-ms`):
    /// the wall time the slice took, all targets' turns together, which
    /// the host's sampled seconds cover (`secs` is this target's turns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_secs: Option<f64>,
    /// This target's turns in the slice (0: measured whole).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turns: u64,
    /// Statements this target ran in its turns' warm-ups (not counted in
    /// `statements`; their cost is in the host's sampled seconds).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warm_statements: u64,
}

impl Slice {
    /// Statements per second over the slice (sysbench's QPS).
    pub fn qps(&self) -> f64 {
        statements_per_second(self.statements, self.secs)
    }

    /// The seconds the host's sampler covered for the slice: its wall
    /// time when taken in turns (the other targets' turns are in it too),
    /// else its measured seconds.
    pub fn sampled_secs(&self) -> f64 {
        self.wall_secs.unwrap_or(self.secs)
    }

    /// Statements per second of [`Slice::sampled_secs`]: every statement
    /// the target ran in them, its turns' warm-ups too.
    pub fn cost_rate(&self) -> f64 {
        statements_per_second(self.statements + self.warm_statements, self.sampled_secs())
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `statements` over `secs`, or 0 for no time.
fn statements_per_second(statements: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        statements as f64 / secs
    } else {
        0.0
    }
}

/// The step a sequence of slices adds up to: counts, histograms, client
/// CPU and seconds summed, per-second samples in order, each client's
/// counts summed (its finish time measured from the first slice's start),
/// the worst status; the slices listed in the metrics.
pub fn join(parts: Vec<(String, StepResult)>) -> Option<StepResult> {
    let mut slices = Vec::with_capacity(parts.len());
    let mut parts = parts.into_iter();
    let (first_start, mut step) = parts.next()?;
    slices.push(slice_of(0, first_start, &step));
    for (index, (started_at, part)) in (1..).zip(parts) {
        slices.push(slice_of(index, started_at, &part));
        let offset = step.secs;
        let _ = step.histogram.add(&part.histogram);
        step.counts.add(&part.counts);
        let sec0 = step.per_second.len() as u32;
        step.per_second
            .extend(part.per_second.into_iter().map(|s| SecondSample {
                sec: sec0 + s.sec,
                ..s
            }));
        for c in part.clients {
            match step.clients.iter_mut().find(|x| x.client == c.client) {
                Some(x) => {
                    x.events += c.events;
                    x.statements += c.statements;
                    x.errors += c.errors;
                    x.finish_secs = offset + c.finish_secs;
                }
                None => step.clients.push(ClientResult {
                    finish_secs: offset + c.finish_secs,
                    ..c
                }),
            }
        }
        for e in part.error_samples {
            if step.error_samples.len() < 5 && !step.error_samples.contains(&e) {
                step.error_samples.push(e);
            }
        }
        step.client_cpu_secs += part.client_cpu_secs;
        step.secs += part.secs;
        if part.status.severity() > step.status.severity() {
            step.status = part.status;
            step.failure = part.failure;
        }
    }
    let turns = turns_of(step.metrics.as_ref());
    let list = serde_json::to_value(&slices).expect("slices serialize");
    match &mut step.metrics {
        Some(Value::Object(m)) => {
            m.insert("slices".into(), list);
        }
        other => *other = Some(serde_json::json!({ "slices": list })),
    }
    // Taken in turns: the step's turns are every slice's.
    if let (Some(first), Some(Value::Object(m))) = (turns, &mut step.metrics) {
        let wall: f64 = slices.iter().filter_map(|s| s.wall_secs).sum();
        let count: u64 = slices.iter().map(|s| s.turns).sum();
        let warm: u64 = slices.iter().map(|s| s.warm_statements).sum();
        m.insert(
            "turns".into(),
            serde_json::json!({"turn_ms": first.turn_ms, "count": count,
                "wall_secs": wall, "warm_statements": warm}),
        );
    }
    Some(step)
}

/// What a step (or a slice) measured in turns says of them: their
/// length, how many this target took, and the wall time they spanned.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
struct Turns {
    turn_ms: f64,
    count: u64,
    wall_secs: f64,
    #[serde(default)]
    warm_statements: u64,
}

fn turns_of(metrics: Option<&Value>) -> Option<Turns> {
    serde_json::from_value(metrics?.get("turns")?.clone()).ok()
}

/// Statements per second of the time a step's host cost was sampled
/// over: its QPS, or when its targets took turns, every statement it ran
/// (its turns' warm-ups too) over the wall time of all targets' turns.
pub fn cost_rate(r: &StepResult) -> f64 {
    match turns_of(r.metrics.as_ref()) {
        Some(t) => statements_per_second(r.counts.statements + t.warm_statements, t.wall_secs),
        None => r.qps(),
    }
}

/// The slices stored in a step's metrics, in the order measured; empty
/// for a step measured whole.
pub fn of_metrics(metrics: Option<&Value>) -> Vec<Slice> {
    metrics
        .and_then(|m| m.get("slices"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

/// What one slice cost the machine per statement, from the host
/// sampler's rows of its measured interval: the server's CPU µs (`srv/o`)
/// and the whole host's (`cpu/o`, vmstat us+sy, the client included).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SliceCost {
    pub server_cpu_us_per_op: Option<f64>,
    pub host_cpu_us_per_op: Option<f64>,
}

/// The cost of each slice, in order, from the step's host sampler `rows`
/// (`ncpu` CPUs): a slice's warm-up and the other targets' turns are
/// closed as warm-up, so each run of measured rows is one slice. `None`
/// when the runs do not match the slices one to one, or a run's length
/// differs from its slice's by more than a tenth and 50 ms: then no slice
/// gets a cost rather than a wrong one.
pub fn costs(slices: &[Slice], rows: &[HostSecond], ncpu: u32) -> Option<Vec<SliceCost>> {
    let mut runs: Vec<Vec<&HostSecond>> = Vec::new();
    let mut in_run = false;
    for r in rows {
        let measured = r.phase == Phase::Measured;
        if measured && in_run {
            runs.last_mut().expect("a run").push(r);
        } else if measured {
            runs.push(vec![r]);
        }
        in_run = measured;
    }
    if slices.is_empty() || runs.len() != slices.len() {
        return None;
    }
    slices
        .iter()
        .zip(&runs)
        .map(|(slice, run)| {
            // The step's own formulas (`cpu/o`, `srv/o`), over the slice's
            // rows and at its rate.
            // Taken in turns, the rows cover every target's turns.
            let wall = slice.sampled_secs();
            let avg = averages(run)?;
            if (avg.secs - wall).abs() > 0.1 * wall + 0.05 {
                return None;
            }
            let p = per_op(&avg, ncpu, &OpRates::queries(slice.cost_rate()));
            // srv/o only when every row of the slice read the server.
            let server_read = run.iter().all(|r| r.server_cpu_pct.is_some());
            Some(SliceCost {
                server_cpu_us_per_op: p.scpupq.filter(|_| server_read),
                host_cpu_us_per_op: p.cpupq,
            })
        })
        .collect()
}

fn slice_of(index: u32, started_at: String, r: &StepResult) -> Slice {
    let turns = turns_of(r.metrics.as_ref());
    Slice {
        index,
        started_at,
        secs: r.secs,
        events: r.counts.events,
        statements: r.counts.statements,
        errors: r.counts.errors,
        wall_secs: turns.map(|t| t.wall_secs),
        turns: turns.map_or(0, |t| t.count),
        warm_statements: turns.map_or(0, |t| t.warm_statements),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::step::{Counts, StepStatus, new_histogram};

    fn part(secs: f64, statements: u64, client_events: &[u64]) -> StepResult {
        let mut h = new_histogram();
        h.record(100).unwrap();
        StepResult {
            status: StepStatus::Ok,
            failure: None,
            secs,
            threads: client_events.len() as u32,
            counts: Counts {
                events: client_events.iter().sum(),
                statements,
                ..Counts::default()
            },
            error_samples: Vec::new(),
            histogram: h,
            per_second: (0..secs as u32)
                .map(|sec| SecondSample {
                    sec,
                    ..SecondSample::default()
                })
                .collect(),
            clients: (0u32..)
                .zip(client_events)
                .map(|(client, &events)| ClientResult {
                    client,
                    events,
                    statements: events,
                    errors: 0,
                    finish_secs: secs,
                })
                .collect(),
            client_cpu_secs: 0.5,
            roles: Vec::new(),
            metrics: None,
        }
    }

    #[test]
    fn slices_add_up_to_the_step_and_stay_listed_in_order() {
        let step = join(vec![
            ("t0".into(), part(2.0, 200, &[60, 40])),
            ("t1".into(), part(1.0, 150, &[70, 80])),
        ])
        .unwrap();
        assert_eq!(step.secs, 3.0);
        assert_eq!(step.counts.statements, 350);
        assert_eq!(step.histogram.len(), 2);
        assert_eq!(step.client_cpu_secs, 1.0);
        let secs: Vec<u32> = step.per_second.iter().map(|s| s.sec).collect();
        assert_eq!(secs, [0, 1, 2]);
        assert_eq!(step.clients[0].events, 130);
        assert_eq!(step.clients[1].finish_secs, 3.0);
        let slices = of_metrics(step.metrics.as_ref());
        assert_eq!(slices.len(), 2);
        assert_eq!((slices[0].qps(), slices[1].qps()), (100.0, 150.0));
        assert_eq!(slices[1].started_at, "t1");
        assert!(join(Vec::new()).is_none());
        assert!(of_metrics(None).is_empty());
    }

    #[test]
    fn the_worst_slice_sets_the_status() {
        let mut bad = part(1.0, 10, &[10]);
        bad.status = StepStatus::Failed;
        bad.failure = Some("server gone".into());
        let step = join(vec![("a".into(), part(1.0, 10, &[10])), ("b".into(), bad)]).unwrap();
        assert_eq!(step.status, StepStatus::Failed);
        assert_eq!(step.failure.as_deref(), Some("server gone"));
    }

    fn row(phase: Phase, secs: f64, busy: f64, server: Option<f64>) -> HostSecond {
        HostSecond {
            phase,
            secs,
            us: busy * 0.75,
            sy: busy * 0.25,
            server_cpu_pct: server,
            ..HostSecond::default()
        }
    }

    fn slice(index: u32, secs: f64, statements: u64) -> Slice {
        Slice {
            index,
            started_at: String::new(),
            secs,
            events: statements,
            statements,
            errors: 0,
            wall_secs: None,
            turns: 0,
            warm_statements: 0,
        }
    }

    #[test]
    fn each_run_of_measured_rows_costs_its_slice() {
        use Phase::{Measured as M, Warmup as W};
        // Two slices: 1 s at 1,000 statements, then 2 s at 4,000; the
        // other target's turn and each slice's warm-up are closed as warm-up.
        let rows = [
            row(W, 0.2, 90.0, Some(5.0)),
            row(M, 1.0, 40.0, Some(60.0)),
            row(W, 1.1, 90.0, Some(1.0)),
            row(M, 1.0, 50.0, Some(80.0)),
            row(M, 1.0, 30.0, Some(40.0)),
            row(W, 0.1, 10.0, Some(0.0)),
        ];
        let slices = [slice(0, 1.0, 1_000), slice(1, 2.0, 4_000)];
        let c = costs(&slices, &rows, 2).unwrap();
        // Slice 0: the server used 60 % of a core for 1,000 q/s: 600 µs
        // each; the host 40 % of 2 CPUs: 800 µs.
        assert!((c[0].server_cpu_us_per_op.unwrap() - 600.0).abs() < 1e-9);
        assert!((c[0].host_cpu_us_per_op.unwrap() - 800.0).abs() < 1e-9);
        // Slice 1: 60 % of a core (the mean of 80 and 40) at 2,000 q/s:
        // 300 µs; the host 40 % of 2 CPUs: 400 µs.
        assert!((c[1].server_cpu_us_per_op.unwrap() - 300.0).abs() < 1e-9);
        assert!((c[1].host_cpu_us_per_op.unwrap() - 400.0).abs() < 1e-9);
        // A row without the server's CPU leaves srv/o out, not cpu/o.
        let mut partial = rows.clone();
        partial[4].server_cpu_pct = None;
        let c = costs(&slices, &partial, 2).unwrap();
        assert_eq!(c[1].server_cpu_us_per_op, None);
        assert!(c[1].host_cpu_us_per_op.is_some());
    }

    #[test]
    fn rows_that_do_not_match_the_slices_give_no_cost() {
        use Phase::{Measured as M, Warmup as W};
        let rows = [row(M, 1.0, 40.0, Some(60.0)), row(W, 1.0, 9.0, None)];
        // Two slices, one run.
        assert!(costs(&[slice(0, 1.0, 10), slice(1, 1.0, 10)], &rows, 2).is_none());
        // One slice, but the run is 1 s where the slice measured 2 s.
        assert!(costs(&[slice(0, 2.0, 10)], &rows, 2).is_none());
        assert!(costs(&[], &rows, 2).is_none());
    }
}
