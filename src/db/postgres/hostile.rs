//! Every decoder the client applies to what a server sends, driven over
//! arbitrary bytes: the entry point of the fuzz target `pg_backend`
//! (`fuzz/`). An external server is not trusted, so none of this may
//! panic, whatever the bytes.

use postgres_protocol::authentication::sasl;

use super::wire;

/// Splits `bytes` into backend messages (tag, length, body) as the client
/// frames them and decodes each as the client would; returns how many
/// messages it decoded. Never panics.
pub fn decode_backend_stream(bytes: &[u8]) -> usize {
    let mut rest = bytes;
    let mut count = 0;
    let mut scram: Option<sasl::ScramSha256> = None;
    while rest.len() >= 5 {
        let len = u32::from_be_bytes(rest[1..5].try_into().expect("4 bytes")) as usize;
        if len < 4 || rest.len() < 1 + len {
            break;
        }
        let (tag, body) = (rest[0], &rest[5..1 + len]);
        rest = &rest[1 + len..];
        count += 1;
        match tag {
            b'R' => {
                let mut b = wire::Body(body);
                let Ok(code) = b.i32() else { continue };
                match code {
                    5 => {
                        let _ = b.bytes(4);
                    }
                    10 => {
                        scram = Some(sasl::ScramSha256::new(
                            b"password",
                            sasl::ChannelBinding::unsupported(),
                        ));
                    }
                    11 => {
                        if let Some(s) = scram.as_mut() {
                            let _ = s.update(b.0);
                        }
                    }
                    12 => {
                        if let Some(s) = scram.as_mut() {
                            let _ = s.finish(b.0);
                        }
                    }
                    _ => {}
                }
            }
            b'S' => {
                let mut b = wire::Body(body);
                let _ = b.cstr().and_then(|_| b.cstr());
            }
            b'K' => {
                let _ = wire::Body(body).i32();
            }
            b'E' | b'N' => {
                let _ = wire::server_error(body);
            }
            b'C' => {
                let _ = wire::tag_rows(body);
            }
            b'D' => {
                let _ = wire::text_row(body);
            }
            b't' => {
                let _ = wire::param_oids(body);
            }
            _ => {}
        }
    }
    count
}
