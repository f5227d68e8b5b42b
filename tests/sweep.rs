//! Concurrency sweeps (`--threads 1,4,64`) end to end: a managed
//! PostgreSQL and a managed MariaDB in one run store one step per test and
//! client count, and the report draws QPS against connections (checked as
//! headless Chromium lays it out); bad sweeps fail in one line before any
//! server starts; from `--mux-from` clients on, connections are
//! multiplexed on event loops and every one of them still runs queries.

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::time::Duration;

use common::chromium::chromium_cmd;
use common::cli_runs::{export_json, fails_in_one_line, one_line_error, short_run};
use common::*;

/// Counts the rendered sweep charts: size and drawn lines and points each.
const PROBE: &str = r#"<script>
const charts = [...document.querySelectorAll('svg.chart.sweep')].map(s => {
  const r = s.getBoundingClientRect();
  const drawn = sel => [...s.querySelectorAll(sel)]
    .filter(e => { const b = e.getBBox(); return b.width > 0 || b.height > 0; }).length;
  return [Math.round(r.width), Math.round(r.height), drawn('polyline.line'), drawn('circle.point')];
});
const out = document.createElement('pre');
out.textContent = 'PROBE' + JSON.stringify({height: document.documentElement.scrollHeight,
  charts}) + 'END';
document.body.appendChild(out);
</script></body>"#;

#[test]
fn a_sweep_on_postgres_and_mariadb_stores_every_point_and_the_report_draws_it() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let args = short_run(
        results,
        "point-query",
        &["pg@system", "mariadb@system"],
        &["--threads", "1,4,64"],
    );
    let o = run_tidemark(&args);
    assert!(o.status.success(), "sweep run failed: {}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("concurrency sweep") && out.contains("connections"),
        "the end-of-run summary names the knee or peak: {out}"
    );

    let doc = export_json(results);
    let targets = doc["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    for t in targets {
        let steps = t["steps"].as_array().unwrap();
        let points: Vec<(u64, u64)> = steps
            .iter()
            .filter(|s| s["name"] == "point-query_range=100")
            .map(|s| {
                assert_eq!(s["status"], "ok", "{s}");
                assert!(s["qps"].as_f64().unwrap() > 0.0);
                (
                    s["sweep_threads"].as_u64().unwrap(),
                    s["threads"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            points,
            [(1, 1), (4, 4), (64, 64)],
            "three points on {}",
            t["label"]
        );
    }

    // The report: a table and two charts per test, a line per target.
    let out_dir = dir.path().join("report");
    let o = run_tidemark(&[
        "report",
        "--results",
        results,
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "report failed: {}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    let test = &json["sweep"]["tests"][0];
    assert_eq!(test["counts"], serde_json::json!([1, 4, 64]));
    assert_eq!(test["lines"].as_array().unwrap().len(), 2);
    let rel = test["lines"][1]["points"][2]["relative"].as_f64().unwrap();
    let (a, b) = (
        test["lines"][0]["points"][2]["qps"].as_f64().unwrap(),
        test["lines"][1]["points"][2]["qps"].as_f64().unwrap(),
    );
    assert!((rel - b / a).abs() < 1e-9, "relative QPS at 64 is B / A");
    let summary = json["sweep"]["summary"].as_array().unwrap();
    assert_eq!(summary.len(), 2, "a peak-and-knee line per target");
    let changes = json["plan_changes"].as_array().unwrap();
    assert!(
        changes
            .iter()
            .all(|c| c["targets"].as_array().unwrap().len() == 1),
        "a test's plan is compared once, not once per sweep point: {changes:?}"
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("## Concurrency sweep") && md.contains("| 64 |"));

    let page = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    let probe = common::chromium::probe_page(&page, dir.path(), "sweep", 1280, 1000, PROBE);
    let charts = probe["charts"].as_array().unwrap();
    assert_eq!(charts.len(), 2, "QPS and p99 charts: {probe}");
    for c in charts {
        let (w, h, lines, points) = (
            c[0].as_u64().unwrap(),
            c[1].as_u64().unwrap(),
            c[2].as_u64().unwrap(),
            c[3].as_u64().unwrap(),
        );
        assert!(w >= 500 && h >= 250, "chart is {w}×{h}");
        assert_eq!(
            (lines, points),
            (2, 6),
            "a line per target, a point per count"
        );
    }
    let height = probe["height"].as_u64().unwrap();
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-sweep.png");
    let _ = std::fs::remove_file(&shot);
    let o = chromium_cmd(&dir.path().join("profile-2"))
        .arg(format!("--window-size=1280,{height}"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", out_dir.join("index.html").display()))
        .output()
        .expect("chromium runs");
    let png = std::fs::read(&shot)
        .unwrap_or_else(|_| panic!("no screenshot: {}", String::from_utf8_lossy(&o.stderr)));
    assert_eq!(&png[1..4], b"PNG");
    assert!(png.len() > 30_000, "a page with charts, not a blank one");
}

#[test]
fn bad_sweeps_fail_in_one_line_before_any_server_starts() {
    let within = Duration::from_secs(20);
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r");
    let results = results.to_str().unwrap();
    for (threads, wants) in [
        ("0", &["--threads", "at least 1"][..]),
        ("1,0,4", &["--threads", "at least 1"]),
        ("8..2", &["backwards"]),
        ("fib:1..8", &["unknown series"]),
    ] {
        let args = short_run(
            results,
            "point-query",
            &["pg@system"],
            &["--threads", threads],
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_tidemark(&args);
        assert!(!o.status.success());
        let err = stderr(&o);
        assert!(
            err.lines().filter(|l| !l.trim().is_empty()).count() <= 3
                && wants.iter().all(|w| err.contains(w)),
            "{threads}: {err}"
        );
        assert!(!Path::new(results).join("results.db").exists());
    }
    // A managed server's max_connections set too small by the user.
    fails_in_one_line(
        &[
            "run",
            "--results",
            results,
            "--tests",
            "point-query",
            "--threads",
            "1,512",
            "-c",
            "max_connections=300",
        ],
        &["max_connections = 300", "--threads"],
        within,
    );
}

#[test]
fn a_sweep_beyond_the_open_file_limit_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r");
    let args = short_run(
        results.to_str().unwrap(),
        "point-query",
        &["pg@system"],
        &["--threads", "pow2:1..1024"],
    );
    let mut cmd = tidemark();
    cmd.args(&args);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 512,
                rlim_max: 512,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().expect("tidemark runs");
    assert!(!o.status.success());
    let line = one_line_error(&o);
    assert!(
        line.contains("RLIMIT_NOFILE") && line.contains("512") && line.contains("--threads"),
        "{line}"
    );
    assert!(!results.join("results.db").exists(), "nothing started");
}

#[test]
fn an_external_server_whose_max_connections_is_too_small_is_refused() {
    let dir = server_tempdir();
    let mut server = start_pg(dir.path(), &[("max_connections", "30")]);
    let url = common::pg_url(&server.connect_options());
    let results = dir.path().join("results");
    let args = short_run(
        results.to_str().unwrap(),
        "point-query",
        &[&url],
        &["--threads", "1,4,64"],
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let line = fails_in_one_line(
        &args,
        &[
            "max_connections = 30",
            "superuser_reserved_connections",
            "84",
        ],
        Duration::from_secs(20),
    );
    assert!(line.contains("raise max_connections"), "{line}");
    server.stop().unwrap();
}

#[test]
fn the_multiplexed_client_drives_every_connection_and_times_each_query() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let args = short_run(
        results,
        "point-query,range-covered-pk",
        &["pg@system", "mariadb@system"],
        &["--threads", "2,48", "--mux-from", "48"],
    );
    let o = run_tidemark(&args);
    assert!(o.status.success(), "run failed: {}", stderr(&o));
    let doc = export_json(results);
    let targets = doc["runs"][0]["targets"].as_array().unwrap();
    let steps: Vec<&serde_json::Value> = targets
        .iter()
        .flat_map(|t| t["steps"].as_array().unwrap())
        .collect();
    let loops = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let mut seen = 0;
    for s in steps.into_iter().filter(|s| s["reported"] == true) {
        let n = s["sweep_threads"].as_u64().unwrap();
        assert_eq!(s["status"], "ok", "{s}");
        let mux = s["params"]["client_loops"].as_u64();
        if n < 48 {
            assert_eq!(mux, None, "{} clients: one thread each", n);
            continue;
        }
        seen += 1;
        assert_eq!(mux, Some(loops.min(n)), "an event loop per core");
        let clients = s["clients"].as_array().unwrap();
        assert_eq!(clients.len(), 48, "one result per connection");
        assert!(
            clients.iter().all(|c| c["events"].as_u64().unwrap() > 0),
            "every multiplexed connection ran queries: {clients:?}"
        );
        let statements = s["statements"].as_u64().unwrap();
        assert_eq!(s["events"], s["statements"], "one statement per event");
        let rows = s["rows"].as_u64().unwrap();
        if s["name"] == "point-query_range=100" {
            assert_eq!(rows, statements, "a row per point select");
        } else {
            // BETWEEN x AND x+100: 101 rows unless x is near the table's end.
            assert!(rows <= statements * 101 && rows > statements * 80, "{rows}");
        }
        let lat = &s["latency_us"];
        let (p50, p99) = (lat["p50"].as_u64().unwrap(), lat["p99"].as_u64().unwrap());
        assert!(p50 > 0 && p99 >= p50, "latency timed per query: {lat}");
    }
    assert_eq!(
        seen, 4,
        "both tests multiplexed at 48 connections on both servers"
    );
}
