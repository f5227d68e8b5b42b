//! The multiplexed path of [`MyConn`] ([`MuxConn`]): send COM_STMT_EXECUTE,
//! then, each time an event loop sees the socket readable, read once; when
//! the whole answer is buffered (its packets walked by their headers only)
//! the blocking reader decodes it without touching the socket. Same
//! buffers as the blocking path, so nothing is allocated per statement.

use std::os::fd::RawFd;

use super::MyConn;
use super::wire::{self, MORE_RESULTS, Payload};
use crate::db::{Conn, DbError, MuxConn, Param, StmtId};

/// The packet at `at` in a buffer.
enum Next<'a> {
    /// Not all of it has arrived.
    Incomplete,
    /// A payload split over continuation packets (never a point select's):
    /// the blocking reader joins it.
    Split,
    /// Its payload and where the next packet starts.
    Payload(&'a [u8], usize),
}

fn packet_at(buf: &[u8], at: usize) -> Next<'_> {
    if buf.len() < at + 4 {
        return Next::Incomplete;
    }
    let len = u32::from_le_bytes([buf[at], buf[at + 1], buf[at + 2], 0]) as usize;
    if len == wire::MAX_PAYLOAD {
        return Next::Split;
    }
    let end = at + 4 + len;
    if buf.len() < end {
        return Next::Incomplete;
    }
    Next::Payload(&buf[at + 4..end], end)
}

impl MyConn {
    /// Whether the whole answer to the command sent is buffered: an OK or
    /// error packet, or a result set through its closing EOF (and any
    /// further results announced). True too where the blocking reader must
    /// take over (a split payload, an odd packet): it then reads the rest.
    fn answer_buffered(&self) -> bool {
        let buf = &self.link.rbuf[self.link.rpos..self.link.rend];
        let mut at = 0;
        macro_rules! next {
            () => {
                match packet_at(buf, at) {
                    Next::Incomplete => return false,
                    Next::Split => return true,
                    Next::Payload(p, n) => {
                        at = n;
                        p
                    }
                }
            };
        }
        loop {
            let p = next!();
            let status = match p.first() {
                Some(0x00) => match wire::ok_packet(p) {
                    Ok((_, status)) => status,
                    Err(_) => return true,
                },
                Some(0xFF) | Some(0xFB) | None => return true,
                _ => {
                    let mut r = Payload(p);
                    let Ok(columns) = r.lenenc() else {
                        return true;
                    };
                    if !self.cache_metadata || r.0.first() != Some(&0) {
                        for _ in 0..columns.unwrap_or(0) {
                            next!();
                        }
                    }
                    next!(); // the EOF after the column definitions
                    loop {
                        let p = next!();
                        if wire::is_eof(p) {
                            break wire::eof_status(p);
                        }
                        if p.first() == Some(&0xFF) {
                            return true;
                        }
                    }
                }
            };
            if status & MORE_RESULTS == 0 {
                return true;
            }
        }
    }
}

impl MuxConn for MyConn {
    fn raw_fd(&self) -> RawFd {
        self.link.stream.raw_fd()
    }

    fn send_execute(&mut self, stmt: StmtId, params: &[Param<'_>]) -> Result<(), DbError> {
        self.put_stmt_execute(stmt, params)?;
        self.link.send()
    }

    fn on_readable(&mut self) -> Result<Option<u64>, DbError> {
        self.link.check_open()?;
        // Room for another 4 KiB at the end.
        self.link.read_arrived(|l| l.rbuf.len() - l.rend < 4096)?;
        if !self.answer_buffered() {
            return Ok(None);
        }
        self.read_answer(None).map(Some)
    }

    fn as_conn(&mut self) -> &mut dyn Conn {
        self
    }
}
