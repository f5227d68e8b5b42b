//! The server-counter sampler against real managed servers: what it records
//! over a write-heavy step matches what the server's own views say before
//! and after the step (PostgreSQL: checkpoints, WAL bytes, dead tuples;
//! MariaDB: the history list length), and a CLI run stores the readings
//! with the step.

mod common;

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::*;
use tidemark::db::mysql::MyConnector;
use tidemark::db::{Conn, Connector, Dialect};
use tidemark::metrics::server_counters::CounterSampler;
use tidemark::record::{Phase, ServerCounters};
use tidemark::runner::{Schedule, StepResult, StepStatus, run_step};
use tidemark::workload::sysbench::{Sysbench, catalog, load};

/// Loads one 20 000-row table.
fn load_table(connector: &dyn Connector) {
    let cancel = AtomicBool::new(false);
    load::create_and_load(connector, 1, 20_000, 3, 2, &cancel, &mut |_, _| {}).unwrap();
}

/// Runs update-index (every statement a
/// committed non-HOT update) for `secs` with the counter sampler ticking
/// like the step driver ticks it; `during` runs on the test's own
/// connection a second into the step.
fn sampled_update_step(
    connector: &dyn Connector,
    dialect: Dialect,
    secs: f64,
    during: impl FnOnce() + Send,
) -> (StepResult, ServerCounters) {
    let cancel = AtomicBool::new(false);
    let suite: Sysbench = sysbench_checks::suite(dialect, secs);
    let test = catalog::select(&["update-index".to_string()]).unwrap()[0].clone();
    let plan = suite.step_plan(&test, "t");
    let sampler = CounterSampler::start(connector).expect("the counter sampler starts");
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_secs(1));
            during();
        });
        run_step(
            &plan,
            Schedule::PLAIN,
            connector,
            &suite.clients(&test, 0),
            &cancel,
            &mut |p| {
                sampler.tick(if p.warming_up {
                    Phase::Warmup
                } else {
                    Phase::Measured
                })
            },
        )
        .unwrap()
    });
    let (counters, error) = sampler.stop();
    assert_eq!(error, None);
    assert_eq!(result.status, StepStatus::Ok);
    (result, counters)
}

fn pg_views(conn: &mut dyn Conn) -> (f64, f64, f64) {
    let num = |conn: &mut dyn Conn, sql: &str| scalar(conn, sql).parse::<f64>().unwrap();
    (
        num(conn, "SELECT checkpoints_req FROM pg_stat_bgwriter"),
        num(conn, "SELECT wal_bytes FROM pg_stat_wal"),
        num(conn, "SELECT sum(n_dead_tup) FROM pg_stat_user_tables"),
    )
}

#[test]
fn a_write_step_on_postgres_records_what_its_views_say() {
    let _turn = serial();
    let dir = server_tempdir();
    // No autovacuum: the dead tuples the step leaves stay for the views
    // to count after it.
    let mut server = start_pg(dir.path(), &[("autovacuum", "off")]);
    let connector = PgConnector(server.connect_options());
    let mut admin = connector.connect().unwrap();
    let mut checkpointer = connector.connect().unwrap();
    load_table(&connector);
    // The load's own dead tuples and statistics settle first.
    admin.execute_text("VACUUM").unwrap();
    let before = pg_views(admin.as_mut());
    let (result, c) = sampled_update_step(&connector, Dialect::Postgres, 4.0, || {
        checkpointer.execute_text("CHECKPOINT").unwrap();
    });
    let after = pg_views(admin.as_mut());
    eprintln!("views before {before:?}, after {after:?}");

    let (ck0, ck1) = c.first_and_last("checkpoints_req").unwrap();
    assert_eq!(
        ck1 - ck0,
        after.0 - before.0,
        "the CHECKPOINT during the step"
    );
    assert!(ck1 - ck0 >= 1.0);

    let (w0, w1) = c.first_and_last("wal_bytes").unwrap();
    let (view_growth, ours) = (after.1 - before.1, w1 - w0);
    assert!(
        w0 >= before.1 && w1 <= after.1,
        "{before:?} {after:?} {w0} {w1}"
    );
    assert!(
        view_growth - ours <= 0.01 * view_growth + 65536.0,
        "WAL bytes: ours {ours}, the views' {view_growth}"
    );
    let updates = result.counts.statements as f64;
    let (measured, _) = c.measured_growth("wal_bytes").unwrap();
    assert!(
        measured > 50.0 * updates * 0.5,
        "{measured} WAL bytes for {updates} updates"
    );

    let dead = c.first_and_last("n_dead_tup").unwrap().1;
    assert_eq!(dead, after.2, "end-of-step dead tuples");
    assert!(dead > 100.0, "update-index leaves dead tuples: {dead}");
    // One reading per runner second, the baseline and the last one.
    let measured = c
        .readings
        .iter()
        .filter(|r| r.phase == Phase::Measured)
        .count();
    assert!((3..=6).contains(&measured), "{measured} measured readings");
    let read_ms = c.series("read_ms", tidemark::record::CounterKind::Gauge);
    let worst = read_ms.iter().map(|s| s.2).fold(0.0, f64::max);
    eprintln!("a reading takes up to {worst:.2} ms");
    drop((admin, checkpointer));
    server.stop().unwrap();
}

fn history_length(conn: &mut dyn Conn) -> f64 {
    let rows = conn
        .query_text("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'")
        .unwrap();
    rows[0][1].as_deref().unwrap().parse().unwrap()
}

#[test]
fn a_write_step_on_mariadb_records_the_history_length_its_status_says() {
    let _turn = serial();
    let dir = server_tempdir();
    let mut server = start_mariadb(dir.path(), "base", &[]);
    let connector = MyConnector(server.connect_options());
    load_table(&connector);
    let mut reader = connector.connect().unwrap();
    // An open read view holds purge back: the history the step writes
    // stays until the view closes, so before and after are exact.
    reader
        .execute_text("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        .unwrap();
    scalar(
        reader.as_mut(),
        "SELECT count(*) FROM information_schema.tables",
    );
    let mut admin = connector.connect().unwrap();
    let before = history_length(admin.as_mut());
    let (_, c) = sampled_update_step(&connector, Dialect::Mysql, 3.0, || {});
    let after = history_length(admin.as_mut());
    let (h0, h1) = c.first_and_last("history_list_length").unwrap();
    eprintln!("history: views {before} → {after}, ours {h0} → {h1}");
    assert!(h0 >= before && h1 <= after && h1 >= h0);
    assert!(after - before > 100.0, "the update step leaves history");
    assert!(
        (after - h1).abs() <= 0.01 * after,
        "end-of-step history length: ours {h1}, the server's {after}"
    );
    let (log, _) = c.measured_growth("log_bytes_written").unwrap();
    assert!(log > 0.0, "redo written during the step");
    assert!(c.names().contains(&"pages_dirty"));
    reader.execute_text("COMMIT").unwrap();
    drop((reader, admin));
    server.stop().unwrap();
}

#[test]
fn a_run_stores_the_server_counters_of_each_step() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let o = run_tidemark(&[
        "run",
        "--results",
        results.to_str().unwrap(),
        "--tests",
        "update-index",
        "--table-size",
        "5000",
        "--write-secs",
        "2",
        "--warmup-secs",
        "1",
    ]);
    assert_success(&o);
    let store = tidemark::store::Store::open_existing(&results).unwrap();
    let run = store.load_run(1).unwrap();
    let step = &run.targets[0].steps[0];
    let host = step.host.as_ref().unwrap();
    assert!(
        !host.metrics.missing.contains_key("server_counters"),
        "{:?}",
        host.metrics.missing
    );
    let c = host.server_counters.as_ref().expect("stored readings");
    let phases: Vec<Phase> = c.readings.iter().map(|r| r.phase).collect();
    assert!(phases.contains(&Phase::Warmup) && phases.contains(&Phase::Measured));
    let (wal, secs) = c.measured_growth("wal_bytes").unwrap();
    assert!(wal > 0.0 && secs > 1.0, "{wal} WAL bytes in {secs} s");

    // The report shows WAL bytes per query: the measured growth over the
    // queries of the measured interval, and charts it per second.
    let out = dir.path().join("report");
    let o = run_tidemark(&[
        "report",
        "--results",
        results.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_success(&o);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let line = md
        .lines()
        .find(|l| l.starts_with("| WAL bytes per query |"))
        .unwrap_or_else(|| panic!("no WAL row: {md}"));
    let shown: f64 = line.split('|').nth(2).unwrap().trim().parse().unwrap();
    let rate = host.metrics.rates.as_ref().unwrap().rate;
    let expected = wal / (rate * secs);
    assert!(
        (shown - expected).abs() <= 0.01 * expected,
        "{line} vs {expected}"
    );
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("id=\"server-counters\"") && html.contains("WAL bytes per second"));
}

/// PostgreSQL 17 moved the checkpoint counters to `pg_stat_checkpointer`
/// and the backends' writes to `pg_stat_io`: on 18.4 (installed through
/// the package client into the tests' shared cache) the sampler reads
/// every counter from the new views, none missing, and the step's WAL and
/// backend writes grow.
#[test]
fn a_run_on_postgres_18_reads_the_counters_from_the_newer_views() {
    let _turn = serial();
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let o = tidemark()
        .env("TIDEMARK_CACHE", "/tmp/tidemark-test-cache")
        .args([
            "run",
            "--results",
            results.to_str().unwrap(),
            "--target",
            "pg@18.4",
            "--suite",
            "sysbench",
            "--tests",
            "update-index",
            "--table-size",
            "5000",
            "--write-secs",
            "2",
            "--warmup-secs",
            "1",
            "--no-report",
        ])
        .output()
        .unwrap();
    assert_success(&o);
    let store = tidemark::store::Store::open_existing(&results).unwrap();
    let run = store.load_run(1).unwrap();
    assert!(run.targets[0].info.version_number.starts_with("18."));
    let host = run.targets[0].steps[0].host.as_ref().unwrap();
    assert!(
        !host.metrics.missing.contains_key("server_counters"),
        "{:?}",
        host.metrics.missing
    );
    let c = host.server_counters.as_ref().expect("stored readings");
    let (_, names) = tidemark::metrics::server_counters::postgres_sql(180004);
    for name in names {
        assert!(
            c.names().contains(&name),
            "{name} read on 18: {:?}",
            c.names()
        );
    }
    let (wal, _) = c.measured_growth("wal_bytes").unwrap();
    assert!(wal > 0.0, "{wal} WAL bytes");
    let (b0, b1) = c.first_and_last("buffers_backend").unwrap();
    assert!(b1 >= b0, "pg_stat_io writes never shrink: {b0} → {b1}");
    let (_, dead) = c.first_and_last("n_dead_tup").unwrap();
    assert!(dead > 0.0, "update-index leaves dead tuples");
}
