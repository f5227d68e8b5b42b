//! The Insert Benchmark's metrics row as the reference defines it (C.1),
//! checked against a real run's raw data: `maxop` is the largest response
//! time of the step's main operation (inserts in load steps, the index
//! build in l.x, queries in q steps) in seconds; `p50`/`p99` are client 1's
//! per-second rates sorted from the highest, at 50 % and 99 % of its full
//! seconds; `dbgb1` is the database's size and `dbgb2` the whole data
//! directory's. The report (report.json), the store and the terminal use
//! the one definition the step stored.

mod common;

use common::cli_runs::{export_json, report_json};
use common::ibench_checks::small_run;
use common::*;

/// The rate that `pct` % of `rates` met or exceeded: sorted from the
/// highest, the value at position round(pct · n / 100) (1-based).
fn from_the_top(rates: &[f64], pct: f64) -> f64 {
    let mut v = rates.to_vec();
    v.sort_by(|a, b| b.total_cmp(a));
    let pos = ((pct / 100.0) * v.len() as f64).round() as usize;
    v[pos.clamp(1, v.len()) - 1]
}

#[test]
fn the_metrics_row_is_the_references_from_raw_seconds_and_histograms() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    // Query steps of 12 s: client 1 has enough full seconds for p50/p99.
    let out = run_tidemark(&small_run(results, &[], "12"));
    assert!(out.status.success(), "{}", stderr(&out));
    let raw = export_json(results);
    let steps = raw["runs"][0]["targets"][0]["steps"].as_array().unwrap();
    let report_dir = dir.path().join("report");
    let report = report_json(results, &report_dir);
    let columns: Vec<&str> = tidemark::report::ibench::METRIC_COLUMNS.to_vec();
    let col = |row: &serde_json::Value, name: &str| -> Option<f64> {
        let i = columns.iter().position(|c| *c == name).unwrap();
        row[i].as_f64()
    };
    let mut checked_percentiles = 0;
    for step in steps {
        let name = step["name"].as_str().unwrap();
        let table = report["ibench"]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["step"] == name)
            .unwrap_or_else(|| panic!("no metrics row for {name}"));
        let row = &table["rows"][0][1];
        let (role, by_rows) = match name {
            "l.x" => ("index", true),
            n if n.starts_with('q') => ("query", false),
            _ => ("insert", true),
        };
        let r = step["roles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["role"] == role)
            .unwrap_or_else(|| panic!("{name} has no {role} role"));
        // maxop: the main operation's largest response time, in seconds.
        let max_us = r["latency_us"]["max"].as_f64().unwrap();
        let maxop = col(row, "maxop").unwrap();
        assert!(
            (maxop - max_us / 1e6).abs() <= 1e-9 + max_us / 1e6 * 1e-3,
            "{name}: maxop {maxop} vs the {role} histogram's max {max_us} µs"
        );
        let others_max = step["roles"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["role"] != role)
            .filter_map(|o| o["latency_us"]["max"].as_f64())
            .fold(0.0, f64::max);
        if others_max > max_us * 1.01 {
            assert!(
                maxop < others_max / 1e6,
                "{name}: maxop must not be another role's"
            );
        }
        // p50/p99: client 1's full seconds, highest first.
        let secs = step["secs"].as_f64().unwrap();
        let rates: Vec<f64> = r["per_second"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["client"] == 0 && s["sec"].as_f64().unwrap() + 1.0 <= secs + 0.05)
            .map(|s| s[if by_rows { "rows" } else { "events" }].as_f64().unwrap())
            .collect();
        if rates.len() >= 10 && role != "index" {
            assert_eq!(
                col(row, "p50"),
                Some(from_the_top(&rates, 50.0)),
                "{name} p50"
            );
            assert_eq!(
                col(row, "p99"),
                Some(from_the_top(&rates, 99.0)),
                "{name} p99"
            );
            checked_percentiles += 1;
        } else {
            assert_eq!(col(row, "p50"), None, "{name}: too few seconds for p50");
        }
        // dbgb1: the database; dbgb2: the whole data directory, larger.
        let (db1, db2) = (col(row, "dbgb1").unwrap(), col(row, "dbgb2").unwrap());
        assert!(db1 > 0.0 && db2 > db1, "{name}: dbgb1 {db1}, dbgb2 {db2}");
    }
    assert_eq!(
        checked_percentiles, 2,
        "qr100 and qp100 have 12 full seconds"
    );
}
