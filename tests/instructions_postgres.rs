//! `run --instructions` against real managed PostgreSQL servers under
//! Valgrind: each step stores the client backends' instructions of its
//! measured interval (a point query costs tens of thousands, a read-only
//! transaction of sixteen statements over a dozen times as many per event),
//! the background processes' apart, and the report and export show them.
//! The refusals: no Valgrind on the PATH, an external server.

mod common;

use common::cli_runs::{
    counted_report_and_nothing_left, counted_run, export_json, one_line_error, short_run,
};
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
    let dir = tempfile::tempdir().unwrap();
    let results = results_arg(dir.path());
    let results = results.to_str().unwrap();
    let o = counted_run(
        results,
        "point-query,read-only_range=10",
        &["pg@system", "pg@system"],
        &["--events", "60"],
    );
    let out = stdout(&o);
    assert!(
        out.contains("instructions per query (client backends, under Valgrind)"),
        "{out}"
    );
    let doc = export_json(results);
    for pos in 0..2 {
        // The quiet counted mode, as the server itself reported its
        // settings: no autovacuum worker and no timed checkpoint inside a
        // counted step.
        let settings = &doc["runs"][0]["targets"][pos]["settings"];
        assert_eq!(settings["autovacuum"], "off", "{settings}");
        assert_eq!(settings["checkpoint_timeout"], "1d", "{settings}");
        assert_eq!(settings["wal_writer_delay"], "10s", "{settings}");
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
    let report = counted_report_and_nothing_left(results);
    assert!(report.contains("ran under Valgrind (instruction-count mode)"));
    assert!(report.contains("instruction count, one each"), "{report}");
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

/// The gate counts instruction verdicts: a planted difference of large,
/// known cost (index scans off, so a point query scans the table) fails
/// `report --fail-on slower` with exit 3 naming the instruction cell; two
/// identical servers (A/A) pass. Both reports' junit.xml pass the JUnit
/// schema (xmllint with the Jenkins xUnit plugin's junit-10.xsd, shipped in
/// tests/fixtures/junit) and bencher.json carries the instruction counts.
#[test]
fn the_gate_fails_a_planted_instruction_regression_and_passes_a_a() {
    let _guard = serial();
    let dir = tempfile::tempdir().unwrap();
    let results = results_arg(dir.path());
    let results = results.to_str().unwrap();
    counted_run(
        results,
        "point-query",
        &[
            "pg@system",
            "pg@system",
            "pg@system:enable_indexscan=off:enable_bitmapscan=off:enable_indexonlyscan=off",
        ],
        // The default 1000 point queries per step: with 60, a backend's
        // first-query costs (catalog caches) moved two identical servers
        // 0.7 % apart, past the read floor.
        &[],
    );
    let doc = export_json(results);
    let label = |pos: usize| {
        doc["runs"][0]["targets"][pos]["label"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (base, twin, planted) = (label(0), label(1), label(2));
    let run_id = doc["runs"][0]["id"].as_i64().unwrap().to_string();
    let gate = |other: &str, out: &std::path::Path, rule: &str| {
        run_tidemark(&[
            "report",
            "--results",
            results,
            "-o",
            out.to_str().unwrap(),
            &format!("{run_id}:{base}"),
            &format!("{run_id}:{other}"),
            "--fail-on",
            rule,
        ])
    };
    let schema = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/junit/junit-10.xsd"
    );
    let xmllint = |dir: &std::path::Path| {
        let junit = dir.join("junit.xml");
        let o = std::process::Command::new("xmllint")
            .args(["--noout", "--schema", schema])
            .arg(&junit)
            .output()
            .expect("xmllint: .ci/setup installs Debian's package libxml2-utils");
        assert!(
            o.status.success(),
            "junit.xml fails the JUnit schema: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        std::fs::read_to_string(junit).unwrap()
    };

    // A/A: no instruction verdict fails; the wall-clock cells (one
    // measurement each) are not verified, i.e. skipped in JUnit.
    let aa = dir.path().join("aa");
    let o = gate(&twin, &aa, "any");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let aa_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(aa.join("report.json")).unwrap()).unwrap();
    eprintln!("A/A: {}", aa_json["instructions"]["tests"][0]["cells"][1]);
    assert!(
        stdout(&o).contains("gate --fail-on any: passed (2 compared cells)"),
        "{}",
        stdout(&o)
    );
    let junit = xmllint(&aa);
    assert_eq!(junit.matches("<failure ").count(), 0, "{junit}");
    assert!(junit.contains("classname=\"instructions."), "{junit}");

    // The planted regression: exit 3, one line for the instruction cell
    // (the wall-clock cell is not verified and does not fail).
    let reg = dir.path().join("regression");
    let o = gate(&planted, &reg, "slower");
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let err = stderr(&o);
    let lines = common::cli_runs::gate_failures(&err);
    assert_eq!(lines.len(), 1, "{err}");
    eprintln!("{}", lines[0]);
    assert!(
        lines[0].contains("instructions point-query_range=100 on ")
            && lines[0].contains(":enable_indexscan=off")
            && lines[0].contains("Ir/q")
            && lines[0].contains("A/A floor")
            && lines[0].ends_with("slower"),
        "{err}"
    );
    let junit = xmllint(&reg);
    assert_eq!(junit.matches("<failure ").count(), 1, "{junit}");
    assert!(
        junit.contains("<skipped "),
        "the unverified wall-clock cell: {junit}"
    );
    let bencher: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reg.join("bencher.json")).unwrap()).unwrap();
    let cell = &bencher[format!("instructions/point-query_range=100 [{planted}]")];
    let rel = &cell["relative-instructions"];
    let (lo, value, hi) = (
        rel["lower_value"].as_f64().unwrap(),
        rel["value"].as_f64().unwrap(),
        rel["upper_value"].as_f64().unwrap(),
    );
    // A scan of 2000 rows costs many times an index lookup.
    assert!(lo <= value && value <= hi && lo > 2.0, "{rel}");
    let base_ir =
        bencher[format!("instructions/point-query_range=100 [{base}]")]["instructions"]["value"]
            .as_f64()
            .unwrap();
    let planted_ir = cell["instructions"]["value"].as_f64().unwrap();
    assert!(
        (planted_ir / base_ir - value).abs() < 1e-6 * value,
        "{bencher}"
    );
    // An unexpected speed-up is not a regression.
    let o = gate(&planted, &dir.path().join("faster"), "faster");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        pids_mentioning("valgrind", results).is_empty(),
        "no Valgrind process left"
    );
}
