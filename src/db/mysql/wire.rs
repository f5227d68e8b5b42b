//! Encoding of client packets and decoding of server packets of the
//! MySQL/MariaDB client/server protocol (4.1+), as free functions over byte
//! buffers so the connection code stays short and these pieces can be
//! tested without a server.

use crate::db::{DbError, ErrorKind, Param};

/// Largest payload of one packet; longer payloads continue in the next one.
pub(super) const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// Command bytes.
pub(super) const COM_QUIT: u8 = 0x01;
pub(super) const COM_QUERY: u8 = 0x03;
pub(super) const COM_STMT_PREPARE: u8 = 0x16;
pub(super) const COM_STMT_EXECUTE: u8 = 0x17;

/// Capability flags this client uses.
pub(super) mod cap {
    pub const LONG_PASSWORD: u32 = 0x1;
    /// UPDATE reports matched rows, not changed rows, as PostgreSQL does.
    pub const FOUND_ROWS: u32 = 0x2;
    pub const LONG_FLAG: u32 = 0x4;
    pub const CONNECT_WITH_DB: u32 = 0x8;
    pub const PROTOCOL_41: u32 = 0x200;
    pub const TRANSACTIONS: u32 = 0x2000;
    pub const SECURE_CONNECTION: u32 = 0x8000;
    pub const MULTI_RESULTS: u32 = 0x2_0000;
    pub const PS_MULTI_RESULTS: u32 = 0x4_0000;
    pub const PLUGIN_AUTH: u32 = 0x8_0000;
    pub const PLUGIN_AUTH_LENENC_DATA: u32 = 0x20_0000;
}

/// MariaDB extended capability (bit 36 overall): the server sends a prepared
/// statement's result metadata only when it changed, and says so in a byte
/// after the column count.
pub(super) const MARIADB_CACHE_METADATA: u32 = 1 << 4;

/// `SERVER_MORE_RESULTS_EXISTS` in the status flags of OK and EOF packets.
pub(super) const MORE_RESULTS: u16 = 0x0008;

/// Column types of bound parameters.
const TYPE_LONG: u8 = 0x03;
const TYPE_LONGLONG: u8 = 0x08;
const TYPE_STRING: u8 = 0xFE;

/// Starts a packet (sequence id `seq`) at the end of `buf`; returns where
/// its header is, for [`finish_packet`].
#[inline]
pub(super) fn begin_packet(buf: &mut Vec<u8>, seq: u8) -> usize {
    let at = buf.len();
    buf.extend_from_slice(&[0, 0, 0, seq]);
    at
}

/// Writes the payload length into the header at `at`. Payloads of 16 MiB or
/// more are split into continuation packets (this moves bytes; it happens
/// only for huge statements, never on the benchmark path).
pub(super) fn finish_packet(buf: &mut Vec<u8>, at: usize) {
    let len = buf.len() - at - 4;
    if len < MAX_PAYLOAD {
        buf[at..at + 3].copy_from_slice(&(len as u32).to_le_bytes()[..3]);
        return;
    }
    let payload = buf.split_off(at + 4);
    let mut seq = buf[at + 3];
    buf.truncate(at);
    let mut chunks = payload.chunks(MAX_PAYLOAD).peekable();
    loop {
        let chunk = chunks.next().unwrap_or(&[]);
        buf.extend_from_slice(&(chunk.len() as u32).to_le_bytes()[..3]);
        buf.push(seq);
        buf.extend_from_slice(chunk);
        seq = seq.wrapping_add(1);
        // A payload that is an exact multiple of the maximum ends with an
        // empty packet.
        if chunks.peek().is_none() && chunk.len() < MAX_PAYLOAD {
            break;
        }
    }
}

/// Appends a command packet: the command byte and `body`.
pub(super) fn put_command(buf: &mut Vec<u8>, command: u8, body: &[u8]) {
    let at = begin_packet(buf, 0);
    buf.push(command);
    buf.extend_from_slice(body);
    finish_packet(buf, at);
}

/// Appends a length-encoded integer.
#[inline]
pub(super) fn put_lenenc(buf: &mut Vec<u8>, v: u64) {
    if v < 251 {
        buf.push(v as u8);
    } else if v < 1 << 16 {
        buf.push(0xFC);
        buf.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v < 1 << 24 {
        buf.push(0xFD);
        buf.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        buf.push(0xFE);
        buf.extend_from_slice(&v.to_le_bytes());
    }
}

/// The column type a parameter is bound as: integers as LONG (LONGLONG when
/// they do not fit 32 bits), text as STRING.
#[inline]
pub(super) fn param_type(p: &Param<'_>) -> u8 {
    match *p {
        Param::Int(v) if i32::try_from(v).is_ok() => TYPE_LONG,
        Param::Int(_) => TYPE_LONGLONG,
        Param::Text(_) => TYPE_STRING,
    }
}

/// Appends COM_STMT_EXECUTE of statement `id` with `params` bound (see
/// [`param_type`]), no cursor. The types travel only when `send_types` (the
/// first execution, or when they changed); otherwise the server keeps the
/// ones it has, as C clients do.
#[inline]
pub(super) fn put_execute(buf: &mut Vec<u8>, id: u32, params: &[Param<'_>], send_types: bool) {
    let at = begin_packet(buf, 0);
    buf.push(COM_STMT_EXECUTE);
    buf.extend_from_slice(&id.to_le_bytes());
    buf.push(0); // CURSOR_TYPE_NO_CURSOR
    buf.extend_from_slice(&1u32.to_le_bytes()); // iteration count
    if !params.is_empty() {
        let bitmap = params.len().div_ceil(8);
        buf.resize(buf.len() + bitmap, 0); // no NULLs
        buf.push(u8::from(send_types)); // new params bound: types follow
        if send_types {
            for p in params {
                buf.extend_from_slice(&[param_type(p), 0]);
            }
        }
        for p in params {
            match *p {
                Param::Int(v) => match i32::try_from(v) {
                    Ok(v) => buf.extend_from_slice(&v.to_le_bytes()),
                    Err(_) => buf.extend_from_slice(&v.to_le_bytes()),
                },
                Param::Text(s) => {
                    put_lenenc(buf, s.len() as u64);
                    buf.extend_from_slice(s.as_bytes());
                }
            }
        }
    }
    finish_packet(buf, at);
}

/// Little-endian reader over a packet payload that reports truncation.
pub(super) struct Payload<'a>(pub &'a [u8]);

impl<'a> Payload<'a> {
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DbError> {
        if self.0.len() < n {
            return Err(protocol_error("packet shorter than its contents"));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    pub fn u8(&mut self) -> Result<u8, DbError> {
        Ok(self.bytes(1)?[0])
    }
    pub fn u16(&mut self) -> Result<u16, DbError> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().unwrap()))
    }
    pub fn u32(&mut self) -> Result<u32, DbError> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().unwrap()))
    }
    /// A NUL-terminated string (or the rest, when the NUL is missing).
    pub fn cstr(&mut self) -> &'a [u8] {
        let end = self.0.iter().position(|&b| b == 0);
        let s = &self.0[..end.unwrap_or(self.0.len())];
        self.0 = &self.0[end.map_or(self.0.len(), |e| e + 1)..];
        s
    }
    /// A length-encoded integer; `None` for the NULL marker 0xFB.
    pub fn lenenc(&mut self) -> Result<Option<u64>, DbError> {
        Ok(Some(match self.u8()? {
            0xFB => return Ok(None),
            0xFC => u64::from(self.u16()?),
            0xFD => {
                let b = self.bytes(3)?;
                u64::from(b[0]) | u64::from(b[1]) << 8 | u64::from(b[2]) << 16
            }
            0xFE => u64::from_le_bytes(self.bytes(8)?.try_into().unwrap()),
            0xFF => return Err(protocol_error("bad length-encoded integer")),
            v => u64::from(v),
        }))
    }
    /// A length-encoded string; `None` for NULL.
    pub fn lenenc_bytes(&mut self) -> Result<Option<&'a [u8]>, DbError> {
        match self.lenenc()? {
            Some(n) => Ok(Some(self.bytes(n as usize)?)),
            None => Ok(None),
        }
    }
}

/// Whether a packet is the EOF marker that ends column definitions or rows
/// (0xFE with a short payload; a row starting with 0xFE is at least 9 bytes).
#[inline]
pub(super) fn is_eof(p: &[u8]) -> bool {
    p.first() == Some(&0xFE) && p.len() < 9
}

/// Status flags of an EOF packet.
pub(super) fn eof_status(p: &[u8]) -> u16 {
    match p {
        [0xFE, _, _, a, b, ..] => u16::from_le_bytes([*a, *b]),
        _ => 0,
    }
}

/// What an OK packet says: affected rows and status flags.
pub(super) fn ok_packet(p: &[u8]) -> Result<(u64, u16), DbError> {
    let mut r = Payload(p);
    r.u8()?; // 0x00
    let rows = r.lenenc()?.unwrap_or(0);
    r.lenenc()?; // last insert id
    let status = r.u16().unwrap_or(0);
    Ok((rows, status))
}

/// How the runner should count a server error with this number.
pub(super) fn classify(code: u16) -> ErrorKind {
    match code {
        // deadlock, lock wait timeout, duplicate key from a concurrent insert
        1213 | 1205 | 1062 => ErrorKind::Retryable,
        // server shutdown, connection killed, server gone / connection lost
        1053 | 1927 | 2006 | 2013 => ErrorKind::Connection,
        _ => ErrorKind::Other,
    }
}

/// Decodes an ERR packet (0xFF, code, `#` + SQLSTATE, message).
pub(super) fn server_error(p: &[u8]) -> DbError {
    let mut r = Payload(p);
    let parsed = (|| -> Result<(u16, String), DbError> {
        r.u8()?;
        let code = r.u16()?;
        if r.0.first() == Some(&b'#') {
            r.bytes(6)?;
        }
        Ok((code, String::from_utf8_lossy(r.0).into_owned()))
    })();
    match parsed {
        Ok((code, msg)) => DbError::new(classify(code), code.to_string(), msg),
        Err(e) => e,
    }
}

/// A protocol violation by the server; the connection cannot continue.
pub(super) fn protocol_error(what: &str) -> DbError {
    DbError::new(
        ErrorKind::Connection,
        "2027",
        format!("protocol error: {what}"),
    )
}

/// Decodes a text-protocol row of `columns` values (NULL = `None`).
pub(super) fn text_row(p: &[u8], columns: usize) -> Result<Vec<Option<String>>, DbError> {
    let mut r = Payload(p);
    (0..columns)
        .map(|_| {
            Ok(r.lenenc_bytes()?
                .map(|b| String::from_utf8_lossy(b).into_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Splits a buffer of packets into (sequence id, payload).
    fn packets(buf: &[u8]) -> Vec<(u8, &[u8])> {
        let mut out = Vec::new();
        let mut rest = buf;
        while !rest.is_empty() {
            let len = u32::from_le_bytes([rest[0], rest[1], rest[2], 0]) as usize;
            out.push((rest[3], &rest[4..4 + len]));
            rest = &rest[4 + len..];
        }
        out
    }

    #[test]
    fn lenenc_round_trips_at_every_width() {
        for v in [0, 250, 251, 65535, 65536, (1 << 24) - 1, 1 << 24, u64::MAX] {
            let mut buf = Vec::new();
            put_lenenc(&mut buf, v);
            let mut r = Payload(&buf);
            assert_eq!(r.lenenc().unwrap(), Some(v));
            assert!(r.0.is_empty());
        }
        assert_eq!(Payload(&[0xFB]).lenenc().unwrap(), None);
        assert!(Payload(&[0xFC, 1]).lenenc().is_err());
    }

    #[test]
    fn execute_binds_ints_by_width_and_text_as_string() {
        let mut buf = Vec::new();
        put_execute(
            &mut buf,
            7,
            &[Param::Int(-2), Param::Int(1 << 40), Param::Text("ab")],
            true,
        );
        let p = packets(&buf);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].0, 0);
        let mut want = vec![COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0];
        want.extend_from_slice(&[0, 1]); // null bitmap, new params bound
        want.extend_from_slice(&[TYPE_LONG, 0, TYPE_LONGLONG, 0, TYPE_STRING, 0]);
        want.extend_from_slice(&(-2i32).to_le_bytes());
        want.extend_from_slice(&(1i64 << 40).to_le_bytes());
        want.extend_from_slice(&[2, b'a', b'b']);
        assert_eq!(p[0].1, &want[..]);
        let mut buf = Vec::new();
        put_execute(&mut buf, 1, &[], true);
        assert_eq!(
            packets(&buf)[0].1,
            &[COM_STMT_EXECUTE, 1, 0, 0, 0, 0, 1, 0, 0, 0]
        );
        let mut buf = Vec::new();
        put_execute(&mut buf, 2, &[Param::Int(5)], false);
        let want = [
            COM_STMT_EXECUTE,
            2,
            0,
            0,
            0,
            0,
            1,
            0,
            0,
            0,
            0,
            0,
            5,
            0,
            0,
            0,
        ];
        assert_eq!(packets(&buf)[0].1, &want, "no types: flag 0, value only");
    }

    #[test]
    fn huge_payloads_are_split() {
        let body = vec![b'x'; MAX_PAYLOAD + 10];
        let mut buf = Vec::new();
        put_command(&mut buf, COM_QUERY, &body);
        let p = packets(&buf);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].0, p[0].1.len()), (0, MAX_PAYLOAD));
        assert_eq!((p[1].0, p[1].1.len()), (1, 11));
        let mut buf = Vec::new();
        put_command(&mut buf, COM_QUERY, &body[..MAX_PAYLOAD - 1]);
        let p = packets(&buf);
        assert_eq!(p.len(), 2, "exactly the maximum ends with an empty packet");
        assert_eq!(p[1].1.len(), 0);
    }

    #[test]
    fn eof_ok_and_error_packets() {
        assert!(is_eof(&[0xFE, 0, 0, 2, 0]));
        assert!(!is_eof(&[0xFE, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
        assert!(!is_eof(&[0x00]));
        assert_eq!(eof_status(&[0xFE, 0, 0, 0x0A, 0]), 0x0A);
        assert_eq!(ok_packet(&[0, 3, 0, 2, 0, 0, 0]).unwrap(), (3, 2));
        let e = server_error(b"\xff\xbd\x04#40001Deadlock found");
        assert_eq!(
            (e.kind, e.code.as_str(), e.message.as_str()),
            (ErrorKind::Retryable, "1213", "Deadlock found")
        );
        let e = server_error(b"\xff\x15\x04#28000Access denied");
        assert_eq!((e.kind, e.code.as_str()), (ErrorKind::Other, "1045"));
        assert_eq!(classify(1062), ErrorKind::Retryable);
        assert_eq!(classify(1205), ErrorKind::Retryable);
        assert_eq!(classify(2013), ErrorKind::Connection);
    }

    #[test]
    fn text_rows_decode_nulls() {
        let row = text_row(&[2, b'a', b'b', 0xFB, 0], 3).unwrap();
        assert_eq!(row, vec![Some("ab".into()), None, Some(String::new())]);
        assert!(text_row(&[5, b'a'], 1).is_err());
    }
}
