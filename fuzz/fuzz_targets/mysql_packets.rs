//! MySQL/MariaDB server packets from a hostile server: the handshake and
//! every decoder the client uses after it, over arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tidemark::db::mysql::decode_server_packets(data);
});
