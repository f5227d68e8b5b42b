//! `--slices` on real servers: two managed PostgreSQL targets take turns
//! slice by slice within each test (A B B A …) on connections kept from
//! slice to slice, as each server's own log shows (a sample of its
//! statements, with their times and server processes); each stored step
//! lists its slices, which add up to the step; the report's interval
//! comes from the slices' pairs and says so. With repetitions, a read test's repetition is the median of
//! its slice pairs' log ratios. By default the targets' clients take
//! short turns inside each slice (`--turn-ms`), which the servers' logs
//! show as runs of one server at a time. Ctrl-C inside one target's slice keeps
//! that slice and stores the target whose turn never came as interrupted.
//! Bad values of `--slices` and `--turn-ms` fail in one line before any
//! server starts.

mod common;

use std::time::Duration;

use common::cli_runs::{Watched, export_json, fails_in_one_line, report_json};
use common::*;

/// A run of point-query executions a server logged with no pause of
/// [`SLICE_GAP`] or more (a slice, or slices back to back): its first and last
/// logged execution (epoch seconds, from the log's `%n` prefix) and the
/// server processes (the client sessions) that ran them.
struct Burst {
    from: f64,
    to: f64,
    pids: std::collections::BTreeSet<String>,
}

/// The pause that ends a [`Burst`], seconds.
const SLICE_GAP: f64 = 0.3;

/// The point-query executions in the server log at `log_path`: when
/// (epoch seconds, from the log's `%n` prefix), in order.
fn executions(log_path: &str) -> Vec<f64> {
    let log = std::fs::read_to_string(log_path).unwrap();
    log.lines()
        .filter(|l| runs_the_point_query(l))
        .filter_map(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .collect()
}

/// The point-query bursts in the server log at `log_path`
/// ([`STATEMENT_LOG`] samples the statements it logs).
fn bursts(log_path: &str) -> Vec<Burst> {
    let log = std::fs::read_to_string(log_path).unwrap();
    let mut out: Vec<Burst> = Vec::new();
    for line in log.lines().filter(|l| runs_the_point_query(l)) {
        // "%n [%p]" prefix: epoch seconds with milliseconds, then the pid.
        let Some(at) = line
            .split_whitespace()
            .next()
            .and_then(|w| w.parse::<f64>().ok())
        else {
            continue;
        };
        let pid = line.split('[').nth(1).and_then(|r| r.split(']').next());
        let pid = pid.unwrap_or_default().to_string();
        match out.last_mut() {
            Some(b) if at - b.to < SLICE_GAP => {
                b.to = at;
                b.pids.insert(pid);
            }
            _ => out.push(Burst {
                from: at,
                to: at,
                pids: [pid].into(),
            }),
        }
    }
    assert!(!out.is_empty(), "{log_path}: {log}");
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

/// Server settings that log a sample of the statements (2 %, about every
/// 50th) with a millisecond timestamp and the pid ([`bursts`] reads them).
const STATEMENT_LOG: &[&str] = &[
    "-c",
    "log_min_duration_sample=0",
    "-c",
    "log_statement_sample_rate=0.02",
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
    let out = sliced_pair_run(
        results,
        "4",
        &[&["--seed", "5", "--turn-ms", "0"][..], STATEMENT_LOG].concat(),
    );
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

    // From the servers' side (a sample of the statements each logged):
    // each server ran the point query in bursts, one per turn (a slice, or
    // two back to back), on the same client session throughout (the
    // connections are kept from slice to slice, not opened anew), and the
    // bursts spelled out slice by slice (1 s each; each server's first
    // burst has the 0.5 s warm-up too) interleave in the same order.
    let mut seen = Vec::new();
    for (pos, t) in targets.iter().enumerate() {
        let bursts = bursts(t["extra"]["log"].as_str().unwrap());
        for (k, b) in bursts.iter().enumerate() {
            assert_eq!(b.pids, bursts[0].pids, "slice connections kept");
            let warm_up = if k == 0 { 0.5 } else { 0.0 };
            let slices = (b.to - b.from - warm_up).round() as usize;
            seen.extend(std::iter::repeat_n((b.from, pos), slices));
        }
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

#[test]
fn targets_take_short_turns_inside_each_slice() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    // Turns of 200 ms, long enough for a 2 % sample of the statements to
    // show each one in the servers' logs (the default is 10 ms).
    let out = sliced_pair_run(
        results,
        "2",
        &[&["--turn-ms", "200"][..], STATEMENT_LOG].concat(),
    );
    assert_success(&out);
    let raw = export_json(results);
    let targets = raw["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    assert_eq!(raw["runs"][0]["params"]["turn_ms"], 200);
    // Stored: 4 slices of half a second of each target's own turns, the
    // same slice on both started together, each slice's wall time the
    // turns of both (and their warm-ups); the step's turns are its slices'.
    let mut wall = Vec::new();
    for t in targets {
        let step = &t["steps"][0];
        let slices = step["slices"].as_array().unwrap();
        assert_eq!(slices.len(), 4, "{step}");
        for s in slices {
            let (secs, w) = (
                s["secs"].as_f64().unwrap(),
                s["wall_secs"].as_f64().unwrap(),
            );
            assert!((0.5..0.6).contains(&secs), "{s}");
            assert!(w > 2.0 * secs && w < 3.0 * secs, "{s}");
            assert!((3..=4).contains(&s["turns"].as_u64().unwrap()), "{s}");
            assert!(s["warm_statements"].as_u64().unwrap() > 0, "{s}");
        }
        wall.push(
            slices
                .iter()
                .map(|s| (s["started_at"].clone(), s["wall_secs"].clone()))
                .collect::<Vec<_>>(),
        );
        let turns = &step["metrics"]["turns"];
        assert_eq!(turns["turn_ms"], 200.0, "{step}");
        let count: u64 = slices.iter().map(|s| s["turns"].as_u64().unwrap()).sum();
        assert_eq!(turns["count"], count, "{step}");
    }
    assert_eq!(wall[0], wall[1], "each slice ran on both at once");
    // From the servers' side: the two servers' sampled executions,
    // merged in time, come in runs of one server at a time, each a turn
    // (at most 200 ms, and its 5 ms warm-up), never both at once: about
    // three turns each per slice, the first slice's warm-up turns too.
    let mut seen: Vec<(f64, usize)> = Vec::new();
    for (pos, t) in targets.iter().enumerate() {
        let log = t["extra"]["log"].as_str().unwrap();
        seen.extend(executions(log).into_iter().map(|at| (at, pos)));
    }
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    // The log's times are to the millisecond: one turn's last execution
    // and the next turn's first can share one. Such a tie is ordered to
    // continue the run before it (either order is one server at a time).
    let mut runs: Vec<(f64, f64, usize)> = Vec::new();
    for tie in seen.chunk_by(|a, b| a.0 == b.0) {
        let current = runs.last().map(|r| r.2);
        let mut tie = tie.to_vec();
        tie.sort_by_key(|&(_, pos)| Some(pos) != current);
        for (at, pos) in tie {
            match runs.last_mut() {
                Some(r) if r.2 == pos => r.1 = at,
                _ => runs.push((at, at, pos)),
            }
        }
    }
    assert!(runs.len() >= 20, "{} runs: {runs:?}", runs.len());
    let mut spans: Vec<f64> = runs.iter().map(|r| r.1 - r.0).collect();
    spans.sort_by(f64::total_cmp);
    let median = spans[spans.len() / 2];
    assert!(
        (0.12..0.25).contains(&median),
        "median turn {median} s: {runs:?}"
    );
    // No run is shorter than a fraction of a turn except at its ends: the
    // servers never ran at the same time.
    let short = runs[1..runs.len() - 1]
        .iter()
        .filter(|r| r.1 - r.0 < 0.05)
        .count();
    assert!(short <= 2, "{short} short runs: {runs:?}");
    assert!(postgres_pids_mentioning(results).is_empty());
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
            STATEMENT_LOG,
        ]
        .concat(),
    );
    assert_success(&out);
    let raw = export_json(results);
    let targets = raw["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 4);
    assert_eq!(raw["runs"][0]["params"]["interleave"], "together");
    // From the servers' side, per repetition: both servers ran the point
    // query in one burst, slice after slice with no pause (alternating,
    // each would pause for the other's turn), from and to within a
    // fraction of a second of each other.
    for rep in 0..2 {
        let log = |pos: u64| {
            let t = targets
                .iter()
                .find(|t| t["position"] == pos && t["repetition"] == rep)
                .unwrap();
            bursts(t["extra"]["log"].as_str().unwrap())
        };
        let (a, b) = (log(0), log(1));
        assert_eq!((a.len(), b.len()), (1, 1), "repetition {rep}: no pause");
        assert!(
            (a[0].from - b[0].from).abs() < 0.3 && (a[0].to - b[0].to).abs() < 0.3,
            "repetition {rep}: {:?} {:?}",
            (a[0].from, a[0].to),
            (b[0].from, b[0].to)
        );
        assert!(a[0].to - a[0].from > 4.0, "four slices of 1 s");
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
    fails_in_one_line(
        &["run", "--turn-ms", "2000"],
        &["--turn-ms 2000", "give 1 to 1000"],
        within,
    );
    fails_in_one_line(
        &[
            "run",
            "--turn-ms",
            "20",
            "--interleave",
            "together",
            "--target",
            "pg@system",
            "--target",
            "pg@system",
        ],
        &["--turn-ms 20", "pass --interleave steps"],
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
/// (`log_statement=all` or sampled; EXPLAIN and the load are simple queries, the
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
    args.extend(["--no-report", "--turn-ms", "0"]);
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

#[test]
fn kept_connections_are_lent_again_and_a_lost_one_is_not() {
    use std::sync::Arc;
    use tidemark::db::kept::KeptConnections;
    use tidemark::db::{Connector, ErrorKind};

    let _serial = serial();
    let dir = server_tempdir();
    let server = start_pg(dir.path(), &[]);
    let opts = server.connect_options();
    let kept = KeptConnections::new(Arc::new(PgConnector(opts.clone())));
    let pid = |conn: &mut dyn tidemark::db::Conn| scalar(conn, "SELECT pg_backend_pid()");
    let prepared = "SELECT count(*) FROM pg_prepared_statements";

    // Given back and lent again: the same server session, its statement
    // not prepared a second time.
    let mut a = kept.connect().unwrap();
    let first = pid(a.as_mut());
    let stmt = a.prepare("SELECT 1").unwrap();
    drop(a);
    assert_eq!(kept.idle(), 1);
    let mut b = kept.connect().unwrap();
    assert_eq!(pid(b.as_mut()), first);
    assert_eq!(b.prepare("SELECT 1").unwrap(), stmt);
    assert_eq!(scalar(b.as_mut(), prepared), "1");
    assert_eq!(b.execute(stmt, &[]).unwrap(), 1);

    // Its session ended by the server: the connection is not given back,
    // and the next client gets a new session.
    let mut admin = PgConnector(opts).connect().unwrap();
    admin
        .execute_text(&format!("SELECT pg_terminate_backend({first})"))
        .unwrap();
    let gone = format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {first}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while scalar(admin.as_mut(), &gone) != "0" {
        assert!(std::time::Instant::now() < deadline, "the session ends");
        std::thread::sleep(Duration::from_millis(20));
    }
    let lost = b.execute(stmt, &[]).unwrap_err();
    assert_eq!(lost.kind, ErrorKind::Connection, "{lost}");
    drop(b);
    assert_eq!(kept.idle(), 0);
    let mut c = kept.connect().unwrap();
    assert_ne!(pid(c.as_mut()), first);
    drop(c);

    // An event loop's connections are kept the same way.
    let mut m = kept.connect_mux().expect("PostgreSQL multiplexes").unwrap();
    let mux_pid = pid(m.as_conn());
    drop(m);
    let mut m = kept.connect_mux().unwrap().unwrap();
    assert_eq!(pid(m.as_conn()), mux_pid);
}
