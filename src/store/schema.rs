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
//! summary (`V2_SAMPLERS`, named before the merge that placed it fourth), the
//! server's own counters (`SERVER_COUNTERS`) and CPU profiles
//! (`CPU_PROFILES`), passwords scrubbed from older runs (`SCRUB_PASSWORDS`),
//! the process running a run (`RUN_PROCESS`).
//!
//! One list serves both engines. A script is written in SQLite's DDL and
//! kept portable: for PostgreSQL, [`postgres_ddl`] maps the types
//! (`INTEGER` → `BIGINT`, `REAL` → `DOUBLE PRECISION`, `BLOB` → `BYTEA`,
//! an `id INTEGER PRIMARY KEY` → an identity column) and drops `WITHOUT
//! ROWID`. Only a script PostgreSQL cannot take that way (SQLite's table
//! rebuild) carries its own PostgreSQL text ([`Postgres::Own`]).
//!
//! Enumerated text columns (statuses, groups) are validated by tidemark, not
//! by CHECK constraints, so that a later version can add a value without
//! rebuilding a table (SQLite cannot alter a constraint in place).

use anyhow::Result;

use super::backend::{Backend, params};
pub use super::migrate::{Migration, Postgres, postgres_ddl};

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

/// Run identities that never collide across machines: each run gets a
/// random UUID when it begins (older runs one when migrated), and `origin`
/// says which store a copied run came from (`tidemark push`/`pull`; the
/// URL without its password), NULL for a run written here. The integer
/// `id` stays the short local number users type.
const RUN_UUIDS: &str = r#"
ALTER TABLE runs ADD COLUMN uuid TEXT;
ALTER TABLE runs ADD COLUMN origin TEXT;
CREATE UNIQUE INDEX runs_uuid ON runs (uuid);
"#;

/// The server's own counters (issue 13): every reading of the DBMS's
/// statistics views during a step, one row per value, raw (cumulative
/// counters and levels as the server reports them). Portable SQL: TEXT,
/// INTEGER and REAL only.
const SERVER_COUNTERS: &str = r#"
CREATE TABLE step_server_counters (
    step_id  INTEGER NOT NULL REFERENCES steps (id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,     -- reading order; 0 is the baseline before the step
    sec      INTEGER NOT NULL,     -- the host seconds' numbering
    phase    TEXT NOT NULL,        -- warmup | measured | after
    end_secs REAL NOT NULL,        -- when it was read, since the sampler started
    name     TEXT NOT NULL,        -- record::server_counters::COUNTERS
    value    REAL NOT NULL,
    PRIMARY KEY (step_id, seq, name)
);
"#;

/// CPU profiles of the server (`--cpu-profile`, issue 13): per step, the
/// folded stacks perf sampled during the measured interval.
const CPU_PROFILES: &str = r#"
CREATE TABLE step_cpu_profiles (
    step_id INTEGER PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE,
    hz      INTEGER NOT NULL,      -- samples per second per CPU
    secs    REAL NOT NULL,         -- how long perf sampled
    samples INTEGER NOT NULL,
    folded  TEXT NOT NULL          -- "root;...;leaf COUNT" lines
);
"#;

/// Instructions counted under Valgrind (`run --instructions`, issue 26):
/// per step, the client backends' instructions in the measured interval
/// and the background processes' apart, and the client backends' top
/// functions. A step with a row here ran under Valgrind: its wall-clock
/// numbers (QPS, latency) are not comparable with a normal run's.
const STEP_INSTRUCTIONS: &str = r#"
CREATE TABLE step_instructions (
    step_id          INTEGER PRIMARY KEY REFERENCES steps (id) ON DELETE CASCADE,
    events           INTEGER NOT NULL,  -- events (transactions) in the interval
    statements       INTEGER NOT NULL,  -- statements, BEGIN and COMMIT included
    client_ir        INTEGER NOT NULL,  -- client backends' instructions
    marker_ir        INTEGER NOT NULL,  -- one marker cycle per client, subtracted
    background_ir    INTEGER NOT NULL,  -- background processes' instructions
    background_procs INTEGER NOT NULL,
    clients          INTEGER NOT NULL,
    functions        TEXT NOT NULL      -- JSON [{"name", "self", "incl"}]
);
"#;

/// Which process runs a run, so that `tidemark runs` can tell a run whose
/// process died (`abandoned`) from one still going: the host name, the
/// pid, and the process's start (`BOOT_ID:TICKS`, the boot and the start
/// time in clock ticks since boot, which tells a reused pid apart). NULL
/// for runs stored before.
const RUN_PROCESS: &str = r#"
ALTER TABLE runs ADD COLUMN host_name TEXT;
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN process_start TEXT;
"#;

/// Concurrency sweeps (`--threads 1,4,64`): the client count of a step
/// that is one point of a sweep, NULL for a step of a single-count run. A
/// target then holds one step per test and point (`seq` stays unique).
/// Plain SQL, so every store backend can apply it.
const SWEEP_POINTS: &str = r#"
ALTER TABLE steps ADD COLUMN sweep_threads INTEGER;   -- NULL: not a sweep point
"#;

/// Client shards (`--client-hosts`, issue 17): the coordination board a
/// sharded step's processes share through a PostgreSQL store. One
/// `shard_steps` row per sharded step (its spec, the published start, an
/// abort reason), one `shard_members` row per shard (registration,
/// readiness, clock offset, start lag, and its result once finished).
const SHARD_BOARD: &str = r#"
CREATE TABLE shard_steps (
    id          INTEGER PRIMARY KEY,
    created_at  TEXT NOT NULL,
    shards      INTEGER NOT NULL,
    spec_json   TEXT NOT NULL,     -- what each shard runs; no password
    start_ms    INTEGER,           -- published start, Unix ms by the store's clock
    aborted     TEXT               -- why the coordinator gave up, NULL while live
);
CREATE TABLE shard_members (
    shard_step_id INTEGER NOT NULL REFERENCES shard_steps (id) ON DELETE CASCADE,
    shard         INTEGER NOT NULL,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    threads       INTEGER NOT NULL,
    state         TEXT NOT NULL,   -- registered | ready | running | done | failed
    clock_offset_ms REAL,          -- this host's clock minus the store's
    start_lag_ms  REAL,            -- its actual start after the published one
    error         TEXT,
    live_qps      REAL,            -- statements/s in its last second, while it runs
    live_errors   INTEGER,         -- errors so far, while it runs
    result_json   TEXT,            -- counts, seconds, clients (no histogram)
    histogram     BLOB,            -- HdrHistogram V2 of its event latencies
    PRIMARY KEY (shard_step_id, shard)
);
"#;

/// The migrations, oldest first; migration `i` takes a database from
/// schema `i` to schema `i + 1`. A new one is appended as
/// `Migration::portable("NAME", NAME)`.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        name: "V1",
        sql: V1,
        // step_plans keeps capture order by SQLite's rowid; PostgreSQL gets
        // a column of that name.
        postgres: Postgres::TranslatedThen(
            "ALTER TABLE step_plans ADD COLUMN rowid BIGINT GENERATED ALWAYS AS IDENTITY;",
        ),
        then: None,
    },
    Migration {
        name: "TARGET_REPETITIONS_AND_PLANS",
        sql: TARGET_REPETITIONS_AND_PLANS,
        postgres: Postgres::Own(
            "ALTER TABLE targets ADD COLUMN repetition BIGINT NOT NULL DEFAULT 0;
             ALTER TABLE targets DROP CONSTRAINT targets_run_id_position_key;
             ALTER TABLE targets ADD UNIQUE (run_id, position, repetition);
             ALTER TABLE runs ADD COLUMN plan_json TEXT;",
        ),
        then: None,
    },
    Migration::portable("IBENCH_ROLES", IBENCH_ROLES),
    Migration::portable("V2_SAMPLERS", V2_SAMPLERS),
    Migration {
        name: "RUN_UUIDS",
        sql: RUN_UUIDS,
        postgres: Postgres::Translated,
        then: Some(give_runs_uuids),
    },
    Migration::portable("SERVER_COUNTERS", SERVER_COUNTERS),
    Migration::portable("CPU_PROFILES", CPU_PROFILES),
    Migration {
        name: "SCRUB_PASSWORDS",
        // The work is Rust's (one redaction function for every place a
        // password could hide); the statement itself changes nothing.
        sql: "UPDATE meta SET value = value WHERE 1 = 0;",
        postgres: Postgres::Translated,
        then: Some(scrub_passwords),
    },
    Migration::portable("RUN_PROCESS", RUN_PROCESS),
    Migration::portable("SWEEP_POINTS", SWEEP_POINTS),
    Migration::portable("SHARD_BOARD", SHARD_BOARD),
    Migration::portable("STEP_INSTRUCTIONS", STEP_INSTRUCTIONS),
];

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Gives every run without one a UUID (the runs stored before
/// `RUN_UUIDS`).
fn give_runs_uuids(db: &mut Backend) -> Result<()> {
    let rows = db.query("SELECT id FROM runs WHERE uuid IS NULL", &[])?;
    for row in rows.iter() {
        let id: i64 = row.at(0)?;
        db.execute(
            "UPDATE runs SET uuid = ?1 WHERE id = ?2",
            &params![super::new_uuid(), id],
        )?;
    }
    Ok(())
}

/// Text columns of each table that may hold a URL with a password.
const SCRUBBED: [(&str, &[&str]); 3] = [
    ("runs", &["command_line", "plan_json"]),
    ("targets", &["spec", "label", "extra_json", "failure"]),
    ("steps", &["failure", "error_samples_json"]),
];

/// Passwords out of every run stored before tidemark redacted them
/// (`SCRUB_PASSWORDS`): the command line, the stored plan, target specs and
/// labels, failures and error samples go through
/// [`crate::util::redact::redact_url_passwords`]; only changed rows are
/// written.
fn scrub_passwords(db: &mut Backend) -> Result<()> {
    use crate::util::redact::redact_url_passwords;
    for (table, columns) in SCRUBBED {
        let rows = db.query(
            &format!("SELECT id, {} FROM {table}", columns.join(", ")),
            &[],
        )?;
        for row in rows.iter() {
            let id: i64 = row.at(0)?;
            for (i, column) in columns.iter().enumerate() {
                let Some(text) = row.at::<Option<String>>(i + 1)? else {
                    continue;
                };
                let clean = redact_url_passwords(&text);
                if clean != text {
                    db.execute(
                        &format!("UPDATE {table} SET {column} = ?1 WHERE id = ?2"),
                        &params![clean, id],
                    )?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
