//! Store tests against real SQLite files in temporary directories.

use std::path::Path;

use serde_json::json;

use super::*;
use crate::record::{
    ClientResult, Counts, Group, SecondSample, StepHost, StepInfo, StepResult, StepStatus,
    StorageFacts, TargetInfo, new_histogram,
};

pub(super) fn run_info() -> RunInfo {
    RunInfo {
        started_at: "2026-11-20T23:51:04Z".into(),
        command_line: "tidemark run --profile quick pg@15 pg@16".into(),
        tidemark_version: "0.1.0".into(),
        profile: "quick".into(),
        suite: "sysbench".into(),
        params: json!({"tables": 8, "rows": 100000, "secs": 60}),
        host: HostFacts {
            hostname: "bench1".into(),
            cores: 16,
            memory_bytes: 64 << 30,
            kernel: "6.1.0-18-amd64".into(),
            os: "Debian GNU/Linux 12 (bookworm)".into(),
            cpu_model: "AMD EPYC 7R13".into(),
            storage: Some(StorageFacts {
                path: "/data/tm".into(),
                device: "nvme0n1".into(),
                filesystem: "ext4".into(),
                rotational: Some(false),
            }),
        },
    }
}

pub(super) fn target(n: u32) -> TargetInfo {
    TargetInfo {
        spec: format!("pg@1{n}"),
        label: format!("pg1{n}.quick, \"x\""),
        dbms: "postgres".into(),
        version: format!("PostgreSQL 1{n}.3 on x86_64-pc-linux-gnu"),
        version_number: format!("1{n}.3"),
        config_name: (n == 5).then(|| "quick".to_string()),
        config_text: "shared_buffers = 1GB\n".into(),
        settings: vec![
            ("shared_buffers".into(), "1GB".into()),
            ("max_wal_size".into(), "16GB".into()),
        ],
        managed: n == 5,
        extra: json!({"bin": "/usr/lib/postgresql/bin", "data": "/data/tm/pg"}),
    }
}

pub(super) fn step_info(i: u32) -> StepInfo {
    StepInfo {
        suite: "sysbench".into(),
        name: format!("point-query_range={i}"),
        test: "point-query".into(),
        range: i.is_multiple_of(2).then_some(i * 10),
        group: [Some(Group::Point), None, Some(Group::RangeNoAgg)][i as usize % 3],
        reported: i != 0,
        note: (i == 2).then(|| "scan is a full table read here".to_string()),
        params: json!({"threads": 4, "step": i}),
        sweep_threads: (i == 1).then_some(4),
    }
}

pub(super) fn step_result(i: u32) -> StepResult {
    let mut histogram = new_histogram();
    for v in [90u64, 120, 150, 150, 4_000, 1_000_000 + u64::from(i)] {
        histogram.record(v).unwrap();
    }
    StepResult {
        status: [StepStatus::Ok, StepStatus::Errors, StepStatus::Interrupted][i as usize % 3],
        failure: (i == 1).then(|| "3 statements failed".to_string()),
        secs: 10.5 + f64::from(i),
        threads: 4,
        counts: Counts {
            events: 1_000 + u64::from(i),
            statements: 20_000,
            rows: 5_000,
            errors: u64::from(i),
            retries: 2,
        },
        error_samples: vec![
            "deadlock detected".into(),
            "could not serialize, \"x\"".into(),
        ],
        histogram,
        per_second: (0..3)
            .map(|sec| SecondSample {
                sec,
                counts: Counts {
                    events: 100 + u64::from(sec),
                    statements: 2_000,
                    rows: 500,
                    errors: 0,
                    retries: u64::from(sec),
                },
                max_latency_us: 4_000 + u64::from(sec),
            })
            .collect(),
        clients: (0..4)
            .map(|client| ClientResult {
                client,
                events: 250,
                statements: 5_000,
                errors: 0,
                finish_secs: 10.25 + f64::from(client) / 8.0,
            })
            .collect(),
        client_cpu_secs: 1.75,
        roles: Vec::new(),
        metrics: None,
    }
}

pub(super) fn plans(i: u32) -> Vec<(String, String)> {
    vec![
        (
            format!("SELECT c FROM sbtest1 WHERE id = $1 -- {i}"),
            "Index Scan using sbtest1_pkey".into(),
        ),
        ("SELECT 1".into(), "Result".into()),
    ]
}

/// Writes sample step `seq` of target `t` (its [`step_info`] and
/// [`step_result`], started at 23:5`seq`) with `plans` and `host`;
/// returns its id.
pub(super) fn write_sample_step(
    store: &mut Store,
    t: i64,
    seq: u32,
    plans: &[(String, String)],
    host: Option<&StepHost>,
) -> i64 {
    let started = format!("2026-11-20T23:5{seq}:00Z");
    store
        .write_step(
            t,
            seq,
            &started,
            &step_info(seq),
            &step_result(seq),
            plans,
            host,
        )
        .unwrap()
}

/// Writes a run with two targets of three steps each; returns its id.
pub(super) fn write_sample_run(store: &mut Store) -> i64 {
    let run = store.begin_run(&run_info()).unwrap();
    for (pos, n) in [(0, 5), (1, 6)] {
        let t = store.add_target(run, pos, &target(n)).unwrap();
        for seq in 0..3 {
            write_sample_step(store, t, seq, &plans(seq), None);
        }
        let failure = (n == 6).then_some("server died");
        let status = if n == 6 { "failed" } else { "finished" };
        store.set_target_status(t, status, failure).unwrap();
    }
    store.finish_run(run, "interrupted").unwrap();
    run
}

fn count(store: &Store, sql: &str) -> i64 {
    store.db().query_value(sql, &[]).unwrap().unwrap()
}

#[test]
fn a_run_round_trips_field_by_field() {
    let dir = tempfile::tempdir().unwrap();
    let id = write_sample_run(&mut Store::open(dir.path()).unwrap());

    // Read back through a fresh connection, as `tidemark report` would.
    let store = Store::open_existing(dir.path()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let run = store.load_run(id).unwrap();
    let info = run_info();
    assert_eq!(run.id, id);
    assert_eq!(run.info, info);
    assert!(run.finished_at.as_deref().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(run.status, "interrupted");

    assert_eq!(run.targets.len(), 2);
    for (pos, (t, n)) in run.targets.iter().zip([5, 6]).enumerate() {
        assert_eq!(t.position, pos as u32);
        assert_eq!(t.info, target(n));
        assert_eq!(t.status, if n == 6 { "failed" } else { "finished" });
        assert_eq!(t.failure.as_deref(), (n == 6).then_some("server died"));
        assert_eq!(t.steps.len(), 3);
        for (seq, s) in t.steps.iter().enumerate() {
            let seq = seq as u32;
            let want = step_result(seq);
            assert_eq!(s.seq, seq);
            assert_eq!(s.started_at, format!("2026-11-20T23:5{seq}:00Z"));
            assert_eq!(s.info, step_info(seq));
            assert_eq!(s.status, want.status);
            assert_eq!(s.failure, want.failure);
            assert_eq!(s.secs, want.secs);
            assert_eq!(s.threads, want.threads);
            assert_eq!(
                (
                    s.counts.events,
                    s.counts.statements,
                    s.counts.rows,
                    s.counts.errors,
                    s.counts.retries
                ),
                (
                    want.counts.events,
                    want.counts.statements,
                    want.counts.rows,
                    want.counts.errors,
                    want.counts.retries
                )
            );
            assert_eq!(
                (s.qps, s.tps, s.rows_per_sec),
                (want.qps(), want.tps(), want.rows_per_sec())
            );
            assert_eq!(s.latency, want.latency());
            assert_eq!(s.client_cpu_secs, want.client_cpu_secs);
            assert_eq!(
                s.client_cpu_us_per_statement(),
                want.client_cpu_us_per_statement()
            );
            assert_eq!(s.error_samples, want.error_samples);
            assert_eq!(s.per_second, want.per_second);
            assert_eq!(s.clients, want.clients);
            assert_eq!(s.plans, plans(seq));
            let h = s.histogram().unwrap();
            assert_eq!(h, want.histogram);
            assert_eq!(h.len(), 6);
            assert_eq!(
                h.value_at_quantile(0.5),
                want.histogram.value_at_quantile(0.5)
            );
        }
    }
}

#[test]
fn runs_are_listed_and_formatted() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    assert_eq!(
        format_runs_table(&store.list_runs().unwrap()),
        "no runs stored\n"
    );
    let first = write_sample_run(&mut store);
    let mut second_info = run_info();
    second_info.profile = "full".into();
    let second = store.begin_run(&second_info).unwrap();

    let runs = store.list_runs().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].id, first);
    assert_eq!(runs[0].status, "interrupted");
    assert_eq!(runs[0].targets, vec![target(5).label, target(6).label]);
    assert_eq!(runs[0].steps, 6);
    assert_eq!(runs[1].id, second);
    assert_eq!(runs[1].status, "running");
    assert_eq!(runs[1].finished_at, None);
    assert!(runs[1].targets.is_empty());
    assert_eq!(runs[1].steps, 0);

    let table = format_runs_table(&runs);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("id  started "), "{table}");
    // Columns line up: each status starts where the header's does.
    let col = lines[0].find("status").unwrap();
    assert_eq!(&lines[1][col..col + 11], "interrupted");
    assert_eq!(&lines[2][col..col + 7], "running");
    assert!(
        lines[1].ends_with(" 6") && lines[2].ends_with(" 0"),
        "{table}"
    );
}

#[test]
fn a_failed_step_write_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = store.begin_run(&run_info()).unwrap();
    let t = store.add_target(run, 0, &target(5)).unwrap();
    write_sample_step(&mut store, t, 0, &plans(0), None);

    // Make the last row of the step, a plan, violate a constraint: the
    // steps row, its seconds and its clients are already inserted by then.
    store
        .db()
        .batch(
            "CREATE TEMP TRIGGER boom BEFORE INSERT ON step_plans
             WHEN NEW.statement = 'boom'
             BEGIN SELECT RAISE(ABORT, 'forced plan failure'); END;",
        )
        .unwrap();
    let bad_plans = vec![
        ("SELECT 1".to_string(), "Result".to_string()),
        ("boom".into(), "x".into()),
    ];
    let err = store
        .write_step(
            t,
            1,
            "2026-11-20T23:51:00Z",
            &step_info(1),
            &step_result(1),
            &bad_plans,
            None,
        )
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("forced plan failure"),
        "{err:#}"
    );

    assert_eq!(count(&store, "SELECT count(*) FROM steps"), 1);
    assert_eq!(count(&store, "SELECT count(*) FROM step_seconds"), 3);
    assert_eq!(count(&store, "SELECT count(*) FROM step_clients"), 4);
    assert_eq!(count(&store, "SELECT count(*) FROM step_plans"), 2);

    // The store is still usable, and the same seq can be written again.
    write_sample_step(&mut store, t, 1, &plans(1), None);
    let run = store.load_run(run).unwrap();
    assert_eq!(run.targets[0].steps.len(), 2);
}

#[test]
fn duplicate_plan_statements_keep_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = store.begin_run(&run_info()).unwrap();
    let t = store.add_target(run, 0, &target(5)).unwrap();
    let dup = vec![
        ("SELECT 2".to_string(), "second".to_string()),
        ("SELECT 1".to_string(), "first".to_string()),
        ("SELECT 2".to_string(), "again".to_string()),
    ];
    store
        .write_step(
            t,
            0,
            "2026-11-20T23:50:00Z",
            &step_info(0),
            &step_result(0),
            &dup,
            None,
        )
        .unwrap();
    let run = store.load_run(run).unwrap();
    assert_eq!(run.targets[0].steps[0].plans, dup[..2].to_vec());
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store
        .db()
        .execute(
            "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
            &[(SCHEMA_VERSION + 1).to_string().into()],
        )
        .unwrap();
    drop(store);
    let want = format!(
        "results.db in {} was written by a newer tidemark (schema {}, this build knows {}): upgrade tidemark",
        dir.path().display(),
        SCHEMA_VERSION + 1,
        SCHEMA_VERSION
    );
    for result in [Store::open(dir.path()), Store::open_existing(dir.path())] {
        assert_eq!(format!("{:#}", result.err().unwrap()), want);
    }
}

#[test]
fn unknown_runs_and_missing_databases_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!(
        "no results in {}: run `tidemark run` first or pass --results DIR",
        dir.path().display()
    );
    assert_eq!(
        format!("{:#}", Store::open_existing(dir.path()).err().unwrap()),
        missing
    );
    assert!(
        !dir.path().join(DB_FILE).exists(),
        "open_existing must not create"
    );

    let mut store = Store::open(dir.path()).unwrap();
    let want = format!(
        "no run 42 in {}: `tidemark runs` lists the stored runs",
        dir.path().display()
    );
    assert_eq!(format!("{:#}", store.load_run(42).unwrap_err()), want);
    assert_eq!(
        format!("{:#}", store.finish_run(42, "finished").unwrap_err()),
        want
    );
    let mut out = Vec::new();
    assert_eq!(
        format!("{:#}", export_json(&store, Some(42), &mut out).unwrap_err()),
        want
    );
}

#[test]
fn statuses_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = store.begin_run(&run_info()).unwrap();
    let t = store.add_target(run, 0, &target(5)).unwrap();
    assert!(store.set_target_status(t, "ok", None).is_err());
    assert!(store.set_target_status(t + 1, "failed", None).is_err());
    assert!(store.finish_run(run, "running").is_err());
    assert!(
        store.add_target(run, 0, &target(6)).is_err(),
        "positions are unique"
    );
    assert!(
        store.add_target(run + 1, 0, &target(6)).is_err(),
        "the run must exist"
    );
}

#[test]
fn foreign_keys_cascade_and_non_numbers_do_not_lose_a_step() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let run = store.begin_run(&run_info()).unwrap();
    let t = store.add_target(run, 0, &target(5)).unwrap();
    let mut result = step_result(0);
    result.client_cpu_secs = f64::NAN;
    result.secs = 0.0;
    store
        .write_step(
            t,
            0,
            "2026-11-20T23:50:00Z",
            &step_info(0),
            &result,
            &[],
            None,
        )
        .unwrap();
    let loaded = store.load_run(run).unwrap();
    assert_eq!(loaded.targets[0].steps[0].client_cpu_secs, 0.0);
    assert_eq!(loaded.targets[0].steps[0].qps, 0.0);

    store
        .db()
        .execute("DELETE FROM runs WHERE id = ?1", &[run.into()])
        .unwrap();
    for table in [
        "targets",
        "steps",
        "step_seconds",
        "step_clients",
        "step_plans",
    ] {
        assert_eq!(
            count(&store, &format!("SELECT count(*) FROM {table}")),
            0,
            "{table}"
        );
    }
    // AUTOINCREMENT: a deleted run's id is not handed out again.
    assert!(store.begin_run(&run_info()).unwrap() > run);
}

#[test]
fn foreign_databases_are_not_touched() {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join(DB_FILE)).unwrap();
    conn.execute_batch("CREATE TABLE t (x)").unwrap();
    drop(conn);
    let err = Store::open(dir.path()).err().unwrap();
    assert_eq!(
        format!("{err:#}"),
        format!(
            "results.db in {} is not a tidemark results store (it has tables but no `meta`): \
             use an empty database or a new results directory",
            dir.path().display()
        )
    );
}

#[test]
fn open_is_idempotent_and_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b");
    let id = write_sample_run(&mut Store::open(&nested).unwrap());
    let store = Store::open(Path::new(&nested)).unwrap();
    assert_eq!(store.load_run(id).unwrap().targets.len(), 2);
    assert_eq!(store.dir(), nested);
    let mode: String = store
        .db()
        .query_value("PRAGMA journal_mode", &[])
        .unwrap()
        .unwrap();
    assert_eq!(mode, "wal");
}
