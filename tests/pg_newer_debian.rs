//! PostgreSQL 19 (a pre-release today) and MariaDB 11.8 from a Debian suite newer than this
//! machine's, through a private apt: `pg@19` installs it into the cache on
//! demand (its own C library and loader beside it, the system's apt
//! configuration untouched), `servers available` and `servers list` name
//! it, and it runs a read and a write test next to the system's
//! PostgreSQL, labelled with its pre-release, its server counters read on
//! 19's views. A version no suite carries is a one-line error.
//!
//! Installs go to the tests' shared cache (`/tmp/tidemark-test-cache`), so
//! CI downloads the packages once.

mod common;

use std::process::{Command, Output};

use common::cli_runs::*;
use common::*;

const CACHE: &str = "/tmp/tidemark-test-cache";

fn tm(args: &[&str]) -> Output {
    let mut cmd: Command = tidemark();
    cmd.env("TIDEMARK_CACHE", CACHE)
        .args(args)
        .output()
        .expect("tidemark runs")
}

#[test]
fn pg_19_from_a_newer_debian_suite_installs_and_runs_beside_the_system_one() {
    let _serial = serial();
    let system_lists = std::fs::read_dir("/etc/apt/sources.list.d")
        .map(|d| d.count())
        .unwrap_or(0);
    let o = tm(&["servers", "install", "pg@19"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = tm(&["servers", "list"]);
    let listed = stdout(&o);
    assert!(listed.contains("19"), "{listed}");
    let available = stdout(&tm(&["servers", "available"]));
    let line = available
        .lines()
        .find(|l| l.starts_with("apt 19"))
        .unwrap_or_else(|| panic!("{available}"));
    assert!(line.contains("19"), "{line}");
    // The system's apt configuration is left as it was.
    assert_eq!(
        std::fs::read_dir("/etc/apt/sources.list.d")
            .map(|d| d.count())
            .unwrap_or(0),
        system_lists
    );

    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let args = short_run(
        results,
        "point-query,update-index",
        &["pg@system", "pg@19"],
        &["--suite", "sysbench"],
    );
    let mut cmd = tidemark();
    let o = cmd
        .env("TIDEMARK_CACHE", CACHE)
        .args(&args)
        .output()
        .unwrap();
    assert_success(&o);
    let raw = export_json(results);
    let targets = raw["runs"][0]["targets"].as_array().unwrap();
    let new = targets.iter().find(|t| t["position"] == 1).unwrap();
    let label = new["label"].as_str().unwrap();
    assert!(label.starts_with("pg19"), "{label}");
    let version = new["version"].as_str().unwrap_or_default();
    assert!(version.contains("19"), "{new}");
    for step in new["steps"].as_array().unwrap() {
        assert_eq!(step["status"], "ok", "{step}");
        assert!(step["qps"].as_f64().unwrap() > 0.0, "{step}");
    }
    // The server's own counters were read on 19's statistics views.
    let report = report_json(results, &dir.path().join("report"));
    let server = &report["server"];
    for step in server["steps"].as_array().unwrap() {
        for name in ["blks_hit", "wal_bytes", "checkpoints_timed", "n_live_tup"] {
            let row = step["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["name"] == name)
                .unwrap_or_else(|| panic!("{name} in {step}"));
            assert!(row["values"][1].is_f64(), "{name} on {label}: {row}");
        }
    }
    assert!(postgres_pids_mentioning(results).is_empty());
}

#[test]
fn a_version_no_client_carries_is_one_line() {
    let mut cmd = tidemark();
    let o = cmd
        .env("TIDEMARK_CACHE", CACHE)
        .args(["servers", "install", "pg@42"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("PostgreSQL 42") && err.contains("apt offers no 42"),
        "{err}"
    );
}

#[test]
fn mariadb_11_8_from_a_newer_debian_suite_runs_beside_the_system_one() {
    let _serial = serial();
    let o = tm(&["servers", "install", "mariadb@11.8"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let args = short_run(
        results,
        "point-query,update-index",
        &["mariadb@system", "mariadb@11.8"],
        &["--suite", "sysbench"],
    );
    let o = tidemark()
        .env("TIDEMARK_CACHE", CACHE)
        .args(&args)
        .output()
        .unwrap();
    assert_success(&o);
    let raw = export_json(results);
    let targets = raw["runs"][0]["targets"].as_array().unwrap();
    let new = targets.iter().find(|t| t["position"] == 1).unwrap();
    assert!(new["label"].as_str().unwrap().starts_with("ma118"), "{new}");
    for step in new["steps"].as_array().unwrap() {
        assert_eq!(step["status"], "ok", "{step}");
    }
    assert!(mysqld_pids_mentioning(results).is_empty());
}
