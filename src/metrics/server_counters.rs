//! The server-counter sampler: reads the DBMS's own statistics views
//! (PostgreSQL's `pg_stat_*`, InnoDB's status and metrics) on a connection
//! of its own, once per runner second, while a step runs.
//!
//! One reading is one or two small queries (about a millisecond of server
//! time) on an idle connection the clients never see, so it costs the
//! measured work next to nothing; each reading's own duration is recorded
//! (`read_ms`) so the report can show that. What the views return is kept
//! raw; `record::server_counters` derives rates, growth and levels.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::db::{Conn, Connector, Dialect, TextRows, name_value_pairs};
use crate::record::{CounterReading, Phase, ServerCounters};

/// The name this sampler's connection shows (PostgreSQL's
/// `application_name`), so it is never mistaken for a client.
pub const CONNECTION_NAME: &str = "tidemark-counters";

/// How long after the last reading the sampler reads on its own when the
/// runner does not tick (loads, setup).
const SELF_TICK: Duration = Duration::from_millis(1500);

/// How long the last reading waits for the step's PostgreSQL backends to
/// exit, which is when they publish their last table statistics.
const BACKENDS_GONE_WAIT: Duration = Duration::from_secs(2);

/// A count of backends unchanged this long is not going to fall.
const STEADY: Duration = Duration::from_millis(300);

enum Msg {
    Tick(Phase),
    Stop,
}

/// A running server-counter sampler.
pub struct CounterSampler {
    tx: Sender<Msg>,
    handle: Option<JoinHandle<(ServerCounters, Option<String>)>>,
}

impl CounterSampler {
    /// Connects, takes the baseline reading and starts the sampler thread;
    /// `Err` says why the server's counters cannot be sampled.
    pub fn start(connector: &dyn Connector) -> Result<CounterSampler, String> {
        let mut conn = connector
            .connect_as(CONNECTION_NAME)
            .map_err(|e| format!("the counter sampler could not connect: {e}"))?;
        let queries = Queries::for_server(conn.as_mut())?;
        let start = Instant::now();
        let baseline = queries.read(conn.as_mut(), start)?;
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("counter-sampler".into())
            .spawn(move || sample_loop(conn, queries, start, baseline, rx))
            .map_err(|e| format!("the counter sampler thread could not start: {e}"))?;
        Ok(CounterSampler {
            tx,
            handle: Some(handle),
        })
    }

    /// Closes the current interval now; the reading gets `phase`.
    pub fn tick(&self, phase: Phase) {
        let _ = self.tx.send(Msg::Tick(phase));
    }

    /// Takes the last reading and returns all of them, with the first
    /// error a reading met (the readings before it are kept).
    pub fn stop(mut self) -> (ServerCounters, Option<String>) {
        self.finish()
    }

    fn finish(&mut self) -> (ServerCounters, Option<String>) {
        let _ = self.tx.send(Msg::Stop);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_else(|| {
                (
                    ServerCounters::default(),
                    Some("the counter sampler thread panicked".into()),
                )
            })
    }
}

impl Drop for CounterSampler {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.finish();
        }
    }
}

fn sample_loop(
    mut conn: Box<dyn Conn>,
    queries: Queries,
    start: Instant,
    baseline: CounterReading,
    rx: Receiver<Msg>,
) -> (ServerCounters, Option<String>) {
    crate::util::cpus::leave_placed_cpus();
    let mut readings = vec![baseline];
    let mut error = None;
    let mut phase = Phase::Warmup;
    loop {
        let (this, last) = match rx.recv_timeout(SELF_TICK) {
            Ok(Msg::Tick(p)) => (p, false),
            Err(RecvTimeoutError::Timeout) => (phase, false),
            Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => (Phase::After, true),
        };
        if !last {
            phase = this;
        }
        if last && error.is_none() {
            queries.wait_for_clients_to_leave(conn.as_mut());
        }
        if error.is_none() {
            match queries.read(conn.as_mut(), start) {
                Ok(mut r) => {
                    r.phase = this;
                    readings.push(r);
                }
                Err(e) => error = Some(e),
            }
        }
        if last {
            break;
        }
    }
    number_readings(&mut readings);
    (ServerCounters { readings }, error)
}

/// Numbers readings like the host seconds: warm-up intervals count back
/// from −1, measured ones from 0, later ones follow; the baseline comes
/// before the first warm-up interval.
fn number_readings(readings: &mut [CounterReading]) {
    let Some((baseline, rest)) = readings.split_first_mut() else {
        return;
    };
    let secs = super::sampler::second_numbers(rest.iter().map(|r| r.phase));
    baseline.phase = Phase::Warmup;
    baseline.sec = secs.first().map_or(0, |s| (*s).min(0)) - 1;
    for (r, sec) in rest.iter_mut().zip(secs) {
        r.sec = sec;
    }
}

/// The queries one server answers, chosen once by its family and version.
enum Queries {
    /// One row, one column per name.
    Postgres {
        sql: String,
        names: Vec<&'static str>,
    },
    Mysql,
}

/// `SHOW GLOBAL STATUS` names → our names (MariaDB has them all; MySQL 8
/// lacks the history length and checkpoint age, read from INNODB_METRICS).
const MYSQL_STATUS: &[(&str, &str)] = &[
    ("Innodb_history_list_length", "history_list_length"),
    ("Innodb_buffer_pool_pages_dirty", "pages_dirty"),
    ("Innodb_buffer_pool_pages_total", "pages_total"),
    ("Innodb_lsn_current", "lsn"),
    ("Innodb_checkpoint_age", "checkpoint_age"),
    ("Innodb_os_log_written", "log_bytes_written"),
    ("Innodb_buffer_pool_pages_flushed", "pages_flushed"),
    ("Innodb_buffer_pool_reads", "pool_reads"),
    ("Innodb_buffer_pool_read_requests", "pool_read_requests"),
    ("Innodb_row_lock_waits", "row_lock_waits"),
    ("Innodb_row_lock_time", "row_lock_time_ms"),
    ("Innodb_data_fsyncs", "data_fsyncs"),
];

/// INNODB_METRICS counters read when enabled.
const MYSQL_METRICS: &[&str] = &[
    "trx_rseg_history_len",
    "log_lsn_current",
    "log_lsn_last_checkpoint",
    "purge_del_mark_records",
    "purge_upd_exist_or_extern_records",
];

impl Queries {
    fn for_server(conn: &mut dyn Conn) -> Result<Queries, String> {
        match conn.dialect() {
            Dialect::Postgres => {
                let version = conn
                    .query_text("SHOW server_version_num")
                    .map_err(|e| format!("SHOW server_version_num: {e}"))
                    .map(crate::db::first_value)?
                    .and_then(|v| v.trim().parse::<u32>().ok())
                    .ok_or("SHOW server_version_num returned no number")?;
                let (sql, names) = postgres_sql(version);
                Ok(Queries::Postgres { sql, names })
            }
            Dialect::Mysql => Ok(Queries::Mysql),
            Dialect::Sqlite => Err("SQLite has no server counters".into()),
        }
    }

    fn read(&self, conn: &mut dyn Conn, start: Instant) -> Result<CounterReading, String> {
        let t0 = Instant::now();
        let mut values = match self {
            Queries::Postgres { sql, names } => {
                let rows = conn
                    .query_text(sql)
                    .map_err(|e| format!("reading PostgreSQL's statistics views: {e}"))?;
                postgres_values(rows, names)
            }
            Queries::Mysql => mysql_values(conn)?,
        };
        let end = Instant::now();
        values.insert("read_ms".into(), (end - t0).as_secs_f64() * 1e3);
        Ok(CounterReading {
            sec: 0,
            phase: Phase::Measured,
            end_secs: (end - start).as_secs_f64(),
            values,
        })
    }

    /// PostgreSQL backends publish their last table statistics when they
    /// exit, a moment after their clients hang up: the last reading waits
    /// (briefly) for that, so the end-of-step dead tuples are the step's.
    fn wait_for_clients_to_leave(&self, conn: &mut dyn Conn) {
        if !matches!(self, Queries::Postgres { .. }) {
            return;
        }
        let sql = "SELECT count(*) FROM pg_stat_activity \
                   WHERE datname = current_database() AND backend_type = 'client backend' \
                   AND pid <> pg_backend_pid() AND state <> 'idle in transaction'";
        // Connections that stay (another tool's, a housekeeping one) do
        // not hold the step up: the wait ends once the count stops falling.
        let until = Instant::now() + BACKENDS_GONE_WAIT;
        let (mut last, mut since) = (None, Instant::now());
        while Instant::now() < until {
            let left = conn.query_text(sql).ok().and_then(crate::db::first_value);
            let Some(left) = left.and_then(|n| n.trim().parse::<u64>().ok()) else {
                break;
            };
            if left == 0 || (last == Some(left) && since.elapsed() > STEADY) {
                break;
            }
            if last != Some(left) {
                (last, since) = (Some(left), Instant::now());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The one-row query of PostgreSQL `version` (`server_version_num`) and
/// the names of its columns: the views moved between versions
/// (`pg_stat_wal` from 14, `pg_stat_checkpointer` and `pg_stat_io` from 17).
pub fn postgres_sql(version: u32) -> (String, Vec<&'static str>) {
    let mut cols: Vec<(&str, &str)> = Vec::new();
    if version >= 170000 {
        cols.extend([
            ("checkpoints_timed", "c.num_timed"),
            ("checkpoints_req", "c.num_requested"),
            ("buffers_checkpoint", "c.buffers_written"),
            ("buffers_clean", "b.buffers_clean"),
            (
                "buffers_backend",
                "(SELECT coalesce(sum(writes), 0) FROM pg_stat_io \
                 WHERE backend_type = 'client backend')",
            ),
        ]);
    } else {
        cols.extend([
            ("checkpoints_timed", "b.checkpoints_timed"),
            ("checkpoints_req", "b.checkpoints_req"),
            ("buffers_checkpoint", "b.buffers_checkpoint"),
            ("buffers_clean", "b.buffers_clean"),
            ("buffers_backend", "b.buffers_backend"),
        ]);
    }
    if version >= 140000 {
        cols.extend([
            ("wal_records", "w.wal_records"),
            ("wal_fpi", "w.wal_fpi"),
            ("wal_bytes", "w.wal_bytes"),
        ]);
    }
    cols.extend([
        ("blks_read", "d.blks_read"),
        ("blks_hit", "d.blks_hit"),
        ("n_live_tup", "t.live"),
        ("n_dead_tup", "t.dead"),
        ("autovacuum_count", "t.av"),
        ("autoanalyze_count", "t.aa"),
        ("vacuums_running", "v.n"),
        ("vacuum_heap_blks_scanned", "v.scanned"),
    ]);
    let mut from = vec![
        "pg_stat_bgwriter b",
        "(SELECT blks_read, blks_hit FROM pg_stat_database \
          WHERE datname = current_database()) d",
        "(SELECT coalesce(sum(n_live_tup), 0) live, coalesce(sum(n_dead_tup), 0) dead, \
          coalesce(sum(autovacuum_count), 0) av, coalesce(sum(autoanalyze_count), 0) aa \
          FROM pg_stat_user_tables) t",
        "(SELECT count(*) n, coalesce(sum(heap_blks_scanned), 0) scanned \
          FROM pg_stat_progress_vacuum WHERE datname = current_database()) v",
    ];
    if version >= 170000 {
        from.push("pg_stat_checkpointer c");
    }
    if version >= 140000 {
        from.push("pg_stat_wal w");
    }
    let select: Vec<&str> = cols.iter().map(|c| c.1).collect();
    let sql = format!("SELECT {} FROM {}", select.join(", "), from.join(", "));
    (sql, cols.iter().map(|c| c.0).collect())
}

fn postgres_values(rows: TextRows, names: &[&'static str]) -> BTreeMap<String, f64> {
    let row = rows.into_iter().next().unwrap_or_default();
    names
        .iter()
        .zip(row)
        .filter_map(|(n, v)| Some((n.to_string(), v?.trim().parse().ok()?)))
        .collect()
}

fn mysql_values(conn: &mut dyn Conn) -> Result<BTreeMap<String, f64>, String> {
    let list = |names: &mut dyn Iterator<Item = &str>| {
        names
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sql = format!(
        "SHOW GLOBAL STATUS WHERE Variable_name IN ({})",
        list(&mut MYSQL_STATUS.iter().map(|s| s.0))
    );
    let status = conn
        .query_text(&sql)
        .map_err(|e| format!("SHOW GLOBAL STATUS: {e}"))?;
    let mut values = BTreeMap::new();
    for (name, value) in name_value_pairs(status) {
        let ours = MYSQL_STATUS
            .iter()
            .find(|s| s.0.eq_ignore_ascii_case(&name));
        if let (Some((_, ours)), Ok(v)) = (ours, value.trim().parse::<f64>()) {
            values.insert(ours.to_string(), v);
        }
    }
    let sql = format!(
        "SELECT NAME, COUNT FROM information_schema.INNODB_METRICS \
         WHERE STATUS = 'enabled' AND NAME IN ({})",
        list(&mut MYSQL_METRICS.iter().copied())
    );
    // A server without INNODB_METRICS keeps what SHOW STATUS gave.
    let metrics: BTreeMap<String, f64> = conn
        .query_text(&sql)
        .map(name_value_pairs)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(n, v)| Some((n, v.trim().parse().ok()?)))
        .collect();
    let mut fill = |ours: &str, v: Option<f64>| {
        if let Some(v) = v {
            values.entry(ours.to_string()).or_insert(v);
        }
    };
    fill(
        "history_list_length",
        metrics.get("trx_rseg_history_len").copied(),
    );
    fill("lsn", metrics.get("log_lsn_current").copied());
    fill(
        "checkpoint_age",
        metrics
            .get("log_lsn_current")
            .zip(metrics.get("log_lsn_last_checkpoint"))
            .map(|(a, b)| a - b),
    );
    let purged: Vec<f64> = [
        "purge_del_mark_records",
        "purge_upd_exist_or_extern_records",
    ]
    .iter()
    .filter_map(|n| metrics.get(*n).copied())
    .collect();
    fill(
        "purge_records",
        (!purged.is_empty()).then(|| purged.iter().sum()),
    );
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::server_counters::counter_def;

    #[test]
    fn postgres_queries_follow_the_views_of_each_version() {
        let (old, names) = postgres_sql(130000);
        assert!(!old.contains("pg_stat_wal") && !names.contains(&"wal_bytes"));
        let (sql, names) = postgres_sql(150000);
        assert!(sql.contains("pg_stat_wal w") && sql.contains("b.buffers_backend"));
        let (new, names17) = postgres_sql(170000);
        assert!(new.contains("pg_stat_checkpointer") && new.contains("pg_stat_io"));
        assert_eq!(names, names17);
        assert!(names.iter().all(|n| counter_def(n).is_some()), "{names:?}");
        assert!(MYSQL_STATUS.iter().all(|s| counter_def(s.1).is_some()));
    }

    #[test]
    fn readings_are_numbered_like_host_seconds() {
        let mut r: Vec<CounterReading> = [
            Phase::Measured,
            Phase::Warmup,
            Phase::Measured,
            Phase::Measured,
            Phase::After,
        ]
        .into_iter()
        .map(|phase| CounterReading {
            phase,
            ..CounterReading::default()
        })
        .collect();
        number_readings(&mut r);
        let secs: Vec<i64> = r.iter().map(|x| x.sec).collect();
        assert_eq!(secs, [-2, -1, 0, 1, 2]);
        assert_eq!(r[0].phase, Phase::Warmup);
    }
}
