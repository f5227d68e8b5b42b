//! Client shards on this host (`--client-hosts local:N`) against a real
//! PostgreSQL server the test starts, coordinated through a PostgreSQL
//! store on it: a 3-shard sysbench step whose merged counts are the sum
//! of the shards' and whose merged histogram is the union of theirs, with
//! every shard started within a stated bound of the published start; a
//! shard killed mid-step fails the step (no partial result kept as whole)
//! and leaves no shard process behind; bad input fails in one line.

mod common;

use std::time::{Duration, Instant};

use common::cli_runs::{fails_in_one_line, short_run};
use common::{PgConnector, pg_url, run_tidemark, server_tempdir, start_pg, stderr, stdout};
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use tidemark::db::{Conn, Connector};

/// How late after the published start a local shard may begin.
const START_BOUND_MS: f64 = 250.0;

fn rows(conn: &mut dyn Conn, sql: &str) -> Vec<Vec<String>> {
    conn.query_text(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
        .collect()
}

fn histogram(bytea_hex: &str) -> Histogram<u64> {
    let hex = bytea_hex.strip_prefix("\\x").expect("bytea hex");
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .expect("an HdrHistogram")
}

/// `args` (of [`short_run`]) with read-only steps of `secs` seconds.
fn set_read_secs(args: &mut [String], secs: &str) {
    let i = args.iter().position(|a| a == "--read-secs").unwrap();
    args[i + 1] = secs.to_string();
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[test]
fn three_local_shards_merge_exactly_and_a_killed_one_fails_the_step() {
    let dir = server_tempdir();
    let pg = start_pg(dir.path(), &[]);
    let opts = pg.connect_options();
    let target = pg_url(&opts);
    let (store, store_opts) = store_on(&pg);
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();

    // Bad input, before any step: no PostgreSQL store, too few threads.
    fails_in_one_line(
        &short_run(
            results,
            "point-query",
            &[&target],
            &["--client-hosts", "local:3", "--threads", "3"],
        )
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
        &["--client-hosts", "--store postgres://"],
        Duration::from_secs(20),
    );
    fails_in_one_line(
        &short_run(
            results,
            "point-query",
            &[&target],
            &[
                "--client-hosts",
                "local:3",
                "--threads",
                "2",
                "--store",
                &store,
            ],
        )
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>(),
        &["--threads 3"],
        Duration::from_secs(20),
    );

    // A 3-shard step: 4 clients, shares 2 + 1 + 1.
    let mut args = short_run(
        results,
        "point-query",
        &[&target],
        &[
            "--client-hosts",
            "local:3",
            "--threads",
            "4",
            "--store",
            &store,
            "--no-report",
        ],
    );
    set_read_secs(&mut args, "2");
    let o = run_tidemark(&args);
    assert!(o.status.success(), "{}\n{}", stderr(&o), stdout(&o));
    assert!(!stderr(&o).contains(&opts.password.clone().unwrap()));

    let mut board = PgConnector(store_opts.clone()).connect().unwrap();
    let steps = rows(
        board.as_mut(),
        "SELECT events, statements, errors, threads, histogram, status FROM steps \
         WHERE name LIKE 'point-query%' AND name NOT LIKE '%.pre%' ORDER BY id",
    );
    let shard_steps = rows(board.as_mut(), "SELECT id FROM shard_steps ORDER BY id");
    // The load's warm-up steps of the suite may be sharded too; the
    // measured test is the last sharded step.
    let last = shard_steps.last().expect("a sharded step")[0].clone();
    let members = rows(
        board.as_mut(),
        &format!(
            "SELECT shard, threads, state, start_lag_ms, result_json, histogram, pid \
             FROM shard_members WHERE shard_step_id = {last} ORDER BY shard"
        ),
    );
    assert_eq!(members.len(), 3);
    let step = steps.last().expect("the point-query step");
    assert_eq!(step[5], "ok", "{step:?}");
    assert_eq!(step[3], "4");
    let mut union = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    let (mut events, mut statements) = (0u64, 0u64);
    let mut threads = Vec::new();
    for m in &members {
        assert_eq!(m[2], "done");
        let lag: f64 = m[3].parse().unwrap();
        assert!(
            (-START_BOUND_MS..START_BOUND_MS).contains(&lag),
            "shard {} started {lag} ms after the published start",
            m[0]
        );
        let report: serde_json::Value = serde_json::from_str(&m[4]).unwrap();
        let e = report["counts"]["events"].as_u64().unwrap();
        assert!(e > 0, "shard {} ran events", m[0]);
        events += e;
        statements += report["counts"]["statements"].as_u64().unwrap();
        let h = histogram(&m[5]);
        assert_eq!(h.len(), e, "one latency per event");
        union.add(&h).unwrap();
        threads.push(m[1].clone());
    }
    assert_eq!(threads, ["2", "1", "1"]);
    assert_eq!(step[0].parse::<u64>().unwrap(), events);
    assert_eq!(step[1].parse::<u64>().unwrap(), statements);
    let merged = histogram(&step[4]);
    assert_eq!(
        merged, union,
        "the step's histogram is the union of the shards'"
    );

    // The export lists the shards.
    let doc: serde_json::Value = serde_json::from_slice(
        &run_tidemark(&["export", "--results", results, "--store", &store]).stdout,
    )
    .unwrap();
    let exported = doc["runs"][0]["targets"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|s| s["shards"].is_array())
        .expect("a step with shards")
        .clone();
    let shards = exported["shards"].as_array().unwrap();
    assert_eq!(shards.len(), 3);
    let sum: u64 = shards.iter().map(|s| s["events"].as_u64().unwrap()).sum();
    assert_eq!(sum, exported["events"].as_u64().unwrap());
    assert!(
        shards
            .iter()
            .all(|s| !s["host"].as_str().unwrap().is_empty() && s["threads"].as_u64() > Some(0)),
        "{shards:?}"
    );

    // The report shows each shard's rate.
    let out = dir.path().join("report");
    let o = run_tidemark(&[
        "report",
        "--results",
        results,
        "--store",
        &store,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let table = md
        .split("## Client shards")
        .nth(1)
        .expect("a shards section");
    for s in shards {
        let cells = format!("| {} | {:.0} |", s["events"], s["qps"].as_f64().unwrap());
        assert!(table.contains(&cells), "{cells} in {table}");
    }

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let section = html
        .split("<section id=\"shards\">")
        .nth(1)
        .expect("an HTML shards section");
    let section = section.split("</section>").next().unwrap();
    assert_eq!(section.matches("<tr><td").count(), 3, "{section}");

    // A shard killed mid-step: the step fails and names it.
    let mut args = short_run(
        results,
        "point-query",
        &[&target],
        &[
            "--client-hosts",
            "local:3",
            "--threads",
            "3",
            "--store",
            &store,
            "--no-report",
            "--reuse-tables",
        ],
    );
    set_read_secs(&mut args, "20");
    let run = common::tidemark()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let before: i64 = rows(
        board.as_mut(),
        "SELECT coalesce(max(id), 0) FROM shard_steps",
    )[0][0]
        .parse()
        .unwrap();
    let waited = Instant::now();
    let pids: Vec<u32> = loop {
        let running = rows(
            board.as_mut(),
            &format!(
                "SELECT m.pid FROM shard_members m JOIN shard_steps s ON s.id = m.shard_step_id \
                 WHERE s.id > {before} AND m.state = 'running' ORDER BY m.shard"
            ),
        );
        if running.len() == 3 {
            break running.iter().map(|r| r[0].parse().unwrap()).collect();
        }
        assert!(
            waited.elapsed() < Duration::from_secs(60),
            "shards never ran"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    std::thread::sleep(Duration::from_secs(1));
    unsafe { libc::kill(pids[1] as i32, libc::SIGKILL) };
    let o = run.wait_with_output().unwrap();
    let out = format!("{}{}", stderr(&o), stdout(&o));
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("shard 1 of 3"), "{out}");
    let status = rows(
        board.as_mut(),
        "SELECT status, failure, events FROM steps ORDER BY id DESC LIMIT 1",
    );
    assert_eq!(status[0][0], "failed", "{status:?}");
    assert!(status[0][1].contains("shard 1 of 3"), "{status:?}");
    assert_eq!(status[0][2], "0", "no partial counts kept as the step's");
    for pid in pids {
        assert!(!alive(pid), "shard process {pid} outlived the step");
    }
}

/// The store of a test: database `shard_store` on the test's server, its
/// URL and connection options.
fn store_on(
    pg: &tidemark::server::postgres::ManagedPostgres,
) -> (String, tidemark::db::postgres::PgConnectOptions) {
    let opts = pg.connect_options();
    let mut admin = PgConnector(opts.clone()).connect().unwrap();
    admin.execute_text("CREATE DATABASE shard_store").unwrap();
    let mut store_opts = opts;
    store_opts.dbname = "shard_store".into();
    (pg_url(&store_opts), store_opts)
}

#[test]
fn two_local_shards_run_the_insert_benchmark_one_table_per_client() {
    let dir = server_tempdir();
    let pg = start_pg(dir.path(), &[]);
    let target = pg_url(&pg.connect_options());
    let (store, store_opts) = store_on(&pg);
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let mut args = common::ibench_checks::small_run(results, &[&target], "1");
    args.extend(
        [
            "--client-hosts",
            "local:2",
            "--store",
            &store,
            "--no-report",
        ]
        .map(String::from),
    );
    let o = run_tidemark(&args);
    assert!(o.status.success(), "{}\n{}", stderr(&o), stdout(&o));

    let mut board = PgConnector(store_opts).connect().unwrap();
    let steps = rows(
        board.as_mut(),
        "SELECT id, name, events, statements, histogram, status FROM steps ORDER BY id",
    );
    let sharded = rows(board.as_mut(), "SELECT id FROM shard_steps ORDER BY id");
    assert_eq!(steps.len(), 6, "{steps:?}");
    assert_eq!(
        sharded.len(),
        6,
        "one sharded step per Insert Benchmark step"
    );
    for (step, shard_step) in steps.iter().zip(&sharded) {
        assert_eq!(step[5], "ok", "{step:?}");
        let members = rows(
            board.as_mut(),
            &format!(
                "SELECT shard, threads, start_lag_ms, result_json, histogram FROM shard_members \
                 WHERE shard_step_id = {} ORDER BY shard",
                shard_step[0]
            ),
        );
        assert_eq!(members.len(), 2);
        let mut union = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        let (mut events, mut statements) = (0u64, 0u64);
        let mut role_events: std::collections::BTreeMap<String, u64> = Default::default();
        for m in &members {
            assert_eq!(m[1], "1", "one client (and its table) per shard");
            let lag: f64 = m[2].parse().unwrap();
            assert!(
                (-START_BOUND_MS..START_BOUND_MS).contains(&lag),
                "lag {lag} ms"
            );
            let report: serde_json::Value = serde_json::from_str(&m[3]).unwrap();
            events += report["counts"]["events"].as_u64().unwrap();
            statements += report["counts"]["statements"].as_u64().unwrap();
            let clients: Vec<u64> = report["clients"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["client"].as_u64().unwrap())
                .collect();
            assert_eq!(
                clients,
                [m[0].parse::<u64>().unwrap()],
                "shard i runs client i"
            );
            for r in report["roles"].as_array().unwrap() {
                *role_events
                    .entry(r["role"].as_str().unwrap().into())
                    .or_default() += r["counts"]["events"].as_u64().unwrap();
            }
            union.add(histogram(&m[4])).unwrap();
        }
        assert_eq!(step[2].parse::<u64>().unwrap(), events, "{}", step[1]);
        assert_eq!(step[3].parse::<u64>().unwrap(), statements, "{}", step[1]);
        assert_eq!(histogram(&step[4]), union, "{}: the union", step[1]);
        let stored_roles = rows(
            board.as_mut(),
            &format!(
                "SELECT role, events FROM step_roles WHERE step_id = {} ORDER BY role",
                step[0]
            ),
        );
        assert!(!stored_roles.is_empty(), "{}", step[1]);
        for r in &stored_roles {
            assert_eq!(
                r[1].parse::<u64>().unwrap(),
                role_events[&r[0]],
                "{} role {}",
                step[1],
                r[0]
            );
        }
    }
    // The suite's own checks: six steps, each ok, fairness over 2 clients.
    let doc: serde_json::Value = serde_json::from_slice(
        &run_tidemark(&["export", "--results", results, "--store", &store]).stdout,
    )
    .unwrap();
    for s in doc["runs"][0]["targets"][0]["steps"].as_array().unwrap() {
        assert_eq!(
            s["metrics"]["fairness"]["clients"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
        assert_eq!(s["shards"].as_array().unwrap().len(), 2, "{}", s["name"]);
    }
}
