//! A run whose process died without a word (SIGKILL) is shown as
//! `abandoned` by `tidemark runs`, its server does not outlive it, and
//! `--resume` finishes it as it does an interrupted run.

mod common;

use std::time::{Duration, Instant};

use common::cli_runs::{Watched, export_json, short_run};
use common::*;

#[test]
fn a_killed_run_shows_as_abandoned_and_resumes() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let mut args = short_run(results, "update-index,point-query", &[], &[]);
    let read_secs = args.iter().position(|a| a == "--read-secs").unwrap() + 1;
    args[read_secs] = "8".into();
    let mut run = Watched::tidemark(&args);
    run.wait_for(1, |l| l.starts_with("[1/"));
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !postgres_pids_mentioning(results).is_empty(),
        "the server runs"
    );

    // While it runs, it is `running`, and cannot be resumed twice.
    let o = run_tidemark(&["runs", "--results", results]);
    assert_success(&o);
    assert!(stdout(&o).contains("running"), "{}", stdout(&o));
    let o = run_tidemark(&["run", "--results", results, "--resume", "1"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("still running"), "{}", stderr(&o));

    run.child.kill().unwrap(); // SIGKILL: no handler runs
    run.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !postgres_pids_mentioning(results).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the server outlived its tidemark"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let o = run_tidemark(&["runs", "--results", results]);
    assert_success(&o);
    let line = stdout(&o)
        .lines()
        .find(|l| l.trim_start().starts_with("1 "))
        .unwrap_or_default()
        .to_string();
    assert!(line.contains("abandoned"), "{}", stdout(&o));

    let o = run_tidemark(&["run", "--results", results, "--resume", "1"]);
    assert_success(&o);
    let doc = export_json(results);
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "finished", "{run}");
    let steps = run["targets"][0]["steps"].as_array().unwrap();
    let ok: Vec<&str> = steps
        .iter()
        .filter(|s| s["status"] == "ok")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(ok.iter().any(|n| n.starts_with("update-index")), "{ok:?}");
    assert!(ok.iter().any(|n| n.starts_with("point-query")), "{ok:?}");
    let o = run_tidemark(&["runs", "--results", results]);
    assert!(!stdout(&o).contains("abandoned"), "{}", stdout(&o));
}
