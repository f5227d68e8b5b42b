//! `run --instructions` against real managed PostgreSQL servers under
//! Valgrind: each step stores the client backends' instructions of its
//! measured interval (a point query costs tens of thousands, a read-only
//! transaction of sixteen statements over a dozen times as many per event),
//! the background processes' apart, and the report and export show them.
//! The refusals: no Valgrind on the PATH, an external server.

mod common;

use common::cli_runs::{export_json, one_line_error, short_run};
use common::*;

/// The client instructions per statement of step `name` of target `pos`
/// in the export, and the step's whole record.
fn counted<'a>(doc: &'a serde_json::Value, pos: usize, name: &str) -> &'a serde_json::Value {
    let steps = doc["runs"][0]["targets"][pos]["steps"].as_array().unwrap();
    let step = steps
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}"));
    &step["instructions"]
}

#[test]
fn two_servers_under_valgrind_count_each_steps_interval() {
    let _guard = serial();
    if tidemark::server::valgrind::unavailable().is_some() {
        panic!("valgrind is not installed: .ci/run installs Debian's package valgrind");
    }
    let dir = tempfile::tempdir().unwrap();
    let results = results_arg(dir.path());
    let results = results.to_str().unwrap();
    let o = run_tidemark(&short_run(
        results,
        "point-query,read-only_range=10",
        &["pg@system", "pg@system"],
        &["--instructions", "--events", "60", "--suite", "sysbench"],
    ));
    assert_success(&o);
    let out = stdout(&o);
    assert!(
        out.contains("instructions per query (client backends, under Valgrind)"),
        "{out}"
    );
    let doc = export_json(results);
    for pos in 0..2 {
        let point = counted(&doc, pos, "point-query_range=100");
        let rw = counted(&doc, pos, "read-only_range=10");
        assert_eq!(point["events"], 60, "{point}");
        assert_eq!(point["statements"], 60, "{point}");
        // read-only: 16 statements per event (BEGIN, 10 point selects, 4
        // range selects, COMMIT).
        assert_eq!(rw["statements"], 960, "{rw}");
        let per_q = point["client_ir"].as_f64().unwrap() / 60.0;
        // A primary-key lookup of PostgreSQL 15 costs ~44,000 instructions
        // here; the bounds catch a marker cycle left in (x2) or a lost part.
        assert!(
            (20_000.0..100_000.0).contains(&per_q),
            "{per_q} per point query"
        );
        let per_event = rw["client_ir"].as_f64().unwrap() / 60.0;
        assert!(
            per_event > 12.0 * per_q && per_event < 60.0 * per_q,
            "{per_event} per read-only event vs {per_q} per point query"
        );
        // The marker cycle was measured and subtracted, and is small.
        let marker = point["marker_ir"].as_f64().unwrap();
        assert!(
            marker > 0.0 && marker < per_q * 3.0,
            "marker cycle {marker}"
        );
        assert!(point["background_procs"].as_u64().unwrap() >= 4, "{point}");
        let functions = point["functions"].as_array().unwrap();
        assert!(
            functions.iter().any(|f| f["name"] == "PostgresMain"),
            "PostgresMain among the functions"
        );
    }
    // Same binary, same data, same keys: the two servers agree closely
    // (reads on freshly vacuumed tables: no page pruning left by writes).
    let a = counted(&doc, 0, "point-query_range=100")["client_ir"]
        .as_f64()
        .unwrap();
    let b = counted(&doc, 1, "point-query_range=100")["client_ir"]
        .as_f64()
        .unwrap();
    assert!((a / b - 1.0).abs() < 0.03, "A/A point-query {a} vs {b}");
    let report =
        std::fs::read_to_string(std::path::Path::new(results).join("reports/run-1/report.md"))
            .unwrap();
    assert!(
        report.contains("## Instructions per query (Valgrind)"),
        "{report}"
    );
    assert!(report.contains("ran under Valgrind (instruction-count mode)"));
    assert!(report.contains("instruction count, one each"), "{report}");
    assert!(
        pids_mentioning("valgrind", results).is_empty(),
        "no Valgrind process left"
    );
}

#[test]
fn missing_valgrind_and_external_targets_are_refused_before_any_server_starts() {
    let dir = tempfile::tempdir().unwrap();
    let results = results_arg(dir.path());
    let results = results.to_str().unwrap();
    let args = short_run(
        results,
        "point-query",
        &["pg@system"],
        &["--instructions", "--suite", "sysbench"],
    );
    let empty = tempfile::tempdir().unwrap();
    let o = tidemark()
        .args(&args)
        .env("PATH", empty.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let line = one_line_error(&o);
    assert!(
        line.contains("--instructions: valgrind is not installed")
            && line.contains("Debian's package valgrind"),
        "{line}"
    );
    assert!(!stdout(&o).contains("starting"), "no server started");
    let o = run_tidemark(&short_run(
        results,
        "point-query",
        &["postgres://tidemark@127.0.0.1:1/none"],
        &["--instructions", "--suite", "sysbench"],
    ));
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let line = one_line_error(&o);
    assert!(line.contains("external server's processes"), "{line}");
}
