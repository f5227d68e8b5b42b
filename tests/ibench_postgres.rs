//! The Insert Benchmark against a real managed PostgreSQL, checked from the
//! server's side: row counts, indexes, plans, the connections each role
//! holds (pg_stat_activity), and an SLA failure caused by a lock.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::cli_runs::{Watched, export_json};
use common::ibench_checks::{self, with_others_share};
use common::*;
use tidemark::db::{Conn, Connector, Dialect};
use tidemark::runner::run_roles;
use tidemark::workload::ibench::{StepKind, housekeeping};

// The tests here measure rates, so they take turns (`serial`): a
// concurrent test's server would make the machine busy, not the server
// under test.

/// Connections of tidemark's role threads: application name → backend pid.
fn role_connections(admin: &mut dyn Conn) -> Vec<(String, String)> {
    admin
        .query_text(
            "SELECT application_name, pid::text FROM pg_stat_activity \
             WHERE application_name LIKE 'tidemark/%' ORDER BY 1",
        )
        .unwrap()
        .into_iter()
        .map(|r| (r[0].clone().unwrap(), r[1].clone().unwrap()))
        .collect()
}

#[test]
fn every_step_does_its_work_as_the_server_sees_it() {
    let _serial = serial();
    let dir = server_tempdir();
    let mut server = start_pg(dir.path(), &[]);
    let connector = PgConnector(server.connect_options());
    let mut admin = connector.connect().unwrap();
    let (ib, steps) = ibench_checks::set_up(admin.as_mut(), Dialect::Postgres);
    let cancel = AtomicBool::new(false);
    let mut rows_after_lx = 0;
    for (i, step) in steps.iter().enumerate() {
        if step.name == "qr100" {
            let notes =
                housekeeping::run(&connector, &ib.tables(), Duration::ZERO, &cancel).unwrap();
            assert!(notes.is_empty(), "{notes:?}");
            // Vacuum made the covering indexes usable as index-only scans.
            let plans = ib.explain(step, admin.as_mut());
            ibench_checks::check_range_plans(&plans, |plan, index| {
                assert!(
                    plan.contains(&format!("Index Only Scan using pi1_{index}")),
                    "{plan}"
                );
            });
        }
        let plan = ib.roles_plan(step, i as u32, "test");
        // While qr100 runs, watch the connections from the server's side.
        let watching = AtomicBool::new(step.name == "qr100");
        let ((r, seen), others) = with_others_share(Some(server.pid()), || {
            std::thread::scope(|s| {
                let watcher = s.spawn(|| {
                    let mut conn = connector.connect().unwrap();
                    let mut seen: Vec<Vec<(String, String)>> = Vec::new();
                    while watching.load(Ordering::Relaxed) {
                        let now = role_connections(conn.as_mut());
                        if now.len() == 8 {
                            seen.push(now);
                        }
                        std::thread::sleep(Duration::from_millis(150));
                    }
                    seen
                });
                let r = run_roles(plan, &connector, &cancel, &mut |_| {}).unwrap();
                watching.store(false, Ordering::Relaxed);
                (r, watcher.join().unwrap())
            })
        });
        ibench_checks::check_step(&ib, admin.as_mut(), step, &r, &mut rows_after_lx, others);
        if matches!(step.kind, StepKind::CreateIndexes) {
            for t in ib.tables() {
                let names = admin
                    .query_text(&format!(
                        "SELECT indexname FROM pg_indexes WHERE tablename = '{t}' ORDER BY 1"
                    ))
                    .unwrap();
                let names: Vec<String> = names.into_iter().map(|r| r[0].clone().unwrap()).collect();
                assert_eq!(
                    names,
                    [
                        format!("{t}_marketsegment"),
                        format!("{t}_pdc"),
                        format!("{t}_pkey"),
                        format!("{t}_registersegment")
                    ]
                );
            }
        }
        if step.name == "qr100" {
            // One connection per role and client, the same one all step long.
            assert!(seen.len() >= 5, "only {} samples", seen.len());
            let mut pids: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for sample in &seen {
                for (name, pid) in sample {
                    pids.entry(name.clone()).or_default().insert(pid.clone());
                }
            }
            let names: Vec<&str> = pids.keys().map(String::as_str).collect();
            assert_eq!(
                names,
                [
                    "tidemark/delete/1",
                    "tidemark/delete/2",
                    "tidemark/ids/1",
                    "tidemark/ids/2",
                    "tidemark/insert/1",
                    "tidemark/insert/2",
                    "tidemark/query/1",
                    "tidemark/query/2"
                ]
            );
            for (name, set) in &pids {
                assert_eq!(set.len(), 1, "{name} used {set:?}");
            }
        }
    }

    ibench_checks::check_error_storm(&ib, &steps, &connector);
    drop(admin);
    server.stop().unwrap();
}

/// Waits until `pred` holds on the role connections, up to `secs`.
fn wait_for(
    conn: &mut dyn Conn,
    secs: u64,
    pred: impl Fn(&[(String, String)]) -> bool,
) -> Vec<(String, String)> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let now = role_connections(conn);
        if pred(&now) {
            return now;
        }
        assert!(Instant::now() < deadline, "timed out; saw {now:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pid_of<'a>(conns: &'a [(String, String)], name: &str) -> Option<&'a str> {
    conns
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, p)| p.as_str())
}

#[test]
fn a_lock_fails_the_sla_a_lost_server_fails_the_step_and_the_next_target_goes_on() {
    let _serial = serial();
    let dir = server_tempdir();
    let mut server = start_pg(dir.path(), &[]);
    let opts = server.connect_options();
    let connector = PgConnector(opts.clone());
    let url = common::pg_url(&opts);
    let results = dir.path().join("results");
    let results = results.to_str().unwrap().to_string();
    let args = [
        "run",
        "--suite",
        "ibench",
        "--results",
        &results,
        "--target",
        &url,
        "--target",
        &url,
        "--clients",
        "2",
        "--rows-load",
        "5000",
        "--rows-l-i1",
        "1000",
        "--rows-l-i2",
        "500",
        "--query-secs",
        "3",
        "--insert-rates",
        "100,500",
        "--wait-scale",
        "0",
    ];
    // The server is external to tidemark: its CPU is not stored, so the
    // others' share is measured around the whole run.
    let ((out, ()), others) = with_others_share(Some(server.pid()), || {
        std::thread::scope(|s| {
            let run = s.spawn(|| run_tidemark(&args));
            let mut conn = connector.connect().unwrap();
            // qr100 of the first target: hold a lock on client 1's table.
            let qr = wait_for(conn.as_mut(), 120, |c| {
                pid_of(c, "tidemark/query/1").is_some()
            });
            let qr_query = pid_of(&qr, "tidemark/query/1").unwrap().to_string();
            conn.execute_text("BEGIN").unwrap();
            conn.execute_text("LOCK TABLE pi1 IN ACCESS EXCLUSIVE MODE")
                .unwrap();
            std::thread::sleep(Duration::from_secs(4));
            conn.execute_text("COMMIT").unwrap();
            // qp100: its query thread is a new connection. Cut every role's.
            wait_for(conn.as_mut(), 60, |c| {
                pid_of(c, "tidemark/query/1").is_some_and(|p| p != qr_query)
            });
            std::thread::sleep(Duration::from_millis(700));
            conn.query_text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name LIKE 'tidemark/%'",
            )
            .unwrap();
            (run.join().unwrap(), ())
        })
    });
    let err = stderr(&out);
    let text = stdout(&out);
    eprintln!("{err}\n{text}");
    assert_eq!(out.status.code(), Some(1), "a target failed: {err}\n{text}");
    let qr_line = err
        .lines()
        .find(|l| l.contains(" qr100 "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(qr_line.contains("SLA FAILED"), "{qr_line}");
    assert!(
        err.contains(
            "qp100 did not finish; skipping the remaining Insert Benchmark steps: qr500, qp500"
        ),
        "{err}"
    );
    assert!(text.contains("background insert rate"), "{text}");

    let doc = export_json(&results);
    let targets = doc["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets[0]["status"], "failed");
    assert_eq!(targets[1]["status"], "finished", "the next target went on");
    let steps = |t: usize| targets[t]["steps"].as_array().unwrap().clone();
    let by_name = |t: usize, n: &str| {
        steps(t)
            .into_iter()
            .find(|s| s["name"] == n)
            .unwrap_or_else(|| panic!("no {n}"))
    };
    assert_eq!(
        steps(0).len(),
        6,
        "l.i0..l.i2, qr100, qp100 stored; the rest skipped"
    );
    let qr = by_name(0, "qr100");
    assert_eq!(qr["status"], "ok");
    let sla = &qr["metrics"]["sla"];
    assert_eq!(sla["failed"], true, "{sla}");
    assert!(sla["secs_below"].as_u64().unwrap() >= 2, "{sla}");
    assert!(sla["max_behind_ms"].as_f64().unwrap() > 2_000.0, "{sla}");
    let qp = by_name(0, "qp100");
    assert_eq!(qp["status"], "failed");
    assert!(
        qp["failure"].as_str().unwrap().contains("connection lost"),
        "{}",
        qp["failure"]
    );
    assert!(
        !qp["per_second"].as_array().unwrap().is_empty(),
        "the partial per-second data is kept"
    );
    assert!(!qp["roles"].as_array().unwrap().is_empty());
    // The comparison report written at the end reads the same verdicts.
    let report: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("results/reports/run-1/report.json")).unwrap(),
    )
    .unwrap();
    let ib = &report["ibench"];
    assert_eq!(ib["query_steps"][0], "qr100");
    let background = ib["background"].as_array().unwrap();
    assert_eq!(background.len(), 2, "{ib}");
    assert_eq!(background[0]["cells"][0]["sla_failed"], true, "{ib}");
    // The second target's verdict is the stored one (checked below).
    assert_eq!(
        background[1]["cells"][0]["sla_failed"],
        by_name(1, "qr100")["metrics"]["sla"]["failed"],
        "{ib}"
    );
    assert_eq!(background[0]["cells"][0]["target"], 200.0);
    // The second target ran every step; its query steps kept their rate
    // (where the machine left them the CPU to).
    assert_eq!(steps(1).len(), 8);
    for s in steps(1) {
        assert_eq!(s["status"], "ok", "{}", s["name"]);
        assert_eq!(s["clients"].as_array().unwrap().len(), 2);
        assert_eq!(
            s["metrics"]["fairness"]["clients"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        if s["name"].as_str().unwrap().starts_with('q') {
            ibench_checks::check_stored_sla_given(&s, others);
        }
    }
    server.stop().unwrap();
}

#[test]
fn suite_all_runs_sysbench_then_the_insert_benchmark() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let out = run_tidemark(&[
        "run",
        "--suite",
        "all",
        "--results",
        results,
        "--tests",
        "point-query",
        "--table-size",
        "2000",
        "--read-secs",
        "0.5",
        "--warmup-secs",
        "0",
        "--clients",
        "2",
        "--rows-load",
        "2000",
        "--rows-l-i1",
        "200",
        "--rows-l-i2",
        "50",
        "--query-secs",
        "1",
        "--insert-rates",
        "100",
        "--wait-scale",
        "0",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = export_json(results);
    let run = &doc["runs"][0];
    assert_eq!(run["suite"], "all");
    assert_eq!(run["params"]["ibench"]["clients"], 2);
    assert_eq!(run["params"]["sysbench"]["table_size"], 2000);
    let names: Vec<&str> = run["targets"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "point-query_range=100",
            "l.i0",
            "l.x",
            "l.i1",
            "l.i2",
            "qr100",
            "qp100"
        ]
    );
    let text = stdout(&out);
    assert!(
        text.contains("point queries") && text.contains("Insert Benchmark"),
        "{text}"
    );
}

#[test]
fn an_interrupted_run_resumes_by_rebuilding_the_tables_it_keeps() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let mut run = Watched::tidemark(&ibench_checks::small_run(results, &[], "3"));
    // qr100 is stored; interrupt qp100 midway.
    run.wait_for(1, |l| l.contains(" qr100 "));
    std::thread::sleep(Duration::from_millis(1_000));
    let status = run.interrupt();
    assert_eq!(status.code(), Some(130), "{:?}", run.rest());
    let export = export_json;
    let started = |doc: &serde_json::Value| -> BTreeMap<String, (String, String)> {
        doc["runs"][0]["targets"][0]["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().to_string(),
                    (
                        s["status"].as_str().unwrap().to_string(),
                        s["started_at"].as_str().unwrap().to_string(),
                    ),
                )
            })
            .collect()
    };
    let before = started(&export(results));
    assert_eq!(before["qp100"].0, "interrupted");
    assert_eq!(before.len(), 6);

    let o = run_tidemark(&["run", "--results", results, "--resume", "1"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    for step in ["l.i0", "l.x", "l.i1", "l.i2"] {
        assert!(
            err.contains(&format!(
                "{step} was measured before: running it again, unstored"
            )),
            "{err}"
        );
    }
    assert!(!err.contains("qr100 was measured before: running"), "{err}");
    let doc = export(results);
    let after = started(&doc);
    assert_eq!(after.len(), 6, "each step stored once");
    for (name, (status, at)) in &after {
        assert_eq!(status, "ok", "{name}");
        if name != "qp100" {
            assert_eq!(at, &before[name].1, "{name} was kept, not measured again");
        }
    }
    let qp = doc["runs"][0]["targets"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "qp100")
        .unwrap()
        .clone();
    ibench_checks::check_stored_sla(&qp);
    assert_eq!(qp["roles"].as_array().unwrap().len(), 4);
}
