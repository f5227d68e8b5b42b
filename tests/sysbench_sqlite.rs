//! Every sysbench microbenchmark against SQLite through the library itself,
//! checked from the engine's side: triggers count every row inserted,
//! updated and deleted, table contents are compared before and after, and
//! EXPLAIN QUERY PLAN must use the index the test is about.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::sysbench_checks::{self, ROWS};
use common::*;
use tidemark::db::sqlite::{DEFAULT_BUSY_TIMEOUT, SqliteConnector, SqliteOptions};
use tidemark::db::{Conn, Connector, Dialect};
use tidemark::server::sqlite as sqlite_target;
use tidemark::workload::sysbench::catalog::{self, Kind};
use tidemark::workload::sysbench::load;

/// Row changes the triggers counted: (inserts, updates, deletes).
fn changes(admin: &mut dyn Conn) -> (i64, i64, i64) {
    let n = |op: &str, a: &mut dyn Conn| {
        scalar_i64(a, &format!("SELECT n FROM tm_audit WHERE op = '{op}'"))
    };
    (n("i", admin), n("u", admin), n("d", admin))
}

#[test]
fn every_microbenchmark_does_its_work_as_sqlite_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let text = sqlite_target::config_text("quick", "wal").unwrap();
    let connector = SqliteConnector::new(SqliteOptions {
        path: dir.path().join("bench.db"),
        pragmas: sqlite_target::pragmas(&text, &[]),
        busy_timeout: DEFAULT_BUSY_TIMEOUT,
    });
    let cancel = AtomicBool::new(false);
    load::create_and_load(&connector, 1, ROWS, 7, 2, &cancel, &mut |_, _| {}).unwrap();
    let mut admin = connector.connect().unwrap();
    assert_eq!(
        scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1"),
        ROWS as i64
    );
    assert_eq!(scalar(admin.as_mut(), "PRAGMA journal_mode"), "wal");
    assert!(
        scalar(
            admin.as_mut(),
            "SELECT sql FROM sqlite_master WHERE name = 'sbtest1'"
        )
        .contains("INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT")
    );
    admin
        .execute_text(
            "CREATE TABLE tm_audit(op TEXT PRIMARY KEY, n INTEGER NOT NULL);
             INSERT INTO tm_audit VALUES ('i', 0), ('u', 0), ('d', 0);
             CREATE TRIGGER tm_i AFTER INSERT ON sbtest1 BEGIN UPDATE tm_audit SET n = n + 1 WHERE op = 'i'; END;
             CREATE TRIGGER tm_u AFTER UPDATE ON sbtest1 BEGIN UPDATE tm_audit SET n = n + 1 WHERE op = 'u'; END;
             CREATE TRIGGER tm_d AFTER DELETE ON sbtest1 BEGIN UPDATE tm_audit SET n = n + 1 WHERE op = 'd'; END;",
        )
        .unwrap();
    let notes = load::postwrite(&connector, 1, Duration::ZERO, &cancel).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    assert!(
        scalar_i64(
            admin.as_mut(),
            "SELECT count(*) FROM sqlite_stat1 WHERE idx = 'k_1'"
        ) == 1,
        "ANALYZE ran"
    );
    let wal = dir.path().join("bench.db-wal");
    assert_eq!(
        std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0),
        0,
        "wal_checkpoint(TRUNCATE) emptied the WAL"
    );

    let suite = sysbench_checks::suite(Dialect::Sqlite, 0.3);
    let checksum = |a: &mut dyn Conn, filter: &str| {
        scalar(
            a,
            &format!(
                "SELECT sum(length(c) * id) || ':' || group_concat(substr(c, 1, 12), '') FROM sbtest1 {filter}"
            ),
        )
    };

    for test in catalog::suite() {
        let name = test.name();
        let plans = suite.explain(&test, admin.as_mut());
        let plan_text = plans
            .iter()
            .map(|(_, p)| p.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let count_before = scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1");
        let sum_k_before = scalar_i64(admin.as_mut(), "SELECT sum(k) FROM sbtest1");
        let others_before = checksum(admin.as_mut(), "WHERE id <> 1");
        let all_before = checksum(admin.as_mut(), "");
        let before = changes(admin.as_mut());
        let r = sysbench_checks::run_test(&suite, &test, &connector, "sqlite");
        assert_eq!(
            r.counts.statements,
            r.counts.events * u64::from(test.statements_per_event()),
            "{name}"
        );
        let after = changes(admin.as_mut());
        let (ins, upd, del) = (after.0 - before.0, after.1 - before.1, after.2 - before.2);
        let events = r.counts.events as i64;
        let count_after = scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1");
        let writes = test.group() == tidemark::workload::Group::Write;
        if !writes {
            assert_eq!((ins, upd, del), (0, 0, 0), "{name}: a read test wrote");
            assert_eq!(checksum(admin.as_mut(), ""), all_before, "{name}");
        }
        let uses = |needle: &str| {
            assert!(
                plan_text.contains(needle),
                "{name}: plan should use {needle}: {plan_text}"
            )
        };
        match test.kind {
            Kind::PointQuery | Kind::RandomPoints { .. } => uses("USING INTEGER PRIMARY KEY"),
            Kind::Points { on_id, covered } | Kind::Range { on_id, covered } => {
                match (on_id, covered) {
                    (true, _) => uses("USING INTEGER PRIMARY KEY"),
                    (false, true) => uses("USING COVERING INDEX k_1"),
                    (false, false) => uses("USING INDEX k_1"),
                }
                sysbench_checks::check_rows_per_call(
                    &test,
                    r.counts.rows as f64 / r.counts.events as f64,
                );
            }
            Kind::Scan => uses("SCAN sbtest1"),
            Kind::ReadOnly(_) | Kind::ReadOnlyCount => uses("USING INTEGER PRIMARY KEY"),
            Kind::ReadWrite | Kind::WriteOnly => {
                assert_eq!(
                    (ins, upd, del),
                    (events, 2 * events, events),
                    "{name}: 4 writes per transaction"
                );
                assert_eq!(count_after, count_before, "{name}: delete + re-insert");
            }
            Kind::UpdateIndex => {
                assert_eq!((ins, upd, del), (0, events, 0), "{name}");
                let sum_k = scalar_i64(admin.as_mut(), "SELECT sum(k) FROM sbtest1");
                assert_eq!(sum_k - sum_k_before, events, "{name}: k=k+1 per event");
            }
            Kind::UpdateNonIndex => {
                assert_eq!((ins, upd, del), (0, events, 0), "{name}");
                if test.test == "update-one" {
                    assert_eq!(
                        checksum(admin.as_mut(), "WHERE id <> 1"),
                        others_before,
                        "update-one only ever changes id 1"
                    );
                }
            }
            Kind::UpdateInlist => {
                let per = upd as f64 / events as f64;
                assert!(per <= 100.0 && per > 80.0, "{name}: {per}");
                assert_eq!((ins, del), (0, 0), "{name}");
            }
            Kind::Delete => {
                assert_eq!(ins + upd, 0, "{name}");
                assert!(del <= events && del > 0, "{name}");
                assert_eq!(count_before - count_after, del, "{name}");
            }
            Kind::Insert => {
                assert_eq!((ins, upd, del), (events, 0, 0), "{name}");
                assert_eq!(
                    scalar_i64(
                        admin.as_mut(),
                        &format!("SELECT count(*) FROM sbtest1 WHERE id > {ROWS}")
                    ),
                    events,
                    "{name}: an omitted id is assigned at the tail"
                );
            }
        }
    }
}
