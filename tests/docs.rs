//! The docs cannot drift from the code: README's quick start is the two
//! commands a new user runs (checked word for word) and their cheap parts
//! run here; every page in docs/ opens with an example marked
//! `<!-- docs-example -->`, and each runs here with bash, in one working
//! directory, in the order below (later pages read the runs earlier ones
//! stored), with the tidemark under test first on the PATH.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::pg_source::CACHE;
use common::*;
use tidemark::db::Connector;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// README's two commands, exactly as a new user copies them.
const FIRST: &str = "$(command -v sudo) apt-get update && $(command -v sudo) apt-get install -y postgresql && cargo run --release -- run";
const SECOND: &str = "bash .ci/setup && cargo test";

/// The pages in the order their examples run; development.md has no
/// example to run (its commands are .ci/run's own checks).
const PAGES: [&str; 11] = [
    "runs.md",
    "targets.md",
    "configs.md",
    "suites.md",
    "instructions.md",
    "store.md",
    "export.md",
    "verdicts.md",
    "reports.md",
    "ci.md",
    "shards.md",
];
const WITHOUT_EXAMPLE: [&str; 1] = ["development.md"];

/// The first fenced `sh` block after `marker` in `text`, if any.
fn block_after(text: &str, marker: &str) -> Option<String> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let body = rest.trim_start().strip_prefix("```sh\n")?;
    Some(body[..body.find("```")?].to_string())
}

/// Runs `script` with bash in `dir` as a user would, tidemark on the PATH
/// and `env` set.
fn sh_with(dir: &Path, script: &str, env: &[(&str, &str)]) -> Output {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_tidemark"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .env("TIDEMARK_CACHE", CACHE)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn sh(dir: &Path, script: &str) -> Output {
    sh_with(dir, script, &[])
}

fn assert_ran(what: &str, o: &Output) {
    assert!(
        o.status.success(),
        "{what} failed ({:?}):\n{}\n{}",
        o.status.code(),
        stdout(o),
        stderr(o)
    );
}

#[test]
fn readme_commands_and_each_pages_first_example_run() {
    let _serial = serial();
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let quick = block_after(&readme, "## Quick start (fresh Debian machine)")
        .expect("README's quick start block");
    let commands: Vec<&str> = quick
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(commands, [FIRST, SECOND], "README's two commands changed");
    let head: String = readme.lines().take(25).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains(FIRST) && head.contains(SECOND),
        "near the top"
    );

    let dir = server_tempdir();
    let work = dir.path();
    // The first command's cheap parts: `$(command -v sudo)` is sudo for a
    // user and nothing for root, and apt resolves the package (simulated:
    // no download, no lock); its `run` is this binary's `run` on the quick
    // profile cut to one short test (runs.md's example runs it).
    let apt = FIRST
        .split(" && ")
        .nth(1)
        .unwrap()
        .replace("install -y", "install --simulate -y");
    assert_ran("README's apt-get (simulated)", &sh(work, &apt));
    // The second command's first part: everything the tests need is there
    // (here it only checks; a fresh machine installs).
    assert_ran(
        "bash .ci/setup",
        &sh(Path::new(ROOT), SECOND.split(" && ").next().unwrap()),
    );

    let docs = Path::new(ROOT).join("docs");
    let mut on_disk: Vec<String> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = PAGES
        .iter()
        .chain(&WITHOUT_EXAMPLE)
        .map(|s| s.to_string())
        .collect();
    listed.sort();
    assert_eq!(on_disk, listed, "a page in docs/ this test does not run");
    for page in WITHOUT_EXAMPLE {
        let text = std::fs::read_to_string(docs.join(page)).unwrap();
        assert!(!text.contains("<!-- docs-example -->"), "{page}");
    }
    // shards.md's example needs a server and a shared store: a managed
    // PostgreSQL this test starts, its database `tidemark` the benchmark's
    // and `shard_store` the store.
    let pg_dir = server_tempdir();
    let pg = start_pg(pg_dir.path(), &[]);
    let opts = pg.connect_options();
    let mut admin = PgConnector(opts.clone()).connect().unwrap();
    admin.execute_text("CREATE DATABASE shard_store").unwrap();
    let bench_url = pg_url(&opts);
    let mut store_opts = opts;
    store_opts.dbname = "shard_store".into();
    let store_url = pg_url(&store_opts);
    for page in PAGES {
        let env: &[(&str, &str)] = if page == "shards.md" {
            &[("BENCH_URL", &bench_url), ("TIDEMARK_STORE", &store_url)]
        } else {
            &[]
        };
        let text = std::fs::read_to_string(docs.join(page)).unwrap();
        assert!(
            readme.contains(&format!("(docs/{page})")),
            "README links {page}"
        );
        let example = block_after(&text, "<!-- docs-example -->")
            .unwrap_or_else(|| panic!("{page}: no example marked <!-- docs-example -->"));
        let started = std::time::Instant::now();
        let o = sh_with(work, &example, env);
        eprintln!(
            "{page}: {:.1} s: {}",
            started.elapsed().as_secs_f64(),
            example.trim()
        );
        assert_ran(&format!("{page}'s first example"), &o);
    }
    // What the examples left: four runs, an export, reports, the gate's
    // JUnit file.
    let runs = sh(work, "tidemark runs");
    assert_ran("tidemark runs", &runs);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("all.json")).unwrap()).unwrap();
    assert_eq!(json["format_version"], 1);
    assert_eq!(
        json["runs"].as_array().unwrap().len(),
        4,
        "{}",
        stdout(&runs)
    );
    assert!(work.join("run-1-report/report.md").is_file());
    assert!(work.join("gate-report/junit.xml").is_file());
    let sharded = sh_with(
        work,
        "tidemark export --format json --store \"$TIDEMARK_STORE\" > sharded.json",
        &[("TIDEMARK_STORE", &store_url)],
    );
    assert_ran("export of the shared store", &sharded);
    let sharded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.join("sharded.json")).unwrap()).unwrap();
    let step = &sharded["runs"][0]["targets"][0]["steps"][0];
    assert_eq!(step["shards"].as_array().map(Vec::len), Some(2), "{step}");
    drop(admin);
    drop(pg);
    assert!(postgres_pids_mentioning(work.to_str().unwrap()).is_empty());
}
