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

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::*;
use tidemark::db::Connector;
use tidemark::db::mysql::MyConnector;
use tidemark::metrics::sampler::{Sampler, SamplerConfig};
use tidemark::metrics::summary::{HostSecond, Phase};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Burns CPU in this (client) process for `secs`.
fn burn(secs: f64) -> u64 {
    let until = Instant::now() + Duration::from_secs_f64(secs);
    let mut x = 1u64;
    while Instant::now() < until {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    x
}

#[test]
fn cpu_is_attributed_to_mariadbd_or_to_the_client() {
    let _turn = serial();
    let dir = server_tempdir();
    let mut server = start_mariadb(dir.path(), "base", &[]);
    let mut conn = MyConnector(server.connect_options()).connect().unwrap();
    let sampler = Sampler::start(SamplerConfig {
        server_pid: Ok(server.pid()),
        devices: Ok(vec![]),
        interval: Duration::from_secs(3600),
    })
    .unwrap();
    sampler.tick(Phase::Warmup);
    // 1: the client computes, the server idles.
    burn(1.0);
    sampler.tick(Phase::Measured);
    // 2: one server thread computes, the client waits for the answer.
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        conn.query_text("SELECT BENCHMARK(2000000, MD5('tidemark'))")
            .unwrap();
    }
    sampler.tick(Phase::Measured);
    let out = sampler.stop();
    let m: Vec<&HostSecond> = out
        .rows
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .collect();
    assert!(m.len() >= 2, "{:?}", out.rows);
    let (client_step, server_step) = (m[0], m[1]);
    let server_cpu = |r: &HostSecond| r.server_cpu_pct.expect("server CPU is read");
    eprintln!(
        "client burns: client {:.0}% server {:.0}%; server computes: client {:.0}% server {:.0}%",
        client_step.client_cpu_pct,
        server_cpu(client_step),
        server_step.client_cpu_pct,
        server_cpu(server_step)
    );
    // Two cores shared with other builds: who got how much of a core
    // varies, which side spent it does not.
    assert!(client_step.client_cpu_pct > 10.0);
    assert!(client_step.client_cpu_pct > 4.0 * server_cpu(client_step));
    assert!(server_cpu(server_step) > 10.0);
    assert!(server_cpu(server_step) > 4.0 * server_step.client_cpu_pct);
    // MariaDB is one process with threads: that process is the server.
    assert_eq!(server_step.server_procs, Some(1));
    assert!(server_step.server_rss_bytes.unwrap() > 16 << 20);
    drop(conn);
    server.stop().unwrap();
}

fn export_steps(results: &str) -> Vec<serde_json::Value> {
    let o = run_tidemark(&["export", "--format", "json", "--results", results]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    doc["runs"].as_array().unwrap().last().unwrap()["targets"][0]["steps"]
        .as_array()
        .unwrap()
        .clone()
}

fn num(v: &serde_json::Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is missing: {v}"))
}

#[test]
fn a_mariadb_run_with_durable_commits_stores_the_cost_per_query() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let o = run_tidemark(&[
        "run",
        "--results",
        results,
        "--target",
        "mariadb@system",
        "-c",
        "innodb_flush_log_at_trx_commit=1",
        "--tests",
        "point-query,update-index",
        "--table-size",
        "20000",
        "--read-secs",
        "3",
        "--write-secs",
        "3",
        "--warmup-secs",
        "1",
    ]);
    assert!(o.status.success(), "{}\n{}", stderr(&o), stdout(&o));
    let steps = export_steps(results);
    assert_eq!(steps.len(), 2);
    for s in &steps {
        let hw = &s["hw"];
        let name = s["name"].as_str().unwrap();
        eprintln!("{name}: {hw}");
        assert_eq!(
            hw["missing"],
            serde_json::json!({}),
            "{name}: nothing missing"
        );
        assert_eq!(hw["rate_basis"], "qps");
        assert_eq!(num(hw, "rate"), num(s, "qps"));
        let (cpupq, scpupq, ccpupq) = (num(hw, "cpupq"), num(hw, "scpupq"), num(hw, "ccpupq"));
        assert!(
            scpupq > 0.0 && scpupq < cpupq,
            "{name}: server {scpupq} < host {cpupq}"
        );
        // The client's CPU is the client's: the sampler's (the process but
        // itself) is close to the runner's per-thread count of its clients.
        let runner = num(s, "client_cpu_us_per_query");
        assert!(
            ccpupq >= 0.8 * runner && ccpupq <= 1.5 * runner + 2.0,
            "{name}: sampler {ccpupq} vs runner {runner} µs/query"
        );
        assert!(num(hw, "dbgb1") > 0.0 && num(hw, "rss") > 0.0);
        for row in s["host_seconds"].as_array().unwrap() {
            assert_eq!(row["server_procs"], 1, "{name}: one mariadbd");
        }
    }
    let write = &steps.iter().find(|s| s["test"] == "update-index").unwrap()["hw"];
    assert!(
        num(write, "wps") > 0.0 && num(write, "f/s") > 0.0,
        "a commit per statement writes and flushes the redo log: {write}"
    );
    assert!(num(write, "wpi") > 0.0);
    let read = &steps.iter().find(|s| s["test"] == "point-query").unwrap()["hw"];
    // The table fits the buffer pool: the server's own reads are (almost)
    // nothing, and the disk's r/s (others share it) is far from one read
    // per query.
    assert!(num(read, "srkbpq") < 0.01, "{read}");
    assert!(num(read, "rpq") < 0.5, "{read}");
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
