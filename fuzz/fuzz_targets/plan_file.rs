//! Plan files from anyone: parsed, merged into the defaults and validated
//! as `tidemark run --plan` does before any server starts.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = tidemark::plan::file::plan_from_text(text, std::path::Path::new("/nonexistent"));
});
