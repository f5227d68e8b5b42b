//! Migration tests of [`super`]: old databases keep their rows and lose
//! their passwords on the way to the current schema.

use super::*;
use rusqlite::Connection;

#[test]
fn schema_1_databases_keep_their_steps_through_the_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(crate::store::DB_FILE);
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(V1).unwrap();
        conn.execute_batch(
            "INSERT INTO meta VALUES ('schema_version', '1');
             INSERT INTO runs (id, started_at, status, command_line, tidemark_version,
                               profile, suite, params_json, host_json)
                  VALUES (7, 't', 'finished', 'c', 'v', 'quick', 'sysbench', '{}', '{}');
             INSERT INTO targets (id, run_id, position, spec, label, dbms, version,
                                  version_number, config_text, settings_json, managed,
                                  extra_json, status)
                  VALUES (3, 7, 0, 'pg', 'pg15', 'postgres', 'v', '15', '', '[]', 1, '{}',
                          'finished');
             INSERT INTO steps (id, target_id, seq, suite, name, test, reported,
                                params_json, status, started_at, secs, threads, events,
                                statements, rows, errors, retries, qps, tps, rows_per_sec,
                                lat_avg_us, lat_p50_us, lat_p95_us, lat_p99_us,
                                lat_p999_us, lat_max_us, client_cpu_secs,
                                error_samples_json)
                  VALUES (11, 3, 0, 'sysbench', 'insert', 'insert', 1, '{}', 'ok', 't',
                          1, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, '[]');",
        )
        .unwrap();
    }
    let store = crate::store::Store::open(dir.path()).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let run = store.load_run(7).unwrap();
    assert_eq!(run.targets.len(), 1);
    assert_eq!(run.targets[0].repetition, 0);
    assert_eq!(
        run.targets[0].steps.len(),
        1,
        "the step survived the rebuild"
    );
    assert_eq!(store.run_plan(7).unwrap(), ("finished".into(), None));
}

#[test]
fn older_runs_lose_their_passwords_to_the_migration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(crate::store::DB_FILE);
    {
        let conn = Connection::open(&path).unwrap();
        for m in &MIGRATIONS[..4] {
            conn.execute_batch(m.sql).unwrap();
        }
        conn.execute_batch(
            r#"INSERT INTO meta VALUES ('schema_version', '4');
             INSERT INTO runs (id, started_at, status, command_line, tidemark_version,
                               profile, suite, params_json, host_json, plan_json)
                  VALUES (7, 't', 'finished',
                          'tidemark run --target postgres://bob:Hunter2x@h/db', 'v',
                          'quick', 'sysbench', '{}', '{}',
                          '{"targets":["mysql://bob:Hunter2x@h/db"]}');
             INSERT INTO targets (id, run_id, position, spec, label, dbms, version,
                                  version_number, config_text, settings_json, managed,
                                  extra_json, status, failure)
                  VALUES (3, 7, 0, 'postgres://bob:Hunter2x@h/db', 'postgres://bob:Hunter2x@h/db',
                          'postgres', 'v', '15', '', '[]', 0, '{}', 'failed',
                          'cannot connect to postgres://bob:Hunter2x@h/db');"#,
        )
        .unwrap();
    }
    let store = crate::store::Store::open(dir.path()).unwrap();
    let run = store.load_run(7).unwrap();
    assert_eq!(
        run.info.command_line,
        "tidemark run --target postgres://bob:***@h/db"
    );
    assert_eq!(run.targets[0].info.spec, "postgres://bob:***@h/db");
    let (_, plan) = store.run_plan(7).unwrap();
    assert_eq!(plan.unwrap(), r#"{"targets":["mysql://bob:***@h/db"]}"#);
    drop(store);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !bytes.windows(8).any(|w| w == b"Hunter2x"),
            "a file still holds the password"
        );
    }
}
