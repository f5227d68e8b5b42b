//! The run seed and the keys the server saw: managed PostgreSQL servers
//! log every statement with its parameters (`log_statement=all`), and the
//! key sequences are read back from their logs, not from our generator.
//! Each test of a run draws a fresh sequence; every target of the run, and
//! a later run given the same `--seed`, draws the same one.

mod common;

use std::collections::HashMap;
use std::path::Path;

use common::cli_runs::{export_json, short_run};
use common::*;

/// Tests whose keys are compared: `point-query.pre` and `point-query` send
/// the same statement, so only the seed tells their keys apart.
const TESTS: &str = "point-query.pre,point-query,random-points_range=10";

/// Keys of each sequence compared (each step sends hundreds at least).
const PREFIX: usize = 50;

/// One client connection's prepared executions: the statement and the
/// integer parameters it was sent, in order.
#[derive(Debug)]
struct Sequence {
    statement: String,
    keys: Vec<i64>,
}

/// Runs `tidemark run` on `targets` with `extra` arguments into `results`;
/// returns the run seed it printed in its first line.
fn run(results: &str, targets: &[&str], extra: &[&str]) -> u64 {
    let mut more = vec!["--set", "log_statement=all", "--no-report"];
    more.extend_from_slice(extra);
    let o = run_tidemark(&short_run(results, TESTS, targets, &more));
    assert_success(&o);
    let err = stderr(&o);
    let first = err
        .lines()
        .find(|l| l.starts_with("tidemark run "))
        .unwrap_or_else(|| panic!("no run line: {err}"));
    let seed = first
        .split(", ")
        .find_map(|part| part.strip_prefix("seed "))
        .unwrap_or_else(|| panic!("the run line names its seed: {first}"));
    seed.parse()
        .unwrap_or_else(|_| panic!("seed {seed:?} in {first}"))
}

/// The server logs of run `run_id`, in target order.
fn server_logs(results: &str, run_id: u32) -> Vec<String> {
    let servers = Path::new(results).join("servers");
    let mut dirs: Vec<_> = std::fs::read_dir(&servers)
        .unwrap_or_else(|e| panic!("{}: {e}", servers.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(&format!("run{run_id}-"))
        })
        .collect();
    dirs.sort();
    dirs.iter()
        .map(|d| {
            let log = d.join("data.log");
            std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()))
        })
        .collect()
}

/// The sequences of sbtest SELECTs in a server log (prefix `%m [%p] `),
/// one per backend and statement, in the order they began. A prepared
/// execution logs `LOG:  execute s0: SELECT …` and, in the same message,
/// `DETAIL:  parameters: $1 = '812', $2 = '77'`.
fn sequences(log: &str) -> Vec<Sequence> {
    let pid = |line: &str| -> Option<String> {
        let open = line.find(" [")?;
        let close = line[open..].find("] ")? + open;
        Some(line[open + 2..close].to_string())
    };
    let mut out: Vec<Sequence> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    let mut pending: HashMap<String, usize> = HashMap::new();
    for line in log.lines() {
        let Some(p) = pid(line) else { continue };
        if let Some(at) = line.find("LOG:  execute ") {
            let rest = &line[at + "LOG:  execute ".len()..];
            let Some((_, stmt)) = rest.split_once(": ") else {
                continue;
            };
            if !(stmt.starts_with("SELECT") && stmt.contains("sbtest")) {
                continue;
            }
            let key = (p.clone(), stmt.to_string());
            let i = *index.entry(key).or_insert_with(|| {
                out.push(Sequence {
                    statement: stmt.to_string(),
                    keys: Vec::new(),
                });
                out.len() - 1
            });
            pending.insert(p, i);
        } else if let Some(at) = line.find("DETAIL:  parameters: ") {
            let Some(i) = pending.remove(&p) else {
                continue;
            };
            let params = &line[at + "DETAIL:  parameters: ".len()..];
            for value in params.split("= '").skip(1) {
                let digits = value.split('\'').next().unwrap_or("");
                out[i]
                    .keys
                    .push(digits.parse().unwrap_or_else(|_| panic!("{line}")));
            }
        }
    }
    out
}

/// The sequences of one target: one per test, in the order `TESTS` runs.
fn target_sequences(log: &str) -> Vec<Sequence> {
    let seqs = sequences(log);
    assert_eq!(
        seqs.len(),
        3,
        "one client connection per test: {:?}",
        seqs.iter().map(|s| &s.statement).collect::<Vec<_>>()
    );
    assert_eq!(seqs[0].statement, seqs[1].statement, "point-query twice");
    assert!(seqs[2].statement.contains(" IN ("), "{}", seqs[2].statement);
    for s in &seqs {
        assert!(
            s.keys.len() >= PREFIX,
            "{} keys of {}",
            s.keys.len(),
            s.statement
        );
        assert!(s.keys.iter().all(|k| (1..=2000).contains(k)), "{s:?}");
    }
    seqs
}

/// Both lists saw the same keys, test by test, as far as both got.
fn assert_same_keys(a: &[Sequence], b: &[Sequence], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.statement, y.statement, "{what}");
        let n = x.keys.len().min(y.keys.len());
        assert_eq!(x.keys[..n], y.keys[..n], "{what}: {}", x.statement);
    }
}

#[test]
fn each_test_draws_fresh_keys_and_every_target_and_rerun_the_same() {
    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();

    // A run without --seed draws its own, prints it and stores it.
    let seed = run(results, &["pg@system", "pg@system:work_mem=8MB"], &[]);
    assert_ne!(seed, 1, "a fresh seed, not the old fixed one");
    let doc = export_json(results);
    assert_eq!(
        doc["runs"][0]["params"]["seed"].as_u64(),
        Some(seed),
        "stored with the run"
    );
    // `--resume` rebuilds the plan stored with the run: it carries the seed.
    let plan: serde_json::Value = serde_json::from_str(
        &rusqlite::Connection::open(Path::new(results).join("results.db"))
            .unwrap()
            .query_row("SELECT plan_json FROM runs WHERE id = 1", [], |r| {
                r.get::<_, String>(0)
            })
            .unwrap(),
    )
    .unwrap();
    assert_eq!(plan["overrides"]["seed"].as_u64(), Some(seed), "{plan}");
    let logs = server_logs(results, 1);
    assert_eq!(logs.len(), 2, "two servers");
    let first = target_sequences(&logs[0]);
    let second = target_sequences(&logs[1]);

    // The tests of a run differ: point-query after point-query.pre does not
    // find the keys .pre just read, nor random-points the same ones.
    let head = |s: &Sequence| s.keys[..PREFIX].to_vec();
    assert_ne!(
        head(&first[0]),
        head(&first[1]),
        "point-query.pre vs point-query"
    );
    assert_ne!(
        head(&first[1]),
        head(&first[2]),
        "point-query vs random-points"
    );
    assert_ne!(
        head(&first[0]),
        head(&first[2]),
        "point-query.pre vs random-points"
    );

    // Both targets of the run saw the same keys in each test.
    assert_same_keys(&first, &second, "the run's two targets");

    // A new run given that seed reproduces them on a new server.
    let again = run(results, &["pg@system"], &["--seed", &seed.to_string()]);
    assert_eq!(again, seed);
    let logs = server_logs(results, 2);
    assert_eq!(logs.len(), 1);
    assert_same_keys(&first, &target_sequences(&logs[0]), "--seed reruns");
}
