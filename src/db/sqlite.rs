//! SQLite as a benchmark target: the library linked into tidemark, one
//! connection per client thread, no server.
//!
//! Statements are prepared once per connection and driven through the C API
//! (bind, step, reset), so a prepared execution allocates nothing on the
//! Rust side and rows are counted, never converted. Every connection runs the
//! target's PRAGMAs (journal mode, synchronous, cache size, `-c` overrides)
//! right after it opens. SQLite allows one writer at a time: a connection
//! that finds the database locked waits in a busy handler that retries with
//! short, growing sleeps and counts each wait in a [`BusyCounter`] shared by
//! all connections of the target, so the waits are stored with each step
//! instead of being hidden or counted as errors.

use std::cell::Cell;
use std::ffi::{CStr, c_int};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, ffi};

use super::{Conn, Connector, DbError, Dialect, ErrorKind, Param, StmtId, TextRows};

/// How long a connection keeps retrying a locked database before the
/// statement fails with SQLITE_BUSY (counted as a retry by the runner).
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// The first sleep of the busy handler; each retry doubles it up to
/// [`MAX_BUSY_SLEEP`].
const FIRST_BUSY_SLEEP: Duration = Duration::from_micros(50);
const MAX_BUSY_SLEEP: Duration = Duration::from_millis(5);

/// What every connection to one SQLite database is opened with.
#[derive(Clone, Debug, PartialEq)]
pub struct SqliteOptions {
    /// The database file.
    pub path: PathBuf,
    /// `PRAGMA name = value` run on each new connection, in order.
    pub pragmas: Vec<(String, String)>,
    /// How long the busy handler retries.
    pub busy_timeout: Duration,
}

/// Busy-handler waits of all connections of one target, cumulative.
#[derive(Debug, Default)]
pub struct BusyCounter {
    waits: AtomicU64,
    wait_us: AtomicU64,
}

impl BusyCounter {
    /// Times a connection found the database locked and slept before
    /// retrying.
    pub fn waits(&self) -> u64 {
        self.waits.load(Ordering::Relaxed)
    }

    /// Microseconds slept in those waits.
    pub fn wait_us(&self) -> u64 {
        self.wait_us.load(Ordering::Relaxed)
    }
}

/// One SQLite connection, driven by one thread.
pub struct SqliteConn {
    /// Prepared statements; finalized in `Drop` before the connection closes.
    stmts: Vec<*mut ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    conn: Connection,
}

// SAFETY: the raw pointers are the connection's own database handle and its
// statements; they move with the connection, which is opened in SQLite's
// multi-thread mode (NO_MUTEX: one thread at a time per connection) and is
// used by one thread at a time because `Conn` methods take `&mut self`.
unsafe impl Send for SqliteConn {}

impl SqliteConn {
    /// Opens the database (creating the file if needed), installs the
    /// counting busy handler and runs the PRAGMAs. A PRAGMA that answers
    /// with a different value than asked (journal_mode=WAL on a file system
    /// without shared memory) is an error naming both.
    pub fn open(opts: &SqliteOptions, busy: Arc<BusyCounter>) -> Result<SqliteConn, DbError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&opts.path, flags).map_err(|e| {
            DbError::new(
                ErrorKind::Connection,
                "",
                format!("cannot open SQLite database {}: {e}", opts.path.display()),
            )
        })?;
        conn.busy_handler(Some(busy_handler(busy, opts.busy_timeout)))
            .map_err(|e| DbError::new(ErrorKind::Other, "", e.to_string()))?;
        // SAFETY: the handle stays valid as long as `conn`, which this
        // struct owns and drops last.
        let db = unsafe { conn.handle() };
        let mut c = SqliteConn {
            stmts: Vec::new(),
            db,
            conn,
        };
        for (name, value) in &opts.pragmas {
            let rows = c.query_text(&format!("PRAGMA {name} = {value}"))?;
            let answer = rows
                .first()
                .and_then(|r| r.first().cloned().flatten())
                .unwrap_or_default();
            if name.eq_ignore_ascii_case("journal_mode") && !answer.eq_ignore_ascii_case(value) {
                return Err(DbError::new(
                    ErrorKind::Other,
                    "",
                    format!(
                        "SQLite kept journal_mode={answer} for {} (asked for {value}): choose another file system or journal mode",
                        opts.path.display()
                    ),
                ));
            }
        }
        Ok(c)
    }

    /// The library version, e.g. `3.46.0`.
    pub fn library_version() -> &'static str {
        rusqlite::version()
    }

    /// The rusqlite connection, for administrative work.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    fn error(&self, rc: c_int) -> DbError {
        // SAFETY: `db` is valid; errmsg returns a NUL-terminated string
        // owned by SQLite, copied before the next call.
        let msg = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(self.db)) }
            .to_string_lossy()
            .into_owned();
        let kind = match rc & 0xFF {
            ffi::SQLITE_BUSY | ffi::SQLITE_LOCKED => ErrorKind::Busy,
            _ if rc == ffi::SQLITE_CONSTRAINT_PRIMARYKEY || rc == ffi::SQLITE_CONSTRAINT_UNIQUE => {
                ErrorKind::Retryable
            }
            _ => ErrorKind::Other,
        };
        DbError::new(kind, rc.to_string(), msg)
    }

    /// Compiles the first statement of `sql`; returns it (null for text
    /// without a statement) and how many bytes it used.
    fn compile(
        &self,
        sql: &str,
        persistent: bool,
    ) -> Result<(*mut ffi::sqlite3_stmt, usize), DbError> {
        let mut stmt = std::ptr::null_mut();
        let mut tail = std::ptr::null();
        let flags = if persistent {
            ffi::SQLITE_PREPARE_PERSISTENT
        } else {
            0
        };
        let len = c_int::try_from(sql.len())
            .map_err(|_| DbError::new(ErrorKind::Other, "", "SQL text longer than 2 GiB"))?;
        // SAFETY: `sql` is valid for `len` bytes (no NUL needed when the
        // length is given); the out-pointers are valid locals.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                self.db,
                sql.as_ptr().cast(),
                len,
                flags,
                &mut stmt,
                &mut tail,
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(self.error(rc));
        }
        let used = if tail.is_null() {
            sql.len()
        } else {
            tail as usize - sql.as_ptr() as usize
        };
        Ok((stmt, used))
    }

    /// Steps `stmt` to the end: rows returned, or rows changed for a
    /// statement without result columns. Resets it either way.
    #[inline]
    fn run(
        &self,
        stmt: *mut ffi::sqlite3_stmt,
        mut row: impl FnMut(*mut ffi::sqlite3_stmt),
    ) -> Result<u64, DbError> {
        let mut rows = 0;
        // SAFETY: `stmt` is a live statement of `db`.
        unsafe {
            loop {
                match ffi::sqlite3_step(stmt) {
                    ffi::SQLITE_ROW => {
                        rows += 1;
                        row(stmt);
                    }
                    ffi::SQLITE_DONE => break,
                    _ => {
                        let rc = ffi::sqlite3_reset(stmt);
                        return Err(self.error(rc));
                    }
                }
            }
            if ffi::sqlite3_column_count(stmt) == 0 {
                rows = ffi::sqlite3_changes64(self.db) as u64;
            }
            ffi::sqlite3_reset(stmt);
        }
        Ok(rows)
    }

    /// Runs every statement of `sql` in turn (compiled for this call only).
    fn run_text(&mut self, sql: &str, mut out: Option<&mut TextRows>) -> Result<u64, DbError> {
        let mut rest = sql;
        let mut rows = 0;
        while !rest.trim().is_empty() {
            let (stmt, used) = self.compile(rest, false)?;
            rest = &rest[used..];
            if stmt.is_null() {
                continue;
            }
            let r = match out.as_deref_mut() {
                Some(v) => {
                    v.clear();
                    self.run(stmt, |s| v.push(text_row(s)))
                }
                None => self.run(stmt, |_| {}),
            };
            // SAFETY: `stmt` was compiled above and is not used again.
            unsafe { ffi::sqlite3_finalize(stmt) };
            rows = r?;
        }
        Ok(rows)
    }
}

/// The values of the current row as text (NULL = `None`).
fn text_row(stmt: *mut ffi::sqlite3_stmt) -> Vec<Option<String>> {
    // SAFETY: `stmt` has a current row; column_text returns a pointer valid
    // until the next step, copied here.
    unsafe {
        let n = ffi::sqlite3_column_count(stmt);
        (0..n)
            .map(|i| {
                let p = ffi::sqlite3_column_text(stmt, i);
                if p.is_null() {
                    None
                } else {
                    let len = ffi::sqlite3_column_bytes(stmt, i) as usize;
                    let bytes = std::slice::from_raw_parts(p, len);
                    Some(String::from_utf8_lossy(bytes).into_owned())
                }
            })
            .collect()
    }
}

/// A busy handler that sleeps 50 µs, 100 µs, … up to 5 ms per retry, counts
/// each wait and gives up after `timeout` (the statement then fails with
/// SQLITE_BUSY).
fn busy_handler(busy: Arc<BusyCounter>, timeout: Duration) -> impl FnMut(i32) -> bool + Send {
    let first_wait = Cell::new(Instant::now());
    move |attempt| {
        if attempt == 0 {
            first_wait.set(Instant::now());
        } else if first_wait.get().elapsed() >= timeout {
            return false;
        }
        let sleep = FIRST_BUSY_SLEEP
            .saturating_mul(1 << attempt.clamp(0, 16))
            .min(MAX_BUSY_SLEEP);
        std::thread::sleep(sleep);
        busy.waits.fetch_add(1, Ordering::Relaxed);
        busy.wait_us
            .fetch_add(sleep.as_micros() as u64, Ordering::Relaxed);
        true
    }
}

impl Conn for SqliteConn {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        let (stmt, used) = self.compile(sql, true)?;
        if stmt.is_null() || !sql[used..].trim().is_empty() {
            if !stmt.is_null() {
                // SAFETY: compiled above, not kept.
                unsafe { ffi::sqlite3_finalize(stmt) };
            }
            return Err(DbError::new(
                ErrorKind::Other,
                "",
                format!("prepare takes exactly one SQL statement: {sql}"),
            ));
        }
        self.stmts.push(stmt);
        Ok(StmtId(self.stmts.len() as u32 - 1))
    }

    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        let Some(&s) = self.stmts.get(stmt.0 as usize) else {
            return Err(DbError::new(
                ErrorKind::Other,
                "",
                format!("statement {} was not prepared on this connection", stmt.0),
            ));
        };
        let mut text = false;
        for (i, p) in params.iter().enumerate() {
            let n = i as c_int + 1;
            // SAFETY: `s` is live; text is bound without a copy (STATIC) and
            // the bindings are cleared below before `params` goes away.
            let rc = unsafe {
                match *p {
                    Param::Int(v) => ffi::sqlite3_bind_int64(s, n, v),
                    Param::Text(t) => {
                        text = true;
                        ffi::sqlite3_bind_text(
                            s,
                            n,
                            t.as_ptr().cast(),
                            t.len() as c_int,
                            ffi::SQLITE_STATIC(),
                        )
                    }
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(self.error(rc));
            }
        }
        let r = self.run(s, |_| {});
        if text {
            // SAFETY: `s` is live and reset.
            unsafe { ffi::sqlite3_clear_bindings(s) };
        }
        r
    }

    fn execute_text(&mut self, sql: &str) -> Result<u64, DbError> {
        self.run_text(sql, None)
    }

    fn query_text(&mut self, sql: &str) -> Result<TextRows, DbError> {
        let mut rows = Vec::new();
        self.run_text(sql, Some(&mut rows))?;
        Ok(rows)
    }
}

impl Drop for SqliteConn {
    fn drop(&mut self) {
        for s in self.stmts.drain(..) {
            // SAFETY: each statement is live and finalized exactly once,
            // before `conn` closes the database.
            unsafe { ffi::sqlite3_finalize(s) };
        }
    }
}

/// Opens [`SqliteConn`]s to one database, all sharing one busy counter.
#[derive(Clone, Debug)]
pub struct SqliteConnector {
    pub opts: Arc<SqliteOptions>,
    pub busy: Arc<BusyCounter>,
}

impl SqliteConnector {
    /// A connector for `opts` with a fresh counter.
    pub fn new(opts: SqliteOptions) -> SqliteConnector {
        SqliteConnector {
            opts: Arc::new(opts),
            busy: Arc::new(BusyCounter::default()),
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.opts.path
    }
}

impl Connector for SqliteConnector {
    fn connect(&self) -> Result<Box<dyn Conn>, DbError> {
        Ok(Box::new(SqliteConn::open(&self.opts, self.busy.clone())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(dir: &Path) -> SqliteOptions {
        SqliteOptions {
            path: dir.join("t.db"),
            pragmas: vec![
                ("journal_mode".into(), "WAL".into()),
                ("synchronous".into(), "NORMAL".into()),
            ],
            busy_timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn prepared_and_text_statements_count_rows() {
        let dir = tempfile::tempdir().unwrap();
        let connector = SqliteConnector::new(options(dir.path()));
        let mut c = connector.connect().unwrap();
        assert_eq!(
            c.query_text("PRAGMA journal_mode").unwrap(),
            vec![vec![Some("wal".to_string())]]
        );
        c.execute_text("CREATE TABLE t(id INTEGER PRIMARY KEY, c TEXT); CREATE INDEX ic ON t(c)")
            .unwrap();
        let ins = c.prepare("INSERT INTO t (id, c) VALUES (?1, ?2)").unwrap();
        for i in 1..=5 {
            assert_eq!(
                c.execute(ins, &[Param::Int(i), Param::Text("x")]).unwrap(),
                1
            );
        }
        let sel = c
            .prepare("SELECT c FROM t WHERE id BETWEEN ?1 AND ?2")
            .unwrap();
        assert_eq!(c.execute(sel, &[Param::Int(2), Param::Int(4)]).unwrap(), 3);
        let upd = c.prepare("UPDATE t SET c=?1 WHERE id IN (?2, ?3)").unwrap();
        let n = c
            .execute(upd, &[Param::Text("y"), Param::Int(1), Param::Int(9)])
            .unwrap();
        assert_eq!(n, 1);
        assert_eq!(c.execute_text("DELETE FROM t WHERE id > 3").unwrap(), 2);
        let rows = c
            .query_text("SELECT id, c, NULL FROM t ORDER BY id")
            .unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0], vec![Some("1".into()), Some("y".into()), None]);
        let e = c
            .execute(ins, &[Param::Int(1), Param::Text("dup")])
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Retryable, "{e}");
        let e = c.execute_text("SELECT nope FROM t").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Other);
        assert!(e.message.contains("nope"), "{e}");
        assert!(c.prepare("SELECT 1; SELECT 2").is_err());
        // The statement still works after errors.
        assert_eq!(c.execute(sel, &[Param::Int(1), Param::Int(3)]).unwrap(), 3);
    }

    #[test]
    fn a_locked_database_is_waited_for_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let connector = SqliteConnector::new(options(dir.path()));
        let mut a = connector.connect().unwrap();
        a.execute_text("CREATE TABLE t(id INTEGER PRIMARY KEY)")
            .unwrap();
        a.execute_text("BEGIN IMMEDIATE").unwrap();
        a.execute_text("INSERT INTO t VALUES (1)").unwrap();
        let waiter = {
            let connector = connector.clone();
            let (ready, wait_ready) = std::sync::mpsc::channel();
            let h = std::thread::spawn(move || {
                let mut b = connector.connect().unwrap();
                ready.send(()).unwrap();
                b.execute_text("INSERT INTO t VALUES (2)")
            });
            wait_ready.recv().unwrap();
            h
        };
        std::thread::sleep(Duration::from_millis(200));
        a.execute_text("COMMIT").unwrap();
        assert_eq!(waiter.join().unwrap().unwrap(), 1);
        assert!(connector.busy.waits() > 0, "the writer waited");
        assert!(
            connector.busy.wait_us() >= 50_000,
            "{}",
            connector.busy.wait_us()
        );

        // With a short timeout the waiter gives up with SQLITE_BUSY.
        let mut opts = options(dir.path());
        opts.busy_timeout = Duration::from_millis(50);
        let short = SqliteConnector::new(opts);
        a.execute_text("BEGIN IMMEDIATE").unwrap();
        let mut b = short.connect().unwrap();
        let e = b.execute_text("INSERT INTO t VALUES (3)").unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy, "{e}");
        a.execute_text("ROLLBACK").unwrap();
    }

    #[test]
    fn a_missing_directory_fails_to_open() {
        let opts = SqliteOptions {
            path: PathBuf::from("/nonexistent-dir-for-tidemark/t.db"),
            pragmas: vec![],
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        };
        let e = SqliteConn::open(&opts, Arc::default()).err().unwrap();
        assert_eq!(e.kind, ErrorKind::Connection);
        assert!(
            e.message.contains("/nonexistent-dir-for-tidemark/t.db"),
            "{e}"
        );
    }
}
