//! PostgreSQL backend messages from a hostile server: every decoder the
//! client uses, over arbitrary bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    tidemark::db::postgres::decode_backend_stream(data);
});
