//! A minimal MySQL/MariaDB client speaking the client/server protocol
//! directly over a blocking socket (TCP or unix).
//!
//! It exists for the same reason as the PostgreSQL client: benchmark threads
//! must spend as little client CPU per statement as possible. A prepared
//! statement is one COM_STMT_EXECUTE packet built in a reused buffer (binary
//! protocol, parameters bound in binary) and the answer is counted in place
//! in a reused read buffer: rows are framed, never decoded, so the per-query
//! path allocates nothing. On MariaDB 10.11 (callgrind, user-space
//! instructions per query, including tidemark's runner) a point select costs
//! about 1.5k instructions here, 4.4k in sysbench (libmariadb + Lua) and 7k
//! with the `mysql` crate 28, which builds a `Row` of `Value`s per row; a
//! 101-row range select costs 16k here and 149k with the crate. On MariaDB
//! the server is asked to send result metadata only when it changes, as the
//! C client does. bench/point_query_vs_anchors.sh compares QPS and client
//! CPU with sysbench's mysql driver on one server.
//!
//! Plain statements (BEGIN, COMMIT, the sysbench insert and scan, DDL) go as
//! COM_QUERY. The connection character set is pinned twice: in the handshake
//! and with `SET NAMES` right after login, so no client default can change
//! it. There is no TLS and no compression; authentication speaks
//! `mysql_native_password` and `caching_sha2_password`, whose full
//! authentication (the server has not cached the password yet) sends the
//! password in clear over a unix socket and, over TCP, encrypted with the
//! RSA public key the server sends on request (RSA-OAEP, the `rsa` crate).

mod auth;
mod hostile;
mod mux;
mod url;
mod wire;

pub use hostile::decode_server_packets;

pub use url::{DEFAULT_CHARSET, MyConnectOptions, charset_names, check_charset, collation_id};

use std::ops::Range;
use std::time::Duration;

use super::socket::{Link, Lost, Stream};
use super::{Conn, Connector, DbError, Dialect, ErrorKind, Param, StmtId, TextRows};
use wire::{COM_QUERY, COM_QUIT, COM_STMT_PREPARE, MORE_RESULTS, Payload, protocol_error};

/// How this client words a lost connection: MySQL's client codes, 2006
/// for a connection already gone, 2013 for one lost while reading.
static LOST: Lost = Lost {
    closed: || {
        DbError::new(
            ErrorKind::Connection,
            "2006",
            "connection is closed after an earlier connection error",
        )
    },
    write: |e| {
        DbError::new(
            ErrorKind::Connection,
            "2006",
            format!("server has gone away: {e}"),
        )
    },
    ended: || {
        DbError::new(
            ErrorKind::Connection,
            "2013",
            "lost connection to the server during a query",
        )
    },
    read: |e| {
        DbError::new(
            ErrorKind::Connection,
            "2013",
            format!("lost connection to the server: {e}"),
        )
    },
};

/// A statement prepared on the server.
struct Stmt {
    id: u32,
    params: usize,
    /// Parameter types the server has for it (empty until the first run).
    types: Vec<u8>,
}

/// One connection to a MySQL or MariaDB server, driven by one thread.
pub struct MyConn {
    link: Link,
    /// Sequence id of the last packet read.
    seq: u8,
    stmts: Vec<Stmt>,
    server_version: String,
    connection_id: u32,
    /// MariaDB sends result metadata of prepared statements only when it
    /// changed (a flag byte follows each column count).
    cache_metadata: bool,
}

impl MyConn {
    /// Connects, logs in and pins the character set.
    pub fn connect(opts: &MyConnectOptions) -> Result<MyConn, DbError> {
        Self::connect_inner(opts, None)
    }

    /// Like [`MyConn::connect`], but gives up when connecting or any read
    /// or write during login takes longer than `timeout`.
    pub fn connect_timeout(opts: &MyConnectOptions, timeout: Duration) -> Result<MyConn, DbError> {
        Self::connect_inner(opts, Some(timeout))
    }

    /// The server's version string, e.g. `10.11.19-MariaDB-0+deb12u1`.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// Whether the server is MariaDB (rather than MySQL).
    pub fn is_mariadb(&self) -> bool {
        self.server_version.contains("MariaDB")
    }

    /// The server's id for this connection (`CONNECTION_ID()`).
    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    fn connect_inner(
        opts: &MyConnectOptions,
        timeout: Option<Duration>,
    ) -> Result<MyConn, DbError> {
        let collation = collation_id(&opts.charset).ok_or_else(|| {
            DbError::new(
                ErrorKind::Other,
                "",
                check_charset(&opts.charset).unwrap_err(),
            )
        })?;
        let (stream, what) = match &opts.socket {
            Some(path) => (Stream::unix(path), path.display().to_string()),
            None => (
                Stream::tcp(&opts.host, opts.port, timeout),
                format!("{}:{}", opts.host, opts.port),
            ),
        };
        let mut stream = stream.map_err(|e| {
            DbError::new(
                ErrorKind::Connection,
                "2002",
                format!("cannot connect to {what}: {e}"),
            )
        })?;
        stream.set_timeouts(timeout).map_err(DbError::io)?;
        let mut conn = MyConn {
            link: Link::new(stream, &LOST),
            seq: 0,
            stmts: Vec::new(),
            server_version: String::new(),
            connection_id: 0,
            cache_metadata: false,
        };
        if let Err(e) = conn.login(opts, collation) {
            conn.link.broken = true; // the server hangs up; no COM_QUIT
            return Err(e);
        }
        conn.link.stream.set_timeouts(None).map_err(DbError::io)?;
        let set_names = format!("SET NAMES {}", opts.charset);
        conn.execute_text(&set_names)?;
        Ok(conn)
    }

    fn login(&mut self, opts: &MyConnectOptions, collation: u8) -> Result<(), DbError> {
        let range = self.next_packet()?;
        if self.link.rbuf[range.start] == 0xFF {
            return Err(wire::server_error(&self.link.rbuf[range]));
        }
        let hs = auth::parse_handshake(&self.link.rbuf[range])?;
        self.server_version = hs.server_version.clone();
        self.connection_id = hs.connection_id;
        let password = opts.password.as_deref().unwrap_or("").as_bytes();
        let (plugin, first) = match auth::scramble_for(&hs.plugin, password, &hs.scramble) {
            Some(a) => (hs.plugin.as_str(), a),
            // Answer with the classic plugin; the server may switch us.
            None => (
                "mysql_native_password",
                auth::native_password(password, &hs.scramble),
            ),
        };
        let capabilities = auth::client_capabilities(hs.capabilities, !opts.dbname.is_empty());
        if capabilities & wire::cap::PROTOCOL_41 == 0 {
            return Err(protocol_error("server does not speak protocol 4.1"));
        }
        let mariadb_capabilities = hs.mariadb_capabilities & wire::MARIADB_CACHE_METADATA;
        self.cache_metadata = mariadb_capabilities != 0;
        self.link.wbuf.clear();
        auth::put_response(
            &mut self.link.wbuf,
            &auth::Response {
                capabilities,
                mariadb_capabilities,
                collation,
                user: &opts.user,
                auth: &first,
                database: &opts.dbname,
                plugin,
            },
        );
        self.link.send()?;
        let mut plugin = plugin.to_string();
        let mut nonce = hs.scramble.clone();
        loop {
            let range = self.next_packet()?;
            let p = &self.link.rbuf[range];
            match p.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(wire::server_error(p)),
                Some(0xFE) => {
                    // Auth switch: plugin name, then its nonce.
                    let mut r = Payload(&p[1..]);
                    plugin = String::from_utf8_lossy(r.cstr()).into_owned();
                    nonce = r.0.strip_suffix(&[0]).unwrap_or(r.0).to_vec();
                    let reply = auth::scramble_for(&plugin, password, &nonce).ok_or_else(|| {
                        DbError::new(
                            ErrorKind::Other,
                            "",
                            format!(
                                "user {} authenticates with plugin {plugin}, which this client does not speak: use mysql_native_password or caching_sha2_password",
                                opts.user
                            ),
                        )
                    })?;
                    self.send_auth_data(&reply)?;
                }
                Some(0x01) if plugin == "caching_sha2_password" => match p.get(1) {
                    Some(3) => {} // fast authentication succeeded; OK follows
                    // Full authentication: the password in clear over the
                    // socket; over TCP encrypted with the server's RSA key,
                    // which it sends when asked (request 2).
                    Some(4) if self.link.stream.is_unix() => {
                        let mut clear = password.to_vec();
                        clear.push(0);
                        self.send_auth_data(&clear)?;
                    }
                    Some(4) => self.send_auth_data(&[2])?,
                    _ if p.len() > 1 && p[1..].starts_with(b"-----BEGIN") => {
                        let sealed = auth::rsa_password(password, &nonce, &p[1..])?;
                        self.send_auth_data(&sealed)?;
                    }
                    _ => return Err(protocol_error("unexpected caching_sha2_password packet")),
                },
                _ => return Err(protocol_error("unexpected packet during login")),
            }
        }
    }

    /// Sends raw authentication data as the next packet of the exchange.
    fn send_auth_data(&mut self, data: &[u8]) -> Result<(), DbError> {
        self.link.wbuf.clear();
        let at = wire::begin_packet(&mut self.link.wbuf, self.seq.wrapping_add(1));
        self.link.wbuf.extend_from_slice(data);
        wire::finish_packet(&mut self.link.wbuf, at);
        self.link.send()
    }

    /// Returns the payload range (in `rbuf`) of the next packet, reading
    /// from the socket only when it is not buffered. A payload split over
    /// continuation packets is joined in place.
    #[inline]
    fn next_packet(&mut self) -> Result<Range<usize>, DbError> {
        self.fill_to(4)?;
        let header = |b: &[u8], at: usize| {
            (
                u32::from_le_bytes([b[at], b[at + 1], b[at + 2], 0]) as usize,
                b[at + 3],
            )
        };
        let (mut len, seq) = header(&self.link.rbuf, self.link.rpos);
        self.seq = seq;
        self.fill_to(4 + len)?;
        let mut total = len;
        while len == wire::MAX_PAYLOAD {
            self.fill_to(4 + total + 4)?;
            (len, self.seq) = header(&self.link.rbuf, self.link.rpos + 4 + total);
            self.fill_to(4 + total + 4 + len)?;
            // Both fills may have moved the buffered bytes: index afresh.
            let at = self.link.rpos + 4 + total;
            self.link.rbuf.copy_within(at + 4..self.link.rend, at);
            self.link.rend -= 4;
            total += len;
        }
        let start = self.link.rpos + 4;
        self.link.rpos = start + total;
        Ok(start..start + total)
    }

    /// Makes sure `need` bytes from `rpos` on are buffered: moves what is
    /// buffered to the front when it must, grows the buffer for large
    /// packets, and reads.
    fn fill_to(&mut self, need: usize) -> Result<(), DbError> {
        while self.link.rend - self.link.rpos < need {
            if self.link.rpos + need > self.link.rbuf.len() {
                self.link.compact();
                if need > self.link.rbuf.len() {
                    self.link.rbuf.resize(need.next_power_of_two(), 0);
                }
            }
            self.link.read_some(false)?;
        }
        Ok(())
    }

    /// Skips packets up to and including the next EOF packet.
    fn skip_to_eof(&mut self) -> Result<u16, DbError> {
        loop {
            let r = self.next_packet()?;
            let p = &self.link.rbuf[r];
            if wire::is_eof(p) {
                return Ok(wire::eof_status(p));
            }
            if p.first() == Some(&0xFF) {
                return Err(wire::server_error(p));
            }
        }
    }

    /// Reads the whole answer to a command: rows returned (counted, and
    /// decoded as text into `rows` when given) or rows changed. The first
    /// server error is returned once the answer has been read.
    fn read_answer(&mut self, mut rows: Option<&mut TextRows>) -> Result<u64, DbError> {
        let r = self.read_answer_inner(&mut rows);
        if let Err(e) = &r
            && e.kind == ErrorKind::Connection
        {
            self.link.broken = true;
        }
        r
    }

    #[inline]
    fn read_answer_inner(&mut self, rows: &mut Option<&mut TextRows>) -> Result<u64, DbError> {
        let mut count = 0;
        loop {
            let range = self.next_packet()?;
            let p = &self.link.rbuf[range.clone()];
            let status = match p.first() {
                Some(0x00) => {
                    let (affected, status) = wire::ok_packet(p)?;
                    count += affected;
                    status
                }
                Some(0xFF) => return Err(wire::server_error(p)),
                Some(0xFB) => {
                    // LOAD DATA LOCAL INFILE: refuse by sending no data.
                    self.send_auth_data(&[])?;
                    continue;
                }
                _ => {
                    let mut r = Payload(p);
                    let columns = r.lenenc()?.unwrap_or(0) as usize;
                    let metadata = !self.cache_metadata || r.0.first() != Some(&0);
                    if metadata {
                        for _ in 0..columns {
                            self.next_packet()?;
                        }
                    }
                    self.skip_eof_packet()?;
                    if let Some(out) = rows.as_deref_mut() {
                        out.clear();
                    }
                    loop {
                        let r = self.next_packet()?;
                        let p = &self.link.rbuf[r];
                        if wire::is_eof(p) {
                            break wire::eof_status(p);
                        }
                        if p.first() == Some(&0xFF) {
                            return Err(wire::server_error(p));
                        }
                        count += 1;
                        if let Some(out) = rows.as_deref_mut() {
                            out.push(wire::text_row(p, columns)?);
                        }
                    }
                }
            };
            if status & MORE_RESULTS == 0 {
                return Ok(count);
            }
        }
    }

    /// Reads the EOF packet after column definitions.
    fn skip_eof_packet(&mut self) -> Result<(), DbError> {
        let r = self.next_packet()?;
        if wire::is_eof(&self.link.rbuf[r]) {
            Ok(())
        } else {
            Err(protocol_error("expected EOF after column definitions"))
        }
    }

    fn send_query(&mut self, sql: &str) -> Result<(), DbError> {
        self.link.check_open()?;
        self.link.wbuf.clear();
        wire::put_command(&mut self.link.wbuf, COM_QUERY, sql.as_bytes());
        self.link.send()
    }
}

impl Conn for MyConn {
    fn dialect(&self) -> Dialect {
        Dialect::Mysql
    }

    fn prepare(&mut self, sql: &str) -> Result<StmtId, DbError> {
        self.link.check_open()?;
        self.link.wbuf.clear();
        wire::put_command(&mut self.link.wbuf, COM_STMT_PREPARE, sql.as_bytes());
        self.link.send()?;
        let range = self.next_packet()?;
        let p = &self.link.rbuf[range];
        if p.first() == Some(&0xFF) {
            return Err(wire::server_error(p));
        }
        let mut r = Payload(p);
        r.u8()?;
        let id = r.u32()?;
        let columns = r.u16()?;
        let params = r.u16()?;
        if params > 0 {
            self.skip_to_eof()?;
        }
        if columns > 0 {
            self.skip_to_eof()?;
        }
        self.stmts.push(Stmt {
            id,
            params: usize::from(params),
            types: Vec::with_capacity(usize::from(params)),
        });
        Ok(StmtId(self.stmts.len() as u32 - 1))
    }

    fn execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<u64, DbError> {
        self.put_stmt_execute(stmt, params)?;
        self.link.send()?;
        self.read_answer(None)
    }

    fn execute_text(&mut self, sql: &str) -> Result<u64, DbError> {
        self.send_query(sql)?;
        self.read_answer(None)
    }

    fn query_text(&mut self, sql: &str) -> Result<TextRows, DbError> {
        self.send_query(sql)?;
        let mut rows = Vec::new();
        self.read_answer(Some(&mut rows))?;
        Ok(rows)
    }
}

impl MyConn {
    /// Puts COM_STMT_EXECUTE of `stmt` with `params` into `wbuf`,
    /// checking the statement and its arity (types are sent only when
    /// they changed).
    #[inline]
    fn put_stmt_execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<(), DbError> {
        self.link.check_open()?;
        let Some(st) = self.stmts.get_mut(stmt.0 as usize) else {
            return Err(DbError::new(
                ErrorKind::Other,
                "",
                format!("statement {} was not prepared on this connection", stmt.0),
            ));
        };
        if st.params != params.len() {
            let msg = format!(
                "statement {} takes {} parameters, got {}",
                stmt.0,
                st.params,
                params.len()
            );
            return Err(DbError::new(ErrorKind::Other, "", msg));
        }
        let same = st.types.len() == params.len()
            && st
                .types
                .iter()
                .zip(params)
                .all(|(t, p)| *t == wire::param_type(p));
        if !same {
            st.types.clear();
            st.types.extend(params.iter().map(wire::param_type));
        }
        self.link.wbuf.clear();
        wire::put_execute(&mut self.link.wbuf, st.id, params, !same);
        Ok(())
    }
}

impl Drop for MyConn {
    /// Says goodbye with COM_QUIT, best-effort.
    fn drop(&mut self) {
        if !self.link.broken {
            self.link.wbuf.clear();
            wire::put_command(&mut self.link.wbuf, COM_QUIT, &[]);
            let _ = self.link.stream.write_all(&self.link.wbuf);
        }
    }
}

/// Opens [`MyConn`]s to one server: the [`Connector`] of MySQL targets.
#[derive(Clone, Debug)]
pub struct MyConnector(pub MyConnectOptions);

impl Connector for MyConnector {
    fn connect(&self) -> Result<Box<dyn Conn>, DbError> {
        Ok(Box::new(MyConn::connect(&self.0)?))
    }

    fn connect_mux(&self) -> Option<Result<Box<dyn crate::db::MuxConn>, DbError>> {
        Some(MyConn::connect(&self.0).map(|c| Box::new(c) as Box<dyn crate::db::MuxConn>))
    }

    fn multiplexes(&self) -> bool {
        true
    }
}
