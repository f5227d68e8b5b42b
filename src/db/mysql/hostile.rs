//! Every decoder the client applies to what a server sends, driven over
//! arbitrary bytes: the entry point of the fuzz target `mysql_packets`
//! (`fuzz/`). An external server is not trusted, so none of this may
//! panic, whatever the bytes.

use super::{auth, wire};

/// Splits `bytes` into packets (3-byte length, sequence id, payload); the
/// first is decoded as the server's handshake, the rest by their first
/// byte as the client would (OK, ERR, EOF, auth switch, caching_sha2's
/// RSA public key, result set header and text rows). Returns how many packets it
/// decoded. Never panics.
pub fn decode_server_packets(bytes: &[u8]) -> usize {
    let mut rest = bytes;
    let mut count = 0;
    let mut columns = 0usize;
    while rest.len() >= 4 {
        let len = usize::from(rest[0]) | usize::from(rest[1]) << 8 | usize::from(rest[2]) << 16;
        if rest.len() < 4 + len {
            break;
        }
        let p = &rest[4..4 + len];
        rest = &rest[4 + len..];
        count += 1;
        if count == 1 {
            if let Ok(hs) = auth::parse_handshake(p) {
                let _ = auth::scramble_for(&hs.plugin, b"password", &hs.scramble);
            }
            continue;
        }
        match p.first() {
            Some(0x00) => {
                let _ = wire::ok_packet(p);
            }
            Some(0xFF) => {
                let _ = wire::server_error(p);
            }
            Some(0xFE) if wire::is_eof(p) => {
                let _ = wire::eof_status(p);
            }
            Some(0xFE) => {
                let mut r = wire::Payload(&p[1..]);
                let plugin = String::from_utf8_lossy(r.cstr()).into_owned();
                let nonce = r.0.strip_suffix(&[0]).unwrap_or(r.0);
                let _ = auth::scramble_for(&plugin, b"password", nonce);
            }
            // caching_sha2_password's answer to a key request: the
            // server's RSA public key, which the password is sealed with.
            Some(0x01) if p[1..].starts_with(b"-----BEGIN") => {
                let _ = auth::rsa_password(b"password", b"abcdefghijklmnopqrst", &p[1..]);
            }
            _ if columns == 0 => {
                let mut r = wire::Payload(p);
                // A header: its column count shapes the rows after it.
                columns = r.lenenc().ok().flatten().unwrap_or(0).min(4096) as usize;
            }
            _ => {
                let _ = wire::text_row(p, columns);
            }
        }
    }
    count
}
