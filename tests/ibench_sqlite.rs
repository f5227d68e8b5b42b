//! The Insert Benchmark against SQLite through the library itself, checked
//! from the engine's side: row counts, the secondary indexes
//! (sqlite_master), covering-index plans (EXPLAIN QUERY PLAN), the
//! connections each step opens, the notes stored where SQLite differs, and
//! a writer that cannot get the write lock retrying instead of failing.

mod common;

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use common::ibench_checks::{self, count, with_others_share};
use common::*;
use tidemark::db::sqlite::{DEFAULT_BUSY_TIMEOUT, SqliteConnector, SqliteOptions};
use tidemark::db::{Conn, Connector, DbError, Dialect};
use tidemark::runner::{StepStatus, run_roles};
use tidemark::server::sqlite as sqlite_target;
use tidemark::workload::ibench::client::QueryKind;
use tidemark::workload::ibench::{StepKind, housekeeping};

/// A real SQLite connector that remembers the name of every connection
/// the runner opens (SQLite has no server to ask).
struct Named {
    inner: SqliteConnector,
    names: Mutex<Vec<String>>,
}

impl Connector for Named {
    fn connect(&self) -> Result<Box<dyn Conn>, DbError> {
        self.connect_as("unnamed")
    }
    fn connect_as(&self, name: &str) -> Result<Box<dyn Conn>, DbError> {
        self.names.lock().unwrap().push(name.to_string());
        self.inner.connect()
    }
}

impl Named {
    fn take(&self) -> Vec<String> {
        let mut v = std::mem::take(&mut *self.names.lock().unwrap());
        v.sort();
        v
    }
}

fn options(path: std::path::PathBuf, busy_timeout: Duration) -> SqliteOptions {
    let text = sqlite_target::config_text("quick", "wal").unwrap();
    SqliteOptions {
        path,
        pragmas: sqlite_target::pragmas(&text, &[]),
        busy_timeout,
    }
}

// The tests here measure rates, so they take turns (`serial`).

#[test]
fn every_step_does_its_work_as_sqlite_sees_it() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ib.db");
    let connector = Named {
        inner: SqliteConnector::new(options(path.clone(), DEFAULT_BUSY_TIMEOUT)),
        names: Mutex::default(),
    };
    let mut admin = connector.inner.connect().unwrap();
    let (ib, steps) = ibench_checks::set_up(admin.as_mut(), Dialect::Sqlite);
    let cancel = AtomicBool::new(false);
    let mut rows_after_lx = 0;
    for (i, step) in steps.iter().enumerate() {
        let note = ib.step_info(step, i as u32).note.unwrap();
        assert!(note.contains("SQLite"), "{note}");
        if step.name == "qr100" {
            let notes =
                housekeeping::run(&connector.inner, &ib.tables(), Duration::ZERO, &cancel).unwrap();
            assert!(notes.is_empty(), "{notes:?}");
            assert_eq!(
                scalar_i64(
                    admin.as_mut(),
                    "SELECT count(*) FROM sqlite_stat1 WHERE idx LIKE 'pi%'"
                ),
                6,
                "ANALYZE ran on the three indexes of both tables"
            );
            let wal = dir.path().join("ib.db-wal");
            assert_eq!(
                std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0),
                0,
                "wal_checkpoint(TRUNCATE) emptied the WAL"
            );
        }
        if let StepKind::Query(kind) = step.kind {
            let plans = ib.explain(step, admin.as_mut());
            match kind {
                QueryKind::Range => ibench_checks::check_range_plans(&plans, |plan, index| {
                    assert!(
                        plan.contains(&format!("SEARCH pi1 USING COVERING INDEX pi1_{index}")),
                        "{plan}"
                    );
                }),
                QueryKind::Point => {
                    assert_eq!(plans.len(), 1);
                    assert!(
                        plans[0].1.contains("SEARCH pi1 USING INTEGER PRIMARY KEY"),
                        "{plans:?}"
                    );
                }
            }
        }
        connector.take();
        let plan = ib.roles_plan(step, i as u32, "test");
        let (r, others) = with_others_share(None, || {
            run_roles(plan, &connector, &cancel, &mut |_| {}).unwrap()
        });
        let mut expected: Vec<String> = step
            .roles()
            .iter()
            .flat_map(|role| (1..=2).map(move |c| format!("tidemark/{role}/{c}")))
            .collect();
        expected.sort();
        assert_eq!(
            connector.take(),
            expected,
            "{}: one connection per role and client",
            step.name
        );
        assert_eq!(
            r.counts.errors, 0,
            "{}: busy waits are not errors",
            step.name
        );
        ibench_checks::check_step(&ib, admin.as_mut(), step, &r, &mut rows_after_lx, others);
        if matches!(step.kind, StepKind::CreateIndexes) {
            for t in ib.tables() {
                let names: Vec<String> = admin
                    .query_text(&format!(
                        "SELECT name FROM sqlite_master \
                         WHERE type = 'index' AND tbl_name = '{t}' ORDER BY 1"
                    ))
                    .unwrap()
                    .into_iter()
                    .map(|r| r[0].clone().unwrap())
                    .collect();
                // The INTEGER PRIMARY KEY is the rowid: no index of its own.
                assert_eq!(
                    names,
                    [
                        format!("{t}_marketsegment"),
                        format!("{t}_pdc"),
                        format!("{t}_registersegment")
                    ]
                );
            }
        }
    }

    // Another connection holds the write lock for longer than the busy
    // timeout: the background writers wait, get SQLITE_BUSY, count it as a
    // retry and send the statement again; the step still does its work.
    let short = SqliteConnector::new(options(path.clone(), Duration::from_millis(200)));
    let plan = ib.roles_plan(&steps[4], 99, "test");
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            admin.execute_text("BEGIN IMMEDIATE").unwrap();
            std::thread::sleep(Duration::from_millis(1_200));
            admin.execute_text("COMMIT").unwrap();
        });
        run_roles(plan, &short, &cancel, &mut |_| {}).unwrap()
    });
    assert_eq!(
        r.status,
        StepStatus::Ok,
        "{:?} {:?}",
        r.failure,
        r.error_samples
    );
    assert_eq!(r.counts.errors, 0, "{:?}", r.error_samples);
    let writers =
        r.role("insert").unwrap().counts.retries + r.role("delete").unwrap().counts.retries;
    assert!(writers >= 2, "the writers retried: {writers}");
    assert!(
        short.busy.waits() > 0,
        "and waited in the busy handler first"
    );
    assert_eq!(
        r.role("query").unwrap().counts.retries,
        0,
        "readers are not blocked"
    );
    let (ins, del) = (r.role("insert").unwrap(), r.role("delete").unwrap());
    assert_eq!(ins.counts.rows, 2 * steps[4].rows_per_client);
    assert_eq!(del.counts.rows, ins.counts.rows);
    for t in ib.tables() {
        assert_eq!(count(admin.as_mut(), &t), rows_after_lx, "{t}");
    }
}

#[test]
fn the_cli_stores_every_step_with_what_it_means_on_sqlite() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let db = dir.path().join("ib.db");
    let target = format!("sqlite:{}", db.display());
    let out = run_tidemark(&ibench_checks::small_run(results, &[&target], "1"));
    assert!(out.status.success(), "{}", stderr(&out));
    let steps = ibench_checks::small_run_steps(results);
    for s in &steps {
        assert_eq!(s["errors"], 0, "{}", s["name"]);
        let note = s["note"].as_str().unwrap_or_default();
        assert!(note.contains("one write"), "{}: {note}", s["name"]);
        assert!(s["params"]["busy_waits"].is_u64(), "{}", s["params"]);
    }
    let qr = &steps[4];
    assert!(
        qr["note"]
            .as_str()
            .unwrap()
            .starts_with("SQLite has no server"),
        "{}",
        qr["note"]
    );
    let plans = qr["plans"].as_array().unwrap();
    assert_eq!(plans.len(), 3);
    assert!(
        plans
            .iter()
            .all(|p| p["plan"].as_str().unwrap().contains("USING COVERING INDEX")),
        "{plans:?}"
    );
    ibench_checks::check_stored_sla(qr);
}

/// The Insert Benchmark table `tidemark run` prints at its end is the
/// report's: one column per target (medians over the repetitions), and
/// each ratio with its 95 % interval and verdict, the same numbers as
/// report.json.
#[test]
fn the_run_summary_gives_each_ratio_its_interval_and_verdict() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let results = path("results");
    let (a, b) = (
        format!("sqlite:{}+wal", path("a.db")),
        format!("sqlite:{}+delete", path("b.db")),
    );
    let mut args = ibench_checks::small_run(&results, &[&a, &b], "1");
    args.extend(["--repeat", "2", "--no-report"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_tidemark(&args);
    assert_success(&o);
    let text = stdout(&o);
    let table: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Insert Benchmark: inserts/s"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(table.len() > 4, "{text}");
    assert_eq!(table[1], "median over 2 repetitions");
    assert!(
        table[2].contains("rel ±95%") && table[2].contains("verdict"),
        "{text}"
    );
    // One column per target, not per repetition.
    assert_eq!(table[2].matches("sqlite3541.").count(), 2, "{}", table[2]);
    assert!(table.last().unwrap().starts_with("intervals: "), "{text}");

    let report = common::cli_runs::report_json(&results, &dir.path().join("report"));
    let ib = &report["ibench"];
    for (k, step) in ib["steps"].as_array().unwrap().iter().enumerate() {
        let step = step.as_str().unwrap();
        let line = table
            .iter()
            .find(|l| l.trim_start().starts_with(&format!("{step} ")))
            .unwrap_or_else(|| panic!("no {step} row: {text}"));
        let cell = &ib["throughput"][1]["cells"][k];
        let verdict = cell["verdict"].as_str().unwrap();
        assert!(line.trim_end().ends_with(verdict), "{line} vs {cell}");
        let value = cell["value"].as_f64().unwrap();
        assert!(line.contains(&format!(" {value:.0}")), "{line} vs {cell}");
        let rel = cell["relative"].as_f64().unwrap();
        assert!(line.contains(&format!(" {rel:.2}")), "{line} vs {cell}");
    }
}
