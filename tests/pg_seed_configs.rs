//! The seeds' complete postgresql.conf files: each shipped one starts on a
//! version it supports (the system's PostgreSQL 15 and the cached 12.22,
//! 16.9 and 18.4) and the server reports the file's values; the
//! per-version variant is the one the version reads; WAL sizes follow
//! the machine's memory; configs that need a newer version or a feature
//! the build lacks are refused before any server starts.

#[allow(unused_imports)]
mod common;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::cli_runs::*;
use common::*;

/// The install cache every test shares (tests/matrix.rs fills it).
const CACHE: &str = "/tmp/tidemark-test-cache";

fn tm() -> Command {
    let mut cmd = tidemark();
    cmd.env("TIDEMARK_CACHE", CACHE);
    cmd
}

fn run(args: &[String]) -> Output {
    tm().args(args).output().expect("tidemark runs")
}

/// A setting's value in base units (kB, ms) when it has a unit, so `1800s`
/// equals `30min` and `30720MB` equals `30GB`; else the text.
fn canonical(value: &str) -> String {
    let units: [(&str, f64); 9] = [
        ("kB", 1.0),
        ("MB", 1024.0),
        ("GB", 1024.0 * 1024.0),
        ("TB", 1024.0 * 1024.0 * 1024.0),
        ("ms", 1.0),
        ("min", 60_000.0),
        ("s", 1000.0),
        ("h", 3_600_000.0),
        ("d", 86_400_000.0),
    ];
    for (unit, factor) in units {
        if let Some(n) = value.strip_suffix(unit)
            && let Ok(x) = n.trim().parse::<f64>()
        {
            return format!("{}", x * factor);
        }
    }
    value.trim_matches('\'').to_string()
}

/// `name = value` lines of a postgresql.conf text (the last one wins).
fn file_settings(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap().trim();
        if let Some((n, v)) = line.split_once('=') {
            out.insert(
                n.trim().to_string(),
                v.trim().trim_matches('\'').to_string(),
            );
        }
    }
    out
}

fn mem_total_gib() -> f64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next())
        .unwrap()
        .parse()
        .unwrap();
    kb / (1024.0 * 1024.0)
}

#[test]
fn every_seed_file_starts_and_the_server_reports_its_values() {
    let targets = [
        "pg@12.22+cx10a",
        "pg@system+cx10a",
        "pg@16.9+cx10a",
        "pg@system+a27",
        "pg@system+a28",
        "pg@18.4+cx10b",
        "pg@18.4+x10b",
        "pg@18.4+cx10c",
        "pg@18.4+cx10cw4",
        "pg@19+cx10b",
        "pg@19+cx10d",
        "pg@system+sync1_compLZ4_fpi0",
    ];
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let o = run(&short_run(
        results,
        "point-query",
        &targets,
        &["--interleave", "servers"],
    ));
    assert_success(&o);
    let doc = export_json(results);
    let stored = doc["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(stored.len(), targets.len());
    for (spec, t) in targets.iter().zip(stored) {
        assert_eq!(t["spec"], *spec);
        assert_eq!(t["status"], "finished", "{spec}");
        let config = t["config_text"].as_str().unwrap();
        let config_name = spec.split('+').nth(1).unwrap();
        assert!(
            config.starts_with(&format!(
                "# --- config {config_name}: the seeds' complete file"
            )),
            "{spec}: {config}"
        );
        assert!(
            !config.contains("autovacuum_vacuum_cost_delay = 2ms"),
            "{spec}: tidemark's base is replaced, not added to"
        );
        let shown = t["settings"].as_object().unwrap();
        let wanted = file_settings(config);
        for (name, value) in &wanted {
            if ["port", "listen_addresses", "unix_socket_directories"].contains(&name.as_str()) {
                continue;
            }
            let got = shown
                .get(name)
                .and_then(|v| v.as_str())
                .unwrap_or_else(|| panic!("{spec}: SHOW {name} missing: {shown:?}"));
            assert_eq!(
                canonical(got),
                canonical(value),
                "{spec}: {name} is {got}, the file says {value}"
            );
        }
        // The seeds' facts, independent of how the file was written.
        assert_eq!(shown["max_parallel_workers"], "0", "{spec}");
        if !config_name.starts_with("sync") {
            assert_eq!(shown["synchronous_commit"], "off", "{spec}");
            assert_eq!(shown["full_page_writes"], "on", "{spec}");
        }
        // max_wal_size follows memory: 40 GB per 32 GB (cx10) below 32 GB;
        // a27 and a28 70 and 32 GB per 120 GB.
        let per_gib = match config_name {
            "a27" => 70.0 / 120.0,
            "a28" => 32.0 / 120.0,
            _ if mem_total_gib() <= 32.0 => 40.0 / 32.0,
            _ => continue,
        };
        let want_mb = (mem_total_gib() * per_gib * 1024.0) as u64;
        let got: f64 = canonical(shown["max_wal_size"].as_str().unwrap())
            .parse()
            .unwrap();
        let got_mb = (got / 1024.0) as u64;
        assert!(
            got_mb.abs_diff(want_mb) <= 1,
            "{spec}: max_wal_size {got_mb} MB, want {want_mb}"
        );
    }
    let by = |spec: &str| {
        let i = targets.iter().position(|t| *t == spec).unwrap();
        stored[i]["settings"].as_object().unwrap().clone()
    };
    // Per-version variants: 12 has no insert-driven vacuum, 16 adds the
    // vacuum buffer limit, 15 is in between.
    assert!(!by("pg@12.22+cx10a").contains_key("autovacuum_vacuum_insert_scale_factor"));
    assert!(by("pg@system+cx10a").contains_key("autovacuum_vacuum_insert_scale_factor"));
    assert!(!by("pg@system+cx10a").contains_key("vacuum_buffer_usage_limit"));
    assert_eq!(by("pg@16.9+cx10a")["vacuum_buffer_usage_limit"], "256MB");
    // a27 and a28 differ where the seeds say they do.
    assert_eq!(by("pg@system+a27")["wal_compression"], "lz4");
    assert_eq!(by("pg@system+a28")["wal_compression"], "off");
    assert_eq!(by("pg@system+a27")["autovacuum_vacuum_cost_limit"], "2000");
    assert_eq!(by("pg@system+a28")["autovacuum_vacuum_cost_limit"], "4000");
    // The write-path matrix: cx10a's file, then its four settings.
    let lz4 = by("pg@system+sync1_compLZ4_fpi0");
    assert_eq!(lz4["synchronous_commit"], "on");
    assert_eq!(lz4["wal_compression"], "lz4");
    assert_eq!(lz4["full_page_writes"], "off");
    assert_eq!(
        lz4["bgwriter_lru_maxpages"], "2000",
        "cx10a's file under it"
    );
    // The io_method family.
    assert_eq!(by("pg@18.4+cx10b")["io_method"], "sync");
    assert_eq!(by("pg@18.4+x10b")["io_method"], "sync");
    assert_eq!(by("pg@18.4+cx10c")["io_workers"], "16");
    assert_eq!(by("pg@18.4+cx10cw4")["io_workers"], "4");
    // 19 (the newest Debian package) reads the 18 files that name no
    // worker count: cx10b and, its build having liburing, cx10d.
    assert_eq!(by("pg@19+cx10b")["io_method"], "sync");
    assert_eq!(by("pg@19+cx10d")["io_method"], "io_uring");
    // 19 split io_workers into io_min_workers and io_max_workers: the
    // worker files are refused in one line naming the setting, before a
    // server starts (19 is installed by now).
    for target in ["pg@19+cx10c", "pg@19+cx10cw4"] {
        let o = run(&short_run(results, "point-query", &[target], &[]));
        assert_eq!(o.status.code(), Some(1), "{target}: {}", stdout(&o));
        let line = one_line_error(&o);
        assert!(
            line.contains(&format!("target {target}")) && line.contains("'io_workers'"),
            "{line}"
        );
    }
}

#[test]
fn configs_a_version_cannot_read_are_refused_before_start() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let cases: [(&str, &[&str]); 3] = [
        (
            "pg@system+cx10b",
            &[
                "target pg@system+cx10b",
                "config cx10b needs PostgreSQL 18 or later",
                "io_method",
            ],
        ),
        (
            "pg@12.22+a27",
            &[
                "target pg@12.22+a27",
                "config a27 needs PostgreSQL 15 or later",
            ],
        ),
        // 18.4 from the package clients has no io_uring.
        ("pg@18.4+cx10d", &["target pg@18.4+cx10d", "io_uring"]),
    ];
    for (target, wants) in cases {
        let started = Instant::now();
        let o = run(&short_run(results, "point-query", &[target], &[]));
        let took = started.elapsed();
        assert_eq!(o.status.code(), Some(1), "{target}: {}", stdout(&o));
        assert!(took < Duration::from_secs(10), "{target} took {took:?}");
        let line = one_line_error(&o);
        for want in wants {
            assert!(line.contains(want), "{line:?} names {want:?}");
        }
        assert!(
            postgres_pids_mentioning(results).is_empty(),
            "no server started"
        );
    }
    assert!(!std::path::Path::new(results).join("results.db").exists());
}
