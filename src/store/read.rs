//! Reading stored runs back: the `runs` listing and whole runs for the
//! report and the export.
//!
//! Reports are a pure function of what is read here, so every stored column
//! comes back, deserialised into the types the runner wrote them from.

use std::collections::HashMap;

use anyhow::{Context, Result, anyhow};
use hdrhistogram::Histogram;
use serde::de::DeserializeOwned;

use super::backend::{Backend, Row, params};
use super::role_rows::RoleRecord;
use super::write::decode_histogram;
use super::{RunInfo, Store};
use crate::record::{
    ClientResult, Counts, Group, IbenchMetrics, LatencySummary, SecondSample, StepHost, StepInfo,
    StepStatus, TargetInfo, new_histogram,
};

/// One line of the `runs` listing.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    pub id: i64,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// One of [`super::RUN_STATUSES`], or `abandoned`: stored as `running`
    /// but its process is gone ([`super::cells::shown_status`]).
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
pub struct StoredRun {
    /// The short number users type; local to the store it was read from.
    pub id: i64,
    /// The run's identity in every store (a UUID).
    pub uuid: String,
    /// The store a copied run came from (URL without password or
    /// `results.db in DIR`); `None` for a run written here.
    pub origin: Option<String>,
    /// What was recorded when the run began, as [`super::Store::begin_run`]
    /// was given it.
    pub info: RunInfo,
    /// `None` while running, or if the run was cut short by a crash.
    pub finished_at: Option<String>,
    /// One of [`super::RUN_STATUSES`].
    pub status: String,
    /// In the order they ran: by repetition, then `position`.
    pub targets: Vec<StoredTarget>,
}

/// A stored target with its steps.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredTarget {
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
    pub steps: Vec<StoredStep>,
}

/// A stored step: what it was and what it measured.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredStep {
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
    /// [`StoredStep::histogram`]); `None` if none was stored.
    pub histogram_v2: Option<Vec<u8>>,
    /// Roles of a multi-role step (ibench), in name order; empty otherwise.
    pub roles: Vec<RoleRecord>,
    /// Metrics the suite derived and stored with the step, if any.
    pub metrics: Option<serde_json::Value>,
}

impl StoredStep {
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
        let rows = self.db().query(
            "SELECT run_id, label FROM targets WHERE repetition = 0 ORDER BY run_id, position, id",
            &[],
        )?;
        for row in rows.iter() {
            labels.entry(row.at(0)?).or_default().push(row.at(1)?);
        }
        let rows = self.db().query(
            "SELECT r.id, r.started_at, r.finished_at, r.status, r.suite, r.profile,
                    (SELECT count(*) FROM steps s JOIN targets t ON s.target_id = t.id
                      WHERE t.run_id = r.id) AS steps,
                    r.host_name, r.pid, r.process_start
               FROM runs r ORDER BY r.id",
            &[],
        )?;
        rows.iter()
            .map(|r| {
                let id = r.get("id")?;
                let status: String = r.get("status")?;
                Ok(RunSummary {
                    id,
                    started_at: r.get("started_at")?,
                    finished_at: r.get("finished_at")?,
                    status: super::cells::shown_status(&status, &super::cells::process_of(&r, 7)?),
                    suite: r.get("suite")?,
                    profile: r.get("profile")?,
                    targets: labels.remove(&id).unwrap_or_default(),
                    steps: r.get("steps")?,
                })
            })
            .collect()
    }

    /// The ids of all stored runs, oldest first.
    pub fn run_ids(&self) -> Result<Vec<i64>> {
        let rows = self.db().query("SELECT id FROM runs ORDER BY id", &[])?;
        rows.iter().map(|r| r.at(0)).collect()
    }

    /// The id of the run whose UUID is `uuid`, if stored.
    pub fn run_id_of(&self, uuid: &str) -> Result<Option<i64>> {
        self.db()
            .query_value("SELECT id FROM runs WHERE uuid = ?1", &params![uuid])
    }

    /// Run `id` with its targets and steps; a one-line error if it is not
    /// stored.
    pub fn load_run(&self, id: i64) -> Result<StoredRun> {
        let rows = self
            .db()
            .query("SELECT * FROM runs WHERE id = ?1", &params![id])?;
        let Some(r) = rows.first() else {
            return Err(self.unknown_run(id));
        };
        let whose = format!("run {id}");
        let mut run = StoredRun {
            id: r.get("id")?,
            uuid: r.get("uuid")?,
            origin: r.get("origin")?,
            info: RunInfo {
                started_at: r.get("started_at")?,
                command_line: r.get("command_line")?,
                tidemark_version: r.get("tidemark_version")?,
                profile: r.get("profile")?,
                suite: r.get("suite")?,
                params: get_json(&r, "params_json", &whose)?,
                host: get_json(&r, "host_json", &whose)?,
            },
            finished_at: r.get("finished_at")?,
            status: r.get("status")?,
            targets: Vec::new(),
        };
        let rows = self.db().query(
            "SELECT * FROM targets WHERE run_id = ?1 ORDER BY repetition, position, id",
            &params![id],
        )?;
        for row in rows.iter() {
            let mut target = target_from_row(&row)?;
            target.steps = self.load_steps(target.id)?;
            run.targets.push(target);
        }
        Ok(run)
    }

    pub(super) fn load_steps(&self, target_id: i64) -> Result<Vec<StoredStep>> {
        let mut db = self.db();
        let rows = db.query(
            "SELECT * FROM steps WHERE target_id = ?1 ORDER BY seq, id",
            &params![target_id],
        )?;
        let mut out = Vec::new();
        for row in rows.iter() {
            let mut step = step_from_row(&row)?;
            load_step_details(&mut db, &mut step)?;
            out.push(step);
        }
        Ok(out)
    }
}

/// Fills in a step's per-second samples, clients, plans, roles and host
/// metrics.
fn load_step_details(db: &mut Backend, step: &mut StoredStep) -> Result<()> {
    let id = params![step.id];
    step.per_second = db.query_map(
        "SELECT * FROM step_seconds WHERE step_id = ?1 ORDER BY sec",
        &id,
        |r| {
            Ok(SecondSample {
                sec: r.get("sec")?,
                counts: get_counts(&r)?,
                max_latency_us: r.get("max_latency_us")?,
            })
        },
    )?;
    step.clients = db.query_map(
        "SELECT * FROM step_clients WHERE step_id = ?1 ORDER BY client",
        &id,
        |r| {
            Ok(ClientResult {
                client: r.get("client")?,
                events: r.get("events")?,
                statements: r.get("statements")?,
                errors: r.get("errors")?,
                finish_secs: r.get("finish_secs")?,
            })
        },
    )?;
    step.plans = db.query_map(
        "SELECT statement, plan_text FROM step_plans WHERE step_id = ?1 ORDER BY rowid",
        &id,
        |r| Ok((r.at(0)?, r.at(1)?)),
    )?;
    step.roles = super::role_rows::load_roles(db, step.id)?;
    step.host = super::host_rows::load(db, step.id)?;
    Ok(())
}

fn target_from_row(r: &Row<'_>) -> Result<StoredTarget> {
    let id: i64 = r.get("id")?;
    let whose = format!("target {id}");
    Ok(StoredTarget {
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
            settings: get_json(r, "settings_json", &whose)?,
            managed: r.get("managed")?,
            extra: get_json(r, "extra_json", &whose)?,
        },
        status: r.get("status")?,
        failure: r.get("failure")?,
        steps: Vec::new(),
    })
}

fn step_from_row(r: &Row<'_>) -> Result<StoredStep> {
    let id: i64 = r.get("id")?;
    let whose = format!("step {id}");
    let status: String = r.get("status")?;
    let group: Option<String> = r.get("grp")?;
    Ok(StoredStep {
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
            params: get_json(r, "params_json", &whose)?,
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
        error_samples: get_json(r, "error_samples_json", &whose)?,
        per_second: Vec::new(),
        clients: Vec::new(),
        plans: Vec::new(),
        host: None,
        histogram_v2: r.get("histogram")?,
        roles: Vec::new(),
        metrics: r
            .get::<Option<String>>("metrics_json")?
            .map(|m| json(&m, "metrics_json", &whose))
            .transpose()?,
    })
}

/// The event latency columns `lat_avg_us` … `lat_max_us` that `steps` and
/// `step_roles` share.
pub(super) fn get_latency(r: &Row<'_>) -> Result<LatencySummary> {
    Ok(LatencySummary {
        avg: r.get("lat_avg_us")?,
        p50: r.get("lat_p50_us")?,
        p95: r.get("lat_p95_us")?,
        p99: r.get("lat_p99_us")?,
        p999: r.get("lat_p999_us")?,
        max: r.get("lat_max_us")?,
    })
}

/// The five count columns (`events`, `statements`, `rows`, `errors`,
/// `retries`) every table of counts has.
pub(super) fn get_counts(r: &Row<'_>) -> Result<Counts> {
    Ok(Counts {
        events: r.get("events")?,
        statements: r.get("statements")?,
        rows: r.get("rows")?,
        errors: r.get("errors")?,
        retries: r.get("retries")?,
    })
}

fn json<T: DeserializeOwned>(text: &str, column: &str, whose: &str) -> Result<T> {
    serde_json::from_str(text).with_context(|| format!("malformed {column} of {whose}"))
}

/// The JSON text column `column` of row `r`, parsed.
fn get_json<T: DeserializeOwned>(r: &Row<'_>, column: &str, whose: &str) -> Result<T> {
    json(&r.get::<String>(column)?, column, whose)
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
