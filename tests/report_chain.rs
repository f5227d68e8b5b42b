//! `tidemark report --chain` on a real run of three SQLite targets: the
//! third is compared with the second as well as with the base, in the
//! JSON, Markdown and HTML; without `--chain` there is no such table.

mod common;

use common::cli_runs::short_run;
use common::{assert_success, run_tidemark};

#[test]
fn each_target_is_compared_with_the_one_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let results = path("results");
    let targets = [
        format!("sqlite:{}+wal", path("a.db")),
        format!("sqlite:{}+delete", path("b.db")),
        format!("sqlite:{}+wal:cache_size=1:mmap_size=0", path("c.db")),
    ];
    let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
    let args = short_run(
        &results,
        "point-query,update-index",
        &targets,
        &["--no-report"],
    );
    assert_success(&run_tidemark(&args));

    let out = dir.path().join("chain");
    let o = out.to_str().unwrap();
    assert_success(&run_tidemark(&[
        "report",
        "--results",
        &results,
        "--chain",
        "-o",
        o,
    ]));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["chain"], true);
    let labels: Vec<&str> = report["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["label"].as_str().unwrap())
        .collect();
    let mut tests = 0;
    for group in report["sysbench"]["groups"].as_array().unwrap() {
        for test in group["tests"].as_array().unwrap() {
            let cells = test["cells"].as_array().unwrap();
            assert!(
                cells[1]["vs_previous"].is_null(),
                "col-1's previous is the base"
            );
            let link = &cells[2]["vs_previous"];
            let (third, second) = (
                cells[2]["qps"].as_f64().unwrap(),
                cells[1]["qps"].as_f64().unwrap(),
            );
            let rel = link["relative"].as_f64().unwrap();
            // The estimate is the QPS ratio, or the interval's centre.
            assert!((rel / (third / second) - 1.0).abs() < 0.05, "{test}");
            assert!(link["verdict"].is_string());
            tests += 1;
        }
    }
    assert_eq!(tests, 2);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("## Each target against the one before it"),
        "{md}"
    );
    assert!(
        md.contains(&format!("{} vs {}", labels[2], labels[1])),
        "{md}"
    );
    assert!(
        md.contains(&format!("{} vs {}", labels[1], labels[0])),
        "{md}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<section id=\"chain\">"));

    let plain = dir.path().join("plain");
    assert_success(&run_tidemark(&[
        "report",
        "--results",
        &results,
        "-o",
        plain.to_str().unwrap(),
    ]));
    let md = std::fs::read_to_string(plain.join("report.md")).unwrap();
    assert!(!md.contains("Each target against the one before it"));
}

/// The Insert Benchmark's steps get their own chain table: each target
/// from the third on against the one before it, step by step.
#[test]
fn insert_benchmark_steps_are_chained_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let results = path("results");
    let targets = [
        format!("sqlite:{}+wal", path("a.db")),
        format!("sqlite:{}+delete", path("b.db")),
        format!("sqlite:{}+wal:cache_size=1:mmap_size=0", path("c.db")),
    ];
    let targets: Vec<&str> = targets.iter().map(String::as_str).collect();
    let mut args = common::ibench_checks::small_run(&results, &targets, "1");
    args.push("--no-report".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_success(&run_tidemark(&args));

    let out = dir.path().join("chain");
    assert_success(&run_tidemark(&[
        "report",
        "--results",
        &results,
        "--chain",
        "-o",
        out.to_str().unwrap(),
    ]));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let ib = &report["ibench"];
    let steps = ib["steps"].as_array().unwrap();
    assert!(steps.len() >= 5, "{ib}");
    let rows = ib["throughput"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let mut linked = 0;
    let (seconds, thirds) = (
        rows[1]["cells"].as_array().unwrap(),
        rows[2]["cells"].as_array().unwrap(),
    );
    assert_eq!((seconds.len(), thirds.len()), (steps.len(), steps.len()));
    for (second, third) in seconds.iter().zip(thirds) {
        assert!(
            second["vs_previous"].is_null(),
            "col-1's previous is the base"
        );
        let (Some(a), Some(b)) = (second["value"].as_f64(), third["value"].as_f64()) else {
            continue;
        };
        let link = &third["vs_previous"];
        let rel = link["relative"]
            .as_f64()
            .unwrap_or_else(|| panic!("{link}"));
        if link["interval"].is_null() {
            assert!((rel - b / a).abs() < 1e-9 * rel.abs().max(1.0), "{link}");
        } else {
            let (lo, hi) = (
                link["interval"]["lo"].as_f64().unwrap(),
                link["interval"]["hi"].as_f64().unwrap(),
            );
            assert!(lo <= rel && rel <= hi, "{link}");
        }
        assert!(link["verdict"].is_string(), "{link}");
        linked += 1;
    }
    assert!(linked >= 5, "{ib}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Insert Benchmark: relative throughput"), "{md}");
    assert!(md.contains("| l.i0 |"), "{md}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("<section id=\"chain\">"));
    assert!(html.contains("<a href=\"#chain\">Chain</a>"));
}
