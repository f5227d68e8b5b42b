//! The samplers against a real managed PostgreSQL: our averages agree with
//! `vmstat 1` and `iostat -x 1` run beside a write step; CPU lands on the
//! side (server or client) that spent it; a run stores and exports the
//! per-operation columns, with reasons where a metric cannot be had.
//!
//! Host-wide counters and tidemark's own process CPU are shared by every
//! test in this binary, so the tests take turns.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::thread::JoinHandle;
use std::time::Duration;

use common::sampler_checks::{self, export_steps, num};
use common::*;
use tidemark::db::{Connector, Dialect};
use tidemark::metrics::devices::devices_for_path;
use tidemark::metrics::sampler::{Sampler, SamplerConfig, SamplerOutput};
use tidemark::metrics::summary::{HostSecond, Phase, averages};
use tidemark::runner::{Schedule, StepStatus, run_step};
use tidemark::workload::sysbench::{Sysbench, SysbenchParams, catalog, load};

fn require(tool: &str) {
    let found = Command::new(tool)
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    assert!(
        found,
        "{tool} is not installed: apt-get install procps sysstat coreutils (.ci/run does)"
    );
}

/// A measuring tool whose output lines close our sampler's intervals: each
/// report the tool prints ticks the sampler, so both cover the same
/// seconds. Returns the tool's reports and our samples once it is killed.
struct Beside {
    child: Child,
    reader: JoinHandle<(Vec<Vec<String>>, SamplerOutput)>,
}

impl Beside {
    fn start(args: &[&str], starts_report: fn(&str) -> bool, devices: &[String]) -> Beside {
        let sampler = Sampler::start(SamplerConfig {
            server_pid: Err("not watched here".into()),
            devices: Ok(devices.to_vec()),
            interval: Duration::from_secs(3600),
        })
        .unwrap();
        let mut child = Command::new("stdbuf")
            .arg("-oL")
            .args(args)
            .env("LC_ALL", "C")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        let out = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            let mut reports: Vec<Vec<String>> = Vec::new();
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if starts_report(&line) {
                    sampler.tick(Phase::Measured);
                    reports.push(Vec::new());
                }
                if let Some(r) = reports.last_mut() {
                    r.push(line);
                }
            }
            (reports, sampler.stop())
        });
        Beside { child, reader }
    }

    fn finish(mut self) -> (Vec<Vec<String>>, Vec<HostSecond>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (reports, out) = self.reader.join().unwrap();
        let rows = out
            .rows
            .into_iter()
            .filter(|r| r.phase == Phase::Measured)
            .collect();
        (reports, rows)
    }
}

fn vmstat_line(line: &str) -> bool {
    line.split_whitespace()
        .next()
        .is_some_and(|w| w.parse::<u64>().is_ok())
}

fn iostat_report(line: &str) -> bool {
    line.starts_with("avg-cpu:")
}

/// Sum over the device lines of an iostat report of the named columns.
fn iostat_sums(report: &[String], columns: &[&str]) -> Vec<f64> {
    let header = report
        .iter()
        .position(|l| l.starts_with("Device"))
        .expect("iostat report has a Device header");
    let names: Vec<&str> = report[header].split_whitespace().collect();
    let mut sums = vec![0.0; columns.len()];
    for line in report[header + 1..]
        .iter()
        .take_while(|l| !l.trim().is_empty())
    {
        let v: Vec<&str> = line.split_whitespace().collect();
        for (sum, col) in sums.iter_mut().zip(columns) {
            let i = names.iter().position(|n| n == col).expect(col);
            *sum += v[i].parse::<f64>().unwrap();
        }
    }
    sums
}

/// The mean of a tool's per-interval `rates`, each weighted by the length
/// of our interval that closed on the same report (the tool's own length,
/// give or take the moment its line reached us): the window's total over
/// its length, as our averages are.
fn weighted(rates: &[f64], ours: &[&HostSecond]) -> f64 {
    let secs: f64 = ours.iter().map(|r| r.secs).sum();
    rates.iter().zip(ours).map(|(v, r)| v * r.secs).sum::<f64>() / secs
}

/// A per-interval count the tool divides by its nominal interval (vmstat
/// `cs`: the change over its interval ÷ 1 s however long its sleep
/// actually took) as a rate over the window: the counts telescope to the
/// window's total, whatever the length of each interval.
fn counted(counts: &[f64], ours: &[&HostSecond]) -> f64 {
    counts.iter().sum::<f64>() / ours.iter().map(|r| r.secs).sum::<f64>()
}

fn agree(what: &str, ours: f64, tool: f64, floor: f64) {
    let diff = (ours - tool).abs();
    assert!(
        diff <= (0.05 * tool.abs()).max(floor),
        "{what}: ours {ours:.2}, tool {tool:.2} (more than 5% and {floor} apart)"
    );
    eprintln!("{what}: ours {ours:.2}, tool {tool:.2}");
}

#[test]
fn averages_agree_with_vmstat_and_iostat_beside_a_write_step() {
    let _turn = serial();
    for tool in ["stdbuf", "vmstat", "iostat"] {
        require(tool);
    }
    let dir = server_tempdir();
    let mut server = start_pg(dir.path(), &[]);
    let devices = devices_for_path(server.datadir()).expect("the data dir is on a disk");
    let connector = PgConnector(server.connect_options());
    let cancel = AtomicBool::new(false);
    load::create_and_load(&connector, 1, 20_000, 3, 2, &cancel, &mut |_, _| {}).unwrap();

    // update-index commits (and so fsyncs) every statement: real writes.
    let suite = Sysbench {
        params: SysbenchParams {
            tables: 1,
            table_size: 20_000,
            threads: tidemark::knobs::ThreadCounts::one(1),
            mux_from: 0,
            read_secs: 10.0,
            write_secs: 10.0,
            warmup_secs: 0.0,
            slices: 0,
            turn_ms: 0,
            scan_warm_secs: 1.0,
            postwrite_scale: 0.0,
            seed: 3,
        },
        dialect: Dialect::Postgres,
    };
    let test = catalog::select(&["update-index".to_string()]).unwrap()[0].clone();
    let plan = suite.step_plan(&test, "pg");
    let step = std::thread::scope(|scope| {
        let running = scope.spawn(|| {
            run_step(
                &plan,
                Schedule::PLAIN,
                &connector,
                &suite.clients(&test, 0),
                &cancel,
                &mut |_| {},
            )
        });
        std::thread::sleep(Duration::from_millis(1500));
        let vmstat = Beside::start(&["vmstat", "-n", "1"], vmstat_line, &devices);
        let mut iostat_args = vec!["iostat", "-y", "-x", "-k", "1"];
        iostat_args.extend(devices.iter().map(String::as_str));
        let iostat = Beside::start(&iostat_args, iostat_report, &devices);
        std::thread::sleep(Duration::from_millis(7300));
        let v = vmstat.finish();
        let i = iostat.finish();
        (running.join().unwrap().unwrap(), v, i)
    });
    let (result, (vm_reports, vm_rows), (io_reports, io_rows)) = step;
    assert_eq!(result.status, StepStatus::Ok);

    // Interval k of a tool pairs with our row k; the first of each covers
    // the time before the tool started (vmstat's is since boot), so it is
    // left out.
    let n = vm_reports.len().min(vm_rows.len());
    assert!(n >= 5, "{n} vmstat intervals");
    let lines: Vec<Vec<f64>> = vm_reports[1..n]
        .iter()
        .map(|r| {
            r[0].split_whitespace()
                .map(|w| w.parse().unwrap())
                .collect()
        })
        .collect();
    let ours: Vec<&HostSecond> = vm_rows[1..n].iter().collect();
    let a = averages(&ours).unwrap();
    // vmstat: r b swpd free buff cache si so bi bo in cs us sy id wa st.
    // A loaded machine wakes vmstat late, so its "1 s" intervals run
    // longer: its cs is a count per interval, not per second. Its us and sy
    // are shares of the CPU time of its own interval.
    let lengths: Vec<String> = ours.iter().map(|r| format!("{:.2}", r.secs)).collect();
    eprintln!("our intervals beside vmstat: {lengths:?} s");
    let col = |i: usize| lines.iter().map(|l| l[i]).collect::<Vec<f64>>();
    agree("cs/s", a.cs, counted(&col(11), &ours), 100.0);
    let us_sy: Vec<f64> = lines.iter().map(|l| l[12] + l[13]).collect();
    agree("us+sy", a.cpups(), weighted(&us_sy, &ours), 1.5);

    let n = io_reports.len().min(io_rows.len());
    assert!(n >= 5, "{n} iostat intervals");
    let sums: Vec<Vec<f64>> = io_reports[1..n]
        .iter()
        .map(|r| iostat_sums(r, &["r/s", "w/s", "wkB/s", "f/s"]))
        .collect();
    let ours: Vec<&HostSecond> = io_rows[1..n].iter().collect();
    let d = averages(&ours).unwrap().disk.expect("disk rates");
    let col = |i: usize| sums.iter().map(|s| s[i]).collect::<Vec<f64>>();
    // iostat divides by the length it measured: rates, weighted alike.
    agree("r/s", d.rps, weighted(&col(0), &ours), 2.0);
    agree("w/s", d.wps, weighted(&col(1), &ours), 5.0);
    agree("wkB/s", d.wkbps, weighted(&col(2), &ours), 50.0);
    agree("f/s", d.fps, weighted(&col(3), &ours), 5.0);
    assert!(
        d.wps > 10.0 && d.fps > 10.0,
        "a commit-per-statement step writes and flushes: {d:?}"
    );
    server.stop().unwrap();
}

#[test]
fn cpu_is_attributed_to_the_side_that_spent_it() {
    let _turn = serial();
    let dir = server_tempdir();
    let mut server = start_pg(dir.path(), &[]);
    let connector = PgConnector(server.connect_options());
    let mut conn = connector.connect().unwrap();
    // One backend computes (parallel query is off); the postmaster's
    // children are the server.
    let backend: u32 = scalar_i64(conn.as_mut(), "SELECT pg_backend_pid()") as u32;
    let a = sampler_checks::attribute_cpu(
        server.pid(),
        || {
            conn.query_text("SELECT sum(g) FROM generate_series(1, 3000000) g")
                .unwrap();
        },
        || sampler_checks::proc_cpu_secs(backend),
    );
    sampler_checks::check_attribution(&a);
    let procs = a.server_step.server_procs.unwrap();
    assert!(procs >= 4, "the postmaster and its children: {procs}");
    assert!(a.server_step.server_rss_bytes.unwrap() > 1 << 20);
    drop(conn);
    server.stop().unwrap();
}

#[test]
fn a_run_stores_and_exports_the_cost_per_operation() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let steps = sampler_checks::run_point_query_and_update_index(results, &[]);
    for s in &steps {
        let hw = &s["hw"];
        let name = s["name"].as_str().unwrap();
        assert!(num(hw, "dbgb2") > num(hw, "dbgb1"), "{name}: {hw}");
        let overhead = num(hw, "sampler_cpu_pct");
        assert!(
            overhead < 0.5,
            "{name}: the sampler used {overhead}% of a core"
        );
        // One host row per runner second, plus the warm-up.
        let host = s["host_seconds"].as_array().unwrap();
        let measured: Vec<i64> = host
            .iter()
            .filter(|r| r["phase"] == "measured")
            .map(|r| r["sec"].as_i64().unwrap())
            .collect();
        let runner_secs: Vec<i64> = s["per_second"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["sec"].as_i64().unwrap())
            .collect();
        assert_eq!(measured, runner_secs, "{name}");
        assert!(host.iter().any(|r| r["phase"] == "warmup"), "{name}");
    }

    let csv = run_tidemark(&["export", "--format", "csv", "--results", results]);
    let text = stdout(&csv);
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    for name in [
        "rps", "rmbps", "wps", "wmbps", "rpq", "rkbpq", "wpi", "wkbpi", "csps", "cpups", "cspq",
        "cpupq", "scpupq", "ccpupq", "dbgb1", "dbgb2", "rss", "r_await", "w_await", "aqu-sz",
        "%util", "f/s", "d/s",
    ] {
        assert!(header.contains(&name), "CSV has {name}");
    }
    let cpupq = header.iter().position(|c| *c == "cpupq").unwrap();
    for line in text.lines().skip(1) {
        let cell = line.split(',').nth(cpupq).unwrap();
        assert!(cell.parse::<f64>().unwrap() > 0.0, "{line}");
    }
}

#[test]
fn an_external_server_stores_missing_metrics_with_reasons() {
    let _turn = serial();
    let dir = server_tempdir();
    let mut server = start_pg(dir.path(), &[]);
    let url = common::pg_url(&server.connect_options());
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--results",
            results,
            "--target",
            url.as_str(),
            "--tests",
            "point-query",
            "--table-size",
            "2000",
            "--read-secs",
            "1",
            "--warmup-secs",
            "0",
        ];
        args.extend(extra);
        let o = run_tidemark(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        export_steps(results).remove(0)
    };

    let hw = &run(&[])["hw"];
    assert!(hw["scpupq"].is_null() && hw["rss"].is_null(), "{hw}");
    assert!(
        hw["missing"]["server"]
            .as_str()
            .unwrap()
            .contains("external"),
        "{hw}"
    );
    assert!(hw["rps"].is_null() && hw["rpq"].is_null());
    assert!(hw["missing"]["disk"].as_str().unwrap().contains("--device"));
    assert!(hw["dbgb2"].is_null() && hw["missing"]["datadir_size"].is_string());
    assert!(num(hw, "dbgb1") > 0.0, "SQL still gives the database size");
    assert!(num(hw, "cpupq") > 0.0 && num(hw, "ccpupq") > 0.0);

    // Naming the disk brings the disk metrics back.
    let device = devices_for_path(server.datadir()).unwrap().remove(0);
    let hw = &run(&["--device", &device])["hw"];
    assert_eq!(hw["devices"][0], device.as_str());
    assert!(num(hw, "wps") >= 0.0 && num(hw, "rpq") >= 0.0);
    assert!(hw["missing"].get("disk").is_none(), "{hw}");
    server.stop().unwrap();
}

/// The first data row of the markdown table under the line that starts
/// with `heading`, split into cells.
fn markdown_row(md: &str, heading: &str) -> Vec<String> {
    let at = md
        .find(heading)
        .unwrap_or_else(|| panic!("{heading}: {md}"));
    md[at..]
        .lines()
        .filter(|l| l.starts_with("| "))
        .nth(1)
        .unwrap_or_else(|| panic!("{heading}: no table row"))
        .trim_matches('|')
        .split('|')
        .map(|c| c.trim().to_string())
        .collect()
}

#[test]
fn the_insert_benchmark_costs_per_inserted_row_indexed_row_or_query() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let o = run_tidemark(&[
        "run",
        "--suite",
        "ibench",
        "--results",
        results,
        "--clients",
        "1",
        "--rows-load",
        "20000",
        "--rows-l-i1",
        "2000",
        "--rows-l-i2",
        "500",
        "--query-secs",
        "2",
        "--insert-rates",
        "100",
        "--wait-scale",
        "0",
    ]);
    assert_success(&o);
    let steps = export_steps(results);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    for s in &steps {
        let (name, hw, m) = (s["name"].as_str().unwrap(), &s["hw"], &s["metrics"]);
        let (basis, rate) = match name {
            "l.x" => ("indexed rows/s", num(m, "ips")),
            n if n.starts_with('q') => ("qps", num(m, "qps")),
            _ => ("ips", num(m, "ips")),
        };
        eprintln!("{name}: {basis} {rate:.0}/s, cpupq {}", hw["cpupq"]);
        assert_eq!(hw["rate_basis"], basis, "{name}");
        assert!(close(num(hw, "rate"), rate), "{name}: {hw}");
        // Host CPU µs per operation = (us+sy)/100 · ncpu · 10⁶ ÷ the rate.
        let cpu_us = num(hw, "cpups") / 100.0 * num(hw, "ncpu") * 1e6;
        assert!(close(num(hw, "cpupq"), cpu_us / rate), "{name}: {hw}");
        // Writes are per inserted row in every step (l.x: per indexed row).
        assert!(close(num(hw, "ips"), num(m, "ips")), "{name}: {hw}");
        if num(hw, "wps") > 0.0 {
            assert!(close(num(hw, "wpi"), num(hw, "wps") / num(m, "ips")));
        }
    }
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100"]);

    // The report's metrics rows carry the stored numbers and say per what.
    let out = dir.path().join("report");
    let o = run_tidemark(&["report", "--results", results, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for (step, per, hw) in [
        ("l.i0", "per inserted row", &steps[0]["hw"]),
        ("l.x", "per indexed row", &steps[1]["hw"]),
        ("qp100", "cpupq per query", &steps[5]["hw"]),
    ] {
        let heading = format!("Metrics of {step} (");
        let row = markdown_row(&md, &heading);
        assert!(
            md[md.find(&heading).unwrap()..]
                .lines()
                .next()
                .unwrap()
                .contains(per)
        );
        // dbms, ips, qps, rps, …, cspq, cpupq (column 14), dbgb, rss, …
        let cpupq: f64 = row[14].parse().unwrap_or_else(|_| panic!("{row:?}"));
        let stored = num(hw, "cpupq");
        assert!((cpupq - stored).abs() <= 0.01 * stored, "{step}: {row:?}");
        assert!(row[15].parse::<f64>().unwrap() > 0.0, "dbgb: {row:?}");
    }
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("per indexed row") && html.contains("per inserted row"));
}
