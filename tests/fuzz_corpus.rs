//! The fuzz targets' committed corpus (`fuzz/corpus/TARGET/`), run through
//! the same entry points on stable: every input the fuzzers keep, including
//! each one that once crashed, is checked by the ordinary test suite, so a
//! fixed bug stays fixed without the nightly toolchain.

use std::path::{Path, PathBuf};

use tidemark::util::redact::redact_url_passwords;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "{} is empty", dir.display());
    out
}

#[test]
fn server_messages_decode_without_panicking() {
    for (path, bytes) in corpus("pg_backend") {
        let n = tidemark::db::postgres::decode_backend_stream(&bytes);
        assert!(n > 0, "{}: no message framed", path.display());
    }
    for (path, bytes) in corpus("mysql_packets") {
        let n = tidemark::db::mysql::decode_server_packets(&bytes);
        assert!(n > 0, "{}: no packet framed", path.display());
    }
}

#[test]
fn target_specs_parse_or_fail_cleanly() {
    for (_, bytes) in corpus("target_spec") {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let _ = tidemark::plan::target::TargetSpec::parse(text);
        let _ = tidemark::db::postgres::PgConnectOptions::from_url(text);
        let _ = tidemark::db::mysql::MyConnectOptions::from_url(text);
        let once = redact_url_passwords(text);
        assert_eq!(redact_url_passwords(&once), once);
    }
}

#[test]
fn plan_files_load_or_fail_in_one_line() {
    for (path, bytes) in corpus("plan_file") {
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        if let Err(e) = tidemark::plan::file::plan_from_text(text, Path::new("/nonexistent")) {
            assert!(!e.contains('\n'), "{}: {e}", path.display());
        }
    }
}

#[test]
fn a_damaged_store_is_an_error_not_a_panic() {
    for (path, bytes) in corpus("store_damaged") {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("results.db"), &bytes).unwrap();
        let _ = tidemark::store::Store::read_everything(dir.path());
        // The same file cut short, and with a page overwritten.
        let cut = &bytes[..bytes.len() / 2];
        std::fs::write(dir.path().join("results.db"), cut).unwrap();
        assert!(
            tidemark::store::Store::read_everything(dir.path()).is_err() || cut.len() < 4096,
            "{}: half a database reads whole",
            path.display()
        );
        let mut scribbled = bytes.clone();
        let at = scribbled.len() / 3;
        for b in &mut scribbled[at..(at + 4096).min(bytes.len())] {
            *b = 0x5A;
        }
        std::fs::write(dir.path().join("results.db"), &scribbled).unwrap();
        let _ = tidemark::store::Store::read_everything(dir.path());
    }
}
