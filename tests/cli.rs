//! The tidemark binary as a user runs it: a short run end to end, export,
//! bad input with one-line errors that lose nothing stored, and Ctrl-C.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;
use tidemark::db::Connector;

/// Arguments of a very short run into `results`.
fn short_run<'a>(results: &'a str, tests: &'a str) -> Vec<&'a str> {
    vec![
        "run",
        "--results",
        results,
        "--tests",
        tests,
        "--table-size",
        "2000",
        "--read-secs",
        "0.5",
        "--write-secs",
        "0.5",
        "--warmup-secs",
        "0",
    ]
}

fn export_json(results: &str) -> serde_json::Value {
    let o = run_tidemark(&["export", "--format", "json", "--results", results]);
    assert!(o.status.success(), "export failed: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("export is JSON")
}

fn step_count(doc: &serde_json::Value) -> usize {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["targets"].as_array().unwrap())
        .map(|t| t["steps"].as_array().unwrap().len())
        .sum()
}

#[test]
fn a_short_run_stores_results_that_export_and_runs_show() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let o = run_tidemark(&short_run(results, "point-query,read-only_range=10,insert"));
    assert!(
        o.status.success(),
        "run failed: {}\n{}",
        stderr(&o),
        stdout(&o)
    );
    let out = stdout(&o);
    assert!(
        out.contains("point queries") && out.contains("writes"),
        "{out}"
    );

    // The run writes its comparison report and says where.
    let index = std::path::Path::new(results).join("reports/run-1/index.html");
    assert!(
        out.contains(&format!("report: {}", index.display())),
        "{out}"
    );
    assert!(index.is_file() && index.with_file_name("report.md").is_file());

    let doc = export_json(results);
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "finished");
    let target = &run["targets"][0];
    assert_eq!(target["dbms"], "postgres");
    assert!(target["version"].as_str().unwrap().contains("PostgreSQL"));
    let steps = target["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3);
    for s in steps {
        for key in ["name", "group", "reported", "qps", "tps", "errors"] {
            assert!(!s[key].is_null(), "step has {key}: {s}");
        }
        assert!(s["qps"].as_f64().unwrap() > 0.0);
        assert!(s["latency_us"]["p50"].as_u64().unwrap() > 0);
        assert!(
            s["latency_us"]["p99"].as_u64().unwrap() >= s["latency_us"]["p50"].as_u64().unwrap()
        );
        assert!(s["latency_us"]["max"].as_u64().unwrap() > 0);
    }
    let ro = steps
        .iter()
        .find(|s| s["name"] == "read-only_range=10")
        .unwrap();
    let ratio = ro["qps"].as_f64().unwrap() / ro["tps"].as_f64().unwrap();
    assert!(
        (ratio - 16.0).abs() < 1e-6,
        "QPS counts BEGIN and COMMIT: {ratio}"
    );
    assert!(
        !ro["plans"].as_array().unwrap().is_empty(),
        "EXPLAIN output is stored with the step"
    );

    let csv = run_tidemark(&["export", "--format", "csv", "--results", results]);
    assert!(csv.status.success());
    assert_eq!(stdout(&csv).lines().count(), 4, "header + 3 steps");

    let runs = run_tidemark(&["runs", "--results", results]);
    assert!(runs.status.success());
    assert!(stdout(&runs).contains("finished"), "{}", stdout(&runs));
    assert!(
        postgres_pids_mentioning(results).is_empty(),
        "no server is left behind"
    );
}

/// Every bad input fails with exit code != 0 and a one-line error naming
/// the problem, and the run already stored is still there afterwards.
#[test]
fn bad_input_gets_one_line_errors_and_loses_nothing() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let o = run_tidemark(&short_run(results, "point-query"));
    assert!(o.status.success(), "{}", stderr(&o));
    let before = step_count(&export_json(results));
    assert_eq!(before, 1);

    let empty_bin = dir.path().join("emptybin");
    std::fs::create_dir_all(&empty_bin).unwrap();
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy_port = busy.local_addr().unwrap().port().to_string();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_url = format!(
        "postgres://tidemark@127.0.0.1:{}/tidemark",
        closed.local_addr().unwrap().port()
    );
    drop(closed);

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--tests", "no-such-test"],
            "unknown sysbench test 'no-such-test'",
        ),
        (vec!["--profile", "enormous"], "unknown profile 'enormous'"),
        (
            vec!["--pg-bindir", empty_bin.to_str().unwrap()],
            "has no postgres",
        ),
        (vec!["--port", &busy_port], "already in use"),
        (vec!["--target", &closed_url], "cannot connect to"),
        (vec!["--target", "oracle@system"], "unknown DBMS 'oracle'"),
    ];
    for (extra, want) in cases {
        let mut args = vec!["run", "--results", results, "--table-size", "100"];
        args.extend(extra.iter());
        let started = Instant::now();
        let o = run_tidemark(&args);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?} must fail");
        assert!(
            err.contains(want),
            "{args:?}: {err:?} should contain {want:?}"
        );
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line: {err:?}"
        );
        assert!(err.starts_with("tidemark: "), "{err:?}");
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{args:?} fails fast"
        );
    }
    assert_eq!(
        step_count(&export_json(results)),
        before,
        "stored results are intact"
    );
}

#[test]
fn an_external_database_with_foreign_sbtest_tables_is_refused() {
    let dir = server_tempdir();
    let mut server = start_pg(dir.path(), &[]);
    let opts = server.connect_options();
    let connector = PgConnector(opts.clone());
    let mut conn = connector.connect().unwrap();
    conn.execute_text("CREATE TABLE sbtest1 (id int primary key, note text)")
        .unwrap();
    conn.execute_text("INSERT INTO sbtest1 VALUES (1, 'somebody else''s data')")
        .unwrap();
    let url = format!("postgres://tidemark@127.0.0.1:{}/tidemark", opts.port);
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();

    let mut args = short_run(results, "point-query");
    args.extend(["--target", url.as_str()]);
    let o = run_tidemark(&args);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("sbtest1") && err.contains("did not create"),
        "{err}"
    );
    assert!(
        err.contains("--reuse-tables") && err.contains("--drop-existing"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err:?}");
    assert_eq!(
        scalar(conn.as_mut(), "SELECT note FROM sbtest1 WHERE id = 1"),
        "somebody else's data",
        "the table is untouched"
    );

    // With --drop-existing the user allows it: tidemark loads its own tables.
    let mut args = short_run(results, "point-query");
    args.extend(["--target", url.as_str(), "--drop-existing"]);
    let o = run_tidemark(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        scalar_i64(conn.as_mut(), "SELECT count(*) FROM sbtest1"),
        2000
    );
    // Tables tidemark created itself are replaced on the next run without flags.
    let o = run_tidemark(
        &short_run(results, "point-query")
            .into_iter()
            .chain(["--target", url.as_str()])
            .collect::<Vec<_>>(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    drop(conn);
    server.stop().unwrap();
}

#[test]
fn ctrl_c_stops_the_server_and_keeps_finished_steps() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    // A short write step, then a long read step (suite order), so the
    // signal lands mid-step.
    let args = [
        "run",
        "--results",
        results,
        "--tests",
        "update-index,point-query",
        "--table-size",
        "2000",
        "--write-secs",
        "0.5",
        "--read-secs",
        "30",
        "--warmup-secs",
        "0",
    ];
    let mut child = tidemark()
        .args(args)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr_pipe = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Wait for the first finished step, then one more second into the next.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("a step finishes");
        if line.starts_with("[1/") {
            break;
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !postgres_pids_mentioning(results).is_empty(),
        "the server runs"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "tidemark exits after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130), "exit code of an interrupted run");
    assert!(
        postgres_pids_mentioning(results).is_empty(),
        "no postmaster is left behind"
    );
    let doc = export_json(results);
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "interrupted");
    let steps = run["targets"][0]["steps"].as_array().unwrap();
    assert!(
        steps.len() >= 2,
        "the finished step and the interrupted one are stored"
    );
    assert_eq!(steps[0]["status"], "ok");
    assert_eq!(steps.last().unwrap()["status"], "interrupted");
    assert!(steps.last().unwrap()["qps"].as_f64().unwrap() > 0.0);
}
