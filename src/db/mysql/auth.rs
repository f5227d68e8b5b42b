//! The connection phase: the server's initial handshake, the client's
//! handshake response, and the password scrambles of the two common
//! authentication plugins (`mysql_native_password`, MariaDB's default, and
//! `caching_sha2_password`, MySQL 8's default), and the password that
//! plugin's full authentication sends over plain TCP, encrypted with the
//! server's RSA public key.

use sha1::Sha1;
use sha2::{Digest, Sha256};

use super::wire::{Payload, begin_packet, cap, finish_packet, protocol_error, put_lenenc};
use crate::db::DbError;

/// What the server's initial handshake (protocol 10) tells the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Handshake {
    /// As sent, minus MariaDB's `5.5.5-` replication prefix.
    pub server_version: String,
    pub connection_id: u32,
    pub capabilities: u32,
    /// MariaDB's extended capabilities (0 from MySQL, which sets
    /// `CLIENT_MYSQL`, bit 0, instead).
    pub mariadb_capabilities: u32,
    /// The 20-byte nonce the password is scrambled with.
    pub scramble: Vec<u8>,
    /// The plugin the server expects first.
    pub plugin: String,
}

/// Decodes the initial handshake packet.
pub(super) fn parse_handshake(p: &[u8]) -> Result<Handshake, DbError> {
    let mut r = Payload(p);
    let protocol = r.u8()?;
    if protocol != 10 {
        return Err(protocol_error(&format!(
            "server speaks handshake protocol {protocol}, this client speaks 10"
        )));
    }
    let version = String::from_utf8_lossy(r.cstr()).into_owned();
    let connection_id = r.u32()?;
    let mut scramble = r.bytes(8)?.to_vec();
    r.u8()?; // filler
    let mut capabilities = u32::from(r.u16()?);
    let mut plugin = String::from("mysql_native_password");
    let mut mariadb_capabilities = 0;
    if !r.0.is_empty() {
        r.u8()?; // default collation
        r.u16()?; // status
        capabilities |= u32::from(r.u16()?) << 16;
        let data_len = r.u8()?;
        let reserved = r.bytes(10)?;
        if capabilities & cap::LONG_PASSWORD == 0 {
            // MariaDB: the last four reserved bytes are its capabilities.
            mariadb_capabilities = u32::from_le_bytes(reserved[6..10].try_into().unwrap());
        }
        if capabilities & cap::SECURE_CONNECTION != 0 {
            let n = (usize::from(data_len).saturating_sub(8)).max(13);
            let part2 = r.bytes(n.min(r.0.len()))?;
            // The second part ends with a NUL that is not part of the nonce.
            let part2 = part2.strip_suffix(&[0]).unwrap_or(part2);
            scramble.extend_from_slice(part2);
        }
        if capabilities & cap::PLUGIN_AUTH != 0 {
            let name = r.cstr();
            if !name.is_empty() {
                plugin = String::from_utf8_lossy(name).into_owned();
            }
        }
    }
    let server_version = version
        .strip_prefix("5.5.5-")
        .unwrap_or(&version)
        .to_string();
    Ok(Handshake {
        server_version,
        connection_id,
        capabilities,
        mariadb_capabilities,
        scramble,
        plugin,
    })
}

/// The capabilities this client asks for (those the server has).
pub(super) fn client_capabilities(server: u32, with_db: bool) -> u32 {
    let mut want = cap::LONG_PASSWORD
        | cap::FOUND_ROWS
        | cap::LONG_FLAG
        | cap::PROTOCOL_41
        | cap::TRANSACTIONS
        | cap::SECURE_CONNECTION
        | cap::MULTI_RESULTS
        | cap::PS_MULTI_RESULTS
        | cap::PLUGIN_AUTH
        | cap::PLUGIN_AUTH_LENENC_DATA;
    if with_db {
        want |= cap::CONNECT_WITH_DB;
    }
    want & server
}

/// Parts of the handshake response.
pub(super) struct Response<'a> {
    pub capabilities: u32,
    /// MariaDB extended capabilities (sent only to MariaDB servers).
    pub mariadb_capabilities: u32,
    pub collation: u8,
    pub user: &'a str,
    pub auth: &'a [u8],
    pub database: &'a str,
    pub plugin: &'a str,
}

/// Appends the HandshakeResponse41 packet (sequence id 1).
pub(super) fn put_response(buf: &mut Vec<u8>, r: &Response<'_>) {
    let at = begin_packet(buf, 1);
    buf.extend_from_slice(&r.capabilities.to_le_bytes());
    buf.extend_from_slice(&(16u32 << 20).to_le_bytes()); // max packet: 16 MiB
    buf.push(r.collation);
    buf.extend_from_slice(&[0; 19]);
    buf.extend_from_slice(&r.mariadb_capabilities.to_le_bytes());
    buf.extend_from_slice(r.user.as_bytes());
    buf.push(0);
    if r.capabilities & cap::PLUGIN_AUTH_LENENC_DATA != 0 {
        put_lenenc(buf, r.auth.len() as u64);
    } else {
        buf.push(r.auth.len() as u8);
    }
    buf.extend_from_slice(r.auth);
    if r.capabilities & cap::CONNECT_WITH_DB != 0 {
        buf.extend_from_slice(r.database.as_bytes());
        buf.push(0);
    }
    if r.capabilities & cap::PLUGIN_AUTH != 0 {
        buf.extend_from_slice(r.plugin.as_bytes());
        buf.push(0);
    }
    finish_packet(buf, at);
}

/// The first answer of `plugin` to `scramble`, or `None` when this client
/// does not speak the plugin.
pub(super) fn scramble_for(plugin: &str, password: &[u8], scramble: &[u8]) -> Option<Vec<u8>> {
    match plugin {
        "mysql_native_password" => Some(native_password(password, scramble)),
        "caching_sha2_password" => Some(caching_sha2(password, scramble)),
        _ => None,
    }
}

/// `SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw)))`; empty for no password.
pub(super) fn native_password(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password);
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(&nonce[..nonce.len().min(20)]);
    h.update(stage2);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// `SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + nonce)`; empty for no password.
pub(super) fn caching_sha2(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha256::digest(password);
    let stage2 = Sha256::digest(stage1);
    let mut h = Sha256::new();
    h.update(stage2);
    h.update(&nonce[..nonce.len().min(20)]);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

/// What `caching_sha2_password`'s full authentication sends over an
/// unencrypted TCP connection: the password with its closing NUL, XORed
/// with the nonce (repeated), encrypted with the server's RSA public key
/// `pem` (a PEM `PUBLIC KEY`) by RSA-OAEP with SHA-1, as the server
/// decrypts it.
pub(super) fn rsa_password(password: &[u8], nonce: &[u8], pem: &[u8]) -> Result<Vec<u8>, DbError> {
    use rsa::pkcs8::DecodePublicKey;
    let pem = std::str::from_utf8(pem)
        .map_err(|_| protocol_error("the server's RSA public key is not PEM text"))?;
    let key = rsa::PublicKey::from_public_key_pem(pem.trim_end_matches('\0'))
        .map_err(|e| protocol_error(&format!("the server's RSA public key does not parse: {e}")))?;
    let nonce = &nonce[..nonce.len().min(20)];
    if nonce.is_empty() {
        return Err(protocol_error("the server sent an empty nonce"));
    }
    let mixed: Vec<u8> = password
        .iter()
        .chain(std::iter::once(&0))
        .zip(nonce.iter().cycle())
        .map(|(p, n)| p ^ n)
        .collect();
    key.oaep_encrypt::<Sha1>(&mixed)
        .map_err(|e| protocol_error(&format!("encrypting the password for the server: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn scrambles_match_independent_computations() {
        let nonce = b"abcdefghijklmnopqrst";
        // Expected values computed with Python's hashlib from the formulas.
        assert_eq!(
            hex(&native_password(b"secret", nonce)),
            "8817c50fa779daef010ee7577825b0847df9842e"
        );
        assert_eq!(
            hex(&caching_sha2(b"secret", nonce)),
            "c76e2898612a4cf042c77fa8c4702c4c64c0c2c557c53c4d75595aaa6abae809"
        );
        assert!(native_password(b"", nonce).is_empty());
        assert!(caching_sha2(b"", nonce).is_empty());
        assert!(scramble_for("client_ed25519", b"x", nonce).is_none());
    }

    #[test]
    fn the_rsa_password_decrypts_to_the_password_xor_the_nonce() {
        use rsa::pkcs8::{EncodePublicKey, LineEnding};
        // A small key keeps the debug build's key generation quick.
        let private = rsa::PrivateKey::new(&mut rand::rng(), 1024).unwrap();
        let pem = private
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        let nonce = b"abcdefghijklmnopqrst";
        let sent = rsa_password(b"pw", nonce, pem.as_bytes()).unwrap();
        assert_eq!(sent.len(), 128);
        let clear = private.oaep_decrypt::<Sha1>(&sent).unwrap();
        assert_eq!(clear, [b'p' ^ b'a', b'w' ^ b'b', b'c']);
        assert!(rsa_password(b"pw", nonce, b"-----BEGIN PUBLIC KEY-----\nxx").is_err());
    }

    #[test]
    fn handshake_of_mariadb_is_decoded() {
        let mut p = vec![10];
        p.extend_from_slice(b"5.5.5-10.11.19-MariaDB\0");
        p.extend_from_slice(&42u32.to_le_bytes());
        p.extend_from_slice(b"12345678\0");
        let caps: u32 = 0x81FF_F7FE;
        p.extend_from_slice(&(caps as u16).to_le_bytes());
        p.push(8);
        p.extend_from_slice(&2u16.to_le_bytes());
        p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
        p.push(21);
        p.extend_from_slice(&[0; 6]);
        p.extend_from_slice(&0x1Du32.to_le_bytes());
        p.extend_from_slice(b"abcdefghijkl\0");
        p.extend_from_slice(b"mysql_native_password\0");
        let h = parse_handshake(&p).unwrap();
        assert_eq!(h.server_version, "10.11.19-MariaDB");
        assert_eq!(h.connection_id, 42);
        assert_eq!(h.scramble, b"12345678abcdefghijkl");
        assert_eq!(h.plugin, "mysql_native_password");
        assert_eq!(h.capabilities, caps);
        assert_eq!(h.mariadb_capabilities, 0x1D);
        assert!(parse_handshake(&[9, 0]).is_err());
    }

    #[test]
    fn response_layout() {
        let caps = client_capabilities(u32::MAX, true);
        let mut buf = Vec::new();
        put_response(
            &mut buf,
            &Response {
                capabilities: caps,
                mariadb_capabilities: 0,
                collation: 8,
                user: "u",
                auth: &[1, 2],
                database: "db",
                plugin: "mysql_native_password",
            },
        );
        assert_eq!(buf[3], 1, "sequence id 1");
        let body = &buf[4..];
        assert_eq!(&body[..4], &caps.to_le_bytes());
        assert_eq!(body[8], 8);
        assert_eq!(&body[32..], b"u\0\x02\x01\x02db\0mysql_native_password\0");
        assert_eq!(client_capabilities(0, true), 0);
    }
}
