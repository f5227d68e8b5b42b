//! Pieces shared by the sysbench tests of PostgreSQL, MariaDB and SQLite:
//! the suite they run, one step run and checked to have worked, the
//! statement texts a server reports (its placeholders differ), and the
//! rows each read statement must return.

use std::sync::atomic::AtomicBool;

use tidemark::db::{Connector, Dialect};
use tidemark::runner::{Schedule, StepResult, StepStatus, run_step};
use tidemark::workload::sysbench::catalog::{Kind, RangeSelects, TestDef};
use tidemark::workload::sysbench::{Sysbench, SysbenchParams};

/// Rows in the one table every test loads.
pub const ROWS: u64 = 20_000;

/// The suite the tests run: one table of [`ROWS`] rows, one thread, read
/// and write steps of `step_secs`, no warm-up, no housekeeping wait.
pub fn suite(dialect: Dialect, step_secs: f64) -> Sysbench {
    Sysbench {
        params: SysbenchParams {
            tables: 1,
            table_size: ROWS,
            threads: tidemark::knobs::ThreadCounts::one(1),
            mux_from: 0,
            read_secs: step_secs,
            write_secs: step_secs,
            warmup_secs: 0.0,
            slices: 0,
            turn_ms: 0,
            scan_warm_secs: 0.3,
            postwrite_scale: 0.0,
            seed: 7,
        },
        dialect,
    }
}

/// Runs `test` as one step on `connector`; it must finish ok with at
/// least one event.
pub fn run_test(
    suite: &Sysbench,
    test: &TestDef,
    connector: &dyn Connector,
    label: &str,
) -> StepResult {
    let name = test.name();
    let cancel = AtomicBool::new(false);
    let plan = suite.step_plan(test, label);
    let r = run_step(
        &plan,
        Schedule::PLAIN,
        connector,
        &suite.clients(test, 0),
        &cancel,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(r.status, StepStatus::Ok, "{name}: {:?}", r.error_samples);
    assert!(r.counts.events > 0, "{name} ran no event");
    r
}

/// How a server shows the parameters of a prepared statement.
#[derive(Clone, Copy)]
pub enum Params {
    /// `?` (MySQL, MariaDB).
    Question,
    /// `$1`, `$2`, … (PostgreSQL).
    Dollar,
}

impl Params {
    /// Parameters `from..=to`, comma-separated.
    pub fn list(self, from: u32, to: u32) -> String {
        (from..=to)
            .map(|i| match self {
                Params::Question => "?".to_string(),
                Params::Dollar => format!("${i}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `BETWEEN p1 AND p2`.
    pub fn between(self) -> String {
        format!("BETWEEN {}", self.list(1, 2).replace(", ", " AND "))
    }
}

/// The read statement of a points, range or random-points test as the
/// server shows it; `None` for other kinds.
pub fn read_sql(test: &TestDef, p: Params) -> Option<String> {
    let columns = |on_id: bool, covered: bool| match (on_id, covered) {
        (true, true) => ("id", "id"),
        (true, false) => ("id, c", "id"),
        (false, true) => ("k", "k"),
        (false, false) => ("k, c", "k"),
    };
    match test.kind {
        Kind::RandomPoints { .. } => Some(format!(
            "SELECT c FROM sbtest1 WHERE id IN ({})",
            p.list(1, test.range)
        )),
        Kind::Points { on_id, covered } => {
            let (cols, col) = columns(on_id, covered);
            Some(format!(
                "SELECT {cols} FROM sbtest1 WHERE {col} IN ({})",
                p.list(1, 100)
            ))
        }
        Kind::Range { on_id, covered } => {
            let (cols, col) = columns(on_id, covered);
            Some(format!(
                "SELECT {cols} FROM sbtest1 WHERE {col} {}",
                p.between()
            ))
        }
        _ => None,
    }
}

/// Rows per call of a points, range or random-points test: 100 lists of
/// random keys find 60 to 140 rows (k repeats, ids are unique), a range on
/// id up to 101 (it can pass the last id), hot points the same 100 rows,
/// random points about one per id (duplicates in a list count once).
pub fn check_rows_per_call(test: &TestDef, per: f64) {
    let name = test.name();
    match test.kind {
        Kind::RandomPoints { hot: true } => {
            assert_eq!(per, 100.0, "{name}: hot-points reads the same 100 rows")
        }
        Kind::RandomPoints { hot: false } => {
            let range = f64::from(test.range);
            assert!(per <= range && per > range * 0.8, "{name}: {per}");
        }
        Kind::Range { on_id: true, .. } => {
            assert!(per <= 101.0 && per > 95.0, "{name}: {per} rows per call");
        }
        Kind::Points { .. } | Kind::Range { .. } => {
            assert!((60.0..=140.0).contains(&per), "{name}: {per} rows per call");
        }
        _ => panic!("{name} has no rows-per-call rule"),
    }
}

/// Checks the range statements of a read-only event: each one `rs` turns
/// on ran once per event (`calls`) and returned at most the range's rows
/// (the table's end cuts a range short; SUM returns one row); the others
/// never ran (`ran`).
pub fn check_read_only_ranges(
    test: &TestDef,
    rs: RangeSelects,
    p: Params,
    events: i64,
    calls_and_rows: impl Fn(&str) -> (i64, i64),
    ran: impl Fn(&str) -> bool,
) {
    let name = test.name();
    let between = p.between();
    let w = f64::from(test.range).min(ROWS as f64);
    for (on, sql) in [
        (
            rs.simple,
            format!("SELECT c FROM sbtest1 WHERE id {between}"),
        ),
        (
            rs.sum,
            format!("SELECT SUM(k) FROM sbtest1 WHERE id {between}"),
        ),
        (
            rs.order,
            format!("SELECT c FROM sbtest1 WHERE id {between} ORDER BY c"),
        ),
        (
            rs.distinct,
            format!("SELECT DISTINCT c FROM sbtest1 WHERE id {between} ORDER BY c"),
        ),
    ] {
        if on {
            let (calls, rows) = calls_and_rows(&sql);
            assert_eq!(calls, events, "{name}: {sql}");
            if !sql.contains("SUM") {
                let per = rows as f64 / calls as f64;
                assert!(per <= w && per > w * 0.1, "{name}: {sql}: {per} rows");
            }
        } else {
            assert!(!ran(&sql), "{name} must not run {sql}");
        }
    }
}
