//! `run --instructions` against a real managed MariaDB under Valgrind:
//! each step stores its connection threads' instructions of the measured
//! interval (markers `SELECT ROW_COUNT()` per thread), the background
//! threads' apart (two dumps of every thread through vgdb), and the report
//! shows them. Oracle MySQL is refused in one line before any server
//! starts.

mod common;

use common::cli_runs::{
    counted_report_and_nothing_left, counted_run, export_json, one_line_error, short_run,
};
use common::*;

#[test]
fn mariadb_under_valgrind_counts_connection_and_background_threads() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let results = results_arg(dir.path());
    let results = results.to_str().unwrap();
    let o = counted_run(
        results,
        "point-query",
        &["mariadb@system"],
        &["--events", "60"],
    );
    let out = stdout(&o);
    assert!(
        out.contains("instructions per query (client backends, under Valgrind)"),
        "{out}"
    );
    let doc = export_json(results);
    let steps = doc["runs"][0]["targets"][0]["steps"].as_array().unwrap();
    let point = &steps
        .iter()
        .find(|s| s["name"] == "point-query_range=100")
        .expect("point-query step")["instructions"];
    assert_eq!(point["events"], 60, "{point}");
    assert_eq!(point["statements"], 60, "{point}");
    assert_eq!(point["clients"], 1, "{point}");
    let per_q = point["client_ir"].as_f64().unwrap() / 60.0;
    // A primary-key lookup of MariaDB 10.11 costs tens of thousands of
    // instructions; the bounds catch a marker cycle left in or a lost part.
    assert!(
        (10_000.0..200_000.0).contains(&per_q),
        "{per_q} per point query"
    );
    let marker = point["marker_ir"].as_f64().unwrap();
    assert!(marker > 0.0 && marker < per_q, "marker cycle {marker}");
    // Purge, page cleaner, timers and the main thread; the counter
    // sampler's connection is not among them.
    assert!(point["background_procs"].as_u64().unwrap() >= 1, "{point}");
    assert!(point["background_ir"].as_u64().unwrap() > 0, "{point}");
    let functions = point["functions"].as_array().unwrap();
    assert!(
        functions
            .iter()
            .any(|f| f["name"].as_str().unwrap().starts_with("dispatch_command(")),
        "dispatch_command among the functions"
    );
    counted_report_and_nothing_left(results);
}

#[test]
fn oracle_mysql_is_refused_before_any_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let results = results_arg(dir.path());
    let o = run_tidemark(&short_run(
        results.to_str().unwrap(),
        "point-query",
        &["mysql@8.0"],
        &["--instructions", "--suite", "sysbench"],
    ));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let line = one_line_error(&o);
    assert!(line.contains("Oracle MySQL is not counted"), "{line}");
    assert!(!stdout(&o).contains("starting"), "no server started");
}
