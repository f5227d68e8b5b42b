//! Verdicts on real servers: a planted difference of known, large effect
//! (index scans turned off, so a point query becomes a scan of the table)
//! is flagged slower with an interval from repetitions on fresh servers;
//! the run keeps both servers up and alternates them per test, starts
//! fresh servers for each repetition and stores it as its own row, runs only the suite asked for, and the
//! target with settings of its own carries them in its label. Bad verdict
//! options fail in one line.

mod common;

use common::cli_runs::{export_json, report_json, short_run};
use common::*;

#[test]
fn a_planted_slowdown_is_flagged_slower_with_a_paired_interval() {
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let out = run_tidemark(&[
        "run",
        "--suite",
        "sysbench",
        "--results",
        results,
        "--tests",
        "point-query,random-points_range=10",
        "--table-size",
        "20000",
        "--read-secs",
        "1",
        "--warmup-secs",
        "0.2",
        "--repeat",
        "3",
        "--seed",
        "11",
        "--target",
        "pg@system",
        "--target",
        "pg@system:enable_indexscan=off:enable_bitmapscan=off:enable_indexonlyscan=off",
    ]);
    assert_success(&out);
    let text = stdout(&out);
    // The end-of-run summary is the report's: rQPS with its interval and
    // the verdict, and the group's count.
    assert!(
        text.contains("rel ±95%") && text.contains("slower"),
        "{text}"
    );
    assert!(text.contains(".base:enable_indexscan=off"), "{text}");

    // Stored: two positions × three repetitions, only sysbench steps, the
    // second label naming its settings.
    let raw = export_json(results);
    let targets = raw["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 6, "2 targets × 3 repetitions");
    for t in targets {
        let names: Vec<&str> = t["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["point-query_range=100", "random-points_range=10"]);
    }
    let label = |pos: u64| {
        targets.iter().find(|t| t["position"] == pos).unwrap()["label"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(
        label(1),
        format!(
            "{}:enable_indexscan=off:enable_bitmapscan=off:enable_indexonlyscan=off",
            label(0)
        )
    );
    // Interleaved: in each repetition, each test ran on both targets
    // before the next test started; the repetitions ran one after
    // another, each on servers of its own (six server logs).
    let mut starts: Vec<(String, u64, String)> = targets
        .iter()
        .flat_map(|t| {
            let r = t["repetition"].as_u64().unwrap();
            t["steps"].as_array().unwrap().iter().map(move |s| {
                (
                    s["started_at"].as_str().unwrap().to_string(),
                    r,
                    s["name"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    starts.sort();
    let order: Vec<(u64, &str)> = starts.iter().map(|(_, r, n)| (*r, n.as_str())).collect();
    let expected: Vec<(u64, &str)> = (0..3)
        .flat_map(|r| {
            [
                (r, "point-query_range=100"),
                (r, "point-query_range=100"),
                (r, "random-points_range=10"),
                (r, "random-points_range=10"),
            ]
        })
        .collect();
    assert_eq!(order, expected, "tests interleaved across targets");
    let mut logs: Vec<&str> = targets
        .iter()
        .map(|t| t["extra"]["log"].as_str().unwrap())
        .collect();
    logs.sort_unstable();
    logs.dedup();
    assert_eq!(
        logs.len(),
        6,
        "a fresh server per target and repetition: {logs:?}"
    );

    // The report: one column per target, both cells slower with a t
    // interval from 3 repetitions (variance pooled over the group's two
    // tests) entirely below 1.
    let report_dir = dir.path().join("report");
    let report = report_json(results, &report_dir);
    assert_eq!(report["targets"].as_array().unwrap().len(), 2);
    let point = &report["sysbench"]["groups"][0];
    let mut slower = 0;
    for t in point["tests"].as_array().unwrap() {
        let c = &t["cells"][1];
        assert_eq!(c["n"], 3, "{}", t["name"]);
        let iv = &c["interval"];
        assert_eq!(iv["method"], "pooled-repetitions");
        assert_eq!(iv["n"], 3);
        let (lo, est, hi) = (
            iv["lo"].as_f64().unwrap(),
            iv["estimate"].as_f64().unwrap(),
            iv["hi"].as_f64().unwrap(),
        );
        assert!(lo <= est && est <= hi, "{iv}");
        if c["verdict"] == "slower" {
            assert!(hi < 1.0 && est <= 0.99, "{iv}");
            slower += 1;
        }
    }
    assert!(
        slower >= 1,
        "a point query without index scans is far slower: {}",
        point["summaries"][0]["text"]
    );
    assert!(
        point["summaries"][0]["verdicts"]["lower"].as_u64().unwrap() >= 1,
        "{}",
        point["summaries"][0]
    );
    let csv = std::fs::read_to_string(report_dir.join("report.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for k in ["lo", "hi", "n", "verdict", "method"] {
        assert!(header.contains(&k), "{header:?}");
    }
    assert!(csv.contains(",slower,pooled-repetitions"), "{csv}");
    let md = std::fs::read_to_string(report_dir.join("report.md")).unwrap();
    assert!(
        md.contains(" ±") && md.contains("repetitions on fresh servers"),
        "{md}"
    );

    // The CI gate: the planted slowdown fails `--fail-on slower` with exit
    // 3, one line per slower cell naming the test, target, ratio, interval
    // and method; `--fail-on faster` passes. junit.xml has one failure per
    // slower cell, bencher.json each cell's ratio with its interval.
    let gate_dir = dir.path().join("gate");
    let gate = |rule: &str| {
        run_tidemark(&[
            "report",
            "--results",
            results,
            "-o",
            gate_dir.to_str().unwrap(),
            "--fail-on",
            rule,
        ])
    };
    let o = gate("slower");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    let lines = common::cli_runs::gate_failures(&err);
    assert_eq!(lines.len(), slower, "{err}");
    assert!(
        lines.iter().all(|l| l.contains("pooled repetitions")
            && l.contains(":enable_indexscan=off")
            && l.ends_with("slower")),
        "{err}"
    );
    assert!(err.contains("cell(s) failed (exit 3)"), "{err}");
    let junit = std::fs::read_to_string(gate_dir.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<failure ").count(), slower, "{junit}");
    assert!(junit.contains(&format!("failures=\"{slower}\"")), "{junit}");
    let bencher: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(gate_dir.join("bencher.json")).unwrap())
            .unwrap();
    let key = bencher
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.starts_with("sysbench/point-query_range=100 [") && k.contains("indexscan"))
        .unwrap()
        .clone();
    let rel = &bencher[&key]["relative-throughput"];
    assert!(rel["lower_value"].as_f64().unwrap() <= rel["value"].as_f64().unwrap());
    assert!(rel["value"].as_f64().unwrap() <= rel["upper_value"].as_f64().unwrap());
    assert!(bencher[&key]["throughput"]["value"].as_f64().unwrap() > 0.0);
    let o = gate("faster");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("gate --fail-on faster: passed"));
}

#[test]
fn bad_verdict_options_fail_in_one_line_before_any_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r");
    let results = results.to_str().unwrap();
    for (args, says) in [
        (vec!["run", "--repeat", "0"], "--repeat 0"),
        (vec!["run", "--min-effect", "1.5"], "--min-effect"),
        (vec!["run", "--min-effect", "0"], "--min-effect"),
        (vec!["run", "--interleave", "slices"], "--interleave"),
        (
            vec![
                "run",
                "--interleave",
                "steps",
                "--port",
                "5999",
                "--target",
                "pg@system",
                "--target",
                "pg@system",
            ],
            "--port",
        ),
    ] {
        let mut all = args.clone();
        all.extend(["--results", results]);
        let out = run_tidemark(&all);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert!(!std::path::Path::new(results).join("results.db").exists());
    let out = run_tidemark(&["report", "--results", results, "--min-effect", "200%"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--min-effect"), "{}", stderr(&out));
}

/// `Cpus_allowed_list` of process or thread `path` (`/proc/PID` or
/// `/proc/PID/task/TID`).
fn allowed_cpus(path: &str) -> Option<String> {
    let status = std::fs::read_to_string(format!("{path}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

#[test]
fn servers_and_clients_run_on_the_cpus_given() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap().to_string();
    let mut child = tidemark()
        .args([
            "run",
            "--suite",
            "sysbench",
            "--results",
            &results,
            "--tests",
            "point-query",
            "--table-size",
            "2000",
            "--read-secs",
            "4",
            "--warmup-secs",
            "0",
            "--server-cpus",
            "0",
            "--client-cpus",
            "1",
            "--no-report",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (server, threads) = loop {
        let pids = postgres_pids_mentioning(&results);
        let threads: Vec<String> = std::fs::read_dir(format!("/proc/{}/task", child.id()))
            .map(|d| {
                d.flatten()
                    .filter_map(|t| allowed_cpus(&t.path().display().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        // Wait until the server is up and the clients have started.
        if let Some(&pid) = pids.first()
            && threads.len() > 2
        {
            break (allowed_cpus(&format!("/proc/{pid}")), threads);
        }
        assert!(std::time::Instant::now() < deadline, "no server seen");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let status = child.wait().unwrap();
    assert!(status.success());
    assert_eq!(server.as_deref(), Some("0"), "the server on CPU 0");
    assert!(
        threads.iter().all(|t| t == "1"),
        "every tidemark thread on CPU 1: {threads:?}"
    );
    let raw = export_json(&results);
    let params = &raw["runs"][0]["params"];
    assert_eq!(params["server_cpus"], "0");
    assert_eq!(params["client_cpus"], "1");
    let out = run_tidemark(&["run", "--results", &results, "--server-cpus", "0-99999"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--server-cpus"), "{}", stderr(&out));
}

/// With one client per step and no placement given, the servers and the
/// client share one CPU, said in one line and recorded with the run; with
/// two clients, or `all`, nothing is placed.
#[test]
fn one_client_shares_a_cpu_with_its_server_by_default() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let _serial = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results").display().to_string();
    let run = |extra: &[&str]| {
        let mut more = vec!["--suite", "sysbench", "--no-report"];
        more.extend_from_slice(extra);
        let out = run_tidemark(&short_run(&results, "point-query", &["pg@system"], &more));
        assert_success(&out);
        out
    };
    let out = run(&[]);
    assert!(
        stderr(&out).contains("placement: the servers and the client share CPU"),
        "{}",
        stderr(&out)
    );
    run(&["--threads", "2"]);
    run(&["--server-cpus", "all", "--client-cpus", "all"]);
    let raw = export_json(&results);
    let params = |i: usize| raw["runs"][i]["params"].clone();
    let first = params(0);
    assert_eq!(first["server_cpus"], first["client_cpus"]);
    let cpu: usize = first["server_cpus"].as_str().unwrap().parse().unwrap();
    assert!(cpu < std::thread::available_parallelism().unwrap().get());
    assert!(params(1).get("server_cpus").is_none(), "{}", params(1));
    // `all`: every CPU this process may use, as taskset writes them.
    let all = params(2)["server_cpus"].as_str().unwrap().to_string();
    assert_eq!(params(2)["client_cpus"], all.as_str());
    let allowed = allowed_cpus("/proc/self").unwrap();
    assert_eq!(all, allowed);
}
