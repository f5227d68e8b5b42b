//! The tidemark binary as a user runs it: a short run end to end, export,
//! bad input with one-line errors that lose nothing stored, and Ctrl-C.

mod common;

use std::time::Duration;

use common::cli_runs::*;
use common::*;
use tidemark::db::Connector;

#[test]
fn a_short_run_stores_results_that_export_and_runs_show() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let o = run_tidemark(&short_run(
        results,
        "point-query,read-only_range=10,insert",
        &[],
        &[],
    ));
    assert_success(&o);
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
    let o = run_tidemark(&short_run(results, "point-query", &[], &[]));
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
            vec!["--tests", "point-qurey"],
            "unknown sysbench test 'point-qurey' (did you mean 'point-query'?)",
        ),
        (
            vec!["--target", "pg@system:cx10b"],
            "a config follows a '+' and a setting is ':name=value': write pg@system+cx10b",
        ),
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
        let err = fails_in_one_line(&args, &[want], Duration::from_secs(20));
        assert!(err.starts_with("tidemark: "), "{err:?}");
    }
    // Two servers up at once whose buffer pools (each capped at half of
    // memory) cannot fit together.
    let args = [
        "run",
        "--results",
        results,
        "--table-size",
        "100000000",
        "--interleave",
        "steps",
        "--target",
        "pg@system",
        "--target",
        "pg@system",
    ];
    fails_in_one_line(
        &args,
        &["2 servers up at once", "pass --interleave servers"],
        Duration::from_secs(20),
    );
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
    let url = common::pg_url(&opts);
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();

    let o = run_tidemark(&short_run(results, "point-query", &[&url], &[]));
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
    let o = run_tidemark(&short_run(
        results,
        "point-query",
        &[&url],
        &["--drop-existing"],
    ));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        scalar_i64(conn.as_mut(), "SELECT count(*) FROM sbtest1"),
        2000
    );
    // Tables tidemark created itself are replaced on the next run without flags.
    let o = run_tidemark(&short_run(results, "point-query", &[&url], &[]));
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
    let doc = ctrl_c_mid_step(results, &[], postgres_pids_mentioning);
    let steps = doc["runs"][0]["targets"][0]["steps"].as_array().unwrap();
    assert!(steps.last().unwrap()["qps"].as_f64().unwrap() > 0.0);
}
