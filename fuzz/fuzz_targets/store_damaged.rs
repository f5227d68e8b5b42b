//! A damaged results.db: the bytes become the file, then everything the
//! reading verbs read (runs list, each run, JSON and CSV exports) is read.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("results.db"), data).expect("write results.db");
    let _ = tidemark::store::Store::read_everything(dir.path());
});
