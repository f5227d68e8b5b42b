//! The shared PostgreSQL results store against a real server the test
//! starts: two tidemark processes writing runs into it at once, `push` of
//! a SQLite run (twice: stored once), a report mixing a pushed run and one
//! written directly, and bad input (unreachable store, newer schema, a user
//! without write permission) failing in one line with the source untouched.
//!
//! The benchmark targets are SQLite files, so the only server is the store.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::cli_runs::{Watched, fails_in_one_line, short_run};
use common::{
    PgConnector, assert_success, run_tidemark, scalar, scalar_i64, server_tempdir, start_pg,
    stderr, stdout,
};
use tidemark::db::Connector;

/// The store's URL on `pg` for database `db` as user `user`, with the
/// managed server's password (every test role is given the same one).
fn store_url(pg: &tidemark::server::postgres::ManagedPostgres, user: &str, db: &str) -> String {
    let mut o = pg.connect_options();
    o.user = user.into();
    o.dbname = db.into();
    common::pg_url(&o)
}

/// The JSON export of the store at `url`.
fn export(url: &str, results: &Path) -> serde_json::Value {
    let o = run_tidemark(&[
        "export",
        "--results",
        results.to_str().unwrap(),
        "--store",
        url,
    ]);
    assert_success(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

fn run_uuids(doc: &serde_json::Value) -> Vec<String> {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uuid"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn runs_from_two_processes_pushes_and_a_mixed_report() {
    let dir = server_tempdir();
    let pg = start_pg(dir.path(), &[]);
    let url = store_url(&pg, "tidemark", "tidemark");
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();

    // Two runs written to the store by two processes at once.
    let children: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| {
            let target = format!("sqlite:{}", path(&format!("{name}.db")));
            let args = short_run(
                &path(&format!("results-{name}")),
                "point-query",
                &[&target],
                &["--store", &url, "--no-report"],
            );
            Command::new(env!("CARGO_BIN_EXE_tidemark"))
                .args(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        assert_success(&child.wait_with_output().unwrap());
    }
    let doc = export(&url, Path::new(&path("results-a")));
    let uuids = run_uuids(&doc);
    assert_eq!(uuids.len(), 2, "both runs stored");
    assert_ne!(uuids[0], uuids[1]);
    for run in doc["runs"].as_array().unwrap() {
        assert_eq!(run["status"], "finished");
        assert!(run["origin"].is_null(), "written directly");
        let steps = run["targets"][0]["steps"].as_array().unwrap();
        assert!(!steps.is_empty() && steps.iter().all(|s| s["qps"].as_f64().unwrap() > 0.0));
    }

    // A laptop run in SQLite, pushed twice: stored once.
    let laptop = path("laptop");
    let target = format!("sqlite:{}", path("laptop.db"));
    assert_success(&run_tidemark(&short_run(
        &laptop,
        "point-query",
        &[&target],
        &["--no-report"],
    )));
    // And an Insert Benchmark run: roles, their clients and seconds.
    let mut ibench = common::ibench_checks::small_run(&laptop, &[&target], "1");
    ibench.push("--no-report".into());
    assert_success(&run_tidemark(&ibench));
    let push = || run_tidemark(&["push", "--results", &laptop, "--to", &url]);
    let first = stdout(&push());
    assert!(first.contains("run 1 -> run 3 in "), "{first}");
    assert!(first.contains("run 2 -> run 4 in "), "{first}");
    let second = stdout(&push());
    assert!(second.contains("already (run 3)"), "{second}");
    assert!(second.contains("already (run 4)"), "{second}");
    let doc = export(&url, Path::new(&laptop));
    assert_eq!(run_uuids(&doc).len(), 4, "the second push stored nothing");
    let local = export_local(&laptop);
    for i in 0..2 {
        let pushed = &doc["runs"][2 + i];
        assert_eq!(pushed["uuid"], local["runs"][i]["uuid"]);
        assert_eq!(
            pushed["origin"].as_str().unwrap(),
            laptop,
            "the pushed run says where it came from"
        );
        // Every stored number survives the trip through PostgreSQL.
        assert_eq!(pushed["targets"], local["runs"][i]["targets"]);
    }
    let steps = doc["runs"][3]["targets"][0]["steps"].as_array().unwrap();
    assert!(
        steps
            .iter()
            .any(|s| s["roles"].as_array().is_some_and(|r| !r.is_empty())),
        "the Insert Benchmark's roles were copied"
    );

    // One report over the pushed run and one written directly.
    let out = dir.path().join("report");
    let o = run_tidemark(&[
        "report",
        "--results",
        &laptop,
        "--store",
        &url,
        "3",
        "1",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_success(&o);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let targets = report["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2, "{report}");
    assert!(
        std::fs::read_to_string(out.join("index.html"))
            .unwrap()
            .contains("point-query")
    );

    // Pull brings the shared runs home; pulling again adds nothing.
    let home = path("home");
    let o = run_tidemark(&["pull", "--results", &home, "--from", &url]);
    assert_success(&o);
    assert_eq!(stdout(&o).matches(" -> run ").count(), 4, "{}", stdout(&o));
    let o = run_tidemark(&["pull", "--results", &home, "--from", &url]);
    assert_success(&o);
    assert_eq!(stdout(&o).matches("already").count(), 4, "{}", stdout(&o));
    assert_eq!(run_uuids(&export_local(&home)).len(), 4);
}

fn export_local(results: &str) -> serde_json::Value {
    let o = run_tidemark(&["export", "--results", results]);
    assert_success(&o);
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn bad_stores_fail_in_one_line_and_leave_the_source_alone() {
    let dir = server_tempdir();
    let pg = start_pg(dir.path(), &[]);
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let results = path("results");
    let target = format!("sqlite:{}", path("t.db"));
    assert_success(&run_tidemark(&short_run(
        &results,
        "point-query",
        &[&target],
        &["--no-report"],
    )));
    let before = export_local(&results);
    let quick = Duration::from_secs(15);

    // Nothing listens on port 1.
    let err = fails_in_one_line(
        &[
            "push",
            "--results",
            &results,
            "--to",
            "postgres://someone:secret@127.0.0.1:1/db",
        ],
        &["cannot open the store postgres://someone@127.0.0.1:1/db"],
        quick,
    );
    assert!(!err.contains("secret"), "{err}");

    let admin = PgConnector(pg.connect_options());
    let mut conn = admin.connect().unwrap();
    // A store a newer tidemark wrote.
    conn.execute_text("CREATE DATABASE newer").unwrap();
    let newer = store_url(&pg, "tidemark", "newer");
    assert_success(&run_tidemark(&[
        "runs",
        "--results",
        &results,
        "--store",
        &newer,
    ]));
    let mut o = pg.connect_options();
    o.dbname = "newer".into();
    let mut newer_conn = PgConnector(o).connect().unwrap();
    newer_conn
        .execute_text("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
        .unwrap();
    fails_in_one_line(
        &["push", "--results", &results, "--to", &newer],
        &[
            "written by a newer tidemark (schema 999",
            "upgrade tidemark",
        ],
        quick,
    );

    // A user who may read the store but not write to it.
    let url = store_url(&pg, "tidemark", "tidemark");
    assert_success(&run_tidemark(&[
        "runs",
        "--results",
        &results,
        "--store",
        &url,
    ]));
    let password = pg.connect_options().password.unwrap_or_default();
    for sql in [
        format!("CREATE ROLE reader LOGIN PASSWORD '{password}'"),
        "GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader".to_string(),
    ] {
        conn.execute_text(&sql).unwrap();
    }
    let reader = store_url(&pg, "reader", "tidemark");
    fails_in_one_line(
        &["push", "--results", &results, "--to", &reader],
        &["may not write to", "permission denied"],
        quick,
    );
    assert_eq!(scalar_i64(conn.as_mut(), "SELECT count(*) FROM runs"), 0);
    assert_eq!(scalar(conn.as_mut(), "SELECT count(*) FROM steps"), "0");

    assert_eq!(
        export_local(&results),
        before,
        "the source store is unchanged"
    );
    let o = run_tidemark(&["runs", "--results", &results]);
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn a_run_interrupted_in_a_postgres_store_resumes() {
    let dir = server_tempdir();
    let pg = start_pg(dir.path(), &[]);
    let url = store_url(&pg, "tidemark", "tidemark");
    let results = dir.path().join("results").to_str().unwrap().to_string();
    let target = format!("sqlite:{}", dir.path().join("t.db").display());
    let mut args = short_run(
        &results,
        "update-index,point-query",
        &[&target],
        &["--no-report"],
    );
    let read_secs = args.iter().position(|a| a == "--read-secs").unwrap() + 1;
    args[read_secs] = "6".into();
    // The store comes from the environment, as a lab's job would set it.
    let mut cmd = common::tidemark();
    cmd.args(&args).env("TIDEMARK_STORE", &url);
    let mut run = Watched::spawn(cmd);
    run.wait_for(1, |l| l.starts_with("[1/"));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(run.interrupt().code(), Some(130));
    let doc = export(&url, Path::new(&results));
    assert_eq!(doc["runs"][0]["status"], "interrupted");
    let steps = doc["runs"][0]["targets"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.last().unwrap()["status"], "interrupted");

    let o = run_tidemark(&[
        "run",
        "--results",
        &results,
        "--store",
        &url,
        "--resume",
        "1",
        "--no-report",
    ]);
    assert_success(&o);
    let doc = export(&url, Path::new(&results));
    assert_eq!(doc["runs"].as_array().unwrap().len(), 1);
    assert_eq!(doc["runs"][0]["status"], "finished");
    let steps = doc["runs"][0]["targets"][0]["steps"].as_array().unwrap();
    let names: Vec<(&str, &str)> = steps
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names
            .iter()
            .filter(|(n, _)| n.starts_with("update-index"))
            .count(),
        1,
        "the finished step is not measured again: {names:?}"
    );
    assert!(names.iter().all(|(_, s)| *s == "ok"), "{names:?}");
}
