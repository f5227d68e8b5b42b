//! The multiplexed path of [`PgConn`] ([`MuxConn`]): send Bind/Execute/Sync
//! of a prepared statement, then, each time an event loop sees the socket
//! readable, read once and consume the complete messages buffered so far
//! until ReadyForQuery. Same buffers as the blocking path, so nothing is
//! allocated per statement (only a server error builds its message).

use std::os::fd::RawFd;

use super::{MAX_MESSAGE, PgConn, wire};
use crate::db::{Conn, DbError, ErrorKind, MuxConn, Param, StmtId};

impl PgConn {
    /// The next complete buffered message, without reading; `None` when
    /// only part of one has arrived.
    #[inline]
    fn buffered_msg(&mut self) -> Result<Option<(u8, std::ops::Range<usize>)>, DbError> {
        let avail = self.link.rend - self.link.rpos;
        if avail < 5 {
            return Ok(None);
        }
        let p = self.link.rpos;
        let len = u32::from_be_bytes(self.link.rbuf[p + 1..p + 5].try_into().unwrap()) as usize;
        if !(4..=MAX_MESSAGE).contains(&len) {
            self.link.broken = true;
            return Err(wire::protocol_error("bad message length"));
        }
        if avail <= len {
            return Ok(None);
        }
        self.link.rpos = p + 1 + len;
        Ok(Some((self.link.rbuf[p], p + 5..p + 1 + len)))
    }
}

impl MuxConn for PgConn {
    fn raw_fd(&self) -> RawFd {
        self.link.stream.raw_fd()
    }

    fn send_execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<(), DbError> {
        self.put_execute(stmt, params)?;
        self.mux_rows = 0;
        self.mux_err = None;
        self.link.send()
    }

    fn on_readable(&mut self) -> Result<Option<u64>, DbError> {
        self.link.check_open()?;
        // A partial message larger than the buffer needs it grown.
        self.link.read_arrived(|l| l.rend + 5 > l.rbuf.len() / 2)?;
        while let Some((tag, range)) = self.buffered_msg()? {
            let body = &self.link.rbuf[range];
            match tag {
                b'C' => self.mux_rows = wire::tag_rows(body),
                b'E' => {
                    let (mut e, fatal) = wire::server_error(body);
                    if fatal || e.kind == ErrorKind::Connection {
                        e.kind = ErrorKind::Connection;
                        self.link.broken = true;
                        return Err(e);
                    }
                    self.mux_err.get_or_insert(e);
                }
                b'Z' => {
                    return match self.mux_err.take() {
                        Some(e) => Err(e),
                        None => Ok(Some(self.mux_rows)),
                    };
                }
                // BindComplete, DataRow, notices, ParameterStatus.
                _ => {}
            }
        }
        Ok(None)
    }

    fn as_conn(&mut self) -> &mut dyn Conn {
        self
    }
}
