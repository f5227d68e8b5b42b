//! Every sysbench microbenchmark against a real managed MariaDB, checked
//! from the server's side: performance_schema counts the plain-text
//! statements per digest and the executions, rows sent and rows affected
//! of each prepared statement; userstat's INDEX_STATISTICS says which index
//! read how many rows. Also: the connection character set is the configured
//! one, and the MySQL housekeeping restores what it changes.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::sysbench_checks::{self, Params, ROWS};
use common::*;
use tidemark::db::mysql::{MyConn, MyConnectOptions, MyConnector};
use tidemark::db::{Conn, Connector, DbError, Dialect, Param, StmtId, TextRows};

use tidemark::workload::sysbench::catalog::{self, Kind};
use tidemark::workload::sysbench::load;

/// Statement text → (executions, rows sent, rows affected), as the server
/// counted them.
type Seen = HashMap<String, (i64, i64, i64)>;

/// performance_schema keeps the first 1024 bytes of a statement's text
/// (1000-point IN lists are longer): compare that much.
fn text_key(sql: &str) -> String {
    sql.chars().take(1000).collect()
}

/// A client connection that, before it closes, reads the server's counters
/// of the statements it prepared (performance_schema keeps them only while
/// the statement exists) into a shared map.
struct Recording {
    inner: MyConn,
    seen: Arc<Mutex<Seen>>,
}

impl Conn for Recording {
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        self.inner.prepare(sql)
    }
    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        self.inner.execute(stmt, params)
    }
    fn execute_text(&mut self, sql: &str) -> Result<u64, DbError> {
        self.inner.execute_text(sql)
    }
    fn query_text(&mut self, sql: &str) -> Result<TextRows, DbError> {
        self.inner.query_text(sql)
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        // A lost connection shows up as missing counts in the test.
        let Ok(rows) = self.inner.query_text(
            "SELECT SQL_TEXT, COUNT_EXECUTE, SUM_ROWS_SENT, SUM_ROWS_AFFECTED \
             FROM performance_schema.prepared_statements_instances WHERE OWNER_THREAD_ID = \
             (SELECT THREAD_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = CONNECTION_ID())",
        ) else {
            return;
        };
        let mut seen = self.seen.lock().unwrap();
        for r in rows {
            let v: Vec<String> = r.into_iter().map(|x| x.unwrap_or_default()).collect();
            let e = seen.entry(text_key(&v[0])).or_default();
            e.0 += v[1].parse::<i64>().unwrap();
            e.1 += v[2].parse::<i64>().unwrap();
            e.2 += v[3].parse::<i64>().unwrap();
        }
    }
}

struct RecordingConnector {
    opts: MyConnectOptions,
    seen: Arc<Mutex<Seen>>,
}

impl Connector for RecordingConnector {
    fn connect(&self) -> Result<Box<dyn Conn>, DbError> {
        Ok(Box::new(Recording {
            inner: MyConn::connect(&self.opts)?,
            seen: self.seen.clone(),
        }))
    }
}

/// Plain-text statements touching sbtest (or BEGIN/COMMIT/ROLLBACK) per
/// digest: digest text → (calls, rows sent, rows examined).
fn digests(admin: &mut dyn Conn) -> Seen {
    admin
        .query_text(
            "SELECT DIGEST_TEXT, COUNT_STAR, SUM_ROWS_SENT, SUM_ROWS_EXAMINED \
             FROM performance_schema.events_statements_summary_by_digest \
             WHERE (DIGEST_TEXT LIKE '%sbtest%' AND DIGEST_TEXT NOT LIKE '%_schema%') \
             OR DIGEST_TEXT IN ('BEGIN ', 'COMMIT ', 'ROLLBACK ')",
        )
        .unwrap()
        .into_iter()
        .map(|r| {
            let v: Vec<String> = r.into_iter().map(|x| x.unwrap_or_default()).collect();
            (
                v[0].replace(['`', ' '], ""),
                (
                    v[1].parse().unwrap(),
                    v[2].parse().unwrap(),
                    v[3].parse().unwrap(),
                ),
            )
        })
        .collect()
}

/// Rows read per index of sbtest1 (userstat), cumulative.
fn index_reads(admin: &mut dyn Conn) -> HashMap<String, i64> {
    admin
        .query_text(
            "SELECT INDEX_NAME, ROWS_READ FROM information_schema.INDEX_STATISTICS \
             WHERE TABLE_SCHEMA = 'tidemark'",
        )
        .unwrap()
        .into_iter()
        .map(|r| {
            let v: Vec<String> = r.into_iter().map(|x| x.unwrap_or_default()).collect();
            (v[0].clone(), v[1].parse().unwrap())
        })
        .collect()
}

#[test]
fn every_microbenchmark_does_its_work_as_mariadb_sees_it() {
    let dir = server_tempdir();
    let mut server = start_mariadb(
        dir.path(),
        "base",
        &[
            ("performance_schema", "ON"),
            (
                "performance-schema-consumer-events-statements-current",
                "ON",
            ),
            ("userstat", "1"),
        ],
    );
    let opts = server.connect_options();
    let plain = MyConnector(opts.clone());
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let connector = RecordingConnector {
        opts: opts.clone(),
        seen: seen.clone(),
    };
    let cancel = AtomicBool::new(false);
    load::create_and_load(&plain, 1, ROWS, 7, 2, &cancel, &mut |_, _| {}).unwrap();
    let mut admin = plain.connect().unwrap();
    assert_eq!(
        scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1"),
        ROWS as i64
    );
    assert_eq!(
        scalar(
            admin.as_mut(),
            "SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_NAME = 'sbtest1' AND COLUMN_NAME = 'k'"
        ),
        "k_1",
        "k_1 is built after the load"
    );
    assert_eq!(
        scalar(
            admin.as_mut(),
            "SELECT EXTRA FROM information_schema.COLUMNS WHERE TABLE_NAME = 'sbtest1' AND COLUMN_NAME = 'id'"
        ),
        "auto_increment",
        "MySQL schema uses AUTO_INCREMENT"
    );
    admin.execute_text("ANALYZE TABLE sbtest1").unwrap();

    let suite = sysbench_checks::suite(Dialect::Mysql, 0.3);
    let checksum = |admin: &mut dyn Conn| {
        scalar(
            admin,
            "SELECT SUM(CRC32(CONCAT(id, c))) FROM sbtest1 WHERE id <> 1",
        )
    };

    for test in catalog::suite() {
        let name = test.name();
        let sum_before = checksum(admin.as_mut());
        let count_before = scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1");
        let reads_before = index_reads(admin.as_mut());
        admin
            .execute_text("TRUNCATE performance_schema.events_statements_summary_by_digest")
            .unwrap();
        seen.lock().unwrap().clear();
        let r = sysbench_checks::run_test(&suite, &test, &connector, "ma");
        let text = digests(admin.as_mut());
        let prepared = seen.lock().unwrap().clone();
        let reads_after = index_reads(admin.as_mut());
        let read = |index: &str| {
            reads_after.get(index).copied().unwrap_or(0)
                - reads_before.get(index).copied().unwrap_or(0)
        };
        let events = r.counts.events as i64;
        let ps = |sql: &str| -> (i64, i64, i64) {
            *prepared.get(&text_key(sql)).unwrap_or_else(|| {
                panic!("{name}: the server never executed {sql:?}; it saw {prepared:?}")
            })
        };
        let txt = |digest: &str| -> (i64, i64, i64) {
            *text.get(digest).unwrap_or_else(|| {
                panic!("{name}: the server never saw {digest:?}; it saw {text:?}")
            })
        };
        // Statements the server saw, counted like sysbench: BEGIN and COMMIT too.
        let total: i64 =
            prepared.values().map(|v| v.0).sum::<i64>() + text.values().map(|v| v.0).sum::<i64>();
        assert_eq!(
            total, r.counts.statements as i64,
            "{name}: the server's statement count matches ours ({prepared:?} {text:?})"
        );
        let sent_per_call = |sql: &str| {
            let (c, s, _) = ps(sql);
            s as f64 / c as f64
        };

        match test.kind {
            Kind::PointQuery => {
                assert_eq!(
                    ps("SELECT c FROM sbtest1 WHERE id=?"),
                    (events, events, 0),
                    "{name}"
                );
                assert!(read("PRIMARY") >= events && read("k_1") == 0, "{name}");
            }
            Kind::RandomPoints { .. } | Kind::Points { .. } | Kind::Range { .. } => {
                let sql = sysbench_checks::read_sql(&test, Params::Question).unwrap();
                sysbench_checks::check_rows_per_call(&test, sent_per_call(&sql));
                if let Kind::Points { on_id, covered } | Kind::Range { on_id, covered } = test.kind
                {
                    assert_eq!(ps(&sql).0, events, "{name}");
                    if on_id {
                        assert!(
                            read("PRIMARY") >= events * 60 && read("k_1") == 0,
                            "{name}: served by the PK: {reads_after:?}"
                        );
                    } else {
                        assert!(
                            read("k_1") >= events * 60,
                            "{name}: served by k_1: {reads_after:?}"
                        );
                        if covered {
                            assert_eq!(read("PRIMARY"), 0, "{name}: k_1 covers it");
                        }
                    }
                }
            }
            Kind::Scan => {
                let (calls, sent, examined) = txt("SELECT*FROMsbtest1WHERELENGTH(c)<?");
                assert_eq!((calls, sent), (events, 0), "{name}");
                assert!(
                    examined >= events * ROWS as i64 * 9 / 10,
                    "{name}: {examined}"
                );
            }
            Kind::ReadOnly(rs) => {
                assert_eq!(txt("BEGIN").0, events, "{name}");
                assert_eq!(txt("COMMIT").0, events, "{name}");
                assert_eq!(
                    ps("SELECT c FROM sbtest1 WHERE id=?"),
                    (10 * events, 10 * events, 0),
                    "{name}"
                );
                sysbench_checks::check_read_only_ranges(
                    &test,
                    rs,
                    Params::Question,
                    events,
                    |sql| {
                        let (calls, sent, _) = ps(sql);
                        (calls, sent)
                    },
                    |sql| prepared.contains_key(&text_key(sql)),
                );
            }
            Kind::ReadOnlyCount => {
                assert_eq!(
                    ps("SELECT count(c) FROM sbtest1 WHERE id BETWEEN ? AND ?"),
                    (events, events, 0),
                    "{name}"
                );
            }
            Kind::ReadWrite | Kind::WriteOnly => {
                assert_eq!(txt("BEGIN").0, events, "{name}");
                assert_eq!(txt("COMMIT").0, events, "{name}");
                for sql in [
                    "UPDATE sbtest1 SET k=k+1 WHERE id=?",
                    "UPDATE sbtest1 SET c=? WHERE id=?",
                    "DELETE FROM sbtest1 WHERE id=?",
                    "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
                ] {
                    let (calls, _, affected) = ps(sql);
                    assert_eq!(calls, events, "{name}: 4 writes per transaction: {sql}");
                    assert!(
                        affected <= calls && affected >= calls * 9 / 10,
                        "{name}: {sql}"
                    );
                }
                assert_eq!(
                    scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1"),
                    count_before,
                    "{name}: each transaction deletes and re-inserts one row"
                );
            }
            Kind::UpdateIndex => {
                assert_eq!(
                    ps("UPDATE sbtest1 SET k=k+1 WHERE id=?"),
                    (events, 0, events),
                    "{name}"
                );
            }
            Kind::UpdateNonIndex => {
                let (calls, _, affected) = ps("UPDATE sbtest1 SET c=? WHERE id=?");
                assert_eq!(calls, events, "{name}");
                assert!(affected <= calls && affected > calls * 9 / 10, "{name}");
                if test.test == "update-one" {
                    assert_eq!(
                        checksum(admin.as_mut()),
                        sum_before,
                        "update-one only ever changes id 1"
                    );
                    assert_eq!(affected, calls, "update-one finds id 1 every time");
                }
            }
            Kind::UpdateInlist => {
                let list = vec!["?"; 100].join(", ");
                let (calls, _, affected) =
                    ps(&format!("UPDATE sbtest1 set c=? WHERE id IN ({list})"));
                let per = affected as f64 / calls as f64;
                assert!(per <= 100.0 && per > 80.0, "{name}: {per}");
            }
            Kind::Delete => {
                let (calls, _, affected) = ps("DELETE FROM sbtest1 WHERE id=?");
                assert_eq!(calls, events, "{name}");
                assert!(affected <= calls, "{name}");
                let after = scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1");
                assert_eq!(count_before - after, affected, "{name}");
            }
            Kind::Insert => {
                assert_eq!(
                    txt("INSERTINTOsbtest1(ID,k,c,pad)VALUES(...)").0,
                    events,
                    "{name}: plain-text insert of all four columns"
                );
                let after = scalar_i64(admin.as_mut(), "SELECT count(*) FROM sbtest1");
                assert_eq!(after - count_before, events, "{name}");
                assert_eq!(
                    scalar_i64(
                        admin.as_mut(),
                        &format!("SELECT count(*) FROM sbtest1 WHERE id > {ROWS}")
                    ),
                    events,
                    "{name}: id 0 makes AUTO_INCREMENT assign new ids at the tail"
                );
            }
        }
    }

    // The pinned charset is the session's, whatever the server default.
    let session = |charset: &str| {
        let mut o = opts.clone();
        o.charset = charset.to_string();
        let mut c = MyConn::connect(&o).unwrap();
        let rows = c
            .query_text("SHOW SESSION VARIABLES LIKE 'character_set_%'")
            .unwrap();
        rows.into_iter()
            .map(|r| (r[0].clone().unwrap(), r[1].clone().unwrap()))
            .collect::<HashMap<_, _>>()
    };
    for charset in ["latin1", "utf8mb4"] {
        let vars = session(charset);
        for v in [
            "character_set_client",
            "character_set_connection",
            "character_set_results",
        ] {
            assert_eq!(vars[v], charset, "{v} with charset {charset}");
        }
    }
    let info = server.info("mariadb@system", "ma").unwrap();
    assert_eq!(
        info.extra["session_character_sets"]["character_set_client"],
        "latin1"
    );
    assert_eq!(info.dbms, "mariadb");
    assert!(info.version.contains("MariaDB"), "{}", info.version);
    assert!(
        info.settings
            .iter()
            .any(|(n, v)| n == "innodb_buffer_pool_size" && v == "268435456"),
        "{:?}",
        info.settings
    );
    assert!(info.config_text.contains("userstat = 1"));
    drop(admin);
    server.stop().unwrap();
}

#[test]
fn housekeeping_resets_the_binlog_and_restores_flushing() {
    let dir = server_tempdir();
    let mut server = start_mariadb(dir.path(), "binlog", &[]);
    let connector = MyConnector(server.connect_options());
    let mut admin = connector.connect().unwrap();
    assert_eq!(scalar(admin.as_mut(), "SELECT @@log_bin"), "1");
    let cancel = AtomicBool::new(false);
    load::create_and_load(&connector, 2, 1000, 1, 2, &cancel, &mut |_, _| {}).unwrap();
    let logs = |a: &mut dyn Conn| a.query_text("SHOW BINARY LOGS").unwrap().len();
    admin.execute_text("FLUSH BINARY LOGS").unwrap();
    assert!(logs(admin.as_mut()) >= 2);
    let before = (
        scalar(admin.as_mut(), "SELECT @@innodb_max_dirty_pages_pct"),
        scalar(admin.as_mut(), "SELECT @@innodb_max_dirty_pages_pct_lwm"),
    );
    // Watch the setting all through the housekeeping, from a connection
    // opened beforehand: it is lowered only after RESET MASTER and ANALYZE,
    // which a loaded machine makes slow, so a single look at a fixed moment
    // could fall before or after the wait. The budget leaves the lowered
    // value in place for seconds even when those statements take a while.
    assert_ne!(
        before.0.parse::<f64>(),
        Ok(1.0),
        "the housekeeping changes it"
    );
    let mut watch = connector.connect().unwrap();
    let done = AtomicBool::new(false);
    let seen = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut seen: Vec<String> = Vec::new();
            while !done.load(Ordering::Acquire) {
                let now = scalar(watch.as_mut(), "SELECT @@innodb_max_dirty_pages_pct");
                if seen.last() != Some(&now) {
                    seen.push(now);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            seen
        });
        let notes = load::postwrite(&connector, 2, Duration::from_millis(3000), &cancel);
        done.store(true, Ordering::Release);
        let notes = notes.unwrap();
        assert!(
            notes.iter().any(|n| n.contains("innodb_idle_flush_pct")),
            "MariaDB 10.11 has no innodb_idle_flush_pct: {notes:?}"
        );
        watcher.join().unwrap()
    });
    // In order: the original value (unless the first look came late), 1
    // for the wait, the original again (unless no look came after it).
    let lowered = seen.iter().position(|v| v.parse::<f64>() == Ok(1.0));
    let lowered = lowered.unwrap_or_else(|| panic!("lowered for the wait: saw {seen:?}"));
    assert!(
        seen.iter()
            .enumerate()
            .all(|(i, v)| i == lowered || *v == before.0),
        "only the original value besides 1: saw {seen:?}, before {before:?}"
    );
    let after = (
        scalar(admin.as_mut(), "SELECT @@innodb_max_dirty_pages_pct"),
        scalar(admin.as_mut(), "SELECT @@innodb_max_dirty_pages_pct_lwm"),
    );
    assert_eq!(after, before, "restored after the wait");
    assert_eq!(logs(admin.as_mut()), 1, "RESET MASTER left one binary log");
    drop(admin);
    server.stop().unwrap();
}
