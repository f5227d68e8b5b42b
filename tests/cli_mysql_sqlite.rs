//! The tidemark binary on MariaDB and SQLite targets as a user runs it:
//! short runs end to end with what they store (charset, busy waits, plans),
//! bad input with one-line errors, the refusal of foreign tables, and
//! Ctrl-C leaving no server behind.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::cli_runs::*;
use common::*;
use tidemark::db::Connector;
use tidemark::db::mysql::MyConnector;

#[test]
fn a_short_mariadb_run_stores_charset_plans_and_leaves_no_server() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let args = short_run(
        results,
        "point-query,points-covered-si,write-only,insert",
        &["mariadb@system"],
        &["--mysql-charset", "utf8mb4", "-c", "innodb_io_capacity=500"],
    );
    let o = run_tidemark(&args);
    assert_success(&o);
    assert!(
        mysqld_pids_mentioning(results).is_empty(),
        "no server is left behind"
    );

    let doc = export_json(results);
    let target = &doc["runs"][0]["targets"][0];
    assert_eq!(target["dbms"], "mariadb");
    assert!(
        target["label"].as_str().unwrap().starts_with("ma10"),
        "{target}"
    );
    let charsets = &target["extra"]["session_character_sets"];
    assert_eq!(charsets["character_set_client"], "utf8mb4", "{charsets}");
    assert_eq!(charsets["character_set_results"], "utf8mb4", "{charsets}");
    assert!(
        target["config_text"]
            .as_str()
            .unwrap()
            .contains("innodb_io_capacity = 500")
    );
    let steps = target["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    for s in steps {
        assert_eq!(s["status"], "ok", "{s}");
        assert!(s["qps"].as_f64().unwrap() > 0.0);
    }
    let si = steps
        .iter()
        .find(|s| s["name"] == "points-covered-si_range=100")
        .unwrap();
    let plan = si["plans"][0]["plan"].as_str().unwrap();
    assert!(
        plan.contains("\"key\": \"k_1\""),
        "EXPLAIN names k_1: {plan}"
    );
    let wo = steps
        .iter()
        .find(|s| s["name"] == "write-only_range=10000")
        .unwrap();
    let ratio = wo["qps"].as_f64().unwrap() / wo["tps"].as_f64().unwrap();
    assert!(
        (ratio - 6.0).abs() < 1e-6,
        "BEGIN, 4 writes, COMMIT: {ratio}"
    );
}

#[test]
fn a_short_sqlite_run_stores_busy_waits_and_removes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let db = dir.path().join("bench.db");
    let target = format!("sqlite:{}+wal-full", db.display());
    let args = short_run(
        results,
        "update-index,update-nonindex,scan,insert",
        &[&target],
        &["--threads", "2", "--scan-warm-secs", "0.3"],
    );
    let o = run_tidemark(&args);
    assert_success(&o);
    assert!(!db.exists(), "the file tidemark created is removed");

    let doc = export_json(results);
    let target = &doc["runs"][0]["targets"][0];
    assert_eq!(target["dbms"], "sqlite");
    assert_eq!(target["config_name"], "wal-full");
    assert_eq!(target["settings"]["journal_mode"], "wal", "{target}");
    assert_eq!(target["settings"]["synchronous"], "2", "FULL");
    let steps = target["steps"].as_array().unwrap();
    let waits: u64 = steps
        .iter()
        .filter(|s| s["group"] == "write")
        .map(|s| {
            s["params"]["busy_waits"]
                .as_u64()
                .expect("busy_waits stored")
        })
        .sum();
    assert!(waits > 0, "two writers on SQLite wait for each other");
    let scan = steps
        .iter()
        .find(|s| s["name"] == "scan_range=100")
        .unwrap();
    assert!(
        scan["note"]
            .as_str()
            .unwrap()
            .contains("SQLite has no server")
    );
    assert!(
        scan["plans"][0]["plan"]
            .as_str()
            .unwrap()
            .contains("SCAN sbtest1")
    );
}

#[test]
fn bad_mysql_and_sqlite_input_gets_one_line_errors() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let mut server = start_mariadb(dir.path(), "base", &[]);
    let port = server.port();

    // A basedir without a server binary, and a MySQL 5.5 one (older than
    // tidemark manages).
    let empty = dir.path().join("empty-basedir");
    std::fs::create_dir_all(empty.join("bin")).unwrap();
    let old = dir.path().join("mysql-5.5");
    std::fs::create_dir_all(old.join("bin")).unwrap();
    let fake = old.join("bin/mysqld");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho \"$0  Ver 5.5.62 for linux-glibc2.12 on x86_64 (MySQL Community Server (GPL))\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let wrong_password = format!("mysql://tidemark:wrong@127.0.0.1:{port}/tidemark");
    let empty_target = format!("mysql@{}", empty.display());
    let old_target = format!("mysql@{}", old.display());
    let missing_dir = format!("sqlite:{}/no/such/dir/bench.db", dir.path().display());
    let sqlite_ok = format!("sqlite:{}/ok.db", dir.path().display());

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--target", &empty_target],
            "has no MySQL or MariaDB server binary",
        ),
        (
            vec![
                "--target",
                "mariadb@system",
                "--mysql-basedir",
                empty.to_str().unwrap(),
            ],
            "has no MySQL or MariaDB server binary",
        ),
        (vec!["--target", &old_target], "MySQL 5.5.62 in"),
        (vec!["--target", &wrong_password], "Access denied"),
        (vec!["--target", &missing_dir], "does not exist"),
        (
            vec!["--target", &sqlite_ok, "-c", "cache_sise=10"],
            "unknown SQLite PRAGMA 'cache_sise'",
        ),
        (
            vec!["--target", "mariadb@system", "-c", "innodb_bananas=1"],
            "unknown variable",
        ),
        (
            vec!["--target", "mariadb@system", "--mysql-charset", "klingon"],
            "klingon",
        ),
        (vec!["--target", "mysql@system"], "asks for MySQL"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["run", "--results", results, "--table-size", "100"];
        args.extend(extra.iter());
        fails_in_one_line(&args, &[want], Duration::from_secs(20));
    }
    assert!(!dir.path().join("ok.db").exists(), "nothing was created");

    // A SQLite file with someone else's sbtest1 is refused and kept as is.
    let theirs = dir.path().join("theirs.db");
    {
        let c = rusqlite::Connection::open(&theirs).unwrap();
        c.execute_batch("CREATE TABLE sbtest1 (id INTEGER PRIMARY KEY, note TEXT); INSERT INTO sbtest1 VALUES (1, 'mine')")
            .unwrap();
    }
    let target = format!("sqlite:{}", theirs.display());
    let o = run_tidemark(&short_run(results, "point-query", &[&target], &[]));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("sbtest1") && err.contains("did not create"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    let c = rusqlite::Connection::open(&theirs).unwrap();
    let note: String = c
        .query_row("SELECT note FROM sbtest1 WHERE id = 1", [], |r| r.get(0))
        .unwrap();
    assert_eq!(note, "mine", "the file is untouched");
    assert!(
        mysqld_pids_mentioning(results).is_empty(),
        "no server was started for bad input"
    );

    // An external server with someone else's sbtest1 is refused, untouched.
    let connector = MyConnector(server.connect_options());
    let mut conn = connector.connect().unwrap();
    conn.execute_text("CREATE TABLE sbtest1 (id int primary key, note text)")
        .unwrap();
    conn.execute_text("INSERT INTO sbtest1 VALUES (1, 'not yours')")
        .unwrap();
    let url = mariadb_url(&server.connect_options());
    let o = run_tidemark(&short_run(results, "point-query", &[&url], &[]));
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("sbtest1") && err.contains("--drop-existing"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert_eq!(
        scalar(conn.as_mut(), "SELECT note FROM sbtest1 WHERE id = 1"),
        "not yours"
    );
    // With --drop-existing tidemark loads its own tables and benchmarks them.
    let args = short_run(results, "point-query", &[&url], &["--drop-existing"]);
    let o = run_tidemark(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        scalar_i64(conn.as_mut(), "SELECT count(*) FROM sbtest1"),
        2000
    );
    drop(conn);
    server.stop().unwrap();
}

#[test]
fn ctrl_c_stops_mariadb_and_keeps_finished_steps() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    ctrl_c_mid_step(results, &["mariadb@system"], mysqld_pids_mentioning);
}
