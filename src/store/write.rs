//! Writing a run while it happens: the run, then each target, then each step
//! as soon as it finishes.
//!
//! Every call is its own transaction and a step with everything it measured
//! (totals, per-second samples, clients, plans, histogram) is a single one,
//! so whatever stops a run, the database holds whole steps only.

use std::collections::HashSet;

use anyhow::{Context, Result, bail};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use rusqlite::types::ToSql;
use rusqlite::{Statement, TransactionBehavior, params};

use super::{RUN_STATUSES, RunInfo, Store, TARGET_STATUSES};
use crate::record::{StepHost, StepInfo, StepResult, TargetInfo};
use crate::util::time::now_rfc3339;

impl Store {
    /// Records the start of a run (status `running`) and returns its id.
    pub fn begin_run(&mut self, run: &RunInfo) -> Result<i64> {
        self.conn
            .execute(
                "INSERT INTO runs (started_at, status, command_line, tidemark_version,
                                   profile, suite, params_json, host_json)
                 VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    run.started_at,
                    run.command_line,
                    run.tidemark_version,
                    run.profile,
                    run.suite,
                    serde_json::to_string(&run.params)?,
                    serde_json::to_string(&run.host)?,
                ],
            )
            .context("recording the start of the run")?;
        Ok(self.conn.last_insert_rowid())
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
        let mut insert = self.conn.prepare(
            "INSERT INTO targets (run_id, position, spec, label, dbms, version, version_number,
                                  config_name, config_text, settings_json, managed,
                                  extra_json, status, repetition)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'running', ?13)",
        )?;
        insert.raw_bind_parameter(1, run_id)?;
        insert.raw_bind_parameter(2, position)?;
        bind_target(&mut insert, 3, target)?;
        insert.raw_bind_parameter(13, repetition)?;
        insert
            .raw_execute()
            .with_context(|| {
                format!(
                    "recording target {} (position {position}, repetition {repetition}) of run {run_id}",
                    target.label
                )
            })?;
        Ok(self.conn.last_insert_rowid())
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
        let n = self.conn.execute(
            "UPDATE targets SET status = ?2, failure = ?3 WHERE id = ?1",
            params![target_id, status, failure],
        )?;
        if n == 0 {
            bail!("no target {target_id} in {}", self.dir.display());
        }
        Ok(())
    }

    /// Records one finished step of target `target_id` with everything it
    /// measured, in one transaction, and returns the step's id.
    ///
    /// `seq` is the step's execution order within the target (unique);
    /// `started_at` is RFC 3339 UTC; `plans` are (statement, plan text)
    /// pairs, of which only the first for each statement text is kept.
    pub fn write_step(
        &mut self,
        target_id: i64,
        seq: u32,
        started_at: &str,
        info: &StepInfo,
        result: &StepResult,
        plans: &[(String, String)],
    ) -> Result<i64> {
        self.write_step_with_host(target_id, seq, started_at, info, result, plans, None)
    }

    /// [`Store::write_step`] with what the samplers measured during the
    /// step (`host`), stored in the same transaction.
    #[allow(clippy::too_many_arguments)]
    pub fn write_step_with_host(
        &mut self,
        target_id: i64,
        seq: u32,
        started_at: &str,
        info: &StepInfo,
        result: &StepResult,
        plans: &[(String, String)],
        host: Option<&StepHost>,
    ) -> Result<i64> {
        let histogram = encode_histogram(&result.histogram)?;
        let latency = result.latency();
        let what = || format!("recording step {} of target {target_id}", info.name);

        // IMMEDIATE: take the write lock now rather than fail to upgrade a
        // read lock halfway through.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .with_context(what)?;
        tx.execute(
            r#"INSERT INTO steps (
                   target_id, seq, suite, name, test, "range", grp, reported, note, params_json,
                   status, failure, started_at, secs, threads,
                   events, statements, rows, errors, retries, qps, tps, rows_per_sec,
                   lat_avg_us, lat_p50_us, lat_p95_us, lat_p99_us, lat_p999_us, lat_max_us,
                   client_cpu_secs, error_samples_json, histogram, metrics_json, sweep_threads)
               VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                       ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30,
                       ?31, ?32, ?33, ?34)"#,
            params![
                target_id,
                seq,
                info.suite,
                info.name,
                info.test,
                info.range,
                info.group.map(|g| g.as_str()),
                info.reported,
                info.note,
                serde_json::to_string(&info.params)?,
                result.status.as_str(),
                result.failure,
                started_at,
                real(result.secs),
                result.threads,
                int(result.counts.events),
                int(result.counts.statements),
                int(result.counts.rows),
                int(result.counts.errors),
                int(result.counts.retries),
                real(result.qps()),
                real(result.tps()),
                real(result.rows_per_sec()),
                real(latency.avg),
                int(latency.p50),
                int(latency.p95),
                int(latency.p99),
                int(latency.p999),
                int(latency.max),
                real(result.client_cpu_secs),
                serde_json::to_string(&result.error_samples)?,
                histogram,
                result
                    .metrics
                    .as_ref()
                    .map(serde_json::to_string)
                    .transpose()?,
                info.sweep_threads,
            ],
        )
        .with_context(what)?;
        let step_id = tx.last_insert_rowid();

        {
            let mut insert = tx.prepare(
                "INSERT INTO step_seconds (step_id, sec, events, statements, rows, errors,
                                           retries, max_latency_us)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for s in &result.per_second {
                insert
                    .execute(params![
                        step_id,
                        s.sec,
                        int(s.counts.events),
                        int(s.counts.statements),
                        int(s.counts.rows),
                        int(s.counts.errors),
                        int(s.counts.retries),
                        int(s.max_latency_us)
                    ])
                    .with_context(|| format!("{}: second {}", what(), s.sec))?;
            }

            let mut insert = tx.prepare(
                "INSERT INTO step_clients (step_id, client, events, statements, errors, finish_secs)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?;
            for c in &result.clients {
                insert
                    .execute(params![
                        step_id,
                        c.client,
                        int(c.events),
                        int(c.statements),
                        int(c.errors),
                        real(c.finish_secs)
                    ])
                    .with_context(|| format!("{}: client {}", what(), c.client))?;
            }

            let mut insert = tx.prepare(
                "INSERT INTO step_plans (step_id, statement, plan_text) VALUES (?1, ?2, ?3)",
            )?;
            let mut seen = HashSet::new();
            for (statement, plan) in plans {
                if seen.insert(statement.as_str()) {
                    insert
                        .execute(params![step_id, statement, plan])
                        .with_context(|| format!("{}: plan of {statement:?}", what()))?;
                }
            }
        }
        super::role_rows::write_roles(&tx, step_id, &result.roles).with_context(what)?;
        if let Some(host) = host {
            super::host_rows::insert(&tx, step_id, host).with_context(what)?;
        }
        tx.commit().with_context(what)?;
        Ok(step_id)
    }

    /// Records the end of run `run_id`: its final status (`finished`,
    /// `interrupted` or `failed`) and the time.
    pub fn finish_run(&mut self, run_id: i64, status: &str) -> Result<()> {
        check_status("run", status, &RUN_STATUSES[1..])?;
        let n = self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3 WHERE id = ?1",
            params![run_id, status, now_rfc3339()],
        )?;
        if n == 0 {
            return Err(self.unknown_run(run_id));
        }
        Ok(())
    }
}

/// Binds what `targets` records about a target's server to parameters
/// `first` … `first + 9` of `stmt`, which name the columns `spec`, `label`,
/// `dbms`, `version`, `version_number`, `config_name`, `config_text`,
/// `settings_json`, `managed`, `extra_json` in that order.
pub(super) fn bind_target(
    stmt: &mut Statement<'_>,
    first: usize,
    target: &TargetInfo,
) -> Result<()> {
    let values: [&dyn ToSql; 10] = [
        &target.spec,
        &target.label,
        &target.dbms,
        &target.version,
        &target.version_number,
        &target.config_name,
        &target.config_text,
        &serde_json::to_string(&target.settings)?,
        &target.managed,
        &serde_json::to_string(&target.extra)?,
    ];
    for (i, value) in values.into_iter().enumerate() {
        stmt.raw_bind_parameter(first + i, value)?;
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
