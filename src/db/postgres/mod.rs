//! A minimal PostgreSQL client speaking the v3 wire protocol directly over a
//! blocking socket.
//!
//! It exists because benchmark threads must spend as little client CPU per
//! statement as possible, so that the server, not the harness, is measured. A
//! prepared statement costs one `write` (Bind + Execute + Sync built in a
//! reused buffer) and usually one `read` (complete messages are parsed in
//! place in a reused buffer; row data is skipped, the row count comes from the
//! CommandComplete tag), with no heap allocation once warmed up; on a unix
//! socket a `poll` precedes the read (see [`super::socket::wait_readable`]). There is no TLS,
//! no async runtime, and no type handling beyond sending integers to
//! int2/int4/int8 parameters in binary; everything else travels as text.

mod hostile;
mod mux;
pub(crate) mod url;
mod wire;

pub use hostile::decode_backend_stream;

pub use url::PgConnectOptions;

use super::socket::{Link, Lost, Stream};
use super::{Conn, Connector, DbError, Dialect, ErrorKind, Param, StmtId, TextRows};
use postgres_protocol::authentication::{md5_hash, sasl};
use std::io;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

/// How this client words a lost connection.
static LOST: Lost = Lost {
    closed: || {
        DbError::new(
            ErrorKind::Connection,
            "",
            "connection is closed after an earlier connection error",
        )
    },
    write: DbError::io,
    ended: || DbError::new(ErrorKind::Connection, "", "connection closed by the server"),
    read: DbError::io,
};
/// Largest backend message we accept (PostgreSQL's own limit is 1 GiB).
const MAX_MESSAGE: usize = 1 << 30;

/// What to keep of the messages answering a request besides the row count.
enum Sink<'a> {
    Nothing,
    Rows(&'a mut TextRows),
    Named(&'a mut Vec<String>, &'a mut TextRows),
    ParamTypes(&'a mut Vec<u32>),
}

struct Stmt {
    name: String,
    param_oids: Vec<u32>,
}

/// One connection to a PostgreSQL server, driven by one thread.
pub struct PgConn {
    link: Link,
    stmts: Vec<Stmt>,
    pid: i32,
    server_version: String,
    /// The statement in flight on the multiplexed path ([`mux`]): rows of
    /// its CommandComplete and its first error so far.
    mux_rows: u64,
    mux_err: Option<DbError>,
}

impl PgConn {
    /// Connects and authenticates (trust, password, md5 or SCRAM-SHA-256).
    pub fn connect(opts: &PgConnectOptions) -> Result<PgConn, DbError> {
        Self::connect_inner(opts, None)
    }

    /// Like [`PgConn::connect`], but gives up when connecting, or any read or
    /// write during startup and authentication, takes longer than `timeout`.
    pub fn connect_timeout(opts: &PgConnectOptions, timeout: Duration) -> Result<PgConn, DbError> {
        Self::connect_inner(opts, Some(timeout))
    }

    /// The process id of the server backend serving this connection.
    pub fn backend_pid(&self) -> i32 {
        self.pid
    }

    /// The server's version as reported at startup, e.g. `15.6 (Debian ...)`.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    fn connect_inner(
        opts: &PgConnectOptions,
        timeout: Option<Duration>,
    ) -> Result<PgConn, DbError> {
        let cant = |what: String, e: io::Error| {
            DbError::new(ErrorKind::Connection, "", format!("{what}: {e}"))
        };
        let (stream, what) = if opts.host.starts_with('/') {
            let path = format!("{}/.s.PGSQL.{}", opts.host, opts.port);
            (Stream::unix(Path::new(&path)), path)
        } else {
            (
                Stream::tcp(&opts.host, opts.port, timeout),
                format!("{}:{}", opts.host, opts.port),
            )
        };
        let mut stream = stream.map_err(|e| cant(format!("cannot connect to {what}"), e))?;
        stream.set_timeouts(timeout).map_err(DbError::io)?;
        let mut conn = PgConn {
            link: Link::new(stream, &LOST),
            stmts: Vec::new(),
            pid: 0,
            server_version: String::new(),
            mux_rows: 0,
            mux_err: None,
        };
        if let Err(e) = conn.startup(opts) {
            conn.link.broken = true; // the server hangs up; no Terminate
            return Err(e);
        }
        conn.link.stream.set_timeouts(None).map_err(DbError::io)?;
        Ok(conn)
    }

    fn startup(&mut self, opts: &PgConnectOptions) -> Result<(), DbError> {
        self.link.wbuf.clear();
        wire::put_startup(
            &mut self.link.wbuf,
            &[
                ("user", &opts.user),
                ("database", &opts.dbname),
                ("application_name", &opts.application_name),
                ("client_encoding", "UTF8"),
            ],
        );
        self.link.send()?;
        let mut scram = None;
        loop {
            let (tag, range) = self.next_msg()?;
            let body = &self.link.rbuf[range];
            match tag {
                b'R' => {
                    let mut b = wire::Body(body);
                    let code = b.i32()?;
                    let data = b.0.to_vec();
                    self.authenticate(code, &data, opts, &mut scram)?;
                }
                b'S' => {
                    let mut b = wire::Body(body);
                    if b.cstr()? == "server_version" {
                        self.server_version = b.cstr()?.to_string();
                    }
                }
                b'K' => self.pid = wire::Body(body).i32()?,
                b'E' => return Err(wire::server_error(body).0),
                b'Z' => return Ok(()),
                _ => {} // NoticeResponse, NegotiateProtocolVersion
            }
        }
    }

    fn authenticate(
        &mut self,
        code: i32,
        data: &[u8],
        opts: &PgConnectOptions,
        scram: &mut Option<sasl::ScramSha256>,
    ) -> Result<(), DbError> {
        let auth_err = |m: String| DbError::new(ErrorKind::Other, "28000", m);
        let need_password = || {
            opts.password.as_deref().ok_or_else(|| {
                auth_err(format!(
                    "server wants a password for user {} but the database URL has none; use postgres://user:password@host/db",
                    opts.user
                ))
            })
        };
        let scram_err = |e: io::Error| auth_err(format!("SCRAM authentication failed: {e}"));
        self.link.wbuf.clear();
        let at = wire::begin(&mut self.link.wbuf, b'p');
        match code {
            0 => return Ok(()),
            3 => wire::put_cstr(&mut self.link.wbuf, need_password()?.as_bytes()),
            5 => {
                let salt = data
                    .get(..4)
                    .ok_or_else(|| wire::protocol_error("short md5 salt"))?;
                let hash = md5_hash(
                    opts.user.as_bytes(),
                    need_password()?.as_bytes(),
                    salt.try_into().unwrap(),
                );
                wire::put_cstr(&mut self.link.wbuf, hash.as_bytes());
            }
            10 => {
                let mut mechs = data.split(|&b| b == 0);
                if !mechs.any(|m| m == sasl::SCRAM_SHA_256.as_bytes()) {
                    return Err(auth_err(
                        "server offers no SASL mechanism this client supports".into(),
                    ));
                }
                let s = sasl::ScramSha256::new(
                    need_password()?.as_bytes(),
                    sasl::ChannelBinding::unsupported(),
                );
                wire::put_cstr(&mut self.link.wbuf, sasl::SCRAM_SHA_256.as_bytes());
                self.link
                    .wbuf
                    .extend_from_slice(&(s.message().len() as u32).to_be_bytes());
                self.link.wbuf.extend_from_slice(s.message());
                *scram = Some(s);
            }
            11 | 12 => {
                let s = scram
                    .as_mut()
                    .ok_or_else(|| wire::protocol_error("SASL message before SASL start"))?;
                if code == 12 {
                    return s.finish(data).map_err(scram_err);
                }
                s.update(data).map_err(scram_err)?;
                self.link.wbuf.extend_from_slice(s.message());
            }
            _ => {
                return Err(auth_err(format!(
                    "unsupported authentication method (code {code}); use trust, password, md5 or scram-sha-256"
                )));
            }
        }
        wire::finish(&mut self.link.wbuf, at);
        self.link.send()
    }

    /// Returns the type and body range (in `rbuf`) of the next complete
    /// message, reading from the socket only when none is buffered.
    #[inline]
    fn next_msg(&mut self) -> Result<(u8, Range<usize>), DbError> {
        loop {
            let avail = self.link.rend - self.link.rpos;
            let mut need = 5;
            if avail >= 5 {
                let p = self.link.rpos;
                let len =
                    u32::from_be_bytes(self.link.rbuf[p + 1..p + 5].try_into().unwrap()) as usize;
                if avail > len && len >= 4 {
                    self.link.rpos = p + 1 + len;
                    return Ok((self.link.rbuf[p], p + 5..p + 1 + len));
                }
                if !(4..=MAX_MESSAGE).contains(&len) {
                    self.link.broken = true;
                    return Err(wire::protocol_error("bad message length"));
                }
                need = 1 + len;
            }
            self.fill(need)?;
        }
    }

    /// Moves a partial message to the front of `rbuf`, grows it when the
    /// message needs more than its size, and reads whatever has arrived.
    fn fill(&mut self, need: usize) -> Result<(), DbError> {
        if self.link.rpos > 0 {
            self.link.compact();
        }
        if self.link.rbuf.len() < need {
            self.link.rbuf.resize(need.next_power_of_two(), 0);
        }
        self.link.read_some(false)
    }

    /// Reads until ReadyForQuery and returns the rows of the last
    /// CommandComplete tag, collecting into `sink` on the way. The first
    /// server error wins; after a connection-level error the connection is
    /// marked unusable.
    fn finish_results(&mut self, mut sink: Sink<'_>) -> Result<u64, DbError> {
        let r = self.read_results(&mut sink);
        if let Err(e) = &r
            && e.kind == ErrorKind::Connection
        {
            self.link.broken = true;
        }
        r
    }

    #[inline]
    fn read_results(&mut self, sink: &mut Sink<'_>) -> Result<u64, DbError> {
        let mut rows = 0;
        let mut err: Option<DbError> = None;
        loop {
            let (tag, range) = match self.next_msg() {
                Ok(m) => m,
                Err(e) => {
                    return Err(err.map_or(e, |d| DbError {
                        kind: ErrorKind::Connection,
                        ..d
                    }));
                }
            };
            let body = &self.link.rbuf[range];
            match (tag, &mut *sink) {
                (b'C', _) => rows = wire::tag_rows(body),
                (b'D', Sink::Rows(out)) => out.push(wire::text_row(body)?),
                (b'T', Sink::Rows(out)) => out.clear(),
                (b'D', Sink::Named(_, out)) => out.push(wire::text_row(body)?),
                (b'T', Sink::Named(names, out)) => {
                    **names = wire::column_names(body)?;
                    out.clear();
                }
                (b't', Sink::ParamTypes(out)) => **out = wire::param_oids(body)?,
                (b'E', _) => {
                    let (mut e, fatal) = wire::server_error(body);
                    if fatal || e.kind == ErrorKind::Connection {
                        e.kind = ErrorKind::Connection;
                        return Err(e);
                    }
                    err.get_or_insert(e);
                }
                (b'Z', _) => break,
                (b'G', _) => {
                    // COPY FROM STDIN: refuse, the server then reports an error.
                    self.link.wbuf.clear();
                    let at = wire::begin(&mut self.link.wbuf, b'f');
                    wire::put_cstr(
                        &mut self.link.wbuf,
                        b"COPY FROM STDIN is not supported by this client",
                    );
                    wire::finish(&mut self.link.wbuf, at);
                    self.link.send()?;
                }
                // DataRow we skip, Parse/BindComplete, NoData, notices,
                // ParameterStatus, notifications, COPY OUT data.
                _ => {}
            }
        }
        err.map_or(Ok(rows), Err)
    }

    fn check_sql(sql: &str) -> Result<(), DbError> {
        if sql.as_bytes().contains(&0) {
            return Err(DbError::new(
                ErrorKind::Other,
                "22021",
                "SQL text contains a NUL byte",
            ));
        }
        Ok(())
    }
}

impl PgConn {
    /// Like [`Conn::query_text`], with the names of the result's columns
    /// (of the last statement that returned rows). Allocates: for the
    /// results store, never for the measured path.
    pub fn query_named(&mut self, sql: &str) -> Result<(Vec<String>, TextRows), DbError> {
        self.link.check_open()?;
        Self::check_sql(sql)?;
        self.link.wbuf.clear();
        wire::put_query(&mut self.link.wbuf, sql);
        self.link.send()?;
        let (mut names, mut rows) = (Vec::new(), Vec::new());
        self.finish_results(Sink::Named(&mut names, &mut rows))?;
        Ok((names, rows))
    }
}

impl Conn for PgConn {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        self.link.check_open()?;
        Self::check_sql(sql)?;
        let id = self.stmts.len();
        let name = format!("s{id}");
        self.link.wbuf.clear();
        wire::put_prepare(&mut self.link.wbuf, &name, sql);
        self.link.send()?;
        let mut param_oids = Vec::new();
        self.finish_results(Sink::ParamTypes(&mut param_oids))?;
        self.stmts.push(Stmt { name, param_oids });
        Ok(StmtId(id as u32))
    }

    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        self.put_execute(stmt, params)?;
        self.link.send()?;
        self.finish_results(Sink::Nothing)
    }

    fn execute_text(&mut self, sql: &str) -> Result<u64, DbError> {
        self.link.check_open()?;
        Self::check_sql(sql)?;
        self.link.wbuf.clear();
        wire::put_query(&mut self.link.wbuf, sql);
        self.link.send()?;
        self.finish_results(Sink::Nothing)
    }

    fn query_text(&mut self, sql: &str) -> Result<TextRows, DbError> {
        self.link.check_open()?;
        Self::check_sql(sql)?;
        self.link.wbuf.clear();
        wire::put_query(&mut self.link.wbuf, sql);
        self.link.send()?;
        let mut rows = Vec::new();
        self.finish_results(Sink::Rows(&mut rows))?;
        Ok(rows)
    }
}

impl PgConn {
    /// Puts Bind, Execute and Sync of prepared statement `stmt` with
    /// `params` into `wbuf`, checking the statement and its arity.
    #[inline]
    fn put_execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<(), DbError> {
        self.link.check_open()?;
        let Some(st) = self.stmts.get(stmt.0 as usize) else {
            return Err(DbError::new(
                ErrorKind::Other,
                "",
                format!("statement {} was not prepared on this connection", stmt.0),
            ));
        };
        if st.param_oids.len() != params.len() {
            let msg = format!(
                "statement {} takes {} parameters, got {}",
                stmt.0,
                st.param_oids.len(),
                params.len()
            );
            return Err(DbError::new(ErrorKind::Other, "", msg));
        }
        self.link.wbuf.clear();
        wire::put_bind(&mut self.link.wbuf, &st.name, &st.param_oids, params)?;
        self.link.wbuf.extend_from_slice(wire::EXECUTE_SYNC);
        Ok(())
    }
}

impl Drop for PgConn {
    /// Says goodbye with Terminate, best-effort.
    fn drop(&mut self) {
        if !self.link.broken {
            let _ = self.link.stream.write_all(wire::TERMINATE);
        }
    }
}

/// Opens [`PgConn`]s to one server: the [`Connector`] of PostgreSQL targets.
#[derive(Clone, Debug)]
pub struct PgConnector(pub PgConnectOptions);

impl Connector for PgConnector {
    fn connect(&self) -> Result<Box<dyn Conn>, DbError> {
        Ok(Box::new(PgConn::connect(&self.0)?))
    }

    fn connect_mux(&self) -> Option<Result<Box<dyn crate::db::MuxConn>, DbError>> {
        Some(PgConn::connect(&self.0).map(|c| Box::new(c) as Box<dyn crate::db::MuxConn>))
    }

    fn multiplexes(&self) -> bool {
        true
    }

    fn connect_as(&self, name: &str) -> Result<Box<dyn Conn>, DbError> {
        let mut opts = self.0.clone();
        opts.application_name = name.to_string();
        Ok(Box::new(PgConn::connect(&opts)?))
    }
}
