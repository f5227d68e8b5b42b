//! The exports' shapes, from a sample run written to a real SQLite store.

use serde_json::json;

use super::*;
use crate::store::tests::write_sample_run;
use crate::store::{SCHEMA_VERSION, Store};

#[test]
fn csv_quoting() {
    assert_eq!(csv_field("plain"), "plain");
    assert_eq!(csv_field(""), "");
    assert_eq!(csv_field("a,b"), "\"a,b\"");
    assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    assert_eq!(csv_field("two\nlines"), "\"two\nlines\"");
    assert_eq!(csv_field(" padded"), "\" padded\"");
    assert_eq!(csv_line(["a,b", "c", ""]), "\"a,b\",c,");
}

#[test]
fn csv_header_has_every_column_once() {
    let mut seen = std::collections::HashSet::new();
    assert!(csv_header().iter().all(|c| seen.insert(*c)));
}

fn export(store: &Store, run: Option<i64>, csv: bool) -> String {
    let mut out = Vec::new();
    if csv {
        export_csv(store, run, &mut out).unwrap();
    } else {
        export_json(store, run, &mut out).unwrap();
    }
    String::from_utf8(out).unwrap()
}

fn keys(v: &serde_json::Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort();
    k
}

fn sorted(mut k: Vec<&str>) -> Vec<&str> {
    k.sort();
    k
}

#[test]
fn json_export_has_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let first = write_sample_run(&mut store);
    let second = write_sample_run(&mut store);

    let text = export(&store, None, false);
    let top = text.find("\"tidemark_version\"").unwrap();
    assert!(
        top < text.find("\"schema_version\"").unwrap(),
        "struct key order"
    );
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        keys(&doc),
        [
            "format_version",
            "runs",
            "schema_version",
            "tidemark_version"
        ]
    );
    assert_eq!(doc["format_version"], FORMAT_VERSION);
    assert_eq!(doc["schema_version"], SCHEMA_VERSION);
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(
        (runs[0]["id"].as_i64(), runs[1]["id"].as_i64()),
        (Some(first), Some(second))
    );

    let run = &runs[0];
    assert_eq!(
        keys(run),
        sorted(vec![
            "id",
            "uuid",
            "origin",
            "started_at",
            "finished_at",
            "status",
            "command_line",
            "tidemark_version",
            "profile",
            "suite",
            "params",
            "host",
            "targets"
        ])
    );
    assert_eq!(run["params"]["tables"], 8);
    assert_eq!(run["host"]["storage"]["device"], "nvme0n1");
    let target = &run["targets"][0];
    assert_eq!(
        keys(target),
        sorted(vec![
            "label",
            "position",
            "repetition",
            "spec",
            "dbms",
            "version",
            "version_number",
            "config_name",
            "config_text",
            "settings",
            "managed",
            "extra",
            "status",
            "failure",
            "steps"
        ])
    );
    assert_eq!(target["settings"]["shared_buffers"], "1GB");
    let step = &target["steps"][1];
    assert_eq!(
        keys(step),
        sorted(vec![
            "name",
            "test",
            "range",
            "group",
            "reported",
            "note",
            "params",
            "started_at",
            "status",
            "failure",
            "error_samples",
            "secs",
            "threads",
            "sweep_threads",
            "events",
            "statements",
            "rows",
            "errors",
            "retries",
            "qps",
            "tps",
            "rows_per_sec",
            "client_cpu_us_per_query",
            "latency_us",
            "per_second",
            "clients",
            "plans",
            "hw",
            "host_seconds"
        ])
    );
    assert_eq!(step["status"], "errors");
    assert!(step["hw"].is_null(), "stored without samplers");
    assert_eq!(step["host_seconds"], json!([]));
    assert_eq!(step["range"], serde_json::Value::Null);
    assert_eq!(target["steps"][2]["group"], "range-noagg");
    assert_eq!(
        keys(&step["latency_us"]),
        ["avg", "max", "p50", "p95", "p99", "p999"]
    );
    assert_eq!(step["per_second"].as_array().unwrap().len(), 3);
    assert_eq!(step["per_second"][2]["max_latency_us"], 4_002);
    assert_eq!(step["clients"][3]["finish_secs"], 10.625);
    assert_eq!(
        step["plans"][1],
        json!({"statement": "SELECT 1", "plan": "Result"})
    );
    let cpu = step["client_cpu_us_per_query"].as_f64().unwrap();
    assert!((cpu - 87.5).abs() < 1e-9, "{cpu}");

    let one: serde_json::Value =
        serde_json::from_str(&export(&store, Some(second), false)).unwrap();
    assert_eq!(one["runs"].as_array().unwrap().len(), 1);
    assert_eq!(one["runs"][0]["id"].as_i64(), Some(second));
}

#[test]
fn csv_export_has_a_header_and_quotes() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = write_sample_run(&mut store);
    let text = export(&store, Some(run), true);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], csv_header().join(","));
    assert!(lines[0].starts_with(&CSV_COLUMNS.join(",")));
    assert_eq!(lines.len(), 1 + 6);
    // The label `pg15.quick, "x"` is quoted with its quotes doubled.
    assert!(
        lines[1].contains(",\"pg15.quick, \"\"x\"\"\","),
        "{}",
        lines[1]
    );
    assert!(lines[1].starts_with(&format!(
        "{run},2026-11-20T23:51:04Z,interrupted,sysbench,quick,0,"
    )));
    // The unquoted cells after the label: one per remaining column.
    let after = lines[2].split("\"\"x\"\"\",").nth(1).unwrap();
    assert_eq!(after.split(',').count(), csv_header().len() - 7);
    assert!(
        lines[2].ends_with(",stored without samplers,false,,,,,"),
        "{}",
        lines[2]
    );
}
