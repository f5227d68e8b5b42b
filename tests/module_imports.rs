//! The direction of the data flow, checked on the source: `record` is a
//! leaf, the store reads and writes only record types, the report reads
//! only the store and the record, and the metrics do not reach into the
//! runner. A `crate::` path outside a comment counts as an import.

use std::fs;
use std::path::Path;

/// Every `crate::…` module path used in code (not comments) under `dir`,
/// as (file, line number, module name after `crate::`).
fn crate_paths(dir: &Path) -> Vec<(String, usize, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for (i, _) in code.match_indices("crate::") {
                    let rest = &code[i + "crate::".len()..];
                    let module: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    out.push((path.display().to_string(), n + 1, module));
                }
            }
        }
    }
    out
}

fn only(dir: &str, allowed: &[&str], except_files: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(dir);
    let wrong: Vec<String> = crate_paths(&root)
        .into_iter()
        .filter(|(file, _, m)| {
            !allowed.contains(&m.as_str()) && !except_files.iter().any(|e| file.ends_with(e))
        })
        .map(|(file, line, m)| format!("{file}:{line}: crate::{m}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "src/{dir} may use only {allowed:?}:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn record_is_a_leaf() {
    only("record", &["record"], &[]);
}

#[test]
fn the_store_uses_only_the_record_and_util() {
    only("store", &["record", "store", "util"], &[]);
}

#[test]
fn the_report_uses_only_the_store_the_record_and_util() {
    // The live progress line reads the runner's progress; it is not a
    // report of stored results.
    only(
        "report",
        &["record", "stats", "knobs", "store", "util", "report"],
        &["report/progress.rs"],
    );
}

#[test]
fn the_metrics_do_not_use_the_runner() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/metrics");
    let wrong: Vec<_> = crate_paths(&root)
        .into_iter()
        .filter(|(_, _, m)| m == "runner")
        .collect();
    assert!(wrong.is_empty(), "{wrong:?}");
}
