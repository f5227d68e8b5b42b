//! Encoding of frontend messages and decoding of backend messages of the
//! PostgreSQL protocol v3, as free functions over byte buffers so the
//! connection code stays short and these pieces can be tested without a server.

use crate::db::{DbError, ErrorKind, Param};

/// Type OIDs whose values we send in binary.
pub(super) const INT2_OID: u32 = 21;
pub(super) const INT4_OID: u32 = 23;
pub(super) const INT8_OID: u32 = 20;

/// Execute (unnamed portal, no row limit) followed by Sync.
pub(super) const EXECUTE_SYNC: &[u8] = b"E\0\0\0\x09\0\0\0\0\0S\0\0\0\x04";
/// Terminate.
pub(super) const TERMINATE: &[u8] = b"X\0\0\0\x04";

/// Starts a message with type byte `tag`; returns where its length goes.
#[inline]
pub(super) fn begin(buf: &mut Vec<u8>, tag: u8) -> usize {
    buf.push(tag);
    let at = buf.len();
    buf.extend_from_slice(&[0; 4]);
    at
}

/// Writes the length of the message whose length field is at `at`.
#[inline]
pub(super) fn finish(buf: &mut [u8], at: usize) {
    let len = (buf.len() - at) as u32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// Appends a NUL-terminated string.
#[inline]
pub(super) fn put_cstr(buf: &mut Vec<u8>, s: &[u8]) {
    buf.extend_from_slice(s);
    buf.push(0);
}

/// Appends the StartupMessage (protocol 3.0) with the given parameters.
pub(super) fn put_startup(buf: &mut Vec<u8>, params: &[(&str, &str)]) {
    let at = buf.len();
    buf.extend_from_slice(&[0; 4]);
    buf.extend_from_slice(&(3u32 << 16).to_be_bytes());
    for (k, v) in params {
        put_cstr(buf, k.as_bytes());
        put_cstr(buf, v.as_bytes());
    }
    buf.push(0);
    finish(buf, at);
}

/// Appends Parse (no parameter types), Describe statement and Sync.
pub(super) fn put_prepare(buf: &mut Vec<u8>, name: &str, sql: &str) {
    let at = begin(buf, b'P');
    put_cstr(buf, name.as_bytes());
    put_cstr(buf, sql.as_bytes());
    buf.extend_from_slice(&0u16.to_be_bytes());
    finish(buf, at);
    let at = begin(buf, b'D');
    buf.push(b'S');
    put_cstr(buf, name.as_bytes());
    finish(buf, at);
    buf.extend_from_slice(b"S\0\0\0\x04");
}

/// Appends a simple Query message.
pub(super) fn put_query(buf: &mut Vec<u8>, sql: &str) {
    let at = begin(buf, b'Q');
    put_cstr(buf, sql.as_bytes());
    finish(buf, at);
}

/// Appends Bind for the unnamed portal: integers go in binary when the
/// server typed the parameter as int2/int4/int8, everything else as text;
/// all result columns are requested as text.
pub(super) fn put_bind(
    buf: &mut Vec<u8>,
    stmt: &str,
    oids: &[u32],
    params: &[Param<'_>],
) -> Result<(), DbError> {
    let at = begin(buf, b'B');
    buf.push(0); // unnamed portal
    put_cstr(buf, stmt.as_bytes());
    let n = params.len() as u16;
    buf.extend_from_slice(&n.to_be_bytes());
    for (p, &oid) in params.iter().zip(oids) {
        let binary = matches!(p, Param::Int(_)) && matches!(oid, INT2_OID | INT4_OID | INT8_OID);
        buf.extend_from_slice(&[0, binary as u8]);
    }
    buf.extend_from_slice(&n.to_be_bytes());
    for (i, (p, &oid)) in params.iter().zip(oids).enumerate() {
        match *p {
            Param::Int(v) => match oid {
                INT8_OID => put_value(buf, &v.to_be_bytes()),
                INT4_OID => match i32::try_from(v) {
                    Ok(v) => put_value(buf, &v.to_be_bytes()),
                    Err(_) => return Err(out_of_range(i, v, "integer")),
                },
                INT2_OID => match i16::try_from(v) {
                    Ok(v) => put_value(buf, &v.to_be_bytes()),
                    Err(_) => return Err(out_of_range(i, v, "smallint")),
                },
                _ => put_value(buf, itoa(v, &mut [0; 20])),
            },
            Param::Text(s) => put_value(buf, s.as_bytes()),
        }
    }
    buf.extend_from_slice(&0u16.to_be_bytes()); // all results as text
    finish(buf, at);
    Ok(())
}

fn out_of_range(i: usize, v: i64, ty: &str) -> DbError {
    let n = i + 1;
    DbError::new(
        ErrorKind::Other,
        "22003",
        format!("parameter ${n} = {v} is out of range for type {ty}"),
    )
}

#[inline]
fn put_value(buf: &mut Vec<u8>, v: &[u8]) {
    buf.extend_from_slice(&(v.len() as u32).to_be_bytes());
    buf.extend_from_slice(v);
}

/// Formats `v` as decimal into `out` and returns the digits.
#[inline]
pub(super) fn itoa(v: i64, out: &mut [u8; 20]) -> &[u8] {
    let mut n = v.unsigned_abs();
    let mut i = out.len();
    loop {
        i -= 1;
        out[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        out[i] = b'-';
    }
    &out[i..]
}

/// Rows reported by a CommandComplete tag: its last word when that is a
/// number (`SELECT 5`, `UPDATE 3`, `INSERT 0 1`), otherwise 0 (`BEGIN`).
pub(super) fn tag_rows(body: &[u8]) -> u64 {
    let tag = body.strip_suffix(b"\0").unwrap_or(body);
    let last = match tag.iter().rposition(|&b| b == b' ') {
        Some(p) => &tag[p + 1..],
        None => return 0,
    };
    let mut n: u64 = 0;
    for &b in last {
        if !b.is_ascii_digit() {
            return 0;
        }
        n = n.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
    }
    n
}

/// How the runner should count an error with this SQLSTATE.
pub(super) fn classify(code: &str) -> ErrorKind {
    match code {
        "40001" | "40P01" | "55P03" | "23505" => ErrorKind::Retryable,
        "57P01" | "57P02" | "57P03" => ErrorKind::Connection,
        c if c.starts_with("08") => ErrorKind::Connection,
        _ => ErrorKind::Other,
    }
}

/// Decodes an ErrorResponse body; the flag is true for FATAL/PANIC (the
/// server closes the connection after sending it).
pub(super) fn server_error(body: &[u8]) -> (DbError, bool) {
    let (mut code, mut msg, mut detail, mut sev) = ("", "", "", "");
    let mut rest = body;
    while let [field, tail @ ..] = rest {
        if *field == 0 {
            break;
        }
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        let val = std::str::from_utf8(&tail[..end]).unwrap_or("");
        match field {
            b'C' => code = val,
            b'M' => msg = val,
            b'D' => detail = val,
            b'V' => sev = val,
            b'S' if sev.is_empty() => sev = val,
            _ => {}
        }
        rest = tail.get(end + 1..).unwrap_or(&[]);
    }
    let message = if detail.is_empty() {
        msg.to_string()
    } else {
        format!("{msg} — {detail}")
    };
    let fatal = matches!(sev, "FATAL" | "PANIC");
    (DbError::new(classify(code), code, message), fatal)
}

/// A protocol violation by the server; the connection cannot continue.
pub(super) fn protocol_error(what: &str) -> DbError {
    DbError::new(
        ErrorKind::Connection,
        "08P01",
        format!("protocol error: {what}"),
    )
}

/// Big-endian reader over a message body that reports truncation.
pub(super) struct Body<'a>(pub &'a [u8]);

impl<'a> Body<'a> {
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], DbError> {
        if self.0.len() < n {
            return Err(protocol_error("message shorter than its contents"));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    pub fn u16(&mut self) -> Result<u16, DbError> {
        Ok(u16::from_be_bytes(self.bytes(2)?.try_into().unwrap()))
    }
    pub fn i32(&mut self) -> Result<i32, DbError> {
        Ok(i32::from_be_bytes(self.bytes(4)?.try_into().unwrap()))
    }
    pub fn cstr(&mut self) -> Result<&'a str, DbError> {
        let end = self.0.iter().position(|&b| b == 0);
        let s = self.bytes(end.ok_or_else(|| protocol_error("unterminated string"))?)?;
        self.0 = &self.0[1..];
        std::str::from_utf8(s).map_err(|_| protocol_error("string is not UTF-8"))
    }
}

/// Decodes a DataRow into text values (NULL = `None`).
pub(super) fn text_row(body: &[u8]) -> Result<Vec<Option<String>>, DbError> {
    let mut b = Body(body);
    let n = b.u16()?;
    let mut row = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let len = b.i32()?;
        row.push(match usize::try_from(len) {
            Ok(len) => Some(String::from_utf8_lossy(b.bytes(len)?).into_owned()),
            Err(_) => None,
        });
    }
    Ok(row)
}

/// Decodes RowDescription into the result's column names.
pub(super) fn column_names(body: &[u8]) -> Result<Vec<String>, DbError> {
    let mut b = Body(body);
    let n = b.u16()?;
    let mut names = Vec::with_capacity(n as usize);
    for _ in 0..n {
        names.push(b.cstr()?.to_string());
        // table oid, column number, type oid, size, modifier, format
        b.bytes(18)?;
    }
    Ok(names)
}

/// Decodes ParameterDescription into parameter type OIDs.
pub(super) fn param_oids(body: &[u8]) -> Result<Vec<u32>, DbError> {
    let mut b = Body(body);
    let n = b.u16()?;
    (0..n).map(|_| b.i32().map(|v| v as u32)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(buf: &[u8]) -> Vec<(u8, &[u8])> {
        let mut out = Vec::new();
        let mut rest = buf;
        while !rest.is_empty() {
            let len = u32::from_be_bytes(rest[1..5].try_into().unwrap()) as usize;
            out.push((rest[0], &rest[5..1 + len]));
            rest = &rest[1 + len..];
        }
        out
    }

    #[test]
    fn itoa_formats_extremes() {
        for v in [0, 7, -7, 10, 99, 100, 123456789, i64::MAX, i64::MIN, -1] {
            assert_eq!(itoa(v, &mut [0; 20]), v.to_string().as_bytes());
        }
    }

    #[test]
    fn tags_give_row_counts() {
        assert_eq!(tag_rows(b"SELECT 5\0"), 5);
        assert_eq!(tag_rows(b"UPDATE 0\0"), 0);
        assert_eq!(tag_rows(b"DELETE 12\0"), 12);
        assert_eq!(tag_rows(b"INSERT 0 100\0"), 100);
        assert_eq!(tag_rows(b"BEGIN\0"), 0);
        assert_eq!(tag_rows(b"CREATE TABLE\0"), 0);
        assert_eq!(tag_rows(b"\0"), 0);
    }

    #[test]
    fn bind_encodes_ints_by_type() {
        let mut buf = Vec::new();
        let oids = [INT4_OID, INT8_OID, INT2_OID, 25, 1700];
        let params = [
            Param::Int(-2),
            Param::Int(1 << 40),
            Param::Int(3),
            Param::Text("x"),
            Param::Int(-45),
        ];
        put_bind(&mut buf, "s3", &oids, &params).unwrap();
        buf.extend_from_slice(EXECUTE_SYNC);
        let m = msgs(&buf);
        assert_eq!(m.iter().map(|x| x.0).collect::<Vec<_>>(), b"BES");
        let mut want = b"\0s3\0\0\x05\0\x01\0\x01\0\x01\0\0\0\0\0\x05".to_vec();
        want.extend_from_slice(b"\0\0\0\x04\xff\xff\xff\xfe");
        want.extend_from_slice(b"\0\0\0\x08\0\0\x01\0\0\0\0\0");
        want.extend_from_slice(b"\0\0\0\x02\0\x03");
        want.extend_from_slice(b"\0\0\0\x01x");
        want.extend_from_slice(b"\0\0\0\x03-45\0\0");
        assert_eq!(m[0].1, &want[..]);
        assert_eq!(m[1].1, b"\0\0\0\0\0");
        assert_eq!(m[2].1, b"");
    }

    #[test]
    fn bind_rejects_out_of_range() {
        let mut buf = Vec::new();
        let e = put_bind(&mut buf, "s0", &[INT4_OID], &[Param::Int(1 << 31)]).unwrap_err();
        assert_eq!((e.kind, e.code.as_str()), (ErrorKind::Other, "22003"));
        assert!(put_bind(&mut buf, "s0", &[INT2_OID], &[Param::Int(-32769)]).is_err());
        assert!(put_bind(&mut buf, "s0", &[INT2_OID], &[Param::Int(-32768)]).is_ok());
    }

    #[test]
    fn framing_of_prepare_query_startup() {
        let mut buf = Vec::new();
        put_prepare(&mut buf, "s1", "SELECT $1");
        put_query(&mut buf, "BEGIN");
        let m = msgs(&buf);
        assert_eq!(m[0], (b'P', &b"s1\0SELECT $1\0\0\0"[..]));
        assert_eq!(m[1], (b'D', &b"Ss1\0"[..]));
        assert_eq!(m[2], (b'S', &b""[..]));
        assert_eq!(m[3], (b'Q', &b"BEGIN\0"[..]));
        let mut buf = Vec::new();
        put_startup(&mut buf, &[("user", "u")]);
        assert_eq!(buf, b"\0\0\0\x10\0\x03\0\0user\0u\0\0");
    }

    #[test]
    fn errors_are_decoded_and_classified() {
        let body = b"SERROR\0VERROR\0C23505\0Mduplicate key\0DKey (id)=(1) exists.\0\0";
        let (e, fatal) = server_error(body);
        assert_eq!(
            (e.kind, e.code.as_str(), fatal),
            (ErrorKind::Retryable, "23505", false)
        );
        assert_eq!(e.message, "duplicate key — Key (id)=(1) exists.");
        let (e, fatal) = server_error(b"SFATAL\0C57P01\0Mterminating\0\0");
        assert_eq!(
            (e.kind, e.message.as_str(), fatal),
            (ErrorKind::Connection, "terminating", true)
        );
        assert_eq!(classify("42601"), ErrorKind::Other);
        assert_eq!(classify("08006"), ErrorKind::Connection);
        assert_eq!(classify("40P01"), ErrorKind::Retryable);
    }

    #[test]
    fn data_rows_and_truncation() {
        let row = text_row(b"\0\x02\0\0\0\x02ab\xff\xff\xff\xff").unwrap();
        assert_eq!(row, vec![Some("ab".to_string()), None]);
        assert!(text_row(b"\0\x02\0\0\0\x09ab").is_err());
        assert_eq!(
            param_oids(b"\0\x02\0\0\0\x17\0\0\0\x19").unwrap(),
            vec![23, 25]
        );
    }
}
