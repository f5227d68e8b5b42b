//! examples/ci's workflow (GitHub Actions syntax) is valid YAML, has the
//! shape a runner expects, and its own commands run here in order: the
//! steps with an `id` (build the base, build the branch, count
//! instructions on both, the gate) run with bash as a runner would
//! (`set -e`, the workflow's env, `$GITHUB_ENV` carried to later steps,
//! `$GITHUB_STEP_SUMMARY`), on small settings: the test cache's PostgreSQL
//! source as both base and branch (so both builds are the one
//! tests/pg_build.rs makes, through ccache), one test on a 2000-row table.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::pg_source::{CACHE, source_tree};
use common::*;

const WORKFLOW: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/ci/postgres-branch.yml"
);

/// The workflow as JSON, through Python's YAML parser (Debian's
/// python3-yaml, which .ci/setup installs).
fn workflow() -> serde_json::Value {
    let o = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)",
            WORKFLOW,
        ])
        .output()
        .expect("python3 runs");
    assert!(
        o.status.success(),
        "the workflow does not parse as YAML: {}",
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `KEY=VALUE` lines a step appended to `$GITHUB_ENV`.
fn github_env(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn the_workflow_parses_and_its_commands_run_in_order() {
    let _serial = serial();
    let doc = workflow();
    // YAML 1.1 reads the key `on` as true; a runner reads it as `on`.
    let on = doc.get("on").or_else(|| doc.get("true")).expect("on:");
    assert!(on.get("pull_request").is_some(), "{on}");
    let steps = doc["jobs"]["compare"]["steps"].as_array().unwrap();
    assert!(doc["jobs"]["compare"]["runs-on"].is_string());
    for s in steps {
        assert!(
            s.get("run").is_some() != s.get("uses").is_some(),
            "a step runs a command or uses an action: {s}"
        );
    }
    let ours: Vec<&serde_json::Value> = steps.iter().filter(|s| s.get("id").is_some()).collect();
    let ids: Vec<&str> = ours.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["build-base", "build-branch", "count", "gate"]);
    let script = |i: usize| ours[i]["run"].as_str().unwrap();
    assert!(script(0).contains("tidemark servers build pg --src \"$BASE_SRC\" --build o2nofp"));
    assert!(script(1).contains("tidemark servers build pg --src \"$BRANCH_SRC\" --build o2nofp"));
    assert!(script(2).contains("tidemark run --instructions"));
    assert!(script(3).contains("tidemark report") && script(3).contains("--fail-on slower"));

    // The settings here: the test cache's source as base and branch, built
    // under the name tests/pg_build.rs gives it (no suffix), one test.
    let dir = server_tempdir();
    let work = dir.path();
    let src = source_tree();
    let mut env: BTreeMap<String, String> = doc["env"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().map_or(v.to_string(), String::from)))
        .collect();
    let ours_here = [
        ("BASE_SRC", src.to_str().unwrap().to_string()),
        ("BRANCH_SRC", src.to_str().unwrap().to_string()),
        ("BASE_SUFFIX", String::new()),
        ("BRANCH_SUFFIX", String::new()),
        ("TESTS", "point-query".to_string()),
        ("RUN_OPTIONS", "--table-size 2000".to_string()),
        ("TIDEMARK_CACHE", CACHE.to_string()),
        ("CCACHE_DIR", format!("{CACHE}/ccache")),
        (
            "RESULTS",
            work.join("results").to_str().unwrap().to_string(),
        ),
        ("REPORT", work.join("report").to_str().unwrap().to_string()),
    ];
    for (k, v) in ours_here {
        assert!(env.contains_key(k), "the workflow's env has no {k}");
        env.insert(k.to_string(), v);
    }
    for (k, v) in &env {
        assert!(
            !v.contains("${{"),
            "{k}: an expression this test does not set: {v}"
        );
    }
    if Command::new("ccache").arg("--version").output().is_err() {
        env.remove("CC");
    }
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tidemark"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let github_env_file = work.join("github_env");
    let summary = work.join("summary.md");
    for (i, step) in ours.iter().enumerate() {
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script(i)])
            .current_dir(work)
            .envs(&env)
            .envs(github_env(&github_env_file))
            .env("PATH", &path)
            .env("GITHUB_ENV", &github_env_file)
            .env("GITHUB_STEP_SUMMARY", &summary);
        let started = std::time::Instant::now();
        let o = cmd.output().unwrap();
        eprintln!(
            "step {} took {:.1} s",
            step["id"],
            started.elapsed().as_secs_f64()
        );
        assert!(
            o.status.success(),
            "step {} failed ({:?}): {}\n{}",
            step["id"],
            o.status.code(),
            stdout(&o),
            stderr(&o)
        );
    }
    // The builds named their targets for the later steps; the run counted
    // instructions on both; the gate passed (the same build twice) and left
    // the job summary, the JUnit file and Bencher's.
    let set = github_env(&github_env_file);
    let target = |k: &str| set.iter().find(|(n, _)| n == k).unwrap().1.clone();
    assert!(target("BASE_TARGET").ends_with("_o2nofp"), "{set:?}");
    assert_eq!(target("BASE_TARGET"), target("BRANCH_TARGET"));
    let results = work.join("results");
    let doc = common::cli_runs::export_json(results.to_str().unwrap());
    for t in doc["runs"][0]["targets"].as_array().unwrap() {
        let step = &t["steps"][0];
        assert_eq!(step["name"], "point-query_range=100");
        assert!(
            step["instructions"]["client_ir"].as_u64().unwrap() > 0,
            "{step}"
        );
    }
    let summary = std::fs::read_to_string(&summary).unwrap();
    assert!(!summary.trim().is_empty());
    let junit = std::fs::read_to_string(work.join("report/junit.xml")).unwrap();
    assert!(junit.contains("classname=\"instructions."), "{junit}");
    assert!(work.join("report/bencher.json").is_file());
    assert!(pids_mentioning("valgrind", results.to_str().unwrap()).is_empty());
}
