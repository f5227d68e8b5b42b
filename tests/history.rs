//! `tidemark history` on real runs: twelve short runs of two SQLite
//! targets, one of them with settings that cost CPU (a one-page cache, no
//! memory map and `cell_size_check`, so every page a lookup reads is copied
//! in again by a system call and all its cells checked) switched on from
//! the seventh run on. A change point must be found between runs 6 and 7
//! on that family and not there on the other. Six runs on each side. The
//! step is ×2.2–3 (debug build, session 16): the cache and memory map alone
//! gave ×1.0–1.6 by the day, and a busy CI machine once placed it a run
//! late. Only changes of 40 % or more count. The other family is not
//! required to have none: a shared host's CPU cost per query moves by
//! itself, and history is right to find it (session 16: the unchanged
//! family stepped ×1.22, p = 0.016, here, and ×1.50 (1.36–1.65) at run 5
//! in CI, both real changes of the host, not of the target).

mod common;

use common::{assert_success, run_tidemark, stderr};

#[test]
fn a_planted_step_is_found_on_the_family_it_was_planted_in() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let results = path("results");
    for run in 1..=12 {
        let costly = if run >= 7 {
            ":cache_size=1:mmap_size=0:cell_size_check=1"
        } else {
            ""
        };
        // A fresh database file per run: nothing a run leaves in the file
        // (free pages, a WAL) weighs on the next one's CPU per query.
        let changed = format!("sqlite:{}+wal{costly}", path(&format!("changed-{run}.db")));
        let steady = format!("sqlite:{}+delete", path(&format!("steady-{run}.db")));
        let o = run_tidemark(&[
            "run",
            "--results",
            &results,
            "--tests",
            "point-query",
            "--table-size",
            "20000",
            // Three measured seconds after one of warm-up: 1-second cold
            // steps let one noisy point hide a smaller planted change, and
            // bursts of a few seconds 30-80 % faster come and go on a
            // shared host (session 15).
            "--read-secs",
            "3",
            "--warmup-secs",
            "1",
            "--no-report",
            "--target",
            &changed,
            "--target",
            &steady,
        ]);
        assert_success(&o);
    }
    let out = dir.path().join("history");
    let o = run_tidemark(&[
        "history",
        "--results",
        &results,
        "--metric",
        "cpu",
        "--min-effect",
        "40%",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_success(&o);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("history.json")).unwrap()).unwrap();
    let series = doc.as_array().unwrap();
    let find = |family: &str| {
        series
            .iter()
            .find(|s| s["family"] == family)
            .unwrap_or_else(|| panic!("no {family} series in {doc}"))
    };
    let changed = find("sqlite wal");
    assert_eq!(changed["points"].as_array().unwrap().len(), 12);
    // The planted change; a change of the host, when there was one, may
    // stand beside it.
    let changes = changed["changes"].as_array().unwrap();
    let c = changes
        .iter()
        .find(|c| c["index"] == 6)
        .unwrap_or_else(|| panic!("a change between runs 6 and 7: {changed}"));
    assert_eq!(
        (c["before"]["run"].as_i64(), c["after"]["run"].as_i64()),
        (Some(6), Some(7))
    );
    assert!(
        c["ratio"].as_f64().unwrap() > 1.5,
        "more CPU per query: {c}"
    );
    assert!(c["interval"]["lo"].as_f64().unwrap() > 1.0, "{c}");
    // Not on the other family: what changed one target is not put on
    // another.
    let steady = find("sqlite delete");
    let steady_changes = steady["changes"].as_array().unwrap();
    assert!(steady_changes.iter().all(|c| c["index"] != 6), "{steady}");
    let marked = changes.len() + steady_changes.len();

    let md = std::fs::read_to_string(out.join("history.md")).unwrap();
    assert!(md.contains("| sqlite delete | point-query"), "{md}");
    let html = std::fs::read_to_string(out.join("history.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
    assert_eq!(html.matches("class=\"change\"").count(), marked);

    // Filters: one family, one test, a date after every run.
    let filtered = |extra: &[&str]| {
        let mut args = vec!["history", "--results", &results, "--metric", "cpu"];
        args.extend(["--min-effect", "40%"]);
        args.extend(["-o", out.to_str().unwrap()]);
        args.extend(extra);
        assert_success(&run_tidemark(&args));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("history.json")).unwrap())
                .unwrap();
        doc.as_array().unwrap().len()
    };
    assert_eq!(filtered(&["--target-family", "delete"]), 1);
    assert_eq!(filtered(&["--test", "insert"]), 0);
    assert_eq!(filtered(&["--since", "2999-01-01"]), 0);
    let o = run_tidemark(&["history", "--results", &results, "--since", "yesterday"]);
    assert!(!o.status.success());
    assert_eq!(stderr(&o).trim_end().lines().count(), 1, "{}", stderr(&o));
}
