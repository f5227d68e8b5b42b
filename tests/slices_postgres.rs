//! `--slices` on real servers: two managed PostgreSQL targets take turns
//! slice by slice within each test (A B B A …), as each server's own log
//! shows (its client sessions' start times, from `log_connections` and
//! `log_disconnections`); each stored step lists its slices, which add up
//! to the step; the report's interval comes from the slices' pairs and
//! says so. With repetitions, a read test's repetition is the median of
//! its slice pairs' log ratios. Ctrl-C inside one target's slice keeps
//! that slice and stores the target whose turn never came as interrupted.
//! Bad values of `--slices` fail in one line before any server starts.

mod common;

use std::time::Duration;

use common::cli_runs::{Watched, export_json, fails_in_one_line, report_json};
use common::*;

/// One client session a server logged: when it connected (ms since the
/// epoch, from the log's `%n` prefix) and how long it lasted (seconds).
fn sessions(log: &str) -> Vec<(f64, f64)> {
    let mut started: std::collections::HashMap<String, f64> = Default::default();
    let mut out = Vec::new();
    for line in log.lines() {
        // "%n [%p] " prefix: epoch seconds with milliseconds, then the pid.
        let mut words = line.split_whitespace();
        let (Some(at), Some(pid)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(at) = at.parse::<f64>() else { continue };
        if line.contains("connection received") {
            started.insert(pid.to_string(), at);
        } else if let Some(rest) = line.split("disconnection: session time: ").nth(1) {
            let time = rest.split_whitespace().next().unwrap_or_default();
            let parts: Vec<f64> = time.split(':').filter_map(|p| p.parse().ok()).collect();
            if parts.len() == 3
                && let Some(&from) = started.get(pid)
            {
                out.push((from, parts[0] * 3600.0 + parts[1] * 60.0 + parts[2]));
            }
        }
    }
    out
}

/// The keys of the report's sysbench cost columns, in their order.
fn cost_keys(report: &serde_json::Value) -> Vec<&str> {
    report["sysbench"]["cost_columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["key"].as_str().unwrap())
        .collect()
}

/// Server settings that log each client session's start and length with
/// a millisecond timestamp and the pid ([`sessions`] reads them).
const SESSION_LOG: &[&str] = &[
    "-c",
    "log_connections=on",
    "-c",
    "log_disconnections=on",
    "-c",
    "log_line_prefix=%n [%p] ",
];

/// `tidemark run` of point-query on two `pg@system` targets in four
/// slices (5000 rows, half a second of warm-up), `read_secs` measured
/// seconds, then `extra`.
fn sliced_pair_run(results: &str, read_secs: &str, extra: &[&str]) -> std::process::Output {
    let mut args = sliced_pair_args(results, read_secs, "pg@system");
    args.extend(extra);
    run_tidemark(&args)
}

/// The arguments of [`sliced_pair_run`], the first target `first`.
fn sliced_pair_args<'a>(results: &'a str, read_secs: &'a str, first: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--suite",
        "sysbench",
        "--results",
        results,
        "--tests",
        "point-query",
        "--table-size",
        "5000",
        "--read-secs",
        read_secs,
        "--warmup-secs",
        "0.5",
        "--slices",
        "4",
        "--target",
        first,
        "--target",
        "pg@system",
    ]
}

#[test]
fn targets_take_turns_slice_by_slice_and_the_interval_pairs_the_slices() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let out = sliced_pair_run(results, "4", &[&["--seed", "5"][..], SESSION_LOG].concat());
    assert_success(&out);

    // Stored: each target's step lists 4 slices of about 1 s that add up
    // to it, and its parameters say it was sliced.
    let raw = export_json(results);
    let targets = raw["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    let mut starts = Vec::new();
    for (pos, t) in targets.iter().enumerate() {
        let step = &t["steps"][0];
        assert_eq!(step["name"], "point-query_range=100");
        assert_eq!(step["params"]["slices"], 4, "{step}");
        let slices = step["metrics"]["slices"].as_array().unwrap();
        assert_eq!(slices.len(), 4, "{step}");
        // The export's own key for them (docs/export.md).
        assert_eq!(step["slices"], step["metrics"]["slices"], "{step}");
        let statements: u64 = slices
            .iter()
            .map(|s| s["statements"].as_u64().unwrap())
            .sum();
        assert_eq!(statements, step["statements"].as_u64().unwrap());
        let secs: f64 = slices.iter().map(|s| s["secs"].as_f64().unwrap()).sum();
        assert!((secs - step["secs"].as_f64().unwrap()).abs() < 1e-6);
        for s in slices {
            let len = s["secs"].as_f64().unwrap();
            assert!((0.9..1.5).contains(&len), "a slice of {len} s");
            starts.push((s["started_at"].as_str().unwrap().to_string(), pos));
        }
    }
    // In the order the client started them: A B B A A B B A.
    starts.sort();
    let order: Vec<usize> = starts.iter().map(|(_, p)| *p).collect();
    assert_eq!(order, [0, 1, 1, 0, 0, 1, 1, 0], "{starts:?}");

    // From the servers' side: each server's client sessions (one client
    // connection per slice, about a second each: the admin, sampler and
    // size connections are far shorter or span the whole step) interleave
    // in the same order.
    let mut seen = Vec::new();
    for (pos, t) in targets.iter().enumerate() {
        let starts = slice_session_starts(t["extra"]["log"].as_str().unwrap(), 4);
        seen.extend(starts.into_iter().map(|at| (at, pos)));
    }
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    let server_order: Vec<usize> = seen.iter().map(|(_, p)| *p).collect();
    assert_eq!(server_order, order, "{seen:?}");

    // The report's interval pairs the slices and says so; with one
    // repetition (one server instance each) it carries no verdict.
    let report = report_json(results, &dir.path().join("report"));
    let cell = &report["sysbench"]["groups"][0]["tests"][0]["cells"][1];
    assert_eq!(cell["interval"]["method"], "paired-slices", "{cell}");
    assert_eq!(cell["interval"]["n"], 4, "{cell}");
    assert_eq!(cell["verdict"], "not verified", "{cell}");
    // The server's and the host's CPU per query pair the same slices:
    // each slice's warm-up is closed apart, so the sampler's measured
    // rows are the slices, one run each.
    let keys = cost_keys(&report);
    for key in ["server_cpu", "cpupq"] {
        let k = keys.iter().position(|x| *x == key).unwrap();
        let iv = &cell["cost_interval"][k];
        assert_eq!(iv["method"], "paired-slices", "{key}: {cell}");
        assert_eq!(iv["n"], 4, "{key}: {cell}");
        assert_eq!(cell["cost_verdict"][k], "not verified", "{key}: {cell}");
    }
    assert!(
        report["interval_method"]
            .as_str()
            .unwrap()
            .contains("slices paired in time")
    );
    assert!(postgres_pids_mentioning(results).is_empty());
}

/// The starts (epoch seconds) of the client sessions of the last `n`
/// slices a server logged: one connection per slice, about a second each
/// (the admin, sampler and size connections are far shorter or span the
/// whole step; the load's may last as long, and the slices come last).
fn slice_session_starts(log_path: &str, n: usize) -> Vec<f64> {
    let log = std::fs::read_to_string(log_path).unwrap();
    let mut starts: Vec<f64> = sessions(&log)
        .into_iter()
        .filter(|(_, secs)| (0.9..2.5).contains(secs))
        .map(|(at, _)| at)
        .collect();
    starts.sort_by(f64::total_cmp);
    assert!(starts.len() >= n, "{log_path}: {log}");
    starts.split_off(starts.len() - n)
}

#[test]
fn together_measures_each_slice_on_every_target_at_once() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let out = sliced_pair_run(
        results,
        "4",
        &[
            &["--interleave", "together", "--repeat", "2"][..],
            SESSION_LOG,
        ]
        .concat(),
    );
    assert_success(&out);
    let raw = export_json(results);
    let targets = raw["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 4);
    assert_eq!(raw["runs"][0]["params"]["interleave"], "together");
    // From the servers' side, per repetition: slice k began on both
    // servers within a fraction of a second (alternating, they are a
    // slice apart), and the two sessions overlapped.
    for rep in 0..2 {
        let log = |pos: u64| {
            let t = targets
                .iter()
                .find(|t| t["position"] == pos && t["repetition"] == rep)
                .unwrap();
            slice_session_starts(t["extra"]["log"].as_str().unwrap(), 4)
        };
        let (a, b) = (log(0), log(1));
        for k in 0..4 {
            assert!(
                (a[k] - b[k]).abs() < 0.3,
                "repetition {rep}, slice {k}: {a:?} {b:?}"
            );
        }
        for k in 1..4 {
            assert!(a[k] - a[k - 1] > 0.9, "slices follow each other: {a:?}");
        }
    }
    // Measured at once, tidemark's own CPU per query counts both targets'
    // clients: no verdict on it; the server's own CPU keeps its verdict.
    let report = report_json(results, &dir.path().join("report"));
    let cell = &report["sysbench"]["groups"][0]["tests"][0]["cells"][1];
    assert_eq!(cell["interval"]["method"], "pooled-repetitions", "{cell}");
    let keys = cost_keys(&report);
    let verdict = |key: &str| {
        let k = keys.iter().position(|x| *x == key).unwrap();
        cell["cost_verdict"][k]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(verdict("client_cpu"), "not verified", "{cell}");
    assert_eq!(verdict("cpupq"), "not verified", "{cell}");
    assert_ne!(verdict("server_cpu"), "not verified", "{cell}");
    // The server serves its client through every measured second: no
    // second reads its CPU as none (a backend reaped while its tree was
    // read once made one).
    for t in targets {
        for row in t["steps"][0]["host_seconds"].as_array().unwrap() {
            if row["phase"] == "measured" {
                let cpu = row["server_cpu_pct"].as_f64().unwrap();
                assert!(cpu > 1.0, "{}: {row}", t["label"]);
            }
        }
    }
    // The first screen says the rates are a shared CPU's.
    let notes = report["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("measured at once")),
        "{notes:?}"
    );
    assert!(postgres_pids_mentioning(results).is_empty());
}

/// The slices' rates (statements per second) of the step of the target
/// at `position` in repetition `rep`, in the order measured.
fn slice_rates(targets: &[serde_json::Value], position: u64, rep: u64) -> Vec<f64> {
    let t = targets
        .iter()
        .find(|t| t["position"] == position && t["repetition"] == rep)
        .unwrap_or_else(|| panic!("no target {position} in repetition {rep}"));
    let mut slices = t["steps"][0]["slices"].as_array().unwrap().clone();
    slices.sort_by_key(|s| s["index"].as_u64());
    slices
        .iter()
        .map(|s| s["statements"].as_f64().unwrap() / s["secs"].as_f64().unwrap())
        .collect()
}

#[test]
fn a_read_tests_repetition_is_the_median_of_its_slice_pairs() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let out = sliced_pair_run(results, "2", &["--repeat", "2", "--no-report"]);
    assert_success(&out);
    let raw = export_json(results);
    let targets = raw["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 4);
    // Each repetition's log ratio: the median of its four slice pairs'
    // (the mean of the middle two), not the log of the ratio of the sums.
    let (mut medians, mut sums) = (Vec::new(), Vec::new());
    for rep in 0..2 {
        let (base, other) = (slice_rates(targets, 0, rep), slice_rates(targets, 1, rep));
        assert_eq!((base.len(), other.len()), (4, 4));
        let logs: Vec<f64> = base.iter().zip(&other).map(|(b, o)| (o / b).ln()).collect();
        medians.push(tidemark::stats::median(&logs).unwrap());
        sums.push((other.iter().sum::<f64>() / base.iter().sum::<f64>()).ln());
    }
    let from_medians = ((medians[0] + medians[1]) / 2.0).exp();
    let report = report_json(results, &dir.path().join("report"));
    let cell = &report["sysbench"]["groups"][0]["tests"][0]["cells"][1];
    assert_eq!(cell["interval"]["method"], "pooled-repetitions", "{cell}");
    assert_eq!(cell["interval"]["n"], 2, "{cell}");
    let estimate = cell["interval"]["estimate"].as_f64().unwrap();
    assert!(
        (estimate - from_medians).abs() < 1e-9,
        "estimate {estimate}, from the slice medians {from_medians}, from the sums {}: {cell}",
        ((sums[0] + sums[1]) / 2.0).exp()
    );
    assert!(postgres_pids_mentioning(results).is_empty());
}

#[test]
fn bad_slice_counts_fail_in_one_line_before_any_server_starts() {
    let within = Duration::from_secs(10);
    fails_in_one_line(
        &["run", "--slices", "0"],
        &["--slices must be at least 1"],
        within,
    );
    fails_in_one_line(
        &["run", "--slices", "30", "--read-secs", "5"],
        &["--slices 30", "give --slices 10 or fewer"],
        within,
    );
    fails_in_one_line(
        &[
            "run",
            "--slices",
            "3",
            "--interleave",
            "servers",
            "--target",
            "pg@system",
            "--target",
            "pg@system",
        ],
        &["--slices 3", "drop --interleave servers"],
        within,
    );
    fails_in_one_line(
        &["run", "--slices", "1", "--interleave", "together"],
        &["--interleave together", "drop --slices 1"],
        within,
    );
}

/// The lines of the server log of the target at `position` (repetition
/// 0) of the first run in `results`, or nothing while it has none.
fn server_log(results: &str, position: usize) -> String {
    let servers = std::path::Path::new(results).join("servers");
    let prefix = format!("run1-t{position}-r0-");
    std::fs::read_dir(&servers)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter_map(|e| std::fs::read_to_string(e.path().join("data.log")).ok())
        .collect()
}

/// Whether a server log line is a client's execution of the point query
/// (`log_statement=all`; EXPLAIN and the load are simple queries, the
/// clients' statements extended-protocol executes).
fn runs_the_point_query(line: &str) -> bool {
    line.contains("execute") && line.contains("SELECT c FROM sbtest")
}

#[test]
fn ctrl_c_between_two_targets_slices_keeps_the_slice_that_ran() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    // Four slices of 4 s; the first target logs its statements, so its
    // first slice's start shows in its log.
    let mut args = sliced_pair_args(results, "16", "pg@system:log_statement=all");
    args.push("--no-report");
    let mut run = Watched::tidemark(&args);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !server_log(results, 0).lines().any(runs_the_point_query) {
        assert!(
            std::time::Instant::now() < deadline,
            "the first slice starts"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Past its warm-up, inside the first target's first slice: the second
    // target has not had its turn.
    std::thread::sleep(Duration::from_millis(1500));
    let status = run.interrupt();
    assert_eq!(status.code(), Some(130), "{:?}", run.rest());
    assert!(postgres_pids_mentioning(results).is_empty());
    assert!(!server_log(results, 1).lines().any(runs_the_point_query));

    let raw = export_json(results);
    let run = &raw["runs"][0];
    assert_eq!(run["status"], "interrupted");
    let targets = run["targets"].as_array().unwrap();
    let first = &targets[0]["steps"][0];
    assert_eq!(first["status"], "interrupted", "{first}");
    let slices = first["slices"].as_array().unwrap();
    assert_eq!(slices.len(), 1, "{first}");
    let secs = slices[0]["secs"].as_f64().unwrap();
    assert!((0.5..3.9).contains(&secs), "the cut slice ran {secs} s");
    assert!(slices[0]["statements"].as_u64().unwrap() > 0, "{first}");
    // The second target's step never ran a slice: stored as interrupted
    // (not failed), with nothing measured, not even a host second.
    let second = targets[1]["steps"].as_array().unwrap();
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(
        second.iter().all(|s| s["status"] == "interrupted"
            && s["statements"].as_u64().unwrap_or(0) == 0
            && s["host_seconds"]
                .as_array()
                .is_none_or(|rows| rows.iter().all(|r| r["phase"] != "measured"))),
        "{second:?}"
    );
    // The report reads what was kept.
    let report = report_json(results, &dir.path().join("report"));
    assert_eq!(report["targets"].as_array().unwrap().len(), 2);
}
