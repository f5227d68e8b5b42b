//! The samplers against a real managed MariaDB and the embedded SQLite:
//! CPU lands on the side (the one mariadbd process, or tidemark's client)
//! that spent it; a run with durable commits stores server CPU per query
//! below the host's, writes and cache flushes for a write test and
//! (almost) no reads for a cached read test; SQLite stores the server
//! metrics as missing with the reason, never as zero.
//!
//! Host-wide counters and tidemark's own process CPU are shared by every
//! test in this binary, so the tests take turns.

mod common;

use common::sampler_checks::{self, export_steps, num};
use common::*;
use tidemark::db::Connector;
use tidemark::db::mysql::MyConnector;

#[test]
fn cpu_is_attributed_to_mariadbd_or_to_the_client() {
    let _turn = serial();
    let dir = server_tempdir();
    let mut server = start_mariadb(dir.path(), "base", &[]);
    let mut conn = MyConnector(server.connect_options()).connect().unwrap();
    // One server thread computes; MariaDB is one process with threads, so
    // that process's CPU is what the statements cost.
    let pid = server.pid();
    let a = sampler_checks::attribute_cpu(
        pid,
        || {
            conn.query_text("SELECT BENCHMARK(2000000, MD5('tidemark'))")
                .unwrap();
        },
        || sampler_checks::proc_cpu_secs(pid),
    );
    sampler_checks::check_attribution(&a);
    // That process is the server.
    assert_eq!(a.server_step.server_procs, Some(1));
    assert!(a.server_step.server_rss_bytes.unwrap() > 16 << 20);
    drop(conn);
    server.stop().unwrap();
}

#[test]
fn a_mariadb_run_with_durable_commits_stores_the_cost_per_query() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let steps = sampler_checks::run_point_query_and_update_index(
        results,
        &[
            "--target",
            "mariadb@system",
            "-c",
            "innodb_flush_log_at_trx_commit=1",
        ],
    );
    for s in &steps {
        let name = s["name"].as_str().unwrap();
        for row in s["host_seconds"].as_array().unwrap() {
            assert_eq!(row["server_procs"], 1, "{name}: one mariadbd");
        }
    }
}

#[test]
fn sqlite_stores_server_metrics_as_missing_with_the_reason() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let target = format!("sqlite:{}", dir.path().join("bench.db").display());
    let o = run_tidemark(&[
        "run",
        "--results",
        results,
        "--target",
        &target,
        "--tests",
        "point-query",
        "--table-size",
        "2000",
        "--read-secs",
        "1",
        "--warmup-secs",
        "0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let hw = &export_steps(results)[0]["hw"];
    eprintln!("{hw}");
    for key in ["scpupq", "srkbpq", "rss", "server_cpu_pct", "server_rkbps"] {
        assert!(hw[key].is_null(), "{key} is missing, not zero: {hw}");
    }
    let why = hw["missing"]["server"].as_str().unwrap_or_default();
    assert!(why.contains("embedded SQLite"), "{hw}");
    // The work runs in the client threads: host and client CPU are there.
    assert!(num(hw, "cpupq") > 0.0 && num(hw, "ccpupq") > 0.0, "{hw}");
    // The store itself holds NULL, not 0.
    let db = rusqlite::Connection::open(dir.path().join("results/results.db")).unwrap();
    let stored: Option<f64> = db
        .query_row("SELECT server_cpu_pct FROM step_metrics", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, None);
}
