//! The sysbench microbenchmark suite (reference section A): 38 runs in the
//! reference's order, 32 of them reported, over `sbtest1..N`.

pub mod catalog;
pub mod client;
pub mod load;
pub mod sql;

use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use catalog::TestDef;
use catalog::{Duration as Dur, Keys, Kind};
use client::{ClientConfig, SysbenchClient};

use crate::db::{Conn, Dialect, Param};
use crate::knobs::ThreadCounts;
use crate::runner::{ClientWork, StepPlan};
use crate::workload::StepInfo;
use crate::workload::keys::{KeyGen, stream_seed};

/// The knobs of a sysbench suite run (a profile's values after overrides).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SysbenchParams {
    pub tables: u32,
    pub table_size: u64,
    /// Client connections: one count, or a sweep (each test runs once per
    /// count; [`Sysbench`] is given one count at a time).
    pub threads: ThreadCounts,
    /// Clients from which single-read tests multiplex their connections
    /// on one event loop per CPU (0: never).
    #[serde(default = "default_mux_from")]
    pub mux_from: u32,
    pub read_secs: f64,
    pub write_secs: f64,
    pub warmup_secs: f64,
    /// Slices of each interleaved test (`--slices`; 0: two a second, at
    /// most [`MAX_DEFAULT_SLICES`]); see [`SysbenchParams::slices_for`].
    #[serde(default)]
    pub slices: u32,
    /// Milliseconds of each turn the targets' clients take within a
    /// slice (`--turn-ms`; 0: each slice whole on one target, then the
    /// next). Runs stored before turns existed read as 0.
    #[serde(default)]
    pub turn_ms: u32,
    /// Length of the unreported scan warm-ups (60 s in the reference).
    pub scan_warm_secs: f64,
    /// Fraction of the reference's postwrite wait to sleep (1.0 = full).
    pub postwrite_scale: f64,
    /// The run seed: the same on every target and repetition of a run;
    /// each test's clients draw their keys from a stream of it
    /// ([`stream_seed`]).
    pub seed: u64,
}

/// The most slices a test is cut into by default.
pub const MAX_DEFAULT_SLICES: u32 = 40;

/// [`SysbenchParams::turn_ms`] unless overridden: in `bench/turns.sh`
/// turns of 10 ms cut the noise between two servers 3–5× against 500 ms
/// with each server's rate unchanged; at 2 ms the rate fell 2.6 %.
pub const DEFAULT_TURN_MS: u32 = 10;

/// The longest turn `--turn-ms` may ask for.
pub const MAX_TURN_MS: u32 = 1000;

/// The shortest slice `--slices` may ask for, seconds.
pub const MIN_SLICE_SECS: f64 = 0.5;

impl SysbenchParams {
    /// Measured seconds of test `t`: the read, write or scan warm-up length.
    pub fn secs(&self, t: &TestDef) -> f64 {
        match t.duration {
            Dur::Read => self.read_secs,
            Dur::Write => self.write_secs,
            Dur::ScanWarm => self.scan_warm_secs,
        }
    }

    /// How many slices a test measured for `secs` seconds is cut into when
    /// it is interleaved: `--slices`, or two a second (slices of the
    /// shortest length `--slices` may ask for, [`MIN_SLICE_SECS`]) up to
    /// [`MAX_DEFAULT_SLICES`] (a 5-second quick test: 10; a 600-second
    /// test: 40 of 15 s).
    pub fn slices_for(&self, secs: f64) -> u32 {
        if self.slices > 0 {
            return self.slices;
        }
        ((secs / MIN_SLICE_SECS).floor() as u32).clamp(1, MAX_DEFAULT_SLICES)
    }
}

/// [`SysbenchParams::mux_from`] unless overridden: the measured crossover
/// below which one thread per connection costs less client CPU per query
/// (bench/concurrency_vs_anchors.sh).
pub const DEFAULT_MUX_FROM: u32 = 64;

fn default_mux_from() -> u32 {
    DEFAULT_MUX_FROM
}

/// The suite bound to its parameters and the target's dialect.
pub struct Sysbench {
    pub params: SysbenchParams,
    pub dialect: Dialect,
}

impl Sysbench {
    /// What the store records about a test run.
    pub fn step_info(&self, t: &TestDef, dialect: Dialect) -> StepInfo {
        let p = &self.params;
        StepInfo {
            suite: crate::record::SuiteName::Sysbench.as_str().into(),
            name: t.name(),
            test: t.test.into(),
            range: Some(t.range),
            group: Some(t.group()),
            reported: t.reported(),
            note: note_for(t, dialect, self.threads(t)),
            params: serde_json::json!({
                "tables": p.tables,
                "table_size": if t.keys == Keys::TableSizeOne { 1 } else { p.table_size },
                "threads": self.threads(t),
                "secs": self.secs(t),
                "warmup_secs": p.warmup_secs,
                "statements_per_event": t.statements_per_event(),
                "rand_type": match t.keys { Keys::Zipfian => "zipfian", _ => "uniform" },
                "seed": p.seed,
            }),
            sweep_threads: None,
        }
    }

    fn threads(&self, t: &TestDef) -> u32 {
        if t.threads_per_table {
            self.params.tables
        } else {
            self.params.threads.first()
        }
    }

    fn secs(&self, t: &TestDef) -> f64 {
        self.params.secs(t)
    }

    /// Threads, warm-up and duration of a test.
    pub fn step_plan(&self, t: &TestDef, target_label: &str) -> StepPlan {
        StepPlan {
            label: format!("{target_label} {}", t.name()),
            threads: self.threads(t),
            warmup: Duration::from_secs_f64(self.params.warmup_secs),
            duration: Duration::from_secs_f64(self.secs(t)),
        }
    }

    /// The clients of test `t`, numbered from `first` (a client shard's
    /// first client; 0 otherwise), as the runner makes them.
    pub fn clients<'a>(&'a self, t: &'a TestDef, first: u32) -> TestClients<'a> {
        TestClients {
            config: self.client_config(),
            test: t,
            first,
        }
    }

    /// Whether test `t`'s clients can be multiplexed on event loops
    /// (every event one read statement).
    pub fn multiplexes(t: &TestDef) -> bool {
        SysbenchClient::is_single_read(t)
    }

    fn client_config(&self) -> ClientConfig {
        ClientConfig {
            dialect: self.dialect,
            tables: self.params.tables,
            table_size: self.params.table_size,
            seed: self.params.seed,
        }
    }

    /// EXPLAIN output for every distinct statement of `t` on table 1, with
    /// representative parameters inlined. Failures are returned as the plan
    /// text so one bad EXPLAIN does not hide the others.
    pub fn explain(&self, t: &TestDef, conn: &mut dyn Conn) -> Vec<(String, String)> {
        let client = SysbenchClient::new(t, &self.client_config(), 0);
        let seed = stream_seed(self.params.seed, &format!("explain {}", t.name()), 0);
        let mut keys = KeyGen::new(seed, crate::workload::keys::KeyDist::Uniform, 1);
        let n = self.params.table_size.max(1) as i64;
        let mut out = Vec::new();
        for stmt in client.statement_texts() {
            let between = stmt.contains("BETWEEN");
            let hot = t.kind == (Kind::RandomPoints { hot: true });
            let text = inline_params(&stmt, self.dialect, |i, is_text| {
                if is_text {
                    Param::Text("explain-representative-value")
                } else if between {
                    // Bounds from the middle of the table, `range` apart.
                    Param::Int(n / 2 + if i == 1 { i64::from(t.range) } else { 0 })
                } else if hot {
                    Param::Int(n / 2 + 1 + i as i64)
                } else {
                    Param::Int(keys.uniform(1, n))
                }
            });
            let plan = explain_one(conn, &text);
            out.push((text, plan));
        }
        out
    }
}

/// Runs the dialect's EXPLAIN for `sql` and returns the plan as text.
/// MySQL 8 prints `FORMAT=TREE`; MariaDB does not know it (error 1791) and
/// gets `FORMAT=JSON`, which names the index and access type as well.
pub fn explain_one(conn: &mut dyn Conn, sql: &str) -> String {
    let q = match conn.dialect() {
        Dialect::Postgres => format!("EXPLAIN {sql}"),
        Dialect::Mysql => format!("EXPLAIN FORMAT=TREE {sql}"),
        Dialect::Sqlite => format!("EXPLAIN QUERY PLAN {sql}"),
    };
    let mut answer = conn.query_text(&q);
    if conn.dialect() == Dialect::Mysql
        && answer
            .as_ref()
            .is_err_and(|e| e.code == "1791" || e.code == "1064")
    {
        answer = conn.query_text(&format!("EXPLAIN FORMAT=JSON {sql}"));
    }
    match answer {
        Ok(rows) => rows
            .into_iter()
            .map(|r| {
                r.into_iter()
                    .map(|v| v.unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("EXPLAIN failed: {e}"),
    }
}

/// Replaces each placeholder of `sql` with a literal from `value(index,
/// is_text)`. A placeholder is text when it assigns or inserts `c`/`pad`.
pub fn inline_params(
    sql: &str,
    dialect: Dialect,
    mut value: impl FnMut(usize, bool) -> Param<'static>,
) -> String {
    let insert_cols: Option<Vec<&str>> = sql.find(") VALUES (").and_then(|_| {
        let open = sql.find('(')?;
        let close = sql[open..].find(')')? + open;
        Some(sql[open + 1..close].split(',').map(str::trim).collect())
    });
    let mut out = String::with_capacity(sql.len() + 64);
    let bytes = sql.as_bytes();
    let mut i = 0;
    let mut index = 0;
    while i < bytes.len() {
        let is_ph = match dialect {
            Dialect::Postgres => {
                bytes[i] == b'$' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
            }
            Dialect::Mysql | Dialect::Sqlite => bytes[i] == b'?',
        };
        if !is_ph {
            out.push(bytes[i] as char);
            i += 1;
            continue;
        }
        i += 1;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let is_text = out.ends_with("c=")
            || insert_cols
                .as_ref()
                .and_then(|c| c.get(index))
                .is_some_and(|c| *c == "c" || *c == "pad");
        match value(index, is_text) {
            Param::Int(v) => out.push_str(&v.to_string()),
            Param::Text(s) => {
                out.push('\'');
                out.push_str(&s.replace('\'', "''"));
                out.push('\'');
            }
        }
        index += 1;
    }
    out
}

/// What a result means on a target where it differs from the reference.
fn note_for(t: &TestDef, dialect: Dialect, threads: u32) -> Option<String> {
    const SCAN: &str = "rows counts rows scanned (table_size per event); the reference reports table_size / avg latency";
    match (t.kind, dialect) {
        (Kind::Scan, Dialect::Sqlite) => Some(format!(
            "{SCAN}. SQLite has no server: the scan runs inside the client thread, so client CPU is the engine's work"
        )),
        (Kind::Scan, _) => Some(SCAN.into()),
        (_, Dialect::Sqlite) if t.group() == crate::workload::Group::Write && threads > 1 => Some(
            "SQLite allows one writer at a time: concurrent writers wait in the busy handler (busy_waits in params) or fail with SQLITE_BUSY (counted as retries)".into(),
        ),
        _ => None,
    }
}

/// The clients of one test, handed to the runner ([`Sysbench::clients`]).
pub struct TestClients<'a> {
    config: ClientConfig,
    test: &'a TestDef,
    first: u32,
}

impl crate::runner::StepWork for TestClients<'_> {
    fn client(&self, client: u32) -> Box<dyn ClientWork> {
        Box::new(SysbenchClient::new(
            self.test,
            &self.config,
            self.first + client,
        ))
    }

    fn mux_client(&self, client: u32) -> Option<Box<dyn crate::runner::mux::MuxWork>> {
        SysbenchClient::is_single_read(self.test).then(|| {
            Box::new(SysbenchClient::new(
                self.test,
                &self.config,
                self.first + client,
            )) as _
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_params_fills_ints_and_text() {
        let s = inline_params(
            "UPDATE sbtest1 SET c=$1 WHERE id=$2",
            Dialect::Postgres,
            |i, t| {
                if t {
                    Param::Text("x'y")
                } else {
                    Param::Int(i as i64 + 10)
                }
            },
        );
        assert_eq!(s, "UPDATE sbtest1 SET c='x''y' WHERE id=11");
        let s = inline_params(
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
            Dialect::Mysql,
            |i, t| {
                if t {
                    Param::Text("s")
                } else {
                    Param::Int(i as i64)
                }
            },
        );
        assert_eq!(
            s,
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (0, 1, 's', 's')"
        );
        let s = inline_params(
            "SELECT c FROM t WHERE id IN ($1, $2, $10)",
            Dialect::Postgres,
            |i, _| Param::Int(i as i64),
        );
        assert_eq!(s, "SELECT c FROM t WHERE id IN (0, 1, 2)");
    }
}
