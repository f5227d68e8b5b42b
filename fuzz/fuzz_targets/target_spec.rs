//! Target specs as a user (or a plan file) writes them: the spec grammar,
//! per-target settings, both URL parsers, and the password redaction (which
//! must leave no password behind and be idempotent).
#![no_main]
use libfuzzer_sys::fuzz_target;
use tidemark::util::redact::redact_url_passwords;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok((spec, _settings)) = tidemark::plan::target::split_target_settings(text) {
        let _ = tidemark::plan::target::TargetSpec::parse(&spec);
    }
    let _ = tidemark::plan::target::TargetSpec::parse(text);
    let _ = tidemark::db::postgres::PgConnectOptions::from_url(text);
    let _ = tidemark::db::mysql::MyConnectOptions::from_url(text);
    let once = redact_url_passwords(text);
    assert_eq!(redact_url_passwords(&once), once, "redaction is idempotent");
});
