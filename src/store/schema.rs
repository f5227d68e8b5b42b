//! The versioned schema of `results.db` and the migrations between versions.
//!
//! `results.db` outlives any one build of tidemark: results from last year
//! must load in this year's report. So the schema only moves forward, by an
//! ordered list of SQL scripts; `meta.schema_version` says how many of them a
//! database has had. A build opening a database from a newer build refuses
//! with a clear message rather than misreading it.
//!
//! Rules for changing the schema: never edit a published script, append a
//! new one. Migrations: repetitions and stored plans (matrix), multi-role
//! steps (`IBENCH_ROLES`), per-second host metrics and the step's hardware
//! summary (`V2_SAMPLERS`, named before the merge that placed it fourth).
//!
//! Enumerated text columns (statuses, groups) are validated by tidemark, not
//! by CHECK constraints, so that a later version can add a value without
//! rebuilding a table (SQLite cannot alter a constraint in place).

use std::path::Path;

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

/// Schema version 1: runs, targets, steps and what each step measured.
const V1: &str = r#"
-- Facts about the database itself; `schema_version` is the number of
-- migrations applied.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

-- One invocation of `tidemark run`. AUTOINCREMENT: ids are what users type
-- (`tidemark report 42`), so a deleted run's id is never reused.
CREATE TABLE runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at       TEXT NOT NULL,          -- RFC 3339 UTC
    finished_at      TEXT,                   -- NULL while running or after a crash
    status           TEXT NOT NULL,          -- running | finished | interrupted | failed
    command_line     TEXT NOT NULL,
    tidemark_version TEXT NOT NULL,          -- the build that ran it
    profile          TEXT NOT NULL,
    suite            TEXT NOT NULL,
    params_json      TEXT NOT NULL,          -- run parameters (JSON)
    host_json        TEXT NOT NULL           -- metrics::host::HostFacts (JSON)
);

-- A database server (DBMS, version, configuration) a run measured, in the
-- order the user listed them.
CREATE TABLE targets (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,         -- 0-based order within the run
    spec           TEXT NOT NULL,            -- as the user wrote it
    label          TEXT NOT NULL,
    dbms           TEXT NOT NULL,
    version        TEXT NOT NULL,            -- SELECT version()
    version_number TEXT NOT NULL,            -- e.g. 15.18
    config_name    TEXT,
    config_text    TEXT NOT NULL,
    settings_json  TEXT NOT NULL,            -- [[name, value], ...] in server order
    managed        INTEGER NOT NULL CHECK (managed IN (0, 1)),
    extra_json     TEXT NOT NULL,
    status         TEXT NOT NULL,            -- running | finished | interrupted | failed | skipped
    failure        TEXT,
    UNIQUE (run_id, position)
);

-- One measured step on one target, with its totals and latency summary
-- denormalised for queries; the merged histogram keeps the full shape.
CREATE TABLE steps (
    id                 INTEGER PRIMARY KEY,
    target_id          INTEGER NOT NULL REFERENCES targets (id) ON DELETE CASCADE,
    seq                INTEGER NOT NULL,     -- execution order within the target
    suite              TEXT NOT NULL,
    name               TEXT NOT NULL,
    test               TEXT NOT NULL,
    "range"            INTEGER,
    grp                TEXT,                 -- workload::Group::as_str
    reported           INTEGER NOT NULL CHECK (reported IN (0, 1)),
    note               TEXT,
    params_json        TEXT NOT NULL,
    status             TEXT NOT NULL,        -- record::StepStatus::as_str
    failure            TEXT,
    started_at         TEXT NOT NULL,        -- RFC 3339 UTC
    secs               REAL NOT NULL,        -- measured interval
    threads            INTEGER NOT NULL,
    events             INTEGER NOT NULL,
    statements         INTEGER NOT NULL,
    rows               INTEGER NOT NULL,
    errors             INTEGER NOT NULL,
    retries            INTEGER NOT NULL,
    qps                REAL NOT NULL,
    tps                REAL NOT NULL,
    rows_per_sec       REAL NOT NULL,
    lat_avg_us         REAL NOT NULL,
    lat_p50_us         INTEGER NOT NULL,
    lat_p95_us         INTEGER NOT NULL,
    lat_p99_us         INTEGER NOT NULL,
    lat_p999_us        INTEGER NOT NULL,
    lat_max_us         INTEGER NOT NULL,
    client_cpu_secs    REAL NOT NULL,
    error_samples_json TEXT NOT NULL,        -- ["message", ...]
    histogram          BLOB,                 -- HdrHistogram V2 serialization, µs
    UNIQUE (target_id, seq)
);

-- Counters for each second of a step's measured interval.
CREATE TABLE step_seconds (
    step_id        INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    sec            INTEGER NOT NULL,
    events         INTEGER NOT NULL,
    statements     INTEGER NOT NULL,
    rows           INTEGER NOT NULL,
    errors         INTEGER NOT NULL,
    retries        INTEGER NOT NULL,
    max_latency_us INTEGER NOT NULL,
    PRIMARY KEY (step_id, sec)
) WITHOUT ROWID;

-- Each client thread's share of a step.
CREATE TABLE step_clients (
    step_id     INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    client      INTEGER NOT NULL,
    events      INTEGER NOT NULL,
    statements  INTEGER NOT NULL,
    errors      INTEGER NOT NULL,
    finish_secs REAL NOT NULL,
    PRIMARY KEY (step_id, client)
) WITHOUT ROWID;

-- Query plans captured for a step's statements (rowid keeps their order).
CREATE TABLE step_plans (
    step_id   INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    statement TEXT NOT NULL,
    plan_text TEXT NOT NULL,
    PRIMARY KEY (step_id, statement)
);
"#;

/// Target repetitions and stored plans (from the matrix work; other
/// branches add their own scripts, so its number may change on merge):
/// `targets.repetition` says which pass over the target sequence a row is
/// (`--repeat N` stores each), targets are unique per (run, position,
/// repetition), and `runs.plan_json` keeps the inputs a run was planned
/// from so `tidemark run --resume RUN` can rebuild the plan.
///
/// SQLite cannot change a UNIQUE constraint in place, so `targets` is
/// rebuilt the documented way (new table, copy, drop, rename) while
/// [`migrate`] has foreign keys off; step rows keep their target ids.
const TARGET_REPETITIONS_AND_PLANS: &str = r#"
CREATE TABLE targets_new (
    id             INTEGER PRIMARY KEY,
    run_id         INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    position       INTEGER NOT NULL,         -- 0-based order within the run's plan
    repetition     INTEGER NOT NULL DEFAULT 0, -- 0-based pass over the targets (--repeat)
    spec           TEXT NOT NULL,
    label          TEXT NOT NULL,
    dbms           TEXT NOT NULL,
    version        TEXT NOT NULL,
    version_number TEXT NOT NULL,
    config_name    TEXT,
    config_text    TEXT NOT NULL,
    settings_json  TEXT NOT NULL,
    managed        INTEGER NOT NULL CHECK (managed IN (0, 1)),
    extra_json     TEXT NOT NULL,
    status         TEXT NOT NULL,
    failure        TEXT,
    UNIQUE (run_id, position, repetition)
);
INSERT INTO targets_new (id, run_id, position, repetition, spec, label, dbms, version,
                         version_number, config_name, config_text, settings_json, managed,
                         extra_json, status, failure)
    SELECT id, run_id, position, 0, spec, label, dbms, version, version_number, config_name,
           config_text, settings_json, managed, extra_json, status, failure
      FROM targets;
DROP TABLE targets;
ALTER TABLE targets_new RENAME TO targets;

-- The PlanInput the run was built from (JSON); NULL for older runs.
ALTER TABLE runs ADD COLUMN plan_json TEXT;
"#;

/// Multi-role steps (the Insert Benchmark): what each role (insert, delete,
/// query, ids…) did, per client and per second, with two latency histograms
/// (from the actual and from the intended start), and the metrics a suite
/// derives from a step (rates, SLA, fairness) as JSON on the step.
const IBENCH_ROLES: &str = r#"
ALTER TABLE steps ADD COLUMN metrics_json TEXT;   -- NULL: the suite derives none

-- One role of a multi-role step, over all its clients.
CREATE TABLE step_roles (
    step_id            INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    role               TEXT NOT NULL,
    threads            INTEGER NOT NULL,
    events             INTEGER NOT NULL,
    statements         INTEGER NOT NULL,
    rows               INTEGER NOT NULL,
    errors             INTEGER NOT NULL,
    retries            INTEGER NOT NULL,
    target_rate        REAL,                 -- events/s per thread; NULL: not paced
    lat_avg_us         REAL NOT NULL,        -- from the actual start
    lat_p50_us         INTEGER NOT NULL,
    lat_p95_us         INTEGER NOT NULL,
    lat_p99_us         INTEGER NOT NULL,
    lat_p999_us        INTEGER NOT NULL,
    lat_max_us         INTEGER NOT NULL,
    co_p50_us          INTEGER,              -- from the intended start; NULL: not paced
    co_p99_us          INTEGER,
    co_p999_us         INTEGER,
    co_max_us          INTEGER,
    cpu_secs           REAL NOT NULL,
    histogram          BLOB NOT NULL,        -- HdrHistogram V2, µs, from the actual start
    intended_histogram BLOB,                 -- HdrHistogram V2, µs, from the intended start
    PRIMARY KEY (step_id, role)
);

-- One client's thread of a role.
CREATE TABLE step_role_clients (
    step_id       INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    role          TEXT NOT NULL,
    client        INTEGER NOT NULL,
    events        INTEGER NOT NULL,
    statements    INTEGER NOT NULL,
    rows          INTEGER NOT NULL,
    errors        INTEGER NOT NULL,
    retries       INTEGER NOT NULL,
    finish_secs   REAL NOT NULL,
    max_behind_us INTEGER NOT NULL,          -- largest lag behind the schedule
    late_events   INTEGER NOT NULL,          -- events started >= 1 ms late
    PRIMARY KEY (step_id, role, client)
) WITHOUT ROWID;

-- One client's thread of a role during one second of the step.
CREATE TABLE step_role_seconds (
    step_id         INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    role            TEXT NOT NULL,
    client          INTEGER NOT NULL,
    sec             INTEGER NOT NULL,
    events          INTEGER NOT NULL,
    rows            INTEGER NOT NULL,
    errors          INTEGER NOT NULL,
    retries         INTEGER NOT NULL,
    max_latency_us  INTEGER NOT NULL,
    max_intended_us INTEGER NOT NULL,
    max_behind_us   INTEGER NOT NULL,
    PRIMARY KEY (step_id, role, client, sec)
) WITHOUT ROWID;
"#;

/// Schema version 2 (the samplers): what the host, its disks and the
/// server's and client's processes did during each step, per sampler
/// interval and summarised per operation. Metrics that could not be read
/// are NULL, and `step_metrics.missing_json` says why.
const V2_SAMPLERS: &str = r#"
-- One row per sampler interval (about a second) of a step, in vmstat and
-- iostat units. `sec` matches step_seconds.sec for measured rows.
CREATE TABLE step_host_seconds (
    step_id          INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL,     -- order within the step
    sec              INTEGER NOT NULL,     -- negative during the warm-up
    phase            TEXT NOT NULL,        -- metrics::summary::Phase: warmup | measured | after
    end_secs         REAL NOT NULL,        -- end of the interval, since the sampler started
    secs             REAL NOT NULL,        -- length of the interval
    r                INTEGER NOT NULL,     -- vmstat: runnable, blocked tasks
    b                INTEGER NOT NULL,
    swpd_kb          INTEGER NOT NULL,     -- vmstat memory, KiB
    free_kb          INTEGER NOT NULL,
    buff_kb          INTEGER NOT NULL,
    cache_kb         INTEGER NOT NULL,
    si               REAL NOT NULL,        -- KiB/s swapped in, out
    so               REAL NOT NULL,
    bi               REAL NOT NULL,        -- KiB/s read, written (all devices)
    bo               REAL NOT NULL,
    intr             REAL NOT NULL,        -- interrupts/s (vmstat "in")
    cs               REAL NOT NULL,        -- context switches/s
    us               REAL NOT NULL,        -- % of all CPUs
    sy               REAL NOT NULL,
    id               REAL NOT NULL,
    wa               REAL NOT NULL,
    st               REAL NOT NULL,
    rps              REAL,                 -- iostat -x over the watched devices
    rkbps            REAL,
    r_await          REAL,
    wps              REAL,
    wkbps            REAL,
    w_await          REAL,
    dps              REAL,
    dkbps            REAL,
    d_await          REAL,
    fps              REAL,
    f_await          REAL,
    aqu_sz           REAL,
    util             REAL,
    server_cpu_pct   REAL,                 -- % of one core, all server processes
    server_read_kbps REAL,                 -- KiB/s the server's processes read from storage
    server_rss_bytes INTEGER,
    server_procs     INTEGER,
    client_cpu_pct   REAL NOT NULL,        -- % of one core, tidemark minus the sampler
    PRIMARY KEY (step_id, seq)
) WITHOUT ROWID;

-- A step's hardware summary: averages over its measured seconds and the
-- reference's per-operation columns (workloads.md A.7, C.1).
CREATE TABLE step_metrics (
    step_id          INTEGER PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE,
    ncpu             INTEGER NOT NULL,
    devices          TEXT NOT NULL,        -- comma-separated iostat names
    rate_basis       TEXT,                 -- qps | ips | ...
    rate             REAL,                 -- operations/s the per-op columns divide by
    ips              REAL,                 -- inserts/s writes divide by
    secs             REAL,                 -- averaged window
    samples          INTEGER,
    us               REAL,
    sy               REAL,
    id               REAL,
    wa               REAL,
    st               REAL,
    cs               REAL,
    intr             REAL,
    bi               REAL,
    bo               REAL,
    si               REAL,
    so               REAL,
    r                REAL,
    b                REAL,
    rps              REAL,
    rkbps            REAL,
    r_await          REAL,
    wps              REAL,
    wkbps            REAL,
    w_await          REAL,
    dps              REAL,
    dkbps            REAL,
    d_await          REAL,
    fps              REAL,
    f_await          REAL,
    aqu_sz           REAL,
    util             REAL,
    server_cpu_pct   REAL,
    server_read_kbps REAL,
    client_cpu_pct   REAL,
    server_rss_bytes INTEGER,
    rpq              REAL,
    rkbpq            REAL,
    wpi              REAL,
    wkbpi            REAL,
    cspq             REAL,
    cpupq            REAL,
    scpupq           REAL,
    ccpupq           REAL,
    srkbpq           REAL,
    db_bytes         INTEGER,
    datadir_bytes    INTEGER,
    sampler_cpu_pct  REAL,
    missing_json     TEXT NOT NULL         -- {"group": "why it is missing"}
);
"#;

/// Concurrency sweeps (`--threads 1,4,64`): the client count of a step
/// that is one point of a sweep, NULL for a step of a single-count run. A
/// target then holds one step per test and point (`seq` stays unique).
/// Plain SQL, so every store backend can apply it.
const SWEEP_POINTS: &str = r#"
ALTER TABLE steps ADD COLUMN sweep_threads INTEGER;   -- NULL: not a sweep point
"#;

/// The migration scripts, oldest first; script `i` takes a database from
/// schema `i` to schema `i + 1`.
const MIGRATIONS: &[&str] = &[
    V1,
    TARGET_REPETITIONS_AND_PLANS,
    IBENCH_ROLES,
    V2_SAMPLERS,
    SWEEP_POINTS,
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Brings the database up to [`SCHEMA_VERSION`], or refuses if it is newer.
///
/// A database that is already current is only read, so read-only verbs do
/// not take the write lock.
pub(super) fn migrate(conn: &mut Connection, dir: &Path) -> Result<u32> {
    let found = current_version(conn, dir)?;
    check_not_newer(found, dir)?;
    if found == SCHEMA_VERSION {
        return Ok(found);
    }
    // Scripts may rebuild a table (SQLite's way to change a constraint);
    // with foreign keys on, dropping the old table would delete the rows
    // that reference it. The pragma is a no-op inside a transaction, so it
    // goes first, and the references are checked before it is back on.
    conn.pragma_update(None, "foreign_keys", false)?;
    let result = run_scripts(conn, dir);
    conn.pragma_update(None, "foreign_keys", true)?;
    result
}

fn run_scripts(conn: &mut Connection, dir: &Path) -> Result<u32> {
    // IMMEDIATE: two tidemarks opening a new directory at once must not
    // both run the scripts.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = current_version(&tx, dir)?;
    check_not_newer(found, dir)?;
    for (i, script) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let to = i + 1;
        tx.execute_batch(script)
            .with_context(|| format!("migrating results.db in {} to schema {to}", dir.display()))?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [to.to_string()],
        )?;
    }
    let broken: i64 = tx.query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| {
        r.get(0)
    })?;
    if broken > 0 {
        bail!(
            "migrating results.db in {} left {broken} rows with dangling references; \
             nothing was changed",
            dir.display()
        );
    }
    tx.commit()?;
    Ok(SCHEMA_VERSION)
}

fn check_not_newer(found: u32, dir: &Path) -> Result<()> {
    if found > SCHEMA_VERSION {
        bail!(
            "results.db in {} was written by a newer tidemark (schema {found}, this build knows {SCHEMA_VERSION}): upgrade tidemark",
            dir.display()
        );
    }
    Ok(())
}

/// The schema version recorded in the database; 0 for a new, empty one.
pub(super) fn current_version(conn: &Connection, dir: &Path) -> Result<u32> {
    let table_count = |filter: &str| -> rusqlite::Result<i64> {
        conn.query_row(
            &format!("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND {filter}"),
            [],
            |r| r.get(0),
        )
    };
    if table_count("name = 'meta'")? == 0 {
        if table_count("name NOT LIKE 'sqlite_%'")? > 0 {
            bail!(
                "results.db in {} is not a tidemark results database",
                dir.display()
            );
        }
        return Ok(0);
    }
    let value: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    match value {
        None => bail!("results.db in {} has no schema_version", dir.display()),
        Some(v) => v.trim().parse().with_context(|| {
            format!(
                "results.db in {} has a malformed schema_version {v:?}",
                dir.display()
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
