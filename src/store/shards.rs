//! The coordination board of a sharded step (`--client-hosts`): the
//! coordinator and its `tidemark shard` processes meet in the shared
//! PostgreSQL store, not over a protocol of their own. The coordinator
//! opens a step with its spec; each shard registers, reports ready with
//! its clock offset, waits for the published start, and writes its result
//! (counts, per-second samples, clients, latency histogram) when done.
//! Both sides of that meeting are `orchestrate::shards`.

use anyhow::{Result, anyhow, bail};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::Store;
use super::backend::{Engine, params};
use super::write::{decode_histogram, encode_histogram};
use crate::record::step::{
    ClientResult, Counts, RoleClient, RoleResult, RoleSecond, SecondSample, StepResult, StepStatus,
};

/// What one shard measured, as it writes it to the board (the histogram
/// goes beside it, as a blob).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardReport {
    pub status: String,
    pub failure: Option<String>,
    pub secs: f64,
    pub threads: u32,
    pub counts: Counts,
    pub error_samples: Vec<String>,
    pub per_second: Vec<SecondSample>,
    pub clients: Vec<ClientResult>,
    pub client_cpu_secs: f64,
    /// Per role, for a multi-role step (the Insert Benchmark).
    #[serde(default)]
    pub roles: Vec<ShardRole>,
}

/// One role of a shard's multi-role step, its histograms as hex of their
/// HdrHistogram V2 form.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ShardRole {
    pub role: String,
    pub threads: u32,
    pub counts: Counts,
    pub target_rate: Option<f64>,
    pub histogram_hex: String,
    pub intended_hex: Option<String>,
    pub cpu_secs: f64,
    pub clients: Vec<RoleClient>,
    pub per_second: Vec<RoleSecond>,
}

impl ShardRole {
    fn of(r: &RoleResult) -> Result<ShardRole> {
        Ok(ShardRole {
            role: r.role.clone(),
            threads: r.threads,
            counts: r.counts,
            target_rate: r.target_rate,
            histogram_hex: to_hex(&encode_histogram(&r.histogram)?),
            intended_hex: r
                .intended
                .as_ref()
                .map(|h| encode_histogram(h).map(|b| to_hex(&b)))
                .transpose()?,
            cpu_secs: r.cpu_secs,
            clients: r.clients.clone(),
            per_second: r.per_second.clone(),
        })
    }

    /// The role as the runner's type, histograms decoded.
    pub fn to_result(&self) -> Result<RoleResult> {
        let decode = |hex: &str| -> Result<Histogram<u64>> {
            decode_histogram(
                &from_hex(hex).ok_or_else(|| anyhow!("a role histogram that is not hex"))?,
            )
        };
        Ok(RoleResult {
            role: self.role.clone(),
            threads: self.threads,
            counts: self.counts,
            target_rate: self.target_rate,
            histogram: decode(&self.histogram_hex)?,
            intended: self.intended_hex.as_deref().map(decode).transpose()?,
            cpu_secs: self.cpu_secs,
            clients: self.clients.clone(),
            per_second: self.per_second.clone(),
        })
    }
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl ShardReport {
    /// The board's form of a shard's step result.
    pub fn of(result: &StepResult) -> Result<ShardReport> {
        Ok(ShardReport {
            status: result.status.as_str().to_string(),
            failure: result.failure.clone(),
            secs: result.secs,
            threads: result.threads,
            counts: result.counts,
            error_samples: result.error_samples.clone(),
            per_second: result.per_second.clone(),
            clients: result.clients.clone(),
            client_cpu_secs: result.client_cpu_secs,
            roles: result
                .roles
                .iter()
                .map(ShardRole::of)
                .collect::<Result<_>>()?,
        })
    }

    /// How the shard's step ended.
    pub fn step_status(&self) -> StepStatus {
        StepStatus::parse(&self.status).unwrap_or(StepStatus::Failed)
    }
}

/// One shard's row on the board.
#[derive(Clone, Debug)]
pub struct ShardMember {
    pub shard: u32,
    pub host: String,
    pub pid: u32,
    pub threads: u32,
    /// `registered`, `ready`, `running`, `done` or `failed`.
    pub state: String,
    pub clock_offset_ms: Option<f64>,
    pub start_lag_ms: Option<f64>,
    pub error: Option<String>,
    /// Statements per second in its last second and errors so far, while
    /// it runs (`None` before its first second).
    pub live: Option<(f64, u64)>,
    /// Its result and histogram once `done`.
    pub report: Option<(ShardReport, Histogram<u64>)>,
}

/// A sharded step as the board holds it.
#[derive(Clone, Debug)]
pub struct ShardStep {
    pub shards: u32,
    pub spec_json: String,
    /// Published start, Unix milliseconds by the store's clock.
    pub start_ms: Option<i64>,
    pub aborted: Option<String>,
}

impl Store {
    /// Fails unless this store can coordinate shards (a PostgreSQL store
    /// every shard host reaches).
    fn need_board(&self) -> Result<()> {
        if self.engine() != Engine::Postgres {
            bail!(
                "--client-hosts needs a shared PostgreSQL store: pass --store postgres://… (a local results.db cannot coordinate shards)"
            );
        }
        Ok(())
    }

    /// The store's clock, Unix milliseconds (the one clock every shard
    /// measures its offset against).
    pub fn board_clock_ms(&self) -> Result<f64> {
        self.need_board()?;
        self.db()
            .query_value::<f64>("SELECT extract(epoch FROM clock_timestamp()) * 1000.0", &[])?
            .ok_or_else(|| anyhow!("the store returned no time"))
    }

    /// Opens a sharded step of `shards` shards running `spec_json`;
    /// returns its id.
    pub fn open_shard_step(&self, shards: u32, spec_json: &str) -> Result<i64> {
        self.need_board()?;
        self.db().insert_id(
            "INSERT INTO shard_steps (created_at, shards, spec_json) VALUES (?1, ?2, ?3) RETURNING id",
            &params![crate::util::time::now_rfc3339(), shards, spec_json],
        )
    }

    /// The sharded step `id`.
    pub fn shard_step(&self, id: i64) -> Result<ShardStep> {
        let rows = self.db().query(
            "SELECT shards, spec_json, start_ms, aborted FROM shard_steps WHERE id = ?1",
            &params![id],
        )?;
        let row = rows
            .first()
            .ok_or_else(|| anyhow!("no sharded step {id} in the store {}", self.place))?;
        Ok(ShardStep {
            shards: row.get("shards")?,
            spec_json: row.get("spec_json")?,
            start_ms: row.get("start_ms")?,
            aborted: row.get("aborted")?,
        })
    }

    /// Publishes the start of step `id` (store clock, Unix ms).
    pub fn publish_shard_start(&self, id: i64, start_ms: i64) -> Result<()> {
        self.db().execute(
            "UPDATE shard_steps SET start_ms = ?1 WHERE id = ?2 AND aborted IS NULL",
            &params![start_ms, id],
        )?;
        Ok(())
    }

    /// Marks step `id` aborted for `reason`: shards still waiting give up.
    pub fn abort_shard_step(&self, id: i64, reason: &str) -> Result<()> {
        self.db().execute(
            "UPDATE shard_steps SET aborted = ?1 WHERE id = ?2 AND aborted IS NULL",
            &params![reason, id],
        )?;
        Ok(())
    }

    /// Registers shard `shard` of step `id`, running `threads` clients on
    /// `host` as process `pid`.
    pub fn register_shard(
        &self,
        id: i64,
        shard: u32,
        host: &str,
        pid: u32,
        threads: u32,
    ) -> Result<()> {
        self.db().execute(
            "INSERT INTO shard_members (shard_step_id, shard, host, pid, threads, state) \
             VALUES (?1, ?2, ?3, ?4, ?5, 'registered')",
            &params![id, shard, host, pid, threads],
        )?;
        Ok(())
    }

    /// Sets shard `shard`'s state, with its clock offset, start lag or
    /// error when given (a `None` keeps what is stored).
    pub fn set_shard_state(
        &self,
        id: i64,
        shard: u32,
        state: &str,
        clock_offset_ms: Option<f64>,
        start_lag_ms: Option<f64>,
        error: Option<&str>,
    ) -> Result<()> {
        self.db().execute(
            "UPDATE shard_members SET state = ?1, \
               clock_offset_ms = COALESCE(?2, clock_offset_ms), \
               start_lag_ms = COALESCE(?3, start_lag_ms), \
               error = COALESCE(?4, error) \
             WHERE shard_step_id = ?5 AND shard = ?6",
            &params![state, clock_offset_ms, start_lag_ms, error, id, shard],
        )?;
        Ok(())
    }

    /// Shard `shard`'s rate in its last second and its errors so far, for
    /// the coordinator's progress line.
    pub fn set_shard_live(&self, id: i64, shard: u32, qps: f64, errors: u64) -> Result<()> {
        self.db().execute(
            "UPDATE shard_members SET live_qps = ?1, live_errors = ?2 \
             WHERE shard_step_id = ?3 AND shard = ?4",
            &params![qps, errors as i64, id, shard],
        )?;
        Ok(())
    }

    /// Stores shard `shard`'s result and marks it `done`.
    pub fn finish_shard(&self, id: i64, shard: u32, result: &StepResult) -> Result<()> {
        let report = serde_json::to_string(&ShardReport::of(result)?)?;
        let histogram = encode_histogram(&result.histogram)?;
        self.db().execute(
            "UPDATE shard_members SET state = 'done', result_json = ?1, histogram = ?2 \
             WHERE shard_step_id = ?3 AND shard = ?4",
            &params![report, histogram, id, shard],
        )?;
        Ok(())
    }

    /// The shards of step `id` that registered, by shard number.
    pub fn shard_members(&self, id: i64) -> Result<Vec<ShardMember>> {
        let rows = self.db().query(
            "SELECT shard, host, pid, threads, state, clock_offset_ms, start_lag_ms, error, \
               live_qps, live_errors, result_json, histogram \
             FROM shard_members WHERE shard_step_id = ?1 ORDER BY shard",
            &params![id],
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows.iter() {
            let json: Option<String> = row.get("result_json")?;
            let blob: Option<Vec<u8>> = row.get("histogram")?;
            let report = match (json, blob) {
                (Some(j), Some(b)) => Some((serde_json::from_str(&j)?, decode_histogram(&b)?)),
                _ => None,
            };
            out.push(ShardMember {
                shard: row.get("shard")?,
                host: row.get("host")?,
                pid: row.get("pid")?,
                threads: row.get("threads")?,
                state: row.get("state")?,
                clock_offset_ms: row.get("clock_offset_ms")?,
                start_lag_ms: row.get("start_lag_ms")?,
                error: row.get("error")?,
                live: match (row.get("live_qps")?, row.get("live_errors")?) {
                    (Some(q), Some(e)) => Some((q, e)),
                    _ => None,
                },
                report,
            });
        }
        Ok(out)
    }
}
