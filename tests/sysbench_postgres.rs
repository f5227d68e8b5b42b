//! Every sysbench microbenchmark against a real managed PostgreSQL, checked
//! from the server's side (pg_stat_statements, pg_stat_user_tables and
//! pg_stat_user_indexes), not from tidemark's own counters.

mod common;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use common::sysbench_checks::{self, Params, ROWS};
use common::*;
use tidemark::db::Connector;
use tidemark::db::{Conn, Dialect};

use tidemark::workload::sysbench::catalog::{self, Kind};
use tidemark::workload::sysbench::load;

/// Statement text → (calls, rows) as pg_stat_statements saw them. It shows
/// constants as parameters: `k=k+1` appears as `k=k+$2`.
fn statements(admin: &mut dyn Conn) -> HashMap<String, (i64, i64)> {
    admin
        .query_text(
            "SELECT query, calls, rows FROM pg_stat_statements \
             WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
             AND (query LIKE '%sbtest%' OR query IN ('BEGIN', 'COMMIT', 'ROLLBACK'))",
        )
        .unwrap()
        .into_iter()
        .map(|r| {
            let v: Vec<String> = r.into_iter().map(|x| x.unwrap_or_default()).collect();
            (v[0].clone(), (v[1].parse().unwrap(), v[2].parse().unwrap()))
        })
        .collect()
}

/// Table and index counters of sbtest1.
fn counters(admin: &mut dyn Conn) -> HashMap<&'static str, i64> {
    let _ = admin.query_text("SELECT pg_stat_clear_snapshot()");
    let t = admin
        .query_text(
            "SELECT seq_scan, seq_tup_read, n_tup_ins, n_tup_upd, n_tup_del FROM pg_stat_user_tables WHERE relname = 'sbtest1'",
        )
        .unwrap();
    let i = |name: &str, a: &mut dyn Conn| {
        scalar_i64(
            a,
            &format!("SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = '{name}'"),
        )
    };
    let t: Vec<i64> = t[0]
        .iter()
        .map(|v| v.as_deref().unwrap().parse().unwrap())
        .collect();
    HashMap::from([
        ("seq_scan", t[0]),
        ("seq_tup_read", t[1]),
        ("ins", t[2]),
        ("upd", t[3]),
        ("del", t[4]),
        ("k_1", i("k_1", admin)),
        ("pkey", i("sbtest1_pkey", admin)),
    ])
}

/// Waits until no other client backend is connected, so their statistics
/// have been flushed.
fn wait_for_backends_to_exit(admin: &mut dyn Conn) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let n = scalar_i64(
            admin,
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
        );
        if n == 0 {
            std::thread::sleep(Duration::from_millis(50));
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("client backends did not exit");
}

/// A digest of every row but id 1, read on a connection of its own so its
/// scan is flushed to the statistics before the next snapshot.
fn checksum_except_id1(connector: &PgConnector, admin: &mut dyn Conn) -> String {
    let mut conn = connector.connect().unwrap();
    let sum = scalar(
        conn.as_mut(),
        "SELECT md5(string_agg(c, '' ORDER BY id)) FROM sbtest1 WHERE id <> 1",
    );
    drop(conn);
    wait_for_backends_to_exit(admin);
    sum
}

#[test]
fn every_microbenchmark_does_its_work_as_the_server_sees_it() {
    let dir = server_tempdir();
    let mut server = start_pg(
        dir.path(),
        &[
            ("shared_preload_libraries", "pg_stat_statements"),
            ("pg_stat_statements.track", "all"),
        ],
    );
    let connector = PgConnector(server.connect_options());
    let mut admin = connector.connect().unwrap();
    admin
        .execute_text("CREATE EXTENSION pg_stat_statements")
        .unwrap();
    let cancel = AtomicBool::new(false);
    load::create_and_load(&connector, 1, ROWS, 7, 2, &cancel, &mut |_, _| {}).unwrap();
    assert_eq!(
        scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1"),
        ROWS as i64
    );
    assert!(
        !scalar(
            admin.as_mut(),
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'k_1'"
        )
        .is_empty(),
        "k_1 is built after the load"
    );
    admin.execute_text("VACUUM ANALYZE sbtest1").unwrap();
    // The admin connection touches only statistics views from here on; a
    // fresh one keeps the load's own scans out of the first snapshot.
    drop(admin);
    let mut admin = connector.connect().unwrap();

    // Steps long enough for an 18-statement event on a loaded 2-core CI
    // machine (0.3 s once ran no read-only event at all).
    let suite = sysbench_checks::suite(Dialect::Postgres, 0.6);

    for test in catalog::suite() {
        let name = test.name();
        let sum_before = checksum_except_id1(&connector, admin.as_mut());
        admin
            .query_text("SELECT pg_stat_statements_reset()")
            .unwrap();
        let before = counters(admin.as_mut());
        let r = sysbench_checks::run_test(&suite, &test, &connector, "pg");
        wait_for_backends_to_exit(admin.as_mut());
        let after = counters(admin.as_mut());
        let d = |k: &str| after[k] - before[k];
        let seen = statements(admin.as_mut());
        let events = r.counts.events as i64;
        let stmt = |sql: &str| -> (i64, i64) {
            *seen
                .get(sql)
                .unwrap_or_else(|| panic!("{name}: the server never saw {sql:?}; it saw {seen:?}"))
        };
        let rows_per_call = |sql: &str| {
            let (c, r) = stmt(sql);
            r as f64 / c as f64
        };
        // Statements the server saw, counted like sysbench: BEGIN and COMMIT too.
        let total_calls: i64 = seen.values().map(|(c, _)| c).sum();
        assert_eq!(
            total_calls, r.counts.statements as i64,
            "{name}: the server's statement count matches ours ({seen:?})"
        );
        assert_eq!(
            r.counts.statements,
            r.counts.events * u64::from(test.statements_per_event()),
            "{name}: statements per event"
        );

        match test.kind {
            Kind::PointQuery => {
                assert_eq!(
                    stmt("SELECT c FROM sbtest1 WHERE id=$1"),
                    (events, events),
                    "{name}"
                );
            }
            Kind::RandomPoints { .. } | Kind::Points { .. } | Kind::Range { .. } => {
                let sql = sysbench_checks::read_sql(&test, Params::Dollar).unwrap();
                sysbench_checks::check_rows_per_call(&test, rows_per_call(&sql));
                if let Kind::Points { on_id, .. } = test.kind {
                    if on_id {
                        assert!(
                            d("pkey") >= events && d("k_1") == 0,
                            "{name}: served by the PK"
                        );
                    } else {
                        assert!(
                            d("k_1") >= events && d("pkey") == 0,
                            "{name}: served by k_1: k_1 {} pkey {} seq {} events {events}",
                            d("k_1"),
                            d("pkey"),
                            d("seq_scan")
                        );
                    }
                }
            }
            Kind::Scan => {
                assert_eq!(
                    stmt("SELECT * from sbtest1 WHERE LENGTH(c) < $1"),
                    (events, 0),
                    "{name}"
                );
                assert_eq!(d("seq_scan"), events, "{name}: one full scan per event");
                assert!(
                    d("seq_tup_read") >= events * (ROWS as i64) * 9 / 10,
                    "{name}"
                );
            }
            Kind::ReadOnly(rs) => {
                assert_eq!(stmt("BEGIN").0, events, "{name}");
                assert_eq!(stmt("COMMIT").0, events, "{name}");
                assert_eq!(
                    stmt("SELECT c FROM sbtest1 WHERE id=$1"),
                    (10 * events, 10 * events)
                );
                sysbench_checks::check_read_only_ranges(
                    &test,
                    rs,
                    Params::Dollar,
                    events,
                    stmt,
                    |sql| seen.contains_key(sql),
                );
            }
            Kind::ReadOnlyCount => {
                assert_eq!(
                    stmt("SELECT count(c) FROM sbtest1 WHERE id BETWEEN $1 AND $2"),
                    (events, events),
                    "{name}"
                );
            }
            Kind::ReadWrite | Kind::WriteOnly => {
                assert_eq!(stmt("BEGIN").0, events, "{name}");
                assert_eq!(stmt("COMMIT").0, events, "{name}");
                for sql in [
                    "UPDATE sbtest1 SET k=k+$2 WHERE id=$1",
                    "UPDATE sbtest1 SET c=$1 WHERE id=$2",
                    "DELETE FROM sbtest1 WHERE id=$1",
                    "INSERT INTO sbtest1 (id, k, c, pad) VALUES ($1, $2, $3, $4)",
                ] {
                    assert_eq!(
                        stmt(sql).0,
                        events,
                        "{name}: 4 writes per transaction: {sql}"
                    );
                }
                assert_eq!(d("ins"), events, "{name}: one insert per transaction");
                assert_eq!(d("del"), events, "{name}: one delete per transaction");
                assert_eq!(d("upd"), 2 * events, "{name}: two updates per transaction");
            }
            Kind::UpdateIndex => {
                assert_eq!(
                    stmt("UPDATE sbtest1 SET k=k+$2 WHERE id=$1").0,
                    events,
                    "{name}"
                );
                assert_eq!(d("upd"), events, "{name}");
            }
            Kind::UpdateNonIndex => {
                let (calls, rows) = stmt("UPDATE sbtest1 SET c=$1 WHERE id=$2");
                assert_eq!(calls, events, "{name}");
                assert!(
                    rows <= calls && rows > calls * 9 / 10,
                    "{name}: {rows}/{calls}"
                );
                if test.test == "update-one" {
                    assert_eq!(
                        checksum_except_id1(&connector, admin.as_mut()),
                        sum_before,
                        "update-one only ever changes id 1"
                    );
                    assert_eq!(rows, calls, "update-one finds id 1 every time");
                }
            }
            Kind::UpdateInlist => {
                let list: Vec<String> = (2..=101).map(|i| format!("${i}")).collect();
                let sql = format!("UPDATE sbtest1 set c=$1 WHERE id IN ({})", list.join(", "));
                let per = rows_per_call(&sql);
                assert!(per <= 100.0 && per > 80.0, "{name}: {per}");
            }
            Kind::Delete => {
                let (calls, rows) = stmt("DELETE FROM sbtest1 WHERE id=$1");
                assert_eq!(calls, events, "{name}");
                assert!(rows <= calls, "{name}");
                assert_eq!(d("del"), rows, "{name}");
            }
            Kind::Insert => {
                assert_eq!(
                    stmt("INSERT INTO sbtest1 (k, c, pad) VALUES ($1, $2, $3)").0,
                    events,
                    "{name}: plain-text insert without id"
                );
                assert_eq!(d("ins"), events, "{name}");
            }
        }
    }
    drop(admin);
    let pid = server.pid();
    server.stop().unwrap();
    assert!(
        postgres_pids_mentioning(&dir.path().to_string_lossy()).is_empty(),
        "server {pid} is gone"
    );
}
