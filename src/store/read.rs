//! Reading stored runs back: the `runs` listing and whole runs for the
//! report and the export.
//!
//! Reports are a pure function of what is read here, so every stored column
//! comes back, deserialised into the types the runner wrote them from.

use std::collections::HashMap;

use anyhow::{Context, Result, anyhow};
use hdrhistogram::Histogram;
use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ValueRef};
use rusqlite::{OptionalExtension, Row};
use serde::de::DeserializeOwned;

use super::Store;
use super::role_rows::RoleRecord;
use super::write::decode_histogram;
use crate::record::{
    ClientResult, Counts, Group, HostFacts, IbenchMetrics, LatencySummary, SecondSample, StepHost,
    StepInfo, StepStatus, TargetInfo, new_histogram,
};

/// One line of the `runs` listing.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub id: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub status: String,
    pub suite: String,
    pub profile: String,
    /// Target labels, in the run's order.
    pub targets: Vec<String>,
    /// Steps stored, over all targets.
    pub steps: u64,
}

/// A stored run with everything it measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunRecord {
    pub id: i64,
    pub started_at: String,
    /// `None` while running, or if the run was cut short by a crash.
    pub finished_at: Option<String>,
    /// One of [`super::RUN_STATUSES`].
    pub status: String,
    pub command_line: String,
    /// The tidemark version that ran it.
    pub tidemark_version: String,
    pub profile: String,
    pub suite: String,
    pub params: serde_json::Value,
    pub host: HostFacts,
    /// In the order they ran: by repetition, then `position`.
    pub targets: Vec<TargetRecord>,
}

/// A stored target with its steps.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetRecord {
    pub id: i64,
    /// 0-based order within the run.
    pub position: u32,
    /// 0-based pass over the target sequence (`--repeat`).
    pub repetition: u32,
    pub info: TargetInfo,
    /// One of [`super::TARGET_STATUSES`].
    pub status: String,
    pub failure: Option<String>,
    /// In execution order (`seq`).
    pub steps: Vec<StepRecord>,
}

/// A stored step: what it was and what it measured.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRecord {
    pub id: i64,
    /// Execution order within the target.
    pub seq: u32,
    /// RFC 3339 UTC.
    pub started_at: String,
    pub info: StepInfo,
    pub status: StepStatus,
    pub failure: Option<String>,
    /// Length of the measured interval, seconds.
    pub secs: f64,
    pub threads: u32,
    pub counts: Counts,
    /// Statements per second.
    pub qps: f64,
    /// Events per second.
    pub tps: f64,
    pub rows_per_sec: f64,
    /// Event latency, microseconds.
    pub latency: LatencySummary,
    /// User + system CPU seconds of the client threads.
    pub client_cpu_secs: f64,
    pub error_samples: Vec<String>,
    pub per_second: Vec<SecondSample>,
    pub clients: Vec<ClientResult>,
    /// (statement, plan text), in capture order.
    pub plans: Vec<(String, String)>,
    /// What the samplers measured (host, disks, server and client CPU);
    /// `None` for steps stored without them.
    pub host: Option<StepHost>,
    /// The merged latency histogram in HdrHistogram V2 format (see
    /// [`StepRecord::histogram`]); `None` if none was stored.
    pub histogram_v2: Option<Vec<u8>>,
    /// Roles of a multi-role step (ibench), in name order; empty otherwise.
    pub roles: Vec<RoleRecord>,
    /// Metrics the suite derived and stored with the step, if any.
    pub metrics: Option<serde_json::Value>,
}

impl StepRecord {
    /// The merged event latency histogram, microseconds; empty if none was
    /// stored.
    pub fn histogram(&self) -> Result<Histogram<u64>> {
        match &self.histogram_v2 {
            Some(blob) => decode_histogram(blob)
                .with_context(|| format!("step {} ({})", self.id, self.info.name)),
            None => Ok(new_histogram()),
        }
    }

    /// The Insert Benchmark metrics stored with the step, read as the
    /// record type; `None` for steps without them (other suites, steps
    /// whose clients never started).
    pub fn ibench_metrics(&self) -> Option<IbenchMetrics> {
        serde_json::from_value(self.metrics.clone()?).ok()
    }

    /// Client CPU microseconds per statement, if any statement ran.
    pub fn client_cpu_us_per_statement(&self) -> Option<f64> {
        (self.counts.statements > 0)
            .then(|| self.client_cpu_secs * 1e6 / self.counts.statements as f64)
    }
}

impl Store {
    /// All stored runs, oldest first.
    pub fn list_runs(&self) -> Result<Vec<RunSummary>> {
        let mut labels: HashMap<i64, Vec<String>> = HashMap::new();
        let mut stmt = self.conn.prepare(
            "SELECT run_id, label FROM targets WHERE repetition = 0 ORDER BY run_id, position, id",
        )?;
        for row in stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))? {
            let (run_id, label) = row?;
            labels.entry(run_id).or_default().push(label);
        }

        let mut stmt = self.conn.prepare(
            "SELECT r.id, r.started_at, r.finished_at, r.status, r.suite, r.profile,
                    (SELECT count(*) FROM steps s JOIN targets t ON s.target_id = t.id
                      WHERE t.run_id = r.id) AS steps
               FROM runs r ORDER BY r.id",
        )?;
        let runs = stmt.query_map([], |r| {
            Ok(RunSummary {
                id: r.get("id")?,
                started_at: r.get("started_at")?,
                finished_at: r.get("finished_at")?,
                status: r.get("status")?,
                suite: r.get("suite")?,
                profile: r.get("profile")?,
                targets: Vec::new(),
                steps: get_u64(r, "steps")?,
            })
        })?;
        let mut out = Vec::new();
        for run in runs {
            let mut run = run?;
            run.targets = labels.remove(&run.id).unwrap_or_default();
            out.push(run);
        }
        Ok(out)
    }

    /// The ids of all stored runs, oldest first.
    pub fn run_ids(&self) -> Result<Vec<i64>> {
        let mut stmt = self.conn.prepare("SELECT id FROM runs ORDER BY id")?;
        let ids = stmt.query_map([], |r| r.get(0))?;
        Ok(ids.collect::<rusqlite::Result<_>>()?)
    }

    /// Run `id` with its targets and steps; a one-line error if it is not
    /// stored.
    pub fn load_run(&self, id: i64) -> Result<RunRecord> {
        let run = self
            .conn
            .query_row("SELECT * FROM runs WHERE id = ?1", [id], |r| {
                Ok((
                    RunRecord {
                        id: r.get("id")?,
                        started_at: r.get("started_at")?,
                        finished_at: r.get("finished_at")?,
                        status: r.get("status")?,
                        command_line: r.get("command_line")?,
                        tidemark_version: r.get("tidemark_version")?,
                        profile: r.get("profile")?,
                        suite: r.get("suite")?,
                        params: serde_json::Value::Null,
                        host: HostFacts::default(),
                        targets: Vec::new(),
                    },
                    r.get::<_, String>("params_json")?,
                    r.get::<_, String>("host_json")?,
                ))
            })
            .optional()?;
        let Some((mut run, params, host)) = run else {
            return Err(self.unknown_run(id));
        };
        let whose = format!("run {id}");
        run.params = json(&params, "params_json", &whose)?;
        run.host = json(&host, "host_json", &whose)?;

        let mut stmt = self
            .conn
            .prepare("SELECT * FROM targets WHERE run_id = ?1 ORDER BY repetition, position, id")?;
        let targets = stmt.query_and_then([id], target_from_row)?;
        for target in targets {
            let mut target: TargetRecord = target?;
            target.steps = self.load_steps(target.id)?;
            run.targets.push(target);
        }
        Ok(run)
    }

    pub(super) fn load_steps(&self, target_id: i64) -> Result<Vec<StepRecord>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT * FROM steps WHERE target_id = ?1 ORDER BY seq, id")?;
        let steps = stmt.query_and_then([target_id], step_from_row)?;
        let mut out = Vec::new();
        for step in steps {
            let mut step: StepRecord = step?;
            self.load_step_details(&mut step)?;
            out.push(step);
        }
        Ok(out)
    }

    /// Fills in a step's per-second samples, clients and plans.
    fn load_step_details(&self, step: &mut StepRecord) -> Result<()> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT * FROM step_seconds WHERE step_id = ?1 ORDER BY sec")?;
        step.per_second = stmt
            .query_map([step.id], |r| {
                Ok(SecondSample {
                    sec: r.get("sec")?,
                    counts: get_counts(r)?,
                    max_latency_us: get_u64(r, "max_latency_us")?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;

        let mut stmt = self
            .conn
            .prepare_cached("SELECT * FROM step_clients WHERE step_id = ?1 ORDER BY client")?;
        step.clients = stmt
            .query_map([step.id], |r| {
                Ok(ClientResult {
                    client: r.get("client")?,
                    events: get_u64(r, "events")?,
                    statements: get_u64(r, "statements")?,
                    errors: get_u64(r, "errors")?,
                    finish_secs: r.get("finish_secs")?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;

        let mut stmt = self.conn.prepare_cached(
            "SELECT statement, plan_text FROM step_plans WHERE step_id = ?1 ORDER BY rowid",
        )?;
        step.plans = stmt
            .query_map([step.id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        step.roles = super::role_rows::load_roles(&self.conn, step.id)?;
        step.host = super::host_rows::load(&self.conn, step.id)?;
        Ok(())
    }
}

fn target_from_row(r: &Row<'_>) -> Result<TargetRecord> {
    let id: i64 = r.get("id")?;
    let whose = format!("target {id}");
    Ok(TargetRecord {
        id,
        position: r.get("position")?,
        repetition: r.get("repetition")?,
        info: TargetInfo {
            spec: r.get("spec")?,
            label: r.get("label")?,
            dbms: r.get("dbms")?,
            version: r.get("version")?,
            version_number: r.get("version_number")?,
            config_name: r.get("config_name")?,
            config_text: r.get("config_text")?,
            settings: json(
                &r.get::<_, String>("settings_json")?,
                "settings_json",
                &whose,
            )?,
            managed: r.get("managed")?,
            extra: json(&r.get::<_, String>("extra_json")?, "extra_json", &whose)?,
        },
        status: r.get("status")?,
        failure: r.get("failure")?,
        steps: Vec::new(),
    })
}

fn step_from_row(r: &Row<'_>) -> Result<StepRecord> {
    let id: i64 = r.get("id")?;
    let whose = format!("step {id}");
    let status: String = r.get("status")?;
    let group: Option<String> = r.get("grp")?;
    Ok(StepRecord {
        id,
        seq: r.get("seq")?,
        started_at: r.get("started_at")?,
        info: StepInfo {
            suite: r.get("suite")?,
            name: r.get("name")?,
            test: r.get("test")?,
            range: r.get("range")?,
            group: group
                .map(|g| Group::parse(&g).ok_or_else(|| unknown_value(&whose, "group", &g)))
                .transpose()?,
            reported: r.get("reported")?,
            note: r.get("note")?,
            params: json(&r.get::<_, String>("params_json")?, "params_json", &whose)?,
            sweep_threads: r.get("sweep_threads")?,
        },
        status: StepStatus::parse(&status)
            .ok_or_else(|| unknown_value(&whose, "status", &status))?,
        failure: r.get("failure")?,
        secs: r.get("secs")?,
        threads: r.get("threads")?,
        counts: get_counts(r)?,
        qps: r.get("qps")?,
        tps: r.get("tps")?,
        rows_per_sec: r.get("rows_per_sec")?,
        latency: get_latency(r)?,
        client_cpu_secs: r.get("client_cpu_secs")?,
        error_samples: json(
            &r.get::<_, String>("error_samples_json")?,
            "error_samples_json",
            &whose,
        )?,
        per_second: Vec::new(),
        clients: Vec::new(),
        plans: Vec::new(),
        host: None,
        histogram_v2: r.get("histogram")?,
        roles: Vec::new(),
        metrics: r
            .get::<_, Option<String>>("metrics_json")?
            .map(|m| json(&m, "metrics_json", &whose))
            .transpose()?,
    })
}

/// The event latency columns `lat_avg_us` … `lat_max_us` that `steps` and
/// `step_roles` share.
pub(super) fn get_latency(r: &Row<'_>) -> rusqlite::Result<LatencySummary> {
    Ok(LatencySummary {
        avg: r.get("lat_avg_us")?,
        p50: get_u64(r, "lat_p50_us")?,
        p95: get_u64(r, "lat_p95_us")?,
        p99: get_u64(r, "lat_p99_us")?,
        p999: get_u64(r, "lat_p999_us")?,
        max: get_u64(r, "lat_max_us")?,
    })
}

/// The five count columns (`events`, `statements`, `rows`, `errors`,
/// `retries`) every table of counts has.
pub(super) fn get_counts(r: &Row<'_>) -> rusqlite::Result<Counts> {
    Ok(Counts {
        events: get_u64(r, "events")?,
        statements: get_u64(r, "statements")?,
        rows: get_u64(r, "rows")?,
        errors: get_u64(r, "errors")?,
        retries: get_u64(r, "retries")?,
    })
}

/// A column holding a count: stored as an SQLite (signed) integer.
pub(super) fn get_u64(r: &Row<'_>, column: &str) -> rusqlite::Result<u64> {
    Ok(r.get::<_, U64>(column)?.0)
}

struct U64(u64);

impl FromSql for U64 {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        let v = i64::column_result(value)?;
        u64::try_from(v)
            .map(U64)
            .map_err(|_| FromSqlError::OutOfRange(v))
    }
}

fn json<T: DeserializeOwned>(text: &str, column: &str, whose: &str) -> Result<T> {
    serde_json::from_str(text).with_context(|| format!("malformed {column} of {whose}"))
}

fn unknown_value(whose: &str, what: &str, value: &str) -> anyhow::Error {
    anyhow!("{whose} has unknown {what} {value:?} (written by a newer tidemark?)")
}

/// The `runs` listing as aligned plain-text columns: id, started, status,
/// suite, profile, targets, steps; `no runs stored` when there are none.
pub fn format_runs_table(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no runs stored\n".to_string();
    }
    let header = [
        "id", "started", "status", "suite", "profile", "targets", "steps",
    ];
    // Numbers are right-aligned, text left-aligned.
    let right = [true, false, false, false, false, false, true];
    let mut rows: Vec<[String; 7]> = vec![header.map(String::from)];
    for r in runs {
        rows.push([
            r.id.to_string(),
            r.started_at.clone(),
            r.status.clone(),
            r.suite.clone(),
            r.profile.clone(),
            r.targets.join(", "),
            r.steps.to_string(),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = " ".repeat(widths[i] - cell.chars().count());
            if right[i] {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
