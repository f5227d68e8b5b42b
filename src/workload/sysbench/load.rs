//! Creating and loading the sbtest tables, guarding tables tidemark did not
//! create, and the "postwrite" housekeeping (reference A.2, A.6).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::sql;
use crate::db::{Conn, Connector, DbError, Dialect};
use crate::workload::keys::{C_LEN, KeyDist, KeyGen, PAD_LEN, stream_seed};
use crate::workload::owned_tables::{
    drop_tables, foreign_tables, owned_tables, record_owned, refuse_foreign, tables_like,
};

/// What to do when the target already has `sbtest%` tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExistingTables {
    /// Refuse unless tidemark created them (the default).
    Refuse,
    /// `--reuse-tables`: run on them as they are, without loading.
    Reuse,
    /// `--drop-existing`: drop and load again.
    Drop,
}

/// Rows per multi-row INSERT during the load.
const LOAD_BATCH: u64 = 1000;

/// Lists the `sbtest%` tables of the connection's current schema/database.
pub fn existing_tables(conn: &mut dyn Conn) -> Result<Vec<String>, DbError> {
    tables_like(conn, "sbtest")
}

/// Refuses, without changing anything, when the database has sbtest tables
/// tidemark did not create (checked before any server work starts).
pub fn refuse_foreign_tables(conn: &mut dyn Conn) -> anyhow::Result<()> {
    let existing = existing_tables(conn)?;
    refuse_foreign(conn, existing, foreign_tables_message)
}

fn foreign_tables_message(tables: &[String]) -> String {
    format!(
        "the target database already has table(s) {} that tidemark did not create: pass --reuse-tables to benchmark them as they are, or --drop-existing to drop and reload them",
        tables.join(", ")
    )
}

/// Decides whether the tables must be (re)loaded, dropping only what the
/// policy allows. Returns false when existing tables are reused as they are.
/// The error is one line naming the tables and the flags that resolve it.
pub fn check_existing(conn: &mut dyn Conn, policy: ExistingTables) -> anyhow::Result<bool> {
    let existing = existing_tables(conn)?;
    if existing.is_empty() {
        return Ok(true);
    }
    let foreign = foreign_tables(conn, &existing)?;
    match policy {
        ExistingTables::Reuse => Ok(false),
        ExistingTables::Refuse if !foreign.is_empty() => {
            anyhow::bail!(foreign_tables_message(&foreign))
        }
        ExistingTables::Refuse | ExistingTables::Drop => {
            drop_tables(conn, &existing)?;
            Ok(true)
        }
    }
}

/// Creates the tables (recording them as tidemark's), loads `table_size`
/// rows into each in parallel, then builds `k_N`, as the reference does.
pub fn create_and_load(
    connector: &dyn Connector,
    tables: u32,
    table_size: u64,
    seed: u64,
    threads: u32,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(u64, u64),
) -> anyhow::Result<()> {
    let mut admin = connector.connect()?;
    let d = admin.dialect();
    owned_tables(admin.as_mut())?;
    for t in 1..=tables {
        admin.execute_text(&sql::create_table(d, t))?;
        record_owned(admin.as_mut(), &format!("sbtest{t}"))?;
    }

    // One writer per table, loading it in id order with a key stream of its
    // own (as sysbench's prepare does): every server of a run gets the same
    // rows in the same physical order, so two servers differ only in what
    // is compared, not in their data's layout.
    let units: Vec<u32> = (1..=tables).collect();
    let next = AtomicU64::new(0);
    let loaded = AtomicU64::new(0);
    let total = table_size * u64::from(tables);
    // SQLite has one writer at a time: more loaders would only queue.
    let threads = if d == Dialect::Sqlite { 1 } else { threads };
    let workers = threads.clamp(1, 8).min(tables.max(1));
    let failed: std::sync::Mutex<Option<anyhow::Error>> = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..workers {
            let (units, next, loaded, failed) = (&units, &next, &loaded, &failed);
            s.spawn(move || {
                let run = || -> anyhow::Result<()> {
                    let mut conn = connector.connect()?;
                    let mut buf = String::with_capacity(LOAD_BATCH as usize * 200);
                    let (mut c, mut pad) = ([0u8; C_LEN], [0u8; PAD_LEN]);
                    loop {
                        if cancel.load(Ordering::Relaxed) || failed.lock().unwrap().is_some() {
                            return Ok(());
                        }
                        let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                        let Some(&t) = units.get(i) else {
                            return Ok(());
                        };
                        let mut keys =
                            KeyGen::new(stream_seed(seed, "load", t), KeyDist::Uniform, table_size);
                        let head = sql::load_insert_head(t);
                        let mut id = 1;
                        while id <= table_size {
                            if cancel.load(Ordering::Relaxed) {
                                return Ok(());
                            }
                            let end = (id + LOAD_BATCH - 1).min(table_size);
                            buf.clear();
                            buf.push_str(&head);
                            for row in id..=end {
                                keys.fill_digits(&mut c);
                                keys.fill_digits(&mut pad);
                                let k = keys.uniform(1, table_size as i64);
                                if row > id {
                                    buf.push(',');
                                }
                                let _ = write!(
                                    buf,
                                    "({row},{k},'{}','{}')",
                                    std::str::from_utf8(&c).unwrap_or(""),
                                    std::str::from_utf8(&pad).unwrap_or("")
                                );
                            }
                            conn.execute_text(&buf)?;
                            loaded.fetch_add(end - id + 1, Ordering::Relaxed);
                            id = end + 1;
                        }
                    }
                };
                if let Err(e) = run() {
                    failed.lock().unwrap().get_or_insert(e);
                }
            });
        }
        // Report progress from the calling thread while loaders work.
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let done = loaded.load(Ordering::Relaxed);
            on_progress(done, total);
            if done >= total || cancel.load(Ordering::Relaxed) || failed.lock().unwrap().is_some() {
                break;
            }
        }
    });
    if let Some(e) = failed.into_inner().unwrap() {
        return Err(e.context("loading the sbtest tables failed"));
    }
    if cancel.load(Ordering::Relaxed) {
        anyhow::bail!("interrupted while loading the sbtest tables");
    }
    for t in 1..=tables {
        if let Some(q) = sql::after_load(d, t, table_size) {
            admin.query_text(&q)?;
        }
    }
    // Build k_N per table, in parallel across tables (one at a time on
    // SQLite, which has one writer).
    if d == Dialect::Sqlite {
        for t in 1..=tables {
            admin.execute_text(&sql::create_k_index(t))?;
        }
        return Ok(());
    }
    each_table_in_parallel(connector, tables, |conn, t| {
        conn.execute_text(&sql::create_k_index(t)).map(drop)
    })?;
    Ok(())
}

/// Runs `work` once per table `1..=tables`, each on a connection of its
/// own, the tables in parallel; the first error wins.
fn each_table_in_parallel(
    connector: &dyn Connector,
    tables: u32,
    work: impl Fn(&mut dyn Conn, u32) -> Result<(), DbError> + Sync,
) -> Result<(), DbError> {
    let work = &work;
    std::thread::scope(|s| {
        let handles: Vec<_> = (1..=tables)
            .map(|t| {
                s.spawn(move || -> Result<(), DbError> {
                    let mut conn = connector.connect()?;
                    work(conn.as_mut(), t)
                })
            })
            .collect();
        handles
            .into_iter()
            .try_for_each(|h| h.join().expect("a per-table worker panicked"))
    })
}

/// Before a step counted under Valgrind (`run --instructions`): the same
/// starting state on every server, whatever its background did before.
/// PostgreSQL: VACUUM of each table (dead tuples pruned, hint bits and the
/// visibility map set, so reads after writes do the same work and the
/// planner sees the same `relallvisible`), then a CHECKPOINT (the step's
/// first change to each page writes its full-page image into the WAL on
/// every server alike). Other servers: nothing, not even a connection.
pub fn settle_for_count(
    connector: &dyn Connector,
    dialect: Dialect,
    tables: u32,
) -> Result<(), DbError> {
    if dialect != Dialect::Postgres {
        return Ok(());
    }
    let mut conn = connector.connect()?;
    for t in 1..=tables {
        conn.execute_text(&format!("VACUUM sbtest{t}"))?;
    }
    conn.execute_text("CHECKPOINT")?;
    Ok(())
}

/// The housekeeping budget: min(1200, 60 + total_rows/1e6) seconds, scaled
/// by the profile (quick runs use a small fraction of it).
pub fn postwrite_budget(total_rows: u64, scale: f64) -> Duration {
    let full = (60.0 + total_rows as f64 / 1e6).min(1200.0);
    Duration::from_secs_f64((full * scale).max(0.0))
}

/// Reference A.6: PostgreSQL: per table in parallel VACUUM (ANALYZE), then
/// CHECKPOINT; MySQL/MariaDB: RESET MASTER (binary log on), ANALYZE TABLE per
/// table in parallel, InnoDB flushing dirty pages eagerly during the wait and
/// restored after it; SQLite: ANALYZE and a truncating WAL checkpoint. Then
/// sleep out what is left of `budget` counted from the start. Returns notes
/// about anything that could not be done (e.g. no CHECKPOINT right).
pub fn postwrite(
    connector: &dyn Connector,
    tables: u32,
    budget: Duration,
    cancel: &AtomicBool,
) -> anyhow::Result<Vec<String>> {
    let start = Instant::now();
    let mut notes = Vec::new();
    let mut admin = connector.connect()?;
    match admin.dialect() {
        Dialect::Postgres => {
            let major = server_major(admin.as_mut());
            let opts = if major >= 12 {
                "(VERBOSE, ANALYZE, INDEX_CLEANUP ON)"
            } else {
                "(VERBOSE, ANALYZE)"
            };
            each_table_in_parallel(connector, tables, |conn, t| {
                conn.execute_text(&format!("VACUUM {opts} sbtest{t}"))
                    .map(drop)
            })?;
            if let Err(e) = admin.execute_text("CHECKPOINT") {
                notes.push(format!("CHECKPOINT skipped: {e}"));
            }
        }
        Dialect::Sqlite => {
            admin.execute_text("ANALYZE")?;
            let r = admin.query_text("PRAGMA wal_checkpoint(TRUNCATE)")?;
            if r.first()
                .and_then(|row| row.first().cloned().flatten())
                .as_deref()
                == Some("1")
            {
                notes.push("wal_checkpoint(TRUNCATE) could not finish: a reader was active".into());
            }
        }
        Dialect::Mysql => {
            notes.extend(reset_binlog(admin.as_mut())?);
            each_table_in_parallel(connector, tables, |conn, t| {
                conn.query_text(&format!("ANALYZE TABLE sbtest{t}"))
                    .map(drop)
            })?;
            let (saved, skipped) = eager_flushing(admin.as_mut())?;
            notes.extend(skipped);
            sleep_out(start, budget, cancel);
            // Restore in reverse order: lwm must stay at or below the pct.
            for (name, value) in saved.iter().rev() {
                admin.execute_text(&format!("SET GLOBAL {name} = {value}"))?;
            }
            return Ok(notes);
        }
    }
    drop(admin);
    sleep_out(start, budget, cancel);
    Ok(notes)
}

fn sleep_out(start: Instant, budget: Duration, cancel: &AtomicBool) {
    while start.elapsed() < budget && !cancel.load(Ordering::Relaxed) {
        std::thread::sleep((budget - start.elapsed()).min(Duration::from_millis(100)));
    }
}

/// The InnoDB settings the reference lowers for the postwrite wait so the
/// buffer pool's dirty pages are written out before the next test.
const EAGER_FLUSH: [(&str, &str); 3] = [
    ("innodb_max_dirty_pages_pct_lwm", "1"),
    ("innodb_max_dirty_pages_pct", "1"),
    ("innodb_idle_flush_pct", "100"),
];

/// Global variables as `(name, value)`, in the order they were changed.
type SavedVariables = Vec<(String, String)>;

/// Sets [`EAGER_FLUSH`] and returns the previous values (to restore, in
/// reverse order) and notes for the variables this server does not have.
fn eager_flushing(conn: &mut dyn Conn) -> anyhow::Result<(SavedVariables, Vec<String>)> {
    let mut saved = Vec::new();
    let mut notes = Vec::new();
    for (name, value) in EAGER_FLUSH {
        let old = conn
            .query_text(&format!("SHOW GLOBAL VARIABLES LIKE '{name}'"))?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().nth(1).flatten());
        match old {
            Some(old) => {
                conn.execute_text(&format!("SET GLOBAL {name} = {value}"))?;
                saved.push((name.to_string(), old));
            }
            None => notes.push(format!("{name} does not exist on this server; not set")),
        }
    }
    Ok((saved, notes))
}

/// `RESET MASTER` when the server writes a binary log (the reference runs it
/// before each test and in housekeeping so binlogs never fill the disk);
/// nothing on other dialects or without a binary log. MySQL 8.4+ calls it
/// `RESET BINARY LOGS AND GTIDS`.
pub fn reset_binlog(conn: &mut dyn Conn) -> anyhow::Result<Option<String>> {
    if conn.dialect() != Dialect::Mysql {
        return Ok(None);
    }
    let on = conn
        .query_text("SELECT @@log_bin")?
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten());
    if on.as_deref() != Some("1") {
        return Ok(None);
    }
    match conn.execute_text("RESET MASTER") {
        Ok(_) => Ok(None),
        Err(e) if e.code == "1064" => {
            conn.execute_text("RESET BINARY LOGS AND GTIDS")?;
            Ok(None)
        }
        Err(e) => Ok(Some(format!("RESET MASTER skipped: {e}"))),
    }
}

/// The server's major version (PostgreSQL), 0 when unknown.
fn server_major(conn: &mut dyn Conn) -> u32 {
    conn.query_text("SHOW server_version_num")
        .ok()
        .and_then(|rows| rows.first()?.first()?.clone())
        .and_then(|v| v.parse::<u32>().ok())
        .map(|n| n / 10000)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postwrite_budget_follows_the_formula() {
        assert_eq!(postwrite_budget(80_000_000, 1.0), Duration::from_secs(140));
        assert_eq!(
            postwrite_budget(5_000_000_000, 1.0),
            Duration::from_secs(1200)
        );
        assert_eq!(postwrite_budget(100_000, 0.05).as_secs_f64(), 3.005);
    }
}
