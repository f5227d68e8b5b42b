//! Workload files (`tidemark run --workload`) on real servers: two
//! weighted transactions on PostgreSQL, MariaDB and SQLite (counts within
//! binomial bounds, the report's own group), pgbench's built-ins against
//! `pgbench -b` from pg_stat_statements, retries of
//! serialization failures counted per class, and bad files refused in one
//! line before any server starts.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::cli_runs::{export_json, fails_in_one_line};
use common::{
    PgConnector, assert_success, run_tidemark, scalar_i64, server_tempdir, start_pg, stderr,
};
use tidemark::db::{Conn, Connector};

/// Two transactions, 3:1: a read that takes a value `into` a variable and
/// uses it, and an upsert.
const TWO: &str = r#"
name = "two-tx"
[params]
keys = 1000

[[table]]
name = "wf_kv"
sql = "CREATE TABLE wf_kv (k INT NOT NULL PRIMARY KEY, v {text(20)})"
rows = "keys"
columns = { k = "row", v = "string(5, 10)" }

[[transaction]]
name = "read"
weight = 3
set = { k = "zipfian(1, keys)" }
[[transaction.statement]]
sql = "SELECT v FROM wf_kv WHERE k = :k"
into = "got"
[[transaction.statement]]
sql = "SELECT k FROM wf_kv WHERE v = :got LIMIT 1"

[[transaction]]
name = "write"
weight = 1
set = { k = "uniform(1, keys)", v = "string(8)" }
[[transaction.statement]]
sql = "INSERT INTO wf_kv (k, v) VALUES (:k, :v) {upsert(k; v)}"
"#;

/// The steps of the export's first run, per target label.
fn steps_by_target(doc: &serde_json::Value) -> BTreeMap<String, serde_json::Value> {
    doc["runs"][0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["label"].as_str().unwrap_or_default().to_string(),
                t["steps"][0].clone(),
            )
        })
        .collect()
}

#[test]
fn two_weighted_transactions_run_on_every_family_in_their_proportions() {
    let dir = server_tempdir();
    let file = dir.path().join("two.toml");
    std::fs::write(&file, TWO).unwrap();
    let results = dir.path().join("results");
    let db = dir.path().join("two.db");
    let o = run_tidemark(&[
        "run",
        "--workload",
        file.to_str().unwrap(),
        "--target",
        "pg@system",
        "--target",
        "mariadb@system",
        "--target",
        &format!("sqlite:{}", db.display()),
        "--threads",
        "2",
        "--write-secs",
        "2",
        "--warmup-secs",
        "0.5",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_success(&o);
    let out = common::stdout(&o);
    assert!(
        out.contains("workload file"),
        "the summary has the group: {out}"
    );

    let doc = export_json(results.to_str().unwrap());
    let steps = steps_by_target(&doc);
    assert_eq!(steps.len(), 3, "{steps:?}");
    assert_eq!(doc["runs"][0]["suite"], "workload");
    for (label, step) in &steps {
        assert_eq!(step["group"], "workload", "{label}");
        let m = &step["metrics"];
        let read = m["transactions"]["read"].as_u64().unwrap();
        let write = m["transactions"]["write"].as_u64().unwrap();
        let n = read + write;
        assert!(n > 100, "{label}: only {n} transactions");
        assert_eq!(
            n,
            step["events"].as_u64().unwrap(),
            "{label}: the tally is the runner's events"
        );
        // Statements: 2 per read, 1 per write.
        assert_eq!(
            2 * read + write,
            step["statements"].as_u64().unwrap(),
            "{label}"
        );
        // Binomial(n, 3/4): within 4.5 standard deviations (a false
        // alarm about once in 150,000 runs).
        let (mean, sd) = (n as f64 * 0.75, (n as f64 * 0.75 * 0.25).sqrt());
        assert!(
            (read as f64 - mean).abs() <= 4.5 * sd,
            "{label}: {read} reads of {n}, expected {mean:.0} ± {:.0}",
            4.5 * sd
        );
        assert_eq!(step["errors"], 0, "{label}: {step}");
        // Each statement's executions and time: a transaction under way
        // when the measured interval began counts only its later
        // statements (at most one per client).
        for (key, of) in [("read#01", read), ("read#02", read), ("write#01", write)] {
            let s = &m["statements"][key];
            let count = s["count"]
                .as_u64()
                .unwrap_or_else(|| panic!("{label}: {key} in {m}"));
            assert!(
                count <= of && of - count <= 2,
                "{label}: {key} ran {count} times of {of}"
            );
            let mean_us = s["ns"].as_u64().unwrap() as f64 / count as f64 / 1e3;
            assert!(
                mean_us > 1.0 && mean_us < 100_000.0,
                "{label}: {key} {mean_us} µs"
            );
        }
        assert!(
            m["statement_sql"]["read#01"]
                .as_str()
                .unwrap()
                .starts_with("SELECT v FROM wf_kv"),
            "{label}: {m}"
        );
        assert!(m["schedule"].is_null(), "not paced: {m}");
    }

    let out_dir = dir.path().join("report");
    let o = run_tidemark(&[
        "report",
        "--results",
        results.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
    ]);
    assert_success(&o);
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    let section = md
        .split("### workload file")
        .nth(1)
        .expect("the report has the workload group");
    assert!(section.contains("two-tx"), "{section}");
    assert!(
        section.contains("Transactions (measured interval"),
        "{section}"
    );
    let html = std::fs::read_to_string(out_dir.join("index.html")).unwrap();
    let wl = html
        .split("<table class=\"wl\">")
        .nth(1)
        .expect("the HTML report has the table");
    assert!(wl.contains("<td class=\"l\">read "), "{wl}");
    for (label, step) in &steps {
        let read = &step["metrics"]["transactions"]["read"];
        let row = format!("| two-tx | {label} | read {read} (");
        assert!(section.contains(&row), "{row} in {section}");
    }
    // One row per statement with a mean for each of the three targets.
    let lat = section
        .split("Statement latencies (mean ms per execution")
        .nth(1)
        .expect("the statement latencies follow the transactions");
    for key in ["read#01", "read#02", "write#01"] {
        let row = lat
            .lines()
            .find(|l| l.starts_with(&format!("| two-tx | {key} | `")))
            .unwrap_or_else(|| panic!("{key} in {lat}"));
        let means: Vec<f64> = row
            .split('|')
            .rev()
            .skip(1)
            .take(3)
            .map(|c| c.trim().parse::<f64>().unwrap_or_else(|_| panic!("{row}")))
            .collect();
        assert!(means.iter().all(|m| *m > 0.0), "{row}");
    }
    let stmt = html
        .split("<table class=\"stmt\">")
        .nth(1)
        .expect("the HTML report has the statement table");
    assert!(
        stmt.contains("read#02") && stmt.contains("SELECT k FROM wf_kv"),
        "{stmt}"
    );
}

/// Per statement shape of database `db`: calls (from pg_stat_statements).
fn calls_by_shape(conn: &mut dyn Conn, db: &str) -> BTreeMap<String, i64> {
    conn.query_text(&format!(
        "SELECT s.query, s.calls FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '{db}'"
    ))
    .unwrap()
    .into_iter()
    .map(|r| {
        let q = r[0].clone().unwrap_or_default();
        let shape = q.split_whitespace().collect::<Vec<_>>().join(" ");
        (shape, r[1].as_deref().unwrap_or("0").parse().unwrap())
    })
    .collect()
}

#[test]
fn pgbench_builtins_send_the_statements_pgbench_sends() {
    let dir = server_tempdir();
    let mut server = start_pg(
        dir.path(),
        &[("shared_preload_libraries", "pg_stat_statements")],
    );
    let opts = server.connect_options();
    let mut admin = PgConnector(opts.clone()).connect().unwrap();
    admin
        .execute_text("CREATE EXTENSION pg_stat_statements")
        .unwrap();
    admin.execute_text("CREATE DATABASE pgb").unwrap();
    let url = common::pg_url(&opts);
    // The loader's multi-row INSERTs are not the transaction's. Every
    // shape called at least half as often as there were transactions
    // must be called exactly once per transaction.
    let per_tx = |calls: BTreeMap<String, i64>, n: i64| -> Vec<String> {
        calls
            .into_iter()
            .filter(|(q, c)| 2 * *c >= n && !q.contains("), ("))
            .map(|(q, c)| {
                assert_eq!(c, n, "{q}: {c} calls in {n} transactions");
                q
            })
            .collect()
    };
    let pgbench = server.binaries().bindir.join("pgbench");
    let run = |args: &[&str]| {
        let o = std::process::Command::new(&pgbench)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &opts.port.to_string(),
                "-U",
                &opts.user,
            ])
            .args(args)
            .env("PGPASSWORD", opts.password.as_deref().unwrap_or_default())
            .output()
            .expect("pgbench runs (postgresql-client)");
        assert!(o.status.success(), "pgbench {args:?}: {}", stderr(&o));
    };
    run(&["-i", "-s", "1", "-q", "pgb"]);
    for (builtin, statements) in [("tpcb-like", 7), ("simple-update", 5), ("select-only", 1)] {
        admin
            .execute_text("SELECT pg_stat_statements_reset()")
            .unwrap();
        let results = dir.path().join(format!("results-{builtin}"));
        let o = run_tidemark(&[
            "run",
            "--workload",
            builtin,
            "--target",
            &url,
            "--threads",
            "1",
            "--write-secs",
            "1",
            "--warmup-secs",
            "0",
            "--results",
            results.to_str().unwrap(),
        ]);
        assert_success(&o);
        let doc = export_json(results.to_str().unwrap());
        let step = steps_by_target(&doc).into_values().next().unwrap();
        let tx = step["metrics"]["transactions"][builtin].as_i64().unwrap();
        assert!(tx > 50, "{builtin}: only {tx} transactions");
        assert_eq!(
            scalar_i64(
                admin.as_mut(),
                "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'pgbench%'"
            ),
            0,
            "the run drops the tables it created"
        );
        let ours = per_tx(calls_by_shape(admin.as_mut(), &opts.dbname), tx);

        admin
            .execute_text("SELECT pg_stat_statements_reset()")
            .unwrap();
        run(&["-b", builtin, "-t", "300", "-c", "1", "pgb"]);
        let theirs = per_tx(calls_by_shape(admin.as_mut(), "pgb"), 300);
        eprintln!("tidemark {builtin}: {tx} transactions, each statement {tx} calls: {ours:#?}");
        eprintln!("pgbench -b {builtin} -t 300: each statement 300 calls: {theirs:#?}");
        assert_eq!(theirs.len(), statements, "pgbench's {builtin}: {theirs:#?}");
        assert_eq!(
            ours, theirs,
            "{builtin}: tidemark sends each of pgbench's statements once per transaction, and no other"
        );
    }
    server.stop().unwrap();
}

#[test]
fn serialization_failures_are_retried_and_counted_by_class() {
    let dir = server_tempdir();
    let mut server = start_pg(dir.path(), &[]);
    let url = common::pg_url(&server.connect_options());
    let file = dir.path().join("hot.toml");
    std::fs::write(
        &file,
        r#"
name = "hot-row"
[[table]]
name = "wf_hot"
sql = "CREATE TABLE wf_hot (id INT PRIMARY KEY, n INT)"
rows = 1
columns = { id = "row", n = "0" }
[[transaction]]
name = "bump"
[[transaction.statement]]
sql = "BEGIN ISOLATION LEVEL REPEATABLE READ"
[[transaction.statement]]
sql = "SELECT n FROM wf_hot WHERE id = 1"
into = "n"
[[transaction.statement]]
sql = "UPDATE wf_hot SET n = :n + 1 WHERE id = 1"
[[transaction.statement]]
sql = "COMMIT"
[retry]
max_tries = 2
on = ["serialization"]
"#,
    )
    .unwrap();
    let results = dir.path().join("results");
    let o = run_tidemark(&[
        "run",
        "--workload",
        file.to_str().unwrap(),
        "--target",
        &url,
        "--threads",
        "4",
        "--write-secs",
        "2",
        "--warmup-secs",
        "0",
        "--max-tries",
        "50",
        "--keep-datadir",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_success(&o);
    let doc = export_json(results.to_str().unwrap());
    let step = steps_by_target(&doc).into_values().next().unwrap();
    let m = &step["metrics"];
    let retries = m["retries"]["serialization"].as_u64().unwrap();
    assert!(
        retries > 0,
        "four clients on one row under REPEATABLE READ: {m}"
    );
    assert_eq!(m["retries"]["deadlock"], 0, "{m}");
    let done = m["transactions"]["bump"].as_i64().unwrap();
    let failed = m["failed"]["serialization"].as_i64().unwrap();
    assert_eq!(
        step["params"]["max_tries"], 50,
        "--max-tries overrides the file"
    );
    // Every committed transaction added one, whether it was retried or not.
    let mut conn = PgConnector(server.connect_options()).connect().unwrap();
    let n = scalar_i64(conn.as_mut(), "SELECT n FROM wf_hot WHERE id = 1");
    assert_eq!(n, done, "{m}");
    assert!(failed <= done, "{m}");
    server.stop().unwrap();
}

#[test]
fn bad_workload_files_fail_in_one_line_before_any_server_starts() {
    let dir = server_tempdir();
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let syntax = write(
        "syntax.toml",
        &TWO.replace(
            "[[transaction]]\nname = \"write\"",
            "[[transaction]\nname = \"write\"",
        ),
    );
    let line = TWO
        .lines()
        .position(|l| l.contains("name = \"write\""))
        .unwrap();
    let pareto = write(
        "gen.toml",
        &TWO.replace("uniform(1, keys)", "pareto(1, keys)"),
    );
    let gen_line = TWO
        .lines()
        .position(|l| l.contains("uniform(1, keys)"))
        .unwrap()
        + 1;
    let conflict = write(
        "conflict.toml",
        &TWO.replace(
            "{upsert(k; v)}",
            "ON CONFLICT (k) DO UPDATE SET v = excluded.v",
        ),
    );
    let conflict_line = TWO.lines().position(|l| l.contains("{upsert")).unwrap() + 1;
    let within = Duration::from_secs(5);
    let run = |file: &str| {
        vec![
            "run".to_string(),
            "--workload".into(),
            file.into(),
            "--target".into(),
            "mariadb@system".into(),
            "--results".into(),
            dir.path().join("results").to_str().unwrap().into(),
        ]
    };
    let args = run(&syntax);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_in_one_line(
        &args,
        &[&format!("{syntax}:{line}:"), "fix the TOML"],
        within,
    );
    let args = run(&pareto);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_in_one_line(
        &args,
        &[
            &format!("{pareto}:{gen_line}:"),
            "unknown generator 'pareto'",
            "uniform",
        ],
        within,
    );
    let args = run(&conflict);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    fails_in_one_line(
        &args,
        &[
            &format!("{conflict}:{conflict_line}:"),
            "statement 1 of transaction 'write'",
            "mysql cannot run ON CONFLICT",
            "{upsert",
        ],
        within,
    );
    // Client shards split the built-in suites only.
    fails_in_one_line(
        &[
            "run",
            "--workload",
            "tpcb-like",
            "--client-hosts",
            "local:2",
            "--store",
            "postgres://tidemark@127.0.0.1:1/tidemark",
        ],
        &["--client-hosts local:2", "drop --client-hosts"],
        within,
    );
    assert!(
        !dir.path().join("results").join("servers").exists(),
        "no server was set up"
    );
}

#[test]
fn a_rate_paces_the_transactions_on_an_open_loop_schedule() {
    let dir = server_tempdir();
    let file = dir.path().join("paced.toml");
    let paced = TWO.replace("name = \"two-tx\"", "name = \"paced\"\nrate = 1000");
    std::fs::write(&file, paced).unwrap();
    let results = dir.path().join("results");
    let db = dir.path().join("paced.db");
    let o = run_tidemark(&[
        "run",
        "--workload",
        file.to_str().unwrap(),
        "--target",
        &format!("sqlite:{}", db.display()),
        "--threads",
        "2",
        "--write-secs",
        "2",
        "--rate",
        "100",
        "--warmup-secs",
        "0",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_success(&o);
    let doc = export_json(results.to_str().unwrap());
    let step = steps_by_target(&doc).into_values().next().unwrap();
    let m = &step["metrics"]["transactions"];
    let n = m["read"].as_u64().unwrap() + m["write"].as_u64().unwrap();
    // --rate 100 (over the file's 1000) for 2 s; unpaced, SQLite runs
    // thousands a second.
    assert!(
        (190..=204).contains(&n),
        "{n} transactions at rate 100 for 2 s"
    );
    assert_eq!(step["params"]["rate"], 100.0);
    // Latency from each transaction's intended start (pgbench --rate's):
    // never below the service time, event by event, so not at p99 either.
    let s = &step["metrics"]["schedule"];
    let (intended, service) = (
        s["intended_p99_us"]
            .as_u64()
            .unwrap_or_else(|| panic!("{step}")),
        step["latency_us"]["p99"].as_u64().unwrap(),
    );
    assert!(
        intended >= service && intended > 0,
        "{intended} vs {service}"
    );
    assert!(s["intended_max_us"].as_u64().unwrap() >= step["latency_us"]["max"].as_u64().unwrap());
    assert!(s["late_events"].as_u64().unwrap() <= n);
    assert!(
        common::stderr(&o).contains("from the intended start: p99"),
        "{}",
        common::stderr(&o)
    );
}

#[test]
fn think_time_sleeps_after_each_transaction() {
    let dir = server_tempdir();
    let file = dir.path().join("think.toml");
    let think = TWO
        .replace("weight = 3", "weight = 3\nthink_ms = 50")
        .replace("weight = 1", "weight = 1\nthink_ms = 50");
    std::fs::write(&file, think).unwrap();
    let results = dir.path().join("results");
    let db = dir.path().join("think.db");
    let o = run_tidemark(&[
        "run",
        "--workload",
        file.to_str().unwrap(),
        "--target",
        &format!("sqlite:{}", db.display()),
        "--threads",
        "1",
        "--write-secs",
        "1",
        "--warmup-secs",
        "0",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_success(&o);
    let doc = export_json(results.to_str().unwrap());
    let step = steps_by_target(&doc).into_values().next().unwrap();
    let events = step["events"].as_u64().unwrap();
    // One client, 50 ms after each transaction: at most 20 in a second.
    assert!((10..=21).contains(&events), "{events} transactions");
    assert!(
        step["latency_us"]["p50"].as_u64().unwrap() >= 50_000,
        "{}",
        step["latency_us"]
    );
}

#[test]
fn deadlocks_on_mariadb_are_retried_and_counted_by_class() {
    let dir = server_tempdir();
    let mut server = common::start_mariadb(dir.path(), "base", &[]);
    let opts = server.connect_options();
    let url = common::mariadb_url(&opts);
    let crossed = |name: &str, first: u32, second: u32| {
        format!(
            r#"
[[transaction]]
name = "{name}"
[[transaction.statement]]
sql = "BEGIN"
[[transaction.statement]]
sql = "UPDATE wf_pair SET n = n + 1 WHERE id = {first}"
[[transaction.statement]]
sql = "DO SLEEP(0.002)"
[[transaction.statement]]
sql = "UPDATE wf_pair SET n = n + 1 WHERE id = {second}"
[[transaction.statement]]
sql = "COMMIT"
"#
        )
    };
    let file = dir.path().join("crossed.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"crossed\"\n[retry]\nmax_tries = 50\non = [\"deadlock\"]\n\n[[table]]\nname = \"wf_pair\"\nsql = \"CREATE TABLE wf_pair (id INT PRIMARY KEY, n INT)\"\nrows = 2\ncolumns = {{ id = \"row\", n = \"0\" }}\n{}{}",
            crossed("one-two", 1, 2),
            crossed("two-one", 2, 1)
        ),
    )
    .unwrap();
    let results = dir.path().join("results");
    let o = run_tidemark(&[
        "run",
        "--workload",
        file.to_str().unwrap(),
        "--target",
        &url,
        "--threads",
        "4",
        "--write-secs",
        "2",
        "--warmup-secs",
        "0",
        "--keep-datadir",
        "--results",
        results.to_str().unwrap(),
    ]);
    assert_success(&o);
    let doc = export_json(results.to_str().unwrap());
    let step = steps_by_target(&doc).into_values().next().unwrap();
    let m = &step["metrics"];
    assert!(
        m["retries"]["deadlock"].as_u64().unwrap() > 0,
        "opposite lock orders: {m}"
    );
    eprintln!("crossed on MariaDB: {m}");
    assert_eq!(m["retries"]["serialization"], 0, "{m}");
    let committed = m["transactions"]["one-two"].as_i64().unwrap()
        + m["transactions"]["two-one"].as_i64().unwrap();
    // A retried transaction was rolled back: each commit added one to both rows.
    let mut conn = tidemark::db::mysql::MyConnector(opts).connect().unwrap();
    for id in [1, 2] {
        let n = scalar_i64(
            conn.as_mut(),
            &format!("SELECT n FROM wf_pair WHERE id = {id}"),
        );
        assert_eq!(n, committed, "row {id}: {m}");
    }
    server.stop().unwrap();
}
