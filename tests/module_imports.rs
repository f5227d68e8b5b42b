//! The direction of the data flow, checked on the source (ARCHITECTURE.md
//! draws it): the stages run plan → server → workload → runner → metrics →
//! store → report → console, and no stage imports one upstream of it, with
//! the exceptions the design names — the report reads the store, the console
//! draws the report's model and stored runs. The shared vocabulary (`record`,
//! `stats`, `knobs`, `util`, `db`) imports only itself; `orchestrate` and
//! `cli` may import anything and nothing imports them (but `cli` →
//! `orchestrate`). A `crate::` path outside a comment counts as an import.
//! Run it alone with `cargo test --test module_imports`.

use std::fs;
use std::path::Path;

/// Every `crate::…` module path used in code (not comments) in `path` (a
/// file, or every `.rs` file under a folder), as (file, line number, module
/// name after `crate::`).
fn crate_paths(path: &Path) -> Vec<(String, usize, String)> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    if path.is_dir() {
        dirs.push(path.to_path_buf());
    } else {
        files.push(path.to_path_buf());
    }
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                files.push(p);
            }
        }
    }
    let mut out = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            for (i, _) in code.match_indices("crate::") {
                let rest = &code[i + "crate::".len()..];
                let module: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push((file.display().to_string(), n + 1, module));
            }
        }
    }
    out
}

/// The stages in the order data flows through them.
const STAGES: [&str; 8] = [
    "plan", "server", "workload", "runner", "metrics", "store", "report", "console",
];

/// Modules every stage may use: the records, statistics, knobs, helpers
/// and database clients. They use only each other.
const SHARED: [&str; 5] = ["record", "stats", "knobs", "util", "db"];

/// The hubs that carry out a plan and parse the command line.
const HUBS: [&str; 2] = ["orchestrate", "cli"];

/// Imports against the flow that the design names: (from, to).
const NAMED_EXCEPTIONS: [(&str, &str); 3] = [
    ("report", "store"),
    ("console", "report"),
    ("console", "store"),
];

/// Every (importing module, imported module, where) of the crate's
/// top-level modules.
fn module_imports() -> Vec<(String, String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    for entry in fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if name == "lib" || name == "main" {
            continue;
        }
        for (file, line, m) in crate_paths(&path) {
            if m != name {
                out.push((name.clone(), m, format!("{file}:{line}")));
            }
        }
    }
    out
}

fn allowed(from: &str, to: &str) -> bool {
    if HUBS.contains(&from) {
        return from != "orchestrate" || to != "cli";
    }
    if HUBS.contains(&to) {
        return false;
    }
    if SHARED.contains(&from) {
        return SHARED.contains(&to);
    }
    if SHARED.contains(&to) || NAMED_EXCEPTIONS.contains(&(from, to)) {
        return true;
    }
    let pos = |m: &str| STAGES.iter().position(|s| *s == m);
    match (pos(from), pos(to)) {
        (Some(a), Some(b)) => b > a,
        _ => false,
    }
}

#[test]
fn no_module_imports_against_the_flow() {
    let imports = module_imports();
    assert!(imports.len() > 50, "the scan found the imports");
    let wrong: Vec<String> = imports
        .iter()
        .filter(|(from, to, _)| !allowed(from, to))
        .map(|(from, to, at)| format!("{at}: {from} imports {to}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "imports against the flow:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_module_has_a_place_in_the_picture() {
    for (from, to, _) in module_imports() {
        for m in [from, to] {
            assert!(
                STAGES.contains(&m.as_str())
                    || SHARED.contains(&m.as_str())
                    || HUBS.contains(&m.as_str()),
                "module {m} is not in STAGES, SHARED or HUBS: add it there and to ARCHITECTURE.md"
            );
        }
    }
}

#[test]
fn the_rule_rejects_what_it_should() {
    assert!(
        !allowed("store", "runner"),
        "store must not read producer types"
    );
    assert!(!allowed("report", "runner"));
    assert!(!allowed("record", "store"), "record is a leaf");
    assert!(!allowed("orchestrate", "cli"));
    assert!(!allowed("runner", "orchestrate"));
    assert!(allowed("report", "store") && allowed("workload", "runner"));
    let probe = crate_paths(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store"));
    assert!(
        probe.iter().any(|(_, _, m)| m == "record"),
        "the scan sees store's imports"
    );
}
