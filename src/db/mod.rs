//! Client connections that benchmark threads drive, one per thread.
//!
//! The [`Conn`] trait is the only thing the workloads and the runner see of a
//! database client. Each DBMS family has its own implementation, chosen for the
//! least client CPU per statement: PostgreSQL speaks the wire protocol directly
//! ([`postgres`]), so a prepared statement costs one `write` and one `read`
//! and no allocation on the hot path; MySQL and MariaDB get the same kind of
//! client ([`mysql`]); SQLite is the library linked in ([`sqlite`]).

pub mod kept;
pub mod mysql;
pub mod passwords;
pub mod postgres;
pub mod socket;
pub mod sqlite;
pub(crate) mod url;

use std::fmt;

/// The SQL dialect a connection speaks; workloads pick statement text by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    Postgres,
    Mysql,
    Sqlite,
}

impl Dialect {
    /// Placeholder for the `n`-th (1-based) parameter of a prepared statement.
    pub fn placeholder(self, n: usize) -> String {
        match self {
            Dialect::Postgres => format!("${n}"),
            Dialect::Mysql => "?".to_string(),
            Dialect::Sqlite => format!("?{n}"),
        }
    }
}

/// A parameter of a prepared statement. Borrowed, so building a parameter
/// list on the hot path allocates nothing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Param<'a> {
    Int(i64),
    Text(&'a str),
}

/// Handle of a statement prepared on one connection (valid only there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StmtId(pub u32);

/// How the runner should treat a failed statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Deadlock, serialization failure, lock timeout, duplicate key from a
    /// concurrent delete/insert: the event is rolled back and counted as a
    /// retry, as sysbench counts "ignored errors".
    Retryable,
    /// SQLite's SQLITE_BUSY after the busy handler gave up.
    Busy,
    /// The connection is gone (server died, network closed).
    Connection,
    /// Anything else: a real error, counted and shown.
    Other,
}

/// An error from the database or the client library, classified for counting.
#[derive(Clone, Debug)]
pub struct DbError {
    pub kind: ErrorKind,
    /// SQLSTATE or the DBMS's error number, when the server sent one.
    pub code: String,
    pub message: String,
}

impl DbError {
    pub fn new(kind: ErrorKind, code: impl Into<String>, message: impl Into<String>) -> Self {
        DbError {
            kind,
            code: code.into(),
            message: message.into(),
        }
    }

    /// An I/O failure on the connection's socket.
    pub fn io(err: std::io::Error) -> Self {
        DbError::new(ErrorKind::Connection, "", format!("connection lost: {err}"))
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.code.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{} ({})", self.message, self.code)
        }
    }
}

impl std::error::Error for DbError {}

/// Rows of an administrative query, every value as text (NULL = `None`).
pub type TextRows = Vec<Vec<Option<String>>>;

/// The first column of the first row (`None` when there is no row or the
/// value is NULL).
pub fn first_value(rows: TextRows) -> Option<String> {
    rows.into_iter()
        .next()
        .and_then(|r| r.into_iter().next().flatten())
}

/// Two-column rows as `(name, value)` pairs: a row without a name is
/// skipped, a NULL value becomes empty.
pub fn name_value_pairs(rows: TextRows) -> Vec<(String, String)> {
    rows.into_iter()
        .filter_map(|row| {
            let mut cols = row.into_iter();
            Some((cols.next()??, cols.next()?.unwrap_or_default()))
        })
        .collect()
}

/// One client connection. Implementations must keep `execute` and
/// `execute_text` free of heap allocation once warmed up.
pub trait Conn: Send {
    /// The dialect of the server at the other end.
    fn dialect(&self) -> Dialect;

    /// Prepares `sql` server-side (placeholders as [`Dialect::placeholder`]).
    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError>;

    /// Executes a prepared statement and returns the number of rows it
    /// returned (queries) or changed (INSERT/UPDATE/DELETE).
    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError>;

    /// Sends one statement as plain text (BEGIN, COMMIT, the sysbench insert
    /// and scan, DDL) and returns rows returned or changed.
    fn execute_text(&mut self, sql: &str) -> Result<u64, DbError>;

    /// Runs an administrative query and returns its rows as text. Allocates:
    /// never call it on the measured path.
    fn query_text(&mut self, sql: &str) -> Result<TextRows, DbError>;
}

/// A connection that runs one prepared statement at a time without
/// blocking its thread: [`MuxConn::send_execute`] sends it, and each time
/// the socket is readable [`MuxConn::on_readable`] reads what has arrived
/// (one `read`) until the result is complete. An event loop multiplexes
/// many of these on one OS thread. Both calls must not allocate once
/// warmed up.
pub trait MuxConn: Conn {
    /// The socket to wait on for readability.
    fn raw_fd(&self) -> std::os::fd::RawFd;

    /// Sends one execution of a prepared statement.
    fn send_execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<(), DbError>;

    /// Reads once and returns the rows when the sent statement's result is
    /// complete, `None` while it is not.
    fn on_readable(&mut self) -> Result<Option<u64>, DbError>;

    /// The connection as a plain [`Conn`] (to prepare statements).
    fn as_conn(&mut self) -> &mut dyn Conn;
}

/// Opens client connections to the target under test; one per client
/// thread, plus admin connections for loading and housekeeping.
pub trait Connector: Send + Sync {
    fn connect(&self) -> Result<Box<dyn Conn>, DbError>;

    /// A connection an event loop can multiplex ([`MuxConn`]); `None`
    /// when the family's client has none (then each client needs a
    /// thread).
    fn connect_mux(&self) -> Option<Result<Box<dyn MuxConn>, DbError>> {
        None
    }

    /// Whether [`Connector::connect_mux`] gives connections.
    fn multiplexes(&self) -> bool {
        false
    }

    /// Like [`Connector::connect`], with the connection named `name` where
    /// the server shows client names (PostgreSQL's `application_name`), so
    /// a test or a user can count connections per role from the server.
    fn connect_as(&self, name: &str) -> Result<Box<dyn Conn>, DbError> {
        let _ = name;
        self.connect()
    }
}
