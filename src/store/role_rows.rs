//! Writing and reading the roles of multi-role steps (schema `IBENCH_ROLES`:
//! `step_roles`, `step_role_clients`, `step_role_seconds`).

use anyhow::{Context, Result};
use hdrhistogram::Histogram;
use serde::Serialize;

use super::backend::{Backend, Value, params};
use super::read::{get_counts, get_latency};
use super::write::{count_params, decode_histogram, encode_histogram, int, latency_params, real};
use crate::record::{Counts, LatencySummary, RoleClient, RoleResult, RoleSecond};

/// A stored role of a step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RoleRecord {
    pub role: String,
    pub threads: u32,
    #[serde(flatten)]
    pub counts: Counts,
    /// Intended events per second per thread; `None` when not paced.
    pub target_rate: Option<f64>,
    /// From each event's actual start, µs.
    pub latency_us: LatencySummary,
    /// From each event's intended start, µs (paced roles): p50, p99, p99.9
    /// and max are stored; avg and p95 are not and read as 0.
    pub intended_latency_us: Option<LatencySummary>,
    pub cpu_secs: f64,
    pub clients: Vec<RoleClient>,
    pub per_second: Vec<RoleSecond>,
    #[serde(skip)]
    pub histogram_v2: Vec<u8>,
    #[serde(skip)]
    pub intended_v2: Option<Vec<u8>>,
}

impl RoleRecord {
    /// The latency histogram from the actual start.
    pub fn histogram(&self) -> Result<Histogram<u64>> {
        decode_histogram(&self.histogram_v2).with_context(|| format!("role {}", self.role))
    }

    /// The latency histogram from the intended start, for paced roles.
    pub fn intended_histogram(&self) -> Result<Option<Histogram<u64>>> {
        self.intended_v2
            .as_deref()
            .map(|b| decode_histogram(b).with_context(|| format!("role {}", self.role)))
            .transpose()
    }
}

/// A `step_roles` row with its clients and seconds, as stored.
pub(super) struct RoleRow<'a> {
    pub role: &'a str,
    pub threads: u32,
    pub counts: Counts,
    pub target_rate: Option<f64>,
    pub latency: LatencySummary,
    /// p50, p99, p99.9 and max are stored.
    pub intended: Option<LatencySummary>,
    pub cpu_secs: f64,
    pub histogram: Vec<u8>,
    pub intended_histogram: Option<Vec<u8>>,
    pub clients: &'a [RoleClient],
    pub per_second: &'a [RoleSecond],
}

impl<'a> RoleRow<'a> {
    /// The row of a role a step measured.
    pub(super) fn of_result(r: &'a RoleResult) -> Result<RoleRow<'a>> {
        Ok(RoleRow {
            role: &r.role,
            threads: r.threads,
            counts: r.counts,
            target_rate: r.target_rate,
            latency: r.latency(),
            intended: r.intended_latency(),
            cpu_secs: r.cpu_secs,
            histogram: encode_histogram(&r.histogram)?,
            intended_histogram: r.intended.as_ref().map(encode_histogram).transpose()?,
            clients: &r.clients,
            per_second: &r.per_second,
        })
    }

    /// The row of a stored role (for copying it to another store).
    pub(super) fn of_record(r: &'a RoleRecord) -> RoleRow<'a> {
        RoleRow {
            role: &r.role,
            threads: r.threads,
            counts: r.counts,
            target_rate: r.target_rate,
            latency: r.latency_us,
            intended: r.intended_latency_us,
            cpu_secs: r.cpu_secs,
            histogram: r.histogram_v2.clone(),
            intended_histogram: r.intended_v2.clone(),
            clients: &r.clients,
            per_second: &r.per_second,
        }
    }
}

/// Writes one role of a step inside the step's transaction.
pub(super) fn insert_role(tx: &mut Backend, step_id: i64, r: &RoleRow<'_>) -> Result<()> {
    let (l, co) = (&r.latency, r.intended);
    tx.execute(
        "INSERT INTO step_roles (step_id, role, threads, events, statements, rows, errors,
             retries, target_rate, lat_avg_us, lat_p50_us, lat_p95_us, lat_p99_us,
             lat_p999_us, lat_max_us, co_p50_us, co_p99_us, co_p999_us, co_max_us, cpu_secs,
             histogram, intended_histogram)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                 ?18, ?19, ?20, ?21, ?22)",
        &[
            &params![step_id, r.role, r.threads][..],
            &count_params(&r.counts),
            &params![r.target_rate.map(real)],
            &latency_params(l),
            &params![
                co.map(|c| int(c.p50)),
                co.map(|c| int(c.p99)),
                co.map(|c| int(c.p999)),
                co.map(|c| int(c.max)),
                real(r.cpu_secs),
                r.histogram.clone(),
                r.intended_histogram.clone(),
            ],
        ]
        .concat(),
    )
    .with_context(|| format!("role {}", r.role))?;
    for c in r.clients {
        tx.execute(
            "INSERT INTO step_role_clients (step_id, role, client, events, statements, rows,
                 errors, retries, finish_secs, max_behind_us, late_events)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            &[
                &params![step_id, r.role, c.client][..],
                &count_params(&c.counts),
                &params![
                    real(c.finish_secs),
                    int(c.max_behind_us),
                    int(c.late_events)
                ],
            ]
            .concat(),
        )
        .with_context(|| format!("role {} client {}", r.role, c.client))?;
    }
    let seconds: Vec<Vec<Value>> = r
        .per_second
        .iter()
        .map(|s| {
            params![
                step_id,
                r.role,
                s.client,
                s.sec,
                int(s.events),
                int(s.rows),
                int(s.errors),
                int(s.retries),
                int(s.max_latency_us),
                int(s.max_intended_us),
                int(s.max_behind_us),
            ]
            .to_vec()
        })
        .collect();
    tx.insert_many(
        "step_role_seconds",
        &[
            "step_id",
            "role",
            "client",
            "sec",
            "events",
            "rows",
            "errors",
            "retries",
            "max_latency_us",
            "max_intended_us",
            "max_behind_us",
        ],
        &seconds,
    )
    .with_context(|| format!("role {} seconds", r.role))?;
    Ok(())
}

/// Reads a step's roles back, in role name order.
pub(super) fn load_roles(db: &mut Backend, step_id: i64) -> Result<Vec<RoleRecord>> {
    let rows = db.query(
        "SELECT * FROM step_roles WHERE step_id = ?1 ORDER BY role",
        &params![step_id],
    )?;
    let mut roles = rows
        .iter()
        .map(|r| {
            let co_p50: Option<i64> = r.get("co_p50_us")?;
            let intended_latency_us = match co_p50 {
                Some(p50) => Some(LatencySummary {
                    avg: 0.0,
                    p50: p50.max(0) as u64,
                    p95: 0,
                    p99: r.get("co_p99_us")?,
                    p999: r.get("co_p999_us")?,
                    max: r.get("co_max_us")?,
                }),
                None => None,
            };
            Ok(RoleRecord {
                role: r.get("role")?,
                threads: r.get("threads")?,
                counts: get_counts(&r)?,
                target_rate: r.get("target_rate")?,
                latency_us: get_latency(&r)?,
                intended_latency_us,
                cpu_secs: r.get("cpu_secs")?,
                clients: Vec::new(),
                per_second: Vec::new(),
                histogram_v2: r.get("histogram")?,
                intended_v2: r.get("intended_histogram")?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    for role in &mut roles {
        let key = params![step_id, &role.role];
        role.clients = db.query_map(
            "SELECT * FROM step_role_clients WHERE step_id = ?1 AND role = ?2 ORDER BY client",
            &key,
            |r| {
                Ok(RoleClient {
                    client: r.get("client")?,
                    counts: get_counts(&r)?,
                    finish_secs: r.get("finish_secs")?,
                    max_behind_us: r.get("max_behind_us")?,
                    late_events: r.get("late_events")?,
                })
            },
        )?;
        role.per_second = db.query_map(
            "SELECT * FROM step_role_seconds WHERE step_id = ?1 AND role = ?2
                  ORDER BY sec, client",
            &key,
            |r| {
                Ok(RoleSecond {
                    client: r.get("client")?,
                    sec: r.get("sec")?,
                    events: r.get("events")?,
                    rows: r.get("rows")?,
                    errors: r.get("errors")?,
                    retries: r.get("retries")?,
                    max_latency_us: r.get("max_latency_us")?,
                    max_intended_us: r.get("max_intended_us")?,
                    max_behind_us: r.get("max_behind_us")?,
                })
            },
        )?;
    }
    Ok(roles)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::record::new_histogram;
    use crate::store::Store;
    use crate::store::tests::{plans, run_info, step_info, step_result, target, write_sample_step};

    fn role(name: &str, paced: bool) -> RoleResult {
        let mut h = new_histogram();
        for v in [100u64, 200, 300, 40_000] {
            h.record(v).unwrap();
        }
        let intended = paced.then(|| {
            let mut i = new_histogram();
            i.record(2_000_000).unwrap();
            i
        });
        RoleResult {
            role: name.into(),
            threads: 2,
            counts: Counts {
                events: 40,
                statements: 40,
                rows: 2_000,
                errors: 1,
                retries: 2,
            },
            target_rate: paced.then_some(2.0),
            histogram: h,
            intended,
            cpu_secs: 0.25,
            clients: (0..2)
                .map(|client| RoleClient {
                    client,
                    counts: Counts {
                        events: 20,
                        statements: 20,
                        rows: 1_000,
                        errors: client.into(),
                        retries: 1,
                    },
                    finish_secs: 10.0 + f64::from(client),
                    max_behind_us: 1_500 * u64::from(client),
                    late_events: u64::from(client),
                })
                .collect(),
            per_second: (0..3)
                .flat_map(|sec| {
                    (0..2).map(move |client| RoleSecond {
                        client,
                        sec,
                        events: 2,
                        rows: 100,
                        errors: 0,
                        retries: 0,
                        max_latency_us: 300 + u64::from(sec),
                        max_intended_us: 900,
                        max_behind_us: u64::from(client),
                    })
                })
                .collect(),
        }
    }

    #[test]
    fn roles_and_metrics_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let run = store.begin_run(&run_info()).unwrap();
        let t = store.add_target(run, 0, &target(5)).unwrap();
        let mut r = step_result(0);
        r.roles = vec![role("insert", true), role("query", false)];
        r.metrics = Some(json!({"ips": 200.0, "sla": {"failed": false}}));
        store
            .write_step(
                t,
                0,
                "2026-11-20T23:50:00Z",
                &step_info(0),
                &r,
                &plans(0),
                None,
            )
            .unwrap();
        // A step without roles stores none.
        write_sample_step(&mut store, t, 1, &[], None);
        let loaded = store.load_run(run).unwrap();
        let steps = &loaded.targets[0].steps;
        assert!(steps[1].roles.is_empty() && steps[1].metrics.is_none());
        let s = &steps[0];
        assert_eq!(s.metrics.as_ref().unwrap()["ips"], 200.0);
        assert_eq!(s.roles.len(), 2);
        let ins = &s.roles[0];
        let want = role("insert", true);
        assert_eq!(ins.role, "insert");
        assert_eq!(
            (
                ins.counts.events,
                ins.counts.rows,
                ins.counts.errors,
                ins.counts.retries,
                ins.threads
            ),
            (40, 2_000, 1, 2, 2)
        );
        assert_eq!(ins.target_rate, Some(2.0));
        assert_eq!(ins.latency_us, want.latency());
        assert_eq!(ins.clients, want.clients);
        assert_eq!(ins.per_second, want.per_second);
        assert_eq!(ins.histogram().unwrap(), want.histogram);
        assert_eq!(ins.intended_histogram().unwrap(), want.intended);
        let co = ins.intended_latency_us.unwrap();
        assert_eq!(co.max, want.intended_latency().unwrap().max);
        let q = &s.roles[1];
        assert!(q.target_rate.is_none() && q.intended_latency_us.is_none());
        assert!(q.intended_histogram().unwrap().is_none());

        let mut out = Vec::new();
        crate::store::export_json(&store, Some(run), &mut out).unwrap();
        let doc: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let js = &doc["runs"][0]["targets"][0]["steps"];
        assert_eq!(js[0]["roles"][0]["role"], "insert");
        assert_eq!(js[0]["roles"][0]["per_second"].as_array().unwrap().len(), 6);
        assert_eq!(js[0]["metrics"]["sla"]["failed"], false);
        assert!(js[1].get("roles").is_none() && js[1].get("metrics").is_none());
    }
}
