//! `--cpu-profile` against real managed PostgreSQL servers: the stored
//! stacks name PostgreSQL's executor and protocol functions, the HTML
//! report (drawn by headless Chromium) shows a flamegraph per target and a
//! differential one, and no perf process or data file is left after a run,
//! a Ctrl-C or a failed step. The overhead is measured by
//! `bench/cpu_profile_overhead.sh`.

mod common;

use std::time::Duration;

use common::chromium::chromium_cmd;
use common::cli_runs::{Watched, export_json, one_line_error, short_run};
use common::*;

/// perf processes a tidemark started (their data files are named so).
fn our_perfs() -> Vec<u32> {
    pids_mentioning("perf", "tidemark-perf-")
}

fn perf_files_of(pid: u32) -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("tidemark-perf-{pid}-")))
        .collect()
}

/// On a host where perf cannot record (a sandbox refusing
/// `perf_event_open`, say), `--cpu-profile` must be refused in one line
/// naming the reason before any server starts; returns true when that is
/// this host (the caller then has nothing more it can check).
fn refused_here(results: &str) -> bool {
    let Some(why) = tidemark::metrics::cpu_profile::unavailable() else {
        return false;
    };
    eprintln!("this host cannot profile ({why}); checking the refusal only");
    let o = run_tidemark(&short_run(results, "point-query", &[], &["--cpu-profile"]));
    assert_eq!(o.status.code(), Some(1));
    let line = one_line_error(&o);
    assert!(
        line.contains("--cpu-profile") && line.contains(&why),
        "{line}"
    );
    assert!(postgres_pids_mentioning(results).is_empty());
    assert!(our_perfs().is_empty());
    true
}

/// Counts the rendered flamegraphs (each `svg.flamegraph` with a box and
/// drawn frames) in a page, as Chromium lays it out.
const PROBE: &str = r#"<script>
const graphs = [...document.querySelectorAll('svg.flamegraph')].map(s => {
  const r = s.getBoundingClientRect();
  const frames = [...s.querySelectorAll('rect')].filter(e => e.getBBox().width > 0).length;
  return [s.parentElement.className, Math.round(r.width), Math.round(r.height), frames];
});
const out = document.createElement('pre');
out.textContent = 'PROBE' + JSON.stringify(graphs) + 'END';
document.body.appendChild(out);
</script></body>"#;

#[test]
fn profiles_name_postgres_functions_and_draw_flamegraphs_for_two_targets() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    if refused_here(results) {
        return;
    }
    let mut args = short_run(
        results,
        "point-query",
        &["pg@system", "pg@system:work_mem=8MB"],
        &["--cpu-profile"],
    );
    let read_secs = args.iter().position(|a| a == "--read-secs").unwrap() + 1;
    args[read_secs] = "3".into();
    let o = run_tidemark(&args);
    assert_success(&o);
    assert!(our_perfs().is_empty(), "no perf left after the run");

    let store = tidemark::store::Store::open_existing(std::path::Path::new(results)).unwrap();
    let run = store.load_run(1).unwrap();
    for t in &run.targets {
        let host = t.steps[0].host.as_ref().unwrap();
        let p = host
            .cpu_profile
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no profile: {:?}", t.info.label, host.metrics.missing));
        assert!(p.samples > 20, "{}: {} samples", t.info.label, p.samples);
        // The heaviest stacks run through the executor or the protocol.
        let mut stacks: Vec<(&str, u64)> = p
            .folded
            .lines()
            .filter_map(|l| {
                let (s, n) = l.rsplit_once(' ')?;
                Some((s, n.parse().ok()?))
            })
            .collect();
        stacks.sort_by_key(|s| std::cmp::Reverse(s.1));
        let named = [
            "PostgresMain",
            "exec_",
            "Exec",
            "PortalRun",
            "pq_",
            "standard_Executor",
        ];
        let top: Vec<&str> = stacks.iter().take(10).map(|s| s.0).collect();
        assert!(
            top.iter()
                .filter(|s| named.iter().any(|n| s.contains(n)))
                .count()
                >= 5,
            "{top:#?}"
        );
    }

    // The export carries what the store holds for the step (docs/export.md,
    // format_version 1): the profile with its top functions, and the
    // server's counters measured per statement.
    let doc = export_json(results);
    assert_eq!(doc["format_version"], 1);
    for t in doc["runs"][0]["targets"].as_array().unwrap() {
        let step = &t["steps"][0];
        let p = &step["cpu_profile"];
        assert!(p["samples"].as_u64().unwrap() > 20, "{p}");
        assert!(p["hz"].as_u64().unwrap() > 0 && p["secs"].as_f64().unwrap() > 0.0);
        let top = p["top"].as_array().unwrap();
        assert!(
            !top.is_empty() && top[0]["samples"].as_u64().unwrap() > 0,
            "{p}"
        );
        let shares: f64 = top.iter().map(|f| f["share"].as_f64().unwrap()).sum();
        assert!(shares > 0.0 && shares <= 1.0 + 1e-9, "{shares}");
        assert!(p["folded"].as_str().unwrap().contains("PostgresMain"));
        let c = &step["server_counters"];
        let measured = c["measured"].as_array().unwrap();
        let hits = measured
            .iter()
            .find(|m| m["name"] == "blks_hit")
            .unwrap_or_else(|| panic!("{c}"));
        // A point query reads an index root and leaf and a heap page from
        // shared buffers (statistics reach the view up to a second late).
        let per = hits["per_statement"].as_f64().unwrap();
        assert!(
            hits["kind"] == "counter" && (0.5..50.0).contains(&per),
            "{hits}"
        );
        assert!(c["readings"].as_array().unwrap().len() >= 2, "{c}");
    }

    let out = dir.path().join("report");
    let o = run_tidemark(&["report", "--results", results, "-o", out.to_str().unwrap()]);
    assert_success(&o);
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    // The page's one script is the navigation filter; the flamegraphs carry
    // none (they are drawn as plain SVG).
    for svg in page.split("<svg").skip(1) {
        let svg = svg.split("</svg>").next().unwrap_or_default();
        assert!(!svg.contains("<script"), "a flamegraph stays script-free");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("### Top functions of point-query"), "{md}");
    let probe = out.join("probe.html");
    std::fs::write(&probe, page.replace("</body>", PROBE)).unwrap();
    let o = chromium_cmd(&dir.path().join("chromium"))
        .arg("--window-size=1280,1000")
        .arg("--dump-dom")
        .arg(format!("file://{}", probe.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&o.stdout);
    let json = dom
        .rsplit_once("PROBE")
        .and_then(|(_, r)| r.split_once("END"))
        .map(|(j, _)| j)
        .expect("the probe ran");
    let graphs: Vec<(String, u64, u64, u64)> = serde_json::from_str(json).unwrap();
    let kinds: Vec<&str> = graphs.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(kinds, ["flame", "flame", "flame diff"], "{graphs:?}");
    for (kind, w, h, frames) in &graphs {
        assert!(
            *w > 600 && *h > 100 && *frames > 20,
            "{kind}: {w}×{h}, {frames} frames"
        );
    }
}

/// A profiled 30-second point-query run into `results`, returned once its
/// perf runs (the step's measured part has begun), with tidemark's pid.
fn profiled_run_under_way(results: &str) -> (Watched, u32) {
    let mut args = short_run(results, "point-query", &[], &["--cpu-profile"]);
    let read_secs = args.iter().position(|a| a == "--read-secs").unwrap() + 1;
    args[read_secs] = "30".into();
    let run = Watched::tidemark(&args);
    let pid = run.child.id();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while our_perfs().is_empty() {
        assert!(std::time::Instant::now() < deadline, "perf never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    (run, pid)
}

#[test]
fn ctrl_c_during_a_profiled_step_leaves_no_perf_behind() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    if refused_here(results) {
        return;
    }
    let (mut run, pid) = profiled_run_under_way(results);
    std::thread::sleep(Duration::from_secs(1));
    let status = run.interrupt();
    assert_eq!(status.code(), Some(130));
    assert!(our_perfs().is_empty(), "no perf left after Ctrl-C");
    assert!(perf_files_of(pid).is_empty(), "{:?}", perf_files_of(pid));
    assert!(postgres_pids_mentioning(results).is_empty());
}

#[test]
fn a_failed_profiled_step_leaves_no_perf_behind() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    if refused_here(results) {
        return;
    }
    let (mut run, pid) = profiled_run_under_way(results);
    // The server dies under the step: the step fails, the run ends.
    for p in postgres_pids_mentioning(results) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(p as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(s) = run.child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "the run ends");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success(), "a failed step fails the run");
    assert!(our_perfs().is_empty(), "no perf left after a failed step");
    assert!(perf_files_of(pid).is_empty(), "{:?}", perf_files_of(pid));
}
