//! Writing a run while it happens: the run, then each target, then each step
//! as soon as it finishes.
//!
//! Every call is its own transaction and a step with everything it measured
//! (totals, per-second samples, clients, plans, histogram) is a single one,
//! so whatever stops a run, the database holds whole steps only.

use std::collections::HashSet;

use super::backend::{Backend, Value, params};
use super::role_rows::RoleRow;
use super::{RUN_STATUSES, RunInfo, Store, TARGET_STATUSES};
use crate::record::{
    ClientResult, Counts, LatencySummary, SecondSample, StepHost, StepInfo, StepResult, TargetInfo,
};
use crate::util::process_identity::ProcessIdentity;
use crate::util::redact::redact_url_passwords;
use crate::util::time::now_rfc3339;
use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};

impl Store {
    /// Records the start of a run (status `running`, this process running
    /// it) and returns its id.
    pub fn begin_run(&mut self, run: &RunInfo) -> Result<i64> {
        let me = ProcessIdentity::current();
        self.db()
            .insert_id(
                "INSERT INTO runs (started_at, status, command_line, tidemark_version,
                                   profile, suite, params_json, host_json, uuid,
                                   host_name, pid, process_start)
                 VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) RETURNING id",
                &params![
                    &run.started_at,
                    redact_url_passwords(&run.command_line),
                    &run.tidemark_version,
                    &run.profile,
                    &run.suite,
                    serde_json::to_string(&run.params)?,
                    serde_json::to_string(&run.host)?,
                    super::new_uuid(),
                    me.host,
                    me.pid,
                    me.start,
                ],
            )
            .context("recording the start of the run")
    }

    /// Records a target of run `run_id` (status `running`) at `position`
    /// (0-based, unique within the run) and returns its id.
    pub fn add_target(&mut self, run_id: i64, position: u32, target: &TargetInfo) -> Result<i64> {
        self.add_target_repetition(run_id, position, 0, target)
    }

    /// Records target `position` of run `run_id` in pass `repetition` of
    /// the target sequence (`--repeat`; status `running`) and returns its
    /// id. (position, repetition) is unique within a run.
    pub fn add_target_repetition(
        &mut self,
        run_id: i64,
        position: u32,
        repetition: u32,
        target: &TargetInfo,
    ) -> Result<i64> {
        let mut values = params![run_id, position, repetition].to_vec();
        values.extend(target_values(target)?);
        self.db()
            .insert_id(
                "INSERT INTO targets (run_id, position, repetition, spec, label, dbms, version,
                                      version_number, config_name, config_text, settings_json,
                                      managed, extra_json, status)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 'running')
                 RETURNING id",
                &values,
            )
            .with_context(|| {
                format!(
                    "recording target {} (position {position}, repetition {repetition}) of run {run_id}",
                    target.label
                )
            })
    }

    /// Sets a target's status (one of [`TARGET_STATUSES`]) and failure
    /// message (`None` clears it).
    pub fn set_target_status(
        &mut self,
        target_id: i64,
        status: &str,
        failure: Option<&str>,
    ) -> Result<()> {
        check_status("target", status, &TARGET_STATUSES)?;
        let n = self.db().execute(
            "UPDATE targets SET status = ?2, failure = ?3 WHERE id = ?1",
            &params![target_id, status, failure.map(redact_url_passwords)],
        )?;
        if n == 0 {
            bail!("no target {target_id} in {}", self.place);
        }
        Ok(())
    }

    /// Records one finished step of target `target_id` with everything it
    /// measured, in one transaction, and returns the step's id.
    ///
    /// `seq` is the step's execution order within the target (unique);
    /// `started_at` is RFC 3339 UTC; `plans` are (statement, plan text)
    /// pairs, of which only the first for each statement text is kept;
    /// `host` is what the samplers measured during the step (`None`: a
    /// step run without them).
    #[allow(clippy::too_many_arguments)]
    pub fn write_step(
        &mut self,
        target_id: i64,
        seq: u32,
        started_at: &str,
        info: &StepInfo,
        result: &StepResult,
        plans: &[(String, String)],
        host: Option<&StepHost>,
    ) -> Result<i64> {
        let row = StepRow {
            seq,
            started_at,
            info,
            status: result.status.as_str(),
            failure: result.failure.as_deref(),
            secs: result.secs,
            threads: result.threads,
            counts: result.counts,
            rates: [result.qps(), result.tps(), result.rows_per_sec()],
            latency: result.latency(),
            client_cpu_secs: result.client_cpu_secs,
            error_samples: &result.error_samples,
            histogram: Some(encode_histogram(&result.histogram)?),
            metrics: result.metrics.as_ref(),
        };
        let what = || format!("recording step {} of target {target_id}", info.name);
        self.db()
            .transaction(|tx| {
                let step_id = insert_step(tx, target_id, &row)?;
                insert_step_rows(tx, step_id, &result.per_second, &result.clients, plans)?;
                for role in &result.roles {
                    super::role_rows::insert_role(tx, step_id, &RoleRow::of_result(role)?)?;
                }
                if let Some(host) = host {
                    super::host_rows::insert(tx, step_id, host)?;
                }
                Ok(step_id)
            })
            .with_context(what)
    }

    /// Records the end of run `run_id`: its final status (`finished`,
    /// `interrupted` or `failed`) and the time.
    pub fn finish_run(&mut self, run_id: i64, status: &str) -> Result<()> {
        check_status("run", status, &RUN_STATUSES[1..])?;
        let n = self.db().execute(
            "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1",
            &params![run_id, status, now_rfc3339()],
        )?;
        if n == 0 {
            return Err(self.unknown_run(run_id));
        }
        Ok(())
    }
}

/// What `targets` records about a target's server, in the column order
/// `spec`, `label`, `dbms`, `version`, `version_number`, `config_name`,
/// `config_text`, `settings_json`, `managed`, `extra_json`.
pub(super) fn target_values(target: &TargetInfo) -> Result<[Value; 10]> {
    Ok(params![
        redact_url_passwords(&target.spec),
        redact_url_passwords(&target.label),
        &target.dbms,
        &target.version,
        &target.version_number,
        target.config_name.as_deref(),
        &target.config_text,
        serde_json::to_string(&target.settings)?,
        target.managed,
        redact_url_passwords(&serde_json::to_string(&target.extra)?),
    ])
}

/// A `steps` row as stored: what [`Store::write_step`] makes of a
/// result, and what `tidemark push` copies of a stored step.
pub(super) struct StepRow<'a> {
    pub seq: u32,
    pub started_at: &'a str,
    pub info: &'a StepInfo,
    pub status: &'a str,
    pub failure: Option<&'a str>,
    pub secs: f64,
    pub threads: u32,
    pub counts: Counts,
    /// Statements, events and rows per second.
    pub rates: [f64; 3],
    pub latency: LatencySummary,
    pub client_cpu_secs: f64,
    pub error_samples: &'a [String],
    /// HdrHistogram V2.
    pub histogram: Option<Vec<u8>>,
    pub metrics: Option<&'a serde_json::Value>,
}

/// Inserts a `steps` row of target `target_id`; returns the step's id.
pub(super) fn insert_step(tx: &mut Backend, target_id: i64, s: &StepRow<'_>) -> Result<i64> {
    let (info, l) = (s.info, &s.latency);
    tx.insert_id(
        r#"INSERT INTO steps (
               target_id, seq, suite, name, test, "range", grp, reported, note, params_json,
               status, failure, started_at, secs, threads,
               events, statements, rows, errors, retries, qps, tps, rows_per_sec,
               lat_avg_us, lat_p50_us, lat_p95_us, lat_p99_us, lat_p999_us, lat_max_us,
               client_cpu_secs, error_samples_json, histogram, metrics_json, sweep_threads)
           VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                   ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30,
                   ?31, ?32, ?33, ?34)
           RETURNING id"#,
        &[
            &params![
                target_id,
                s.seq,
                &info.suite,
                &info.name,
                &info.test,
                info.range,
                info.group.map(|g| g.as_str()),
                info.reported,
                info.note.as_deref(),
                serde_json::to_string(&info.params)?,
                s.status,
                s.failure.map(redact_url_passwords),
                s.started_at,
                real(s.secs),
                s.threads,
            ][..],
            &count_params(&s.counts),
            &params![real(s.rates[0]), real(s.rates[1]), real(s.rates[2])],
            &latency_params(l),
            &params![
                real(s.client_cpu_secs),
                redact_url_passwords(&serde_json::to_string(s.error_samples)?),
                s.histogram.clone(),
                s.metrics.map(serde_json::to_string).transpose()?,
                info.sweep_threads,
            ],
        ]
        .concat(),
    )
}

/// Inserts a step's per-second counters, clients and plans (of which only
/// the first for each statement text is kept).
pub(super) fn insert_step_rows(
    tx: &mut Backend,
    step_id: i64,
    seconds: &[SecondSample],
    clients: &[ClientResult],
    plans: &[(String, String)],
) -> Result<()> {
    let seconds: Vec<Vec<Value>> = seconds
        .iter()
        .map(|s| {
            [
                &params![step_id, s.sec][..],
                &count_params(&s.counts),
                &params![int(s.max_latency_us)],
            ]
            .concat()
        })
        .collect();
    tx.insert_many(
        "step_seconds",
        &[
            "step_id",
            "sec",
            "events",
            "statements",
            "rows",
            "errors",
            "retries",
            "max_latency_us",
        ],
        &seconds,
    )
    .context("per-second counters")?;
    let clients: Vec<Vec<Value>> = clients
        .iter()
        .map(|c| {
            params![
                step_id,
                c.client,
                int(c.events),
                int(c.statements),
                int(c.errors),
                real(c.finish_secs)
            ]
            .to_vec()
        })
        .collect();
    tx.insert_many(
        "step_clients",
        &[
            "step_id",
            "client",
            "events",
            "statements",
            "errors",
            "finish_secs",
        ],
        &clients,
    )
    .context("clients")?;
    let mut seen = HashSet::new();
    for (statement, plan) in plans {
        if seen.insert(statement.as_str()) {
            tx.execute(
                "INSERT INTO step_plans (step_id, statement, plan_text) VALUES (?1, ?2, ?3)",
                &params![step_id, statement, plan],
            )
            .with_context(|| format!("plan of {statement:?}"))?;
        }
    }
    Ok(())
}

fn check_status(what: &str, status: &str, allowed: &[&str]) -> Result<()> {
    if !allowed.contains(&status) {
        bail!(
            "unknown {what} status {status:?} (expected one of: {})",
            allowed.join(", ")
        );
    }
    Ok(())
}

/// SQLite stores NaN as NULL, which the NOT NULL columns would reject and so
/// lose the whole step; a measurement that is not a number is stored as 0.
pub(super) fn real(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

/// SQLite integers are i64; counts beyond i64::MAX cannot happen, so they
/// saturate rather than fail the step.
pub(super) fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The five count columns every table of counts has (`events`,
/// `statements`, `rows`, `errors`, `retries`, in that order) as parameters:
/// what [`super::read::get_counts`] reads back.
pub(super) fn count_params(c: &Counts) -> [Value; 5] {
    params![
        int(c.events),
        int(c.statements),
        int(c.rows),
        int(c.errors),
        int(c.retries)
    ]
}

/// The six latency columns (`lat_avg_us`, `lat_p50_us`, `lat_p95_us`,
/// `lat_p99_us`, `lat_p999_us`, `lat_max_us`) as parameters: what
/// [`super::read::get_latency`] reads back.
pub(super) fn latency_params(l: &LatencySummary) -> [Value; 6] {
    params![
        real(l.avg),
        int(l.p50),
        int(l.p95),
        int(l.p99),
        int(l.p999),
        int(l.max)
    ]
}

/// A latency histogram in the HdrHistogram V2 format, as `steps.histogram`
/// stores it (readable by every HdrHistogram implementation).
pub fn encode_histogram(h: &Histogram<u64>) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut buf)
        .context("serializing a latency histogram")?;
    Ok(buf)
}

/// The histogram [`encode_histogram`] encoded.
pub fn decode_histogram(blob: &[u8]) -> Result<Histogram<u64>> {
    Deserializer::new()
        .deserialize(&mut &blob[..])
        .context("decoding a stored latency histogram")
}
