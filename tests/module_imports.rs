//! The direction of the data flow, checked on the source (ARCHITECTURE.md
//! draws it): the stages run plan → server → workload → runner → metrics →
//! store → report → console, and no stage imports one upstream of it, with
//! the exceptions the design names — the report reads the store, the console
//! draws the report's model and stored runs. The shared vocabulary (`record`,
//! `stats`, `knobs`, `util`, `db`) imports only itself; `orchestrate` and
//! `cli` may import anything and nothing imports them (but `cli` →
//! `orchestrate`). A `crate::` path outside a comment counts as an import.
//! Inside `report`, its files form no import circle (a renderer imports the
//! sections, a section the model, never back).
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

/// Each `.rs` file under `src/report` as (its module path, its code): the
/// path is `report::sections::summary` for `sections/summary.rs` and
/// `report::sections` for `sections/mod.rs`; the code is without comments,
/// string literals' contents and the trailing `#[cfg(test)]` module.
fn report_files() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut dirs = vec![src.join("report")];
    let mut out = Vec::new();
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if p.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = p.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().to_string())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            let text = fs::read_to_string(&p).unwrap();
            let text = text.split("#[cfg(test)]\nmod ").next().unwrap();
            let code: Vec<&str> = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect();
            out.push((module.join("::"), without_strings(&code.join("\n"))));
        }
    }
    out
}

/// `code` with each string literal's contents dropped.
fn without_strings(code: &str) -> String {
    let mut out = String::new();
    let (mut inside, mut escaped) = (false, false);
    for c in code.chars() {
        if inside {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => inside = false,
                _ => escaped = false,
            }
            if inside {
                continue;
            }
        } else if c == '"' {
            inside = true;
        }
        out.push(c);
    }
    out
}

/// The path starting at byte `i` of `code`, after `prefix`, pushed to
/// `out`; a `use` group (`super::{a, b::c}`) gives one path per member.
/// Returns where the path ends.
fn paths_at(code: &str, mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let b = code.as_bytes();
    let skip = |mut i: usize| {
        while i < b.len() && (b[i].is_ascii_whitespace() || b[i] == b',') {
            i += 1;
        }
        i
    };
    let mut segs = prefix.to_vec();
    loop {
        i = skip(i);
        if i < b.len() && b[i] == b'{' {
            i += 1;
            loop {
                i = skip(i);
                if i >= b.len() || b[i] == b'}' {
                    return i + 1;
                }
                i = paths_at(code, i, &segs, out);
            }
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'*') {
            i += 1;
        }
        segs.push(code[start..i].to_string());
        if !code[i..].starts_with("::") {
            out.push(segs);
            return i;
        }
        i += 2;
    }
}

/// The imports among report's files: module → the modules whose items it
/// names (`crate::report::…`, `super::…`, `self::…`, or a child module
/// in a `use`). An item named through a re-export counts as an import of
/// the module that re-exports it.
fn report_imports() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let files = report_files();
    let modules: std::collections::BTreeSet<&str> = files.iter().map(|(m, _)| m.as_str()).collect();
    let mut graph = std::collections::BTreeMap::new();
    for (module, code) in &files {
        let here: Vec<String> = module.split("::").map(String::from).collect();
        let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b':';
        let mut found = Vec::new();
        for key in ["crate::", "super::", "self::"] {
            for (i, _) in code.match_indices(key) {
                if i == 0 || !is_ident(code.as_bytes()[i - 1]) {
                    paths_at(code, i, &[], &mut found);
                }
            }
        }
        for (i, _) in code.match_indices("use ") {
            let child: String = code[i + 4..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if modules.contains(format!("{module}::{child}").as_str()) {
                paths_at(code, i + 4, &["self".to_string()], &mut found);
            }
        }
        for segs in found {
            let mut full = here.clone();
            let mut rest = segs.as_slice();
            if rest.first().is_some_and(|s| s == "crate") {
                full.clear();
                rest = &rest[1..];
            }
            while let Some(s) = rest.first().filter(|s| *s == "super" || *s == "self") {
                if s == "super" {
                    full.pop();
                }
                rest = &rest[1..];
            }
            full.extend(rest.iter().cloned());
            let target = (1..=full.len())
                .rev()
                .map(|n| full[..n].join("::"))
                .find(|m| modules.contains(m.as_str()));
            if let Some(t) = target.filter(|t| t != module) {
                graph
                    .entry(module.clone())
                    .or_insert_with(std::collections::BTreeSet::new)
                    .insert(t);
            }
        }
    }
    graph
}

/// No circle among the report's files: a section imports the model, a
/// renderer the sections, the model the parts it is built from, never the
/// other way round, so each can be read (and changed) from the bottom up.
/// An item is imported from the module that defines it, not through a
/// re-export above it (`basis::Column`, not `model::Column`).
#[test]
fn report_files_import_no_circle() {
    let graph = report_imports();
    let edges: usize = graph.values().map(|v| v.len()).sum();
    assert!(edges > 100, "the scan found report's imports: {edges}");
    assert!(graph["report::sections::summary"].contains("report::overview"));
    let reaches = |from: &str, to: &str| {
        let mut seen = std::collections::BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(m) = todo.pop() {
            if m == to {
                return true;
            }
            if seen.insert(m.clone()) {
                todo.extend(graph.get(&m).into_iter().flatten().cloned());
            }
        }
        false
    };
    let circles: Vec<String> = graph
        .iter()
        .flat_map(|(a, to)| to.iter().map(move |b| (a, b)))
        .filter(|(a, b)| reaches(b, a))
        .map(|(a, b)| format!("{a} imports {b}, which leads back to {a}"))
        .collect();
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}
