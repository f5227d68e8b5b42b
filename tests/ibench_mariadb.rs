//! The Insert Benchmark against a real managed MariaDB, checked from the
//! server's side: row counts, the secondary indexes
//! (information_schema.STATISTICS), the plans of the queries (EXPLAIN
//! FORMAT=JSON), the connections each step opens (the `Connections` status
//! counter) and holds (information_schema.PROCESSLIST), and an error storm.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::ibench_checks::{self, with_others_share};
use common::*;
use tidemark::db::mysql::MyConnector;
use tidemark::db::{Conn, Connector, Dialect};
use tidemark::runner::run_roles;
use tidemark::workload::ibench::client::QueryKind;
use tidemark::workload::ibench::{self, StepKind, housekeeping};

// The tests here measure rates, so they take turns (`serial`).

/// Connection attempts the server has counted since it started.
fn connections_opened(admin: &mut dyn Conn) -> i64 {
    let rows = admin
        .query_text("SHOW GLOBAL STATUS LIKE 'Connections'")
        .unwrap();
    rows[0][1].clone().unwrap().parse().unwrap()
}

/// The sessions of `user` other than `exclude`: (id, statement running).
fn sessions(conn: &mut dyn Conn, user: &str, exclude: &[String]) -> Vec<(String, String)> {
    conn.query_text(&format!(
        "SELECT ID, INFO FROM information_schema.PROCESSLIST \
         WHERE USER = '{user}' AND ID NOT IN ({}) ORDER BY ID",
        exclude.join(",")
    ))
    .unwrap()
    .into_iter()
    .map(|r| (r[0].clone().unwrap(), r[1].clone().unwrap_or_default()))
    .collect()
}

#[test]
fn every_step_does_its_work_as_mariadb_sees_it() {
    let _serial = serial();
    let dir = server_tempdir();
    // Commits write the redo log but do not wait for its fsync: on a disk
    // shared with other work an fsync can stall for half a second, and the
    // rate checks below are about tidemark's pacing and deleter, not the
    // disk (the CLI test runs the durable configuration).
    let mut server = start_mariadb(
        dir.path(),
        "base",
        &[("innodb_flush_log_at_trx_commit", "2")],
    );
    let opts = server.connect_options();
    let user = opts.user.clone();
    let connector = MyConnector(opts);
    let mut admin = connector.connect().unwrap();
    let admin_id = scalar(admin.as_mut(), "SELECT CONNECTION_ID()");
    assert_eq!(
        scalar(admin.as_mut(), "SELECT @@innodb_flush_log_at_trx_commit"),
        "2"
    );
    let (ib, steps) = ibench_checks::set_up(admin.as_mut(), Dialect::Mysql);
    assert_eq!(
        scalar(
            admin.as_mut(),
            "SELECT EXTRA FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'pi1' AND COLUMN_NAME = 'transactionid'"
        ),
        "auto_increment"
    );
    let cancel = AtomicBool::new(false);
    let mut rows_after_lx = 0;
    for (i, step) in steps.iter().enumerate() {
        assert!(ib.step_info(step, i as u32).note.is_none());
        if step.name == "qr100" {
            let notes =
                housekeeping::run(&connector, &ib.tables(), Duration::ZERO, &cancel).unwrap();
            assert!(
                notes.iter().all(|n| n.contains("innodb_idle_flush_pct")),
                "only the setting MariaDB 10.11 lacks: {notes:?}"
            );
        }
        if let StepKind::Query(kind) = step.kind {
            // FORCE INDEX picks the covering index; `using_index` says the
            // rows come from the index alone.
            let plans = ib.explain(step, admin.as_mut());
            match kind {
                QueryKind::Range => ibench_checks::check_range_plans(&plans, |plan, index| {
                    assert!(
                        plan.contains(&format!("\"key\": \"pi1_{index}\"")),
                        "{plan}"
                    );
                    assert!(plan.contains("\"using_index\": true"), "{plan}");
                }),
                QueryKind::Point => {
                    assert_eq!(plans.len(), 1);
                    assert!(plans[0].1.contains("\"key\": \"PRIMARY\""), "{plans:?}");
                }
            }
            // Each range query returns 10 rows, as the server runs it.
            let mut q = String::new();
            for shape in ibench::sql::RangeShape::ALL {
                ibench::sql::write_range_query(
                    &mut q,
                    Dialect::Mysql,
                    "pi2",
                    shape,
                    ibench::sql::Arg::Int(shape.upper() / 3),
                );
                assert_eq!(admin.query_text(&q).unwrap().len(), 10, "{q}");
            }
        }
        let plan = ib.roles_plan(step, i as u32, "test");
        // While qr100 runs, watch the connections from the server's side.
        let watching = AtomicBool::new(step.name == "qr100");
        let mut watch_conn = connector.connect().unwrap();
        let watch_id = scalar(watch_conn.as_mut(), "SELECT CONNECTION_ID()");
        let opened_before = connections_opened(admin.as_mut());
        let ((r, seen), others) = with_others_share(Some(server.pid()), || {
            std::thread::scope(|s| {
                let watcher = s.spawn(|| {
                    let exclude = [admin_id.clone(), watch_id.clone()];
                    let mut seen: Vec<Vec<(String, String)>> = Vec::new();
                    while watching.load(Ordering::Relaxed) {
                        seen.push(sessions(watch_conn.as_mut(), &user, &exclude));
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    seen
                });
                let r = run_roles(plan, &connector, &cancel, &mut |_| {}).unwrap();
                watching.store(false, Ordering::Relaxed);
                (r, watcher.join().unwrap())
            })
        });
        let opened = connections_opened(admin.as_mut()) - opened_before;
        assert_eq!(
            opened,
            2 * step.roles().len() as i64,
            "{}: one connection per role and client",
            step.name
        );
        ibench_checks::check_step(&ib, admin.as_mut(), step, &r, &mut rows_after_lx, others);
        if matches!(step.kind, StepKind::CreateIndexes) {
            for t in ib.tables() {
                let mut names: Vec<String> = admin
                    .query_text(&format!(
                        "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS \
                         WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '{t}'"
                    ))
                    .unwrap()
                    .into_iter()
                    .map(|r| r[0].clone().unwrap())
                    .collect();
                names.sort();
                assert_eq!(
                    names,
                    [
                        "PRIMARY".to_string(),
                        format!("{t}_marketsegment"),
                        format!("{t}_pdc"),
                        format!("{t}_registersegment")
                    ]
                );
            }
        }
        if step.name == "qr100" {
            // The 8 role connections, the same ones all step long.
            let full: Vec<&Vec<(String, String)>> = seen.iter().filter(|s| s.len() == 8).collect();
            assert!(
                full.len() >= 5,
                "only {} full samples of {}",
                full.len(),
                seen.len()
            );
            let most = seen.iter().map(Vec::len).max().unwrap();
            assert_eq!(
                most, 8,
                "never more than one connection per role and client"
            );
            let ids: BTreeSet<&str> = full
                .iter()
                .flat_map(|s| s.iter().map(|(id, _)| id.as_str()))
                .collect();
            assert_eq!(ids.len(), 8, "no role reconnected: {ids:?}");
            // The query threads run all the time: each table's range
            // queries come from one connection.
            let mut queriers: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
            for (id, info) in full.iter().flat_map(|s| s.iter()) {
                for t in ["pi1", "pi2"] {
                    if info.contains(&format!("FROM {t} FORCE INDEX")) {
                        queriers.entry(t).or_default().insert(id);
                    }
                }
            }
            assert_eq!(queriers.len(), 2, "{queriers:?}");
            for (t, set) in &queriers {
                assert_eq!(set.len(), 1, "{t} queried by {set:?}");
            }
            assert_ne!(queriers["pi1"], queriers["pi2"]);
        }
    }

    let r = ibench_checks::check_error_storm(&ib, &steps, &connector);
    let failure = r.failure.clone().unwrap();
    assert!(failure.contains("doesn't exist"), "{failure}");
    drop(admin);
    server.stop().unwrap();
}

#[test]
fn the_cli_runs_every_step_on_managed_mariadb() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let out = run_tidemark(&ibench_checks::small_run(results, &["mariadb@system"], "1"));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("innodb_idle_flush_pct not set"),
        "the housekeeping says what it could not set: {err}"
    );
    let steps = ibench_checks::small_run_steps(results);
    for s in &steps {
        assert!(s["note"].is_null(), "{}", s["note"]);
    }
    let qr = &steps[4];
    let plans = qr["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 3);
    assert!(
        plans.iter().all(|p| p["plan"]
            .as_str()
            .unwrap()
            .contains("\"using_index\": true")),
        "{plans:?}"
    );
    ibench_checks::check_stored_sla(qr);
    assert!(
        mysqld_pids_mentioning(results).is_empty(),
        "the server stopped"
    );
}
