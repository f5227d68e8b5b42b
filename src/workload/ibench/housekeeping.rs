//! The pause between l.i2 and the query steps (reference B.6): housekeeping
//! that pays down the MVCC and write-back debt of the write-heavy steps,
//! then a wait of S = min(1200, 60 + nr1/1e6) seconds counted from its
//! start, so that the query steps start from a comparable state.
//!
//! PostgreSQL: `VACUUM (VERBOSE, ANALYZE, INDEX_CLEANUP ON)` of every table
//! in parallel, then `CHECKPOINT`. MySQL: `ANALYZE TABLE` of every table in
//! parallel, and InnoDB flushing turned up for the wait, then restored.
//! SQLite: `ANALYZE` and a WAL checkpoint.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::db::{Connector, DbError, Dialect};

/// What housekeeping sends, per dialect.
#[derive(Clone, Debug, PartialEq)]
pub struct HousekeepingSql {
    /// One statement per table, run in parallel (one connection each).
    pub per_table: Vec<String>,
    /// Then these, in order, on one connection.
    pub after: Vec<String>,
    /// Global settings set for the wait and restored after it (MySQL).
    pub flush_settings: Vec<(&'static str, &'static str)>,
}

/// The statements for `tables` on dialect `d`; `pg_major` picks the VACUUM
/// options PostgreSQL accepts (INDEX_CLEANUP since 12).
pub fn statements(d: Dialect, tables: &[String], pg_major: u32) -> HousekeepingSql {
    match d {
        Dialect::Postgres => {
            let opts = if pg_major >= 12 || pg_major == 0 {
                "(VERBOSE, ANALYZE, INDEX_CLEANUP ON)"
            } else {
                "(VERBOSE, ANALYZE)"
            };
            HousekeepingSql {
                per_table: tables
                    .iter()
                    .map(|t| format!("VACUUM {opts} {t}"))
                    .collect(),
                after: vec!["CHECKPOINT".into()],
                flush_settings: vec![],
            }
        }
        Dialect::Mysql => HousekeepingSql {
            per_table: tables
                .iter()
                .map(|t| format!("ANALYZE TABLE {t}"))
                .collect(),
            after: vec![],
            flush_settings: vec![
                ("innodb_max_dirty_pages_pct_lwm", "1"),
                ("innodb_max_dirty_pages_pct", "1"),
                ("innodb_idle_flush_pct", "100"),
            ],
        },
        Dialect::Sqlite => HousekeepingSql {
            per_table: vec![],
            after: vec!["ANALYZE".into(), "PRAGMA wal_checkpoint(TRUNCATE)".into()],
            flush_settings: vec![],
        },
    }
}

/// The wait S = min(1200, 60 + rows/1e6) seconds for `rows` loaded in
/// l.i0 over all tables, scaled by `scale` (quick runs use a fraction).
pub fn wait_budget(rows_loaded: u64, scale: f64) -> Duration {
    crate::workload::sysbench::load::postwrite_budget(rows_loaded, scale)
}

/// Runs housekeeping on `tables` and sleeps out what is left of `budget`
/// (counted from the start). Returns notes on what could not be done (no
/// CHECKPOINT right, a setting this server lacks); fails if the server is
/// gone.
pub fn run(
    connector: &dyn Connector,
    tables: &[String],
    budget: Duration,
    cancel: &AtomicBool,
) -> anyhow::Result<Vec<String>> {
    let start = Instant::now();
    let mut notes = Vec::new();
    let mut admin = connector.connect_as("tidemark/housekeeping/0")?;
    let d = admin.dialect();
    let major = if d == Dialect::Postgres {
        admin
            .query_text("SHOW server_version_num")
            .ok()
            .and_then(|r| r.first()?.first()?.clone())
            .and_then(|v| v.parse::<u32>().ok())
            .map_or(0, |n| n / 10_000)
    } else {
        0
    };
    let sql = statements(d, tables, major);
    std::thread::scope(|s| -> anyhow::Result<()> {
        let handles: Vec<_> = sql
            .per_table
            .iter()
            .map(|stmt| {
                s.spawn(move || -> Result<(), DbError> {
                    let mut conn = connector.connect_as("tidemark/housekeeping/1")?;
                    conn.query_text(stmt)?;
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().expect("housekeeping thread panicked")?;
        }
        Ok(())
    })?;
    for stmt in &sql.after {
        if let Err(e) = admin.query_text(stmt) {
            notes.push(format!("{stmt} skipped: {e}"));
        }
    }
    let mut restore = Vec::new();
    for (name, value) in &sql.flush_settings {
        let old = admin
            .query_text(&format!("SELECT @@GLOBAL.{name}"))
            .ok()
            .and_then(|r| r.into_iter().next()?.into_iter().next().flatten());
        let Some(old) = old else {
            notes.push(format!("{name} not set: this server does not have it"));
            continue;
        };
        match admin.execute_text(&format!("SET GLOBAL {name} = {value}")) {
            Ok(_) => restore.push((*name, old)),
            Err(e) => notes.push(format!("{name} not set: {e}")),
        }
    }
    while start.elapsed() < budget && !cancel.load(Ordering::Relaxed) {
        std::thread::sleep((budget - start.elapsed()).min(Duration::from_millis(100)));
    }
    for (name, old) in restore {
        if let Err(e) = admin.execute_text(&format!("SET GLOBAL {name} = {old}")) {
            notes.push(format!("{name} could not be restored to {old}: {e}"));
        }
    }
    Ok(notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> Vec<String> {
        vec!["pi1".into(), "pi2".into()]
    }

    #[test]
    fn postgres_vacuums_each_table_then_checkpoints() {
        let s = statements(Dialect::Postgres, &tables(), 15);
        assert_eq!(
            s.per_table,
            [
                "VACUUM (VERBOSE, ANALYZE, INDEX_CLEANUP ON) pi1",
                "VACUUM (VERBOSE, ANALYZE, INDEX_CLEANUP ON) pi2"
            ]
        );
        assert_eq!(s.after, ["CHECKPOINT"]);
        assert_eq!(
            statements(Dialect::Postgres, &tables(), 11).per_table[0],
            "VACUUM (VERBOSE, ANALYZE) pi1"
        );
    }

    #[test]
    fn mysql_analyzes_and_turns_up_innodb_flushing() {
        let s = statements(Dialect::Mysql, &tables(), 0);
        assert_eq!(s.per_table, ["ANALYZE TABLE pi1", "ANALYZE TABLE pi2"]);
        assert_eq!(
            s.flush_settings,
            [
                ("innodb_max_dirty_pages_pct_lwm", "1"),
                ("innodb_max_dirty_pages_pct", "1"),
                ("innodb_idle_flush_pct", "100")
            ]
        );
    }

    #[test]
    fn sqlite_analyzes_and_checkpoints_the_wal() {
        let s = statements(Dialect::Sqlite, &tables(), 0);
        assert!(s.per_table.is_empty());
        assert_eq!(s.after, ["ANALYZE", "PRAGMA wal_checkpoint(TRUNCATE)"]);
    }

    #[test]
    fn the_wait_follows_the_formula() {
        // 200M rows → 260 s (the reference's run_ibench.sh example).
        assert_eq!(wait_budget(200_000_000, 1.0), Duration::from_secs(260));
        assert_eq!(wait_budget(5_000_000_000, 1.0), Duration::from_secs(1200));
        assert_eq!(wait_budget(400_000, 0.05), Duration::from_secs_f64(3.02));
    }
}
